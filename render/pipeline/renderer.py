"""The tile-based pipeline: commands in, frames and per-tile counters out.

The chain of stages of a draw, in two places: the geometry phase in ``Renderer._draw``,

    vertex_fetch -> vertex_shading -> primitive_assembly -> clipping -> triangle_setup
      -> binning (display lists per tile)

and the raster phase, the quad stages of ``quad_stages``, in ``Renderer._raster``:

    raster_fragments (rasterizer: quads) -> depth_test (early) -> shade (fragment_shading)
      -> depth_test (late) -> blend (output_merger: blending and color write)

Draws are processed in submission order and, within a draw, the fragments that land on one
pixel in primitive order, so the frame equals what sequential processing gives; each stage
works on whole arrays (all vertices, primitives, quads of the draw). Work is attributed to
the 16x16 (configurable) tile each primitive or fragment belongs to, as a tile-based GPU
would do it tile by tile; tiles are flushed at the end of a render pass.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

import numpy as np

from tilesim.backend import array_module, to_host
from tilesim.backend import xp as active_xp
from tilesim.errors import InputError
from tilesim.jit import jit, usable
from tilesim.memory_budget import RENDER_BYTES_PER_PIXEL, check_memory, keep_freed_memory
from tilesim.render.gl import uniforms
from tilesim.render.gl.commands import PROGRAM_TEXTURE_CHANGES, Command
from tilesim.render.gl.state import FragmentState, GLState, Program
from tilesim.render.gl.textures import requantize
from tilesim.render.pipeline import (
    binning,
    clipping,
    output_merger,
    point_line_setup,
    primitive_assembly,
    quad_stages,
    triangle_setup,
    vertex_fetch,
    vertex_shading,
)
from tilesim.render.pipeline.binning import Bins
from tilesim.render.pipeline.clipping import ClippedTriangles
from tilesim.render.pipeline.counters import FrameCounters, PassCounters
from tilesim.render.pipeline.framebuffer import RenderTarget
from tilesim.render.pipeline.gpu_config import GPU_CONFIG, gl_limits, gpu_config_values
from tilesim.render.pipeline.hooks import PipelineHooks
from tilesim.render.pipeline.observer import RenderObserver
from tilesim.render.pipeline.options import MEDIUMP_HELP  # noqa: F401 (named here)
from tilesim.render.pipeline.tile_caches import TileCaches, tile_caches_bytes
from tilesim.render.pipeline.triangle_setup import Triangles


@dataclass
class FrameResult:
    index: int
    image: np.ndarray          # (H, W, 4) uint8, row 0 at the top (a frame with readPixels:
                               # the (h, w, 4) rectangle it read)
    counters: FrameCounters

    def __repr__(self) -> str:
        """One line: the frame, the image's shape and type, the counters' own short form
        (not the pixels, not every counter)."""
        image = self.image
        kind = f"{type(image).__module__.split('.')[0]} {image.dtype}"
        shape = "x".join(str(n) for n in image.shape)
        return f"FrameResult(index={self.index}, image={shape} {kind}, counters={self.counters!r})"


@dataclass
class DrawContext:
    """What the raster phase of one draw needs, captured when the draw is submitted: EVR runs
    part of a draw later (its second display lists) with the draw's own state, and DSR sets
    its triangles up again for each sampling rate."""

    program: Program
    fragment: FragmentState       # a snapshot of the per-fragment state
    target: RenderTarget
    counters: PassCounters
    clipped: ClippedTriangles
    columns: dict
    viewport: tuple
    tris: Triangles               # set up at one sample per pixel
    bins: Bins                    # display-list entries, sorted by tile then triangle
    rect: tuple
    vs_constants: np.ndarray
    fs_constants: np.ndarray
    texture_units: dict           # SAMP index -> Texture (None: nothing bound)
    layers: np.ndarray | None = None    # EVR: the layer of every display-list entry
    excluded: np.ndarray | None = None  # EVR: entries predicted occluded (out of RE's input)

    def entry_of(self, triangle: np.ndarray, tile: np.ndarray):
        """(entry index into ``bins``, found) of (triangle, tile) pairs."""
        xp = array_module(self.bins.tile)
        keys = self.bins.tile * len(self.tris) + self.bins.triangle    # sorted
        wanted = tile * len(self.tris) + triangle
        position = xp.minimum(xp.searchsorted(keys, wanted), max(keys.size - 1, 0))
        found = keys[position] == wanted if keys.size else xp.zeros(wanted.shape, bool)
        return position, found


# What a framebuffer's render target keeps between draws, per pixel: RGBA8 colour, 32-bit
# depth, and the tile bookkeeping beside them.
TARGET_BYTES_PER_PIXEL = 16

# Commands after which work a technique holds back (EVR's second lists) may not run with the
# state it was captured with (texture contents and parameters, programs), or that end the
# display lists: the held-back work is drawn first.
BARRIER_COMMANDS = PROGRAM_TEXTURE_CHANGES | {"clear", "bindFramebuffer", "endFrame"}

# Commands that read or replace the storage of the texture bound to their target on the
# active unit. A tile-based GPU keeps a pass's colors on chip until the pass ends, so one of
# these on a texture the pending pass renders into ends the pass first, the way a driver
# flushes a render pass before its attachment is sampled, mipmapped or respecified.
TEXTURE_STORAGE_COMMANDS = frozenset({
    "generateMipmap", "texImage2D", "texSubImage2D", "compressedTexImage2D",
    "compressedTexSubImage2D", "copyTexImage2D", "copyTexSubImage2D", "texImage3D",
    "texSubImage3D", "copyTexSubImage3D", "compressedTexImage3D"})
# Commands that change what the bound framebuffer renders into.
ATTACHMENT_COMMANDS = frozenset({
    "framebufferTexture2D", "framebufferTexture3D", "framebufferRenderbuffer",
    "deleteFramebuffer",
    "renderbufferStorage", "deleteRenderbuffer"})

# Commands that read or write pixels (or copy them into textures). A frame replayed for its GL
# state only (``Renderer.render``'s ``replay_from``) skips them.
PIXEL_COMMANDS = frozenset({"drawArrays", "drawElements", "clear", "readPixels",
                            "copyTexImage2D", "copyTexSubImage2D", "copyTexSubImage3D"})


@dataclass
class ReplayedFrame:
    """What a frame replayed for its GL state (``Renderer.replay_state``) does to the
    window's buffers."""

    clears_color: bool   # its first pixel command clears the whole color buffer
    clears_depth: bool   # ... and the whole depth buffer (or the window has none)
    tests_depth: bool    # one of its draws depth-tests (reads the depth buffer)


class FramesDepend(Exception):
    """Frames cannot be skipped: one renders into a texture or copies pixels into one (a later
    frame may sample them), or the first frame wanted does not start by clearing the whole
    window (it builds on the pixels of the frames before)."""


@dataclass
class Snapshot:
    """A renderer between two frames and technique sets attached to its window, copied
    together (:meth:`Renderer.snapshot`): a set keeps seeing the copy's window as its own."""

    renderer: Renderer       # its techniques and observer: do-nothing ones (PipelineHooks())
    techniques: dict[str, PipelineHooks]

    def resume(self, name: str) -> Renderer:
        """A renderer that goes on from the snapshot's next frame with technique set
        ``name`` alone, independent of the snapshot (which may resume again)."""
        renderer, techniques = _copy_renderer(self.renderer, self.techniques[name])
        renderer.techniques = techniques
        return renderer


def _copy_renderer(renderer: Renderer, techniques):
    """Deep copies of ``renderer`` (without its techniques and observer) and ``techniques``,
    made together so that what they share stays shared. Array modules are not copied; neither
    are prepared shaders (``Interpreter.__deepcopy__``)."""
    kept = {id(renderer.techniques): None, id(renderer.observer): None,
            id(np): np, id(renderer.xp): renderer.xp}
    copied, techniques = copy.deepcopy((renderer, techniques), kept)
    copied.techniques, copied.observer = PipelineHooks(), RenderObserver()
    return copied, techniques


def configured_mediump(path: str | None = None) -> str:
    """How the GPU configuration (``processors.shader.mediump_fp16`` in ``baseline_gpu.toml``,
    or the file at ``path``) runs ``mediump`` / ``lowp`` shader arithmetic: "fp16" (16-bit
    floats, as Mali-class GPUs and Mesa llvmpipe do) or "fp32" (float32, as Mesa softpipe,
    whose TGSI tilesim runs, does; the default)."""
    path = str(path or GPU_CONFIG)
    flag = gpu_config_values(path, "processors.shader", ("mediump_fp16",))["mediump_fp16"]
    if flag not in (0, 1):
        raise InputError(f"processors.shader.mediump_fp16: a flag is 0 or 1, got {flag!r}",
                         source=path)
    return "fp16" if flag else "fp32"


class Renderer:
    """Replays commands on the tile-based GPU model.

    ``render(frames)`` yields a ``FrameResult`` per ``endFrame``. ``fill_rule`` selects the
    tie rule of the rasterizer; ``traversal`` the tile order (Fragment Memoization's LUT order,
    recorded in the counters; the timing model takes its own, ``screen.zorder_traversal``).
    ``techniques`` (a :class:`~tilesim.render.pipeline.hooks.PipelineHooks`, e.g.
    ``tilesim.render.techniques.bus.Techniques.from_name("re+evr")``; None: the baseline)
    watches the pipeline through its hooks and returns the decisions the pipeline applies.
    ``tile_rates`` ((tiles,) int8 or None) is the sampling-rate index of every tile of the
    default framebuffer (0: 1x ... 4: 1/256x); DSR sets it each frame, and a caller may set it
    to render at fixed rates. ``observer`` (a
    :class:`~tilesim.render.pipeline.observer.RenderObserver`) watches frames, commands and
    passes. ``mediump``: "fp32" or "fp16", how shaders compute ``mediump`` and ``lowp`` (see
    :func:`configured_mediump`; None: the GPU configuration's choice). ``limits``: the GLES2
    limits the trace's program queried (``{"texture_units", "point_size_max"}``, either may be
    missing), else the GPU configuration's (:func:`gpu_config.gl_limits`); ``self.limits`` the
    ones applied.
    """

    def __init__(self, width: int, height: int, *, depth_bits: int = 24, tile_size: int = 16,
                 traversal: str = "scanline", fill_rule: str = "bottom_left",
                 source: str = "<trace>", techniques: PipelineHooks | None = None,
                 observer: RenderObserver | None = None, mediump: str | None = None,
                 limits: dict | None = None):
        if tile_size < 2 or tile_size % 2:
            raise InputError(f"tile size must be an even number >= 2, got {tile_size}")
        keep_freed_memory()
        check_memory(f"rendering a {width}x{height} framebuffer in {tile_size}-pixel tiles",
                     RENDER_BYTES_PER_PIXEL * width * height
                     + tile_caches_bytes(width, height, tile_size), source)
        self.xp = active_xp()   # the array backend the buffers and all per-draw arrays live on
        self.mediump = configured_mediump() if mediump is None else mediump
        self.limits = gl_limits(limits)
        self.state = GLState(width, height, source, mediump=self.mediump,
                             texture_units=self.limits["texture_units"],
                             viewport_max=(self.limits["viewport_max_width"],
                                           self.limits["viewport_max_height"]),
                             renderbuffer_size_max=self.limits["renderbuffer_size_max"])
        self.tile_size, self.traversal, self.fill_rule = tile_size, traversal, fill_rule
        self.source = source
        self.default_target = RenderTarget(width, height, depth_bits, name="default",
                                           tile_size=tile_size)
        self.fbo_targets: dict[int, RenderTarget] = {}
        self.frame_index = 0
        self.counters = FrameCounters(0)
        self._pass: PassCounters | None = None
        self._pass_target: RenderTarget | None = None
        self._tile_caches_kept: dict[int, TileCaches] = {}
        self._written: np.ndarray | None = None
        self._deferred: list[tuple[DrawContext, np.ndarray]] = []
        self._observed: np.ndarray | None = None   # the frame's image, read by readPixels
        self.techniques = PipelineHooks() if techniques is None else techniques
        self.observer = RenderObserver() if observer is None else observer
        self.tile_rates = self.techniques.attach(self.default_target, traversal)

    @property
    def tile_rates(self):
        return self._tile_rates

    @tile_rates.setter
    def tile_rates(self, rates) -> None:
        # Kept beside the buffers, with the rates it holds as host ints: both are read at
        # every draw, so they are made once per assignment (DSR assigns once a frame).
        self._tile_rates = None if rates is None else self.xp.asarray(rates)
        self._rates_used = ([] if rates is None else
                            to_host(self.xp.unique(self._tile_rates)).tolist())

    # -- driving ----------------------------------------------------------------------------

    def render(self, frames: Iterable[list[Command]], *, first: int = 0,
               keep: Iterable[int] | None = None,
               replay_from: int | None = None) -> Iterator[FrameResult]:
        """Replay frames; yield results for frame numbers in ``keep`` (default: all).

        Frames not kept are still rendered: later frames may sample what they drew. With
        ``replay_from`` (one of ``replay.fresh_starts``), the frames before it only set the GL
        state (textures, buffers, programs, ...: :meth:`replay_state`) and are neither drawn
        nor observed; only for the baseline (techniques keep state from frame to frame).
        :class:`FramesDepend` is raised, before any result, when a frame before it draws into
        a texture or it does not start by clearing the window's colors.
        """
        if replay_from is not None and self.techniques.spans_frames:
            raise ValueError(f"{self.techniques.name} compares frames with the ones before: "
                             "its render may not skip frames")
        wanted = None if keep is None else set(keep)
        observer = self.observer
        for number, commands in enumerate(frames, start=first):
            self.frame_index = number
            if replay_from is not None and number < replay_from:
                self.replay_state(number, commands)
                continue
            verify = number == replay_from
            observer.begin_frame(number)
            for position, command in enumerate(commands):
                self.state.where = f"{self.source}: frame {number}, command {position} " \
                                   f"({command.op})"
                if verify and command.op in PIXEL_COMMANDS:
                    verify = False
                    if not self._clears_the_window(command)[0]:
                        raise FramesDepend(f"frame {number} does not start by clearing the "
                                           "window's colors")
                observer.before_command(number, position, command, self.state, self.counters)
                result = self.execute(command)
                observer.after_command(number, position, command, self.state, self.counters)
                if result is not None:
                    # A technique may hold a frame back until a later one completes it
                    # (memoization renders frames in pairs).
                    for done in self.techniques.release(result):
                        observer.end_frame(done)
                        if wanted is None or done.index in wanted:
                            yield done
        for done in self.techniques.finish():
            observer.end_frame(done)
            if wanted is None or done.index in wanted:
                yield done

    def snapshot(self, techniques: dict[str, PipelineHooks]) -> Snapshot:
        """This renderer between two frames, copied with ``techniques`` (name -> technique
        sets attached to its window, with the state they have now), for a render of one of
        them to go on from the next frame on its own (:meth:`Snapshot.resume`)."""
        if self._pass is not None or self._deferred:
            raise RuntimeError("a renderer is copied between frames only")
        renderer, copied = _copy_renderer(self, techniques)
        return Snapshot(renderer, copied)

    def replay_state(self, number: int, commands: list[Command]) -> ReplayedFrame:
        """A frame's commands for the GL state alone: no pixel is drawn, cleared, read or
        copied, no counter kept (the state-change count restarts at its end, as a frame's
        does). Returns what the frame does to the window's buffers (whether a render may
        start at it: ``replay.fresh_starts``); FramesDepend if the frame renders into a
        texture or copies pixels into one."""
        first, tests_depth = None, False
        for position, command in enumerate(commands):
            op = command.op
            self.state.where = f"{self.source}: frame {number}, command {position} ({op})"
            if op in PIXEL_COMMANDS:
                if first is None:
                    first = self._clears_the_window(command)
                if self.state.framebuffer != 0 or op.startswith("copyTex"):
                    raise FramesDepend(f"frame {number} renders into a texture ({op})")
                tests_depth |= op.startswith("draw") and self.state.fragment.depth_test
            elif op == "endFrame":
                self.state.state_changes = 0
                self.counters = FrameCounters(number + 1)
            else:
                self.state.apply(command)
        return ReplayedFrame(*(first or (False, False)), tests_depth)

    def _clears_the_window(self, command: Command) -> tuple[bool, bool]:
        """Whether ``command`` clears every pixel of the window's color buffer, and of its
        depth buffer: what the frames before drew there is then gone."""
        if command.op != "clear" or self.state.framebuffer != 0:
            return False, False
        f, target, mask = self.state.fragment, self.default_target, command.args["mask"]
        whole = not f.scissor_test
        color = whole and "COLOR_BUFFER_BIT" in mask and all(f.color_mask[:3]) and (
            f.color_mask[3] or not target.has_alpha)
        depth = target.depth is None or (whole and "DEPTH_BUFFER_BIT" in mask and f.depth_mask)
        return color, depth

    def execute(self, command: Command) -> FrameResult | None:
        op = command.op
        if self._deferred and op in BARRIER_COMMANDS:
            self._flush_deferred()
        self.techniques.command(op)
        if self._pass is not None and self._touches_pass_target(command):
            self._end_pass()
        if op in ("drawArrays", "drawElements"):
            self._draw(command)
        elif op == "clear":
            self._clear(command.args["mask"])
        elif op == "bindFramebuffer":
            self._end_pass()
            self.state.apply(command)
        elif op == "endFrame":
            return self._end_frame()
        elif op == "readPixels":
            self._read_pixels(command.args)
        elif op in ("copyTexImage2D", "copyTexSubImage2D", "copyTexSubImage3D"):
            self._copy_tex(command)
        else:
            self.state.apply(command)
        return None

    # -- render targets and passes ----------------------------------------------------------

    def _touches_pass_target(self, command: Command) -> bool:
        """Whether ``command`` reads or changes the storage the pending pass renders into
        (its attached textures, or the attachments of its framebuffer)."""
        op, target = command.op, self._pass_target
        if op in TEXTURE_STORAGE_COMMANDS:
            kind = command.args["target"]
            if kind not in ("TEXTURE_2D", "TEXTURE_3D_OES"):
                kind = "TEXTURE_CUBE_MAP"
            ident = self.state.bound_textures[kind][self.state.active_unit]
        elif op == "deleteTexture":
            ident = command.args["id"]
        elif op in ATTACHMENT_COMMANDS:
            # The pending pass is the bound framebuffer's (binding another one ends it).
            return target is not self.default_target
        else:
            return False
        return ident != 0 and any(attached is not None and attached[0] == ident
                                  for attached in (target.texture, target.depth_texture))

    def _target(self) -> RenderTarget:
        fbo_id = self.state.framebuffer
        if fbo_id == 0:
            return self.default_target
        color = self._attachment(fbo_id, "COLOR_ATTACHMENT0")
        depth = self._attachment(fbo_id, "DEPTH_ATTACHMENT")
        if color is None and depth is None:
            raise self.state.error(f"framebuffer {fbo_id} has no color or depth attachment "
                                   "(incomplete)")
        present = [a for a in (color, depth) if a is not None]
        # Mesa (ARB_framebuffer_object) renders into the area all attachments share.
        width, height = min(a[1] for a in present), min(a[2] for a in present)
        if width <= 0 or height <= 0:  # ES 2.0 §4.4.5: FRAMEBUFFER_INCOMPLETE_ATTACHMENT
            raise self.state.error(f"framebuffer {fbo_id} is incomplete: an attachment has "
                                   f"no image (its size is {width}x{height})")
        depth_bits = depth[4] if depth is not None else 0
        key = (color[0] if color else None, depth[0] if depth else None, depth_bits)
        target = self.fbo_targets.get(fbo_id)
        if (target is None or target.width != width or target.height != height
                or target.key != key):
            # The framebuffers already rendered into keep their buffers: counted too, so many
            # small ones cannot add up past the budget.
            held = sum(t.width * t.height for key, t in self.fbo_targets.items()
                       if key != fbo_id)
            beside = f" beside the {held} pixels of other framebuffers" if held else ""
            check_memory(f"rendering into the {width}x{height} framebuffer {fbo_id}{beside}",
                         RENDER_BYTES_PER_PIXEL * width * height
                         + tile_caches_bytes(width, height, self.tile_size)
                         + TARGET_BYTES_PER_PIXEL * held, self.state.where)
            target = RenderTarget(width, height, depth_bits or 24, has_depth=depth is not None,
                                  name=f"fbo{fbo_id}", tile_size=self.tile_size,
                                  texture=color[3] if color else None,
                                  has_alpha=color[4] if color else True,
                                  depth_texture=depth[3] if depth else None,
                                  has_color=color is not None)
            target.key = key
            self.fbo_targets[fbo_id] = target
        if target is not self._pass_target:
            self._load_textures(target)
        return target

    def _attachment(self, fbo_id: int, point: str):
        """(key, width, height, texture, detail) of an attachment of framebuffer ``fbo_id``,
        or None: ``texture`` is (id, image target, level) for a texture attachment; ``detail``
        is whether a color attachment stores alpha, the depth bits of a depth attachment."""
        attachment = self.state.framebuffers[fbo_id].attachments.get(point)
        if attachment is None:
            return None
        if attachment[0] == "texture":
            _, ident, image_target, level = attachment
            texture = self.state.textures.get(ident)
            if texture is None:
                raise self.state.error(f"framebuffer {fbo_id}: the texture of its {point} was "
                                       "deleted")
            width, height = texture.level_size(image_target, level)
            bits = texture.depth_bits(image_target, level)
            if (point == "DEPTH_ATTACHMENT") != (bits is not None):
                kind = "a depth" if bits is not None else "a color"
                raise self.state.error(f"framebuffer {fbo_id}: texture {ident} is {kind} "
                                       f"texture and cannot be its {point} (incomplete)")
            detail = bits if bits is not None else texture.format_has_alpha()
            return attachment, width, height, (ident, image_target, level), detail
        rb = self.state.renderbuffers[attachment[1]]
        if point == "DEPTH_ATTACHMENT":
            detail = 16 if rb.format == "DEPTH_COMPONENT16" else 24
        else:
            detail = rb.format in ("RGBA4", "RGB5_A1", "RGBA8")
        return attachment, rb.width, rb.height, None, detail

    def _load_textures(self, target: RenderTarget) -> None:
        """Load the target's buffers from the textures attached to it where they changed
        since the target last loaded or stored them (or it is new)."""
        h, w = target.height, target.width
        for kind, attached in (("color", target.texture), ("depth", target.depth_texture)):
            texture = None if attached is None else self.state.textures.get(attached[0])
            if texture is None or target.synced.get(kind) == texture.version:
                continue
            ident, image_target, level = attached
            if kind == "color":
                existing = texture.level_rgba(image_target, level)
                if existing is not None:
                    target.color[:] = self.xp.asarray(output_merger.to_unorm8(existing[:h, :w]))
            else:
                existing = texture.level_depth(image_target, level)
                if existing is not None:
                    bits = texture.depth_bits(image_target, level)
                    target.depth[:] = self.xp.asarray(requantize(existing[:h, :w], bits,
                                                                 target.depth_bits))
            target.synced[kind] = texture.version

    def _begin_pass(self, target: RenderTarget) -> PassCounters:
        xp = self.xp
        if self._pass is None or self._pass_target is not target:
            self._end_pass()
            self._pass = PassCounters(target.name, target.width, target.height,
                                      target.tile_size, target.tiles_x, target.tiles_y,
                                      target.traversal(self.traversal))
            self._pass_target = target
            self._written = xp.zeros(target.width * target.height, dtype=bool)
            self.counters.scalars["passes"] += 1
            self.techniques.begin_pass(target, self._pass)
        return self._pass

    def _end_pass(self) -> None:
        if self._pass is None:
            return
        self._flush_deferred()
        target, counters = self._pass_target, self._pass
        self._resolve_superfragments(target)
        # Techniques see the finished tiles before they are flushed: RE puts back the tiles
        # it skipped, TE decides which flushes to drop, EVR and DSR analyse the tiles.
        depth_flushed = (target.depth_texture is not None
                         and self.state.textures.get(target.depth_texture[0]) is not None)
        self.techniques.finish_pass(target, counters, self._written, depth_flushed)
        if target.texture is not None:
            ident, image_target, level = target.texture
            texture = self.state.textures.get(ident)
            if texture is not None:
                texture.store_rendered(image_target, level,
                                       to_host(target.color).astype(np.float32) / 255.0)
                target.synced["color"] = texture.version
        if target.depth_texture is not None:
            ident, image_target, level = target.depth_texture
            texture = self.state.textures.get(ident)
            if texture is not None:
                texture.store_depth(image_target, level, to_host(target.depth),
                                    target.depth_bits)
                target.synced["depth"] = texture.version
        self.counters.passes.append(counters.to_host())
        self.observer.end_pass(self.frame_index, self.counters.passes[-1])
        self._pass = self._pass_target = self._written = None

    def _end_frame(self) -> FrameResult:
        self._end_pass()
        self.counters.scalars["state_changes"] = self.state.state_changes
        self.state.state_changes = 0
        image = self.default_target.image() if self._observed is None else self._observed
        self._observed = None
        result = FrameResult(self.frame_index, image, self.counters)
        rates = self.techniques.end_frame(result, self.default_target)
        if rates is not None:
            self.tile_rates = rates
        self.counters = FrameCounters(self.frame_index + 1)
        return result

    def _read_pixels(self, a: dict) -> None:
        """glReadPixels, the observation point of programs that never swap: the rectangle of
        the bound framebuffer's color buffer becomes the frame's image ((h, w, 4) uint8, row 0
        on top). The pass ends first, as a tile-based GPU resolves its tiles before a read."""
        self._end_pass()
        target = self._target()
        x, y, w, h = a["x"], a["y"], a["width"], a["height"]
        if not target.has_color:
            raise self.state.error(f"readPixels: framebuffer {self.state.framebuffer} has no "
                                   "color attachment to read")
        if w < 1 or h < 1 or x < 0 or y < 0 or x + w > target.width or y + h > target.height:
            raise self.state.error(f"readPixels: the {w}x{h} rectangle at ({x}, {y}) does not "
                                   f"lie inside the {target.width}x{target.height} framebuffer")
        self._observed = to_host(target.color[y:y + h, x:x + w][::-1]).copy()
        if not target.has_alpha:
            # a color buffer without alpha (RGB textures, RGB565 / RGB8_OES renderbuffers)
            # reads alpha as 1 (ES 2.0 §4.3.1, conversion to RGBA)
            self._observed[..., 3] = 255

    def _resolve_superfragments(self, target: RenderTarget | None) -> None:
        """Replicate each superfragment's color and depth (kept in the bottom-left pixel of
        its block) to every pixel of the block (DSR's upsampling, Frame Coherence §6.4.1)."""
        xp = self.xp
        if target is not self.default_target or not any(self._rates_used):
            return
        # Only the pixels of tiles below 1x change (most tiles of a frame stay at 1x).
        tiles = xp.nonzero(self.tile_rates > 0)[0]
        t = target.tile_size
        written = self._written if self._pass_target is target else None
        if usable(tiles, target.color, target.depth, written) and \
                t % (1 << max(self._rates_used)) == 0:
            resolve_superfragments_compiled(
                target.color.reshape(-1, 4),
                None if target.depth is None else target.depth.reshape(-1), written, tiles,
                self.tile_rates, t, target.tiles_x, target.width, target.height)
            return
        offsets = xp.arange(t)
        ys = (tiles // target.tiles_x * t)[:, None, None] + offsets[None, :, None]
        xs = (tiles % target.tiles_x * t)[:, None, None] + offsets[None, None, :]
        inside = (ys < target.height) & (xs < target.width)      # edge tiles are partial
        scale = xp.left_shift(1, self.tile_rates[tiles].astype(xp.int64))[:, None, None]
        ys, xs, scale = xp.broadcast_arrays(ys, xs, scale)
        ys, xs, scale = ys[inside], xs[inside], scale[inside]
        pixel = ys * target.width + xs
        source = (ys // scale * scale) * target.width + (xs // scale * scale)
        flat = target.color.reshape(-1, 4)
        flat[pixel] = flat[source]
        if target.depth is not None:
            depth = target.depth.reshape(-1)
            depth[pixel] = depth[source]
        if self._written is not None and self._pass_target is target:
            self._written[pixel] = self._written[source]

    def _copy_tex(self, command: Command) -> None:
        """glCopyTexImage2D / glCopyTexSubImage2D from the bound framebuffer's color buffer
        into the texture bound to the command's target on the active unit."""
        op, a = command.op, command.args
        target = self._target()
        self._resolve_superfragments(target)
        if not target.has_color:
            raise self.state.error(f"{op}: framebuffer {self.state.framebuffer} has no color "
                                   "attachment to read")
        texture = self.state.texture_for_image(a["target"])
        if op == "copyTexSubImage3D":     # OES_texture_3D: into one slice
            texture.copy_tex_sub_image_3d(a["target"], a["level"], a["xoffset"], a["yoffset"],
                                          a["zoffset"], a["x"], a["y"], a["width"],
                                          a["height"], to_host(target.color), target.has_alpha)
        elif op == "copyTexImage2D":
            texture.copy_tex_image_2d(a["target"], a["level"], a["internalformat"], a["x"],
                                      a["y"], a["width"], a["height"],
                                      to_host(target.color), target.has_alpha)
        else:
            texture.copy_tex_sub_image_2d(a["target"], a["level"], a["xoffset"],
                                          a["yoffset"], a["x"], a["y"], a["width"],
                                          a["height"], to_host(target.color),
                                          target.has_alpha)

    # -- clear ------------------------------------------------------------------------------

    def _clear(self, mask: list[str]) -> None:
        xp = self.xp
        target = self._target()
        counters = self._begin_pass(target)
        f = self.state.fragment
        scissor = f.scissor if f.scissor_test else None
        color = self.state.clear_color if "COLOR_BUFFER_BIT" in mask else None
        depth = (self.state.clear_depth if "DEPTH_BUFFER_BIT" in mask and f.depth_mask
                 else None)
        color_mask = f.color_mask if target.has_alpha else (*f.color_mask[:3], False)
        pixels = target.clear(color, depth, color_mask, scissor)
        self.techniques.cleared(target, counters, self._rect(target, scissor_only=True),
                                color if any(color_mask) else None, depth, color_mask)
        self.counters.scalars["clears"] += 1
        if pixels:
            counters.add_per_tile("pixels_cleared", xp.asarray(
                target.rect_tile_pixels(*self._rect(target, scissor_only=True))))

    # -- draw -------------------------------------------------------------------------------

    def _rect(self, target: RenderTarget, scissor_only: bool = False):
        """Pixels a draw may touch: target ∩ scissor (∩ viewport for draws), x1/y1 exclusive."""
        x0, y0, x1, y1 = 0, 0, target.width, target.height
        f = self.state.fragment
        if f.scissor_test:
            sx, sy, sw, sh = f.scissor
            x0, y0, x1, y1 = max(x0, sx), max(y0, sy), min(x1, sx + sw), min(y1, sy + sh)
        if not scissor_only:
            vx, vy, vw, vh = self.state.viewport
            x0, y0, x1, y1 = max(x0, vx), max(y0, vy), min(x1, vx + vw), min(y1, vy + vh)
        return x0, y0, max(x1, x0), max(y1, y0)

    def _sampler(self, program, stage: str, lane_tile=None):
        """The texture sampler of a stage (None when it samples nothing)."""
        return self._make_sampler(self._texture_units(program, stage), lane_tile)

    def _make_sampler(self, units: dict, lane_tile=None):
        """A sampler over ``units`` (SAMP index -> Texture). Sampling follows Mesa llvmpipe
        (the reference images come from it): see ``texture_sampler.SamplerOptions.llvmpipe``.
        """
        if not units:
            return None  # the stage samples nothing
        from tilesim.render.pipeline.texture_sampler import SamplerOptions, TextureSampler

        caches = None
        if lane_tile is not None:
            # the fragment stage: the pass's caches, tile by tile (tile_caches.py), made by
            # its first textured draw
            caches = self._pass.texture_caches
            if caches is None:
                # one per tile count, emptied for each pass (its memory kept)
                tiles = self._pass_target.tiles_x * self._pass_target.tiles_y
                caches = self._tile_caches_kept.pop(tiles, None)
                if caches is None:
                    caches = TileCaches(tiles)
                else:
                    caches.empty()
                # the most recent few sizes (a trace may draw into many targets)
                self._tile_caches_kept[tiles] = caches
                while len(self._tile_caches_kept) > 4:
                    del self._tile_caches_kept[next(iter(self._tile_caches_kept))]
                self._pass.texture_caches = caches
        sampler = TextureSampler(units, options=SamplerOptions.llvmpipe(),
                                 tile_caches=None if caches is None else caches.table)
        if caches is not None:
            sampler.owner_base = caches.batch()
        sampler.begin(lane_tile)
        return sampler

    def _texture_units(self, program, stage: str) -> dict:
        """SAMP index -> the texture its sampler uniform selects (None: nothing bound)."""
        units = {}
        for samp, (unit, target_name) in uniforms.sampler_units(program, stage).items():
            if not 0 <= unit < self.state.MAX_TEXTURE_UNITS:
                raise self.state.error(f"sampler uniform selects texture unit {unit}, outside "
                                       f"0..{self.state.MAX_TEXTURE_UNITS - 1}")
            ident = self.state.bound_textures[target_name][unit]
            units[samp] = self.state.textures.get(ident)
        return units

    def _count_programs(self, program, vertex_instructions: int) -> None:
        """Keep the draw's program texts (by digest) and its vertex program's instructions in
        the frame's counters, for the per-program shader-core throughput."""
        frame = self.counters
        vertex, fragment = program.digests
        frame.programs.setdefault(vertex, program.vertex_tgsi)
        frame.programs.setdefault(fragment, program.fragment_tgsi)
        frame.vs_programs[vertex] = frame.vs_programs.get(vertex, 0) + int(vertex_instructions)

    def _draw(self, command: Command) -> None:
        state, scalars = self.state, self.counters.scalars
        program = state.current_program()
        target = self._target()
        counters = self._begin_pass(target)
        scalars["draw_calls"] += 1
        mode = command.args["mode"]
        where = state.where

        # Vertex fetch and shading.
        elements, index_bytes = vertex_fetch.draw_elements(state, command)
        scalars["index_bytes"] += index_bytes
        if mode in primitive_assembly.TRIANGLE_MODES:
            prims = primitive_assembly.triangles(mode, elements.size)
        elif mode in primitive_assembly.LINE_MODES:
            prims = primitive_assembly.lines(mode, elements.size)
        else:
            prims = primitive_assembly.points(elements.size)[:, None]
        scalars["prims_assembled"] += len(prims)
        if len(prims) == 0:
            return
        used = elements[: int(prims.max()) + 1]
        fetched = vertex_fetch.fetch(state, program, used)
        scalars["vertices_fetched"] += fetched.ids.size
        scalars["vertices_shaded"] += fetched.ids.size
        scalars["attribute_bytes"] += fetched.attribute_bytes
        scalars["vertex_cache_accesses"] += fetched.cache_accesses
        scalars["vertex_cache_misses"] += fetched.cache_misses
        vs_constants = uniforms.constants(program, "vertex", height=target.height,
                                          depth_range=state.fragment.depth_range)
        shaded = vertex_shading.shade(program, fetched.inputs, vs_constants,
                                      self._sampler(program, "vertex"), where)
        vs_totals = shaded.stats.totals()["lane_instructions"]
        for name in ("alu", "tex", "flow"):
            scalars[f"vs_{name}"] += vs_totals[name]
        self._count_programs(program, sum(vs_totals[n] for n in ("alu", "tex", "flow")))

        # Primitive assembly (points and lines become triangles), clipping, setup.
        f = state.fragment
        vertex_rows, columns = shaded.rows, dict(shaded.columns)
        polygons = mode in primitive_assembly.TRIANGLE_MODES
        if polygons:
            rows = fetched.elements[prims]
        elif mode in primitive_assembly.LINE_MODES:
            vertex_rows, rows = point_line_setup.lines_to_triangles(
                shaded.rows, fetched.elements[prims], state.viewport, f.line_width)
        else:
            vertex_rows, rows = point_line_setup.points_to_triangles(
                shaded.rows, fetched.elements[prims[:, 0]], state.viewport,
                shaded.point_size, self.limits["point_size_max"])
            columns[point_line_setup.POINT_COORD] = vertex_rows.shape[1] - 4
        clipped = clipping.clip_triangles(vertex_rows, rows)
        scalars["prims_clip_rejected"] += clipped.rejected
        scalars["prims_clip_split"] += clipped.split
        # Points and lines are never culled and always face front.
        setup = triangle_setup.setup(
            clipped.vertices, clipped.triangles, clipped.source, viewport=state.viewport,
            depth_range=f.depth_range,
            cull=f.cull_mode if f.cull_face and polygons else None,
            front_face=f.front_face if polygons else "CCW",
            polygon_offset=f.polygon_offset if f.polygon_offset_fill else None,
            depth_bits=target.depth_bits)
        scalars["prims_culled"] += setup.culled
        scalars["prims_degenerate"] += setup.degenerate
        tris = setup.triangles
        if not polygons:
            tris.front[:] = True
        scalars["prims_rasterized"] += len(tris)
        if len(tris) == 0:
            return

        # Binning into per-tile display lists.
        rect = self._rect(target)
        varying_components = vertex_rows.shape[1] - 4
        bins = binning.bin_triangles(tris, rect, target.tile_size, target.tiles_x,
                                     varying_components)
        scalars["pb_record_bytes_written"] += len(tris) * bins.record_bytes
        counters.add_each(bins.tile, {
            "prims_binned": 1, "pb_list_bytes_written": binning.LIST_ENTRY_BYTES,
            "pb_bytes_read": binning.LIST_ENTRY_BYTES + bins.record_bytes})

        draw = DrawContext(
            program=program, fragment=copy.copy(f), target=target, counters=counters,
            clipped=clipped, columns=columns, viewport=tuple(state.viewport), tris=tris,
            bins=bins, rect=rect, vs_constants=vs_constants,
            fs_constants=uniforms.constants(program, "fragment", height=target.height,
                                            depth_range=state.fragment.depth_range),
            texture_units=self._texture_units(program, "fragment"))
        # The techniques see the display lists as the binner writes them (signatures,
        # layers, visibility prediction); EVR may hold entries back for a second list.
        flush = self.techniques.tiles_to_flush(draw)
        if flush is not None:
            self._flush_deferred(flush)
        deferred = self.techniques.binned(draw)
        self._raster_draw(draw, None if deferred is None else ~deferred)
        if deferred is not None and deferred.any():
            self._deferred.append((draw, deferred))

    def _flush_deferred(self, tiles: np.ndarray | None = None) -> None:
        """Rasterize the display-list entries EVR held back (its second lists), in submission
        order: for the tiles in ``tiles`` (a (tiles,) bool mask), or all of them."""
        pending = []
        for draw, deferred in self._deferred:
            now = deferred if tiles is None else deferred & tiles[draw.bins.tile]
            if now.any():
                self._raster_draw(draw, now)
            rest = deferred & ~now
            if rest.any():
                pending.append((draw, rest))
        self._deferred = pending

    def _raster_draw(self, draw: DrawContext, entries: np.ndarray | None) -> None:
        """The raster phase of a draw's display-list entries (``entries``: (B,) bool over
        ``draw.bins``; None: all), tile group by tile group of one sampling rate."""
        if draw.target is not self.default_target or not any(self._rates_used):
            self._raster(draw, draw.tris, 1, entries)
            return
        for rate in self._rates_used:
            in_rate = self.tile_rates[draw.bins.tile] == rate
            if entries is not None:
                in_rate &= entries
            if not in_rate.any():
                continue        # none of the draw's tiles is at this rate
            scale = 1 << rate
            # Superfragments: rasterize in a space shrunk N times, where each pixel center
            # is the center of an N x N block (DSR, Frame Coherence §6.4.1).
            tris = draw.tris if scale == 1 else draw.tris.shrunk(scale)
            self._raster(draw, tris, scale, in_rate)

    def _quads_watcher(self, draw: DrawContext, fragments, early: bool, alive: np.ndarray):
        """``watched(shaded, late, written)``: hands the hooks what the batch's quads did
        (``quad_stages.quad_batch``) for a hook that replays them cycle by cycle; a no-op
        unless a hook ``wants_quads``."""
        hooks = self.techniques
        if not hooks.wants_quads:
            return lambda *_: None
        return lambda shaded, late, written: hooks.quads(draw, quad_stages.quad_batch(
            fragments, early, alive, shaded, late, written, bool(draw.fragment.blend)))

    def _raster(self, draw: DrawContext, tris, scale: int, entries: np.ndarray | None) -> None:
        """The quad stages (``quad_stages``) for ``tris`` of a draw, keeping the fragments of
        the display-list entries ``entries`` (None: all). ``scale`` > 1 rasterizes
        superfragments of scale x scale pixels (DSR), whose color and depth live in the
        block's bottom-left pixel until ``_resolve_superfragments`` replicates them."""
        f, target, counters, program = draw.fragment, draw.target, draw.counters, draw.program
        hooks = self.techniques
        fragments = quad_stages.raster_fragments(draw, tris, scale, entries, self.fill_rule,
                                                 hooks.wants_entries)
        if fragments is None:
            return
        quad_stages.count_rasterized(fragments, counters)
        depth_on = f.depth_test and target.depth is not None
        depth_buffer = target.depth.reshape(-1) if target.depth is not None else None
        early = depth_on and not program.fragment_kills and not program.fragment_writes_depth
        if early:
            if hooks.observes("early_z"):
                idx = fragments.covered_index
                hooks.early_z(draw, fragments.pixel[idx], fragments.depth[idx],
                              fragments.tile[idx])
            alive = quad_stages.early_depth_test(fragments, depth_buffer, f, counters)
        else:
            alive = fragments.covered.copy()

        done = quad_stages.shade(fragments, alive, draw, scale,
                                 lambda tile: self._make_sampler(draw.texture_units, tile),
                                 counters)
        watched = self._quads_watcher(draw, fragments, early, alive)
        if done is None:
            watched(None, None, None)
            return
        shaded, _ = done
        if not early and hooks.observes("late_shaded"):
            hooks.late_shaded(draw, shaded.tile[shaded.alive])
        if shaded.color is not None and hooks.observes("shaded"):
            hooks.shaded(draw, shaded.inputs, shaded.system_values, shaded.color, shaded.tile,
                         shaded.alive)
        # A program without a color output (a depth-only pass) is still depth-tested here.
        late = None
        if depth_on and not early:
            idx = late = self.xp.nonzero(shaded.survivors)[0]
            depth = (fragments.depth[shaded.lanes][idx] if shaded.depth is None else
                     quad_stages.quantize_depth(self.xp.asarray(shaded.depth[idx], dtype=float),
                                                target.depth_max))
            passed = quad_stages.depth_test("late", shaded.pixel[idx], depth,
                                            shaded.tile[idx], depth_buffer, f, counters)
            shaded.survivors[idx[~passed]] = False
        if not target.has_color or shaded.color is None:
            watched(shaded, late, None)
            return  # no color attachment, or no color written: color goes nowhere
        idx = quad_stages.blend(shaded, fragments, target, f, counters)
        watched(shaded, late, idx if any(f.color_mask) else None)
        if any(f.color_mask):
            self._written[shaded.pixel[idx]] = True
        if hooks.observes("written"):
            hooks.written(draw, shaded.pixel[idx], shaded.tile[idx], shaded.color[idx],
                          None if fragments.entry is None else
                          fragments.entry[shaded.lanes][idx], idx)
        target.dirty = True


# == the compiled path (Numba, tilesim.jit): bit-identical to the code above =============

@jit
def _resolve_superfragments(color, depth, written, tiles, rates, tile_size, tiles_x, width,
                            height):  # pragma: no cover - compiled
    for k in range(tiles.shape[0]):
        tile = tiles[k]
        scale = np.int64(1) << np.int64(rates[tile])
        y0, x0 = (tile // tiles_x) * tile_size, (tile % tiles_x) * tile_size
        for y in range(y0, min(y0 + tile_size, height)):
            source_row = (y // scale * scale) * width
            for x in range(x0, min(x0 + tile_size, width)):
                p, s = y * width + x, source_row + x // scale * scale
                if p == s:
                    continue
                for c in range(color.shape[1]):
                    color[p, c] = color[s, c]
                if depth is not None:
                    depth[p] = depth[s]
                if written is not None:
                    written[p] = written[s]


def resolve_superfragments_compiled(color, depth, written, tiles, rates, tile_size: int,
                                    tiles_x: int, width: int, height: int) -> None:
    """``Renderer._resolve_superfragments`` in place, tile by tile: every pixel of the
    ``tiles`` takes the (n, 4) ``color``, (n,) ``depth`` and ``written`` (None: absent) of its
    block's bottom-left pixel, blocks of 2**rates[tile] pixels; the caller makes sure blocks
    lie inside their tile (tile_size a multiple of every block), so a source pixel is never
    written."""
    _resolve_superfragments(color, depth, written, tiles, rates, tile_size, tiles_x, width,
                            height)
