"""The analytic model against the cycle-level reference: per tile, per pass and per frame.

``compare(frames, cfg, ecfg)`` runs both on the same frames (each a frame's counters and the
quad streams of its passes, ``tilesim.studies.quad_stream`` records them) and returns
the raster cycles of every tile both ways. The frame's figure is its raster phase: the sum
over its passes of the tiles' cycles (the analytic model's per-tile cycles add up to its frame
raster cycles exactly, ``tilesim.timing.tiles``; the reference's tile cycles add up to its
passes' finish cycles). The relative error is ``(analytic - reference) / reference``.

This module is where the two meet, so it alone of ``tilesim.timing.cycle_level`` imports the
analytic model (``pyproject.toml``'s contract ignores its imports and no other's): the reference
itself (``inputs``, ``raster``, ``geometry``, ``caches``, ``dram``) is run from the counter
records and the configuration only. DRAM energy is compared too: the reference's per-command and
per-state counts (``dram.energy``) against the analytic ``memory`` energy of the same frames.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from tilesim.render.pipeline.counters import FrameCounters
from tilesim.timing.config import Config
from tilesim.timing.counter_batch import batch_from_frames
from tilesim.timing.cycle_level.dram import DramState, add_counts, energy
from tilesim.timing.cycle_level.geometry import geometry_input, run_geometry
from tilesim.timing.cycle_level.inputs import frame_pass_inputs, parameters, program_cpis
from tilesim.timing.cycle_level.raster import run_pass, tile_cycles_of
from tilesim.timing.cycle_level.records import DrawStream, QuadStream
from tilesim.timing.model import estimate_batch


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
    dram: list[dict[str, float]] | None = None      # (F,) the raster phase's DRAM counts
    lookups: np.ndarray | None = None  # (6,) all frames: raster.PassInput.lookups summed
    analytic_memory: dict[str, np.ndarray] | None = None   # (F,) the analytic DRAM energy (J)
    analytic_activations: np.ndarray | None = None         # (F,)

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
    params = parameters(cfg)
    reference = np.zeros(batch.tile_frame.size)
    quads = np.zeros(batch.tile_frame.size)
    clock = time.perf_counter()
    sampled = np.zeros(batch.tile_frame.size, dtype=bool)
    simulated = 0
    pass_start = np.concatenate([[0], np.cumsum(batch.pass_tiles)]).astype(np.int64)
    next_pass = 0
    dram_frames = []
    lookups = np.zeros(6, dtype=np.int64)
    for counters, passes in frames:
        counts: dict[str, float] = {}
        for local, data in frame_pass_inputs(counters, passes, cfg):
            visit = pass_start[next_pass] + local
            next_pass += 1
            keep = visit.size if tiles is None else min(int(tiles), visit.size)
            if keep < visit.size:
                data = data.head(keep + 1)
            elif data.lookups is not None:
                lookups += data.lookups
            dram = DramState(params.dram)
            cycles = tile_cycles_of(run_pass(data, params, compiled, dram))[:keep]
            counts = add_counts(counts, dram.counts())
            reference[visit[:keep]] = cycles
            quads[visit[:keep]] = np.diff(data.quad_start)[:keep]
            sampled[visit[:keep]] = True
            simulated += data.tiles
            if progress is not None:
                progress(data.tiles)
        dram_frames.append(counts)
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
        tiles_simulated=simulated, sampled=None if tiles is None else sampled,
        dram=dram_frames, lookups=lookups,
        analytic_memory={k: np.asarray(v, dtype=np.float64).copy()
                         for k, v in est.memory.items()},
        analytic_activations=np.asarray(est.diagnostics.get(
            "dram_activations", np.zeros(batch.frame_ids.size)), dtype=np.float64))


@dataclass
class GeometryComparison:
    """Geometry cycles per frame both ways, (F,) each; ``seconds`` the reference's time."""

    frame_ids: np.ndarray
    analytic: np.ndarray
    reference: np.ndarray
    seconds: float
    dram: list[dict[str, float]] | None = None      # (F,) the geometry phase's DRAM counts

    @property
    def error(self) -> np.ndarray:
        return relative_error(self.analytic, self.reference)


def layer_bytes(counters: FrameCounters) -> float:
    """EVR's layer-id bytes per display-list entry of a frame (0 without EVR): the frame's
    ``evr_layer_bytes_written`` over its entries (the draws do not say their pass, so one
    figure for the frame's entries)."""
    entries = sum(float(np.sum(p.tiles["prims_binned"])) for p in counters.passes
                  if "prims_binned" in p.tiles)
    written = sum(float(np.sum(p.tiles["evr_layer_bytes_written"])) for p in counters.passes
                  if "evr_layer_bytes_written" in p.tiles)
    return written / entries if entries > 0 else 0.0


def compare_geometry(frames: list[tuple[FrameCounters, DrawStream]], cfg: Config,
                     ecfg: Config, compiled: bool = True) -> GeometryComparison:
    """The analytic geometry phase and the geometry reference on ``frames`` ([(counters, the
    frame's draws)])."""
    batch = batch_from_frames([c for c, _ in frames])
    est = estimate_batch(batch, cfg, ecfg)
    clock = time.perf_counter()
    reference, counts = [], []
    for counters, draws in frames:
        cpis = np.array([program_cpis(counters.programs[d])[0] for d in draws.programs])
        dram = DramState(parameters(cfg).dram)
        reference.append(run_geometry(geometry_input(draws, cpis, cfg, layer_bytes(counters)),
                                      cfg, compiled, dram))
        counts.append(dram.counts())
    return GeometryComparison(batch.frame_ids.copy(), est.geometry_cycles.copy(),
                              np.array(reference), time.perf_counter() - clock, counts)


def energy_comparison(raster: Comparison, geometry: GeometryComparison, cfg: Config,
                      ecfg: Config) -> dict:
    """The frames' DRAM energy both ways (J, per part) and the reference's counts: the
    reference's commands and states (raster passes and geometry phase) against the analytic
    ``memory`` split (``act_pre``, ``read``, ``write``, ``background``, ``refresh``)."""
    frames = []
    for i, f in enumerate(raster.frame_ids):
        counts = add_counts(raster.dram[i], geometry.dram[i])
        ref = energy(counts, cfg, ecfg)
        ref_parts = {"act_pre": ref["act_pre"], "read": ref["read"], "write": ref["write"],
                     "refresh": ref["refresh"],
                     "background": sum(ref[k] for k in ("active_standby", "precharge_standby",
                                                        "active_powerdown",
                                                        "precharge_powerdown"))}
        ana = {k: float(v[i]) for k, v in raster.analytic_memory.items()}
        ref_total, ana_total = sum(ref_parts.values()), sum(ana.values())
        frames.append({
            "frame": int(f), "reference_counts": counts, "reference_energy": ref,
            "reference_dram_energy": ref_total, "analytic_dram_energy": ana_total,
            "relative_error": (ana_total - ref_total) / ref_total if ref_total > 0 else 0.0,
            "parts": {k: {"analytic": ana.get(k, 0.0), "reference": ref_parts[k]}
                      for k in ref_parts},
            "activations": {"analytic": float(raster.analytic_activations[i]),
                            "reference": counts.get("activates", 0.0)}})
    return {"frames": frames,
            "error": distribution(np.array([f["relative_error"] for f in frames]))}
