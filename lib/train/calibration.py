"""Isotropy calibration losses and modules for fine-tuning (Ding et al. 2022): cosine regularisation,
spectrum control and a normalising flow. Each works in any PyTorch training loop (classification or
seq2seq): add the regulariser of the output-embedding matrix to the task loss, or pass hidden states
through the flow and add its negative log-likelihood.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from ..errors import require


def cosine_regulariser(w: torch.Tensor, strength: float) -> torch.Tensor:
    """CosReg (Gao et al. 2019): strength / n² · Σ_{i≠j} ŵ_iᵀŵ_j over the rows of W, computed from the sum of
    unit rows s as (sᵀs − n): O(n·d), no n × n matrix."""
    unit = nn.functional.normalize(w, dim=1)
    total = unit.sum(dim=0)
    n = w.shape[0]
    return strength * (total @ total - n) / n**2


def spectrum_prior(d: int, kind: str, c1: float, c2: float, gamma: float, device: torch.device | None = None) -> torch.Tensor:
    """Target singular values for k = 1..d: polynomial c1·k^γ or exponential c1·exp(−c2·k^γ) (Wang et al. 2020)."""
    k = torch.arange(1, d + 1, dtype=torch.float64, device=device)
    if kind == "polynomial":
        return c1 * k**gamma
    require(kind == "exponential", f"spectrum prior must be 'polynomial' or 'exponential', got {kind!r}")
    return c1 * torch.exp(-c2 * k**gamma)


def singular_values(w: torch.Tensor) -> torch.Tensor:
    """Singular values of W, descending, differentiable: square roots of the eigenvalues of the small Gram
    matrix (WᵀW or WWᵀ, in float64). Same values as an SVD; for a 30k × 384 embedding matrix the forward and
    backward pass are ~10× faster than through torch.linalg.svdvals."""
    gram = w.T @ w if w.shape[0] >= w.shape[1] else w @ w.T
    eigenvalues = torch.linalg.eigvalsh(gram.double()).flip(0)
    return eigenvalues.clamp_min(1e-12).sqrt().to(w.dtype)


def with_spectrum(w: torch.Tensor, sigma: torch.Tensor) -> torch.Tensor:
    """W with its singular values replaced by sigma (descending) and its singular vectors kept: U diag(σ) Vᵀ."""
    u, _, vt = torch.linalg.svd(w.double(), full_matrices=False)
    require(len(sigma) == len(vt), f"sigma has {len(sigma)} values but W has {len(vt)} singular values")
    return (u * sigma.to(u)) @ vt


def spectrum_regulariser(w: torch.Tensor, strength: float, prior: torch.Tensor) -> torch.Tensor:
    """Spectrum control: strength · Σ_k (σ_k − prior_k)² over the singular values of W in descending order."""
    sigma = singular_values(w)
    require(len(prior) == len(sigma), f"the prior has {len(prior)} values but W has {len(sigma)} singular values")
    return strength * ((sigma - prior.to(sigma)) ** 2).sum()


class AffineCoupling(nn.Module):
    """RealNVP coupling: the dimensions where mask = 0 are scaled and shifted by functions of those where mask = 1."""

    def __init__(self, dim: int, hidden: int, mask: torch.Tensor):
        super().__init__()
        self.register_buffer("mask", mask.float())
        self.net = nn.Sequential(nn.Linear(dim, hidden), nn.GELU(), nn.Linear(hidden, 2 * dim))
        nn.init.zeros_(self.net[-1].weight)  # start as the identity
        nn.init.zeros_(self.net[-1].bias)

    def _scale_shift(self, kept: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        log_scale, shift = self.net(kept).chunk(2, dim=-1)
        free = 1 - self.mask
        return torch.tanh(log_scale) * free, shift * free

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        kept = x * self.mask
        log_scale, shift = self._scale_shift(kept)
        return kept + (1 - self.mask) * (x * torch.exp(log_scale) + shift), log_scale.sum(dim=-1)

    def inverse(self, z: torch.Tensor) -> torch.Tensor:
        kept = z * self.mask
        log_scale, shift = self._scale_shift(kept)
        return kept + (1 - self.mask) * ((z - shift) * torch.exp(-log_scale))


class Flow(nn.Module):
    """A small RealNVP flow f⁻¹: embedding h → latent z (Li et al. 2020 use Glow; the coupling idea is the same).
    Alternating masks (even/odd dimensions) so every dimension is transformed; `nll` is the loss that makes z
    standard normal."""

    def __init__(self, dim: int, layers: int = 4, hidden: int = 256):
        super().__init__()
        require(layers >= 2 and dim >= 2, f"a flow needs at least 2 coupling layers and 2 dimensions, got {layers} and {dim}")
        even = torch.arange(dim) % 2 == 0
        self.couplings = nn.ModuleList(AffineCoupling(dim, hidden, even if i % 2 == 0 else ~even) for i in range(layers))

    def forward(self, h: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """z = f⁻¹(h) and log |det ∂z/∂h| per row."""
        logdet = h.new_zeros(h.shape[:-1])
        for coupling in self.couplings:
            h, ld = coupling(h)
            logdet = logdet + ld
        return h, logdet

    def inverse(self, z: torch.Tensor) -> torch.Tensor:
        """h = f(z)."""
        for coupling in reversed(self.couplings):
            z = coupling.inverse(z)
        return z

    def nll(self, h: torch.Tensor) -> torch.Tensor:
        """Mean negative log-likelihood of h under the flow with a standard-normal base, in nats per dimension."""
        z, logdet = self(h)
        log_pz = -0.5 * (z**2).sum(dim=-1) - 0.5 * z.shape[-1] * math.log(2 * math.pi)
        return -(log_pz + logdet).mean() / z.shape[-1]
