"""The association cases of bench/assoc.py: files, groups, tags and the role of each memory.

Two kinds of case file (``../shared/data/assoc-chains/``, README there):

* ``dev.jsonl`` (v1): one- and two-hop cases and controls; decoys are not marked, they are derived
  as check.py derives them (memories off every shortest head-to-target path that carry a chain key).
* ``dev-v2.jsonl`` (v2): one-, two- and three-hop cases and controls with ``hard`` tags (``alias``,
  ``keyform``, ``decoy``, ``hub``), decoys marked ``"decoy": true``, declared key variants that join
  two memories, a ``hub_key`` per hub case, and lines ``{"unrelated": true, "question", "hard_negative"}``
  (prompts about nothing stored). Roles follow check.py's v2 rules: heads from the question's keys and
  its ``alias_map``; a shared key or a declared variant pair joins two memories; the chain is every
  memory on a shortest path from ``memories[0]`` to the target.

Words are compared as check.py compares them (lowercased, accent-folded, 3+ letters, stopwords out,
a plural/verb suffix stripped); keys after folding case, punctuation and a plural -s.
"""

from __future__ import annotations

import json
import re
import sys
import unicodedata
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common  # noqa: E402

SHARED = _common.ROOT.parent / "shared" / "data"
ASSOC_DIR = SHARED / "assoc-chains"
DEFAULT_CASES = ASSOC_DIR / "dev.jsonl"
DEFAULT_CASES_V2 = ASSOC_DIR / "dev-v2.jsonl"
GROUPS = ("one-hop", "two-hop", "three-hop", "control")
TAGS = ("alias", "keyform", "decoy", "hub")
RELEVANT_ROLES = ("target", "head", "bridge")  # what counts as the case's own in a delivery's precision

# Prompts about nothing the store holds (arithmetic, programming trivia, general knowledge): the
# unrelated prompts of a v1 file, which has none of its own.
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


def fold(text: str) -> str:
    text = unicodedata.normalize("NFKD", text.lower()).replace("ø", "o").replace("æ", "ae")
    return "".join(ch for ch in text if not unicodedata.combining(ch))


def content_words(text: str) -> list[str]:
    return [w for w in WORD_RE.findall(fold(text)) if len(w) >= 3 and w not in STOPWORDS]


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
    for w in WORD_RE.findall(fold(key)):
        if len(w) > 4 and w.endswith("ies"):
            w = w[:-3] + "y"
        elif len(w) > 3 and w.endswith("s") and not w.endswith("ss"):
            w = w[:-1]
        out.append(w)
    return " ".join(out)


def _key_mentioned(key: dict[str, str], q_words: list[str]) -> bool:
    words = content_words(key["key"])
    if not words:
        return False
    hit = [any(_same_word(w, q) for q in q_words) for w in words]
    return all(hit) if key["type"] == "concept" else any(hit)


# -- files ------------------------------------------------------------------------------------------
def load_lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def load_cases(path: Path) -> list[dict[str, Any]]:
    """The cases of a file (its unrelated-prompt lines left out)."""
    return [c for c in load_lines(path) if not c.get("unrelated")]


def is_v2(lines: list[dict[str, Any]]) -> bool:
    """A file has the v2 format when any line carries a v2-only field (as check.py decides)."""
    return any("hard" in c or "unrelated" in c for c in lines)


def unrelated_prompts(lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The file's prompts about nothing stored (``id``, ``prompt``, ``hard``, ``near_key``); a v1 file,
    which has none, gets ``UNRELATED`` (all plain)."""
    own = [c for c in lines if c.get("unrelated")]
    if not own and not is_v2(lines):
        return [{"id": f"u-{n:02d}", "prompt": p, "hard": False, "near_key": None}
                for n, p in enumerate(UNRELATED, start=1)]
    return [{"id": c["id"], "prompt": c["question"], "hard": bool(c.get("hard_negative")),
             "near_key": c.get("near_key")} for c in own]


def select_cases(cases: list[dict[str, Any]], only: str | None) -> list[dict[str, Any]]:
    if not only:
        return cases
    wanted = [w.strip() for w in only.split(",") if w.strip()]
    return [c for c in cases if any(c["id"] == w or c["id"].startswith(w) for w in wanted)]


# -- groups, tags, roles ------------------------------------------------------------------------------
def group_of(case: dict[str, Any]) -> str:
    if case["control"]:
        return "control"
    return {1: "one-hop", 2: "two-hop", 3: "three-hop"}.get(case["hops"], f"{case['hops']}-hop")


def tags_of(case: dict[str, Any], info: dict[str, Any]) -> list[str]:
    """The case's ``hard`` tags (v2); a v1 case is tagged ``decoy`` when it has derived decoys."""
    if "hard" in case:
        return [t for t in case["hard"] if t in TAGS]
    return ["decoy"] if info["decoys"] and not case["control"] else []


def roles(case: dict[str, Any]) -> dict[str, Any]:
    """Heads, distances, bridges, chain keys and decoys of a case, derived as check.py derives them."""
    mems = case["memories"]
    target = case["target"]
    v2 = "hard" in case or any("decoy" in m for m in mems)
    mkeys = [{norm_key(k["key"]) for k in m["keys"]} for m in mems]
    spellings = [{k["key"] for k in m["keys"]} for m in mems]
    pairs = [(a, b) for a, b in case.get("key_variants", [])]
    alias_keys = {norm_key(k) for k in case.get("alias_map", {}).values()}

    def link(i: int, j: int) -> set[str]:
        out = mkeys[i] & mkeys[j]
        for a, b in pairs:
            if (a in spellings[i] and b in spellings[j]) or (b in spellings[i] and a in spellings[j]):
                out |= {norm_key(a), norm_key(b)}
        return out

    def distances(start: list[int]) -> dict[int, int]:
        dist = {i: 0 for i in start}
        frontier = list(start)
        while frontier:
            nxt = []
            for i in frontier:
                for j in range(len(mems)):
                    if j not in dist and link(i, j):
                        dist[j] = dist[i] + 1
                        nxt.append(j)
            frontier = nxt
        return dist

    q_words = content_words(case["question"])
    named = [[_key_mentioned(k, q_words) or norm_key(k["key"]) in alias_keys for k in m["keys"]] for m in mems]
    heads = [i for i, flags in enumerate(named) if any(flags)]
    mentioned = {norm_key(k["key"]) for m, flags in zip(mems, named, strict=True)
                 for k, f in zip(m["keys"], flags, strict=True) if f}
    dist = distances(heads)
    # v2: the chain runs from memories[0]; v1: from the nearest head
    start_dist = distances([0]) if v2 and not case["control"] else dist
    on_path, chain_keys = {target}, set()
    got = start_dist.get(target)
    if got:
        layer = {target}
        for d in range(got - 1, -1, -1):
            prev = {j for j, dj in start_dist.items() if dj == d and any(link(j, t) for t in layer)}
            for j in prev:
                for t in layer:
                    chain_keys |= link(j, t)
            on_path |= prev
            layer = prev
    if v2:
        decoys = [j for j, m in enumerate(mems) if m.get("decoy")]
        heads = [h for h in heads if h not in decoys]
        bridges = [j for j in on_path if j not in (0, target) and j not in decoys]
    else:
        decoys = [] if case["control"] else [j for j in range(len(mems))
                                             if j not in on_path and j not in heads and mkeys[j] & chain_keys]
        bridges = [j for j in on_path if j != target and j not in heads]
    return {"heads": heads, "dist": dist, "bridges": sorted(bridges), "decoys": decoys,
            "chain_keys": sorted(chain_keys), "mentioned_keys": sorted(mentioned)}


def memory_role(case: dict[str, Any], info: dict[str, Any], index: int) -> str:
    if index == case["target"]:
        return "target"
    if index in info["decoys"]:
        return "decoy"
    if index in info["heads"]:
        return "head"
    if index in info["bridges"]:
        return "bridge"
    return "other"


def role_of_label(label: str, case: dict[str, Any], info: dict[str, Any]) -> str:
    """The role a stored memory (by its label, see assoc_store) plays for ``case``."""
    if label.startswith("hub:"):
        return "hub filler"
    cid, _, idx = label.partition("#")
    if cid == case["id"]:
        return memory_role(case, info, int(idx))
    return "other case" if idx else "distractor"
