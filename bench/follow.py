"""What following the history database costs the console: ``python bench/follow.py [NODES] [SWEEPS]``.

Fills a scratch history with SWEEPS sweeps of NODES node verdicts (1,000 and 200 by default), then
times the follower's two reads (``console.store.follow``): a poll that finds nothing new (it runs every
2 s in an open console) and the first look of ``tui --no-sweep`` (each node's newest verdict). Prints
one JSON line; the operator guide's figures (section 11) are this script's on the development host.
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path

from console.store import Store
from console.store.follow import newest_verdicts, verdicts_since, watermark


def main() -> int:
    nodes = [f"n{i:04d}" for i in range(int(sys.argv[1]) if len(sys.argv) > 1 else 1000)]
    sweeps = int(sys.argv[2]) if len(sys.argv) > 2 else 200
    with tempfile.TemporaryDirectory() as scratch:
        store = Store(Path(scratch) / "history.sqlite")
        with store.transaction() as conn:
            for k in range(sweeps):
                sweep = conn.execute(
                    "INSERT INTO sweeps (started_at, level, origin) VALUES (?, 'quick', 'watch')", (float(k),)
                ).lastrowid
                conn.executemany(
                    "INSERT INTO node_verdicts (sweep_id, node, status, families, reason, updated_at)"
                    " VALUES (?, ?, 'PASS', '{}', '', 0)",
                    [(sweep, n) for n in nodes],
                )
        mark = watermark(store)
        polls = 1000
        started = time.perf_counter()
        for _ in range(polls):
            verdicts_since(store, mark)
        poll_us = (time.perf_counter() - started) / polls * 1e6
        started = time.perf_counter()
        found = newest_verdicts(store, nodes)
        first_ms = (time.perf_counter() - started) * 1e3
        store.close()
    assert len(found) == len(nodes)
    print(
        json.dumps(
            {
                "nodes": len(nodes),
                "sweeps": sweeps,
                "empty_poll_us": round(poll_us, 1),
                "first_look_ms": round(first_ms, 1),
            }
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
