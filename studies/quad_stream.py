"""Record the quad stream of every tile of chosen frames: what the cycle-level reference of the
raster pipeline (``tilesim.timing.cycle_level``) replays.

:class:`QuadRecorder` is the techniques of a render (baseline, ``re``, ``te``, ...) plus a
watching hook: with ``wants_quads`` on, the pipeline hands it, for every batch of quads, what
each quad did (``quad_stages.QuadBatch``: its tile, primitive, covered lanes, early-Z tested
and passed lanes, whether it was shaded and with how many warp instructions, its texture cache
accesses and misses, late-Z lanes, lanes written, blending). Batches are kept per render pass,
in the order the pipeline processed them; a tile's stream is its quads in that order, which is
the primitives' submission order within the tile (the pipeline's order rule, DESIGN.md §4).
It records; it never changes the render.

With fragment memoization on, a shaded quad of the default framebuffer is marked ``memo_hit``
when every lane of it that looked the LUT up hit: the quad's 4 lanes run in lock-step (and
texture LOD takes derivatives across them), so a quad runs unless none of its lanes needs to.
Memoization decides a frame's hits when its pair of frames is done (``FragmentMemoizer``), so
the marks are set when the outcome arrives, from each quad's place in the frame's lookups.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np

from tilesim.backend import to_host
from tilesim.render.pipeline.counters import FrameCounters
from tilesim.render.pipeline.observer import RenderObserver
from tilesim.render.pipeline.tile_caches import OWNER_BATCH_SHIFT
from tilesim.render.techniques.bus import Techniques
from tilesim.timing.cycle_level.records import DRAW_FIELDS, QUAD_FIELDS, DrawStream, QuadStream

# (the QuadBatch attribute, the QuadStream field) of every per-quad array recorded
DRAW_COMMANDS = ("drawArrays", "drawElements")
# frame counters a draw adds to, kept per draw (DRAW_FIELDS)
DRAW_SCALARS = ("vertices_shaded", "vertex_cache_accesses", "vertex_cache_misses",
                "index_bytes", "prims_assembled")
RECORDED = ("covered", "early_tested", "early_passed", "shaded", "instructions",
            "tex_accesses", "tex_misses", "texels", "late_tested", "written")


@dataclass
class RecordedFrame:
    """A frame's counters and, per pass (the order of ``counters.passes``), its quad stream."""

    counters: FrameCounters
    streams: list[QuadStream] = field(default_factory=list)
    draws: DrawStream | None = None


class QuadRecorder(Techniques):
    """The techniques of a render (``QuadRecorder.parse("re")`` as ``Techniques.parse``) that
    also record the quad stream of the frames in ``frames`` (``watch`` sets them)."""

    wants_quads = True
    keeps_memo_outcomes = True      # their hits mark the recorded quads

    def watch(self, frames: Iterable[int]) -> QuadRecorder:
        self.frames = frozenset(int(f) for f in frames)
        self.recorded: dict[int, RecordedFrame] = {}
        self._frame = 0
        self._passes: list[list[dict]] = []
        self._draw = -1
        self._binned: dict[int, dict] = {}
        self._memo_chunk: tuple[int, int] | None = None
        self._memo_hits: dict[int, np.ndarray] = {}     # frame -> per lookup lane, hit
        self._memo_lanes: dict[int, list] = {}          # frame -> per pass, the quads' lookups
        self.scalars = DrawScalars(self.frames)
        return self

    def command(self, op: str) -> None:
        super().command(op)
        if op in ("drawArrays", "drawElements"):
            self._draw += 1

    def begin_pass(self, target, counters) -> None:
        super().begin_pass(target, counters)
        self._passes.append([])

    def binned(self, draw):
        """RE signs the draw here; its Signature Unit work is the pass counters' growth."""
        if self._frame not in self.frames:
            return super().binned(draw)
        tiles = draw.counters.tiles
        before = [float(to_host(tiles[n]).sum()) if n in tiles else 0.0
                  for n in ("re_subblocks_signed", "re_signature_accesses")]
        deferred = super().binned(draw)
        after = [float(to_host(tiles[n]).sum()) if n in tiles else 0.0
                 for n in ("re_subblocks_signed", "re_signature_accesses")]
        self._binned[self._draw] = {
            "entries": np.bincount(to_host(draw.bins.triangle), minlength=len(draw.tris)),
            "record_bytes": int(draw.bins.record_bytes),
            "re_subblocks": after[0] - before[0], "re_folds": (after[1] - before[1]) / 2}
        return deferred

    def shaded(self, draw, inputs, system_values, color, tile, alive, keys=None) -> None:
        super().shaded(draw, inputs, system_values, color, tile, alive, keys)
        memo = self.unit("memo")
        if memo is not None and self._on_screen(draw.target):
            # the lookups of the batch quads() gets: its first lane in the frame's lookups
            # and, per shaded quad, its lanes that look up (live ones)
            self._memo_chunk = (memo.last_chunk[0],
                                to_host(alive).reshape(-1, 4).sum(axis=1))

    def quads(self, draw, batch) -> None:
        chunk, self._memo_chunk = self._memo_chunk, None
        if self._frame not in self.frames or not self._passes:
            return
        rows = {name: to_host(getattr(batch, name)) for name in RECORDED}
        # each shaded quad's first lane among the frame's memoization lookups (4 lanes a
        # quad, in the batch's order), -1 where the quad made none
        rows["memo_lane"] = np.full(rows["shaded"].size, -1, dtype=np.int64)
        rows["memo_lookups"] = np.zeros(rows["shaded"].size, dtype=np.int64)
        if chunk is not None:
            shaded = np.flatnonzero(rows["shaded"])
            first, lookups = chunk
            assert lookups.size == shaded.size, "memoization looks up whole quads"
            rows["memo_lane"][shaded] = first + 4 * np.arange(shaded.size)
            rows["memo_lookups"][shaded] = lookups
        rows["tile"] = to_host(batch.tile)
        # primitives of different draws are different: (draw number, triangle row)
        rows["primitive"] = (np.int64(self._draw) << 32) | to_host(batch.triangle)
        rows["program"] = draw.program.digests[1]
        rows["blended"] = batch.blended
        rows["tex_owner_base"] = batch.tex_owner_base
        self._passes[-1].append(rows)

    def texture_hits_inherited(self, target, owners) -> None:
        """Take the misses that hit in what the tile before theirs left on its processor off
        the quads that made them (an owner: its batch's base plus its shaded lane)."""
        super().texture_hits_inherited(target, owners)
        if self._frame not in self.frames or not self._passes or owners.size == 0:
            return
        base = owners >> OWNER_BATCH_SHIFT << OWNER_BATCH_SHIFT
        for rows in self._passes[-1]:
            mine = base == rows["tex_owner_base"]
            if mine.any():
                quad = np.flatnonzero(rows["shaded"])[(owners[mine] - base[mine]) // 4]
                np.subtract.at(rows["tex_misses"], quad, 1)

    def end_frame(self, result, screen):
        rates = super().end_frame(result, screen)
        self._take_memo_outcomes()
        self._mark_memo_hits()
        if self._frame in self.frames:
            streams = [_stream(batches, p.tiles_x * p.tiles_y)
                       for batches, p in zip(self._passes, result.counters.passes, strict=True)]
            self.recorded[self._frame] = RecordedFrame(
                result.counters, [s for s, _ in streams],
                _draws(self.scalars.draws.get(self._frame, []), self._binned))
            if self.unit("memo") is not None:
                self._memo_lanes[self._frame] = [lanes for _, lanes in streams]
                self._mark_memo_hits()
        self._frame += 1
        self._passes = []
        self._draw = -1
        self._binned = {}
        return rates

    def finish(self) -> list:
        ready = super().finish()
        self._take_memo_outcomes()
        self._mark_memo_hits()
        return ready

    def _take_memo_outcomes(self) -> None:
        """The hits of the recorded frames whose memoization outcome arrived."""
        memo = self.unit("memo")
        for outcome in [] if memo is None else memo.take_arrived():
            if outcome.frame_index in self.frames:
                self._memo_hits[outcome.frame_index] = to_host(outcome.hit).astype(bool)

    def _mark_memo_hits(self) -> None:
        """Mark the quads of recorded frames whose memoization outcome has arrived."""
        for frame in [f for f in self._memo_hits if f in self._memo_lanes]:
            hit = self._memo_hits.pop(frame)
            for stream, (lane, lookups) in zip(self.recorded[frame].streams,
                                               self._memo_lanes.pop(frame), strict=True):
                looked = lane >= 0
                # a lane that made no lookup (uncovered, or failed early Z) never hits; a
                # quad is skipped when its lanes hit and none that looked up missed
                hits = hit[lane[looked][:, None] + np.arange(4)].sum(axis=1)
                stream.quads["memo_hit"][looked] = (hits > 0) & (hits == lookups[looked])


class DrawScalars(RenderObserver):
    """Each draw command's share of the frame counters (``DRAW_SCALARS``, the vertex
    instructions and the vertex program) in the frames ``frames``."""

    def __init__(self, frames):
        self.frames = frames
        self.draws: dict[int, list[dict]] = {}
        self._before = None

    def before_command(self, frame, index, command, state, counters) -> None:
        if command.op in DRAW_COMMANDS and frame in self.frames:
            self._before = (dict(counters.scalars), dict(counters.vs_programs))

    def after_command(self, frame, index, command, state, counters) -> None:
        if self._before is None:
            return
        scalars, programs = self._before
        self._before = None
        row = {n: int(counters.scalars[n] - scalars.get(n, 0)) for n in DRAW_SCALARS}
        grown = {d: c - programs.get(d, 0) for d, c in counters.vs_programs.items()
                 if c != programs.get(d, 0)}
        row["vs_instructions"] = int(sum(grown.values()))
        row["vs_program"] = next(iter(grown), None)
        self.draws.setdefault(frame, []).append(row)


def _draws(rows: list[dict], binned: dict[int, dict]) -> DrawStream:
    """The frame's draws (``DrawScalars`` rows, in order) with what the binner did with each
    (``binned`` by draw number; draws that bin nothing have no primitives)."""
    programs = sorted({r["vs_program"] for r in rows if r["vs_program"] is not None})
    index = {p: k for k, p in enumerate(programs)}
    columns = {name: [] for name in DRAW_FIELDS}
    entries = []
    for k, row in enumerate(rows):
        b = binned.get(k, {"entries": np.zeros(0, dtype=np.int64), "record_bytes": 0,
                           "re_subblocks": 0, "re_folds": 0})
        for name in DRAW_SCALARS:
            columns[name].append(row[name])
        columns["vs_instructions"].append(row["vs_instructions"])
        columns["vs_program"].append(index.get(row["vs_program"], -1))
        for name in ("record_bytes", "re_subblocks", "re_folds"):
            columns[name].append(b[name])
        entries.append(np.asarray(b["entries"], dtype=np.int64))
    counts = [e.size for e in entries]
    return DrawStream({n: np.asarray(v, dtype=d) for (n, d), v in
                       zip(DRAW_FIELDS.items(), (columns[n] for n in DRAW_FIELDS), strict=True)},
                      np.concatenate(entries) if entries else np.zeros(0, dtype=np.int64),
                      np.concatenate([[0], np.cumsum(counts)]).astype(np.int64), programs)


def _stream(batches: list[dict], tiles: int) -> tuple[QuadStream, tuple]:
    """One pass's batches as a :class:`QuadStream`: quads grouped by tile (stable: each tile's
    quads keep the pipeline's order); and, in the stream's order, each quad's first lane among
    the frame's memoization lookups (-1: none) and its lanes that looked up."""
    programs = sorted({b["program"] for b in batches})
    if not batches:
        empty = {name: np.zeros(0, dtype=dtype) for name, dtype in QUAD_FIELDS.items()}
        none = np.zeros(0, dtype=np.int64)
        return QuadStream.from_quads(empty, tiles, programs), (none, none)
    columns = {}
    for name in (*RECORDED, "tile", "primitive", "memo_lane", "memo_lookups"):
        columns[name] = np.concatenate([b[name] for b in batches])
    index = {p: k for k, p in enumerate(programs)}
    columns["program"] = np.concatenate(
        [np.full(b["tile"].size, index[b["program"]], dtype=np.int64) for b in batches])
    columns["blended"] = np.concatenate(
        [np.full(b["tile"].size, b["blended"], dtype=bool) for b in batches])
    columns["memo_hit"] = np.zeros(columns["tile"].size, dtype=bool)   # set when decided
    order = np.argsort(columns["tile"], kind="stable")
    quads = {name: np.asarray(columns[name][order], dtype=dtype)
             for name, dtype in QUAD_FIELDS.items()}
    return (QuadStream.from_quads(quads, tiles, programs),
            (columns["memo_lane"][order], columns["memo_lookups"][order]))


def record_frames(trace: str | os.PathLike, frames: Iterable[int], *, technique: str = "baseline",
                  size: tuple[int, int] | None = None, traversal: str = "scanline",
                  progress=None, tile_size: int = 16) -> list[RecordedFrame]:
    """Render ``trace`` up to the last of ``frames`` with ``technique`` at ``tile_size`` and
    return the recorded frames in frame order. ``progress(frame)`` is called after every
    frame rendered."""
    from tilesim.render.replay import render_trace

    wanted = sorted(set(int(f) for f in frames))
    recorder = QuadRecorder.from_name(technique, source=os.fspath(trace)).watch(wanted)
    for result in render_trace(trace, frames=wanted, size=size, technique=recorder,
                               traversal=traversal, observer=recorder.scalars,
                               tile_size=tile_size):
        if progress is not None:
            progress(result.index)
    return [recorder.recorded[f] for f in wanted if f in recorder.recorded]
