"""Conformance scenes: clipping, culling and winding, viewport and depth range, depth
functions."""

from __future__ import annotations

import numpy as np

from tilesim.render.gl.commands import COMPARE_FUNCS, Recorder
from tilesim.render.workloads.conformance_scenes.helpers import (
    FS_COLOR,
    VS_MVP_PATTERN,
    VS_MVP_TEX,
    VS_NDC,
    _cells,
    _draw,
    _floor,
    _hsv,
    _program,
    _quad,
    _set_matrix,
)
from tilesim.render.workloads.conformance_scenes.registry import scene
from tilesim.render.workloads.transforms import perspective

FS_PATTERN = """
precision highp float;
varying vec4 v_color;
varying vec2 v_uv;
void main() {
    vec2 s = 0.5 + 0.5 * sin(v_uv * 6.2831853);
    gl_FragColor = vec4(v_color.rgb * (0.35 + 0.65 * s.x * s.y), 1.0);
}
"""


@scene("near_clip")
def scene_near_clip(gl: Recorder) -> None:
    """Perspective geometry crossing the near plane (and behind the eye, w < 0), with
    perspective-correct varyings and depth testing."""
    program = _program(gl, VS_MVP_PATTERN, FS_PATTERN)
    proj = perspective(60.0, gl.width / gl.height, 1.0, 50.0)
    _set_matrix(gl, program, "u_mvp", proj)
    gl.clearColor(0.05, 0.05, 0.1, 1.0)
    gl.clear("COLOR_BUFFER_BIT", "DEPTH_BUFFER_BIT")
    gl.enable("DEPTH_TEST")
    # A floor from behind the eye to far away.
    # (Off-centre, so that no edge runs exactly through pixel centres: ties on edges that
    # clipping made are decided by rounding, a fill-rule matter other scenes test.)
    floor = np.array([[-6.13, -1.21, 3], [5.87, -1.21, 3], [5.87, -1.21, -40],
                      [-6.13, -1.21, -40]])
    _draw(gl, "TRIANGLE_FAN", floor, np.array([[1, 0.3, 0.2, 1], [0.2, 1, 0.3, 1],
                                               [0.3, 0.4, 1, 1], [1, 1, 0.2, 1]]),
          texcoords=[[0, 0], [6, 0], [6, 20], [0, 20]])
    # A tilted quad whose near part is cut by the near plane (z = -1 in eye space).
    tilted = np.array([[-0.6, -0.45, -0.4], [0.6, -0.45, -0.4], [0.6, 0.5, -3.2],
                       [-0.6, 0.5, -3.2]])
    _draw(gl, "TRIANGLE_FAN", tilted, np.array([[0.9, 0.9, 0.9, 1], [0.9, 0.5, 0.1, 1],
                                                [0.1, 0.5, 0.9, 1], [0.5, 0.9, 0.5, 1]]),
          texcoords=[[0, 0], [2, 0], [2, 3], [0, 3]])
    # A triangle with one vertex behind the eye.
    tri = np.array([[-2.5, 1.5, -6], [1.0, 0.2, -2.5], [0.4, 0.9, 4.0]])
    _draw(gl, "TRIANGLES", tri, np.array([[0.2, 0.9, 0.9, 1], [0.9, 0.2, 0.9, 1],
                                          [0.9, 0.9, 0.2, 1]]),
          texcoords=[[0, 0], [3, 1], [1, 4]])
    gl.endFrame()


FS_UV_WAVES = """
precision highp float;
varying vec2 v_uv;
void main() {
    vec2 w = 0.5 + 0.5 * sin(v_uv * 50.265482);    // 8 periods per unit
    gl_FragColor = vec4(w, 0.5 + 0.5 * sin((v_uv.x + v_uv.y) * 12.566371), 1.0);
}
"""


@scene("perspective_varyings")
def scene_perspective_varyings(gl: Recorder) -> None:
    """Perspective-correct interpolation on a plane receding to the horizon, where the
    varyings change fast from pixel to pixel (a smooth function of them is drawn)."""
    program = _program(gl, VS_MVP_TEX, FS_UV_WAVES)
    gl.clearColor(0.0, 0.0, 0.0, 1.0)
    gl.clear("COLOR_BUFFER_BIT")
    positions, texcoords = _floor(gl, program, repeat=2.0, tilt=17.0)
    _draw(gl, "TRIANGLE_FAN", positions, texcoords=texcoords)
    gl.endFrame()


FS_FACING = """
precision highp float;
varying vec4 v_color;
void main() {
    gl_FragColor = gl_FrontFacing ? v_color : vec4(v_color.rgb * 0.4, 1.0);
}
"""


@scene("cull_winding")
def scene_cull_winding(gl: Recorder) -> None:
    """cullFace FRONT / BACK / FRONT_AND_BACK (and culling off) with frontFace CCW and CW,
    on clockwise and counter-clockwise triangles and a strip; gl_FrontFacing shades them."""
    _program(gl, VS_NDC, FS_FACING)
    gl.clearColor(0.0, 0.0, 0.0, 1.0)
    gl.clear("COLOR_BUFFER_BIT")
    ccw = np.array([[-0.9, -0.9], [-0.1, -0.9], [-0.5, 0.1]])
    cw = np.array([[0.1, -0.9], [0.5, 0.1], [0.9, -0.9]])
    strip = np.array([[-0.9, 0.3], [-0.9, 0.9], [-0.3, 0.3], [-0.3, 0.9], [0.3, 0.3],
                      [0.3, 0.9], [0.9, 0.3], [0.9, 0.9]])
    strip_colors = np.array([_hsv(k / 8) for k in range(8)], dtype=np.float32)
    combos = [(face, cull) for face in ("CCW", "CW")
              for cull in (None, "FRONT", "BACK", "FRONT_AND_BACK")]
    for (x, y, cw_, ch_), (face, cull) in zip(_cells(gl, 4, 2), combos, strict=True):
        gl.viewport(x, y, cw_, ch_)
        gl.frontFace(face)
        if cull is None:
            gl.disable("CULL_FACE")
        else:
            gl.enable("CULL_FACE")
            gl.cullFace(cull)
        _draw(gl, "TRIANGLES", ccw, (1.0, 0.3, 0.2, 1.0))
        _draw(gl, "TRIANGLES", cw, (0.2, 0.5, 1.0, 1.0))
        _draw(gl, "TRIANGLE_STRIP", strip, strip_colors)
    gl.endFrame()


@scene("depth_funcs")
def scene_depth_funcs(gl: Recorder) -> None:
    """Every depth function, with depth writes on and off: a slanted triangle crosses a
    quad's depth, a second quad lies at exactly the same depth, and a probe shows what was
    written to the depth buffer."""
    _program(gl, VS_NDC, FS_COLOR)
    gl.clearColor(0.0, 0.0, 0.0, 1.0)
    gl.clearDepthf(1.0)
    gl.clear("COLOR_BUFFER_BIT", "DEPTH_BUFFER_BIT")
    gl.enable("DEPTH_TEST")
    combos = [(func, mask) for mask in (True, False) for func in COMPARE_FUNCS]
    for (x, y, cw, ch), (func, mask) in zip(_cells(gl, 4, 4), combos, strict=True):
        gl.viewport(x, y, cw, ch)
        gl.depthFunc("LESS")
        gl.depthMask(True)
        _draw(gl, "TRIANGLES", _quad(-0.9, -0.9, 0.9, 0.9, 0.1), (0.4, 0.4, 0.4, 1.0))
        gl.depthFunc(func)
        gl.depthMask(mask)
        slanted = np.array([[-0.85, -0.85, -0.6], [0.85, -0.85, 0.75], [0.0, 0.15, 0.1]])
        _draw(gl, "TRIANGLES", slanted, np.array([[1, 0.2, 0.2, 1], [1, 0.6, 0.1, 1],
                                                  [0.8, 0.1, 0.6, 1]]))
        _draw(gl, "TRIANGLES", _quad(-0.5, 0.3, 0.5, 0.8, 0.1), (0.2, 1.0, 0.3, 1.0))
        gl.depthFunc("LESS")
        gl.depthMask(True)
        _draw(gl, "TRIANGLES", _quad(-0.95, -0.45, 0.95, -0.15, -0.1), (0.2, 0.3, 1.0, 1.0))
    gl.endFrame()


@scene("viewport_depth_range")
def scene_viewport_depth_range(gl: Recorder) -> None:
    """Viewports partly off the framebuffer and of odd sizes, depthRangef (narrow and
    reversed) deciding which of two intersecting triangles is in front."""
    _program(gl, VS_NDC, FS_COLOR)
    gl.clearColor(0.1, 0.1, 0.1, 1.0)
    gl.clear("COLOR_BUFFER_BIT", "DEPTH_BUFFER_BIT")
    gl.enable("DEPTH_TEST")
    w, h = gl.width, gl.height
    tri_a = np.array([[-1, -1, -0.8], [1, -0.6, 0.8], [-0.2, 1, 0.0]])
    tri_b = np.array([[1, -1, -0.5], [0.3, 1, 0.6], [-1, 0.2, 0.4]])
    views = [(-w // 8, -h // 8, w // 2, h // 2, 0.0, 1.0),
             (w // 2 + 3, 5, w // 2 - 9, h // 3 + 1, 0.25, 0.75),
             (7, h // 2 + 1, w // 3, h // 2 + 20, 1.0, 0.0),
             (w // 2 - 5, h // 2 - 9, w // 2 + 31, h // 2 + 2, 0.6, 0.4)]
    for x, y, vw, vh, near, far in views:
        gl.viewport(x, y, vw, vh)
        gl.depthRangef(near, far)
        _draw(gl, "TRIANGLES", tri_a, np.array([[1, 0.3, 0.3, 1], [1, 0.8, 0.3, 1],
                                                [0.8, 0.3, 0.3, 1]]))
        _draw(gl, "TRIANGLES", tri_b, np.array([[0.3, 0.4, 1, 1], [0.3, 1, 0.9, 1],
                                                [0.4, 0.3, 0.9, 1]]))
    gl.endFrame()
