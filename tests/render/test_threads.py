"""A render on several threads (:func:`tilesim.jit.in_threads`) against the same render on one:
every frame and every per-tile counter of every pass identical, whatever the thread count.

The kernels split only work whose results cannot depend on the split: lanes that write their
own outputs (plane interpolation, texture filtering), and the texture caches' lookups where
each span's lanes use caches of their own (one per tile, the tiles in runs: each run in one
span). The scenes are small, so the tests lower :data:`tilesim.jit.SPLIT_MIN` to make every
draw split (and check that one did); the bundled trace runs at the shipped value.
"""

from __future__ import annotations

import contextlib
import threading

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from render_snapshots import assert_same_renders, render_snapshot
from repo_paths import TRACES

from tilesim import jit
from tilesim.render.pipeline import output_merger, texture_sampler
from tilesim.render.workloads.conformance_scenes import record_scene

pytestmark = pytest.mark.skipif(not jit.AVAILABLE, reason="the split runs compiled kernels")


def _render(frames, width, height, threads, techniques=None):
    with jit.threads_pinned(threads):
        return render_snapshot(frames, width, height, techniques)


@pytest.fixture
def split_small(monkeypatch):
    """Every stage with 64 lanes or more splits; counts the calls that ran in parts (and, in
    ``split_small.lookups``, the threads the texture caches' lookups ran on)."""
    monkeypatch.setattr(jit, "SPLIT_MIN", 64)
    calls = SplitCalls()
    real = jit.in_threads
    real_lookup = texture_sampler.lookup_in_order_compiled

    def counting(function, parts):
        parts = list(parts)
        calls.append(len(parts))
        return real(function, parts)

    def looking_up(*args, **kwargs):
        calls.lookups.add(threading.current_thread().name.split("_")[0])
        return real_lookup(*args, **kwargs)

    monkeypatch.setattr("tilesim.render.pipeline.fragment_shading.in_threads", counting)
    monkeypatch.setattr(texture_sampler, "in_threads", counting)
    monkeypatch.setattr(output_merger, "in_threads", counting)
    monkeypatch.setattr(texture_sampler, "lookup_in_order_compiled", looking_up)
    return calls


class SplitCalls(list):
    lookups: set

    def __init__(self):
        super().__init__()
        self.lookups = set()

    def clear(self):
        super().clear()
        self.lookups.clear()


@pytest.mark.parametrize("scene", ["tex_min_filters", "render_to_texture", "mediump_precision",
                                   "cubemap", "tex_wrap_modes", "texture_3d", "blend_factors",
                                   "rtt_post_chain"])
def test_a_scene_renders_identically_on_one_and_on_three_threads(scene, split_small):
    frames, width, height = record_scene(scene)
    one = _render(frames, width, height, 1)
    assert max(split_small, default=1) == 1       # one thread: never in parts
    assert split_small.lookups <= {"MainThread"}
    split_small.clear()
    assert_same_renders(one, _render(frames, width, height, 3))
    assert max(split_small, default=1) > 1        # the stages did run in parts


def test_texture_lookups_run_in_the_spans_threads(split_small):
    """A program that samples once has its cache lookups made span by span, on the threads
    (each tile's lanes in one span); rtt_post_chain's blur samples nine times, and its held
    accesses are replayed after (also identical, above)."""
    frames, width, height = record_scene("tex_min_filters")
    _render(frames, width, height, 3)
    assert "tilesim-kernel" in split_small.lookups


@pytest.mark.parametrize("kernel, scene", [
    ("_write_colors", "blend_factors"), ("_write_colors", "overlap_order"),
    ("_depth_test", "depth_funcs"), ("_depth_test", "color_depth_masks")])
def test_pixels_are_written_in_spans_of_tiles_on_the_threads(kernel, scene, split_small,
                                                             monkeypatch):
    """Blending and the early depth test in submission order: each tile's fragments (so each
    pixel's) in one span, the spans side by side; the renders identical to one thread's."""
    ran = set()
    real = getattr(output_merger, kernel)

    def counted(*args):
        ran.add(threading.current_thread().name.split("_")[0])
        return real(*args)

    frames, width, height = record_scene(scene)
    one = _render(frames, width, height, 1)
    monkeypatch.setattr(output_merger, kernel, counted)
    assert_same_renders(one, _render(frames, width, height, 3))
    assert "tilesim-kernel" in ran


def test_held_texture_accesses_replay_cache_by_cache_on_the_threads(split_small, monkeypatch):
    """rtt_post_chain's blur samples nine times: its accesses are held and replayed in the
    warps' order, each cache's on its own, the caches in spans on the threads (the renders
    are identical, above)."""
    walked = set()
    real = texture_sampler._held_walk

    def walk(*args):
        walked.add(threading.current_thread().name.split("_")[0])
        return real(*args)

    monkeypatch.setattr(texture_sampler, "_held_walk", walk)
    frames, width, height = record_scene("rtt_post_chain")
    _render(frames, width, height, 3)
    assert "tilesim-kernel" in walked


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 6), min_size=1, max_size=300), st.integers(1, 4),
       st.integers(1, 4), st.integers(1, 40))
def test_spans_of_runs_never_split_a_run(steps, threads, per_thread, split_min):
    keys = np.cumsum(np.array(steps) == 0)   # non-decreasing, runs of any length
    with jit.threads_pinned(threads), _split_min(split_min):
        spans = jit.spans_of_runs(keys, per_thread=per_thread)
        assert len(spans) <= len(jit.spans(keys.size, per_thread=per_thread))
    assert spans[0][0] == 0 and spans[-1][1] == keys.size
    assert all(a < b for a, b in spans)
    assert all(a[1] == b[0] for a, b in zip(spans, spans[1:], strict=False))
    assert all(keys[b - 1] != keys[b] for _, b in spans[:-1])    # each key in one span
    assert jit.nondecreasing(keys)
    assert jit.nondecreasing(keys[::-1]) == (keys[0] == keys[-1])


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 50), min_size=1, max_size=200), st.integers(1, 4),
       st.integers(1, 4), st.integers(1, 300))
def test_weighted_spans_cover_the_items_in_about_equal_shares(weights, threads, per_thread,
                                                              split_min):
    weights = np.array(weights)
    with jit.threads_pinned(threads), _split_min(split_min):
        spans = jit.weighted_spans(weights, per_thread=per_thread)
    assert spans[0][0] == 0 and spans[-1][1] == weights.size
    assert all(a < b for a, b in spans)
    assert all(a[1] == b[0] for a, b in zip(spans, spans[1:], strict=False))
    parts = min(threads * per_thread if threads > 1 else 1, int(weights.sum()) // split_min)
    assert len(spans) <= max(parts, 1)
    if len(spans) > 1:      # no span more than a share and its largest item
        share = weights.sum() / parts
        assert all(weights[a:b].sum() <= share + weights[a:b].max() for a, b in spans)


@contextlib.contextmanager
def _split_min(value):
    saved, jit.SPLIT_MIN = jit.SPLIT_MIN, value
    try:
        yield
    finally:
        jit.SPLIT_MIN = saved


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


def test_parts_that_split_again_run_their_parts_in_their_own_thread():
    """A part whose stage calls another stage that splits runs the inner parts in its own
    thread: in the one pool, outer parts waiting on inner ones queued behind them would wait
    for ever (checked in a watched thread, so that a hang fails the test)."""
    results, inner_threads = [], set()

    def inner(k):
        inner_threads.add(threading.current_thread().name)
        return k + 1

    def outer(k):
        return (threading.current_thread().name, jit.in_threads(inner, range(k, k + 3)))

    def run():
        with jit.threads_pinned(2):
            results.extend(jit.in_threads(outer, [0, 10]))

    watched = threading.Thread(target=run, daemon=True)
    watched.start()
    watched.join(timeout=30)
    assert not watched.is_alive(), "nested parts waited for ever"
    assert [r[1] for r in results] == [[1, 2, 3], [11, 12, 13]]
    assert {r[0] for r in results} == inner_threads      # each in its outer part's thread
    assert all(name.startswith("tilesim-kernel") for name in inner_threads)


def test_a_bad_thread_count_in_the_environment_is_one_line(monkeypatch):
    from tilesim.errors import InputError

    monkeypatch.setenv(jit.THREADS_ENV, "0")
    with pytest.raises(InputError, match="TILESIM_THREADS: expected a positive integer"):
        jit.threads()


def test_every_core_unless_asked(monkeypatch):
    import os

    monkeypatch.delenv(jit.THREADS_ENV, raising=False)
    assert jit.threads() == jit.default_threads() == len(os.sched_getaffinity(0))
    monkeypatch.setenv(jit.THREADS_ENV, "3")
    assert jit.threads() == 3


def test_a_studys_worker_processes_share_the_cores(monkeypatch):
    from tilesim.studies.dask_cluster import worker_environment

    monkeypatch.delenv(jit.THREADS_ENV, raising=False)
    with jit.threads_pinned(8):
        assert worker_environment(2) == {jit.THREADS_ENV: "4"}
        assert worker_environment(3) == {jit.THREADS_ENV: "2"}
        assert worker_environment(16) == {jit.THREADS_ENV: "1"}
    monkeypatch.setenv(jit.THREADS_ENV, "5")       # the user's own: inherited as it is
    assert worker_environment(2) == {}
