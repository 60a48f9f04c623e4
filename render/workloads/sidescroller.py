"""``sidescroller``: a 2D side-scrolling platformer (the 2D arcade / platform category of 001
Table 3.2: Cut the Rope, Hopeless, Magic Touch, Where's my Water style scenes).

The camera pans right every frame. Back to front: an opaque sky, then with alpha blending
four parallax layers (mountains, hills, trees; a quad each, textures with REPEAT wrap
scrolled by a uniform at a speed per layer, their own program with a distance haze),
drifting clouds (a draw each), the ground (one static batch of pixel-art tiles for the whole
level, drawn as the index range of the visible columns, moved by a uniform), spinning coins
and walking slimes (a draw each), the running and jumping character (a sprite-sheet frame
per draw), two alpha-blended foreground layers that scroll faster than the camera (grass
at the bottom, hanging vines at the top), and a HUD (coin counter, hearts, distance). Pixel
art (tiles, character, coins) is sampled NEAREST, painted layers LINEAR.

The level (segment lengths and heights, gaps, coins, slimes) comes from ``seed``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tilesim.render.workloads.common import (
    MAX_FRAMES,
    DynamicBatch,
    Sprites,
    check_request,
    coverage,
    glyph_atlas,
    gradient,
    grid_coords,
    quad_batch,
    rgba_image,
    rng_for,
    text_quads,
    to_u8,
    upload_texture,
    value_noise,
)
from tilesim.render.workloads.transforms import gl_matrix

NAME = "sidescroller"
CATEGORY = "Platformer / arcade, 2D (001 Table 3.2: Cut the Rope, Hopeless, Magic Touch)"
TILE = 64             # ground tile size in pixels at 768 lines
SPEED = 9.0           # camera pixels per frame at 768 lines
RUN_FRAMES = 8

PARALLAX_VS = """\
attribute vec2 a_pos;
attribute vec2 a_uv;
uniform mat4 u_proj;
uniform vec4 u_rect;
uniform vec2 u_uvscale;
uniform vec2 u_scroll;
varying vec2 v_uv;
void main() {
    v_uv = a_uv * u_uvscale + u_scroll;
    gl_Position = u_proj * vec4(u_rect.xy + a_pos * u_rect.zw, 0.0, 1.0);
}
"""
PARALLAX_FS = """\
precision mediump float;
uniform sampler2D u_tex;
uniform vec4 u_haze;
varying vec2 v_uv;
void main() {
    vec4 c = texture2D(u_tex, v_uv);
    gl_FragColor = vec4(mix(c.rgb, u_haze.rgb, u_haze.a), c.a);
}
"""


# --- textures ------------------------------------------------------------------------------


def _profile(rng, width: int, cells: int, octaves: int) -> np.ndarray:
    """A tileable 1D height profile in [0, 1], (width,)."""
    return value_noise(rng, 1, width, cells=cells, octaves=octaves)[0]


def sky_texture() -> np.ndarray:
    """256x256 RGB: evening gradient with a sun."""
    sky = gradient([(0.2, 0.3, 0.6), (0.5, 0.55, 0.8), (0.98, 0.75, 0.5)], 256)
    image = np.repeat(sky[:, None, :], 256, axis=1)
    y, x = grid_coords(256)
    d = np.hypot(x - 0.45, y - 0.2)
    image += (np.exp(-d * d / 0.02) * 0.5 + coverage((d - 0.09) * 128) * 0.6)[..., None] * (
        1.0, 0.9, 0.6)
    return to_u8(image)


def layer_texture(kind: str, seed: int) -> np.ndarray:
    """512 x 256 (or 512 x 128 for foregrounds) RGBA painted layers, tileable across s."""
    rng = rng_for(seed, 2, ["mountains", "hills", "trees", "grass", "vines"].index(kind))
    w = 512
    h = 128 if kind in ("grass", "vines") else 256
    rows = np.arange(h)[:, None] + 0.5
    if kind == "mountains":
        top = h * (0.1 + 0.6 * _profile(rng, w, 5, 4))[None, :]
        alpha = coverage(top - rows)
        shade = gradient([(0.55, 0.55, 0.75), (0.35, 0.35, 0.55)], h)[:, None, :]
        snow = (rows - top < h * 0.06)[..., None] & (top < h * 0.35)[..., None]
        rgb = np.where(snow, 0.95, shade * (0.85 + 0.3 * value_noise(rng, h, w, cells=8)
                                            [..., None]))
    elif kind == "hills":
        top = h * (0.3 + 0.4 * _profile(rng, w, 3, 3))[None, :]
        alpha = coverage(top - rows)
        rgb = gradient([(0.35, 0.65, 0.3), (0.15, 0.4, 0.2)], h)[:, None, :] * (
            0.8 + 0.4 * value_noise(rng, h, w, cells=16, octaves=3)[..., None])
    elif kind == "trees":
        alpha = np.zeros((h, w))
        xs = np.arange(w)[None, :] + 0.5
        trunk = np.zeros((h, w), dtype=bool)
        for _ in range(9):
            cx, r = rng.random() * w, 25 + 20 * rng.random()
            cy = h - 70 - 60 * rng.random()
            for shift in (-w, 0, w):
                d = np.hypot(xs - cx - shift, rows - cy) - r
                alpha = np.maximum(alpha, coverage(d))
                trunk |= (np.abs(xs - cx - shift) < 5) & (rows > cy)
        bark = trunk & (alpha < 0.5)
        alpha = np.maximum(alpha, trunk)
        leaves = 0.7 + 0.5 * value_noise(rng, h, w, cells=16, octaves=3)[..., None]
        rgb = np.where(bark[..., None], (0.35, 0.22, 0.12),
                       np.asarray((0.1, 0.45, 0.15)) * leaves)
    elif kind == "grass":
        blades = h * (0.25 + 0.7 * rng.random(w // 4))
        top = h - np.repeat(blades, 4)[None, :] * (0.6 + 0.4 * _profile(rng, w, 8, 2))[None]
        alpha = coverage(top - rows)
        rgb = gradient([(0.3, 0.75, 0.2), (0.05, 0.3, 0.05)], h)[:, None, :] * np.ones((1, w, 1))
    else:  # vines hanging from the top
        length = h * (0.2 + 0.75 * rng.random(w // 16))
        bottom = np.repeat(length, 16)[None, :]
        stripe = (np.arange(w) % 16 < 6)[None, :]
        leaf = value_noise(rng, h, w, cells=32, octaves=2) > 0.55
        alpha = (coverage(rows - bottom) * (stripe | leaf)).astype(np.float64)
        rgb = np.where(leaf[..., None], (0.15, 0.5, 0.15), (0.1, 0.3, 0.1)) * np.ones((h, w, 1))
    return rgba_image(np.broadcast_to(rgb, (h, w, 3)), alpha)


def clouds_texture(seed: int) -> np.ndarray:
    """256x128 RGBA: two soft clouds side by side (128 x 128 each)."""
    rng = rng_for(seed, 3)
    out = np.zeros((128, 256, 4))
    for k in range(2):
        y, x = grid_coords(128)
        blobs = np.zeros_like(x)
        for _ in range(6):
            cx, cy, r = rng.uniform(-0.5, 0.5), rng.uniform(-0.1, 0.25), rng.uniform(0.2, 0.35)
            blobs = np.maximum(blobs, np.clip(1 - np.hypot(x - cx, (y - cy) * 1.6) / r, 0, 1))
        out[:, 128 * k:128 * (k + 1), :3] = (1 - 0.25 * np.clip(y, 0, 1))[..., None]
        out[:, 128 * k:128 * (k + 1), 3] = np.clip(blobs * 2.5, 0, 0.9)
    return to_u8(out)


def pixel_atlas() -> tuple[np.ndarray, dict]:
    """128x128 RGBA pixel art in 32x32 cells: ground tiles, four coin frames, heart, two
    slime frames."""
    atlas = np.zeros((128, 128, 4), dtype=np.uint8)
    cell = {}
    yy, xx = np.mgrid[0:32, 0:32]
    # ground: grass top, dirt
    dirt = np.zeros((32, 32, 4), dtype=np.uint8)
    dirt[...] = (120, 80, 45, 255)
    dirt[(xx * 7 + yy * 13) % 23 == 0] = (90, 60, 35, 255)
    dirt[(xx * 5 + yy * 3) % 29 == 0] = (150, 105, 60, 255)
    grass = dirt.copy()
    edge = 6 + ((xx * 3) % 5 == 0) * 2
    grass[yy < edge] = (70, 170, 60, 255)
    grass[yy == 0] = (120, 210, 90, 255)
    tiles = [("grass", grass), ("dirt", dirt)]
    # coin frames: an ellipse getting thinner (spinning)
    for k, widthf in enumerate((1.0, 0.7, 0.3, 0.7)):
        rx, ry = 12 * widthf + 1, 12
        d = ((xx - 15.5) / rx) ** 2 + ((yy - 15.5) / ry) ** 2
        coin = np.zeros((32, 32, 4), dtype=np.uint8)
        coin[d <= 1] = (250, 200, 40, 255)
        coin[(d <= 1) & (d > 0.6)] = (200, 140, 20, 255)
        coin[(d <= 0.3) & (xx < 16)] = (255, 240, 150, 255)
        tiles.append((f"coin{k}", coin))
    heart = np.zeros((32, 32, 4), dtype=np.uint8)
    hy, hx = (yy - 12) / 12.0, np.abs(xx - 15.5) / 12.0
    inside = ((hx - 0.45) ** 2 + (hy + 0.1) ** 2 < 0.3) | ((hy > -0.1) & (hy < 1.2 - hx * 1.3))
    heart[inside] = (230, 40, 60, 255)
    tiles.append(("heart", heart))
    for k in range(2):
        slime = np.zeros((32, 32, 4), dtype=np.uint8)
        squash = 1.0 + 0.15 * k
        d = ((xx - 15.5) / (13 * squash)) ** 2 + ((yy - 31) / (16 / squash)) ** 2
        slime[(d <= 1) & (yy < 31)] = (120, 60, 200, 255)
        slime[(np.abs(xx - 11) < 2) & (np.abs(yy - (20 + 2 * k)) < 2)] = (255, 255, 255, 255)
        slime[(np.abs(xx - 20) < 2) & (np.abs(yy - (20 + 2 * k)) < 2)] = (255, 255, 255, 255)
        tiles.append((f"slime{k}", slime))
    for k, (name, image) in enumerate(tiles):
        r, c = divmod(k, 4)
        atlas[32 * r:32 * (r + 1), 32 * c:32 * (c + 1)] = image
        cell[name] = (c / 4, r / 4, 0.25, 0.25)
    return atlas, cell


def character_sheet() -> tuple[np.ndarray, list]:
    """256x64 RGBA pixel art: eight run-cycle frames (32 x 64 each; the last is also the jump
    pose), drawn from a stick skeleton."""
    sheet = np.zeros((64, 256, 4), dtype=np.uint8)
    yy, xx = np.mgrid[0:64, 0:32] + 0.5

    def limb(img, x0, y0, x1, y1, width, color):
        px, py = xx - x0, yy - y0
        dx, dy = x1 - x0, y1 - y0
        t = np.clip((px * dx + py * dy) / (dx * dx + dy * dy), 0, 1)
        d = np.hypot(px - t * dx, py - t * dy)
        img[d < width] = color

    uvs = []
    for k in range(RUN_FRAMES):
        img = np.zeros((64, 32, 4), dtype=np.uint8)
        phase = 2 * np.pi * k / RUN_FRAMES
        hip, shoulder = (16, 38), (16, 20)
        for side, shade in ((1, 0.7), (-1, 1.0)):
            a = side * 0.6 * np.sin(phase)
            knee = (hip[0] + 9 * np.sin(a), hip[1] + 9 * np.cos(a))
            foot = (knee[0] + 9 * np.sin(a - 0.5 - 0.4 * side * np.cos(phase)),
                    knee[1] + 9 * np.cos(a - 0.5))
            leg = tuple(int(255 * shade * v) for v in (0.2, 0.25, 0.6)) + (255,)
            limb(img, *hip, *knee, 2.6, leg)
            limb(img, *knee, *foot, 2.4, leg)
            arm = tuple(int(255 * shade * v) for v in (0.95, 0.75, 0.6)) + (255,)
            hand = (shoulder[0] - 8 * np.sin(a), shoulder[1] + 11 * np.cos(a))
            limb(img, *shoulder, *hand, 2.0, arm)
        limb(img, *hip, *shoulder, 4.5, (220, 50, 50, 255))
        head = np.hypot(xx - 17, yy - 12) < 6
        img[head] = (245, 200, 160, 255)
        img[(np.hypot(xx - 17, yy - 9) < 6) & (yy < 10)] = (90, 50, 20, 255)
        img[(np.abs(xx - 20) < 1) & (np.abs(yy - 12) < 1)] = (0, 0, 0, 255)
        sheet[:, 32 * k:32 * (k + 1)] = img
        uvs.append((k / RUN_FRAMES, 0.0, 1 / RUN_FRAMES, 1.0))
    return sheet, uvs


# --- the level -----------------------------------------------------------------------------


@dataclass
class Level:
    """Ground columns (height in tiles, 0 = gap), its segments (first column, end column
    (exclusive), height), coins (world x, height in tiles), slimes (first and last column,
    phase)."""

    heights: np.ndarray
    segments: list[tuple[int, int, int]]
    coins: list[tuple[float, float]]
    slimes: list[tuple[int, int, float]]


def make_level(rng: np.random.Generator, columns: int) -> Level:
    heights = np.zeros(columns, dtype=int)
    segments, coins, slimes = [], [], []
    c = 0
    while c < columns:
        length = int(rng.integers(5, 12)) if c else 14
        h = int(rng.integers(2, 5))
        heights[c:c + length] = h
        segments.append((c, min(c + length, columns), h))
        if c and rng.random() < 0.5:
            for k in range(int(rng.integers(3, 6))):
                coins.append((c + 1.5 + k, h + 1.2))
        if c and length > 6 and rng.random() < 0.6:
            slimes.append((c + 1, c + length - 2, float(rng.random())))
        c += length
        gap = int(rng.integers(1, 3))
        if c + gap < columns:
            for k in range(gap + 1):
                coins.append((c + k, h + 2.5))
        c += gap
    return Level(heights, segments, coins, slimes)


JUMP_HEIGHT = 1.6  # tiles above the higher of the two ground heights


def runner_height(level: Level, x: float) -> tuple[float, bool]:
    """The character's feet height (tiles) at world column ``x`` and whether it is airborne:
    it jumps from 0.3 columns before a segment's end to 0.3 after the next one's start."""
    for (_, end, h0), (start, _, h1) in zip(level.segments, level.segments[1:], strict=False):
        take_off, landing = end - 0.3, start + 0.3
        if take_off <= x <= landing:
            t = (x - take_off) / (landing - take_off)
            base = h0 + (h1 - h0) * t
            return float(base + 4 * JUMP_HEIGHT * t * (1 - t)), True
    c = int(np.clip(np.floor(x), 0, level.heights.size - 1))
    return float(level.heights[c]), False


# --- recording -----------------------------------------------------------------------------


def pixel_snap(x: float, y: float, w: float, h: float) -> tuple[float, float, float, float]:
    """A pixel-art sprite's rectangle with its corner on whole pixels (as 2D engines snap)."""
    return float(round(x)), float(round(y)), w, h



def build(width: int, height: int, frames: int = 100, seed: int = 0):
    """The frames (lists of commands) of ``frames`` frames of the workload at width x height."""
    from tilesim.render.gl.commands import Recorder

    check_request(NAME, width, height, frames)
    gl = Recorder(width, height, name=NAME)
    s = height / 768
    tile = TILE * s
    speed = SPEED * s
    columns = int(np.ceil((MAX_FRAMES * speed + width) / tile)) + 4
    level = make_level(rng_for(seed, 0), columns)
    collected: set[int] = set()

    sprites = Sprites(gl, width, height)
    layer_prog = gl.createProgram(PARALLAX_VS, PARALLAX_FS,
                                  attrib_locations={"a_pos": 0, "a_uv": 1})
    lloc = {n: gl.getUniformLocation(layer_prog, n)
            for n in ("u_proj", "u_rect", "u_uvscale", "u_scroll", "u_tex", "u_haze")}
    tex_sky = upload_texture(gl, sky_texture())
    layers = []  # (texture, parallax factor, band top, band bottom (fractions of H), haze)
    for kind, factor, top, bottom, haze in (
            ("mountains", 0.15, 0.22, 0.72, (0.6, 0.65, 0.85, 0.35)),
            ("hills", 0.35, 0.42, 0.86, (0.6, 0.7, 0.85, 0.2)),
            ("trees", 0.6, 0.3, 0.9, (0.5, 0.6, 0.7, 0.1)),
            ("grass", 1.35, 0.86, 1.0, (0.0, 0.0, 0.0, 0.0)),
            ("vines", 1.6, 0.0, 0.2, (0.0, 0.0, 0.0, 0.0))):
        texture = upload_texture(gl, layer_texture(kind, seed), wrap_s="REPEAT")
        layers.append((kind, texture, factor, top * height, bottom * height, haze))
    tex_clouds = upload_texture(gl, clouds_texture(seed))
    atlas, cell = pixel_atlas()
    tex_atlas = upload_texture(gl, atlas, min_filter="NEAREST", mag_filter="NEAREST")
    sheet, run_uvs = character_sheet()
    tex_sheet = upload_texture(gl, sheet, min_filter="NEAREST", mag_filter="NEAREST")
    font_image, font_uv = glyph_atlas()
    tex_font = upload_texture(gl, font_image)

    # the ground of the whole level: one static buffer, tiles ordered by column
    rects, uvs, column_start = [], [], [0]
    for c, h in enumerate(level.heights):
        for k in range(int(h)):
            y = height - (k + 1) * tile
            rects.append((c * tile, y, tile, tile))
            uvs.append(cell["grass" if k == h - 1 else "dirt"])
        # fill to the bottom of the screen below the lowest tile (already at the bottom)
        column_start.append(len(rects))
    ground_vbo = gl.createBuffer()
    gl.bindBuffer("ARRAY_BUFFER", ground_vbo)
    gl.bufferData("ARRAY_BUFFER", quad_batch(rects, uvs), "STATIC_DRAW")
    hud = DynamicBatch(gl, 32)
    gl.clearColor(0.2, 0.3, 0.6, 1.0)
    gl.disable("DEPTH_TEST")
    coins_count = 0
    clouds = [(rng_x, 0.05 + 0.12 * k, 0.8 + 0.4 * ((k * 7) % 3) / 2, k % 2)
              for k, rng_x in enumerate(rng_for(seed, 4).random(5) * 1.4)]

    for f in range(frames):
        cam = float(round(f * speed))
        gl.clear("COLOR_BUFFER_BIT")
        # sky: opaque, static
        gl.disable("BLEND")
        sprites.use()
        gl.activeTexture(0)
        gl.bindTexture("TEXTURE_2D", tex_sky)
        sprites.draw_one((0, 0, width, height))
        gl.enable("BLEND")
        gl.blendFunc("SRC_ALPHA", "ONE_MINUS_SRC_ALPHA")

        def parallax(index: int, cam: float = cam) -> None:
            kind, texture, factor, top, bottom, haze = layers[index]
            gl.useProgram(layer_prog)
            gl.uniformMatrix4fv(lloc["u_proj"], False, gl_matrix(sprites.proj))
            gl.uniform1i(lloc["u_tex"], 0)
            gl.bindBuffer("ARRAY_BUFFER", sprites.unit)
            gl.vertexAttribPointer(0, 2, "FLOAT", False, 20, 0)
            gl.vertexAttribPointer(1, 2, "FLOAT", False, 20, 8)
            gl.disableVertexAttribArray(2)
            gl.bindTexture("TEXTURE_2D", texture)
            band = bottom - top
            repeat_px = band * (512 / (128 if kind in ("grass", "vines") else 256))
            gl.uniform4f(lloc["u_rect"], 0.0, top, float(width), band)
            gl.uniform2f(lloc["u_uvscale"], width / repeat_px, 1.0)
            gl.uniform2f(lloc["u_scroll"], (cam * factor / repeat_px) % 1.0, 0.0)
            gl.uniform4f(lloc["u_haze"], *haze)
            gl.drawElements("TRIANGLES", 6, "UNSIGNED_SHORT", 0)

        parallax(0)
        # clouds between the mountains and the hills
        sprites.use()
        gl.bindTexture("TEXTURE_2D", tex_clouds)
        for x0, y0, size, which in clouds:
            w = 0.22 * width * size
            x = (x0 * width - cam * 0.25 - f * 0.6 * s) % (width + w) - w
            sprites.draw_one((x, y0 * height, w, w / 2), (0.5 * which, 0, 0.5, 1),
                             (1, 1, 1, 0.85))
        parallax(1)
        parallax(2)

        # ground: the visible columns' index range, moved by the camera
        sprites.use()
        first = max(int(cam // tile) - 1, 0)
        last = min(int((cam + width) // tile) + 2, level.heights.size)
        gl.bindTexture("TEXTURE_2D", tex_atlas)
        sprites.bind(ground_vbo)
        gl.uniform4f(sprites.loc["u_rect"], -cam, 0.0, 1.0, 1.0)
        gl.uniform4f(sprites.loc["u_uvrect"], 0.0, 0.0, 1.0, 1.0)
        gl.uniform4f(sprites.loc["u_tint"], 1.0, 1.0, 1.0, 1.0)
        quads = column_start[last] - column_start[first]
        gl.drawElements("TRIANGLES", 6 * quads, "UNSIGNED_SHORT", 12 * column_start[first])

        # the character (world column of its center)
        hero_x = (cam + 0.3 * width) / tile
        feet, airborne = runner_height(level, hero_x)
        for k, (cx, cy) in enumerate(level.coins):
            if k not in collected and abs(cx - hero_x) < 0.5 and abs(cy - (feet + 0.8)) < 1.4:
                collected.add(k)
                coins_count += 1
        # coins and slimes
        for k, (cx, cy) in enumerate(level.coins):
            x = cx * tile - cam
            if k in collected or not -tile < x < width + tile:
                continue
            frame = (f // 3 + k) % 4
            sprites.draw_one(pixel_snap(x - 0.3 * tile, height - cy * tile - 0.3 * tile,
                                        0.6 * tile, 0.6 * tile), cell[f"coin{frame}"])
        for c0, c1, phase in level.slimes:
            t = 0.5 + 0.5 * np.sin(f * 0.08 + 6.28 * phase)
            x = (c0 + (c1 - c0) * t) * tile - cam
            if not -tile < x < width + tile:
                continue
            h = level.heights[int(c0 + (c1 - c0) * t)]
            sprites.draw_one(pixel_snap(x, height - h * tile - 0.8 * tile, 0.8 * tile,
                                        0.8 * tile),
                             cell[f"slime{(f // 6) % 2}"])
        gl.bindTexture("TEXTURE_2D", tex_sheet)
        frame_uv = run_uvs[-1] if airborne else run_uvs[(f // 2) % RUN_FRAMES]
        hero_w, hero_h = 0.9 * tile, 1.8 * tile
        sprites.draw_one(pixel_snap(0.3 * width - hero_w / 2, height - feet * tile - hero_h, hero_w,
                          hero_h), frame_uv)

        # foreground layers, faster than the camera
        parallax(3)
        parallax(4)

        # HUD
        sprites.use()
        gl.bindTexture("TEXTURE_2D", tex_atlas)
        icon = 0.06 * height
        sprites.draw_one((0.02 * width, 0.03 * height, icon, icon), cell["coin0"])
        for k in range(3):
            sprites.draw_one((0.5 * width + (k - 1.5) * 1.1 * icon, 0.03 * height, icon, icon),
                             cell["heart"], (1, 1, 1, 1.0 if k < 2 or f < 60 else 0.35))
        gl.bindTexture("TEXTURE_2D", tex_font)
        text = text_quads(f"x{coins_count}", 0.02 * width + 1.1 * icon, 0.03 * height, icon,
                          font_uv)
        meters = f"{int(cam / tile):4d}m"
        dist = text_quads(meters, width - 0.02 * width - len(meters) * 0.7 * icon,
                          0.03 * height, icon, font_uv, color=(1.0, 0.95, 0.7, 1.0))
        hud.update(sprites, quad_batch(*[np.concatenate(p) for p in zip(text, dist,
                                                                         strict=True)]))
        sprites.draw_batch(hud.buffer, hud.quads)
        gl.endFrame()
    return gl.recorded_frames()

