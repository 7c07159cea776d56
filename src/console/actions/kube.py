"""Kubernetes cordon, taint and node condition, and the reverse, as strategic-merge patches of the Node.

Taking a node out (``cordon``, or ``drain`` on a Kubernetes pool) sends two requests per Node:

- ``PATCH /api/v1/nodes/{name}``: ``spec.unschedulable`` (when the node was schedulable), the taint
  ``instinct-console/remediation=<stage>:NoSchedule``, and annotations recording what the console set,
  who, when, the reason, the sweep, the case's stage and number. ``spec.taints`` carries no patch merge
  key (the merge tags sit on ``Taint.key``, not on the list: docs/sources/kubernetes.md), so a strategic
  merge replaces the whole list: the body lists every taint the node had, with ours added or changed.
  The patch carries the ``resourceVersion`` it was computed from, so a node changed meanwhile is
  refused by the server (409) instead of losing someone's taint.
- ``PATCH /api/v1/nodes/{name}/status``: the condition ``InstinctConsoleRemediation`` (status True,
  reason the stage, message the reason), merged by ``type`` (``NodeStatus.conditions`` has that merge
  key), which is how node-problem-detector reports a node problem too.

The names are the console's own: the AMD GPU operator taints ``amd-gpu-unhealthy`` and acts on
``AMDGPU*`` conditions (a condition of that name would start its remediation workflow), and
node-problem-detector owns its condition types. Running pods are not evicted: this is the
Kubernetes counterpart of a Slurm drain.

Return to service removes only what the ``instinct-console/set`` annotation says the console set:
never another's cordon, taint or condition, even forced (forced, a foreign cordon is lifted and the
rest stays). The patch bodies are plain dicts built by pure functions. The ``kubernetes`` package
(optional extra ``kube``) is imported only when a real API client is made from a kubeconfig.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Mapping
from typing import Any, Protocol

from console.actions.model import Decision
from console.actions.slurm import clean_reason

TAINT_KEY = "instinct-console/remediation"
# What console releases before the remediation lifecycle set: removed like ours where the node's
# annotations say the console cordoned it (they predate the ``set`` annotation).
LEGACY_TAINT_KEY = "amd.com/gpu-unhealthy"
TAINT_EFFECT = "NoSchedule"
CONDITION_TYPE = "InstinctConsoleRemediation"
ANNOTATION_PREFIX = "instinct-console/"
ANNOTATIONS = ("drain-reason", "drained-by", "drained-at", "sweep-id", "set", "stage", "case")
PATCH_CONTENT_TYPE = "application/strategic-merge-patch+json"
# What the console can set on a Node, as the ``set`` annotation lists it.
CORDON, TAINT, CONDITION = "cordon", "taint", "condition"
MAINTENANCE = "maintenance"  # the stage word of a console cordon that opened no remediation case
_LABEL_VALUE_MAX = 63


class KubeNodeApi(Protocol):
    """The three Node calls the console makes; a real client or a recorded exchange in tests."""

    def list_nodes(self) -> list[dict[str, Any]]:
        """``GET /api/v1/nodes``: every Node object (as JSON dicts)."""
        ...

    def patch_node(self, name: str, body: dict[str, Any], content_type: str) -> dict[str, Any]:
        """``PATCH /api/v1/nodes/{name}`` with ``body``; returns the patched Node."""
        ...

    def patch_node_status(self, name: str, body: dict[str, Any], content_type: str) -> dict[str, Any]:
        """``PATCH /api/v1/nodes/{name}/status`` with ``body``; returns the patched Node."""
        ...


def taint_value(text: str) -> str:
    """``text`` as a label value (a taint's value must be one): ``[A-Za-z0-9._-]``, 63 chars, alnum ends."""
    value = re.sub(r"[^A-Za-z0-9._-]+", "-", clean_reason(text))[:_LABEL_VALUE_MAX]
    return re.sub(r"^[^A-Za-z0-9]+|[^A-Za-z0-9]+$", "", value)


def condition_reason(stage: str) -> str:
    """A stage as a condition reason (CamelCase, as API conventions ask): ``awaiting-repair`` -> ``AwaitingRepair``."""
    return "".join(part.capitalize() for part in re.split(r"[^A-Za-z0-9]+", stage) if part)


def node_path(name: str) -> str:
    """The Node's API path."""
    return f"/api/v1/nodes/{name}"


def status_path(name: str) -> str:
    """The Node's status subresource path (conditions are written there)."""
    return node_path(name) + "/status"


def _annotation(name: str) -> str:
    return ANNOTATION_PREFIX + name


def _stamp(when: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(when))


def _taints(node: Mapping[str, Any]) -> list[dict[str, Any]]:
    return [t for t in (node.get("spec") or {}).get("taints") or [] if isinstance(t, dict)]


def _conditions(node: Mapping[str, Any]) -> list[dict[str, Any]]:
    return [c for c in (node.get("status") or {}).get("conditions") or [] if isinstance(c, dict)]


def _annotations(node: Mapping[str, Any]) -> dict[str, str]:
    found = (node.get("metadata") or {}).get("annotations") or {}
    return found if isinstance(found, dict) else {}


def cordoned(node: Mapping[str, Any]) -> bool:
    """``spec.unschedulable`` is set."""
    return bool((node.get("spec") or {}).get("unschedulable"))


def ours(node: Mapping[str, Any]) -> bool:
    """The console cordoned or tainted this node (its annotation is there)."""
    return _annotation("drained-by") in _annotations(node)


def owned_parts(node: Mapping[str, Any]) -> frozenset[str]:
    """What the console set on this node, as its ``set`` annotation records (nothing when not ours)."""
    if not ours(node):
        return frozenset()
    recorded = _annotations(node).get(_annotation("set"))
    if recorded is None:  # an older console's cordon: it set the cordon and its legacy taint
        return frozenset({CORDON, TAINT})
    return frozenset(part for part in recorded.split(",") if part in (CORDON, TAINT, CONDITION))


def _our_taint_key(node: Mapping[str, Any]) -> str:
    legacy = ours(node) and _annotation("set") not in _annotations(node)
    return LEGACY_TAINT_KEY if legacy else TAINT_KEY


def our_taint(node: Mapping[str, Any]) -> dict[str, Any] | None:
    """The console's taint on the node, if the console set it and it is still there."""
    if TAINT not in owned_parts(node):
        return None
    key = _our_taint_key(node)
    return next((t for t in _taints(node) if t.get("key") == key), None)


def our_condition(node: Mapping[str, Any]) -> dict[str, Any] | None:
    """The console's condition on the node, if the console set it and it is still there."""
    if CONDITION not in owned_parts(node):
        return None
    return next((c for c in _conditions(node) if c.get("type") == CONDITION_TYPE), None)


def held_reason(node: Mapping[str, Any]) -> str | None:
    """The reason the console holds this node out with, or None when it does not (any more).

    The console holds it while everything it set to keep pods off is still there: its cordon (when it
    made one) and its taint. An operator's ``kubectl uncordon`` or removed taint ends the hold.
    """
    parts = owned_parts(node)
    if not parts or (CORDON in parts and not cordoned(node)) or (TAINT in parts and our_taint(node) is None):
        return None
    return _annotations(node).get(_annotation("drain-reason"), "")


def shown_stage(node: Mapping[str, Any]) -> str | None:
    """The case stage the console last wrote on the node (its ``stage`` annotation), if it holds the node."""
    return _annotations(node).get(_annotation("stage")) if ours(node) else None


def describe_node(node: Mapping[str, Any]) -> str:
    """``cordoned by the console (alice): xgmi link down`` / ``schedulable, taints ...`` and the console's condition."""
    notes = _annotations(node)
    taints = [f"{t.get('key')}={t.get('value', '')}:{t.get('effect')}" for t in _taints(node)]
    state = "cordoned" if cordoned(node) else "schedulable"
    if ours(node):
        state += f" by the console ({notes.get(_annotation('drained-by'))}): {notes.get(_annotation('drain-reason'))}"
        if held_reason(node) is None:
            state += " (released outside the console)"
    elif cordoned(node):
        state += " by others"
    text = state + (f", taints {', '.join(taints)}" if taints else "")
    condition = next((c for c in _conditions(node) if c.get("type") == CONDITION_TYPE), None)
    if condition is not None:
        text += f", condition {CONDITION_TYPE}={condition.get('status')} ({condition.get('reason')})"
    return text


def _condition(stage: str, message: str, when: float) -> dict[str, Any]:
    stamp = _stamp(when)
    return {
        "type": CONDITION_TYPE,
        "status": "True",
        "reason": condition_reason(stage),
        "message": message,
        "lastHeartbeatTime": stamp,
        "lastTransitionTime": stamp,
    }


def _message(reason: str, stage: str, user: str, sweep_id: int | None, case_id: int | None) -> str:
    where = f"case #{case_id} " if case_id is not None else ""
    sweep = f", sweep {sweep_id}" if sweep_id is not None else ""
    return f"{clean_reason(reason)} ({where}{stage}, by {user}{sweep})"


def cordon_patches(
    node: Mapping[str, Any],
    *,
    reason: str,
    user: str,
    when: float,
    sweep_id: int | None,
    stage: str,
    case_id: int | None,
) -> list[tuple[str, dict[str, Any]]]:
    """The two requests that take ``node`` out: (path, strategic-merge body) for the Node and its status.

    The console claims the cordon only when the node was schedulable (or it had claimed it before):
    a cordon someone else made stays theirs.
    """
    name = str((node.get("metadata") or {}).get("name"))
    take_cordon = not cordoned(node) or CORDON in owned_parts(node)
    parts = [CORDON] if take_cordon else []
    parts += [TAINT, CONDITION]
    annotations = {
        _annotation("drain-reason"): clean_reason(reason),
        _annotation("drained-by"): user,
        _annotation("drained-at"): _stamp(when),
        _annotation("set"): ",".join(parts),
        _annotation("stage"): stage,
    }
    if sweep_id is not None:
        annotations[_annotation("sweep-id")] = str(sweep_id)
    if case_id is not None:
        annotations[_annotation("case")] = str(case_id)
    mine = {"key": TAINT_KEY, "value": taint_value(stage), "effect": TAINT_EFFECT}
    # Ours is replaced; an older console's taint too, when the node says the console set it.
    replaced = {TAINT_KEY, _our_taint_key(node)} if TAINT in owned_parts(node) else {TAINT_KEY}
    others = [t for t in _taints(node) if t.get("key") not in replaced]
    spec: dict[str, Any] = {"taints": [*others, mine]}
    if take_cordon:
        spec["unschedulable"] = True
    status = {"status": {"conditions": [_condition(stage, _message(reason, stage, user, sweep_id, case_id), when)]}}
    return [(node_path(name), {"metadata": {"annotations": annotations}, "spec": spec}), (status_path(name), status)]


def stage_patches(
    node: Mapping[str, Any], *, stage: str, case_id: int | None, user: str, when: float
) -> list[tuple[str, dict[str, Any]]]:
    """The requests that move the console's taint and condition on ``node`` to ``stage`` (empty: nothing of ours)."""
    name = str((node.get("metadata") or {}).get("name"))
    requests: list[tuple[str, dict[str, Any]]] = []
    annotations = {_annotation("stage"): stage}
    if case_id is not None:
        annotations[_annotation("case")] = str(case_id)
    taint = our_taint(node)
    if taint is not None:
        taints = [{**t, "value": taint_value(stage)} if t is taint else t for t in _taints(node)]
        requests.append((node_path(name), {"metadata": {"annotations": annotations}, "spec": {"taints": taints}}))
    if our_condition(node) is not None:
        reason = _annotations(node).get(_annotation("drain-reason"), "")
        sweep = _annotations(node).get(_annotation("sweep-id"))
        message = _message(reason, stage, user, int(sweep) if sweep and sweep.isdigit() else None, case_id)
        # Still True: the transition time stays the cordon's (the merge by type keeps the field unsent).
        condition = {k: v for k, v in _condition(stage, message, when).items() if k != "lastTransitionTime"}
        requests.append((status_path(name), {"status": {"conditions": [condition]}}))
    return requests


def uncordon_patches(node: Mapping[str, Any], *, force: bool = False) -> list[tuple[str, dict[str, Any]]]:
    """The requests that return ``node`` to service, undoing only what the console set.

    A cordon the console did not make is lifted only when ``force``; a taint or a condition it did not
    set is never removed, forced or not.
    """
    name = str((node.get("metadata") or {}).get("name"))
    parts = owned_parts(node)
    spec: dict[str, Any] = {}
    if cordoned(node) and (CORDON in parts or force):
        spec["unschedulable"] = False
    if our_taint(node) is not None:
        key = _our_taint_key(node)
        spec["taints"] = [t for t in _taints(node) if t.get("key") != key]
    body: dict[str, Any] = {"spec": spec}
    if parts:
        body["metadata"] = {"annotations": dict.fromkeys(map(_annotation, ANNOTATIONS))}
    requests = []
    # The condition goes first: should the Node patch then fail, the annotations still say the taint
    # and cordon are the console's, and a second uncordon finishes the job. The other way round, a
    # condition left behind without its annotations would be no one's.
    if our_condition(node) is not None:
        delete = {"status": {"conditions": [{"$patch": "delete", "type": CONDITION_TYPE}]}}
        requests.append((status_path(name), delete))
    return [*requests, (node_path(name), body)]


def with_resource_version(body: dict[str, Any], node: Mapping[str, Any]) -> dict[str, Any]:
    """``body`` carrying the version of ``node`` it was decided on: the server answers 409 if it changed."""
    version = (node.get("metadata") or {}).get("resourceVersion")
    if not version:
        return body
    return {**body, "metadata": {**body.get("metadata", {}), "resourceVersion": version}}


def decide(cordon: bool, node: Mapping[str, Any] | None, force: bool) -> Decision:
    """Ownership and idempotence for one Node (``None``: not read yet)."""
    if node is None:
        return Decision(False, "skip: Kubernetes nodes not read yet")
    if cordon:
        if held_reason(node) is not None and cordoned(node):
            return Decision(False, f"no-op: already {describe_node(node)}", no_op=True)
        if cordoned(node) and not ours(node) and not force:
            return Decision(False, f"skip: {describe_node(node)}; not taken over without --force")
        return Decision(True, f"cordon, taint and set {CONDITION_TYPE} (now {describe_node(node)})")
    parts = owned_parts(node)
    if parts:
        if held_reason(node) is None:
            return Decision(True, f"remove what the console left ({describe_node(node)})")
        if CORDON not in parts and cordoned(node) and not force:  # it joined someone's cordon (forced)
            return Decision(True, f"untaint, clear {CONDITION_TYPE}; the cordon is another's ({describe_node(node)})")
        return Decision(True, f"uncordon, untaint and clear {CONDITION_TYPE} ({describe_node(node)})")
    if not cordoned(node):
        return Decision(False, f"no-op: {describe_node(node)}", no_op=True)
    if force:
        return Decision(True, f"uncordon {describe_node(node)} (forced; their taints and conditions stay)")
    return Decision(False, f"skip: {describe_node(node)}; the console uncordons only its own nodes without --force")


def request_argv(path: str, body: Mapping[str, Any]) -> tuple[str, ...]:
    """The request as the plan shows it: method, path, content type and the exact JSON body."""
    return ("PATCH", path, PATCH_CONTENT_TYPE, json.dumps(body, sort_keys=True))


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

    def patch_node_status(self, name: str, body: dict[str, Any], content_type: str) -> dict[str, Any]:
        """Send ``body`` to the Node's status subresource (the node conditions live there)."""
        answer: Any = self._api.patch_node_status(name, body, _content_type=content_type, _preload_content=False)
        node: dict[str, Any] = json.loads(answer.data)
        return node
