"""Every environment variable keymem reads, parsed and validated once.

Nothing else in the package reads ``os.environ`` for configuration: entry points call
:func:`load_settings` and hand the result down. A bad value stops start-up with one line
naming the variable (:class:`SettingsError`).
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Literal

ENV_PREFIX = "KEYMEM_"


class SettingsError(ValueError):
    """A configuration value is invalid; the message names the variable."""


def _default_threads() -> int:
    return max(1, min(6, (os.cpu_count() or 1) // 4))


@dataclass(frozen=True)
class Var:
    """How one setting maps to the environment."""

    env: str
    kind: str  # str | path | bool | int | float | opt_float | opt_bool | choice
    help: str
    positive: bool = False
    minimum: float | None = None
    maximum: float | None = None
    choices: tuple[str, ...] = ()


# field name -> variable. Order is the order shown by `keymem doctor` and the README table.
VARS: dict[str, Var] = {
    "data_dir": Var("KEYMEM_DATA_DIR", "path", "Where the LadybugDB store, socket, logs and models live"),
    "embedding_backend": Var(
        "EMBEDDING_BACKEND", "opt_choice", "local or openai (default: openai when OPENAI_API_KEY is set, else local)",
        choices=("local", "openai"),
    ),
    "local_embedding_model": Var("LOCAL_EMBEDDING_MODEL", "str", "Named local model (bge-m3, fast-bge-small-en-v1.5, ...)"),
    "local_embedding_model_path": Var(
        "LOCAL_EMBEDDING_MODEL_PATH", "opt_path", "Directory with model.onnx + tokenizer.json (only missing files are fetched)"
    ),
    "local_embedding_model_file": Var("LOCAL_EMBEDDING_MODEL_FILE", "str", "ONNX file name inside the model directory"),
    "openai_api_key": Var("OPENAI_API_KEY", "opt_str", "OpenAI API key (selects the OpenAI backend by default)"),
    "openai_embedding_model": Var("OPENAI_EMBEDDING_MODEL", "str", "OpenAI embedding model"),
    "openai_base_url": Var("OPENAI_BASE_URL", "str", "OpenAI-compatible API base URL"),
    "embed_threads": Var("KEYMEM_EMBED_THREADS", "int", "ONNX intra-op threads for embeddings", minimum=1, maximum=64),
    "rerank": Var("KEYMEM_RERANK", "bool", "Cross-encoder reranking (false disables it)"),
    "rerank_model_path": Var("KEYMEM_RERANK_MODEL_PATH", "opt_path", "Existing reranker model directory"),
    "rerank_pool": Var("KEYMEM_RERANK_POOL", "int", "Candidates re-scored by the cross-encoder", minimum=1, maximum=500),
    "rerank_min_score": Var("KEYMEM_RERANK_MIN_SCORE", "opt_float", "Not-found gate on the top rerank logit (unset = off)"),
    "rerank_threads": Var("KEYMEM_RERANK_THREADS", "int", "ONNX intra-op threads for the reranker", minimum=1, maximum=64),
    "blas_threads": Var("KEYMEM_BLAS_THREADS", "int", "BLAS (numpy) threads in the process that owns the store", minimum=1, maximum=64),
    "key_recall": Var("KEYMEM_KEY_RECALL", "opt_float", "Query-key cosine needed to route to a concept key", minimum=-1, maximum=1),
    "key_merge": Var("KEYMEM_KEY_MERGE", "opt_float", "Key-key cosine at which a new concept key becomes an alias", minimum=-1, maximum=1),
    "key_autolink": Var("KEYMEM_KEY_AUTOLINK", "opt_float", "Cosine for automatic alias promotion", minimum=-1, maximum=1),
    "short_key_merge": Var(
        "KEYMEM_SHORT_KEY_MERGE", "opt_float", "Merge threshold for short keys (<= 3 chars); >1 disables", minimum=-1, maximum=2
    ),
    "key_hub_min_links": Var("KEYMEM_KEY_HUB_MIN_LINKS", "int", "Active memories that make a key a hub", minimum=1),
    "autokey": Var("KEYMEM_AUTOKEY", "bool", "Learn missing query aliases from real use"),
    "autokey_promote_n": Var("KEYMEM_AUTOKEY_PROMOTE_N", "int", "Confirmed (key, query) routes before promotion", minimum=1),
    "autokey_confirm_floor": Var(
        "KEYMEM_AUTOKEY_CONFIRM_FLOOR", "float", "Minimum query-key cosine for alias learning", minimum=-1, maximum=2
    ),
    "autokey_max_aliases": Var("KEYMEM_AUTOKEY_MAX_ALIASES", "int", "Learned aliases per key", minimum=0),
    "autokey_prune_age": Var("KEYMEM_AUTOKEY_PRUNE_AGE", "float", "Seconds before an unused learned alias is pruned", positive=True),
    "decay_transient_days": Var("KEYMEM_DECAY_TRANSIENT_DAYS", "float", "Half-life of transient memories (days)", positive=True),
    "decay_standard_days": Var("KEYMEM_DECAY_STANDARD_DAYS", "float", "Half-life of standard memories (days)", positive=True),
    "decay_stable_days": Var("KEYMEM_DECAY_STABLE_DAYS", "float", "Half-life of stable memories (days)", positive=True),
    "cleanup_interval_ms": Var("KEYMEM_CLEANUP_INTERVAL_MS", "int", "Daemon TTL/alias sweep interval", minimum=1000),
    "recall_hops": Var("KEYMEM_RECALL_HOPS", "int", "Default expansion hops for direct recall", minimum=1, maximum=5),
    "task_evidence_selection": Var("KEYMEM_TASK_EVIDENCE_SELECTION", "bool", "Comparison-aware evidence selection"),
    "inject_min_association": Var(
        "KEYMEM_INJECT_MIN_ASSOCIATION", "float",
        "Association strength an associated memory needs for the hook (1: the best hit; one specific key away: 0.5)",
        minimum=0, maximum=1,
    ),
    "inject_max": Var("KEYMEM_INJECT_MAX", "int", "Most memories injected per prompt", minimum=1, maximum=20),
    "transcript_access": Var("KEYMEM_TRANSCRIPT_ACCESS", "opt_bool", "Read host transcripts for provenance (unset = auto)"),
    "hook_installed": Var("KEYMEM_HOOK_INSTALLED", "bool", "A prompt hook pushes memories (changes the prompt wording)"),
    "hook_timeout_ms": Var("KEYMEM_HOOK_TIMEOUT_MS", "int", "How long the prompt hook waits for the daemon", minimum=100),
    "hook_scope_cwd": Var("KEYMEM_HOOK_SCOPE_CWD", "bool", "Hook recalls in a namespace named after the working directory"),
    "auto_migrate": Var("KEYMEM_AUTO_MIGRATE", "bool", "Re-embed keys when the embedding model changes"),
    "force_reembed": Var("KEYMEM_FORCE_REEMBED", "bool", "Re-embed every key once on start"),
    "buffer_pool_mb": Var("KEYMEM_BUFFER_POOL_MB", "int", "LadybugDB buffer pool size (MiB)", minimum=64),
    "extension_repo": Var(
        "KEYMEM_EXTENSION_REPO", "opt_str", "Where `keymem extensions download` fetches LadybugDB extensions (unset = the engine's own server)"
    ),
    "vector_index_min_keys": Var(
        "KEYMEM_VECTOR_INDEX_MIN_KEYS", "int", "Keys at which key search moves from exact numpy scan to HNSW", minimum=1
    ),
    "max_content_chars": Var("KEYMEM_MAX_CONTENT_CHARS", "int", "Longest memory content accepted", minimum=1),
    "max_keys": Var("KEYMEM_MAX_KEYS", "int", "Most keys on one memory", minimum=1),
    "daemon": Var("KEYMEM_DAEMON", "choice", "auto: share one daemon; off: open the store in this process", choices=("auto", "off")),
    "log_level": Var("KEYMEM_LOG_LEVEL", "choice", "Log level", choices=("DEBUG", "INFO", "WARNING", "ERROR")),
    "fault_kill_before_reply": Var(
        "KEYMEM_FAULT_KILL_BEFORE_REPLY", "opt_str",
        "Tests only: the daemon kills itself after these methods commit, before replying (comma-separated; once each)",
    ),
}


@dataclass(frozen=True)
class Settings:
    data_dir: Path = field(default_factory=lambda: Path.home() / ".keymem")
    embedding_backend: Literal["local", "openai"] | None = None
    local_embedding_model: str = "bge-m3"
    local_embedding_model_path: Path | None = None
    local_embedding_model_file: str = "model.onnx"
    openai_api_key: str | None = None
    openai_embedding_model: str = "text-embedding-3-small"
    openai_base_url: str = "https://api.openai.com/v1"
    embed_threads: int = field(default_factory=_default_threads)
    rerank: bool = True
    rerank_model_path: Path | None = None
    rerank_pool: int = 30
    rerank_min_score: float | None = None
    rerank_threads: int = field(default_factory=_default_threads)
    blas_threads: int = 1
    key_recall: float | None = None
    key_merge: float | None = None
    key_autolink: float | None = None
    short_key_merge: float | None = None
    key_hub_min_links: int = 3
    autokey: bool = True
    autokey_promote_n: int = 3
    autokey_confirm_floor: float = 0.45
    autokey_max_aliases: int = 8
    autokey_prune_age: float = 2_592_000.0
    decay_transient_days: float = 7.0
    decay_standard_days: float = 90.0
    decay_stable_days: float = 365.0
    cleanup_interval_ms: int = 3_600_000
    recall_hops: int = 2
    task_evidence_selection: bool = True
    inject_min_association: float = 0.2
    inject_max: int = 4
    transcript_access: bool | None = None
    hook_installed: bool = False
    hook_timeout_ms: int = 9000
    hook_scope_cwd: bool = False
    auto_migrate: bool = True
    force_reembed: bool = False
    buffer_pool_mb: int = 256
    extension_repo: str | None = None
    vector_index_min_keys: int = 200_000
    max_content_chars: int = 100_000
    max_keys: int = 32
    daemon: Literal["auto", "off"] = "auto"
    log_level: str = "INFO"
    fault_kill_before_reply: str | None = None
    # Where each value came from: field -> "env VAR" | "default". Filled by load_settings.
    sources: Mapping[str, str] = field(default_factory=dict, compare=False, repr=False)

    @property
    def backend(self) -> Literal["local", "openai"]:
        """The effective embedding backend (the seed's rule: OpenAI only with a key)."""
        if self.embedding_backend is not None:
            return self.embedding_backend
        return "openai" if self.openai_api_key else "local"

    @property
    def models_dir(self) -> Path:
        return self.data_dir / "models"

    @property
    def db_path(self) -> Path:
        return self.data_dir / "keymem.lbug"

    @property
    def log_path(self) -> Path:
        return self.data_dir / "logs" / "keymem.log"

    @property
    def socket_path(self) -> Path:
        return self.data_dir / "daemon.sock"

    @property
    def pid_path(self) -> Path:
        return self.data_dir / "daemon.pid"

    def half_life_days(self, profile: str) -> float | None:
        return {
            "transient": self.decay_transient_days,
            "standard": self.decay_standard_days,
            "stable": self.decay_stable_days,
            "permanent": None,
        }[profile]

    def with_overrides(self, **changes: Any) -> Settings:
        """A copy with some fields replaced (tests, benchmarks, CLI flags)."""
        values = {f.name: getattr(self, f.name) for f in fields(self)}
        values.update(changes)
        return Settings(**values)


_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}


def _parse(name: str, var: Var, raw: str) -> Any:
    text = raw.strip()
    kind = var.kind
    if kind in ("opt_str", "opt_path", "opt_float", "opt_bool", "opt_choice") and text == "":
        return None
    if kind in ("str", "opt_str"):
        if not text:
            raise SettingsError(f"{var.env} must not be empty")
        return text
    if kind in ("path", "opt_path"):
        if not text:
            raise SettingsError(f"{var.env} must not be empty")
        return Path(text).expanduser()
    if kind in ("bool", "opt_bool"):
        low = text.lower()
        if low in _TRUE:
            return True
        if low in _FALSE:
            return False
        raise SettingsError(f"{var.env}={raw!r} is not a boolean (use true or false)")
    if kind in ("choice", "opt_choice"):
        for choice in var.choices:
            if text.lower() == choice.lower():
                return choice
        raise SettingsError(f"{var.env}={raw!r} must be one of {', '.join(var.choices)}")
    if kind == "int":
        try:
            value: float = int(text)
        except ValueError:
            raise SettingsError(f"{var.env}={raw!r} is not a whole number") from None
    elif kind in ("float", "opt_float"):
        try:
            value = float(text)
        except ValueError:
            raise SettingsError(f"{var.env}={raw!r} is not a number") from None
        if not math.isfinite(value):
            raise SettingsError(f"{var.env}={raw!r} must be a finite number")
    else:  # pragma: no cover - a programming error in VARS
        raise AssertionError(kind)
    if var.positive and value <= 0:
        raise SettingsError(f"{var.env}={raw!r} must be greater than zero")
    if var.minimum is not None and value < var.minimum:
        raise SettingsError(f"{var.env}={raw!r} must be at least {var.minimum:g}")
    if var.maximum is not None and value > var.maximum:
        raise SettingsError(f"{var.env}={raw!r} must be at most {var.maximum:g}")
    return value


def load_settings(environ: Mapping[str, str] | None = None, **overrides: Any) -> Settings:
    """Read the environment once. Raises SettingsError naming the first bad variable."""
    env = os.environ if environ is None else environ
    values: dict[str, Any] = {}
    sources: dict[str, str] = {}
    for name, var in VARS.items():
        if var.env in env:
            values[name] = _parse(name, var, env[var.env])
            sources[name] = f"env {var.env}"
        else:
            sources[name] = "default"
    for name, value in overrides.items():
        values[name] = value
        sources[name] = "argument"
    return Settings(**values, sources=sources)


def env_names() -> list[str]:
    """Every variable keymem reads (the test fixture clears these)."""
    return [v.env for v in VARS.values()] + ["CLAUDE_CODE_SESSION_ID", "CODEX_THREAD_ID"]
