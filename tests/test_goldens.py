"""Golden frames: every golden re-renders bit for bit; a changed frame is reported."""

from __future__ import annotations

import shutil

import numpy as np
import pytest

from tilesim.images import png_bytes, read_png
from tilesim.render.studies import goldens
from tilesim.thresholds import GOLDEN_ACCEPT_MSSIM

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
