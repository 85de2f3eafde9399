"""Argument checks shared by every write and read: bad input is refused before anything is written."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

from keymem.decay import DECAY_PROFILES
from keymem.errors import InvalidInput, shown

KEY_TYPES = ("concept", "name", "proper_noun")
DEFAULT_NAMESPACE = "default"
MAX_KEY_CHARS = 200
MAX_TTL_SECONDS = 100 * 365 * 86_400

_NAMESPACE = re.compile(r"^[\w.:@/+-]{1,128}$")
_ID = re.compile(r"^[mk]_[0-9a-f]{8,64}$")


def text(value: Any, field: str, *, max_chars: int) -> str:
    """A non-empty string that Kuzu can store verbatim."""
    if not isinstance(value, str):
        raise InvalidInput(f"{field} must be a string, got {type(value).__name__}")
    if not value.strip():
        raise InvalidInput(f"{field} must not be empty")
    if len(value) > max_chars:
        raise InvalidInput(f"{field} is {len(value)} characters; the limit is {max_chars}")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidInput(f"{field} contains an unpaired surrogate code point (invalid Unicode)") from None
    return value


def namespace(value: Any) -> str:
    if value is None:
        return DEFAULT_NAMESPACE
    if not isinstance(value, str) or not _NAMESPACE.match(value):
        raise InvalidInput(
            f"namespace {shown(value)} is invalid: use 1-128 letters, digits or the characters . : @ / + - _"
        )
    return value


def looks_like_id(value: str) -> bool:
    """A keymem id of any kind (``k_``, ``m_`` + hex), as opposed to a key's text."""
    return value[:2] in ("k_", "m_")


def ident(value: Any, field: str, prefix: str) -> str:
    if not isinstance(value, str) or not _ID.match(value) or not value.startswith(prefix):
        raise InvalidInput(f"{field} {shown(value)} is not a keymem id (expected {prefix}_ followed by hex)")
    return value


def key_list(keys: Any, key_types: Any, *, max_keys: int) -> list[tuple[str, str]]:
    """Keys with their types, de-duplicated in order. ``key_types`` is a list or a mapping."""
    if isinstance(keys, str) or not isinstance(keys, Sequence):
        raise InvalidInput("keys must be a list of strings")
    if not keys:
        raise InvalidInput("keys must hold at least one key: a memory cannot be stored without keys")
    if len(keys) > max_keys:
        raise InvalidInput(f"{len(keys)} keys given; the limit is {max_keys} per memory")
    types: list[str]
    if key_types is None:
        types = ["concept"] * len(keys)
    elif isinstance(key_types, Mapping):
        unknown = [k for k in key_types if k not in keys]
        if unknown:
            raise InvalidInput(f"key_types names keys that are not in keys: {shown(unknown[:3])}")
        types = [key_types.get(k, "concept") for k in keys]
    elif isinstance(key_types, Sequence) and not isinstance(key_types, str):
        if len(key_types) != len(keys):
            raise InvalidInput(f"key_types has {len(key_types)} entries for {len(keys)} keys")
        types = list(key_types)
    else:
        raise InvalidInput("key_types must be a list aligned with keys or a mapping key -> type")
    out: list[tuple[str, str]] = []
    seen: set[str] = set()
    for k, t in zip(keys, types, strict=True):
        k = text(k, "key", max_chars=MAX_KEY_CHARS).strip()
        if t not in KEY_TYPES:
            raise InvalidInput(f"key type {shown(t)} for key {shown(k)} must be one of {', '.join(KEY_TYPES)}")
        if k.casefold() in seen:
            continue
        seen.add(k.casefold())
        out.append((k, t))
    return out


def decay_profile(value: Any, default: str = "standard") -> str:
    if value is None:
        return default
    if value not in DECAY_PROFILES:
        raise InvalidInput(f"decay_profile {shown(value)} must be one of {', '.join(DECAY_PROFILES)}")
    return str(value)


def ttl(value: Any) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InvalidInput(f"ttl_seconds must be a number of seconds, got {type(value).__name__}")
    if not math.isfinite(value) or value <= 0:
        raise InvalidInput(f"ttl_seconds must be a positive finite number, got {value!r}")
    if value > MAX_TTL_SECONDS:
        raise InvalidInput(f"ttl_seconds {value!r} is more than 100 years; omit it for no expiry")
    return float(value)


def count(value: Any, field: str, *, default: int, lo: int, hi: int) -> int:
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int):
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        else:
            raise InvalidInput(f"{field} must be a whole number, got {shown(value)}")
    if not lo <= value <= hi:
        raise InvalidInput(f"{field} must be between {lo} and {hi}, got {value}")
    return int(value)


def id_list(value: Any, field: str, prefix: str, *, limit: int = 32) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str) or not isinstance(value, Sequence):
        raise InvalidInput(f"{field} must be a list of ids")
    if len(value) > limit:
        raise InvalidInput(f"{field} holds {len(value)} ids; the limit is {limit}")
    return list(dict.fromkeys(ident(v, field, prefix) for v in value))


def source(value: Any, field: str = "source", *, max_chars: int = 4000) -> str | dict[str, Any] | None:
    """A provenance value (a string or a JSON object) that Kuzu can store: valid Unicode, JSON, bounded.

    A lone surrogate or a non-JSON value (NaN, bytes, an object) is refused here; passed through, it
    makes Kuzu fail inside the write transaction with an internal error.
    """
    if value is None:
        return None
    if not isinstance(value, str | dict):
        raise InvalidInput(f"{field} must be a string or an object")
    try:
        encoded = json.dumps(value, ensure_ascii=False, allow_nan=False)
        encoded.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidInput(f"{field} contains an unpaired surrogate code point (invalid Unicode)") from None
    except (TypeError, ValueError) as exc:
        raise InvalidInput(f"{field} is not plain JSON ({type(exc).__name__})") from None
    if len(encoded) > max_chars:
        raise InvalidInput(f"{field} is {len(encoded)} characters as JSON; the limit is {max_chars}")
    return value
