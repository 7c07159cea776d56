"""The one way the console writes a file: reports, exports, bundles and cached reports.

Sites run the console as root on shared admin hosts, in directories others can write (``/tmp``, a
textfile collector's directory). Writing through the target's name would follow a symlink planted there
and overwrite whatever it points to; a temporary name anyone can predict (``.out.prom.<ms>.tmp``) can be
planted too. So every output is written to a temporary file the kernel creates exclusively under an
unpredictable name (``tempfile.mkstemp``: ``O_CREAT | O_EXCL | O_NOFOLLOW``, mode 0600) in the target's
own directory, flushed to disk, and renamed over the target, which ``rename(2)`` replaces as a name,
never following it. Before that, the target must be absent or a regular file of the invoking user:
a symlink, a directory, a device or a FIFO is refused whatever the options, and another user's file
only with ``--force-overwrite``. A reader (node_exporter, a prolog) sees the old file or the new one.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO

# What the refusal tells the operator to do about another user's file.
FORCE_HINT = "--force-overwrite replaces it"


class OutputRefused(Exception):
    """An output file the console will not write (a link, another user's file, a directory it may not
    create files in): the reason, in one line (exit 2)."""


class OutputFailed(OSError):
    """An output file the console could not write for want of room or a writable disk (exit 6 where a
    command documents it): the old file, if any, is left as it was and no temporary file behind."""


# Errors of the filesystem, not of the operator's choice of path: the verdicts still stand.
_FAILURES = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EIO, errno.EFBIG})


def _unwritable(target: Path, exc: OSError) -> Exception:
    """The error to raise for ``exc`` met while writing ``target``."""
    if exc.errno in _FAILURES:
        return OutputFailed(exc.errno, exc.strerror or str(exc), str(target))
    return OutputRefused(f"cannot write {target}: {exc.strerror or exc}")


def check_target(path: str | Path, *, force: bool = False) -> None:
    """Raise ``OutputRefused`` unless ``path`` may be replaced: absent, or a regular file of ours.

    ``force`` allows another user's regular file, never a symlink or anything but a regular file.
    """
    target = Path(path)
    try:
        found = os.lstat(target)
    except FileNotFoundError:
        return
    except OSError as exc:
        raise OutputRefused(f"cannot write {target}: {exc.strerror or exc}") from None
    if stat.S_ISLNK(found.st_mode):
        raise OutputRefused(f"refusing to write {target}: it is a symbolic link; remove it or write elsewhere")
    if not stat.S_ISREG(found.st_mode):
        raise OutputRefused(f"refusing to write {target}: it is not a regular file")
    if found.st_uid != os.geteuid() and not force:
        raise OutputRefused(f"refusing to write {target}: it belongs to uid {found.st_uid}, not to you ({FORCE_HINT})")


@contextlib.contextmanager
def replacing(path: str | Path, *, force: bool = False) -> Iterator[IO[bytes]]:
    """A binary file to write ``path``'s new content to; it replaces ``path`` whole when the block ends.

    Refused (``OutputRefused``) before anything is written when ``path`` may not be replaced; a failure
    while writing (a full disk) leaves the old file as it was and no temporary file behind.
    """
    target = Path(path)
    check_target(target, force=force)
    directory = target.parent
    try:
        fd, temporary = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=directory)
    except OSError as exc:
        raise _unwritable(target, exc) from None
    try:
        with os.fdopen(fd, "wb") as handle:
            yield handle
            handle.flush()
            os.fchmod(handle.fileno(), 0o666 & ~_umask())  # as an ordinary create would make it
            os.fsync(handle.fileno())
        check_target(target, force=force)  # it may have changed while we wrote
        os.replace(temporary, target)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        if isinstance(exc, OSError):
            raise _unwritable(target, exc) from None
        raise
    _sync_directory(directory)


def write_file(path: str | Path, content: str | bytes, *, force: bool = False) -> None:
    """Replace ``path`` with ``content`` (text is written as UTF-8), as ``replacing`` says."""
    data = content.encode("utf-8") if isinstance(content, str) else content
    with replacing(path, force=force) as handle:
        handle.write(data)


def _umask() -> int:
    """The process's umask (read by setting it, there is no other portable way, and set back at once)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _sync_directory(directory: Path) -> None:
    """Make the rename itself durable; a directory that cannot be opened for it is left as it is."""
    with contextlib.suppress(OSError):
        fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
