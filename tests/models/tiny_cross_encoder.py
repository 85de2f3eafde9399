"""A tiny ONNX cross-encoder for reranker tests (the real one is 570 MB and off-line here).

It has the interface of bge-reranker-v2-m3 (inputs ``input_ids`` and ``attention_mask``,
int64 [batch, seq]; output ``logits`` float [batch, 1]) and a score that means something:
the number of query tokens that also occur in the passage segment. Segments are found the
way a BERT pair is laid out -- ``[CLS] query [SEP] passage [SEP]`` -- by a running count of
[SEP] tokens. It uses the MiniLM fixture tokenizer (BERT word pieces, [CLS]=101, [SEP]=102).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import onnx
from onnx import TensorProto, helper

FIXTURE_TOKENIZER = Path(__file__).resolve().parent.parent / "fixtures" / "minilm" / "tokenizer.json"
CLS_ID = 101
SEP_ID = 102


def _const(name: str, value: int | list[int]) -> onnx.NodeProto:
    dims = [] if isinstance(value, int) else [len(value)]
    vals = [value] if isinstance(value, int) else value
    return helper.make_node(
        "Constant", [], [name], value=helper.make_tensor(name + "_t", TensorProto.INT64, dims, vals)
    )


def build_tiny_cross_encoder(directory: Path) -> Path:
    """Write model.onnx + tokenizer.json into ``directory`` and return the directory."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    nodes = [
        _const("sep", SEP_ID),
        _const("cls", CLS_ID),
        _const("zero", 0),
        _const("one", 1),
        _const("axis1", 1),
        _const("axes1", [1]),
        _const("axes2", [2]),
        # segment index: 0 for [CLS] + query, 1 for [SEP] + passage, 2 after the last [SEP]
        helper.make_node("Equal", ["input_ids", "sep"], ["is_sep"]),
        helper.make_node("Cast", ["is_sep"], ["sep_i"], to=TensorProto.INT64),
        helper.make_node("CumSum", ["sep_i", "axis1"], ["seg"]),
        helper.make_node("Equal", ["seg", "zero"], ["in_q"]),
        helper.make_node("Equal", ["input_ids", "cls"], ["is_cls"]),
        helper.make_node("Not", ["is_cls"], ["not_cls"]),
        helper.make_node("And", ["in_q", "not_cls"], ["qmask"]),
        helper.make_node("Equal", ["seg", "one"], ["in_p"]),
        helper.make_node("Not", ["is_sep"], ["not_sep"]),
        helper.make_node("Equal", ["attention_mask", "one"], ["attended"]),
        helper.make_node("And", ["in_p", "not_sep"], ["p0"]),
        helper.make_node("And", ["p0", "attended"], ["pmask"]),
        # same[b, i, j] = query token i equals passage token j
        helper.make_node("Unsqueeze", ["input_ids", "axes2"], ["ids_i"]),
        helper.make_node("Unsqueeze", ["input_ids", "axes1"], ["ids_j"]),
        helper.make_node("Equal", ["ids_i", "ids_j"], ["eq"]),
        helper.make_node("Unsqueeze", ["qmask", "axes2"], ["q3"]),
        helper.make_node("Unsqueeze", ["pmask", "axes1"], ["p3"]),
        helper.make_node("And", ["eq", "q3"], ["eq_q"]),
        helper.make_node("And", ["eq_q", "p3"], ["same"]),
        helper.make_node("Cast", ["same"], ["same_f"], to=TensorProto.FLOAT),
        helper.make_node("ReduceMax", ["same_f"], ["found"], axes=[2], keepdims=0),
        helper.make_node("ReduceSum", ["found", "axes1"], ["logits"], keepdims=1),
    ]
    graph = helper.make_graph(
        nodes,
        "tiny_cross_encoder",
        [
            helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "sequence"]),
            helper.make_tensor_value_info("attention_mask", TensorProto.INT64, ["batch", "sequence"]),
        ],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", 1])],
    )
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="keymem-tests"
    )
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, str(directory / "model.onnx"))
    shutil.copyfile(FIXTURE_TOKENIZER, directory / "tokenizer.json")
    return directory
