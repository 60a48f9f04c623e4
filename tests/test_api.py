"""The Python API at ``tilesim`` (tilesim/api.py): open a trace, render frames, estimate.

It renders and estimates exactly as the commands do: frames bit-identical to ``tilesim
render``'s PNGs, counters equal to its counter files, estimates equal to ``tilesim estimate
--json`` on that folder. Importing a light module (``tilesim.errors``) loads no API.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from trace_helpers import sphere_trace

import tilesim
from tilesim.cli import main
from tilesim.errors import InputError
from tilesim.images import read_png
from tilesim.render.pipeline.counters import load_counters
from tilesim.render.studies.runner import render_trace


@pytest.fixture(scope="module")
def trace(tmp_path_factory) -> Path:
    return sphere_trace(tmp_path_factory.mktemp("api") / "sphere.tsim", 3, size=(64, 48))


def test_importing_a_light_module_loads_no_api():
    code = ("import sys, tilesim.errors; "
            "print(sorted(m for m in sys.modules if m.startswith('tilesim.')))")
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            check=True).stdout
    assert "tilesim.api" not in loaded and "tilesim.render" not in loaded, loaded


def test_the_api_names_resolve_on_first_use():
    from tilesim import api

    for name in ("open_trace", "render_frames", "estimate", "Trace", "FrameResult",
                 "FrameEstimate"):
        assert getattr(tilesim, name) is getattr(api, name)
        assert name in dir(tilesim)
    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        tilesim.nothing  # noqa: B018


def test_open_trace_reads_the_header(trace):
    with tilesim.open_trace(trace) as t:
        assert (t.width, t.height, t.frame_count) == (64, 48, 3)
    with pytest.raises(InputError, match="no such trace file"):
        tilesim.open_trace(trace.with_name("missing.tsim"))


def test_render_yields_the_commands_frames_and_counters(trace, tmp_path):
    """Frames and counters of tilesim.render are those `tilesim render` writes."""
    out = tmp_path / "re"
    assert main(["render", str(trace), "--out", str(out), "--technique", "re",
                 "--frames", "1:3", "--tile-size", "32"]) == 0
    frames = list(tilesim.render_frames(trace, frames="1:3", technique="re", tile_size=32))
    assert [f.index for f in frames] == [1, 2]
    for f in frames:
        assert f.image.dtype == np.uint8 and f.image.shape == (48, 64, 4)
        png = read_png(out / "frames" / f"{f.index:06d}.png", mode="RGBA")
        assert np.array_equal(f.image, png)
        saved = load_counters(out / "counters" / f"{f.index:06d}.npz")
        assert saved.scalars == f.counters.scalars
        assert len(saved.passes) == len(f.counters.passes)
        for a, b in zip(saved.passes, f.counters.passes, strict=True):
            assert a.tiles.keys() == b.tiles.keys()
            assert all(np.array_equal(a.tiles[k], b.tiles[k]) for k in a.tiles)


def test_render_takes_an_open_trace_ranges_and_the_runners_options(trace):
    with tilesim.open_trace(trace) as t:
        frames = list(tilesim.render_frames(t, frames=range(0, 2), technique="dsr", size=(32, 32)))
    same = list(render_trace(trace, frames=range(0, 2), technique="dsr", size=(32, 32)))
    assert [f.image.shape for f in frames] == [(32, 32, 4)] * 2
    for a, b in zip(frames, same, strict=True):
        assert np.array_equal(a.image, b.image)
        assert a.counters.scalars == b.counters.scalars
    assert [f.index for f in tilesim.render_frames(trace, frames=[2, 0])] == [0, 2]


@pytest.mark.parametrize("kwargs, message", [
    ({"technique": "warp"}, "warp"),
    ({"frames": "5:9"}, "the trace has frames 0..2"),
])
def test_bad_options_are_input_errors(trace, kwargs, message):
    with pytest.raises(InputError, match=message):
        list(tilesim.render_frames(trace, **kwargs))


def test_estimate_is_tilesim_estimate(trace, tmp_path, capsys):
    """tilesim.estimate on rendered frames, and on the render's folder, gives what `tilesim
    estimate --json` prints for that folder, screen energy included."""
    out = tmp_path / "baseline"
    assert main(["render", str(trace), "--out", str(out)]) == 0
    capsys.readouterr()
    assert main(["estimate", str(out), "--json"]) == 0
    expected = json.loads(capsys.readouterr().out)["frames"]

    from_frames = tilesim.estimate(tilesim.render_frames(trace))
    from_folder = tilesim.estimate(out)
    for estimates in (from_frames, from_folder):
        assert json.loads(json.dumps([e.to_dict() for e in estimates])) == expected
    e = from_frames[0]
    assert e.seconds > 0 and e.energy > 0 and e.screen_energy > 0 and e.cycles > 0
    # print(estimate): one line, not every stage, unit and source (issue 33)
    assert repr(e) == (
        f"FrameEstimate(frame=0, seconds={e.seconds:.4g}, cycles={e.cycles:.0f}, "
        f"energy={e.energy:.4g} J (GPU {e.gpu_energy:.4g}, memory {e.memory_energy:.4g}), "
        f"screen_energy={e.screen_energy:.4g} J, traffic={e.traffic_total:.0f} bytes)")
    assert tilesim.estimate(tilesim.render_frames(trace), screen=False)[0].screen_energy is None
    assert tilesim.estimate([]) == []


def test_a_frame_result_prints_in_one_short_line(trace):
    """print(FrameResult) names the frame, the image's shape and a few counters: no pixels,
    no counter arrays (issue 33: it dumped the image and every counter)."""
    [result] = tilesim.render_frames(trace, frames=[1])
    counters = result.counters
    assert repr(counters) == (
        f"FrameCounters(frame=1, passes={len(counters.passes)}, "
        f"draw_calls={counters.total('draw_calls')}, "
        f"fragments_shaded={counters.total('fragments_shaded')})")
    assert counters.total("fragments_shaded") > 0
    assert repr(result) == f"FrameResult(index=1, image=48x64x4 numpy uint8, counters={counters!r})"
    assert str(result) == repr(result) and "\n" not in str(result)
