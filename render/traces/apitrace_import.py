"""``tilesim import``: an apitrace capture of a GLES2 program -> a ``.tsim`` command stream.

The capture is read through ``apitrace pickle`` with the restricted unpickler of
:mod:`tilesim.shaders.trace_capture` (a hostile trace gets an error, never code execution), twice:

1. **scan** (:func:`scan_calls`): the GLSL each glLinkProgram linked (with the attribute bindings
   in force, apitrace's "fake" glBindAttribLocation calls included, through
   :class:`~tilesim.shaders.trace_capture.ProgramTracker`), the surface shown (the first window
   surface made current, else the first surface) and its size (the later of apitrace's fake
   glViewport at eglMakeCurrent and the program's eglQuerySurface before the first swap, else
   a pbuffer's attributes), the EGL
   config's depth and stencil sizes, and the frame boundaries (see "Frames" below). Every distinct
   program is then compiled to TGSI in one :func:`tilesim.shaders.glsl_compile.compile_many` call
   (Mesa softpipe is needed here, at import, only).
2. **translate** (:class:`Translator`): every call becomes zero or more commands of
   :mod:`tilesim.render.gl.commands`; frames are written one by one with
   :class:`tilesim.render.traces.trace_file.TraceWriter`
   (atomically: an interrupted import leaves no file).

Frames (``--frame-end``, default ``auto``): a frame ends at each

- ``swap``: eglSwapBuffers (its image is the window framebuffer);
- ``readpixels``: glReadPixels, the observation point of test programs and off-screen renderers
  that never swap. The call becomes a ``readPixels`` command (the rectangle read) before the
  ``endFrame``: the frame's image is that rectangle of the framebuffer bound then, a framebuffer
  object included. A surfaceless program has no window: the trace's window size is then the
  smallest that holds every rectangle read (nothing is drawn into it);
- ``finish``: glFinish, for programs that neither swap nor read; the frame's image is the window
  framebuffer, so a glFinish that ends a frame while a framebuffer object is bound is an error
  (the program shows nothing there; ``readpixels`` is what such programs need).

``auto`` takes ``swap`` when the capture swaps at all, else ``readpixels`` when it reads, else
``finish``. ``tilesim reference`` cuts Mesa's frames at the same calls
(:func:`tilesim.render.traces.capture.reference_frames`), so both sides agree frame by frame.

Translation rules (what makes the stream equal to what the program drew):

- Object names (buffers, textures, framebuffers, renderbuffers, programs) are mapped to trace ids
  per EGL share group, so the names each glmark2 scene context numbers from 1 again never
  collide. Shader objects are not commands: glLinkProgram becomes ``createProgram`` carrying
  the linked sources, their TGSI and interface; a re-link of a linked program becomes
  ``deleteProgram`` + ``createProgram`` with the same id (and ``useProgram`` again when it is
  the current one). glDeleteProgram of the program in use is deferred until it is replaced, as
  GL defers it.
- ``glUniform*`` locations become uniform names through the values glGetUniformLocation
  returned in the capture (per program); a location never returned falls back to the
  program's interface (Mesa's own location table, the same linker made both).
- Client-side vertex arrays: apitrace does not record a glVertexAttribPointer that points into
  user memory; before each draw it writes "fake" glVertexAttribPointer calls whose pointer is a
  blob of the memory the draw reads, which become ``vertexAttribPointer(data=...)``. Client
  index arrays are blobs in glDrawElements and become ``drawElements(indices=...)``.
- Mapped buffers (glMapBufferOES / glMapBufferRangeEXT): apitrace records what the program wrote
  as a fake ``memcpy`` into the mapping before glUnmapBufferOES; it becomes ``bufferSubData``.
- A second EGL context made current (glmark2 makes one per scene) starts from GL's default
  state: the importer emits commands that put back every piece of state the stream changed,
  and deletes the objects of share groups whose contexts were destroyed. A context made
  current again (a loader context and a draw context switching every frame) gets its own
  state back from a shadow of the commands that set it; objects stay shared per group.
  Only the shown surface's eglSwapBuffers end frames; draws into another surface's default
  framebuffer (a loader's pbuffer) cannot be shown and are skipped.
- Calls that cannot change the image (glGet*, glGetError, glIs*, glCheckFramebufferStatus,
  glReadPixels that end no frame, queries, debug markers and labels, egl* other than
  eglSwapBuffers, ...) are skipped and counted per name; calls that only feed the translation
  (shader objects,
  glGetUniformLocation, eglMakeCurrent, glMapBuffer, ...) are counted as "folded". Any other
  call, or an enumerant the command schema lacks, is an :class:`~tilesim.errors.InputError`
  naming the trace file, the call number and the call.

The counts go into the manifest's ``source`` dict and the printed summary.

Malformed and truncated captures. Every record of the call stream is checked where
it is read (:func:`tilesim.shaders.trace_capture.read_calls`, which the corpus capture uses
too): a ``(number, name, [(argument, value)...], return value, flags)`` tuple with a
non-negative call number, an identifier for a name, flags that fit 32 bits, and values of the
plain types apitrace writes (integers within 64 bits, floats, byte strings, lists, tuples,
dicts, at most 32 deep). Each argument is then read through a typed accessor
(:class:`~tilesim.shaders.trace_capture.CallArgs`) that checks its type and the range of its
GL type (GLsizei, GLint, GLuint...). A record that fails either check is an
:class:`~tilesim.errors.InputError`, one line naming the file, the call number (or, before one
is known, the record's place in the stream) and the argument. What the import could not keep
is said as warnings (:attr:`ImportSummary.warnings`, and one ``tilesim: warning:`` line each
on stderr): apitrace's own (``unexpected end of file`` of a cut capture), a pickle stream cut
inside a record, and a capture that ends mid-frame (calls after the last frame end that draw
or clear, or any when the capture was cut), with the number of calls dropped. A capture of no
calls at all (an
empty file) is an error saying so.
"""

from __future__ import annotations

import os
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from tilesim.atomic import check_output
from tilesim.errors import InputError
from tilesim.render.gl.commands import (
    ATTACHMENTS,
    ATTRIB_TYPES,
    BLEND_EQUATIONS,
    BLEND_FACTORS,
    BUFFER_TARGETS,
    BUFFER_USAGES,
    CAPABILITIES,
    COMPARE_FUNCS,
    COMPRESSED_TEXTURE_FORMATS,
    DEPTH_TEXEL_TYPES,
    DEPTH_TEXTURE_FORMATS,
    DUAL_SOURCE_FACTORS,
    FACES,
    FILTERS,
    FLOAT_TEXTURE_PARAMETERS,
    FRAME_END,
    HINT_MODES,
    HINT_TARGETS,
    IMAGE_TARGETS,
    INDEX_TYPES,
    PIXEL_STORE,
    PRIMITIVE_MODES,
    RENDERBUFFER_FORMATS,
    STENCIL_OPS,
    TEXEL_TYPES,
    TEXTURE_FORMATS,
    TEXTURE_PARAMETERS,
    TEXTURE_TARGETS,
    UNPACK_SUBIMAGE,
    WINDINGS,
    WRAPS,
    Command,
    enum_name,
    make_command,
)
from tilesim.render.gl.extensions import extensions_used, unoffered_warning
from tilesim.shaders.trace_capture import (
    ANY_INT,
    GLINT,
    GLINTPTR,
    GLSIZEI,
    GLUINT,
    MASK,
    POINTER,
    REQUIRED,
    Call,
    CallArgs,
    LinkedProgram,
    ProgramTracker,
    StreamNotes,
    apitrace_calls,
    read_calls,
    show,
)

GL_TEXTURE0 = 0x84C0
GL_FRAMEBUFFER = 0x8D40
GL_RENDERBUFFER = 0x8D41
EGL_DEPTH_SIZE = 0x3025
EGL_STENCIL_SIZE = 0x3026
EGL_HEIGHT = 0x3056
EGL_WIDTH = 0x3057
EGL_NONE = 0x3038
CALL_FLAG_FAKE = 1
# glBlendFunc* factors: ES 2.0's and EXT_blend_func_extended's SRC1_* ones.
_FACTORS = BLEND_FACTORS + DUAL_SOURCE_FACTORS
MAX_TEXTURE_UNITS = 32
MAX_VERTEX_ATTRIBS = 32
# Limits a program queries whose answers change what replays (glGetIntegerv / glGetFloatv):
# pname -> the trace manifest's limits entry (render/traces/TRACE_FORMAT.md) and which
# component of the answer it is.
GL_MAX_COMBINED_TEXTURE_IMAGE_UNITS = 0x8B4D
GL_ALIASED_POINT_SIZE_RANGE = 0x846E
GL_MAX_VIEWPORT_DIMS = 0x0D3A
GL_MAX_RENDERBUFFER_SIZE = 0x84E8
QUERIED_LIMITS = {GL_MAX_COMBINED_TEXTURE_IMAGE_UNITS: ("texture_units", 0),
                  GL_ALIASED_POINT_SIZE_RANGE: ("point_size_max", 1),
                  GL_MAX_VIEWPORT_DIMS: (("viewport_max_width", 0), ("viewport_max_height", 1)),
                  GL_MAX_RENDERBUFFER_SIZE: ("renderbuffer_size_max", 0)}
LIMIT_GETTERS = ("glGetIntegerv", "glGetFloatv")

CLEAR_BITS = ((0x4000, "COLOR_BUFFER_BIT"), (0x100, "DEPTH_BUFFER_BIT"),
              (0x400, "STENCIL_BUFFER_BIT"))
UNIFORM_SHAPES = {f"glUniform{n}{t}": f"{n}{t}" for n in "1234" for t in "fi"}
UNIFORM_VECTOR_SHAPES = {f"glUniform{n}{t}v": f"{n}{t}" for n in "1234" for t in "fi"}
UNIFORM_MATRIX_SHAPES = {f"glUniformMatrix{n}fv": f"Matrix{n}f" for n in "234"}
UNIFORM_COMPONENTS = {"1f": 1, "2f": 2, "3f": 3, "4f": 4, "1i": 1, "2i": 2, "3i": 3, "4i": 4,
                      "Matrix2f": 4, "Matrix3f": 9, "Matrix4f": 16}

# Calls that cannot change what is drawn: skipped and counted. Names matched exactly, then by
# prefix (all glGet*/glIs*/egl* except those the translator handles).
SKIPPED_CALLS = frozenset({
    "glGetError", "glCheckFramebufferStatus", "glReadPixels", "glValidateProgram",
    "glReleaseShaderCompiler", "glShaderBinary", "glSampleCoverage", "glDiscardFramebufferEXT",
    "glInvalidateFramebuffer",
    "glGenQueriesEXT", "glDeleteQueriesEXT", "glBeginQueryEXT", "glEndQueryEXT",
    "glQueryCounterEXT", "glGenQueries", "glDeleteQueries", "glBeginQuery", "glEndQuery",
    "glPushGroupMarkerEXT", "glPopGroupMarkerEXT", "glInsertEventMarkerEXT",
    "glPushDebugGroup", "glPopDebugGroup", "glPushDebugGroupKHR", "glPopDebugGroupKHR",
    "glDebugMessageInsert", "glDebugMessageInsertKHR", "glDebugMessageControl",
    "glDebugMessageControlKHR", "glDebugMessageCallback", "glDebugMessageCallbackKHR",
    "glObjectLabel", "glObjectLabelKHR", "glObjectPtrLabel", "glObjectPtrLabelKHR",
    "glLabelObjectEXT", "glStringMarkerGREMEDY", "glFrameTerminatorGREMEDY",
})
SKIPPED_PREFIXES = ("glGet", "glIs", "egl")
# Calls that produce no command of their own; their effect is carried by other commands.
FOLDED_CALLS = frozenset({
    "glCreateShader", "glShaderSource", "glCompileShader", "glAttachShader", "glDetachShader",
    "glDeleteShader", "glBindAttribLocation", "glCreateProgram", "glGetUniformLocation",
    "glMapBufferOES", "glMapBufferRangeEXT", "glMapBufferRange", "glUnmapBufferOES",
    "glUnmapBuffer", "glFlushMappedBufferRangeEXT", "glFlushMappedBufferRange",
    "eglCreateContext", "eglMakeCurrent", "eglDestroyContext",
    "eglCreateWindowSurface", "eglCreatePbufferSurface", "eglCreatePlatformWindowSurface",
    "eglCreatePlatformWindowSurfaceEXT",
})
FRAME_END_SWAPS = ("eglSwapBuffers", "eglSwapBuffersWithDamageKHR", "eglSwapBuffersWithDamageEXT")
# --frame-end choices -> the call that ends a frame (as the manifest's source records it)
FRAME_END_CHOICES = ("auto", "swap", "readpixels", "finish")
FRAME_END_NAMES = {"swap": "eglSwapBuffers", "readpixels": "glReadPixels", "finish": "glFinish"}
_FRAME_END_KIND = {**{name: "swap" for name in FRAME_END_SWAPS}, "glReadPixels": "readpixels",
                   "glFinish": "finish"}


def skip_kind(name: str) -> str | None:
    """'skipped' (cannot change the image), 'folded' (no command of its own) or None."""
    if name in FOLDED_CALLS:
        return "folded"
    if name in FRAME_END_SWAPS:
        return None
    if name in SKIPPED_CALLS or name.startswith(SKIPPED_PREFIXES):
        return "skipped"
    return None


DRAW_CALLS = frozenset({"glDrawArrays", "glDrawElements", "glClear"})
OFF_SURFACE_READS = frozenset({"glCopyTexImage2D", "glCopyTexSubImage2D",
                               "glCopyTexSubImage3DOES", "glCopyTexSubImage3D"})


# --- pass 1: scan ----------------------------------------------------------------------------


@dataclass(frozen=True)
class FrameEnd:
    """A call that ends a frame: its number and name, the rectangle a glReadPixels reads
    (x, y, width, height; None for other calls) and the application framebuffer bound when
    it was made (0: the window)."""

    call: int
    name: str
    rect: tuple[int, int, int, int] | None
    framebuffer: int


@dataclass
class ScanResult:
    """What the first pass learned about a capture (see the module docstring)."""

    links: dict[int, LinkedProgram] = field(default_factory=dict)  # by glLinkProgram call no.
    width: int | None = None
    height: int | None = None
    egl_depth_size: int | None = None
    egl_stencil_size: int | None = None
    frame_end: str = "eglSwapBuffers"  # or "glReadPixels", "glFinish"
    frames: int = 0                    # frames found (up to the limit asked for)
    calls: int = 0                     # calls read
    ends: list[FrameEnd] = field(default_factory=list)  # the call ending each frame
    surfaceless: bool = False          # no EGL surface was ever made current (no window)
    main_surface: int | None = None    # the surface shown: its swaps end frames
    size_call: int | None = None       # the call that told width x height
    # calls after the last frame end (0 when a frame limit cut the scan), and how many of
    # them draw or clear: a capture that ends mid-frame
    trailing_calls: int = 0
    trailing_draws: int = 0
    warnings: list[str] = field(default_factory=list)  # see capture_warnings
    # GLES2 limits the program queried (QUERIED_LIMITS): entry -> (value, the call that told)
    limits: dict[str, tuple[float, int]] = field(default_factory=dict)

    @property
    def texture_units(self) -> int:
        """How many units glActiveTexture may select: what the program queried, at least the
        MAX_TEXTURE_UNITS the importer always accepts."""
        return max(MAX_TEXTURE_UNITS, int(self.limits.get("texture_units", (0, 0))[0]))

    @property
    def depth_bits(self) -> int:
        """The window's depth bits in tilesim terms (0, 16 or 24; 24 where unknown or 32)."""
        size = 24 if self.egl_depth_size is None else self.egl_depth_size
        return 0 if size == 0 else 16 if size <= 16 else 24

    @property
    def stencil_bits(self) -> int:
        return 8 if (self.egl_stencil_size or 0) > 0 else 0


def _attrib_list(args: CallArgs, key: str) -> dict[int, int]:
    """An EGL attribute list (name, value, ..., EGL_NONE) as a dict."""
    values = args.ints(key, ANY_INT) or []
    out: dict[int, int] = {}
    for i in range(0, len(values) - 1, 2):
        if values[i] == EGL_NONE:
            break
        out[values[i]] = values[i + 1]
    return out


def _out_value(args: CallArgs, key: str) -> int | None:
    """An output argument apitrace recorded as [value] (or a bare value; None: unknown)."""
    values = args.ints(key, ANY_INT)
    return values[0] if values else None


def scan_calls(calls: Iterable[Call], source: str, frame_limit: int | None = None,
               frame_end: str = "auto") -> ScanResult:
    """Pass 1 over ``calls``: linked programs, window size, EGL config, frame boundaries
    (``frame_end``: one of FRAME_END_CHOICES; the first ``frame_limit`` frames)."""
    if frame_end not in FRAME_END_CHOICES:
        raise InputError(f"--frame-end {frame_end!r}: expected one of "
                         f"{', '.join(FRAME_END_CHOICES)}", source=source)
    result = ScanResult()
    tracker = ProgramTracker(source)
    config_attribs: dict[int, dict[int, int]] = {}
    chosen_with: dict[int, dict[int, int]] = {}
    surfaces: dict[int, int] = {}               # surface -> config
    pbuffer_size: dict[int, tuple[int, int, int]] = {}   # surface -> width, height, call
    queried: dict[tuple[int, int], tuple[int, int]] = {}  # (surface, attribute) -> value, call
    window_surfaces: set[int] = set()
    fake_viewport: dict[int, tuple[int, int, int]] = {}  # surface -> width, height, call
    draw = main_surface = None
    ends: dict[str, list[FrameEnd]] = {kind: [] for kind in FRAME_END_NAMES}
    since_end = {kind: [0, 0] for kind in FRAME_END_NAMES}  # calls, draws after the last end
    context = 0
    bound: dict[int, int] = {}               # context -> application framebuffer bound
    for call in calls:
        result.calls += 1
        name = call.name
        args = CallArgs(call, source)
        for counts in since_end.values():
            counts[0] += 1
            counts[1] += name in DRAW_CALLS
        linked = tracker.follow(call)
        if linked is not None:
            result.links[linked.call] = linked
        kind = _FRAME_END_KIND.get(name)
        if kind == "swap" and main_surface not in (None, args.handle("surface")):
            kind = None  # a swap of a surface not shown (a loader's pbuffer) ends nothing
        if kind is not None:
            rect = None
            if kind == "readpixels":
                rect = (args.int("x", limits=GLINT), args.int("y", limits=GLINT),
                        args.int("width", limits=GLINT), args.int("height", limits=GLINT))
            ends[kind].append(FrameEnd(call.number, name, rect, bound.get(context, 0)))
            since_end[kind] = [0, 0]
            # a swap decides "auto" at once; reads and finishes only once no swap can follow
            if frame_limit is not None and len(ends[kind]) >= frame_limit and \
                    (frame_end == kind or (frame_end == "auto" and kind == "swap")):
                break
        elif name == "glBindFramebuffer":
            bound[context] = args.handle("framebuffer")
        elif name == "eglChooseConfig":
            requested = _attrib_list(args, "attrib_list")
            for config in args.ints("configs", POINTER) or []:
                chosen_with[config] = requested
        elif name == "eglGetConfigAttrib":
            value = _out_value(args, "value")
            if value is not None:
                config_attribs.setdefault(args.handle("config"), {})[
                    args.int("attribute", 0)] = value
        elif name in ("eglCreateWindowSurface", "eglCreatePlatformWindowSurface",
                      "eglCreatePlatformWindowSurfaceEXT", "eglCreatePbufferSurface"):
            surfaces[args.ret_handle()] = args.handle("config")
            if name != "eglCreatePbufferSurface":
                window_surfaces.add(args.ret_handle())
            if name == "eglCreatePbufferSurface":
                attribs = _attrib_list(args, "attrib_list")
                pbuffer_size[args.ret_handle()] = (attribs.get(EGL_WIDTH, 0),
                                                   attribs.get(EGL_HEIGHT, 0), call.number)
        elif name == "eglMakeCurrent":
            context = args.handle("ctx")
            draw = args.handle("draw") or None
            # the surface shown: the first window surface made current, else the first
            # surface; a window made current after a pbuffer takes over before any swap
            if draw is not None and (main_surface is None or (
                    draw in window_surfaces and main_surface not in window_surfaces
                    and not ends["swap"])):
                main_surface = draw
        elif name == "eglQuerySurface":
            value = _out_value(args, "value")
            if value is not None and not ends["swap"]:
                queried[(args.handle("surface"), args.int("attribute", 0))] = (value,
                                                                              call.number)
        elif name in LIMIT_GETTERS:
            _scan_limit(args, result.limits, call.number)
        elif name == "glViewport" and call.flags & CALL_FLAG_FAKE and draw is not None \
                and not ends["swap"]:
            fake_viewport[draw] = (args.int("width", 0, limits=GLINT),
                                   args.int("height", 0, limits=GLINT), call.number)
    if frame_end == "auto":
        frame_end = next((kind for kind in ("swap", "readpixels") if ends[kind]), "finish")
    result.frame_end = FRAME_END_NAMES[frame_end]
    if ends[frame_end] and (frame_limit is None or len(ends[frame_end]) < frame_limit):
        result.trailing_calls, result.trailing_draws = since_end[frame_end]
    result.ends = ends[frame_end][:frame_limit]
    result.frames = len(result.ends)
    if result.ends:  # programs linked after the last frame are never used
        last = result.ends[-1].call
        result.links = {number: linked for number, linked in result.links.items()
                        if number < last}
    result.surfaceless = main_surface is None
    result.main_surface = main_surface
    if main_surface is not None:
        # the window's size as the capture last told it before the first swap: apitrace's
        # fake glViewport at eglMakeCurrent (the drawable's size then) or the program's
        # eglQuerySurface (EGL 1.4 §3.5.6), whichever came later (a window resized after
        # it was made current), else the pbuffer's attributes
        size = fake_viewport.get(main_surface)
        if (main_surface, EGL_WIDTH) in queried:
            width, told = queried[(main_surface, EGL_WIDTH)]
            if size is None or told > size[2]:
                size = (width, queried.get((main_surface, EGL_HEIGHT), (0, told))[0], told)
        if size is None:
            size = pbuffer_size.get(main_surface)
        if size is not None and size[0] > 0 and size[1] > 0:
            result.width, result.height, result.size_call = size
        config = surfaces.get(main_surface)
        if config is not None:
            known = config_attribs.get(config, {})
            asked = chosen_with.get(config, {})
            if EGL_DEPTH_SIZE in known:
                result.egl_depth_size = known[EGL_DEPTH_SIZE]
            elif EGL_DEPTH_SIZE in asked:
                result.egl_depth_size = 24 if asked[EGL_DEPTH_SIZE] > 0 else 0
            if EGL_STENCIL_SIZE in known:
                result.egl_stencil_size = known[EGL_STENCIL_SIZE]
            elif EGL_STENCIL_SIZE in asked:
                result.egl_stencil_size = 8 if asked[EGL_STENCIL_SIZE] > 0 else 0
    return result


def _scan_limit(args: CallArgs, limits: dict, number: int) -> None:
    """Keep the answer of a glGetIntegerv / glGetFloatv of a QUERIED_LIMITS pname (apitrace
    records the output array as ``params``); other queries and unrecorded answers are left."""
    entry = QUERIED_LIMITS.get(args.int("pname", 0, limits=GLUINT))
    values = args.get("params", None)
    if entry is None or not isinstance(values, (list, tuple)):
        return
    for key, component in entry if isinstance(entry[0], tuple) else (entry,):
        if component < len(values) and isinstance(values[component], (int, float)) \
                and not isinstance(values[component], bool) and \
                1 <= values[component] <= 65536:
            limits[key] = (values[component], number)


def capture_warnings(scan: ScanResult, notes: StreamNotes) -> list[str]:
    """The warnings of an import: what reading the stream met (apitrace's messages, a cut
    pickle stream), then a capture that ends mid-frame: calls after the last frame end that
    draw or clear, or any calls there when the capture was cut."""
    warnings = list(notes.warnings)
    if scan.frames and scan.trailing_calls and (scan.trailing_draws or notes.truncated):
        why = (f"{scan.trailing_draws} of them draw or clear" if scan.trailing_draws
               else "the capture is cut")
        warnings.append(f"capture ends mid-frame: {scan.trailing_calls} call(s) after frame "
                        f"{scan.frames - 1} dropped ({why}, with no {scan.frame_end} after "
                        "them)")
    return warnings


def check_frame_ends(scan: ScanResult, source: str, frame_end: str = "auto",
                     notes: StreamNotes | None = None) -> None:
    """InputError when the capture holds no call at all, or no frame ending at
    ``frame_end`` (saying when the capture was cut: ``notes``), or (naming the call) for a
    frame end with no image to compare: a glReadPixels of no pixels, a glFinish while a
    framebuffer object is bound."""
    remarks = "".join(f"; {w}" for w in (notes.warnings if notes else []))
    if not scan.calls:
        raise InputError("the capture holds no calls (an empty or cut file, or not an "
                         f"apitrace capture){remarks}", source=source)
    if not scan.ends:
        raise InputError("the capture holds no complete frame (no " + {
            "auto": "eglSwapBuffers, glReadPixels or glFinish",
            "swap": "eglSwapBuffers", "readpixels": "glReadPixels",
            "finish": "glFinish"}[frame_end] + f" to end one) in its {scan.calls} call(s)"
            + remarks, source=source)
    for index, end in enumerate(scan.ends):
        where = f"{source}: call {end.call}"
        if end.rect is not None and (end.rect[2] < 1 or end.rect[3] < 1 or end.rect[0] < 0
                                     or end.rect[1] < 0):
            raise InputError(f"{end.name} ends frame {index} but reads the {end.rect[2]}x"
                             f"{end.rect[3]} rectangle at ({end.rect[0]}, {end.rect[1]}), "
                             "which cannot be a frame's image (it needs x, y >= 0 and a width "
                             "and height of at least 1)", source=where)
        if end.name == "glFinish" and end.framebuffer:
            raise InputError(f"glFinish ends frame {index} while framebuffer {end.framebuffer} "
                             "is bound: a frame that ends at glFinish shows the window "
                             "framebuffer, which this program does not draw here; end its "
                             "frames at the glReadPixels that read its result (--frame-end "
                             "readpixels)", source=where)


# --- programs --------------------------------------------------------------------------------

Compiler = Callable[[list], list]


def compile_links(links: dict[int, LinkedProgram], source: str,
                  compiler: Compiler | None = None) -> dict[int, object]:
    """Compile every distinct linked program once: glLinkProgram call number -> compiled
    program (``tilesim.shaders.glsl_compile.CompiledProgram``: vertex_tgsi, fragment_tgsi,
    interface). ``compiler`` defaults to :func:`tilesim.shaders.glsl_compile.compile_many`."""
    from tilesim.shaders.glsl_compile import ProgramSource

    if compiler is None:
        from tilesim.shaders.glsl_compile import compile_many as compiler
    distinct: dict[tuple, list[int]] = {}
    for number, linked in sorted(links.items()):
        key = (linked.vertex, linked.fragment, tuple(sorted(linked.attrib_bindings.items())))
        distinct.setdefault(key, []).append(number)
    sources = []
    for key, numbers in distinct.items():
        linked = links[numbers[0]]
        label = f"{source}: program {linked.program} (glLinkProgram call {linked.call})"
        sources.append(ProgramSource(key[0], key[1], name=label,
                                     attrib_bindings=dict(key[2]),
                                     vertex_origin=f"{label}, vertex shader",
                                     fragment_origin=f"{label}, fragment shader",
                                     program_origin=label))
    compiled = compiler(sources) if sources else []
    out: dict[int, object] = {}
    for numbers, program in zip(distinct.values(), compiled, strict=True):
        for number in numbers:
            out[number] = program
    return out


# --- pass 2: translate -----------------------------------------------------------------------


@dataclass
class _Mapping:
    """A mapped range of a buffer: ``pointer`` in the program is byte ``offset`` of it."""

    buffer: int   # trace id
    target: str
    pointer: int
    offset: int
    length: int


@dataclass
class _Group:
    """Objects of one EGL share group: application names -> trace ids, and what is known."""

    names: dict[str, dict[int, int]] = field(default_factory=lambda: {
        k: {} for k in ("buffer", "texture", "framebuffer", "renderbuffer", "program",
                        "vertex_array")})
    linked: dict[int, int] = field(default_factory=dict)       # app program -> link call
    uniform_names: dict[int, dict[int, str]] = field(default_factory=dict)
    buffer_sizes: dict[int, int] = field(default_factory=dict)  # trace id -> bytes
    mappings: dict[int, _Mapping] = field(default_factory=dict)  # trace id -> mapping
    contexts: set[int] = field(default_factory=set)             # live contexts of the group


class Translator:
    """Pass 2: turns calls into frames of commands (see the module docstring).

    ``feed(call)`` returns a finished frame (a list of commands ending with ``endFrame``) or
    None. ``scan`` and ``programs`` come from :func:`scan_calls` and :func:`compile_links`.
    """

    def __init__(self, scan: ScanResult, programs: dict[int, object], *, source: str,
                 width: int, height: int):
        self.scan, self.programs, self.source = scan, programs, source
        self.width, self.height = width, height
        self.frame: list[Command] = []
        self.frames_done = 0
        self.translated: Counter[str] = Counter()
        self.skipped: Counter[str] = Counter()
        self.folded: Counter[str] = Counter()
        self._next_id = {k: 1 for k in ("buffer", "texture", "framebuffer", "renderbuffer",
                                        "program", "vertex_array")}
        self._groups: dict[int, _Group] = {}
        self._share_root: dict[int, int] = {}
        self._destroyed: set[int] = set()
        self._used_contexts: set[int] = set()
        self._owner: int | None = None   # the context whose GL state the stream now holds
        self._surface: int | None = None  # the EGL surface drawn to (the window)
        self._current_draw: int | None = None  # the surface of the current context
        # the current context's state shadow (_remember), and each context made current
        # before: its shadow and the translator's bookkeeping of its bindings
        self._shadow: dict[tuple, tuple[str, dict]] = {}
        self._saved: dict[int, tuple[dict, dict]] = {}
        self._group_key = 0
        self._groups[0] = _Group()
        self._reset_bindings()
        self._call: Call | None = None
        self._produced = False

    # -- plumbing ---------------------------------------------------------------------------

    def _reset_bindings(self) -> None:
        self._array_buffer = 0        # trace ids
        self._element_buffer = 0
        self._program = 0             # application name of the program in use
        self._pending_delete: set[int] = set()  # app programs deleted while in use
        self._attrib_state: dict[int, str] = {}  # index -> 'buffer' | 'client' | 'unknown'
        self._attrib_enabled: set[int] = set()
        # OES_vertex_array_object: the bound object (trace id, 0 the default) and what the
        # others hold of the three above (element buffer, attribute states, enabled set)
        self._vertex_array = 0
        self._vertex_arrays: dict[int, tuple[int, dict[int, str], set[int]]] = {}
        self._dirty: set[tuple] = set()
        self._units: set[int] = set()
        self._bound_3d = False   # a TEXTURE_3D_OES binding was made (OES_texture_3D)

    @property
    def _group(self) -> _Group:
        return self._groups[self._group_key]

    def _where(self) -> str:
        call = self._call
        return f"{self.source}: call {call.number}" if call else self.source

    def _error(self, message: str) -> InputError:
        name = self._call.name if self._call else "?"
        return InputError(f"{name}: {message}", source=self._where())

    @property
    def _args(self) -> CallArgs:
        return CallArgs(self._call, self.source)

    def _emit(self, op: str, **args) -> None:
        command = make_command(op, args, self._where())
        self.frame.append(command)
        self._produced = True
        self._mark_dirty(command)

    def _enum(self, value, choices: tuple[str, ...], what: str) -> str:
        if isinstance(value, bool) or not isinstance(value, int):
            raise self._error(f"{what} must be a GL enumerant, got {show(value)}")
        if not GLUINT[0] <= value <= GLUINT[1]:
            raise self._error(f"{what} {show(value)} is not a GL enumerant (32 bits)")
        try:
            name = enum_name(int(value), self._where(), choices)
        except InputError:
            name = None
        if name not in choices:
            raise self._error(f"{what} 0x{int(value):04X} is not supported (expected one of "
                              f"{', '.join(choices)})")
        return name

    def _arg(self, key: str, default=REQUIRED):
        """An argument's value; InputError naming it when it is missing (no default)."""
        return self._args.get(key, default)

    def _int(self, key: str, default=REQUIRED, limits: tuple[int, int] = GLINT) -> int:
        """An integer argument within its GL type's ``limits`` (GLINT by default; GLSIZEI
        for sizes and counts, GLUINT for names and masks, ...)."""
        return self._args.int(key, default, limits=limits)

    def _size(self, key: str) -> int:
        """A GLsizei: a size or count, 0..2^31-1 (GL refuses a negative one)."""
        return self._args.int(key, limits=GLSIZEI)

    def _name(self, key: str) -> int:
        """A GLuint object name."""
        return self._args.int(key, limits=GLUINT)

    def _bool(self, key: str) -> bool:
        """A GLboolean."""
        return bool(self._args.int(key, limits=GLUINT))

    def _float(self, key: str) -> float:
        return self._args.float(key)

    def _blob(self, value, what: str, *, required: bool) -> np.ndarray | None:
        """Recorded memory as flat uint8; None for NULL; an error for unrecorded pointers."""
        if isinstance(value, (bytes, bytearray)):
            return np.frombuffer(bytes(value), dtype=np.uint8).copy()
        if isinstance(value, int) and not isinstance(value, bool) and value == 0:
            if required:
                raise self._error(f"{what} is NULL")
            return None
        raise self._error(f"{what} points to memory apitrace did not record "
                          f"({show(value)}); the import needs the data itself")

    # -- driving ----------------------------------------------------------------------------

    def feed(self, call: Call) -> list[Command] | None:
        """Translate one call; returns the frame it finished, if any."""
        self._call = call
        self._produced = False
        name = call.name
        # only calls have handlers: a record named after a helper ("error", "emit") is not one
        handler = getattr(self, "_" + name, None) if name.startswith(("gl", "egl")) or \
            name == "memcpy" else None
        kind = skip_kind(name)
        if handler is None and kind is None:
            raise InputError(f"{name} is not supported by the importer and may change the "
                             "image", source=self._where())
        if name in DRAW_CALLS | OFF_SURFACE_READS and self._off_surface(name):
            self.skipped[f"{name} (another EGL surface)"] += 1
            return None
        if handler is not None:
            try:
                finished = handler(call)
            except (KeyError, TypeError, ValueError, IndexError, OverflowError,
                    AttributeError) as exc:
                # a net under the typed accessors, which should leave nothing to catch here
                raise self._error(f"malformed call ({type(exc).__name__}: "
                                  f"{str(exc)[:120]})") from None
        else:
            finished = None
        if self._produced or finished is not None:
            self.translated[name] += 1
        elif kind == "skipped":
            self.skipped[name] += 1
        else:
            self.folded[name] += 1
        return finished

    def _off_surface(self, name: str) -> bool:
        """Whether call ``name`` draws into (or copies from) the default framebuffer of an EGL
        surface other than the one shown (a loader context's pbuffer). tilesim traces have
        one window framebuffer: such draws cannot change what is shown and are skipped; a
        copy from there into a texture would need that surface's image and is an error."""
        main, draw = self.scan.main_surface, self._current_draw
        framebuffer = self._shadow.get(("bindFramebuffer",), ("", {"id": 0}))[1]["id"]
        if main is None or draw is None or draw == main or framebuffer:
            return False
        if name in OFF_SURFACE_READS:
            raise self._error(f"copies from EGL surface {show(draw)}, not the surface shown "
                              f"({show(main)}): tilesim traces have one window framebuffer")
        return True

    def _end_frame(self) -> list[Command]:
        self._emit(FRAME_END)
        frame, self.frame = self.frame, []
        self.frames_done += 1
        return frame

    # -- state reset when a new context is made current -------------------------------------

    def _mark_dirty(self, command: Command) -> None:
        op, a = command.op, command.args
        self._remember(op, a)
        if op in ("enable", "disable"):
            self._dirty.add(("cap", a["cap"]))
        elif op == "bindTexture":
            self._dirty.add(("texture",))
        elif op in ("enableVertexAttribArray", "disableVertexAttribArray"):
            self._dirty.add(("attribArray", a["index"]))
        elif op == "vertexAttrib":
            self._dirty.add(("vertexAttrib", a["index"]))
        elif op == "hint":
            self._dirty.add(("hint", a["target"]))
        elif op == "pixelStorei":
            self._dirty.add(("pixelStorei", a["pname"]))
        elif op in _DEFAULT_STATE or op in ("activeTexture", "useProgram", "bindBuffer",
                                             "bindFramebuffer", "bindRenderbuffer"):
            self._dirty.add((op,))

    def _remember(self, op: str, a: dict) -> None:
        """Keep ``op`` in the current context's state shadow (:attr:`_shadow`): per piece of
        context state (EGL 1.4 §3.7: each context has its own; objects are the share group's),
        the latest command that set it, so that :meth:`_restore_state` can put the context
        back when the program makes it current again. Vertex-array state is kept only while
        the default vertex array object is bound (a bound object keeps its own, and the
        stream's object keeps it across the switch); a pointer is kept with the
        ARRAY_BUFFER it was read from (GLES 2.0 §2.9.1)."""
        shadow = self._shadow
        vao = shadow.get(("bindVertexArray",), ("", {"id": 0}))[1]["id"]
        if op in ("enable", "disable"):
            shadow[("cap", a["cap"])] = (op, a)
        elif op == "activeTexture":
            shadow[(op,)] = (op, a)
        elif op == "bindTexture":
            unit = shadow.get(("activeTexture",), ("", {"unit": 0}))[1]["unit"]
            shadow[("texture", unit, a["target"])] = (op, a)
        elif op == "bindBuffer":
            if a["target"] != "ELEMENT_ARRAY_BUFFER" or vao == 0:
                shadow[(op, a["target"])] = (op, a)
        elif op in ("enableVertexAttribArray", "disableVertexAttribArray"):
            if vao == 0:
                shadow[("attribArray", a["index"])] = (op, a)
        elif op == "vertexAttribPointer":
            if vao == 0:
                array = shadow.get(("bindBuffer", "ARRAY_BUFFER"), ("", {"id": 0}))[1]["id"]
                shadow[("attribPointer", a["index"])] = (op, {**a, "_buffer": array})
        elif op in ("vertexAttrib", "hint", "pixelStorei"):
            shadow[(op, a.get("index", a.get("target", a.get("pname"))))] = (op, a)
        elif op in ("stencilFuncSeparate", "stencilOpSeparate", "stencilMaskSeparate"):
            faces = ("FRONT", "BACK") if a["face"] == "FRONT_AND_BACK" else (a["face"],)
            for face in faces:
                shadow[(op, face)] = (op, {**a, "face": face})
        elif op in _DEFAULT_STATE or op in ("useProgram", "bindFramebuffer",
                                             "bindRenderbuffer", "bindVertexArray"):
            shadow[(op,)] = (op, a)
        elif op in _UNBINDS:
            # deleting a bound object unbinds it (ES 2.0 §2.9, §3.8.12, §4.4); other contexts
            # would keep the orphan bound, which the stream's one state cannot: theirs revert
            # to 0 as well
            binds = _UNBINDS[op]
            for held in [shadow] + [saved for saved, _ in self._saved.values()]:
                for key, (bound_op, bound) in list(held.items()):
                    if (bound_op == binds and bound["id"] == a["id"]) or (
                            op == "deleteBuffer" and bound.get("_buffer") == a["id"]):
                        del held[key]

    def _restore_state(self, shadow: dict) -> None:
        """Commands that make the GL state (just reset to its initial values) the context's
        whose shadow ``shadow`` is: the default vertex array object's arrays first (each
        pointer with its ARRAY_BUFFER bound), then buffer bindings, the vertex array object,
        every unit's textures, and the rest."""
        rest = dict(shadow)
        pointers = sorted(k for k in rest if k[0] == "attribPointer")
        for key in pointers:
            op, a = rest.pop(key)
            a = dict(a)
            self._emit("bindBuffer", target="ARRAY_BUFFER", id=a.pop("_buffer"))
            self._emit(op, **a)
        buffers = {k: rest.pop(k) for k in sorted(k for k in list(rest) if k[0] == "bindBuffer")}
        if pointers and ("bindBuffer", "ARRAY_BUFFER") not in buffers:
            self._emit("bindBuffer", target="ARRAY_BUFFER", id=0)
        for op, a in buffers.values():
            self._emit(op, **a)
        if ("bindVertexArray",) in rest:
            op, a = rest.pop(("bindVertexArray",))
            self._emit(op, **a)
        textures = sorted(k for k in rest if k[0] == "texture")
        for key in textures:
            self._emit("activeTexture", unit=key[1])
            op, a = rest.pop(key)
            self._emit(op, **a)
        active = rest.pop(("activeTexture",), ("activeTexture", {"unit": 0}))
        if textures or active[1]["unit"]:
            self._emit(active[0], **active[1])
        for key in sorted(rest, key=repr):
            op, a = rest[key]
            self._emit(op, **a)

    def _reset_state(self) -> None:
        """Commands that return every state the stream changed to GL's initial values."""
        dirty = self._dirty
        if self._vertex_array:   # the rest resets the default vertex array object's state
            self._emit("bindVertexArray", id=0)
        if ("texture",) in dirty:
            for unit in sorted(self._units | {0}):
                self._emit("activeTexture", unit=unit)
                for target in TEXTURE_TARGETS:
                    if target != "TEXTURE_3D_OES" or self._bound_3d:
                        self._emit("bindTexture", target=target, id=0)
            self._emit("activeTexture", unit=0)
        elif ("activeTexture",) in dirty:
            self._emit("activeTexture", unit=0)
        if ("useProgram",) in dirty:
            self._emit("useProgram", id=0)
        if ("bindBuffer",) in dirty:
            for target in BUFFER_TARGETS:
                self._emit("bindBuffer", target=target, id=0)
        if ("bindFramebuffer",) in dirty:
            self._emit("bindFramebuffer", id=0)
        if ("bindRenderbuffer",) in dirty:
            self._emit("bindRenderbuffer", id=0)
        for key in sorted(k for k in dirty if k[0] in ("attribArray", "vertexAttrib", "cap",
                                                       "hint", "pixelStorei")):
            if key[0] == "attribArray":
                self._emit("disableVertexAttribArray", index=key[1])
            elif key[0] == "vertexAttrib":
                self._emit("vertexAttrib", index=key[1], values=[0.0, 0.0, 0.0, 1.0])
            elif key[0] == "cap":
                self._emit("enable" if key[1] == "DITHER" else "disable", cap=key[1])
            elif key[0] == "hint":
                self._emit("hint", target=key[1], mode="DONT_CARE")
            else:
                self._emit("pixelStorei", pname=key[1],
                           value=0 if key[1] in UNPACK_SUBIMAGE else 4)
        for op, args in _DEFAULT_STATE.items():
            if (op,) in dirty:
                if op in ("viewport", "scissor"):
                    args = {"x": 0, "y": 0, "width": self.width, "height": self.height}
                self._emit(op, **args)
        self._reset_bindings()

    def _release_group(self, key: int) -> None:
        """Delete every object of a share group none of whose contexts is alive."""
        group = self._groups.pop(key, None)
        if group is None:
            return
        ops = {"buffer": "deleteBuffer", "texture": "deleteTexture",
               "framebuffer": "deleteFramebuffer", "renderbuffer": "deleteRenderbuffer",
               "vertex_array": "deleteVertexArray"}
        for kind, op in ops.items():
            for ident in sorted(group.names[kind].values()):
                self._emit(op, id=ident)
        for app in sorted(group.names["program"]):
            if app in group.linked:
                self._emit("deleteProgram", id=group.names["program"][app])

    # -- EGL ----------------------------------------------------------------------------------

    def _eglCreateContext(self, call):
        ctx = self._args.ret_handle()
        share = self._args.handle("share_context")
        root = self._share_root.get(share, share) if share else ctx
        self._share_root[ctx] = root
        self._groups.setdefault(root, _Group()).contexts.add(ctx)

    def _eglDestroyContext(self, call):
        ctx = self._args.handle("ctx")
        self._destroyed.add(ctx)
        if ctx != self._owner:
            self._forget_context(ctx)

    def _forget_context(self, ctx: int) -> None:
        root = self._share_root.get(ctx, ctx)
        group = self._groups.get(root)
        if group is None:
            return
        group.contexts.discard(ctx)
        if not group.contexts:
            self._release_group(root)

    _BINDINGS = ("_array_buffer", "_element_buffer", "_program", "_pending_delete",
                 "_attrib_state", "_attrib_enabled", "_vertex_array", "_vertex_arrays",
                 "_units")

    def _eglMakeCurrent(self, call):
        """A context made current (EGL 1.4 §3.7.3). The stream holds one GL state: a context
        made current after another gets the state reset to GL's initial values, then, if it
        was current before, its own state put back from its shadow (:meth:`_remember`);
        objects stay shared per share group (§3.7.1). The window is the first surface
        drawn to (:func:`scan_calls`' main surface); a context may be current on another
        surface (a loader's pbuffer) as long as it draws nothing into its default
        framebuffer there."""
        ctx = self._args.handle("ctx")
        draw = self._args.handle("draw")
        if draw and self._surface is None:
            self._surface = draw
        self._current_draw = draw or None
        if ctx == 0 or ctx == self._owner:
            return  # releasing a context keeps its state for when it comes back
        previous = self._owner
        if previous is not None:
            bookkeeping = {name: getattr(self, name) for name in self._BINDINGS}
            self._saved[previous] = (self._shadow, bookkeeping)
            self._shadow = {}
            self._reset_state()
            if previous in self._destroyed:
                self._forget_context(previous)
                self._saved.pop(previous, None)
        self._owner = ctx
        self._used_contexts.add(ctx)
        root = self._share_root.setdefault(ctx, ctx)
        group = self._groups.setdefault(root, _Group())
        group.contexts.add(ctx)
        self._group_key = root
        self._shadow = {}
        saved = self._saved.pop(ctx, None)
        if saved is not None:
            shadow, bookkeeping = saved
            self._restore_state(shadow)
            for name, value in bookkeeping.items():
                setattr(self, name, value)

    def _eglSwapBuffers(self, call):
        if self.scan.frame_end == "eglSwapBuffers" and \
                self.scan.main_surface in (None, self._args.handle("surface")):
            return self._end_frame()
        return None

    _eglSwapBuffersWithDamageKHR = _eglSwapBuffers
    _eglSwapBuffersWithDamageEXT = _eglSwapBuffers

    # -- objects ------------------------------------------------------------------------------

    def _new_object(self, kind: str, app: int) -> int:
        ident = self._next_id[kind]
        self._next_id[kind] += 1
        self._group.names[kind][app] = ident
        if kind != "program":
            self._emit({"buffer": "createBuffer", "texture": "createTexture",
                        "framebuffer": "createFramebuffer",
                        "renderbuffer": "createRenderbuffer",
                        "vertex_array": "createVertexArray"}[kind], id=ident)
        return ident

    def _object(self, kind: str, app: int) -> int:
        """The trace id of application object ``app`` (0 stays 0); GLES2 creates an object
        on the first bind of a name never generated, and so does the importer."""
        if app == 0:
            return 0
        ident = self._group.names[kind].get(app)
        return self._new_object(kind, app) if ident is None else ident

    def _names(self, key: str) -> list[int]:
        names = self._args.ints(key, GLUINT, allow_none=False)
        return names[:self._int("n", len(names), limits=GLSIZEI)]

    def _generate(self, kind: str, key: str) -> None:
        for app in self._names(key):
            if app and app not in self._group.names[kind]:
                self._new_object(kind, app)

    def _delete(self, kind: str, key: str, op: str) -> None:
        for app in self._names(key):
            ident = self._group.names[kind].pop(app, None)
            if ident is None:
                continue
            self._emit(op, id=ident)
            if kind == "buffer":
                self._group.mappings.pop(ident, None)
                self._group.buffer_sizes.pop(ident, None)
                if self._array_buffer == ident:
                    self._array_buffer = 0
                if self._element_buffer == ident:
                    self._element_buffer = 0

    def _glGenBuffers(self, call):
        self._generate("buffer", "buffers")

    def _glGenTextures(self, call):
        self._generate("texture", "textures")

    def _glGenFramebuffers(self, call):
        self._generate("framebuffer", "framebuffers")

    def _glGenRenderbuffers(self, call):
        self._generate("renderbuffer", "renderbuffers")

    # OES_vertex_array_object, and the same entry points of GLES 3 under their core names
    def _glGenVertexArraysOES(self, call):
        self._generate("vertex_array", "arrays")

    def _glDeleteVertexArraysOES(self, call):
        bound = self._vertex_array
        self._delete("vertex_array", "arrays", "deleteVertexArray")
        if bound and bound not in self._group.names["vertex_array"].values():
            self._switch_vertex_array(0)   # GL binds the default object, as the renderer does
        live = set(self._group.names["vertex_array"].values()) | {0}
        for ident in set(self._vertex_arrays) - live:
            self._vertex_arrays.pop(ident)

    def _glBindVertexArrayOES(self, call):
        ident = self._object("vertex_array", self._name("array"))
        self._emit("bindVertexArray", id=ident)
        self._switch_vertex_array(ident)

    _glGenVertexArrays = _glGenVertexArraysOES
    _glDeleteVertexArrays = _glDeleteVertexArraysOES
    _glBindVertexArray = _glBindVertexArrayOES

    def _switch_vertex_array(self, ident: int) -> None:
        """Keep what the bound object holds (ELEMENT_ARRAY_BUFFER, the attribute arrays'
        kinds and enables) and take up those of object ``ident`` (a new one: none)."""
        self._vertex_arrays[self._vertex_array] = (self._element_buffer, self._attrib_state,
                                                   self._attrib_enabled)
        self._element_buffer, self._attrib_state, self._attrib_enabled = \
            self._vertex_arrays.pop(ident, (0, {}, set()))
        self._vertex_array = ident

    def _glDeleteBuffers(self, call):
        self._delete("buffer", "buffers", "deleteBuffer")

    def _glDeleteTextures(self, call):
        self._delete("texture", "textures", "deleteTexture")

    def _glDeleteFramebuffers(self, call):
        self._delete("framebuffer", "framebuffers", "deleteFramebuffer")

    def _glDeleteRenderbuffers(self, call):
        self._delete("renderbuffer", "renderbuffers", "deleteRenderbuffer")

    # -- buffers ------------------------------------------------------------------------------

    def _buffer_target(self) -> str:
        return self._enum(self._call.args.get("target"), BUFFER_TARGETS, "target")

    def _bound(self, target: str) -> int:
        return self._array_buffer if target == "ARRAY_BUFFER" else self._element_buffer

    def _glBindBuffer(self, call):
        target = self._buffer_target()
        ident = self._object("buffer", self._name("buffer"))
        self._emit("bindBuffer", target=target, id=ident)
        if target == "ARRAY_BUFFER":
            self._array_buffer = ident
        else:
            self._element_buffer = ident

    def _glBufferData(self, call):
        target = self._buffer_target()
        size = self._int("size", limits=GLINTPTR)
        data = self._blob(call.args.get("data"), "data", required=False)
        usage = self._enum(call.args.get("usage"), BUFFER_USAGES, "usage")
        self._emit("bufferData", target=target, data=data, size=size, usage=usage)
        if self._bound(target):
            self._group.buffer_sizes[self._bound(target)] = size

    def _glBufferSubData(self, call):
        target = self._buffer_target()
        data = self._blob(call.args.get("data"), "data", required=True)
        size = self._int("size", limits=GLINTPTR)
        self._emit("bufferSubData", target=target, offset=self._int("offset", limits=GLINTPTR),
                   data=data[:size])

    def _map(self, offset: int, length: int | None) -> None:
        target = self._buffer_target()
        ident = self._bound(target)
        if not ident:
            raise self._error(f"no buffer is bound to {target}")
        if length is None:
            length = self._group.buffer_sizes.get(ident, 0)
        pointer = self._args.ret_handle()
        if pointer:
            self._group.mappings[ident] = _Mapping(ident, target, pointer, offset, length)

    def _glMapBufferOES(self, call):
        self._map(0, None)

    _glMapBuffer = _glMapBufferOES

    def _glMapBufferRangeEXT(self, call):
        self._map(self._int("offset", limits=GLINTPTR), self._int("length", limits=GLINTPTR))

    _glMapBufferRange = _glMapBufferRangeEXT

    def _glUnmapBufferOES(self, call):
        ident = self._bound(self._buffer_target())
        self._group.mappings.pop(ident, None)

    _glUnmapBuffer = _glUnmapBufferOES

    def _memcpy(self, call):
        """apitrace's record of what a program wrote into mapped buffer memory."""
        dest, count = self._int("dest", limits=POINTER), self._int("n", limits=GLINTPTR)
        data = self._blob(call.args.get("src"), "src", required=True)[:count]
        for mapping in self._group.mappings.values():
            start = dest - mapping.pointer
            if 0 <= start and start + data.size <= mapping.length:
                break
        else:
            raise self._error("a write to memory that is not a mapped buffer range")
        current = self._bound(mapping.target)
        if current != mapping.buffer:
            self._emit("bindBuffer", target=mapping.target, id=mapping.buffer)
        self._emit("bufferSubData", target=mapping.target, offset=mapping.offset + start,
                   data=data)
        if current != mapping.buffer:
            self._emit("bindBuffer", target=mapping.target, id=current)

    # -- textures -----------------------------------------------------------------------------

    def _glActiveTexture(self, call):
        unit = self._int("texture", limits=GLUINT) - GL_TEXTURE0
        units = self.scan.texture_units
        if not 0 <= unit < units:
            raise self._error(f"texture unit 0x{unit + GL_TEXTURE0:04X} is not "
                              f"GL_TEXTURE0..GL_TEXTURE{units - 1} (the units the program may "
                              "use: GL_MAX_COMBINED_TEXTURE_IMAGE_UNITS as it queried it, at "
                              f"least {MAX_TEXTURE_UNITS})")
        self._units.add(unit)
        self._emit("activeTexture", unit=unit)

    def _glBindTexture(self, call):
        target = self._enum(call.args.get("target"), TEXTURE_TARGETS, "target")
        if target == "TEXTURE_3D_OES":
            self._bound_3d = True   # context switches then reset the 3D bindings too
        self._emit("bindTexture", target=target, id=self._object("texture",
                                                                 self._name("texture")))

    def _glPixelStorei(self, call):
        pname = self._enum(call.args.get("pname"), PIXEL_STORE, "pname")
        self._emit("pixelStorei", pname=pname, value=self._int("param"))

    def _image_args(self, with_internal: bool) -> dict:
        args = self._call.args
        formats = TEXTURE_FORMATS + DEPTH_TEXTURE_FORMATS
        out = {"target": self._enum(args.get("target"), IMAGE_TARGETS, "target"),
               "level": self._int("level", limits=GLSIZEI)}
        if with_internal:
            out["internalformat"] = self._enum(args.get("internalformat"), formats,
                                               "internalformat")
        return out | {"width": self._size("width"), "height": self._size("height"),
                      "format": self._enum(args.get("format"), formats, "format"),
                      "type": self._enum(args.get("type"), TEXEL_TYPES + DEPTH_TEXEL_TYPES,
                                         "type")}

    def _glTexImage2D(self, call):
        if self._int("border", 0) != 0:
            raise self._error("border must be 0 in OpenGL ES 2.0")
        args = self._image_args(True)
        self._emit("texImage2D", **args,
                   data=self._blob(call.args.get("pixels"), "pixels", required=False))

    def _glTexSubImage2D(self, call):
        args = self._image_args(False)
        if args["format"] in DEPTH_TEXTURE_FORMATS or args["type"] in DEPTH_TEXEL_TYPES:
            raise self._error("texSubImage2D of depth textures is not supported")
        self._emit("texSubImage2D", **args, xoffset=self._int("xoffset"),
                   yoffset=self._int("yoffset"),
                   data=self._blob(call.args.get("pixels"), "pixels", required=True))

    def _glCompressedTexImage2D(self, call):
        """OES_compressed_ETC1_RGB8_texture and S3TC (EXT_texture_compression_s3tc, 0x83F0
        ..0x83F3): the recorded blocks; imageSize must be their length (other compressed
        formats are named in the enum error)."""
        if self._int("border", 0) != 0:
            raise self._error("border must be 0 in OpenGL ES 2.0")
        args = call.args
        data = self._blob(args.get("data"), "data", required=True)
        size = self._int("imageSize")
        if size != data.size:
            raise self._error(f"imageSize is {size} but apitrace recorded {data.size} bytes")
        self._emit("compressedTexImage2D",
                   target=self._enum(args.get("target"), IMAGE_TARGETS, "target"),
                   level=self._int("level", limits=GLSIZEI),
                   internalformat=self._enum(args.get("internalformat"),
                                             COMPRESSED_TEXTURE_FORMATS, "internalformat"),
                   width=self._size("width"), height=self._size("height"), data=data)

    def _glCompressedTexSubImage2D(self, call):
        """EXT_compressed_ETC1_RGB8_sub_texture, S3TC: the recorded blocks of a rectangle."""
        args = call.args
        data = self._blob(args.get("data"), "data", required=True)
        size = self._int("imageSize")
        if size != data.size:
            raise self._error(f"imageSize is {size} but apitrace recorded {data.size} bytes")
        self._emit("compressedTexSubImage2D",
                   target=self._enum(args.get("target"), IMAGE_TARGETS, "target"),
                   level=self._int("level", limits=GLSIZEI), xoffset=self._int("xoffset"),
                   yoffset=self._int("yoffset"), width=self._size("width"),
                   height=self._size("height"),
                   format=self._enum(args.get("format"), COMPRESSED_TEXTURE_FORMATS, "format"),
                   data=data)

    def _glCopyTexImage2D(self, call):
        if self._int("border", 0) != 0:
            raise self._error("border must be 0 in OpenGL ES 2.0")
        args = call.args
        self._emit("copyTexImage2D",
                   target=self._enum(args.get("target"), IMAGE_TARGETS, "target"),
                   level=self._int("level", limits=GLSIZEI),
                   internalformat=self._enum(args.get("internalformat"), TEXTURE_FORMATS,
                                             "internalformat"),
                   x=self._int("x"), y=self._int("y"), width=self._size("width"),
                   height=self._size("height"))

    def _glCopyTexSubImage2D(self, call):
        self._emit("copyTexSubImage2D",
                   target=self._enum(call.args.get("target"), IMAGE_TARGETS, "target"),
                   level=self._int("level", limits=GLSIZEI), xoffset=self._int("xoffset"),
                   yoffset=self._int("yoffset"), x=self._int("x"), y=self._int("y"),
                   width=self._size("width"), height=self._size("height"))

    # -- OES_texture_3D ---------------------------------------------------------------------

    def _target_3d(self) -> str:
        return self._enum(self._call.args.get("target"), ("TEXTURE_3D_OES",), "target")

    def _glTexImage3DOES(self, call):
        if self._int("border", 0) != 0:
            raise self._error("border must be 0 (OES_texture_3D)")
        args = call.args
        self._emit("texImage3D", target=self._target_3d(),
                   level=self._int("level", limits=GLSIZEI),
                   internalformat=self._enum(args.get("internalformat"), TEXTURE_FORMATS,
                                             "internalformat"),
                   width=self._size("width"), height=self._size("height"),
                   depth=self._size("depth"),
                   format=self._enum(args.get("format"), TEXTURE_FORMATS, "format"),
                   type=self._enum(args.get("type"), TEXEL_TYPES, "type"),
                   data=self._blob(args.get("pixels"), "pixels", required=False))

    def _glTexSubImage3DOES(self, call):
        args = call.args
        self._emit("texSubImage3D", target=self._target_3d(),
                   level=self._int("level", limits=GLSIZEI), xoffset=self._int("xoffset"),
                   yoffset=self._int("yoffset"), zoffset=self._int("zoffset"),
                   width=self._size("width"), height=self._size("height"),
                   depth=self._size("depth"),
                   format=self._enum(args.get("format"), TEXTURE_FORMATS, "format"),
                   type=self._enum(args.get("type"), TEXEL_TYPES, "type"),
                   data=self._blob(args.get("pixels"), "pixels", required=True))

    def _glCopyTexSubImage3DOES(self, call):
        self._emit("copyTexSubImage3D", target=self._target_3d(),
                   level=self._int("level", limits=GLSIZEI), xoffset=self._int("xoffset"),
                   yoffset=self._int("yoffset"), zoffset=self._int("zoffset"),
                   x=self._int("x"), y=self._int("y"), width=self._size("width"),
                   height=self._size("height"))

    def _glCompressedTexImage3DOES(self, call):
        if self._int("border", 0) != 0:
            raise self._error("border must be 0 (OES_texture_3D)")
        args = call.args
        data = self._blob(args.get("data"), "data", required=True)
        size = self._int("imageSize")
        if size != data.size:
            raise self._error(f"imageSize is {size} but apitrace recorded {data.size} bytes")
        self._emit("compressedTexImage3D", target=self._target_3d(),
                   level=self._int("level", limits=GLSIZEI),
                   internalformat=self._enum(args.get("internalformat"),
                                             COMPRESSED_TEXTURE_FORMATS, "internalformat"),
                   width=self._size("width"), height=self._size("height"),
                   depth=self._size("depth"), data=data)

    def _glFramebufferTexture3DOES(self, call):
        self._check_target("target", GL_FRAMEBUFFER, "GL_FRAMEBUFFER")
        self._emit("framebufferTexture3D",
                   attachment=self._enum(call.args.get("attachment"), ATTACHMENTS,
                                         "attachment"),
                   textarget=self._enum(call.args.get("textarget"), ("TEXTURE_3D_OES",),
                                        "textarget"),
                   texture=self._object("texture", self._name("texture")),
                   level=self._int("level", limits=GLSIZEI), zoffset=self._int("zoffset"))

    # the ES 3.0 names, which a GLES2 context of Mesa (an ES 3.x context) also answers
    _glTexImage3D = _glTexImage3DOES
    _glTexSubImage3D = _glTexSubImage3DOES
    _glCopyTexSubImage3D = _glCopyTexSubImage3DOES
    _glCompressedTexImage3D = _glCompressedTexImage3DOES

    def _tex_parameter(self, value) -> None:
        args = self._call.args
        target = self._enum(args.get("target"), TEXTURE_TARGETS, "target")
        pname = self._enum(args.get("pname"), TEXTURE_PARAMETERS + FLOAT_TEXTURE_PARAMETERS,
                           "pname")
        if pname in FLOAT_TEXTURE_PARAMETERS:  # EXT_texture_filter_anisotropic
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise self._error(f"param of {pname} must be a number, got {show(value)}")
            self._emit("texParameterf", target=target, pname=pname, value=float(value))
            return
        if isinstance(value, float) and value.is_integer() and abs(value) < 2**32:
            value = int(value)
        self._emit("texParameter", target=target, pname=pname,
                   value=self._enum(value, FILTERS + WRAPS, "param"))

    def _glTexParameteri(self, call):
        self._tex_parameter(self._arg("param"))

    _glTexParameterf = _glTexParameteri

    def _glTexParameteriv(self, call):
        params = self._arg("params")
        self._tex_parameter(params[0] if isinstance(params, list) and params else params)

    _glTexParameterfv = _glTexParameteriv

    def _glGenerateMipmap(self, call):
        self._emit("generateMipmap",
                   target=self._enum(call.args.get("target"), TEXTURE_TARGETS, "target"))

    # -- programs -----------------------------------------------------------------------------

    def _glCreateProgram(self, call):
        app = self._args.ret_handle()
        if app:
            old = self._group.names["program"].get(app)
            if old is not None and app in self._group.linked:
                self._emit("deleteProgram", id=old)  # a name GL reused after deleting it
            self._group.linked.pop(app, None)
            self._new_object("program", app)

    def _glLinkProgram(self, call):
        app = self._name("program")
        compiled = self.programs.get(call.number)
        if compiled is None:
            raise self._error(f"program {app} was not compiled in the first pass")
        group = self._group
        ident = group.names["program"].get(app)
        if ident is None:
            ident = self._new_object("program", app)
        if app in group.linked:
            self._emit("deleteProgram", id=ident)
        self._emit("createProgram", id=ident, vertex_glsl=compiled.vertex_glsl,
                   fragment_glsl=compiled.fragment_glsl, vertex_tgsi=compiled.vertex_tgsi,
                   fragment_tgsi=compiled.fragment_tgsi, interface=compiled.interface)
        group.linked[app] = call.number
        group.uniform_names[app] = {}
        if self._program == app:
            self._emit("useProgram", id=ident)

    def _glUseProgram(self, call):
        app = self._name("program")
        group = self._group
        if app and app not in group.linked:
            raise self._error(f"program {app} was never linked")
        previous = self._program
        self._emit("useProgram", id=group.names["program"][app] if app else 0)
        self._program = app
        if previous != app and previous in self._pending_delete:
            self._pending_delete.discard(previous)
            self._drop_program(previous)

    def _drop_program(self, app: int) -> None:
        group = self._group
        ident = group.names["program"].pop(app, None)
        if ident is not None and app in group.linked:
            self._emit("deleteProgram", id=ident)
        group.linked.pop(app, None)
        group.uniform_names.pop(app, None)

    def _glDeleteProgram(self, call):
        app = self._name("program")
        if not app:
            return
        if app == self._program:
            self._pending_delete.add(app)  # GL deletes it once no longer in use
        else:
            self._drop_program(app)

    def _glGetUniformLocation(self, call):
        location = call.ret
        if location is None:
            return
        location = self._args.check_int(location, "the return value (a location)", GLINT)
        if location >= 0:
            self._group.uniform_names.setdefault(self._name("program"), {})[location] = \
                self._args.text("name")

    def _uniform_name(self, location: int) -> str:
        group, app = self._group, self._program
        if not app:
            raise self._error("no program is in use")
        name = group.uniform_names.get(app, {}).get(location)
        if name is not None:
            return name
        interface = self.programs[group.linked[app]].interface
        for entry in interface.get("uniforms", []) + interface.get("samplers", []):
            first, size = entry.get("location"), entry.get("array_size")
            if not isinstance(first, int) or first < 0:
                continue
            if size and first <= location < first + size:
                return f"{entry['name']}[{location - first}]"
            if not size and location == first:
                return entry["name"]
        raise self._error(f"uniform location {location} of program {app} is not one "
                          "glGetUniformLocation returned, nor in the program's interface")

    def _uniform(self, function: str, values: list) -> None:
        location = self._int("location")
        if location == -1:
            return  # GL ignores location -1
        if function.endswith("i"):  # GLint values: integers (a sampler's unit, a flag)
            values = [self._args.check_int(v, f"uniform value {k}", GLINT)
                      for k, v in enumerate(values)]
        elif not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
            bad = next(v for v in values if isinstance(v, bool) or
                       not isinstance(v, (int, float)))
            raise self._error(f"uniform values must be numbers, got {show(bad)}")
        else:
            values = [float(v) for v in values]
        self._emit("uniform", name=self._uniform_name(location), function=function,
                   values=values)

    def _uniform_scalar(self, call):
        function = UNIFORM_SHAPES[call.name]
        self._uniform(function, [self._arg(f"v{i}") for i in range(int(function[0]))])

    def _uniform_vector(self, call):
        function = UNIFORM_VECTOR_SHAPES.get(call.name) or UNIFORM_MATRIX_SHAPES[call.name]
        if function.startswith("Matrix") and self._bool("transpose"):
            raise self._error("transpose must be GL_FALSE in OpenGL ES 2.0")
        values = self._arg("value")
        count = self._size("count")
        if isinstance(values, (int, float)) and not isinstance(values, bool):
            values = [values]
        if not isinstance(values, list):
            raise self._error(f"value must be a list of numbers, got {show(values)}")
        self._uniform(function, values[:count * UNIFORM_COMPONENTS[function]])

    # -- vertex attributes --------------------------------------------------------------------

    def _index(self) -> int:
        index = self._int("index")
        if not 0 <= index < MAX_VERTEX_ATTRIBS:
            raise self._error(f"attribute index {index} out of range")
        return index

    def _glVertexAttribPointer(self, call):
        args, index = call.args, self._index()
        fields = {"index": index, "size": self._int("size", limits=(1, 4)),
                  "type": self._enum(args.get("type"), ATTRIB_TYPES, "type"),
                  "normalized": self._bool("normalized"), "stride": self._size("stride")}
        pointer = args.get("pointer")
        if isinstance(pointer, (bytes, bytearray)):
            self._emit("vertexAttribPointer", **fields, offset=0,
                       data=self._blob(pointer, "pointer", required=True))
            self._attrib_state[index] = "client"
        elif self._array_buffer:
            self._emit("vertexAttribPointer", **fields,
                       offset=self._int("pointer", limits=POINTER), data=None)
            self._attrib_state[index] = "buffer"
        else:
            # user memory apitrace did not record here; a fake call with the data follows
            # before any draw that reads it
            self._attrib_state[index] = "unknown"

    def _glEnableVertexAttribArray(self, call):
        index = self._index()
        self._attrib_enabled.add(index)
        self._emit("enableVertexAttribArray", index=index)

    def _glDisableVertexAttribArray(self, call):
        index = self._index()
        self._attrib_enabled.discard(index)
        self._emit("disableVertexAttribArray", index=index)

    def _vertex_attrib(self, call):
        name = call.name  # glVertexAttrib{1,2,3,4}f[v]
        n = int(name[len("glVertexAttrib")])
        if name.endswith("v"):
            values = self._arg("v")
            if isinstance(values, (int, float)) and not isinstance(values, bool):
                values = [values]
            if not isinstance(values, list):
                raise self._error(f"v must be a list of numbers, got {show(values)}")
            values = values[:n]
        else:
            values = [self._arg(k) for k in ("x", "y", "z", "w")[:n]]
        if len(values) != n or not all(isinstance(v, (int, float)) and not isinstance(v, bool)
                                       for v in values):
            raise self._error(f"expected {n} numbers, got {show(values)}")
        values = [float(v) for v in values] + [0.0, 0.0, 1.0][n - 1:]
        self._emit("vertexAttrib", index=self._index(), values=values[:4])

    # -- draws --------------------------------------------------------------------------------

    def _check_attributes(self) -> None:
        if not self._program or self._program not in self._group.linked:
            return
        interface = self.programs[self._group.linked[self._program]].interface
        for attribute in interface.get("attributes", []):
            location = attribute.get("location")
            if not isinstance(location, int) or not attribute.get("registers"):
                continue
            for index in range(location, location + len(attribute["registers"])):
                if index in self._attrib_enabled and \
                        self._attrib_state.get(index) == "unknown":
                    raise self._error(f"attribute {attribute.get('name')!r} (array {index}) "
                                      "reads client memory apitrace did not record")

    def _glDrawArrays(self, call):
        self._check_attributes()
        self._emit("drawArrays", mode=self._enum(call.args.get("mode"), PRIMITIVE_MODES,
                                                 "mode"),
                   first=self._int("first", limits=GLSIZEI), count=self._size("count"))

    def _glDrawElements(self, call):
        self._check_attributes()
        mode = self._enum(call.args.get("mode"), PRIMITIVE_MODES, "mode")
        type_ = self._enum(call.args.get("type"), INDEX_TYPES, "type")
        indices = call.args.get("indices")
        if isinstance(indices, (bytes, bytearray)):
            self._emit("drawElements", mode=mode, count=self._size("count"), type=type_,
                       offset=0, indices=self._blob(indices, "indices", required=True))
        elif self._element_buffer:
            self._emit("drawElements", mode=mode, count=self._size("count"), type=type_,
                       offset=self._int("indices", limits=POINTER), indices=None)
        else:
            raise self._error("indices point to client memory apitrace did not record")

    # -- fixed-function state -----------------------------------------------------------------

    def _glEnable(self, call):
        self._emit("enable", cap=self._enum(call.args.get("cap"), CAPABILITIES, "cap"))

    def _glDisable(self, call):
        self._emit("disable", cap=self._enum(call.args.get("cap"), CAPABILITIES, "cap"))

    def _glDepthFunc(self, call):
        self._emit("depthFunc", func=self._enum(call.args.get("func"), COMPARE_FUNCS, "func"))

    def _glDepthMask(self, call):
        self._emit("depthMask", flag=self._bool("flag"))

    def _glDepthRangef(self, call):
        self._emit("depthRangef", near=self._float("n"), far=self._float("f"))

    def _glClearColor(self, call):
        self._emit("clearColor", red=self._float("red"), green=self._float("green"),
                   blue=self._float("blue"), alpha=self._float("alpha"))

    def _glClearDepthf(self, call):
        self._emit("clearDepthf", depth=self._float("d"))

    def _glClearStencil(self, call):
        self._emit("clearStencil", s=self._int("s"))

    def _glClear(self, call):
        mask = self._int("mask", limits=GLUINT)
        names = [name for bit, name in CLEAR_BITS if mask & bit]
        if mask & ~sum(bit for bit, _ in CLEAR_BITS):
            raise self._error(f"mask 0x{mask:X} has bits other than COLOR/DEPTH/STENCIL")
        self._emit("clear", mask=names)

    def _glColorMask(self, call):
        self._emit("colorMask", red=self._bool("red"), green=self._bool("green"),
                   blue=self._bool("blue"), alpha=self._bool("alpha"))

    def _glBlendFunc(self, call):
        src = self._enum(call.args.get("sfactor"), _FACTORS, "sfactor")
        dst = self._enum(call.args.get("dfactor"), _FACTORS, "dfactor")
        self._emit("blendFuncSeparate", src_rgb=src, dst_rgb=dst, src_alpha=src, dst_alpha=dst)

    def _glBlendFuncSeparate(self, call):
        a = call.args
        self._emit("blendFuncSeparate",
                   src_rgb=self._enum(a.get("sfactorRGB"), _FACTORS, "sfactorRGB"),
                   dst_rgb=self._enum(a.get("dfactorRGB"), _FACTORS, "dfactorRGB"),
                   src_alpha=self._enum(a.get("sfactorAlpha"), _FACTORS, "sfactorAlpha"),
                   dst_alpha=self._enum(a.get("dfactorAlpha"), _FACTORS, "dfactorAlpha"))

    def _glBlendEquation(self, call):
        mode = self._enum(call.args.get("mode"), BLEND_EQUATIONS, "mode")
        self._emit("blendEquationSeparate", mode_rgb=mode, mode_alpha=mode)

    def _glBlendEquationSeparate(self, call):
        self._emit("blendEquationSeparate",
                   mode_rgb=self._enum(call.args.get("modeRGB"), BLEND_EQUATIONS, "modeRGB"),
                   mode_alpha=self._enum(call.args.get("modeAlpha"), BLEND_EQUATIONS,
                                         "modeAlpha"))

    def _glBlendColor(self, call):
        self._emit("blendColor", red=self._float("red"), green=self._float("green"),
                   blue=self._float("blue"), alpha=self._float("alpha"))

    def _glCullFace(self, call):
        self._emit("cullFace", mode=self._enum(call.args.get("mode"), FACES, "mode"))

    def _glFrontFace(self, call):
        self._emit("frontFace", mode=self._enum(call.args.get("mode"), WINDINGS, "mode"))

    def _glViewport(self, call):
        self._emit("viewport", x=self._int("x"), y=self._int("y"), width=self._size("width"),
                   height=self._size("height"))

    def _glScissor(self, call):
        self._emit("scissor", x=self._int("x"), y=self._int("y"), width=self._size("width"),
                   height=self._size("height"))

    def _glLineWidth(self, call):
        self._emit("lineWidth", width=self._float("width"))

    def _glPolygonOffset(self, call):
        self._emit("polygonOffset", factor=self._float("factor"), units=self._float("units"))

    def _stencil_func(self, face: str) -> None:
        self._emit("stencilFuncSeparate", face=face,
                   func=self._enum(self._call.args.get("func"), COMPARE_FUNCS, "func"),
                   ref=self._int("ref"), mask=self._int("mask", limits=MASK) & 0xFFFFFFFF)

    def _glStencilFunc(self, call):
        self._stencil_func("FRONT_AND_BACK")

    def _glStencilFuncSeparate(self, call):
        self._stencil_func(self._enum(call.args.get("face"), FACES, "face"))

    def _stencil_op(self, face: str) -> None:
        a = self._call.args
        self._emit("stencilOpSeparate", face=face,
                   fail=self._enum(a.get("fail", a.get("sfail")), STENCIL_OPS, "fail"),
                   zfail=self._enum(a.get("zfail", a.get("dpfail")), STENCIL_OPS, "zfail"),
                   zpass=self._enum(a.get("zpass", a.get("dppass")), STENCIL_OPS, "zpass"))

    def _glStencilOp(self, call):
        self._stencil_op("FRONT_AND_BACK")

    def _glStencilOpSeparate(self, call):
        self._stencil_op(self._enum(call.args.get("face"), FACES, "face"))

    def _glStencilMask(self, call):
        self._emit("stencilMaskSeparate", face="FRONT_AND_BACK",
                   mask=self._int("mask", limits=MASK) & 0xFFFFFFFF)

    def _glStencilMaskSeparate(self, call):
        self._emit("stencilMaskSeparate", face=self._enum(call.args.get("face"), FACES, "face"),
                   mask=self._int("mask", limits=MASK) & 0xFFFFFFFF)

    def _glHint(self, call):
        self._emit("hint", target=self._enum(call.args.get("target"), HINT_TARGETS, "target"),
                   mode=self._enum(call.args.get("mode"), HINT_MODES, "mode"))

    def _glFlush(self, call):
        self._emit("flush")

    def _glFinish(self, call):
        if self.scan.frame_end == "glFinish":
            return self._end_frame()
        self._emit("finish")
        return None

    def _glReadPixels(self, call):
        if self.scan.frame_end != "glReadPixels":
            return None  # reads nothing back into the stream: skipped
        self._emit("readPixels", x=self._int("x"), y=self._int("y"),
                   width=self._size("width"), height=self._size("height"))
        return self._end_frame()

    # -- framebuffer objects ------------------------------------------------------------------

    def _check_target(self, key: str, value: int, what: str) -> None:
        if self._int(key, limits=GLUINT) != value:
            raise self._error(f"{key} must be {what}")

    def _glBindFramebuffer(self, call):
        self._check_target("target", GL_FRAMEBUFFER, "GL_FRAMEBUFFER")
        self._emit("bindFramebuffer", id=self._object("framebuffer", self._name("framebuffer")))

    def _glBindRenderbuffer(self, call):
        self._check_target("target", GL_RENDERBUFFER, "GL_RENDERBUFFER")
        self._emit("bindRenderbuffer",
                   id=self._object("renderbuffer", self._name("renderbuffer")))

    def _glRenderbufferStorage(self, call):
        self._check_target("target", GL_RENDERBUFFER, "GL_RENDERBUFFER")
        self._emit("renderbufferStorage",
                   internalformat=self._enum(call.args.get("internalformat"),
                                             RENDERBUFFER_FORMATS, "internalformat"),
                   width=self._size("width"), height=self._size("height"))

    def _glFramebufferTexture2D(self, call):
        self._check_target("target", GL_FRAMEBUFFER, "GL_FRAMEBUFFER")
        self._emit("framebufferTexture2D",
                   attachment=self._enum(call.args.get("attachment"), ATTACHMENTS,
                                         "attachment"),
                   textarget=self._enum(call.args.get("textarget"), IMAGE_TARGETS,
                                        "textarget"),
                   texture=self._object("texture", self._name("texture")),
                   level=self._int("level", limits=GLSIZEI))

    def _glFramebufferRenderbuffer(self, call):
        self._check_target("target", GL_FRAMEBUFFER, "GL_FRAMEBUFFER")
        self._check_target("renderbuffertarget", GL_RENDERBUFFER, "GL_RENDERBUFFER")
        self._emit("framebufferRenderbuffer",
                   attachment=self._enum(call.args.get("attachment"), ATTACHMENTS,
                                         "attachment"),
                   renderbuffer=self._object("renderbuffer", self._name("renderbuffer")))


for _name in UNIFORM_SHAPES:
    setattr(Translator, "_" + _name, Translator._uniform_scalar)
for _name in list(UNIFORM_VECTOR_SHAPES) + list(UNIFORM_MATRIX_SHAPES):
    setattr(Translator, "_" + _name, Translator._uniform_vector)
for _n in "1234":
    setattr(Translator, f"_glVertexAttrib{_n}f", Translator._vertex_attrib)
    setattr(Translator, f"_glVertexAttrib{_n}fv", Translator._vertex_attrib)

# The binding a deletion undoes in the context that deletes (the state shadow's entries).
_UNBINDS = {"deleteBuffer": "bindBuffer", "deleteTexture": "bindTexture",
            "deleteFramebuffer": "bindFramebuffer", "deleteRenderbuffer": "bindRenderbuffer",
            "deleteVertexArray": "bindVertexArray"}

# GL's initial value of each piece of state a context-switch reset may put back.
_DEFAULT_STATE: dict[str, dict] = {
    "depthFunc": {"func": "LESS"}, "depthMask": {"flag": True},
    "depthRangef": {"near": 0.0, "far": 1.0},
    "clearColor": {"red": 0.0, "green": 0.0, "blue": 0.0, "alpha": 0.0},
    "clearDepthf": {"depth": 1.0}, "clearStencil": {"s": 0},
    "colorMask": {"red": True, "green": True, "blue": True, "alpha": True},
    "blendFuncSeparate": {"src_rgb": "ONE", "dst_rgb": "ZERO", "src_alpha": "ONE",
                          "dst_alpha": "ZERO"},
    "blendEquationSeparate": {"mode_rgb": "FUNC_ADD", "mode_alpha": "FUNC_ADD"},
    "blendColor": {"red": 0.0, "green": 0.0, "blue": 0.0, "alpha": 0.0},
    "cullFace": {"mode": "BACK"}, "frontFace": {"mode": "CCW"},
    "viewport": {}, "scissor": {},
    "lineWidth": {"width": 1.0}, "polygonOffset": {"factor": 0.0, "units": 0.0},
    "stencilFuncSeparate": {"face": "FRONT_AND_BACK", "func": "ALWAYS", "ref": 0,
                            "mask": 0xFFFFFFFF},
    "stencilOpSeparate": {"face": "FRONT_AND_BACK", "fail": "KEEP", "zfail": "KEEP",
                          "zpass": "KEEP"},
    "stencilMaskSeparate": {"face": "FRONT_AND_BACK", "mask": 0xFFFFFFFF},
}


# --- the whole import ------------------------------------------------------------------------


@dataclass
class ImportSummary:
    """What :func:`import_calls` wrote and what it met. ``warnings``: one line each (see the
    module docstring); ``dropped_calls``: calls after the last frame end, not imported."""

    path: Path
    frames: int
    width: int
    height: int
    depth_bits: int
    stencil_bits: int
    programs: int
    frame_end: str
    calls: int
    translated: dict[str, int]
    skipped: dict[str, int]
    folded: dict[str, int]
    seconds: float
    dropped_calls: int = 0
    warnings: list[str] = field(default_factory=list)
    # the GLES2 limits the program queried, as the trace carries them, and the call of each
    limits: dict = field(default_factory=dict)
    limit_calls: dict = field(default_factory=dict)

    def source(self, trace: str) -> dict:
        return {"tool": "apitrace", "file": trace, "frame_end": self.frame_end,
                "calls_read": self.calls, "programs": self.programs,
                "translated_calls": self.translated, "skipped_calls": self.skipped,
                "folded_calls": self.folded, "calls_after_last_frame": self.dropped_calls,
                "warnings": self.warnings}

    def describe(self) -> str:
        lines = [f"imported {self.frames} frame(s) of {self.width}x{self.height} "
                 f"(depth {self.depth_bits}, stencil {self.stencil_bits}) into {self.path}: "
                 f"{self.calls} calls read, {sum(self.translated.values())} translated, "
                 f"{self.programs} distinct program(s), frames end at {self.frame_end} "
                 f"({self.seconds:.1f} s)"]
        lines.append("limits: " + ", ".join(
            f"{key} {value:g} (queried at call {self.limit_calls[key]})"
            if key in self.limit_calls else f"{key} {value:g} (the GPU configuration's)"
            for key, value in self.limits.items()))
        if self.dropped_calls:
            lines.append(f"not imported: {self.dropped_calls} call(s) after the last frame "
                         f"end")
        for title, counts in (("skipped (cannot change the image)", self.skipped),
                              ("folded into other commands", self.folded)):
            if counts:
                lines.append(f"{title}: {sum(counts.values())} call(s)")
                lines += [f"  {name:<36} {count}" for name, count in counts.items()]
        return "\n".join(lines)


CallSource = Callable[[], Iterator[Call]]


def import_calls(open_calls: CallSource, out_path: str | os.PathLike, *, source: str,
                 frames: int | None = None, size: tuple[int, int] | None = None,
                 name: str | None = None, compiler: Compiler | None = None,
                 extra_source: dict | None = None, frame_end: str = "auto",
                 notes: StreamNotes | None = None) -> ImportSummary:
    """Import the calls ``open_calls()`` yields (called twice: scan, then translate) into the
    ``.tsim`` trace ``out_path`` (written atomically). ``source`` names the capture in errors;
    ``frames`` keeps the first N frames; ``size`` (width, height) overrides the window size
    found in the capture; ``frame_end`` is where frames end (FRAME_END_CHOICES, see the
    module docstring); ``compiler`` replaces Mesa's (tests); ``notes``: where the call source
    leaves its warnings (see :func:`read_calls`), passed on in the summary."""
    from tilesim.render.pipeline.gpu_config import gl_limits
    from tilesim.render.traces.trace_file import MAX_SIZE, TraceWriter

    started = time.perf_counter()
    notes = notes if notes is not None else StreamNotes()
    if frames is not None and frames < 1:
        raise InputError(f"frames must be at least 1, got {frames}", source=source)
    check_output(out_path, folder=False)    # before reading the capture
    stream = open_calls()
    try:
        scan = scan_calls(stream, source, frames, frame_end)
    finally:
        _close(stream)  # stops apitrace when the scan ends early (frame limit)
    check_frame_ends(scan, source, frame_end, notes)
    if size is not None:
        scan.width, scan.height = size
    elif not scan.width and scan.surfaceless and scan.frame_end == "glReadPixels":
        # no window at all: a nominal one that holds every rectangle read
        widest = max(scan.ends, key=lambda end: end.rect[0] + end.rect[2])
        tallest = max(scan.ends, key=lambda end: end.rect[1] + end.rect[3])
        scan.width = widest.rect[0] + widest.rect[2]
        scan.height = tallest.rect[1] + tallest.rect[3]
        scan.size_call = widest.call if scan.width > MAX_SIZE else tallest.call
    if not scan.width or not scan.height:
        raise InputError("cannot tell the window size (no eglMakeCurrent with a surface, nor "
                         "eglQuerySurface); give it with --size WxH", source=source)
    if size is None and not (scan.width <= MAX_SIZE and scan.height <= MAX_SIZE):
        told = f"{source}: call {scan.size_call}" if scan.size_call is not None else source
        raise InputError(f"the window is {scan.width}x{scan.height}, larger than the "
                         f"{MAX_SIZE}x{MAX_SIZE} tilesim renders", source=told)
    programs = compile_links(scan.links, source, compiler)
    translator = Translator(scan, programs, source=source, width=scan.width,
                            height=scan.height)
    queried = {key: value for key, (value, _) in scan.limits.items()}
    writer = TraceWriter(out_path, width=scan.width, height=scan.height,
                         depth_bits=scan.depth_bits, stencil_bits=scan.stencil_bits,
                         name=name, source={"tool": "apitrace", "file": source},
                         limits=queried)
    calls = 0
    used: dict[str, str] = {}           # extensions the frames rely on (render/gl/extensions)
    stream = open_calls()
    try:
        for call in stream:
            calls += 1
            frame = translator.feed(call)
            if frame is not None:
                writer.add_frame(frame)
                used = {**extensions_used(frame), **used}
                if translator.frames_done >= scan.frames:
                    break
        _close(stream)
        if translator.frames_done < scan.frames:
            raise InputError(f"the capture ended after {translator.frames_done} of "
                             f"{scan.frames} frames", source=source)
        summary = ImportSummary(
            path=Path(out_path), frames=translator.frames_done, width=scan.width,
            height=scan.height, depth_bits=scan.depth_bits, stencil_bits=scan.stencil_bits,
            programs=len({id(p) for p in programs.values()}), frame_end=scan.frame_end,
            calls=calls, translated=dict(sorted(translator.translated.items())),
            skipped=dict(sorted(translator.skipped.items())),
            folded=dict(sorted(translator.folded.items())), seconds=0.0,
            dropped_calls=scan.trailing_calls,
            warnings=capture_warnings(scan, notes) + _extension_warnings(used, translator),
            limits=gl_limits(queried),
            limit_calls={key: call for key, (_, call) in scan.limits.items()})
        header = summary.source(source)
        header["egl_config"] = {"depth_size": scan.egl_depth_size,
                                "stencil_size": scan.egl_stencil_size}
        if scan.surfaceless:
            header["surfaceless"] = True  # no window: width x height is nominal
        header.update(extra_source or {})
        writer.set_source(header)
        writer.close()
    except BaseException:
        _close(stream)
        writer.abort()
        raise
    summary.seconds = time.perf_counter() - started
    return summary


def _extension_warnings(used: dict[str, str], translator: Translator) -> list[str]:
    """A warning naming the extensions the capture used (its commands, and the calls it
    made) that the modelled GPU's driver does not offer (render/gl/extensions.toml)."""
    calls = set(translator.translated) | set(translator.skipped) | set(translator.folded)
    used = {**extensions_used((), sorted(calls)), **used}
    warning = unoffered_warning(used)
    return [] if warning is None else [warning]


def _close(stream) -> None:
    close = getattr(stream, "close", None)
    if close is not None:
        close()


def _check_file(path: Path) -> None:
    from tilesim.inputs import open_input

    open_input(path, "apitrace file", whole=False).close()   # a fifo or device: refused
    if path.stat().st_size == 0:
        raise InputError("the capture holds no calls (the file is empty)", source=str(path))


def import_apitrace(trace_path: str | os.PathLike, out_path: str | os.PathLike, *,
                    frames: int | None = None, size: tuple[int, int] | None = None,
                    name: str | None = None, frame_end: str = "auto") -> ImportSummary:
    """Import an apitrace capture (``*.trace``) into ``out_path`` (``*.tsim``); apitrace's
    warnings and a capture that ends mid-frame are in the summary's ``warnings``."""
    path = Path(trace_path)
    _check_file(path)
    notes = StreamNotes()
    return import_calls(lambda: apitrace_calls(path, notes), out_path, source=str(path),
                        frames=frames, size=size, name=name or path.stem, frame_end=frame_end,
                        notes=notes)


def scan_apitrace(trace_path: str | os.PathLike, frame_end: str = "auto") -> ScanResult:
    """Pass 1 alone over an apitrace capture: where its frames end (for ``tilesim reference``),
    checked as the import checks them; the import's warnings in ``warnings``."""
    path = Path(trace_path)
    _check_file(path)
    notes = StreamNotes()
    stream = apitrace_calls(path, notes)
    try:
        scan = scan_calls(stream, str(path), None, frame_end)
    finally:
        _close(stream)
    check_frame_ends(scan, str(path), frame_end, notes)
    scan.warnings = capture_warnings(scan, notes)
    return scan


def import_pickle(pickle_path: str | os.PathLike, out_path: str | os.PathLike,
                  **options) -> ImportSummary:
    """Import the output of ``apitrace pickle`` saved in a file (tests, other machines)."""
    path = Path(pickle_path)
    notes = StreamNotes()

    def calls() -> Iterator[Call]:
        from tilesim.inputs import open_input

        stream = open_input(path, "apitrace pickle file", whole=False)
        with stream:
            yield from read_calls(stream, source=str(path), notes=notes)

    return import_calls(calls, out_path, source=str(path), notes=notes, **options)


# --- command line ----------------------------------------------------------------------------
