"""Run one refused-call scenario, then ordinary writes, in a child process (Kuzu may segfault).

    python -m tests.reliability.rollback_worker MODEL_DIR DATA_DIR SCENARIO

Prints ``REFUSED <type>`` for the refused call, ``OK <n>`` after each later write, and
``DONE`` at the end; exits 0 only if every later write succeeded.
"""

from __future__ import annotations

import faulthandler
import sys
from pathlib import Path

faulthandler.enable()


def main() -> int:
    from keymem.errors import KeymemError
    from keymem.models.onnx_embed import OnnxEmbedder
    from keymem.settings import load_settings
    from tests.reliability.conftest import open_graph, populate

    model_dir, data_dir, scenario = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3]
    s = load_settings({}, data_dir=data_dir, embedding_backend="local", local_embedding_model="minilm-l6-v2",
                      local_embedding_model_path=model_dir, rerank=False, buffer_pool_mb=64, embed_threads=1)
    g = open_graph(s, OnnxEmbedder(model_dir, name="minilm-l6-v2", pooling="mean", threads=1, max_length=256))
    w = populate(g)
    for round_ in range(4):
        try:
            if scenario == "read_memory_unlinked_via":
                g.read_memory(memory_id=w.ids["secret"], via_key_id=w.keys["python"])
            elif scenario == "batch_bad_related":
                g.remember_batch([{"content": f"first item {round_}", "keys": ["first"]},
                                  {"content": "second item", "keys": ["second"], "related_to": ["m_0123456789abcdef"]}])
            elif scenario == "raw_failure_after_set":
                with g.store.write() as tx:
                    tx.run("memory/access", id=w.ids["deploy"], now=1.0)
                    raise KeymemError("refused after a write")
            print("NOT REFUSED", flush=True)
            return 2
        except KeymemError as exc:
            print(f"REFUSED {type(exc).__name__}", flush=True)
        g.store.query("admin/counts", now=1.0)  # any read in between
        g.read_memory(memory_id=w.ids["alice"])
        g.confirm_memory(memory_id=w.ids["deploy"], evidence="still true")
        g.remember(content=f"a later write {round_}", keys=["later"])
        print(f"OK {round_}", flush=True)
    print("DONE", flush=True)
    g.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
