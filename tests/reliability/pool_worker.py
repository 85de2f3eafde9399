"""Fill Kuzu's buffer pool with committed updates, then die without a checkpoint (as a SIGKILL would).

    python -m tests.reliability.pool_worker store DB_PATH WRITES
    python -m tests.reliability.pool_worker graph MODEL_DIR DATA_DIR READS

The store's own checkpoints are switched off first, as they were before the checkpoint policy
of issue 12, so the WAL left behind holds every update: replaying it at open needs about as
much pool as the updates held (``store``: WRITES one-row two-column SETs on a plain table opened
with a 128 MiB pool; ``graph``: READS ``read_memory`` calls through a key on a keymem store at
256 MiB). Prints ``FILLED <used bytes> <pool bytes>`` and exits with ``os._exit`` (no close, and no
garbage collection of the open database: either would checkpoint).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any


def no_checkpoints(store: Any) -> None:
    store.checkpoint_writes = store.pool_checkpoint_writes = 10**12
    store.wal_checkpoint_bytes = 1 << 50


def pool(store: Any) -> tuple[int, int]:
    row = store.raw("CALL BM_INFO() RETURN mem_usage AS used, mem_limit AS capacity")[0]
    return int(row["used"]), int(row["capacity"])


def fill_store(path: Path, writes: int) -> Any:
    from keymem.store.db import Store

    store = Store(path, buffer_pool_mb=128)
    no_checkpoints(store)
    with store.exclusive() as conn:
        conn.raw("CREATE NODE TABLE T(id STRING PRIMARY KEY, n INT64, at DOUBLE)")
    with store.write() as tx:
        tx.raw("UNWIND range(0, 1999) AS i CREATE (:T {id: 't' + string(i), n: 0, at: 0.0})")
    store.checkpoint()
    for i in range(writes):
        with store.write() as tx:
            tx.raw("MATCH (t:T) WHERE t.id = $id SET t.n = t.n + 1, t.at = $at", {"id": f"t{i % 2000}", "at": float(i)})
    used, capacity = pool(store)
    print(f"FILLED {used} {capacity}", flush=True)
    return store


def fill_graph(model_dir: Path, data_dir: Path, reads: int) -> Any:
    from keymem.models.onnx_embed import OnnxEmbedder
    from keymem.settings import load_settings
    from tests.reliability.conftest import open_graph

    s = load_settings({}, data_dir=data_dir, embedding_backend="local", local_embedding_model="minilm-l6-v2",
                      local_embedding_model_path=model_dir, rerank=False, buffer_pool_mb=256, embed_threads=1)
    g = open_graph(s, OnnxEmbedder(model_dir, name="minilm-l6-v2", pooling="mean", threads=1, max_length=256))
    done = g.remember_batch([{"content": f"pool filler {i}", "keys": [f"filler {i}", "pool"]} for i in range(40)])
    g.store.checkpoint()
    no_checkpoints(g.store)
    targets = [(r.memory_id, r.keys[0].key_id) for r in done.results]
    for i in range(reads):
        mid, kid = targets[i % len(targets)]
        g.read_memory(memory_id=mid, via_key_id=kid)
    used, capacity = pool(g.store)
    print(f"FILLED {used} {capacity}", flush=True)
    return g


def main() -> None:
    if sys.argv[1] == "store":
        alive = fill_store(Path(sys.argv[2]), int(sys.argv[3]))
    else:
        alive = fill_graph(Path(sys.argv[2]), Path(sys.argv[3]), int(sys.argv[4]))
    sys.stdout.flush()
    os._exit(0 if alive is not None else 1)  # still open: Kuzu checkpoints when a Database is collected


if __name__ == "__main__":
    main()
