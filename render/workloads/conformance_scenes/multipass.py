"""Conformance scenes: multi-pass chains (render-to-texture with mipmaps of rendered
textures, post-processing, re-attached textures)."""

from __future__ import annotations

import numpy as np

from tilesim.render.gl.commands import Recorder
from tilesim.render.workloads.conformance_scenes.helpers import (
    FS_COLOR,
    FS_TEX,
    VS_MVP_TEX,
    VS_NDC,
    VS_PIXEL,
    VS_TEX,
    _attrib,
    _cube,
    _draw,
    _hsv,
    _program,
    _quad,
    _quad_uv,
    _set_matrix,
    _sphere,
    _texture,
)
from tilesim.render.workloads.conformance_scenes.registry import scene
from tilesim.render.workloads.transforms import perspective, rotate, translate

# Separable blur: nine taps along u_step (a fraction of a texel apart, as bloom and
# depth-of-field passes use them), weights summing to one.
FS_BLUR9 = """
precision highp float;
uniform sampler2D u_tex;
uniform vec2 u_step;
varying vec2 v_uv;
void main() {
    vec4 sum = texture2D(u_tex, v_uv) * 0.18;
    sum += (texture2D(u_tex, v_uv - u_step) + texture2D(u_tex, v_uv + u_step)) * 0.15;
    sum += (texture2D(u_tex, v_uv - 2.0 * u_step) + texture2D(u_tex, v_uv + 2.0 * u_step)) * 0.12;
    sum += (texture2D(u_tex, v_uv - 3.0 * u_step) + texture2D(u_tex, v_uv + 3.0 * u_step)) * 0.09;
    sum += (texture2D(u_tex, v_uv - 4.0 * u_step) + texture2D(u_tex, v_uv + 4.0 * u_step)) * 0.05;
    gl_FragColor = sum;
}
"""

VS_LIT = """
attribute vec4 a_position;
attribute vec3 a_normal;
uniform mat4 u_mvp;
uniform mat4 u_model;
uniform vec3 u_light_dir;
uniform vec4 u_color;
varying vec4 v_color;
void main() {
    vec3 n = normalize((u_model * vec4(a_normal, 0.0)).xyz);
    v_color = vec4(u_color.rgb * (0.35 + 0.65 * max(dot(n, u_light_dir), 0.0)), 1.0);
    gl_Position = u_mvp * a_position;
}
"""

FS_LUMINANCE = """
precision highp float;
uniform sampler2D u_tex;
varying vec2 v_uv;
void main() {
    vec4 texel = texture2D(u_tex, v_uv);
    float v = dot(texel.rgb, vec3(0.299, 0.587, 0.114));
    gl_FragColor = vec4(v, v, v, texel.a);
}
"""

FS_OPACITY = """
precision highp float;
uniform sampler2D u_tex;
uniform float u_opacity;
varying vec2 v_uv;
void main() {
    gl_FragColor = u_opacity * texture2D(u_tex, v_uv);
}
"""


def _color_target(gl: Recorder, width: int, height: int, *, depth: bool = False
                  ) -> tuple[int, int]:
    """(framebuffer, texture): an RGBA texture of width x height (LINEAR, CLAMP_TO_EDGE)
    as the color attachment of a new framebuffer object, left bound; a 16-bit depth
    renderbuffer too where ``depth``."""
    texture = _texture(gl, None, size=(width, height),
                       wrap=("CLAMP_TO_EDGE", "CLAMP_TO_EDGE"))
    fbo = gl.createFramebuffer()
    gl.bindFramebuffer("FRAMEBUFFER", fbo)
    gl.framebufferTexture2D("FRAMEBUFFER", "COLOR_ATTACHMENT0", "TEXTURE_2D", texture, 0)
    if depth:
        rb = gl.createRenderbuffer()
        gl.bindRenderbuffer("RENDERBUFFER", rb)
        gl.renderbufferStorage("RENDERBUFFER", "DEPTH_COMPONENT16", width, height)
        gl.framebufferRenderbuffer("FRAMEBUFFER", "DEPTH_ATTACHMENT", "RENDERBUFFER", rb)
    return fbo, texture


def _fullscreen(gl: Recorder, program: int, texture: int, uv=None) -> None:
    """``texture`` on unit 0 through ``program`` (VS_TEX) over the whole viewport."""
    gl.useProgram(program)
    gl.activeTexture(0)
    gl.bindTexture("TEXTURE_2D", texture)
    _draw(gl, "TRIANGLES", _quad(-1, -1, 1, 1), texcoords=_quad_uv() if uv is None else uv)


def _stripes(gl: Recorder, program: int, width: int, height: int, phase: float) -> None:
    """Thin diagonal bands of saturated colours (high frequency: minification shows every
    mipmap level) on the bound target, drawn with ``program`` (VS_PIXEL + FS_COLOR)."""
    gl.useProgram(program)
    gl.uniform2f(gl.getUniformLocation(program, "u_size"), float(width), float(height))
    gl.viewport(0, 0, width, height)
    triangles, colours = [], []
    band = 3.0
    for k in range(-int(height / band), int(width / band) + 1):
        x = k * band + phase
        triangles += [[x, 0, 0], [x + band * 0.6, 0, 0], [x + height + band * 0.6, height, 0],
                      [x, 0, 0], [x + height + band * 0.6, height, 0], [x + height, height, 0]]
        colours += [_hsv((k * 0.13) % 1.0, 0.9, 1.0)] * 6
    _draw(gl, "TRIANGLES", np.asarray(triangles, np.float32), np.asarray(colours, np.float32))


@scene("rtt_mipmap_chain", size=(160, 120))
def scene_rtt_mipmap_chain(gl: Recorder) -> None:
    """glGenerateMipmap on a texture right after rendering into it, with its framebuffer
    still bound (frame 0) and after unbinding (frame 1), then trilinear sampling of it
    minified on a receding plane; frame 2 also replaces part of the rendered texture with
    texSubImage2D while its framebuffer is bound and drawn into, and draws into it again.
    A tile-based renderer must resolve the pending pass before any of these reads."""
    color_program = _program(gl, VS_PIXEL, FS_COLOR)
    tex_program = _program(gl, VS_MVP_TEX, FS_TEX)
    gl.uniform1i(gl.getUniformLocation(tex_program, "u_tex"), 0)
    size = 64
    fbo, texture = _color_target(gl, size, size)
    proj = perspective(55.0, gl.width / gl.height, 0.3, 30.0)
    patch = np.zeros((16, 16, 4), np.uint8)
    patch[..., 0], patch[..., 3] = 255, 255
    patch[::4, :, 1] = 255

    for frame, (still_bound, phase) in enumerate(((True, 0.0), (False, 1.3), (True, 2.1))):
        gl.bindFramebuffer("FRAMEBUFFER", fbo)
        gl.clearColor(0.05, 0.05, 0.1, 1.0)
        gl.clear("COLOR_BUFFER_BIT")
        _stripes(gl, color_program, size, size, phase)
        if frame == 2:
            gl.bindTexture("TEXTURE_2D", texture)
            gl.texSubImage2D("TEXTURE_2D", 0, 8, 40, 16, 16, "RGBA", "UNSIGNED_BYTE", patch)
            _draw(gl, "TRIANGLES", np.float32([[30, 4, 0], [60, 10, 0], [40, 30, 0]]),
                  (1.0, 1.0, 1.0, 1.0))
        if not still_bound:
            gl.bindFramebuffer("FRAMEBUFFER", 0)
        gl.bindTexture("TEXTURE_2D", texture)
        gl.generateMipmap("TEXTURE_2D")
        gl.texParameteri("TEXTURE_2D", "TEXTURE_MIN_FILTER", "LINEAR_MIPMAP_LINEAR")
        gl.texParameteri("TEXTURE_2D", "TEXTURE_WRAP_S", "REPEAT")
        gl.texParameteri("TEXTURE_2D", "TEXTURE_WRAP_T", "REPEAT")
        gl.bindFramebuffer("FRAMEBUFFER", 0)
        gl.viewport(0, 0, gl.width, gl.height)
        gl.clearColor(0.2, 0.2, 0.2, 1.0)
        gl.clear("COLOR_BUFFER_BIT")
        gl.useProgram(tex_program)
        _set_matrix(gl, tex_program, "u_mvp",
                    proj @ translate(0, -0.4, -3.0) @ rotate("x", -72 + 4 * frame))
        _draw(gl, "TRIANGLES", _quad(-3, -3, 3, 3), texcoords=_quad_uv(0, 0, 6, 6))
        gl.endFrame()


@scene("rtt_post_chain", size=(160, 120))
def scene_rtt_post_chain(gl: Recorder) -> None:
    """A post-processing chain through NPOT framebuffer textures, each read in the frame it
    is rendered: a lit, depth-tested 3D pass into an off-screen target, luminance, a
    separable nine-tap blur with sub-texel steps (horizontal then vertical), and a composite
    of the scene, the blurred luminance added (ONE, ONE) and an alpha-blended overlay of the
    blur; two frames, the object turning."""
    width, height = 150, 110
    lit = _program(gl, VS_LIT, FS_COLOR)
    gl.uniform3f(gl.getUniformLocation(lit, "u_light_dir"), 0.3, 0.8, 0.52)
    luminance = _program(gl, VS_TEX, FS_LUMINANCE)
    gl.uniform1i(gl.getUniformLocation(luminance, "u_tex"), 0)
    blur = _program(gl, VS_TEX, FS_BLUR9)
    gl.uniform1i(gl.getUniformLocation(blur, "u_tex"), 0)
    overlay = _program(gl, VS_TEX, FS_OPACITY)
    gl.uniform1i(gl.getUniformLocation(overlay, "u_tex"), 0)
    scene_fbo, scene_tex = _color_target(gl, width, height, depth=True)
    luma_fbo, luma_tex = _color_target(gl, width, height)
    blur_h_fbo, blur_h_tex = _color_target(gl, width, height)
    blur_v_fbo, blur_v_tex = _color_target(gl, width, height)
    sphere, sphere_indices = _sphere(16, 24)
    positions, normals = _cube()
    proj = perspective(50.0, width / height, 0.5, 20.0)

    for frame in range(2):
        gl.bindFramebuffer("FRAMEBUFFER", scene_fbo)
        gl.viewport(0, 0, width, height)
        gl.clearColor(1.0, 1.0, 0.84, 1.0)
        gl.clear("COLOR_BUFFER_BIT", "DEPTH_BUFFER_BIT")
        gl.enable("DEPTH_TEST")
        gl.useProgram(lit)
        view = translate(0, 0, -3.2)
        for model, pos, nrm, idx, colour in (
                (rotate("y", 25 + 30 * frame) @ rotate("x", 20), positions, normals, None,
                 (0.2, 0.7, 0.3, 1)),
                (translate(0.8, 0.3, -0.6) @ np.diag([0.5, 0.5, 0.5, 1]), sphere, sphere,
                 sphere_indices, (0.9, 0.5, 0.2, 1))):
            _set_matrix(gl, lit, "u_mvp", proj @ view @ model)
            _set_matrix(gl, lit, "u_model", model)
            gl.uniform4f(gl.getUniformLocation(lit, "u_color"), *colour)
            _attrib(gl, "a_normal", nrm)
            _draw(gl, "TRIANGLES", pos, indices=idx)
        gl.disable("DEPTH_TEST")
        gl.bindFramebuffer("FRAMEBUFFER", luma_fbo)
        _fullscreen(gl, luminance, scene_tex)
        for fbo, source, step in ((blur_h_fbo, luma_tex, (0.37 / width, 0.0)),
                                  (blur_v_fbo, blur_h_tex, (0.0, 0.41 / height))):
            gl.bindFramebuffer("FRAMEBUFFER", fbo)
            gl.useProgram(blur)
            gl.uniform2f(gl.getUniformLocation(blur, "u_step"), *step)
            _fullscreen(gl, blur, source)
        gl.bindFramebuffer("FRAMEBUFFER", 0)
        gl.viewport(0, 0, gl.width, gl.height)
        gl.clearColor(0.0, 0.0, 0.0, 1.0)
        gl.clear("COLOR_BUFFER_BIT")
        gl.useProgram(overlay)
        gl.uniform1f(gl.getUniformLocation(overlay, "u_opacity"), 1.0)
        _fullscreen(gl, overlay, scene_tex)
        gl.enable("BLEND")
        gl.blendFunc("ONE", "ONE")
        gl.uniform1f(gl.getUniformLocation(overlay, "u_opacity"), 0.25)
        _fullscreen(gl, overlay, blur_v_tex)
        gl.blendFunc("SRC_ALPHA", "ONE_MINUS_SRC_ALPHA")
        gl.uniform1f(gl.getUniformLocation(overlay, "u_opacity"), 0.6)
        _fullscreen(gl, overlay, blur_h_tex, uv=_quad_uv(0.1, 0.1, 0.9, 0.9))
        gl.disable("BLEND")
        gl.endFrame()


@scene("rtt_reattach", size=(128, 96))
def scene_rtt_reattach(gl: Recorder) -> None:
    """One texture re-attached to different framebuffers within a frame (the second with a
    depth buffer, keeping what the first drew), a framebuffer's color attachment switched
    between draws while it is bound, a texture read by the next pass in the frame it is
    rendered, and a texture deleted while attached; NPOT targets."""
    color_program = _program(gl, VS_PIXEL, FS_COLOR)
    tex_program = _program(gl, VS_TEX, FS_TEX)
    gl.uniform1i(gl.getUniformLocation(tex_program, "u_tex"), 0)
    w, h = 60, 44
    fbo_a, shared = _color_target(gl, w, h)
    fbo_b, other = _color_target(gl, w, h, depth=True)
    rng = np.random.default_rng(11)

    def triangles(count: int, z: bool = False) -> None:
        points = rng.uniform(0, 1, (3 * count, 3)).astype(np.float32) * [w, h, 1.6 if z else 0]
        if z:
            points[:, 2] -= 0.8
        _draw(gl, "TRIANGLES", points, rng.uniform(0, 1, (3 * count, 4)).astype(np.float32))

    for _frame in range(2):
        # Pass 1: into the shared texture through A.
        gl.bindFramebuffer("FRAMEBUFFER", fbo_a)
        gl.framebufferTexture2D("FRAMEBUFFER", "COLOR_ATTACHMENT0", "TEXTURE_2D", shared, 0)
        gl.clearColor(0.1, 0.3, 0.6, 1.0)
        gl.clear("COLOR_BUFFER_BIT")
        gl.useProgram(color_program)
        gl.uniform2f(gl.getUniformLocation(color_program, "u_size"), float(w), float(h))
        gl.viewport(0, 0, w, h)
        triangles(4)
        # Switch A's attachment while it is bound and draw on: these go to ``other``.
        gl.framebufferTexture2D("FRAMEBUFFER", "COLOR_ATTACHMENT0", "TEXTURE_2D", other, 0)
        gl.clearColor(0.5, 0.1, 0.1, 1.0)
        gl.clear("COLOR_BUFFER_BIT")
        triangles(3)
        # Pass 2: the shared texture re-attached to B (depth-tested), keeping pass 1.
        gl.bindFramebuffer("FRAMEBUFFER", fbo_b)
        gl.framebufferTexture2D("FRAMEBUFFER", "COLOR_ATTACHMENT0", "TEXTURE_2D", shared, 0)
        gl.clear("DEPTH_BUFFER_BIT")
        gl.enable("DEPTH_TEST")
        triangles(5, z=True)
        gl.disable("DEPTH_TEST")
        # Pass 3: A renders from the shared texture into ``other`` in the same frame.
        gl.bindFramebuffer("FRAMEBUFFER", fbo_a)
        gl.framebufferTexture2D("FRAMEBUFFER", "COLOR_ATTACHMENT0", "TEXTURE_2D", other, 0)
        gl.viewport(0, 0, w, h)
        _fullscreen(gl, tex_program, shared, uv=_quad_uv(0.0, 0.0, 0.5, 1.0))
        # The window: both textures side by side.
        gl.bindFramebuffer("FRAMEBUFFER", 0)
        gl.viewport(0, 0, gl.width, gl.height)
        gl.clearColor(0.0, 0.0, 0.0, 1.0)
        gl.clear("COLOR_BUFFER_BIT")
        gl.viewport(0, 0, gl.width // 2, gl.height)
        _fullscreen(gl, tex_program, shared)
        gl.viewport(gl.width // 2, 0, gl.width // 2, gl.height)
        _fullscreen(gl, tex_program, other)
        gl.endFrame()
    # A texture deleted while attached and its pass pending: GL detaches it from the bound
    # framebuffer (ES 2.0 §4.4.5), so the window shows what was drawn before.
    gl.bindFramebuffer("FRAMEBUFFER", fbo_a)
    gl.framebufferTexture2D("FRAMEBUFFER", "COLOR_ATTACHMENT0", "TEXTURE_2D", other, 0)
    gl.useProgram(color_program)
    gl.viewport(0, 0, w, h)
    triangles(2)
    gl.deleteTexture(other)
    gl.bindFramebuffer("FRAMEBUFFER", 0)
    gl.viewport(0, 0, gl.width, gl.height)
    _fullscreen(gl, tex_program, shared)
    gl.endFrame()


@scene("rgb8_rgba8_renderbuffers", size=(96, 64))
def scene_rgb8_rgba8_renderbuffers(gl: Recorder) -> None:
    """OES_rgb8_rgba8: off-screen rendering into GL_RGBA8_OES and GL_RGB8_OES color
    renderbuffers (with a 16-bit depth renderbuffer), read back with glReadPixels, one frame
    each. Translucent quads blend by destination alpha over a clear alpha of 0.25: RGBA8
    keeps that alpha, RGB8 has none and reads it as 1 (ES 2.0 §4.1.6), so the two frames
    differ exactly where the format matters."""
    _program(gl, VS_NDC, FS_COLOR)
    for fmt in ("RGBA8", "RGB8"):
        fbo = gl.createFramebuffer()
        gl.bindFramebuffer("FRAMEBUFFER", fbo)
        for attachment, storage in (("COLOR_ATTACHMENT0", fmt),
                                    ("DEPTH_ATTACHMENT", "DEPTH_COMPONENT16")):
            rb = gl.createRenderbuffer()
            gl.bindRenderbuffer("RENDERBUFFER", rb)
            gl.renderbufferStorage("RENDERBUFFER", storage, gl.width, gl.height)
            gl.framebufferRenderbuffer("FRAMEBUFFER", attachment, "RENDERBUFFER", rb)
        gl.viewport(0, 0, gl.width, gl.height)
        gl.clearColor(0.2, 0.3, 0.6, 0.25)
        gl.clearDepthf(1.0)
        gl.clear("COLOR_BUFFER_BIT", "DEPTH_BUFFER_BIT")
        gl.enable("DEPTH_TEST")
        gl.depthFunc("LESS")
        _draw(gl, "TRIANGLES", [[-0.8, -0.7, 0.2], [0.7, -0.6, 0.2], [0.0, 0.8, -0.3]],
              (0.9, 0.5, 0.1, 1.0))
        gl.enable("BLEND")
        gl.blendFuncSeparate("DST_ALPHA", "ONE_MINUS_DST_ALPHA", "ONE", "ZERO")
        for k in range(3):
            x0 = -0.9 + 0.6 * k
            _draw(gl, "TRIANGLES", _quad(x0, -0.9, x0 + 0.5, 0.9, -0.5 + 0.4 * k),
                  (*_hsv(k / 3, 0.8, 0.9)[:3], 0.6))
        gl.disable("BLEND")
        gl.disable("DEPTH_TEST")
        gl.readPixels(0, 0, gl.width, gl.height)
        gl.endFrame()
