"""From a frame's counter records and its recorded quad streams to the reference's pass inputs.

The reference reads the records and the configuration, nothing of the analytic model (the
import-linter contract "tilesim.timing.cycle_level imports nothing of the analytic model but the
configuration reader", ``pyproject.toml``): it decides itself which tiles run, where every
memory request goes and which lines the caches hold.

* Tiles that run the raster pipeline: primitives binned and not skipped by RE (the recorded
  ``prims_binned`` and ``re_tiles_skipped``), visited in the configured traversal
  (``screen.zorder_traversal``; ``tilesim.timing.traversal``, the geometry of the tile grid).
* Display-list entries: ``prims_binned`` of the tile, each reading its 4-byte list entry and its
  primitive's record (``pb_bytes_read / prims_binned - 4`` bytes, the tile's mean). A primitive's
  quads wait for the entry at the same rank among the tile's entries (entries without quads,
  bounding-box binning's misses, spread evenly between them).
* Addresses. The records carry no memory addresses, so the reference lays memory out itself,
  deterministically, from the recorded ids (``ADDRESS MAP`` below): each pass's display lists
  tile after tile (4 bytes an entry) and its primitive records one per recorded primitive (in
  primitive id order; an entry without quads has no id: it re-reads the record of a primitive
  of the tile visited before or after it, ``_bounding_box_entries``); color and depth tile by
  tile (a tile's ``color_flush_bytes`` / ``depth_flush_bytes`` from its slot of
  ``tile_size^2 x 4`` bytes); textures as a grid of 64-byte lines laid over the screen per
  draw, one line a 4x4-texel block (the renderer's block-tiled RGBA8 textures at one texel per
  pixel), so a tile covers ``tile_size / 4`` blocks a side and, with bilinear filtering's
  one-texel margin, its footprint is that plus one: 5 x 5 lines for 16-pixel tiles, the last
  row and column shared with the tiles to its right and above. The draw's k-th texture-cache
  miss in the tile (the quad's recorded ``tex_misses``, in order) reads the footprint's line
  ``k mod 25`` row by row; further misses re-read the footprint (the four processors' private
  texture caches missing the same lines, further mip levels and samples). A texture magnified
  more than 1:1 would share more lines between tiles than this, a minified one fewer. Those are
  derivations, not recorded addresses: a renderer recording texture line addresses would
  replace them.
* Caches: the entries' lines are looked up in the tile cache, its misses and the texture misses
  in the L2 (``caches``: LRU, Table 3.1's sizes), tile after tile in traversal order, a tile's
  entries before its quads; the L2's misses are the DRAM requests of the cycle loop
  (``dram``). Color and depth flushes are written straight to DRAM (a streaming write).
* Shading: each program's cycles per warp instruction on the cycle-level shader core at its
  warps in flight (issue) and with one warp alone (its latency), ``timing.shader_core``.
* End of tile: the flush; DSR's DCT row pass (``ceil(tile_size / dct_units) x tile_size``
  cycles, Frame Coherence §6.4.2) on tiles with a DCT; RE's ``compare_cycles`` on tiles with a
  signature.
"""

from __future__ import annotations

import functools

import numpy as np

from tilesim.timing.config import Config, warp_instruction_floor
from tilesim.timing.cycle_level.caches import Cache
from tilesim.timing.cycle_level.raster import PassInput, RasterParameters
from tilesim.timing.cycle_level.records import QuadStream
from tilesim.timing.traversal import traversal

SINGLE_WARP_SAMPLE = 64      # warps the core runs one at a time to time a program's latency
LIST_ENTRY_BYTES = 4         # a display-list entry (render/pipeline/binning.LIST_ENTRY_BYTES)
TEXEL_BYTES = 4              # RGBA8, the renderer's texture format
TEXTURE_BLOCK = 4            # texels a side of a 64-byte line (render/pipeline/texture_sampler)

# ADDRESS MAP: byte address = region << REGION_SHIFT | pass << PASS_SHIFT | offset
REGION_SHIFT = 40
PASS_SHIFT = 32
COLOR, DEPTH, PB_LISTS, PB_RECORDS, TEXTURES, VERTICES, PB_WRITES = range(7)


def region(kind: int, pass_index: int = 0) -> int:
    return (kind << REGION_SHIFT) | (pass_index << PASS_SHIFT)


@functools.cache
def _core():
    from tilesim.timing.shader_core.config import load_core_config

    return load_core_config()


@functools.cache
def program_cpis(text: str) -> tuple[float, float]:
    """(cycles per warp instruction at the core's warps in flight, with one warp in flight) of
    a fragment program's TGSI text, from the cycle-level shader core (cached on disk)."""
    from tilesim.timing.shader_core.throughput import text_throughput

    core = _core()
    full = text_throughput(text, core, name="reference program")["cycles_per_instruction"]
    alone = text_throughput(text, core, warps=SINGLE_WARP_SAMPLE, warps_in_flight=1,
                            name="reference program")["cycles_per_instruction"]
    return float(full), float(alone)


def warp_slots() -> int:
    return int(_core()["warps.max_warps"])


def tile_rendered(tiles: dict[str, np.ndarray]) -> np.ndarray:
    """Tiles that run the raster pipeline, from the records: primitives binned, not skipped by
    RE (Frame Coherence §4.2: a skipped tile is neither rendered nor flushed)."""
    skipped = tiles.get("re_tiles_skipped")
    rendered = np.asarray(tiles["prims_binned"]) > 0
    return rendered if skipped is None else rendered & (np.asarray(skipped) <= 0)


def _counter(tiles: dict[str, np.ndarray], name: str, n: int) -> np.ndarray:
    value = tiles.get(name)
    return np.zeros(n) if value is None else np.ravel(np.asarray(value)).astype(np.float64)


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


def _gather(starts: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Indices ``starts[i] .. starts[i] + counts[i]`` for every i, concatenated."""
    total = int(counts.sum())
    if total == 0:
        return np.zeros(0, dtype=np.int64)
    offsets = np.concatenate([[0], np.cumsum(counts)[:-1]])
    return (np.repeat(starts - offsets, counts) + np.arange(total)).astype(np.int64)


def _ranges(first: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """``first[i], first[i] + 1, ..., first[i] + counts[i] - 1`` for every i, concatenated."""
    return _gather(np.asarray(first, dtype=np.int64), np.asarray(counts, dtype=np.int64))


def _bounding_box_entries(entry_prim: np.ndarray, entry_start: np.ndarray,
                          primitives: int) -> np.ndarray:
    """The primitive of every entry without quads (-1 in ``entry_prim`` (E,), tiles in
    traversal order at ``entry_start`` (T + 1,)): bounding-box binning puts a primitive in the
    tiles around the ones it covers, so such an entry is taken to be a primitive of the tile
    visited before it, else after it, that this tile does not hold yet (its record re-read);
    with none left, a primitive of its own (``primitives`` + entry, read once)."""
    out = entry_prim.copy()
    tiles = entry_start.size - 1
    for t in range(tiles):
        lo, hi = int(entry_start[t]), int(entry_start[t + 1])
        own = out[lo:hi]
        empty = np.flatnonzero(own < 0)
        if empty.size == 0:
            continue
        taken = set(own[own >= 0].tolist())
        candidates = []
        for u in (t - 1, t + 1):
            if 0 <= u < tiles:
                for p in entry_prim[entry_start[u]:entry_start[u + 1]].tolist():
                    if p >= 0 and p not in taken:
                        taken.add(p)
                        candidates.append(p)
        k = min(len(candidates), empty.size)
        own[empty[:k]] = candidates[:k]
        own[empty[k:]] = primitives + lo + empty[k:]
    return out


def dct_cycles(cfg: Config) -> float:
    """DSR's DCT row pass on the color buffer (Frame Coherence §6.4.2: ``ceil(tile_size /
    dct_units)`` rows per compute unit, ``tile_size`` cycles each)."""
    tile = cfg["screen.tile_size"]
    return float(np.ceil(tile / cfg["techniques.dsr.dct_units"]) * tile)


def visiting_order(tiles_x: int, tiles: int, cfg: Config) -> np.ndarray:
    """A pass's tiles (local indices) in the order the GPU visits them."""
    return traversal(np.zeros(tiles, dtype=np.int64), np.array([tiles_x]), np.array([tiles]),
                     zorder=bool(cfg["screen.zorder_traversal"])).order


def pass_input(stream: QuadStream, tiles: dict[str, np.ndarray], order: np.ndarray,
               texts: dict[str, str], cfg: Config, pass_index: int = 0,
               tiles_x: int | None = None) -> PassInput:
    """The reference's input for one pass: ``tiles`` its (T,) counter records, ``order`` (T,)
    its tiles in traversal order (local indices), ``texts`` the programs' TGSI by digest,
    ``pass_index`` its place in the frame (its memory regions), ``tiles_x`` tiles a row (None:
    one row)."""
    n = stream.tiles
    tiles_x = n if tiles_x is None else int(tiles_x)
    prims = _counter(tiles, "prims_binned", n).astype(np.int64)
    rendered = tile_rendered({"prims_binned": prims,
                              "re_tiles_skipped": _counter(tiles, "re_tiles_skipped", n)})
    stream = stream.select_tiles(rendered)
    q = stream.quads
    entries = np.where(rendered, prims, 0).astype(np.int64)
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
    line = int(cfg["caches.l2.line_size"])

    # -- Parameter Buffer: each entry's list entry and its primitive's record ---------------
    E = int(entry_start[-1])
    entry_tile = np.repeat(order, entry_counts)                        # local tile index
    k = np.arange(E) - np.repeat(entry_start[:-1], entry_counts)
    read = _counter(tiles, "pb_bytes_read", n)
    record = np.maximum(np.divide(read, counts, out=np.zeros(n), where=counts > 0)
                        - LIST_ENTRY_BYTES, 0.0)
    stride = int(np.ceil(record.max(initial=0.0) / 4.0) * 4) or 4
    prim_ids, prim_rank = np.unique(q["primitive"][quad_index], return_inverse=True)
    entry_prim = np.full(E, -1, dtype=np.int64)
    entry_prim[entry] = prim_rank
    entry_prim = _bounding_box_entries(entry_prim, entry_start, prim_ids.size)
    # with EVR a list entry also holds its primitive's layer id (Frame Coherence §5.3.1),
    # written with the Parameter Buffer and read back with the entry
    layer = np.divide(_counter(tiles, "evr_layer_bytes_written", n), prims,
                      out=np.zeros(n), where=prims > 0)
    entry_bytes = LIST_ENTRY_BYTES + layer
    list_start = np.concatenate([[0], np.cumsum(counts * entry_bytes)[:-1]])
    list_line = (region(PB_LISTS, pass_index) + list_start[entry_tile]
                 + entry_bytes[entry_tile] * k).astype(np.int64) // line
    record_first = region(PB_RECORDS, pass_index) + entry_prim * stride
    record_bytes = np.ceil(record[entry_tile]).astype(np.int64)
    first = record_first // line
    last = np.where(record_bytes > 0, (record_first + record_bytes - 1) // line, first - 1)
    lines_per_entry = 1 + (last - first + 1)
    pb_owner = np.repeat(np.arange(E), lines_per_entry)
    pb_lines = np.empty(int(lines_per_entry.sum()), dtype=np.int64)
    at = (np.cumsum(lines_per_entry) - lines_per_entry).astype(np.int64)
    pb_lines[at] = list_line
    rec_slot = np.ones(pb_lines.size, dtype=bool)
    rec_slot[at] = False
    pb_lines[rec_slot] = _ranges(first, last - first + 1)
    tile_hit = Cache.from_config(cfg, "tile").lookup(pb_lines)

    # -- texture misses: the draw's footprint lines in the tile -------------------------------
    # a quad whose lanes fragment memoization all answered runs no program: no texture work
    memo_hit = q["memo_hit"][quad_index]
    misses = np.where(memo_hit, 0, q["tex_misses"][quad_index]).astype(np.int64)
    side = max(1, int(cfg["screen.tile_size"]) // TEXTURE_BLOCK) + 1   # blocks + the margin
    footprint = side * side
    draw = q["primitive"][quad_index] >> 32
    group = np.ones(quad_index.size, dtype=bool)
    group[1:] = (tile_of_quad[1:] != tile_of_quad[:-1]) | (draw[1:] != draw[:-1])
    cum = np.cumsum(misses) - misses
    group_first = np.maximum.accumulate(np.where(group, np.arange(group.size), 0)) \
        if group.size else group.astype(np.int64)
    j0 = cum - cum[group_first] if group.size else cum
    tex_owner = np.repeat(np.arange(quad_index.size), misses)
    j = _ranges(j0, misses) % footprint
    owner_tile = tile_of_quad[tex_owner]
    row = (side - 1) * tiles_x + 1                      # blocks in a row of the screen
    block_x = (owner_tile % tiles_x) * (side - 1) + j % side
    block_y = (owner_tile // tiles_x) * (side - 1) + j // side
    screen_blocks = row * ((side - 1) * (n // max(tiles_x, 1) + 1) + 1)
    tex_lines = (region(TEXTURES, pass_index) // line
                 + draw[tex_owner] * screen_blocks + block_y * row + block_x)

    # -- the L2, in request order: tile by tile, the entries' tile-cache misses, then quads ---
    pb_tile = position[entry_tile[pb_owner]] if pb_owner.size else np.zeros(0, np.int64)
    tex_tile = position[tile_of_quad[tex_owner]] if tex_owner.size else np.zeros(0, np.int64)
    to_l2 = ~tile_hit
    keys = np.concatenate([pb_tile[to_l2] * 2, tex_tile * 2 + 1])
    l2_lines = np.concatenate([pb_lines[to_l2], tex_lines])
    sequence = np.argsort(keys, kind="stable")
    l2_hit = np.empty(l2_lines.size, dtype=bool)
    l2_hit[sequence] = Cache.from_config(cfg, "l2").lookup(l2_lines[sequence])
    n_pb = int(to_l2.sum())
    pb_l2_hit = np.ones(pb_lines.size, dtype=bool)
    pb_l2_hit[to_l2] = l2_hit[:n_pb]
    tex_l2_hit = l2_hit[n_pb:]

    # entries: on-chip latency, then their DRAM lines
    tile_latency = cfg["caches.tile.latency"]
    needs_l2 = np.bincount(pb_owner, weights=to_l2, minlength=E) > 0
    entry_latency = np.where(needs_l2, tile_latency + cfg["caches.l2.latency"], tile_latency)
    pb_dram = ~pb_l2_hit
    entry_dram = np.bincount(pb_owner[pb_dram], minlength=E).astype(np.int64)
    tex_dram = ~tex_l2_hit
    quad_dram = np.bincount(tex_owner[tex_dram], minlength=quad_index.size).astype(np.int64)
    quad_l2 = np.bincount(tex_owner[~tex_dram], minlength=quad_index.size).astype(np.int64)

    # flushes: color and depth slots of the tile
    slot = int(cfg["screen.tile_size"] ** 2 * 4)
    color = _counter(tiles, "color_flush_bytes", n)[order]
    depth = _counter(tiles, "depth_flush_bytes", n)[order]

    # quads
    cpis = np.array([program_cpis(texts[d]) for d in stream.programs]).reshape(-1, 2)
    cpis = np.maximum(cpis, warp_instruction_floor(cfg))
    program = q["program"][quad_index]
    instructions = q["instructions"][quad_index].astype(np.float64)
    shaded = q["shaded"][quad_index]
    runs = shaded & ~memo_hit
    late_tested = q["late_tested"][quad_index]
    compare = cfg["techniques.signature.compare_cycles"]
    return PassInput(
        quad_start=quad_start, entry_start=entry_start,
        color_address=(region(COLOR, pass_index) + order * slot).astype(np.float64),
        color_lines=np.ceil(color / line).astype(np.int64),
        depth_address=(region(DEPTH, pass_index) + order * slot).astype(np.float64),
        depth_lines=np.ceil(depth / line).astype(np.int64),
        dct_cycles=np.where(_counter(tiles, "dsr_dcts", n) > 0, dct_cycles(cfg), 0.0)[order],
        serial_cycles=np.where(_counter(tiles, "re_signature_accesses", n) > 0, compare,
                               0.0)[order],
        entry_latency=entry_latency.astype(np.float64),
        entry_dram_start=np.concatenate([[0], np.cumsum(entry_dram)]).astype(np.int64),
        entry_dram_address=(pb_lines[pb_dram] * line).astype(np.float64),
        entry=entry.astype(np.int64),
        raster_cost=q["covered"][quad_index] * cfg["stages.rasterizer.attributes_per_fragment"],
        early=(q["early_tested"][quad_index] > 0).astype(np.int64),
        survives=shaded.astype(np.int64),
        issue=np.where(runs, instructions * cpis[program, 0] if cpis.size else 0.0, 0.0),
        texture=np.where(memo_hit, 0.0, q["texels"][quad_index]
                         / cfg["stages.texture.texels_per_cycle"]),
        latency=np.where(runs, instructions * cpis[program, 1] if cpis.size else 0.0, 0.0),
        l2_misses=quad_l2,
        tex_dram_start=np.concatenate([[0], np.cumsum(quad_dram)]).astype(np.int64),
        tex_dram_address=(tex_lines[tex_dram] * line).astype(np.float64),
        rop_lanes=np.maximum(q["written"], late_tested)[quad_index].astype(np.float64),
        late=(late_tested > 0).astype(np.int64),
        lookups=np.array([pb_lines.size, int(tile_hit.sum()), l2_lines.size,
                          int(l2_hit.sum()), int(pb_dram.sum()), int(tex_dram.sum())],
                         dtype=np.int64))


def frame_pass_inputs(counters, streams: list[QuadStream],
                      cfg: Config) -> list[tuple[np.ndarray, PassInput]]:
    """For every pass of a frame's counter records (``FrameCounters``) whose quad stream is
    given (``streams`` in pass order): (the pass's local tile indices in traversal order, its
    reference input)."""
    out = []
    for p, (pc, stream) in enumerate(zip(counters.passes, streams, strict=True)):
        n = int(pc.tiles_x * pc.tiles_y)
        visit = visiting_order(int(pc.tiles_x), n, cfg)
        out.append((visit, pass_input(stream, pc.tiles, visit, counters.programs, cfg, p,
                                      int(pc.tiles_x))))
    return out


def parameters(cfg: Config) -> RasterParameters:
    return RasterParameters.from_config(cfg, warp_slots())
