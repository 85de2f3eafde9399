"""Shared plumbing of the ONNX embedder and reranker: session, tokenizer, dynamic padding.

onnxruntime and tokenizers are imported inside the functions so that importing the models
package (or the CLI) does not pay for them.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from keymem.errors import ModelError

_PAD_TOKENS = ("[PAD]", "<pad>", "<|padding|>")

# onnxruntime's CPU memory arena is off: it keeps what the largest call needed for the life of the
# session, and a daemon embeds mostly short strings with now and then a long one (a prompt-hook
# query, a reranker pool). Measured with MiniLM int8 (bench/onnx_memory.py, docs/design.md
# "Memory"): after one batch of 8 texts of 256 tokens the process holds 388 MB with the arena and
# 229 MB without; short-query latency is the same within noise. The memory-pattern planner stays
# at onnxruntime's default (on: no measured difference either way). Module-level so a benchmark
# can A/B them.
CPU_MEM_ARENA = False
MEM_PATTERN = True


def check_model_dir(model_dir: Path, model_file: str, what: str) -> tuple[Path, Path]:
    """(model path, tokenizer path), or a ModelError naming what is missing."""
    hint = "Place model.onnx and tokenizer.json there, or unset the path to download a named model."
    if not model_dir.is_dir():
        raise ModelError(f"{what} directory {model_dir} does not exist. {hint}")
    model_path = model_dir / model_file
    if not model_path.is_file():
        raise ModelError(f"{what} file {model_path} is missing. {hint}")
    tokenizer_path = model_dir / "tokenizer.json"
    if not tokenizer_path.is_file():
        raise ModelError(f"{what} tokenizer {tokenizer_path} is missing. {hint}")
    return model_path, tokenizer_path


def open_session(model_path: Path, threads: int) -> Any:
    """A CPU InferenceSession with a bounded thread count (the daemon shares the machine)."""
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.intra_op_num_threads = max(1, threads)
    opts.inter_op_num_threads = 1
    # Spinning worker threads burn the cores the store and other clients need between calls
    # (measured: recall_direct p50 24 -> 73 ms with 2 spinning threads on 2 cores).
    opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
    opts.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    opts.enable_cpu_mem_arena = CPU_MEM_ARENA
    opts.enable_mem_pattern = MEM_PATTERN
    opts.log_severity_level = 3  # keep ORT's warnings off stderr noise; errors still raise
    try:
        return ort.InferenceSession(str(model_path), sess_options=opts, providers=["CPUExecutionProvider"])
    except Exception as exc:  # ORT raises its own exception types (Fail, InvalidGraph, ...)
        raise ModelError(f"Cannot load ONNX model {model_path}: {exc}") from exc


def open_tokenizer(tokenizer_path: Path, max_length: int, strategy: str = "longest_first") -> Any:
    """A tokenizer that truncates to ``max_length`` and never pads (we pad per batch)."""
    from tokenizers import Tokenizer

    try:
        tok = Tokenizer.from_file(str(tokenizer_path))
    except Exception as exc:
        raise ModelError(f"Cannot read tokenizer {tokenizer_path}: {exc}") from exc
    # Exported tokenizer.json files often carry fixed padding (e.g. to 128) and a short
    # truncation: both would change the vectors, so replace them.
    tok.no_padding()
    tok.enable_truncation(max_length=max_length, strategy=strategy)
    return tok


def pad_id_of(tok: Any) -> int:
    padding = tok.padding
    if padding and padding.get("pad_id") is not None:
        return int(padding["pad_id"])
    for token in _PAD_TOKENS:
        token_id = tok.token_to_id(token)
        if token_id is not None:
            return int(token_id)
    return 0


def pad_batch(encodings: Sequence[Any], pad_id: int) -> dict[str, np.ndarray]:
    """int64 input_ids / attention_mask / token_type_ids padded to the longest in the batch."""
    width = max(len(e.ids) for e in encodings)
    n = len(encodings)
    ids = np.full((n, width), pad_id, dtype=np.int64)
    mask = np.zeros((n, width), dtype=np.int64)
    types = np.zeros((n, width), dtype=np.int64)
    for row, enc in enumerate(encodings):
        length = len(enc.ids)
        ids[row, :length] = enc.ids
        mask[row, :length] = 1
        types[row, :length] = enc.type_ids
    return {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}


def session_feed(session: Any, arrays: dict[str, np.ndarray], model_path: Path) -> dict[str, np.ndarray]:
    """Only the inputs the model declares; an unknown required input is a ModelError."""
    feed: dict[str, np.ndarray] = {}
    for inp in session.get_inputs():
        if inp.name not in arrays:
            raise ModelError(
                f"ONNX model {model_path} needs input {inp.name!r}; only input_ids, attention_mask "
                "and token_type_ids are supported"
            )
        feed[inp.name] = arrays[inp.name]
    return feed
