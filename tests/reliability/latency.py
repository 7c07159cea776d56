"""A user-space TCP proxy that adds latency: the stand-in for ``tc netem``, which this kernel lacks.

``DelayProxy(listen, target, delay_s)`` forwards every connection to ``target``; each chunk is
delivered ``delay_s`` after it arrived, in order, in both directions (so a round trip costs twice
``delay_s``). It runs in the caller's event loop; ``close`` drops every proxied connection.
"""

from __future__ import annotations

import asyncio
import contextlib
import time


class DelayProxy:
    """``listen`` -> ``target`` with ``delay_s`` of one-way latency."""

    def __init__(self, listen: tuple[str, int], target: tuple[str, int], delay_s: float) -> None:
        self.listen = listen
        self.target = target
        self.delay_s = delay_s
        self.connections = 0
        self._server: asyncio.Server | None = None
        self._pipes: set[asyncio.Task[None]] = set()

    async def start(self) -> DelayProxy:
        self._server = await asyncio.start_server(self._accept, *self.listen)
        return self

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
        for pipe in list(self._pipes):
            pipe.cancel()
        await asyncio.gather(*self._pipes, return_exceptions=True)

    async def _accept(self, client_in: asyncio.StreamReader, client_out: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            node_in, node_out = await asyncio.open_connection(*self.target)
        except OSError:
            client_out.transport.abort()
            return
        pipes = [
            asyncio.ensure_future(self._pipe(client_in, node_out)),
            asyncio.ensure_future(self._pipe(node_in, client_out)),
        ]
        self._pipes.update(pipes)
        try:
            await asyncio.gather(*pipes, return_exceptions=True)
        finally:
            self._pipes.difference_update(pipes)
            for writer in (client_out, node_out):
                writer.transport.abort()

    async def _pipe(self, source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
        """Copy ``source`` to ``sink``, each chunk ``delay_s`` late; the sender keeps the order."""
        queue: asyncio.Queue[tuple[float, bytes]] = asyncio.Queue()

        async def deliver() -> None:
            while True:
                due, chunk = await queue.get()
                if not chunk:
                    sink.write_eof()
                    return
                await asyncio.sleep(max(0.0, due - time.monotonic()))
                sink.write(chunk)
                await sink.drain()

        sender = asyncio.ensure_future(deliver())
        try:
            while True:
                chunk = await source.read(65536)
                queue.put_nowait((time.monotonic() + self.delay_s, chunk))
                if not chunk:
                    break
            await sender
        except (ConnectionError, OSError):
            pass
        finally:
            sender.cancel()
            with contextlib.suppress(asyncio.CancelledError, ConnectionError, OSError):
                await sender
