"""A technique's state, and a renderer's, does not grow with the frames it has seen.

Every technique keeps state across frames (RE's signatures, TE's, memoization's LUT and its
pending frame pair, DSR's rates, EVR's), bounded by the screen's tiles and its tables, not
by the frames rendered: a study renders hundreds of frames in one process. The arrays
reachable from a technique set after frame 3 and after frame 11 of a trace must weigh the
same (within the few arrays whose size follows the frame's own work). A memoization unit
that kept every frame's outcome for a watcher that was not there grew a study's worker
processes by ~50 MB a frame until they were killed.
"""

from __future__ import annotations

import gc
import types

import numpy as np
import pytest
from repo_paths import TRACES

from tilesim.render.replay import render_frames
from tilesim.render.techniques.bus import Techniques
from tilesim.render.traces.trace_file import read_frames

_LEAVES = (types.ModuleType, types.FunctionType, types.BuiltinFunctionType, type,
           types.MethodType, str, bytes, int, float, bool, type(None))


def reachable_array_bytes(root) -> int:
    """Bytes of the NumPy arrays reachable from ``root`` through containers and objects
    (each base buffer once), not through modules, classes or functions."""
    seen, bases, total = set(), set(), 0
    stack = [root]
    while stack:
        obj = stack.pop()
        if id(obj) in seen or isinstance(obj, _LEAVES):
            continue
        seen.add(id(obj))
        if isinstance(obj, np.ndarray):
            base = obj
            while isinstance(base.base, np.ndarray):
                base = base.base
            if id(base) not in bases:
                bases.add(id(base))
                total += base.nbytes
            continue
        stack.extend(gc.get_referents(obj))
    return total


@pytest.mark.slow
@pytest.mark.parametrize("name", ["te", "re", "evr", "re+evr", "dsr", "memo", "memo/32"])
def test_a_techniques_state_does_not_grow_with_frames(name):
    frames = read_frames(TRACES / "runner-1196x768.tsim")[:12]
    hooks = Techniques.from_name(name)
    weights = {}
    for result in render_frames(frames, 1196, 768, technique=hooks):
        if result.index in (3, 11):
            weights[result.index] = reachable_array_bytes(hooks)
    assert set(weights) == {3, 11}
    assert weights[11] <= weights[3] * 1.10 + (1 << 20), (
        f"{name}: {weights[3] / 2**20:.1f} MiB after frame 3, "
        f"{weights[11] / 2**20:.1f} MiB after frame 11")


def test_the_reachable_bytes_count_arrays_once_and_not_through_classes():
    a = np.zeros(1000, dtype=np.int64)
    holder = types.SimpleNamespace(a=a, view=a[10:], again=[a, {"k": a}], cls=np.ndarray)
    assert reachable_array_bytes(holder) == 8000


@pytest.mark.slow
def test_techniques_side_by_side_do_not_grow_with_frames():
    """The study's shared render: the baseline with TE, RE and memoization beside it."""
    from tilesim.render.replay import render_side_by_side

    techniques = {n: Techniques.from_name(n) for n in ("baseline", "te", "re", "memo")}
    weights = {}
    for name, result, _ in render_side_by_side(TRACES / "runner-1196x768.tsim", techniques,
                                               range(12)):
        if name == "memo" and result.index in (3, 11):
            weights[result.index] = reachable_array_bytes(techniques)
    assert set(weights) == {3, 11}
    assert weights[11] <= weights[3] * 1.10 + (1 << 20), weights


@pytest.mark.slow
@pytest.mark.parametrize("trace", ["runner-1196x768.tsim", "render_to_texture-1196x768.tsim"])
def test_a_renderers_state_does_not_grow_with_frames(trace):
    """The renderer's own state across frames (its targets, the texture caches of recent
    passes, packed textures, prepared programs): bounded by the trace's resources."""
    from tilesim.render.replay import renderer_for
    from tilesim.render.traces.trace_file import open_trace

    with open_trace(TRACES / trace) as handle:
        width, height = handle.width, handle.height
    frames = read_frames(TRACES / trace)[:12]
    renderer = renderer_for(width, height, technique="re+evr")
    weights = {}
    for result in renderer.render(frames):
        if result.index in (3, 11):
            weights[result.index] = reachable_array_bytes(renderer)
    assert set(weights) == {3, 11}
    assert weights[11] <= weights[3] * 1.10 + (1 << 20), weights
