"""The OpenGL ES 2.0 extension strings tilesim knows: the modelled GPU's, Mesa's, and what
tilesim does with each entry.

``extensions.toml`` beside this file holds the lists, each with its source: ``[gpu.NAME]``
the GL_EXTENSIONS string of a driver (``mali-400``: a Mali-400-class Utgard driver, the GPU
timing/baseline_gpu.toml models), ``[mesa]`` Mesa 22.3's GLES2 list (what a program captured
on a desktop saw), and ``[status]`` per extension of either list: ``implemented``,
``partial``, ``no-image`` (does not change what is drawn), ``missing`` (changes images, not
implemented) or ``es3`` (extends OpenGL ES 3.x), with why. Another modelled GPU is another
``[gpu.NAME]`` table; :func:`gpu_extensions` reads it by name.

:func:`extensions_used` says which extensions a stream of tilesim commands (and the GL calls
an import skipped or folded) relies on, as far as a command shows it: a compressed or half-float
format, an extension enumerant, an ``#extension`` directive of a shader, an extension entry
point. The importer warns about those the modelled GPU does not offer
(:func:`unoffered_warning`): the capture was made where they were offered, and the
modelled GPU's driver would have refused them (or the program would have taken another path).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import cache
from pathlib import Path

from tilesim.errors import InputError
from tilesim.inputs import read_toml

__all__ = ["DEFAULT_GPU", "STATUSES", "extension_status", "extensions_used", "gpu_extensions",
           "mesa_extensions", "unoffered_warning"]

DATA = Path(__file__).with_name("extensions.toml")
DEFAULT_GPU = "mali-400"
STATUSES = ("implemented", "partial", "no-image", "missing", "es3")

# Enumerant names of tilesim commands -> the extension that adds them to ES 2.0.
_FORMAT_EXTENSIONS = {
    "ETC1_RGB8_OES": "GL_OES_compressed_ETC1_RGB8_texture",
    "COMPRESSED_RGB_S3TC_DXT1_EXT": "GL_EXT_texture_compression_dxt1",
    "COMPRESSED_RGBA_S3TC_DXT1_EXT": "GL_EXT_texture_compression_dxt1",
    "COMPRESSED_RGBA_S3TC_DXT3_EXT": "GL_EXT_texture_compression_s3tc",
    "COMPRESSED_RGBA_S3TC_DXT5_EXT": "GL_EXT_texture_compression_s3tc",
    "BGRA_EXT": "GL_EXT_texture_format_BGRA8888",
    "DEPTH_COMPONENT": "GL_OES_depth_texture",
    "RGBA8": "GL_OES_rgb8_rgba8", "RGB8": "GL_OES_rgb8_rgba8",
    "DEPTH_COMPONENT24": "GL_OES_depth24", "DEPTH24_STENCIL8": "GL_OES_packed_depth_stencil",
    "MIN_EXT": "GL_EXT_blend_minmax", "MAX_EXT": "GL_EXT_blend_minmax",
    "UNPACK_ROW_LENGTH": "GL_EXT_unpack_subimage", "UNPACK_SKIP_ROWS": "GL_EXT_unpack_subimage",
    "UNPACK_SKIP_PIXELS": "GL_EXT_unpack_subimage",
    "TEXTURE_MAX_ANISOTROPY_EXT": "GL_EXT_texture_filter_anisotropic",
    "SRC1_COLOR_EXT": "GL_EXT_blend_func_extended", "SRC1_ALPHA_EXT": "GL_EXT_blend_func_extended",
    "ONE_MINUS_SRC1_COLOR_EXT": "GL_EXT_blend_func_extended",
    "ONE_MINUS_SRC1_ALPHA_EXT": "GL_EXT_blend_func_extended",
    "TEXTURE_3D_OES": "GL_OES_texture_3D", "TEXTURE_WRAP_R_OES": "GL_OES_texture_3D",
}
# GL calls (translated, skipped or folded by the importer) whose suffix or name says the
# extension; core ES 2.0 calls have none.
_CALL_EXTENSIONS = {
    "VertexArrayOES": "GL_OES_vertex_array_object",
    "3DOES": "GL_OES_texture_3D",
    "glDiscardFramebufferEXT": "GL_EXT_discard_framebuffer",
    "glInsertEventMarkerEXT": "GL_EXT_debug_marker", "glPushGroupMarkerEXT":
    "GL_EXT_debug_marker", "glPopGroupMarkerEXT": "GL_EXT_debug_marker",
    "glLabelObjectEXT": "GL_EXT_debug_label", "glGetObjectLabelEXT": "GL_EXT_debug_label",
    "glMapBufferOES": "GL_OES_mapbuffer", "glUnmapBufferOES": "GL_OES_mapbuffer",
    "glMapBufferRangeEXT": "GL_EXT_map_buffer_range",
    "glFlushMappedBufferRangeEXT": "GL_EXT_map_buffer_range",
    "glEGLImageTargetTexture2DOES": "GL_OES_EGL_image",
    "glGetProgramBinaryOES": "GL_OES_get_program_binary",
    "glProgramBinaryOES": "GL_OES_get_program_binary",
    "glDebugMessageCallbackKHR": "GL_KHR_debug", "glDebugMessageControlKHR": "GL_KHR_debug",
    "glPushDebugGroupKHR": "GL_KHR_debug", "glPopDebugGroupKHR": "GL_KHR_debug",
    "glObjectLabelKHR": "GL_KHR_debug",
}
_DIRECTIVE = re.compile(r"^\s*#\s*extension\s+(GL_\w+)\s*:\s*(\w+)", re.MULTILINE)


@cache
def _data() -> dict:
    return read_toml(DATA, "extensions data file")


def gpu_extensions(gpu: str = DEFAULT_GPU) -> tuple[str, ...]:
    """The GL_EXTENSIONS names of modelled GPU ``gpu`` (a ``[gpu.NAME]`` of the data file)."""
    gpus = _data()["gpu"]
    if gpu not in gpus:
        raise InputError(f"no extension list for GPU {gpu!r} (known: {', '.join(gpus)}; "
                         f"add a [gpu.{gpu!r}] table to {DATA})")
    return tuple(gpus[gpu]["extensions"])


def mesa_extensions() -> tuple[str, ...]:
    """Mesa 22.3's GLES2-context GL_EXTENSIONS names (llvmpipe), as the data file holds them."""
    return tuple(_data()["mesa"]["extensions"])


def extension_status(name: str) -> tuple[str, str]:
    """(status, why) of extension ``name`` (one of :data:`STATUSES`); ("unknown", "") for a
    name on neither list."""
    entry = _data()["status"].get(name)
    return ("unknown", "") if entry is None else (entry["status"], entry["why"])


def extensions_used(commands: Iterable, calls: Iterable[str] = ()) -> dict[str, str]:
    """Extension name -> what showed it (the first command op or GL call), for ``commands``
    (tilesim Commands) and the names of GL ``calls`` a capture made."""
    used: dict[str, str] = {}
    for command in commands:
        args = command.args
        for value in args.values():
            if isinstance(value, str) and value in _FORMAT_EXTENSIONS:
                used.setdefault(_FORMAT_EXTENSIONS[value], command.op)
        if command.op == "texImage2D" and args.get("type") == "HALF_FLOAT_OES":
            used.setdefault("GL_OES_texture_half_float", command.op)
        elif command.op == "vertexAttribPointer" and args.get("type") == "HALF_FLOAT_OES":
            used.setdefault("GL_OES_vertex_half_float", command.op)
        elif command.op == "drawElements" and args.get("type") == "UNSIGNED_INT":
            used.setdefault("GL_OES_element_index_uint", command.op)
        elif command.op == "compressedTexSubImage2D" and args.get("format") == "ETC1_RGB8_OES":
            used.setdefault("GL_EXT_compressed_ETC1_RGB8_sub_texture", command.op)
        elif command.op == "createProgram":
            for key in ("vertex_glsl", "fragment_glsl"):
                for name, behavior in _DIRECTIVE.findall(args.get(key) or ""):
                    if behavior != "disable":
                        used.setdefault(name, f"#extension in a {key.split('_')[0]} shader")
    for call in calls:
        name = next((ext for key, ext in _CALL_EXTENSIONS.items()
                     if call == key or call.endswith(key)), None)
        if name is not None:
            used.setdefault(name, call)
    return used


def unoffered_warning(used: dict[str, str], gpu: str = DEFAULT_GPU) -> str | None:
    """One warning line naming the extensions in ``used`` that GPU ``gpu`` does not offer
    (with what showed each), or None when it offers them all."""
    offered = set(gpu_extensions(gpu))
    missing = sorted(name for name in used if name not in offered)
    if not missing:
        return None
    listed = ", ".join(f"{name} ({used[name]})" for name in missing)
    return (f"the capture uses {len(missing)} extension(s) the modelled GPU ({gpu}) does not "
            f"offer: {listed}; tilesim replays them as the capture's driver drew them")
