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
2. **translate** (:class:`~tilesim.render.traces.translator.Translator`, one module per GL
   domain beside it: ``translate_*.py``): every call becomes zero or more commands of
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
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from tilesim.atomic import check_output
from tilesim.errors import InputError
from tilesim.render.gl.extensions import extensions_used, unoffered_warning

# The translation's names (now in translator.py and its translate_*.py domains) stay importable
# from here: the imports marked F401.
from tilesim.render.traces.call_kinds import (  # noqa: F401
    DRAW_CALLS,
    FOLDED_CALLS,
    FRAME_END_SWAPS,
    OFF_SURFACE_READS,
    SKIPPED_CALLS,
    SKIPPED_PREFIXES,
    skip_kind,
)
from tilesim.render.traces.translate_attributes import MAX_VERTEX_ATTRIBS  # noqa: F401
from tilesim.render.traces.translate_fixed_function import CLEAR_BITS  # noqa: F401
from tilesim.render.traces.translate_framebuffers import (  # noqa: F401
    GL_FRAMEBUFFER,
    GL_RENDERBUFFER,
)
from tilesim.render.traces.translate_programs import (  # noqa: F401
    UNIFORM_COMPONENTS,
    UNIFORM_MATRIX_SHAPES,
    UNIFORM_SHAPES,
    UNIFORM_VECTOR_SHAPES,
)
from tilesim.render.traces.translate_textures import GL_TEXTURE0, MAX_TEXTURE_UNITS  # noqa: F401
from tilesim.render.traces.translator import Translator
from tilesim.shaders.trace_capture import (
    ANY_INT,
    GLINT,
    GLUINT,
    POINTER,
    Call,
    CallArgs,
    LinkedProgram,
    ProgramTracker,
    StreamNotes,
    apitrace_calls,
    read_calls,
)

EGL_DEPTH_SIZE = 0x3025
EGL_STENCIL_SIZE = 0x3026
EGL_HEIGHT = 0x3056
EGL_WIDTH = 0x3057
EGL_NONE = 0x3038
CALL_FLAG_FAKE = 1
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
# --frame-end choices -> the call that ends a frame (as the manifest's source records it)
FRAME_END_CHOICES = ("auto", "swap", "readpixels", "finish")
FRAME_END_NAMES = {"swap": "eglSwapBuffers", "readpixels": "glReadPixels", "finish": "glFinish"}
_FRAME_END_KIND = {**{name: "swap" for name in FRAME_END_SWAPS}, "glReadPixels": "readpixels",
                   "glFinish": "finish"}


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


# --- pass 2: translate ----------------------------------------------------------------------
# Translator (render/traces/translator.py), its handlers one module per GL domain beside it.


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
