"""Cycle-level reference of the raster pipeline: the tiles of a render pass, cycle by cycle.

The analytic model (``tilesim.timing.model``) charges each tile its bottleneck stage plus a fill
latency plus the part of its end-of-tile flush the next tile does not hide. This module runs the
same GPU (Frame Coherence Table 3.1, ``baseline_gpu.toml``) one cycle at a time over the quads
each tile really produced (``records.QuadStream``, recorded from a render by
``tilesim.studies.quad_stream``), so that those overlap terms can be checked. The stages,
in the order a quad meets them (Frame Coherence ch. 2, the raster pipeline; ch. 3, Table 3.1):

* Tile fetcher: reads the tile's display-list entries (``prims_binned``) one per cycle into the
  tile queue (``queues.tile.entries`` in flight, an entry leaves when the rasterizer is past its
  primitive). Each entry reads its list entry and its primitive's record through the tile cache
  and the L2 (the reference's own lookups, ``caches`` / ``inputs``); the lines both miss are
  requests to the reference's DRAM (``dram``: banks, rows, refresh, one data bus per channel in
  arrival order), the entry ready when the last is back. RE's signature compare
  (``compare_cycles``) precedes the tile's fetch. With ``buffers.color.flush_overlap`` the
  fetcher moves on to the next tile as soon as it has fetched this one's entries; without it
  the next tile waits for this tile's flush (a literal one-tile color buffer).
* Rasterizer: ``stages.rasterizer.rate`` attributes per cycle, a quad costing its covered
  fragments x ``attributes_per_fragment``; a quad waits for its primitive's entry. Quads of an
  early-Z program go to early Z, the others straight to the fragment queue.
* Early Z: accepts ``max_rate`` quads per cycle, holds at most ``in_flight`` quads, each
  ``test_latency`` cycles; leaves in order into the fragment queue (a quad whose lanes all
  fail is dropped). The depth buffer holds one tile: a tile's quads enter only after every
  earlier tile's depth work (early and late) is done.
* Fragment queue: ``queues.fragment.entries / lanes`` quads; each cycle every fragment
  processor (``processors.fragment.count``) with a free warp slot (``warps.max_warps`` of the
  shader core) takes the head quad (one per processor per cycle).
* Fragment processors: a warp (quad) needs ``instructions x CPI`` cycles of its processor's
  issue (CPI: the program's cycles per warp instruction at full occupancy, from the cycle-level
  shader core ``tilesim.timing.shader_core``), shared among the resident warps in slot order,
  and its texels ``texels / stages.texture.texels_per_cycle`` cycles of the processor's
  texture unit (Table 3.1: one texture cache and unit per processor), beside the issue,
  and cannot finish before ``instructions x CPI_1`` cycles after dispatch (CPI_1: one warp alone,
  its dependency chain) plus the time its texture misses take: at dispatch each miss is looked
  up in the L2 (``caches.l2.latency``; which lines hit is decided by the reference's L2,
  ``inputs``), the L2's misses are DRAM reads (``dram``). A finished warp keeps its slot until
  the ROP takes it.
* ROP (late Z, blending, color buffer writes): ``stages.blend.rate`` fragments per cycle, a
  quad costing its written (or late-tested) lanes, tiles strictly in order; the first write of a
  tile waits until the previous tile's color buffer is flushed (one-tile color buffer, Table
  3.1: 256 entries).
* End of tile: when all its quads are done and it has been rasterized, its color and depth
  lines are written to DRAM (requests in arrival order with every other: a flush queued before
  the next tile's texture misses delays them), then (``techniques.dsr.dct_after_flush``) or
  beside it DSR's DCT row pass holds the color buffer; the buffer is free when the last line is
  written.

Memory: every DRAM request (Parameter Buffer reads, texture misses, color and depth writes)
goes through ``dram.dram_access`` when the pipeline asks for it; the channels' data buses serve
them in that order (``DramState`` keeps the banks' rows, refresh and power-down and counts the
commands and states for the energy).

A tile's reference cycles are ``finish(t) - finish(t - 1)`` in traversal order (``finish``: the
color buffer free again, or the tile's last quad done when it flushes nothing; the first tile
from 0), so the tiles add up to the pass, as the analytic tiles do.

Not modelled: triangle setup cost per primitive, per-pixel ordering at the ROP (quads are
written in completion order within a tile), L2 bank conflicts, the L2's lookups in cycle order
(``inputs`` looks the lines up in the tiles' order before the loop),
EVR's and Fragment Memoization's raster structures (a quad whose lanes the memoization LUT all
answered, ``memo_hit``, runs no program and fetches no texel; the LUT's own lookups are not
timed), the shader core's instruction cache (the CPIs already hold it), DSR's superfragment
resolve.

The cycle loop is one function written in the subset Numba and Python both run (``jit``);
``advance_pass.py_func`` is the pure-Python loop giving the same cycles. It runs for a bounded
number of cycles a call and keeps its state in arrays (``start_pass``), so that
:func:`run_pass` calls it in slices and Python hears Ctrl-C between them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tilesim.jit import jit, run_in_slices
from tilesim.timing.cycle_level.dram import DramState, DramTiming, dram_access

INF = 1e30


@dataclass
class RasterParameters:
    """The GPU numbers the loop uses (from ``baseline_gpu.toml`` and the shader core)."""

    tile_queue: int
    raster_rate: float          # attributes / cycle
    z_rate: int                 # quads / cycle into early Z
    z_in_flight: int
    z_latency: int
    fragment_queue: int         # quads
    processors: int
    warp_slots: int
    rop_rate: float             # fragments / cycle
    bandwidth: float            # bytes / cycle (the horizon's bound only)
    l2_latency: float
    memory_latency: float       # an unloaded DRAM row conflict (the horizon's bound only)
    line: float                 # bytes of a line
    flush_overlap: bool
    dct_after_flush: bool
    dram: DramTiming | None = None     # the DRAM's timing (not in ``vector``)

    @classmethod
    def from_config(cls, cfg, warp_slots: int) -> RasterParameters:
        lanes = cfg["processors.shader.lanes"]
        return cls(
            tile_queue=int(cfg["queues.tile.entries"]),
            raster_rate=float(cfg["stages.rasterizer.rate"]),
            z_rate=int(cfg["stages.early_z.max_rate"]),
            z_in_flight=int(cfg["stages.early_z.in_flight"]),
            z_latency=int(cfg["stages.early_z.test_latency"]),
            fragment_queue=int(cfg["queues.fragment.entries"] // lanes),
            processors=int(cfg["processors.fragment.count"]),
            warp_slots=int(warp_slots),
            rop_rate=float(cfg["stages.blend.rate"]),
            bandwidth=float(cfg["memory.bandwidth"]),
            l2_latency=float(cfg["caches.l2.latency"]),
            memory_latency=float(cfg["memory.dram.controller_latency"] + cfg["memory.dram.trp"]
                                 + cfg["memory.dram.trcd"] + cfg["memory.dram.tcl"]
                                 + cfg["memory.dram.trfc"]),
            line=float(cfg["caches.l2.line_size"]),
            flush_overlap=bool(cfg["buffers.color.flush_overlap"]),
            dct_after_flush=bool(cfg["techniques.dsr.dct_after_flush"]),
            dram=DramTiming.from_config(cfg),
        )

    def vector(self) -> np.ndarray:
        """The parameters as one float64 array, the loop's argument (order of the fields)."""
        return np.array([float(getattr(self, f)) for f in self.__dataclass_fields__
                         if f != "dram"], dtype=np.float64)


@dataclass
class PassInput:
    """One pass, tiles in traversal order (T tiles, Q quads, E display-list entries), as the
    loop reads it: every array a plain int64 / float64 array.

    Per tile: ``quad_start`` (T + 1,) the tile's quads, ``entry_start`` (T + 1,) its entries,
    ``color_address`` / ``depth_address`` the first byte of its color / depth slot and
    ``color_lines`` / ``depth_lines`` the lines flushed there, ``dct_cycles`` DSR row pass on
    the color buffer, ``serial_cycles`` RE compare before the tile. Per entry:
    ``entry_latency`` (cycles after issue on chip: tile cache, and the L2 where it missed),
    ``entry_dram_start`` (E + 1,) its DRAM reads in ``entry_dram_address`` (byte addresses).
    Per quad: ``entry`` the entry (global index) its primitive needs, ``raster_cost``
    attributes, ``early`` (1: early Z), ``survives`` (1: goes on to shading after early Z),
    ``issue``, ``texture`` (its texture unit) and ``latency`` cycles on a processor,
    ``l2_misses`` texture-cache misses the L2 serves, ``tex_dram_start`` (Q + 1,) its DRAM
    reads in ``tex_dram_address``, ``rop_lanes`` lanes for the ROP, ``late`` (1: depth-tested
    at the ROP). ``lookups``: (tile cache lookups, hits, L2 lookups, hits, Parameter Buffer
    lines read from DRAM, texture lines read from DRAM) of the pass."""

    quad_start: np.ndarray
    entry_start: np.ndarray
    color_address: np.ndarray
    color_lines: np.ndarray
    depth_address: np.ndarray
    depth_lines: np.ndarray
    dct_cycles: np.ndarray
    serial_cycles: np.ndarray
    entry_latency: np.ndarray
    entry_dram_start: np.ndarray
    entry_dram_address: np.ndarray
    entry: np.ndarray
    raster_cost: np.ndarray
    early: np.ndarray
    survives: np.ndarray
    issue: np.ndarray
    texture: np.ndarray
    latency: np.ndarray
    l2_misses: np.ndarray
    tex_dram_start: np.ndarray
    tex_dram_address: np.ndarray
    rop_lanes: np.ndarray
    late: np.ndarray
    lookups: np.ndarray | None = None

    PER_TILE = ("color_address", "color_lines", "depth_address", "depth_lines", "dct_cycles",
                "serial_cycles")

    @property
    def tiles(self) -> int:
        return self.quad_start.size - 1

    @property
    def flush_bytes(self) -> np.ndarray:
        """Color + depth lines of each tile, in lines x 64 bytes: (T,)."""
        return (self.color_lines + self.depth_lines) * 64.0

    def head(self, tiles: int) -> PassInput:
        """The pass's first ``tiles`` tiles (traversal order), their quads and entries."""
        tiles = min(int(tiles), self.tiles)
        q, e = int(self.quad_start[tiles]), int(self.entry_start[tiles])
        qd, ed = int(self.tex_dram_start[q]), int(self.entry_dram_start[e])
        cut = {}
        for name, value in vars(self).items():
            if name in ("quad_start", "entry_start"):
                cut[name] = value[:tiles + 1]
            elif name == "entry_dram_start":
                cut[name] = value[:e + 1]
            elif name == "tex_dram_start":
                cut[name] = value[:q + 1]
            elif name == "entry_dram_address":
                cut[name] = value[:ed]
            elif name == "tex_dram_address":
                cut[name] = value[:qd]
            elif name == "lookups":
                cut[name] = None
            elif name in self.PER_TILE:
                cut[name] = value[:tiles]
            elif name == "entry_latency":
                cut[name] = value[:e]
            else:
                cut[name] = value[:q]
        return PassInput(**cut)

    def horizon(self, params: RasterParameters) -> float:
        """A cycle count no pass can reach (the loop stops there: a bug, not a result)."""
        requests = (self.entry_dram_address.size + self.tex_dram_address.size
                    + self.color_lines.sum() + self.depth_lines.sum())
        serial = (self.issue.sum() + self.texture.sum() + self.latency.sum()
                  + self.raster_cost.sum() + self.l2_misses.sum() * params.l2_latency
                  + requests * (params.line + params.memory_latency)
                  + self.entry_latency.sum() + self.dct_cycles.sum()
                  + self.serial_cycles.sum() + self.rop_lanes.sum()
                  + (self.entry.size + self.entry_latency.size + self.tiles) * 64)
        return 4.0 * float(serial) + 1e4



_INPUTS = ("quad_start", "entry_start", "color_address", "color_lines", "depth_address",
           "depth_lines", "dct_cycles", "serial_cycles", "entry_latency", "entry_dram_start",
           "entry_dram_address", "entry", "raster_cost", "early", "survives", "issue",
           "texture", "latency", "l2_misses", "tex_dram_start", "tex_dram_address", "rop_lanes",
           "late")
_INTEGERS = {"quad_start", "entry_start", "color_lines", "depth_lines", "entry_dram_start",
             "entry", "early", "survives", "l2_misses", "tex_dram_start", "late"}


def run_pass(data: PassInput, params: RasterParameters, compiled: bool = True,
             dram: DramState | None = None, slice_cycles: int | None = None) -> np.ndarray:
    """Finish cycle of every tile of the pass (traversal order): (T,) float64. ``dram``: the
    DRAM's state, its counts for the energy (closed at the pass's end); a fresh one if None.
    ``slice_cycles``: the cycles of each call into the loop (default sized to ~0.1 s, so that
    Ctrl-C is heard); the result does not depend on it."""
    start, advance = start_pass, advance_pass
    if not compiled:
        start = getattr(start_pass, "py_func", start_pass)
        advance = getattr(advance_pass, "py_func", advance_pass)
    vector = np.append(params.vector(), data.horizon(params))
    dram = dram if dram is not None else DramState(params.dram)
    inputs = tuple(np.ascontiguousarray(getattr(data, name),
                                        dtype=np.int64 if name in _INTEGERS else np.float64)
                   for name in _INPUTS)
    state = start(inputs[0], inputs[1], inputs[7], inputs[11], inputs[13], inputs[22],
                  inputs[8].size, vector)
    dp = params.dram.vector()
    # in slices (tilesim.jit.run_in_slices), so that Ctrl-C is heard: a 4K pass is ~18 s
    run_in_slices(lambda size: advance(*inputs, vector, dp, *dram.arrays(), *state, size),
                  slice_cycles)
    finish = state[0]
    dram.close(float(finish.max(initial=0.0)))
    if finish.size and finish.min() < 0:
        raise RuntimeError("the raster reference did not finish the pass (a deadlock in the "
                           "cycle loop): please report it with the trace and frame")
    return finish


def tile_cycles_of(finish: np.ndarray) -> np.ndarray:
    """Each tile's share of the pass: ``finish(t) - finish(t - 1)``, (T,)."""
    return np.diff(np.concatenate([[0.0], finish]))


# The loop's scalars between slices (``start_pass``'s ``ints`` and ``floats``).
(I_FT, I_FE, I_RQ, I_RT, I_Z_HEAD, I_Z_COUNT, I_Z_OK, I_FQ_HEAD, I_FQ_COUNT, I_RR, I_ROP_T,
 I_FLUSH_TILE, I_COUNT) = range(13)
F_SERIAL_LEFT, F_CB_FREE, F_FLUSH_DONE, F_DCT_LEFT, F_NOW, F_COUNT = range(6)


@jit
def start_pass(quad_start, entry_start, serial_cycles, entry, early, late, entries, p):
    """The state of a pass before its first cycle, for :func:`advance_pass`: (finish,
    outstanding, z_pending, tile_of_quad, entry_ready, tile_ready, fetched_tile, raster_done,
    z_quad, z_time, fq, s_quad, s_issue, s_texture, s_ready, ints, floats)."""
    z_in_flight = int(p[3])
    fq_size = int(p[5])
    processors = int(p[6])
    slots = int(p[7])
    tiles = quad_start.size - 1
    quads = entry.size
    finish = np.full(tiles, -1.0)
    # per tile: quads not yet done (dropped or written); quads still using the depth buffer
    outstanding = np.zeros(tiles, dtype=np.int64)
    z_pending = np.zeros(tiles, dtype=np.int64)
    tile_of_quad = np.zeros(quads, dtype=np.int64)
    for t in range(tiles):
        outstanding[t] = quad_start[t + 1] - quad_start[t]
        for q in range(quad_start[t], quad_start[t + 1]):
            tile_of_quad[q] = t
            z_pending[t] += early[q] + late[q]
    entry_ready = np.full(max(entries, 1), INF)
    tile_ready = np.zeros(tiles)           # when the tile's last fetched entry arrives
    fetched_tile = np.zeros(tiles, dtype=np.int64)
    raster_done = np.zeros(tiles, dtype=np.int64)
    # early Z (a ring of quads in flight)
    z_quad = np.zeros(z_in_flight, dtype=np.int64)
    z_time = np.zeros(z_in_flight)
    # fragment queue (a ring of quads)
    fq = np.zeros(fq_size, dtype=np.int64)
    # fragment processors' warp slots
    s_quad = np.full((processors, slots), -1, dtype=np.int64)
    s_issue = np.zeros((processors, slots))
    s_texture = np.zeros((processors, slots))
    s_ready = np.zeros((processors, slots))
    ints = np.zeros(I_COUNT, dtype=np.int64)
    floats = np.zeros(F_COUNT)
    ints[I_FLUSH_TILE] = -1
    if tiles > 0:
        ints[I_FE] = entry_start[0]        # tile fetcher
        floats[F_SERIAL_LEFT] = serial_cycles[0]
    return (finish, outstanding, z_pending, tile_of_quad, entry_ready, tile_ready,
            fetched_tile, raster_done, z_quad, z_time, fq, s_quad, s_issue, s_texture,
            s_ready, ints, floats)


@jit
def advance_pass(quad_start, entry_start, color_address, color_lines, depth_address,
                 depth_lines, dct_cycles, serial_cycles, entry_latency, entry_dram_start,
                 entry_dram_address, entry, raster_cost, early, survives, issue, texture,
                 latency, l2_misses, tex_dram_start, tex_dram_address, rop_lanes, late, p,
                 dp, channel, bank_row, bank_time, stats, finish, outstanding, z_pending,
                 tile_of_quad, entry_ready, tile_ready, fetched_tile, raster_done, z_quad,
                 z_time, fq, s_quad, s_issue, s_texture, s_ready, ints, floats, max_cycles):
    """Runs the pass of :func:`start_pass`'s state for at most ``max_cycles`` cycles, leaving
    its state in the arrays; True when the pass is over (every tile finished, or the horizon:
    a deadlock, ``finish`` < 0 left). Slices give the cycles one call gives, bit for bit."""
    tile_queue = int(p[0])       # the order of RasterParameters' fields
    raster_rate = p[1]
    z_rate = int(p[2])
    z_in_flight = int(p[3])
    z_latency = p[4]
    fq_size = int(p[5])
    processors = int(p[6])
    slots = int(p[7])
    rop_rate = p[8]
    l2_latency = p[10]
    line = p[12]
    flush_overlap = p[13] > 0.5
    dct_after = p[14] > 0.5
    horizon = p[15]

    tiles = quad_start.size - 1
    entries = entry_latency.size
    ft = ints[I_FT]
    fe = ints[I_FE]
    rq = ints[I_RQ]
    rt = ints[I_RT]
    z_head = ints[I_Z_HEAD]
    z_count = ints[I_Z_COUNT]
    z_ok = ints[I_Z_OK]
    fq_head = ints[I_FQ_HEAD]
    fq_count = ints[I_FQ_COUNT]
    rr = ints[I_RR]
    rop_t = ints[I_ROP_T]
    flush_tile = ints[I_FLUSH_TILE]
    f_serial_left = floats[F_SERIAL_LEFT]
    cb_free = floats[F_CB_FREE]
    flush_done = floats[F_FLUSH_DONE]
    dct_left = floats[F_DCT_LEFT]
    now = floats[F_NOW]

    cycles = 0
    while rop_t < tiles and now < horizon and cycles < max_cycles:
        # -- ROP: the current tile's finished warps, then the tile's end -----------------
        budget = rop_rate
        while rop_t < tiles and flush_tile < 0:
            t = rop_t
            if cb_free <= now:
                for pr in range(processors):
                    for s in range(slots):
                        q = s_quad[pr, s]
                        if q < 0 or tile_of_quad[q] != t or s_issue[pr, s] > 0.0 \
                                or s_texture[pr, s] > 0.0 or s_ready[pr, s] > now \
                                or rop_lanes[q] > budget:
                            continue
                        budget -= rop_lanes[q]
                        s_quad[pr, s] = -1
                        outstanding[t] -= 1
                        z_pending[t] -= late[q]
            if outstanding[t] > 0 or raster_done[t] == 0 or cb_free > now:
                break
            if color_lines[t] > 0 or depth_lines[t] > 0 or dct_cycles[t] > 0.0:
                flush_tile = t                 # its flush (and DCT) hold the color buffer
                flush_done = now
                for i in range(color_lines[t]):
                    flush_done = max(flush_done, dram_access(
                        now, color_address[t] + i * line, True, channel, bank_row, bank_time,
                        stats, dp))
                for i in range(depth_lines[t]):
                    flush_done = max(flush_done, dram_access(
                        now, depth_address[t] + i * line, True, channel, bank_row, bank_time,
                        stats, dp))
                dct_left = dct_cycles[t]
                cb_free = INF
            else:
                finish[t] = now
                rop_t += 1

        # -- the flush's writes in DRAM, the DCT beside or after them -------------------
        if flush_tile >= 0:
            flushed = flush_done <= now           # before this cycle: the DCT may follow
            if dct_left > 0.0 and (not dct_after or flushed):
                dct_left -= 1.0
            if flush_done <= now + 1.0 and dct_left <= 0.0:
                finish[flush_tile] = now + 1.0
                cb_free = now + 1.0
                rop_t = flush_tile + 1
                flush_tile = -1

        # -- fragment processors: issue and texture unit, then take quads from the queue --
        for pr in range(processors):
            budget = 1.0
            filtering = 1.0
            for s in range(slots):
                if s_quad[pr, s] < 0:
                    continue
                if budget > 0.0 and s_issue[pr, s] > 0.0:
                    use = min(budget, s_issue[pr, s])
                    s_issue[pr, s] -= use
                    budget -= use
                if filtering > 0.0 and s_texture[pr, s] > 0.0:
                    use = min(filtering, s_texture[pr, s])
                    s_texture[pr, s] -= use
                    filtering -= use
        for k in range(processors):
            if fq_count == 0:
                break
            pr = (rr + k) % processors
            free = -1
            for s in range(slots):
                if s_quad[pr, s] < 0:
                    free = s
                    break
            if free < 0:
                continue
            q = fq[fq_head]
            fq_head = (fq_head + 1) % fq_size
            fq_count -= 1
            back = now                         # the warp's last texture line returns
            if l2_misses[q] > 0 or tex_dram_start[q + 1] > tex_dram_start[q]:
                back = now + l2_latency
            for m in range(tex_dram_start[q], tex_dram_start[q + 1]):
                back = max(back, dram_access(now + l2_latency, tex_dram_address[m], False,
                                             channel, bank_row, bank_time, stats, dp))
            s_quad[pr, free] = q
            s_issue[pr, free] = issue[q]
            s_texture[pr, free] = texture[q]
            s_ready[pr, free] = back + latency[q]
        rr = (rr + 1) % processors

        # -- early Z: quads leave in order, into the fragment queue or dropped -----------
        while z_count > 0:
            q = z_quad[z_head]
            if z_time[z_head] + z_latency > now:
                break
            t = tile_of_quad[q]
            if survives[q] == 1:
                if fq_count == fq_size:
                    break
                fq[(fq_head + fq_count) % fq_size] = q
                fq_count += 1
            else:
                outstanding[t] -= 1
            z_pending[t] -= 1
            z_head = (z_head + 1) % z_in_flight
            z_count -= 1

        # -- rasterizer -------------------------------------------------------------------
        credit = raster_rate
        accepted = 0
        while rt < tiles:
            while z_ok < rt and z_pending[z_ok] == 0 and raster_done[z_ok] == 1:
                z_ok += 1
            if rq >= quad_start[rt + 1]:
                # past the tile's quads: done once every entry of it has arrived
                if fetched_tile[rt] == 1 and tile_ready[rt] <= now:
                    raster_done[rt] = 1
                    rt += 1
                    continue
                break
            q = rq
            if entry_ready[entry[q]] > now or raster_cost[q] > credit:
                break
            if early[q] == 1:
                if accepted >= z_rate or z_count >= z_in_flight or z_ok < rt:
                    break
                slot = (z_head + z_count) % z_in_flight
                z_quad[slot] = q
                z_time[slot] = now
                z_count += 1
                accepted += 1
            elif survives[q] == 1:
                if fq_count == fq_size:
                    break
                fq[(fq_head + fq_count) % fq_size] = q
                fq_count += 1
            else:
                outstanding[rt] -= 1
            credit -= raster_cost[q]
            rq += 1

        # -- tile fetcher: RE's compare, then one entry per cycle into the tile queue -----
        if ft < tiles and (flush_overlap or (rop_t >= ft and cb_free <= now)):
            if f_serial_left > 0.0:
                f_serial_left -= 1.0
            elif fe < entry_start[ft + 1]:
                # entries the rasterizer is not yet past occupy the tile queue
                if rt >= tiles:
                    consumed = entries
                elif rq < quad_start[rt + 1]:
                    consumed = entry[rq]
                else:
                    consumed = min(fe, entry_start[rt + 1])
                if fe - consumed < tile_queue:
                    ready = now + entry_latency[fe]
                    for m in range(entry_dram_start[fe], entry_dram_start[fe + 1]):
                        ready = max(ready, dram_access(now + entry_latency[fe],
                                                       entry_dram_address[m], False, channel,
                                                       bank_row, bank_time, stats, dp))
                    entry_ready[fe] = ready
                    tile_ready[ft] = max(tile_ready[ft], entry_ready[fe])
                    fe += 1
            # a tile whose compare is done and entries issued: the next one (no cycle)
            while ft < tiles and f_serial_left <= 0.0 and fe >= entry_start[ft + 1]:
                fetched_tile[ft] = 1
                ft += 1
                if ft < tiles:
                    f_serial_left = serial_cycles[ft]
                if not flush_overlap:
                    break
        now += 1.0
        cycles += 1
    ints[I_FT] = ft
    ints[I_FE] = fe
    ints[I_RQ] = rq
    ints[I_RT] = rt
    ints[I_Z_HEAD] = z_head
    ints[I_Z_COUNT] = z_count
    ints[I_Z_OK] = z_ok
    ints[I_FQ_HEAD] = fq_head
    ints[I_FQ_COUNT] = fq_count
    ints[I_RR] = rr
    ints[I_ROP_T] = rop_t
    ints[I_FLUSH_TILE] = flush_tile
    floats[F_SERIAL_LEFT] = f_serial_left
    floats[F_CB_FREE] = cb_free
    floats[F_FLUSH_DONE] = flush_done
    floats[F_DCT_LEFT] = dct_left
    floats[F_NOW] = now
    return rop_t >= tiles or now >= horizon
