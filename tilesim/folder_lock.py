"""One run at a time per output folder: an exclusive lock on a file in the folder.

``tilesim render`` writes a folder's frames, counters, ``frames.json`` and ``render.json``
from one process; two runs into one folder would interleave them (and the second's resume
check would read a half-written folder). :func:`lock_folder` takes an exclusive
``flock(2)`` lock on ``FOLDER/.tilesim.lock`` without waiting: a second run into the same
folder fails at once with one line naming the folder. The lock is the kernel's and belongs
to the open file, so it goes when the process ends, however it ends (``kill -9`` included);
the file itself stays (empty, never rewritten, so a refused run changes nothing in the
folder) and means nothing once no process holds it.

A process keeps the locks it took until it ends, or until :func:`release_folder` (a
long-lived process that renders into a folder and then hands it on). Taking a lock this
process already holds is a no-op. Where ``fcntl`` does not exist (Windows), there is no lock.
"""

from __future__ import annotations

import os
from pathlib import Path

from tilesim.errors import InputError

try:
    import fcntl
except ImportError:  # not POSIX: no lock
    fcntl = None

LOCK_FILE = ".tilesim.lock"

_held: dict[Path, int] = {}   # folder (resolved) -> descriptor of its locked file
# folder (resolved) -> what taking its lock made: the folders (outermost first), the lock file
_made: dict[Path, tuple[list[Path], Path | None]] = {}


def lock_folder(folder: str | os.PathLike, command: str = "tilesim") -> Path:
    """Hold the exclusive lock of ``folder`` (created if need be) for this process; InputError
    naming the folder when another process holds it (``command``, e.g. "tilesim render",
    names what is refused). Returns the lock file's path."""
    folder = Path(folder)
    key = folder.resolve()
    path = folder / LOCK_FILE
    if key in _held or fcntl is None:
        return path
    made = [p for p in (folder, *folder.parents) if not os.path.lexists(p)][::-1]
    lock_existed = os.path.lexists(path)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_RDONLY | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o644)
    except OSError as exc:
        raise InputError(f"cannot create the lock file {LOCK_FILE}: "
                         f"{exc.strerror or exc}", source=str(folder)) from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        os.close(fd)
        if isinstance(exc, BlockingIOError):
            raise InputError(f"another {command} is writing into this folder (it holds "
                             f"{LOCK_FILE}); wait for it to end, or give another folder",
                             source=str(folder)) from None
        raise InputError(f"cannot lock {LOCK_FILE}: {exc.strerror or exc}",
                         source=str(folder)) from None
    _held[key] = fd
    _made[key] = (made, None if lock_existed else path)
    return path


def release_folder(folder: str | os.PathLike, *, undo: bool = False) -> None:
    """Give up this process's lock on ``folder`` (nothing if it holds none). ``undo``: the
    run was refused, so the lock file and the folders that taking the lock created are
    removed too (a refused run leaves nothing behind); what existed before stays."""
    key = Path(folder).resolve()
    fd = _held.pop(key, None)
    made, lock_file = _made.pop(key, ([], None))
    if fd is None:
        return
    if undo and lock_file is not None:
        try:
            os.unlink(lock_file)
        except OSError:
            pass
    os.close(fd)   # closing the only descriptor of the open file releases the lock
    if undo:
        for made_folder in reversed(made):
            try:
                os.rmdir(made_folder)     # only when empty: never anything of the user's
            except OSError:
                break



def holds(folder: str | os.PathLike) -> bool:
    """Whether this process holds the lock of ``folder`` (it wrote there and the folder is
    its own to read)."""
    return Path(folder).resolve() in _held
