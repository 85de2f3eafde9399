"""A loopback stand-in for the Hugging Face Hub file endpoints that hf_hub_download uses.

huggingface_hub (2.x) sends ``HEAD {endpoint}/{repo_id}/resolve/{revision}/{path}`` and
needs ``X-Repo-Commit`` (a 40-hex commit), an ``ETag`` (or ``X-Linked-Etag``) and the size
(``Content-Length``) from it; then it ``GET``s the same URL, checks the byte count and renames
the blob into place. Missing files answer 404 with ``X-Error-Code: EntryNotFound`` like the
Hub. Every request is logged so tests can assert which files were fetched.
"""

from __future__ import annotations

import hashlib
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import unquote

COMMIT = "0123456789abcdef0123456789abcdef01234567"


@dataclass
class FakeHub:
    files: dict[tuple[str, str], bytes] = field(default_factory=dict)
    requests: list[tuple[str, str]] = field(default_factory=list)  # (method, "repo_id:path")
    fail_status: int | None = None  # answer every request with this status
    truncate: set[str] = field(default_factory=set)  # paths whose GET body is cut in half
    url: str = ""
    _server: ThreadingHTTPServer | None = None

    def add(self, repo_id: str, path: str, data: bytes) -> None:
        self.files[(repo_id, path)] = data

    def fetched(self, method: str = "GET") -> list[str]:
        return [what for m, what in self.requests if m == method]

    def start(self) -> FakeHub:
        hub = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.0"  # one request per connection: a cut body is a clean EOF

            def log_message(self, format: str, *args: object) -> None:  # keep test output quiet
                pass

            def do_HEAD(self) -> None:
                self._serve(body=False)

            def do_GET(self) -> None:
                self._serve(body=True)

            def _serve(self, body: bool) -> None:
                parts = self.path.split("?", 1)[0].split("/")
                # "", org, name, "resolve", revision, *path
                if len(parts) < 6 or parts[3] != "resolve":
                    self._error(404, "RepoNotFound")
                    return
                repo_id = f"{parts[1]}/{parts[2]}"
                path = unquote("/".join(parts[5:]))
                hub.requests.append((self.command, f"{repo_id}:{path}"))
                if hub.fail_status is not None:
                    self._error(hub.fail_status, None)
                    return
                data = hub.files.get((repo_id, path))
                if data is None:
                    self._error(404, "EntryNotFound")
                    return
                self.send_response(200)
                self.send_header("X-Repo-Commit", COMMIT)
                self.send_header("ETag", f'"{hashlib.sha256(data).hexdigest()}"')
                self.send_header("Content-Length", str(len(data)))
                self.send_header("Content-Type", "application/octet-stream")
                self.end_headers()
                if body:
                    payload = data[: len(data) // 2] if path in hub.truncate else data
                    self.wfile.write(payload)
                    self.wfile.flush()

            def _error(self, status: int, code: str | None) -> None:
                msg = b'{"error": "fake hub"}'
                self.send_response(status)
                if code:
                    self.send_header("X-Error-Code", code)
                self.send_header("X-Repo-Commit", COMMIT)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(msg)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(msg)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        ).start()
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
