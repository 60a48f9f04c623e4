"""Conformance scenes: depth textures (a shadow map) and copies from the framebuffer into
textures."""

from __future__ import annotations

import numpy as np

from tilesim.render.gl.commands import Recorder
from tilesim.render.workloads.conformance_scenes.helpers import (
    FS_COLOR,
    FS_TEX,
    VS_PIXEL,
    VS_TEX,
    _attrib,
    _cells,
    _checker,
    _cube,
    _draw,
    _program,
    _quad,
    _quad_uv,
    _rows,
    _set_matrix,
    _sphere,
    _texture,
)
from tilesim.render.workloads.conformance_scenes.registry import scene
from tilesim.render.workloads.transforms import look_at, perspective, rotate, translate

VS_DEPTH_ONLY = """
attribute vec4 a_position;
uniform mat4 u_light_mvp;
void main() {
    gl_Position = u_light_mvp * a_position;
}
"""

FS_WHITE = """
precision mediump float;
void main() {
    gl_FragColor = vec4(1.0);
}
"""

VS_SHADOW_LIT = """
attribute vec4 a_position;
attribute vec3 a_normal;
uniform mat4 u_mvp;
uniform mat4 u_model;
uniform mat4 u_shadow_matrix;
uniform vec3 u_light_dir;
uniform vec4 u_color;
varying vec4 v_shadow;
varying vec4 v_color;
void main() {
    vec3 n = normalize((u_model * vec4(a_normal, 0.0)).xyz);
    float diffuse = max(dot(n, u_light_dir), 0.0);
    v_color = vec4(u_color.rgb * (0.35 + 0.65 * diffuse), 1.0);
    v_shadow = u_shadow_matrix * a_position;
    gl_Position = u_mvp * a_position;
}
"""

# The comparison a GLES2 shadow map needs (no depth comparison mode in ES 2.0), as glmark2's
# shadow scene makes it: the stored depth against the fragment's depth seen from the light.
FS_SHADOW_LIT = """
precision highp float;
uniform highp sampler2D u_shadow;
uniform float u_bias;
varying vec4 v_shadow;
varying vec4 v_color;
void main() {
    vec3 sc = v_shadow.xyz / v_shadow.w;
    float stored = texture2D(u_shadow, sc.xy).x;
    float lit = (v_shadow.w > 0.0 && stored + u_bias < sc.z) ? 0.45 : 1.0;
    gl_FragColor = vec4(v_color.rgb * lit, 1.0);
}
"""

# A depth texture shown as it samples, (d, d, d, 1), its range [lo, lo + 1 / scale] stretched.
FS_DEPTH_VIEW = """
precision highp float;
uniform highp sampler2D u_tex;
uniform float u_lo;
uniform float u_scale;
varying vec2 v_uv;
void main() {
    vec4 d = texture2D(u_tex, v_uv);
    gl_FragColor = vec4((d.xyz - u_lo) * u_scale, d.w);
}
"""


# A whole texture on a quad with its coordinates a little off the texel grid, so that no
# pixel centre falls on a texel boundary (a tie NEAREST would settle by rounding).
OFF_GRID_UV = _quad_uv(0.0031, 0.0047, 0.9969, 0.9953)


def _shadow_objects() -> list[tuple]:
    """(model matrix, positions, normals, indices or None, colour) of the shadow scenes."""
    ground = np.array([[-3, 0, -3], [3, 0, 3], [3, 0, -3], [-3, 0, -3], [-3, 0, 3],
                       [3, 0, 3]], np.float32)
    cube_positions, cube_normals = _cube()
    sphere, sphere_indices = _sphere(14, 20)
    return [
        (np.eye(4), ground, np.tile(np.float32([0, 1, 0]), (6, 1)), None, (0.8, 0.8, 0.7, 1)),
        (translate(0.7, 0.55, 0.4) @ rotate("y", 30) @ np.diag([1.1, 1.1, 1.1, 1]),
         cube_positions, cube_normals, None, (0.9, 0.4, 0.3, 1)),
        (translate(-0.9, 1.35, -0.5) @ np.diag([0.6, 0.6, 0.6, 1]), sphere, sphere, sphere_indices,
         (0.3, 0.6, 0.9, 1)),
    ]


def _draw_objects(gl: Recorder, program: int, objects, light_vp: np.ndarray,
                  view_proj: np.ndarray | None = None) -> None:
    """Each object drawn with ``program``: the depth pass (``view_proj`` None) or the lit
    pass (u_shadow_matrix maps to the shadow map's [0, 1] coordinates)."""
    bias = translate(0.5, 0.5, 0.5) @ np.diag([0.5, 0.5, 0.5, 1.0])
    for model, positions, normals, indices, colour in objects:
        if view_proj is None:
            _set_matrix(gl, program, "u_light_mvp", light_vp @ model)
        else:
            _set_matrix(gl, program, "u_mvp", view_proj @ model)
            _set_matrix(gl, program, "u_model", model)
            _set_matrix(gl, program, "u_shadow_matrix", bias @ light_vp @ model)
            gl.uniform4f(gl.getUniformLocation(program, "u_color"), *colour)
            _attrib(gl, "a_normal", normals)
        _draw(gl, "TRIANGLES", positions, indices=indices)


def _depth_texture(gl: Recorder, size: int, type_: str, filt: str = "NEAREST") -> int:
    return _texture(gl, None, fmt="DEPTH_COMPONENT", type_=type_, size=(size, size),
                    min_filter=filt, mag_filter=filt, wrap=("CLAMP_TO_EDGE", "CLAMP_TO_EDGE"))


@scene("shadow_map", size=(160, 120))
def scene_shadow_map(gl: Recorder) -> None:
    """Shadow mapping as glmark2's shadow scene does it (GL_OES_depth_texture): a depth-only
    framebuffer object renders the scene from the light into a depth texture, then the lit
    scene compares its depth from the light with the texture's in the fragment shader. Frame
    0: 16-bit texture (UNSIGNED_SHORT), color writes masked; frame 1: 24-bit (UNSIGNED_INT),
    color writes on (they go nowhere), polygon offset, LINEAR filtering, the depth texture
    shown in a corner; frame 2: the frame-0 texture attached with a color texture to a new
    framebuffer, drawn into without clearing (depth-tested against what it holds), both
    shown."""
    objects = _shadow_objects()
    light_eye = np.array([2.5, 5.0, 3.0])
    light_vp = perspective(50.0, 1.0, 3.0, 11.0) @ look_at(light_eye, (0, 0.3, 0))
    light_dir = light_eye / np.linalg.norm(light_eye)
    view_proj = (perspective(45.0, gl.width / gl.height, 2.0, 20.0)
                 @ look_at((0.4, 3.6, 6.2), (0, 0.5, 0)))
    depth_program = _program(gl, VS_DEPTH_ONLY, FS_WHITE)
    lit_program = _program(gl, VS_SHADOW_LIT, FS_SHADOW_LIT)
    gl.uniform1i(gl.getUniformLocation(lit_program, "u_shadow"), 0)
    gl.uniform3f(gl.getUniformLocation(lit_program, "u_light_dir"), *light_dir)
    view_program = _program(gl, VS_TEX, FS_DEPTH_VIEW)
    gl.uniform1i(gl.getUniformLocation(view_program, "u_tex"), 0)
    gl.enable("DEPTH_TEST")
    gl.enable("CULL_FACE")

    def depth_pass(fbo: int, size: int, mask_color: bool, offset: bool) -> None:
        gl.bindFramebuffer("FRAMEBUFFER", fbo)
        gl.viewport(0, 0, size, size)
        gl.useProgram(depth_program)
        if mask_color:
            gl.colorMask(False, False, False, False)
        if offset:
            gl.enable("POLYGON_OFFSET_FILL")
            gl.polygonOffset(1.5, 4.0)
        gl.clear("DEPTH_BUFFER_BIT")
        _draw_objects(gl, depth_program, objects, light_vp)
        gl.colorMask(True, True, True, True)
        gl.disable("POLYGON_OFFSET_FILL")

    def lit_pass(texture: int, bias: float) -> None:
        gl.bindFramebuffer("FRAMEBUFFER", 0)
        gl.viewport(0, 0, gl.width, gl.height)
        gl.clearColor(0.05, 0.05, 0.1, 1.0)
        gl.clear("COLOR_BUFFER_BIT", "DEPTH_BUFFER_BIT")
        gl.useProgram(lit_program)
        gl.bindTexture("TEXTURE_2D", texture)
        gl.uniform1f(gl.getUniformLocation(lit_program, "u_bias"), bias)
        _draw_objects(gl, lit_program, objects, light_vp, view_proj)

    def show_depth(texture: int, x: int, y: int, size: int, lo: float = 0.6) -> None:
        gl.disable("DEPTH_TEST")
        gl.viewport(x, y, size, size)
        gl.useProgram(view_program)
        gl.bindTexture("TEXTURE_2D", texture)
        gl.uniform1f(gl.getUniformLocation(view_program, "u_lo"), lo)
        gl.uniform1f(gl.getUniformLocation(view_program, "u_scale"), 1.0 / (1.0 - lo))
        _attrib(gl, "a_normal", (0.0, 0.0, 1.0, 0.0))
        _draw(gl, "TRIANGLES", _quad(-1, -1, 1, 1), texcoords=OFF_GRID_UV)
        gl.enable("DEPTH_TEST")

    # Frame 0: 16-bit depth texture, depth-only framebuffer, color writes masked.
    depth16 = _depth_texture(gl, 128, "UNSIGNED_SHORT")
    fbo16 = gl.createFramebuffer()
    gl.bindFramebuffer("FRAMEBUFFER", fbo16)
    gl.framebufferTexture2D("FRAMEBUFFER", "DEPTH_ATTACHMENT", "TEXTURE_2D", depth16, 0)
    depth_pass(fbo16, 128, mask_color=True, offset=False)
    lit_pass(depth16, 0.02)
    gl.endFrame()

    # Frame 1: 24-bit depth texture, color writes on, polygon offset, LINEAR filtering.
    depth24 = _depth_texture(gl, 256, "UNSIGNED_INT", "LINEAR")
    fbo24 = gl.createFramebuffer()
    gl.bindFramebuffer("FRAMEBUFFER", fbo24)
    gl.framebufferTexture2D("FRAMEBUFFER", "DEPTH_ATTACHMENT", "TEXTURE_2D", depth24, 0)
    depth_pass(fbo24, 256, mask_color=False, offset=True)
    lit_pass(depth24, 0.0)
    show_depth(depth24, gl.width - 48, gl.height - 48, 48)
    gl.endFrame()

    # Frame 2: the 16-bit texture keeps its depth; a new framebuffer draws a box into it
    # (and a color texture) without clearing the depth: only its part in front of the
    # objects already there lands.
    colour = _texture(gl, None, size=(128, 128), min_filter="NEAREST", mag_filter="NEAREST",
                      wrap=("CLAMP_TO_EDGE", "CLAMP_TO_EDGE"))
    fbo_mixed = gl.createFramebuffer()
    gl.bindFramebuffer("FRAMEBUFFER", fbo_mixed)
    gl.framebufferTexture2D("FRAMEBUFFER", "COLOR_ATTACHMENT0", "TEXTURE_2D", colour, 0)
    gl.framebufferTexture2D("FRAMEBUFFER", "DEPTH_ATTACHMENT", "TEXTURE_2D", depth16, 0)
    gl.viewport(0, 0, 128, 128)
    gl.clearColor(0.2, 0.2, 0.2, 1.0)
    gl.clear("COLOR_BUFFER_BIT")
    gl.useProgram(depth_program)
    gl.disable("CULL_FACE")
    box_positions, _ = _cube()
    _set_matrix(gl, depth_program, "u_light_mvp",
                light_vp @ translate(-0.2, 0.4, 0.6) @ np.diag([2.4, 0.5, 0.5, 1.0]))
    _draw(gl, "TRIANGLES", box_positions)
    gl.enable("CULL_FACE")
    lit_pass(depth16, 0.02)
    show_depth(depth16, gl.width - 48, gl.height - 48, 48)
    gl.bindTexture("TEXTURE_2D", colour)
    gl.useProgram(view_program)
    gl.uniform1f(gl.getUniformLocation(view_program, "u_lo"), 0.0)
    gl.uniform1f(gl.getUniformLocation(view_program, "u_scale"), 1.0)
    gl.viewport(0, gl.height - 48, 48, 48)
    gl.disable("DEPTH_TEST")
    _draw(gl, "TRIANGLES", _quad(-1, -1, 1, 1), texcoords=OFF_GRID_UV)
    gl.endFrame()


@scene("copy_tex_image")
def scene_copy_tex_image(gl: Recorder) -> None:
    """copyTexSubImage2D and copyTexImage2D from the window (frame 0) and from a framebuffer
    object with an RGB texture (frame 1) into RGBA, RGB, LUMINANCE, LUMINANCE_ALPHA, ALPHA
    and RGB 5_6_5 textures; a copy whose source rectangle leaves the framebuffer changes only
    the texels inside it (as Mesa clips the copy); the textures shown with NEAREST."""
    color_program = _program(gl, VS_PIXEL, FS_COLOR)
    gl.uniform2f(gl.getUniformLocation(color_program, "u_size"), float(gl.width),
                 float(gl.height))
    tex_program = _program(gl, VS_TEX, FS_TEX)
    gl.uniform1i(gl.getUniformLocation(tex_program, "u_tex"), 0)
    rng = np.random.default_rng(7)

    def pattern(width: int, height: int) -> None:
        """A gradient with random triangles over it, alpha varying, on the bound target."""
        gl.useProgram(color_program)
        gl.uniform2f(gl.getUniformLocation(color_program, "u_size"), float(width),
                     float(height))
        gl.viewport(0, 0, width, height)
        corners = np.array([[0, 0, 0], [width, 0, 0], [width, height, 0], [0, 0, 0],
                            [width, height, 0], [0, height, 0]], np.float32)
        colours = np.array([[0.1, 0.2, 0.9, 0.2], [0.9, 0.2, 0.1, 0.6], [0.9, 0.9, 0.2, 1.0],
                            [0.1, 0.2, 0.9, 0.2], [0.9, 0.9, 0.2, 1.0], [0.1, 0.9, 0.4, 0.8]],
                           np.float32)
        _draw(gl, "TRIANGLES", corners, colours)
        points = rng.uniform(0, 1, (24, 3)).astype(np.float32) * [width, height, 0]
        _draw(gl, "TRIANGLES", points, rng.uniform(0, 1, (24, 4)).astype(np.float32))

    def show(textures, cols: int = 3, rows: int = 2) -> None:
        gl.bindFramebuffer("FRAMEBUFFER", 0)
        gl.clearColor(0.0, 0.0, 0.0, 1.0)
        gl.clear("COLOR_BUFFER_BIT")
        gl.useProgram(tex_program)
        for (x, y, w, h), texture in zip(_cells(gl, cols, rows), textures, strict=False):
            gl.viewport(x + 1, y + 1, w - 2, h - 2)
            gl.bindTexture("TEXTURE_2D", texture)
            _draw(gl, "TRIANGLES", _quad(-1, -1, 1, 1), texcoords=OFF_GRID_UV)

    def nearest(texture: int) -> None:
        gl.bindTexture("TEXTURE_2D", texture)
        for pname, value in (("TEXTURE_MIN_FILTER", "NEAREST"),
                             ("TEXTURE_MAG_FILTER", "NEAREST"),
                             ("TEXTURE_WRAP_S", "CLAMP_TO_EDGE"),
                             ("TEXTURE_WRAP_T", "CLAMP_TO_EDGE")):
            gl.texParameteri("TEXTURE_2D", pname, value)

    # Frame 0: from the window (RGBA8).
    gl.clearColor(0.3, 0.3, 0.3, 1.0)
    gl.clear("COLOR_BUFFER_BIT")
    pattern(gl.width, gl.height)
    base = _texture(gl, _checker(48, 6), min_filter="NEAREST", mag_filter="NEAREST")
    gl.copyTexSubImage2D("TEXTURE_2D", 0, 4, 6, 10, 20, 30, 25)
    # Source rectangle 20 x 20 at (118, -6): only its 10 x 14 part inside the window lands.
    gl.copyTexSubImage2D("TEXTURE_2D", 0, 26, 26, gl.width - 10, -6, 20, 20)
    made = []
    for fmt, (x, y, w, h) in (("RGB", (30, 50, 32, 32)), ("LUMINANCE", (60, 10, 40, 24)),
                              ("LUMINANCE_ALPHA", (5, 70, 24, 40)), ("ALPHA", (70, 70, 33, 21)),
                              ("RGBA", (0, 0, gl.width, gl.height))):
        texture = gl.createTexture()
        nearest(texture)
        gl.copyTexImage2D("TEXTURE_2D", 0, fmt, x, y, w, h, 0)
        made.append(texture)
    show([base] + made)
    gl.endFrame()

    # Frame 1: from a framebuffer object whose color buffer is an RGB texture.
    size = 64
    target = _texture(gl, None, fmt="RGB", size=(size, size), min_filter="NEAREST",
                      mag_filter="NEAREST", wrap=("CLAMP_TO_EDGE", "CLAMP_TO_EDGE"))
    fbo = gl.createFramebuffer()
    gl.bindFramebuffer("FRAMEBUFFER", fbo)
    gl.framebufferTexture2D("FRAMEBUFFER", "COLOR_ATTACHMENT0", "TEXTURE_2D", target, 0)
    gl.clearColor(0.5, 0.1, 0.6, 1.0)
    gl.clear("COLOR_BUFFER_BIT")
    pattern(size, size)
    rgb = _texture(gl, np.full((32, 32, 3), 200, np.uint8), fmt="RGB", min_filter="NEAREST",
                   mag_filter="NEAREST")
    gl.copyTexSubImage2D("TEXTURE_2D", 0, 0, 8, 16, 16, 32, 16)
    packed = np.full((32, 32), 0x07E0, np.uint16)     # green in RGB 5_6_5
    rgb565 = _texture(gl, _rows(packed.view(np.uint8).reshape(32, 64), 4), fmt="RGB",
                      type_="UNSIGNED_SHORT_5_6_5", min_filter="NEAREST", mag_filter="NEAREST",
                      size=(32, 32))
    gl.copyTexSubImage2D("TEXTURE_2D", 0, 4, 4, 0, 0, 24, 24)
    lum = gl.createTexture()
    nearest(lum)
    gl.copyTexImage2D("TEXTURE_2D", 0, "LUMINANCE", 8, 8, 48, 48, 0)
    show([target, rgb, rgb565, lum], cols=2, rows=2)
    gl.endFrame()
