"""The automotive cluster applications of seed 004 (*Fine-Grained Semantics Driven
Scheduling*) §6.2: a speedometer, a tachometer, a menu and a spam application.

004 ran them on an i.MX6 (Vivante GC2000) and does not publish their content; these are
written with the recording API to have their structure, each in its own window (the
application's part of the cluster display):

``speedometer``, ``tachometer``
    3D gauges (:mod:`tilesim.render.workloads.gauges`): a lit, depth-tested dial and bezel in
    perspective, raised tick marks, a needle turned every frame by a simulated drive signal,
    the scale's numbers and a digital readout from the glyph atlas; seven draws (the
    tachometer eight: its red zone) and the swap per frame.
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

from tilesim.render.workloads import gauges
from tilesim.render.workloads.common import (
    SPRITE_STRIDE,
    Sprites,
    check_request,
    glyph_atlas,
    quad_batch,
    rgba_image,
    rng_for,
    text_quads,
    upload_texture,
    value_noise,
)

KINDS = ("speedometer", "tachometer", "menu", "spam")


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
        gauges.record(gl, width, height, frames, seed, kind)
    elif kind == "menu":
        _menu(gl, width, height, frames, seed)
    else:
        _spam(gl, width, height, frames, seed, draws, layers, rounds)
    return gl.recorded_frames()
