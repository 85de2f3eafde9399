"""Typed requests (keymem/memory/calls.py): what each operation takes, checked when it is made."""

from __future__ import annotations

from typing import Any

import pytest

from keymem.errors import InvalidInput
from keymem.memory.calls import (
    ConfirmRequest,
    DirectRequest,
    ForgetRequest,
    ReadKeyRequest,
    ReadMemoryRequest,
    RecallRequest,
    RememberRequest,
)


def test_unknown_argument_is_named_with_the_allowed_ones() -> None:
    with pytest.raises(InvalidInput) as err:
        RecallRequest.of({"query": "apple", "topk": 3})
    text = str(err.value)
    assert "recall: unknown argument(s) topk" in text
    assert "query, top_k, namespace, context, explain" in text


def test_missing_required_argument_is_named() -> None:
    with pytest.raises(InvalidInput, match="query must be a string"):
        RecallRequest.of({})
    with pytest.raises(InvalidInput, match="memory_id None is not a keymem id"):
        ForgetRequest.of({"namespace": "work"})


@pytest.mark.parametrize("make, message", [
    (lambda: RecallRequest(query="x", top_k=0), "top_k must be between 1 and 50"),
    (lambda: RecallRequest(query="x", explain="yes"), "explain must be true or false"),  # type: ignore[arg-type]
    (lambda: ReadKeyRequest(key_id="m_0123456789"), "key_id 'm_0123456789' is not a keymem id"),
    (lambda: ReadMemoryRequest(memory_id="m_0123456789", via_key_id="k_1"), "via_key_id 'k_1'"),
    (lambda: DirectRequest(query="x", hops=6), "hops must be between 0 and 5"),
    (lambda: ConfirmRequest(memory_id="m_0123456789", evidence=" "), "evidence must not be empty"),
    (lambda: ReadKeyRequest(key_id="k_0123456789", namespace="a b"), "namespace 'a b' is invalid"),
])
def test_bad_values_are_refused_when_the_request_is_made(make: Any, message: str) -> None:
    with pytest.raises(InvalidInput, match=message):
        make()


def test_defaults_and_normalised_values() -> None:
    r = RecallRequest.of({"query": "apple", "namespace": None, "top_k": 3.0})
    assert (r.top_k, r.namespace, r.context, r.explain) == (3, "default", None, False)
    assert ReadKeyRequest(key_id="k_0123456789").namespace is None  # a lookup by id: any namespace
    assert DirectRequest(query="x").hops is None  # the operation uses KEYMEM_RECALL_HOPS


def test_a_request_or_its_fields_reach_the_same_operation(graph: Any) -> None:
    r = graph.remember(RememberRequest(content="Newton watched an apple fall", keys=["Newton", "apple"],
                                       key_types=["name", "concept"]))
    by_fields = graph.recall(query="apple", top_k=3)
    by_request = graph.recall(RecallRequest(query="apple", top_k=3))
    assert by_request == by_fields
    assert by_request.memory is not None and by_request.memory.memory_id == r.memory_id
    assert graph.read_memory(ReadMemoryRequest(memory_id=r.memory_id)).content == "Newton watched an apple fall"


def test_unknown_argument_writes_nothing(graph: Any) -> None:
    r = graph.remember(content="the user likes strawberries", keys=["strawberry", "fruit"])
    with pytest.raises(InvalidInput, match="forget: unknown argument"):
        graph.forget(memory_id=r.memory_id, force=True)
    with pytest.raises(InvalidInput, match="remember: unknown argument"):
        graph.remember(content="another fact", keys=["fruit"], weight=2)
    assert graph.read_memory(memory_id=r.memory_id).active
    assert graph.counts()["memories"] == 1
