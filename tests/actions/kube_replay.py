"""Replays a recorded Kubernetes API exchange (``tests/fixtures/kube/*_exchange.json``) as a ``KubeNodeApi``.

No API server can run on these machines, so the console is given this object instead of the
``kubernetes`` client: it fails unless each request the console sends (method, path, content type and
the exact JSON body) is the recorded one, in order, and answers with the recorded response. Each
file's ``about`` says how its responses follow the API's rules (docs/sources/kubernetes.md).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

FIXTURES = Path(__file__).parents[1] / "fixtures" / "kube"


class RecordedApi:
    """``KubeNodeApi`` that replays a recorded exchange and fails on any request that differs from it."""

    def __init__(self, name: str) -> None:
        self.exchanges: list[dict[str, Any]] = json.loads((FIXTURES / name).read_text())["exchanges"]

    def _next(self, method: str, path: str) -> dict[str, Any]:
        assert self.exchanges, f"unexpected request {method} {path}: the recorded exchange is over"
        exchange = self.exchanges.pop(0)
        assert (exchange["request"]["method"], exchange["request"]["path"]) == (method, path)
        return exchange

    def list_nodes(self) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = self._next("GET", "/api/v1/nodes")["response"]["body"]["items"]
        return items

    def patch_node(self, name: str, body: dict[str, Any], content_type: str) -> dict[str, Any]:
        return self._patch(f"/api/v1/nodes/{name}", body, content_type)

    def patch_node_status(self, name: str, body: dict[str, Any], content_type: str) -> dict[str, Any]:
        return self._patch(f"/api/v1/nodes/{name}/status", body, content_type)

    def _patch(self, path: str, body: dict[str, Any], content_type: str) -> dict[str, Any]:
        exchange = self._next("PATCH", path)
        assert content_type == exchange["request"]["content_type"]
        assert json.loads(json.dumps(body)) == exchange["request"]["body"]
        status = exchange["response"]["status"]
        if status >= 400:  # raised as the kubernetes client raises an error answer (403: ForbiddenException)
            from kubernetes.client import exceptions

            kind = {403: exceptions.ForbiddenException, 404: exceptions.NotFoundException}.get(status)
            error = (kind or exceptions.ApiException)(status=status, reason=exchange["response"]["body"]["reason"])
            error.body = json.dumps(exchange["response"]["body"])
            raise error
        node: dict[str, Any] = exchange["response"]["body"]
        return node
