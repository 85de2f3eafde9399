"""Tool argument errors as one line an agent can act on.

The MCP SDK validates a call's arguments with the tool's pydantic model and reports the raw
pydantic text (several lines, type codes, an errors.pydantic.dev link). :func:`describe`
turns the same errors into ``recall: argument 'top_k' must be an integer from 1 to 50 (got
500)``: which argument (a path such as ``items[1].content`` inside lists and objects), what
was wrong with it, and what is allowed, read from the tool's JSON input schema (the one the
agent saw in ``tools/list``). :func:`unknown_arguments` names arguments the tool does not
have, which pydantic would drop silently; :func:`strings_for_scalars` refuses ``"5"`` for an
integer as ``"five"`` is refused (pydantic would convert it silently).
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import ValidationError

from keymem.errors import shown

MAX_PROBLEMS = 3  # per message; the rest are counted
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def describe(tool: str, error: ValidationError, arguments: Mapping[str, Any], schema: Mapping[str, Any]) -> str:
    """One line for every problem pydantic found in ``arguments`` of ``tool``."""
    return join(tool, problems(error, arguments, schema))


def join(tool: str, items: Sequence[str]) -> str:
    shown = list(dict.fromkeys(items))
    more = len(shown) - MAX_PROBLEMS
    text = "; ".join(shown[:MAX_PROBLEMS]) + (f"; and {more} more" if more > 0 else "")
    return f"{tool}: {text}" if text else f"{tool}: the arguments are not valid"


def unknown_arguments(arguments: Mapping[str, Any], schema: Mapping[str, Any]) -> list[str]:
    """A problem line for each top-level argument the schema does not define."""
    allowed = list(schema.get("properties", {}))
    out = []
    for name in arguments:
        if name in allowed:
            continue
        close = difflib.get_close_matches(name, allowed, n=1)
        hint = f" (did you mean '{close[0]}'?)" if close else ""
        out.append(f"unknown argument {shown(name)}{hint}; the arguments are {', '.join(allowed)}")
    return out


def strings_for_scalars(arguments: Mapping[str, Any], schema: Mapping[str, Any]) -> list[str]:
    """A problem line for each string given where the schema allows only numbers or booleans.

    Pydantic's lax mode turns ``"5"`` into 5 and ``"true"`` into True while it refuses ``"five"``;
    keymem refuses every string there, with the same line as for ``"five"``.
    """
    out: list[str] = []

    def visit(value: Any, node: Mapping[str, Any], path: tuple[Any, ...]) -> None:
        branches = _branches(node, schema)
        if isinstance(value, str):
            kinds = {b.get("type") for b in branches}
            if kinds and kinds <= {"integer", "number", "boolean"}:
                out.append(f"argument '{_walk(schema, path)[1]}' must be {_allowed(node, schema)} (got {_got(value)})")
            return
        for branch in branches:
            if isinstance(value, Mapping) and (branch.get("properties") or branch.get("additionalProperties")):
                props, extra = branch.get("properties", {}), branch.get("additionalProperties")
                for k, v in value.items():
                    sub = props.get(k, extra if isinstance(extra, Mapping) else None)
                    if isinstance(sub, Mapping):
                        visit(v, sub, (*path, k))
                return
            if isinstance(value, list) and branch.get("type") == "array" and isinstance(branch.get("items"), Mapping):
                for i, v in enumerate(value):
                    visit(v, branch["items"], (*path, i))
                return

    visit(arguments, schema, ())
    return out


def problems(error: ValidationError, arguments: Mapping[str, Any], schema: Mapping[str, Any]) -> list[str]:
    found: dict[tuple[Any, ...], Mapping[str, Any]] = {}
    for err in error.errors(include_url=False):
        path = _real_path(err["loc"], err["type"], arguments)
        found.setdefault(path, err)  # union branches report one path several times: keep one
    # A union reports every branch; the branch that got deeper (key_types[0] when key_types
    # is a list) is the one the agent meant, so a path that prefixes another one is dropped.
    paths = [p for p in found if not any(len(q) > len(p) and q[: len(p)] == p for q in found)]
    return [_problem(path, found[path], schema) for path in paths]


def _real_path(loc: Sequence[Any], kind: str, arguments: Mapping[str, Any]) -> tuple[Any, ...]:
    """``loc`` without pydantic's union tags (e.g. "list[literal['concept',...]]"): only names and indexes."""
    path: list[Any] = []
    here: Any = arguments
    for i, part in enumerate(loc):
        last = i == len(loc) - 1
        in_list = isinstance(part, int) and isinstance(here, list) and 0 <= part < len(here)
        if in_list or (isinstance(part, str) and isinstance(here, Mapping) and part in here):
            path.append(part)
            here = here[part]
        elif last and kind in ("missing", "extra_forbidden"):
            path.append(part)
        # anything else is a tag naming a union branch: not part of the agent's arguments
    return tuple(path)


def _problem(path: tuple[Any, ...], err: Mapping[str, Any], schema: Mapping[str, Any]) -> str:
    sub, name = _walk(schema, path)
    kind = err["type"]
    if kind == "extra_forbidden":
        parent, parent_name = _walk(schema, path[:-1])
        fields = list(parent.get("properties", {})) if parent else []
        where = f"'{parent_name}' has" if len(path) > 1 else "the call has"
        listed = f"; its fields are {', '.join(fields)}" if fields else ""
        return f"{where} an unknown field {shown(path[-1])}{listed}"
    allowed = _allowed(sub, schema) if sub is not None else None
    if kind == "missing":
        return f"missing required argument '{name}'" + (f" ({allowed})" if allowed else "")
    if not path:
        return f"the arguments must be {allowed or 'an object'} (got {_got(err.get('input'))})"
    if allowed is None:  # a path the schema cannot follow: pydantic's own words, shortened
        return f"argument '{name}': {str(err.get('msg', 'not valid')).rstrip('.')}"
    return f"argument '{name}' must be {allowed} (got {_got(err.get('input'))})"


def _resolve(node: Mapping[str, Any], root: Mapping[str, Any]) -> Mapping[str, Any]:
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        target = root.get("$defs", {}).get(ref.removeprefix("#/$defs/"))
        if isinstance(target, Mapping):
            return {**target, **{k: v for k, v in node.items() if k != "$ref"}}
    return node


def _branches(node: Mapping[str, Any], root: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The alternatives of a node (anyOf / oneOf), without null: an optional argument may be omitted."""
    node = _resolve(node, root)
    alts = node.get("anyOf") or node.get("oneOf")
    if not alts:
        return [node]
    out = [_resolve(a, root) for a in alts if isinstance(a, Mapping)]
    return [a for a in out if a.get("type") != "null"] or out


def _walk(root: Mapping[str, Any], path: Sequence[Any]) -> tuple[Mapping[str, Any] | None, str]:
    """The schema node at ``path`` (None when the schema cannot follow it) and the path as text.

    The text reads like the JSON the agent wrote: ``items[1].content`` for a field of an
    object in a list, ``key_types["Guido"]`` for an entry of a map.
    """
    node: Mapping[str, Any] | None = root
    text = ""
    for part in path:
        nxt, as_field = None, False
        for branch in _branches(node, root) if node is not None else []:
            if isinstance(part, int) and branch.get("type") == "array" and isinstance(branch.get("items"), Mapping):
                nxt = branch["items"]
            elif isinstance(part, str) and part in branch.get("properties", {}):
                nxt, as_field = branch["properties"][part], True
            elif isinstance(part, str) and isinstance(branch.get("additionalProperties"), Mapping):
                nxt = branch["additionalProperties"]
            if nxt is not None:
                break
        if isinstance(part, int):
            text += f"[{part}]"
        elif (as_field or nxt is None) and isinstance(part, str) and _IDENT.fullmatch(part):
            text += f".{part}" if text else part
        else:
            text += f"[{shown(part, as_json=True)}]"
        node = nxt
    return (_resolve(node, root) if node is not None else None), text


def _allowed(node: Mapping[str, Any], root: Mapping[str, Any]) -> str:
    """What a JSON-schema node accepts, in words ("an integer from 1 to 50")."""
    parts = [_one(b, root) for b in _branches(node, root)]
    return " or ".join(dict.fromkeys(parts))


def _one(node: Mapping[str, Any], root: Mapping[str, Any]) -> str:
    if "enum" in node:
        return "one of " + ", ".join(_quote(v) for v in node["enum"])
    if "const" in node:
        return _quote(node["const"])
    kind = node.get("type")
    if kind == "string":
        return "a string" + _span(node.get("minLength"), node.get("maxLength"), "character")
    if kind in ("integer", "number"):
        return ("an integer" if kind == "integer" else "a number") + _bounds(node)
    if kind == "boolean":
        return "true or false"
    if kind == "array":
        text = "a list" + _span(node.get("minItems"), node.get("maxItems"), "item")
        items = node.get("items")
        if isinstance(items, Mapping):
            text += ", each " + _allowed(items, root)
        return text
    if kind == "object":
        props = node.get("properties")
        if props:
            required = [p for p in props if p in node.get("required", [])]
            optional = [p for p in props if p not in required]
            text = "an object with " + (_and(required) if required else "no required field")
            return text + (f" (optional: {', '.join(optional)})" if optional else "")
        extra = node.get("additionalProperties")
        if isinstance(extra, Mapping):
            return "an object mapping each name to " + _allowed(extra, root)
        return "an object"
    if kind == "null":
        return "null"
    return "a valid value"


def _and(names: Sequence[str]) -> str:
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def _span(low: Any, high: Any, unit: str) -> str:
    def n(count: Any) -> str:
        return f"{count} {unit}" + ("" if count == 1 else "s")

    if low is not None and high is not None:
        return f" of {low} to {n(high)}"
    if low is not None:
        return f" of at least {n(low)}"
    if high is not None:
        return f" of at most {n(high)}"
    return ""


def _bounds(node: Mapping[str, Any]) -> str:
    low, high = node.get("minimum"), node.get("maximum")
    xlow, xhigh = node.get("exclusiveMinimum"), node.get("exclusiveMaximum")
    if low is not None and high is not None:
        return f" from {_num(low)} to {_num(high)}"
    words = []
    if low is not None:
        words.append(f"at least {_num(low)}")
    if xlow is not None:
        words.append(f"greater than {_num(xlow)}")
    if high is not None:
        words.append(f"at most {_num(high)}")
    if xhigh is not None:
        words.append(f"less than {_num(xhigh)}")
    return (" " + " and ".join(words)) if words else ""


def _num(value: Any) -> str:
    return str(int(value)) if isinstance(value, float) and value.is_integer() else str(value)


def _quote(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def _got(value: Any) -> str:
    """The rejected value, short: the agent's own data is echoed only as much as helps."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return _num(value)
    if isinstance(value, str):
        return shown(value, as_json=True) if value else "an empty string"
    if isinstance(value, list | tuple):
        return "an empty list" if not value else f"a list of {len(value)} item" + ("" if len(value) == 1 else "s")
    if isinstance(value, Mapping):
        return "an empty object" if not value else "an object"
    return type(value).__name__
