"""Logging for the server processes: stderr and a rotating, owner-only log file.

stdout belongs to the MCP protocol, so nothing here ever writes to it.
"""

from __future__ import annotations

import logging
import os
import sys
from logging.handlers import RotatingFileHandler
from pathlib import Path

from keymem.server.protocol import ensure_private_dir
from keymem.settings import Settings

FORMAT = "%(asctime)s %(process)d %(name)s %(levelname)s %(message)s"
MAX_BYTES = 5 * 1024 * 1024
BACKUPS = 3


class PrivateRotatingFileHandler(RotatingFileHandler):
    """A RotatingFileHandler whose files are created 0600 (a log may quote memory text)."""

    def _open(self):  # type: ignore[no-untyped-def]
        fd = os.open(self.baseFilename, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        os.fchmod(fd, 0o600)
        return os.fdopen(fd, "a", encoding=self.encoding or "utf-8", errors=self.errors)


def setup_logging(settings: Settings, *, stderr: bool = True, path: Path | None = None) -> None:
    """Route the ``keymem`` loggers (and warnings from libraries) to stderr and the log file (``path``:
    another file than the daemon's, for a process that runs beside it)."""
    log_path = path or settings.log_path
    root = logging.getLogger()
    for h in list(root.handlers):
        if getattr(h, "_keymem", False):
            root.removeHandler(h)
    fmt = logging.Formatter(FORMAT)
    handlers: list[logging.Handler] = []
    if stderr:
        handlers.append(logging.StreamHandler(sys.stderr))
    try:
        ensure_private_dir(log_path.parent)
        handlers.append(PrivateRotatingFileHandler(log_path, maxBytes=MAX_BYTES, backupCount=BACKUPS))
    except OSError as exc:  # a read-only data dir must not stop the server
        print(f"keymem: cannot write the log file {log_path}: {exc}", file=sys.stderr)
    for h in handlers:
        h.setFormatter(fmt)
        h._keymem = True  # type: ignore[attr-defined]
        root.addHandler(h)
    root.setLevel(logging.WARNING)
    logging.getLogger("keymem").setLevel(settings.log_level)
