"""Techniques side by side with a host (the baseline, or EVR) on one render
(render/techniques/side_by_side.py): every member's frames and per-tile counters equal those
of a render of that technique alone, on recorded traces and the bundled workloads; a member
whose colors leave the host's, or that would hold back other entries than EVR, is dropped and
rendered on its own; a batch of jobs written that way holds the files each job's own render
writes."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from repo_paths import TRACES
from trace_helpers import sphere_trace

from tilesim.render.replay import render_side_by_side, render_trace
from tilesim.render.techniques import side_by_side
from tilesim.render.techniques.bus import Techniques
from tilesim.render.techniques.side_by_side import SideBySide, shareable
from tilesim.studies import batch
from tilesim.studies.batch import Job, prepare_jobs, run_job, run_side_by_side

MEMBERS = ("te", "re", "re/xor", "te+re", "memo", "memo/32")


def _record(result):
    """A frame as comparable values: index, image, scalars, and every pass's target, tile
    counters (in their order) and per-program work."""
    return (result.index, result.image, dict(result.counters.scalars),
            [(p.target, list(p.tiles), {k: np.asarray(v) for k, v in p.tiles.items()},
              {k: np.asarray(v) for k, v in p.fs_programs.items()})
             for p in result.counters.passes])


def _assert_same(expected, actual, label):
    assert [r[0] for r in actual] == [r[0] for r in expected], label
    for (index, image, scalars, passes), (_, image2, scalars2, passes2) in zip(
            expected, actual, strict=True):
        where = f"{label}, frame {index}"
        np.testing.assert_array_equal(image2, image, where)
        assert scalars2 == scalars, where
        assert [p[:2] for p in passes2] == [p[:2] for p in passes], where
        for (target, _, tiles, programs), (_, _, tiles2, programs2) in zip(
                passes, passes2, strict=True):
            for name in tiles:
                np.testing.assert_array_equal(tiles2[name], tiles[name],
                                              f"{where}, {target} {name}")
            assert programs2.keys() == programs.keys(), where
            for digest in programs:
                np.testing.assert_array_equal(programs2[digest], programs[digest], where)


def _side_by_side(trace, frames, names, host=None, **options):
    hooks = SideBySide({name: Techniques.from_name(name) for name in names},
                       None if host is None else Techniques.from_name(host))
    base, members = [], {name: [] for name in names}
    for result in render_trace(trace, frames=range(frames), technique=hooks, **options):
        base.append(_record(result))
        for name in names:
            members[name] += [_record(r) for r in hooks.take(name)]
    for name in names:
        members[name] += [_record(r) for r in hooks.take(name)]
    return hooks, base, members


def _check_members_equal_their_own_renders(trace, frames, names=MEMBERS, host=None,
                                           **options):
    hooks, base, members = _side_by_side(trace, frames, names, host, **options)
    assert hooks.diverged == {}
    alone = [_record(r) for r in render_trace(trace, frames=range(frames), technique=host,
                                              **options)]
    _assert_same(alone, base, host or "baseline")
    for name in names:
        alone = [_record(r) for r in render_trace(trace, frames=range(frames),
                                                  technique=name, **options)]
        _assert_same(alone, members[name], name)
    return members


def test_members_give_what_their_own_renders_give(tmp_path):
    # A turning sphere on a static background: RE skips most tiles, TE most flushes, and
    # memoization hits; 5 frames leave memoization a trailing frame of its own.
    trace = sphere_trace(tmp_path / "sphere.tsim", 5, size=(96, 64), clear_step=0.0)
    members = _check_members_equal_their_own_renders(trace, 5)
    skipped = sum(int(p[2]["re_tiles_skipped"].sum()) for r in members["re"] for p in r[3]
                  if "re_tiles_skipped" in p[2])
    hits = sum(int(p[2]["memo_hits"].sum()) for r in members["memo"] for p in r[3]
               if "memo_hits" in p[2])
    assert skipped > 0 and hits > 0


@pytest.mark.slow
@pytest.mark.parametrize("workload", ["runner", "render_to_texture", "match3", "sidescroller"])
def test_members_give_what_their_own_renders_give_on_the_bundled_workloads(workload):
    # render_to_texture renders off-screen passes each frame (RE off, the passes shared).
    _check_members_equal_their_own_renders(TRACES / f"{workload}-1196x768.tsim", 4,
                                           size=(299, 192))


EVR_MEMBERS = ("re+evr", "te+re+evr", "re+evr/xor")


def test_members_beside_evr_give_what_their_own_renders_give(tmp_path):
    # RE+EVR: EVR's render watched by RE, whose skips EVR's state takes in.
    trace = sphere_trace(tmp_path / "sphere.tsim", 5, size=(96, 64), clear_step=0.0)
    members = _check_members_equal_their_own_renders(trace, 5, EVR_MEMBERS, host="evr")
    skipped = sum(int(p[2]["re_tiles_skipped"].sum()) for r in members["re+evr"]
                  for p in r[3] if "re_tiles_skipped" in p[2])
    assert skipped > 0


@pytest.mark.slow
@pytest.mark.parametrize("workload", ["runner", "render_to_texture", "match3", "sidescroller"])
def test_re_evr_beside_evr_gives_its_own_render_on_the_bundled_workloads(workload):
    # At the workloads' own size (1196x768), where RE skips thousands of tiles in runner and
    # match3 and EVR holds entries back.
    _check_members_equal_their_own_renders(TRACES / f"{workload}-1196x768.tsim", 4,
                                           ("re+evr",), host="evr")


def test_only_techniques_that_leave_the_render_alone_are_members():
    assert all(shareable(Techniques.from_name(n)) for n in MEMBERS)
    evr = Techniques.from_name("evr")
    assert all(shareable(Techniques.from_name(n), evr) for n in EVR_MEMBERS)
    assert [side_by_side.render_host(Techniques.from_name(n)) for n in
            ("baseline", "re/xor", "memo/32", "evr", "re+evr", "te+evr", "dsr")] == [
        "baseline", "baseline", "baseline", "evr", "evr", "evr", None]
    for name, host in (("baseline", None), ("evr", None), ("re+evr", None), ("dsr", None),
                       ("evr", "evr"), ("re", "evr"), ("te+re", "evr"), ("re+evr", "dsr")):
        host = host and Techniques.from_name(host)
        assert not shareable(Techniques.from_name(name), host)
        with pytest.raises(ValueError, match="changes the render"):
            SideBySide({name: Techniques.from_name(name)}, host)


class _Repaints(Techniques):
    """TE that, from frame 2 on, changes a pixel of the screen when the pass ends (as an RE
    false positive puts back colors that differ from the ones rendered)."""

    frames = 0

    def end_pass(self, target, counters):
        if self.frames >= 2:
            target.color[0, 0, 0] ^= 0xFF
        return super().end_pass(target, counters)

    def end_frame(self, result, screen):
        self.frames += 1
        return super().end_frame(result, screen)


def test_a_member_whose_colors_leave_the_baselines_is_dropped(tmp_path):
    trace = sphere_trace(tmp_path / "sphere.tsim", 4, size=(64, 48))
    hooks = SideBySide({"te": Techniques.from_name("te"), "odd": _Repaints(frozenset({"te"}))})
    base, kept, odd = [], [], []
    for result in render_trace(trace, technique=hooks):
        base.append(_record(result))
        kept += [_record(r) for r in hooks.take("te")]
        odd += [_record(r) for r in hooks.take("odd")]
    assert hooks.diverged == {"odd": 2}
    assert [r[0] for r in odd] == [0, 1]
    _assert_same([_record(r) for r in render_trace(trace)], base, "baseline")
    _assert_same([_record(r) for r in render_trace(trace, technique="te")], kept, "te")


class _RepaintsRE(Techniques):
    """RE that, from frame 2 on, changes a pixel of the screen when the pass ends (an RE
    false positive's colors); records the frames each copy of it finishes."""

    finished: list = []
    frames = 0

    def end_pass(self, target, counters):
        skipped = super().end_pass(target, counters)
        if self.frames >= 2:
            target.color[0, 0, 0] ^= 0xFF
        return skipped

    def end_frame(self, result, screen):
        self.frames += 1
        type(self).finished.append((id(self), result.index))
        return super().end_frame(result, screen)


def test_a_diverging_member_goes_on_from_the_start_of_the_frame_it_left_in(tmp_path):
    """The member leaves the baseline's render in frame 2 of 5: its frames 0-1 come from the
    shared render, 2-4 from a copy of the renderer and of itself made at frame 2's start,
    equal to a render of its own (frames 0 and 1 are not rendered again)."""
    trace = sphere_trace(tmp_path / "sphere.tsim", 5, size=(64, 48), clear_step=0.0)
    _RepaintsRE.finished = []
    alone = [_record(r) for r in render_trace(trace, technique=_RepaintsRE(frozenset({"re"})))]
    _RepaintsRE.finished = []
    techniques = {"baseline": Techniques(frozenset()), "re": Techniques.from_name("re"),
                  "odd": _RepaintsRE(frozenset({"re"}))}
    out = {name: [] for name in techniques}
    for name, result, _ in render_side_by_side(trace, techniques, range(5)):
        out[name].append(_record(result))
    _assert_same(alone, out["odd"], "odd")
    _assert_same([_record(r) for r in render_trace(trace, technique="re")], out["re"], "re")
    _assert_same([_record(r) for r in render_trace(trace)], out["baseline"], "baseline")
    copies = {}
    for ident, index in _RepaintsRE.finished:
        copies.setdefault(ident, []).append(index)
    assert sorted(copies.values()) == [[0, 1], [2, 3, 4]]


def _leaving(name: str, after: int):
    """SideBySide marking member ``name`` as leaving the host's render at the end of frame
    ``after``: its frames from ``after + 1`` on come from a render of its own."""

    class Leaving(SideBySide):
        def end_frame(self, result, screen):
            out = super().end_frame(result, screen)
            if result.index == after:
                self.diverged[name] = after + 1
            return out

    return Leaving


def test_a_member_marked_as_leaving_after_the_last_frame_has_nothing_left_to_render(
        tmp_path, monkeypatch):
    trace = sphere_trace(tmp_path / "sphere.tsim", 3, size=(64, 48))

    monkeypatch.setattr(side_by_side, "SideBySide", _leaving("re", after=2))
    techniques = {"baseline": Techniques(frozenset()), "re": Techniques.from_name("re")}
    out = [(name, r.index) for name, r, _ in render_side_by_side(trace, techniques, range(3))]
    assert sorted(out) == [(n, i) for n in ("baseline", "re") for i in range(3)]


class _HoldsBackOthers(Techniques):
    """RE+EVR that, from frame 2 on, holds back one more display-list entry than EVR would
    (as RE's skips, fed to EVR, may change what it predicts)."""

    frames = 0

    def binned(self, draw):
        deferred = super().binned(draw)
        if self.frames >= 2 and deferred is not None and deferred.size:
            deferred = deferred.copy()
            deferred[0] = ~deferred[0]
        return deferred

    def end_frame(self, result, screen):
        self.frames += 1
        return super().end_frame(result, screen)


def test_a_member_that_would_hold_back_other_entries_than_its_host_is_dropped(tmp_path):
    trace = sphere_trace(tmp_path / "sphere.tsim", 4, size=(64, 48), clear_step=0.0)
    hooks = SideBySide({"re+evr": Techniques.from_name("re+evr"),
                        "odd": _HoldsBackOthers(frozenset({"re", "evr"}))},
                       Techniques.from_name("evr"))
    base, kept, odd = [], [], []
    for result in render_trace(trace, technique=hooks):
        base.append(_record(result))
        kept += [_record(r) for r in hooks.take("re+evr")]
        odd += [_record(r) for r in hooks.take("odd")]
    assert hooks.diverged == {"odd": 2}
    assert [r[0] for r in odd] == [0, 1]
    alone = [_record(r) for r in render_trace(trace, technique="re+evr")]
    _assert_same([_record(r) for r in render_trace(trace, technique="evr")], base, "evr")
    _assert_same(alone, kept, "re+evr")
    _assert_same(alone[:2], odd, "odd")


def _folder_files(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes()
            for pattern in ("frames/*.png", "counters/*.npz")
            for p in sorted(folder.glob(pattern))}


@pytest.mark.parametrize("names", [("baseline", "re", "memo/32"), ("evr", "re+evr")])
@pytest.mark.parametrize("diverge", [False, True])
def test_a_batch_side_by_side_writes_the_files_of_each_jobs_own_render(tmp_path, monkeypatch,
                                                                       diverge, names):
    trace = str(sphere_trace(tmp_path / "sphere.tsim", 4, size=(64, 48), clear_step=0.0))
    own = [Job(trace, (0, 4), str(tmp_path / "own" / n.replace("/", "-")), technique=n)
           for n in names]
    for job in own:
        run_job(job)
    if diverge:
        # The RE job's render is taken as leaving the host's at frame 1: the rest of its
        # frames come from a render of its own.
        monkeypatch.setattr(side_by_side, "SideBySide", _leaving("1", after=0))
    shared = [Job(trace, (0, 4), str(tmp_path / "shared" / n.replace("/", "-")), technique=n)
              for n in names]
    prepare_jobs(shared)
    summaries = run_side_by_side(shared)
    assert [s["written"] for s in summaries] == [4] * len(names)
    for a, b in zip(own, shared, strict=True):
        assert _folder_files(Path(b.out)) == _folder_files(Path(a.out)), b.technique
    assert batch.render_host(shared[1]) == names[0]
    assert batch.render_host(Job(trace, (0, 4), "x", technique="dsr")) is None


def test_a_batch_side_by_side_takes_jobs_of_one_host():
    with pytest.raises(ValueError, match="one host"):
        run_side_by_side([Job("t.tsim", (0, 1), "a", technique="re"),
                          Job("t.tsim", (0, 1), "b", technique="re+evr")])


def test_memoizing_members_hash_and_order_each_batch_once(tmp_path, monkeypatch):
    """memo/32's keys are the low half of memo's: side by side, a batch is hashed once for
    both (as often as for memo alone), a pair's lookup order is made once, and each member
    still gives its own render's frames."""
    from tilesim.render.techniques import fragment_memoization

    calls, orders = [], []
    keys, lookup_order = fragment_memoization.fragment_keys, fragment_memoization._lookup_order

    def counted(*args, **options):
        calls.append(options.get("bits"))
        return keys(*args, **options)

    def counted_order(*args):
        orders.append(1)
        return lookup_order(*args)

    monkeypatch.setattr(fragment_memoization, "fragment_keys", counted)
    monkeypatch.setattr(fragment_memoization, "_lookup_order", counted_order)
    trace = sphere_trace(tmp_path / "sphere.tsim", 4, size=(96, 64), clear_step=0.0)
    names = ("memo/32", "te", "memo")
    _side_by_side(trace, 4, ("memo",))
    alone, alone_orders = len(calls), len(orders)
    calls.clear()
    orders.clear()
    _side_by_side(trace, 4, names)
    assert alone and calls == [64] * alone
    assert alone_orders == len(orders) == 2
    _check_members_equal_their_own_renders(trace, 4, names=names)


@pytest.mark.slow
def test_members_that_render_the_same_tiles_walk_the_texture_caches_once(monkeypatch):
    """At a pass's end the tile caches are walked once for each set of rendered tiles the
    members and host ask for (TE and memoization render every tile, as the baseline does;
    RE's skipped tiles make a set of their own), and every member still gives its own
    render's frames and counters."""
    from tilesim.render.pipeline.tile_caches import TileCaches

    walks = []
    walk = TileCaches._inherited_hits

    def counted(self, traversal, rendered):
        walks.append(None if rendered is None else bytes(np.asarray(rendered)))
        return walk(self, traversal, rendered)

    monkeypatch.setattr(TileCaches, "_inherited_hits", counted)
    trace = TRACES / "runner-1196x768.tsim"
    names = ("te", "memo", "re")
    _, _, members = _side_by_side(trace, 3, names, size=(299, 192))
    assert members["re"] and len(walks) > 0
    # one walk per pass for the tiles every set renders, one more where RE skipped some
    skipped = sum(int(p[2]["re_tiles_skipped"].sum() > 0) for r in members["re"] for p in r[3])
    passes = sum(len(r[3]) for r in members["te"])
    assert len(walks) == passes + skipped
    assert skipped > 0
    _check_members_equal_their_own_renders(trace, 3, names=names, size=(299, 192))
