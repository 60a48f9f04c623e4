"""The command stream: GLES2/EGL-level commands, their schema, and a WebGL-style recorder.

A trace is a list of frames; a frame is a list of ``Command`` records. Each command is an
operation name (the GLES2 entry point without its ``gl`` prefix, e.g. ``drawElements``) and
its arguments, checked against ``SCHEMA`` when made and when loaded from a file. Enumerants
are GL names without the ``GL_`` prefix (``"TRIANGLES"``); array data (buffer contents,
texels, client-side arrays) are NumPy arrays, stored as blobs on disk.

``Recorder`` mirrors the WebGL / GLES2 API (``gl.bufferData(...)``, ``gl.drawArrays(...)``),
so workloads are written as ordinary programs and replayed through the same path as imported
traces. Programs are recorded with their GLSL *and* the TGSI and interface that Mesa made of
it (``createProgram`` compiles through ``tilesim.shaders.glsl_compile`` unless given them), so a
trace replays on tilesim and on a real GL driver alike.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from tilesim.errors import InputError

# --- enumerants ----------------------------------------------------------------------------

PRIMITIVE_MODES = ("POINTS", "LINES", "LINE_LOOP", "LINE_STRIP", "TRIANGLES",
                   "TRIANGLE_STRIP", "TRIANGLE_FAN")
INDEX_TYPES = ("UNSIGNED_BYTE", "UNSIGNED_SHORT", "UNSIGNED_INT")
# HALF_FLOAT_OES: OES_vertex_half_float (16-bit float attributes, never normalized).
ATTRIB_TYPES = ("BYTE", "UNSIGNED_BYTE", "SHORT", "UNSIGNED_SHORT", "FIXED", "FLOAT",
                "HALF_FLOAT_OES")
BUFFER_TARGETS = ("ARRAY_BUFFER", "ELEMENT_ARRAY_BUFFER")
BUFFER_USAGES = ("STREAM_DRAW", "STATIC_DRAW", "DYNAMIC_DRAW")
# TEXTURE_3D_OES: OES_texture_3D (three-dimensional textures, sampler3D in shaders).
TEXTURE_TARGETS = ("TEXTURE_2D", "TEXTURE_CUBE_MAP", "TEXTURE_3D_OES")
CUBE_FACES = ("TEXTURE_CUBE_MAP_POSITIVE_X", "TEXTURE_CUBE_MAP_NEGATIVE_X",
              "TEXTURE_CUBE_MAP_POSITIVE_Y", "TEXTURE_CUBE_MAP_NEGATIVE_Y",
              "TEXTURE_CUBE_MAP_POSITIVE_Z", "TEXTURE_CUBE_MAP_NEGATIVE_Z")
IMAGE_TARGETS = ("TEXTURE_2D",) + CUBE_FACES
# BGRA_EXT: EXT_texture_format_BGRA8888 (GL_BGRA_EXT as format and internalformat, with
# UNSIGNED_BYTE), which Mesa's GLES2 contexts and compositors use.
TEXTURE_FORMATS = ("RGBA", "RGB", "LUMINANCE", "ALPHA", "LUMINANCE_ALPHA", "BGRA_EXT")
# OES_compressed_ETC1_RGB8_texture and S3TC (EXT_texture_compression_s3tc / _dxt1,
# ANGLE_texture_compression_dxt3 / _dxt5): glCompressedTexImage2D only
# (render/gl/compressed.py decodes them).
COMPRESSED_TEXTURE_FORMATS = ("ETC1_RGB8_OES", "COMPRESSED_RGB_S3TC_DXT1_EXT",
                              "COMPRESSED_RGBA_S3TC_DXT1_EXT", "COMPRESSED_RGBA_S3TC_DXT3_EXT",
                              "COMPRESSED_RGBA_S3TC_DXT5_EXT")
# HALF_FLOAT_OES: OES_texture_half_float (16-bit floats, any unsized color format;
# OES_texture_half_float_linear lets them be filtered LINEAR).
TEXEL_TYPES = ("UNSIGNED_BYTE", "UNSIGNED_SHORT_5_6_5", "UNSIGNED_SHORT_4_4_4_4",
               "UNSIGNED_SHORT_5_5_5_1", "HALF_FLOAT_OES")
# Depth textures (GL_OES_depth_texture, which Mesa's GLES2 contexts expose and glmark2's shadow
# scene uses): accepted by texImage2D only, kept out of the color tuples above.
DEPTH_TEXTURE_FORMATS = ("DEPTH_COMPONENT",)
DEPTH_TEXEL_TYPES = ("UNSIGNED_SHORT", "UNSIGNED_INT")
TEXTURE_PARAMETERS = ("TEXTURE_MIN_FILTER", "TEXTURE_MAG_FILTER", "TEXTURE_WRAP_S",
                      "TEXTURE_WRAP_T", "TEXTURE_WRAP_R_OES")
FLOAT_TEXTURE_PARAMETERS = ("TEXTURE_MAX_ANISOTROPY_EXT",)
FILTERS = ("NEAREST", "LINEAR", "NEAREST_MIPMAP_NEAREST", "LINEAR_MIPMAP_NEAREST",
           "NEAREST_MIPMAP_LINEAR", "LINEAR_MIPMAP_LINEAR")
WRAPS = ("REPEAT", "CLAMP_TO_EDGE", "MIRRORED_REPEAT")
CAPABILITIES = ("DEPTH_TEST", "BLEND", "CULL_FACE", "SCISSOR_TEST", "STENCIL_TEST", "DITHER",
                "POLYGON_OFFSET_FILL", "SAMPLE_ALPHA_TO_COVERAGE", "SAMPLE_COVERAGE")
COMPARE_FUNCS = ("NEVER", "LESS", "EQUAL", "LEQUAL", "GREATER", "NOTEQUAL", "GEQUAL", "ALWAYS")
BLEND_FACTORS = ("ZERO", "ONE", "SRC_COLOR", "ONE_MINUS_SRC_COLOR", "DST_COLOR",
                 "ONE_MINUS_DST_COLOR", "SRC_ALPHA", "ONE_MINUS_SRC_ALPHA", "DST_ALPHA",
                 "ONE_MINUS_DST_ALPHA", "CONSTANT_COLOR", "ONE_MINUS_CONSTANT_COLOR",
                 "CONSTANT_ALPHA", "ONE_MINUS_CONSTANT_ALPHA", "SRC_ALPHA_SATURATE")
# EXT_blend_func_extended's factors (dual-source blending: the fragment shader's
# gl_SecondaryFragColorEXT as a second source color), accepted beside BLEND_FACTORS.
DUAL_SOURCE_FACTORS = ("SRC1_COLOR_EXT", "SRC1_ALPHA_EXT", "ONE_MINUS_SRC1_COLOR_EXT",
                       "ONE_MINUS_SRC1_ALPHA_EXT")
# MIN_EXT / MAX_EXT: EXT_blend_minmax (min / max of source and destination, factors unused).
BLEND_EQUATIONS = ("FUNC_ADD", "FUNC_SUBTRACT", "FUNC_REVERSE_SUBTRACT", "MIN_EXT", "MAX_EXT")
FACES = ("FRONT", "BACK", "FRONT_AND_BACK")
WINDINGS = ("CW", "CCW")
CLEAR_BITS = ("COLOR_BUFFER_BIT", "DEPTH_BUFFER_BIT", "STENCIL_BUFFER_BIT")
STENCIL_OPS = ("KEEP", "ZERO", "REPLACE", "INCR", "DECR", "INVERT", "INCR_WRAP", "DECR_WRAP")
ATTACHMENTS = ("COLOR_ATTACHMENT0", "DEPTH_ATTACHMENT", "STENCIL_ATTACHMENT")
RENDERBUFFER_FORMATS = ("RGBA4", "RGB565", "RGB5_A1", "RGBA8", "RGB8", "DEPTH_COMPONENT16",
                        "DEPTH_COMPONENT24", "STENCIL_INDEX8", "DEPTH24_STENCIL8")
UNIFORM_FUNCTIONS = ("1f", "2f", "3f", "4f", "1i", "2i", "3i", "4i", "Matrix2f", "Matrix3f",
                     "Matrix4f")
# EXT_unpack_subimage adds UNPACK_ROW_LENGTH, UNPACK_SKIP_ROWS and UNPACK_SKIP_PIXELS
# (their initial value is 0; the alignments' is 4).
UNPACK_SUBIMAGE = ("UNPACK_ROW_LENGTH", "UNPACK_SKIP_ROWS", "UNPACK_SKIP_PIXELS")
PIXEL_STORE = ("UNPACK_ALIGNMENT", "PACK_ALIGNMENT", *UNPACK_SUBIMAGE)
HINT_TARGETS = ("GENERATE_MIPMAP_HINT", "FRAGMENT_SHADER_DERIVATIVE_HINT")
HINT_MODES = ("FASTEST", "NICEST", "DONT_CARE")


# --- schema --------------------------------------------------------------------------------
# Argument kinds: "int", "float", "bool", "str", "json" (dict/list of plain values),
# "blob" (NumPy array), "blob?" (array or None), ("enum", choices), ("enums", choices) for a
# list of enumerants, "floats"/"ints"/"bools" for lists.

def _e(*choices: str):
    return ("enum", choices)


SCHEMA: dict[str, dict[str, Any]] = {
    # buffers
    "createBuffer": {"id": "int"},
    "deleteBuffer": {"id": "int"},
    "bindBuffer": {"target": _e(*BUFFER_TARGETS), "id": "int"},
    "bufferData": {"target": _e(*BUFFER_TARGETS), "data": "blob?", "size": "int",
                   "usage": _e(*BUFFER_USAGES)},
    "bufferSubData": {"target": _e(*BUFFER_TARGETS), "offset": "int", "data": "blob"},
    # textures
    "createTexture": {"id": "int"},
    "deleteTexture": {"id": "int"},
    "activeTexture": {"unit": "int"},
    "bindTexture": {"target": _e(*TEXTURE_TARGETS), "id": "int"},
    "pixelStorei": {"pname": _e(*PIXEL_STORE), "value": "int"},
    "texImage2D": {"target": _e(*IMAGE_TARGETS), "level": "int",
                   "internalformat": _e(*TEXTURE_FORMATS, *DEPTH_TEXTURE_FORMATS),
                   "width": "int", "height": "int",
                   "format": _e(*TEXTURE_FORMATS, *DEPTH_TEXTURE_FORMATS),
                   "type": _e(*TEXEL_TYPES, *DEPTH_TEXEL_TYPES), "data": "blob?"},
    "texSubImage2D": {"target": _e(*IMAGE_TARGETS), "level": "int", "xoffset": "int",
                      "yoffset": "int", "width": "int", "height": "int",
                      "format": _e(*TEXTURE_FORMATS), "type": _e(*TEXEL_TYPES), "data": "blob"},
    # data: imageSize bytes of 4x4 blocks (ETC1, DXT1: 8 bytes each; DXT3, DXT5: 16)
    "compressedTexImage2D": {"target": _e(*IMAGE_TARGETS), "level": "int",
                             "internalformat": _e(*COMPRESSED_TEXTURE_FORMATS),
                             "width": "int", "height": "int", "data": "blob"},
    # EXT_compressed_ETC1_RGB8_sub_texture: whole blocks of an ETC1 image replaced
    "compressedTexSubImage2D": {"target": _e(*IMAGE_TARGETS), "level": "int",
                                "xoffset": "int", "yoffset": "int", "width": "int",
                                "height": "int", "format": _e(*COMPRESSED_TEXTURE_FORMATS),
                                "data": "blob"},
    # OES_texture_3D: images of a TEXTURE_3D_OES texture (depth slices of width x height)
    "texImage3D": {"target": _e("TEXTURE_3D_OES"), "level": "int",
                   "internalformat": _e(*TEXTURE_FORMATS), "width": "int", "height": "int",
                   "depth": "int", "format": _e(*TEXTURE_FORMATS), "type": _e(*TEXEL_TYPES),
                   "data": "blob?"},
    "texSubImage3D": {"target": _e("TEXTURE_3D_OES"), "level": "int", "xoffset": "int",
                      "yoffset": "int", "zoffset": "int", "width": "int", "height": "int",
                      "depth": "int", "format": _e(*TEXTURE_FORMATS), "type": _e(*TEXEL_TYPES),
                      "data": "blob"},
    "copyTexSubImage3D": {"target": _e("TEXTURE_3D_OES"), "level": "int", "xoffset": "int",
                          "yoffset": "int", "zoffset": "int", "x": "int", "y": "int",
                          "width": "int", "height": "int"},
    "compressedTexImage3D": {"target": _e("TEXTURE_3D_OES"), "level": "int",
                             "internalformat": _e(*COMPRESSED_TEXTURE_FORMATS), "width": "int",
                             "height": "int", "depth": "int", "data": "blob"},
    "copyTexImage2D": {"target": _e(*IMAGE_TARGETS), "level": "int",
                       "internalformat": _e(*TEXTURE_FORMATS), "x": "int", "y": "int",
                       "width": "int", "height": "int"},
    "copyTexSubImage2D": {"target": _e(*IMAGE_TARGETS), "level": "int", "xoffset": "int",
                          "yoffset": "int", "x": "int", "y": "int", "width": "int",
                          "height": "int"},
    "texParameter": {"target": _e(*TEXTURE_TARGETS), "pname": _e(*TEXTURE_PARAMETERS),
                     "value": _e(*(FILTERS + WRAPS))},
    # EXT_texture_filter_anisotropic: TEXTURE_MAX_ANISOTROPY_EXT, a float >= 1
    "texParameterf": {"target": _e(*TEXTURE_TARGETS), "pname": _e(*FLOAT_TEXTURE_PARAMETERS),
                      "value": "float"},
    "generateMipmap": {"target": _e(*TEXTURE_TARGETS)},
    # programs
    "createProgram": {"id": "int", "vertex_glsl": "str", "fragment_glsl": "str",
                      "vertex_tgsi": "str", "fragment_tgsi": "str", "interface": "json"},
    "deleteProgram": {"id": "int"},
    "useProgram": {"id": "int"},
    "uniform": {"name": "str", "function": _e(*UNIFORM_FUNCTIONS), "values": "floats"},
    # vertex attributes
    "vertexAttribPointer": {"index": "int", "size": "int", "type": _e(*ATTRIB_TYPES),
                            "normalized": "bool", "stride": "int", "offset": "int",
                            "data": "blob?"},
    "enableVertexAttribArray": {"index": "int"},
    "disableVertexAttribArray": {"index": "int"},
    "vertexAttrib": {"index": "int", "values": "floats"},
    # OES_vertex_array_object: a vertex array object holds the attribute arrays' state and
    # the ELEMENT_ARRAY_BUFFER binding; 0 is the default one.
    "createVertexArray": {"id": "int"},
    "deleteVertexArray": {"id": "int"},
    "bindVertexArray": {"id": "int"},
    # draws
    "drawArrays": {"mode": _e(*PRIMITIVE_MODES), "first": "int", "count": "int"},
    "drawElements": {"mode": _e(*PRIMITIVE_MODES), "count": "int", "type": _e(*INDEX_TYPES),
                     "offset": "int", "indices": "blob?"},
    # per-fragment and rasterizer state
    "enable": {"cap": _e(*CAPABILITIES)},
    "disable": {"cap": _e(*CAPABILITIES)},
    "depthFunc": {"func": _e(*COMPARE_FUNCS)},
    "depthMask": {"flag": "bool"},
    "depthRangef": {"near": "float", "far": "float"},
    "clearColor": {"red": "float", "green": "float", "blue": "float", "alpha": "float"},
    "clearDepthf": {"depth": "float"},
    "clearStencil": {"s": "int"},
    "clear": {"mask": ("enums", CLEAR_BITS)},
    "colorMask": {"red": "bool", "green": "bool", "blue": "bool", "alpha": "bool"},
    "blendFuncSeparate": {key: _e(*BLEND_FACTORS, *DUAL_SOURCE_FACTORS)
                          for key in ("src_rgb", "dst_rgb", "src_alpha", "dst_alpha")},
    "blendEquationSeparate": {"mode_rgb": _e(*BLEND_EQUATIONS),
                              "mode_alpha": _e(*BLEND_EQUATIONS)},
    "blendColor": {"red": "float", "green": "float", "blue": "float", "alpha": "float"},
    "cullFace": {"mode": _e(*FACES)},
    "frontFace": {"mode": _e(*WINDINGS)},
    "viewport": {"x": "int", "y": "int", "width": "int", "height": "int"},
    "scissor": {"x": "int", "y": "int", "width": "int", "height": "int"},
    "lineWidth": {"width": "float"},
    "polygonOffset": {"factor": "float", "units": "float"},
    "stencilFuncSeparate": {"face": _e(*FACES), "func": _e(*COMPARE_FUNCS), "ref": "int",
                            "mask": "int"},
    "stencilOpSeparate": {"face": _e(*FACES), "fail": _e(*STENCIL_OPS),
                          "zfail": _e(*STENCIL_OPS), "zpass": _e(*STENCIL_OPS)},
    "stencilMaskSeparate": {"face": _e(*FACES), "mask": "int"},
    "hint": {"target": _e(*HINT_TARGETS), "mode": _e(*HINT_MODES)},
    # framebuffer objects
    "createFramebuffer": {"id": "int"},
    "deleteFramebuffer": {"id": "int"},
    "bindFramebuffer": {"id": "int"},
    "framebufferTexture2D": {"attachment": _e(*ATTACHMENTS), "textarget": _e(*IMAGE_TARGETS),
                             "texture": "int", "level": "int"},
    # OES_texture_3D: slice zoffset of a 3D texture's level as the attachment
    "framebufferTexture3D": {"attachment": _e(*ATTACHMENTS), "textarget": _e("TEXTURE_3D_OES"),
                             "texture": "int", "level": "int", "zoffset": "int"},
    "createRenderbuffer": {"id": "int"},
    "deleteRenderbuffer": {"id": "int"},
    "bindRenderbuffer": {"id": "int"},
    "renderbufferStorage": {"internalformat": _e(*RENDERBUFFER_FORMATS), "width": "int",
                            "height": "int"},
    "framebufferRenderbuffer": {"attachment": _e(*ATTACHMENTS), "renderbuffer": "int"},
    # frames
    "flush": {},
    "finish": {},
    # glReadPixels as an observation point: the frame's image is this rectangle of the bound
    # framebuffer's color buffer, as it is here (the last one read, when a frame has several)
    "readPixels": {"x": "int", "y": "int", "width": "int", "height": "int"},
    "endFrame": {},
}

# The command that ends a frame (eglSwapBuffers, or the glReadPixels / glFinish of programs
# that never swap).
FRAME_END = "endFrame"

# Commands that change programs or texture contents and parameters: state a draw reads by
# reference, so work captured before one of them cannot run after it (the pipeline's barrier
# for held-back draws), and a frame containing one is not comparable with the last
# (Rendering Elimination is disabled for it: thesis, "Rendering Elimination", §4.1.5).
PROGRAM_TEXTURE_CHANGES = frozenset({
    "texImage2D", "texSubImage2D", "compressedTexImage2D", "compressedTexSubImage2D",
    "copyTexImage2D", "copyTexSubImage2D", "texImage3D", "texSubImage3D", "copyTexSubImage3D",
    "compressedTexImage3D", "texParameter", "texParameterf", "generateMipmap",
    "deleteTexture", "createProgram", "deleteProgram"})


@dataclass
class Command:
    """One command: ``op`` from ``SCHEMA`` and its ``args`` (every schema field present)."""

    op: str
    args: dict[str, Any] = field(default_factory=dict)

    def __repr__(self) -> str:
        shown = {k: (f"<array {v.dtype}{list(v.shape)}>" if isinstance(v, np.ndarray) else v)
                 for k, v in self.args.items()
                 if not (isinstance(v, str) and len(v) > 40)}
        return f"{self.op}({', '.join(f'{k}={v!r}' for k, v in shown.items())})"


def _check_arg(op: str, name: str, kind, value, where: str):
    def bad(expected: str):
        return InputError(f"{op}: argument {name!r} must be {expected}, got {value!r:.80}",
                          source=where)

    if kind == "int":
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
            raise bad("an integer")
        return int(value)
    if kind == "float":
        if isinstance(value, bool) or not isinstance(value, (int, float, np.number)):
            raise bad("a number")
        return float(value)
    if kind == "bool":
        if not isinstance(value, (bool, np.bool_)) and value not in (0, 1):
            raise bad("true or false")
        return bool(value)
    if kind == "str":
        if not isinstance(value, str):
            raise bad("a string")
        return value
    if kind == "json":
        if not isinstance(value, (dict, list)):
            raise bad("a JSON object")
        return value
    if kind in ("blob", "blob?"):
        if value is None and kind == "blob?":
            return None
        if not isinstance(value, np.ndarray) or value.dtype.hasobject:
            raise bad("an array")
        return value
    if kind == "floats":
        if not isinstance(value, (list, tuple, np.ndarray)):
            raise bad("a list of numbers")
        out = []
        for v in value:
            if isinstance(v, bool) or not isinstance(v, (int, float, np.number)):
                raise bad("a list of numbers")
            out.append(float(v) if not isinstance(v, (int, np.integer)) else int(v))
        return out
    if isinstance(kind, tuple) and kind[0] == "enum":
        if value not in kind[1]:
            raise InputError(f"{op}: unknown or invalid enumerant {value!r} for {name!r} "
                             f"(expected one of {', '.join(kind[1])})", source=where)
        return value
    if isinstance(kind, tuple) and kind[0] == "enums":
        if not isinstance(value, (list, tuple)) or any(v not in kind[1] for v in value):
            raise InputError(f"{op}: {name!r} must be a list of {', '.join(kind[1])}; "
                             f"got {value!r:.80}", source=where)
        return list(value)
    raise AssertionError(f"unknown schema kind {kind!r}")  # pragma: no cover


# GLint, GLsizei, GLuint (ids, masks): what a GL integer argument holds. Offsets and sizes
# in buffers are pointer-sized (GLintptr, GLsizeiptr); the budget bounds what they allocate.
GL_INT_RANGE = (-(1 << 31), (1 << 32) - 1)
POINTER_RANGE = (-(1 << 63), (1 << 63) - 1)
POINTER_ARGS = frozenset({("bufferData", "size"), ("bufferSubData", "offset"),
                          ("vertexAttribPointer", "offset"), ("drawElements", "offset")})


def make_command(op: str, args: dict[str, Any], where: str = "<commands>") -> Command:
    """A validated command; every error names ``where`` (file, frame, command number)."""
    spec = SCHEMA.get(op)
    if spec is None:
        raise InputError(f"unknown command {op!r}", source=where)
    unknown = set(args) - set(spec)
    if unknown:
        raise InputError(f"{op}: unknown argument(s) {', '.join(sorted(unknown))}", source=where)
    missing = set(spec) - set(args)
    if missing:
        raise InputError(f"{op}: missing argument(s) {', '.join(sorted(missing))}", source=where)
    checked = {name: _check_arg(op, name, kind, args[name], where) for name, kind in spec.items()}
    for name, value in checked.items():
        if isinstance(value, float) and not math.isfinite(value) and op not in ("uniform",):
            raise InputError(f"{op}: argument {name!r} is not finite ({value})", source=where)
        if spec[name] == "int" and not GL_INT_RANGE[0] <= value <= (
                POINTER_RANGE if (op, name) in POINTER_ARGS else GL_INT_RANGE)[1]:
            raise InputError(f"{op}: argument {name!r} = {value} does not fit in the 32 bits "
                             "of a GL integer", source=where)
    if op == "uniform" and checked["function"].endswith("i") and not all(
            math.isfinite(v) and GL_INT_RANGE[0] <= v < 1 << 31 for v in checked["values"]):
        raise InputError(f"uniform {checked['name']!r}: values of glUniform"
                         f"{checked['function']} must be 32-bit integers, got "
                         f"{checked['values']!r:.80}", source=where)
    return Command(op, checked)


# --- recorder ------------------------------------------------------------------------------

# GL constants a program may pass as numbers instead of names (the GLES2 header values).
GL_ENUM_NAMES: dict[int, str] = {
    0x0000: "POINTS", 0x0001: "LINES", 0x0002: "LINE_LOOP", 0x0003: "LINE_STRIP",
    0x0004: "TRIANGLES", 0x0005: "TRIANGLE_STRIP", 0x0006: "TRIANGLE_FAN",
    0x1400: "BYTE", 0x1401: "UNSIGNED_BYTE", 0x1402: "SHORT", 0x1403: "UNSIGNED_SHORT",
    0x1405: "UNSIGNED_INT", 0x1406: "FLOAT", 0x140C: "FIXED",
    0x8892: "ARRAY_BUFFER", 0x8893: "ELEMENT_ARRAY_BUFFER",
    0x88E0: "STREAM_DRAW", 0x88E4: "STATIC_DRAW", 0x88E8: "DYNAMIC_DRAW",
    0x0DE1: "TEXTURE_2D", 0x8513: "TEXTURE_CUBE_MAP",
    0x8515: "TEXTURE_CUBE_MAP_POSITIVE_X", 0x8516: "TEXTURE_CUBE_MAP_NEGATIVE_X",
    0x8517: "TEXTURE_CUBE_MAP_POSITIVE_Y", 0x8518: "TEXTURE_CUBE_MAP_NEGATIVE_Y",
    0x8519: "TEXTURE_CUBE_MAP_POSITIVE_Z", 0x851A: "TEXTURE_CUBE_MAP_NEGATIVE_Z",
    0x1908: "RGBA", 0x1907: "RGB", 0x1909: "LUMINANCE", 0x1906: "ALPHA",
    0x190A: "LUMINANCE_ALPHA", 0x1902: "DEPTH_COMPONENT", 0x8363: "UNSIGNED_SHORT_5_6_5",
    0x80E1: "BGRA_EXT", 0x8D64: "ETC1_RGB8_OES",
    0x83F0: "COMPRESSED_RGB_S3TC_DXT1_EXT", 0x83F1: "COMPRESSED_RGBA_S3TC_DXT1_EXT",
    0x83F2: "COMPRESSED_RGBA_S3TC_DXT3_EXT", 0x83F3: "COMPRESSED_RGBA_S3TC_DXT5_EXT",
    0x8D61: "HALF_FLOAT_OES",
    0x84FE: "TEXTURE_MAX_ANISOTROPY_EXT", 0x806F: "TEXTURE_3D_OES",
    0x8072: "TEXTURE_WRAP_R_OES",
    0x8033: "UNSIGNED_SHORT_4_4_4_4", 0x8034: "UNSIGNED_SHORT_5_5_5_1",
    0x2801: "TEXTURE_MIN_FILTER", 0x2800: "TEXTURE_MAG_FILTER", 0x2802: "TEXTURE_WRAP_S",
    0x2803: "TEXTURE_WRAP_T", 0x2600: "NEAREST", 0x2601: "LINEAR",
    0x2700: "NEAREST_MIPMAP_NEAREST", 0x2701: "LINEAR_MIPMAP_NEAREST",
    0x2702: "NEAREST_MIPMAP_LINEAR", 0x2703: "LINEAR_MIPMAP_LINEAR", 0x2901: "REPEAT",
    0x812F: "CLAMP_TO_EDGE", 0x8370: "MIRRORED_REPEAT",
    0x0B71: "DEPTH_TEST", 0x0BE2: "BLEND", 0x0B44: "CULL_FACE", 0x0C11: "SCISSOR_TEST",
    0x0B90: "STENCIL_TEST", 0x0BD0: "DITHER", 0x8037: "POLYGON_OFFSET_FILL",
    0x809E: "SAMPLE_ALPHA_TO_COVERAGE", 0x80A0: "SAMPLE_COVERAGE",
    0x0200: "NEVER", 0x0201: "LESS", 0x0202: "EQUAL", 0x0203: "LEQUAL", 0x0204: "GREATER",
    0x0205: "NOTEQUAL", 0x0206: "GEQUAL", 0x0207: "ALWAYS",
    0x0300: "SRC_COLOR", 0x0301: "ONE_MINUS_SRC_COLOR", 0x0302: "SRC_ALPHA",
    0x0303: "ONE_MINUS_SRC_ALPHA", 0x0304: "DST_ALPHA", 0x0305: "ONE_MINUS_DST_ALPHA",
    0x0306: "DST_COLOR", 0x0307: "ONE_MINUS_DST_COLOR", 0x0308: "SRC_ALPHA_SATURATE",
    0x8001: "CONSTANT_COLOR", 0x8002: "ONE_MINUS_CONSTANT_COLOR", 0x8003: "CONSTANT_ALPHA",
    0x8004: "ONE_MINUS_CONSTANT_ALPHA", 0x8006: "FUNC_ADD", 0x800A: "FUNC_SUBTRACT",
    0x800B: "FUNC_REVERSE_SUBTRACT", 0x8007: "MIN_EXT", 0x8008: "MAX_EXT",
    0x88F9: "SRC1_COLOR_EXT", 0x8589: "SRC1_ALPHA_EXT", 0x88FA: "ONE_MINUS_SRC1_COLOR_EXT",
    0x88FB: "ONE_MINUS_SRC1_ALPHA_EXT",
    0x0404: "FRONT", 0x0405: "BACK",
    0x0408: "FRONT_AND_BACK", 0x0900: "CW", 0x0901: "CCW",
    0x00004000: "COLOR_BUFFER_BIT", 0x00000100: "DEPTH_BUFFER_BIT",
    0x00000400: "STENCIL_BUFFER_BIT", 0x8CE0: "COLOR_ATTACHMENT0", 0x8D00: "DEPTH_ATTACHMENT",
    0x8D20: "STENCIL_ATTACHMENT", 0x8056: "RGBA4", 0x8D62: "RGB565", 0x8057: "RGB5_A1",
    0x8058: "RGBA8", 0x8051: "RGB8", 0x81A5: "DEPTH_COMPONENT16", 0x81A6: "DEPTH_COMPONENT24",
    0x8D48: "STENCIL_INDEX8", 0x88F0: "DEPTH24_STENCIL8", 0x0CF5: "UNPACK_ALIGNMENT",
    0x0CF2: "UNPACK_ROW_LENGTH", 0x0CF3: "UNPACK_SKIP_ROWS", 0x0CF4: "UNPACK_SKIP_PIXELS",
    0x0D05: "PACK_ALIGNMENT", 0x1E00: "KEEP", 0x1E01: "REPLACE", 0x1E02: "INCR",
    0x1E03: "DECR", 0x150A: "INVERT", 0x8507: "INCR_WRAP", 0x8508: "DECR_WRAP",
    0x8192: "GENERATE_MIPMAP_HINT", 0x8B8B: "FRAGMENT_SHADER_DERIVATIVE_HINT",
    0x1101: "FASTEST", 0x1102: "NICEST", 0x1100: "DONT_CARE",
}


# GL reuses 0 and 1: GL_POINTS / GL_ZERO and GL_LINES / GL_ONE.
_SHARED_VALUES = {0: ("POINTS", "ZERO"), 1: ("LINES", "ONE")}


def enum_name(value, where: str = "<commands>", choices: tuple[str, ...] = ()) -> str:
    """A GL enumerant as its name: accepts 'TRIANGLES', 'GL_TRIANGLES' or 0x0004.

    ``choices`` (the names valid for the argument) settle the values GL uses twice.
    """
    if isinstance(value, str):
        return value[3:] if value.startswith("GL_") else value
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        for name in _SHARED_VALUES.get(int(value), ()):
            if name in choices:
                return name
        name = GL_ENUM_NAMES.get(int(value))
        if name is None:
            raise InputError(f"unknown GL enumerant 0x{int(value):04X}", source=where)
        return name
    raise InputError(f"expected a GL enumerant, got {value!r:.60}", source=where)


@dataclass
class Uniform:
    """What ``getUniformLocation`` returns: a handle carrying the uniform's name."""

    program: int
    name: str


class Recorder:
    """Records GLES2 calls, WebGL-style, into frames of commands.

    ``gl = Recorder(width, height)``; then ``buf = gl.createBuffer()``,
    ``gl.bindBuffer(gl.ARRAY_BUFFER, buf)``, ..., ``gl.drawArrays(gl.TRIANGLES, 0, 3)``,
    ``gl.endFrame()``. Enumerants are accepted as names ('TRIANGLES'), GL constants (0x0004)
    or the recorder's attributes (``gl.TRIANGLES``). ``trace()`` returns what was recorded.
    """

    def __init__(self, width: int, height: int, *, depth_bits: int = 24, name: str = "recorded"):
        self.width, self.height, self.depth_bits, self.name = width, height, depth_bits, name
        self.frames: list[list[Command]] = [[]]
        self._next_id = {"buffer": 1, "texture": 1, "program": 1, "framebuffer": 1,
                         "renderbuffer": 1, "vertex_array": 1}
        self._programs: dict[int, dict] = {}

    def __getattr__(self, name: str):
        if name.isupper():
            return name  # gl.TRIANGLES -> "TRIANGLES"
        raise AttributeError(name)

    # -- plumbing ---------------------------------------------------------------------------

    def _emit(self, op: str, **args) -> None:
        spec = SCHEMA[op]
        for key, kind in spec.items():
            if isinstance(kind, tuple) and kind[0] == "enum" and key in args:
                args[key] = enum_name(args[key], self.name, kind[1])
            elif isinstance(kind, tuple) and kind[0] == "enums" and key in args:
                args[key] = [enum_name(v, self.name, kind[1]) for v in args[key]]
        where = f"{self.name}: frame {len(self.frames) - 1}, command {len(self.frames[-1])}"
        self.frames[-1].append(make_command(op, args, where))

    def _new(self, kind: str) -> int:
        ident = self._next_id[kind]
        self._next_id[kind] += 1
        return ident

    @property
    def frame_count(self) -> int:
        return len(self.frames) - (0 if self.frames[-1] else 1)

    # -- buffers ----------------------------------------------------------------------------

    def createBuffer(self) -> int:
        ident = self._new("buffer")
        self._emit("createBuffer", id=ident)
        return ident

    def deleteBuffer(self, ident: int) -> None:
        self._emit("deleteBuffer", id=ident)

    def bindBuffer(self, target, ident: int | None) -> None:
        self._emit("bindBuffer", target=target, id=ident or 0)

    def bufferData(self, target, data, usage="STATIC_DRAW") -> None:
        if isinstance(data, (int, np.integer)):
            self._emit("bufferData", target=target, data=None, size=int(data), usage=usage)
            return
        raw = _as_bytes(data)
        self._emit("bufferData", target=target, data=raw, size=raw.size, usage=usage)

    def bufferSubData(self, target, offset: int, data) -> None:
        self._emit("bufferSubData", target=target, offset=offset, data=_as_bytes(data))

    # -- textures ---------------------------------------------------------------------------

    def createTexture(self) -> int:
        ident = self._new("texture")
        self._emit("createTexture", id=ident)
        return ident

    def deleteTexture(self, ident: int) -> None:
        self._emit("deleteTexture", id=ident)

    def activeTexture(self, unit) -> None:
        """``unit`` as an index (0..7) or as GL's TEXTURE0 + i (0x84C0 + i)."""
        unit = int(unit)
        self._emit("activeTexture", unit=unit - 0x84C0 if unit >= 0x84C0 else unit)

    def bindTexture(self, target, ident: int | None) -> None:
        self._emit("bindTexture", target=target, id=ident or 0)

    def pixelStorei(self, pname, value: int) -> None:
        self._emit("pixelStorei", pname=pname, value=value)

    def texImage2D(self, target, level, internalformat, width, height, border, fmt, type_,
                   pixels=None) -> None:
        if border != 0:
            raise InputError("texImage2D: border must be 0 in OpenGL ES 2.0", source=self.name)
        self._emit("texImage2D", target=target, level=level, internalformat=internalformat,
                   width=width, height=height, format=fmt, type=type_,
                   data=None if pixels is None else _as_bytes(pixels))

    def texSubImage2D(self, target, level, xoffset, yoffset, width, height, fmt, type_,
                      pixels) -> None:
        self._emit("texSubImage2D", target=target, level=level, xoffset=xoffset,
                   yoffset=yoffset, width=width, height=height, format=fmt, type=type_,
                   data=_as_bytes(pixels))

    def compressedTexImage2D(self, target, level, internalformat, width, height, border,
                             data) -> None:
        """glCompressedTexImage2D (OES_compressed_ETC1_RGB8_texture): ``data`` the blocks;
        imageSize is its length."""
        if border != 0:
            raise InputError("compressedTexImage2D: border must be 0 in OpenGL ES 2.0",
                             source=self.name)
        self._emit("compressedTexImage2D", target=target, level=level,
                   internalformat=internalformat, width=width, height=height,
                   data=_as_bytes(data))

    def compressedTexSubImage2D(self, target, level, xoffset, yoffset, width, height, fmt,
                                data) -> None:
        """glCompressedTexSubImage2D (EXT_compressed_ETC1_RGB8_sub_texture)."""
        self._emit("compressedTexSubImage2D", target=target, level=level, xoffset=xoffset,
                   yoffset=yoffset, width=width, height=height, format=fmt,
                   data=_as_bytes(data))

    def copyTexImage2D(self, target, level, internalformat, x, y, width, height,
                       border=0) -> None:
        self._emit("copyTexImage2D", target=target, level=level,
                   internalformat=internalformat, x=x, y=y, width=width, height=height)

    def copyTexSubImage2D(self, target, level, xoffset, yoffset, x, y, width, height) -> None:
        self._emit("copyTexSubImage2D", target=target, level=level, xoffset=xoffset,
                   yoffset=yoffset, x=x, y=y, width=width, height=height)

    def texImage3D(self, target, level, internalformat, width, height, depth, border, fmt,
                   type_, pixels=None) -> None:
        """glTexImage3DOES (OES_texture_3D): ``depth`` slices of ``width`` x ``height``,
        slice after slice in ``pixels``."""
        if border != 0:
            raise InputError("texImage3D: border must be 0 (OES_texture_3D)", source=self.name)
        self._emit("texImage3D", target=target, level=level, internalformat=internalformat,
                   width=width, height=height, depth=depth, format=fmt, type=type_,
                   data=None if pixels is None else _as_bytes(pixels))

    def texSubImage3D(self, target, level, xoffset, yoffset, zoffset, width, height, depth,
                      fmt, type_, pixels) -> None:
        """glTexSubImage3DOES (OES_texture_3D)."""
        self._emit("texSubImage3D", target=target, level=level, xoffset=xoffset,
                   yoffset=yoffset, zoffset=zoffset, width=width, height=height, depth=depth,
                   format=fmt, type=type_, data=_as_bytes(pixels))

    def copyTexSubImage3D(self, target, level, xoffset, yoffset, zoffset, x, y, width,
                          height) -> None:
        """glCopyTexSubImage3DOES (OES_texture_3D): framebuffer pixels into slice
        ``zoffset``."""
        self._emit("copyTexSubImage3D", target=target, level=level, xoffset=xoffset,
                   yoffset=yoffset, zoffset=zoffset, x=x, y=y, width=width, height=height)

    def compressedTexImage3D(self, target, level, internalformat, width, height, depth,
                             border, data) -> None:
        """glCompressedTexImage3DOES (OES_texture_3D)."""
        if border != 0:
            raise InputError("compressedTexImage3D: border must be 0 (OES_texture_3D)",
                             source=self.name)
        self._emit("compressedTexImage3D", target=target, level=level,
                   internalformat=internalformat, width=width, height=height, depth=depth,
                   data=_as_bytes(data))

    def texParameteri(self, target, pname, value) -> None:
        self._emit("texParameter", target=target, pname=pname, value=value)

    def texParameterf(self, target, pname, value) -> None:
        """glTexParameterf: the four GLES2 parameters as texParameteri, or
        EXT_texture_filter_anisotropic's TEXTURE_MAX_ANISOTROPY_EXT."""
        if pname in FLOAT_TEXTURE_PARAMETERS:
            self._emit("texParameterf", target=target, pname=pname, value=value)
        else:
            self.texParameteri(target, pname, value)

    def generateMipmap(self, target) -> None:
        self._emit("generateMipmap", target=target)

    # -- programs ---------------------------------------------------------------------------

    def createProgram(self, vertex_glsl: str, fragment_glsl: str, *, compiled=None,
                      attrib_locations: dict[str, int] | None = None) -> int:
        """Compile and link a GLSL ES 1.00 program (through Mesa, see tilesim.shaders.glsl_compile).

        ``compiled`` may be a ``tilesim.shaders.glsl_compile.CompiledProgram`` made earlier (a
        cache);
        ``attrib_locations`` are the glBindAttribLocation calls made before linking.
        """
        if compiled is None:
            compiled = compile_cached(vertex_glsl, fragment_glsl, attrib_locations)
        ident = self._new("program")
        self._programs[ident] = compiled.interface
        self._emit("createProgram", id=ident, vertex_glsl=vertex_glsl,
                   fragment_glsl=fragment_glsl, vertex_tgsi=compiled.vertex_tgsi,
                   fragment_tgsi=compiled.fragment_tgsi, interface=compiled.interface)
        return ident

    def deleteProgram(self, ident: int) -> None:
        self._emit("deleteProgram", id=ident)

    def useProgram(self, ident: int | None) -> None:
        self._emit("useProgram", id=ident or 0)

    def getAttribLocation(self, program: int, name: str) -> int:
        for attribute in self._programs[program].get("attributes", []):
            if attribute["name"] == name:
                return int(attribute["location"])
        return -1

    def getUniformLocation(self, program: int, name: str) -> Uniform | None:
        interface = self._programs[program]
        base = name.split("[")[0]
        names = {u["name"] for u in interface.get("uniforms", [])}
        names |= {s["name"] for s in interface.get("samplers", [])}
        return Uniform(program, name) if base in names or name in names else None

    def _uniform(self, function: str, location: Uniform | None, values) -> None:
        if location is None:
            return  # GL ignores location -1
        flat = np.asarray(values, dtype=np.float64).ravel().tolist()
        if function.endswith("i"):
            flat = [int(v) for v in flat]
        self._emit("uniform", name=location.name, function=function, values=flat)

    def uniform1f(self, loc, x):
        self._uniform("1f", loc, [x])

    def uniform2f(self, loc, x, y):
        self._uniform("2f", loc, [x, y])

    def uniform3f(self, loc, x, y, z):
        self._uniform("3f", loc, [x, y, z])

    def uniform4f(self, loc, x, y, z, w):
        self._uniform("4f", loc, [x, y, z, w])

    def uniform1i(self, loc, x):
        self._uniform("1i", loc, [x])

    def uniform2i(self, loc, x, y):
        self._uniform("2i", loc, [x, y])

    def uniform3i(self, loc, x, y, z):
        self._uniform("3i", loc, [x, y, z])

    def uniform4i(self, loc, x, y, z, w):
        self._uniform("4i", loc, [x, y, z, w])

    def uniform1fv(self, loc, v):
        self._uniform("1f", loc, v)

    def uniform2fv(self, loc, v):
        self._uniform("2f", loc, v)

    def uniform3fv(self, loc, v):
        self._uniform("3f", loc, v)

    def uniform4fv(self, loc, v):
        self._uniform("4f", loc, v)

    def uniform1iv(self, loc, v):
        self._uniform("1i", loc, v)

    def uniformMatrix2fv(self, loc, transpose, v):
        self._matrix("Matrix2f", loc, transpose, v)

    def uniformMatrix3fv(self, loc, transpose, v):
        self._matrix("Matrix3f", loc, transpose, v)

    def uniformMatrix4fv(self, loc, transpose, v):
        self._matrix("Matrix4f", loc, transpose, v)

    def _matrix(self, function, loc, transpose, v):
        if transpose:
            raise InputError("uniformMatrix*fv: transpose must be false in OpenGL ES 2.0",
                             source=self.name)
        self._uniform(function, loc, v)

    # -- vertex attributes ------------------------------------------------------------------

    def createVertexArray(self) -> int:
        """glGenVertexArraysOES (OES_vertex_array_object) of one name."""
        ident = self._new("vertex_array")
        self._emit("createVertexArray", id=ident)
        return ident

    def bindVertexArray(self, ident: int | None) -> None:
        self._emit("bindVertexArray", id=ident or 0)

    def deleteVertexArray(self, ident: int) -> None:
        self._emit("deleteVertexArray", id=ident)

    def vertexAttribPointer(self, index, size, type_, normalized, stride, offset_or_array=0):
        """``offset_or_array``: byte offset into the bound ARRAY_BUFFER, or a client array."""
        if isinstance(offset_or_array, (int, np.integer)):
            self._emit("vertexAttribPointer", index=index, size=size, type=type_,
                       normalized=bool(normalized), stride=stride, offset=int(offset_or_array),
                       data=None)
        else:
            self._emit("vertexAttribPointer", index=index, size=size, type=type_,
                       normalized=bool(normalized), stride=stride, offset=0,
                       data=_as_bytes(offset_or_array))

    def enableVertexAttribArray(self, index):
        self._emit("enableVertexAttribArray", index=index)

    def disableVertexAttribArray(self, index):
        self._emit("disableVertexAttribArray", index=index)

    def vertexAttrib4f(self, index, x, y=0.0, z=0.0, w=1.0):
        self._emit("vertexAttrib", index=index, values=[x, y, z, w])

    def vertexAttrib1f(self, index, x):
        self.vertexAttrib4f(index, x)

    def vertexAttrib2f(self, index, x, y):
        self.vertexAttrib4f(index, x, y)

    def vertexAttrib3f(self, index, x, y, z):
        self.vertexAttrib4f(index, x, y, z)

    def vertexAttrib4fv(self, index, values):
        self.vertexAttrib4f(index, *list(values)[:4])

    # -- draws ------------------------------------------------------------------------------

    def drawArrays(self, mode, first, count):
        self._emit("drawArrays", mode=mode, first=first, count=count)

    def drawElements(self, mode, count, type_, offset_or_array=0):
        """``offset_or_array``: byte offset into the bound ELEMENT_ARRAY_BUFFER, or indices."""
        if isinstance(offset_or_array, (int, np.integer)):
            self._emit("drawElements", mode=mode, count=count, type=type_,
                       offset=int(offset_or_array), indices=None)
        else:
            self._emit("drawElements", mode=mode, count=count, type=type_, offset=0,
                       indices=_as_bytes(offset_or_array))

    # -- state ------------------------------------------------------------------------------

    def enable(self, cap):
        self._emit("enable", cap=cap)

    def disable(self, cap):
        self._emit("disable", cap=cap)

    def depthFunc(self, func):
        self._emit("depthFunc", func=func)

    def depthMask(self, flag):
        self._emit("depthMask", flag=bool(flag))

    def depthRangef(self, near, far):
        self._emit("depthRangef", near=near, far=far)

    def clearColor(self, r, g, b, a):
        self._emit("clearColor", red=r, green=g, blue=b, alpha=a)

    def clearDepthf(self, depth):
        self._emit("clearDepthf", depth=depth)

    def clearStencil(self, s):
        self._emit("clearStencil", s=s)

    def clear(self, *bits):
        """``gl.clear(gl.COLOR_BUFFER_BIT, gl.DEPTH_BUFFER_BIT)`` or a GL bitmask int."""
        names: list[str] = []
        for b in bits:
            if isinstance(b, (int, np.integer)):
                names += [n for v, n in ((0x4000, "COLOR_BUFFER_BIT"),
                                         (0x100, "DEPTH_BUFFER_BIT"),
                                         (0x400, "STENCIL_BUFFER_BIT")) if int(b) & v]
            else:
                names.append(enum_name(b))
        self._emit("clear", mask=names)

    def colorMask(self, r, g, b, a):
        self._emit("colorMask", red=bool(r), green=bool(g), blue=bool(b), alpha=bool(a))

    def blendFunc(self, src, dst):
        self.blendFuncSeparate(src, dst, src, dst)

    def blendFuncSeparate(self, src_rgb, dst_rgb, src_alpha, dst_alpha):
        self._emit("blendFuncSeparate", src_rgb=src_rgb, dst_rgb=dst_rgb, src_alpha=src_alpha,
                   dst_alpha=dst_alpha)

    def blendEquation(self, mode):
        self.blendEquationSeparate(mode, mode)

    def blendEquationSeparate(self, mode_rgb, mode_alpha):
        self._emit("blendEquationSeparate", mode_rgb=mode_rgb, mode_alpha=mode_alpha)

    def blendColor(self, r, g, b, a):
        self._emit("blendColor", red=r, green=g, blue=b, alpha=a)

    def cullFace(self, mode):
        self._emit("cullFace", mode=mode)

    def frontFace(self, mode):
        self._emit("frontFace", mode=mode)

    def viewport(self, x, y, width, height):
        self._emit("viewport", x=x, y=y, width=width, height=height)

    def scissor(self, x, y, width, height):
        self._emit("scissor", x=x, y=y, width=width, height=height)

    def lineWidth(self, width):
        self._emit("lineWidth", width=width)

    def polygonOffset(self, factor, units):
        self._emit("polygonOffset", factor=factor, units=units)

    def stencilFunc(self, func, ref, mask):
        self.stencilFuncSeparate("FRONT_AND_BACK", func, ref, mask)

    def stencilFuncSeparate(self, face, func, ref, mask):
        self._emit("stencilFuncSeparate", face=face, func=func, ref=ref, mask=mask)

    def stencilOp(self, fail, zfail, zpass):
        self.stencilOpSeparate("FRONT_AND_BACK", fail, zfail, zpass)

    def stencilOpSeparate(self, face, fail, zfail, zpass):
        self._emit("stencilOpSeparate", face=face, fail=fail, zfail=zfail, zpass=zpass)

    def stencilMask(self, mask):
        self.stencilMaskSeparate("FRONT_AND_BACK", mask)

    def stencilMaskSeparate(self, face, mask):
        self._emit("stencilMaskSeparate", face=face, mask=mask)

    def hint(self, target, mode):
        self._emit("hint", target=target, mode=mode)

    # -- framebuffer objects ----------------------------------------------------------------

    def createFramebuffer(self) -> int:
        ident = self._new("framebuffer")
        self._emit("createFramebuffer", id=ident)
        return ident

    def deleteFramebuffer(self, ident):
        self._emit("deleteFramebuffer", id=ident)

    def bindFramebuffer(self, target_or_id, ident=None):
        """``gl.bindFramebuffer(gl.FRAMEBUFFER, fbo)`` or ``gl.bindFramebuffer(fbo)``."""
        self._emit("bindFramebuffer", id=(target_or_id if ident is None and
                                          not isinstance(target_or_id, str) else ident) or 0)

    def framebufferTexture2D(self, target, attachment, textarget, texture, level=0):
        self._emit("framebufferTexture2D", attachment=attachment, textarget=textarget,
                   texture=texture or 0, level=level)

    def framebufferTexture3D(self, target, attachment, textarget, texture, level, zoffset):
        """glFramebufferTexture3DOES (OES_texture_3D): slice ``zoffset`` of ``level``."""
        self._emit("framebufferTexture3D", attachment=attachment, textarget=textarget,
                   texture=texture or 0, level=level, zoffset=zoffset)

    def createRenderbuffer(self) -> int:
        ident = self._new("renderbuffer")
        self._emit("createRenderbuffer", id=ident)
        return ident

    def deleteRenderbuffer(self, ident):
        self._emit("deleteRenderbuffer", id=ident)

    def bindRenderbuffer(self, target_or_id, ident=None):
        self._emit("bindRenderbuffer", id=(target_or_id if ident is None and
                                           not isinstance(target_or_id, str) else ident) or 0)

    def renderbufferStorage(self, target, internalformat, width, height):
        self._emit("renderbufferStorage", internalformat=internalformat, width=width,
                   height=height)

    def framebufferRenderbuffer(self, target, attachment, rb_target, renderbuffer):
        self._emit("framebufferRenderbuffer", attachment=attachment,
                   renderbuffer=renderbuffer or 0)

    # -- frames -----------------------------------------------------------------------------

    def flush(self):
        self._emit("flush")

    def finish(self):
        self._emit("finish")

    def readPixels(self, x, y, width, height, format="RGBA", type="UNSIGNED_BYTE", pixels=None):
        """glReadPixels as the frame's observation point: the frame's image becomes this
        rectangle of the bound framebuffer (``format``, ``type`` and ``pixels`` are accepted
        for the WebGL signature; nothing is returned at record time)."""
        self._emit("readPixels", x=x, y=y, width=width, height=height)

    def endFrame(self):
        """eglSwapBuffers: the end of a frame."""
        self._emit("endFrame")
        self.frames.append([])

    def recorded_frames(self) -> list[list[Command]]:
        """The complete frames recorded (commands after the last endFrame are left out)."""
        return [f for f in self.frames[:-1]] if self.frames[-1] == [] else self.frames[:-1]


_COMPILED: dict = {}


def compile_cached(vertex_glsl: str, fragment_glsl: str,
                   attrib_locations: dict[str, int] | None = None):
    """Compile through Mesa once per distinct program in this process (each costs ~0.3 s)."""
    key = (vertex_glsl, fragment_glsl, tuple(sorted((attrib_locations or {}).items())))
    if key not in _COMPILED:
        from tilesim.shaders.glsl_compile import compile_program

        _COMPILED[key] = compile_program(vertex_glsl, fragment_glsl,
                                         attrib_bindings=attrib_locations)
    return _COMPILED[key]


def _as_bytes(data) -> np.ndarray:
    """Array data as a flat uint8 array (GL sees bytes; the trace keeps them as given)."""
    if isinstance(data, (bytes, bytearray, memoryview)):
        return np.frombuffer(bytes(data), dtype=np.uint8).copy()
    array = np.ascontiguousarray(data)
    if array.dtype.hasobject:
        raise InputError("array data must be numeric")
    return array.view(np.uint8).ravel().copy()
