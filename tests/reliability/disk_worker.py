"""Fill the disk under a store: ``python -m tests.reliability.disk_worker MODEL_DIR DATA_DIR``.

Prints ``ACK <id>`` per acknowledged remember, ``FULL <type> <message>`` at the first
failure, then what the same process does next: ``AFTER-WRITE``, ``AFTER-READ`` (the first
acknowledged memory), ``CLOSED``.
"""

from __future__ import annotations

import faulthandler
import sys
from pathlib import Path

faulthandler.enable()


def main() -> int:
    from keymem.models.onnx_embed import OnnxEmbedder
    from keymem.settings import load_settings
    from tests.reliability.conftest import open_graph

    model_dir, data_dir = Path(sys.argv[1]), Path(sys.argv[2])
    s = load_settings({}, data_dir=data_dir, embedding_backend="local", local_embedding_model="minilm-l6-v2",
                      local_embedding_model_path=model_dir, rerank=False, buffer_pool_mb=64, embed_threads=1)
    g = open_graph(s, OnnxEmbedder(model_dir, name="minilm-l6-v2", pooling="mean", threads=1, max_length=256))
    print("READY", flush=True)
    first = None
    for i in range(1_000_000):
        try:
            r = g.remember(content=f"memory {i} " + "padding text " * 800, keys=[f"key {i}", "shared"])
        except Exception as exc:
            print(f"FULL {type(exc).__name__} {str(exc)[:400]!r}", flush=True)
            break
        first = first or r.memory_id
        print(f"ACK {r.memory_id}", flush=True)
    for name, fn in (("AFTER-WRITE", lambda: g.remember(content="after the disk filled", keys=["after"])),
                     ("AFTER-READ", lambda: g.read_memory(memory_id=first))):
        try:
            fn()
            print(f"{name} ok", flush=True)
        except Exception as exc:
            print(f"{name} {type(exc).__name__} {str(exc)[:300]!r}", flush=True)
    g.close()
    print("CLOSED", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
