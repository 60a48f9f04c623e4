"""Cycle-level reference of the geometry pipeline: a frame's draws, cycle by cycle.

The analytic model charges a frame's geometry phase as its bottleneck stage (vertex fetch,
vertex shading, primitive assembly, tiler, Parameter Buffer writes, the shared bus, RE's
Signature Unit) plus the Overlapped Tiles Queue stall in series plus a fill latency
(``tilesim.timing.model.geometry_cycles``). This loop runs the same stages (Frame Coherence
Table 3.1, ch. 2; RE's Signature Unit §4.1.2, §4.2) over the frame's real draws
(``records.DrawStream``, recorded by ``tilesim.studies.quad_stream``), draw after draw
without draining between them:

* Vertex fetch: one vertex per ``attributes / caches.vertex.banks`` cycles of the vertex cache
  (a draw's accesses spread over its vertices), at most ``queues.vertex.count x entries``
  vertices fetched and not yet shaded; the draw's cache misses (64-byte lines) and index bytes,
  spread evenly over its vertices, are reads of the reference's DRAM (``dram``: the lines of
  one sequential vertex stream, laid out by the reference, ``inputs.VERTICES``), the vertex ready
  when its last line is back.
* Vertex shading: the vertex processor shades vertices in order, ``instructions / lanes x
  CPI`` cycles each (warps of 4 vertices; CPI of the draw's program on the shader core).
* Primitive assembly: one primitive per cycle once its last vertex (its share of the draw's
  vertices) is shaded; primitives that survive clipping and culling (the ones binned, spread
  evenly among the assembled) go into the triangle queue (``queues.triangle.entries``).
* Tiler: one display-list entry per cycle; when a primitive's entries are out, its record and
  entries (4 bytes each) are posted to the Parameter Buffer: DRAM writes (one sequential
  stream, ``inputs.PB_WRITES``) in arrival order with the reads, the tiler stalling while more
  than a triangle queue's bytes (entries x entry size) wait to cross the bus.
* RE (frames with signature work): the Compute CRC unit signs each primitive's sub-blocks at
  ``compute_rate`` as the tiler takes it; the tiler pushes the primitive's tile identifiers into
  the Overlapped Tiles Queue (``ot_queue_entries``) and stalls while it is full; the Accumulate
  CRC unit pops a primitive's entries, one fold per cycle at ``accumulate_rate``, once the
  primitive is signed (a draw's constant folds spread over its entries).
* Memory: every read and write goes through the reference's DRAM in the order asked
  (``dram.dram_access``: banks, rows, refresh, one data bus per channel).

The frame's geometry cycles are the cycle the last write has left and the last fold is done.
Not modelled: the vertex cache's reuse order (misses spread evenly), clipping's extra
vertices, the EVR tables, Algorithm 3's literal shift count (``accumulate_per_entry = 0``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tilesim.jit import jit
from tilesim.timing.config import Config, warp_instruction_floor
from tilesim.timing.cycle_level.dram import DramState, DramTiming, dram_access
from tilesim.timing.cycle_level.inputs import LIST_ENTRY_BYTES, PB_WRITES, VERTICES, region
from tilesim.timing.cycle_level.records import DrawStream


@dataclass
class GeometryInput:
    """One frame's geometry work as the loop reads it. Per vertex (V,): ``fetch`` cycles on the
    vertex cache, ``read_bytes`` from memory (``read_lines`` the new 64-byte lines of the
    stream they reach), ``shade`` cycles on the vertex processor. Per
    assembled primitive (A,): ``needs`` the vertex it waits for, ``binned`` its row among the
    binned primitives or -1. Per binned primitive (P,): ``entries``, ``write_bytes`` (record +
    list; ``write_lines`` the new lines of the write stream), ``sign`` Compute CRC cycles,
    ``fold`` Accumulate cycles per entry."""

    fetch: np.ndarray
    read_bytes: np.ndarray
    shade: np.ndarray
    needs: np.ndarray
    binned: np.ndarray
    entries: np.ndarray
    write_bytes: np.ndarray
    sign: np.ndarray
    fold: np.ndarray
    read_lines: np.ndarray | None = None
    write_lines: np.ndarray | None = None

    def __post_init__(self):
        if self.read_lines is None:
            self.read_lines = stream_lines(self.read_bytes)
        if self.write_lines is None:
            self.write_lines = stream_lines(self.write_bytes)


def stream_lines(nbytes: np.ndarray, line: int = 64) -> np.ndarray:
    """The new ``line``-byte lines each request of one sequential stream of ``nbytes`` (n,)
    reaches: (n,) int64, summing to the stream's lines."""
    end = np.ceil(np.cumsum(np.asarray(nbytes, dtype=np.float64)) - 1e-9)
    lines = np.ceil(end / line - 1e-9).astype(np.int64)
    return np.diff(np.concatenate([[0], lines])).astype(np.int64)


def spread_index(count_from: np.ndarray, count_to: np.ndarray) -> np.ndarray:
    """For groups of ``count_from`` (G,) items each mapped evenly onto ``count_to`` (G,)
    items: the target (global index) of every source item, (sum count_from,) int64."""
    starts = np.concatenate([[0], np.cumsum(count_to)[:-1]])
    group = np.repeat(np.arange(count_from.size), count_from)
    k = np.arange(group.size) - np.repeat(np.concatenate([[0], np.cumsum(count_from)[:-1]]),
                                          count_from)
    ratio = np.divide(count_to, count_from, out=np.zeros(count_from.size),
                      where=count_from > 0)[group]
    local = np.minimum(np.floor((k + 1) * ratio - 1e-9).astype(np.int64),
                       np.maximum(count_to[group] - 1, 0))
    return (starts[group] + np.maximum(local, 0)).astype(np.int64)


def geometry_input(stream: DrawStream, cpis: np.ndarray, cfg: Config,
                   layer_bytes_per_entry: float = 0.0) -> GeometryInput:
    """The loop's input from a frame's draws; ``cpis`` (programs,) cycles per warp instruction
    of each vertex program on the shader core; ``layer_bytes_per_entry`` the layer id EVR
    stores with each display-list entry (Frame Coherence §5.3.1; 0 without EVR)."""
    d = stream.draws
    vertices = d["vertices_shaded"]
    per = lambda total: np.repeat(np.divide(  # noqa: E731
        total, vertices, out=np.zeros(vertices.size), where=vertices > 0), vertices)
    cpi = np.where(d["vs_program"] >= 0, cpis[np.maximum(d["vs_program"], 0)]
                   if cpis.size else 1.0, 1.0)
    lanes = cfg["processors.shader.lanes"]
    cpi = np.maximum(cpi, warp_instruction_floor(cfg))
    reads = d["vertex_cache_misses"] * cfg["caches.vertex.line_size"] + d["index_bytes"]
    binned_count = np.diff(stream.prim_start)
    # clipping splits and points or lines (two triangles each) bin more than were assembled
    assembled = np.maximum(d["prims_assembled"], binned_count)
    binned = np.full(int(assembled.sum()), -1, dtype=np.int64)
    if binned_count.sum():
        # the binned primitives spread evenly among the assembled ones
        binned[spread_index(binned_count, assembled)] = np.arange(int(binned_count.sum()))
    draw_of_prim = np.repeat(np.arange(binned_count.size), binned_count)
    entries = stream.entries.astype(np.int64)
    entries_per_draw = np.bincount(draw_of_prim, weights=entries, minlength=binned_count.size)
    sign_share = np.divide(d["re_subblocks"], binned_count, out=np.zeros(binned_count.size),
                           where=binned_count > 0)
    fold_share = np.divide(d["re_folds"], entries_per_draw, out=np.zeros(binned_count.size),
                           where=entries_per_draw > 0)
    return GeometryInput(
        fetch=per(d["vertex_cache_accesses"] / cfg["caches.vertex.banks"]),
        read_bytes=per(reads.astype(np.float64)),
        shade=per(d["vs_instructions"] / lanes * cpi),
        needs=spread_index(assembled, vertices) if vertices.sum() else
        np.zeros(int(assembled.sum()), dtype=np.int64),
        binned=binned, entries=entries,
        write_bytes=(d["record_bytes"][draw_of_prim]
                     + (LIST_ENTRY_BYTES + layer_bytes_per_entry) * entries).astype(np.float64),
        sign=sign_share[draw_of_prim] / cfg["techniques.signature.compute_rate"],
        fold=fold_share[draw_of_prim] / cfg["techniques.signature.accumulate_rate"])


def geometry_parameters(cfg: Config) -> np.ndarray:
    return np.array([
        cfg["queues.vertex.count"] * cfg["queues.vertex.entries"],
        cfg["queues.triangle.entries"],
        cfg["queues.triangle.entries"] * cfg["queues.triangle.entry_size"],
        cfg["techniques.signature.ot_queue_entries"],
        cfg["memory.bandwidth"], cfg["caches.l2.line_size"], float(region(VERTICES)),
        float(region(PB_WRITES))], dtype=np.float64)


def run_geometry(data: GeometryInput, cfg: Config, compiled: bool = True,
                 dram: DramState | None = None) -> float:
    """The frame's geometry cycles; ``dram`` the DRAM's state (its counts for the energy,
    closed at the phase's end), a fresh one if None."""
    loop = simulate_geometry if compiled else getattr(simulate_geometry, "py_func",
                                                      simulate_geometry)
    timing = DramTiming.from_config(cfg)
    dram = dram if dram is not None else DramState(timing)
    requests = float(data.read_lines.sum() + data.write_lines.sum())
    horizon = 4.0 * float(data.fetch.sum() + data.shade.sum() + requests * 512.0
                          + data.entries.sum()
                          + data.sign.sum() + (data.fold * data.entries).sum()
                          + data.needs.size + data.fetch.size * 128) + 1e4
    cycles = loop(data.fetch, data.read_lines.astype(np.int64), data.shade, data.needs,
                  data.binned, data.entries, data.write_bytes, data.write_lines.astype(np.int64),
                  data.sign, data.fold, np.append(geometry_parameters(cfg), horizon),
                  timing.vector(), *dram.arrays())
    dram.close(max(float(cycles), 0.0))
    if cycles < 0:
        raise RuntimeError("the geometry reference did not finish the frame (a deadlock in "
                           "the cycle loop): please report it with the trace and frame")
    return float(cycles)


@jit
def simulate_geometry(fetch, read_lines, shade, needs, binned, entries, write_bytes,
                      write_lines, sign, fold, p, dp, channel, bank_row, bank_time, stats):
    vertex_queue = int(p[0])
    tq_size = int(p[1])
    write_limit = p[2]
    otq_size = int(p[3])
    bandwidth = p[4]
    line = p[5]
    read_base = p[6]
    write_base = p[7]
    horizon = p[8]
    nv = fetch.size
    na = needs.size
    nb = entries.size
    if na == 0 and nv == 0:
        return 0.0
    fetched = np.full(max(nv, 1), 1e30)
    shaded = np.full(max(nv, 1), 1e30)
    vf = 0                  # next vertex to fetch
    cache_free = 0.0        # the vertex cache takes the next vertex
    vs = 0                  # next vertex to shade
    vs_free = 0.0
    pa = 0                  # next primitive to assemble
    tq = np.zeros(max(tq_size, 1), dtype=np.int64)
    tq_head = 0
    tq_count = 0
    cur = -1                # primitive the tiler bins
    cur_left = 0
    signed_at = np.full(max(nb, 1), 1e30)
    sign_free = 0.0
    otq_prim = np.zeros(max(otq_size, 1), dtype=np.int64)
    otq_head = 0
    otq_count = 0
    fold_left = 0.0
    read_next = 0             # the vertex stream's next line
    write_next = 0            # the Parameter Buffer write stream's next line
    write_end = 0.0           # the last posted write has crossed the bus
    binned_done = 0
    now = 0.0
    while now < horizon:
        # bytes posted and not yet written: the write stream's backlog
        write_backlog = max(0.0, write_end - now) * bandwidth
        # -- Accumulate CRC unit: folds the head entry once its primitive is signed ------
        if otq_count > 0 and signed_at[otq_prim[otq_head]] <= now:
            if fold_left <= 0.0:
                fold_left += fold[otq_prim[otq_head]]      # carries a fraction over
            fold_left -= 1.0
            if fold_left <= 0.0:
                otq_head = (otq_head + 1) % otq_size
                otq_count -= 1
        # -- tiler: one entry per cycle into the display lists (and the OT queue) --------
        if cur < 0 and tq_count > 0:
            cur = tq[tq_head]
            tq_head = (tq_head + 1) % tq_size
            tq_count -= 1
            cur_left = entries[cur]
            if sign[cur] > 0.0:
                sign_free = max(sign_free, now) + sign[cur]
                signed_at[cur] = sign_free
            else:
                signed_at[cur] = now
        if cur >= 0:
            if cur_left > 0:
                uses_otq = fold[cur] > 0.0
                if not uses_otq or otq_count < otq_size:
                    if uses_otq:
                        otq_prim[(otq_head + otq_count) % otq_size] = cur
                        otq_count += 1
                    cur_left -= 1
            if cur_left == 0 and write_backlog <= write_limit:
                for _w in range(write_lines[cur]):
                    write_end = max(write_end, dram_access(
                        now, write_base + write_next * line, True, channel, bank_row,
                        bank_time, stats, dp))
                    write_next += 1
                cur = -1
                binned_done += 1
        # -- primitive assembly: one per cycle once its vertices are shaded --------------
        if pa < na and (nv == 0 or shaded[needs[pa]] <= now):
            if binned[pa] < 0:
                pa += 1
            elif tq_count < tq_size:
                tq[(tq_head + tq_count) % tq_size] = binned[pa]
                tq_count += 1
                pa += 1
        # -- vertex shading, in order ------------------------------------------------------
        if vs < nv and vs_free <= now and fetched[vs] <= now:
            vs_free = now + shade[vs]
            shaded[vs] = vs_free
            vs += 1
        # -- vertex fetch: the vertex cache, misses and indices on the bus ---------------
        if vf < nv and cache_free <= now and vf - vs < vertex_queue:
            ready = now + fetch[vf]
            for _r in range(read_lines[vf]):
                ready = max(ready, dram_access(now, read_base + read_next * line, False,
                                               channel, bank_row, bank_time, stats, dp))
                read_next += 1
            cache_free = now + fetch[vf]
            fetched[vf] = ready
            vf += 1
        now += 1.0
        if pa >= na and binned_done >= nb and cur < 0 and otq_count == 0 \
                and write_end <= now and vs >= nv and (nv == 0 or shaded[nv - 1] <= now):
            return now
    return -1.0
