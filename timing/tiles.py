"""Per-tile raster cycles and energy of the passes into the default framebuffer (the screen).

Orientation: every per-tile map is a (tiles_y, tiles_x) float64 array as the counters store a
pass's tiles: row 0 is the bottom tile row (window y = 0, as in GL), column 0 the left tile
column; tile ``(row, col)`` covers pixels ``x in [16 col, 16 col + 16)``, ``y in [16 row, 16 row +
16)``. Flip the rows (``np.flipud``) for an image with the top of the screen on row 0.

Cycles (GPU cycles at ``tech.clock``): ``BatchEstimate.tile_cycles``, the model's raster cycles of
each tile (``tilesim.timing.model.tile_cycles``): its bottleneck stage, the fill latency, the
part of its end-of-tile flush (or DSR's DCT) the next tile in traversal order does not hide,
and RE's signature compare. Identity: the sum over every tile of every pass of a frame is the
frame's raster cycles (``FrameEstimate.raster_cycles``), exactly.

Energy (joules), per tile: what the tile's own counters cost, and its share of the time-driven
energy:

* GPU dynamic energy of the tile's counters, by the model's per-event energies
  (``tilesim.timing.model.dynamic_energy_terms`` applied tile by tile): its raster work
  (rasterizer, early Z, fragment shading, texture units and caches, color buffer and blending,
  Parameter Buffer reads through the tile cache and L2, technique raster units) and the binning
  work charged to it (tiler entries, its display-list and EVR layer-id writes, RE's signature
  folds into it, EVR table lookups);
* main-memory dynamic energy of the tile's DRAM bytes (Parameter Buffer and layer-id reads,
  texture lines, color and depth flushes read or written; its display-list and layer-id writes);
* leakage (GPU, technique structures present in the frame) and DRAM background and refresh
  power x the tile's raster cycles.

Identity: the sum over every tile of a frame is the frame's energy (``FrameEstimate.energy``,
GPU + main memory, the screen apart) less what no tile owns: the dynamic energy of the frame
counters (vertex fetch and shading, primitive assembly, Parameter Buffer primitive records
written, and their L2 and DRAM traffic) and the leakage, background and refresh over the
geometry phase.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tilesim.render.pipeline.counters import FrameCounters
from tilesim.timing.config import Config
from tilesim.timing.counter_batch import batch_from_frames
from tilesim.timing.memory_traffic import dram_dynamic_energy_per_byte, tile_memory
from tilesim.timing.model import (
    CHUNK_TILES,
    BatchEstimate,
    dynamic_energy_terms,
    effective_tiles,
    estimate_batch,
)

SCREEN_TARGET = "default"


@dataclass
class PassTiles:
    """One pass into the default framebuffer: ``pass_index`` its position among the frame's
    passes (``FrameCounters.passes``), ``cycles`` and ``energy_j`` (tiles_y, tiles_x) float64 per
    tile (raster cycles, joules), row 0 the bottom tile row."""

    frame: int
    pass_index: int
    cycles: np.ndarray
    energy_j: np.ndarray

    def to_dict(self) -> dict:
        """JSON-ready: ``pass``, ``tiles_x``, ``tiles_y``, ``cycles`` and ``energy_j`` as
        [tiles_y][tiles_x] nested lists, row 0 the bottom tile row."""
        ty, tx = self.cycles.shape
        return {"pass": self.pass_index, "tiles_x": tx, "tiles_y": ty,
                "rows": "bottom first", "cycles": self.cycles.tolist(),
                "energy_j": self.energy_j.tolist()}


def tile_energy(est: BatchEstimate, cfg: Config, ecfg: Config) -> np.ndarray:
    """Energy (J) of every tile of the estimate's batch (see the module notes): (N,) float64,
    in the batch's tile order. ``cfg``, ``ecfg``: the configurations ``est`` was made with."""
    batch = est.batch
    # J per DRAM byte read / written of each traffic source (its activations' share included)
    per = {k: dram_dynamic_energy_per_byte(ecfg, k) for k in
           ("pb_writes", "pb_reads", "textures", "color_flush", "depth_flush", "technique_tables")}
    # power that runs with time (W) per frame: leakage of the GPU and of the techniques present,
    # DRAM background and refresh (every such term of the model is power x frame time)
    timed = est.memory["background"] + est.memory["refresh"]
    for part in est.gpu_static.values():
        timed = timed + part
    watts = np.divide(timed, est.seconds, out=np.zeros(batch.frames), where=est.seconds > 0)
    out = np.empty(batch.tile_frame.size)
    start = 0
    for chunk in batch.chunks(CHUNK_TILES):
        n = chunk.tile_frame.size
        t = effective_tiles(chunk)
        mem = tile_memory(chunk, t, cfg)
        written = t["pb_list_bytes_written"] + t["evr_layer_bytes_written"]
        units = dynamic_energy_terms(np.asarray, dict.fromkeys(chunk.scalars, 0.0), written, t,
                                     mem, cfg, ecfg)
        energy = np.zeros(n)
        for value in units.values():
            energy += value
        energy += (mem["pb_dram"] * per["pb_reads"][0] + mem["tex_dram"] * per["textures"][0]
                   + mem["tech_read_dram"] * per["technique_tables"][0]
                   + t["pb_list_bytes_written"] * per["pb_writes"][1]
                   + t["evr_layer_bytes_written"] * per["technique_tables"][1]
                   + t["color_flush_bytes"] * per["color_flush"][1]
                   + t["depth_flush_bytes"] * per["depth_flush"][1])
        frames = batch.tile_frame[start:start + n]
        energy += watts[frames] * est.tile_cycles[start:start + n] / cfg["tech.clock"]
        out[start:start + n] = energy
        start += n
    return out


def screen_tiles(est: BatchEstimate, cfg: Config, ecfg: Config,
                 energy: bool = True) -> list[list[PassTiles]]:
    """Per frame of the estimate's batch, its passes into the default framebuffer
    (``target == "default"``), in pass order, with per-tile cycles and energy (zeros when
    ``energy`` is False: the cycles alone cost nothing to extract)."""
    batch = est.batch
    joules = tile_energy(est, cfg, ecfg) if energy else np.zeros(est.tile_cycles.size)
    sizes = batch.pass_tiles.astype(np.int64)
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
    first_pass = np.searchsorted(batch.pass_frame, np.arange(batch.frames))
    out: list[list[PassTiles]] = [[] for _ in range(batch.frames)]
    for p in np.flatnonzero(batch.pass_target == SCREEN_TARGET):
        f = int(batch.pass_frame[p])
        shape = (int(sizes[p] // batch.pass_tiles_x[p]), int(batch.pass_tiles_x[p]))
        tiles = slice(starts[p], starts[p] + sizes[p])
        out[f].append(PassTiles(int(batch.frame_ids[f]), int(p - first_pass[f]),
                                est.tile_cycles[tiles].reshape(shape),
                                joules[tiles].reshape(shape)))
    return out


def frame_tiles(frame: FrameCounters, cfg: Config, ecfg: Config) -> list[PassTiles]:
    """Per-tile raster cycles and energy (J) of one frame's passes into the default
    framebuffer, as (tiles_y, tiles_x) arrays, row 0 the bottom tile row (module notes)."""
    est = estimate_batch(batch_from_frames([frame]), cfg, ecfg)
    return screen_tiles(est, cfg, ecfg)[0]


def mean_screen_cycles(maps: list[list[PassTiles]]) -> np.ndarray | None:
    """Raster cycles per tile of the screen, summed over each frame's passes into the default
    framebuffer and averaged over the frames that have one: (tiles_y, tiles_x), row 0 the
    bottom tile row; None without any such pass. Frames whose screen has another tile grid than
    the first such frame's are left out."""
    frames = [m for m in maps if m]
    if not frames:
        return None
    shape = frames[0][0].cycles.shape
    sums = [np.sum([p.cycles for p in m if p.cycles.shape == shape], axis=0) for m in frames
            if all(p.cycles.shape == shape for p in m)]
    return np.mean(sums, axis=0)
