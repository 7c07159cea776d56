"""A loopback HTTP server that replays a recorded Kubernetes API exchange to the real ``kubernetes`` client.

``kube_replay.RecordedApi`` stands in for the client; this one lets the client itself run: its URL
building, headers and JSON encoding go over real HTTP to 127.0.0.1, and the server answers each request
with the recorded response only if method, path, content type and body are the recorded ones (else
400 with what differed, which the client raises). It serves one exchange file, in order, then stops.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from tests.actions.kube_replay import FIXTURES


class _Replay(ThreadingHTTPServer):
    exchanges: list[dict[str, Any]]
    mismatches: list[str]
    lock: threading.Lock


class _Handler(BaseHTTPRequestHandler):
    server: _Replay

    def _answer(self, method: str) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        sent = self.rfile.read(length) if length else b""
        path = self.path.split("?", 1)[0]
        with self.server.lock:
            exchange = self.server.exchanges.pop(0) if self.server.exchanges else None
        problem = None
        if exchange is None:
            problem = f"unexpected {method} {path}: the recorded exchange is over"
        else:
            want = exchange["request"]
            if (want["method"], want["path"]) != (method, path):
                problem = f"expected {want['method']} {want['path']}, got {method} {path}"
            elif method == "PATCH" and self.headers.get("Content-Type") != want["content_type"]:
                problem = f"content type {self.headers.get('Content-Type')}, recorded {want['content_type']}"
            elif method == "PATCH" and json.loads(sent) != want["body"]:
                problem = f"body {sent.decode()} differs from the recorded one"
        if problem is not None:
            self.server.mismatches.append(problem)
            status, body = 400, {"kind": "Status", "status": "Failure", "message": problem, "code": 400}
        else:
            assert exchange is not None
            status, body = exchange["response"]["status"], exchange["response"]["body"]
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        self._answer("GET")

    def do_PATCH(self) -> None:
        self._answer("PATCH")

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: a test reads ``mismatches``, not the server's log."""


@contextmanager
def replay_server(name: str, tmp_path: Path) -> Iterator[tuple[Path, _Replay]]:
    """Serve ``tests/fixtures/kube/<name>`` on 127.0.0.1; yields a kubeconfig for it and the server."""
    server = _Replay(("127.0.0.1", 0), _Handler)
    server.exchanges = json.loads((FIXTURES / name).read_text())["exchanges"]
    server.mismatches = []
    server.lock = threading.Lock()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    host, port = server.server_address[:2]
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        json.dumps(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "replay", "cluster": {"server": f"http://{host!s}:{port}"}}],
                "users": [{"name": "alice", "user": {"token": "recorded"}}],
                "contexts": [{"name": "replay", "context": {"cluster": "replay", "user": "alice"}}],
                "current-context": "replay",
            }
        )
    )
    try:
        yield kubeconfig, server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)
