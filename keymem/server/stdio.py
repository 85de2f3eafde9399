"""``keymem`` run bare: the MCP server on stdio.

It answers ``initialize``/``tools/list`` without loading anything heavy (the SDK is the only
large import on this path; kuzu, onnxruntime and the domain load in the daemon, or in this
process on the first tool call with ``KEYMEM_DAEMON=off``). By default every tool call is
bridged to the shared daemon, which the first tool call starts, detached, when none is running
(see :class:`~keymem.server.backends.DaemonBackend`): a health check that only initializes and
lists the tools starts nothing. ``bench/startup_rss.py`` measures this process's memory then.

One process serves one MCP session, so it records the memories its results delivered and holds
them back from later ``recall`` and ``read_key`` results (:mod:`keymem.server.session`).
"""

from __future__ import annotations

import os
import sys
import time


def serve() -> int:
    """Run until the client closes stdin. Returns the process exit status."""
    started = time.monotonic()
    from keymem.settings import SettingsError, load_settings

    try:
        settings = load_settings()
    except SettingsError as exc:
        print(f"keymem: {exc}", file=sys.stderr)
        return 2

    from keymem.server.backends import DaemonBackend, LocalBackend
    from keymem.server.logs import setup_logging

    setup_logging(settings, stderr=True)
    if settings.daemon == "off":
        os.umask(0o077)  # this process writes the store (and Kuzu's WAL) itself: keep it owner-only
    backend = LocalBackend(settings) if settings.daemon == "off" else DaemonBackend(settings)
    backend.start()  # look for a running daemon while the SDK imports; never spawns one

    from keymem.server.tools import build_server
    from keymem.server.transport import serve_stdio

    server = build_server(settings, backend, started=started, one_session=True)  # one process, one session
    try:
        serve_stdio(server)  # the SDK's stdio transport, with an answer for every line
    except KeyboardInterrupt:
        pass
    finally:
        backend.close()
    return 0
