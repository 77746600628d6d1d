"""The fused attention gives MPNet the hidden states of transformers' eager form."""

import torch
from transformers import MPNetConfig, MPNetModel

from lib.encode import attention

from .conftest import TINY


def test_fused_mpnet_attention_matches_the_eager_form():
    torch.manual_seed(0)
    model = MPNetModel(MPNetConfig(vocab_size=100, **TINY)).eval()
    ids = torch.randint(5, 100, (2, 12))
    mask = torch.ones_like(ids)
    mask[1, 7:] = 0  # a padded sentence: the mask and the relative-position bias both reach the kernel
    with torch.no_grad():
        eager = model(input_ids=ids, attention_mask=mask, output_hidden_states=True).hidden_states
        assert attention.fuse(model) == "sdpa"
        fused = model(input_ids=ids, attention_mask=mask, output_hidden_states=True).hidden_states
        probabilities = model(input_ids=ids, attention_mask=mask, output_attentions=True).attentions  # the eager form, on request
    keep = mask.bool()
    for e, f in zip(eager, fused):
        assert torch.allclose(e[keep], f[keep], atol=1e-5, rtol=1e-4)
    assert len(probabilities) == TINY["num_hidden_layers"] and torch.allclose(probabilities[0].sum(-1), torch.ones(()))
