"""Settings -> the embedder and the reranker (the only place that decides which model runs)."""

from __future__ import annotations

import logging

from keymem.errors import ModelError
from keymem.models.base import EmbeddingBackend, Reranker
from keymem.settings import Settings

log = logging.getLogger("keymem.models")


def build_embedder(settings: Settings, *, progress: bool = True) -> EmbeddingBackend:
    """The configured embedding backend; downloads a named local model on first use.

    Raises ModelError when it cannot be built (no API key, missing files, download failure):
    keys cannot be routed without an embedder, so this is fatal for the caller.
    """
    if settings.backend == "openai":
        from keymem.models.openai_embed import OpenAIEmbedder

        if not settings.openai_api_key:
            raise ModelError("EMBEDDING_BACKEND=openai needs OPENAI_API_KEY")
        return OpenAIEmbedder(
            settings.openai_api_key,
            model=settings.openai_embedding_model,
            base_url=settings.openai_base_url,
        )

    from keymem.models.onnx_embed import OnnxEmbedder
    from keymem.models.profiles import find_model, resolve_model

    name = settings.local_embedding_model
    facts = None
    if settings.local_embedding_model_path is not None:
        from keymem.models import identify

        known = find_model(name)
        # The name picks pooling, prefixes and thresholds: the directory must hold that model.
        facts = identify.read_facts(settings.local_embedding_model_path, settings.local_embedding_model_file)
        if known is None:
            hint = identify.suggestion(facts)
            log.warning(
                "LOCAL_EMBEDDING_MODEL=%r is not a known model: using mean pooling, no prefixes, "
                "and the uncalibrated fallback thresholds for %s%s",
                name,
                settings.local_embedding_model_path,
                "" if hint is None else f" (its files match {hint.name}: LOCAL_EMBEDDING_MODEL={hint.name} "
                "runs it with its pooling and calibrated thresholds)",
            )
            return OnnxEmbedder(
                settings.local_embedding_model_path,
                name=name,
                model_file=settings.local_embedding_model_file,
                pooling="mean",
                threads=settings.embed_threads,
            )
        mismatch = identify.check(known, facts)
        if mismatch is not None:
            raise ModelError(mismatch.line)
        model_dir = settings.local_embedding_model_path
        # A user-supplied directory of a known model: repair it if it is incomplete, but only
        # when the file name is the standard one (a custom file name means "do not touch").
        if settings.local_embedding_model_file == "model.onnx":
            from keymem.models.download import ensure_model

            ensure_model(known, model_dir, progress=progress)
        profile = known
    else:
        from keymem.models.download import ensure_model

        profile = resolve_model(name)
        model_dir = ensure_model(profile, settings.models_dir / profile.name, progress=progress)
    embedder = OnnxEmbedder(
        model_dir,
        name=profile.name,
        model_file=settings.local_embedding_model_file,
        pooling=profile.pooling,
        query_prefix=profile.query_prefix,
        passage_prefix=profile.passage_prefix,
        threads=settings.embed_threads,
        max_length=profile.max_length,
        profile=profile.threshold_profile,
    )
    if facts is not None and facts.output_dim is None:
        # The graph did not declare its width: measured by one embedding (OnnxEmbedder.dimension).
        from dataclasses import replace

        from keymem.models import identify

        mismatch = identify.check(profile, replace(facts, output_dim=embedder.dimension))
        if mismatch is not None:
            raise ModelError(mismatch.line)
    return embedder


def build_reranker(settings: Settings, *, progress: bool = True) -> Reranker | None:
    """The cross-encoder, or None (disabled, or cannot be fetched/loaded: one warning, recall falls back)."""
    if not settings.rerank:
        return None
    from keymem.models.rerank import load_reranker

    model_dir = settings.rerank_model_path
    if model_dir is None:
        from keymem.models.download import ensure_reranker

        try:
            model_dir = ensure_reranker(settings.models_dir / "reranker", progress=progress)
        except ModelError as exc:
            log.warning("Reranker unavailable, recall falls back to the fused ranking: %s", exc)
            return None
    return load_reranker(model_dir, threads=settings.rerank_threads)
