"""The quad stages of the raster phase: fragments in flight, from the rasterizer to the
color buffer, the way Mesa's softpipe chains ``sp_quad_depth_test`` -> ``sp_quad_fs`` ->
``sp_quad_blend``. ``Renderer._raster`` writes the chain down in one place:

    raster_fragments -> [early_depth_test] -> shade -> [depth_test, late] -> blend

Conventions. A batch is the fragments of one draw's display-list entries at one sampling
rate. Every array is per lane, four lanes per 2x2 quad (helper lanes included: the fragment
program runs on whole quads for derivatives); ``pixel`` is the flat index ``y * width + x``
into the target's buffers (row 0 at the bottom, as GL), ``tile`` the target's tile of the
lane. Fragments of one pixel are ordered by submission (``Fragments.groups``, rank by rank),
so writes land as sequential processing would land them. Each stage adds its per-tile
counters (``counters.PassCounters``) and returns a mask or a record; none loops over
fragments in Python.
"""

from __future__ import annotations

import contextlib
import functools
from dataclasses import dataclass, field

import numpy as np

from tilesim.backend import array_module, quad_any
from tilesim.jit import (
    in_threads,
    jit,
    nan_cast,
    nondecreasing,
    power_of_two_shift,
    spans,
    stable_order_compiled,
    usable,
)
from tilesim.render.pipeline import fragment_shading, output_merger, rasterizer
from tilesim.render.pipeline.counters import PassCounters
from tilesim.render.pipeline.fragment_shading import FragmentLanes
from tilesim.render.pipeline.texture_sampler import TEXEL_COUNTER_KINDS, TEXELS_PER_KIND
from tilesim.shaders.interpreter import Execution
from tilesim.shaders.opcodes import CATEGORIES
from tilesim.shaders.stats import DynamicStats


@dataclass
class Fragments:
    """The fragments of a batch, as the rasterizer produced them (one row per lane)."""

    tris: object                  # the triangles rasterized (``triangle_setup.Triangles``)
    lanes: FragmentLanes          # the quads and their lanes' window positions and depths
    covered: np.ndarray           # (n,) bool: the lane covers its pixel (not a helper)
    pixel: np.ndarray             # (n,) int64 flat pixel index
    tile: np.ndarray              # (n,) int64 tile of the target
    depth: np.ndarray             # (n,) int64 depth quantized to the depth buffer's bits
    entry: np.ndarray | None      # (n,) display-list entry (triangle, tile) of the lane
    covered_index: np.ndarray     # lane indices of the covered fragments
    # the row in ``draw.tris`` of each row of ``tris`` (None: ``tris`` is ``draw.tris``)
    source_row: np.ndarray | None = None
    _groups: list[np.ndarray] | None = None

    def draw_triangle(self) -> np.ndarray:
        """(Q,) the row in ``draw.tris`` of each quad's triangle."""
        triangle = self.lanes.triangle
        return triangle if self.source_row is None else self.source_row[triangle]

    @property
    def groups(self) -> list[np.ndarray]:
        """covered_index positions, rank by rank per pixel (made on first use: the compiled
        kernels process fragments in submission order without them)."""
        if self._groups is None:
            self._groups = output_merger.rank_groups(self.pixel[self.covered_index])
        return self._groups

    def rank_groups(self) -> list[np.ndarray]:
        return self.groups

    def ranked(self, lanes: np.ndarray, keep: np.ndarray) -> list[np.ndarray]:
        """The per-pixel ranking as indices into the subset ``lanes`` ((n,) bool) of this
        batch, keeping the fragments where ``keep`` (over the subset) is true."""
        xp = array_module(lanes)
        subset_of_lane = xp.cumsum(lanes) - 1
        groups = []
        for group in self.groups:
            lane = self.covered_index[group]
            sub = subset_of_lane[lane[lanes[lane]]]
            sub = sub[keep[sub]]
            if sub.size:
                groups.append(sub)
        return groups


@dataclass
class Shaded:
    """The quads that ran the fragment program (those with a live fragment)."""

    lanes: np.ndarray             # (n,) bool over the batch: the lanes shaded
    # the program's IN registers per lane and its system values (name -> per lane), as the
    # parts of the lanes it ran in (SHADE_CHUNK_LANES), joined by :attr:`inputs` and
    # :attr:`system_values` when a hook asks for them
    input_parts: list
    system_value_parts: list
    color: np.ndarray | None      # (m, 4) float: the COLOR output (None: the program has none)
    pixel: np.ndarray             # (m,) flat pixel index of each shaded lane
    tile: np.ndarray              # (m,) tile of each shaded lane
    alive: np.ndarray             # (m,) bool: a live fragment (not a helper, not depth-failed)
    survivors: np.ndarray         # (m,) bool: alive and not discarded
    warp_instructions: np.ndarray | None = None   # (q,) instructions issued by each shaded quad
    # texels_fetched, tex_cache_accesses, tex_cache_misses -> (m,) per lane
    texture: dict = field(default_factory=dict)
    # (m,) float: the depth the program wrote (gl_FragDepthEXT, EXT_frag_depth: the z of its
    # POSITION output), None when it writes none and the interpolated depth stands
    depth: np.ndarray | None = None
    # (m, 4) float: the second source color (COLOR[1], EXT_blend_func_extended), None when the
    # program writes none
    color1: np.ndarray | None = None
    # the owner of shaded lane 0's texture accesses (TextureSampler.owner_base; -1: none)
    tex_owner_base: int = -1

    @functools.cached_property
    def inputs(self):
        """(R, 4, m) the IN registers of the shaded lanes."""
        parts = self.input_parts
        return parts[0] if len(parts) == 1 else array_module(parts[0]).concatenate(parts, axis=2)

    @functools.cached_property
    def system_values(self) -> dict:
        """Name -> (..., m) the system values of the shaded lanes."""
        parts = self.system_value_parts
        if len(parts) == 1:
            return parts[0]
        xp = array_module(self.lanes)
        return {name: xp.concatenate([p[name] for p in parts], axis=-1) for name in parts[0]}


def raster_fragments(draw, tris, scale: int, entries: np.ndarray | None, fill_rule: str,
                     with_entries: bool) -> Fragments | None:
    """Rasterize ``tris`` of ``draw`` into quads, keeping the fragments of the display-list
    entries ``entries`` ((B,) bool over ``draw.bins``; None: all). ``scale`` > 1 rasterizes
    superfragments of scale x scale pixels (Dynamic Sampling Rate, thesis §6.4.1), each kept
    in its block's bottom-left pixel. None when no fragment is left."""
    xp = array_module(tris.area2)
    target = draw.target
    rect = draw.rect
    if scale > 1:
        x0, y0, x1, y1 = rect
        rect = (x0 // scale, y0 // scale, -(-x1 // scale), -(-y1 // scale))
    if usable(tris.area2, draw.bins.tile) and rasterizer.walks_display_lists(
            scale, target.tile_size):
        return _raster_lists(draw, tris, scale, entries, rect, fill_rule, with_entries)
    source_row = None
    if entries is not None or scale > 1:
        # The triangles with a chosen entry (and, shrunk, an area left), remembering their
        # rows in ``draw.tris``.
        chosen = xp.zeros(len(draw.tris), dtype=bool)
        chosen[draw.bins.triangle if entries is None else draw.bins.triangle[entries]] = True
        chosen &= tris.area2 > 0
        tris = tris.select(chosen)
        source_row = xp.nonzero(chosen)[0]
    quads = rasterizer.rasterize(tris, rect, fill_rule)
    if len(quads) == 0:
        return None
    quads = tile_major(quads, scale, target)
    lanes = fragment_shading.lanes(tris, quads)
    covered = quads.coverage.ravel()
    pixel, tile = _pixel_tile(lanes, scale, target)
    entry = None
    if entries is not None or with_entries:
        # The display-list entry (triangle, tile) of every lane, looked up once per quad
        # where a quad's lanes share a tile (always, for even tile sizes at 1x).
        row = lanes.triangle if source_row is None else source_row[lanes.triangle]
        quad_tile = tile[::4]
        if bool((tile.reshape(-1, 4) == quad_tile[:, None]).all()):
            entry, found = (xp.repeat(a, 4) for a in draw.entry_of(row, quad_tile))
        else:
            entry, found = draw.entry_of(xp.repeat(row, 4), tile)
        if entries is not None:
            covered &= found & entries[entry]
            live = quad_any(covered)
            if not live.any():
                return None
            if not live.all():
                lanes, (covered, pixel, tile, entry) = lanes.select(live, covered, pixel, tile,
                                                                    entry)
    depth = quantize_depth(lanes.z, target.depth_max)
    covered_index = xp.nonzero(covered)[0]
    return Fragments(tris, lanes, covered, pixel, tile, depth, entry, covered_index, source_row)


def _raster_lists(draw, tris, scale: int, entries, rect, fill_rule: str,
                  with_entries: bool) -> Fragments | None:
    """``raster_fragments`` walking the draw's display lists (``rasterizer.rasterize_entries``):
    the same fragments in the same order, the quads tile-major as they come and each with
    its entry, so that neither a sort by tile nor a look-up of the entries is needed; the
    rows of ``tris`` are the draw's (a batch of part of the draw rasterizes only its
    entries' triangles)."""
    target = draw.target
    quads, entry = rasterizer.rasterize_entries(
        tris, rect, fill_rule, draw.bins, entries, scale=scale, tile_size=target.tile_size,
        tiles_x=target.tiles_x, skip_degenerate=entries is not None or scale > 1)
    if len(quads) == 0:
        return None
    lanes = fragment_shading.lanes(tris, quads)
    covered = quads.coverage.ravel()
    pixel, tile = _pixel_tile(lanes, scale, target)
    depth = quantize_depth(lanes.z, target.depth_max)
    return Fragments(tris, lanes, covered, pixel, tile, depth,
                     np.repeat(entry, 4) if entries is not None or with_entries else None,
                     np.nonzero(covered)[0])


def tile_major(quads: rasterizer.Quads, scale: int, target) -> rasterizer.Quads:
    """The quads tile by tile, in tile number order, each tile's in the rasterizer's order
    (so every pixel's fragments keep their submission order): the order a tile-based GPU's
    processors take them in (Frame Coherence §2.3: one tile at a time). The texture caches
    count the same hits in any order across tiles (one per tile, tile_caches.py); in this
    one each tile's cache and buffers stay warm while its quads run. A quad's tile is its
    top-left lane's."""
    xp = array_module(quads.qx)
    if usable(quads.qx, quads.qy):
        tile = quad_tiles_compiled(quads.qx, quads.qy, scale, target.width, target.height,
                                   target.tile_size, target.tiles_x)
    else:
        px, py = 2 * scale * quads.qx, 2 * scale * quads.qy
        if scale > 1:
            px, py = xp.minimum(px, target.width - 1), xp.minimum(py, target.height - 1)
        tile = target.tile_of(px, py)
    if nondecreasing(tile):
        return quads                        # already tile by tile
    order = (stable_order_compiled(tile, target.tiles_x * target.tiles_y) if usable(tile)
             else xp.argsort(tile, kind="stable"))
    return rasterizer.Quads(quads.triangle[order], quads.qx[order], quads.qy[order],
                            quads.coverage[order], quads.candidates)


def _pixel_tile(lanes: FragmentLanes, scale: int, target):
    """(pixel, tile) of every lane: its flat pixel index and tile in ``target``."""
    if usable(lanes.x, lanes.y):
        return pixel_tile_compiled(lanes.x, lanes.y, scale, target.width, target.height,
                                   target.tile_size, target.tiles_x)
    xp = array_module(lanes.x)
    px, py = lanes.x * scale, lanes.y * scale
    if scale > 1:
        # Helper lanes of a superquad may fall outside the target: they are never covered,
        # and are charged to the nearest tile.
        px, py = xp.minimum(px, target.width - 1), xp.minimum(py, target.height - 1)
    return py * target.width + px, target.tile_of(px, py)


def count_rasterized(fragments: Fragments, counters: PassCounters) -> None:
    counters.add("quads_rasterized", fragments.tile[::4])
    # the covered lanes as weights: counted where they are, not gathered first
    counters.add("fragments_rasterized", fragments.tile, fragments.covered)


def quantize_depth(z: np.ndarray, depth_max: int) -> np.ndarray:
    """(n,) window depths in [0, 1] (clamped) as depth buffer values, int64: round to the
    nearest of ``depth_max`` + 1 steps."""
    if usable(z):
        return quantize_depth_compiled(z, depth_max)
    xp = array_module(z)
    return xp.floor(xp.clip(z, 0.0, 1.0) * depth_max + 0.5).astype(xp.int64)


def early_depth_test(fragments: Fragments, buffer, fragment_state,
                     counters: PassCounters) -> np.ndarray:
    """The early depth test (:func:`depth_test` "early") of the batch's covered fragments;
    returns (n,) bool over the batch: the lanes covered and passed. On the compiled path it
    reads the lanes where they are, in submission order (``covered_index``), and counts with
    the covered lanes as weights: no gathered copies of the covered lanes' pixels, depths
    and tiles."""
    f = fragment_state
    idx = fragments.covered_index
    if not usable(fragments.pixel, fragments.depth, buffer, idx):
        passed = depth_test("early", fragments.pixel[idx], fragments.depth[idx],
                            fragments.tile[idx], buffer, f, counters, fragments.rank_groups)
        alive = fragments.covered.copy()
        alive[idx[~passed]] = False
        return alive
    alive = output_merger.depth_test_compiled(fragments.pixel, fragments.depth, idx, buffer,
                                              f.depth_func, f.depth_mask, fragments.tile)
    covered = fragments.covered
    counted = {"early_z_tested": covered, "depth_reads": covered,
               "early_z_killed": covered & ~alive}
    if f.depth_mask:
        counted["depth_writes"] = alive
    counters.add_each(fragments.tile, counted)
    return alive


def depth_test(stage: str, pixel, depth, tile, buffer, fragment_state, counters: PassCounters,
               groups=None) -> np.ndarray:
    """The depth test of fragments (``sp_quad_depth_test``), ``stage`` "early" (before
    shading) or "late" (after): tests them in submission order against the flat depth
    ``buffer`` (written where they pass and the depth mask is on) and counts
    ``{stage}_z_tested``, ``depth_reads``, ``{stage}_z_killed`` and ``depth_writes``.
    ``groups``: the rank groups of ``pixel`` or a function that makes them (None: made when
    needed). Returns the pass mask."""
    f = fragment_state
    passed = output_merger.depth_test(pixel, depth, buffer, f.depth_func, f.depth_mask,
                                      groups)
    counted = {f"{stage}_z_tested": None, "depth_reads": None, f"{stage}_z_killed": ~passed}
    if f.depth_mask:
        counted["depth_writes"] = passed
    counters.add_each(tile, counted)
    return passed


def shade(fragments: Fragments, alive: np.ndarray, draw, scale: int, make_sampler,
          counters: PassCounters):
    """Run the fragment program (``sp_quad_fs``) on the quads with a live fragment (helper
    lanes included; ``alive`` (n,) bool over the batch) and count its work.
    ``make_sampler(lane_tile)`` gives the texture sampler of the shaded lanes. Returns
    (:class:`Shaded`, the interpreter's execution), or None when no quad has a live
    fragment."""
    xp = array_module(alive)
    program, target = draw.program, draw.target
    quad_live = quad_any(alive)
    shaded_lanes = xp.repeat(quad_live, 4)
    live = int(xp.count_nonzero(quad_live))
    if not live:
        return None
    if live == quad_live.shape[0]:
        # every quad shades (no quad lost all its lanes to the early depth test): the batch's
        # lanes as they are, read only from here on
        sub, tile, pixel, sub_alive = fragments.lanes, fragments.tile, fragments.pixel, alive
    else:
        sub, (tile, pixel, sub_alive) = fragments.lanes.select(quad_live, fragments.tile,
                                                               fragments.pixel, alive)
    sampler = make_sampler(tile)
    input_parts, system_value_parts, execution = _run_program(program, fragments.tris, sub, draw,
                                                    target.height, scale, sampler)
    killed = xp.asarray(execution.killed) & sub_alive
    stats = execution.stats
    sampler_stats = getattr(sampler, "stats", None)
    texture = {}
    if sampler_stats is not None:
        for name in ("texels_fetched", "tex_cache_accesses", "tex_cache_misses"):
            texture[name] = xp.asarray(getattr(sampler_stats, name))
    # Per lane (helper lanes run the program and fetch texels too), then per quad.
    counters.add_each(tile, {
        "fragments_shaded": sub_alive, "fragments_discarded": killed,
        **{f"fs_{name}": stats.lane_instructions[k] for k, name in enumerate(CATEGORIES)},
        "tex_samples": stats.texture_samples, **texture})
    if sampler_stats is not None:
        # The texels by filter: the samples of each kind times their texels, summed per tile
        # as they are (TextureStats.texels_nearest etc., without a lane array of them).
        for name, kinds in TEXEL_COUNTER_KINDS.items():
            for kind in kinds:
                counters.add(name, tile, xp.asarray(getattr(sampler_stats, kind)),
                             scale=TEXELS_PER_KIND[kind])
    counters.add_each(tile[::4], {
        "quads_shaded": None,
        **{f"fs_quad_{name}": stats.warp_instructions[k] for k, name in enumerate(CATEGORIES)}})
    per_warp = stats.warp_instructions[:3]
    warp_instructions = (
        # the same counts in every warp (a broadcast view, DynamicStats): one sum
        xp.broadcast_to(per_warp[:, :1].sum(axis=0), per_warp.shape[1:])
        if per_warp.shape[1] and per_warp.strides[1] == 0 else per_warp.sum(axis=0))
    counters.add_program(program.digests[1], tile[::4], warp_instructions)
    semantics = program.fragment.program.output_semantics()
    color_register = next((r for r, s in semantics.items() if s == ("COLOR", 0)), None)
    color = None if color_register is None else execution.outputs[color_register].T
    # COLOR[1]: the second source color of dual-source blending (EXT_blend_func_extended's
    # gl_SecondaryFragColorEXT)
    color1_register = next((r for r, s in semantics.items() if s == ("COLOR", 1)), None)
    color1 = None if color1_register is None else execution.outputs[color1_register].T
    depth_register = next((r for r, s in program.fragment.program.output_semantics().items()
                           if s[0] == "POSITION"), None)
    depth = None if depth_register is None else execution.outputs[depth_register][2]
    shaded = Shaded(shaded_lanes, input_parts, system_value_parts, color, pixel,
                    tile, sub_alive, sub_alive & ~killed, warp_instructions, texture, depth,
                    color1, int(getattr(sampler, "owner_base", 0)) or -1)
    return shaded, execution


# Lanes the fragment program runs on at a time: a draw with more is shaded in consecutive
# parts of whole quads, in lane order, so that the interpreter's registers and temporaries
# (about 260 bytes a lane) stay within ~270 MB for a full-screen draw at 4K (8.3M lanes, 2.1 GB
# in one part). The results, texture-cache counters included, are those of one run: a program
# that reads texels more than once per lane has its cache accesses held and replayed in the
# order of the warps in flight (TextureSampler.warps_in_flight), which no part boundary moves.
SHADE_CHUNK_LANES = 1 << 20


def _run_program(program, tris, lanes_: FragmentLanes, draw, height: int, scale: int, sampler):
    """(inputs, system values, execution) of the fragment program over ``lanes_``, in parts
    of SHADE_CHUNK_LANES lanes where the sampler counts parts (:meth:`TextureSampler.lanes`)
    or none samples; the same results as one run over every lane (see SHADE_CHUNK_LANES).
    The inputs and system values are lists of the parts' (joined by :class:`Shaded` when
    used: only memoization reads them, and joining a full-screen draw's registers copied
    tens of megabytes), the execution one over every lane."""
    xp = array_module(lanes_.x)
    quads = lanes_.triangle.shape[0]
    step = SHADE_CHUNK_LANES // 4
    whole = quads <= step or (sampler is not None and not hasattr(sampler, "lanes"))
    spans = [(0, quads)] if whole else [(start, min(start + step, quads))
                                        for start in range(0, quads, step)]
    parts = []
    with in_flight_order(program.fragment.program, sampler, 4 * quads, xp):
        for start, stop in spans:
            inputs, system_values = fragment_shading.fragment_inputs(
                program, tris, lanes_ if whole else lanes_.span(start, stop),
                draw.clipped.vertices, draw.columns, height, scale)
            with (contextlib.nullcontext() if whole or sampler is None else
                  sampler.lanes(4 * start, 4 * stop, 4 * quads, xp)):
                execution = program.fragment.run(inputs, draw.fs_constants, sampler=sampler,
                                                 system_values=system_values)
            if sampler is not None and hasattr(sampler, "finished"):
                sampler.finished(4 * stop)
            parts.append((inputs, system_values, execution))
    if whole:
        return [parts[0][0]], [parts[0][1]], parts[0][2]
    execution = Execution(xp.concatenate([p[2].outputs for p in parts], axis=2),
                          xp.concatenate([xp.asarray(p[2].killed) for p in parts]),
                          DynamicStats.concatenate([p[2].stats for p in parts]))
    return [p[0] for p in parts], [p[1] for p in parts], execution


def in_flight_order(tgsi, sampler, lanes: int, xp):
    """The context a program runs in over a batch of ``lanes``: the sampler's warps-in-flight
    order of cache accesses (:meth:`TextureSampler.warps_in_flight`) where the TGSI program
    ``tgsi`` may read texels more than once per lane, else nothing (lane order is that
    order)."""
    if sampler is None or not hasattr(sampler, "warps_in_flight") \
            or tgsi.reads_texels_at_most_once():
        return contextlib.nullcontext()
    return sampler.warps_in_flight(lanes, xp)


def blend(shaded: Shaded, fragments: Fragments, target, fragment_state,
          counters: PassCounters) -> np.ndarray:
    """Blend and write the surviving colors (``sp_quad_blend``) into ``target``'s color
    buffer in submission order, counting ``blend_ops`` and ``color_writes``. Returns the
    indices (into the shaded lanes) of the fragments written."""
    xp = array_module(shaded.survivors)
    f = fragment_state
    idx = xp.nonzero(shaded.survivors)[0]
    flat = target.color.reshape(-1, 4)
    blended = output_merger.write_colors(
        shaded.pixel, shaded.color, flat, f, target.has_alpha,
        lambda: fragments.ranked(shaded.lanes, shaded.survivors), keep=shaded.survivors,
        color1=shaded.color1, tile=shaded.tile)
    counted = {}
    if blended:
        counted["blend_ops"] = None
    if any(f.color_mask):
        counted["color_writes"] = None
    counters.add_each(shaded.tile[idx], counted)
    return idx


@dataclass
class QuadBatch:
    """What each quad of a batch did, in the order the rasterizer emitted it (one row per
    quad, (q,) arrays): the record a cycle-level model of the quad stages replays
    (``PipelineHooks.quads``). Lane counts are of the quad's 4 lanes."""

    tile: np.ndarray              # tile of the target
    triangle: np.ndarray          # row of the draw's triangle (``draw.tris``)
    covered: np.ndarray           # lanes covering their pixel
    early_tested: np.ndarray      # lanes depth-tested before shading
    early_passed: np.ndarray      # of those, lanes that passed
    shaded: np.ndarray            # bool: the fragment program ran on the quad
    instructions: np.ndarray      # warp instructions the quad issued (0 if not shaded)
    tex_accesses: np.ndarray      # texture cache line accesses of its lanes
    tex_misses: np.ndarray        # texture cache line misses of its lanes
    texels: np.ndarray            # texels its lanes fetched
    late_tested: np.ndarray       # lanes depth-tested after shading
    written: np.ndarray           # lanes written to the color buffer
    blended: bool                 # the batch's writes blend with the color buffer
    # the owner of the first shaded lane's texture accesses, shaded lane j's is this + j
    # (PipelineHooks.texture_hits_inherited; -1: the batch sampled no texture)
    tex_owner_base: int = -1


def quad_batch(fragments: Fragments, early: bool, alive: np.ndarray, shaded: Shaded | None,
               late_tested: np.ndarray | None, written: np.ndarray | None,
               blended: bool) -> QuadBatch:
    """The :class:`QuadBatch` of a batch: ``alive`` (n,) lanes live after the early depth
    test, ``late_tested`` and ``written`` indices into the shaded lanes (None: none)."""
    xp = array_module(alive)
    n = alive.size
    q = n // 4
    per_quad = lambda lanes: lanes.reshape(-1, 4).sum(axis=1)  # noqa: E731
    covered = fragments.covered
    zeros = lambda: xp.zeros(q, dtype=xp.int64)  # noqa: E731  (one array per field)
    out = QuadBatch(fragments.tile[::4], fragments.draw_triangle(), per_quad(covered),
                    per_quad(covered) if early else zeros(),
                    per_quad(alive) if early else zeros(), xp.zeros(q, dtype=bool), zeros(),
                    zeros(), zeros(), zeros(), zeros(), zeros(), bool(blended))
    if shaded is None:
        return out
    out.tex_owner_base = shaded.tex_owner_base
    quad_of_lane = xp.nonzero(shaded.lanes)[0]           # batch lane of each shaded lane
    quads = quad_of_lane[::4] // 4
    out.shaded[quads] = True
    out.instructions[quads] = xp.asarray(shaded.warp_instructions, dtype=xp.int64)
    for field_name, name in (("tex_accesses", "tex_cache_accesses"),
                             ("tex_misses", "tex_cache_misses"), ("texels", "texels_fetched")):
        values = shaded.texture.get(name)
        if values is not None:
            getattr(out, field_name)[quads] = per_quad(xp.asarray(values, dtype=xp.int64))
    for field_name, idx in (("late_tested", late_tested), ("written", written)):
        if idx is not None and idx.size:
            getattr(out, field_name)[:] = xp.bincount(quad_of_lane[idx] // 4, minlength=q)
    return out


# == the compiled path (Numba, tilesim.jit): bit-identical to the code above =============

@jit(inline=True)
def _tile_of(px, py, tile_size, tile_shift, tiles_x):  # pragma: no cover - compiled
    # RenderTarget.tile_of; a shift where the size is a power of two (an arithmetic shift is
    # floor division for negative values too), as a division by a run-time value costs
    # most of the loop
    if tile_shift >= 0:
        return (py >> tile_shift) * tiles_x + (px >> tile_shift)
    return (py // tile_size) * tiles_x + px // tile_size


@jit
def _pixel_tile_kernel(x, y, scale, width, height, tile_size, tile_shift, tiles_x, pixel,
                       tile):  # pragma: no cover - compiled
    for i in range(x.shape[0]):
        px = x[i] * scale
        py = y[i] * scale
        if scale > 1:
            px = min(px, width - 1)
            py = min(py, height - 1)
        pixel[i] = py * width + px
        tile[i] = _tile_of(px, py, tile_size, tile_shift, tiles_x)


def pixel_tile_compiled(x, y, scale: int, width: int, height: int, tile_size: int, tiles_x: int):
    """(pixel, tile) of lanes at (x, y) (superfragments of ``scale`` pixels clamped to the
    target), as ``quad_stages.raster_fragments`` computes them."""
    pixel = np.empty(x.size, dtype=np.int64)
    tile = np.empty(x.size, dtype=np.int64)
    shift = power_of_two_shift(tile_size)

    def part(span):         # each lane's own: spans on the kernel threads
        a, b = span
        _pixel_tile_kernel(x[a:b], y[a:b], scale, width, height, tile_size, shift, tiles_x,
                           pixel[a:b], tile[a:b])

    in_threads(part, spans(x.size))
    return pixel, tile


@jit
def _quad_tiles_kernel(qx, qy, scale, width, height, tile_size, tile_shift, tiles_x,
                       tile):  # pragma: no cover - compiled
    for q in range(qx.shape[0]):
        px = 2 * scale * np.int64(qx[q])
        py = 2 * scale * np.int64(qy[q])
        if scale > 1:
            px = min(px, width - 1)
            py = min(py, height - 1)
        tile[q] = _tile_of(px, py, tile_size, tile_shift, tiles_x)


def quad_tiles_compiled(qx, qy, scale: int, width: int, height: int, tile_size: int,
                        tiles_x: int) -> np.ndarray:
    """The tile of each quad's top-left lane, as ``tile_major`` computes it."""
    tile = np.empty(qx.size, dtype=np.int64)
    _quad_tiles_kernel(qx, qy, scale, width, height, tile_size, power_of_two_shift(tile_size),
                       tiles_x, tile)
    return tile


NAN_INT64 = nan_cast(np.int64)


@jit
def _quantize(z, depth_max, nan_value, out):  # pragma: no cover - compiled
    for i in range(z.shape[0]):
        value = z[i]
        if value != value:
            out[i] = nan_value
            continue
        if value < 0.0:
            value = 0.0
        elif value > 1.0:
            value = 1.0
        out[i] = np.int64(np.floor(value * depth_max + 0.5))


def quantize_depth_compiled(z, depth_max: int) -> np.ndarray:
    """floor(clip(z, 0, 1) * depth_max + 0.5) as int64."""
    out = np.empty(z.size, dtype=np.int64)
    in_threads(lambda span: _quantize(z[span[0]:span[1]], float(depth_max), NAN_INT64,
                                      out[span[0]:span[1]]), spans(z.size))
    return out
