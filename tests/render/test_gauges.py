"""The 3D cluster gauges (seed 004 §6.2's speedometer and tachometer,
``tilesim.render.workloads.gauges``): they render on tilesim as Mesa llvmpipe renders them,
the needle turns with the drive signal from frame to frame, the depth test does work, and the
two gauges differ."""

from __future__ import annotations

import functools

import numpy as np
import pytest
from conftest import require_mesa

from tilesim.render.workloads import cluster, gauges

SIZE = 160
FRAMES = 16


@functools.cache
def built(kind: str, frames: int = FRAMES, size: int = SIZE):
    require_mesa()
    return cluster.build(kind, size, size, frames)


@functools.cache
def rendered(kind: str):
    from tilesim.render.replay import render_frames

    return list(render_frames(built(kind), SIZE, SIZE))


def _needle_draw(frame) -> np.ndarray:
    """The needle's u_mvp (16 floats, column-major): set between the frame's first draw (the
    hub) and its second (the needle)."""
    draws = [k for k, c in enumerate(frame) if c.op == "drawElements"]
    (mvp,) = [c.args["values"] for c in frame[draws[0] + 1:draws[1]]
              if c.op == "uniform" and c.args["name"] == "u_mvp"]
    return np.asarray(mvp, dtype=np.float64)


def test_drive_signal_is_a_plausible_car_and_the_needle_follows_it():
    speed, rpm, gear = gauges.drive_signal(np.arange(300), seed=0)
    assert speed.min() >= 0 and speed.max() <= 260
    assert np.all((gear >= 1) & (gear <= 6)) and np.all((rpm >= 800) & (rpm <= 8000))
    # at most a hard acceleration: 30 km/h a second, 1 km/h a frame
    assert np.abs(np.diff(speed)).max() < 1.0 and np.abs(np.diff(speed)).max() > 0.05
    # the gear goes up with the speed and the engine speed drops at an upshift
    up = np.flatnonzero(np.diff(gear) > 0)
    assert up.size and np.all(rpm[up + 1] < rpm[up])
    for kind, sweep in (("speedometer", 270.0), ("tachometer", 240.0)):
        style = gauges.STYLES[kind]
        assert gauges.needle_degrees(style, 0.0) == -sweep / 2
        assert gauges.needle_degrees(style, style.top) == sweep / 2
        assert gauges.needle_degrees(style, 2 * style.top) == sweep / 2  # pinned at the stop
    other = gauges.drive_signal(np.arange(300), seed=1)[0]
    assert not np.allclose(other, speed)


@pytest.mark.mesa
@pytest.mark.parametrize("kind", ["speedometer", "tachometer"])
def test_gauge_frames_are_3d_depth_tested_and_static_data_is_uploaded_once(kind):
    frames = built(kind)
    setup_ops = {"createProgram", "texImage2D", "bufferData", "generateMipmap"}
    assert setup_ops <= {c.op for c in frames[0]}
    for frame in frames[1:]:
        ops = [c.op for c in frame]
        assert not setup_ops & set(ops)
        assert ops.count("drawElements") == (7 if kind == "speedometer" else 8)
        assert ops[-1] == "endFrame" and ops.count("bufferSubData") == 1  # the readout
        enabled = [c.args for c in frame if c.op == "enable"]
        assert {"cap": "DEPTH_TEST"} in enabled
        clears = [c for c in frame if c.op == "clear"]
        assert "DEPTH_BUFFER_BIT" in str(clears[0].args)
    # a perspective projection: the needle's clip w depends on the position (row 3 of
    # u_mvp, column-major: elements 3, 7, 11 not all zero)
    mvp = _needle_draw(frames[1]).reshape(4, 4)
    assert np.abs(mvp[:3, 3]).max() > 1e-3


@pytest.mark.mesa
@pytest.mark.parametrize("kind", ["speedometer", "tachometer"])
def test_the_needle_turns_between_frames_and_hides_what_it_covers(kind):
    results = rendered(kind)
    frames = built(kind)
    speed, rpm, _ = gauges.drive_signal(np.arange(FRAMES), 0)
    angles = gauges.needle_degrees(gauges.STYLES[kind], speed if kind == "speedometer" else rpm)
    # the needle's transform changes with the signal, frame after frame
    first, last = _needle_draw(frames[1]), _needle_draw(frames[-1])
    assert abs(angles[-1] - angles[1]) > 2.0 and not np.allclose(first, last)
    # ... and so does the image, most where the needle is: pixels change in a thin wedge,
    # not all over the dial
    changed = np.any(results[1].image != results[-1].image, axis=-1)
    assert 20 < changed.sum() < 0.1 * SIZE * SIZE
    # the depth test works: the early test kills fragments (the face under the hub,
    # needle and ticks; the text under the needle), every frame
    for r in results[1:]:
        assert r.counters.total("early_z_tested") > 0
        assert r.counters.total("early_z_killed") > 0.01 * r.counters.total("early_z_tested")


@pytest.mark.mesa
def test_speedometer_and_tachometer_differ():
    speedometer, tachometer = (rendered(k)[1].image for k in ("speedometer", "tachometer"))
    assert speedometer.shape == tachometer.shape == (SIZE, SIZE, 4)
    assert np.mean(np.any(speedometer != tachometer, axis=-1)) > 0.3
    # the speedometer's band is blue, the tachometer's red zone red (mean colour of the dial)
    s, t = speedometer[..., :3].reshape(-1, 3).mean(0), tachometer[..., :3].reshape(-1, 3).mean(0)
    assert s[2] > s[0] and t[0] > t[2]


@pytest.mark.mesa
@pytest.mark.slow
@pytest.mark.parametrize("kind", ["speedometer", "tachometer"])
def test_gauges_match_mesa_llvmpipe(kind):
    from skimage.metrics import structural_similarity

    from tilesim.render.reference.replay_gl import reference_frames

    compared = (1, FRAMES - 1)
    references = reference_frames(built(kind), width=SIZE, height=SIZE, frames=compared)
    for index, reference in zip(compared, references, strict=True):
        mssim = structural_similarity(rendered(kind)[index].image[..., :3], reference[..., :3],
                                      gaussian_weights=True, sigma=1.5,
                                      use_sample_covariance=False, data_range=255,
                                      channel_axis=2)
        assert mssim >= 0.99, f"{kind} frame {index}: MSSIM {mssim:.4f} against llvmpipe"
