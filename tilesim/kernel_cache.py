"""Where tilesim's caches live, and Numba's compiled kernels keyed by the source that made them.

Numba's ``cache=True`` keys a compiled function by its own file's modification time and size.
A kernel that inlines helpers from other files (the pipeline's ``compiled`` kernels, the
cycle-level loops of ``timing``) keeps its old machine code when only a helper's file changes:
after an edit or an upgrade of an editable install, a run would load code that no longer
matches the source and give wrong numbers without a word. :func:`configure_numba` points
Numba's cache at a folder named by a digest of every Python file of tilesim's packages, so any
change of the source starts a fresh cache. Each edit or upgrade leaves the old folder behind
(70-160 MiB of machine code each), so :func:`configure_numba` marks its folder used and
removes the digest folders of other sources that no process used for :data:`STALE_DAYS` days.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import os
import shutil
import time
from pathlib import Path

# The installed package folders whose code the kernels are compiled from (tilesim.render and
# the others are mapped onto the repository's top-level folders; located, not imported).
PACKAGES = ("tilesim", "tilesim.render", "tilesim.shaders", "tilesim.timing")


def cache_root() -> Path:
    """``TILESIM_CACHE`` or ``~/.cache/tilesim``: the folder of every cache tilesim keeps."""
    root = os.environ.get("TILESIM_CACHE")
    return Path(root) if root else Path.home() / ".cache" / "tilesim"


@functools.cache
def source_digest() -> str:
    """sha256 (16 hex digits) over the relative path and bytes of every ``.py`` file of
    PACKAGES, in a fixed order."""
    digest = hashlib.sha256()
    for name in PACKAGES:
        spec = importlib.util.find_spec(name)
        for folder in (spec.submodule_search_locations or []) if spec else []:
            base = Path(folder)
            for path in sorted(base.rglob("*.py")):
                digest.update(f"{name}/{path.relative_to(base).as_posix()}\0".encode())
                digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


# Digest folders (numba-<digest>, programs-<digest>) unused this long are another source's
# leftovers: an edited or upgraded tilesim never reads them again.
STALE_DAYS = 14
DIGEST_PREFIXES = ("numba-", "programs-")


def prune_stale(base: Path, current: Path, now: float | None = None) -> list[Path]:
    """Mark ``current`` used (its modification time now: Numba writes a folder only when it
    compiles, not when it loads) and remove the digest folders of other sources in ``base``
    unused for :data:`STALE_DAYS` days (those of ``current``'s digest, its generated programs
    among them, stay); returns those removed. A folder another process removes first, or
    cannot remove, is left alone: a cache is never worth an error."""
    now = time.time() if now is None else now
    digest = current.name.rpartition("-")[2]
    try:
        current.mkdir(parents=True, exist_ok=True)
        os.utime(current, (now, now))
        folders = list(base.iterdir())
    except OSError:
        return []
    removed = []
    for folder in folders:
        if (not folder.name.startswith(DIGEST_PREFIXES)
                or folder.name.rpartition("-")[2] == digest):
            continue
        try:
            stale = folder.is_dir() and now - folder.stat().st_mtime > STALE_DAYS * 86400
        except OSError:
            continue
        if stale:
            shutil.rmtree(folder, ignore_errors=True)
            removed.append(folder)
    return removed


@functools.cache
def configure_numba(numba) -> Path:
    """Point ``numba``'s cache (before any ``njit(cache=True)``) at a folder of this source:
    ``NUMBA_CACHE_DIR`` when the user set one, else :func:`cache_root`, then
    ``numba-<source digest>``. Returns the folder."""
    base = os.environ.get("NUMBA_CACHE_DIR")
    folder = (Path(base) if base else cache_root()) / f"numba-{source_digest()}"
    prune_stale(folder.parent, folder)
    numba.config.CACHE_DIR = str(folder)
    return folder
