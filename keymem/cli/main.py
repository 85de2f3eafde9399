"""The ``keymem`` command.

Run bare, it is the MCP stdio server (what ``uvx keymem`` / an MCP client config starts).
Subcommands are Typer commands. Other modules add theirs with one line each at the bottom
(``register("keymem.cli.stats:stats")``); keep their top-level imports light, because every
``keymem ...`` invocation imports them. ``keymem`` (bare) and ``keymem hook`` skip Typer
entirely: both have start-up budgets (2 s to answer ``initialize``; a hook on every prompt).
"""

from __future__ import annotations

import importlib
import sys
from typing import Annotated, Any

import typer


def _flags_show_no_type() -> None:
    """Typer's rich help prints a value type after flags (``--help <bool>``); a flag takes no value.

    Typer's plain-text help already leaves it out for flags and counters; this makes the rich
    help (the one users see) do the same. Typer versions without the method need nothing.
    """
    from typer.core import TyperOption

    shown = getattr(TyperOption, "display_type_rich", None)
    if shown is None or getattr(shown, "keymem_flags", False):
        return

    def display_type_rich(self: Any, ctx: Any) -> Any:
        if self.is_flag or self.count:
            return None
        return shown(self, ctx)

    display_type_rich.keymem_flags = True  # type: ignore[attr-defined]
    TyperOption.display_type_rich = display_type_rich  # type: ignore[method-assign]


def _arguments_read_as_names() -> None:
    """Usage lines name arguments as docs/cli.md does (``FILE``, ``[NAME]``), not Typer's ``{file}``."""
    from typer.core import TyperArgument

    shown = getattr(TyperArgument, "_usage_display_name", None)
    if shown is None or getattr(shown, "keymem_names", False):
        return

    def usage_name(self: Any) -> str:
        name = (self.metavar or self.name or "").upper()
        name = name if self.required else f"[{name}]"
        return name + ("..." if self.nargs != 1 else "")

    def error_hint(self: Any) -> str:  # "missing argument 'FILE'", as the usage line names it
        return f"'{(self.metavar or self.name or '').upper()}'"

    usage_name.keymem_names = True  # type: ignore[attr-defined]
    TyperArgument._usage_display_name = usage_name  # type: ignore[method-assign]
    TyperArgument.get_error_hint = error_hint  # type: ignore[method-assign]


_flags_show_no_type()
_arguments_read_as_names()

app = typer.Typer(
    name="keymem",
    help="Associative memory for LLM agents. Run bare to serve MCP over stdio.",
    add_completion=False,
    invoke_without_command=True,
    no_args_is_help=False,
)


def _print_version(value: bool) -> None:
    if value:
        from keymem import __version__

        typer.echo(f"keymem {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    ctx: typer.Context,
    version: Annotated[bool, typer.Option("--version", help="Print the version and exit", is_eager=True,
                                          callback=_print_version)] = False,
) -> None:
    """Associative memory for LLM agents. Without a subcommand: the MCP stdio server."""
    if ctx.invoked_subcommand is None:
        raise typer.Exit(_serve())


@app.command()
def daemon(
    status: Annotated[bool, typer.Option("--status", help="Show whether the shared daemon runs, and its state")] = False,
    stop: Annotated[bool, typer.Option("--stop", help="Ask the shared daemon to stop")] = False,
    foreground: Annotated[bool, typer.Option("--foreground", help="Run the daemon in this terminal")] = False,
    idle_exit: Annotated[
        float, typer.Option("--idle-exit", help="Seconds without clients before the daemon exits (0 = never)")
    ] = 900.0,
) -> None:
    """The shared daemon that owns the store: start it detached (default), or --status / --stop / --foreground."""
    from keymem.server.daemon_cli import daemon_command

    raise typer.Exit(daemon_command(status=status, stop=stop, foreground=foreground, idle_exit=idle_exit))


@app.command()
def hook(
    remote: Annotated[bool, typer.Option("--remote", help="Ask only the server of KEYMEM_HOOK_URL, never the local "
                                                          "daemon (the keymem-remote plugin)")] = False,
) -> None:
    """UserPromptSubmit hook for Claude Code / Codex: hook JSON on stdin -> additional context on stdout."""
    from keymem.server.hook import main as hook_main

    raise typer.Exit(hook_main(remote=remote))


def register(target: str, name: str | None = None) -> None:
    """Add ``module:function`` as the subcommand ``name`` (default: the function name, _ -> -)."""
    module_name, _, attr = target.partition(":")
    fn = getattr(importlib.import_module(module_name), attr)
    app.command(name or attr.replace("_", "-"))(fn)


# Subcommands from other modules, one line each (keep this block above run()):
# register("keymem.cli.stats:stats")
register("keymem.cli.console:cypher")
register("keymem.cli.commands:stats")
register("keymem.cli.commands:doctor")
register("keymem.cli.init_cmd:init")
app.add_typer(importlib.import_module("keymem.cli.commands").models_app, name="models")
register("keymem.cli.commands:export")
register("keymem.cli.commands:import_", "import")
register("keymem.cli.commands:snapshot")
register("keymem.cli.commands:viz")
register("keymem.cli.memory_cmds:remember")
register("keymem.cli.memory_cmds:recall")
register("keymem.cli.memory_cmds:read")
register("keymem.cli.memory_cmds:read_key")
register("keymem.cli.memory_cmds:forget")
register("keymem.cli.memory_cmds:keys")
register("keymem.cli.engine_cmds:migrate")
app.add_typer(importlib.import_module("keymem.cli.engine_cmds").extensions_app, name="extensions")
register("keymem.cli.remote_cmds:serve")
app.add_typer(importlib.import_module("keymem.cli.remote_cmds").token_app, name="token")


TTY_NOTICE = (
    "keymem: this is keymem's MCP server on stdio, waiting for an MCP client (an agent started from its MCP "
    "configuration) to speak JSON-RPC on stdin. Ctrl-D or Ctrl-C ends it.\n"
    "keymem: for people: `keymem --help` lists the commands (`keymem recall QUERY`, `keymem remember TEXT --key KEY`, "
    "`keymem doctor`, `keymem cypher`)."
)


def _serve() -> int:
    """The stdio server; in a terminal, first say on stderr what it is (stdout carries only protocol)."""
    if sys.stdin.isatty():
        print(TTY_NOTICE, file=sys.stderr, flush=True)
    from keymem.server.stdio import serve

    return serve()


def one_line(error: Any) -> str:
    """A usage error (a Click exception) as one line on stderr, naming the command and where to read more."""
    import re

    from keymem.errors import ECHO_CHARS, shown

    text = error.format_message() if hasattr(error, "format_message") else str(error)
    message = " ".join(text.split()).rstrip(".")
    message = re.sub(rf"'([^']{{{ECHO_CHARS + 1},}})'", lambda m: shown(m.group(1)), message)  # a huge value, cut
    ctx = getattr(error, "ctx", None)
    path = ctx.command_path if ctx is not None else "keymem"
    message = message[:1].lower() + message[1:] if message[1:2].islower() else message
    return f"{path}: {message} (see `{path} --help`)"


def main(argv: list[str]) -> int:
    """Run the Typer app on ``argv``: usage errors as one line on stderr with exit 2, not Rich panels."""
    try:
        code = app(argv, prog_name="keymem", standalone_mode=False)
    except typer.TyperException as exc:  # Typer's own Click: usage errors, bad values, missing files
        if type(exc).__name__ != "NoArgsIsHelpError":  # that one's help is printed already
            print(one_line(exc), file=sys.stderr)
        return int(getattr(exc, "exit_code", 2))
    except typer.Abort:
        print("keymem: aborted", file=sys.stderr)
        return 1
    return code if isinstance(code, int) else 0


def run() -> None:
    """Console-script entry point (``keymem``)."""
    argv = sys.argv[1:]
    if not argv:
        sys.exit(_serve())
    if argv in (["hook"], ["hook", "--remote"]):
        from keymem.server.hook import main as hook_main

        sys.exit(hook_main(remote=argv == ["hook", "--remote"]))
    sys.exit(main(argv))


if __name__ == "__main__":  # python -m keymem.cli.main (tests, no console script needed)
    run()
