"""``keymem init``: write the config file, check the model and download what is missing.

The file is the one every keymem process reads (:func:`keymem.settings.config_path`: the MCP
server, the daemon it starts, the prompt hook and the CLI), so a plugin or an MCP client
configuration needs no model setting of its own. The environment still wins over the file.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, Any

import typer

from keymem.cli.common import fail
from keymem.errors import shown

HEADER = """keymem configuration, written by `keymem init`.
Keys are the environment variables of the README's configuration table; a variable set in the
environment wins over this file. `keymem doctor` shows where each value comes from."""


def _local(model: str | None, model_path: Path | None) -> dict[str, Any]:
    """The file's local-model settings, with the model's canonical name; a bad name ends the command."""
    from keymem.models.profiles import find_model, known_models

    name = (model or "bge-m3").strip()
    profile = find_model(name)
    if profile is None and model_path is None:
        raise fail(f"{shown(name)} is not a model keymem knows",
                   fix=f"use one of {', '.join(known_models())} (minilm is all-MiniLM-L6-v2), or give the "
                   "files of another ONNX model with --model-path DIR and a name of your own")
    values: dict[str, Any] = {"LOCAL_EMBEDDING_MODEL": profile.name if profile else name}
    if model_path is not None:
        values["LOCAL_EMBEDDING_MODEL_PATH"] = Path(os.path.abspath(model_path.expanduser()))
    return values


def _rerank_choice(asked: bool | None, model: str | None, backend: str) -> tuple[bool, str]:
    """KEYMEM_RERANK for the file, and why: ``--rerank``/``--no-rerank``, else what the model's profile says."""
    from keymem.models.profiles import RERANKER, find_model

    size = f"{RERANKER.name}, {RERANKER.size_hint}"
    if asked is not None:
        return asked, f"{'--rerank' if asked else '--no-rerank'}" + (f": {size}" if asked else "")
    profile = find_model(model) if backend == "local" and model else None
    if profile is not None and profile.rerank:
        return True, f"the {profile.name} profile turns it on: {size}; --no-rerank turns it off"
    what = (f"the {profile.name} profile" if profile else
            "OpenAI embeddings" if backend == "openai" else "a model of your own")
    return False, f"{what} leaves it off; --rerank turns it on: {size}"


def _assignments(items: list[str]) -> dict[str, Any]:
    """``--set KEY=VALUE`` options, each parsed as the environment variable KEY would be."""
    from keymem.settings import CONFIG_VAR, VARS, SettingsError, parse_value

    names = [v.env for v in VARS.values()]
    out: dict[str, Any] = {}
    for item in items:
        key, sep, text = item.partition("=")
        key = key.strip()
        if not sep or key not in names:
            import difflib

            close = difflib.get_close_matches(key.upper(), names, n=1)
            what = f"--set {shown(item)}: " + ("use KEY=VALUE" if not sep else
                                          f"{CONFIG_VAR} names the file itself" if key == CONFIG_VAR else
                                          f"unknown setting {shown(key)}" + (f" (did you mean {close[0]}?)" if close else ""))
            raise fail(what, fix="KEY is an environment variable of the README's configuration table", code=2)
        try:
            out[key] = parse_value(key, text)
        except SettingsError as exc:
            raise fail(f"--set: {exc}", code=2) from None
    return out


def _running_daemon(settings: Any) -> None:
    """Say so when a running daemon computes with other settings than the file now names (it keeps its own)."""
    from keymem.server.client import describe_differences, setting_differences, status

    running = status(settings) if settings.daemon == "auto" else None
    diffs = setting_differences(running, settings) if running is not None else []
    if running is not None and diffs:
        typer.echo(f"note: the running keymem daemon (pid {running.get('pid')}) keeps the settings it started with "
                   f"({describe_differences(diffs, 'in this file')}): `keymem daemon --stop` "
                   "stops it, and the next tool call starts one that reads this file")


def _write(path: Path, text: str) -> None:
    from keymem.server.protocol import ensure_private_dir, write_private

    try:
        ensure_private_dir(path.parent, tighten=False)
        write_private(path, text)  # 0600: the file may hold OPENAI_API_KEY
    except OSError as exc:
        raise fail(f"cannot write {path}: {exc.strerror or exc}",
                   fix="set KEYMEM_CONFIG to a file you can write, and the same in your MCP client") from None


def init(
    model: Annotated[str | None, typer.Option(
        "--model", "-m", help="Local embedding model: bge-m3 (default), minilm-l6-v2 (alias minilm), "
        "fast-bge-small-en-v1.5, fast-bge-base-en-v1.5, fast-multilingual-e5-large")] = None,
    model_path: Annotated[Path | None, typer.Option(
        "--model-path", help="Directory holding the model's model.onnx + tokenizer.json (missing files of a "
        "known model are downloaded into it)", file_okay=False)] = None,
    backend: Annotated[str, typer.Option(
        "--backend", help="local (an ONNX model on this machine) or openai (needs OPENAI_API_KEY)")] = "local",
    rerank: Annotated[bool | None, typer.Option(
        "--rerank/--no-rerank", help="Cross-encoder reranking (~570 MB model; off: faster, smaller). Default: on "
        "for bge-m3 and multilingual-e5-large, off for the small models and OpenAI", show_default=False)] = None,
    data_dir: Annotated[Path | None, typer.Option(
        "--data-dir", help="Where the store, logs and models live (written as KEYMEM_DATA_DIR; the config "
        "file stays where keymem looks for it)", file_okay=False)] = None,
    assign: Annotated[list[str] | None, typer.Option(
        "--set", help="Any other setting, as KEY=VALUE with KEY from the configuration table (repeatable)",
        metavar="KEY=VALUE")] = None,
    download: Annotated[bool, typer.Option(
        "--download/--no-download", help="Check the model files and download what is missing")] = True,
    force: Annotated[bool, typer.Option("--force", help="Replace an existing config file")] = False,
    endpoint: Annotated[str | None, typer.Option("--endpoint", help="Hub URL (default: HF_ENDPOINT or huggingface.co)",
                                                 hidden=True)] = None,
) -> None:
    """Write the config file every keymem process reads (model, reranker, data dir, any setting), check the model and download what is missing."""
    from keymem.settings import CONFIG_VAR, VARS, SettingsError, config_path, format_config, load_settings

    path = config_path()
    if path.exists() and not force:
        raise fail(f"{path} already exists; nothing was changed",
                   fix="edit it, or `keymem init --force ...` to replace it")
    values: dict[str, Any] = {}
    if data_dir is not None:
        values["KEYMEM_DATA_DIR"] = Path(os.path.abspath(data_dir.expanduser()))
    backend = backend.strip().lower()
    if backend not in ("local", "openai"):
        raise fail(f"--backend {shown(backend)} must be local or openai", code=2)
    values["EMBEDDING_BACKEND"] = backend
    if backend == "local":
        values.update(_local(model, model_path))
    elif model is not None or model_path is not None:
        raise fail("--model and --model-path choose a local model",
                   fix="for OpenAI: --set OPENAI_EMBEDDING_MODEL=text-embedding-3-large", code=2)
    assigned = _assignments(assign or [])
    values["KEYMEM_RERANK"], rerank_reason = _rerank_choice(rerank, values.get("LOCAL_EMBEDDING_MODEL"), backend)
    if "KEYMEM_RERANK" in assigned:
        rerank_reason = "--set KEYMEM_RERANK"
    values.update(assigned)
    text = format_config(values, header=HEADER)
    _write(path, text)
    typer.echo(f"wrote {path}:")
    typer.echo("".join(f"  {line}\n" for line in text.splitlines() if not line.startswith("#")), nl=False)
    typer.echo(f"reranker: {'on' if values['KEYMEM_RERANK'] else 'off'} ({rerank_reason})")

    try:
        settings = load_settings()
    except SettingsError as exc:  # a bad variable in this environment (the file was just checked)
        raise fail(str(exc), fix="correct or unset that variable") from None
    for name, var in VARS.items():
        if var.env in values and settings.sources.get(name, "").startswith("env"):
            typer.echo(f"note: this environment sets {var.env}={getattr(settings, name)}, which wins over the file")
    for shell_var in (CONFIG_VAR, VARS["data_dir"].env):
        if os.environ.get(shell_var):
            typer.echo(f"note: {shell_var} is set in this shell; a process started without it (an MCP client, "
                       f"the hook) reads ~/.keymem/config.toml, so set {shell_var} there too")
            break

    _running_daemon(settings)  # before the download, which may fail
    if download:
        from keymem.cli.commands import download_models

        download_models(settings, reranker=True, endpoint=endpoint)
    else:
        typer.echo("models: not checked (--no-download); `keymem models download` fetches them")

    typer.echo("")
    typer.echo("Next: start (or restart) your agent: the keymem server, its daemon and the prompt hook read this "
               "file. `keymem doctor` shows every value and where it comes from.")
