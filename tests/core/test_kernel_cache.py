"""The kernel cache's leftovers: digest folders of another source are removed once unused for
``STALE_DAYS``; the current one, recent ones and folders tilesim did not name stay."""

from __future__ import annotations

import os

from tilesim.kernel_cache import STALE_DAYS, prune_stale


def _folder(base, name, age_days, now):
    path = base / name
    path.mkdir()
    (path / "index.nbi").write_bytes(b"x")
    stamp = now - age_days * 86400
    os.utime(path, (stamp, stamp))
    return path


def test_stale_digest_folders_go_and_the_rest_stay(tmp_path):
    now = 2_000_000_000.0
    current = _folder(tmp_path, "numba-current", STALE_DAYS + 30, now)   # old, but in use
    programs = _folder(tmp_path, "programs-current", STALE_DAYS + 30, now)  # the same source
    old_kernels = _folder(tmp_path, "numba-0123456789abcdef", STALE_DAYS + 1, now)
    old_programs = _folder(tmp_path, "programs-0123456789abcdef", STALE_DAYS + 1, now)
    recent = _folder(tmp_path, "numba-fedcba9876543210", STALE_DAYS - 1, now)
    other = _folder(tmp_path, "throughput", STALE_DAYS + 100, now)      # not a digest folder

    removed = prune_stale(tmp_path, current, now=now)

    assert sorted(removed) == sorted([old_kernels, old_programs])
    assert not old_kernels.exists() and not old_programs.exists()
    assert current.exists() and programs.exists() and recent.exists() and other.exists()
    assert current.stat().st_mtime == now          # marked used: kept next time too


def test_a_missing_cache_folder_is_made_and_nothing_fails(tmp_path):
    current = tmp_path / "cache" / "numba-abc"
    assert prune_stale(tmp_path / "cache", current) == []
    assert current.is_dir()
