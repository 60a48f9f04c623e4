"""Golden frames: every golden re-renders bit for bit; a changed frame is reported."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tilesim.images import png_bytes, read_png
from tilesim.render.studies import goldens
from tilesim.thresholds import GOLDEN_ACCEPT_MSSIM

ROOT = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.slow


def test_every_golden_re_renders_identically():
    entries = goldens.load_manifest()
    assert entries, "goldens/manifest.json lists no goldens"
    for g in entries:
        assert g.mssim_vs_mesa is not None and g.mssim_vs_mesa >= GOLDEN_ACCEPT_MSSIM
    assert goldens.check(entries) == []


def test_a_changed_frame_is_reported(tmp_path, monkeypatch):
    entries = goldens.load_manifest()[:1]
    folder = tmp_path / "goldens"
    shutil.copytree(goldens.GOLDENS, folder)
    image = read_png(folder / entries[0].png, "RGBA").copy()
    image[10:12, 20:23] = [255, 0, 255, 255]
    (folder / entries[0].png).write_bytes(png_bytes(image))
    monkeypatch.setattr(goldens, "GOLDENS", folder)
    failures = goldens.check(entries)
    assert [(g.name, n) for g, n in failures] == [(entries[0].name, 6)]
    assert np.array_equal(read_png(folder / entries[0].png, "RGBA")[10, 20], [255, 0, 255, 255])


@pytest.mark.parametrize("spec, message", [
    ("traces/bunny.tsim:abc", "frame 'abc' is not a number"),
    ("traces/bunny.tsim:99", "the trace has frames 0..2"),
    ("traces/missing.tsim:1", "no such trace file"),
])
def test_goldens_add_refuses_bad_frames_in_one_line(spec, message):
    """A bad frame list is one line naming the spec, exit 2, the manifest untouched (it was a
    ValueError traceback)."""
    manifest = (ROOT / "goldens" / "manifest.json").read_bytes()
    done = subprocess.run([sys.executable, "-m", "tilesim.cli", "goldens", "add", spec],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stderr
    assert message in done.stderr and len(done.stderr.strip().splitlines()) == 1
    assert (ROOT / "goldens" / "manifest.json").read_bytes() == manifest
