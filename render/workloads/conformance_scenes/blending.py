"""Conformance scenes: every blend factor and equation, color and depth masks, scissor."""

from __future__ import annotations

import numpy as np

from tilesim.render.gl.commands import BLEND_FACTORS, DUAL_SOURCE_FACTORS, Recorder
from tilesim.render.workloads.conformance_scenes.helpers import (
    FS_COLOR,
    VS_NDC,
    _cells,
    _draw,
    _program,
    _quad,
)
from tilesim.render.workloads.conformance_scenes.registry import scene


def _blend_background(gl: Recorder) -> None:
    """A full-screen gradient (every channel, alpha included) to blend onto."""
    gl.disable("BLEND")
    gl.viewport(0, 0, gl.width, gl.height)
    _draw(gl, "TRIANGLE_STRIP", [[-1, -1], [1, -1], [-1, 1], [1, 1]],
          np.array([[0.9, 0.1, 0.3, 0.2], [0.2, 0.8, 0.1, 0.9], [0.1, 0.3, 0.9, 0.6],
                    [0.8, 0.8, 0.7, 0.35]], dtype=np.float32))


_SOURCE_GRADIENT = np.array([[0.9, 0.6, 0.1, 0.15], [0.1, 0.7, 0.9, 0.85],
                             [0.6, 0.1, 0.8, 0.5], [1.0, 1.0, 0.5, 0.95]], dtype=np.float32)


@scene("blend_factors", size=(180, 168))
def scene_blend_factors(gl: Recorder) -> None:
    """Every (source, destination) blend factor pair GLES2 allows (15 x 14), with a blend
    colour set, over a background with varying colour and alpha."""
    _program(gl, VS_NDC, FS_COLOR)
    gl.clearColor(0.0, 0.0, 0.0, 1.0)
    gl.clear("COLOR_BUFFER_BIT")
    _blend_background(gl)
    gl.enable("BLEND")
    gl.blendColor(0.25, 0.5, 0.75, 0.6)
    dst_factors = [f for f in BLEND_FACTORS if f != "SRC_ALPHA_SATURATE"]
    combos = [(s, d) for s in BLEND_FACTORS for d in dst_factors]
    for (x, y, cw, ch), (src, dst) in zip(_cells(gl, 15, 14), combos, strict=True):
        gl.viewport(x, y, cw, ch)
        gl.blendFunc(src, dst)
        _draw(gl, "TRIANGLE_STRIP", [[-0.8, -0.8], [0.8, -0.8], [-0.8, 0.8], [0.8, 0.8]],
              _SOURCE_GRADIENT)
    gl.endFrame()


@scene("blend_equations", size=(144, 96))
def scene_blend_equations(gl: Recorder) -> None:
    """Every (rgb, alpha) blend equation pair with separate rgb / alpha factors and the
    constant colour; a second pass makes the destination alpha visible."""
    _program(gl, VS_NDC, FS_COLOR)
    gl.clearColor(0.0, 0.0, 0.0, 1.0)
    gl.clear("COLOR_BUFFER_BIT")
    _blend_background(gl)
    gl.enable("BLEND")
    gl.blendColor(0.8, 0.3, 0.5, 0.25)
    equations = ("FUNC_ADD", "FUNC_SUBTRACT", "FUNC_REVERSE_SUBTRACT")
    factor_sets = [("SRC_ALPHA", "ONE_MINUS_SRC_ALPHA", "ONE", "ONE"),
                   ("ONE", "ONE", "SRC_ALPHA", "DST_ALPHA"),
                   ("DST_COLOR", "CONSTANT_COLOR", "ONE_MINUS_DST_ALPHA", "CONSTANT_ALPHA"),
                   ("SRC_ALPHA_SATURATE", "ONE_MINUS_SRC_COLOR", "ZERO", "ONE"),
                   ("ONE_MINUS_CONSTANT_COLOR", "SRC_COLOR", "ONE_MINUS_CONSTANT_ALPHA",
                    "ONE_MINUS_SRC_ALPHA"),
                   ("CONSTANT_ALPHA", "ONE_MINUS_DST_COLOR", "DST_ALPHA", "SRC_ALPHA")]
    combos = [(eq_rgb, eq_a, factors) for factors in factor_sets
              for eq_rgb in equations for eq_a in equations]
    cells = list(_cells(gl, 9, 6))
    _blend_cells(gl, cells, combos)
    _show_alpha(gl, cells)
    gl.endFrame()


def _blend_cells(gl: Recorder, cells, combos) -> None:
    """The source gradient into each cell under its (rgb equation, alpha equation, factors)."""
    for (x, y, cw, ch), (eq_rgb, eq_a, factors) in zip(cells, combos, strict=True):
        gl.viewport(x, y, cw, ch)
        gl.blendEquationSeparate(eq_rgb, eq_a)
        gl.blendFuncSeparate(*factors)
        _draw(gl, "TRIANGLE_STRIP", [[-0.85, -0.85], [0.85, -0.85], [-0.85, 0.85],
                                     [0.85, 0.85]], _SOURCE_GRADIENT)


def _show_alpha(gl: Recorder, cells) -> None:
    """The destination alpha in colour: a grey quad blended by DST_ALPHA on the lower half of
    every cell."""
    gl.blendEquation("FUNC_ADD")
    gl.blendFuncSeparate("DST_ALPHA", "ONE_MINUS_DST_ALPHA", "ZERO", "ONE")
    for x, y, cw, ch in cells:
        gl.viewport(x, y, cw, ch)
        _draw(gl, "TRIANGLES", _quad(-1, -1, 1, -0.3), (0.5, 0.5, 0.5, 1.0))


@scene("blend_minmax", size=(140, 96))
def scene_blend_minmax(gl: Recorder) -> None:
    """EXT_blend_minmax: GL_MIN_EXT and GL_MAX_EXT for color and alpha, alone and beside
    FUNC_ADD / FUNC_REVERSE_SUBTRACT, under factors they must ignore (the extension takes
    min / max of the unweighted source and destination); a second pass makes the destination
    alpha visible."""
    _program(gl, VS_NDC, FS_COLOR)
    gl.clearColor(0.0, 0.0, 0.0, 1.0)
    gl.clear("COLOR_BUFFER_BIT")
    _blend_background(gl)
    gl.enable("BLEND")
    gl.blendColor(0.8, 0.3, 0.5, 0.25)
    equations = ("MIN_EXT", "MAX_EXT", "FUNC_ADD", "FUNC_REVERSE_SUBTRACT")
    factor_sets = [("SRC_ALPHA", "ONE_MINUS_SRC_ALPHA", "ONE", "ONE"),
                   ("ZERO", "CONSTANT_COLOR", "DST_ALPHA", "ZERO")]
    combos = [(eq_rgb, eq_a, factors) for factors in factor_sets
              for eq_rgb in equations[:2] for eq_a in equations] + \
        [(eq_rgb, eq_a, factor_sets[1]) for eq_rgb in equations[2:] for eq_a in equations[:2]]
    cells = list(_cells(gl, 5, 4))
    _blend_cells(gl, cells, combos)
    _show_alpha(gl, cells)
    gl.endFrame()


@scene("color_depth_masks", size=(128, 160))
def scene_color_depth_masks(gl: Recorder) -> None:
    """Every colorMask combination for draws and for clears (scissored), and depthMask for
    draws and for depth clears."""
    _program(gl, VS_NDC, FS_COLOR)
    gl.clearColor(0.1, 0.2, 0.7, 0.9)
    gl.clear("COLOR_BUFFER_BIT", "DEPTH_BUFFER_BIT")
    masks = [tuple(bool(m >> k & 1) for k in range(4)) for m in range(16)]
    cells = list(_cells(gl, 8, 5))
    # Row 0-1: draws under each color mask.
    for (x, y, cw, ch), mask in zip(cells[:16], masks, strict=True):
        gl.viewport(x, y, cw, ch)
        gl.colorMask(*mask)
        _draw(gl, "TRIANGLE_STRIP", [[-0.8, -0.8], [0.8, -0.8], [-0.8, 0.8], [0.8, 0.8]],
              _SOURCE_GRADIENT)
    # Row 2-3: scissored clears under each color mask.
    gl.enable("SCISSOR_TEST")
    gl.clearColor(1.0, 0.9, 0.1, 0.25)
    for (x, y, cw, ch), mask in zip(cells[16:32], masks, strict=True):
        gl.colorMask(*mask)
        gl.scissor(x + 2, y + 3, cw - 5, ch - 4)
        gl.clear("COLOR_BUFFER_BIT")
    gl.disable("SCISSOR_TEST")
    gl.colorMask(True, True, True, True)
    # Row 4: depthMask. The left half writes depth near, a masked depth clear must not
    # clear it; the right half clears depth inside a scissor with the mask on.
    x, y, _, ch = cells[32]
    gl.viewport(0, y, gl.width, ch)
    gl.enable("DEPTH_TEST")
    gl.depthFunc("LESS")
    _draw(gl, "TRIANGLES", _quad(-0.95, -0.9, 0.95, 0.1, -0.5), (0.9, 0.2, 0.2, 1.0))
    gl.depthMask(False)
    gl.clear("DEPTH_BUFFER_BIT")           # no effect: depth writes are masked
    _draw(gl, "TRIANGLES", _quad(-0.9, -0.5, -0.1, 0.9, 0.2), (0.2, 0.9, 0.2, 1.0))
    gl.depthMask(True)
    gl.enable("SCISSOR_TEST")
    gl.scissor(gl.width // 2 + 4, y, gl.width // 4, ch)
    gl.clear("DEPTH_BUFFER_BIT")
    gl.disable("SCISSOR_TEST")
    _draw(gl, "TRIANGLES", _quad(0.1, -0.5, 0.9, 0.9, 0.3), (0.2, 0.4, 1.0, 1.0))
    _draw(gl, "TRIANGLES", _quad(-0.6, -0.2, 0.6, 0.3, 0.4), (1.0, 1.0, 1.0, 1.0))
    gl.endFrame()


@scene("scissor")
def scene_scissor(gl: Recorder) -> None:
    """Scissored clears (overlapping, partly off-screen, empty) and scissored draws, with the
    scissor different from the viewport."""
    w, h = gl.width, gl.height
    _program(gl, VS_NDC, FS_COLOR)
    gl.clearColor(0.3, 0.3, 0.3, 1.0)
    gl.clear("COLOR_BUFFER_BIT")
    gl.enable("SCISSOR_TEST")
    for rect, color in [((5, 7, w // 2, h // 3), (0.9, 0.1, 0.1, 1.0)),
                        ((w // 3, h // 4, w // 2, h // 2), (0.1, 0.8, 0.2, 1.0)),
                        ((-10, h - 20, 45, 50), (0.1, 0.2, 0.9, 1.0)),
                        ((w - 17, -5, 40, 33), (0.9, 0.9, 0.1, 1.0)),
                        ((20, 20, 0, 0), (1.0, 1.0, 1.0, 1.0))]:
        gl.scissor(*rect)
        gl.clearColor(*color)
        gl.clear("COLOR_BUFFER_BIT")
    gl.scissor(w // 8, h // 2 + 3, w // 2 + 5, h // 4 - 1)
    gl.viewport(0, h // 3, w, 2 * h // 3)
    _draw(gl, "TRIANGLES", [[-1, -1], [1, -1], [0, 1]],
          np.array([[1, 0, 1, 1], [0, 1, 1, 1], [1, 1, 0, 1]], dtype=np.float32))
    gl.scissor(w // 2 + 9, 3, w // 3, h // 2)
    gl.viewport(w // 4, 0, w // 2, h // 2)
    _draw(gl, "TRIANGLE_STRIP", [[-1, -1], [1, -1], [-1, 1], [1, 1]],
          np.array([[0.5, 0.2, 0.1, 1], [0.1, 0.5, 0.2, 1], [0.2, 0.1, 0.5, 1],
                    [0.9, 0.9, 0.9, 1]], dtype=np.float32))
    gl.disable("SCISSOR_TEST")
    gl.viewport(0, 0, w, h)
    _draw(gl, "TRIANGLES", _quad(0.6, 0.6, 0.9, 0.9), (0.0, 0.0, 0.0, 1.0))
    gl.endFrame()


# EXT_blend_func_extended: a second source color unlike the first (permuted, complemented
# channels and its own alpha), so that a SRC1 factor read as SRC shows.
FS_DUAL_SOURCE = """
#extension GL_EXT_blend_func_extended : require
precision highp float;
varying vec4 v_color;
void main() {
    gl_FragColor = v_color;
    gl_SecondaryFragColorEXT = vec4(1.0 - v_color.b, v_color.r * 0.8, 1.0 - v_color.g,
                                    0.9 - 0.7 * v_color.a);
}
"""


@scene("blend_func_extended", size=(160, 120))
def scene_blend_func_extended(gl: Recorder) -> None:
    """EXT_blend_func_extended (dual-source blending): the four SRC1 factors as source and as
    destination factors of color and alpha, each against every other kind of factor and
    under FUNC_ADD, FUNC_SUBTRACT and FUNC_REVERSE_SUBTRACT, with a fragment shader writing
    gl_FragColor and gl_SecondaryFragColorEXT; a second pass (one color source) makes the
    destination alpha visible."""
    _program(gl, VS_NDC, FS_DUAL_SOURCE)
    gl.clearColor(0.0, 0.0, 0.0, 1.0)
    gl.clear("COLOR_BUFFER_BIT")
    _blend_background(gl)
    gl.enable("BLEND")
    gl.blendColor(0.8, 0.3, 0.5, 0.25)
    others = ("ONE", "SRC_ALPHA", "ONE_MINUS_DST_COLOR", "ZERO", "CONSTANT_COLOR")
    combos = []
    for k, src1 in enumerate(DUAL_SOURCE_FACTORS):
        for j, other in enumerate(others):
            combos.append(("FUNC_ADD", "FUNC_ADD", (src1, other, other, src1)))
            combos.append((("FUNC_ADD", "FUNC_SUBTRACT", "FUNC_REVERSE_SUBTRACT")[j % 3],
                           "FUNC_ADD",
                           (other, src1, DUAL_SOURCE_FACTORS[(k + 1) % 4], "ONE_MINUS_SRC_ALPHA")))
    cells = list(_cells(gl, 8, 5))
    _blend_cells(gl, cells, combos)
    _program(gl, VS_NDC, FS_COLOR)
    _show_alpha(gl, cells)
    gl.endFrame()
