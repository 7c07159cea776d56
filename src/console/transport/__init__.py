"""The only code that talks to nodes: SSH (asyncssh) for the fleet, local subprocesses on the node itself.

Everything the sweep engine needs is exported here; the other modules are internals.
"""

from console.transport.base import CappedOutput, CommandResult, OutputSink, Transport, WrappedTransport
from console.transport.errors import ErrorKind, TransportError
from console.transport.hostkeys import AcceptedHostKey
from console.transport.local import LocalTransport
from console.transport.settings import SshSettings, SshTarget
from console.transport.ssh import SshTransport

__all__ = [
    "AcceptedHostKey",
    "CappedOutput",
    "CommandResult",
    "ErrorKind",
    "LocalTransport",
    "OutputSink",
    "SshSettings",
    "SshTarget",
    "SshTransport",
    "Transport",
    "TransportError",
    "WrappedTransport",
]
