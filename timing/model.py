"""Analytic timing, memory-traffic and energy model of a tile-based GPU, fed only by counters.

Vectorized over every tile of every frame at once (``tilesim.timing.counter_batch.Batch``); all
quantities are float64, cycles are GPU cycles at ``tech.clock``, bytes are main-memory bytes unless
named otherwise. The pieces live in their own modules: ``tilesim.timing.memory_traffic`` (caches
below the counters' first level, DRAM traffic and LPDDR4 energy), ``tilesim.timing.shader`` (shader
throughput: each program's cycles per instruction from the cycle-level shader core),
``tilesim.timing.techniques`` (the techniques' own time and energy),
``tilesim.timing.screen`` (OLED energy from the frame's pixels).

Cycles
* A memory client's stage: ``max(DRAM bytes / bandwidth, sum of request latencies / requests in
  flight)`` (bandwidth bound, or Little's law when too few requests overlap); requests are 64-byte
  lines served by a near cache, the L2 (2 cycles) or DRAM (``latency_avg``, the mean of 50-100).
* Queue sizes enter twice: (1) the queue in front of a memory client bounds its requests in
  flight (vertex fetch: 2 vertex queues x 16; Parameter Buffer writes: triangle queue; Parameter
  Buffer reads: tile queue; texture misses: fragment queue / 4 lanes = quads); the shader
  core's warps hide texture latency (``tilesim.timing.shader``); (2) the
  bottleneck model (max over stages) assumes the queues decouple the stages, which holds when a
  phase's work is much larger than a queue (the fill/drain term covers the rest).
* Geometry phase, per frame: vertex fetch ``max(vertex-cache accesses / banks, mem(vertex lines
  x 64 + index bytes, 2 x 16))``; vertex shading (``tilesim.timing.shader``); primitive assembly
  ``prims_assembled / 1``; tiler ``sum(prims_binned) / 1``; Parameter Buffer writes ``mem(record
  + list + EVR layer bytes, 16)``; shared bus ``(vertex + index + PB write bytes) / bandwidth``;
  technique stages (RE signature unit, EVR tables). ``geometry = max(stages) + otq_stall +
  fill``: ``otq_stall``, the Accumulate CRC unit's folds of the tiles of primitives that
  overflow the Overlapped Tiles Queue, while the pipeline waits (``tilesim.timing.techniques``);
  ``fill = latency_max + 6`` (the 6 baseline stages) when the frame has geometry work, else 0.
* Raster phase, per tile (one 16x16 tile at a time through one pipeline; its quads are shared
  by the 4 fragment processors, each with its own texture cache and unit, as in Teapot's
  Mali-400MP-like model): tile fetch (PB and EVR layer-id reads through tile cache, L2, DRAM;
  16 in flight); rasterizer ``fragments x attributes_per_fragment / 16``; early Z ``(early +
  late z tested) / 4 / min(max_rate, in_flight / test_latency)``; fragment shading
  (``tilesim.timing.shader``); texture filtering ``texels / (4 units x 4)``; texture memory (L2 and
  DRAM lines of the texture-cache misses, 16 quads in flight); blending ``color_writes / 4``; shared
  bus ``(PB + layer-id + texture DRAM bytes) / bandwidth``; technique stages (EVR FVP update and
  Layer Buffer, memoization LUT), all overlapped.
  ``tile = max(stages) + fill + end + technique serial`` with ``max(stages)`` and ``fill =
  latency_max + 8`` for a tile with primitives that is rendered (not skipped by RE; any other
  tile has no pipeline work), ``end = (color + depth flush bytes) / bandwidth + DSR DCT row
  pass`` after the tile (the DCT starts after the flush, Frame Coherence §6.4.1; its column
  pass overlaps the next tile, §6.4.2; ``techniques.dsr.dct_after_flush = 0``: the longer of
  the flush and the row pass) because the 256-entry color buffer holds exactly one 16x16 tile
  and both read it, less, with ``buffers.color.flush_overlap``, the start of the next tile in
  traversal order (``tilesim.timing.traversal``) up to its first color write
  (``flush_hidden_cycles``; when the buffer holds two tiles or more the flush joins the
  shared-bus stage and the DCT the stages instead, i.e. they overlap the next tile whole),
  and RE's signature compare in series. With the overlap a rendered tile takes at least the
  color buffer's time, ``blend + end + flush_read_share x bus`` (``color_buffer_cycles``:
  its writes, then its flush, slowed by the reads that go first on the bus). The two overlap
  constants are fitted to the cycle-level reference (``tilesim.timing.cycle_level``).
* ``frame = geometry + sum over passes and tiles of tile`` (phases in sequence): each tile's
  cycles include the part of its flush left exposed, so tiles' cycles add up to the frame's
  raster cycles.
* Fragment Memoization: the renderer does not remove the work of LUT hits, so every fragment
  shader and texture counter of a tile is scaled by ``1 - memo_hits / fragments_shaded`` (the hit
  fragments' share of the tile's shader work: hits x the tile's average instructions per
  fragment). Quads issue whole, so this is optimistic when hits leave quads partly live.

Energy (joules): GPU = sum of event counts x energy per event (``energy_32nm.toml``) per unit,
plus static power x frame time (the technique structures leak only in frames that have them);
main memory = LPDDR4 row activations (open page: row misses per traffic source), read and
write bursts, background and refresh x frame time (``tilesim.timing.memory_traffic``);
screen = OLED power of the frame's pixels x refresh period, reported beside the others
(``total`` is GPU + memory, as in the theses' figures).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from tilesim.render.pipeline.counters import FrameCounters
from tilesim.timing import techniques
from tilesim.timing.config import Config
from tilesim.timing.counter_batch import Batch, batch_from_frames
from tilesim.timing.memory_traffic import (
    WRITE_SOURCES,
    dram_activations,
    dram_dynamic_energy_per_byte,
    dram_energy,
    dram_low_power_cycles,
    hierarchy_cycles,
    memory_cycles,
    pb_written_bytes,
    tile_memory,
)
from tilesim.timing.screen import screen_energy
from tilesim.timing.shader import fragment_shader_cycles, vertex_shader_cycles
from tilesim.timing.traversal import Traversal, traversal

BASE_GEOMETRY_STAGES = ("vertex_fetch", "vertex_shading", "primitive_assembly", "tiler",
                        "pb_write", "bus")
GEOMETRY_STAGES = (*BASE_GEOMETRY_STAGES, *techniques.GEOMETRY_STAGES)
BASE_RASTER_STAGES = ("tile_fetch", "rasterizer", "early_z", "fragment_shading",
                      "texture_filter", "texture_memory", "blend", "bus")
RASTER_STAGES = (*BASE_RASTER_STAGES, *techniques.RASTER_STAGES,
                 *techniques.END_OF_TILE_STAGES)
BASELINE_UNITS = ("vertex_processor", "fragment_processors", "vertex_cache", "texture_caches",
                  "texture_units", "tile_cache", "l2", "primitive_assembly", "tiler",
                  "rasterizer", "early_z", "color_buffer", "blend")
BASELINE_STATIC_UNITS = ("vertex_processor", "fragment_processors", "fixed_function", "caches")
# Fragment-shader work a memoization hit removes (scaled by the tile's miss share).
MEMO_SCALED = ("fs_alu", "fs_tex", "fs_flow", "fs_quad_alu", "fs_quad_tex", "fs_quad_flow",
               "texels_fetched", "tex_cache_accesses", "tex_cache_misses")
DSR_RATES = 5  # 1x, 1/4x, 1/16x, 1/64x, 1/256x
PJ = 1e-12
MW = 1e-3


def memo_keep(t: dict[str, np.ndarray]) -> np.ndarray:
    """Share of each tile's fragment-shader work left after memoization hits: (N,)."""
    shaded = t["fragments_shaded"]
    hits = np.minimum(t["memo_hits"], shaded)
    return 1.0 - np.divide(hits, shaded, out=np.zeros_like(shaded), where=shaded > 0)


def effective_tiles(batch: Batch) -> dict[str, np.ndarray]:
    """The tile counters the model charges: memoization hits' shader work removed."""
    t = dict(batch.tiles)
    if not t["memo_hits"].any():  # no memoization hits: nothing to remove
        t["fragments_shaded_effective"] = t["fragments_shaded"]
        return t
    keep = memo_keep(t)
    for name in MEMO_SCALED:
        t[name] = t[name] * keep
    t["fragments_shaded_effective"] = t["fragments_shaded"] * keep
    return t


def _sums(batch: Batch, t: dict[str, np.ndarray], names) -> dict[str, np.ndarray]:
    return {n: batch.per_frame(t[n]) for n in names}


def geometry_stage_cycles(batch: Batch, t: dict[str, np.ndarray],
                          cfg: Config) -> dict[str, np.ndarray]:
    """Cycles of each geometry stage of every frame before overlap: (F,) arrays."""
    s = batch.scalars
    vline = cfg["caches.vertex.line_size"]
    vertex_bytes = s["vertex_cache_misses"] * vline + s["index_bytes"]
    written = pb_written_bytes(batch, t)
    vq = cfg["queues.vertex.count"] * cfg["queues.vertex.entries"]
    stages = {
        "vertex_fetch": np.maximum(s["vertex_cache_accesses"] / cfg["caches.vertex.banks"],
                                   memory_cycles(vertex_bytes, vq, cfg, vline)),
        "vertex_shading": vertex_shader_cycles(batch, cfg),
        "primitive_assembly": s["prims_assembled"] / cfg["stages.primitive_assembly.rate"],
        "tiler": batch.per_frame(t["prims_binned"]) / cfg["stages.tiler.rate"],
        "pb_write": memory_cycles(written, cfg["queues.triangle.entries"], cfg,
                                  cfg["caches.tile.line_size"]),
        "bus": (vertex_bytes + written) / cfg["memory.bandwidth"],
    }
    sums = _sums(batch, t, ("re_subblocks_signed", "re_shifts", "re_signature_accesses",
                            "re_otq_overflow_entries", "evr_lgt_accesses", "evr_fvp_reads"))
    stages.update(techniques.geometry_stage_cycles(sums, cfg))
    return stages


def _phase(stages: dict[str, np.ndarray], names, fill: float, has_work=None) -> np.ndarray:
    bottleneck = np.array(stages[names[0]], dtype=np.float64)
    for name in names[1:]:
        np.maximum(bottleneck, stages[name], out=bottleneck)
    active = bottleneck > 0 if has_work is None else has_work
    return bottleneck + np.where(active, fill, 0.0)


def geometry_cycles(stages: dict[str, np.ndarray], cfg: Config) -> np.ndarray:
    """``max(stages) + serial + fill`` per frame: (F,); serial: the Overlapped Tiles Queue
    stall (``techniques.GEOMETRY_SERIAL``, absent = 0)."""
    overlapped = _phase(stages, GEOMETRY_STAGES, 0.0)
    serial = sum(stages.get(name, 0.0) for name in techniques.GEOMETRY_SERIAL)
    total = overlapped + serial
    return total + np.where(total > 0, cfg["memory.latency_max"] + len(BASE_GEOMETRY_STAGES),
                            0.0)


def _flush_overlaps(cfg: Config) -> bool:
    return cfg["buffers.color.entries"] >= 2 * cfg["screen.tile_size"] ** 2


def tile_stage_cycles(batch: Batch, t: dict[str, np.ndarray], mem: dict[str, np.ndarray],
                      cfg: Config) -> dict[str, np.ndarray]:
    """Cycles of each raster stage of every tile: (N,) arrays."""
    tline = cfg["caches.texture.line_size"]
    lanes = cfg["processors.shader.lanes"]
    flush = t["color_flush_bytes"] + t["depth_flush_bytes"]
    bus_bytes = (mem["pb_dram"] + mem["tech_read_dram"] + mem["tex_dram"]
                 + (flush if _flush_overlaps(cfg) else 0.0))
    z_rate = min(cfg["stages.early_z.max_rate"],
                 cfg["stages.early_z.in_flight"] / cfg["stages.early_z.test_latency"])
    stages = {
        "tile_fetch": hierarchy_cycles(
            mem["pb_dram"] + mem["tech_read_dram"], mem["pb_l2"] + mem["tech_read_l2"],
            mem["pb_tile_cache"], cfg["caches.tile.latency"], cfg["queues.tile.entries"], cfg,
            cfg["caches.tile.line_size"]),
        "rasterizer": t["fragments_rasterized"] * cfg["stages.rasterizer.attributes_per_fragment"]
        / cfg["stages.rasterizer.rate"],
        "early_z": (t["early_z_tested"] + t["late_z_tested"]) / lanes / z_rate,
        "fragment_shading": fragment_shader_cycles(batch, t, cfg),
        "texture_filter": t["texels_fetched"] / (cfg["caches.texture.count"]
                                                 * cfg["stages.texture.texels_per_cycle"]),
        "texture_memory": hierarchy_cycles(mem["tex_dram"], mem["tex_l2"], 0.0, 0.0,
                                           cfg["queues.fragment.entries"] / lanes, cfg, tline),
        "blend": t["color_writes"] / cfg["stages.blend.rate"],
        "bus": bus_bytes / cfg["memory.bandwidth"],
    }
    stages.update(techniques.raster_stage_cycles(t, cfg))
    return stages


def traversal_order(batch: Batch, cfg: Config) -> Traversal:
    """The order the raster pipeline visits the batch's tiles (``tilesim.timing.traversal``):
    Z-order with ``screen.zorder_traversal`` (Frame Coherence §2.3), else scanline, top tile
    row first."""
    return traversal(batch.tile_pass, batch.pass_tiles_x, batch.pass_tiles,
                     zorder=bool(cfg["screen.zorder_traversal"]))


def tile_rendered(t: dict[str, np.ndarray]) -> np.ndarray:
    """Tiles that run the raster pipeline: primitives binned, not skipped by RE."""
    return (t["prims_binned"] > 0) & (t["re_tiles_skipped"] <= 0)


def flush_hidden_cycles(work: np.ndarray, rendered: np.ndarray, drain: np.ndarray,
                        order: Traversal, fill: float, cfg: Config) -> np.ndarray:
    """Cycles of each tile's end-of-tile drain (its color/depth flush, or DSR's DCT) that the
    work of the tile after it hides: (N,) arrays in, (N,) out.

    A one-tile color buffer is flushed while the next tile in traversal order (``order``, same
    pass) already fetches, rasterizes, depth-tests and shades; it only waits for the buffer at
    its first color write (Frame Coherence §4.3.1: the flush is "a relatively small portion of
    the total time of the Raster Pipeline"). That start is the ``fill`` latency, then
    ``buffers.color.flush_hidden_quads`` quads at one a cycle (the quads the pipeline holds
    before the color buffer: fragment queue, early Z and the processors' warp slots; fitted to
    the cycle-level reference, ``tilesim.timing.cycle_level``), at most the next tile's
    bottleneck ``work``.

    The next tile is the first one after this tile that occupies the pipeline: a rendered tile
    (``rendered``) hides its start; a tile that only flushes (no primitives, e.g. the clear
    color; ``drain`` > 0) hides nothing, since its own flush must follow this one on the memory
    bus; tiles with neither (RE-skipped: no work, no flush) are passed over. The last such tile
    of a pass hides nothing. So skipping a tile never adds time: the tile before it is then
    hidden by a later tile's start (at most ``fill + work`` of the skipped tile, which is gone)."""
    queued = cfg["buffers.color.flush_hidden_quads"]
    start = np.where(rendered, fill + np.minimum(queued, work), 0.0)
    after = order.next_active(rendered | (drain > 0))
    return np.where(after >= 0, start[after], 0.0)


def tile_cycles(t: dict[str, np.ndarray], stages: dict[str, np.ndarray], cfg: Config,
                order: Traversal, with_techniques: bool = True) -> np.ndarray:
    """Total cycles of every tile: bottleneck + fill + end of tile + RE compare: (N,).

    A tile that does not run the raster pipeline (no primitive binned, or skipped by RE) has no
    pipeline work: it costs its flush and RE's compare only. The end of a tile is the
    color/depth flush of a one-tile color buffer, then DSR's DCT reading the color buffer
    (its row pass; Frame Coherence §6.4.1-§6.4.2; ``techniques.dsr.dct_after_flush = 0``: the
    row pass beside the flush, the next tile waiting for the longer of the two). With
    ``buffers.color.flush_overlap`` the start of the next tile in traversal order (``order``)
    hides part of it (:func:`flush_hidden_cycles`); the part left is charged to the flushing
    tile, so the tiles' cycles add up to the pass's. A rendered tile's fill is charged only
    where the pipeline empties before it (:func:`fill_cycles`): behind a tile whose flush is
    skipped (Transaction Elimination) the next tile's start overlaps that tile's work. With a
    color buffer of two tiles or more both overlap the next tile: they join the stages.
    ``with_techniques=False`` gives the baseline pipeline's cycles for the same counters (the
    technique-overhead figure); :func:`tile_cycle_parts` gives the parts."""
    return sum(tile_cycle_parts(t, stages, cfg, order, with_techniques).values())


# The parts of a tile's cycles (tile_cycle_parts): they add up to tile_cycles.
TILE_PARTS = ("work", "fill", "flush", "dct", "color_buffer", "serial")


def tile_cycle_parts(t: dict[str, np.ndarray], stages: dict[str, np.ndarray], cfg: Config,
                     order: Traversal, with_techniques: bool = True) -> dict[str, np.ndarray]:
    """The parts of :func:`tile_cycles` of every tile, (N,) each, adding up to it: ``work`` the
    bottleneck stage's cycles (rendered tiles), ``fill`` the pipeline fill charged
    (:func:`fill_cycles`), ``flush`` and ``dct`` the end-of-tile drain left exposed (the
    color/depth flush, DSR's DCT row pass: the exposed drain split in proportion to their
    cycles), ``color_buffer`` the color buffer's floor over the rest (with
    ``buffers.color.flush_overlap``: :func:`color_buffer_cycles`), ``serial`` RE's compare."""
    fill = cfg["memory.latency_max"] + len(BASE_RASTER_STAGES)
    overlap = _flush_overlaps(cfg)
    names = BASE_RASTER_STAGES
    if with_techniques:
        names = (*names, *techniques.RASTER_STAGES, *techniques.END_OF_TILE_STAGES * overlap)
    rendered = tile_rendered(t)
    work = _phase(stages, names, 0.0, rendered)        # the bottleneck stage
    zero = np.zeros_like(work)
    serial = (techniques.raster_serial_cycles(t, cfg) + zero) if with_techniques else zero
    flush = (t["color_flush_bytes"] + t["depth_flush_bytes"]) / cfg["memory.bandwidth"]
    if overlap:  # the flush is in the bus stage, also of a tile that only flushes
        charged = fill_cycles(work, rendered, np.zeros_like(work), order, fill, cfg)
        return {"work": work, "fill": charged, "flush": zero, "dct": zero,
                "color_buffer": zero, "serial": serial}
    work = np.where(rendered, work, 0.0)
    dct = zero
    drain = flush
    if with_techniques:  # DSR's DCT on the color buffer: after the flush, or beside it
        after = bool(cfg["techniques.dsr.dct_after_flush"])
        for name in techniques.END_OF_TILE_STAGES:
            dct = dct + stages[name]
        drain = flush + dct if after else np.maximum(flush, dct)
    charged = fill_cycles(work, rendered, drain, order, fill, cfg)
    exposed = drain
    floor = zero
    if cfg["buffers.color.flush_overlap"]:
        exposed = np.maximum(
            drain - flush_hidden_cycles(work, rendered, drain, order, fill, cfg), 0.0)
        floor = np.where(rendered, np.maximum(
            color_buffer_cycles(stages, drain, cfg) - (work + charged + exposed), 0.0), 0.0)
    flush_share = np.divide(flush, flush + dct, out=np.ones_like(flush), where=flush + dct > 0)
    return {"work": work, "fill": charged, "flush": exposed * flush_share,
            "dct": exposed * (1.0 - flush_share), "color_buffer": floor, "serial": serial}


def fill_cycles(work: np.ndarray, rendered: np.ndarray, drain: np.ndarray, order: Traversal,
                fill: float, cfg: Config) -> np.ndarray:
    """The pipeline fill (``fill``: the memory latency plus the raster stages) charged to each
    rendered tile: (N,).

    The tile fetcher moves to the next tile as soon as it has fetched a tile's entries (Frame
    Coherence ch. 2: the raster pipeline's stages are decoupled by queues), so a tile's fetch,
    rasterization and shading start under the work of the tile before it. What stops them is
    the one-tile color buffer: the next tile's first color write waits for this tile's flush.
    So a rendered tile pays its whole fill when it is the first of its pass, or when the tile
    before it in traversal order (``order``) ends with a drain (its flush or DCT, ``drain`` >
    0; the fill then hides that drain instead, :func:`flush_hidden_cycles`), or does not run
    the pipeline; after a rendered tile that drains nothing (Transaction Elimination skipped
    its flush) it pays ``max(0, fill - work of that tile)``. Without
    ``buffers.color.flush_overlap`` (the fetcher waits for the color buffer) and with a color
    buffer of two tiles or more (no drain holds the next tile: ``drain`` is 0 for every tile)
    the same rule reads: the fill is charged in full without the overlap; with two tiles or
    more it overlaps the previous rendered tile's work."""
    full = np.where(rendered, fill, 0.0)
    if not cfg["buffers.color.flush_overlap"]:
        return full
    after = order.next_active(rendered | (drain > 0))
    prev_hides = rendered & (drain <= 0) & (after >= 0)
    hidden = np.zeros_like(full)
    src = np.flatnonzero(prev_hides)
    dst = after[src]
    keep = rendered[dst]
    hidden[dst[keep]] = np.minimum(fill, work[src[keep]])
    return full - hidden


def color_buffer_cycles(stages: dict[str, np.ndarray], drain: np.ndarray,
                        cfg: Config) -> np.ndarray:
    """The one-tile color buffer's time per rendered tile, a floor under its cycles when the
    flush overlaps the next tile: (N,). The buffer takes the tile's writes (``blend``), then
    its flush and DCT (``drain``); the flush is a posted write stream on the shared bus, so
    the next tile's DRAM reads go first and ``buffers.color.flush_read_share`` of the bus
    stage's read cycles fall inside it (fitted to the cycle-level reference,
    ``tilesim.timing.cycle_level``)."""
    return stages["blend"] + drain + cfg["buffers.color.flush_read_share"] * stages["bus"]


# What bounds a frame (bound_cycles): each raster stage's category when it is a tile's bottleneck.
BOUND_CATEGORIES = ("bus", "flush", "shading", "texturing", "raster_fixed", "geometry", "fill",
                    "other")
STAGE_BOUND = {"bus": "bus", "fragment_shading": "shading", "texture_filter": "texturing",
               "texture_memory": "texturing", "rasterizer": "raster_fixed",
               "early_z": "raster_fixed", "blend": "raster_fixed"}
PART_BOUND = {"fill": "fill", "flush": "flush", "dct": "other", "color_buffer": "flush",
              "serial": "other"}


def bound_cycles(batch: Batch, stages: dict[str, np.ndarray], parts: dict[str, np.ndarray],
                 geometry: np.ndarray, cfg: Config) -> dict[str, np.ndarray]:
    """The cycles of every frame attributed to what bounds them, by ``BOUND_CATEGORIES``:
    (F,) arrays adding up to the frame's cycles (geometry + raster).

    Tile-based rendering runs the geometry phase, then the raster phase (Frame Coherence
    §2.1), so ``geometry`` is the geometry phase's cycles. Each tile's raster cycles
    (:func:`tile_cycle_parts`) go to: its bottleneck stage's category for the ``work`` part
    (``bus``: the shared DRAM bus stage, every DRAM byte of the tile's reads, and its flush
    with a color buffer of two tiles or more; ``shading``: fragment shading; ``texturing``:
    texture filtering and texture memory; ``raster_fixed``: the per-fragment fixed-function
    stages, rasterizer, early Z and blending; ``other``: tile fetch and the techniques'
    stages), ``flush`` for the end-of-tile flush left exposed and
    the color buffer's floor (its writes, flush and the reads inside it), ``fill`` for the
    pipeline fill (the memory latency and the stages a tile's first quad crosses while the
    pipeline is empty), ``other`` for DSR's DCT on the color buffer and RE's compare. A share
    is these cycles over the frame's cycles; the raster shares over the raster cycles leave
    geometry out (:func:`bound_shares`)."""
    names = [n for n in RASTER_STAGES if n in stages
             and (n not in techniques.END_OF_TILE_STAGES or _flush_overlaps(cfg))]
    matrix = np.stack([np.asarray(stages[n], dtype=np.float64) for n in names])
    top = np.argmax(matrix, axis=0)
    out = {c: np.zeros(batch.frames) for c in BOUND_CATEGORIES}
    out["geometry"] = np.asarray(geometry, dtype=np.float64).copy()
    for i, name in enumerate(names):
        cat = STAGE_BOUND.get(name, "other")
        out[cat] += batch.per_frame(np.where(top == i, parts["work"], 0.0))
    for part, cat in PART_BOUND.items():
        out[cat] += batch.per_frame(parts[part])
    return out


def bound_shares(cycles: dict[str, np.ndarray | float], raster: bool = False) -> dict:
    """Shares of ``bound_cycles`` (arrays or sums): of the frame's cycles, or with ``raster``
    of the raster cycles (geometry left out); 0 where there are no cycles."""
    keys = [k for k in BOUND_CATEGORIES if not (raster and k == "geometry")]
    total = sum(np.asarray(cycles[k], dtype=np.float64) for k in keys)
    return {k: np.divide(np.asarray(cycles[k], dtype=np.float64), total,
                         out=np.zeros_like(total), where=total > 0) for k in keys}


def regime(shares: dict[str, float]) -> dict:
    """Whether the frame time is bound as the thesis's games are read to be: fragment-bound,
    shading plus texturing larger than every other share (Frame Coherence §3.2, Tables
    3.3-3.4 characterize the games' fragment work: ~4 fragment-shader instructions and ~4.4
    texels per fragment at an overshading of ~3.5; DSR's raster speed-up of §6.5 scales with
    the fragments shaded). ``shares``: :func:`bound_shares` of the frame (floats)."""
    fragment = float(shares["shading"] + shares["texturing"])
    others = {k: float(v) for k, v in shares.items() if k not in ("shading", "texturing")}
    largest = max(shares, key=lambda k: shares[k])
    return {"fragment_bound": bool(fragment > max(others.values(), default=0.0)),
            "fragment_share": fragment, "largest": largest}


def bound_report(cycles: dict[str, float]) -> dict:
    """The report's figures of what bounds a frame or a workload from its summed
    ``bound_cycles``: ``bound_cycles``, ``bound_shares`` (of the frame's cycles),
    ``raster_bound_shares`` (of the raster cycles) and ``regime`` (:func:`regime`)."""
    if not cycles:
        return {}
    shares = {k: float(v) for k, v in bound_shares(cycles).items()}
    return {"bound_cycles": {k: float(v) for k, v in cycles.items()},
            "bound_shares": shares,
            "raster_bound_shares": {k: float(v)
                                    for k, v in bound_shares(cycles, raster=True).items()},
            "regime": regime(shares)}


def bound_line(shares: dict[str, float]) -> str:
    """``bound by: bus 62%, shading 20%, ...``: the shares largest first (those under 0.5%
    left out)."""
    ranked = sorted(((v, k) for k, v in shares.items() if v >= 0.005), reverse=True)
    return "bound by: " + (", ".join(f"{k} {v:.0%}" for v, k in ranked) or "nothing")


def traffic_bytes(batch: Batch, t: dict[str, np.ndarray], mem: dict[str, np.ndarray],
                  cfg: Config) -> dict[str, np.ndarray]:
    """Main-memory bytes of every frame by source: (F,) arrays."""
    pf = batch.per_frame
    s = batch.scalars
    return {
        "vertices": s["vertex_cache_misses"] * cfg["caches.vertex.line_size"],
        "indices": s["index_bytes"].copy(),
        "pb_writes": s["pb_record_bytes_written"] + pf(t["pb_list_bytes_written"]),
        "pb_reads": pf(mem["pb_dram"]),
        "textures": pf(mem["tex_dram"]),
        "color_flush": pf(t["color_flush_bytes"]),
        "depth_flush": pf(t["depth_flush_bytes"]),
        "technique_tables": pf(t["evr_layer_bytes_written"]) + pf(mem["tech_read_dram"]),
    }


def _dram_read_write(batch: Batch, t, traffic) -> tuple[np.ndarray, np.ndarray]:
    """DRAM bytes read and written per frame: (F,) each."""
    tech_write = batch.per_frame(t["evr_layer_bytes_written"])
    reads = (traffic["vertices"] + traffic["indices"] + traffic["pb_reads"] + traffic["textures"]
             + traffic["technique_tables"] - tech_write)
    writes = traffic["pb_writes"] + traffic["color_flush"] + traffic["depth_flush"] + tech_write
    return reads, writes


def gpu_dynamic_energy(batch: Batch, t: dict[str, np.ndarray], mem: dict[str, np.ndarray],
                       cfg: Config, ecfg: Config) -> dict[str, np.ndarray]:
    """Dynamic GPU energy (J) of every frame by unit: (F,) arrays."""
    return dynamic_energy_terms(batch.per_frame, batch.scalars, pb_written_bytes(batch, t), t,
                                mem, cfg, ecfg)


def dynamic_energy_terms(pf, s, written, t: dict[str, np.ndarray], mem: dict[str, np.ndarray],
                         cfg: Config, ecfg: Config) -> dict[str, np.ndarray]:
    """Dynamic GPU energy (J) by unit, linear in the counters: ``pf`` reduces (N,) tile arrays
    (``Batch.per_frame``: per frame; the identity: per tile), ``s`` the frame counters and
    ``written`` the Parameter Buffer bytes written, both on ``pf``'s output (per tile: zeros
    and the tile's display-list and layer-id bytes)."""
    e = lambda k: ecfg[k] * PJ  # noqa: E731
    lanes = cfg["processors.shader.lanes"]
    line = cfg["caches.l2.line_size"]
    vs_lane = s["vs_alu"] + s["vs_tex"] + s["vs_flow"]
    fs_lane = pf(t["fs_alu"] + t["fs_tex"] + t["fs_flow"])
    fs_quad = pf(t["fs_quad_alu"] + t["fs_quad_tex"] + t["fs_quad_flow"])
    pb_requested = written + pf(t["pb_bytes_read"] + mem["tech_read"])
    # the L2 sees first-level misses: vertex lines, indices, tile-cache write-backs and misses,
    # texture-cache misses (flushes bypass it)
    l2_bytes = (s["vertex_cache_misses"] * cfg["caches.vertex.line_size"] + s["index_bytes"]
                + written + pf(mem["pb_l2"] + mem["pb_dram"] + mem["tech_read"]
                               + mem["tex_miss_bytes"]))
    units = {
        "vertex_processor": vs_lane * e("gpu.shader.lane_op")
        + vs_lane / lanes * e("gpu.shader.issue"),
        "fragment_processors": fs_lane * e("gpu.shader.lane_op") + fs_quad * e("gpu.shader.issue"),
        "vertex_cache": s["vertex_cache_accesses"] * e("gpu.vertex_cache.access"),
        "texture_caches": pf(t["tex_cache_accesses"]) * e("gpu.texture_cache.access"),
        "texture_units": pf(t["texels_fetched"]) * e("gpu.texture_unit.texel"),
        "tile_cache": pb_requested / cfg["caches.tile.line_size"] * e("gpu.tile_cache.line"),
        "l2": l2_bytes / line * e("gpu.l2.line"),
        "primitive_assembly": s["prims_assembled"] * e("gpu.primitive_assembly.triangle"),
        "tiler": pf(t["prims_binned"]) * e("gpu.tiler.entry"),
        "rasterizer": pf(t["fragments_rasterized"])
        * cfg["stages.rasterizer.attributes_per_fragment"] * e("gpu.rasterizer.attribute"),
        "early_z": pf(t["depth_reads"] + t["depth_writes"]) * e("gpu.early_z.access"),
        "color_buffer": pf(t["color_writes"] + t["blend_ops"]) * e("gpu.color_buffer.access"),
        "blend": pf(t["blend_ops"]) * e("gpu.blend.op"),
    }
    work = {n: pf(t[n]) for n in techniques.TECHNIQUE_WORK_COUNTERS}
    work["memo_hits"] = pf(np.minimum(t["memo_hits"], t["memo_lookups"]))
    units.update(techniques.dynamic_energy(work, ecfg, cfg))
    return units


def gpu_static_power(cfg: Config, ecfg: Config) -> dict[str, float]:
    """Leakage power (W) of the baseline GPU by unit."""
    kb = sum(cfg[f"caches.{c}.count"] * cfg[f"caches.{c}.size"]
             for c in ("vertex", "texture", "tile", "l2")) / 1024
    return {
        "vertex_processor": cfg["processors.vertex.count"] * ecfg["gpu.static.vertex_processor"]
        * MW,
        "fragment_processors": cfg["processors.fragment.count"]
        * ecfg["gpu.static.fragment_processor"] * MW,
        "fixed_function": ecfg["gpu.static.fixed_function"] * MW,
        "caches": kb * ecfg["gpu.static.sram"] * MW,
    }


def _diagnostics(batch: Batch, t: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Per-frame figures for reports and plots (no cost in them): (F,) arrays."""
    pf = batch.per_frame
    raw = batch.tiles
    s = batch.scalars
    binned = pf(raw["prims_binned"])
    out = {
        "tiles": np.bincount(batch.tile_frame, minlength=batch.frames).astype(np.float64),
        "tiles_rendered": pf(tile_rendered(t).astype(np.float64)),
        "fragments_shaded": pf(raw["fragments_shaded"]),
        "fragments_shaded_effective": pf(t["fragments_shaded_effective"]),
        "fs_instructions": pf(raw["fs_alu"] + raw["fs_tex"] + raw["fs_flow"]),
        "fs_instructions_effective": pf(t["fs_alu"] + t["fs_tex"] + t["fs_flow"]),
        "pb_tiles_per_primitive": np.divide(binned, s["prims_rasterized"],
                                            out=np.zeros_like(binned),
                                            where=s["prims_rasterized"] > 0),
    }
    for name in (*techniques.TECHNIQUE_SAVINGS_COUNTERS, *techniques.TECHNIQUE_DIAGNOSTIC_COUNTERS,
                 "memo_lookups"):
        if name != "dsr_rate":
            out[name] = pf(raw[name])
    # DSR: tiles per sampling rate over the passes that carry DSR counters, and the average
    # sample rate (samples per pixel: 4^-rate)
    dsr_tiles = batch.pass_present["dsr"][batch.tile_pass]
    rate = np.clip(raw["dsr_rate"], 0, DSR_RATES - 1).astype(np.int64)
    hist = np.bincount(batch.tile_frame[dsr_tiles] * DSR_RATES + rate[dsr_tiles],
                       minlength=batch.frames * DSR_RATES).reshape(batch.frames, DSR_RATES)
    for r in range(DSR_RATES):
        out[f"dsr_tiles_rate{r}"] = hist[:, r].astype(np.float64)
    counted = hist.sum(axis=1)
    samples = hist @ (4.0 ** -np.arange(DSR_RATES))
    out["dsr_average_sample_rate"] = np.divide(samples, counted, out=np.full(batch.frames, np.nan),
                                               where=counted > 0)
    return out


@dataclass
class FrameEstimate:
    frame: int
    geometry_cycles: float
    raster_cycles: float
    seconds: float
    geometry_stages: dict[str, float]
    raster_stages: dict[str, float]  # summed over tiles (for the bottleneck breakdown)
    traffic: dict[str, float]
    gpu_dynamic: dict[str, float]
    gpu_static: dict[str, float]
    memory: dict[str, float]
    memory_by_source: dict[str, float] = field(default_factory=dict)
    screen_energy: float | None = None
    technique_cycles: float = 0.0
    techniques_present: list[str] = field(default_factory=list)
    diagnostics: dict[str, float | None] = field(default_factory=dict)
    bound_cycles: dict[str, float] = field(default_factory=dict)

    def __repr__(self) -> str:
        """One line: time, cycles, energy by part and traffic (``to_dict()`` has every
        stage, unit and source)."""
        screen = ("" if self.screen_energy is None
                  else f", screen_energy={self.screen_energy:.4g} J")
        return (f"FrameEstimate(frame={self.frame}, seconds={self.seconds:.4g}, "
                f"cycles={self.cycles:.0f}, energy={self.energy:.4g} J (GPU "
                f"{self.gpu_energy:.4g}, memory {self.memory_energy:.4g}){screen}, "
                f"traffic={self.traffic_total:.0f} bytes)")

    @property
    def cycles(self) -> float:
        return self.geometry_cycles + self.raster_cycles

    @property
    def gpu_energy(self) -> float:
        return sum(self.gpu_dynamic.values()) + sum(self.gpu_static.values())

    @property
    def memory_energy(self) -> float:
        return sum(self.memory.values())

    @property
    def energy(self) -> float:
        """GPU + main memory (the screen is reported beside it)."""
        return self.gpu_energy + self.memory_energy

    @property
    def technique_gpu_energy(self) -> float:
        return (sum(self.gpu_dynamic[u] for u in techniques.TECHNIQUE_UNITS)
                + sum(self.gpu_static[u] for u in techniques.TECHNIQUE_STATIC_UNITS))

    @property
    def technique_memory_energy(self) -> float:
        return self.memory_by_source.get("technique_tables", 0.0)

    @property
    def traffic_total(self) -> float:
        return sum(self.traffic.values())

    def to_dict(self) -> dict:
        system = None if self.screen_energy is None else self.energy + self.screen_energy
        return {
            "frame": self.frame,
            "cycles": {"geometry": self.geometry_cycles, "raster": self.raster_cycles,
                       "total": self.cycles, "technique_overhead": self.technique_cycles},
            "seconds": self.seconds,
            "techniques": self.techniques_present,
            "geometry_stage_cycles": self.geometry_stages,
            "raster_stage_cycles_summed_over_tiles": self.raster_stages,
            "energy_j": {"total": self.energy, "gpu": self.gpu_energy,
                         "memory": self.memory_energy, "screen": self.screen_energy,
                         "system": system,
                         "technique_overhead": {"gpu": self.technique_gpu_energy,
                                                "memory": self.technique_memory_energy},
                         "gpu_dynamic": self.gpu_dynamic, "gpu_static": self.gpu_static,
                         "memory_parts": self.memory,
                         "memory_dynamic_by_source": self.memory_by_source},
            "traffic_bytes": {**self.traffic, "total": self.traffic_total},
            **bound_report(self.bound_cycles),
            # NaN (e.g. no DSR tiles to average) becomes null: the report stays valid JSON
            "diagnostics": {k: None if v is None or math.isnan(v) else v
                            for k, v in self.diagnostics.items()},
        }


@dataclass
class BatchEstimate:
    """Every estimate of a batch as arrays: (F,) per frame, (N,) per tile."""

    batch: Batch
    geometry_cycles: np.ndarray
    raster_cycles: np.ndarray
    seconds: np.ndarray
    geometry_stages: dict[str, np.ndarray]
    raster_stages: dict[str, np.ndarray]      # (F,) summed over tiles
    tile_cycles: np.ndarray                   # (N,)
    tile_stages: dict[str, np.ndarray]        # (N,)
    traffic: dict[str, np.ndarray]
    gpu_dynamic: dict[str, np.ndarray]
    gpu_static: dict[str, np.ndarray]
    memory: dict[str, np.ndarray]
    memory_by_source: dict[str, np.ndarray]
    screen: np.ndarray                         # (F,) J, NaN where the frame's PNG is missing
    technique_cycles: np.ndarray
    diagnostics: dict[str, np.ndarray]
    bound_cycles: dict[str, np.ndarray]       # (F,) by BOUND_CATEGORIES (bound_cycles)

    def frame(self, i: int) -> FrameEstimate:
        pick = lambda d: {k: float(v[i]) for k, v in d.items()}  # noqa: E731
        screen = float(self.screen[i])
        return FrameEstimate(
            int(self.batch.frame_ids[i]), float(self.geometry_cycles[i]),
            float(self.raster_cycles[i]), float(self.seconds[i]), pick(self.geometry_stages),
            pick(self.raster_stages), pick(self.traffic), pick(self.gpu_dynamic),
            pick(self.gpu_static), pick(self.memory), pick(self.memory_by_source),
            None if np.isnan(screen) else screen, float(self.technique_cycles[i]),
            [k for k in techniques.TECHNIQUES if self.batch.present[k][i]],
            pick(self.diagnostics), pick(self.bound_cycles))

    def frames(self) -> list[FrameEstimate]:
        return [self.frame(i) for i in range(self.batch.frames)]


# Frames are independent, so a large batch runs in chunks of whole frames: the ~150 temporary
# arrays of a chunk take ~0.5 MB each whatever the batch size (a 1000-frame 1080p suite in one
# piece would need ~10 GB of temporaries), at no cost in speed.
CHUNK_TILES = 1 << 16


def estimate_batch(batch: Batch, cfg: Config, ecfg: Config,
                   histograms: np.ndarray | None = None) -> BatchEstimate:
    """Estimate every frame of ``batch``; ``histograms``: (F, 3, 256) pixel histograms of the
    frames for the OLED model (None or NaN rows: screen energy unknown)."""
    parts = [_estimate_chunk(chunk, cfg, ecfg) for chunk in batch.chunks(CHUNK_TILES)]
    cat = lambda name: {k: np.concatenate([getattr(p, name)[k] for p in parts])  # noqa: E731
                        for k in getattr(parts[0], name)}
    arr = lambda name: np.concatenate([getattr(p, name) for p in parts])  # noqa: E731
    if histograms is None:
        screen = np.full(batch.frames, np.nan)
    else:
        screen = screen_energy(histograms, cfg, ecfg)
    return BatchEstimate(
        batch, arr("geometry_cycles"), arr("raster_cycles"), arr("seconds"),
        cat("geometry_stages"), cat("raster_stages"), arr("tile_cycles"), cat("tile_stages"),
        cat("traffic"), cat("gpu_dynamic"), cat("gpu_static"), cat("memory"),
        cat("memory_by_source"), screen, arr("technique_cycles"), cat("diagnostics"),
        cat("bound_cycles"))


def _estimate_chunk(batch: Batch, cfg: Config, ecfg: Config) -> BatchEstimate:
    t = effective_tiles(batch)
    order = traversal_order(batch, cfg)
    mem = tile_memory(batch, t, cfg, order)

    gstages = geometry_stage_cycles(batch, t, cfg)
    geometry = geometry_cycles(gstages, cfg)
    geometry_base = _phase(gstages, BASE_GEOMETRY_STAGES,
                           cfg["memory.latency_max"] + len(BASE_GEOMETRY_STAGES))
    tstages = tile_stage_cycles(batch, t, mem, cfg)
    parts = tile_cycle_parts(t, tstages, cfg, order)
    per_tile = sum(parts.values())
    per_tile_base = tile_cycles(t, tstages, cfg, order, with_techniques=False)
    raster = batch.per_frame(per_tile)
    technique_cycles = (geometry - geometry_base) + raster - batch.per_frame(per_tile_base)
    seconds = (geometry + raster) / cfg["tech.clock"]

    traffic = traffic_bytes(batch, t, mem, cfg)
    reads, writes = _dram_read_write(batch, t, traffic)
    low_power = dram_idle_seconds(batch, gstages, geometry, tstages, per_tile, mem, cfg, ecfg)
    memory = dram_energy(traffic, reads, writes, seconds, cfg, ecfg, low_power)
    tech_write = batch.per_frame(t["evr_layer_bytes_written"])
    by_source = {}
    for k, v in traffic.items():
        per_read, per_write = dram_dynamic_energy_per_byte(ecfg, k)
        by_source[k] = v * (per_write if k in WRITE_SOURCES else per_read)
    per_read, per_write = dram_dynamic_energy_per_byte(ecfg, "technique_tables")
    by_source["technique_tables"] = (tech_write * per_write
                                     + (traffic["technique_tables"] - tech_write) * per_read)
    diagnostics = _diagnostics(batch, t)
    diagnostics["dram_activations"] = dram_activations(traffic, ecfg)
    diagnostics["dram_power_down_seconds"], diagnostics["dram_self_refresh_seconds"] = low_power

    static = {k: w * seconds for k, w in gpu_static_power(cfg, ecfg).items()}
    for key, w in techniques.static_power(cfg, ecfg).items():
        static[key] = w * seconds * batch.present[key.removesuffix("_structures")]

    return BatchEstimate(
        batch, geometry, raster, seconds, gstages,
        {k: batch.per_frame(v) for k, v in tstages.items()}, per_tile, tstages, traffic,
        gpu_dynamic_energy(batch, t, mem, cfg, ecfg), static, memory, by_source,
        np.full(batch.frames, np.nan), technique_cycles, diagnostics,
        bound_cycles(batch, tstages, parts, geometry, cfg))


def dram_idle_seconds(batch: Batch, gstages: dict[str, np.ndarray], geometry: np.ndarray,
                      tstages: dict[str, np.ndarray], per_tile: np.ndarray,
                      mem: dict[str, np.ndarray], cfg: Config,
                      ecfg: Config) -> tuple[np.ndarray, np.ndarray]:
    """Seconds of every frame each DRAM channel spends in power-down and in self-refresh:
    (F,), (F,) (``tilesim.timing.memory_traffic.dram_low_power_cycles``).

    The bus is idle for a phase's cycles less its DRAM bytes / ``memory.bandwidth`` (the two
    channels interleave every stream, so both are busy together). The geometry phase's
    requests (vertex lines, indices, Parameter Buffer writes) are spread over it: one gap per
    64-byte request. A tile's Parameter Buffer reads come at its start and its flush at its
    end, back to back with the next tile's reads: one burst; its texture lines reaching DRAM
    are spread over its shading: one gap each, plus one. A flush the next tile's start hides
    counts as bus time of the flushing tile (its idle clamped at 0), so a frame's idle time is
    at most the model's frame cycles less its bus cycles."""
    line = ecfg["memory.access_size"]
    bandwidth = cfg["memory.bandwidth"]
    geometry_idle = geometry - gstages["bus"]
    geometry_gaps = 1.0 + gstages["bus"] * bandwidth / line
    flush = batch.tiles["color_flush_bytes"] + batch.tiles["depth_flush_bytes"]
    tile_bus = (mem["pb_dram"] + mem["tech_read_dram"] + mem["tex_dram"] + flush) / bandwidth
    tile_gaps = 1.0 + mem["tex_dram"] / cfg["caches.texture.line_size"]
    g_pd, g_sr = dram_low_power_cycles(geometry_idle, geometry_gaps, cfg, ecfg)
    t_pd, t_sr = dram_low_power_cycles(per_tile - tile_bus, tile_gaps, cfg, ecfg)
    clock = cfg["tech.clock"]
    return ((g_pd + batch.per_frame(t_pd)) / clock, (g_sr + batch.per_frame(t_sr)) / clock)


def estimate_frames(frames: list[FrameCounters], cfg: Config, ecfg: Config,
                    histograms: np.ndarray | None = None) -> list[FrameEstimate]:
    return estimate_batch(batch_from_frames(frames), cfg, ecfg, histograms).frames()


def estimate_frame(frame: FrameCounters, cfg: Config, ecfg: Config,
                   histogram: np.ndarray | None = None) -> FrameEstimate:
    hist = None if histogram is None else np.asarray(histogram, dtype=np.float64)[None]
    return estimate_frames([frame], cfg, ecfg, hist)[0]
