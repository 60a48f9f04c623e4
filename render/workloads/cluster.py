"""The automotive cluster applications of seed 004 (*Fine-Grained Semantics Driven
Scheduling*) §6.2: a speedometer, a tachometer, a menu and a spam application.

004 ran them on an i.MX6 (Vivante GC2000) and does not publish their content; these are
written with the recording API to have their structure, each in its own window (the
application's part of the cluster display):

``gauge`` (speedometer, tachometer)
    a shaded dial (a lit, bevelled disc with a tick ring: the "3D" look of a cluster
    instrument, drawn as a textured quad), the scale's numbers (one text batch), a digital
    readout (re-uploaded every frame), the needle (a rotated, shaded quad, re-uploaded every
    frame) and the hub cap: five draws and the swap per frame.
``menu``
    a 2D list: the background, the rows (one batch of rectangles), the highlight bar that
    moves down the list, the labels (one text batch) and a scroll indicator.
``spam``
    an application that overloads the GPU: ``draws`` draws per frame, each a batch of
    ``layers`` full-window alpha-blended textured quads (every layer shades every pixel) with
    a fragment program of ``rounds`` rounds of arithmetic after its texture lookup.

Every frame sets all the state its draws use (program, textures, blending, buffers) and
re-uploads its dynamic vertex data, so any prefix of a frame renders the same whatever frame
came before it (the scheduling study times a frame's command blocks by rendering prefixes).
Building needs Mesa (the sprite program is compiled to TGSI), as every recorded workload.
"""

from __future__ import annotations

import numpy as np

from tilesim.render.workloads.common import (
    SPRITE_STRIDE,
    Sprites,
    check_request,
    coverage,
    glyph_atlas,
    grid_coords,
    quad_batch,
    rgba_image,
    rng_for,
    shaded_sprite,
    text_quads,
    upload_texture,
    value_noise,
)

KINDS = ("speedometer", "tachometer", "menu", "spam")
DIAL = 256        # dial texture side (texels)


def _dial(size: int, color) -> np.ndarray:
    """A lit bevelled disc with a tick ring over 270 degrees."""
    y, x = grid_coords(size)
    r = np.hypot(x, y)
    disc = coverage((r - 0.97) * size / 2)
    bevel = np.clip((r - 0.86) / 0.11, 0, 1)
    light = 0.55 - 0.35 * y - 0.1 * x
    face = np.asarray(color)[None, None] * (0.35 + 0.3 * (1 - r))[..., None]
    rim = (0.5 + 0.5 * light)[..., None] * np.array([0.8, 0.8, 0.85])[None, None]
    rgb = face * (1 - bevel[..., None]) + rim * bevel[..., None]
    angle = np.arctan2(x, -y)  # 0 up, clockwise
    in_arc = np.abs(angle) <= np.radians(135)
    ticks = (np.abs(np.mod(np.degrees(angle) + 135, 27) - 13.5) > 12.3) & (r > 0.72) & (
        r < 0.84) & in_arc
    minor = (np.abs(np.mod(np.degrees(angle) + 135, 6.75) - 3.375) > 3.0) & (r > 0.78) & (
        r < 0.84) & in_arc
    rgb = np.where((ticks | minor)[..., None], 0.95, rgb)
    return rgba_image(np.clip(rgb, 0, 1), disc)


def _needle(size: int) -> np.ndarray:
    """A tapered red needle along the texture's height (pivot at the bottom centre)."""
    y, x = grid_coords(size)  # -1..1
    t = (y + 1) / 2            # 0 top .. 1 bottom
    half = 0.08 + 0.25 * t
    alpha = coverage((np.abs(x) - half) * size / 2)
    shade = 0.6 + 0.4 * (1 - np.abs(x) / np.maximum(half, 1e-3))
    rgb = np.stack([0.95 * shade, 0.15 * shade, 0.1 * shade], axis=2)
    return rgba_image(np.clip(rgb, 0, 1), alpha)


class _Stream:
    """A vertex buffer re-uploaded every frame (bufferSubData) and drawn as quads."""

    def __init__(self, gl, capacity: int):
        self.gl, self.capacity = gl, capacity
        self.buffer = gl.createBuffer()
        gl.bindBuffer("ARRAY_BUFFER", self.buffer)
        gl.bufferData("ARRAY_BUFFER", capacity * 4 * SPRITE_STRIDE, "DYNAMIC_DRAW")

    def draw(self, sprites: Sprites, data: np.ndarray) -> None:
        quads = data.size // (4 * SPRITE_STRIDE)
        if quads > self.capacity:
            raise ValueError(f"{quads} quads exceed the stream's {self.capacity}")
        sprites._bound = None
        sprites.bind(self.buffer)
        self.gl.bufferSubData("ARRAY_BUFFER", 0, data)
        sprites.draw_batch(self.buffer, quads)


def _rotated(center, size, angle, uv=(0.0, 0.0, 1.0, 1.0)) -> np.ndarray:
    from tilesim.render.workloads.spinning_sprites import rotated_quads

    return rotated_quads(np.asarray([center]), np.asarray([size]), np.asarray([angle]),
                         np.asarray([False]), np.asarray([uv]))


def _gauge(gl, width: int, height: int, frames: int, seed: int, kind: str) -> None:
    speed = kind == "speedometer"
    top, unit = (260, "SPEED") if speed else (8000, "RPM")
    color = (0.15, 0.3, 0.6) if speed else (0.5, 0.15, 0.12)
    sprites = Sprites(gl, width, height)
    font, uv = glyph_atlas()
    tex_dial = upload_texture(gl, _dial(DIAL, color))
    tex_needle = upload_texture(gl, _needle(128))
    tex_font = upload_texture(gl, font)
    tex_cap = upload_texture(gl, shaded_sprite("circle", 64, (0.3, 0.3, 0.35)))
    side = min(width, height)
    cx, cy, radius = width / 2, height / 2, side * 0.46
    # The scale: 11 numbers on the 270-degree arc (static, one batch).
    rects, uvs, colors = [], [], []
    glyph = side * 0.055
    for k in range(11):
        a = np.radians(-135 + 27 * k)
        label = str(int(round(top * k / 10 / (1 if speed else 1000))))
        x = cx + 0.6 * radius * np.sin(a) - len(label) * glyph * 0.35
        y = cy - 0.6 * radius * np.cos(a) - glyph / 2
        r, u, c = text_quads(label, x, y, glyph, uv)
        rects.append(r)
        uvs.append(u)
        colors.append(c)
    scale = quad_batch(np.concatenate(rects), np.concatenate(uvs), np.concatenate(colors))
    scale_buffer = gl.createBuffer()
    gl.bindBuffer("ARRAY_BUFFER", scale_buffer)
    gl.bufferData("ARRAY_BUFFER", scale, "STATIC_DRAW")
    scale_quads = scale.size // (4 * SPRITE_STRIDE)
    readout = _Stream(gl, 16)
    needle = _Stream(gl, 1)
    rng = rng_for(seed, 0 if speed else 1)
    phase = rng.random() * 2 * np.pi
    gl.clearColor(0.02, 0.02, 0.03, 1.0)
    for f in range(frames):
        value = 0.5 + 0.45 * np.sin(phase + f * 0.07)  # 0..1 of the scale
        gl.clear("COLOR_BUFFER_BIT")
        gl.disable("DEPTH_TEST")
        sprites.use()
        sprites._bound = None
        gl.disable("BLEND")
        gl.bindTexture("TEXTURE_2D", tex_dial)
        sprites.draw_one((cx - radius, cy - radius, 2 * radius, 2 * radius))
        gl.enable("BLEND")
        gl.blendFunc("SRC_ALPHA", "ONE_MINUS_SRC_ALPHA")
        gl.bindTexture("TEXTURE_2D", tex_font)
        sprites.draw_batch(scale_buffer, scale_quads)
        shown = f"{int(round(value * top)):d}"
        r, u, c = text_quads(f"{shown} {unit}", cx - glyph * 2.6, cy + radius * 0.25,
                             glyph * 1.2, uv)
        readout.draw(sprites, quad_batch(r, u, c))
        gl.bindTexture("TEXTURE_2D", tex_needle)
        angle = np.radians(-135 + 270 * value)
        length = radius * 0.85
        center = (cx + np.sin(angle) * length / 2, cy - np.cos(angle) * length / 2)
        needle.draw(sprites, _rotated(center, (radius * 0.12, length), angle))
        gl.bindTexture("TEXTURE_2D", tex_cap)
        sprites._bound = None
        sprites.draw_one((cx - radius * 0.12, cy - radius * 0.12, radius * 0.24,
                          radius * 0.24))
        gl.endFrame()


MENU_ITEMS = ("RADIO", "MEDIA", "NAVI", "CONTACTS", "CLIMATE", "SEAT", "DRIVE", "ECO MODE",
              "SETTINGS")


def _menu(gl, width: int, height: int, frames: int, seed: int) -> None:
    sprites = Sprites(gl, width, height)
    font, uv = glyph_atlas()
    tex_font = upload_texture(gl, font)
    rng = rng_for(seed, 2)
    noise = value_noise(rng, 64, 64, cells=4, octaves=3)
    bg = np.stack([0.08 + 0.1 * noise, 0.1 + 0.1 * noise, 0.16 + 0.15 * noise], axis=2)
    tex_bg = upload_texture(gl, rgba_image(bg))
    tex_white = upload_texture(gl, rgba_image(np.ones((4, 4, 3))))
    rows = len(MENU_ITEMS)
    row_h = height / (rows + 1)
    rects = [(width * 0.08, row_h * (0.5 + k) + 2, width * 0.84, row_h - 4) for k in range(rows)]
    colors = [(0.2, 0.25, 0.35, 0.8) if k % 2 else (0.25, 0.3, 0.4, 0.8) for k in range(rows)]
    row_data = quad_batch(rects, [(0, 0, 1, 1)] * rows, colors)
    row_buffer = gl.createBuffer()
    gl.bindBuffer("ARRAY_BUFFER", row_buffer)
    gl.bufferData("ARRAY_BUFFER", row_data, "STATIC_DRAW")
    text = [text_quads(item, width * 0.12, row_h * (0.5 + k) + row_h * 0.2, row_h * 0.6, uv)
            for k, item in enumerate(MENU_ITEMS)]
    text_data = quad_batch(*(np.concatenate(parts) for parts in zip(*text, strict=True)))
    text_buffer = gl.createBuffer()
    gl.bindBuffer("ARRAY_BUFFER", text_buffer)
    gl.bufferData("ARRAY_BUFFER", text_data, "STATIC_DRAW")
    text_quads_n = text_data.size // (4 * SPRITE_STRIDE)
    gl.clearColor(0.0, 0.0, 0.0, 1.0)
    for f in range(frames):
        sel = (f // 3) % rows
        gl.clear("COLOR_BUFFER_BIT")
        gl.disable("DEPTH_TEST")
        sprites.use()
        sprites._bound = None
        gl.disable("BLEND")
        gl.bindTexture("TEXTURE_2D", tex_bg)
        sprites.draw_one((0, 0, width, height))
        gl.enable("BLEND")
        gl.blendFunc("SRC_ALPHA", "ONE_MINUS_SRC_ALPHA")
        gl.bindTexture("TEXTURE_2D", tex_white)
        sprites.draw_batch(row_buffer, rows)
        sprites._bound = None
        sprites.draw_one(rects[sel], tint=(0.9, 0.6, 0.1, 0.7))
        gl.bindTexture("TEXTURE_2D", tex_font)
        sprites.draw_batch(text_buffer, text_quads_n)
        gl.bindTexture("TEXTURE_2D", tex_white)
        sprites._bound = None
        sprites.draw_one((width * 0.95, row_h * (0.5 + sel), width * 0.02, row_h),
                         tint=(0.8, 0.8, 0.8, 0.9))
        gl.endFrame()


# The spam application's fragment program: the sprite program's texture lookup followed by
# ``rounds`` dependent rounds of arithmetic (a procedural pattern), so that each layer costs
# shading time as well as fill rate.
SPAM_FS = """\
precision mediump float;
uniform sampler2D u_tex;
uniform vec4 u_tint;
varying vec2 v_uv;
varying vec4 v_color;
void main() {{
    vec4 c = texture2D(u_tex, v_uv);
    vec2 p = v_uv * 7.0;
{body}    gl_FragColor = vec4(fract(c.rgb + p.xyx * 0.1), c.a) * v_color * u_tint;
}}
"""
SPAM_ROUND = "    p = vec2(p.x * 0.8 + sin(p.y) * 0.6, p.y * 0.8 + cos(p.x) * 0.6);\n"


class _SpamSprites(Sprites):
    """The sprite machinery (buffers, uniforms) with the spam application's program."""

    def __init__(self, gl, width: int, height: int, rounds: int):
        from tilesim.render.workloads.common import SPRITE_ATTRIBS, SPRITE_VS

        super().__init__(gl, width, height)
        self.program = gl.createProgram(SPRITE_VS, SPAM_FS.format(body=SPAM_ROUND * rounds),
                                        attrib_locations=SPRITE_ATTRIBS)
        self.loc = {name: gl.getUniformLocation(self.program, name)
                    for name in ("u_proj", "u_rect", "u_uvrect", "u_tex", "u_tint")}


def _spam(gl, width: int, height: int, frames: int, seed: int, draws: int,
          layers: int, rounds: int) -> None:
    sprites = _SpamSprites(gl, width, height, rounds) if rounds else Sprites(gl, width, height)
    rng = rng_for(seed, 3)
    noise = value_noise(rng, 128, 128, cells=8, octaves=4)
    tex = upload_texture(gl, rgba_image(np.stack([noise, 1 - noise, 0.5 + 0 * noise], 2),
                                        np.full(noise.shape, 0.1)))
    data = quad_batch([(0, 0, width, height)] * layers,
                      [(0.01 * k, 0.0, 1.0, 1.0) for k in range(layers)])
    buffer = gl.createBuffer()
    gl.bindBuffer("ARRAY_BUFFER", buffer)
    gl.bufferData("ARRAY_BUFFER", data, "STATIC_DRAW")
    gl.clearColor(0.0, 0.0, 0.0, 1.0)
    for _ in range(frames):
        gl.clear("COLOR_BUFFER_BIT")
        gl.disable("DEPTH_TEST")
        sprites.use()
        sprites._bound = None
        gl.enable("BLEND")
        gl.blendFunc("SRC_ALPHA", "ONE_MINUS_SRC_ALPHA")
        gl.bindTexture("TEXTURE_2D", tex)
        for _ in range(draws):
            sprites.draw_batch(buffer, layers)
        gl.endFrame()


def build(kind: str, width: int, height: int, frames: int = 4, seed: int = 0, *,
          draws: int = 2, layers: int = 8, rounds: int = 0):
    """The frames (lists of commands) of cluster application ``kind`` (one of ``KINDS``) at
    width x height. ``draws`` and ``layers``: the spam application's load per frame."""
    from tilesim.render.gl.commands import Recorder

    if kind not in KINDS:
        raise ValueError(f"unknown cluster application {kind!r} (known: {', '.join(KINDS)})")
    check_request(kind, width, height, frames)
    gl = Recorder(width, height, name=kind)
    if kind in ("speedometer", "tachometer"):
        _gauge(gl, width, height, frames, seed, kind)
    elif kind == "menu":
        _menu(gl, width, height, frames, seed)
    else:
        _spam(gl, width, height, frames, seed, draws, layers, rounds)
    return gl.recorded_frames()
