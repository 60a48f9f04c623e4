"""Atomic output: write to a temporary name in the same folder, then rename.

An interrupted run therefore never leaves a half-written file under the final name, only a
temporary one: ``.<final name>.<8 hex digits>.tmp`` next to it (``TEMPORARY``), which
:func:`remove_temporaries` clears in the folders a command owns, by exact name, never
recursively.
"""

from __future__ import annotations

import json
import os
import re
import secrets
from pathlib import Path

from tilesim.errors import InputError
from tilesim.inputs import shown_name

# A temporary of the file named ``name``: "." + name + "." + 8 lowercase hex digits + ".tmp".
TEMPORARY = re.compile(r"\.(?P<name>.+)\.[0-9a-f]{8}\.tmp")


def default_mode() -> int:
    """The permissions an ordinary new file gets (0o666 less the umask); temporaries are made
    0o600 and get these before the rename."""
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


def temporary_name(name: str) -> str:
    """A fresh temporary name for the file ``name`` (matches ``TEMPORARY``)."""
    return f".{name}.{secrets.token_hex(4)}.tmp"


def _create_temporary(path: Path) -> tuple[int, Path]:
    """Create and open (O_EXCL, mode 0o600) a temporary next to ``path``."""
    for _ in range(100):
        tmp = path.with_name(temporary_name(path.name))
        try:
            return os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0),
                           0o600), tmp
        except FileExistsError:
            continue
    raise FileExistsError(f"{path.parent}: no free temporary name for {path.name}")


def write_bytes(path: str | os.PathLike, data: bytes) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = _create_temporary(path)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, default_mode())
        os.replace(tmp, path)
    except BaseException as exc:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        if isinstance(exc, OSError) and exc.filename is None:
            # A full disk (or a file size limit) fails the write naming no file: name it.
            raise OSError(exc.errno, exc.strerror or str(exc), str(path)) from exc
        raise
    return path


def write_text(path: str | os.PathLike, text: str) -> Path:
    """``text`` as UTF-8, atomically. A file name that is not UTF-8 reaches text as lone
    surrogates (os.fsdecode), which UTF-8 cannot encode: they are written as U+FFFD, the
    way a browser or editor shows such a name."""
    return write_bytes(path, shown_name(text).encode("utf-8"))


def write_json(path: str | os.PathLike, obj) -> Path:
    return write_text(path, json.dumps(obj, indent=2, sort_keys=False) + "\n")


def is_temporary(name: str, final: str | re.Pattern) -> bool:
    """Whether ``name`` is a temporary this module makes for a file whose name matches
    ``final`` (a regular expression matched in full, or an exact name)."""
    match = TEMPORARY.fullmatch(name)
    if match is None:
        return False
    if isinstance(final, str):
        return match["name"] == final
    return final.fullmatch(match["name"]) is not None


def remove_temporaries(folder: str | os.PathLike, final: str | re.Pattern) -> int:
    """Remove the temporaries an interrupted write left in ``folder`` itself (not its
    sub-folders) for files whose names match ``final``; every other file stays. Returns how
    many were removed."""
    removed = 0
    try:
        entries = list(os.scandir(folder))
    except (FileNotFoundError, NotADirectoryError):
        return 0
    for entry in entries:
        if is_temporary(entry.name, final) and entry.is_file(follow_symlinks=False):
            try:
                os.unlink(entry.path)
            except FileNotFoundError:
                continue
            removed += 1
    return removed


def check_output(path: str | os.PathLike, *, folder: bool) -> Path:
    """Check, before any work, that ``path`` can be written as a folder (``folder``) or a
    file: InputError naming it when it exists as the other kind, or when a part of it is a
    file, or its nearest existing folder cannot be written. Returns the path."""
    path = Path(path)
    kind = "a folder" if folder else "a file"
    if path.exists() and path.is_dir() != folder:
        raise InputError(f"exists and is not {kind} (give {kind} to write)", source=str(path))
    existing = path if path.is_dir() else path.parent
    while not existing.exists():
        existing = existing.parent
    if not existing.is_dir():
        raise InputError(f"{existing} is a file, so {path} cannot be created",
                         source=str(path))
    if not os.access(existing, os.W_OK | os.X_OK):
        raise InputError(f"cannot write in {existing} (permission denied)", source=str(path))
    return path
