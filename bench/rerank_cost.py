"""Cross-encoder cost per candidate, on a shape twin of bge-reranker-v2-m3.

Usage::

    python bench/rerank_cost.py [--model-dir DIR] [--pools 1,5,10,20,30] [--runs 7] [--threads N]
    python bench/rerank_cost.py --model-dir ~/.keymem/models/reranker   # the real model, if you have it

No reranker weights can be downloaded here, but the cost of a cross-encoder depends on its
architecture and sequence length, not on its weights. Without ``--model-dir`` this builds (once,
cached under ``bench/out/rerank-twin``) an ONNX model with bge-reranker-v2-m3's encoder stack -
XLM-RoBERTa-large: 24 post-LayerNorm layers, hidden 1024, 16 heads, feed-forward 4096, GELU,
a [CLS] dense + tanh + 1-logit classification head - with random weights, int8 dynamically
quantized by onnxruntime (how the "quantized" ONNX exports of this model are made). Two
deliberate differences, neither of which changes the compute per token: the word-embedding table
has the stand-in tokenizer's 30,522 rows instead of 250,002 (a Gather), and texts are tokenised
by the MiniLM WordPiece tokenizer from tests/fixtures (XLM-R's SentencePiece splits English into
a similar number of pieces). Its scores mean nothing; only the timings are used.

It runs keymem's own ``OnnxReranker`` (``score(query, passages)``, batches of 16, the pair
truncation keymem uses) over LoCoMo-length memories and prints, for each pool size, the median
wall time of one call and the marginal cost per candidate (least-squares slope over pool sizes).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common  # noqa: E402

LAYERS, HIDDEN, HEADS, FFN, VOCAB, MAX_POS = 24, 1024, 16, 4096, 30522, 514
TWIN_DIR = Path(__file__).resolve().parent / "out" / "rerank-twin"
QUERY = "When did Caroline go to the LGBTQ support group, and what did she say about it afterwards?"
PASSAGES = [
    "Caroline: I went to a LGBTQ support group yesterday and it was so powerful.",
    "Melanie: That's great! I've been painting a lot lately, mostly sunsets over the lake near our place.",
    "Caroline: The transgender stories were so inspiring! I was so happy and thankful for all the support.",
    "Melanie: We took the kids camping last weekend; they loved roasting marshmallows by the fire.",
    "Caroline: I'm thinking about a career in counseling, helping people who went through what I did.",
    "Melanie: My husband and I celebrated our anniversary with a quiet dinner at an Italian restaurant.",
]


def build_twin(directory: Path, seed: int = 0) -> Path:
    """Write the int8 shape twin (model.onnx + tokenizer.json) into ``directory``."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    from onnxruntime.quantization import QuantType, quantize_dynamic

    rng = np.random.default_rng(seed)
    inits: list[Any] = []
    nodes: list[Any] = []

    def w(name: str, *shape: int, scale: float = 0.02) -> str:
        inits.append(numpy_helper.from_array((rng.standard_normal(shape) * scale).astype(np.float32), name))
        return name

    def const(name: str, value: Any, dtype: Any = np.float32) -> str:
        inits.append(numpy_helper.from_array(np.asarray(value, dtype=dtype), name))
        return name

    def node(op: str, ins: list[str], out: str, **attrs: Any) -> str:
        nodes.append(helper.make_node(op, ins, [out], **attrs))
        return out

    def linear(x: str, name: str, n_in: int, n_out: int) -> str:
        y = node("MatMul", [x, w(f"{name}.w", n_in, n_out)], f"{name}.mm")
        return node("Add", [y, const(f"{name}.b", np.zeros(n_out))], f"{name}.out")

    def layer_norm(x: str, name: str) -> str:
        return node("LayerNormalization", [x, const(f"{name}.g", np.ones(HIDDEN)), const(f"{name}.b", np.zeros(HIDDEN))],
                    f"{name}.out", axis=-1, epsilon=1e-5)

    hd = HIDDEN // HEADS
    const("shape_heads", [0, 0, HEADS, hd], np.int64)
    const("shape_hidden", [0, 0, HIDDEN], np.int64)
    const("scale", 1.0 / np.sqrt(hd))
    const("one", 1.0)
    const("neg", -10000.0)
    const("half", 0.5)
    const("sqrt2", np.sqrt(2.0))
    const("axes12", [1, 2], np.int64)
    const("zero_i", 0, np.int64)
    const("one_i", 1, np.int64)
    const("two_i", 2, np.int64)
    # embeddings: word + position (RoBERTa positions start at padding_idx + 1 = 2) + LayerNorm
    word = node("Gather", [w("emb.word", VOCAB, HIDDEN), "input_ids"], "emb.w")
    node("Shape", ["input_ids"], "ids_shape")
    node("Gather", ["ids_shape", "one_i"], "seq_len", axis=0)
    node("Range", ["zero_i", "seq_len", "one_i"], "pos0")
    node("Add", ["pos0", "two_i"], "pos")
    posv = node("Gather", [w("emb.pos", MAX_POS, HIDDEN), "pos"], "emb.p")
    x = layer_norm(node("Add", [word, posv], "emb.sum"), "emb.ln")
    # additive attention mask [B, 1, 1, S]
    node("Cast", ["attention_mask"], "mask_f", to=TensorProto.FLOAT)
    node("Sub", ["one", "mask_f"], "mask_inv")
    node("Mul", ["mask_inv", "neg"], "mask_neg")
    node("Unsqueeze", ["mask_neg", "axes12"], "mask_bias")
    for i in range(LAYERS):
        p = f"l{i}"
        q = node("Transpose", [node("Reshape", [linear(x, f"{p}.q", HIDDEN, HIDDEN), "shape_heads"], f"{p}.qr")],
                 f"{p}.qt", perm=[0, 2, 1, 3])
        k = node("Transpose", [node("Reshape", [linear(x, f"{p}.k", HIDDEN, HIDDEN), "shape_heads"], f"{p}.kr")],
                 f"{p}.kt", perm=[0, 2, 3, 1])
        v = node("Transpose", [node("Reshape", [linear(x, f"{p}.v", HIDDEN, HIDDEN), "shape_heads"], f"{p}.vr")],
                 f"{p}.vt", perm=[0, 2, 1, 3])
        scores = node("Add", [node("Mul", [node("MatMul", [q, k], f"{p}.qk"), "scale"], f"{p}.qks"), "mask_bias"],
                      f"{p}.sc")
        probs = node("Softmax", [scores], f"{p}.pr", axis=-1)
        ctx = node("Transpose", [node("MatMul", [probs, v], f"{p}.ctx")], f"{p}.ctxt", perm=[0, 2, 1, 3])
        ctx = node("Reshape", [ctx, "shape_hidden"], f"{p}.ctxr")
        x = layer_norm(node("Add", [x, linear(ctx, f"{p}.o", HIDDEN, HIDDEN)], f"{p}.res1"), f"{p}.ln1")
        h = linear(x, f"{p}.ff1", HIDDEN, FFN)
        gelu = node("Mul", [node("Mul", [h, "half"], f"{p}.gh"),
                            node("Add", [node("Erf", [node("Div", [h, "sqrt2"], f"{p}.gd")], f"{p}.ge"), "one"],
                                 f"{p}.g1")], f"{p}.gelu")
        x = layer_norm(node("Add", [x, linear(gelu, f"{p}.ff2", FFN, HIDDEN)], f"{p}.res2"), f"{p}.ln2")
    cls = node("Gather", [x, "zero_i"], "cls", axis=1)
    dense = node("Tanh", [linear(cls, "head.dense", HIDDEN, HIDDEN)], "head.tanh")
    linear(dense, "head.out", HIDDEN, 1)
    nodes.append(helper.make_node("Identity", ["head.out.out"], ["logits"]))
    graph = helper.make_graph(
        nodes, "bge_reranker_v2_m3_shape_twin",
        [helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "sequence"]),
         helper.make_tensor_value_info("attention_mask", TensorProto.INT64, ["batch", "sequence"])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", 1])],
        initializer=inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="keymem-bench")
    model.ir_version = 8
    directory.mkdir(parents=True, exist_ok=True)
    fp32 = directory / "model-fp32.onnx"
    onnx.save_model(model, str(fp32), save_as_external_data=True, location="model-fp32.onnx.data")
    del model, graph
    quantize_dynamic(str(fp32), str(directory / "model.onnx"), weight_type=QuantType.QInt8)
    fp32.unlink()
    (directory / "model-fp32.onnx.data").unlink()
    shutil.copy(_common.MINILM_FIXTURE / "tokenizer.json", directory / "tokenizer.json")
    return directory


def measure(model_dir: Path, pools: list[int], runs: int, threads: int) -> dict[str, Any]:
    reranker = _common.load_reranker(model_dir, threads=threads)
    passages = [PASSAGES[i % len(PASSAGES)] + f" (note {i})" for i in range(max(pools))]
    reranker.score(QUERY, passages[:4])  # warm-up
    per_pool: dict[int, float] = {}
    for n in pools:
        times = []
        for _ in range(runs):
            t = time.perf_counter()
            reranker.score(QUERY, passages[:n])
            times.append(time.perf_counter() - t)
        per_pool[n] = statistics.median(times)
        print(f"  pool {n:3d}: {per_pool[n] * 1000:8.1f} ms per call", file=sys.stderr, flush=True)
    xs = np.array(pools, dtype=float)
    ys = np.array([per_pool[n] for n in pools])
    slope, intercept = np.polyfit(xs, ys, 1)
    enc = reranker._tokenizer.encode(QUERY, passages[0])  # noqa: SLF001 - report the sequence length used
    return {
        "model_dir": str(model_dir),
        "threads": threads,
        "pair_tokens_example": len(enc.ids),
        "call_ms_median": {str(n): round(per_pool[n] * 1000, 1) for n in pools},
        "per_candidate_ms": round(slope * 1000, 1),
        "fixed_ms": round(intercept * 1000, 1),
        "runs": runs,
        "machine": {"cpus": os.cpu_count()},
    }


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model-dir", default=None, help="a real reranker directory (model.onnx + tokenizer.json)")
    p.add_argument("--pools", default="1,5,10,20,30")
    p.add_argument("--runs", type=int, default=7)
    p.add_argument("--threads", type=int, default=None, help="ONNX threads (default: keymem's KEYMEM_RERANK_THREADS default)")
    p.add_argument("--json", default=None)
    args = p.parse_args(argv)
    from keymem.settings import load_settings

    threads = args.threads or load_settings({}).rerank_threads
    model_dir = Path(args.model_dir) if args.model_dir else TWIN_DIR
    if not args.model_dir and not (model_dir / "model.onnx").exists():
        print(f"building the bge-reranker-v2-m3 shape twin in {model_dir} (once) ...", file=sys.stderr, flush=True)
        t = time.perf_counter()
        build_twin(model_dir)
        print(f"  built in {time.perf_counter() - t:.0f} s, "
              f"{(model_dir / 'model.onnx').stat().st_size / 2**20:.0f} MB", file=sys.stderr)
    res = measure(model_dir, [int(x) for x in args.pools.split(",")], args.runs, threads)
    res["model"] = "real" if args.model_dir else "bge-reranker-v2-m3 shape twin (random int8 weights)"
    print(json.dumps(res, indent=2))
    if args.json:
        Path(args.json).write_text(json.dumps(res, indent=2))


if __name__ == "__main__":
    main()
