"""``keymem cypher``: a Cypher console on the store (interactive, ``-c`` one shot, ``-f`` script).

Read-only by default: each statement runs inside a LadybugDB read-only transaction (the engine
refuses CREATE/SET/DELETE/MERGE/DROP/ALTER/COPY FROM there), and statements that write files or
change the session (COPY ... TO, EXPORT, ATTACH, INSTALL, ...) are refused before they run.
``--write`` / ``:write on`` runs statements as they are, holding keymem's writer; such edits
bypass keymem's invariants (key vectors, the BM25 index, version chains).

A script (``-c``, ``-f`` or piped stdin) is read line by line as the interactive console reads
it (:class:`ScriptReader`): a ``:`` command is one line, a statement ends with ``;``. It stops
at the first error (exit 1) unless ``--continue``.

Uses GNU readline (stdlib) for editing, persistent history and completion.
"""

from __future__ import annotations

import contextlib
import csv
import io
import json
import shutil
import sys
import unicodedata
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NamedTuple

import typer

from keymem.cli.common import Target, fail, settings_or_exit

if TYPE_CHECKING:
    from keymem.settings import Settings

FORMATS = ("table", "json", "csv")
HISTORY_FILE = "cypher_history"
WRITE_WARNING = (
    "warning: write mode - statements change the store directly and bypass keymem's invariants "
    "(key vectors, the BM25 index, version chains, name lookups). Run `keymem doctor --check` afterwards; "
    "through the daemon, restart it (`keymem daemon --stop`) so its caches reload."
)
KEYWORDS = (
    "MATCH", "OPTIONAL", "WHERE", "RETURN", "WITH", "UNWIND", "ORDER", "BY", "LIMIT", "SKIP", "DISTINCT", "AS",
    "AND", "OR", "NOT", "XOR", "IN", "IS", "NULL", "TRUE", "FALSE", "CASE", "WHEN", "THEN", "ELSE", "END",
    "CALL", "YIELD", "UNION", "ALL", "EXISTS", "COUNT", "ASC", "DESC", "STARTS", "ENDS", "CONTAINS",
    "CREATE", "MERGE", "SET", "DELETE", "DETACH", "REMOVE", "DROP", "ALTER", "COPY", "EXPLAIN", "PROFILE",
)
META_HELP = """\
Statements end with ';' and may span several lines. Commands:
  :tables            node and rel tables
  :schema [TABLE]    tables with their properties (and a rel's endpoints)
  :explain QUERY     LadybugDB's plan for QUERY
  :expand ID [HOPS]  the neighbourhood the association walk reads from a memory or key id
                     (default 2 hops): hop, from, via key, to (memories by their first
                     words), the id reached, link weights, association mass
  :format table|json|csv
  :write on|off      allow statements that change the store (bypasses keymem's invariants)
  :timing on|off     show the time of each statement
  :help              this text
  :quit              leave (or Ctrl-D)"""


# -- statements -----------------------------------------------------------------------------------


def split_statements(text: str) -> tuple[list[tuple[str, int]], str]:
    """Complete statements (each with its 1-based start line) and the unfinished rest.

    ``;`` inside strings, backquoted names and comments does not end a statement.
    """
    out: list[tuple[str, int]] = []
    start, line, start_line = 0, 1, 1
    i, n = 0, len(text)
    quote: str | None = None
    while i < n:
        ch = text[i]
        if quote:
            if ch == "\\" and quote != "`":
                i += 2
                continue
            if ch == quote:
                quote = None
        elif ch in "'\"`":
            quote = ch
        elif text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
            continue
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            line += text.count("\n", i, n if j < 0 else j)
            i = n if j < 0 else j + 2
            continue
        elif ch == ";":
            stmt = text[start:i].strip()
            if _has_code(stmt):
                out.append((stmt, start_line + _leading_lines(text[start:i])))
            start, start_line = i + 1, line
        if ch == "\n":
            line += 1
        i += 1
    return out, text[start:]


class Step(NamedTuple):
    """One thing a console does: a ``:`` command or a Cypher statement, with its 1-based line."""

    kind: str  # "command" or "statement"
    text: str
    line: int


class ScriptReader:
    """Turns lines into steps exactly as the interactive console reads them.

    A line starting with ``:`` is a command when no statement is under way (only blanks or
    comments so far); every other line adds to the statement, which ends at ``;`` outside
    strings, backquoted names and comments.
    """

    def __init__(self) -> None:
        self.buffer: list[str] = []
        self.first_line = 1  # the line of buffer[0]

    @property
    def pending(self) -> bool:
        """A statement has started and not ended (the console shows its continuation prompt)."""
        return bool(self.buffer)

    def reset(self) -> None:
        self.buffer = []

    def feed(self, line: str, number: int) -> list[Step]:
        """The steps ``line`` (line ``number``) completes."""
        if not self._under_way():
            if line.strip().startswith(":"):
                self.buffer = []
                return [Step("command", line.strip(), number)]
            if not self.buffer and not line.strip():
                return []
        if not self.buffer:
            self.first_line = number
        self.buffer.append(line)
        stmts, rest = split_statements("\n".join(self.buffer))
        if not stmts:
            return []
        steps = [Step("statement", text, self.first_line + at - 1) for text, at in stmts]
        self.buffer, self.first_line = ([rest] if rest.strip() else []), number
        return steps

    def finish(self) -> list[Step]:
        """At the end of the input: the last statement, which may lack its ``;``."""
        text, self.buffer = "\n".join(self.buffer), []
        if not _has_code(text):
            return []
        return [Step("statement", text.strip(), self.first_line + _leading_lines(text))]

    def _under_way(self) -> bool:
        text = "\n".join(self.buffer)
        return _has_code(text) or _open_block_comment(text)


def read_script(text: str) -> list[Step]:
    """Every step of a script, in order."""
    reader = ScriptReader()
    steps: list[Step] = []
    for number, line in enumerate(text.split("\n"), start=1):
        steps += reader.feed(line, number)
    return steps + reader.finish()


def _open_block_comment(text: str) -> bool:
    """True when ``text`` (comments and blanks only) ends inside a ``/* ...`` comment."""
    i, n = 0, len(text)
    while i < n:
        if text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            if j < 0:
                return True
            i = j + 2
        else:
            i += 1
    return False


def _leading_lines(chunk: str) -> int:
    """Lines before the first non-blank character (so a statement's line is where it starts)."""
    stripped = chunk.lstrip()
    return chunk[: len(chunk) - len(stripped)].count("\n")


def _has_code(text: str) -> bool:
    """False for text that holds only whitespace and comments."""
    return bool(_strip_comments(text).strip())


def _strip_comments(text: str) -> str:
    out = []
    i, n = 0, len(text)
    while i < n:
        if text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
            continue
        if text.startswith("/*", i):
            j = text.find("*/", i + 2)
            i = n if j < 0 else j + 2
            continue
        out.append(text[i])
        i += 1
    return "".join(out)


# -- rendering ----------------------------------------------------------------------------------


def cell_text(value: Any) -> str:
    """One value as compact text: nodes as (:Label {..}), rels as [:LABEL {..}]."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return value.replace("\r", "").replace("\n", "\\n")
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, dict):
        props = ", ".join(f"{k}: {_inner(v)}" for k, v in value.items()
                          if not k.startswith("_") and v is not None)
        if "_label" in value and "_src" in value:
            return f"[:{value['_label']} {{{props}}}]"
        if "_label" in value:
            return f"(:{value['_label']} {{{props}}})"
        return "{" + props + "}"
    if isinstance(value, list):
        return "[" + ", ".join(_inner(v) for v in value) + "]"
    return str(value)


def _inner(value: Any) -> str:
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, float):
        return f"{value:.6g}"
    return cell_text(value)


def disp_width(text: str) -> int:
    """Terminal columns taken by ``text`` (CJK wide characters count two)."""
    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 0 if unicodedata.combining(c) else 1 for c in text)


def fit(text: str, width: int) -> str:
    """``text`` cut to ``width`` columns (with an ellipsis) and padded to exactly ``width``."""
    if disp_width(text) > width:
        out, used = [], 0
        for c in text:
            w = disp_width(c)
            if used + w > width - 1:
                break
            out.append(c)
            used += w
        text = "".join(out) + "…"
    return text + " " * (width - disp_width(text))


def render_table(columns: list[str], rows: list[list[Any]], width: int) -> str:
    """A box table that fits ``width`` columns: the widest columns shrink first."""
    if not columns:
        return ""
    cells = [[cell_text(v) for v in row] for row in rows]
    widths = [max([disp_width(c)] + [disp_width(r[i]) for r in cells]) for i, c in enumerate(columns)]
    widths = [max(1, w) for w in widths]
    frame = 3 * len(columns) + 1
    while sum(widths) + frame > width and max(widths) > 3:
        widest = widths.index(max(widths))
        widths[widest] -= 1
    sep = "+" + "+".join("-" * (w + 2) for w in widths) + "+"
    lines = [sep, "| " + " | ".join(fit(c, w) for c, w in zip(columns, widths, strict=True)) + " |", sep]
    for r in cells:
        lines.append("| " + " | ".join(fit(c, w) for c, w in zip(r, widths, strict=True)) + " |")
    lines.append(sep)
    return "\n".join(lines)


def render(result: dict[str, Any], fmt: str, width: int) -> str:
    columns, rows = result["columns"], result["rows"]
    if fmt == "json":
        return json.dumps([dict(zip(columns, r, strict=True)) for r in rows], ensure_ascii=False)
    if fmt == "csv":
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        w.writerow(columns)
        for r in rows:
            w.writerow([v if isinstance(v, str) else "" if v is None else
                        json.dumps(v, ensure_ascii=False) if isinstance(v, dict | list) else cell_text(v) for v in r])
        return buf.getvalue().rstrip("\n")
    return render_table(columns, rows, width)


# -- the session --------------------------------------------------------------------------------


class Console:
    """State shared by the one-shot, script and interactive modes."""

    def __init__(self, target: Target, *, fmt: str, write: bool, timing: bool) -> None:
        self.target = target
        self.fmt = fmt
        self.write = write
        self.timing = timing
        self.schema: dict[str, Any] | None = None
        self.errors = 0  # statements and commands that failed
        self.place = ""  # where the current command comes from, in a script ("q.cypher line 3")

    def error(self, message: str) -> None:
        """Print a failed command's one line on stderr, and count it."""
        self.errors += 1
        typer.echo(f"{self.place}: {message}" if self.place else message, err=True)

    def width(self) -> int:
        return max(20, shutil.get_terminal_size((100, 24)).columns)

    def run(self, query: str, *, where: str = "") -> bool:
        """Run one statement and print its result (stdout) or its error (stderr); False on error."""
        from keymem.errors import KeymemError

        try:
            result = self.target.request("cypher_run", {"query": query, "write": self.write})
        except KeymemError as exc:
            self.errors += 1
            typer.echo(f"Error{where}: {exc}", err=True)
            return False
        if result["columns"] == ["explain result"] and self.fmt == "table":  # the engine's plan is drawn already
            typer.echo("\n".join(str(r[0]) for r in result["rows"]))
            return True
        self.show(result)
        return True

    def expand(self, arg: str) -> None:
        """``:expand ID [HOPS]``: the association walk's neighbourhood, read in Cypher (ops.cypher_expand)."""
        parts = arg.split()
        if not parts or len(parts) > 2 or (len(parts) == 2 and not parts[1].isdigit()):
            self.error("usage: :expand <memory id or key id> [hops]")
            return
        params: dict[str, Any] = {"id": parts[0]}
        if len(parts) == 2:
            params["hops"] = int(parts[1])
        result = self.target.request("cypher_expand", params)
        if self.fmt == "table":  # for reading: memories by their first words, keys by name, the id to go on with
            keep = {"hop": "hop", "from_text": "from", "via": "via", "to_text": "to", "to": "to_id", "w_from": "w_from",
                    "w_to": "w_to", "mass": "mass"}
            at = [result["columns"].index(c) for c in keep]
            result = {**result, "columns": list(keep.values()), "rows": [[r[i] for i in at] for r in result["rows"]]}
        self.show(result)

    def show(self, result: dict[str, Any]) -> None:
        text = render(result, self.fmt, self.width())
        if text:
            typer.echo(text)
        if self.fmt == "table" or self.timing:
            n = len(result["rows"])
            more = f" (first {n} shown)" if result["truncated"] else ""
            timing = f", {result['ms']:.1f} ms" if self.timing else ""
            typer.echo(f"({n} row{'s' if n != 1 else ''}{more}{timing})", err=self.fmt != "table")

    def load_schema(self) -> dict[str, Any]:
        if self.schema is None:
            self.schema = self.target.request("cypher_schema", {})
        return self.schema

    def step(self, step: Step) -> bool:
        """Run one step of the interactive console; False means leave it."""
        if step.kind == "command":
            return self.meta(step.text)
        self.run(step.text)
        return True

    def meta(self, line: str) -> bool:
        """Handle a ``:command``; False means leave the console."""
        from keymem.errors import KeymemError, shown

        cmd, _, arg = line[1:].strip().partition(" ")
        cmd, arg = cmd.lower(), arg.strip()
        try:
            if cmd in ("q", "quit", "exit"):
                return False
            if cmd == "help":
                typer.echo(META_HELP)
            elif cmd == "tables":
                tables = self.load_schema()["tables"]
                rows = [[t["name"], t["type"], len(t["properties"])] for t in tables]
                typer.echo(render_table(["table", "type", "properties"], rows, self.width()))
                self.notes()
            elif cmd == "schema":
                self.schema = None  # a :write session may have changed it
                typer.echo(self.schema_text(arg))
                self.notes()
            elif cmd == "explain":
                if not arg:
                    self.error("usage: :explain QUERY")
                else:
                    self.run("EXPLAIN " + arg.rstrip().rstrip(";"), where=f" ({self.place})" if self.place else "")
            elif cmd == "expand":
                self.expand(arg)
            elif cmd == "format":
                if arg not in FORMATS:
                    self.error(f"usage: :format {'|'.join(FORMATS)}")
                else:
                    self.fmt = arg
            elif cmd == "write":
                if arg not in ("on", "off"):
                    self.error("usage: :write on|off")
                else:
                    self.write = arg == "on"
                    self.target.reopen(write=self.write)
                    typer.echo(WRITE_WARNING if self.write else "read-only mode", err=True)
            elif cmd == "timing":
                if arg not in ("", "on", "off"):
                    self.error("usage: :timing on|off")
                else:
                    self.timing = arg != "off"
            else:
                self.error(f"unknown command :{shown(cmd, quoted=False)} (try :help)")
        except KeymemError as exc:
            self.error(f"Error: {exc}")
        return True

    def notes(self) -> None:
        """One line each for what the engine cannot list (FalkorDB: declared columns, functions)."""
        for note in self.load_schema().get("notes", []):
            typer.echo(f"note: {note}", err=True)

    def schema_text(self, only: str = "") -> str:
        from keymem.errors import shown

        lines = []
        for t in self.load_schema()["tables"]:
            if only and t["name"].lower() != only.lower():
                continue
            head = f"{t['type']} {t['name']}"
            if t.get("connections"):
                head += "  " + ", ".join(f"({a})->({b})" for a, b in t["connections"])
            lines.append(head)
            for p in t["properties"]:
                lines.append(f"    {p['name']:<22} {p['type']}{'  PRIMARY KEY' if p['pk'] else ''}")
        return "\n".join(lines) if lines else f"no table named {shown(only)}"

    def words(self) -> list[str]:
        """Completion candidates: keywords, tables, properties, functions, commands."""
        try:
            schema = self.load_schema()
        except Exception:  # completion must never break the console
            schema = {"tables": [], "functions": []}
        words = set(KEYWORDS)
        for t in schema["tables"]:
            words.add(t["name"])
            words.update(p["name"] for p in t["properties"])
        words.update(schema.get("functions", []))
        return sorted(words)


# -- interactive ---------------------------------------------------------------------------------


class Completer:
    """readline completer over the console's words.

    Names match case-sensitively (readline replaces the word with the candidates' common
    prefix, so mixed-case candidates would erase it); keywords and functions also match
    when typed in lower case, and are then offered in lower case.
    """

    COMMANDS = (":tables", ":schema", ":explain", ":expand", ":format", ":write", ":timing", ":help", ":quit")

    def __init__(self, words: list[str]) -> None:
        self.words = words
        self.matches: list[str] = []

    def __call__(self, text: str, state: int) -> str | None:
        if state == 0:
            self.matches = self.candidates(text)
        return self.matches[state] if state < len(self.matches) else None

    def candidates(self, text: str) -> list[str]:
        if text.startswith(":"):
            return [c for c in self.COMMANDS if c.startswith(text.lower())]
        head, sep, part = text.rpartition(":")
        head, part = (head + sep, part) if sep else ("", text)
        out = []
        for w in self.words:
            if w.startswith(part):
                out.append(head + w)
            elif w.isupper() and part.islower() and w.lower().startswith(part):  # keywords, functions
                out.append(head + w.lower())
        return sorted(set(out))


def interactive(console: Console, settings: Settings) -> int:
    """The read-eval-print loop: multi-line statements ending in ';', history, completion."""
    try:
        import readline
    except ImportError:  # pragma: no cover - Windows without pyreadline
        readline = None  # type: ignore[assignment]
    history = settings.data_dir / HISTORY_FILE
    if readline is not None:
        readline.set_completer(Completer(console.words()))
        readline.set_completer_delims(" \t\n()[]{},.;=<>+-*/'\"`|")
        readline.parse_and_bind("tab: complete")
        readline.set_history_length(2000)
        if history.exists():
            with contextlib.suppress(OSError):
                readline.read_history_file(str(history))
    mode = "read-write" if console.write else "read-only"
    typer.echo(f"keymem cypher console on {console.target.where()} - {mode}.", err=True)
    typer.echo("End statements with ';'. :help for commands, :quit or Ctrl-D to leave.", err=True)
    reader = ScriptReader()
    number = 0
    try:
        while True:
            prompt = ("keymem[write]> " if console.write else "keymem> ") if not reader.pending else "     ...> "
            try:
                line = input(prompt)
            except EOFError:
                typer.echo("", err=True)
                break
            except KeyboardInterrupt:
                typer.echo("^C", err=True)
                reader.reset()
                continue
            number += 1
            lines = [*reader.buffer, line]
            steps = reader.feed(line, number)
            if readline is not None and len(lines) > 1 and any(s.kind == "statement" for s in steps):
                n = readline.get_current_history_length()  # one history entry per statement
                for _ in range(min(len(lines), n)):
                    readline.remove_history_item(readline.get_current_history_length() - 1)
                readline.add_history(" ".join(x.strip() for x in lines))
            if not all(console.step(s) for s in steps):
                break
    finally:
        if readline is not None:
            try:
                history.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
                readline.write_history_file(str(history))
                history.chmod(0o600)
            except OSError:
                pass
    return 0


def run_script(console: Console, text: str, origin: str, *, keep_going: bool = False) -> int:
    """Run a script's commands and statements as the console would; 1 at the first error (or, with
    ``keep_going``, after the last step if any failed). Errors name the statement and line."""
    steps = read_script(text)
    statements = sum(1 for s in steps if s.kind == "statement")
    named = len(steps) > 1 or origin != "-c"
    number = 0
    for step in steps:
        before = console.errors
        if step.kind == "command":
            console.place = f"{origin} line {step.line}" if named else ""
            going_on = console.meta(step.text)
        else:
            number += 1
            where = f" in statement {number} ({origin} line {step.line})" if named and statements else ""
            console.run(step.text, where=where)
            going_on = True
        if not going_on or (console.errors > before and not keep_going):
            break
    return 1 if console.errors else 0


def cypher(
    command: Annotated[str | None, typer.Option("-c", "--command", help="Run these statements and exit")] = None,
    file: Annotated[Path | None, typer.Option("-f", "--file", help="Run the statements of a script file and exit",
                                              exists=True, dir_okay=False, readable=True)] = None,
    fmt: Annotated[str, typer.Option("--format", help="Output format: table, json or csv")] = "table",
    write: Annotated[bool, typer.Option("--write", help="Allow statements that change the store "
                                                   "(bypasses keymem's invariants)")] = False,
    timing: Annotated[bool, typer.Option("--timing/--no-timing", help="Show each statement's time")] = True,
    keep_going: Annotated[bool, typer.Option("--continue", help="In a script, go on after a failed statement or "
                                                                "command (exit 1 at the end)")] = False,
) -> None:
    """Cypher console on the store: interactive, or -c/-f. Read-only unless --write."""
    if fmt not in FORMATS:
        raise fail(f"--format must be one of {', '.join(FORMATS)}", code=2)
    settings = settings_or_exit()
    if write:
        typer.echo(WRITE_WARNING, err=True)
    with Target(settings, need="store", write=write) as target:
        console = Console(target, fmt=fmt, write=write, timing=timing)
        if command is not None:
            raise typer.Exit(run_script(console, command, "-c", keep_going=keep_going))
        if file is not None:
            raise typer.Exit(run_script(console, file.read_text(encoding="utf-8"), str(file), keep_going=keep_going))
        if not sys.stdin.isatty():
            raise typer.Exit(run_script(console, sys.stdin.read(), "stdin", keep_going=keep_going))
        raise typer.Exit(interactive(console, settings))
