"""Masked-language-model pre-training of a small RoBERTa-style encoder, with or without position embeddings.

The two runs of chapter 05 differ only in `position_embeddings`: without them the position table is
zeroed and frozen, so the encoder receives no positional signal at all and is permutation-equivariant
(tested). Everything else follows RoBERTa: byte-level BPE, blocks of contiguous text, dynamic masking
(15% of tokens; 80% <mask>, 10% random, 10% unchanged), AdamW with linear warmup and decay, gradient
clipping. The batch order and each step's mask are derived from (seed, step), and a checkpoint holds the
dropout RNG, so a run interrupted and resumed from its last checkpoint ends with the same weights.
"""

from __future__ import annotations

import hashlib
import json
import math
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import nullcontext
from dataclasses import asdict, dataclass
from functools import partial
from pathlib import Path

import numpy as np
import pandas as pd
import torch
from torch.nn.parallel import DistributedDataParallel
from tqdm import tqdm
from transformers import PreTrainedTokenizerFast, RobertaConfig, RobertaForMaskedLM, get_linear_schedule_with_warmup

from .. import codegraph
from ..datasets import tasks, wikipedia
from ..datasets.tasks import corpus_documents
from ..encode.collectors import LayerStats
from ..encode.extraction import TokenBatch
from ..errors import require
from ..io import write_atomic, write_folder_atomic, write_manifest
from ..measure.outliers import robust_z
from ..settings import autocast, cache_dir, pick_device
from . import distributed, shards
from .bpe import train_tokenizer

IGNORE = -100  # label of tokens that are not predicted
CORPORA = ("book", "wikipedia")


@dataclass(frozen=True)
class PretrainConfig:
    """Model size and optimisation settings of one run. No defaults: chapter 05's parameters cell is the one home of
    the book's values (the paper's are in profiles/paper.yaml)."""

    position_embeddings: bool
    corpus: str  # "book": the data folder's Brown + Gutenberg; "wikipedia": the pinned snapshot (`datasets.wikipedia`)
    vocab_size: int  # byte-level BPE trained on the training split
    valid_share: float  # share held out for validation: of every book document's lines, of Wikipedia's articles
    hidden_size: int
    layers: int
    heads: int
    intermediate_size: int
    seq_len: int  # tokens per block, <s> and </s> included
    steps: int
    batch_size: int
    lr: float
    warmup: int
    weight_decay: float
    adam_betas: tuple[float, float]
    adam_eps: float
    grad_clip: float  # gradient-norm clipping
    mask_prob: float
    dropout: float
    eval_every: int
    seed: int
    precision: str  # "bfloat16": training forward passes under bf16 autocast (`settings.autocast_precision`); "none"

    def check(self) -> None:
        """One clear line for settings that cannot work."""
        for name in ("vocab_size", "hidden_size", "layers", "heads", "intermediate_size", "steps", "batch_size", "eval_every"):
            value = getattr(self, name)
            require(isinstance(value, int) and value > 0, f"pre-training setting {name} must be a positive integer, got {value!r}")
        require(self.hidden_size % self.heads == 0, f"hidden_size {self.hidden_size} must be divisible by heads {self.heads}")
        require(self.seq_len >= 8, f"seq_len must be at least 8 tokens, got {self.seq_len}")
        require(0 < self.mask_prob < 1, f"mask_prob must be in (0, 1), got {self.mask_prob}")
        require(self.precision in ("bfloat16", "none"), f"precision must be 'bfloat16' or 'none', got {self.precision!r}")
        require(self.corpus in CORPORA, f"corpus must be one of {', '.join(CORPORA)}, got {self.corpus!r}")
        require(
            self.lr > 0 and 0 <= self.warmup < self.steps, f"need lr > 0 and 0 <= warmup < steps, got lr={self.lr}, warmup={self.warmup}, steps={self.steps}"
        )

    def key(self) -> str:
        """A short hash naming this configuration and the training code (checkpoints of other settings or code are never
        resumed, and a saved model of either is not reused)."""
        return hashlib.sha256(json.dumps([asdict(self), training_code()], sort_keys=True).encode()).hexdigest()[:12]


def training_code() -> str:
    """Digest of the code a pre-training run's result depends on: this module and every `lib` file it runs (the
    tokenizer, the corpus readers, block packing, the outlier track's statistics; `codegraph.digest`); comments and
    docstrings do not count."""
    return codegraph.digest(__name__)


def split_documents(documents: Sequence[str], valid_share: float) -> tuple[list[str], list[str]]:
    """Hold out the last valid_share of every document's lines: (train texts, validation texts).
    Every document contributes to both, and no line is in both."""
    require(0 < valid_share < 1, f"valid_share must be in (0, 1), got {valid_share}")
    train, valid = [], []
    for doc in documents:
        lines = doc.split("\n")
        cut = len(lines) - max(1, round(valid_share * len(lines))) if len(lines) > 1 else len(lines)
        train.append("\n".join(lines[:cut]))
        if cut < len(lines):
            valid.append("\n".join(lines[cut:]))
    return train, valid


def mask_tokens(blocks: torch.Tensor, tokenizer: PreTrainedTokenizerFast, mask_prob: float, generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """RoBERTa's masking: choose mask_prob of the non-special tokens; of those 80% become <mask>, 10% a
    random token, 10% stay. Returns (inputs, labels) with labels IGNORE where nothing is predicted."""
    special = torch.isin(blocks, torch.tensor(tokenizer.all_special_ids))
    chosen = (torch.rand(blocks.shape, generator=generator) < mask_prob) & ~special
    labels = torch.where(chosen, blocks, IGNORE)
    action = torch.rand(blocks.shape, generator=generator)
    inputs = blocks.clone()
    inputs[chosen & (action < 0.8)] = tokenizer.mask_token_id
    random_ids = torch.randint(len(tokenizer), blocks.shape, generator=generator)
    swap = chosen & (action >= 0.8) & (action < 0.9)
    inputs[swap] = random_ids[swap]
    return inputs, labels


def build_model(cfg: PretrainConfig, tokenizer: PreTrainedTokenizerFast) -> RobertaForMaskedLM:
    """A randomly initialised RobertaForMaskedLM (seeded). Without position embeddings the position
    table is zero and frozen; `config.position_embeddings` records which kind the model is."""
    torch.manual_seed(cfg.seed)
    config = RobertaConfig(
        vocab_size=len(tokenizer),
        hidden_size=cfg.hidden_size,
        num_hidden_layers=cfg.layers,
        num_attention_heads=cfg.heads,
        intermediate_size=cfg.intermediate_size,
        max_position_embeddings=cfg.seq_len + tokenizer.pad_token_id + 1,
        type_vocab_size=1,
        hidden_dropout_prob=cfg.dropout,
        attention_probs_dropout_prob=cfg.dropout,
        pad_token_id=tokenizer.pad_token_id,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        position_embeddings=cfg.position_embeddings,
    )
    model = RobertaForMaskedLM(config)
    if not cfg.position_embeddings:
        disable_position_embeddings(model)
    return model


def disable_position_embeddings(model: RobertaForMaskedLM) -> None:
    """Zero the position table and exclude it from training: no positional signal reaches the encoder."""
    table = model.roberta.embeddings.position_embeddings.weight
    with torch.no_grad():
        table.zero_()
    table.requires_grad_(False)


@dataclass(frozen=True)
class MaskedPart:
    """One forward pass's blocks with masking applied, and its masked tokens as flat indices into the blocks (row-major:
    the order of `hidden[labels != IGNORE]`) with their targets. Found on the host before the pass, so that no pass
    waits for the device to say which tokens were masked."""

    inputs: torch.Tensor
    where: torch.Tensor
    targets: torch.Tensor

    @classmethod
    def of(cls, inputs: torch.Tensor, labels: torch.Tensor) -> MaskedPart:
        flat = labels.flatten()
        where = (flat != IGNORE).nonzero()[:, 0]
        return cls(inputs, where, flat[where])

    @property
    def rows(self) -> torch.Tensor:
        """The block each masked token sits in."""
        return self.where // self.inputs.shape[1]

    def pinned(self) -> MaskedPart:
        """The same tensors in page-locked memory, so that copies to a GPU run without holding the host."""
        return MaskedPart(self.inputs.pin_memory(), self.where.pin_memory(), self.targets.pin_memory())

    def to(self, device: torch.device) -> MaskedPart:
        """On device; copies from pinned memory do not wait for the device."""
        return MaskedPart(*(t.to(device, non_blocking=t.is_pinned()) for t in (self.inputs, self.where, self.targets)))


def masked_lm_losses(model: RobertaForMaskedLM, part: MaskedPart) -> torch.Tensor:
    """Cross-entropy of every masked token of part; the output layer runs on those tokens alone (~7x less work than
    RobertaForMaskedLM's full logits, same values)."""
    hidden = model.roberta(input_ids=part.inputs).last_hidden_state
    picked = hidden.flatten(0, 1).index_select(0, part.where)
    return torch.nn.functional.cross_entropy(model.lm_head(picked), part.targets, reduction="none")


def _optimizer(model: torch.nn.Module, cfg: PretrainConfig) -> torch.optim.AdamW:
    """AdamW (the fused kernel: the same update, 2-3× faster per step on CPU); no weight decay on biases and LayerNorm
    parameters (as in RoBERTa)."""
    decay, no_decay = [], []
    for p in model.parameters():
        if p.requires_grad:
            (no_decay if p.ndim == 1 else decay).append(p)
    groups = [{"params": decay, "weight_decay": cfg.weight_decay}, {"params": no_decay, "weight_decay": 0.0}]
    return torch.optim.AdamW(groups, lr=cfg.lr, betas=tuple(cfg.adam_betas), eps=cfg.adam_eps, fused=True)


def _generator(seed: int, step: int, stream: int) -> torch.Generator:
    return torch.Generator().manual_seed(((seed * 1_000_003 + step) * 7 + stream) % (2**63))


def batch_indices(n_blocks: int, batch_size: int, seed: int, step: int) -> torch.Tensor:
    """Blocks of a step: consecutive slices of a seeded permutation per epoch, a function of (seed, step)."""
    start = step * batch_size
    out = []
    while len(out) < batch_size:
        epoch, offset = divmod(start + len(out), n_blocks)
        order = torch.randperm(n_blocks, generator=_generator(seed, epoch, 0))
        out.extend(order[offset : offset + batch_size - len(out)].tolist())
    return torch.tensor(out)


@torch.no_grad()
def block_losses(
    model: RobertaForMaskedLM,
    blocks: shards.Blocks | torch.Tensor,
    tokenizer: PreTrainedTokenizerFast,
    cfg: PretrainConfig,
    device: torch.device,
    batch_size: int = 64,
) -> tuple[np.ndarray, np.ndarray]:
    """Per validation block, with one fixed masking (seeded, the same for every model of a configuration): the summed
    masked-token loss and the number of masked tokens. Two models' arrays pair block by block."""
    model.eval()
    sums, counts = np.zeros(len(blocks)), np.zeros(len(blocks))
    for i in range(0, len(blocks), batch_size):
        part = MaskedPart.of(*mask_tokens(blocks[i : i + batch_size], tokenizer, cfg.mask_prob, _generator(cfg.seed, i, 1)))
        losses = masked_lm_losses(model, part.to(device))
        rows = i + part.rows.numpy()
        np.add.at(sums, rows, losses.double().cpu().numpy())
        np.add.at(counts, rows, 1)
    return sums, counts


def evaluate(
    model: RobertaForMaskedLM,
    blocks: shards.Blocks | torch.Tensor,
    tokenizer: PreTrainedTokenizerFast,
    cfg: PretrainConfig,
    device: torch.device,
    batch_size: int = 64,
) -> float:
    """Mean masked-LM loss on validation blocks, with one fixed masking (seeded), token-weighted."""
    sums, counts = block_losses(model, blocks, tokenizer, cfg, device, batch_size)
    return float(sums.sum() / counts.sum())


def position_table_extreme(model: RobertaForMaskedLM, seq_len: int) -> dict[str, float]:
    """The dimension that stands out most (largest |robust z|) in the mean of the position rows a block uses, and that
    z; NaN for a model without position embeddings (its table is zero)."""
    if not model.config.position_embeddings:
        return {"pe_top_dim": math.nan, "pe_top_z": math.nan}
    offset = model.config.pad_token_id + 1
    rows = model.roberta.embeddings.position_embeddings.weight[offset : offset + seq_len].detach().double().cpu().numpy()
    z = robust_z(rows.mean(axis=0, keepdims=True))[0]
    top = int(np.abs(z).argmax())
    return {"pe_top_dim": top, "pe_top_z": float(z[top])}


@torch.no_grad()
def layer_extremes(model: RobertaForMaskedLM, blocks: torch.Tensor, device: torch.device, batch_size: int = 64) -> pd.DataFrame:
    """Per layer of unmasked validation blocks: the dimension with the largest |mean| (and its robust z
    within the mean vector), and the dimension most often a vector's maximum (minimum), with its share."""
    model.eval()
    stats = LayerStats(covariance=False)
    for i in range(0, len(blocks), batch_size):
        ids = blocks[i : i + batch_size]
        hidden = torch.stack(model.roberta(input_ids=ids.to(device), output_hidden_states=True).hidden_states).flatten(1, 2)
        positions = torch.arange(ids.shape[1]).expand_as(ids)
        rows = torch.arange(ids.shape[0]).unsqueeze(1).expand_as(ids)
        stats.update(
            TokenBatch(
                hidden.float(),
                ids.flatten().numpy(),
                positions.flatten().numpy(),
                (rows + i).flatten().numpy(),
                np.zeros(ids.numel(), dtype=bool),
                rows.flatten().numpy(),
            )
        )
    means, argmax, argmin, n = stats.mean, stats.argmax_counts, stats.argmin_counts, stats.count
    z = robust_z(means)
    top = np.abs(means).argmax(axis=1)
    layers = np.arange(len(means))
    return pd.DataFrame(
        {
            "layer": layers,
            "top_dim": top,
            "top_mean": means[layers, top],
            "top_z": z[layers, top],
            "argmax_dim": argmax.argmax(axis=1),
            "argmax_percent": 100.0 * argmax.max(axis=1) / n,
            "argmin_dim": argmin.argmax(axis=1),
            "argmin_percent": 100.0 * argmin.max(axis=1) / n,
        }
    )


def corpus_splits(corpus: str, valid_share: float) -> tuple[Iterable[str], Iterable[str], str]:
    """(training texts, validation texts, a key naming both) of a pre-training corpus: "book", the data folder's
    documents in memory (the tail of each held out); "wikipedia", the pinned snapshot, fetched when absent and streamed
    (whole articles held out)."""
    require(corpus in CORPORA, f"corpus must be one of {', '.join(CORPORA)}, got {corpus!r}")
    if corpus == "wikipedia":
        snapshot = wikipedia.pinned()
        paths = wikipedia.fetch(snapshot)
        texts = (wikipedia.Texts(paths, valid_share, validation) for validation in (False, True))
        return *texts, f"wikipedia {snapshot.key()} {valid_share}"
    train, valid = split_documents(corpus_documents(), valid_share)
    return train, valid, " ".join([*(spec.sha256 for spec in tasks.dataset("corpus").files.values()), str(valid_share)])


def corpus_tokenizer(train_texts: Iterable[str], corpus_key: str, vocab_size: int, seq_len: int) -> PreTrainedTokenizerFast:
    """The BPE tokenizer trained on train_texts, kept under the cache folder (keyed by the corpus, its settings and the
    tokenizer code) and loaded from there: trained once, the same object for every chapter run and every rank."""
    key = hashlib.sha256(f"{corpus_key} {vocab_size} {seq_len} {codegraph.digest('lib.train.bpe')}".encode()).hexdigest()[:16]
    folder = cache_dir() / "tokenizers" / key
    if not (folder / "tokenizer.json").is_file():
        tokenizer = train_tokenizer(train_texts, vocab_size, seq_len)
        write_folder_atomic(folder, lambda staging: tokenizer.save_pretrained(staging))
    return PreTrainedTokenizerFast.from_pretrained(folder)


def prepare_corpus(cfg: PretrainConfig) -> tuple[PreTrainedTokenizerFast, shards.Blocks, shards.Blocks]:
    """Split cfg's corpus, train the tokenizer on the training split (once, `corpus_tokenizer`), tokenize both splits
    once into token streams on disk (`shards.on_disk`, under the cache folder, keyed by the tokenizer and the corpus's
    checksums): (tokenizer, train blocks, validation blocks)."""
    train_texts, valid_texts, corpus = corpus_splits(cfg.corpus, cfg.valid_share)
    tokenizer = corpus_tokenizer(train_texts, corpus, cfg.vocab_size, cfg.seq_len)
    folder = cache_dir() / "tokens"
    train_blocks = shards.on_disk(train_texts, tokenizer, cfg.seq_len, folder, f"train {corpus}")
    return tokenizer, train_blocks, shards.on_disk(valid_texts, tokenizer, cfg.seq_len, folder, f"valid {corpus}")


def unigram_perplexity(train_blocks: shards.Blocks, valid_blocks: shards.Blocks, tokenizer: PreTrainedTokenizerFast) -> float:
    """Perplexity on the validation tokens (specials excluded) of token frequencies counted on the training
    blocks (add-one smoothing): what a masked LM reaches without using any context. Streams the blocks' tokens."""
    special = np.array(tokenizer.all_special_ids)
    counts = np.ones(len(tokenizer))
    for chunk in train_blocks.token_chunks():
        counts += np.bincount(chunk[~np.isin(chunk, special)], minlength=len(tokenizer))
    log_p = np.log(counts / counts.sum())
    total, n = 0.0, 0
    for chunk in valid_blocks.token_chunks():
        kept = chunk[~np.isin(chunk, special)]
        total, n = total + float(log_p[kept].sum()), n + len(kept)
    return float(np.exp(-total / n))


@dataclass
class Trained:
    """A finished run: the model, its tokenizer, the curve (one row per evaluation) and the outlier track."""

    model: RobertaForMaskedLM
    tokenizer: PreTrainedTokenizerFast
    history: pd.DataFrame
    track: pd.DataFrame
    config: PretrainConfig


class MaskedLMObjective(torch.nn.Module):
    """The masked-LM losses as one module's forward, so that DistributedDataParallel sees (and synchronises) each pass."""

    def __init__(self, model: RobertaForMaskedLM):
        super().__init__()
        self.model = model

    def forward(self, inputs: torch.Tensor, where: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        return masked_lm_losses(self.model, MaskedPart(inputs, where, targets))


def _step_batch(
    cfg: PretrainConfig, tokenizer: PreTrainedTokenizerFast, train_blocks: shards.Blocks, step: int, parts: list[torch.Tensor], pin: bool
) -> tuple[list[MaskedPart], int]:
    """A step's global batch, masked (a function of (seed, step)), cut into this rank's micro-batches (pinned for a GPU),
    and the number of tokens predicted in the global batch (every rank knows it)."""
    blocks = train_blocks[batch_indices(len(train_blocks), cfg.batch_size, cfg.seed, step)]
    inputs, labels = mask_tokens(blocks, tokenizer, cfg.mask_prob, _generator(cfg.seed, step, 2))
    micro = [MaskedPart.of(inputs[part], labels[part]) for part in parts]
    return [m.pinned() for m in micro] if pin else micro, int((labels != IGNORE).sum()) or 1


def _seed_dropout(seed: int, step: int, rank: int) -> None:
    """Dropout's random stream: rank 0 of a fresh run keeps the single-process seed; other ranks (and rank 0 of no
    saved stream) get one of their own, a function of (seed, step, rank)."""
    torch.manual_seed(seed + 1 if step == 0 and rank == 0 else (seed * 1_000_003 + step) * 1_009 + rank + 2)


def train(
    cfg: PretrainConfig,
    tokenizer: PreTrainedTokenizerFast,
    train_blocks: shards.Blocks,
    valid_blocks: shards.Blocks,
    track_blocks: int = 64,
    device: str = "auto",
    checkpoint_dir: Path | None = None,
    desc: str = "pre-training",
    on_step: Callable[[int], None] | None = None,
    micro_batch: int | None = None,
) -> Trained:
    """Pre-train from scratch, or resume from the last checkpoint of the same configuration, in one process or in
    each of the processes torchrun started (DistributedDataParallel; `lib.train.distributed`).

    `cfg.batch_size` is the global batch: each step's blocks and masks are a function of (seed, step), every rank
    draws the same ones and trains on its contiguous share, `micro_batch` blocks per forward pass (gradients
    accumulate; default: the whole share), so a configuration means the same at any world size and the loss is the
    mean over the global batch's masked tokens. Every `eval_every` steps (and at the end) rank 0 computes validation
    loss, perplexity and the outlier track on the first `track_blocks` validation blocks, then writes a checkpoint
    atomically to checkpoint_dir/<config key>/checkpoint.pt (default under the cache folder), which resumes at any
    world size. The loss is read on the host only at evaluations."""
    cfg.check()
    here, torch_device = distributed.start(device)
    model = build_model(cfg, tokenizer).to(torch_device)
    objective: torch.nn.Module = MaskedLMObjective(model)
    if here.size > 1:
        objective = DistributedDataParallel(objective, device_ids=[torch_device.index] if torch_device.type == "cuda" else None)
    optimizer = _optimizer(model, cfg)
    schedule = get_linear_schedule_with_warmup(optimizer, cfg.warmup, cfg.steps)
    path = (checkpoint_dir or cache_dir() / "pretrain") / cfg.key() / "checkpoint.pt"
    step, history, track = 0, [], []
    if path.exists():
        state = torch.load(path, map_location=torch_device, weights_only=True)  # tensors and plain data only
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        schedule.load_state_dict(state["schedule"])
        step, history, track = state["step"], state["history"], [pd.DataFrame(t) for t in state["track"]]
        if here.main:
            torch.set_rng_state(state["rng"])
            print(f"{desc}: resuming from step {step:,} ({path})")
        else:
            _seed_dropout(cfg.seed, step, here.rank)
    else:
        _seed_dropout(cfg.seed, 0, here.rank)
    share = torch.tensor_split(torch.arange(cfg.batch_size), here.size)[here.rank]
    size = micro_batch or max(1, len(share))
    require(isinstance(size, int) and size > 0, f"micro_batch must be a positive number of blocks, got {micro_batch!r}")
    parts = [p for p in torch.split(share, size) if len(p)]
    tokens_per_step = cfg.batch_size * cfg.seq_len
    running, since, clock = torch.zeros((), device=torch_device), 0, time.perf_counter()
    bar = tqdm(total=cfg.steps, initial=step, desc=desc, unit="step", mininterval=5.0, disable=not here.main)
    with ThreadPoolExecutor(1, thread_name_prefix="next-batch") as ahead:  # masks the next step's batch while this one trains
        prepare = partial(_step_batch, cfg, tokenizer, train_blocks, parts=parts, pin=torch_device.type == "cuda")
        upcoming = ahead.submit(prepare, step) if step < cfg.steps else None
        while step < cfg.steps:
            objective.train()
            micro, total = upcoming.result()
            if step + 1 < cfg.steps:
                upcoming = ahead.submit(prepare, step + 1)
            micro = [m.to(torch_device) for m in micro]
            optimizer.zero_grad(set_to_none=True)
            for i, m in enumerate(micro):
                sync = here.size == 1 or i == len(micro) - 1  # DDP averages gradients over ranks on the last part only
                with nullcontext() if sync else objective.no_sync(), autocast(cfg.precision, torch_device):  # evaluation stays float32
                    losses = objective(m.inputs, m.where, m.targets)
                part_sum = losses.sum()
                (part_sum * here.size / total).backward()
                running += part_sum.detach() / total
            torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.grad_clip)
            optimizer.step()
            schedule.step()
            step += 1
            since += 1
            bar.update(1)
            if on_step is not None:
                on_step(step)
            if step % cfg.eval_every == 0 or step == cfg.steps:
                train_loss = float(distributed.all_sum(running)) / since
                if here.main:
                    valid = evaluate(model, valid_blocks, tokenizer, cfg, torch_device)
                    history.append(
                        {
                            "step": step,
                            "tokens_seen": step * tokens_per_step,
                            "train_loss": train_loss,
                            "valid_loss": valid,
                            "valid_perplexity": math.exp(valid),
                            "lr": schedule.get_last_lr()[0],
                            "seconds": time.perf_counter() - clock,
                            **position_table_extreme(model, cfg.seq_len),
                        }
                    )
                    track.append(layer_extremes(model, valid_blocks[:track_blocks], torch_device).assign(step=step))
                    bar.set_postfix(loss=f"{train_loss:.3f}", valid_ppl=f"{math.exp(valid):.1f}", lr=f"{schedule.get_last_lr()[0]:.1e}")
                    state = {
                        "model": model.state_dict(),
                        "optimizer": optimizer.state_dict(),
                        "schedule": schedule.state_dict(),
                        "rng": torch.get_rng_state(),
                        "step": step,
                        "history": history,
                        "track": [t.to_dict(orient="list") for t in track],
                        "config": asdict(cfg),
                    }
                    write_atomic(path, lambda tmp, state=state: torch.save(state, tmp))
                distributed.barrier()  # the checkpoint is whole before any rank goes on
                running.zero_()
                since, clock = 0, time.perf_counter()
    bar.close()
    model.eval()
    return Trained(model, tokenizer, pd.DataFrame(history), pd.concat(track, ignore_index=True) if track else pd.DataFrame(), cfg)


def save(run: Trained, folder: Path, edition: str) -> Path:
    """Write model, tokenizer and training record (training.json: the configuration, the training code and the edition
    that trained it) so `load_model(folder)` works; the folder is replaced only once everything is written."""
    record = {
        "config": asdict(run.config),
        "code": training_code(),
        "edition": edition,
        "history": run.history.to_dict("records"),
        "track": run.track.to_dict("records"),
    }

    def write(staging: Path) -> None:
        run.model.save_pretrained(staging)
        run.tokenizer.save_pretrained(staging)
        (staging / "training.json").write_text(json.dumps(record, indent=1, default=float))
        write_manifest(staging)  # every later load checks the weights against it (`encode.models.resolve`)

    return write_folder_atomic(folder, write)


def saved_block_losses(
    folder: Path, cfg: PretrainConfig, tokenizer: PreTrainedTokenizerFast, blocks: shards.Blocks, device: str = "auto"
) -> tuple[np.ndarray, np.ndarray]:
    """block_losses of the masked LM saved in folder (the model with its output layer), on blocks with cfg's masking."""
    torch_device = pick_device(device)
    model = RobertaForMaskedLM.from_pretrained(folder).to(torch_device)
    return block_losses(model, blocks, tokenizer, cfg, torch_device)


def saved_record(folder: Path) -> dict | None:
    """The training record (training.json) of a model saved in folder, or None where there is none or it is not a
    record (unreadable, not JSON, not a mapping)."""
    try:
        record = json.loads((folder / "training.json").read_text())
    except (OSError, ValueError):
        return None
    return record if isinstance(record, dict) else None


def as_recorded(cfg: PretrainConfig) -> dict:
    """A configuration as a training record holds it (JSON: tuples become lists)."""
    return json.loads(json.dumps(asdict(cfg)))


def saved_run(folder: Path, cfg: PretrainConfig) -> tuple[pd.DataFrame, pd.DataFrame] | None:
    """(history, track) of a model already saved in folder with exactly this configuration (same corpus
    split, tokenizer size, model and schedule) by the same training code, else None."""
    record = saved_record(folder)
    if record is None or record.get("config") != as_recorded(cfg) or record.get("code") != training_code():
        return None
    return pd.DataFrame(record["history"]), pd.DataFrame(record["track"])
