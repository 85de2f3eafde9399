"""``keymem daemon``: start the shared daemon, or --status / --stop / --foreground."""

from __future__ import annotations

import sys
from typing import Any

from keymem.server import client
from keymem.server.protocol import DaemonUnavailable, pid_alive, read_pid
from keymem.settings import Settings, SettingsError, load_settings


def _describe(info: dict[str, Any], settings: Settings) -> str:
    counts = info.get("counts") or {}
    mem = info.get("memory_kb") or {}
    lines = [
        f"keymem daemon: running (pid {info.get('pid')}, {info.get('state')}, up {info.get('uptime_s')} s, "
        f"{info.get('clients', 0)} client(s), keymem {info.get('version')})",
        f"data dir: {info.get('data_dir')}",
        f"socket: {settings.socket_path}",
        f"embedding: {info.get('embedding')}",
    ]
    if counts.get("keys") is not None:
        lines.append(f"store: {counts['keys']} keys, {counts['memories']} memories, {counts['links']} links")
    if mem:
        lines.append(f"memory: RSS {mem.get('VmRSS', 0) // 1024} MiB (peak {mem.get('VmHWM', 0) // 1024} MiB)")
    if info.get("error"):
        lines.append(f"error: {info['error']}")
    lines.append(f"log: {settings.log_path}")
    return "\n".join(lines)


def daemon_command(*, status: bool, stop: bool, foreground: bool, idle_exit: float) -> int:
    try:
        settings = load_settings()
    except SettingsError as exc:
        print(f"keymem: {exc}", file=sys.stderr)
        return 2
    if status:
        info = client.status(settings)
        if info is None:
            pid = read_pid(settings.pid_path)
            stale = f" (stale pid file for {pid})" if pid and not pid_alive(pid) else ""
            print(f"keymem daemon: not running for {settings.data_dir}{stale}")
            return 3
        print(_describe(info, settings))
        return 0
    if stop:
        if client.stop(settings):
            print("keymem daemon: stopped")
        else:
            print("keymem daemon: not running")
        return 0
    if foreground:
        from keymem.server.daemon import ALREADY_RUNNING, Daemon
        from keymem.server.logs import setup_logging

        setup_logging(settings, stderr=True)
        rc = Daemon(settings, idle_exit=idle_exit).run()
        if rc == ALREADY_RUNNING:
            print(f"keymem daemon: already running for {settings.data_dir}", file=sys.stderr)
        return rc
    info = client.status(settings)
    if info is None:
        try:
            client.start_daemon(settings).close()
        except DaemonUnavailable as exc:
            print(f"keymem daemon: {exc}", file=sys.stderr)
            return 1
        info = client.status(settings) or {}
    print(_describe(info, settings))
    return 0
