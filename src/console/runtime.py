"""Process-wide tuning applied once by the console script's entry point, and the process's terminal."""

from __future__ import annotations

import contextlib
import errno
import gc
import os

# A sweep keeps tens of thousands of parsed records and findings alive. With CPython's default
# thresholds (700, 10, 10) the collector walks that whole heap again and again: measured at 256
# simulated nodes, evaluating checks took 32 ms CPU per node instead of 15, and the TUI stalled
# for a full collection now and then. Young collections every 100,000 allocations, full ones rarely.
GC_THRESHOLDS = (100_000, 50, 1000)


def tune_gc() -> None:
    """Move everything loaded so far out of the collector's sight and make collections rarer.

    Modules, classes and parsers built at import time live as long as the process; ``gc.freeze``
    keeps every later full collection from scanning them.
    """
    gc.freeze()
    gc.set_threshold(*GC_THRESHOLDS)


def leave_dead_terminal() -> bool:
    """After a hangup: point stdin, stdout and stderr that were a terminal now gone at /dev/null; whether any was.

    A write to a hung-up terminal fails with EIO (a write of nothing too, which is how it is told from a
    live one, where a ``kill -HUP`` leaves the terminal to restore). What the command still prints
    (a summary, the TUI's last frames) then goes nowhere instead of failing, or stopping Textual's writer
    thread, which the app then waited for on its way out.
    """
    gone = False
    for fd in (0, 1, 2):
        # Not gated on isatty: on a hung-up terminal its ioctl fails with EIO too, so isatty says False.
        # A zero-byte write to a pipe or a file succeeds (or fails otherwise), and leaves them alone.
        with contextlib.suppress(OSError):
            try:
                os.write(fd, b"")
                continue
            except OSError as exc:
                if exc.errno != errno.EIO:  # a terminal open for reading only, say: not a dead one
                    continue
            null = os.open(os.devnull, os.O_RDWR)
            os.dup2(null, fd)
            os.close(null)
            gone = True
    return gone
