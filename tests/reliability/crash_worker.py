"""A writer that is killed with SIGKILL by tests/reliability/test_crash.py.

    python -m tests.reliability.crash_worker DATA_DIR MODEL_DIR SEED STATE_JSON

It opens a MemoryGraph directly on DATA_DIR (as the daemon does) and streams
remember_batch / correct / forget calls forever. Before each call it prints
``BEGIN <json>`` (what it is about to do) and after the call returns ``ACK <json>``
(the result), each line flushed, so the parent knows which writes were acknowledged.
STATE_JSON lists the memory ids the parent knows to be live: ``{"live": {id: content}}``.
"""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path

WORDS = ("alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet",
         "kilo", "lima", "mike", "november", "oscar", "papa", "quebec", "romeo", "sierra", "tango")
KEYS = ("release", "database", "kernel", "garden", "coffee", "travel", "music", "budget", "python", "weather",
        "Alice", "Bob", "Tokyo", "Kuzu")


def out(tag: str, payload: object) -> None:
    sys.stdout.write(f"{tag} {json.dumps(payload, ensure_ascii=False)}\n")
    sys.stdout.flush()


def main() -> int:
    data_dir, model_dir, seed, state_path = Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3]), Path(sys.argv[4])
    from keymem.memory.graph import MemoryGraph
    from keymem.models.onnx_embed import OnnxEmbedder
    from keymem.settings import load_settings

    settings = load_settings(
        {}, data_dir=data_dir, embedding_backend="local", local_embedding_model="minilm-l6-v2",
        local_embedding_model_path=model_dir, rerank=False, buffer_pool_mb=128, embed_threads=1,
    )
    embedder = OnnxEmbedder(model_dir, name="minilm-l6-v2", pooling="mean", threads=1, max_length=256)
    graph = MemoryGraph.open(settings, embedder=embedder, reranker=None, progress=False)
    live: dict[str, str] = json.loads(state_path.read_text())["live"]
    rng = random.Random(seed)
    out("READY", {"pid": __import__("os").getpid()})
    n = 0
    while True:
        n += 1
        op = rng.random()
        if op < 0.55 or len(live) < 3:
            size = rng.choice((1, 1, 2, 3, 5, 12))
            items = []
            for j in range(size):
                words = " ".join(rng.choice(WORDS) for _ in range(6))
                keys = rng.sample(KEYS, rng.randint(1, 3))
                kinds = ["name" if k[0].isupper() else "concept" for k in keys]
                items.append({"content": f"s{seed} op{n} item{j}: {words}", "keys": keys, "key_types": kinds,
                              "namespace": rng.choice(("default", "default", "work"))})
            out("BEGIN", {"op": "batch", "contents": [i["content"] for i in items]})
            res = graph.remember_batch(items)
            ids = [r.memory_id for r in res.results]
            for it, mid in zip(items, ids, strict=True):
                live[mid] = it["content"]
            out("ACK", {"op": "batch", "ids": ids, "contents": [i["content"] for i in items]})
        elif op < 0.8:
            old = rng.choice(sorted(live))
            content = f"s{seed} op{n} corrected: " + " ".join(rng.choice(WORDS) for _ in range(5))
            out("BEGIN", {"op": "correct", "old": old, "content": content})
            res = graph.correct(memory_id=old, content=content)
            live.pop(old)
            live[res.memory_id] = content
            out("ACK", {"op": "correct", "old": old, "new": res.memory_id, "content": content})
        else:
            victim = rng.choice(sorted(live))
            out("BEGIN", {"op": "forget", "id": victim})
            graph.forget(memory_id=victim)
            live.pop(victim)
            out("ACK", {"op": "forget", "id": victim})


if __name__ == "__main__":
    sys.exit(main())
