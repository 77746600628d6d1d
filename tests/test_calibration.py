"""Calibration losses (chapter 13) against brute-force computations."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from lib.errors import BookError
from lib.train import calibration


def brute_cosreg(w: torch.Tensor, strength: float) -> torch.Tensor:
    n = w.shape[0]
    total = w.new_zeros(())
    for i in range(n):
        for j in range(n):
            if i != j:
                total = total + torch.dot(w[i], w[j]) / (w[i].norm() * w[j].norm())
    return strength * total / n**2


def test_cosine_regulariser_value_and_gradient_match_the_pairwise_sum():
    torch.manual_seed(0)
    w = (torch.randn(9, 5, dtype=torch.float64) + 2.0).requires_grad_(True)  # shifted: cosines far from 0
    fast = calibration.cosine_regulariser(w, 0.7)
    (grad_fast,) = torch.autograd.grad(fast, w)
    slow = brute_cosreg(w, 0.7)
    (grad_slow,) = torch.autograd.grad(slow, w)
    assert fast.item() == pytest.approx(slow.item(), rel=1e-12) and fast.item() > 0.3
    assert torch.allclose(grad_fast, grad_slow, atol=1e-12)


def test_spectrum_regulariser_value_and_gradient():
    torch.manual_seed(1)
    w = torch.randn(12, 4, dtype=torch.float64, requires_grad=True)
    for kind in ("polynomial", "exponential"):
        prior = calibration.spectrum_prior(4, kind, c1=2.0, c2=0.5, gamma=-0.7 if kind == "polynomial" else 0.8)
        k = np.arange(1, 5)
        expected_prior = 2.0 * k**-0.7 if kind == "polynomial" else 2.0 * np.exp(-0.5 * k**0.8)
        assert np.allclose(prior.numpy(), expected_prior)
        value = calibration.spectrum_regulariser(w, 0.3, prior)
        sigma = np.linalg.svd(w.detach().numpy(), compute_uv=False)
        assert value.item() == pytest.approx(0.3 * ((sigma - expected_prior) ** 2).sum(), rel=1e-10)
        # gradient vs central finite differences
        (grad,) = torch.autograd.grad(value, w)
        numeric = torch.zeros_like(w)
        eps = 1e-6
        for idx in np.ndindex(*w.shape):
            plus, minus = w.detach().clone(), w.detach().clone()
            plus[idx] += eps
            minus[idx] -= eps
            numeric[idx] = (calibration.spectrum_regulariser(plus, 0.3, prior) - calibration.spectrum_regulariser(minus, 0.3, prior)) / (2 * eps)
        assert torch.allclose(grad, numeric, atol=1e-6)
    with pytest.raises(BookError, match="polynomial"):
        calibration.spectrum_prior(4, "linear", 1.0, 1.0, 1.0)


def trained_looking_flow(dim: int) -> calibration.Flow:
    torch.manual_seed(2)
    flow = calibration.Flow(dim, layers=4, hidden=16).double()
    with torch.no_grad():  # identity at initialisation: give it real weights for the test
        for p in flow.parameters():
            p.add_(0.3 * torch.randn_like(p))
    return flow


def test_flow_is_invertible_and_its_log_determinant_is_the_jacobians():
    flow = trained_looking_flow(6)
    h = torch.randn(5, 6, dtype=torch.float64)
    z, logdet = flow(h)
    assert not torch.allclose(z, h)
    assert torch.allclose(flow.inverse(z), h, atol=1e-10)
    for row in range(5):
        jac = torch.autograd.functional.jacobian(lambda x: flow(x[None])[0][0], h[row])
        assert logdet[row].item() == pytest.approx(torch.linalg.slogdet(jac)[1].item(), abs=1e-9)


@pytest.mark.parametrize("seed", [3, 7])
def test_flow_training_makes_a_shifted_anisotropic_cloud_gaussian(seed):
    """The data are an affine image of a standard normal, which the flow can undo. Mapped by the true inverse, n points
    would have a sample mean with standard error 1/√n per dimension and covariance entries with standard error at most
    √(2/n); the maximum-likelihood fit matches the sample at least as well. So, once the optimisation has converged
    (the learning rate decays to zero, so the end point does not depend on Adam's last steps), 4 standard errors bound
    both on any machine."""
    torch.manual_seed(seed)
    n = 1000
    h = torch.randn(n, 4) @ torch.tensor([[3.0, 0, 0, 0], [2.0, 0.5, 0, 0], [0, 0, 1, 0], [0, 0, 0, 0.2]]) + 5.0
    flow = calibration.Flow(4, layers=4, hidden=16)
    start = flow.nll(h).item()
    steps = 600
    opt = torch.optim.Adam(flow.parameters(), lr=1e-2)
    schedule = torch.optim.lr_scheduler.LambdaLR(opt, lambda step: 1 - step / steps)
    for _ in range(steps):
        opt.zero_grad()
        loss = flow.nll(h)
        loss.backward()
        opt.step()
        schedule.step()
    z = flow(h)[0].detach()
    assert loss.item() < start - 1.0
    assert z.mean(dim=0).abs().max() < 4 / n**0.5
    assert (torch.cov(z.T) - torch.eye(4)).abs().max() < 4 * (2 / n) ** 0.5


def test_singular_values_match_the_svd_for_tall_and_wide_matrices():
    torch.manual_seed(4)
    for shape in [(50, 6), (6, 50)]:
        w = torch.randn(*shape, dtype=torch.float64)
        assert torch.allclose(calibration.singular_values(w), torch.linalg.svdvals(w), atol=1e-10)


@pytest.mark.parametrize("method", ["cosreg", "spectrum"])
def test_the_losses_plug_into_a_seq2seq_model(method):
    """A tiny random BART learning to copy: the calibration term on its tied output embeddings goes down together
    with the sequence-to-sequence loss, as the chapter's GPU recipe for the paper's translation runs expects."""
    from transformers import BartConfig, BartForConditionalGeneration

    torch.manual_seed(0)
    config = BartConfig(
        vocab_size=40,
        d_model=32,
        encoder_layers=1,
        decoder_layers=1,
        encoder_attention_heads=2,
        decoder_attention_heads=2,
        encoder_ffn_dim=64,
        decoder_ffn_dim=64,
        max_position_embeddings=32,
        pad_token_id=1,
        bos_token_id=0,
        eos_token_id=2,
        decoder_start_token_id=2,
        forced_eos_token_id=None,
    )
    model = BartForConditionalGeneration(config)
    with torch.no_grad():  # a common direction, as trained embedding matrices have
        model.get_output_embeddings().weight.add_(0.2)
    w = model.get_output_embeddings().weight
    assert w is model.get_input_embeddings().weight  # tied: calibrating the output space also moves the inputs
    prior = calibration.spectrum_prior(min(w.shape), "exponential", float(calibration.singular_values(w.detach())[0]), 0.1, 0.5)
    ids = torch.randint(3, 40, (16, 8))
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
    task, extra = [], []
    for _ in range(40):
        term = calibration.cosine_regulariser(w, 1.0) if method == "cosreg" else calibration.spectrum_regulariser(w, 1e-2, prior)
        loss = model(input_ids=ids, labels=ids).loss
        optimizer.zero_grad()
        (loss + term).backward()
        optimizer.step()
        task.append(loss.item())
        extra.append(term.item())
    assert task[-1] < 0.8 * task[0] and extra[-1] < 0.9 * extra[0]
