"""The real-workload suite, on a few entries: capture, import, render, compare with Mesa."""

from __future__ import annotations

import pytest
from conftest import require_mesa, require_tools

from tilesim.studies.suite import SUITE, run_entry, slug
from tilesim.thresholds import SUITE_MIN_MSSIM

pytestmark = [pytest.mark.mesa, pytest.mark.slow]


@pytest.mark.parametrize("spec", ["glmark2-es2:build", "glmark2-es2:texture:texture-filter=mipmap",
                                  "es2gears"])
def test_suite_entry_matches_mesa_on_every_frame(spec, tmp_path):
    require_mesa()
    require_tools("apitrace", "xvfb-run", "glmark2-es2")
    assert spec in SUITE
    result = run_entry(spec, tmp_path, frames=5, size=(800, 600))
    assert result["frames"] == 5
    assert result["min_mssim"] >= SUITE_MIN_MSSIM, result
    assert (tmp_path / slug(spec) / "tilesim" / "frames" / "000004.png").exists()
