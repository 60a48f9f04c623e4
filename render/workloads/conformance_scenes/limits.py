"""Conformance scenes: the GLES2 limits real programs reach, texture units beyond the eighth
and points as large as Mesa draws them."""

from __future__ import annotations

import numpy as np

from tilesim.render.gl.commands import Recorder
from tilesim.render.workloads.conformance_scenes.helpers import (
    VS_TEX,
    _checker,
    _draw,
    _hsv,
    _program,
    _quad,
    _quad_uv,
    _texture,
)
from tilesim.render.workloads.conformance_scenes.registry import scene

# Units an application may select beyond the 8 a Mali-400-class driver offers: Mesa's GLES2
# contexts report 32 per stage (GL_MAX_TEXTURE_IMAGE_UNITS), 192 combined on llvmpipe.
HIGH_UNITS = (8, 13, 21, 31)

FS_FOUR_UNITS = """
precision mediump float;
uniform sampler2D u_tex[4];
uniform vec4 u_pick;
varying vec2 v_uv;
void main() {
    gl_FragColor = u_pick.x * texture2D(u_tex[0], v_uv) + u_pick.y * texture2D(u_tex[1], v_uv)
                 + u_pick.z * texture2D(u_tex[2], v_uv) + u_pick.w * texture2D(u_tex[3], v_uv);
}
"""

VS_POINT = """
attribute vec4 a_position;
attribute vec4 a_color;
uniform float u_size;
varying vec4 v_color;
void main() {
    v_color = a_color;
    gl_PointSize = u_size;
    gl_Position = a_position;
}
"""

FS_POINT = """
precision mediump float;
varying vec4 v_color;
void main() {
    gl_FragColor = vec4(v_color.rgb * (0.4 + 0.6 * gl_PointCoord.x), 1.0);
}
"""


@scene("texture_units_high", size=(128, 128))
def scene_texture_units_high(gl: Recorder) -> None:
    """Textures bound on units 8, 13, 21 and 31 (glActiveTexture beyond GL_TEXTURE7) and read
    through a sampler array, one quadrant each; unit 0 is left with a texture nobody reads."""
    program = _program(gl, VS_TEX, FS_FOUR_UNITS)
    gl.activeTexture(0x84C0)
    _texture(gl, _checker(8, 2, (255, 0, 0, 255), (0, 0, 0, 255)), mag_filter="NEAREST")
    for k, unit in enumerate(HIGH_UNITS):
        gl.activeTexture(0x84C0 + unit)
        color = tuple(int(255 * c) for c in _hsv(k / 4))
        _texture(gl, _checker(16, 2 + 2 * k, color, (30, 30, 30, 255)), min_filter="NEAREST",
                 mag_filter="NEAREST")
    gl.activeTexture(0x84C0)
    gl.uniform1iv(gl.getUniformLocation(program, "u_tex"), list(HIGH_UNITS))
    gl.clearColor(0.1, 0.1, 0.1, 1.0)
    gl.clear("COLOR_BUFFER_BIT")
    pick = gl.getUniformLocation(program, "u_pick")
    for k, (x, y) in enumerate(((-1, -1), (0, -1), (-1, 0), (0, 0))):
        weights = [0.0] * 4
        weights[k] = 1.0
        gl.uniform4f(pick, *weights)
        _draw(gl, "TRIANGLES", _quad(x + 0.05, y + 0.05, x + 0.95, y + 0.95),
              texcoords=_quad_uv())
    gl.endFrame()


@scene("point_size_255", size=(320, 320))
def scene_point_size_255(gl: Recorder) -> None:
    """gl_PointSize 255, the top of Mesa's aliased point size range, and 300, clamped to it;
    shaded by gl_PointCoord.x, one frame each."""
    program = _program(gl, VS_POINT, FS_POINT)
    size = gl.getUniformLocation(program, "u_size")
    for requested, (x, y), hue in ((255.0, (-0.1, 0.05), 0.6), (300.0, (0.1, -0.05), 0.1)):
        gl.clearColor(0.0, 0.0, 0.0, 1.0)
        gl.clear("COLOR_BUFFER_BIT")
        gl.uniform1f(size, requested)
        _draw(gl, "POINTS", np.array([[x, y, 0.0]], np.float32), _hsv(hue))
        gl.endFrame()
