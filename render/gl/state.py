"""The GLES2 state machine: objects, bindings and the state every draw reads.

``GLState.apply(command)`` carries out every command that only changes state (the pipeline
handles draws, clears and frame ends). Like softpipe's sp_state_*.c files, this module knows
nothing about how drawing is done; the stages read what they need from it.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np

from tilesim.errors import InputError
from tilesim.memory_budget import check_memory
from tilesim.render.gl.commands import UNPACK_SUBIMAGE, Command
from tilesim.shaders.interpreter import MEDIUMP_MODES, Interpreter
from tilesim.shaders.ir import program_digest
from tilesim.shaders.parser import parse
from tilesim.shaders.precision import untracked_highp_lines
from tilesim.shaders.program_interface import check_interface

# Memory a texel costs: its stored components (up to four uint16) and their float32 RGBA
# expansion (tilesim.render.gl.textures.TextureImage); mipmaps add at most a third more.
TEXTURE_BYTES_PER_TEXEL = 24


@dataclass
class AttribArray:
    """One generic vertex attribute: array state (glVertexAttribPointer) and current value."""

    enabled: bool = False
    size: int = 4
    type: str = "FLOAT"
    normalized: bool = False
    stride: int = 0
    offset: int = 0
    buffer: int = 0               # ARRAY_BUFFER bound at glVertexAttribPointer time (0: client)
    client_data: np.ndarray | None = None
    current: tuple[float, float, float, float] = (0.0, 0.0, 0.0, 1.0)


@dataclass
class VertexArray:
    """A vertex array object (OES_vertex_array_object): the attribute arrays' state and the
    ELEMENT_ARRAY_BUFFER binding. The current attribute values (glVertexAttrib) are the
    context's, not the object's: :meth:`GLState._bindVertexArray` carries them over."""

    attribs: list[AttribArray]
    element_buffer: int = 0


@dataclass
class Program:
    """A linked program: both stages parsed and prepared, its interface and uniform values."""

    ident: int
    interface: dict
    vertex: Interpreter
    fragment: Interpreter
    vertex_glsl: str
    fragment_glsl: str
    uniforms: dict[str, tuple[str, list]] = field(default_factory=dict)  # name -> (fn, values)
    vertex_tgsi: str = ""
    fragment_tgsi: str = ""

    @cached_property
    def digests(self) -> tuple[str, str]:
        """Content digests of the vertex and fragment TGSI texts: the names under which the
        counters record each program's work (per-program work, Shader Core throughput)."""
        return program_digest(self.vertex_tgsi), program_digest(self.fragment_tgsi)

    @property
    def fragment_kills(self) -> bool:
        return any(i.opcode in ("KILL", "KILL_IF") for i in self.fragment.program.instructions)

    @property
    def fragment_uses_derivatives(self) -> bool:
        """Whether a fragment's result depends on its quad neighbours (DDX/DDY, or texture
        sampling with an implicit level of detail)."""
        return any(i.opcode in ("DDX", "DDY", "DDX_FINE", "DDY_FINE", "TEX", "TXB", "TXP")
                   for i in self.fragment.program.instructions)

    @property
    def fragment_writes_depth(self) -> bool:
        return any(s[0] == "POSITION" for s in self.fragment.program.output_semantics().values())


def _registers_declared(interface: dict, vertex, fragment, where: str) -> dict:
    """``interface`` (checked by :func:`tilesim.shaders.program_interface.check_interface`)
    when the registers it names are ones its TGSI declares: an attribute's IN registers, a
    Mesa state uniform's CONST slot. An attribute Mesa optimised away (registers null) gets
    none. InputError naming ``where`` otherwise."""
    inputs = max(vertex.register_count("IN"), 1)
    attributes = []
    for attribute in interface.get("attributes", []):
        registers = attribute.get("registers") or []
        for register in registers:
            if int(register[3:-1]) >= inputs:
                raise InputError(f"program interface: attribute {attribute['name']!r} is in "
                                 f"{register}, the vertex TGSI has {inputs} input(s)",
                                 source=where)
        attributes.append({**attribute, "registers": registers})
    programs = {"vertex": vertex, "fragment": fragment}
    for state in interface.get("state", []):
        program = programs.get(state.get("stage"))
        if program is None:
            continue
        slots = program.constant_slots()
        if state["slot"] >= slots:
            raise InputError(f"program interface: state uniform {state['name']!r} is in "
                             f"CONST[{state['slot']}], the {state['stage']} TGSI has {slots} "
                             "slot(s)", source=where)
    return {**interface, "attributes": attributes} if "attributes" in interface else interface


@dataclass
class Renderbuffer:
    ident: int
    format: str | None = None
    width: int = 0
    height: int = 0


@dataclass
class Framebuffer:
    """A framebuffer object: attachment point -> ('texture', id, target, level) or
    ('renderbuffer', id)."""

    ident: int
    attachments: dict[str, tuple] = field(default_factory=dict)


@dataclass
class FragmentState:
    depth_test: bool = False
    depth_func: str = "LESS"
    depth_mask: bool = True
    depth_range: tuple[float, float] = (0.0, 1.0)
    blend: bool = False
    blend_src_rgb: str = "ONE"
    blend_dst_rgb: str = "ZERO"
    blend_src_alpha: str = "ONE"
    blend_dst_alpha: str = "ZERO"
    blend_eq_rgb: str = "FUNC_ADD"
    blend_eq_alpha: str = "FUNC_ADD"
    blend_color: tuple[float, float, float, float] = (0.0, 0.0, 0.0, 0.0)
    color_mask: tuple[bool, bool, bool, bool] = (True, True, True, True)
    scissor_test: bool = False
    scissor: tuple[int, int, int, int] | None = None
    cull_face: bool = False
    cull_mode: str = "BACK"
    front_face: str = "CCW"
    polygon_offset_fill: bool = False
    polygon_offset: tuple[float, float] = (0.0, 0.0)
    stencil_test: bool = False
    dither: bool = True
    line_width: float = 1.0


class GLState:
    """Everything a GLES2 context holds, for one trace being replayed."""

    MAX_VERTEX_ATTRIBS = 16

    def __init__(self, width: int, height: int, source: str = "<trace>", *,
                 mediump: str = "fp32", texture_units: int = 32,
                 viewport_max: tuple[int, int] = (16384, 16384),
                 renderbuffer_size_max: int = 16384):
        """``mediump``: how fragment and vertex programs compute ``mediump`` / ``lowp``:
        "fp32" (float32, as Mesa softpipe) or "fp16" (16-bit floats, as Mesa llvmpipe and
        mobile GPUs; :mod:`tilesim.shaders.interpreter`). ``texture_units``: how many units
        glActiveTexture may select, GL_MAX_COMBINED_TEXTURE_IMAGE_UNITS (OpenGL ES 2.0 spec
        section 3.7; the renderer passes the trace's or the GPU configuration's,
        :func:`tilesim.render.pipeline.gpu_config.gl_limits`). ``viewport_max``:
        GL_MAX_VIEWPORT_DIMS, which glViewport's size is clamped to (section 2.12.1);
        ``renderbuffer_size_max``: GL_MAX_RENDERBUFFER_SIZE, beyond which
        glRenderbufferStorage is INVALID_VALUE (section 4.4.3); both from the same place."""
        self.MAX_TEXTURE_UNITS = texture_units
        self.MAX_VIEWPORT_DIMS = tuple(viewport_max)
        self.MAX_RENDERBUFFER_SIZE = renderbuffer_size_max
        if mediump not in MEDIUMP_MODES:
            raise InputError(f"mediump must be one of {', '.join(MEDIUMP_MODES)}, got "
                             f"{mediump!r}", source=source)
        self.width, self.height = width, height
        self.source = source
        self.mediump = mediump
        self.programs_without_precision = 0  # fp16 mode: programs run in float32 all the same
        self.programs_with_untracked_highp = 0  # fp16 mode: may differ from llvmpipe
        self.buffers: dict[int, np.ndarray] = {}
        self.textures: dict[int, Any] = {}
        self.programs: dict[int, Program] = {}
        self.framebuffers: dict[int, Framebuffer] = {}
        self.renderbuffers: dict[int, Renderbuffer] = {}
        self.array_buffer = 0
        self.active_unit = 0
        self.bound_textures = {"TEXTURE_2D": [0] * self.MAX_TEXTURE_UNITS,
                               "TEXTURE_CUBE_MAP": [0] * self.MAX_TEXTURE_UNITS,
                               "TEXTURE_3D_OES": [0] * self.MAX_TEXTURE_UNITS}
        self.program = 0
        self.framebuffer = 0
        self.renderbuffer = 0
        self.vertex_arrays = {0: self._new_vertex_array()}
        self.vertex_array = 0
        self.fragment = FragmentState(scissor=(0, 0, width, height))
        self.viewport = (0, 0, width, height)
        self.clear_color = (0.0, 0.0, 0.0, 0.0)
        self.clear_depth = 1.0
        self.unpack_alignment = 4
        # EXT_unpack_subimage: UNPACK_ROW_LENGTH, UNPACK_SKIP_ROWS, UNPACK_SKIP_PIXELS
        self.unpack_subimage = (0, 0, 0)
        self.state_changes = 0
        self.where = source

    # -- helpers ----------------------------------------------------------------------------

    def _new_vertex_array(self) -> VertexArray:
        return VertexArray([AttribArray() for _ in range(self.MAX_VERTEX_ATTRIBS)])

    @property
    def attribs(self) -> list[AttribArray]:
        """The attribute arrays of the bound vertex array object."""
        return self.vertex_arrays[self.vertex_array].attribs

    @property
    def element_buffer(self) -> int:
        """ELEMENT_ARRAY_BUFFER, part of the bound vertex array object's state."""
        return self.vertex_arrays[self.vertex_array].element_buffer

    @element_buffer.setter
    def element_buffer(self, ident: int) -> None:
        self.vertex_arrays[self.vertex_array].element_buffer = ident

    def error(self, message: str) -> InputError:
        return InputError(message, source=self.where)

    def current_program(self) -> Program:
        program = self.programs.get(self.program)
        if program is None:
            raise self.error("draw with no program in use (useProgram was not called, or its "
                             "program was deleted)")
        return program

    def bound_texture(self, target: str) -> Any:
        ident = self.bound_textures[target][self.active_unit]
        texture = self.textures.get(ident)
        if texture is None:
            raise self.error(f"no texture bound to {target} on unit {self.active_unit}")
        texture.where = self.where  # its errors name the command at hand
        return texture

    def buffer_for(self, target: str) -> np.ndarray:
        ident = self.array_buffer if target == "ARRAY_BUFFER" else self.element_buffer
        if ident == 0 or ident not in self.buffers:
            raise self.error(f"no buffer bound to {target}")
        return self.buffers[ident]

    def _new_texture(self, ident: int):
        from tilesim.render.gl.textures import Texture

        # Mesa's GLES2 contexts expose GL_OES_texture_npot; traces captured on Mesa rely on it.
        return Texture(None, name=ident, oes_texture_npot=True, where=self.where)

    # -- commands ---------------------------------------------------------------------------

    def apply(self, command: Command) -> None:
        """Carry out a state command; draws, clears and frame ends are the pipeline's."""
        handler = getattr(self, "_" + command.op, None)
        if handler is None:
            raise self.error(f"command {command.op} is not supported by the renderer")
        if command.op not in ("uniform",):
            self.state_changes += 1
        handler(**command.args)

    # buffers
    def _createBuffer(self, id):
        self.buffers[id] = np.zeros(0, dtype=np.uint8)

    def _deleteBuffer(self, id):
        self.buffers.pop(id, None)
        if self.array_buffer == id:
            self.array_buffer = 0
        if self.element_buffer == id:   # only the bound vertex array object's (GL ES 2.0)
            self.element_buffer = 0

    def _bindBuffer(self, target, id):
        if id and id not in self.buffers:
            self.buffers[id] = np.zeros(0, dtype=np.uint8)  # GL creates names on first bind
        if target == "ARRAY_BUFFER":
            self.array_buffer = id
        else:
            self.element_buffer = id

    def _bufferData(self, target, data, size, usage):
        ident = self.array_buffer if target == "ARRAY_BUFFER" else self.element_buffer
        if ident == 0:
            raise self.error(f"bufferData with no buffer bound to {target}")
        if data is None:
            if size < 0:  # ES 2.0 §2.9: INVALID_VALUE
                raise self.error(f"bufferData: negative size {size}")
            # checked before allocating: a 2**40-byte buffer is a budget error, not an
            # "out of memory"; the budget counts the other buffers held too
            held = sum(buf.nbytes for key, buf in self.buffers.items() if key != ident)
            check_memory(f"bufferData: {size} bytes beside the {held} bytes buffers already "
                         "hold", held + max(int(size), 0), self.where)
            self.buffers[ident] = np.zeros(size, dtype=np.uint8)
        else:
            self.buffers[ident] = np.ascontiguousarray(data).view(np.uint8).ravel().copy()

    def _bufferSubData(self, target, offset, data):
        buf = self.buffer_for(target)
        raw = np.ascontiguousarray(data).view(np.uint8).ravel()
        if offset < 0 or offset + raw.size > buf.size:
            raise self.error(f"bufferSubData range {offset}..{offset + raw.size} outside the "
                             f"buffer's {buf.size} bytes")
        buf[offset:offset + raw.size] = raw

    # textures
    def _createTexture(self, id):
        self.textures[id] = self._new_texture(id)

    def _deleteTexture(self, id):
        self.textures.pop(id, None)
        for units in self.bound_textures.values():
            for i, bound in enumerate(units):
                if bound == id:
                    units[i] = 0

    def _activeTexture(self, unit):
        if not 0 <= unit < self.MAX_TEXTURE_UNITS:
            raise self.error(f"activeTexture: unit {unit} out of range "
                             f"0..{self.MAX_TEXTURE_UNITS - 1}")
        self.active_unit = unit

    def _bindTexture(self, target, id):
        if id and id not in self.textures:
            self.textures[id] = self._new_texture(id)
        if id:
            self.textures[id].bind_target(target)
        self.bound_textures[target][self.active_unit] = id

    def _pixelStorei(self, pname, value):
        if pname in UNPACK_SUBIMAGE:
            if value < 0:
                raise self.error(f"pixelStorei: {pname} must not be negative, got {value}")
            unpack = list(self.unpack_subimage)
            unpack[UNPACK_SUBIMAGE.index(pname)] = value
            self.unpack_subimage = tuple(unpack)
            return
        if value not in (1, 2, 4, 8):
            raise self.error(f"pixelStorei: alignment must be 1, 2, 4 or 8, got {value}")
        if pname == "UNPACK_ALIGNMENT":
            self.unpack_alignment = value

    def texture_for_image(self, target: str):
        if target in ("TEXTURE_2D", "TEXTURE_3D_OES"):
            return self.bound_texture(target)
        return self.bound_texture("TEXTURE_CUBE_MAP")

    def _texImage2D(self, target, level, internalformat, width, height, format, type, data):
        texture = self.texture_for_image(target)
        if isinstance(width, int) and isinstance(height, int) and width > 0 and height > 0:
            held = sum(image.width * image.height for t in self.textures.values()
                       for face in t.faces for image in face.values())
            check_memory(f"texImage2D: {width}x{height} texels beside the {held} texels "
                         "textures already hold", TEXTURE_BYTES_PER_TEXEL
                         * (held + width * height), self.where)
        texture.tex_image_2d(
            target, level, internalformat, width, height, format, type, data,
            self.unpack_alignment, subimage=self.unpack_subimage)

    def _compressedTexImage2D(self, target, level, internalformat, width, height, data):
        texture = self.texture_for_image(target)
        if width > 0 and height > 0:
            held = sum(image.width * image.height for t in self.textures.values()
                       for face in t.faces for image in face.values())
            check_memory(f"compressedTexImage2D: {width}x{height} texels beside the {held} "
                         "texels textures already hold", TEXTURE_BYTES_PER_TEXEL
                         * (held + width * height), self.where)
        texture.compressed_tex_image_2d(target, level, internalformat, width, height, data)

    def _compressedTexSubImage2D(self, target, level, xoffset, yoffset, width, height, format,
                                 data):
        self.texture_for_image(target).compressed_tex_sub_image_2d(
            target, level, xoffset, yoffset, width, height, format, data)

    def _texSubImage2D(self, target, level, xoffset, yoffset, width, height, format, type,
                       data):
        self.texture_for_image(target).tex_sub_image_2d(
            target, level, xoffset, yoffset, width, height, format, type, data,
            self.unpack_alignment, subimage=self.unpack_subimage)

    # OES_texture_3D
    def _texImage3D(self, target, level, internalformat, width, height, depth, format, type,
                    data):
        texture = self.texture_for_image(target)
        if min(width, height, depth) > 0:
            held = sum(image.width * image.height * image.depth for t in self.textures.values()
                       for face in t.faces for image in face.values())
            check_memory(f"texImage3D: {width}x{height}x{depth} texels beside the {held} "
                         "texels textures already hold", TEXTURE_BYTES_PER_TEXEL
                         * (held + width * height * depth), self.where)
        texture.tex_image_3d(target, level, internalformat, width, height, depth, format, type,
                             data, self.unpack_alignment, subimage=self.unpack_subimage)

    def _texSubImage3D(self, target, level, xoffset, yoffset, zoffset, width, height, depth,
                       format, type, data):
        self.texture_for_image(target).tex_sub_image_3d(
            target, level, xoffset, yoffset, zoffset, width, height, depth, format, type, data,
            self.unpack_alignment, subimage=self.unpack_subimage)

    def _compressedTexImage3D(self, target, level, internalformat, width, height, depth,
                              data):
        self.texture_for_image(target).compressed_tex_image_3d(
            target, level, internalformat, width, height, depth, data)

    def _texParameter(self, target, pname, value):
        self.bound_texture(target).set_parameter(pname, value)

    def _texParameterf(self, target, pname, value):
        self.bound_texture(target).parameter_float(pname, value)

    def _generateMipmap(self, target):
        self.bound_texture(target).generate_mipmap()

    # programs
    def _createProgram(self, id, vertex_glsl, fragment_glsl, vertex_tgsi, fragment_tgsi,
                       interface):
        where = f"{self.where}: program {id}"
        check_interface(interface, where)
        # interface.json's precision (absent in programs compiled before tilesim recorded it:
        # those run in float32 whatever the mode, and are counted).
        precision = interface.get("precision") if isinstance(interface, dict) else None
        if self.mediump == "fp16" and precision is None:
            if not self.programs_without_precision:
                warnings.warn(f"{where}: compiled before tilesim recorded GLSL precision, so its "
                              "mediump runs in float32 in fp16 mode (import the capture again "
                              "to compile it anew); later programs like it are only counted",
                              stacklevel=2)
            self.programs_without_precision += 1
        elif self.mediump == "fp16":
            untracked = {stage: untracked_highp_lines(glsl) for stage, glsl in
                         (("vertex", vertex_glsl), ("fragment", fragment_glsl))
                         if isinstance(glsl, str)}
            shown = "; ".join(f"{stage} GLSL line{'s' * (len(n) > 1)} "
                              f"{', '.join(map(str, n[:5]))}" for stage, n in untracked.items()
                              if n)
            if shown:
                if not self.programs_with_untracked_highp:
                    warnings.warn(f"{where}: declares highp locals, parameters or return types "
                                  f"({shown}) that tilesim's fp16 mode cannot follow through "
                                  "the TGSI: it computes them from their mediump operands in "
                                  "fp16, where llvmpipe keeps 32 bits, so its images can "
                                  "differ from llvmpipe's; later programs like it are only "
                                  "counted", stacklevel=2)
                self.programs_with_untracked_highp += 1

        def stage_precision(stage: str) -> list[str] | None:
            return None if precision is None else precision[stage]["instructions"]

        vertex = Interpreter(parse(vertex_tgsi, source=f"{where} vertex TGSI"),
                             precision=stage_precision("vertex"), mediump=self.mediump)
        fragment = Interpreter(parse(fragment_tgsi, source=f"{where} fragment TGSI"),
                               precision=stage_precision("fragment"), mediump=self.mediump)
        interface = _registers_declared(interface, vertex.program, fragment.program, where)
        self.programs[id] = Program(id, interface, vertex, fragment, vertex_glsl, fragment_glsl,
                                    vertex_tgsi=vertex_tgsi, fragment_tgsi=fragment_tgsi)

    def _deleteProgram(self, id):
        self.programs.pop(id, None)

    def _useProgram(self, id):
        if id and id not in self.programs:
            raise self.error(f"useProgram: program {id} does not exist")
        self.program = id

    def _uniform(self, name, function, values):
        program = self.current_program()
        program.uniforms[name] = (function, values)

    # vertex attributes
    def _attrib(self, index: int) -> AttribArray:
        if not 0 <= index < self.MAX_VERTEX_ATTRIBS:
            raise self.error(f"vertex attribute index {index} out of range "
                             f"0..{self.MAX_VERTEX_ATTRIBS - 1}")
        return self.attribs[index]

    def _vertexAttribPointer(self, index, size, type, normalized, stride, offset, data):
        if not 1 <= size <= 4:
            raise self.error(f"vertexAttribPointer: size must be 1..4, got {size}")
        if stride < 0:
            raise self.error(f"vertexAttribPointer: negative stride {stride}")
        a = self._attrib(index)
        a.size, a.type, a.normalized, a.stride = size, type, normalized, stride
        if data is not None:
            a.buffer, a.offset, a.client_data = 0, 0, np.ascontiguousarray(data).view(np.uint8)
        else:
            if self.array_buffer == 0:
                raise self.error("vertexAttribPointer with an offset but no ARRAY_BUFFER bound "
                                 "(client arrays must carry their data)")
            if offset < 0:  # an offset into the buffer: below it is no vertex data
                raise self.error(f"vertexAttribPointer: negative offset {offset}")
            a.buffer, a.offset, a.client_data = self.array_buffer, offset, None

    def _enableVertexAttribArray(self, index):
        self._attrib(index).enabled = True

    def _disableVertexAttribArray(self, index):
        self._attrib(index).enabled = False

    def _createVertexArray(self, id):
        if id == 0 or id in self.vertex_arrays:
            raise self.error(f"createVertexArray: vertex array {id} exists already")
        self.vertex_arrays[id] = self._new_vertex_array()

    def _bindVertexArray(self, id):
        if id not in self.vertex_arrays:
            raise self.error(f"bindVertexArray: vertex array {id} does not exist "
                             "(OES_vertex_array_object names come from glGenVertexArraysOES)")
        currents = [a.current for a in self.attribs]
        self.vertex_array = id
        for attrib, current in zip(self.attribs, currents, strict=True):
            attrib.current = current

    def _deleteVertexArray(self, id):
        if id == 0:
            return
        if id == self.vertex_array:     # deleting the bound object binds the default one
            self._bindVertexArray(0)
        self.vertex_arrays.pop(id, None)

    def _vertexAttrib(self, index, values):
        v = (list(values) + [0.0, 0.0, 0.0, 1.0][len(values):])[:4]
        self._attrib(index).current = tuple(float(x) for x in v)

    # fragment and rasterizer state
    _CAPS = {"DEPTH_TEST": "depth_test", "BLEND": "blend", "CULL_FACE": "cull_face",
             "SCISSOR_TEST": "scissor_test", "STENCIL_TEST": "stencil_test",
             "DITHER": "dither", "POLYGON_OFFSET_FILL": "polygon_offset_fill"}

    def _enable(self, cap):
        if cap in self._CAPS:
            setattr(self.fragment, self._CAPS[cap], True)

    def _disable(self, cap):
        if cap in self._CAPS:
            setattr(self.fragment, self._CAPS[cap], False)

    def _depthFunc(self, func):
        self.fragment.depth_func = func

    def _depthMask(self, flag):
        self.fragment.depth_mask = flag

    def _depthRangef(self, near, far):
        self.fragment.depth_range = (min(max(near, 0.0), 1.0), min(max(far, 0.0), 1.0))

    def _clearColor(self, red, green, blue, alpha):
        self.clear_color = tuple(min(max(c, 0.0), 1.0) for c in (red, green, blue, alpha))

    def _clearDepthf(self, depth):
        self.clear_depth = min(max(depth, 0.0), 1.0)

    def _clearStencil(self, s):
        pass  # no stencil buffer is modelled; STENCIL_TEST draws are refused at draw time

    def _colorMask(self, red, green, blue, alpha):
        self.fragment.color_mask = (red, green, blue, alpha)

    def _blendFuncSeparate(self, src_rgb, dst_rgb, src_alpha, dst_alpha):
        f = self.fragment
        f.blend_src_rgb, f.blend_dst_rgb = src_rgb, dst_rgb
        f.blend_src_alpha, f.blend_dst_alpha = src_alpha, dst_alpha

    def _blendEquationSeparate(self, mode_rgb, mode_alpha):
        self.fragment.blend_eq_rgb, self.fragment.blend_eq_alpha = mode_rgb, mode_alpha

    def _blendColor(self, red, green, blue, alpha):
        self.fragment.blend_color = tuple(min(max(c, 0.0), 1.0)
                                          for c in (red, green, blue, alpha))

    def _cullFace(self, mode):
        self.fragment.cull_mode = mode

    def _check_glint(self, op: str, **values) -> None:
        """Refuse a value outside GLint (32-bit signed, ES 2.0 §2.3): the pipeline computes
        with 32-bit floats and integers, where a larger one would overflow (a
        viewport x of 2**62 leaked a NumPy cast warning)."""
        for name, value in values.items():
            if not -(1 << 31) <= value < (1 << 31):
                raise self.error(f"{op}: {name} {value} is outside GLint "
                                 f"(-2147483648..2147483647)")

    def _frontFace(self, mode):
        self.fragment.front_face = mode

    def _viewport(self, x, y, width, height):
        if width < 0 or height < 0:
            raise self.error(f"viewport: negative size {width}x{height}")
        self._check_glint("viewport", x=x, y=y)
        # ES 2.0 §2.12.1: width and height are clamped to GL_MAX_VIEWPORT_DIMS
        self.viewport = (x, y, min(width, self.MAX_VIEWPORT_DIMS[0]),
                         min(height, self.MAX_VIEWPORT_DIMS[1]))

    def _scissor(self, x, y, width, height):
        if width < 0 or height < 0:
            raise self.error(f"scissor: negative size {width}x{height}")
        self._check_glint("scissor", x=x, y=y, width=width, height=height)
        self.fragment.scissor = (x, y, width, height)

    def _lineWidth(self, width):
        if width <= 0:
            raise self.error(f"lineWidth: width must be positive, got {width}")
        self.fragment.line_width = width

    def _polygonOffset(self, factor, units):
        self.fragment.polygon_offset = (factor, units)

    def _stencilFuncSeparate(self, face, func, ref, mask):
        pass  # stencil state is accepted; drawing with STENCIL_TEST enabled is refused

    def _stencilOpSeparate(self, face, fail, zfail, zpass):
        pass

    def _stencilMaskSeparate(self, face, mask):
        pass

    def _hint(self, target, mode):
        pass  # hints do not change results here

    # framebuffer objects
    def _createFramebuffer(self, id):
        self.framebuffers[id] = Framebuffer(id)

    def _deleteFramebuffer(self, id):
        self.framebuffers.pop(id, None)
        if self.framebuffer == id:
            self.framebuffer = 0

    def _bindFramebuffer(self, id):
        if id and id not in self.framebuffers:
            self.framebuffers[id] = Framebuffer(id)
        self.framebuffer = id

    def _current_fbo(self, op: str) -> Framebuffer:
        if self.framebuffer == 0:
            raise self.error(f"{op}: the default framebuffer is bound")
        return self.framebuffers[self.framebuffer]

    def _framebufferTexture2D(self, attachment, textarget, texture, level):
        fbo = self._current_fbo("framebufferTexture2D")
        if texture == 0:
            fbo.attachments.pop(attachment, None)
            return
        if texture not in self.textures:
            raise self.error(f"framebufferTexture2D: texture {texture} does not exist")
        fbo.attachments[attachment] = ("texture", texture, textarget, level)

    def _framebufferTexture3D(self, attachment, textarget, texture, level, zoffset):
        """glFramebufferTexture3DOES: slice ``zoffset`` of ``level`` (its image target kept as
        (TEXTURE_3D_OES, zoffset), which the texture's attachment methods take)."""
        fbo = self._current_fbo("framebufferTexture3D")
        if texture == 0:
            fbo.attachments.pop(attachment, None)
            return
        if texture not in self.textures:
            raise self.error(f"framebufferTexture3D: texture {texture} does not exist")
        if self.textures[texture].target != "TEXTURE_3D_OES":
            raise self.error(f"framebufferTexture3D: texture {texture} is not a 3D texture "
                             "(INVALID_OPERATION)")
        fbo.attachments[attachment] = ("texture", texture, (textarget, zoffset), level)

    def _createRenderbuffer(self, id):
        self.renderbuffers[id] = Renderbuffer(id)

    def _deleteRenderbuffer(self, id):
        self.renderbuffers.pop(id, None)

    def _bindRenderbuffer(self, id):
        if id and id not in self.renderbuffers:
            self.renderbuffers[id] = Renderbuffer(id)
        self.renderbuffer = id

    def _renderbufferStorage(self, internalformat, width, height):
        rb = self.renderbuffers.get(self.renderbuffer)
        if rb is None:
            raise self.error("renderbufferStorage with no renderbuffer bound")
        if min(width, height) < 0:  # ES 2.0 §4.4.3: INVALID_VALUE
            raise self.error(f"renderbufferStorage: negative size {width}x{height}")
        if max(width, height) > self.MAX_RENDERBUFFER_SIZE:  # ES 2.0 §4.4.3: INVALID_VALUE
            raise self.error(f"renderbufferStorage: {width}x{height} exceeds "
                             f"GL_MAX_RENDERBUFFER_SIZE {self.MAX_RENDERBUFFER_SIZE}")
        rb.format, rb.width, rb.height = internalformat, width, height

    def _framebufferRenderbuffer(self, attachment, renderbuffer):
        fbo = self._current_fbo("framebufferRenderbuffer")
        if renderbuffer == 0:
            fbo.attachments.pop(attachment, None)
            return
        if renderbuffer not in self.renderbuffers:
            raise self.error(f"framebufferRenderbuffer: renderbuffer {renderbuffer} "
                             "does not exist")
        fbo.attachments[attachment] = ("renderbuffer", renderbuffer)

    def _flush(self):
        pass

    def _finish(self):
        pass
