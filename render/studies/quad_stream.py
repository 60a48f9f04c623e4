"""Record the quad stream of every tile of chosen frames: what the cycle-level reference of the
raster pipeline (``tilesim.timing.reference``) replays.

:class:`QuadRecorder` is the techniques of a render (baseline, ``re``, ``te``, ...) plus a
watching hook: with ``wants_quads`` on, the pipeline hands it, for every batch of quads, what
each quad did (``quad_stages.QuadBatch``: its tile, primitive, covered lanes, early-Z tested
and passed lanes, whether it was shaded and with how many warp instructions, its texture cache
accesses and misses, late-Z lanes, lanes written, blending). Batches are kept per render pass,
in the order the pipeline processed them; a tile's stream is its quads in that order, which is
the primitives' submission order within the tile (the pipeline's order rule, DESIGN.md §4).
It records; it never changes the render.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np

from tilesim.backend import to_host
from tilesim.render.pipeline.counters import FrameCounters
from tilesim.render.techniques.bus import Techniques
from tilesim.timing.reference.records import QUAD_FIELDS, QuadStream

# (the QuadBatch attribute, the QuadStream field) of every per-quad array recorded
RECORDED = ("covered", "early_tested", "early_passed", "shaded", "instructions",
            "tex_accesses", "tex_misses", "texels", "late_tested", "written")


@dataclass
class RecordedFrame:
    """A frame's counters and, per pass (the order of ``counters.passes``), its quad stream."""

    counters: FrameCounters
    streams: list[QuadStream] = field(default_factory=list)


class QuadRecorder(Techniques):
    """The techniques of a render (``QuadRecorder.parse("re")`` as ``Techniques.parse``) that
    also record the quad stream of the frames in ``frames`` (``watch`` sets them)."""

    wants_quads = True

    def watch(self, frames: Iterable[int]) -> QuadRecorder:
        self.frames = frozenset(int(f) for f in frames)
        self.recorded: dict[int, RecordedFrame] = {}
        self._frame = 0
        self._passes: list[list[dict]] = []
        self._draw = -1
        return self

    def command(self, op: str) -> None:
        super().command(op)
        if op in ("drawArrays", "drawElements"):
            self._draw += 1

    def begin_pass(self, target, counters) -> None:
        super().begin_pass(target, counters)
        self._passes.append([])

    def quads(self, draw, batch) -> None:
        if self._frame not in self.frames or not self._passes:
            return
        rows = {name: to_host(getattr(batch, name)) for name in RECORDED}
        rows["tile"] = to_host(batch.tile)
        # primitives of different draws are different: (draw number, triangle row)
        rows["primitive"] = (np.int64(self._draw) << 32) | to_host(batch.triangle)
        rows["program"] = draw.program.digests[1]
        rows["blended"] = batch.blended
        self._passes[-1].append(rows)

    def end_frame(self, result, screen):
        rates = super().end_frame(result, screen)
        if self._frame in self.frames:
            streams = [_stream(batches, p.tiles_x * p.tiles_y)
                       for batches, p in zip(self._passes, result.counters.passes, strict=True)]
            self.recorded[self._frame] = RecordedFrame(result.counters, streams)
        self._frame += 1
        self._passes = []
        self._draw = -1
        return rates


def _stream(batches: list[dict], tiles: int) -> QuadStream:
    """One pass's batches as a :class:`QuadStream`: quads grouped by tile (stable: each tile's
    quads keep the pipeline's order)."""
    programs = sorted({b["program"] for b in batches})
    if not batches:
        empty = {name: np.zeros(0, dtype=dtype) for name, dtype in QUAD_FIELDS.items()}
        return QuadStream.from_quads(empty, tiles, programs)
    columns = {}
    for name in (*RECORDED, "tile", "primitive"):
        columns[name] = np.concatenate([b[name] for b in batches])
    index = {p: k for k, p in enumerate(programs)}
    columns["program"] = np.concatenate(
        [np.full(b["tile"].size, index[b["program"]], dtype=np.int64) for b in batches])
    columns["blended"] = np.concatenate(
        [np.full(b["tile"].size, b["blended"], dtype=bool) for b in batches])
    order = np.argsort(columns["tile"], kind="stable")
    quads = {name: np.asarray(columns[name][order], dtype=dtype)
             for name, dtype in QUAD_FIELDS.items()}
    return QuadStream.from_quads(quads, tiles, programs)


def record_frames(trace: str | os.PathLike, frames: Iterable[int], *, technique: str = "baseline",
                  size: tuple[int, int] | None = None, traversal: str = "scanline",
                  progress=None) -> list[RecordedFrame]:
    """Render ``trace`` up to the last of ``frames`` with ``technique`` and return the recorded
    frames in frame order. ``progress(frame)`` is called after every frame rendered."""
    from tilesim.render.studies.runner import render_trace

    wanted = sorted(set(int(f) for f in frames))
    recorder = QuadRecorder.from_name(technique, source=os.fspath(trace)).watch(wanted)
    for result in render_trace(trace, frames=wanted, size=size, technique=recorder,
                               traversal=traversal):
        if progress is not None:
            progress(result.index)
    return [recorder.recorded[f] for f in wanted if f in recorder.recorded]
