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
from tilesim.render.replay import render_trace


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


@pytest.mark.slow
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


# Bad arguments (issue 35): the documented InputError (a TilesimError) naming the function and
# the argument, at the call; never a bare TypeError, ValueError or AttributeError, and never an
# empty result for a selection of frames the trace does not have.

BAD_RENDER_ARGUMENTS = [   # the argument, and a part of the error's text
    ({"trace": None}, "render_frames: trace=None (NoneType): expected a file path"),
    ({"trace": 3}, "render_frames: trace=3 (int): expected a file path"),
    ({"frames": 3}, "render_frames: frames=3 (int): expected frame numbers (a range or list "
                    "of ints), 'A:B' or None; one frame is frames=[3]"),
    ({"frames": [99]}, "sphere.tsim: frames: no frame 99: the trace has 3 frames (0..2)"),
    ({"frames": [0, -1]}, "sphere.tsim: frames: no frame -1: the trace has 3 frames"),
    ({"frames": range(2, 5)}, "sphere.tsim: frames=range(2, 5): the trace has 3 frames"),
    ({"frames": []}, "sphere.tsim: frames: no frame selected (the trace has 3 frames"),
    ({"frames": range(0)}, "sphere.tsim: frames=range(0, 0): no frame selected"),
    ({"frames": iter(())}, "sphere.tsim: frames: no frame selected"),
    ({"frames": ["1"]}, "render_frames: frames: '1' (str) is not a frame number"),
    ({"frames": [1.0]}, "render_frames: frames: 1.0 (float) is not a frame number"),
    ({"frames": [True]}, "render_frames: frames: True (bool) is not a frame number"),
    ({"size": (7,)}, "render_frames: size=(7,) (tuple): expected (W, H)"),
    ({"size": "64x48"}, "render_frames: size='64x48' (str): expected (W, H)"),
    ({"size": 64}, "render_frames: size=64 (int): expected (W, H)"),
    ({"size": (0, 48)}, "size[0] (width)=0 (int): expected a whole number in 1..16384"),
    ({"size": (64, 10**9)}, "size[1] (height)=1000000000 (int): expected a whole number"),
    ({"size": (64.5, 48)}, "size[0] (width)=64.5 (float): expected a whole number"),
    ({"tile_size": "16"}, "render_frames: tile_size='16' (str): expected a whole number"),
    ({"tile_size": 7}, "render_frames: tile_size=7 (int): expected an even number"),
    ({"tile_size": 10**9}, "tile_size=1000000000 (int): expected a whole number in 2..16384"),
    ({"technique": 3}, "render_frames: technique=3 (int): expected a technique's name"),
    ({"technique": "warp"}, "warp"),
    ({"mediump": "fp8"}, "render_frames: mediump='fp8' (str): expected one of 'fp32', 'fp16'"),
    ({"dsr_parameters": 3}, "render_frames: dsr_parameters=3 (int): expected a file path"),
]


@pytest.mark.parametrize("kwargs, message", BAD_RENDER_ARGUMENTS,
                         ids=[next(iter(k)) + "=" + repr(next(iter(k.values())))[:20]
                              for k, _ in BAD_RENDER_ARGUMENTS])
def test_render_frames_refuses_bad_arguments_at_the_call(trace, kwargs, message):
    kwargs = {"trace": trace, **kwargs}
    with pytest.raises(tilesim.errors.TilesimError) as caught:
        tilesim.render_frames(kwargs.pop("trace"), **kwargs)     # not iterated: at the call
    assert isinstance(caught.value, InputError)
    assert message in str(caught.value)


def test_render_frames_of_a_closed_trace_is_an_input_error(trace):
    with tilesim.open_trace(trace) as t:
        pass
    with pytest.raises(InputError, match="sphere.tsim: the trace is closed"):
        tilesim.render_frames(t)


def test_render_frames_takes_numpy_numbers_and_repeats(trace):
    frames = list(tilesim.render_frames(trace, frames=np.array([2, 0, 2]), size=np.array([32, 32])))
    assert [f.index for f in frames] == [0, 2]


@pytest.mark.parametrize("call, message", [
    (lambda: tilesim.open_trace(None), "open_trace: path=None (NoneType): expected a file path"),
    (lambda: tilesim.open_trace(3), "open_trace: path=3 (int): expected a file path"),
    (lambda: tilesim.open_trace(""), "open_trace: path='' (str): expected a file path"),
    (lambda: tilesim.open_results(None), "open_results: folder=None (NoneType): expected a file"),
    (lambda: tilesim.open_results(3), "open_results: folder=3 (int): expected a file path"),
    (lambda: tilesim.estimate(None), "estimate: frames=None (NoneType): expected the frames "
                                     "render_frames yields, or a `tilesim render --out` folder"),
    (lambda: tilesim.estimate(3), "estimate: frames=3 (int): expected the frames"),
    (lambda: tilesim.estimate([3]), "estimate: frames[0]: expected a FrameResult (what "
                                    "render_frames yields), got 3 (int)"),
    (lambda: tilesim.estimate([]), "estimate: frames: no frames to estimate (an iterator such "
                                   "as render_frames' is used up by its first use)"),
    (lambda: tilesim.estimate("x", gpu_config=3), "estimate: gpu_config=3 (int): expected a"),
    (lambda: tilesim.estimate("x", energy_config=b"e"), "estimate: energy_config=b'e' (bytes)"),
    (lambda: tilesim.estimate("x", screen="no"), "estimate: screen='no' (str): expected True "
                                                 "or False"),
])
def test_the_other_api_functions_refuse_bad_arguments(call, message):
    with pytest.raises(InputError) as caught:
        call()
    assert str(caught.value) == message or str(caught.value).startswith(message), caught.value


def test_estimate_of_a_used_up_iterator_is_an_error_not_nothing(trace):
    frames = tilesim.render_frames(trace, frames=[0])
    assert len(tilesim.estimate(frames)) == 1
    with pytest.raises(InputError, match="no frames to estimate"):
        tilesim.estimate(frames)

