"""MemoryGraph: the one object the interfaces call (MCP server, daemon, CLI, benchmarks).

It opens the store (migrations, embedding fingerprint check, caches), holds the models,
and exposes one method per tool. Domain code never imports the interface layer.
"""

from __future__ import annotations

import logging
import sys
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

import numpy as np

from keymem.errors import StoreError
from keymem.index.aliases import AliasIndex
from keymem.index.lexical import LexicalIndex
from keymem.index.memvec import FILE_NAME as MEMVEC_FILE
from keymem.index.memvec import MemoryVectors
from keymem.index.mirror import GraphMirror
from keymem.index.neighbourhood import MirrorNeighbourhood, Neighbourhood
from keymem.memory import associative, deliver, navigate, write
from keymem.memory.access import AccessLog
from keymem.memory.autokey import Autokey
from keymem.memory.calls import (
    BrowseKeysRequest,
    ConfirmRequest,
    CorrectRequest,
    DirectRequest,
    DismissRequest,
    ForgetRequest,
    InjectRequest,
    ReadKeyRequest,
    ReadMemoryRequest,
    RecallRequest,
    RememberRequest,
)
from keymem.memory.catchup import CatchUp
from keymem.memory.navigate import contents
from keymem.memory.requests import RequestLog
from keymem.memory.views import (
    BatchResult,
    BrowseResult,
    CorrectResult,
    DirectResult,
    DismissResult,
    ForgetResult,
    InjectResult,
    MemoryView,
    ReadKeyResult,
    RecallResult,
    RememberResult,
)
from keymem.native import gc_paused, limit_blas_threads, trim_heap
from keymem.settings import Settings
from keymem.store import changes, migrations
from keymem.store.db import Store, columns, pool_exhausted
from keymem.store.vectors import KeyVectors
from keymem.store.walk import fill_walk_copies

if TYPE_CHECKING:
    from keymem.models.base import EmbeddingBackend, Reranker
    from keymem.models.profiles import ThresholdProfile

log = logging.getLogger("keymem.memory")

REEMBED_BATCH = 64
RETOKENIZE_BATCH = 2000


class MemoryGraph:
    """The key/memory graph of one data dir."""

    def __init__(
        self,
        settings: Settings,
        store: Store,
        embedder: EmbeddingBackend,
        *,
        reranker: Reranker | None | Callable[[], Reranker | None] = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        from keymem.models.profiles import thresholds_for

        self.settings = settings
        self.store = store
        self.embedder = embedder
        self.now = clock
        self._reranker_source = reranker
        self._reranker: Reranker | None = None
        self._reranker_loaded = not callable(reranker) or _is_reranker(reranker)
        if self._reranker_loaded:
            self._reranker = reranker  # type: ignore[assignment]
        self._reranker_lock = threading.Lock()
        overrides = {
            "key_recall": settings.key_recall, "key_merge": settings.key_merge,
            "key_autolink": settings.key_autolink, "short_key_merge": settings.short_key_merge,
        }
        self.thresholds: ThresholdProfile
        self.thresholds, calibrated = thresholds_for(embedder.profile, overrides)
        if not calibrated:
            log.warning("no calibrated key thresholds for %s; using the BGE profile", embedder.fingerprint)
        self.vectors = KeyVectors(store, embedder.dimension, index_min_keys=settings.vector_index_min_keys)
        self.lexical = LexicalIndex()
        self.korean_stamped = False  # set once the store's Korean fingerprint is this Kiwi's (_load_lexical, write)
        self.mirror = GraphMirror(store, settings)
        self.aliases = AliasIndex(store)
        # The association walk reads the mirror: CypherNeighbourhood returns the same rows but costs
        # more at 10k and 100k memories (docs/design.md, "Association neighbourhood: Cypher vs mirror").
        self.neighbourhood: Neighbourhood = MirrorNeighbourhood(self.mirror)
        self._embed_pool: ThreadPoolExecutor | None = None  # embed_soon's threads, started on first use
        self._embed_pool_lock = threading.Lock()
        # memory content vectors (meaning, for association and the hook's silence), beside the store
        self.memvecs = MemoryVectors(embedder.dimension, embedder.fingerprint, self.embed,
                                     lambda ids: contents(self, ids), path=settings.data_dir / MEMVEC_FILE,
                                     submit=self._submit_embed)
        self._warm_stop = threading.Event()
        self._warm: threading.Thread | None = None
        self.autokey = Autokey(lambda: self.settings, store, self.vectors, self.aliases, clock)
        self.access = AccessLog(store)
        # mutating calls' results by request id (daemon retries)
        self.requests = RequestLog(store, clock, self.memory_json)
        # other daemons' writes to a store several daemons write (memory/catchup.py); None where one does
        feed = changes.feed(store)
        self.catchup = CatchUp(self, feed) if feed is not None else None

    # -- opening -------------------------------------------------------------------
    @classmethod
    def open(
        cls,
        settings: Settings,
        *,
        embedder: EmbeddingBackend | None = None,
        reranker: Reranker | None | Callable[[], Reranker | None] | str = "auto",
        clock: Callable[[], float] = time.time,
        progress: bool = True,
        store: Store | None = None,
    ) -> MemoryGraph:
        """Open (or create) the store under ``settings.data_dir`` and make it ready to serve.

        ``store``: an opened store to serve instead of the one ``settings`` names (one namespace's graph,
        keymem/memory/namespace_graphs.py); it is closed with the graph.
        """
        settings.data_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        limit_blas_threads(settings.blas_threads)  # the process that owns the store: see keymem/native.py
        if embedder is None:
            from keymem.models.factory import build_embedder

            embedder = build_embedder(settings, progress=progress)
        if reranker == "auto":
            from keymem.models.factory import build_reranker

            def load() -> Reranker | None:
                return build_reranker(settings, progress=progress)

            reranker = load if settings.rerank else None
        if store is None:
            from keymem.store.factory import open_store

            store = open_store(settings)  # KEYMEM_STORE_URL's engine; a LadybugDB file of another version is upgraded once
        try:
            migrations.migrate(store)
            graph = cls(settings, store, embedder, reranker=reranker, clock=clock)  # type: ignore[arg-type]
            if store.wal_tail_dropped:  # kept for `keymem doctor`: the log line alone is easy to miss
                graph.set_meta("wal_recovery", f"{time.strftime('%Y-%m-%d %H:%M:%S UTC', time.gmtime())}: "
                                               f"{store.wal_tail_dropped}")
            graph._check_fingerprint(progress)
            if graph.catchup is not None:
                graph.catchup.mark()  # what commits during the load is applied after it
            graph._load_caches()
            graph.sweep()
            graph._start_warm()
            if graph.catchup is not None:
                graph.catchup()
                graph.catchup.start()
        except BaseException:
            store.close()
            raise
        return graph

    def _check_fingerprint(self, progress: bool) -> None:
        fp, dim = self.embedder.fingerprint, self.embedder.dimension
        stored_fp = self.meta("embedding_fingerprint")
        stored_dim = self.meta("embedding_dim")
        if stored_fp is None:
            self.vectors.create_table()
            self.set_meta("embedding_fingerprint", fp)
            self.set_meta("embedding_dim", str(dim))
            return
        changed = stored_fp != fp or stored_dim != str(dim)
        if not changed and not self.settings.force_reembed:
            return
        if changed and not self.settings.auto_migrate:
            raise StoreError(
                f"the store's keys were embedded with {stored_fp} ({stored_dim}-d) but the configured model is "
                f"{fp} ({dim}-d), and KEYMEM_AUTO_MIGRATE=false. Set the original model back, or allow the "
                "one-time re-embedding with KEYMEM_AUTO_MIGRATE=true (a backup is made first)."
            )
        self.reembed(progress=progress, reason=f"{stored_fp} -> {fp}")

    def reembed(self, *, progress: bool = True, reason: str = "forced") -> int:
        """Back up, then re-embed every concept key; content, links, depth and history stay."""
        self.store.backup("reembed")
        log.info("re-embedding every key (%s)", reason)
        self.vectors.drop_table()
        self.vectors.create_table()
        rows = self.store.query("key/concept_all")
        done = 0
        for start in range(0, len(rows), REEMBED_BATCH):
            chunk = rows[start : start + REEMBED_BATCH]
            vecs = self.embed([r["text"] for r in chunk])
            with self.store.write() as tx:
                for r, v in zip(chunk, vecs, strict=True):
                    self.vectors.insert(tx, r["id"], r["namespace"], v)
            done += len(chunk)
            if progress and sys.stderr.isatty():
                print(f"\rre-embedding keys {done}/{len(rows)}", end="", file=sys.stderr, flush=True)
        if progress and sys.stderr.isatty() and rows:
            print(file=sys.stderr)
        self.set_meta("embedding_fingerprint", self.embedder.fingerprint)
        self.set_meta("embedding_dim", str(self.embedder.dimension))
        return done

    def _load_lexical(self) -> None:
        """Fill the BM25 index from each memory's stored terms; tokenise (and store) only what lacks them.

        Stored terms are reused while the tokenizer is unchanged: the non-Korean fingerprint for
        every memory, and Kiwi's (``KOREAN_META``) for memories whose terms hold Hangul. Kiwi
        is built here only when the store holds such memories.
        """
        from keymem.text.tokenize import (
            KOREAN_META,
            has_hangul,
            korean_fingerprint,
            tokenizer_fingerprint,
        )

        self.korean_stamped = False  # re-derived from the store below (reload_caches runs this after raw writes)
        now = self.now()
        fingerprint = tokenizer_fingerprint()
        same = self.meta("lexical_tokenizer") == fingerprint
        redo: set[str] = set()
        korean: set[str] = set()
        # A store with the Korean stamp holds Korean terms (remember stamps it with the first
        # ones), so checking it builds Kiwi only where it is needed anyway; when it matches, no
        # memory needs looking at for Hangul (1 s at 1M memories).
        stamp = self.meta(KOREAN_META)
        korean_current = stamp is not None and stamp == korean_fingerprint()

        def pages() -> Iterator[tuple[str, list[str], list[str]]]:
            # Lazily, a page at a time: the term strings of one page live only until they are
            # mapped to term ids (the whole table's strings at once cost ~170 MB at 100k memories).
            for lo, hi in self.store.offset_ranges("memory/offset_end"):
                for group in self.store.query("memory/active_terms_range", lo=lo, hi=hi, now=now):
                    ids, terms, missing = group["ids"], group["terms"], group["missing"]
                    if not same:
                        redo.update(ids)
                        continue
                    if any(missing):
                        redo.update(mid for mid, miss in zip(ids, missing, strict=True) if miss)
                        keep = [i for i, miss in enumerate(missing) if not miss]
                        ids, terms = [ids[i] for i in keep], [terms[i] for i in keep]
                    if not korean_current:
                        korean.update(mid for mid, t in zip(ids, terms, strict=True) if has_hangul(t))
                    yield group["namespace"], ids, terms

        self.lexical.load(pages())
        if korean_current:
            self.korean_stamped = True
        elif korean:
            redo |= korean  # _retokenize stores the new Korean fingerprint
        if redo:
            self._retokenize(redo, now)
        if self.store.read_only:
            return
        if not same:
            self.set_meta("lexical_tokenizer", fingerprint)

    def _retokenize(self, ids: set[str], now: float) -> None:
        """Tokenise memories without stored terms (older stores, imports, a tokenizer change) and store them."""
        from keymem.text.tokenize import KOREAN_META, TERMS_SEP, kiwi_loaded, korean_fingerprint, tokenize

        log.info("tokenising %d memories for the BM25 index (stored for the next open)", len(ids))
        done: list[tuple[str, str, str]] = []  # (id, joined terms, namespace): one string per memory
        for page in self.store.pages("memory/active_docs", now=now):
            if not any(mid in ids for mid in page["ids"]):
                continue
            linked = columns(self.store.query("memory/key_texts_range", first=min(page["ids"]), last=max(page["ids"])))
            keys: dict[str, list[str]] = {}
            for mid, text in zip(linked["memories"], linked["texts"], strict=True):
                keys.setdefault(mid, []).append(text)
            for mid, ns, content in zip(page["ids"], page["namespaces"], page["contents"], strict=True):
                if mid in ids:
                    done.append((mid, TERMS_SEP.join(tokenize(" ".join([*keys.get(mid, ()), content]))), ns))
        self.lexical.add_many((mid, t.split(TERMS_SEP) if t else [], ns) for mid, t, ns in done)
        if self.store.read_only:
            return
        for start in range(0, len(done), RETOKENIZE_BATCH):
            chunk = done[start : start + RETOKENIZE_BATCH]
            with self.store.write() as tx:
                tx.run("memory/set_terms", rows=[{"id": mid, "terms": t} for mid, t, _ in chunk])
        if kiwi_loaded():  # Korean memories were tokenised just now: their terms match this Kiwi
            self.set_meta(KOREAN_META, korean_fingerprint())
            self.korean_stamped = True

    def reload_caches(self) -> None:
        """Re-read every in-memory copy (key vectors, BM25 index, graph mirror) from the store.

        For writes that bypass the domain layer (the console's write mode); the links' copies of
        their ends, which the association walk reads, are re-derived first.
        """
        if not self.store.read_only:
            fill_walk_copies(self.store, force=True)
        if self.catchup is not None and not self.store.read_only:  # the other daemons reload too
            with self.store.write() as tx:
                changes.note(self.store, tx, everything=True)
        self.lexical = LexicalIndex()  # calls already running keep searching the old one
        self._load_caches()

    def reload_indexes(self) -> None:
        """Re-read the mirror, key vectors, aliases and BM25 index (a daemon too far behind the others'
        writes to catch up by ids); memory content vectors stay (a memory's text never changes)."""
        self.lexical = LexicalIndex()  # calls already running keep searching the old one
        self._load_caches(memory_vectors=False)

    def catch_up(self) -> int:
        """Apply other daemons' writes to the in-memory indexes before a call reads them (memory/catchup.py);
        the change records applied. Nothing to do, and no query, where this process is the only writer."""
        return self.catchup() if self.catchup is not None else 0

    def _load_caches(self, *, memory_vectors: bool = True) -> None:
        """Fill the key vectors, the BM25 index and the graph mirror from the store.

        The mirror loads on a second thread meanwhile: much of each load is Kuzu scanning and
        numpy sorting, which run outside the GIL (1M memories: 24 s one after the other, 20 s
        side by side). Two loads at once need more of Kuzu's buffer pool than one; a load the
        pool could not hold is run again alone once the other has finished (each load fills
        its copy only when it has read everything, so a failed one leaves nothing behind).
        """
        failed: list[BaseException] = []

        def side_load() -> None:
            try:
                self.mirror.load()
            except BaseException as exc:
                failed.append(exc)

        lexical_failed: BaseException | None = None
        with gc_paused():
            side = threading.Thread(target=side_load, name="keymem-mirror-load", daemon=True)
            side.start()
            try:
                self.vectors.load()
                self.aliases.load()
                self._load_lexical()
            except Exception as exc:
                if not pool_exhausted(exc):
                    raise
                lexical_failed = exc
            finally:
                side.join()
            if failed:
                if not pool_exhausted(failed[0]):
                    raise failed[0]
                log.warning("loading the graph mirror again on its own: %s", failed[0])
                self.mirror.load()
            if lexical_failed is not None:
                log.warning("loading the key vectors and BM25 index again on their own: %s", lexical_failed)
                self.lexical = LexicalIndex()
                self.vectors.load()
                self.aliases.load()
                self._load_lexical()
        if memory_vectors:
            self.memvecs.load()
        trim_heap()  # the loads' transient rows (hundreds of MB at 100k memories)

    # -- shared helpers ----------------------------------------------------------------
    def meta(self, name: str) -> str | None:
        rows = self.store.query("meta/get", name=name)
        return rows[0]["value"] if rows else None

    def set_meta(self, name: str, value: str) -> None:
        with self.store.write() as tx:
            tx.run("meta/set", name=name, value=value)

    def embed(self, texts: list[str]) -> np.ndarray:
        return self.embedder.embed(texts, kind="query")

    def _submit_embed(self, job: Callable[[], None]) -> None:
        self._pool().submit(job)

    def _pool(self) -> ThreadPoolExecutor:
        if self._embed_pool is None:
            with self._embed_pool_lock:
                if self._embed_pool is None:
                    self._embed_pool = ThreadPoolExecutor(max_workers=2, thread_name_prefix="keymem-embed")
        return self._embed_pool

    def _start_warm(self) -> None:
        """Embed the memories without a content vector on a background thread (an older store)."""
        if not self.settings.warm_memory_vectors or self.store.read_only:
            return
        todo = self.memvecs.missing(self.mirror.memory_ids())
        if not todo:
            return

        def run() -> None:
            try:
                done = self.memvecs.warm(todo, self._warm_stop)
                log.info("memory vectors: embedded %d memories in the background", done)
            except Exception as exc:  # closed under it, or the store failed: the lazy fill covers the rest
                log.info("memory vector warm-up stopped: %s", exc)

        self._warm = threading.Thread(target=run, name="keymem-memvec-warm", daemon=True)
        self._warm.start()

    def embed_soon(self, texts: list[str]) -> Future[np.ndarray]:
        """``embed`` on a worker thread, for a caller with store or index work to do meanwhile."""
        return self._pool().submit(self.embed, texts)

    def reranker(self) -> Reranker | None:
        """The cross-encoder, loaded on first use; None (with one warning) if it cannot load."""
        if not self._reranker_loaded:
            with self._reranker_lock:
                if not self._reranker_loaded:
                    try:
                        self._reranker = self._reranker_source()  # type: ignore[operator,misc]
                    except Exception as exc:  # fall back to fused ranking, say so once
                        log.warning("reranker unavailable, using fused ranking: %s", exc)
                        self._reranker = None
                    self._reranker_loaded = True
        return self._reranker

    def expired(self, m: dict[str, Any]) -> bool:
        return m["expires_at"] is not None and m["expires_at"] <= self.now()

    # -- tools -----------------------------------------------------------------------
    # Each tool takes its typed request (keymem/memory/calls.py), or the request's fields as
    # keywords (a tool call's JSON arguments): ``graph.recall(query="apple", top_k=3)``. ``source``
    # is the host's provenance for a write, never an agent's argument.
    def remember(self, request: RememberRequest | None = None, /, source: dict[str, Any] | None = None,
                 **fields: Any) -> RememberResult:
        return write.remember(self, request or RememberRequest.of(fields), source)

    def remember_batch(self, items: Any, source: dict[str, Any] | None = None) -> BatchResult:
        """``items``: a list of remember requests' fields (JSON objects), all written in one transaction."""
        return write.remember_batch(self, items, source)

    def correct(self, request: CorrectRequest | None = None, /, source: dict[str, Any] | None = None,
                **fields: Any) -> CorrectResult:
        return write.correct(self, request or CorrectRequest.of(fields), source)

    def forget(self, request: ForgetRequest | None = None, /, **fields: Any) -> ForgetResult:
        return write.forget(self, request or ForgetRequest.of(fields))

    def dismiss(self, request: DismissRequest | None = None, /, **fields: Any) -> DismissResult:
        return write.dismiss(self, request or DismissRequest.of(fields))

    def confirm_memory(self, request: ConfirmRequest | None = None, /, **fields: Any) -> MemoryView:
        done = write.confirm(self, request or ConfirmRequest.of(fields))
        return navigate.memory_view(self, write.get_memory(self, done["memory_id"]), self.now())

    def read_key(self, request: ReadKeyRequest | None = None, /, **fields: Any) -> ReadKeyResult:
        return navigate.read_key(self, request or ReadKeyRequest.of(fields))

    def read_memory(self, request: ReadMemoryRequest | None = None, /, **fields: Any) -> MemoryView:
        return navigate.read_memory(self, request or ReadMemoryRequest.of(fields))

    def browse_keys(self, request: BrowseKeysRequest | None = None, /, **fields: Any) -> BrowseResult:
        return navigate.browse_keys(self, request or BrowseKeysRequest.of(fields))

    def recall(self, request: RecallRequest | None = None, /, **fields: Any) -> RecallResult:
        return deliver.recall(self, request or RecallRequest.of(fields))

    def recall_direct(self, request: DirectRequest | None = None, /, *, reinforce: bool = True,
                      **fields: Any) -> DirectResult:
        """Hybrid associative recall (BM25 + key path + association + cross-encoder)."""
        return associative.recall_direct(self, request or DirectRequest.of(fields), reinforce=reinforce)

    def recall_inject(self, request: InjectRequest | None = None, /, **fields: Any) -> InjectResult:
        """The prompt hook's few memories above an absolute relevance floor."""
        return deliver.recall_inject(self, request or InjectRequest.of(fields))

    def memory_json(self, memory_id: str) -> dict[str, Any]:
        """A memory's read_memory view as JSON, read without side effects (a replayed confirm's answer)."""
        return navigate.memory_view(self, write.get_memory(self, memory_id), self.now()).dump()

    # -- maintenance -------------------------------------------------------------------
    def sweep(self) -> dict[str, int]:
        """Delete expired memories, prune learned aliases that never hit, drop old request results."""
        expired = write.delete_expired(self)
        pruned = self.autokey.prune()
        requests = self.requests.sweep()
        if expired or pruned or requests:
            log.info("sweep: %d expired memories deleted, %d learned aliases pruned, %d request results dropped",
                     expired, pruned, requests)
        return {"expired": expired, "aliases_pruned": pruned, "requests_expired": requests}

    def counts(self) -> dict[str, int]:
        return self.mirror.counts(self.now())  # exact, and no engine aggregate over every table

    def close(self) -> None:
        try:
            if not self.store.failed and not self.store.closed:
                self.access.flush()  # a clean stop keeps every access the agent was shown
        except Exception as exc:
            log.warning("writing the pending accesses at close failed: %s", exc)
        if self.catchup is not None:
            self.catchup.stop()
        self._warm_stop.set()
        if self._warm is not None:
            self._warm.join()
        if self._embed_pool is not None:
            self._embed_pool.shutdown(wait=True)
        if not self.store.read_only and not self.store.failed:
            known = set(self.mirror.memory_ids())
            self.memvecs.save(keep=known.__contains__)
        self.store.close()


def _is_reranker(obj: object) -> bool:
    return hasattr(obj, "score") and hasattr(obj, "name")
