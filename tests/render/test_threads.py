"""A render on several threads (:func:`tilesim.jit.in_threads`) against the same render on one:
every frame and every per-tile counter of every pass identical, whatever the thread count.

The kernels split only work whose results cannot depend on the split: lanes that write their
own outputs (plane interpolation). Texture sampling stays on one thread: its caches' LRU replay
needs each cache's accesses in lane order. The scenes are small, so the tests lower
:data:`tilesim.jit.SPLIT_MIN` to make every draw split (and check that one did); the bundled
trace runs at the shipped value.
"""

from __future__ import annotations

import pytest
from render_snapshots import assert_same_renders, render_snapshot
from repo_paths import TRACES

from tilesim import jit
from tilesim.render.workloads.conformance_scenes import record_scene

pytestmark = pytest.mark.skipif(not jit.AVAILABLE, reason="the split runs compiled kernels")


def _render(frames, width, height, threads, techniques=None):
    with jit.threads_pinned(threads):
        return render_snapshot(frames, width, height, techniques)


@pytest.fixture
def split_small(monkeypatch):
    """Every stage with 64 lanes or more splits; counts the calls that ran in parts."""
    monkeypatch.setattr(jit, "SPLIT_MIN", 64)
    calls = []
    real = jit.in_threads

    def counting(function, parts):
        parts = list(parts)
        calls.append(len(parts))
        return real(function, parts)

    monkeypatch.setattr("tilesim.render.pipeline.fragment_shading.in_threads", counting)
    return calls


@pytest.mark.parametrize("scene", ["tex_min_filters", "render_to_texture", "mediump_precision",
                                   "cubemap", "tex_wrap_modes", "texture_3d", "blend_factors"])
def test_a_scene_renders_identically_on_one_and_on_three_threads(scene, split_small):
    frames, width, height = record_scene(scene)
    one = _render(frames, width, height, 1)
    assert max(split_small, default=1) == 1       # one thread: never in parts
    split_small.clear()
    assert_same_renders(one, _render(frames, width, height, 3))
    assert max(split_small, default=1) > 1        # the stages did run in parts


@pytest.mark.parametrize("techniques", ["te+re+evr", "dsr", "memo"])
def test_techniques_see_the_same_render_on_any_thread_count(techniques, split_small):
    frames, width, height = record_scene("tex_min_filters")
    assert_same_renders(_render(frames, width, height, 1, techniques),
                 _render(frames, width, height, 2, techniques))
    assert max(split_small) > 1


@pytest.mark.slow
def test_a_bundled_trace_renders_identically_on_one_and_on_two_threads():
    from tilesim.render.traces.trace_file import read_frames

    frames = read_frames(TRACES / "runner-1196x768.tsim")[:2]
    assert_same_renders(_render(frames, 1196, 768, 1), _render(frames, 1196, 768, 2))


def test_spans_cover_the_items_once_in_order(monkeypatch):
    monkeypatch.setattr(jit, "SPLIT_MIN", 10)
    with jit.threads_pinned(3):
        assert jit.spans(9) == [(0, 9)]              # below the minimum: one span
        spans = jit.spans(100)
        assert len(spans) == 3
        assert spans[0][0] == 0 and spans[-1][1] == 100
        assert all(a[1] == b[0] for a, b in zip(spans, spans[1:], strict=False))
        assert jit.spans(5, lanes_each=4) == [(0, 2), (2, 5)]   # 20 lanes: two spans
    with jit.threads_pinned(1):
        assert jit.spans(100) == [(0, 100)]


def test_in_threads_keeps_the_parts_order():
    with jit.threads_pinned(4):
        assert jit.in_threads(lambda k: k * k, range(10)) == [k * k for k in range(10)]


def test_a_bad_thread_count_in_the_environment_is_one_line(monkeypatch):
    from tilesim.errors import InputError

    monkeypatch.setenv(jit.THREADS_ENV, "0")
    with pytest.raises(InputError, match="TILESIM_THREADS: expected a positive integer"):
        jit.threads()


def test_one_thread_unless_asked(monkeypatch):
    monkeypatch.delenv(jit.THREADS_ENV, raising=False)
    assert jit.threads() == jit.DEFAULT_THREADS == 1
    monkeypatch.setenv(jit.THREADS_ENV, "3")
    assert jit.threads() == 3
