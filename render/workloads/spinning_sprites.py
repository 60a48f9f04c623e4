"""``spinning_sprites``: textured 2D sprites rotated and flipped every frame.

A program on which Dynamic Sampling Rate with its first shipped parameters fell to
MSSIM 0.890 on frame 1: its content changes abruptly from one frame to the next, the worst
case for a per-tile rate decided on the previous frame (Frame Coherence ch. 6). Per frame: a clear
to a flat color, a full-screen background quad with a soft gradient (low frequencies only), then,
alpha-blended, ``SPRITES`` sprites in one dynamic batch. Every sprite turns by a large angle
(30-75 degrees) and mirrors its texture (u flipped) every frame, and drifts slowly; its
corners sweep tiles that were flat background the frame before. The sprites carry textures
of different spatial frequencies: value noise (rock), a checkerboard, a brick wall, a shaded
gem (smooth with an outline) and text from the glyph atlas, all in one 512x512 atlas.

Sizes scale with the window height (768 = the sizes below). Everything random (positions,
drift, angular speeds, which texture) comes from ``seed``. Not in ``WORKLOADS`` (the bundled
registry): build it with :func:`build` / :func:`write`.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from tilesim.options import window_size
from tilesim.render.workloads.common import (
    SPRITE_STRIDE,
    DynamicBatch,
    Sprites,
    check_request,
    glyph_atlas,
    gradient,
    quad_batch,
    rgba_image,
    rng_for,
    shaded_sprite,
    to_u8,
    upload_texture,
    value_noise,
)

NAME = "spinning_sprites"
CATEGORY = "2D sprites rotated and flipped every frame (abrupt per-tile content change)"
SPRITES = 14
ATLAS = 512
CELL = 256  # four 256x256 cells in the atlas
DEFAULT_FRAMES = 11


def _checker(size: int, squares: int) -> np.ndarray:
    y, x = np.mgrid[0:size, 0:size] * squares // size
    on = ((x + y) % 2).astype(np.float64)
    rgb = np.stack([0.15 + 0.8 * on, 0.15 + 0.6 * on, 0.3 + 0.4 * (1 - on)], axis=2)
    return rgba_image(rgb)


def _bricks(size: int) -> np.ndarray:
    y, x = np.mgrid[0:size, 0:size].astype(np.float64)
    row_h, brick_w = size / 8, size / 4
    row = np.floor(y / row_h)
    xs = x + (row % 2) * brick_w / 2
    mortar = (np.mod(y, row_h) < 3) | (np.mod(xs, brick_w) < 3)
    rng = rng_for(7, 1)
    tone = rng.random((9, 6))[row.astype(int) % 9, np.floor(xs / brick_w).astype(int) % 6]
    base = np.stack([0.55 + 0.25 * tone, 0.22 + 0.1 * tone, 0.15 + 0.05 * tone], axis=2)
    rgb = np.where(mortar[..., None], 0.8, base)
    return rgba_image(rgb)


def _rock(size: int, seed: int) -> np.ndarray:
    n = value_noise(rng_for(seed, 2), size, size, cells=8, octaves=5, persistence=0.6)
    rgb = gradient([(0.2, 0.18, 0.15), (0.5, 0.45, 0.4), (0.85, 0.8, 0.7)], 256)[
        to_u8(n).astype(int)]
    return rgba_image(rgb)


def _text(size: int) -> np.ndarray:
    font, uv = glyph_atlas()
    cell = np.zeros((size, size, 4), dtype=np.uint8)
    cell[..., :3] = (30, 40, 90)
    cell[..., 3] = 255
    glyph = 32  # common.GLYPH_CELL
    lines = ("SCORE", "12345", "LEVEL", "67890")
    step = size // len(lines)
    for r, line in enumerate(lines):
        for c, ch in enumerate(line):
            u0, v0, _, _ = uv[ch]
            gy, gx = int(round(v0 * font.shape[0])), int(round(u0 * font.shape[1]))
            src = font[gy:gy + glyph, gx:gx + glyph].astype(np.float64)
            scale = step // glyph
            big = np.kron(src, np.ones((scale, scale, 1)))
            y0, x0 = r * step, c * (size // len(line))
            h, w = min(big.shape[0], size - y0), min(big.shape[1], size - x0)
            dst = cell[y0:y0 + h, x0:x0 + w].astype(np.float64)
            a = big[:h, :w, 3:4] / 255.0
            cell[y0:y0 + h, x0:x0 + w, :3] = np.round(
                dst[..., :3] * (1 - a) + big[:h, :w, :3] * a).astype(np.uint8)
    return cell


def sprite_atlas(seed: int = 0) -> tuple[np.ndarray, list[tuple[float, float, float, float]]]:
    """The 512x512 RGBA atlas and the uv rectangle (u0, v0, du, dv) of each texture: rock,
    checkerboard and bricks (256x256 quadrants), a strip of text (256x128) and two shaded
    gems (128x128) in the last quadrant."""
    atlas = np.zeros((ATLAS, ATLAS, 4), dtype=np.uint8)
    half = CELL
    atlas[:half, :half] = _rock(half, seed)
    atlas[:half, half:] = _checker(half, 8)
    atlas[half:, :half] = _bricks(half)
    # The bottom-right quadrant: text on its upper half, two shaded gems below.
    quarter = half // 2
    atlas[half:half + quarter, half:] = _text(half)[:quarter]
    atlas[half + quarter:, half:half + quarter] = shaded_sprite("star", quarter,
                                                                (0.95, 0.75, 0.15))
    atlas[half + quarter:, half + quarter:] = shaded_sprite("hexagon", quarter,
                                                            (0.3, 0.6, 0.95))
    h = 0.5
    q = 0.25
    uvs = [(0.0, 0.0, h, h), (h, 0.0, h, h), (0.0, h, h, h), (h, h, h, q),
           (h, h + q, q, q), (h + q, h + q, q, q)]
    return atlas, uvs


def _background(width: int, height: int) -> np.ndarray:
    """A 64x64 soft vertical gradient with a faint glow (low frequencies only)."""
    n = 64
    colors = gradient([(0.12, 0.16, 0.3), (0.25, 0.35, 0.55), (0.5, 0.45, 0.5)], n)
    y, x = np.mgrid[0:n, 0:n] / (n - 1)
    glow = np.exp(-((x - 0.6) ** 2 + (y - 0.35) ** 2) / 0.08)[..., None] * 0.15
    return rgba_image(np.clip(colors[:, None, :] + glow, 0, 1))


def rotated_quads(centers, sizes, angles, flips, uvs) -> np.ndarray:
    """Interleaved vertices (the layout of ``common.quad_batch``) of quads of ``sizes`` (n, 2)
    pixels turned by ``angles`` (radians, y down) about ``centers`` (n, 2), their texture
    mirrored in u where ``flips``; uvs (n, 4) u0, v0, du, dv."""
    centers = np.asarray(centers, dtype=np.float64).reshape(-1, 2)
    n = centers.shape[0]
    sizes = np.asarray(sizes, dtype=np.float64).reshape(n, 2)
    uvs = np.asarray(uvs, dtype=np.float64).reshape(n, 4).copy()
    flips = np.asarray(flips, dtype=bool).reshape(n)
    uvs[flips, 0] += uvs[flips, 2]
    uvs[flips, 2] *= -1
    data = quad_batch(np.column_stack([np.zeros((n, 2)), sizes]), uvs).reshape(n, 4,
                                                                             SPRITE_STRIDE)
    floats = data[:, :, :16].copy().view(np.float32).reshape(n, 4, 4).astype(np.float64)
    local = floats[:, :, :2] - sizes[:, None, :] / 2
    c, s = np.cos(angles)[:, None], np.sin(angles)[:, None]
    x = c * local[:, :, 0] - s * local[:, :, 1] + centers[:, None, 0]
    y = s * local[:, :, 0] + c * local[:, :, 1] + centers[:, None, 1]
    floats[:, :, 0], floats[:, :, 1] = x, y
    data[:, :, :16] = floats.astype(np.float32).view(np.uint8).reshape(n, 4, 16)
    return data.ravel()


def build(width: int, height: int, frames: int = DEFAULT_FRAMES, seed: int = 0,
          appear: int = 0):
    """The frames (lists of commands) of ``frames`` frames at width x height; the sprites
    are drawn from frame ``appear`` on (before it, the background alone)."""
    from tilesim.render.gl.commands import Recorder

    check_request(NAME, width, height, frames)
    gl = Recorder(width, height, name=NAME)
    s = height / 768
    rng = rng_for(seed, 0)
    atlas, uvs = sprite_atlas(seed)
    kinds = rng.integers(0, len(uvs), SPRITES)
    kinds[:len(uvs)] = np.arange(len(uvs))  # every texture at least once
    centers = rng.random((SPRITES, 2)) * [width * 0.8, height * 0.8] + [width * 0.1,
                                                                         height * 0.1]
    drift = (rng.random((SPRITES, 2)) - 0.5) * 6 * s
    side = (90 + 110 * rng.random(SPRITES)) * s
    aspect = np.where(uvs_aspect(uvs, kinds) > 1.5, 2.0, 1.0)
    sizes = np.column_stack([side * aspect, side])
    angle0 = rng.random(SPRITES) * 2 * np.pi
    spin = np.radians(30 + 45 * rng.random(SPRITES)) * rng.choice([-1, 1], SPRITES)

    sprites = Sprites(gl, width, height)
    tex_atlas = upload_texture(gl, atlas)
    tex_bg = upload_texture(gl, _background(width, height))
    batch = DynamicBatch(gl, SPRITES)
    gl.clearColor(0.1, 0.12, 0.2, 1.0)
    gl.disable("DEPTH_TEST")
    for f in range(frames):
        gl.clear("COLOR_BUFFER_BIT")
        sprites.use()
        gl.disable("BLEND")
        gl.bindTexture("TEXTURE_2D", tex_bg)
        sprites.draw_one((0, 0, width, height))
        if f < appear:
            gl.endFrame()
            continue
        gl.enable("BLEND")
        gl.blendFunc("SRC_ALPHA", "ONE_MINUS_SRC_ALPHA")
        gl.bindTexture("TEXTURE_2D", tex_atlas)
        flips = (np.arange(SPRITES) + f) % 2 == 1
        data = rotated_quads(centers + f * drift, sizes, angle0 + f * spin, flips,
                             np.asarray(uvs)[kinds])
        batch.update(sprites, data)
        sprites.draw_batch(batch.buffer, batch.quads)
        gl.endFrame()
    return gl.recorded_frames()


def uvs_aspect(uvs, kinds) -> np.ndarray:
    """du / dv of each sprite's texture (the text strip is twice as wide as high)."""
    uvs = np.asarray(uvs, dtype=np.float64)[kinds]
    return uvs[:, 2] / uvs[:, 3]


def write(path: str | os.PathLike, width: int, height: int, frames: int = DEFAULT_FRAMES,
          seed: int = 0, appear: int = 0) -> Path:
    """Build and write the workload atomically as a ``.tsim`` trace (needs Mesa to compile
    the sprite program); its ``source`` records the generator, parameters and seed."""
    from tilesim.render.traces.trace_file import write_trace

    commands = build(width, height, frames, seed, appear)
    source = {"generator": f"tilesim.render.workloads.{NAME}", "category": CATEGORY,
              "seed": int(seed), "frames": int(frames), "appear": int(appear),
              "width": int(width),
              "height": int(height), "made_by": f"tilesim.render.workloads.{NAME}.write"}
    return write_trace(path, commands, width=width, height=height, name=NAME, source=source)


if __name__ == "__main__":  # python -m tilesim.render.workloads.spinning_sprites OUT.tsim [WxH] [N]
    import sys

    out = sys.argv[1]
    w, h = window_size(sys.argv[2] if len(sys.argv) > 2 else "1196x768", option="WxH")
    n = int(sys.argv[3]) if len(sys.argv) > 3 else DEFAULT_FRAMES
    first = int(sys.argv[4]) if len(sys.argv) > 4 else 0
    print(write(out, w, h, n, appear=first))
