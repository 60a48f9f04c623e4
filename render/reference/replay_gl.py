"""Replay a trace on Mesa (llvmpipe or softpipe) through a real OpenGL ES 2.0 context.

This is the reference renderer of the conformance tests: :func:`replay` (or
:func:`reference_frames`) runs every command of a trace (a ``.tsim`` file, an open
:class:`tilesim.render.traces.trace_file.Trace`, a
:class:`tilesim.render.gl.commands.Recorder`, or frames of
:class:`tilesim.render.gl.commands.Command`) on Mesa and returns, at each ``endFrame``, the
color buffer of the window-system framebuffer as a (height, width, 4) ``uint8`` RGBA array
with **row 0 the top of the image** (GL reads back bottom-up; the rows are flipped). A frame
with a ``readPixels`` command (programs that never swap end their frames with glReadPixels)
returns what its last ``readPixels`` read instead: that rectangle of the framebuffer then bound.

How, and why this way:

- A GLES 2.0 context, not moderngl's desktop core context. Commands map one to one onto GLES2
  entry points called through ctypes (``libGLESv2``); the context comes from EGL's surfaceless
  platform (the same setup as :mod:`tilesim.shaders.mesa_softpipe_child`) with
  ``MESA_GLES_VERSION_OVERRIDE=2.0``, so Mesa applies OpenGL ES 2.0 rules. A desktop core
  context would need a translation layer with its own semantics: VAOs, no client-side arrays,
  no LUMINANCE / ALPHA formats, no FIXED attributes, ``#version 100`` only through
  ARB_ES2_compatibility. Here GLSL runs exactly as the application wrote it (no ``#version``
  line added, no precision raised: a GLES context reads a source without ``#version`` as
  GLSL ES 1.00), client arrays are passed as client pointers, and so on.
- Mesa runs in a child process (``python -m tilesim.render.reference.replay_gl REQUEST OUT``) with
  ``GALLIUM_DRIVER`` set, so the driver choice cannot leak into other Mesa users of the calling
  process and a driver crash cannot take the caller down. The child reads the trace lazily,
  frame by frame, from a ``.tsim`` file (frames given in memory are written to a temporary one)
  and writes each wanted image as a ``.npy`` file as soon as the frame ends.
- The window-system framebuffer (id 0 in the trace) is emulated by a framebuffer object of the
  trace's size with an RGBA8 color renderbuffer and a depth / stencil renderbuffer of the
  trace's ``depth_bits`` / ``stencil_bits`` (DEPTH_COMPONENT16/24, DEPTH24_STENCIL8,
  STENCIL_INDEX8). It starts cleared to (0, 0, 0, 0), depth 1, stencil 0, with viewport and
  scissor box set to the whole window (what EGL does when a context is first made current on a
  window), and keeps its contents across ``endFrame`` (as EGL_BUFFER_PRESERVED would).
- Every command is checked before it reaches GL where a bad value could make the driver read
  outside a client array: texel, buffer and client-array sizes, index ranges of every draw
  against the arrays the program reads. Trace ids are mapped to GL names; using an id that was
  never created is an error. After each command ``glGetError`` is read: a GL error is an
  :class:`~tilesim.errors.InputError` naming the trace, frame and command (``strict=False``
  turns them into warnings in :attr:`ReplayResult.warnings`, and GL then ignores the command as
  it would in the application).

Timing: :class:`GLReplayer` calls a :class:`ReplayObserver` before and after every command and at
the end of each frame; :class:`FinishTimer` (``replay(..., time_commands=True)``) separates
commands with ``glFinish`` and records the wall time of each, which is the hook a later
execution-time study can build on (group commands between observer calls as it needs).
"""

from __future__ import annotations

import ctypes
import faulthandler
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from tilesim.errors import InputError, ToolMissing
from tilesim.mesa import DRIVERS, EXIT_NO_MESA, GL, NoMesa, child_environment, proc_address
from tilesim.render.gl.commands import (
    FRAME_END,
    GL_ENUM_NAMES,
    SCHEMA,
    UNPACK_SUBIMAGE,
    Command,
    Recorder,
)
from tilesim.render.gl.textures import unpack_layout
from tilesim.render.traces.trace_file import Trace, open_trace, write_trace
from tilesim.shaders.texture_lod import RewriteError, rewrite_program, uses_texture_lod

EXIT_INPUT = 2

# --- GL enumerants -----------------------------------------------------------------------------

# Every enumerant name of the schema -> its GLES2 value (ZERO and ONE share values with POINTS
# and LINES, so the recorder's number -> name table cannot hold them).
GL_ENUMS: dict[str, int] = {name: value for value, name in GL_ENUM_NAMES.items()}
GL_ENUMS.update({"ZERO": 0, "ONE": 1})
# Desktop GL's GL_HALF_FLOAT: OES_texture_half_float's data as a desktop context (the
# conformance sample count's) takes them; 0x8D61 is an ES enumerant only.
GL_HALF_FLOAT = 0x140B

GL_NO_ERROR = 0
GL_ERRORS = {0x0500: "INVALID_ENUM", 0x0501: "INVALID_VALUE", 0x0502: "INVALID_OPERATION",
             0x0505: "OUT_OF_MEMORY", 0x0506: "INVALID_FRAMEBUFFER_OPERATION"}
GL_TEXTURE0 = 0x84C0
GL_FRAMEBUFFER = 0x8D40
GL_RENDERBUFFER = 0x8D41
GL_FRAMEBUFFER_COMPLETE = 0x8CD5
GL_COLOR_ATTACHMENT0 = 0x8CE0
GL_FRAMEBUFFER_ATTACHMENT_OBJECT_TYPE = 0x8CD0
GL_FRAMEBUFFER_ATTACHMENT_OBJECT_NAME = 0x8CD1
GL_FRAMEBUFFER_ATTACHMENT_TEXTURE_LEVEL = 0x8CD2
GL_FRAMEBUFFER_ATTACHMENT_TEXTURE_CUBE_MAP_FACE = 0x8CD3
GL_RENDERBUFFER_WIDTH = 0x8D42
GL_RENDERBUFFER_HEIGHT = 0x8D43
GL_RENDERBUFFER_BINDING = 0x8CA7
GL_TEXTURE = 0x1702
GL_TEXTURE_BINDINGS = {"TEXTURE_2D": 0x8069, "TEXTURE_CUBE_MAP": 0x8514,
                       "TEXTURE_3D_OES": 0x806A}
# OES_texture_3D's entry points, from eglGetProcAddress (a GLES2 context names them with the
# OES suffix, a desktop one without): C argument types.
_U3, _I3, _P3 = ctypes.c_uint, ctypes.c_int, ctypes.c_void_p
TEXTURE_3D_FUNCTIONS = {
    "glTexImage3D": [_U3, _I3, _I3, _I3, _I3, _I3, _I3, _U3, _U3, _P3],
    "glTexSubImage3D": [_U3, _I3, _I3, _I3, _I3, _I3, _I3, _I3, _U3, _U3, _P3],
    "glCopyTexSubImage3D": [_U3, _I3, _I3, _I3, _I3, _I3, _I3, _I3, _I3],
    "glCompressedTexImage3D": [_U3, _I3, _U3, _I3, _I3, _I3, _I3, _I3, _P3],
    "glFramebufferTexture3D": [_U3, _U3, _U3, _U3, _I3, _I3],
}
GL_VERTEX_SHADER = 0x8B31
GL_FRAGMENT_SHADER = 0x8B30
GL_ACTIVE_ATTRIBUTES = 0x8B89
GL_ACTIVE_ATTRIBUTE_MAX_LENGTH = 0x8B8A
GL_MAX_VERTEX_ATTRIBS = 0x8869
GL_MAX_COMBINED_TEXTURE_IMAGE_UNITS = 0x8B4D
GL_RENDERER = 0x1F01
GL_VERSION = 0x1F02
GL_MATRIX_COLUMNS = {0x8B5A: 2, 0x8B5B: 3, 0x8B5C: 4}  # FLOAT_MAT2/3/4 attributes

ATTRIB_TYPE_BYTES = {"BYTE": 1, "UNSIGNED_BYTE": 1, "SHORT": 2, "UNSIGNED_SHORT": 2,
                     "FIXED": 4, "FLOAT": 4, "HALF_FLOAT_OES": 2}
INDEX_DTYPES = {"UNSIGNED_BYTE": np.dtype(np.uint8), "UNSIGNED_SHORT": np.dtype("<u2"),
                "UNSIGNED_INT": np.dtype("<u4")}
FORMAT_CHANNELS = {"RGBA": 4, "RGB": 3, "LUMINANCE_ALPHA": 2, "LUMINANCE": 1, "ALPHA": 1,
                   "BGRA_EXT": 4,
                   "DEPTH_COMPONENT": 1}
UNIFORM_COMPONENTS = {"1f": 1, "2f": 2, "3f": 3, "4f": 4, "1i": 1, "2i": 2, "3i": 3, "4i": 4,
                      "Matrix2f": 4, "Matrix3f": 9, "Matrix4f": 16}
_INT_RANGE = (-(1 << 31), 1 << 32)  # GLint .. GLuint


def texel_bytes(width: int, height: int, fmt: str, type_: str, alignment: int,
                subimage: tuple[int, int, int] = (0, 0, 0)) -> int:
    """Bytes GL reads for a ``width`` x ``height`` image with UNPACK_ALIGNMENT ``alignment``
    and EXT_unpack_subimage's (UNPACK_ROW_LENGTH, UNPACK_SKIP_ROWS, UNPACK_SKIP_PIXELS)
    ``subimage`` (:func:`tilesim.render.gl.textures.unpack_layout`)."""
    if width <= 0 or height <= 0:
        return 0
    if type_ == "UNSIGNED_INT":  # GL_OES_depth_texture: DEPTH_COMPONENT, 32 bits a texel
        pixel = 4
    elif type_ == "HALF_FLOAT_OES":  # OES_texture_half_float: 2 bytes a component
        pixel = 2 * FORMAT_CHANNELS[fmt]
    else:
        pixel = FORMAT_CHANNELS[fmt] if type_ == "UNSIGNED_BYTE" else 2
    return unpack_layout(width, height, pixel, alignment, subimage)[2]


# --- observers (timing hooks) ----------------------------------------------------------------


class ReplayObserver:
    """Hooks a replay calls: around every command and at every ``endFrame``.

    ``frame`` and ``index`` are 0-based; ``image`` is the (H, W, 4) uint8 frame, row 0 on top,
    or None when that frame's image was not asked for.
    """

    def before_command(self, frame: int, index: int, command: Command) -> None:
        pass

    def after_command(self, frame: int, index: int, command: Command) -> None:
        pass

    def end_frame(self, frame: int, image: np.ndarray | None) -> None:
        pass


class FinishTimer(ReplayObserver):
    """Wall time of every command, each isolated by ``glFinish`` (seconds, per frame).

    ``seconds[f][k]`` is the time of command k of frame f, from a glFinish'd GPU to the end of
    that command's work (the readback of ``endFrame`` included).
    """

    def __init__(self, gl: GL):
        self.gl = gl
        self.seconds: list[list[float]] = []
        self._start = 0.0

    def before_command(self, frame, index, command):
        if index == 0:
            self.seconds.append([])
        self.gl.glFinish()
        self._start = time.perf_counter()

    def after_command(self, frame, index, command):
        self.gl.glFinish()
        self.seconds[-1].append(time.perf_counter() - self._start)


# --- the replayer ------------------------------------------------------------------------------


@dataclass
class _Attrib:
    """Client-side state of one vertex attribute array."""

    enabled: bool = False
    size: int = 4
    type: str = "FLOAT"
    stride: int = 0
    offset: int = 0
    buffer: int | None = None        # trace id of the ARRAY_BUFFER it reads, if any
    client: np.ndarray | None = None  # client array (uint8) it reads, if any

    def bytes_needed(self, max_index: int) -> int:
        element = self.size * ATTRIB_TYPE_BYTES[self.type]
        return self.offset + max_index * (self.stride or element) + element


@dataclass
class _VertexArray:
    """Client-side state of a vertex array object (OES_vertex_array_object; 0 the default):
    its attribute arrays and ELEMENT_ARRAY_BUFFER binding (a trace id)."""

    attribs: list[_Attrib]
    element_buffer: int = 0


@dataclass
class _Program:
    gl_name: int
    locations: list[int]                     # attribute locations the linked program reads
    uniforms: dict[str, int] = field(default_factory=dict)  # name -> location (cache)


class GLReplayer:
    """Executes commands on a current GLES2 context (see :class:`tilesim.mesa.GL`).

    ``width`` x ``height`` (pixels), ``depth_bits``, ``stencil_bits``: the window-system
    framebuffer to emulate. ``name`` prefixes error messages (the trace file). Feed it with
    :meth:`run` (frames) or :meth:`execute` (one command).
    """

    def __init__(self, gl: GL, width: int, height: int, *, depth_bits: int = 24,
                 stencil_bits: int = 0, name: str = "<trace>", strict: bool = True):
        self.gl, self.width, self.height, self.name = gl, width, height, name
        self.strict = strict
        self.warnings: list[str] = []
        self._handlers = {op: getattr(self, f"_{op}", None) for op in SCHEMA}
        self._names: dict[str, dict[int, int]] = {
            k: {} for k in ("buffer", "texture", "program", "framebuffer", "renderbuffer",
                            "vertex_array")}
        self._buffers: dict[int, np.ndarray] = {}   # trace id -> shadow copy of its contents
        self._array_buffer = 0
        self._framebuffer = 0
        self._renderbuffer = 0
        self._programs: dict[int, _Program] = {}
        self._program: _Program | None = None
        self._unpack_alignment = 4
        self._unpack_subimage = (0, 0, 0)  # EXT_unpack_subimage's three values
        self._pack_alignment = 4
        # (GL texture name, image target, level) -> (width, height): what a texture attached
        # to a framebuffer holds, for readPixels' bounds (GLES2 cannot query a texture's size)
        self._image_sizes: dict[tuple[int, int, int], tuple[int, int]] = {}
        self._texture_3d_functions: dict[str, object] = {}   # OES_texture_3D, on first use
        self._observed: np.ndarray | None = None  # what this frame's readPixels read
        self._attrib_count = gl.integer(GL_MAX_VERTEX_ATTRIBS)
        self._vertex_arrays = {0: self._new_vertex_array()}
        self._vertex_array = 0
        self._units = gl.integer(GL_MAX_COMBINED_TEXTURE_IMAGE_UNITS)
        self._default_fbo = self._make_window_framebuffer(depth_bits, stencil_bits)
        self._check_gl("setting up the window framebuffer")

    # -- plumbing ---------------------------------------------------------------------------

    def _make_window_framebuffer(self, depth_bits: int, stencil_bits: int) -> int:
        gl, w, h = self.gl, self.width, self.height
        fbo = gl.gen(gl.glGenFramebuffers)
        gl.glBindFramebuffer(GL_FRAMEBUFFER, fbo)
        attachments = [("COLOR_ATTACHMENT0", "RGBA8")]
        depth = {0: None, 16: "DEPTH_COMPONENT16", 24: "DEPTH_COMPONENT24"}
        if depth_bits not in depth:
            raise InputError(f"depth_bits {depth_bits} is not available in OpenGL ES 2.0 on "
                             "Mesa (use 0, 16 or 24)", source=self.name)
        if stencil_bits and depth_bits == 24:
            attachments.append(("DEPTH_ATTACHMENT+STENCIL_ATTACHMENT", "DEPTH24_STENCIL8"))
        elif stencil_bits and depth_bits:
            raise InputError("a stencil buffer needs depth_bits 0 or 24 here", source=self.name)
        else:
            if depth[depth_bits]:
                attachments.append(("DEPTH_ATTACHMENT", depth[depth_bits]))
            if stencil_bits:
                attachments.append(("STENCIL_ATTACHMENT", "STENCIL_INDEX8"))
        for points, fmt in attachments:
            rb = gl.gen(gl.glGenRenderbuffers)
            gl.glBindRenderbuffer(GL_RENDERBUFFER, rb)
            gl.glRenderbufferStorage(GL_RENDERBUFFER, GL_ENUMS[fmt], w, h)
            for point in points.split("+"):
                gl.glFramebufferRenderbuffer(GL_FRAMEBUFFER, GL_ENUMS[point], GL_RENDERBUFFER,
                                             rb)
        gl.glBindRenderbuffer(GL_RENDERBUFFER, 0)
        status = gl.glCheckFramebufferStatus(GL_FRAMEBUFFER)
        if status != GL_FRAMEBUFFER_COMPLETE:
            raise RuntimeError(f"window framebuffer emulation incomplete (0x{status:04X})")
        gl.glViewport(0, 0, w, h)
        gl.glScissor(0, 0, w, h)
        gl.glClear(GL_ENUMS["COLOR_BUFFER_BIT"] | GL_ENUMS["DEPTH_BUFFER_BIT"]
                   | GL_ENUMS["STENCIL_BUFFER_BIT"])
        return fbo

    def _fail(self, message: str, where: str) -> None:
        raise InputError(message, source=where)

    def _check_gl(self, where: str, op: str = "") -> None:
        errors = []
        for _ in range(8):
            code = self.gl.glGetError()
            if code == GL_NO_ERROR:
                break
            errors.append(GL_ERRORS.get(code, f"0x{code:04X}"))
        if errors:
            message = f"{op + ': ' if op else ''}GL error {', '.join(errors)} from Mesa"
            if self.strict:
                raise InputError(message, source=where)
            self.warnings.append(f"{where}: {message}")

    def _new_vertex_array(self) -> _VertexArray:
        return _VertexArray([_Attrib() for _ in range(self._attrib_count)])

    @property
    def _attribs(self) -> list[_Attrib]:
        return self._vertex_arrays[self._vertex_array].attribs

    @property
    def _element_buffer(self) -> int:
        return self._vertex_arrays[self._vertex_array].element_buffer

    @_element_buffer.setter
    def _element_buffer(self, ident: int) -> None:
        self._vertex_arrays[self._vertex_array].element_buffer = ident

    def _createVertexArray(self, a, where):
        self._names["vertex_array"][a["id"]] = self.gl.gen(self.gl.glGenVertexArrays)
        self._vertex_arrays[a["id"]] = self._new_vertex_array()

    def _bindVertexArray(self, a, where):
        self.gl.glBindVertexArray(self._gl_name("vertex_array", a["id"], where,
                                                "bindVertexArray"))
        self._vertex_array = a["id"]

    def _deleteVertexArray(self, a, where):
        name = self._names["vertex_array"].pop(a["id"], None)
        if name is None:
            return
        self.gl.delete(self.gl.glDeleteVertexArrays, name)
        self._vertex_arrays.pop(a["id"], None)
        if self._vertex_array == a["id"]:   # GL binds the default one
            self._vertex_array = 0

    def _gl_name(self, kind: str, ident: int, where: str, op: str) -> int:
        if ident == 0:
            return 0
        try:
            return self._names[kind][ident]
        except KeyError:
            raise InputError(f"{op}: {kind} {ident} was never created (or was deleted)",
                             source=where) from None

    def run(self, frames: Iterable[list[Command]], observer: ReplayObserver | None = None,
            wanted: set[int] | None = None) -> Iterable[tuple[int, np.ndarray | None]]:
        """Replay ``frames``; yields (frame index, image or None if not ``wanted``) at each
        ``endFrame``. ``wanted``: frame indices whose images to read back (None: all)."""
        observer = observer or ReplayObserver()
        for f, frame in enumerate(frames):
            image = None
            for k, command in enumerate(frame):
                observer.before_command(f, k, command)
                if command.op == FRAME_END:
                    if wanted is not None and f not in wanted:
                        image = None
                    elif self._observed is not None:
                        image = self._observed
                    else:
                        image = self.read_window()
                    self._observed = None
                else:
                    self.execute(command, f"{self.name}: frame {f}, command {k}")
                observer.after_command(f, k, command)
            observer.end_frame(f, image)
            yield f, image

    def execute(self, command: Command, where: str) -> None:
        """Run one command (not ``endFrame``); InputError names ``where`` on any problem."""
        handler = self._handlers.get(command.op)
        if handler is None:
            raise InputError(f"command {command.op!r} is not supported by the GL replayer",
                             source=where)
        for key, value in command.args.items():
            if isinstance(value, int) and not isinstance(value, bool) and \
                    not _INT_RANGE[0] <= value < _INT_RANGE[1]:
                raise InputError(f"{command.op}: argument {key!r} = {value} does not fit a GL "
                                 "integer", source=where)
        handler(command.args, where)
        self._check_gl(where, command.op)

    def read_window(self) -> np.ndarray:
        """The window framebuffer's color buffer: (H, W, 4) uint8, row 0 = top of the image."""
        gl = self.gl
        gl.glBindFramebuffer(GL_FRAMEBUFFER, self._default_fbo)
        gl.glPixelStorei(GL_ENUMS["PACK_ALIGNMENT"], 1)
        pixels = np.empty((self.height, self.width, 4), dtype=np.uint8)
        gl.glReadPixels(0, 0, self.width, self.height, GL_ENUMS["RGBA"],
                        GL_ENUMS["UNSIGNED_BYTE"], pixels.ctypes.data)
        gl.glPixelStorei(GL_ENUMS["PACK_ALIGNMENT"], self._pack_alignment)
        gl.glBindFramebuffer(GL_FRAMEBUFFER, self._bound_fbo())
        self._check_gl(f"{self.name}: reading the frame back")
        return np.ascontiguousarray(pixels[::-1])

    def _framebuffer_size(self, where: str) -> tuple[int, int] | None:
        """(width, height) of the bound framebuffer's color buffer; None without one."""
        if not self._framebuffer:
            return self.width, self.height
        gl, value = self.gl, ctypes.c_int()

        def attachment(pname: int) -> int:
            gl.glGetFramebufferAttachmentParameteriv(GL_FRAMEBUFFER, GL_COLOR_ATTACHMENT0,
                                                     pname, ctypes.byref(value))
            return value.value

        kind = attachment(GL_FRAMEBUFFER_ATTACHMENT_OBJECT_TYPE)
        if kind == GL_RENDERBUFFER:
            previous = gl.integer(GL_RENDERBUFFER_BINDING)
            gl.glBindRenderbuffer(GL_RENDERBUFFER,
                                  attachment(GL_FRAMEBUFFER_ATTACHMENT_OBJECT_NAME))
            size = []
            for pname in (GL_RENDERBUFFER_WIDTH, GL_RENDERBUFFER_HEIGHT):
                gl.glGetRenderbufferParameteriv(GL_RENDERBUFFER, pname, ctypes.byref(value))
                size.append(value.value)
            gl.glBindRenderbuffer(GL_RENDERBUFFER, previous)
            return size[0], size[1]
        if kind == GL_TEXTURE:
            name = attachment(GL_FRAMEBUFFER_ATTACHMENT_OBJECT_NAME)
            level = attachment(GL_FRAMEBUFFER_ATTACHMENT_TEXTURE_LEVEL)
            face = attachment(GL_FRAMEBUFFER_ATTACHMENT_TEXTURE_CUBE_MAP_FACE)
            return self._image_sizes.get((name, face or GL_ENUMS["TEXTURE_2D"], level))
        return None

    def _readPixels(self, a, where):
        size = self._framebuffer_size(where)
        self._check_gl(where, "readPixels")
        x, y, w, h = a["x"], a["y"], a["width"], a["height"]
        if size is None:
            raise InputError(f"readPixels: framebuffer {self._framebuffer} has no color "
                             "attachment with an image to read", source=where)
        if w < 1 or h < 1 or x < 0 or y < 0 or x + w > size[0] or y + h > size[1]:
            raise InputError(f"readPixels: the {w}x{h} rectangle at ({x}, {y}) does not lie "
                             f"inside the {size[0]}x{size[1]} framebuffer", source=where)
        gl = self.gl
        gl.glPixelStorei(GL_ENUMS["PACK_ALIGNMENT"], 1)
        pixels = np.zeros((h, w, 4), dtype=np.uint8)
        gl.glReadPixels(x, y, w, h, GL_ENUMS["RGBA"], GL_ENUMS["UNSIGNED_BYTE"],
                        pixels.ctypes.data)
        gl.glPixelStorei(GL_ENUMS["PACK_ALIGNMENT"], self._pack_alignment)
        self._observed = np.ascontiguousarray(pixels[::-1])

    def _bound_fbo(self) -> int:
        return self._names["framebuffer"][self._framebuffer] if self._framebuffer else \
            self._default_fbo

    @staticmethod
    def _bytes(array: np.ndarray) -> np.ndarray:
        """A blob as contiguous bytes (GL reads bytes; the trace keeps arrays as given)."""
        return np.ascontiguousarray(array).reshape(-1).view(np.uint8)

    # -- buffers ----------------------------------------------------------------------------

    def _createBuffer(self, a, where):
        self._names["buffer"][a["id"]] = self.gl.gen(self.gl.glGenBuffers)
        self._buffers[a["id"]] = np.zeros(0, dtype=np.uint8)

    def _deleteBuffer(self, a, where):
        name = self._names["buffer"].pop(a["id"], None)
        if name is None:
            return  # GL ignores names that are not buffers
        self.gl.delete(self.gl.glDeleteBuffers, name)
        self._buffers.pop(a["id"], None)
        # GL unbinds a deleted buffer from every binding of the context (ES 2.0 sec. 2.9)
        if self._array_buffer == a["id"]:
            self._array_buffer = 0
        if self._element_buffer == a["id"]:
            self._element_buffer = 0
        for attrib in self._attribs:
            if attrib.buffer == a["id"]:
                attrib.buffer = None

    def _bindBuffer(self, a, where):
        name = self._gl_name("buffer", a["id"], where, "bindBuffer")
        self.gl.glBindBuffer(GL_ENUMS[a["target"]], name)
        if a["target"] == "ARRAY_BUFFER":
            self._array_buffer = a["id"]
        else:
            self._element_buffer = a["id"]

    def _bound_buffer(self, target: str, where: str, op: str) -> int:
        ident = self._array_buffer if target == "ARRAY_BUFFER" else self._element_buffer
        if not ident:
            raise InputError(f"{op}: no buffer is bound to {target}", source=where)
        return ident

    def _bufferData(self, a, where):
        ident = self._bound_buffer(a["target"], where, "bufferData")
        size, data = a["size"], a["data"]
        if size < 0:
            raise InputError(f"bufferData: negative size {size}", source=where)
        if data is None:
            shadow = np.zeros(size, dtype=np.uint8)
        else:
            raw = self._bytes(data)
            if raw.size < size:
                raise InputError(f"bufferData: size is {size} bytes but the data holds only "
                                 f"{raw.size}", source=where)
            shadow = raw[:size].copy()
        self.gl.glBufferData(GL_ENUMS[a["target"]], size,
                             None if data is None else shadow.ctypes.data, GL_ENUMS[a["usage"]])
        self._buffers[ident] = shadow

    def _bufferSubData(self, a, where):
        ident = self._bound_buffer(a["target"], where, "bufferSubData")
        raw, offset, shadow = self._bytes(a["data"]), a["offset"], self._buffers[ident]
        if offset < 0 or offset + raw.size > shadow.size:
            raise InputError(f"bufferSubData: bytes {offset}..{offset + raw.size} lie outside "
                             f"the buffer's {shadow.size} bytes", source=where)
        self.gl.glBufferSubData(GL_ENUMS[a["target"]], offset, raw.size, raw.ctypes.data)
        shadow[offset:offset + raw.size] = raw

    # -- textures ---------------------------------------------------------------------------

    def _createTexture(self, a, where):
        self._names["texture"][a["id"]] = self.gl.gen(self.gl.glGenTextures)

    def _deleteTexture(self, a, where):
        name = self._names["texture"].pop(a["id"], None)
        if name is not None:
            self.gl.delete(self.gl.glDeleteTextures, name)
            for key in [k for k in self._image_sizes if k[0] == name]:
                del self._image_sizes[key]

    def _note_image_size(self, a) -> None:
        """Remember the size of the image texImage2D / copyTexImage2D specified."""
        kind = "TEXTURE_2D" if a["target"] == "TEXTURE_2D" else "TEXTURE_CUBE_MAP"
        name = self.gl.integer(GL_TEXTURE_BINDINGS[kind])
        self._image_sizes[(name, GL_ENUMS[a["target"]], a["level"])] = (a["width"], a["height"])

    def _activeTexture(self, a, where):
        if not 0 <= a["unit"] < self._units:
            raise InputError(f"activeTexture: unit {a['unit']} is not in 0..{self._units - 1}",
                             source=where)
        self.gl.glActiveTexture(GL_TEXTURE0 + a["unit"])

    def _bindTexture(self, a, where):
        self.gl.glBindTexture(GL_ENUMS[a["target"]],
                              self._gl_name("texture", a["id"], where, "bindTexture"))

    def _pixelStorei(self, a, where):
        if a["pname"] in UNPACK_SUBIMAGE:
            if a["value"] < 0:
                raise InputError(f"pixelStorei: {a['pname']} must not be negative, got "
                                 f"{a['value']}", source=where)
            self.gl.glPixelStorei(GL_ENUMS[a["pname"]], a["value"])
            unpack = list(self._unpack_subimage)
            unpack[UNPACK_SUBIMAGE.index(a["pname"])] = a["value"]
            self._unpack_subimage = tuple(unpack)
            return
        if a["value"] not in (1, 2, 4, 8):
            raise InputError(f"pixelStorei: {a['pname']} must be 1, 2, 4 or 8, got "
                             f"{a['value']}", source=where)
        self.gl.glPixelStorei(GL_ENUMS[a["pname"]], a["value"])
        if a["pname"] == "UNPACK_ALIGNMENT":
            self._unpack_alignment = a["value"]
        else:
            self._pack_alignment = a["value"]

    def _texels(self, a, where, op) -> np.ndarray | None:
        """The texel bytes, checked to hold what GL will read (None: no data)."""
        if a["data"] is None:
            return None
        raw = self._bytes(a["data"])
        need = texel_bytes(a["width"], a["height"], a["format"], a["type"],
                           self._unpack_alignment, self._unpack_subimage)
        if raw.size < need:
            raise InputError(f"{op}: a {a['width']}x{a['height']} {a['format']} "
                             f"{a['type']} image with UNPACK_ALIGNMENT {self._unpack_alignment} "
                             f"needs {need} bytes, the data holds {raw.size}", source=where)
        return raw

    def _texel_type(self, name: str) -> int:
        """The GL value of a texel or attribute type on this context (HALF_FLOAT_OES, of
        OES_texture_half_float and OES_vertex_half_float, is GL_HALF_FLOAT on a desktop one)."""
        if name == "HALF_FLOAT_OES" and getattr(self.gl, "api", "gles2") == "gl":
            return GL_HALF_FLOAT
        return GL_ENUMS[name]

    def _texImage2D(self, a, where):
        raw = self._texels(a, where, "texImage2D")
        self.gl.glTexImage2D(GL_ENUMS[a["target"]], a["level"], GL_ENUMS[a["internalformat"]],
                             a["width"], a["height"], 0, GL_ENUMS[a["format"]],
                             self._texel_type(a["type"]), None if raw is None
                             else raw.ctypes.data)
        self._note_image_size(a)

    def _texSubImage2D(self, a, where):
        raw = self._texels(a, where, "texSubImage2D")
        self.gl.glTexSubImage2D(GL_ENUMS[a["target"]], a["level"], a["xoffset"], a["yoffset"],
                                a["width"], a["height"], GL_ENUMS[a["format"]],
                                self._texel_type(a["type"]), raw.ctypes.data)

    def _compressedTexImage2D(self, a, where):
        """OES_compressed_ETC1_RGB8_texture, EXT_texture_compression_s3tc: the blocks as
        recorded (imageSize = their length); Mesa decodes them (S3TC on sampling, in
        llvmpipe's gallivm code, whose rounding render/gl/compressed.py reproduces)."""
        raw = self._bytes(a["data"])
        self.gl.glCompressedTexImage2D(GL_ENUMS[a["target"]], a["level"],
                                       GL_ENUMS[a["internalformat"]], a["width"], a["height"],
                                       0, raw.size, raw.ctypes.data)
        self._note_image_size(a)

    def _compressedTexSubImage2D(self, a, where):
        """EXT_compressed_ETC1_RGB8_sub_texture, S3TC: the blocks of a rectangle as
        recorded."""
        raw = self._bytes(a["data"])
        self.gl.glCompressedTexSubImage2D(GL_ENUMS[a["target"]], a["level"], a["xoffset"],
                                          a["yoffset"], a["width"], a["height"],
                                          GL_ENUMS[a["format"]], raw.size, raw.ctypes.data)

    def _copyTexImage2D(self, a, where):
        self.gl.glCopyTexImage2D(GL_ENUMS[a["target"]], a["level"],
                                 GL_ENUMS[a["internalformat"]], a["x"], a["y"], a["width"],
                                 a["height"], 0)
        self._note_image_size(a)

    def _copyTexSubImage2D(self, a, where):
        self.gl.glCopyTexSubImage2D(GL_ENUMS[a["target"]], a["level"], a["xoffset"],
                                    a["yoffset"], a["x"], a["y"], a["width"], a["height"])

    # -- OES_texture_3D ---------------------------------------------------------------------

    def _gl3d(self, name: str):
        """An OES_texture_3D entry point of this context (``name`` without the suffix)."""
        cache = self._texture_3d_functions
        if name not in cache:
            suffix = "" if getattr(self.gl, "api", "gles2") == "gl" else "OES"
            cache[name] = ctypes.CFUNCTYPE(None, *TEXTURE_3D_FUNCTIONS[name])(
                proc_address(name + suffix))
        return cache[name]

    def _texels_3d(self, a, where, op) -> np.ndarray | None:
        """A 3D image's texel bytes (its slices of ``height`` rows one after another),
        checked to hold what GL reads."""
        if a["data"] is None:
            return None
        raw = self._bytes(a["data"])
        need = texel_bytes(a["width"], a["height"] * a["depth"], a["format"], a["type"],
                           self._unpack_alignment, self._unpack_subimage)
        if raw.size < need:
            raise InputError(f"{op}: a {a['width']}x{a['height']}x{a['depth']} {a['format']} "
                             f"{a['type']} image needs {need} bytes, the data holds "
                             f"{raw.size}", source=where)
        return raw

    def _texImage3D(self, a, where):
        raw = self._texels_3d(a, where, "texImage3D")
        self._gl3d("glTexImage3D")(GL_ENUMS[a["target"]], a["level"],
                                   GL_ENUMS[a["internalformat"]], a["width"], a["height"],
                                   a["depth"], 0, GL_ENUMS[a["format"]],
                                   self._texel_type(a["type"]),
                                   None if raw is None else raw.ctypes.data)

    def _texSubImage3D(self, a, where):
        raw = self._texels_3d(a, where, "texSubImage3D")
        self._gl3d("glTexSubImage3D")(GL_ENUMS[a["target"]], a["level"], a["xoffset"],
                                      a["yoffset"], a["zoffset"], a["width"], a["height"],
                                      a["depth"], GL_ENUMS[a["format"]],
                                      self._texel_type(a["type"]), raw.ctypes.data)

    def _copyTexSubImage3D(self, a, where):
        self._gl3d("glCopyTexSubImage3D")(GL_ENUMS[a["target"]], a["level"], a["xoffset"],
                                          a["yoffset"], a["zoffset"], a["x"], a["y"],
                                          a["width"], a["height"])

    def _compressedTexImage3D(self, a, where):
        raw = self._bytes(a["data"])
        self._gl3d("glCompressedTexImage3D")(GL_ENUMS[a["target"]], a["level"],
                                             GL_ENUMS[a["internalformat"]], a["width"],
                                             a["height"], a["depth"], 0, raw.size,
                                             raw.ctypes.data)

    def _framebufferTexture3D(self, a, where):
        self._attach_check(where, "framebufferTexture3D")
        self._gl3d("glFramebufferTexture3D")(
            GL_FRAMEBUFFER, GL_ENUMS[a["attachment"]], GL_ENUMS[a["textarget"]],
            self._gl_name("texture", a["texture"], where, "framebufferTexture3D"), a["level"],
            a["zoffset"])

    def _texParameter(self, a, where):
        self.gl.glTexParameteri(GL_ENUMS[a["target"]], GL_ENUMS[a["pname"]],
                                GL_ENUMS[a["value"]])

    def _texParameterf(self, a, where):
        """EXT_texture_filter_anisotropic's TEXTURE_MAX_ANISOTROPY_EXT (Mesa filters with it)."""
        self.gl.glTexParameterf(GL_ENUMS[a["target"]], GL_ENUMS[a["pname"]], a["value"])

    def _generateMipmap(self, a, where):
        self.gl.glGenerateMipmap(GL_ENUMS[a["target"]])

    # -- programs ---------------------------------------------------------------------------

    def _shader(self, kind: int, source: str, stage: str, where: str) -> int:
        shader, compiled = self.gl.compile_shader(kind, source)
        if not compiled:
            log = self.gl.shader_log(shader)
            self.gl.glDeleteShader(shader)
            raise InputError(f"createProgram: the {stage} shader does not compile on Mesa:\n"
                             + log.strip(), source=where)
        return shader

    def _createProgram(self, a, where):
        gl = self.gl
        vertex, fragment = a["vertex_glsl"], a["fragment_glsl"]
        if uses_texture_lod(vertex, fragment):
            # EXT_shader_texture_lod, which Mesa 22.3's GLSL ES 1.00 lacks: its GLSL ES 3.00
            # form, as tilesim's front end compiled it (tilesim.shaders.texture_lod)
            try:
                vertex, fragment = rewrite_program(vertex, fragment)
            except RewriteError as exc:
                raise InputError(f"createProgram: {exc}", source=where) from None
        vs = self._shader(GL_VERTEX_SHADER, vertex, "vertex", where)
        fs = self._shader(GL_FRAGMENT_SHADER, fragment, "fragment", where)
        program = gl.glCreateProgram()
        gl.glAttachShader(program, vs)
        gl.glAttachShader(program, fs)
        # The attribute locations the trace's vertexAttribPointer indices refer to: those the
        # program was linked with when it was recorded (interface.json).
        interface = a["interface"] if isinstance(a["interface"], dict) else {}
        bound = dict(interface.get("bound_attrib_locations") or {})
        for attribute in interface.get("attributes") or []:
            if isinstance(attribute, dict) and isinstance(attribute.get("location"), int) \
                    and attribute["location"] >= 0:
                bound[attribute.get("name")] = attribute["location"]
        for name, location in bound.items():
            if isinstance(name, str) and isinstance(location, int) and \
                    0 <= location < len(self._attribs):
                gl.glBindAttribLocation(program, location, name.encode("utf-8"))
        gl.glLinkProgram(program)
        gl.glDeleteShader(vs)
        gl.glDeleteShader(fs)
        if not gl.linked(program):
            log = gl.program_log(program)
            gl.glDeleteProgram(program)
            raise InputError("createProgram: the program does not link on Mesa:\n"
                             + log.strip(), source=where)
        locations = []
        for name, location, columns in self._active_attributes(program):
            wanted = bound.get(name)
            if wanted is not None and wanted != location:
                raise InputError(f"createProgram: attribute {name!r} was recorded at location "
                                 f"{wanted} but Mesa put it at {location}", source=where)
            locations += range(location, location + columns)
        self._names["program"][a["id"]] = program
        self._programs[a["id"]] = _Program(program, sorted(set(locations)))

    def _active_attributes(self, program: int) -> list[tuple[str, int, int]]:
        """(name, location, locations used) of each active attribute of a linked program."""
        gl, out = self.gl, []
        count, longest = ctypes.c_int(), ctypes.c_int()
        gl.glGetProgramiv(program, GL_ACTIVE_ATTRIBUTES, ctypes.byref(count))
        gl.glGetProgramiv(program, GL_ACTIVE_ATTRIBUTE_MAX_LENGTH, ctypes.byref(longest))
        for i in range(count.value):
            buf = ctypes.create_string_buffer(longest.value + 1)
            size, gltype = ctypes.c_int(), ctypes.c_uint()
            gl.glGetActiveAttrib(program, i, len(buf), None, ctypes.byref(size),
                                 ctypes.byref(gltype), buf)
            location = gl.glGetAttribLocation(program, buf.value)
            if location >= 0:  # built-ins (gl_VertexID) have none
                out.append((buf.value.decode("utf-8"), location,
                            GL_MATRIX_COLUMNS.get(gltype.value, 1) * max(size.value, 1)))
        return out

    def _deleteProgram(self, a, where):
        program = self._programs.pop(a["id"], None)
        self._names["program"].pop(a["id"], None)
        if program is not None:
            self.gl.glDeleteProgram(program.gl_name)  # GL defers it while in use

    def _useProgram(self, a, where):
        if a["id"] == 0:
            self._program = None
            self.gl.glUseProgram(0)
            return
        self._gl_name("program", a["id"], where, "useProgram")
        self._program = self._programs[a["id"]]
        self.gl.glUseProgram(self._program.gl_name)

    def _uniform(self, a, where):
        program = self._program
        if program is None:
            raise InputError(f"uniform {a['name']!r}: no program in use", source=where)
        location = program.uniforms.get(a["name"])
        if location is None:
            location = self.gl.glGetUniformLocation(program.gl_name, a["name"].encode("utf-8"))
            program.uniforms[a["name"]] = location
        if location < 0:
            return  # not an active uniform: GL ignores location -1
        function, values = a["function"], a["values"]
        n = UNIFORM_COMPONENTS[function]
        if not values or len(values) % n:
            raise InputError(f"uniform {a['name']!r}: {function} takes a multiple of {n} "
                             f"values, got {len(values)}", source=where)
        if function.endswith("i"):
            if any(float(v) != int(v) or not -(1 << 31) <= int(v) < (1 << 31)
                   for v in values):
                raise InputError(f"uniform {a['name']!r}: {function} takes 32-bit integers",
                                 source=where)
            array = (ctypes.c_int * len(values))(*(int(v) for v in values))
            getattr(self.gl, f"glUniform{function[0]}iv")(location, len(values) // n, array)
        else:
            array = (ctypes.c_float * len(values))(*values)
            if function.startswith("Matrix"):
                getattr(self.gl, f"glUniform{function}v")(location, len(values) // n, 0, array)
            else:
                getattr(self.gl, f"glUniform{function}v")(location, len(values) // n, array)

    # -- vertex attributes ------------------------------------------------------------------

    def _attrib(self, index: int, where: str, op: str) -> _Attrib:
        if not 0 <= index < len(self._attribs):
            raise InputError(f"{op}: attribute index {index} is not in "
                             f"0..{len(self._attribs) - 1}", source=where)
        return self._attribs[index]

    def _vertexAttribPointer(self, a, where):
        gl, index = self.gl, a["index"]
        attrib = self._attrib(index, where, "vertexAttribPointer")
        if not 1 <= a["size"] <= 4 or a["stride"] < 0 or a["offset"] < 0:
            raise InputError("vertexAttribPointer: size must be 1..4, stride and offset >= 0",
                             source=where)
        attrib.size, attrib.type, attrib.stride = a["size"], a["type"], a["stride"]
        attrib.offset = a["offset"]
        args = (index, a["size"], self._texel_type(a["type"]), int(a["normalized"]),
                a["stride"])
        if a["data"] is not None:
            # a client-side array: data + offset is the pointer GL reads at draw time
            attrib.client, attrib.buffer = self._bytes(a["data"]), None
            gl.glBindBuffer(GL_ENUMS["ARRAY_BUFFER"], 0)
            gl.glVertexAttribPointer(*args, attrib.client.ctypes.data + a["offset"])
            gl.glBindBuffer(GL_ENUMS["ARRAY_BUFFER"],
                            self._gl_name("buffer", self._array_buffer, where, "bind"))
        elif self._array_buffer:
            attrib.client, attrib.buffer = None, self._array_buffer
            gl.glVertexAttribPointer(*args, a["offset"])
        else:
            # no buffer and no data: GL would take the offset as an address; never give it one
            attrib.client = attrib.buffer = None
            gl.glVertexAttribPointer(*args, None)

    def _enableVertexAttribArray(self, a, where):
        self._attrib(a["index"], where, "enableVertexAttribArray").enabled = True
        self.gl.glEnableVertexAttribArray(a["index"])

    def _disableVertexAttribArray(self, a, where):
        self._attrib(a["index"], where, "disableVertexAttribArray").enabled = False
        self.gl.glDisableVertexAttribArray(a["index"])

    def _vertexAttrib(self, a, where):
        self._attrib(a["index"], where, "vertexAttrib")
        values = list(a["values"])
        if not 1 <= len(values) <= 4:
            raise InputError(f"vertexAttrib: 1 to 4 values, got {len(values)}", source=where)
        values += [0.0, 0.0, 0.0, 1.0][len(values):]
        self.gl.glVertexAttrib4fv(a["index"], (ctypes.c_float * 4)(*values))

    # -- draws ------------------------------------------------------------------------------

    def _check_arrays(self, max_index: int, where: str, op: str) -> None:
        """Every enabled array the program reads covers vertices 0..max_index."""
        if self._program is None:
            raise InputError(f"{op}: no program in use", source=where)
        for location in self._program.locations:
            attrib = self._attribs[location]
            if not attrib.enabled:
                continue
            if attrib.client is not None:
                have, what = attrib.client.size, "its client array holds"
            elif attrib.buffer is not None:
                have = self._buffers[attrib.buffer].size
                what = f"buffer {attrib.buffer} holds"
            else:
                raise InputError(f"{op}: attribute array {location} is enabled but has neither "
                                 "a buffer nor client data", source=where)
            need = attrib.bytes_needed(max_index)
            if need > have:
                raise InputError(f"{op}: vertex {max_index} of attribute {location} needs "
                                 f"{need} bytes, {what} {have}", source=where)

    def _drawArrays(self, a, where):
        if a["first"] < 0 or a["count"] < 0:
            raise InputError("drawArrays: first and count must be >= 0", source=where)
        if a["count"] == 0:
            return
        self._check_arrays(a["first"] + a["count"] - 1, where, "drawArrays")
        self.gl.glDrawArrays(GL_ENUMS[a["mode"]], a["first"], a["count"])

    def _drawElements(self, a, where):
        gl, count, dtype = self.gl, a["count"], INDEX_DTYPES[a["type"]]
        if count < 0 or a["offset"] < 0:
            raise InputError("drawElements: count and offset must be >= 0", source=where)
        if count == 0:
            return
        need = a["offset"] + count * dtype.itemsize
        if a["indices"] is not None:
            raw, what = self._bytes(a["indices"]), "the index array holds"
        elif self._element_buffer:
            raw = self._buffers[self._element_buffer]
            what = f"element buffer {self._element_buffer} holds"
        else:
            raise InputError("drawElements: no ELEMENT_ARRAY_BUFFER bound and no indices",
                             source=where)
        if need > raw.size:
            raise InputError(f"drawElements: {count} {a['type']} indices at offset "
                             f"{a['offset']} need {need} bytes, {what} {raw.size}",
                             source=where)
        indices = np.frombuffer(raw[a["offset"]:need].tobytes(), dtype=dtype)
        self._check_arrays(int(indices.max()), where, "drawElements")
        mode, type_ = GL_ENUMS[a["mode"]], GL_ENUMS[a["type"]]
        if a["indices"] is None:
            gl.glDrawElements(mode, count, type_, a["offset"])
            return
        gl.glBindBuffer(GL_ENUMS["ELEMENT_ARRAY_BUFFER"], 0)
        gl.glDrawElements(mode, count, type_, raw.ctypes.data + a["offset"])
        gl.glBindBuffer(GL_ENUMS["ELEMENT_ARRAY_BUFFER"],
                        self._gl_name("buffer", self._element_buffer, where, "bind"))

    # -- fixed-function state ---------------------------------------------------------------

    def _enable(self, a, where):
        self.gl.glEnable(GL_ENUMS[a["cap"]])

    def _disable(self, a, where):
        self.gl.glDisable(GL_ENUMS[a["cap"]])

    def _depthFunc(self, a, where):
        self.gl.glDepthFunc(GL_ENUMS[a["func"]])

    def _depthMask(self, a, where):
        self.gl.glDepthMask(int(a["flag"]))

    def _depthRangef(self, a, where):
        self.gl.glDepthRangef(a["near"], a["far"])

    def _clearColor(self, a, where):
        self.gl.glClearColor(a["red"], a["green"], a["blue"], a["alpha"])

    def _clearDepthf(self, a, where):
        self.gl.glClearDepthf(a["depth"])

    def _clearStencil(self, a, where):
        self.gl.glClearStencil(a["s"])

    def _clear(self, a, where):
        mask = 0
        for bit in a["mask"]:
            mask |= GL_ENUMS[bit]
        self.gl.glClear(mask)

    def _colorMask(self, a, where):
        self.gl.glColorMask(int(a["red"]), int(a["green"]), int(a["blue"]), int(a["alpha"]))

    def _blendFuncSeparate(self, a, where):
        self.gl.glBlendFuncSeparate(GL_ENUMS[a["src_rgb"]], GL_ENUMS[a["dst_rgb"]],
                                    GL_ENUMS[a["src_alpha"]], GL_ENUMS[a["dst_alpha"]])

    def _blendEquationSeparate(self, a, where):
        self.gl.glBlendEquationSeparate(GL_ENUMS[a["mode_rgb"]], GL_ENUMS[a["mode_alpha"]])

    def _blendColor(self, a, where):
        self.gl.glBlendColor(a["red"], a["green"], a["blue"], a["alpha"])

    def _cullFace(self, a, where):
        self.gl.glCullFace(GL_ENUMS[a["mode"]])

    def _frontFace(self, a, where):
        self.gl.glFrontFace(GL_ENUMS[a["mode"]])

    def _viewport(self, a, where):
        self.gl.glViewport(a["x"], a["y"], a["width"], a["height"])

    def _scissor(self, a, where):
        self.gl.glScissor(a["x"], a["y"], a["width"], a["height"])

    def _lineWidth(self, a, where):
        self.gl.glLineWidth(a["width"])

    def _polygonOffset(self, a, where):
        self.gl.glPolygonOffset(a["factor"], a["units"])

    def _stencilFuncSeparate(self, a, where):
        self.gl.glStencilFuncSeparate(GL_ENUMS[a["face"]], GL_ENUMS[a["func"]], a["ref"],
                                      a["mask"])

    def _stencilOpSeparate(self, a, where):
        self.gl.glStencilOpSeparate(GL_ENUMS[a["face"]], GL_ENUMS[a["fail"]],
                                    GL_ENUMS[a["zfail"]], GL_ENUMS[a["zpass"]])

    def _stencilMaskSeparate(self, a, where):
        self.gl.glStencilMaskSeparate(GL_ENUMS[a["face"]], a["mask"])

    def _hint(self, a, where):
        self.gl.glHint(GL_ENUMS[a["target"]], GL_ENUMS[a["mode"]])

    def _flush(self, a, where):
        self.gl.glFlush()

    def _finish(self, a, where):
        self.gl.glFinish()

    # -- framebuffer objects ----------------------------------------------------------------

    def _createFramebuffer(self, a, where):
        self._names["framebuffer"][a["id"]] = self.gl.gen(self.gl.glGenFramebuffers)

    def _deleteFramebuffer(self, a, where):
        name = self._names["framebuffer"].pop(a["id"], None)
        if name is None:
            return
        self.gl.delete(self.gl.glDeleteFramebuffers, name)
        if self._framebuffer == a["id"]:  # GL reverts to framebuffer 0: the window
            self._framebuffer = 0
            self.gl.glBindFramebuffer(GL_FRAMEBUFFER, self._default_fbo)

    def _bindFramebuffer(self, a, where):
        name = self._gl_name("framebuffer", a["id"], where, "bindFramebuffer")
        self._framebuffer = a["id"]
        self.gl.glBindFramebuffer(GL_FRAMEBUFFER, name or self._default_fbo)

    def _attach_check(self, where: str, op: str) -> None:
        if self._framebuffer == 0:
            raise InputError(f"{op}: framebuffer 0 (the window) is bound; attachments need a "
                             "framebuffer object", source=where)

    def _framebufferTexture2D(self, a, where):
        self._attach_check(where, "framebufferTexture2D")
        self.gl.glFramebufferTexture2D(
            GL_FRAMEBUFFER, GL_ENUMS[a["attachment"]], GL_ENUMS[a["textarget"]],
            self._gl_name("texture", a["texture"], where, "framebufferTexture2D"), a["level"])

    def _createRenderbuffer(self, a, where):
        self._names["renderbuffer"][a["id"]] = self.gl.gen(self.gl.glGenRenderbuffers)

    def _deleteRenderbuffer(self, a, where):
        name = self._names["renderbuffer"].pop(a["id"], None)
        if name is not None:
            self.gl.delete(self.gl.glDeleteRenderbuffers, name)
            if self._renderbuffer == a["id"]:
                self._renderbuffer = 0

    def _bindRenderbuffer(self, a, where):
        self.gl.glBindRenderbuffer(
            GL_RENDERBUFFER, self._gl_name("renderbuffer", a["id"], where, "bindRenderbuffer"))
        self._renderbuffer = a["id"]

    def _renderbufferStorage(self, a, where):
        if self._renderbuffer == 0:
            raise InputError("renderbufferStorage: no renderbuffer is bound", source=where)
        self.gl.glRenderbufferStorage(GL_RENDERBUFFER, GL_ENUMS[a["internalformat"]],
                                      a["width"], a["height"])

    def _framebufferRenderbuffer(self, a, where):
        self._attach_check(where, "framebufferRenderbuffer")
        self.gl.glFramebufferRenderbuffer(
            GL_FRAMEBUFFER, GL_ENUMS[a["attachment"]], GL_RENDERBUFFER,
            self._gl_name("renderbuffer", a["renderbuffer"], where, "framebufferRenderbuffer"))


# --- the parent side ---------------------------------------------------------------------------


class MesaUnavailable(ToolMissing):
    """No Mesa GLES2 context of the asked driver could be made here (says why)."""


@dataclass
class ReplayResult:
    """What a replay gives back.

    ``images[i]``: the (H, W, 4) uint8 RGBA image of frame ``frames[i]`` at its ``endFrame``,
    row 0 = top. ``command_seconds[f][k]``: wall time of command k of frame f (with
    ``time_commands``). ``warnings``: GL errors met with ``strict=False``.
    """

    images: list[np.ndarray]
    frames: list[int]
    renderer: str
    version: str
    command_seconds: list[list[float]] | None = None
    warnings: list[str] = field(default_factory=list)


TraceLike = Trace | str | os.PathLike | Recorder | Sequence[Sequence[Command]]


def replay(trace: TraceLike, *, driver: str = "llvmpipe", frames: Iterable[int] | None = None,
           width: int | None = None, height: int | None = None, depth_bits: int = 24,
           stencil_bits: int = 0, time_commands: bool = False, strict: bool = True,
           timeout: float = 1800) -> ReplayResult:
    """Replay ``trace`` on Mesa ``driver`` ("llvmpipe" or "softpipe") in a child process.

    ``trace``: a ``.tsim`` path, an open Trace, a Recorder (its complete frames), or a list of
    frames (then ``width`` and ``height`` are required; ``depth_bits`` / ``stencil_bits``
    describe its window framebuffer). ``frames``: indices of the frames whose images to return
    (default all; every frame is replayed anyway). Raises InputError for a bad trace or command
    (naming file, frame, command), MesaUnavailable when no such Mesa context can be made,
    RuntimeError when the child dies otherwise.
    """
    if driver not in DRIVERS:
        raise ValueError(f"driver must be one of {DRIVERS}, got {driver!r}")
    with tempfile.TemporaryDirectory(prefix="tilesim-replay-") as tmp:
        label = "<frames>"
        if isinstance(trace, Trace):
            path = label = trace.path
        elif isinstance(trace, (str, os.PathLike)):
            path = label = Path(trace)
            open_trace(path).close()  # header errors here, in the caller's process
        else:
            if isinstance(trace, Recorder):
                width, height, label = trace.width, trace.height, trace.name
                depth_bits, trace = trace.depth_bits, trace.recorded_frames()
            if width is None or height is None:
                raise ValueError("replaying frames needs width= and height=")
            path = write_trace(Path(tmp, "frames.tsim"), trace, width=width, height=height,
                               depth_bits=depth_bits, stencil_bits=stencil_bits,
                               name="<frames>")
        request = {"trace": str(Path(path).resolve()), "label": str(label), "driver": driver,
                   "time_commands": time_commands, "strict": strict,
                   "frames": None if frames is None else sorted(set(frames))}
        out = Path(tmp, "out")
        out.mkdir()
        (out / "request.json").write_text(json.dumps(request), encoding="utf-8")
        with open(out / "stderr.txt", "wb") as stderr:
            proc = subprocess.Popen(
                [sys.executable, "-m", "tilesim.render.reference.replay_gl",
                 str(out / "request.json"), str(out)],
                env=child_environment(driver, MESA_GLES_VERSION_OVERRIDE="2.0"),
                stdout=subprocess.DEVNULL, stderr=stderr)
            try:
                proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                raise RuntimeError(f"GL replay of {label} took more than {timeout} s") from None
            finally:
                if proc.poll() is None:
                    proc.kill()
                    proc.wait()
        return _collect(proc.returncode, out)


def _collect(returncode: int, out: Path) -> ReplayResult:
    stderr = (out / "stderr.txt").read_text(encoding="utf-8", errors="replace")
    if returncode == EXIT_INPUT and (out / "error.json").exists():
        error = json.loads((out / "error.json").read_text(encoding="utf-8"))
        raise InputError(error["message"], source=error["source"], line=error["line"],
                         column=error["column"])
    if returncode == EXIT_NO_MESA:
        lines = [line for line in stderr.strip().split("\n") if line.strip()]
        raise MesaUnavailable(f"Mesa GLES2 unusable: {lines[-1] if lines else 'no message'}; "
                              "install the Debian packages libgl1-mesa-dri libegl1 libgles2")
    if returncode != 0 or not (out / "result.json").exists():
        raise RuntimeError(f"GL replay process failed (exit {returncode}):\n{stderr[-4000:]}")
    meta = json.loads((out / "result.json").read_text(encoding="utf-8"))
    images = [np.load(out / f"frame_{f:06d}.npy", allow_pickle=False) for f in meta["frames"]]
    return ReplayResult(images, meta["frames"], meta["renderer"], meta["version"],
                        meta["command_seconds"], meta["warnings"])


def reference_frames(trace: TraceLike, driver: str = "llvmpipe", **options) -> list[np.ndarray]:
    """The image of every frame of ``trace`` rendered by Mesa ``driver``: (H, W, 4) uint8 RGBA
    arrays, row 0 = top. ``options`` go to :func:`replay`."""
    return replay(trace, driver=driver, **options).images


# --- the child process -------------------------------------------------------------------------


def _child(request_path: str, out_dir: str) -> int:
    faulthandler.enable()  # a driver crash prints where it happened
    out = Path(out_dir)
    request = json.loads(Path(request_path).read_text(encoding="utf-8"))
    try:
        gl = GL.create()
    except NoMesa as exc:
        print(f"no GLES2 context: {exc}", file=sys.stderr)
        return EXIT_NO_MESA
    renderer, version = gl.string(GL_RENDERER), gl.string(GL_VERSION)
    if not renderer.startswith(request["driver"]):
        print(f"renderer is {renderer!r}, not {request['driver']}", file=sys.stderr)
        return EXIT_NO_MESA
    wanted = None if request["frames"] is None else set(request["frames"])
    saved: list[int] = []
    try:
        with open_trace(request["trace"]) as trace:
            replayer = GLReplayer(gl, trace.width, trace.height, depth_bits=trace.depth_bits,
                                  stencil_bits=trace.stencil_bits, name=request["label"],
                                  strict=request["strict"])
            timer = FinishTimer(gl) if request["time_commands"] else None
            for f, image in replayer.run(trace.frames(), timer, wanted):
                if image is not None:
                    np.save(out / f"frame_{f:06d}.npy", image, allow_pickle=False)
                    saved.append(f)
    except InputError as exc:
        (out / "error.json").write_text(json.dumps({
            "message": exc.bare_message, "source": exc.source, "line": exc.line,
            "column": exc.column}), encoding="utf-8")
        return EXIT_INPUT
    result = {"renderer": renderer, "version": version, "frames": saved,
              "command_seconds": timer.seconds if timer else None,
              "warnings": replayer.warnings}
    (out / "result.json").write_text(json.dumps(result), encoding="utf-8")
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 3:
        print("usage: python -m tilesim.render.reference.replay_gl REQUEST.json OUT_DIR",
              file=sys.stderr)
        sys.exit(EXIT_INPUT)
    sys.exit(_child(sys.argv[1], sys.argv[2]))
