"""The store of bench/assoc.py: case memories, LoCoMo background turns and hub fillers, built once.

Every memory goes through ``MemoryGraph.remember_batch`` (the normal write path) with its own keys
and key types, in one namespace, in an order shuffled with the seed, with deterministic ids
(``_common.deterministic_ids``) and a clock that advances a millisecond per reading
(``BuildClock``), so two builds of one configuration are the same store. Labels name each memory:
``<case id>#<index>`` (a case memory), ``<conversation>:<dia_id>`` (a LoCoMo turn),
``hub:<key>#<n>`` (a hub filler).

Hub fillers (v2 files, README "Hub rule"): ``--hub-memories`` generic memories per hub key, keyed
with the hub key (its type in the case) plus a few keys of their own, that mention it in passing
("User listened to a podcast episode about Kubernetes on the commute last week."). The wording is
this benchmark's own and deliberately neutral: it is not tuned to any case.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import shutil
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common  # noqa: E402
from assoc_cases import SHARED, content_words, norm_key  # noqa: E402

ROOT = _common.ROOT
DEFAULT_LOCOMO = SHARED / "locomo"
DEFAULT_KEYS = SHARED / "locomo-agent-keys"
MANIFEST = "manifest.json"
STORE_VERSION = 2
# Files whose change makes a built store stale (the write path, the store's schema, this module).
WRITE_PATH = ("keymem/memory/write.py", "keymem/store/migrations.py", "keymem/text/tokenize.py",
              "bench/assoc_store.py")

# (text with {key}, {person}, {when}; the filler's own concept keys). Neutral: each mentions the hub
# key in passing and says nothing about what a case's chain is about.
FILLER_TEMPLATES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("User listened to a podcast episode about {key} on the commute {when}.", ("podcast", "commute")),
    ("{person} mentioned {key} in passing over lunch {when}.", ("lunch chat",)),
    ("User bookmarked an article about {key} {when} to read later.", ("reading list", "article")),
    ("A newsletter the user subscribes to had a short piece on {key} {when}.", ("newsletter",)),
    ("User saw a thread about {key} trending online {when} and skimmed the replies.", ("social media",)),
    ("{person} asked the user for an opinion on {key}; the user said they would think about it.",
     ("opinions",)),
    ("User watched a short video about {key} while waiting for the kettle {when}.", ("videos", "tea break")),
    ("There was a talk about {key} at a meetup the user attended {when}.", ("meetup", "talks")),
    ("User jotted down a note {when} to look into {key} some time, no rush.", ("notes", "someday list")),
    ("The user's friend {person} posted photos that had something to do with {key} {when}.",
     ("photos", "friends")),
    ("User heard a radio segment that touched on {key} {when}.", ("radio",)),
    ("The user's book club drifted onto {key} for ten minutes {when}.", ("book club",)),
    ("{person} forwarded the user a link about {key}; the user has not opened it yet.", ("links",)),
    ("User overheard two people on the train talking about {key} {when}.", ("train journey", "overheard")),
    ("The user's group chat had a few jokes about {key} {when}.", ("group chat", "jokes")),
    ("User read a magazine interview {when} in which someone brought up {key}.", ("magazine", "interviews")),
    ("User noticed an advert that mentioned {key} at the bus stop {when}.", ("adverts", "bus stop")),
    ("{person} is curious about {key} and may ask the user about it at some point.", ("curiosity",)),
    ("User searched for general information about {key} {when} but found nothing new.", ("web search",)),
    ("A quiz night question the user got right {when} was about {key}.", ("quiz night", "trivia")),
)
FILLER_PEOPLE = ("Maren Holt", "Tobias Lind", "Priya Raman", "Jonah Webb", "Clara Stein", "Samir Haddad",
                 "Ines Moreau", "Felix Brandt", "Nadia Petrova", "Owen Carter", "Lucia Romano", "Arjun Mehta",
                 "Hanna Kowalski", "Diego Navarro", "Freya Olsen", "Kenji Mori")
FILLER_WHEN = ("last week", "on Monday", "on Tuesday", "yesterday", "this morning", "a few days ago",
               "last month", "over the weekend", "on Thursday evening", "earlier today")


def case_items(cases: list[dict[str, Any]]) -> list[tuple[str, dict[str, Any]]]:
    """(label, remember item) per case memory; label ``<case id>#<index>``."""
    return [(f"{c['id']}#{i}", {"content": m["content"], "keys": [k["key"] for k in m["keys"]],
                                "key_types": [k["type"] for k in m["keys"]]})
            for c in cases for i, m in enumerate(c["memories"])]


def hub_keys(cases: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """(hub key, its key type in the case) of every hub case, once per key (folded), in file order."""
    out: dict[str, tuple[str, str]] = {}
    for c in cases:
        key = c.get("hub_key")
        if not key:
            continue
        kind = next((k["type"] for m in c["memories"] for k in m["keys"] if k["key"] == key), "concept")
        out.setdefault(norm_key(key), (key, kind))
    return list(out.values())


def hub_items(cases: list[dict[str, Any]], per_key: int, seed: int) -> list[tuple[str, dict[str, Any]]]:
    """``per_key`` filler memories under each hub key (label ``hub:<key>#<n>``), deterministic, each
    text different (the store would merge two equal ones into one memory).

    People whose name shares a word with any case are left out, so a filler never names a case's entity.
    """
    taken = {w for c in cases for w in content_words(c["question"] + " " + " ".join(
        m["content"] + " " + " ".join(k["key"] for k in m["keys"]) for m in c["memories"]))}
    people = [p for p in FILLER_PEOPLE if not set(content_words(p)) & taken]
    out: list[tuple[str, dict[str, Any]]] = []
    for key, kind in hub_keys(cases):
        rng = random.Random(f"{seed}/hub/{norm_key(key)}")
        templates = list(FILLER_TEMPLATES)
        rng.shuffle(templates)
        written: set[str] = set()
        for n in range(per_key):
            text, own = templates[n % len(templates)]
            for _ in range(100):  # another person or time until the text is new
                person = rng.choice(people)
                content = text.format(key=key, person=person, when=rng.choice(FILLER_WHEN))
                if content.casefold() not in written:
                    break
            written.add(content.casefold())
            keys = [(key, kind), *((k, "concept") for k in own)]
            if "{person}" in text:
                keys.append((person, "name"))
            out.append((f"hub:{key}#{n}", {"content": content, "keys": [k for k, _ in keys],
                                           "key_types": [t for _, t in keys]}))
    return out


def distractor_items(locomo_dir: Path, keys_dir: Path, convs: list[str], limit: int | None,
                     seed: int) -> list[tuple[str, dict[str, Any]]]:
    """LoCoMo turns with their agent keys (label ``<conversation>:<dia_id>``), a seeded sample of
    ``limit`` (all of them when None or larger)."""
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
    if limit is not None and limit < len(out):
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


def open_graph(data_dir: Path, model_dir: Path, emb: Any, clock: Callable[[], float],
               store_url: str | None = None) -> Any:
    """The store in ``data_dir``, or on the FalkorDB graph ``store_url`` names (``data_dir`` then holds
    only what a daemon keeps beside it)."""
    from keymem.memory.graph import MemoryGraph

    extra = {"store_url": store_url} if store_url else {}
    return MemoryGraph.open(_common.settings(data_dir, model_dir, **extra), embedder=emb, reranker=None, clock=clock,
                            progress=False)


def store_config(args: argparse.Namespace, cases_file: Path, convs: list[str], distractors: int | None,
                 hub_memories: int) -> dict[str, Any]:
    """What the store is built from; a store is reused only while this is unchanged."""
    def sha(path: Path) -> str:
        return hashlib.sha256(path.read_bytes()).hexdigest()[:16]

    code = hashlib.sha256(b"".join((ROOT / p).read_bytes() for p in WRITE_PATH if (ROOT / p).exists()))
    return {"version": STORE_VERSION, "cases": cases_file.name, "cases_sha": sha(cases_file),
            "convs": convs, "distractors": distractors, "hub_memories": hub_memories, "seed": args.seed,
            "locomo_sha": {c: sha(Path(args.locomo) / f"{c}.json") for c in convs},
            "keys_sha": {c: sha(Path(args.keys) / f"{c}.keys.jsonl") for c in convs},
            "write_path_sha": code.hexdigest()[:16], "model": _common.MODEL_NAME}


def build_items(cases: list[dict[str, Any]], config: dict[str, Any], locomo_dir: Path,
                keys_dir: Path) -> list[tuple[str, dict[str, Any]]]:
    return (case_items(cases) + hub_items(cases, config["hub_memories"], config["seed"])
            + distractor_items(locomo_dir, keys_dir, config["convs"], config["distractors"], config["seed"]))


def ensure_store(base: Path, config: dict[str, Any], cases: list[dict[str, Any]], args: argparse.Namespace,
                 model_dir: Path, emb: Any) -> dict[str, Any]:
    """The manifest of the store in ``base`` (``base/data``), built first unless one matches ``config``."""
    marker = base / MANIFEST
    if marker.is_file() and not args.rebuild:
        manifest = json.loads(marker.read_text())
        if manifest.get("config") == config and "clock_start" in manifest and (base / "data").is_dir():
            print(f"store: reusing {base} ({len(manifest['ids'])} memories)", file=sys.stderr, flush=True)
            return manifest  # type: ignore[no-any-return]
        print(f"store: {base} holds another configuration; rebuilding", file=sys.stderr, flush=True)
    elif base.exists() and any(base.iterdir()) and not marker.is_file():
        raise SystemExit(f"{base} exists, is not empty and has no {MANIFEST}: not a store of this benchmark")
    marker.unlink(missing_ok=True)
    shutil.rmtree(base / "data", ignore_errors=True)
    base.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    items = build_items(cases, config, Path(args.locomo), Path(args.keys))
    _common.deterministic_ids(f"assoc/{config['seed']}")
    clock = BuildClock(float(int(time.time())))
    start = clock.t
    graph = open_graph(base / "data", model_dir, emb, clock)
    try:
        ids = write_store(graph, items, config["seed"])
        counts = graph.counts()
    finally:
        graph.close()
    manifest = {"config": config, "ids": ids, "clock_start": start, "clock_end": clock.t, "counts": counts,
                "build_seconds": round(time.perf_counter() - t0, 1)}
    marker.write_text(json.dumps(manifest))
    print(f"store: built {base} in {manifest['build_seconds']}s ({counts})", file=sys.stderr, flush=True)
    return manifest


def build_on_server(store_url: str, data_dir: Path, manifest: dict[str, Any], cases: list[dict[str, Any]],
                    args: argparse.Namespace, model_dir: Path, emb: Any) -> dict[str, Any]:
    """The store of ``manifest`` built again on a FalkorDB graph: the same items, order, ids and build
    clock (from the manifest's start), so the two engines hold the same memories written at the same
    times. Says which labels got other ids than on LadybugDB (none, unless the write path differs)."""
    t0 = time.perf_counter()
    config = manifest["config"]
    items = build_items(cases, config, Path(args.locomo), Path(args.keys))
    _common.deterministic_ids(f"assoc/{config['seed']}")
    clock = BuildClock(manifest["clock_start"])
    graph = open_graph(data_dir, model_dir, emb, clock, store_url=store_url)
    try:
        ids = write_store(graph, items, config["seed"])
        counts = graph.counts()
    finally:
        graph.close()
    other = sorted(label for label, mid in ids.items() if manifest["ids"].get(label) != mid)
    built = {"config": config, "ids": ids, "clock_start": manifest["clock_start"], "clock_end": clock.t,
             "counts": counts, "build_seconds": round(time.perf_counter() - t0, 1), "ids_differing": other}
    print(f"store: built on {store_url} in {built['build_seconds']}s ({counts}); "
          f"{len(other)} id(s) differ from the LadybugDB store", file=sys.stderr, flush=True)
    if clock.t != manifest["clock_end"] or counts != manifest.get("counts"):
        print(f"store: the FalkorDB build ended at clock {clock.t} with {counts}, the LadybugDB one at "
              f"{manifest['clock_end']} with {manifest.get('counts')}", file=sys.stderr, flush=True)
    return built
