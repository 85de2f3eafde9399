"""recall's token budget, kept on the whole text the agent reads.

``deliver`` fits the memories it picks to the budget, but the agent also reads the key line (a
key costs ~25 tokens: its text, its id, its size) and the framing, so a result of five keys and
seven memories cost 540-640 tokens where 500 were asked for (dev-v2: 27% of the first recalls).
``fit_budget`` counts the text ``lines.recall_lines`` writes (``text.cost.estimate_tokens``, which
errs high) and, while it is over, takes away what matters least to the agent first:

1. key aliases ("aka ..."), the last key's first, the first key's last;
2. keys past ``KEYS_BEFORE_MEMORIES`` (the best routed key and the two association leads on
   through), from the last: a memory in the result is worth more than a key further down
   (LoCoMo held-out, in process: the first recall holds 0.607 of the evidence, 0.575 when
   memories went before any key; keeping two keys gave 0.621, but navigation then lost the key a
   dev.jsonl chain runs through);
3. memories, never the first: the direct section's tail while it costs more than the associated
   section, else the associated section's tail (a few weak lexical matches must not crowd out
   what association reached: deliver's two sections keep their share of a smaller budget); then
   one taken away may come back if it fits in what the others left (LoCoMo: +0.6 points);
4. the other keys from the last, never the first;
5. the first memory's text, cut short with "…" (its id stays: read_memory gives it whole).
"""

from __future__ import annotations

from typing import Any

from keymem.memory.lines import LOOSE_MEMORIES, key_line, memory_line, omitted
from keymem.memory.views import RecalledMemory, RecallResult
from keymem.text.cost import estimate_tokens

ELLIPSIS = "…"
KEYS_BEFORE_MEMORIES = 3  # keys past this many go before any memory does: the best routed key and the two
# keys association leads on through (deliver.ROUTED_FIRST, deliver.ONWARD_KEYS), what navigation follows


def _line_costs(result: RecallResult) -> tuple[int, list[int], list[int]]:
    """The fixed part's cost (note, headers, omitted line), each key's and each memory's line.

    The estimate is a sum over whitespace-separated pieces, so the text's cost is the sum of its
    parts: "keys:" and one "|" between keys, "memories:" (or the loose header) and the lines."""
    d = result.model_dump(mode="json", include={"note", "omitted", "namespaces", "confident"})
    fixed = estimate_tokens(d.get("note") or "") + estimate_tokens(omitted(d))
    if d.get("namespaces"):
        fixed += estimate_tokens("namespaces: " + ", ".join(f"{k} {v}" for k, v in d["namespaces"].items()))
    keys = [estimate_tokens(key_line(k.model_dump(mode="json"))) for k in result.keys]
    memories = [estimate_tokens(memory_line(m.model_dump(mode="json"))) for m in result.memories]
    return fixed, keys, memories


def _header(result: RecallResult) -> int:
    cost = 2 + len(result.keys) - 1 if result.keys else 0  # "keys", ":" and a "|" between keys
    if result.memories:
        cost += estimate_tokens("memories:" if result.confident else LOOSE_MEMORIES)
    elif not result.note:
        cost += estimate_tokens("no new memory" if result.omitted else "no memory")
    return cost


def text_cost(result: RecallResult) -> int:
    """What the result's text costs (``estimate_tokens`` of ``lines.recall_lines``)."""
    fixed, keys, memories = _line_costs(result)
    return fixed + sum(keys) + sum(memories) + _header(result)


def _next_memory(result: RecallResult, costs: list[int]) -> int | None:
    """The memory to take away next: the tail of the section that costs more (the first memory stays)."""
    direct = [i for i, m in enumerate(result.memories) if m.hops == 0 and i > 0]
    associated = [i for i, m in enumerate(result.memories) if m.hops > 0 and i > 0]
    if not direct and not associated:
        return None
    if not associated or (direct and sum(costs[i] for i in direct) >= sum(costs[i] for i in associated)):
        return direct[-1]
    return associated[-1]


def fit_budget(result: RecallResult, budget: int) -> RecallResult:
    """``result`` with what matters least taken away until its text costs at most ``budget``
    (the module docstring says in which order); changed in place and returned."""
    fixed, keys, memories = _line_costs(result)

    def over() -> int:
        return fixed + sum(keys) + sum(memories) + _header(result) - budget

    for i in reversed(range(len(result.keys))):
        if over() <= 0:
            return result
        view = result.keys[i]
        if view.aliases:
            view.aliases = []
            keys[i] = estimate_tokens(key_line(view.model_dump(mode="json")))
    while over() > 0 and len(result.keys) > KEYS_BEFORE_MEMORIES:
        result.keys.pop()
        keys.pop()
    order = {m.memory_id: n for n, m in enumerate(result.memories)}
    removed: list[tuple[RecalledMemory, int]] = []  # (memory, its line's cost), last taken first
    while over() > 0 and (i_mem := _next_memory(result, memories)) is not None:
        removed.insert(0, (result.memories.pop(i_mem), memories.pop(i_mem)))
    if removed:  # a shorter one taken early may fit in what taking a longer one left
        for memory, cost in removed:
            if cost <= -over():
                result.memories.append(memory)
                memories.append(cost)
        ranked = sorted(zip(result.memories, memories, strict=True), key=lambda t: order[t[0].memory_id])
        result.memories, memories[:] = [m for m, _ in ranked], [c for _, c in ranked]
    while over() > 0 and len(result.keys) > 1:
        result.keys.pop()
        keys.pop()
    if over() > 0 and result.memories:
        _shorten_first(result, memories, over())
    return result


def _shorten_first(result: RecallResult, costs: list[int], excess: int) -> None:
    """Cut the first memory's text (words from its end) until the result is ``excess`` tokens cheaper."""
    first = result.memories[0]
    words = first.content.split()
    target = costs[0] - excess

    def cost(n: int) -> int:
        probe: dict[str, Any] = first.model_dump(mode="json")
        probe["content"] = " ".join(words[:n]) + ELLIPSIS
        return estimate_tokens(memory_line(probe))

    lo, hi = 0, len(words)  # the longest prefix whose line fits
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if cost(mid) <= target:
            lo = mid
        else:
            hi = mid - 1
    first.content = " ".join(words[:lo]) + ELLIPSIS
    if result.memory is not None and result.memory.memory_id == first.memory_id:
        result.memory.content = first.content
    costs[0] = cost(lo)
