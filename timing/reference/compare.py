"""The analytic model against the cycle-level reference: per tile, per pass and per frame.

``compare(frames, cfg, ecfg)`` runs both on the same frames (each a frame's counters and the
quad streams of its passes, ``tilesim.render.studies.quad_stream`` records them) and returns
the raster cycles of every tile both ways. The frame's figure is its raster phase: the sum
over its passes of the tiles' cycles (the analytic model's per-tile cycles add up to its frame
raster cycles exactly, ``tilesim.timing.tiles``; the reference's tile cycles add up to its
passes' finish cycles). The relative error is ``(analytic - reference) / reference``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from tilesim.render.pipeline.counters import FrameCounters
from tilesim.timing.config import Config
from tilesim.timing.counter_batch import batch_from_frames
from tilesim.timing.model import estimate_batch, traversal_order
from tilesim.timing.reference.geometry import geometry_input, run_geometry
from tilesim.timing.reference.inputs import batch_pass_inputs, parameters, program_cpis
from tilesim.timing.reference.raster import run_pass, tile_cycles_of
from tilesim.timing.reference.records import DrawStream, QuadStream


@dataclass
class Comparison:
    """Raster cycles both ways. Per tile (N,), batch order: ``frame``, ``pass_index`` (the
    tile's pass within its frame), ``analytic``, ``reference``, ``quads``. Per frame (F,):
    ``frame_ids``, ``analytic_frame``, ``reference_frame``. ``seconds``: the reference's wall
    time, ``tiles_simulated`` its tiles."""

    frame: np.ndarray
    pass_index: np.ndarray
    tile_in_pass: np.ndarray
    analytic: np.ndarray
    reference: np.ndarray
    quads: np.ndarray
    frame_ids: np.ndarray
    analytic_frame: np.ndarray
    reference_frame: np.ndarray
    seconds: float
    tiles_simulated: int
    sampled: np.ndarray | None = None   # (N,) bool: the tiles compared (None: all)

    @property
    def frame_error(self) -> np.ndarray:
        return relative_error(self.analytic_frame, self.reference_frame)

    def tile_error(self, min_cycles: float = 0.0) -> np.ndarray:
        """Relative error of the tiles whose reference cycles exceed ``min_cycles``."""
        keep = self.reference > min_cycles
        return relative_error(self.analytic[keep], self.reference[keep])


def relative_error(analytic: np.ndarray, reference: np.ndarray) -> np.ndarray:
    return np.divide(analytic - reference, reference, out=np.zeros_like(reference),
                     where=reference > 0)


def distribution(errors: np.ndarray) -> dict[str, float]:
    """Mean, mean absolute, p50 / p90 / max of the absolute relative errors."""
    a = np.abs(errors)
    if a.size == 0:
        return {"count": 0, "mean": 0.0, "mean_abs": 0.0, "p50": 0.0, "p90": 0.0, "max": 0.0}
    return {"count": int(a.size), "mean": float(np.mean(errors)), "mean_abs": float(a.mean()),
            "p50": float(np.percentile(a, 50)), "p90": float(np.percentile(a, 90)),
            "max": float(a.max())}


def compare(frames: list[tuple[FrameCounters, list[QuadStream]]], cfg: Config,
            ecfg: Config, compiled: bool = True, progress=None,
            tiles: int | None = None) -> Comparison:
    """Both models on ``frames`` ([(counters, quad stream of each pass)]). ``tiles``: compare
    only each pass's first ``tiles`` tiles in traversal order (the reference runs one more,
    whose start hides the last one's flush as in the whole pass); the frame figures are then
    sums over the compared tiles."""
    batch = batch_from_frames([c for c, _ in frames])
    est = estimate_batch(batch, cfg, ecfg)
    order = traversal_order(batch, cfg)
    params = parameters(cfg)
    reference = np.zeros(batch.tile_frame.size)
    streams = [s for _, passes in frames for s in passes]
    quads = np.zeros(batch.tile_frame.size)
    clock = time.perf_counter()
    sampled = np.zeros(batch.tile_frame.size, dtype=bool)
    simulated = 0
    for visit, data in batch_pass_inputs(batch, streams, order, cfg):
        keep = visit.size if tiles is None else min(int(tiles), visit.size)
        if keep < visit.size:
            data = data.head(keep + 1)
        cycles = tile_cycles_of(run_pass(data, params, compiled))[:keep]
        reference[visit[:keep]] = cycles
        quads[visit[:keep]] = np.diff(data.quad_start)[:keep]
        sampled[visit[:keep]] = True
        simulated += data.flush_bytes.size
        if progress is not None:
            progress(data.flush_bytes.size)
    seconds = time.perf_counter() - clock
    analytic = np.where(sampled, est.tile_cycles, 0.0)
    sizes = batch.pass_tiles.astype(np.int64)
    first_pass = np.searchsorted(batch.pass_frame, batch.tile_frame)
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    return Comparison(
        frame=batch.frame_ids[batch.tile_frame], pass_index=batch.tile_pass - first_pass,
        tile_in_pass=np.arange(batch.tile_pass.size) - starts[batch.tile_pass],
        analytic=analytic, reference=reference, quads=quads,
        frame_ids=batch.frame_ids.copy(),
        analytic_frame=(est.raster_cycles.copy() if tiles is None
                        else batch.per_frame(analytic)),
        reference_frame=batch.per_frame(reference), seconds=seconds,
        tiles_simulated=simulated, sampled=None if tiles is None else sampled)


@dataclass
class GeometryComparison:
    """Geometry cycles per frame both ways, (F,) each; ``seconds`` the reference's time."""

    frame_ids: np.ndarray
    analytic: np.ndarray
    reference: np.ndarray
    seconds: float

    @property
    def error(self) -> np.ndarray:
        return relative_error(self.analytic, self.reference)


def compare_geometry(frames: list[tuple[FrameCounters, DrawStream]], cfg: Config,
                     ecfg: Config, compiled: bool = True) -> GeometryComparison:
    """The analytic geometry phase and the geometry reference on ``frames`` ([(counters, the
    frame's draws)])."""
    batch = batch_from_frames([c for c, _ in frames])
    est = estimate_batch(batch, cfg, ecfg)
    clock = time.perf_counter()
    reference = []
    for counters, draws in frames:
        cpis = np.array([program_cpis(counters.programs[d])[0] for d in draws.programs])
        reference.append(run_geometry(geometry_input(draws, cpis, cfg), cfg, compiled))
    return GeometryComparison(batch.frame_ids.copy(), est.geometry_cycles.copy(),
                              np.array(reference), time.perf_counter() - clock)
