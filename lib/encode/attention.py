"""MPNet's self-attention through torch's fused scaled-dot-product kernel. transformers implements MPNet's attention
only in the eager form (scores, relative-position bias, mask, softmax, product: each a full (heads, length, length)
tensor); `torch.nn.functional.scaled_dot_product_attention` computes the same with the bias as its additive mask in
one kernel. Measured here on 4 × 400 tokens under bf16 autocast: 2.0× faster forward passes, and hidden states
slightly closer to float32's (mean relative error 0.9% in the last layer against eager's 1.1%); the other models the
book loads already use it (transformers' "sdpa")."""

from __future__ import annotations

import types

import torch
from transformers.models.mpnet.modeling_mpnet import MPNetSelfAttention


def _fused_forward(self: MPNetSelfAttention, hidden_states, attention_mask=None, position_bias=None, output_attentions=False, **kwargs):
    if output_attentions:  # the probabilities exist only in the eager form
        return MPNetSelfAttention.forward(self, hidden_states, attention_mask, position_bias, output_attentions=True, **kwargs)
    shape = (*hidden_states.shape[:-1], -1, self.attention_head_size)
    q, k, v = (layer(hidden_states).view(shape).transpose(1, 2) for layer in (self.q, self.k, self.v))
    bias = None
    for part in (position_bias, attention_mask):
        if part is not None:
            bias = part if bias is None else bias + part
    c = torch.nn.functional.scaled_dot_product_attention(
        q, k, v, attn_mask=None if bias is None else bias.to(q.dtype), dropout_p=self.dropout.p if self.training else 0.0
    )
    return (self.o(c.transpose(1, 2).reshape(*hidden_states.shape[:-1], self.all_head_size)),)


def fuse(model: torch.nn.Module) -> str:
    """Route every MPNet self-attention module of `model` through the fused kernel; return the attention the model
    now uses ("sdpa" or transformers' setting)."""
    found = [m for m in model.modules() if isinstance(m, MPNetSelfAttention)]
    for module in found:
        module.forward = types.MethodType(_fused_forward, module)
    return "sdpa" if found else getattr(model.config, "_attn_implementation", None) or "eager"
