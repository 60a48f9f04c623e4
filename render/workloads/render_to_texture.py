"""``render_to_texture``: a 3D scene that renders part of the frame into a texture through a
framebuffer object and composes it into the main scene (security-camera monitor and
picture-in-picture, as 3D games do for mirrors, minimaps and in-game screens; the
3D category of Frame Coherence Table 3.2, e.g. Modern Strike, Guns of Boom, Brawl Stars).

Per frame, two render passes:

1. into an FBO (a 256x256 RGBA texture and a 16-bit depth renderbuffer): the room seen by a
   security camera in a corner: floor, walls and ceiling, pillars, a spinning stack of crates, a
   bouncing ball, the moving lamp and the TV's body (never its screen: that would sample
   the texture being drawn);
2. into the window: the same room from an orbiting camera, the TV's screen showing the FBO
   texture through a monitor shader (greyish tint, scanlines, vignette), and a HUD:
   the same texture as a picture-in-picture in a corner, its frame, a blinking REC mark and
   the time.

All 3D objects are lit per fragment by the moving point lamp (diffuse, Blinn-Phong
specular, distance attenuation). The ball's bounce phase and the lamp's path come from
``seed``.
"""

from __future__ import annotations

import numpy as np

from tilesim.render.workloads.common import (
    MESH_ATTRIBS,
    DynamicBatch,
    Mesh,
    Sprites,
    box,
    check_request,
    coverage,
    cylinder,
    glyph_atlas,
    grid,
    quad_batch,
    rgba_image,
    rng_for,
    setup_mesh_arrays,
    shape_distance,
    sphere,
    text_quads,
    to_u8,
    transformed,
    upload_texture,
    value_noise,
)
from tilesim.render.workloads.transforms import (
    gl_matrix,
    look_at,
    normal_matrix,
    perspective,
    rotate,
    translate,
)

NAME = "render_to_texture"
CATEGORY = ("3D with render-to-texture (001 Table 3.2 3D titles: Modern Strike, Guns of Boom, "
            "Brawl Stars)")
FBO_SIZE = 256
ROOM = 8.0  # half size of the room (x and z), walls 6 high

LIT_VS = """\
attribute vec3 a_position;
attribute vec3 a_normal;
attribute vec2 a_uv;
uniform mat4 u_mvp;
uniform mat4 u_model_view;
uniform mat3 u_normal_matrix;
uniform vec2 u_uv_scale;
varying vec3 v_position;
varying vec3 v_normal;
varying vec2 v_uv;
void main() {
    v_position = (u_model_view * vec4(a_position, 1.0)).xyz;
    v_normal = u_normal_matrix * a_normal;
    v_uv = a_uv * u_uv_scale;
    gl_Position = u_mvp * vec4(a_position, 1.0);
}
"""
LIT_FS = """\
precision mediump float;
uniform sampler2D u_tex;
uniform vec3 u_light_pos;
uniform vec3 u_light_color;
uniform vec3 u_ambient;
uniform vec3 u_tint;
uniform vec4 u_specular;
varying vec3 v_position;
varying vec3 v_normal;
varying vec2 v_uv;
void main() {
    vec3 n = normalize(v_normal);
    vec3 to_light = u_light_pos - v_position;
    float d = length(to_light);
    vec3 l = to_light / d;
    vec3 h = normalize(l + normalize(-v_position));
    float attenuation = 1.0 / (1.0 + 0.02 * d * d);
    float ndl = max(dot(n, l), 0.0);
    float spec = pow(max(dot(n, h), 0.0), u_specular.w) * step(0.0001, ndl);
    vec3 base = texture2D(u_tex, v_uv).rgb * u_tint;
    vec3 c = base * (u_ambient + u_light_color * ndl * attenuation)
           + u_specular.rgb * spec * attenuation;
    gl_FragColor = vec4(c, 1.0);
}
"""
SCREEN_VS = """\
attribute vec3 a_position;
attribute vec2 a_uv;
uniform mat4 u_mvp;
varying vec2 v_uv;
void main() {
    v_uv = a_uv;
    gl_Position = u_mvp * vec4(a_position, 1.0);
}
"""
SCREEN_FS = """\
precision mediump float;
uniform sampler2D u_tex;
uniform float u_lines;
uniform float u_phase;
varying vec2 v_uv;
void main() {
    vec3 c = texture2D(u_tex, v_uv).rgb;
    float grey = dot(c, vec3(0.3, 0.59, 0.11));
    vec3 tinted = mix(c, grey * vec3(0.75, 1.0, 0.8), 0.6);
    float scan = 0.85 + 0.15 * sin(6.2832 * (v_uv.y * u_lines + u_phase));
    vec2 d = v_uv - 0.5;
    float vignette = 1.0 - 1.4 * dot(d, d);
    gl_FragColor = vec4(tinted * scan * vignette, 1.0);
}
"""


# --- textures ------------------------------------------------------------------------------


def floor_texture(seed: int) -> np.ndarray:
    """256x256 RGB: worn checker tiles."""
    rng = rng_for(seed, 1, 0)
    y, x = np.mgrid[0:256, 0:256]
    checker = ((x // 64 + y // 64) % 2)[..., None]
    dirt = value_noise(rng, 256, 256, cells=8, octaves=5)[..., None]
    rgb = np.where(checker == 1, (0.85, 0.82, 0.75), (0.25, 0.28, 0.35)) * (0.8 + 0.3 * dirt)
    edge = np.minimum(x % 64, y % 64) < 2
    rgb[edge] *= 0.6
    return to_u8(rgb)


def wall_texture(seed: int) -> np.ndarray:
    """256x256 RGB: striped wallpaper with a dado band."""
    rng = rng_for(seed, 1, 1)
    y, x = np.mgrid[0:256, 0:256]
    stripes = 0.5 + 0.5 * np.cos(x * 2 * np.pi / 32)
    rgb = np.stack([0.55 + 0.1 * stripes, 0.45 + 0.08 * stripes, 0.35 + 0.05 * stripes], -1)
    rgb = rgb * (0.9 + 0.15 * value_noise(rng, 256, 256, cells=16, octaves=3)[..., None])
    band = (y > 200) & (y < 212)
    rgb[band] = (0.3, 0.2, 0.15)
    return to_u8(rgb)


def marble_texture(seed: int) -> np.ndarray:
    rng = rng_for(seed, 1, 2)
    n = value_noise(rng, 128, 128, cells=4, octaves=5)
    y, x = np.mgrid[0:128, 0:128] / 128
    veins = 0.5 + 0.5 * np.sin(2 * np.pi * (x * 2 + y) + 8 * n)
    return to_u8((0.6 + 0.4 * veins)[..., None] * np.array([0.9, 0.92, 1.0]))


def crate_texture(seed: int) -> np.ndarray:
    rng = rng_for(seed, 1, 3)
    y, x = np.mgrid[0:128, 0:128] + 0.5
    grain = 0.8 + 0.2 * value_noise(rng, 128, 128, cells=2, octaves=4)[..., None]
    rgb = np.asarray((0.6, 0.4, 0.2)) * grain
    frame = np.minimum(np.minimum(x, 128 - x), np.minimum(y, 128 - y)) < 10
    rgb[frame] *= 0.7
    return to_u8(rgb)


def plain_texture(value: float = 1.0) -> np.ndarray:
    """8x8 RGB of one grey: for objects colored by a tint uniform."""
    return to_u8(np.full((8, 8, 3), value))


def hud_atlas() -> tuple[np.ndarray, dict]:
    """64x64 RGBA: a frame border (left half) and a red dot (right half)."""
    atlas = np.zeros((64, 64, 4))
    y, x = np.mgrid[0:64, 0:32] + 0.5
    inner = np.minimum(np.minimum(x, 32 - x), np.minimum(y, 64 - y))
    atlas[:, :32, :3] = 0.15
    atlas[:, :32, 3] = np.where(inner < 4, 1.0, 0.0)
    dot = shape_distance("circle", 32, 0.8)
    atlas[:32, 32:, :3] = (1.0, 0.1, 0.1)
    atlas[:32, 32:, 3] = coverage(dot)
    uv = {"frame": (0, 0, 0.5, 1), "dot": (0.5, 0, 0.5, 0.5)}
    return rgba_image(atlas[..., :3], atlas[..., 3]), uv


# --- meshes --------------------------------------------------------------------------------


def scene_meshes() -> tuple[Mesh, dict[str, tuple[int, int]]]:
    floor = grid(2 * ROOM, 2 * ROOM, 8, 8, uv_scale=(4, 4))
    wall = grid(2 * ROOM, 6.0, 8, 3, uv_scale=(4, 1.5))
    walls, _ = Mesh.merge([
        transformed(wall, translate(0, 3, -ROOM) @ rotate("x", 90)),
        transformed(wall, translate(-ROOM, 3, 0) @ rotate("y", 90) @ rotate("x", 90)),
        transformed(wall, translate(ROOM, 3, 0) @ rotate("y", -90) @ rotate("x", 90)),
        transformed(grid(2 * ROOM, 2 * ROOM, 4, 4, uv_scale=(4, 4)),
                    translate(0, 6, 0) @ rotate("x", 180))])
    pillar = cylinder(0.4, 6.0, 16, caps=False)
    crate = box(1.4, 1.4, 1.4)
    ball = sphere(1.0, 16, 24)
    lamp = sphere(0.25, 6, 10)
    tv = box(3.4, 2.2, 0.3)
    screen = transformed(grid(3.0, 1.8, 1, 1), rotate("x", 90), (0, 1, 1, -1))
    names = ("floor", "walls", "pillar", "crate", "ball", "lamp", "tv", "screen")
    mesh, ranges = Mesh.merge([floor, walls, pillar, crate, ball, lamp, tv, screen])
    return mesh, dict(zip(names, ranges, strict=True))


# --- recording -----------------------------------------------------------------------------


def build(width: int, height: int, frames: int = 100, seed: int = 0):
    """The frames (lists of commands) of ``frames`` frames of the workload at width x height."""
    from tilesim.render.gl.commands import Recorder

    check_request(NAME, width, height, frames)
    gl = Recorder(width, height, name=NAME)
    rng = rng_for(seed, 0)
    bounce_phase = float(rng.uniform(0, 2 * np.pi))
    lamp_radius, lamp_speed = float(rng.uniform(3.0, 4.5)), float(rng.uniform(0.04, 0.07))

    sprites = Sprites(gl, width, height)
    lit = gl.createProgram(LIT_VS, LIT_FS, attrib_locations=MESH_ATTRIBS)
    screen_prog = gl.createProgram(SCREEN_VS, SCREEN_FS,
                                   attrib_locations={"a_position": 0, "a_uv": 2})
    names = ("u_mvp", "u_model_view", "u_normal_matrix", "u_uv_scale", "u_tex", "u_light_pos",
             "u_light_color", "u_ambient", "u_tint", "u_specular")
    u = {n: gl.getUniformLocation(lit, n) for n in names}
    su = {n: gl.getUniformLocation(screen_prog, n)
          for n in ("u_mvp", "u_tex", "u_lines", "u_phase")}
    mesh, part = scene_meshes()
    vbo = gl.createBuffer()
    gl.bindBuffer("ARRAY_BUFFER", vbo)
    gl.bufferData("ARRAY_BUFFER", mesh.vertices, "STATIC_DRAW")
    ibo = gl.createBuffer()
    gl.bindBuffer("ELEMENT_ARRAY_BUFFER", ibo)
    gl.bufferData("ELEMENT_ARRAY_BUFFER", mesh.indices, "STATIC_DRAW")
    trilinear = {"min_filter": "LINEAR_MIPMAP_LINEAR", "mipmap": True, "wrap_s": "REPEAT",
                 "wrap_t": "REPEAT"}
    tex = {"floor": upload_texture(gl, floor_texture(seed), **trilinear),
           "wall": upload_texture(gl, wall_texture(seed), **trilinear),
           "marble": upload_texture(gl, marble_texture(seed), **trilinear),
           "crate": upload_texture(gl, crate_texture(seed), **trilinear),
           "plain": upload_texture(gl, plain_texture(), min_filter="NEAREST",
                                   mag_filter="NEAREST")}
    font_image, font_uv = glyph_atlas()
    tex["font"] = upload_texture(gl, font_image)
    hud_image, hud_uv = hud_atlas()
    tex["hud"] = upload_texture(gl, hud_image)

    # the render target: a texture and a depth renderbuffer
    target = gl.createTexture()
    gl.bindTexture("TEXTURE_2D", target)
    gl.texImage2D("TEXTURE_2D", 0, "RGBA", FBO_SIZE, FBO_SIZE, 0, "RGBA", "UNSIGNED_BYTE",
                  None)
    for pname, value in (("TEXTURE_MIN_FILTER", "LINEAR"), ("TEXTURE_MAG_FILTER", "LINEAR"),
                         ("TEXTURE_WRAP_S", "CLAMP_TO_EDGE"),
                         ("TEXTURE_WRAP_T", "CLAMP_TO_EDGE")):
        gl.texParameteri("TEXTURE_2D", pname, value)
    depth = gl.createRenderbuffer()
    gl.bindRenderbuffer("RENDERBUFFER", depth)
    gl.renderbufferStorage("RENDERBUFFER", "DEPTH_COMPONENT16", FBO_SIZE, FBO_SIZE)
    fbo = gl.createFramebuffer()
    gl.bindFramebuffer("FRAMEBUFFER", fbo)
    gl.framebufferTexture2D("FRAMEBUFFER", "COLOR_ATTACHMENT0", "TEXTURE_2D", target, 0)
    gl.framebufferRenderbuffer("FRAMEBUFFER", "DEPTH_ATTACHMENT", "RENDERBUFFER", depth)
    gl.bindFramebuffer("FRAMEBUFFER", 0)
    hud_text = DynamicBatch(gl, 16)
    gl.depthFunc("LESS")
    gl.cullFace("BACK")

    security_view = look_at((ROOM - 1.0, 5.4, ROOM - 1.0), (-0.5, 0.8, -1.0))
    security_proj = perspective(75.0, 1.0, 0.3, 40.0)
    main_proj = perspective(55.0, width / height, 0.3, 40.0)
    pillars = [(sx * (ROOM - 1.2), sz * (ROOM - 1.2)) for sx in (-1, 1) for sz in (-1, 1)]
    tv_model = translate(0, 3.4, -ROOM + 0.16)
    screen_model = translate(0, 3.4, -ROOM + 0.32)

    def objects(view: np.ndarray, proj: np.ndarray, with_screen: bool, f: int) -> None:
        """Draw the room seen through ``view`` and ``proj`` at frame ``f``."""
        lamp = (lamp_radius * np.cos(f * lamp_speed), 4.2, lamp_radius * np.sin(f * lamp_speed))
        bounce = 1.0 + 2.5 * abs(np.sin(f * 0.09 + bounce_phase))
        stack_angle = 1.8 * f
        gl.enable("DEPTH_TEST")
        gl.enable("CULL_FACE")
        gl.disable("BLEND")
        gl.useProgram(lit)
        gl.uniform1i(u["u_tex"], 0)
        gl.uniform3f(u["u_light_pos"], *(view @ np.array([*lamp, 1.0]))[:3])
        gl.uniform3f(u["u_light_color"], 1.0, 0.95, 0.85)
        gl.uniform3f(u["u_ambient"], 0.25, 0.25, 0.3)
        gl.bindBuffer("ARRAY_BUFFER", vbo)
        gl.bindBuffer("ELEMENT_ARRAY_BUFFER", ibo)
        setup_mesh_arrays(gl)
        for k in range(3):
            gl.enableVertexAttribArray(k)

        def draw(model, name, texture, tint=(1, 1, 1), spec=(0.2, 0.2, 0.2, 16.0),
                 uv_scale=(1.0, 1.0)) -> None:
            model_view = view @ model
            gl.bindTexture("TEXTURE_2D", tex[texture])
            gl.uniformMatrix4fv(u["u_mvp"], False, gl_matrix(proj @ model_view))
            gl.uniformMatrix4fv(u["u_model_view"], False, gl_matrix(model_view))
            gl.uniformMatrix3fv(u["u_normal_matrix"], False,
                                gl_matrix(normal_matrix(model_view)))
            gl.uniform3f(u["u_tint"], *tint)
            gl.uniform4f(u["u_specular"], *spec)
            gl.uniform2f(u["u_uv_scale"], *uv_scale)
            first, count = part[name]
            gl.drawElements("TRIANGLES", count, "UNSIGNED_SHORT", 2 * first)

        # in scene-graph order, unsorted, as many engines submit: the room, then what is in it
        draw(np.eye(4), "floor", "floor", spec=(0.3, 0.3, 0.3, 24.0))
        draw(np.eye(4), "walls", "wall", spec=(0.05, 0.05, 0.05, 8.0))
        for px, pz in pillars:
            draw(translate(px, 0, pz), "pillar", "wall", tint=(0.8, 0.8, 0.85),
                 uv_scale=(2.0, 3.0))
        draw(tv_model, "tv", "plain", tint=(0.08, 0.08, 0.1), spec=(0.5, 0.5, 0.5, 32.0))
        for k in range(3):
            draw(translate(-3.0, 0.7 + 1.4 * k, -1.5) @ rotate("y", stack_angle * (k - 1)
                                                               + 20 * k),
                 "crate", "crate")
        draw(translate(3.0, bounce, 0.5) @ rotate("y", 3.0 * f), "ball", "marble",
             spec=(0.8, 0.8, 0.8, 48.0))
        gl.uniform3f(u["u_ambient"], 4.0, 4.0, 3.5)  # the lamp glows
        draw(translate(*lamp), "lamp", "plain", tint=(1.0, 0.95, 0.7), spec=(0, 0, 0, 1))
        if with_screen:
            gl.useProgram(screen_prog)
            gl.bindTexture("TEXTURE_2D", target)
            gl.uniform1i(su["u_tex"], 0)
            gl.uniform1f(su["u_lines"], 120.0)
            gl.uniform1f(su["u_phase"], (f * 0.07) % 1.0)
            gl.uniformMatrix4fv(su["u_mvp"], False,
                                gl_matrix(proj @ view @ screen_model))
            gl.disableVertexAttribArray(1)
            first, count = part["screen"]
            gl.drawElements("TRIANGLES", count, "UNSIGNED_SHORT", 2 * first)

    for f in range(frames):
        angle = 0.55 * np.sin(f * 0.035)
        eye = (9.0 * np.sin(angle), 3.2 + 0.6 * np.sin(f * 0.05), 2.0 + 7.0 * np.cos(angle))
        main_view = look_at(eye, (0.0, 2.2, -2.5))

        # pass 1: the security camera into the texture
        gl.bindFramebuffer("FRAMEBUFFER", fbo)
        gl.viewport(0, 0, FBO_SIZE, FBO_SIZE)
        gl.clearColor(0.05, 0.05, 0.08, 1.0)
        gl.clear("COLOR_BUFFER_BIT", "DEPTH_BUFFER_BIT")
        gl.activeTexture(0)
        objects(security_view, security_proj, False, f)

        # pass 2: the main camera into the window
        gl.bindFramebuffer("FRAMEBUFFER", 0)
        gl.viewport(0, 0, width, height)
        gl.clearColor(0.0, 0.0, 0.0, 1.0)
        gl.clear("COLOR_BUFFER_BIT", "DEPTH_BUFFER_BIT")
        objects(main_view, main_proj, True, f)

        # HUD: picture in picture of the same texture (flipped: texture rows go up)
        gl.disable("DEPTH_TEST")
        gl.disable("CULL_FACE")
        gl.enable("BLEND")
        gl.blendFunc("SRC_ALPHA", "ONE_MINUS_SRC_ALPHA")
        sprites.use()
        size = 0.3 * height
        x0, y0 = width - size - 0.03 * height, height - size - 0.03 * height
        gl.bindTexture("TEXTURE_2D", target)
        sprites.draw_one((x0, y0, size, size), (0, 1, 1, -1), (1, 1, 1, 0.9))
        gl.bindTexture("TEXTURE_2D", tex["hud"])
        sprites.draw_one((x0, y0, size, size), hud_uv["frame"])
        if (f // 15) % 2 == 0:
            sprites.draw_one((x0 + 0.05 * size, y0 + 0.05 * size, 0.1 * size, 0.1 * size),
                             hud_uv["dot"])
        gl.bindTexture("TEXTURE_2D", tex["font"])
        seconds = f // 30
        label = [text_quads("REC", x0 + 0.17 * size, y0 + 0.04 * size, 0.12 * size, font_uv,
                            color=(1.0, 0.3, 0.3, 1.0)),
                 text_quads(f"00:{seconds:02d}:{f % 30:02d}", x0 + 0.05 * size,
                            y0 + 0.83 * size, 0.11 * size, font_uv)]
        hud_text.update(sprites, quad_batch(*[np.concatenate(p) for p in zip(*label,
                                                                              strict=True)]))
        sprites.draw_batch(hud_text.buffer, hud_text.quads)
        gl.endFrame()
    return gl.recorded_frames()
