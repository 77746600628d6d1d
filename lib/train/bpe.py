"""A RoBERTa-style byte-level BPE tokenizer trained on the book's corpus with the `tokenizers` library."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from tokenizers import ByteLevelBPETokenizer
from tokenizers.processors import RobertaProcessing
from transformers import PreTrainedTokenizerFast

from ..errors import require

SPECIAL = {"bos_token": "<s>", "pad_token": "<pad>", "eos_token": "</s>", "unk_token": "<unk>", "mask_token": "<mask>"}


def train_tokenizer(texts: Iterable[str], vocab_size: int, max_length: int, min_frequency: int = 2) -> PreTrainedTokenizerFast:
    """Train byte-level BPE on texts (streamed: any iterable, read once). Special tokens take ids 0-4 in RoBERTa's
    order (<s>, <pad>, </s>, <unk>, <mask>); encoding adds <s> … </s> as RoBERTa does, with offsets."""
    require(vocab_size > 256 + len(SPECIAL), f"vocab_size must exceed the 256 byte symbols plus {len(SPECIAL)} special tokens, got {vocab_size}")
    seen = 0

    def counted() -> Iterator[str]:
        nonlocal seen
        for text in texts:
            seen += 1
            yield text

    bpe = ByteLevelBPETokenizer(add_prefix_space=False, trim_offsets=True)
    bpe.train_from_iterator(counted(), vocab_size=vocab_size, min_frequency=min_frequency, show_progress=False, special_tokens=list(SPECIAL.values()))
    require(seen > 0, "no texts to train the tokenizer on")
    bpe.post_processor = RobertaProcessing(("</s>", bpe.token_to_id("</s>")), ("<s>", bpe.token_to_id("<s>")), trim_offsets=True, add_prefix_space=False)
    return PreTrainedTokenizerFast(tokenizer_object=bpe, model_max_length=max_length, cls_token="<s>", sep_token="</s>", **SPECIAL)
