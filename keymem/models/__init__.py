"""Models layer: embedding backends, the cross-encoder reranker, profiles and downloads.

Importing this package is cheap on purpose: onnxruntime, tokenizers and huggingface_hub are
imported only by the modules that run or fetch a model, so the CLI and tests that never embed
anything stay fast.
"""

from keymem.models.base import EmbeddingBackend, Reranker

__all__ = ["EmbeddingBackend", "Reranker"]
