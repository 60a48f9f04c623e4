"""From a frame's counters and its recorded quad streams to the reference's pass inputs.

Everything per tile the reference needs besides the quads comes from the same records and
memory model the analytic model reads, so the two differ only in how they overlap the work:

* display-list entries: ``prims_binned`` of the tile (RE-skipped tiles: none), each of
  ``pb_bytes_read / prims_binned`` bytes, served by the tile cache, the L2 or DRAM in the
  shares of ``tilesim.timing.memory_traffic.tile_memory`` (spread evenly over the entries);
  a primitive's quads wait for the entry at the same rank among the tile's entries (entries
  without quads, bounding-box binning's misses, spread evenly between them);
* texture-cache misses: the L2 keeps ``texture_l2_hit_ratio`` of them, the others go to DRAM
  (every ``1 / (1 - h)``-th miss of the pass, evenly);
* shading: each program's cycles per warp instruction on the cycle-level shader core at its
  warps in flight (issue) and with one warp alone (its latency), ``timing.shader_core``;
* flushes: ``color_flush_bytes + depth_flush_bytes``; DSR's DCT row pass on tiles with a DCT;
  RE's ``compare_cycles`` on tiles with a signature.
"""

from __future__ import annotations

import functools

import numpy as np

from tilesim.timing import techniques
from tilesim.timing.config import Config
from tilesim.timing.counter_batch import Batch
from tilesim.timing.memory_traffic import latency_avg, texture_l2_hit_ratio, tile_memory
from tilesim.timing.model import effective_tiles, tile_rendered
from tilesim.timing.reference.raster import PassInput, RasterParameters
from tilesim.timing.reference.records import QuadStream
from tilesim.timing.traversal import Traversal

SINGLE_WARP_SAMPLE = 64      # warps the core runs one at a time to time a program's latency


@functools.cache
def program_cpis(text: str) -> tuple[float, float]:
    """(cycles per warp instruction at the core's warps in flight, with one warp in flight) of
    a fragment program's TGSI text, from the cycle-level shader core (cached on disk)."""
    from tilesim.timing.shader import _core
    from tilesim.timing.shader_core.throughput import text_throughput

    core = _core()
    full = text_throughput(text, core, name="reference program")["cycles_per_instruction"]
    alone = text_throughput(text, core, warps=SINGLE_WARP_SAMPLE, warps_in_flight=1,
                            name="reference program")["cycles_per_instruction"]
    return float(full), float(alone)


def warp_slots() -> int:
    from tilesim.timing.shader import _core

    return int(_core()["warps.max_warps"])


def spread(counts: np.ndarray, fraction: float | np.ndarray) -> np.ndarray:
    """``counts`` (n,) split so the parts sum to ``floor(total x fraction)`` at every prefix:
    the share of each row, evenly spread, as integers: (n,) int64."""
    cum = np.cumsum(np.asarray(counts, dtype=np.float64))
    part = np.floor(cum * fraction + 1e-9)
    return np.diff(np.concatenate([[0.0], part])).astype(np.int64)


def _new_primitive(stream: QuadStream) -> np.ndarray:
    """(Q,) bool: the quad starts a run of its primitive within its tile."""
    q = stream.quads
    new = np.ones(q["tile"].size, dtype=bool)
    new[1:] = (q["tile"][1:] != q["tile"][:-1]) | (q["primitive"][1:] != q["primitive"][:-1])
    return new


def _runs_per_tile(stream: QuadStream) -> np.ndarray:
    """Primitives with quads in each tile (runs of one primitive's quads): (T,) int64."""
    return np.bincount(stream.quads["tile"], weights=_new_primitive(stream),
                       minlength=stream.tiles).astype(np.int64)


def _entry_rank(stream: QuadStream, entries: np.ndarray) -> np.ndarray:
    """Each quad's display-list entry within its tile: its primitive's rank among the tile's
    primitives with quads, spread evenly over the tile's ``entries`` (T,) (at least its
    primitives with quads): (Q,) int64."""
    tile = stream.quads["tile"]
    if tile.size == 0:
        return np.zeros(0, dtype=np.int64)
    run = np.cumsum(_new_primitive(stream)) - 1              # global run number
    rank = run - run[stream.offsets[:-1].clip(max=tile.size - 1)][tile]
    runs = np.maximum(_runs_per_tile(stream)[tile], 1)
    return np.floor((rank + 1) * entries[tile] / runs).astype(np.int64) - 1


def pass_input(stream: QuadStream, tiles: dict[str, np.ndarray], mem: dict[str, np.ndarray],
               order: np.ndarray, texts: dict[str, str], cfg: Config) -> PassInput:
    """The reference's input for one pass: ``tiles`` / ``mem`` its (T,) counters and memory
    split (batch order), ``order`` (T,) the pass's tiles in traversal order (local indices),
    ``texts`` the programs' TGSI by digest."""
    rendered = tile_rendered(tiles)
    stream = stream.select_tiles(rendered)
    q = stream.quads
    entries = np.where(rendered, tiles["prims_binned"], 0).astype(np.int64)
    counts = np.maximum(entries, _runs_per_tile(stream))
    rank = _entry_rank(stream, counts)

    # tiles into traversal order: quads and entries follow their tile
    quad_counts = stream.quads_per_tile()[order]
    quad_start = np.concatenate([[0], np.cumsum(quad_counts)]).astype(np.int64)
    quad_index = _gather(stream.offsets[:-1][order], quad_counts)
    entry_counts = counts[order]
    entry_start = np.concatenate([[0], np.cumsum(entry_counts)]).astype(np.int64)
    tile_of_quad = q["tile"][quad_index]
    position = np.empty(order.size, dtype=np.int64)
    position[order] = np.arange(order.size)
    entry = entry_start[position[tile_of_quad]] + rank[quad_index]

    # entries: where each is served (tile cache, L2, DRAM), evenly within its tile
    read = tiles["pb_bytes_read"]
    frac_dram = np.divide(mem["pb_dram"], read, out=np.zeros_like(read), where=read > 0)
    frac_l2 = np.divide(mem["pb_l2"], read, out=np.zeros_like(read), where=read > 0)
    entry_tile = np.repeat(order, entry_counts)
    k = np.arange(entry_tile.size) - np.repeat(entry_start[:-1], entry_counts)
    fd, fl = frac_dram[entry_tile], frac_l2[entry_tile]
    dram = np.floor((k + 1) * fd + 1e-9) > np.floor(k * fd + 1e-9)
    l2 = ~dram & (np.floor((k + 1) * (fd + fl) + 1e-9) > np.floor(k * (fd + fl) + 1e-9))
    entry_bytes = np.divide(read, counts, out=np.zeros_like(read), where=counts > 0)[entry_tile]
    tile_latency = cfg["caches.tile.latency"]
    entry_latency = np.where(dram, latency_avg(cfg),
                             np.where(l2, tile_latency + cfg["caches.l2.latency"], tile_latency))

    # quads
    cpis = np.array([program_cpis(texts[d]) for d in stream.programs]).reshape(-1, 2)
    program = q["program"][quad_index]
    instructions = q["instructions"][quad_index].astype(np.float64)
    misses = q["tex_misses"][quad_index]
    dram_misses = spread(misses, 1.0 - texture_l2_hit_ratio(cfg))
    shaded = q["shaded"][quad_index]
    late_tested = q["late_tested"][quad_index]
    dct = float(techniques.dct_color_buffer_cycles(cfg))
    compare = cfg["techniques.signature.compare_cycles"]
    return PassInput(
        quad_start=quad_start, entry_start=entry_start,
        flush_bytes=(tiles["color_flush_bytes"] + tiles["depth_flush_bytes"])[order].astype(
            np.float64),
        dct_cycles=np.where(tiles["dsr_dcts"] > 0, dct, 0.0)[order],
        serial_cycles=np.where(tiles["re_signature_accesses"] > 0, compare, 0.0)[order],
        entry_latency=entry_latency.astype(np.float64),
        entry_bus_bytes=np.where(dram, entry_bytes, 0.0),
        entry=entry.astype(np.int64),
        raster_cost=q["covered"][quad_index] * cfg["stages.rasterizer.attributes_per_fragment"],
        early=(q["early_tested"][quad_index] > 0).astype(np.int64),
        survives=shaded.astype(np.int64),
        issue=np.where(shaded, instructions * cpis[program, 0] if cpis.size else 0.0, 0.0),
        texture=q["texels"][quad_index] / cfg["stages.texture.texels_per_cycle"],
        latency=np.where(shaded, instructions * cpis[program, 1] if cpis.size else 0.0, 0.0),
        l2_misses=(misses - dram_misses).astype(np.int64),
        dram_misses=dram_misses,
        rop_lanes=np.maximum(q["written"], late_tested)[quad_index].astype(np.float64),
        late=(late_tested > 0).astype(np.int64))


def _gather(starts: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Indices ``starts[i] .. starts[i] + counts[i]`` for every i, concatenated."""
    total = int(counts.sum())
    if total == 0:
        return np.zeros(0, dtype=np.int64)
    offsets = np.concatenate([[0], np.cumsum(counts)[:-1]])
    return (np.repeat(starts - offsets, counts) + np.arange(total)).astype(np.int64)


def batch_pass_inputs(batch: Batch, streams: list[QuadStream], order: Traversal,
                      cfg: Config) -> list[tuple[np.ndarray, PassInput]]:
    """For every pass of a one-or-more-frame ``batch`` whose quad stream is given (``streams``
    in the batch's pass order): (the pass's tile indices in the batch in traversal order, its
    reference input)."""
    t = effective_tiles(batch)
    mem = tile_memory(batch, t, cfg, order)
    sizes = batch.pass_tiles.astype(np.int64)
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
    step = order.rank()
    out = []
    for p, stream in enumerate(streams):
        lo, n = int(starts[p]), int(sizes[p])
        local = slice(lo, lo + n)
        tiles = {k: v[local] for k, v in t.items()}
        memory = {k: v[local] for k, v in mem.items()}
        visit = np.argsort(step[local], kind="stable")          # local tiles, visiting order
        out.append((lo + visit, pass_input(stream, tiles, memory, visit, batch.programs, cfg)))
    return out


def parameters(cfg: Config) -> RasterParameters:
    return RasterParameters.from_config(cfg, warp_slots())
