"""The CLI's store commands: stats, doctor, models download, export, import, snapshot, viz.

Each runs its graph-side part through the daemon when one answers, else on the store opened
here (:class:`keymem.cli.common.Target`). Imports of the engine, numpy and the models happen
inside the commands so that ``keymem --help`` stays fast.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from keymem.cli.common import (
    Target,
    daemon_stats,
    fail,
    human_bytes,
    progress_bar,
    schema_state,
    settings_or_exit,
)
from keymem.errors import shown

models_app = typer.Typer(help="Embedding and reranker model files.", no_args_is_help=True, add_completion=False)


def _echo_json(data: Any) -> None:
    typer.echo(json.dumps(data, ensure_ascii=False, indent=2))


# -- stats ---------------------------------------------------------------------------------------


def stats(
    namespace: Annotated[str | None, typer.Option("--namespace", "-n", help="Hubs of this namespace only")] = None,
    hubs: Annotated[int, typer.Option("--hubs", help="How many top keys to list", min=0, max=1000)] = 10,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON")] = False,
) -> None:
    """Counts, hubs, namespaces, store size, embedding model and fingerprint."""
    settings = settings_or_exit()
    with Target(settings, need="store") as target:
        data = target.call("stats", {"namespace": namespace, "hubs": hubs})
        data["served_by"] = "daemon" if target.via_daemon else "direct"
    if as_json:
        _echo_json(data)
        return
    c = data["counts"]
    typer.echo(f"store       {data['store']['path']} ({human_bytes(data['store']['bytes'])}, via {data['served_by']})")
    if data["store"].get("server"):
        from keymem.cli.falkordb_doctor import engine_lines

        for line in engine_lines(data["store"]["server"]):
            typer.echo(f"            {line}")
    typer.echo(f"keys        {c['keys']}  (aliases {c['aliases']}, pending aliases {c['pending_aliases']})")
    typer.echo(f"memories    {c['memories']} active  (+{c['superseded']} superseded versions)")
    typer.echo(f"links       {c['links']} key-memory, {c['related']} memory-memory")
    m = data["model"]
    typer.echo(f"model       {m['stored_fingerprint'] or '(none yet)'}  dim {m['dim'] or '-'}"
               + (f"  loaded {m['loaded']}" if m.get("loaded") else ""))
    sch = data["schema"]
    typer.echo(f"schema      {', '.join(sch['applied']) or '(none)'}")
    proc = data.get("process")
    if proc and proc.get("rss_kb"):
        who = f"daemon pid {proc['pid']}" if data["served_by"] == "daemon" else "this command, no daemon running"
        pool = proc["buffer_pool"]
        typer.echo(f"memory      RSS {human_bytes(proc['rss_kb'] * 1024)} now, {human_bytes(proc['peak_rss_kb'] * 1024)} "
                   f"peak ({who})" + (f"; LadybugDB buffer pool {human_bytes(pool['used_bytes'])} of "
                                      f"{human_bytes(pool['capacity_bytes'])}{pool_note(pool)}" if pool else ""))
    typer.echo("namespaces  " + (", ".join(f"{r['namespace']} ({r['n']})" for r in data["namespaces"]) or "(none)"))
    if data["hubs"]:
        typer.echo(f"top keys    (hub = {data['hub_min_links']}+ active memories)")
        for h in data["hubs"]:
            mark = "  HUB" if h["hub"] else ""
            typer.echo(f"  {h['n']:>5}  {h['text']}  [{h['key_type']}, {h['namespace']}]{mark}")


def pool_note(pool: dict[str, Any]) -> str:
    """How the pool was sized and what it refused (stats and doctor)."""
    note = " (sized from the store's size, KEYMEM_BUFFER_POOL_MB unset)" if pool.get("auto") else " (KEYMEM_BUFFER_POOL_MB)"
    if pool.get("refused_statements"):
        note += (f"; {pool['refused_statements']} statement(s) refused for lack of pool since the start, "
                 f"{pool.get('reopens', 0)} reopen(s): raise KEYMEM_BUFFER_POOL_MB if tool calls failed")
    return note


# -- doctor --------------------------------------------------------------------------------------


def doctor(
    check: Annotated[bool, typer.Option("--check", help="Also run the store's invariant checker")] = False,
) -> None:
    """Version, configuration (and where each value came from), model files, daemon, store and schema; exit 1 on a problem."""
    from keymem.settings import VARS, SettingsError, load_settings

    problems: list[tuple[str, str]] = []
    try:
        settings = load_settings()
    except SettingsError as exc:
        raise fail(str(exc), fix="correct that line of the config file" if exc.path else
                   "correct or unset that variable") from None
    from keymem import __version__

    typer.echo(f"keymem {__version__} (Python {sys.version.split()[0]})")
    path = settings.config_file
    from_file = sum(1 for src in settings.sources.values() if src.startswith("config file"))
    described = (f"{path} ({from_file} value{'s' if from_file != 1 else ''})" if path is not None and path.is_file()
                 else f"{path} (none; `keymem init` writes one)")
    typer.echo(f"config file: {described}")
    typer.echo("configuration (the environment wins over the config file, the file over the defaults):")
    for name, var in VARS.items():
        value = getattr(settings, name)
        if name == "openai_api_key" and value:
            value = "set (hidden)"
        elif name == "store_url" and value:  # it may hold a password
            from keymem.engine_url import parse_store_url

            value = parse_store_url(value).shown()
        source = settings.sources.get(name, "default")
        if source.startswith("config file"):
            source = "config file"  # its path is on the line above
        value = shown(str(value), limit=200, quoted=False)  # a path in full; a 100 KB value cut
        typer.echo(f"  {var.env:<32} {value:<28} ({source})")

    typer.echo("models:")
    problems += _doctor_models(settings)
    typer.echo("daemon:")
    from keymem.server.client import status

    info = status(settings) if settings.daemon == "auto" else None
    if info is None:
        typer.echo("  not running" + (" (KEYMEM_DAEMON=off)" if settings.daemon == "off" else ""))
    else:
        typer.echo(f"  pid {info.get('pid')}, keymem {info.get('version')}, state {info.get('state')}, "
                   f"{info.get('clients')} client(s), embedding {info.get('embedding')}")
        if info.get("version") != __version__:
            problems.append((f"the daemon runs keymem {info.get('version')}, this command is keymem {__version__}",
                             "run `keymem daemon --stop`; the next client starts this version"))
        problems += _doctor_daemon_settings(info, settings)
        if info.get("state") == "failed":
            problems.append((f"the daemon could not open the store or models: {info.get('error')}",
                             f"fix the cause, then `keymem daemon --stop`; see {settings.log_path}"))
    typer.echo("remote (keymem serve --http):")
    problems += _doctor_tokens(settings)
    typer.echo("store:")
    problems += _doctor_store(settings, daemon_running=info is not None)
    if check:
        typer.echo("invariants:")
        with Target(settings, need="graph") as target:
            found = target.call("check")
        for p in found:
            typer.echo(f"  PROBLEM {p}")
        if found:
            problems.append((f"{len(found)} invariant(s) broken",
                             "export what is readable (`keymem export`), restore a backup from "
                             f"{settings.db_path.parent / 'backups'}, or import the export into a fresh data dir"))
        else:
            typer.echo("  all invariants hold")
    if problems:
        typer.echo(f"\n{len(problems)} problem(s):", err=True)
        for what, fix in problems:
            typer.echo(f"  - {what}\n    fix: {fix}", err=True)
        raise typer.Exit(1)
    typer.echo("\nno problems found")


def _doctor_daemon_settings(info: dict[str, Any], settings: Any) -> list[tuple[str, str]]:
    """The daemon computes with its own settings: each one that differs from this configuration is a problem."""
    from keymem.server.client import setting_differences
    from keymem.settings import VARS

    diffs = setting_differences(info, settings)
    if not diffs:
        return []
    where = {var.env: settings.sources.get(name, "default").split(" /")[0] for name, var in VARS.items()}
    listed = "; ".join(f"{name}: {shown(mine, quoted=False)} in this configuration ({where.get(name, 'default')}), "
                       f"{shown(theirs, quoted=False)} in the daemon" for name, mine, theirs in diffs)
    return [(f"the running daemon (pid {info.get('pid')}) computes every client's results with its own settings, "
             f"not this configuration's: {listed}",
             "run `keymem daemon --stop`: the next tool call starts a daemon with this configuration. A client "
             "whose MCP configuration sets these variables itself (e.g. `-e LOCAL_EMBEDDING_MODEL=...`) overrides "
             "the config file for the daemon it starts: remove them there")]


def _doctor_tokens(settings: Any) -> list[tuple[str, str]]:
    """The HTTP server's token file: how many tokens, and whether it is private and readable."""
    from keymem.errors import KeymemError
    from keymem.server.tokens import TokenFile

    path = settings.token_file
    if not path.exists():
        typer.echo(f"  no token file ({path}); `keymem token create NAME` makes one")
        return []
    try:
        found = TokenFile(path).tokens()
    except KeymemError as exc:
        return [(str(exc), f"remove {path} and create the tokens again")]
    typer.echo(f"  {len(found)} token(s) in {path}: {', '.join(t.name for t in found) or 'none'}")
    if path.stat().st_mode & 0o077:
        return [(f"{path} is readable by other users", f"chmod 600 {path}")]
    return []


def _doctor_models(settings: Any) -> list[tuple[str, str]]:
    from keymem.models.download import is_complete, missing_files
    from keymem.models.profiles import RERANKER, find_model

    problems: list[tuple[str, str]] = []
    if settings.backend == "openai":
        typer.echo(f"  embedding: OpenAI {settings.openai_embedding_model}")
        if not settings.openai_api_key:
            problems.append(("EMBEDDING_BACKEND=openai but OPENAI_API_KEY is not set",
                             "set OPENAI_API_KEY, or EMBEDDING_BACKEND=local"))
    else:
        profile = find_model(settings.local_embedding_model)
        model_dir = settings.local_embedding_model_path or (
            settings.models_dir / (profile.name if profile else settings.local_embedding_model))
        if profile is None and settings.local_embedding_model_path is None:
            problems.append((f"LOCAL_EMBEDDING_MODEL={shown(settings.local_embedding_model)} is not a known model",
                             "use a known name or point LOCAL_EMBEDDING_MODEL_PATH at a model directory"))
        elif profile is None:
            ok = (model_dir / settings.local_embedding_model_file).is_file() and (model_dir / "tokenizer.json").is_file()
            typer.echo(f"  embedding: {model_dir} ({'present' if ok else 'MISSING FILES'})")
            if not ok:
                problems.append((f"{model_dir} lacks {settings.local_embedding_model_file} or tokenizer.json",
                                 "put the model files there, or unset LOCAL_EMBEDDING_MODEL_PATH"))
            else:
                problems += _doctor_identity(settings, None)
        else:
            ok = is_complete(profile.files(), model_dir) or (
                settings.local_embedding_model_file != "model.onnx"
                and (model_dir / settings.local_embedding_model_file).is_file())
            missing = ", ".join(f.local_name for f in missing_files(profile.files(), model_dir) if f.required)
            typer.echo(f"  embedding: {profile.name} in {model_dir} ({'present' if ok else 'missing ' + missing})")
            if not ok:
                problems.append((f"the embedding model files are missing ({missing})",
                                 _fetch_fix(profile.files(), model_dir, "run `keymem models download` (or they "
                                            "download on first use)")))
            elif settings.local_embedding_model_path is not None:
                problems += _doctor_identity(settings, profile)
    if settings.rerank:
        rdir = settings.rerank_model_path or settings.models_dir / "reranker"
        ok = is_complete(RERANKER.files(), rdir)
        typer.echo(f"  reranker: {RERANKER.name} in {rdir} ({'present' if ok else 'missing'})")
        if not ok and settings.rerank_model_path is not None:
            problems.append((f"KEYMEM_RERANK_MODEL_PATH={rdir} is not a complete reranker directory",
                             "point it at a directory with the reranker files, or unset it"))
        elif not ok:
            missing = ", ".join(f.local_name for f in missing_files(RERANKER.files(), rdir) if f.required)
            problems.append((f"KEYMEM_RERANK is on but the reranker files are missing ({missing} in {rdir}): "
                             "recall ranks without it until a download succeeds",
                             _fetch_fix(RERANKER.files(), rdir, "run `keymem models download`",
                                        "set KEYMEM_RERANK=false")))
    else:
        typer.echo("  reranker: disabled (KEYMEM_RERANK=false)")
    return problems


def _fetch_fix(files: Any, dest: Path, online: str, otherwise: str = "") -> str:
    """The fix for missing model files: ``online`` when the hub answers, else the files to place by hand
    (a download cannot work offline); ``otherwise``: another way out, named in both."""
    from keymem.models.download import hub_unreachable, placement

    why = hub_unreachable()
    alternative = f", or {otherwise}" if otherwise else ""
    if why is None:
        return online + alternative
    steps = "".join(f"\n      {step}" for step in placement(files, dest))
    return (f"the Hugging Face Hub cannot be reached from here ({why}), so no download can work: on a machine "
            f"that reaches it, fetch these files and place them here by hand:{steps}\n      then run "
            f"`keymem doctor` again{alternative}")


def _doctor_identity(settings: Any, profile: Any) -> list[tuple[str, str]]:
    """What LOCAL_EMBEDDING_MODEL_PATH's own files say, against the model it is named (the start-up check)."""
    from dataclasses import replace

    from keymem.errors import ModelError
    from keymem.models import identify
    from keymem.models.onnx_embed import OnnxEmbedder

    model_dir, model_file = settings.local_embedding_model_path, settings.local_embedding_model_file
    facts = identify.read_facts(model_dir, model_file)
    if facts.output_dim is None:  # a symbolic output width: measure it as the start-up would
        try:
            facts = replace(facts, output_dim=OnnxEmbedder(model_dir, name="probe", model_file=model_file).dimension)
        except ModelError as exc:
            return [(str(exc), "replace the model file")]
    typer.echo(f"    files: {identify.describe(facts)}")
    if profile is None:
        hint = identify.suggestion(facts)
        if hint is not None:
            typer.echo(f"    (they match {hint.name}: LOCAL_EMBEDDING_MODEL={hint.name} gives its pooling and "
                       "calibrated thresholds)")
        return []
    mismatch = identify.check(profile, facts)
    return [] if mismatch is None else [(mismatch.what, mismatch.fix)]


def _doctor_store(settings: Any, *, daemon_running: bool) -> list[tuple[str, str]]:
    from keymem.errors import KeymemError
    from keymem.store import engine, migrations

    problems: list[tuple[str, str]] = []
    if settings.store_url:  # a server engine: its address, versions and durability settings
        from keymem.cli.falkordb_doctor import doctor_store

        return doctor_store(settings, daemon_running=daemon_running)
    path = settings.db_path
    found = engine.pending(path)
    if found is not None:
        typer.echo(f"  {found[0]}: written by {found[1]}, this keymem runs {engine.current()}")
        return [(f"the store {found[0]} needs moving to {engine.current()}",
                 "run `keymem migrate` (or start keymem: the daemon moves it at its first open; a backup is kept)")]
    if not path.exists():
        typer.echo(f"  {path}: not created yet (created on first use)")
        return problems
    if daemon_running:
        data = daemon_stats(settings)
        applied, available = data["schema"]["applied"], data["schema"]["available"]
        typer.echo(f"  {path}: opened by the daemon, {human_bytes(data['store']['bytes'])}")
        pool, rss = data["process"]["buffer_pool"], data["process"].get("rss_kb")
        typer.echo(f"  buffer pool: {human_bytes(pool['capacity_bytes'])}{pool_note(pool)}, "
                   f"{human_bytes(pool['used_bytes'])} in use (cache included)"
                   + (f"; daemon RSS {human_bytes(rss * 1024)}" if rss else ""))
        if data["store"].get("wal_recovery"):
            typer.echo(f"  last recovery: {data['store']['wal_recovery']}")
    else:
        from keymem.store.factory import open_store

        try:
            store = open_store(settings, read_only=True)
        except KeymemError as exc:
            typer.echo(f"  {path}: CANNOT OPEN")
            return [(str(exc), "see the message above")]
        try:
            try:
                applied = migrations.applied(store)
                recovery = store.query("meta/get", name="wal_recovery")
            except RuntimeError:
                applied, recovery = [], []
            if recovery:
                typer.echo(f"  last recovery: {recovery[0]['value']}")
            available = migrations.available()
            auto = " sized from the store's size, KEYMEM_BUFFER_POOL_MB unset" if store.pool_auto else ""
            typer.echo(f"  {path}: opens cleanly, {human_bytes(store.size_bytes())} "
                       f"(buffer pool {store.buffer_pool_mb} MiB{auto})")
        finally:
            store.close()
    typer.echo(f"  schema: {schema_state(applied, available, problems)}")
    from keymem.cli.engine_cmds import vector_status

    loads, words = vector_status()
    typer.echo("  engine: LadybugDB " + engine.ENGINE_VERSION + f"; VECTOR extension: {words}")
    typer.echo("  key search: " + ("HNSW index from KEYMEM_VECTOR_INDEX_MIN_KEYS keys, exact scan below" if loads
                                   else "exact scan at every size (`keymem extensions download` adds the HNSW index "
                                        "for stores past KEYMEM_VECTOR_INDEX_MIN_KEYS keys)"))
    backups = sorted((path.parent / "backups").glob("*.bak.*"))
    if backups:
        typer.echo(f"  backups: {len(backups)}, newest {backups[-1].name}")
    return problems


# -- models ----------------------------------------------------------------------------------------


@models_app.command("download")
def models_download(
    reranker: Annotated[bool, typer.Option("--reranker/--no-reranker",
                                           help="Also fetch the reranker (default: when KEYMEM_RERANK is on)")] = True,
    endpoint: Annotated[str | None, typer.Option("--endpoint", help="Hub URL (default: HF_ENDPOINT or huggingface.co)",
                                                 hidden=True)] = None,
) -> None:
    """Fetch the configured embedding model and the reranker ahead of time (only missing files)."""
    download_models(settings_or_exit(), reranker=reranker, endpoint=endpoint)


def download_models(settings: Any, *, reranker: bool = True, endpoint: str | None = None) -> None:
    """The configured embedding model and (with ``reranker`` and KEYMEM_RERANK on) the reranker, made
    complete: only missing files are fetched, with a progress bar on stderr. A failure ends the command."""
    from keymem.errors import ModelError
    from keymem.models.download import ensure_model, ensure_reranker
    from keymem.models.profiles import find_model

    try:
        if settings.backend == "openai":
            typer.echo(f"embedding: OpenAI {settings.openai_embedding_model} (nothing to download)")
        else:
            profile = find_model(settings.local_embedding_model)
            own = settings.local_embedding_model_path
            if profile is None and own is not None:  # a model keymem does not know: its files must be there
                if not ((own / settings.local_embedding_model_file).is_file() and (own / "tokenizer.json").is_file()):
                    raise fail(f"{own} lacks {settings.local_embedding_model_file} or tokenizer.json",
                               fix="put the model files there (keymem downloads only the models it knows)")
                typer.echo(f"embedding: {settings.local_embedding_model} in {own} (files present)")
            elif profile is None:
                raise fail(f"LOCAL_EMBEDDING_MODEL={shown(settings.local_embedding_model)} is not a known model",
                           fix="use a known model name, or provide the files with LOCAL_EMBEDDING_MODEL_PATH")
            else:
                dest = own or settings.models_dir / profile.name
                if own is not None:  # never add another model's files to it
                    from keymem.models import identify

                    mismatch = identify.check(profile, identify.read_facts(dest, settings.local_embedding_model_file))
                    if mismatch is not None:
                        raise fail(mismatch.what, fix=mismatch.fix)
                ensure_model(profile, dest, endpoint=endpoint)  # progress on stderr
                typer.echo(f"embedding: {profile.name} ready in {dest}")
        if reranker and settings.rerank:
            rdir = settings.rerank_model_path or settings.models_dir / "reranker"
            ensure_reranker(rdir, endpoint=endpoint)
            typer.echo(f"reranker: ready in {rdir}")
        elif reranker:
            typer.echo("reranker: skipped (KEYMEM_RERANK=false)")
    except ModelError as exc:
        raise fail(str(exc)) from None


# -- export / import / snapshot ---------------------------------------------------------------------


def export(
    file: Annotated[Path, typer.Argument(help="Output file (.jsonl); - for stdout", dir_okay=False)],
    namespace: Annotated[str | None, typer.Option("--namespace", "-n", help="Only this namespace")] = None,
) -> None:
    """Export keys, aliases, memories with their version chains, and links as JSON Lines (no vectors)."""
    settings = settings_or_exit()
    with Target(settings, need="store") as target:
        lines = target.call("export", {"namespace": namespace})["lines"]
        digest = target.call("digest")
    text = "".join(line + "\n" for line in lines)
    if str(file) == "-":
        sys.stdout.write(text)
    else:
        tmp = file.with_name(file.name + ".part")
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, file)
        typer.echo(f"exported {len(lines) - 1} records to {file}", err=True)
    typer.echo(digest_line(digest), err=True)


def digest_line(digest: dict[str, Any]) -> str:
    """The store digest as export and import print it: a whole export imported into an empty store on
    either engine prints the line its source printed."""
    counts = ", ".join(f"{label} {n}" for label, n in digest["counts"].items())
    return f"store digest {digest['sha256']} ({counts or 'empty'})"


def import_(
    file: Annotated[Path, typer.Argument(help="A file written by `keymem export`; - for stdin", dir_okay=False)],
) -> None:
    """Import an export file: every line is validated first; records already present are skipped."""
    from keymem.admin import io

    settings = settings_or_exit()
    try:
        text = sys.stdin.read() if str(file) == "-" else file.read_text(encoding="utf-8")
    except OSError as exc:
        raise fail(f"cannot read {file}: {exc}") from None
    try:
        plan = io.parse_lines(text.splitlines(), max_content_chars=settings.max_content_chars)
    except io.ImportError_ as exc:
        raise fail(f"{file}: {exc}; nothing was imported") from None
    with Target(settings, need="graph") as target:
        if target.via_daemon:
            if sys.stderr.isatty():
                typer.echo(f"importing {plan.size} records through the daemon...", err=True)
            report = target.call("import_records", {"plan": plan.dump()})
        else:
            from keymem.errors import KeymemError

            graph = target.open_local()
            with progress_bar() as bar:
                try:
                    report = io.import_plan(graph, plan, bar)
                except KeymemError as exc:
                    raise fail(str(exc)) from None
        digest = target.call("digest")
    typer.echo(", ".join(f"{k.replace('_', ' ')} {v}" for k, v in report.items()))
    typer.echo(digest_line(digest), err=True)


def snapshot(
    directory: Annotated[Path, typer.Argument(help="Directory to write keymem.lbug into", file_okay=False)],
    force: Annotated[bool, typer.Option("--force", help="Replace an existing snapshot")] = False,
) -> None:
    """A consistent copy of the store that LadybugDB Explorer (or any LadybugDB of the same storage version) can open."""
    settings = settings_or_exit()
    directory = directory.expanduser().absolute()
    directory.mkdir(parents=True, exist_ok=True)
    with Target(settings, need="store", write=True) as target:
        out = target.call("snapshot", {"dest": str(directory), "force": force})
    typer.echo(f"snapshot written: {out['path']} ({human_bytes(out['bytes'])})")
    from keymem.store.engine import EXPLORER_IMAGE

    typer.echo(f"open it with: docker run --rm -p 8000:8000 -v {directory}:/database "
               f"-e LBUG_FILE=keymem.lbug -e MODE=READ_ONLY {EXPLORER_IMAGE}")


# -- viz -----------------------------------------------------------------------------------------


def viz(
    namespace: Annotated[str | None, typer.Option("--namespace", "-n", help="Only this namespace")] = None,
    key: Annotated[str | None, typer.Option("--key", "-k", help="Centre the view on this key (text, alias or id)")] = None,
    hops: Annotated[int, typer.Option("--hops", help="Key-memory-key steps out from --key", min=1, max=5)] = 2,
    limit: Annotated[int, typer.Option("--limit", help="Most memories shown", min=1, max=5000)] = 300,
    output: Annotated[Path, typer.Option("-o", "--output", help="HTML file to write", dir_okay=False)] = Path(
        "keymem-graph.html"),
) -> None:
    """A self-contained HTML view of a graph neighbourhood (keys, memories, link weights, hubs, stale)."""
    from keymem.cli.viz import render_html

    settings = settings_or_exit()
    with Target(settings, need="store") as target:
        data = target.call("viz_data", {"namespace": namespace, "key": key, "hops": hops, "limit": limit})
    output.write_text(render_html(data), encoding="utf-8")
    n_keys = sum(1 for n in data["nodes"] if n["kind"] == "key")
    typer.echo(f"wrote {output}: {n_keys} keys, {len(data['nodes']) - n_keys} memories, {len(data['edges'])} edges")
