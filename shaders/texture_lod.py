"""EXT_shader_texture_lod on Mesa 22.3: the GLSL ES 1.00 program rewritten as GLSL ES 3.00.

EXT_shader_texture_lod gives GLSL ES 1.00 fragment shaders explicit-LOD and gradient lookups
(``texture2DLodEXT``, ``texture2DProjLodEXT``, ``textureCubeLodEXT``, ``texture2DGradEXT``,
``texture2DProjGradEXT``, ``textureCubeGradEXT``; the extension's section "Changes to
Chapter 8" of the GLSL ES 1.00 specification). Mesa 22.3's GLES compiler does not offer the
extension (softpipe and llvmpipe reject the ``#extension`` directive), but its GLSL ES 3.00
has the same lookups, which the extension's functions are defined to equal
(``textureLod``, ``textureProjLod``, ``textureGrad``, ``textureProjGrad``: GLSL ES 3.00
§8.8). Mesa compiles those to the TGSI a driver with the extension runs: TXL (explicit LOD
in the coordinate's w) and TXD (the gradients as two more operands), the projective forms
divided first. So a program that enables the extension is compiled, by tilesim's front end
and by the Mesa reference replay alike, as the GLSL ES 3.00 program this module writes:

- ``#version 300 es`` first (a ``#version 100`` line replaced, else inserted);
- the ``#extension`` lines of extensions that GLSL ES 3.00 has in its core
  (EXT_shader_texture_lod, OES_standard_derivatives, EXT_frag_depth, OES_texture_3D)
  blanked, so line numbers stay;
- macros after the version line: ``attribute`` -> ``in``, ``varying`` -> ``out`` (vertex) /
  ``in`` (fragment), every GLSL ES 1.00 and EXT_shader_texture_lod lookup -> its GLSL ES
  3.00 name;
- ``gl_FragColor`` and ``gl_FragData[0]`` -> one ``out mediump vec4`` (:data:`FRAG_COLOR`,
  gl_FragColor's precision in GLSL ES 1.00 §7.2), ``gl_FragDepthEXT`` -> ``gl_FragDepth``.

Programs this cannot express are refused with a one-line reason (:class:`RewriteError`): an
identifier named ``texture`` (a GLSL ES 3.00 built-in the lookups would then reach),
gl_FragData beyond element 0, or dual-source blending's gl_SecondaryFragColorEXT.
"""

from __future__ import annotations

import re

__all__ = ["FRAG_COLOR", "RewriteError", "rewrite_program", "uses_texture_lod"]

FRAG_COLOR = "tilesim_FragColor"
EXTENSION = "GL_EXT_shader_texture_lod"

_DIRECTIVE = re.compile(r"^[ \t]*#[ \t]*extension[ \t]+(\w+)[ \t]*:[ \t]*(\w+)[ \t]*$", re.M)
_VERSION = re.compile(r"^[ \t]*#[ \t]*version[ \t]+100[ \t]*$", re.M)
# Extensions whose features GLSL ES 3.00 has in its core.
_CORE_IN_ES3 = ("GL_EXT_shader_texture_lod", "GL_OES_standard_derivatives",
                "GL_EXT_frag_depth", "GL_OES_texture_3D")
# GLSL ES 1.00 lookups (and those of its extensions) -> GLSL ES 3.00 (§8.8).
LOOKUPS = {
    "texture2D": "texture", "texture2DProj": "textureProj", "texture2DLod": "textureLod",
    "texture2DProjLod": "textureProjLod", "textureCube": "texture",
    "textureCubeLod": "textureLod", "texture3D": "texture", "texture3DProj": "textureProj",
    "texture3DLod": "textureLod", "texture3DProjLod": "textureProjLod",
    "texture2DLodEXT": "textureLod", "texture2DProjLodEXT": "textureProjLod",
    "textureCubeLodEXT": "textureLod", "texture2DGradEXT": "textureGrad",
    "texture2DProjGradEXT": "textureProjGrad", "textureCubeGradEXT": "textureGrad",
}


class RewriteError(ValueError):
    """A program enabling EXT_shader_texture_lod that the rewrite cannot express."""


def uses_texture_lod(*sources: str) -> bool:
    """Whether a shader enables (or requires, or warns on) EXT_shader_texture_lod."""
    return any(name == EXTENSION and behavior != "disable"
               for source in sources for name, behavior in _DIRECTIVE.findall(source))


def rewrite_program(vertex: str, fragment: str) -> tuple[str, str]:
    """The GLSL ES 3.00 (vertex, fragment) sources Mesa compiles for a GLSL ES 1.00 program
    using EXT_shader_texture_lod (see the module docstring)."""
    for stage, source in (("vertex", vertex), ("fragment", fragment)):
        if re.search(r"\btexture\b", _strip_comments(source)):
            raise RewriteError(f"the {stage} shader names something 'texture', which the "
                               f"GLSL ES 3.00 form of {EXTENSION} needs for its lookups")
    body = _strip_comments(fragment)
    if re.search(r"\bgl_SecondaryFrag(Color|Data)EXT\b", body):
        raise RewriteError(f"{EXTENSION} with EXT_blend_func_extended's second color has no "
                           "GLSL ES 3.00 form tilesim writes")
    if re.search(r"\bgl_FragData\s*\[\s*(?!0\s*\])", body):
        raise RewriteError("gl_FragData beyond element 0 (EXT_draw_buffers) with "
                           f"{EXTENSION}")
    return _rewrite(vertex, "vertex"), _rewrite(fragment, "fragment")


def _strip_comments(source: str) -> str:
    return re.sub(r"//[^\n]*|/\*.*?\*/", " ", source, flags=re.S)


def _rewrite(source: str, stage: str) -> str:
    def blank(match: re.Match) -> str:
        return "" if match.group(1) in _CORE_IN_ES3 else match.group(0)

    text = _DIRECTIVE.sub(blank, source)
    macros = ["#define attribute in" if stage == "vertex" else None,
              f"#define varying {'out' if stage == 'vertex' else 'in'}",
              *(f"#define {old} {new}" for old, new in LOOKUPS.items())]
    head = "\n".join(["#version 300 es", *(m for m in macros if m)])
    if _VERSION.search(text):
        # Mesa's line numbers then count the head's lines too.
        text = _VERSION.sub(lambda _: head, text, count=1)
    else:
        text = head + "\n" + text
    if stage == "fragment":
        text = re.sub(r"\bgl_FragData\s*\[\s*0\s*\]", FRAG_COLOR, text)
        text = re.sub(r"\bgl_FragColor\b", FRAG_COLOR, text)
        text = re.sub(r"\bgl_FragDepthEXT\b", "gl_FragDepth", text)
        # After the head and the last #extension line: directives precede declarations.
        at = max([m.end() for m in _DIRECTIVE.finditer(text)] + [text.index(head) + len(head)])
        text = text[:at] + f"\nout mediump vec4 {FRAG_COLOR};" + text[at:]
    return text
