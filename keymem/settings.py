"""Every setting keymem reads, from the environment or the config file, parsed and validated once.

Nothing else in the package reads ``os.environ`` or the config file for configuration: entry
points (the MCP server, the daemon, the hook, the CLI) call :func:`load_settings` and hand the
result down. A value comes from the environment, else from the config file (:func:`config_path`:
``KEYMEM_CONFIG``, else ``$KEYMEM_DATA_DIR/config.toml``, else ``~/.keymem/config.toml``), else
the default; ``Settings.sources`` says which. The file's keys are the environment variables'
names (``LOCAL_EMBEDDING_MODEL = "minilm-l6-v2"``). A bad value stops start-up with one line
naming the variable (and the file: :class:`SettingsError`).
"""

from __future__ import annotations

import difflib
import math
import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Literal

from keymem.errors import shown as echoed

ENV_PREFIX = "KEYMEM_"
CONFIG_VAR = "KEYMEM_CONFIG"  # the config file's path (read from the environment only)
CONFIG_NAME = "config.toml"


class SettingsError(ValueError):
    """A configuration value is invalid; the message names the variable (and the config file, ``path``)."""

    def __init__(self, message: str, path: Path | None = None) -> None:
        super().__init__(message)
        self.path = path


def _default_threads() -> int:
    return max(1, min(6, (os.cpu_count() or 1) // 4))


@dataclass(frozen=True)
class Var:
    """How one setting maps to the environment."""

    env: str
    kind: str  # str | path | bool | int | opt_int (empty or "auto": None) | float | opt_float | opt_bool | choice | opt_store_url
    help: str
    positive: bool = False
    minimum: float | None = None
    maximum: float | None = None
    choices: tuple[str, ...] = ()


# field name -> variable. Order is the order shown by `keymem doctor` and the README table.
VARS: dict[str, Var] = {
    "data_dir": Var("KEYMEM_DATA_DIR", "path", "Where the LadybugDB store, socket, logs and models live"),
    "store_url": Var(
        "KEYMEM_STORE_URL", "opt_store_url",
        "The store's engine: unset = the embedded LadybugDB file in the data dir; falkordb://[user:password@]host:port[/prefix] "
        "or falkordb+sentinel://[user:password@]host:port[,host:port...]/master-name[/prefix]",
    ),
    "falkordb_ack_replicas": Var(
        "KEYMEM_FALKORDB_ACK_REPLICAS", "int",
        "FalkorDB: a write is acknowledged once this many replicas hold it (WAIT); 0 = once the primary applied it",
        minimum=0, maximum=16,
    ),
    "falkordb_ack_timeout_ms": Var(
        "KEYMEM_FALKORDB_ACK_TIMEOUT_MS", "int",
        "FalkorDB: how long a write waits for those replicas before it is reported as an error",
        minimum=1, maximum=60_000,
    ),
    "falkordb_graphs": Var(
        "KEYMEM_FALKORDB_GRAPHS", "choice",
        "FalkorDB: one = every namespace in the graph <prefix>; namespace = a graph <prefix>:<namespace> for each, "
        "so a Redis Cluster spreads namespaces over its shards",
        choices=("one", "namespace"),
    ),
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
    "warm_memory_vectors": Var(
        "KEYMEM_WARM_MEMORY_VECTORS", "bool",
        "Embed, in the background after an open, every memory that has no content vector yet",
    ),
    "inject_max": Var("KEYMEM_INJECT_MAX", "int", "Most memories injected per prompt", minimum=1, maximum=20),
    "transcript_access": Var("KEYMEM_TRANSCRIPT_ACCESS", "opt_bool", "Read host transcripts for provenance (unset = auto)"),
    "hook_installed": Var("KEYMEM_HOOK_INSTALLED", "bool", "A prompt hook pushes memories (changes the prompt wording)"),
    "hook_timeout_ms": Var("KEYMEM_HOOK_TIMEOUT_MS", "int", "How long the prompt hook waits for the daemon", minimum=100),
    "hook_scope_cwd": Var("KEYMEM_HOOK_SCOPE_CWD", "bool", "Hook recalls in a namespace named after the working directory"),
    "hook_url": Var(
        "KEYMEM_HOOK_URL", "opt_str",
        "A remote `keymem serve --http`'s MCP URL (https://HOST:8765/mcp): the prompt hook asks it, not the local daemon",
    ),
    "hook_token_file": Var(
        "KEYMEM_HOOK_TOKEN_FILE", "opt_path", "File holding the bearer token for KEYMEM_HOOK_URL (owner-only, mode 0600)"
    ),
    "auto_migrate": Var("KEYMEM_AUTO_MIGRATE", "bool", "Re-embed keys when the embedding model changes"),
    "force_reembed": Var("KEYMEM_FORCE_REEMBED", "bool", "Re-embed every key once on start"),
    "buffer_pool_mb": Var("KEYMEM_BUFFER_POOL_MB", "opt_int",
                          "LadybugDB buffer pool size (MiB); unset or auto: the store's size + 128, 256 to a quarter of RAM",
                          minimum=64),
    "extension_repo": Var(
        "KEYMEM_EXTENSION_REPO", "opt_str", "Where `keymem extensions download` fetches LadybugDB extensions (unset = the engine's own server)"
    ),
    "vector_index_min_keys": Var(
        "KEYMEM_VECTOR_INDEX_MIN_KEYS", "int", "Keys at which key search moves from exact numpy scan to HNSW", minimum=1
    ),
    "max_content_chars": Var("KEYMEM_MAX_CONTENT_CHARS", "int", "Longest memory content accepted", minimum=1),
    "max_keys": Var("KEYMEM_MAX_KEYS", "int", "Most keys on one memory", minimum=1),
    "http_token_file": Var(
        "KEYMEM_HTTP_TOKEN_FILE", "opt_path", "Token file of `keymem serve --http` (unset = <data dir>/tokens.json)"
    ),
    "http_max_body_bytes": Var("KEYMEM_HTTP_MAX_BODY_BYTES", "int", "Largest HTTP request body accepted (bytes)", minimum=1024),
    "http_timeout_s": Var("KEYMEM_HTTP_TIMEOUT_S", "float", "Longest an HTTP request may take before a 504", positive=True),
    "http_max_concurrent": Var("KEYMEM_HTTP_MAX_CONCURRENT", "int", "HTTP requests in flight before a 503", minimum=1),
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
    store_url: str | None = None  # KEYMEM_STORE_URL, checked by keymem.engine_url.parse_store_url
    falkordb_ack_replicas: int = 0
    falkordb_ack_timeout_ms: int = 1000
    falkordb_graphs: str = "one"
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
    recall_hops: int = 3
    task_evidence_selection: bool = True
    inject_min_association: float = 0.1
    inject_max: int = 4
    warm_memory_vectors: bool = True
    transcript_access: bool | None = None
    hook_installed: bool = False
    hook_timeout_ms: int = 9000
    hook_scope_cwd: bool = False
    hook_url: str | None = None
    hook_token_file: Path | None = None
    auto_migrate: bool = True
    force_reembed: bool = False
    buffer_pool_mb: int | None = None  # None: sized from the store and the machine (store.db.auto_pool_mb)
    extension_repo: str | None = None
    vector_index_min_keys: int = 200_000
    max_content_chars: int = 100_000
    max_keys: int = 32
    http_token_file: Path | None = None
    http_max_body_bytes: int = 4 * 1024 * 1024
    http_timeout_s: float = 120.0
    http_max_concurrent: int = 32
    daemon: Literal["auto", "off"] = "auto"
    log_level: str = "INFO"
    fault_kill_before_reply: str | None = None
    # Where each value came from: field -> "env VAR" | "config file PATH" | "default" | "argument".
    sources: Mapping[str, str] = field(default_factory=dict, compare=False, repr=False)
    # The config file load_settings consulted (whether or not it exists); None when built directly.
    config_file: Path | None = field(default=None, compare=False, repr=False)

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
    def token_file(self) -> Path:
        return self.http_token_file or self.data_dir / "tokens.json"

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


def _parse(name: str, var: Var, raw: str, shown: str | None = None) -> Any:
    """``raw`` (the environment's text) -> the value; errors name ``shown`` (default ``VAR='raw'``)."""
    text = raw.strip()
    label = shown or f"{var.env}={echoed(raw)}"
    kind = var.kind
    if kind in ("opt_str", "opt_path", "opt_float", "opt_bool", "opt_choice", "opt_int", "opt_store_url") and text == "":
        return None
    if kind == "opt_store_url":  # never echoed: it may hold a password
        from keymem.engine_url import StoreURLError, parse_store_url

        try:
            parse_store_url(text)
        except StoreURLError as exc:
            raise SettingsError(f"{var.env} {exc}") from None
        return text
    if kind == "opt_int" and text.lower() == "auto":
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
        raise SettingsError(f"{label} is not a boolean (use true or false)")
    if kind in ("choice", "opt_choice"):
        for choice in var.choices:
            if text.lower() == choice.lower():
                return choice
        raise SettingsError(f"{label} must be one of {', '.join(var.choices)}")
    if kind in ("int", "opt_int"):
        try:
            value: float = int(text)
        except ValueError:
            raise SettingsError(f"{label} is not a whole number" + (" or auto" if kind == "opt_int" else "")) from None
    elif kind in ("float", "opt_float"):
        try:
            value = float(text)
        except ValueError:
            raise SettingsError(f"{label} is not a number") from None
        if not math.isfinite(value):
            raise SettingsError(f"{label} must be a finite number")
    else:  # pragma: no cover - a programming error in VARS
        raise AssertionError(kind)
    if var.positive and value <= 0:
        raise SettingsError(f"{label} must be greater than zero")
    if var.minimum is not None and value < var.minimum:
        raise SettingsError(f"{label} must be at least {var.minimum:g}")
    if var.maximum is not None and value > var.maximum:
        raise SettingsError(f"{label} must be at most {var.maximum:g}")
    return value


def config_path(environ: Mapping[str, str] | None = None) -> Path:
    """The config file every keymem process reads: KEYMEM_CONFIG, else $KEYMEM_DATA_DIR/config.toml,
    else ~/.keymem/config.toml (absolute; the file need not exist)."""
    env = os.environ if environ is None else environ
    explicit = env.get(CONFIG_VAR, "").strip()
    if explicit:
        return Path(os.path.abspath(Path(explicit).expanduser()))
    data_dir = env.get(VARS["data_dir"].env, "").strip()
    base = Path(data_dir).expanduser() if data_dir else Path.home() / ".keymem"
    return Path(os.path.abspath(base / CONFIG_NAME))


_BY_ENV = {var.env: name for name, var in VARS.items()}
_BOOL_KINDS = ("bool", "opt_bool")
_NUMBER_KINDS = ("int", "opt_int", "float", "opt_float")


def read_config(path: Path) -> dict[str, tuple[str, str]] | None:
    """The config file's settings as the environment would give them (env name -> (text, the TOML
    line shown in errors)), or None when there is no file. Raises SettingsError naming the file,
    the key and the problem."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise SettingsError(f"{path}: cannot read the config file ({exc.strerror or exc})", path) from None
    try:
        table = tomllib.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise SettingsError(f"{path}: the config file is not UTF-8 text", path) from None
    except tomllib.TOMLDecodeError as exc:
        raise SettingsError(f"{path}: not valid TOML: {exc}", path) from None
    return config_values(table, path)


def config_values(table: Mapping[str, Any], path: Path) -> dict[str, tuple[str, str]]:
    """A parsed config table -> env name -> (text, as shown), checking every key and value's type."""
    out: dict[str, tuple[str, str]] = {}
    for key, value in table.items():
        if key not in _BY_ENV:
            if key == CONFIG_VAR:
                raise SettingsError(f"{path}: {key} cannot be set in the config file (it names the file)", path)
            close = [key.upper()] if key.upper() in _BY_ENV else difflib.get_close_matches(key, list(_BY_ENV), n=1)
            hint = f" (did you mean {close[0]}?)" if close else ""
            raise SettingsError(f"{path}: unknown setting {echoed(key)}{hint}; the keys are the environment variables "
                                "of the README's configuration table", path)
        var = VARS[_BY_ENV[key]]
        if isinstance(value, bool):
            if var.kind not in _BOOL_KINDS:
                raise SettingsError(f"{path}: {key} = {str(value).lower()} is not {_expected(var)}", path)
            out[key] = ("true" if value else "false"), ""
        elif isinstance(value, int | float):
            if var.kind not in _NUMBER_KINDS:
                raise SettingsError(f"{path}: {key} = {value!r} is not {_expected(var)}", path)
            out[key] = repr(value), f"{key} = {value!r}"
        elif isinstance(value, str):
            out[key] = value, f"{key} = {_toml_string(value)}"
        else:
            raise SettingsError(f"{path}: {key} must be {_expected(var)}, not a {_toml_type(value)}", path)
    return out


def _expected(var: Var) -> str:
    if var.kind in _BOOL_KINDS:
        return "true or false"
    if var.kind == "int":
        return "a whole number"
    if var.kind == "opt_int":
        return 'a whole number or "auto"'
    if var.kind in _NUMBER_KINDS:
        return "a number"
    if var.choices:
        return "one of " + ", ".join(f'"{c}"' for c in var.choices)
    return "a string"


def _toml_type(value: Any) -> str:
    if isinstance(value, dict):
        return "table"
    if isinstance(value, list):
        return "list"
    return "date or time"


def format_config(values: Mapping[str, Any], *, header: str = "") -> str:
    """A config file holding ``values`` (env name -> a parsed value, as Settings holds it), in VARS order.

    The writer for :func:`read_config` (``keymem init``): str/path values as TOML strings, numbers
    and booleans bare. Raises SettingsError for a name that is not a setting.
    """
    unknown = [k for k in values if k not in _BY_ENV]
    if unknown:
        raise SettingsError(f"unknown setting {echoed(unknown[0])}")
    lines = [f"# {line}".rstrip() for line in header.splitlines()]
    for var in VARS.values():
        if var.env not in values or values[var.env] is None:
            continue
        value = values[var.env]
        if isinstance(value, bool):
            text = "true" if value else "false"
        elif isinstance(value, int | float):
            text = repr(value)
        else:
            text = _toml_string(str(value))
        lines.append(f"{var.env} = {text}")
    return "\n".join(lines) + "\n"


def _toml_string(text: str) -> str:
    """A TOML basic string: quotes, backslashes and control characters escaped."""
    out = []
    for ch in text:
        if ch in ('"', "\\"):
            out.append("\\" + ch)
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def parse_value(env_name: str, text: str) -> Any:
    """One setting's text (as in the environment) -> its value; SettingsError naming it when bad."""
    return _parse(_BY_ENV[env_name], VARS[_BY_ENV[env_name]], text)


def load_settings(environ: Mapping[str, str] | None = None, **overrides: Any) -> Settings:
    """Read the environment and the config file once. Raises SettingsError naming the first bad value.

    The environment wins over the file, the file over the defaults; ``overrides`` (tests, CLI
    flags) win over everything.
    """
    env = os.environ if environ is None else environ
    path = config_path(env)
    from_file = read_config(path) or {}
    values: dict[str, Any] = {}
    sources: dict[str, str] = {}
    for name, var in VARS.items():
        in_file: Any = None
        if var.env in from_file:  # checked even where the environment overrides it: a bad file is a bad file
            try:
                in_file = _parse(name, var, *from_file[var.env])
            except SettingsError as exc:
                raise SettingsError(f"{path}: {exc}", path) from None
        if var.env in env:
            values[name] = _parse(name, var, env[var.env])
            sources[name] = f"env {var.env}"
        elif var.env in from_file:
            values[name] = in_file
            sources[name] = f"config file {path}"
        else:
            sources[name] = "default"
    for name, value in overrides.items():
        values[name] = value
        sources[name] = "argument"
    return Settings(**values, sources=sources, config_file=path)


def env_names() -> list[str]:
    """Every variable keymem reads (the test fixture clears these)."""
    return [v.env for v in VARS.values()] + [CONFIG_VAR, "CLAUDE_CODE_SESSION_ID", "CODEX_THREAD_ID"]


# The settings the shared daemon computes with (embedding, reranking, key thresholds, recall, decay,
# limits): a client's own values of these are not used once a daemon runs, so a client whose values
# differ from the daemon's is told (keymem/server/client.py, setting_differences). The others are the
# client's own (threads, the hook, HTTP, logging) or fix which daemon it reaches (the data dir).
DAEMON_SETTINGS = (
    "embedding_backend", "local_embedding_model", "local_embedding_model_path", "local_embedding_model_file",
    "openai_embedding_model", "openai_base_url", "rerank", "rerank_model_path", "rerank_pool", "rerank_min_score",
    "key_recall", "key_merge", "key_autolink", "short_key_merge", "key_hub_min_links", "autokey",
    "autokey_promote_n", "autokey_confirm_floor", "autokey_max_aliases", "autokey_prune_age",
    "decay_transient_days", "decay_standard_days", "decay_stable_days", "cleanup_interval_ms", "recall_hops",
    "task_evidence_selection", "inject_min_association", "inject_max", "vector_index_min_keys",
    "max_content_chars", "max_keys",
)
