"""Conformance scenes: shader features (gl_FragCoord and gl_FrontFacing, discard) and a
70k triangle mesh (glmark2's bunny)."""

from __future__ import annotations

import numpy as np

from tilesim.errors import InputError
from tilesim.render.gl.commands import Recorder
from tilesim.render.workloads.conformance_scenes.helpers import (
    FS_COLOR,
    VS_MVP_PATTERN,
    VS_NDC,
    _checker,
    _draw,
    _program,
    _quad,
    _quad_uv,
    _set_matrix,
    _texture,
)
from tilesim.render.workloads.conformance_scenes.registry import GLMARK2, scene
from tilesim.render.workloads.transforms import perspective, rotate, translate

FS_FRAGCOORD = """
precision highp float;
varying vec4 v_color;
void main() {
    vec2 cell = fract(gl_FragCoord.xy / 16.0);
    float face = gl_FrontFacing ? 1.0 : 0.3;
    gl_FragColor = vec4(cell.x * face, cell.y * v_color.g, gl_FragCoord.z, 1.0);
}
"""


@scene("fragcoord_facing")
def scene_fragcoord_facing(gl: Recorder) -> None:
    """gl_FragCoord (x, y, z) and gl_FrontFacing in the fragment shader."""
    _program(gl, VS_NDC, FS_FRAGCOORD)
    gl.clearColor(0.0, 0.0, 0.0, 1.0)
    gl.clear("COLOR_BUFFER_BIT")
    _draw(gl, "TRIANGLES", np.array([[-1, -1, -0.9], [0.9, -1, 0.2], [-1, 0.9, 0.9]]),
          (1.0, 0.8, 1.0, 1.0))
    _draw(gl, "TRIANGLES", np.array([[1, 1, 0.5], [1, -0.8, -0.5], [-0.8, 1, 0.0]]),
          (1.0, 0.4, 1.0, 1.0))
    gl.endFrame()


FS_DISCARD = """
precision highp float;
varying vec4 v_color;
varying vec2 v_uv;
void main() {
    if (fract(v_uv.x * 7.0 + v_uv.y * 3.0) < 0.35)
        discard;
    if (length(v_uv - vec2(0.5)) > 0.47)
        discard;
    gl_FragColor = v_color;
}
"""


@scene("discard")
def scene_discard(gl: Recorder) -> None:
    """A fragment shader that discards (screen-space pattern and a disc), depth-tested late:
    discarded fragments must neither write color nor depth."""
    program = _program(gl, VS_MVP_PATTERN, FS_DISCARD)
    _set_matrix(gl, program, "u_mvp", np.eye(4))
    gl.clearColor(0.1, 0.1, 0.2, 1.0)
    gl.clear("COLOR_BUFFER_BIT", "DEPTH_BUFFER_BIT")
    gl.enable("DEPTH_TEST")
    uv = [[0, 0], [1, 0], [1, 1], [0, 0], [1, 1], [0, 1]]
    _draw(gl, "TRIANGLES", _quad(-0.9, -0.9, 0.5, 0.5, -0.2), (1.0, 0.5, 0.2, 1.0),
          texcoords=uv)
    _draw(gl, "TRIANGLES", _quad(-0.5, -0.5, 0.9, 0.9, 0.3), (0.2, 0.6, 1.0, 1.0),
          texcoords=uv)
    # Behind both: visible only through the holes.
    _draw(gl, "TRIANGLES", _quad(-1, -1, 1, 1, 0.8), (0.3, 0.9, 0.3, 1.0),
          texcoords=[[0.02, 0.02], [0.98, 0.02], [0.98, 0.98], [0.02, 0.02], [0.98, 0.98],
                     [0.02, 0.98]])
    gl.endFrame()


VS_MEDIUMP = """
attribute vec4 a_position;
attribute vec2 a_texcoord;
varying vec2 v_uv;
varying vec2 v_big;
void main() {
    v_uv = a_texcoord;
    v_big = a_texcoord * 4.0 + 98.0;
    gl_Position = a_position;
}
"""

# Every value below is computed at mediump, where fp16 (11-bit significand) is coarse:
# fp16 numbers are 1/8 apart near 157, 1/16 apart between 64 and 128.
FS_MEDIUMP = """
precision mediump float;
varying vec2 v_uv;
varying vec2 v_big;
uniform vec3 u_light;
uniform float u_step;
uniform sampler2D u_tex;
void main() {
    // Fine stripes: u * 157 reaches 157.
    float stripes = fract(v_uv.x * 157.0);
    // A 32-step accumulation up to about 79 (u_step keeps the compiler from folding it).
    float sum = 0.0;
    for (int i = 0; i < 32; i++)
        sum += v_uv.y * 2.3 + u_step * float(i);
    float bands = fract(sum);
    // A checker from a varying near 100, cells 1/8 wide.
    vec2 cell = floor(v_big * 8.0);
    float checker = mod(cell.x + cell.y, 2.0);
    // Lighting with mediump vectors: normalize, dot, pow.
    vec3 n = normalize(vec3(v_uv * 2.0 - 1.0, 0.7));
    float spec = pow(max(dot(n, normalize(u_light)), 0.0), 24.0);
    // A texture lookup at mediump coordinates near 100.
    vec4 texel = texture2D(u_tex, v_big * 0.75);
    gl_FragColor = vec4(stripes, mix(bands, texel.g, 0.25),
                        0.4 * checker + 0.4 * spec + 0.2 * texel.r, 1.0);
}
"""


@scene("mediump_precision", mediump="fp16")
def scene_mediump_precision(gl: Recorder) -> None:
    """mediump arithmetic where precision matters (fine stripes of fract(u * 157), a 32-step
    accumulation, a checker from a varying near 100, mediump lighting with pow, a texture
    lookup at mediump coordinates): llvmpipe computes it in fp16, and so does tilesim's
    fp16 mode; in float32 the stripes and bands come out smooth where fp16 steps."""
    program = _program(gl, VS_MEDIUMP, FS_MEDIUMP)
    gl.uniform3f(gl.getUniformLocation(program, "u_light"), 0.3, 0.5, 1.0)
    gl.uniform1f(gl.getUniformLocation(program, "u_step"), 0.01)
    gl.uniform1i(gl.getUniformLocation(program, "u_tex"), 0)
    gl.activeTexture(0)
    _texture(gl, _checker(16, 4, a=(250, 200, 90, 255), b=(30, 60, 140, 255)),
             min_filter="LINEAR", mag_filter="LINEAR")
    gl.clearColor(0.0, 0.0, 0.0, 1.0)
    gl.clear("COLOR_BUFFER_BIT")
    _draw(gl, "TRIANGLES", _quad(-1, -1, 1, 1), texcoords=_quad_uv())
    gl.endFrame()


# glmark2's light-basic program (the "build" scene), its constants as glmark2 prepends them.
VS_LIGHT_BASIC = """
const vec4 MaterialDiffuse = vec4(1.000000, 1.000000, 1.000000, 1.000000);
const vec4 LightSourcePosition = vec4(20.000000, 20.000000, 10.000000, 1.000000);
attribute vec3 position;
attribute vec3 normal;

uniform mat4 ModelViewProjectionMatrix;
uniform mat4 NormalMatrix;

varying vec4 Color;

void main(void)
{
    vec3 N = normalize(vec3(NormalMatrix * vec4(normal, 1.0)));
    vec3 L = normalize(LightSourcePosition.xyz);
    float diffuse = max(dot(N, L), 0.0);
    Color = vec4(diffuse * MaterialDiffuse.rgb, MaterialDiffuse.a);
    gl_Position = ModelViewProjectionMatrix * vec4(position, 1.0);
}
"""

FS_LIGHT_BASIC = """
precision highp float;
varying vec4 Color;

void main(void)
{
    gl_FragColor = Color;
}
"""


@scene("bunny", size=(320, 240))
def scene_bunny(gl: Recorder) -> None:
    """glmark2's bunny (34,835 vertices, 69,666 triangles) with the light-basic per-vertex
    directional lighting, depth-tested, from a u32 element buffer."""
    from tilesim.render.workloads.obj_model import load_obj

    path = GLMARK2 / "models" / "bunny.obj"
    if not path.exists():
        raise InputError("glmark2's bunny model is not installed (Debian package glmark2-data)",
                         source=str(path))
    mesh = load_obj(path)
    program = gl.createProgram(VS_LIGHT_BASIC, FS_LIGHT_BASIC,
                               attrib_locations={"position": 0, "normal": 1})
    gl.useProgram(program)
    lo, hi = mesh.positions.min(axis=0), mesh.positions.max(axis=0)
    centre, extent = (lo + hi) / 2, float((hi - lo).max())
    model = translate(*(-centre)) if extent else np.eye(4)
    model = np.diag([2.0 / extent] * 3 + [1.0]) @ model
    view = translate(0, 0, -2.15) @ rotate("x", 15) @ rotate("y", 35)
    model_view = view @ model
    proj = perspective(60.0, gl.width / gl.height, 1.0, 1024.0)
    _set_matrix(gl, program, "ModelViewProjectionMatrix", proj @ model_view)
    _set_matrix(gl, program, "NormalMatrix", np.linalg.inv(model_view).T)
    vbo = gl.createBuffer()
    gl.bindBuffer("ARRAY_BUFFER", vbo)
    gl.bufferData("ARRAY_BUFFER", mesh.interleaved())
    ebo = gl.createBuffer()
    gl.bindBuffer("ELEMENT_ARRAY_BUFFER", ebo)
    gl.bufferData("ELEMENT_ARRAY_BUFFER", mesh.indices.astype(np.uint32))
    gl.vertexAttribPointer(0, 3, "FLOAT", False, 24, 0)
    gl.enableVertexAttribArray(0)
    gl.vertexAttribPointer(1, 3, "FLOAT", False, 24, 12)
    gl.enableVertexAttribArray(1)
    gl.enable("DEPTH_TEST")
    gl.enable("CULL_FACE")
    gl.clearColor(0.0, 0.0, 0.0, 1.0)
    gl.clear("COLOR_BUFFER_BIT", "DEPTH_BUFFER_BIT")
    gl.drawElements("TRIANGLES", mesh.indices.size, "UNSIGNED_INT", 0)
    gl.endFrame()


VS_DEPTH_RANGE = """
attribute vec4 a_position;
varying vec3 v_range;
void main() {
    v_range = vec3(gl_DepthRange.near, gl_DepthRange.far, gl_DepthRange.diff);
    gl_Position = a_position;
}
"""

FS_DEPTH_RANGE = """
precision highp float;
varying vec3 v_range;
void main() {
    // gl_FragCoord.z lies in [near, far]: its place there, and the range itself
    float t = (gl_FragCoord.z - gl_DepthRange.near) / gl_DepthRange.diff;
    gl_FragColor = vec4(t, v_range.x + v_range.y * 0.5, gl_DepthRange.far, 1.0);
}
"""


@scene("depth_range_uniform")
def scene_depth_range_uniform(gl: Recorder) -> None:
    """The built-in uniform gl_DepthRange (GLSL ES 1.00 section 7.5) in both stages, under
    three glDepthRangef settings, one horizontal band each; a sloped triangle per band."""
    _program(gl, VS_DEPTH_RANGE, FS_DEPTH_RANGE)
    gl.clearColor(0.0, 0.0, 0.0, 1.0)
    gl.clear("COLOR_BUFFER_BIT")
    for k, (near, far) in enumerate(((0.0, 1.0), (0.2, 0.7), (0.9, 0.3))):
        gl.depthRangef(near, far)
        y0 = -0.95 + k * 0.65
        _draw(gl, "TRIANGLES", np.array([[-0.95, y0, -0.9], [0.95, y0, 0.9],
                                         [-0.95, y0 + 0.58, 0.3]], np.float32))
    gl.depthRangef(0.0, 1.0)
    gl.endFrame()


FS_FRAG_DEPTH = """
#extension GL_EXT_frag_depth : require
precision highp float;
varying vec4 v_color;
uniform float u_phase;
void main() {
    // a depth that is not the plane's: ridges across the quad
    vec2 p = gl_FragCoord.xy / 128.0;
    gl_FragDepthEXT = 0.5 + 0.35 * sin(12.0 * p.x + u_phase) * cos(7.0 * p.y);
    gl_FragColor = v_color;
}
"""


@scene("frag_depth")
def scene_frag_depth(gl: Recorder) -> None:
    """EXT_frag_depth: two overlapping quads whose fragment shader writes gl_FragDepthEXT
    (ridges out of phase), depth test LESS: which one is in front follows the written depth,
    not the quads' own; then a quad at z 0 with the interpolated depth against them."""
    program = _program(gl, VS_NDC, FS_FRAG_DEPTH)
    phase = gl.getUniformLocation(program, "u_phase")
    gl.clearColor(0.0, 0.0, 0.0, 1.0)
    gl.clear("COLOR_BUFFER_BIT", "DEPTH_BUFFER_BIT")
    gl.enable("DEPTH_TEST")
    gl.depthFunc("LESS")
    for value, quad, color in ((0.0, _quad(-0.9, -0.9, 0.6, 0.6, 0.9), (1.0, 0.4, 0.2, 1.0)),
                               (2.0, _quad(-0.6, -0.6, 0.9, 0.9, -0.9), (0.2, 0.6, 1.0, 1.0))):
        gl.uniform1f(phase, value)
        _draw(gl, "TRIANGLES", quad, color)
    _program(gl, VS_NDC, FS_COLOR)
    _draw(gl, "TRIANGLES", _quad(-0.3, -0.95, 0.3, 0.95, 0.0), (0.3, 1.0, 0.3, 1.0))
    gl.disable("DEPTH_TEST")
    gl.endFrame()
