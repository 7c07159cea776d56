"""Translate what sockets and asyncssh raise into ``TransportError``s an operator can act on."""

from __future__ import annotations

import errno
import socket

import asyncssh

from console.transport.errors import ErrorKind, TransportError
from console.transport.hostkeys import HostKeyCheck

_UNREACHABLE_ERRNOS = {errno.EHOSTUNREACH, errno.ENETUNREACH, errno.EHOSTDOWN, errno.ENETDOWN, errno.EADDRNOTAVAIL}


def tcp_failure(node: str, where: str, exc: OSError | TimeoutError, timeout_s: float) -> TransportError:
    """The TCP connect to a node's SSH port failed."""
    if isinstance(exc, TimeoutError):
        return TransportError(
            node, ErrorKind.CONNECT_TIMEOUT, f"TCP connect to {where} got no answer in {timeout_s:g} s (host down?)"
        )
    if isinstance(exc, socket.gaierror):
        return TransportError(node, ErrorKind.UNREACHABLE, f"cannot resolve {where}: {exc.strerror}")
    if isinstance(exc, ConnectionRefusedError):
        return TransportError(node, ErrorKind.REFUSED, f"connection refused by {where} (sshd not running?)")
    if exc.errno in _UNREACHABLE_ERRNOS:
        return TransportError(node, ErrorKind.UNREACHABLE, f"{where}: {exc.strerror or exc}")
    return TransportError(node, ErrorKind.UNREACHABLE, f"cannot connect to {where}: {exc}")


def tunnel_failure(node: str, where: str, exc: asyncssh.ChannelOpenError) -> TransportError:
    """The jump host could not open a TCP connection to the node for us."""
    reason = exc.reason or "no reason given"
    kind = ErrorKind.REFUSED if "refused" in reason.lower() else ErrorKind.UNREACHABLE
    return TransportError(node, kind, f"jump host could not reach {where}: {reason}")


def handshake_failure(
    node: str, where: str, exc: Exception, check: HostKeyCheck, timeout_s: float
) -> TransportError | None:
    """The SSH handshake or login failed; None when ``exc`` is not a connection failure at all."""
    if isinstance(exc, asyncssh.HostKeyNotVerifiable):
        return check.error(where, exc.reason)
    if isinstance(exc, asyncssh.PermissionDenied):
        return TransportError(
            node,
            ErrorKind.AUTH_FAILED,
            f"{where} rejected every key offered ({exc.reason}); check IdentityFile and the node's authorized_keys",
        )
    if isinstance(exc, TimeoutError):
        return TransportError(
            node,
            ErrorKind.CONNECT_TIMEOUT,
            f"SSH handshake with {where} did not finish within {timeout_s:g} s (sshd hung or overloaded?)",
        )
    if isinstance(exc, asyncssh.ChannelOpenError):
        return tunnel_failure(node, where, exc)
    if isinstance(exc, asyncssh.ConnectionLost | ConnectionResetError | BrokenPipeError):
        return TransportError(
            node,
            ErrorKind.DISCONNECTED,
            f"{where} closed the connection during the SSH handshake (sshd MaxStartups reached?)",
        )
    if isinstance(exc, asyncssh.Error):
        return TransportError(node, ErrorKind.PROTOCOL, f"SSH with {where} failed: {exc.reason}")
    if isinstance(exc, OSError):
        return tcp_failure(node, where, exc, timeout_s)
    return None


def session_failure(node: str, exc: Exception) -> TransportError | None:
    """A command's channel failed; None when ``exc`` is not a channel or connection failure."""
    if isinstance(exc, asyncssh.ChannelOpenError):
        return TransportError(
            node,
            ErrorKind.CHANNEL_REFUSED,
            f"the node refused a new session: {exc.reason} (too many at once for sshd MaxSessions?)",
        )
    if isinstance(exc, asyncssh.Error | ConnectionError):
        reason = exc.reason if isinstance(exc, asyncssh.Error) else str(exc)
        return TransportError(node, ErrorKind.DISCONNECTED, f"connection lost while the command ran: {reason}")
    return None
