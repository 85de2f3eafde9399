"""Named local models (where to fetch them, how to pool) and per-model key thresholds.

Cosine scales differ a lot between models (e5 puts unrelated phrases near 0.75, OpenAI's
3-small puts synonyms near 0.6), so one key threshold cannot serve them all: each embedder
names a threshold profile and :func:`thresholds_for` turns it into numbers.

Sources chosen for the downloads (checked against public references, 2025):

* bge-m3: the seed's choice, quantized ONNX ``onnx/model_quantized.onnx`` (~570 MB) from
  ``onnx-community/bge-m3-ONNX``; tokenizer and config from ``BAAI/bge-m3``.
* multilingual-e5-large, bge-small/base-en-v1.5, all-MiniLM-L6-v2: the single-file int8
  exports ``onnx/model_quantized.onnx`` in the ``Xenova/*`` repositories (the same family
  of exports as onnx-community; Qdrant's fastembed repo for e5-large ships fp32 weights
  split into ``model.onnx_data``, 2.2 GB, which is why it is not used).
* reranker: ``onnx-community/bge-reranker-v2-m3-ONNX``, ``onnx/model_quantized.onnx``.

Each profile also says what its own files hold (:class:`ModelShape`: the values of the
upstream ``config.json`` and ``tokenizer.json``), so that a directory of another model given
with ``LOCAL_EMBEDDING_MODEL_PATH`` is refused (:mod:`keymem.models.identify`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Literal

from keymem.errors import ModelError, shown

Pooling = Literal["cls", "mean"]

MODEL_FILE = "model.onnx"
TOKENIZER_FILE = "tokenizer.json"
CONFIG_FILES = ("config.json", "tokenizer_config.json", "special_tokens_map.json")


@dataclass(frozen=True)
class RemoteFile:
    """One file of a model directory: where it lives on the Hub and its local name."""

    repo_id: str
    path: str  # path inside the repo, e.g. "onnx/model_quantized.onnx"
    local_name: str  # name inside the model directory, e.g. "model.onnx"
    required: bool = True  # optional files are fetched during a repair, a 404 is tolerated
    revision: str = "main"


@dataclass(frozen=True)
class ModelShape:
    """What a model's own files say about it (config.json, tokenizer.json): see :mod:`keymem.models.identify`.

    The width is :attr:`ModelProfile.dimension` (config ``hidden_size`` and the ONNX output's
    last axis). ``max_positions`` is what tells bge-m3 (8194) from multilingual-e5-large (514),
    ``layers`` bge-small-en-v1.5 (12) from all-MiniLM-L6-v2 (6).
    """

    family: str  # shown in messages: "BERT", "XLM-RoBERTa"
    model_type: str  # config.json "model_type"
    layers: int  # config.json "num_hidden_layers"
    vocab_size: int  # config.json "vocab_size" (and the tokenizer's vocabulary)
    max_positions: int  # config.json "max_position_embeddings"
    tokenizer: str  # tokenizer.json model type: "WordPiece", "Unigram", "BPE"


def _bert_uncased(layers: int) -> ModelShape:
    """A BERT of bert-base-uncased's vocabulary (30,522 WordPiece tokens, 512 positions)."""
    return ModelShape("BERT", "bert", layers, 30522, 512, "WordPiece")


def _xlm_roberta_large(max_positions: int) -> ModelShape:
    """An XLM-RoBERTa-large (24 layers, 250,002 Unigram tokens)."""
    return ModelShape("XLM-RoBERTa", "xlm-roberta", 24, 250002, max_positions, "Unigram")


@dataclass(frozen=True)
class ModelProfile:
    """A named local embedding model: download sources and how to run it."""

    name: str
    aliases: tuple[str, ...]
    repo_id: str  # repo holding the ONNX file
    model_path: str  # ONNX file inside repo_id, saved locally as model.onnx
    tokenizer_repo_id: str  # repo holding tokenizer.json + config files
    pooling: Pooling
    dimension: int
    threshold_profile: str
    query_prefix: str = ""
    passage_prefix: str = ""
    max_length: int = 512
    size_hint: str = ""
    display: str = ""  # the model's own name, for messages ("all-MiniLM-L6-v2")
    shape: ModelShape | None = None  # None: the directory's files are checked for the dimension only
    # `keymem init` turns the ~570 MB cross-encoder on for this model unless told otherwise: for the large
    # multilingual models, whose own size it matches; a small setup stays small.
    rerank: bool = False

    def files(self) -> tuple[RemoteFile, ...]:
        """Everything a complete model directory holds (required first)."""
        return (
            RemoteFile(self.repo_id, self.model_path, MODEL_FILE),
            RemoteFile(self.tokenizer_repo_id, TOKENIZER_FILE, TOKENIZER_FILE),
            *(RemoteFile(self.tokenizer_repo_id, f, f, required=False) for f in CONFIG_FILES),
        )


@dataclass(frozen=True)
class RerankerProfile:
    """The cross-encoder: download sources and input limits."""

    name: str
    repo_id: str
    model_path: str
    tokenizer_repo_id: str
    max_length: int = 512
    size_hint: str = ""

    def files(self) -> tuple[RemoteFile, ...]:
        return (
            RemoteFile(self.repo_id, self.model_path, MODEL_FILE),
            RemoteFile(self.tokenizer_repo_id, TOKENIZER_FILE, TOKENIZER_FILE),
            *(RemoteFile(self.tokenizer_repo_id, f, f, required=False) for f in CONFIG_FILES),
        )


MODELS: tuple[ModelProfile, ...] = (
    ModelProfile(
        name="bge-m3",
        aliases=("bgem3", "baai/bge-m3", "fast-bge-m3"),
        repo_id="onnx-community/bge-m3-ONNX",
        model_path="onnx/model_quantized.onnx",
        tokenizer_repo_id="BAAI/bge-m3",
        pooling="cls",
        dimension=1024,
        threshold_profile="bge",
        # bge-m3 reads 8192 tokens, but keys and queries are short and attention cost is
        # quadratic on a CPU: 512 keeps a pasted paragraph from stalling the embedder.
        max_length=512,
        size_hint="~570 MB",
        display="bge-m3",
        shape=_xlm_roberta_large(8194),
        rerank=True,
    ),
    ModelProfile(
        name="fast-multilingual-e5-large",
        aliases=("multilingual-e5-large", "intfloat/multilingual-e5-large", "e5-large"),
        repo_id="Xenova/multilingual-e5-large",
        model_path="onnx/model_quantized.onnx",
        tokenizer_repo_id="Xenova/multilingual-e5-large",
        pooling="mean",
        dimension=1024,
        threshold_profile="e5",
        query_prefix="query: ",  # e5 was trained with these prefixes; without them
        passage_prefix="passage: ",  # its cosines drift (model card: "necessary")
        size_hint="~560 MB",
        display="multilingual-e5-large",
        shape=_xlm_roberta_large(514),
        rerank=True,
    ),
    ModelProfile(
        name="fast-bge-small-en-v1.5",
        aliases=("bge-small-en-v1.5", "baai/bge-small-en-v1.5"),
        repo_id="Xenova/bge-small-en-v1.5",
        model_path="onnx/model_quantized.onnx",
        tokenizer_repo_id="Xenova/bge-small-en-v1.5",
        pooling="cls",
        dimension=384,
        threshold_profile="bge",
        size_hint="~35 MB",
        display="bge-small-en-v1.5",
        shape=_bert_uncased(12),
    ),
    ModelProfile(
        name="fast-bge-base-en-v1.5",
        aliases=("bge-base-en-v1.5", "baai/bge-base-en-v1.5"),
        repo_id="Xenova/bge-base-en-v1.5",
        model_path="onnx/model_quantized.onnx",
        tokenizer_repo_id="Xenova/bge-base-en-v1.5",
        pooling="cls",
        dimension=768,
        threshold_profile="bge",
        size_hint="~110 MB",
        display="bge-base-en-v1.5",
        shape=_bert_uncased(12),
    ),
    ModelProfile(
        name="minilm-l6-v2",
        aliases=("all-minilm-l6-v2", "sentence-transformers/all-minilm-l6-v2", "minilm"),
        repo_id="Xenova/all-MiniLM-L6-v2",
        model_path="onnx/model_quantized.onnx",
        tokenizer_repo_id="Xenova/all-MiniLM-L6-v2",
        pooling="mean",
        dimension=384,
        threshold_profile="minilm",
        max_length=256,  # sentence-transformers trained and serves it at 256 tokens
        size_hint="~23 MB",
        display="all-MiniLM-L6-v2",
        shape=_bert_uncased(6),
    ),
)

RERANKER = RerankerProfile(
    name="bge-reranker-v2-m3",
    repo_id="onnx-community/bge-reranker-v2-m3-ONNX",
    model_path="onnx/model_quantized.onnx",
    tokenizer_repo_id="onnx-community/bge-reranker-v2-m3-ONNX",
    size_hint="~570 MB",
)

_BY_NAME: dict[str, ModelProfile] = {}
for _m in MODELS:
    for _n in (_m.name, *_m.aliases):
        _BY_NAME[_n.lower()] = _m


def known_models() -> list[str]:
    return [m.name for m in MODELS]


def find_model(name: str) -> ModelProfile | None:
    """The profile for a name or alias (case-insensitive), or None."""
    return _BY_NAME.get(name.strip().lower())


def resolve_model(name: str) -> ModelProfile:
    """Like :func:`find_model` but an unknown name is a :class:`ModelError` naming the choices."""
    profile = find_model(name)
    if profile is None:
        raise ModelError(
            f"Unknown local embedding model {shown(name)}. Known models: {', '.join(known_models())}. "
            "For another ONNX model set LOCAL_EMBEDDING_MODEL_PATH to a directory holding "
            "model.onnx and tokenizer.json."
        )
    return profile


@dataclass(frozen=True)
class ThresholdProfile:
    """Key cosine thresholds of one embedding model.

    ``key_recall``: a query routes to a concept key at or above it. ``key_merge``: a new key
    becomes an alias of an existing one. ``key_autolink``: automatic alias promotion (taken
    without anyone choosing the key, so never looser than merge). ``short_key_merge``: merge
    threshold for keys of <= 3 characters, whose cosines are unreliable; None = never merge
    short keys.
    """

    key_recall: float
    key_merge: float
    key_autolink: float
    short_key_merge: float | None


THRESHOLD_PROFILES: Mapping[str, ThresholdProfile] = {
    # bge-m3 (and the BGE-en models, whose v1.5 cosine spread is similar): recall 0.60 and
    # merge 0.85 are the seed's numbers ("파이썬" -> "Python" at 0.87). Autolink sits 0.03 above
    # merge because nobody confirmed the pairing. Short keys ("AI", "동건") share few sub-word
    # tokens' worth of meaning and score high by accident, so they merge only when nearly equal.
    "bge": ThresholdProfile(key_recall=0.60, key_merge=0.85, key_autolink=0.88, short_key_merge=0.93),
    # text-embedding-3-*: cosines are low overall (unrelated ~0.1, synonyms ~0.55-0.75). The seed
    # gives recall 0.28; merge 0.70 keeps "car"/"automobile"-level synonyms and rejects
    # topic neighbours (~0.45-0.6). Short-key merging stays off: not measured.
    "openai": ThresholdProfile(key_recall=0.28, key_merge=0.70, key_autolink=0.75, short_key_merge=None),
    # multilingual-e5: cosines are compressed high (unrelated phrases ~0.70-0.78, related
    # ~0.80-0.86, synonyms/translations ~0.88+), so every threshold moves up accordingly.
    "e5": ThresholdProfile(key_recall=0.80, key_merge=0.91, key_autolink=0.93, short_key_merge=None),
    # all-MiniLM-L6-v2: calibrated on the 220 labelled pairs of tests/fixtures/key_pairs.json
    # by bench/calibrate_keys.py (docs/calibration.md): recall = strictest threshold within 0.01
    # of the best F0.5 (route P 0.95 / R 0.80); merge = above every non-merge pair incl.
    # near-spelled names (Mohammed/Muhammad 0.887) + 0.02 (P 1.0 / R 0.28); autolink = merge +
    # 0.03; short keys: above dog/puppy (0.803) + 0.02, so car/automobile (0.864) still merges.
    "minilm": ThresholdProfile(key_recall=0.51, key_merge=0.91, key_autolink=0.94, short_key_merge=0.83),
}

FALLBACK_PROFILE = "bge"
_OVERRIDABLE = ("key_recall", "key_merge", "key_autolink", "short_key_merge")


def thresholds_for(
    profile_name: str, overrides: Mapping[str, float | None] | None = None
) -> tuple[ThresholdProfile, bool]:
    """The thresholds for a profile with the user's overrides applied, and whether it is calibrated.

    An unknown profile falls back to "bge" and returns ``calibrated=False`` (the caller logs
    the warning). Overrides whose value is None are ignored; a ``short_key_merge`` override
    above 1 turns short-key merging off (no cosine can reach it).
    """
    base = THRESHOLD_PROFILES.get(profile_name)
    calibrated = base is not None
    if base is None:
        base = THRESHOLD_PROFILES[FALLBACK_PROFILE]
    changes: dict[str, float | None] = {}
    for key, value in (overrides or {}).items():
        if key not in _OVERRIDABLE:
            raise ValueError(f"not a key threshold: {key!r} (expected one of {', '.join(_OVERRIDABLE)})")
        if value is None:
            continue
        changes[key] = None if key == "short_key_merge" and value > 1 else float(value)
    return (replace(base, **changes) if changes else base), calibrated  # type: ignore[arg-type]
