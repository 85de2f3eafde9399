"""Hypothesis strategies for hostile tool arguments, and the rule every call must obey."""

from __future__ import annotations

import math
from typing import Any

from hypothesis import strategies as st

INJECTIONS = [
    "'}) DETACH DELETE n //",
    "'}) MATCH (n) DETACH DELETE n RETURN 1 //",
    "x' OR 1=1 OR m.id <> '",
    "\"}) DETACH DELETE m //",
    "` DETACH DELETE n",
    "$id", "$namespace", "{{dim}}", "${content}",
    "MATCH (n) DETACH DELETE n",
    "'; DROP TABLE Memory; --",
    "CALL DROP_VECTOR_INDEX('KeyVec', 'keyvec_hnsw')",
    "\\'); DETACH DELETE n; //",
    "/* */ RETURN 1 //",
    "default\x1fabc",
    "__sentinel__",
]
SPECIAL = [
    "\x00", "a\x00b", "\x00\x00\x00", "\ud800", "x\udfffy", "\udbff\udc00", "\u202eevil\u202c", "\u200f\u200e",
    "\ufeff", "\U0001f642" * 3, "e\u0301", "\n\t\r", " ", "", "\u3000", "ＡＢＣ", "İstanbul", "ß", "ﬁ",
    "日本語のテキスト", "한국어", "עברית \u05d0", "\x1f", "\x7f", "\u2028\u2029",
]
BIG = ["x" * 1_000_000, "word " * 200_000, "z" * 100_001, "w" * 4001, "k" * 201]

lone_surrogate = st.builds(lambda a, s, b: a + s + b, st.text(max_size=5),
                           st.sampled_from(["\ud800", "\udbff", "\udc00", "\udfff"]), st.text(max_size=5))
hostile_text = st.one_of(
    st.text(max_size=40),
    st.sampled_from(INJECTIONS + SPECIAL),
    st.sampled_from(BIG),
    lone_surrogate,
    st.builds(lambda a, b: a + b, st.sampled_from(INJECTIONS), st.text(max_size=10)),
)
plain_text = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=1, max_size=60).filter(
    lambda s: s.strip() != "")
text_like = st.one_of(plain_text, plain_text, hostile_text)

numbers = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(min_value=-(10**30), max_value=10**30),
    st.sampled_from([math.nan, math.inf, -math.inf, -1, 0, -0.0, 1e308, 2**63, -(2**63) - 1, True, False]),
)
wrong = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(), st.lists(st.integers(), max_size=3),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2), st.just([None]), st.just({"$gt": ""}),
    st.just(b"bytes"), st.just(object()),
)
anything = st.one_of(hostile_text, numbers, wrong)

# ids: symbolic references resolved against the populated store at call time ("@name"), well-formed
# unknown ids, ids of the other kind, garbage
ID_REFS = ["@python", "@python_old", "@alice", "@deploy", "@secret", "@key:python", "@key:alice", "@key:secret"]
well_formed = st.builds(lambda p, h: f"{p}_{h}", st.sampled_from(["m", "k"]),
                        st.text(alphabet="0123456789abcdef", min_size=8, max_size=64))
ids = st.one_of(st.sampled_from(ID_REFS), st.sampled_from(ID_REFS), well_formed, hostile_text, wrong)
namespaces = st.one_of(st.none(), st.sampled_from(["default", "private", "work", "a.b:c@d/e+f-g_h", "x" * 128]),
                       hostile_text, wrong)
key_types = st.one_of(st.none(), st.lists(st.sampled_from(["concept", "name", "proper_noun"]), max_size=4),
                      st.lists(hostile_text, max_size=3), st.dictionaries(text_like, st.sampled_from(["name", "bogus"]),
                                                                          max_size=2), wrong)
keys = st.one_of(st.lists(text_like, min_size=1, max_size=4), st.lists(text_like, max_size=40), text_like, wrong)
counts = st.one_of(st.none(), st.integers(min_value=-5, max_value=600), numbers, wrong)


def maybe(**fields: Any) -> st.SearchStrategy[dict[str, Any]]:
    """A dict where each field is present or absent; absent stays absent (not None)."""
    return st.fixed_dictionaries({}, optional=fields)


def item() -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries(
        {"content": text_like, "keys": keys},
        optional={"key_types": key_types, "namespace": namespaces, "ttl_seconds": st.one_of(numbers, wrong),
                  "decay_profile": st.one_of(st.sampled_from(["transient", "standard", "stable", "permanent"]), anything),
                  "related_to": st.one_of(st.lists(ids, max_size=3), wrong), "bogus": anything},
    )


TOOLS: dict[str, st.SearchStrategy[dict[str, Any]]] = {
    "recall": st.fixed_dictionaries({"query": text_like}, optional={
        "top_k": counts, "namespace": namespaces, "context": text_like, "explain": st.one_of(st.booleans(), anything)}),
    "browse_keys": maybe(namespace=namespaces, hubs_only=st.one_of(st.booleans(), anything), limit=counts, offset=counts),
    "read_key": st.fixed_dictionaries({"key_id": ids}, optional={
        "query": text_like, "namespace": namespaces, "limit": counts, "offset": counts}),
    "read_memory": st.fixed_dictionaries({"memory_id": ids}, optional={"via_key_id": ids, "namespace": namespaces}),
    "confirm_memory": st.fixed_dictionaries({"memory_id": ids, "evidence": text_like}, optional={
        "namespace": namespaces, "source": st.one_of(plain_text, st.dictionaries(st.text(max_size=5), plain_text, max_size=2),
                                                     wrong)}),
    "remember": item(),
    "correct": st.fixed_dictionaries({"memory_id": ids, "content": text_like}, optional={
        "keys": st.one_of(st.none(), keys), "key_types": key_types, "ttl_seconds": st.one_of(numbers, wrong),
        "decay_profile": anything, "related_to": st.one_of(st.lists(ids, max_size=3), wrong), "namespace": namespaces}),
    "dismiss": st.fixed_dictionaries({"memory_id": ids, "key_id": ids}, optional={"namespace": namespaces}),
    "forget": st.fixed_dictionaries({"memory_id": ids}, optional={"namespace": namespaces}),
    "remember_batch": st.fixed_dictionaries({"items": st.one_of(st.lists(item(), min_size=1, max_size=4),
                                                                st.lists(item(), max_size=0), anything)}),
}


def resolve(value: Any, ids_: dict[str, str], keys_: dict[str, str]) -> Any:
    """Replace "@name" references with the ids of the populated store, recursively."""
    if isinstance(value, str) and value.startswith("@"):
        name = value[1:]
        if name.startswith("key:"):
            return keys_.get(name[4:], value)
        return ids_.get(name, value)
    if isinstance(value, list):
        return [resolve(v, ids_, keys_) for v in value]
    if isinstance(value, dict):
        return {k: resolve(v, ids_, keys_) for k, v in value.items()}
    return value


def short(value: Any, limit: int = 300) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + f"...<{len(text)} chars>"


# Valid shapes carrying hostile text: these get past type checks, so the text reaches the store.
mem_ref = st.sampled_from(["@python", "@alice", "@deploy", "@secret", "@python_old"])
key_ref = st.sampled_from(["@key:python", "@key:alice", "@key:secret"])
good_ns = st.one_of(st.none(), st.sampled_from(["default", "private", "work"]))
shaped_item = st.fixed_dictionaries(
    {"content": text_like, "keys": st.lists(text_like, min_size=1, max_size=4)},
    optional={"namespace": good_ns, "decay_profile": st.sampled_from(["transient", "standard", "stable", "permanent"]),
              "ttl_seconds": st.floats(min_value=1, max_value=1e6)},
)
SHAPED: dict[str, st.SearchStrategy[dict[str, Any]]] = {
    "recall": st.fixed_dictionaries({"query": text_like}, optional={
        "namespace": good_ns, "context": text_like, "explain": st.booleans(), "top_k": st.integers(1, 50)}),
    "browse_keys": maybe(namespace=good_ns, hubs_only=st.booleans(), limit=st.integers(1, 500), offset=st.integers(0, 50)),
    "read_key": st.fixed_dictionaries({"key_id": key_ref}, optional={"query": text_like, "namespace": good_ns}),
    "read_memory": st.fixed_dictionaries({"memory_id": mem_ref}, optional={"via_key_id": key_ref, "namespace": good_ns}),
    "confirm_memory": st.fixed_dictionaries({"memory_id": mem_ref, "evidence": text_like},
                                            optional={"namespace": good_ns, "source": plain_text}),
    "remember": shaped_item,
    "correct": st.fixed_dictionaries({"memory_id": mem_ref, "content": text_like},
                                     optional={"keys": st.lists(text_like, min_size=1, max_size=3), "namespace": good_ns}),
    "dismiss": st.fixed_dictionaries({"memory_id": mem_ref, "key_id": key_ref}, optional={"namespace": good_ns}),
    "forget": st.fixed_dictionaries({"memory_id": mem_ref}, optional={"namespace": good_ns}),
    "remember_batch": st.fixed_dictionaries({"items": st.lists(shaped_item, min_size=1, max_size=4)}),
}
TOOLS = {name: st.one_of(SHAPED[name], SHAPED[name], strategy) for name, strategy in TOOLS.items()}
