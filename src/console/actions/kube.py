"""Kubernetes cordon and taint, and the reverse, as strategic-merge patches of the Node object.

Cordoning sets ``spec.unschedulable``, adds the taint ``amd.com/gpu-unhealthy=<reason>:NoSchedule``
(merged by key, so other taints stay) and records reason, operator, time and sweep in annotations,
because Nodes have no reason field. Running pods are not evicted: this is the Kubernetes counterpart
of a Slurm drain. The console undoes only what it did (its annotation marks the node as its own)
unless forced, and it never touches the AMD GPU operator's own ``amd-gpu-unhealthy`` taint.

The patch bodies are plain dicts built by pure functions. The ``kubernetes`` package (optional extra
``kube``) is imported only when a real API client is made from a kubeconfig.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Mapping
from typing import Any, Protocol

from console.actions.model import Decision
from console.actions.slurm import clean_reason

TAINT_KEY = "amd.com/gpu-unhealthy"
TAINT_EFFECT = "NoSchedule"
ANNOTATION_PREFIX = "instinct-console/"
ANNOTATIONS = ("drain-reason", "drained-by", "drained-at", "sweep-id")
PATCH_CONTENT_TYPE = "application/strategic-merge-patch+json"
_LABEL_VALUE_MAX = 63


class KubeNodeApi(Protocol):
    """The two Node calls the console makes; a real client or a recorded exchange in tests."""

    def list_nodes(self) -> list[dict[str, Any]]:
        """``GET /api/v1/nodes``: every Node object (as JSON dicts)."""
        ...

    def patch_node(self, name: str, body: dict[str, Any], content_type: str) -> dict[str, Any]:
        """``PATCH /api/v1/nodes/{name}`` with ``body``; returns the patched Node."""
        ...


def taint_value(reason: str) -> str:
    """The reason as a label value (a taint's value must be one): ``[A-Za-z0-9._-]``, 63 chars, alnum ends."""
    value = re.sub(r"[^A-Za-z0-9._-]+", "-", clean_reason(reason))[:_LABEL_VALUE_MAX]
    return re.sub(r"^[^A-Za-z0-9]+|[^A-Za-z0-9]+$", "", value)


def _annotation(name: str) -> str:
    return ANNOTATION_PREFIX + name


def cordon_patch(reason: str, user: str, when: float, sweep_id: int | None) -> dict[str, Any]:
    """Strategic-merge patch: unschedulable, our taint (merged by key) and the reason annotations."""
    annotations = {
        _annotation("drain-reason"): clean_reason(reason),
        _annotation("drained-by"): user,
        _annotation("drained-at"): time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(when)),
    }
    if sweep_id is not None:
        annotations[_annotation("sweep-id")] = str(sweep_id)
    return {
        "metadata": {"annotations": annotations},
        "spec": {
            "unschedulable": True,
            "taints": [{"key": TAINT_KEY, "value": taint_value(reason), "effect": TAINT_EFFECT}],
        },
    }


def uncordon_patch() -> dict[str, Any]:
    """Strategic-merge patch: schedulable again, our taint deleted by key, our annotations removed."""
    return {
        "metadata": {"annotations": dict.fromkeys(map(_annotation, ANNOTATIONS))},
        "spec": {"unschedulable": False, "taints": [{"$patch": "delete", "key": TAINT_KEY}]},
    }


def with_resource_version(body: dict[str, Any], node: Mapping[str, Any]) -> dict[str, Any]:
    """``body`` carrying the version of ``node`` it was decided on: the server answers 409 if it changed."""
    version = (node.get("metadata") or {}).get("resourceVersion")
    if not version:
        return body
    return {**body, "metadata": {**body.get("metadata", {}), "resourceVersion": version}}


def _taints(node: Mapping[str, Any]) -> list[dict[str, Any]]:
    return [t for t in (node.get("spec") or {}).get("taints") or [] if isinstance(t, dict)]


def _annotations(node: Mapping[str, Any]) -> dict[str, str]:
    found = (node.get("metadata") or {}).get("annotations") or {}
    return found if isinstance(found, dict) else {}


def cordoned(node: Mapping[str, Any]) -> bool:
    """``spec.unschedulable`` is set."""
    return bool((node.get("spec") or {}).get("unschedulable"))


def ours(node: Mapping[str, Any]) -> bool:
    """The console cordoned or tainted this node (its annotation is there)."""
    return _annotation("drained-by") in _annotations(node)


def describe_node(node: Mapping[str, Any]) -> str:
    """``cordoned by the console (alice): xgmi link down`` / ``tainted amd-gpu-unhealthy`` / ``schedulable``."""
    notes = _annotations(node)
    taints = [f"{t.get('key')}={t.get('value', '')}:{t.get('effect')}" for t in _taints(node)]
    state = "cordoned" if cordoned(node) else "schedulable"
    if ours(node):
        state += f" by the console ({notes.get(_annotation('drained-by'))}): {notes.get(_annotation('drain-reason'))}"
    elif cordoned(node):
        state += " by others"
    return state + (f", taints {', '.join(taints)}" if taints else "")


def decide(cordon: bool, node: Mapping[str, Any] | None, force: bool) -> Decision:
    """Ownership and idempotence for one Node (``None``: not read yet)."""
    if node is None:
        return Decision(True, "state not read yet: checked again when executing")
    if cordon:
        if ours(node) and cordoned(node):
            return Decision(False, f"no-op: already {describe_node(node)}", no_op=True)
        if cordoned(node) and not force:
            return Decision(False, f"skip: {describe_node(node)}; not taken over without --force")
        return Decision(True, f"cordon and taint (now {describe_node(node)})")
    mine = ours(node)
    if not mine and not cordoned(node) and not any(t.get("key") == TAINT_KEY for t in _taints(node)):
        return Decision(False, f"no-op: {describe_node(node)}", no_op=True)
    if mine:
        return Decision(True, f"uncordon and untaint ({describe_node(node)})")
    if force:
        return Decision(True, f"uncordon and untaint {describe_node(node)} (forced)")
    return Decision(False, f"skip: {describe_node(node)}; the console uncordons only its own nodes without --force")


def request_argv(name: str, body: Mapping[str, Any]) -> tuple[str, ...]:
    """The request as the plan shows it: method, path, content type and the exact JSON body."""
    return ("PATCH", f"/api/v1/nodes/{name}", PATCH_CONTENT_TYPE, json.dumps(body, sort_keys=True))


class KubernetesClientApi:
    """``KubeNodeApi`` over the official ``kubernetes`` client and the user's kubeconfig (imported lazily)."""

    def __init__(self, kubeconfig: str | None = None, context: str | None = None) -> None:
        try:
            from kubernetes import client, config
        except ImportError as exc:
            raise RuntimeError(
                "cordon/uncordon need the 'kubernetes' package: pip install 'instinct-console[kube]'"
            ) from exc
        try:
            config.load_kube_config(config_file=kubeconfig, context=context)
        except Exception as exc:  # the client's ConfigException names no file: say which one was read
            where = kubeconfig or "$KUBECONFIG or ~/.kube/config"
            raise RuntimeError(f"cannot use the kubeconfig {where}: {exc}") from exc
        self._api = client.CoreV1Api()

    def list_nodes(self) -> list[dict[str, Any]]:
        """Every Node, as the API server sent it."""
        # Unparsed (_preload_content=False): the raw urllib3 response, whatever the client's stubs say.
        response: Any = self._api.list_node(_preload_content=False)
        items = json.loads(response.data).get("items", [])
        return [item for item in items if isinstance(item, dict)]

    def patch_node(self, name: str, body: dict[str, Any], content_type: str) -> dict[str, Any]:
        """Send ``body`` with ``content_type`` (the client would otherwise pick JSON Patch for a list body)."""
        answer: Any = self._api.patch_node(name, body, _content_type=content_type, _preload_content=False)
        node: dict[str, Any] = json.loads(answer.data)
        return node
