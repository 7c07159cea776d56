"""Renderers: one module per tool family, each exposing ``handle(ctx, argv) -> SimReply``.

They print what the real tool prints on the node's ROCm line, byte for byte in layout, from the
node state in ``ctx.node`` plus per-invocation jitter from ``ctx.rng``.
"""
