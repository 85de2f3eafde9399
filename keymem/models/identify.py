"""Which model a directory holds, read from its own files, against the model it is named.

``LOCAL_EMBEDDING_MODEL`` picks pooling, prefixes and key thresholds; a directory given by
``LOCAL_EMBEDDING_MODEL_PATH`` that holds another model would run with all three wrong (an
all-MiniLM-L6-v2 run as bge-m3: CLS pooling, bge thresholds, "done" merged with "fine",
"husband", "yes" ...). So the directory is checked before it is used:

* ``config.json``: ``model_type``, ``hidden_size``, ``num_hidden_layers``, ``vocab_size``,
  ``max_position_embeddings``;
* ``tokenizer.json``: the tokenizer's model type (WordPiece, Unigram, BPE) and vocabulary size;
* the ONNX file: the last axis of its first output, read from the graph's declared outputs
  without loading the weights (:func:`onnx_io`); an export that declares it symbolically is
  measured once by running the model (the factory after loading, ``keymem doctor`` on demand).

Only what the files say is compared: a directory without ``config.json`` is judged by its
tokenizer and output width, one whose facts all agree with the profile passes.
"""

from __future__ import annotations

import json
import mmap
from collections.abc import Iterator
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, cast

from keymem.models.profiles import MODELS, ModelProfile

VAR = "LOCAL_EMBEDDING_MODEL_PATH"
# A tokenizer may carry a few added tokens the config's vocab_size does not count; the
# vocabularies this check must tell apart differ eightfold (30,522 vs 250,002).
_VOCAB_TOLERANCE = 0.02
_FAMILIES = {"bert": "BERT", "xlm-roberta": "XLM-RoBERTa", "roberta": "RoBERTa", "distilbert": "DistilBERT",
             "mpnet": "MPNet", "nomic-bert": "NomicBERT", "modernbert": "ModernBERT", "new": "GTE"}


@dataclass(frozen=True)
class ModelFacts:
    """What one model directory says about its model (None: that file does not say)."""

    model_type: str | None = None  # normalised: lower case, "_" -> "-"
    architecture: str | None = None  # config "architectures"[0], e.g. "BertModel"
    hidden_size: int | None = None
    layers: int | None = None
    vocab_size: int | None = None
    max_positions: int | None = None
    tokenizer: str | None = None  # "WordPiece", "Unigram", "BPE", ...
    tokenizer_vocab: int | None = None
    output_dim: int | None = None  # last axis of the ONNX model's first output
    has_config: bool = False

    @property
    def dimension(self) -> int | None:
        return self.output_dim if self.output_dim is not None else self.hidden_size

    @property
    def family(self) -> str | None:
        if self.model_type:
            return _FAMILIES.get(self.model_type, self.architecture or self.model_type)
        return self.architecture

    def says_anything(self) -> bool:
        return any(getattr(self, f.name) is not None for f in fields(self) if f.name != "has_config")


@dataclass(frozen=True)
class Mismatch:
    """A directory that contradicts its name: what it holds, and the setting that fixes it."""

    what: str  # "LOCAL_EMBEDDING_MODEL_PATH holds ..., not bge-m3 (...)"
    fix: str  # "set LOCAL_EMBEDDING_MODEL=minilm-l6-v2"
    fits: tuple[ModelProfile, ...]  # the known models the files agree with

    @property
    def line(self) -> str:
        return f"{self.what}: {self.fix}"


# -- reading the files ---------------------------------------------------------------------------


def read_facts(model_dir: Path, model_file: str = "model.onnx") -> ModelFacts:
    """The facts of ``model_dir``; a missing or unreadable file contributes nothing.

    Cheap: two small JSON reads (the tokenizer through the ``tokenizers`` library) and the
    ONNX graph's declared inputs/outputs; the weights are neither loaded nor run.
    """
    model_dir = Path(model_dir)
    values: dict[str, Any] = {}
    config = _read_json(model_dir / "config.json")
    if isinstance(config, dict):
        values["has_config"] = True
        model_type = config.get("model_type")
        if isinstance(model_type, str) and model_type.strip():
            values["model_type"] = model_type.strip().lower().replace("_", "-")
        archs = config.get("architectures")
        if isinstance(archs, list) and archs and isinstance(archs[0], str):
            values["architecture"] = archs[0]
        for key, name in (("hidden_size", "hidden_size"), ("num_hidden_layers", "layers"),
                          ("vocab_size", "vocab_size"), ("max_position_embeddings", "max_positions")):
            value = config.get(key)
            if isinstance(value, int) and not isinstance(value, bool) and value > 0:
                values[name] = value
    tokenizer = _tokenizer_facts(model_dir / "tokenizer.json")
    if tokenizer is not None:
        values["tokenizer"], values["tokenizer_vocab"] = tokenizer
    values["output_dim"] = onnx_output_dim(model_dir / model_file)
    return ModelFacts(**values)


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _tokenizer_facts(path: Path) -> tuple[str, int] | None:
    if not path.is_file():
        return None
    try:
        from tokenizers import Tokenizer

        tok = Tokenizer.from_file(str(path))
    except Exception:  # an unreadable tokenizer is reported by the embedder that needs it
        return None
    return type(tok.model).__name__, int(tok.get_vocab_size(with_added_tokens=True))


def onnx_output_dim(path: Path) -> int | None:
    """The last axis of the first graph output when the file declares it as a number, else None."""
    try:
        _inputs, outputs = onnx_io(path)
    except (OSError, ValueError):
        return None
    if not outputs:
        return None
    dims = outputs[0][1]
    return dims[-1] if dims and isinstance(dims[-1], int) and dims[-1] > 0 else None


Dims = tuple[int | str | None, ...]


def onnx_io(path: Path) -> tuple[list[tuple[str, Dims]], list[tuple[str, Dims]]]:
    """The graph's declared (inputs, outputs) as ``(name, dims)``; a dim is a number, a symbol or None.

    Reads the protobuf wire format directly (ModelProto.graph = 7; GraphProto.input = 11,
    output = 12; ValueInfoProto.name = 1, type = 2; TypeProto.tensor_type = 1;
    Tensor.shape = 2; TensorShapeProto.dim = 1; Dimension.dim_value = 1, dim_param = 2) and
    skips everything else by its length, so the weights are never read. Raises ValueError
    when the file is not an ONNX model.
    """
    with open(path, "rb") as fh:
        size = fh.seek(0, 2)
        if size == 0:
            raise ValueError(f"{path} is empty")
        with mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as buf:
            graph = None
            for field, value in _fields(buf, 0, size):
                if field == 7 and isinstance(value, tuple):
                    graph = value
            if graph is None:
                raise ValueError(f"{path} holds no ONNX graph")
            inputs: list[tuple[str, Dims]] = []
            outputs: list[tuple[str, Dims]] = []
            for field, value in _fields(buf, *graph):
                if field in (11, 12) and isinstance(value, tuple):
                    (inputs if field == 11 else outputs).append(_value_info(buf, value))
            return inputs, outputs


def _value_info(buf: Any, span: tuple[int, int]) -> tuple[str, Dims]:
    name, dims = "", cast(Dims, ())
    for field, value in _fields(buf, *span):
        if field == 1 and isinstance(value, tuple):
            name = bytes(buf[value[0] : value[1]]).decode("utf-8", "replace")
        elif field == 2 and isinstance(value, tuple):
            for f_type, tensor in _fields(buf, *value):
                if f_type == 1 and isinstance(tensor, tuple):  # tensor_type
                    for f_tensor, shape in _fields(buf, *tensor):
                        if f_tensor == 2 and isinstance(shape, tuple):
                            dims = tuple(_dim(buf, d) for f, d in _fields(buf, *shape) if f == 1 and isinstance(d, tuple))
    return name, dims


def _dim(buf: Any, span: tuple[int, int]) -> int | str | None:
    for field, value in _fields(buf, *span):
        if field == 1 and isinstance(value, int):
            return value
        if field == 2 and isinstance(value, tuple):
            return bytes(buf[value[0] : value[1]]).decode("utf-8", "replace")
    return None


def _fields(buf: Any, start: int, end: int) -> Iterator[tuple[int, int | tuple[int, int]]]:
    """(field number, value) of one message: an int for varints, (start, end) for length-delimited."""
    pos = start
    while pos < end:
        tag, pos = _varint(buf, pos, end)
        field, wire = tag >> 3, tag & 7
        if field == 0:
            raise ValueError("not a protobuf message")
        value: int | tuple[int, int] | None = None
        if wire == 0:
            value, pos = _varint(buf, pos, end)
        elif wire == 2:
            length, pos = _varint(buf, pos, end)
            value, pos = (pos, pos + length), pos + length
        elif wire == 1:
            pos += 8
        elif wire == 5:
            pos += 4
        else:
            raise ValueError(f"unsupported wire type {wire}")
        if pos > end:
            raise ValueError("truncated field")
        if value is not None:
            yield field, value


def _varint(buf: Any, pos: int, end: int) -> tuple[int, int]:
    result, shift = 0, 0
    while True:
        if pos >= end or shift > 63:
            raise ValueError("bad varint")
        byte = buf[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, pos
        shift += 7


# -- comparing -------------------------------------------------------------------------------------


def contradictions(profile: ModelProfile, facts: ModelFacts) -> list[str]:
    """The facts of ``facts`` that ``profile`` does not expect, by name (empty: no contradiction)."""
    out = []
    if facts.hidden_size is not None and facts.hidden_size != profile.dimension:
        out.append("hidden_size")
    if facts.output_dim is not None and facts.output_dim != profile.dimension:
        out.append("output_dim")
    shape = profile.shape
    if shape is None:
        return out
    if facts.model_type is not None and facts.model_type != shape.model_type:
        out.append("model_type")
    if facts.layers is not None and facts.layers != shape.layers:
        out.append("layers")
    if facts.vocab_size is not None and facts.vocab_size != shape.vocab_size:
        out.append("vocab_size")
    if facts.max_positions is not None and facts.max_positions != shape.max_positions:
        out.append("max_positions")
    if facts.tokenizer is not None and facts.tokenizer != shape.tokenizer:
        out.append("tokenizer")
    if facts.tokenizer_vocab is not None and abs(facts.tokenizer_vocab - shape.vocab_size) > _VOCAB_TOLERANCE * shape.vocab_size:
        out.append("tokenizer_vocab")
    return out


def fitting(facts: ModelFacts) -> tuple[ModelProfile, ...]:
    """The known models the facts agree with (all of them when the files say nothing)."""
    return tuple(p for p in MODELS if not contradictions(p, facts))


def check(profile: ModelProfile, facts: ModelFacts) -> Mismatch | None:
    """None when the directory's facts agree with ``profile``, else what it holds and how to name it."""
    wrong = contradictions(profile, facts)
    if not wrong:
        return None
    fits = fitting(facts)
    # family and width tell most models apart; when they agree, show the facts that differ
    headline = {"model_type", "hidden_size", "output_dim"}
    extra: list[str] = []
    if not headline & set(wrong):
        renamed = ({"tokenizer_vocab": "vocab_size"}.get(f, f) for f in wrong)
        extra = list(dict.fromkeys(f for f in renamed if f in ("layers", "max_positions", "vocab_size", "tokenizer")))
    held, expected = _describe_facts(facts, extra), _describe_profile(profile, extra)
    if len(fits) == 1:
        fit = fits[0]
        return Mismatch(f"{VAR} holds {fit.display or fit.name} ({held}), not {profile.name} ({expected})",
                        f"set LOCAL_EMBEDDING_MODEL={fit.name}", fits)
    if fits:
        names = " or ".join(p.name for p in fits)
        return Mismatch(f"{VAR} holds a model ({held}), not {profile.name} ({expected})",
                        f"set LOCAL_EMBEDDING_MODEL to the one it is ({names})", fits)
    return Mismatch(
        f"{VAR} holds a model ({held}) that is neither {profile.name} ({expected}) nor another known model",
        "set LOCAL_EMBEDDING_MODEL to a name of your own (e.g. LOCAL_EMBEDDING_MODEL=my-model: mean pooling, "
        f"uncalibrated key thresholds, see KEYMEM_KEY_MERGE), or point {VAR} at a {profile.name} directory",
        fits,
    )


def suggestion(facts: ModelFacts) -> ModelProfile | None:
    """The one known model a directory's files point to (for a directory named with an unknown name)."""
    if not (facts.has_config or facts.output_dim is not None):
        return None
    fits = fitting(facts)
    return fits[0] if len(fits) == 1 else None


def describe(facts: ModelFacts) -> str:
    """One line of what the files say, for `keymem doctor`."""
    if not facts.says_anything():
        return "the files say nothing about the model"
    return _describe_facts(facts, ["layers", "vocab_size"] if facts.has_config else [])


def _describe_facts(facts: ModelFacts, extra: list[str]) -> str:
    parts = []
    if facts.family:
        parts.append(facts.family)
    if facts.dimension is not None:
        parts.append(f"{facts.dimension} dims")
    if facts.output_dim is not None and facts.hidden_size is not None and facts.output_dim != facts.hidden_size:
        parts.append(f"config hidden_size {facts.hidden_size}")
    for name in extra:
        if name == "layers" and facts.layers is not None:
            parts.append(f"{facts.layers} layers")
        elif name == "max_positions" and facts.max_positions is not None:
            parts.append(f"{facts.max_positions} positions")
        elif name == "vocab_size" and (facts.vocab_size or facts.tokenizer_vocab):
            parts.append(f"{facts.vocab_size or facts.tokenizer_vocab:,} tokens")
        elif name == "tokenizer" and facts.tokenizer is not None and facts.has_config:
            parts.append(f"{facts.tokenizer} tokenizer")
    if not facts.has_config:
        if facts.tokenizer is not None:
            parts.append(f"{facts.tokenizer} tokenizer")
        parts.append("no config.json")
    return ", ".join(parts)


def _describe_profile(profile: ModelProfile, extra: list[str]) -> str:
    shape = profile.shape
    parts = [shape.family] if shape else []
    parts.append(f"{profile.dimension} dims")
    if shape is not None:
        for name in extra:
            if name == "layers":
                parts.append(f"{shape.layers} layers")
            elif name == "max_positions":
                parts.append(f"{shape.max_positions} positions")
            elif name == "vocab_size":
                parts.append(f"{shape.vocab_size:,} tokens")
            elif name == "tokenizer":
                parts.append(f"{shape.tokenizer} tokenizer")
    return ", ".join(parts)
