"""Host keys accepted on first contact (``--accept-new``) go to the audit log: node, key type, fingerprint.

The SSH transport writes such a key to known_hosts itself, while it connects, and lists it in
``accepted_host_keys``; ``HostKeyAudit``, subscribed to the sweep engine, writes each one to the audit
log once: when the node's verdict is out (its connection came first) and when the sweep ends, so a
console killed later in a long sweep has still recorded the keys of the nodes it finished.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from typing import TYPE_CHECKING, Protocol

from console.store.faults import StoreWrites
from console.sweep.events import Event, NodeDone, SweepDone

if TYPE_CHECKING:
    from console.store import Store

ACTION = "accept-host-key"


class AcceptedKey(Protocol):
    """What the audit keeps of a key (``console.transport.AcceptedHostKey``)."""

    node: str
    known_hosts_entry: str
    key_type: str
    fingerprint: str
    known_hosts: str
    accepted_at: float


class HostKeyAudit:
    """Engine subscriber: audits each host key ``transport`` accepted, once, tagged with the sweep it came in.

    Only ``SshTransport`` accepts keys (its ``accepted_host_keys``); any other transport has none to audit.
    """

    def __init__(self, writes: StoreWrites, transport: object) -> None:
        # The engine's writes: a failed store counts the keys it could not audit, and the sweep says so.
        self._writes = writes
        self._transport = transport
        self._written = 0

    def __call__(self, event: Event) -> None:
        if isinstance(event, NodeDone | SweepDone):
            self.flush(event.sweep_id)

    def flush(self, sweep_id: int | None = None) -> None:
        """Audit the keys accepted since the last call."""
        keys: Sequence[AcceptedKey] = getattr(self._transport, "accepted_host_keys", ())
        for key in keys[self._written :]:
            self._writes.write("host key audit", partial(self._audit, key=key, sweep_id=sweep_id))
        self._written = len(keys)

    @staticmethod
    def _audit(store: Store, *, key: AcceptedKey, sweep_id: int | None) -> None:
        store.audit(
            ACTION,
            [key.node],
            inputs={
                "known_hosts_entry": key.known_hosts_entry,
                "key_type": key.key_type,
                "fingerprint": key.fingerprint,
                "known_hosts": key.known_hosts,
                "accepted_at": key.accepted_at,
                "sweep_id": sweep_id,
            },
            commands=[],
            output="",
            outcome=f"accepted {key.key_type} key {key.fingerprint} of {key.node} into {key.known_hosts}",
        )
