"""``match3``: a 2D match-three puzzle (the Candy Crush Saga / Toy Story Drop category of
Frame Coherence Table 3.2).

A static camera over an 8x8 board. Per frame, in painter's order: a full-screen background
(its own program, a vignette in the fragment shader, blending off), then with alpha
blending: the board panel and its cells (one static batch), the pieces at rest (one batch,
re-uploaded with bufferSubData only when the board changes), each animated piece as its own
draw with per-draw uniforms (swaps, pieces shrinking when matched, pieces falling in from
above the board under a scissor), additive sparkles, and a HUD on the left (panel, static
labels, score and moves digits from a glyph texture that change as the score rolls, a
progress bar, three stars).

The game is played by a seeded player: it waits a few frames (a hint piece pulses), swaps
two pieces (usually a swap that matches, sometimes one that does not and swaps back),
matched pieces vanish with sparkles, the columns fall, new pieces drop in, and cascades
score combos. Everything random comes from ``seed``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tilesim.render.workloads.common import (
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
    shaded_sprite,
    shape_distance,
    smoothstep,
    text_quads,
    to_u8,
    upload_texture,
    value_noise,
)

NAME = "match3"
CATEGORY = "Match-Three Puzzle, 2D (001 Table 3.2: Candy Crush Saga, Toy Story Drop)"
ROWS = COLS = 8
KINDS = 6
SWAP_FRAMES = 6
CLEAR_FRAMES = 5
FRAMES_PER_CELL = 2
START_MOVES = 25
TARGET_SCORE = 3000

GEM_SHAPES = ("circle", "square", "diamond", "triangle", "hexagon", "star")
GEM_COLORS = ((0.95, 0.2, 0.2), (0.2, 0.55, 0.95), (0.25, 0.85, 0.3), (0.98, 0.8, 0.15),
              (0.7, 0.3, 0.9), (1.0, 0.55, 0.1))

BG_VS = """\
attribute vec2 a_pos;
attribute vec2 a_uv;
varying vec2 v_uv;
void main() {
    v_uv = a_uv;
    gl_Position = vec4(a_pos, 0.0, 1.0);
}
"""
BG_FS = """\
precision mediump float;
uniform sampler2D u_tex;
uniform vec2 u_center;
uniform float u_strength;
varying vec2 v_uv;
void main() {
    vec4 c = texture2D(u_tex, v_uv);
    vec2 d = v_uv - u_center;
    float v = clamp(1.0 - u_strength * dot(d, d), 0.0, 1.0);
    gl_FragColor = vec4(c.rgb * v, 1.0);
}
"""


# --- the game ------------------------------------------------------------------------------


def matched(grid: np.ndarray) -> np.ndarray:
    """Cells in a horizontal or vertical run of three or more equal pieces (bool, grid shape)."""
    m = np.zeros(grid.shape, dtype=bool)
    h = (grid[:, :-2] == grid[:, 1:-1]) & (grid[:, 1:-1] == grid[:, 2:]) & (grid[:, :-2] >= 0)
    v = (grid[:-2] == grid[1:-1]) & (grid[1:-1] == grid[2:]) & (grid[:-2] >= 0)
    for k in range(3):
        m[:, k:k + h.shape[1]] |= h
        m[k:k + v.shape[0]] |= v
    return m


def swaps(grid: np.ndarray) -> tuple[list, list]:
    """Adjacent swaps ((r, c), (r2, c2)) that make a match, and those that do not."""
    good, bad = [], []
    for r in range(ROWS):
        for c in range(COLS):
            for r2, c2 in ((r, c + 1), (r + 1, c)):
                if r2 >= ROWS or c2 >= COLS:
                    continue
                g = grid.copy()
                g[r, c], g[r2, c2] = g[r2, c2], g[r, c]
                (good if matched(g).any() else bad).append(((r, c), (r2, c2)))
    return good, bad


@dataclass
class Piece:
    """A piece drawn on its own: position in cells (x = column, y = row, may be above the
    board), scale and opacity."""

    kind: int
    x: float
    y: float
    scale: float = 1.0
    alpha: float = 1.0


@dataclass
class Snapshot:
    """What one frame shows."""

    resting: list[tuple[int, int, int]]          # (row, column, kind) in the static batch
    animated: list[Piece]
    ring: tuple[float, float] | None             # selection ring at (x, y) cells
    particles: np.ndarray                        # (n, 5): x, y, size (cells), alpha, kind
    score: int
    moves: int
    falling: bool                                # pieces may be above the board (scissor)
    combo: int = 0


class Game:
    def __init__(self, rng: np.random.Generator):
        self.rng = rng
        grid = rng.integers(0, KINDS, size=(ROWS, COLS))
        while True:
            m = matched(grid)
            if not m.any():
                break
            grid[m] = rng.integers(0, KINDS, size=int(m.sum()))
        self.grid = grid
        self.score = self.shown = 0
        self.moves = START_MOVES
        self.combo = 0
        self.particles = np.zeros((0, 8))  # x, y, vx, vy, age, life, size, kind
        self._idle()

    # phases: idle -> swap -> (clear -> fall)+ -> idle, or swap -> swapback -> idle
    def _idle(self) -> None:
        self.phase, self.t = "idle", 0
        self.duration = int(self.rng.integers(4, 10))
        good, bad = swaps(self.grid)
        if good and (not bad or self.rng.random() < 0.85):
            self.swap, self.valid = good[int(self.rng.integers(len(good)))], True
        else:
            self.swap, self.valid = bad[int(self.rng.integers(len(bad)))], False

    def _start_clear(self) -> None:
        self.phase, self.t, self.duration = "clear", 0, CLEAR_FRAMES
        self.mask = matched(self.grid)
        rows, cols = np.nonzero(self.mask)
        n = 6 * rows.size
        angle = self.rng.random(n) * 2 * np.pi
        speed = 0.06 + 0.1 * self.rng.random(n)
        life = self.rng.integers(8, 13, size=n)
        born = np.stack([np.repeat(cols + 0.5, 6), np.repeat(rows + 0.5, 6),
                         speed * np.cos(angle), speed * np.sin(angle) - 0.05,
                         np.zeros(n), life, 0.3 + 0.2 * self.rng.random(n),
                         np.repeat(self.grid[rows, cols], 6)], axis=1)
        self.particles = np.concatenate([self.particles, born])

    def _start_fall(self) -> None:
        removed = int(self.mask.sum())
        self.combo += 1
        self.score += 20 * removed * self.combo
        self.grid[self.mask] = -1
        self.falls = []  # (kind, column, from_row, to_row)
        for c in range(COLS):
            column = [(r, int(self.grid[r, c])) for r in range(ROWS - 1, -1, -1)
                      if self.grid[r, c] >= 0]
            new = ROWS - len(column)
            column += [(-1 - j, int(self.rng.integers(KINDS))) for j in range(new)]
            for k, (r, kind) in enumerate(column):
                to = ROWS - 1 - k
                self.grid[to, c] = kind
                if r != to:
                    self.falls.append((kind, c, r, to))
        distance = max(to - r for _, _, r, to in self.falls)
        self.phase, self.t = "fall", 0
        self.duration = max(4, FRAMES_PER_CELL * distance)

    def step(self) -> Snapshot:
        """Advance one frame and return what it shows."""
        animated: list[Piece] = []
        ring = None
        hidden: set[tuple[int, int]] = set()
        s = (self.t + 1) / self.duration
        if self.phase == "idle":
            if self.t >= 3:  # hint: the first piece of the planned swap pulses
                (r, c), _ = self.swap
                hidden.add((r, c))
                animated.append(Piece(int(self.grid[r, c]), c, r,
                                      1.0 + 0.08 * np.sin(self.t * 1.3)))
        elif self.phase in ("swap", "swapback"):
            (r, c), (r2, c2) = self.swap
            e = float(smoothstep(s if self.phase == "swap" else 1 - s))
            hidden |= {(r, c), (r2, c2)}
            animated.append(Piece(int(self.grid[r2, c2]), c2 + (c - c2) * e,
                                  r2 + (r - r2) * e))
            animated.append(Piece(int(self.grid[r, c]), c + (c2 - c) * e, r + (r2 - r) * e,
                                  1.0 + 0.15 * np.sin(np.pi * s)))
            ring = (c + (c2 - c) * e, r + (r2 - r) * e)
        elif self.phase == "clear":
            for r, c in zip(*np.nonzero(self.mask), strict=True):
                hidden.add((int(r), int(c)))
                animated.append(Piece(int(self.grid[r, c]), int(c), int(r), 1.0 - 0.8 * s,
                                      1.0 - s))
        elif self.phase == "fall":
            e = s * s
            for kind, c, r0, r1 in self.falls:
                hidden.add((r1, c))
                animated.append(Piece(kind, c, r0 + (r1 - r0) * e))
        resting = [(r, c, int(self.grid[r, c])) for r in range(ROWS) for c in range(COLS)
                   if (r, c) not in hidden and self.grid[r, c] >= 0]
        if self.phase == "clear":
            resting = [p for p in resting if not self.mask[p[0], p[1]]]
        particles = self._particles()
        snap = Snapshot(resting, animated, ring, particles, self.shown, self.moves,
                        self.phase == "fall", self.combo)
        # roll the displayed score toward the score
        if self.shown < self.score:
            self.shown += max(1, -(-(self.score - self.shown) // 4))
        self.t += 1
        if self.t >= self.duration:
            self._advance()
        return snap

    def _particles(self) -> np.ndarray:
        p = self.particles
        if not len(p):
            return np.zeros((0, 5))
        age = p[:, 4]
        x = p[:, 0] + p[:, 2] * age
        y = p[:, 1] + p[:, 3] * age + 0.008 * age * age
        life = p[:, 5]
        size = p[:, 6] * (1 - 0.5 * age / life)
        alpha = 1 - age / life
        out = np.stack([x, y, size, alpha, p[:, 7]], axis=1)
        p[:, 4] += 1
        self.particles = p[p[:, 4] < p[:, 5]]
        return out

    def _advance(self) -> None:
        if self.phase == "idle":
            self.phase, self.t, self.duration = "swap", 0, SWAP_FRAMES
        elif self.phase == "swap":
            (r, c), (r2, c2) = self.swap
            if self.valid:
                self.grid[r, c], self.grid[r2, c2] = self.grid[r2, c2], self.grid[r, c]
                self.moves = max(self.moves - 1, 0) or START_MOVES
                self.combo = 0
                self._start_clear()
            else:
                self.phase, self.t, self.duration = "swapback", 0, SWAP_FRAMES
        elif self.phase == "swapback":
            self._idle()
        elif self.phase == "clear":
            self._start_fall()
        elif self.phase == "fall":
            if matched(self.grid).any():
                self._start_clear()
            else:
                self._idle()


# --- textures ------------------------------------------------------------------------------

GEM_CELL = 128


def gem_atlas() -> tuple[np.ndarray, dict]:
    """512x512 RGBA: six gems, the selection ring and a sparkle, 128x128 each."""
    atlas = np.zeros((512, 512, 4), dtype=np.uint8)
    uv = {}
    cells = [("gem", k) for k in range(KINDS)] + [("ring", 0), ("sparkle", 0)]
    for k, item in enumerate(cells):
        r, c = divmod(k, 4)
        if item[0] == "gem":
            sprite = shaded_sprite(GEM_SHAPES[item[1]], GEM_CELL, GEM_COLORS[item[1]])
        elif item[0] == "ring":
            d = shape_distance("ring", GEM_CELL, 0.95)
            sprite = rgba_image(np.ones((GEM_CELL, GEM_CELL, 3)) * (1.0, 0.95, 0.6),
                                coverage(d - 1.5))
        else:
            y, x = grid_coords(GEM_CELL)
            glow = np.exp(-(x * x + y * y) / 0.08)
            cross = np.exp(-np.abs(x) * 12 - y * y * 3) + np.exp(-np.abs(y) * 12 - x * x * 3)
            sprite = rgba_image(np.ones((GEM_CELL, GEM_CELL, 3)), np.clip(glow + cross, 0, 1))
        atlas[r * GEM_CELL:(r + 1) * GEM_CELL, c * GEM_CELL:(c + 1) * GEM_CELL] = sprite
        uv[item] = (c * 0.25, r * 0.25, 0.25, 0.25)
    return atlas, uv


def ui_atlas() -> tuple[np.ndarray, dict]:
    """256x256 RGBA: HUD panel, light and dark board cells, progress bar, star."""
    atlas = np.zeros((256, 256, 4), dtype=np.float64)

    def rounded(h, w, radius, border):
        y = np.abs(np.arange(h) + 0.5 - h / 2)[:, None] - (h / 2 - radius)
        x = np.abs(np.arange(w) + 0.5 - w / 2)[None, :] - (w / 2 - radius)
        d = np.hypot(np.maximum(x, 0), np.maximum(y, 0)) + np.minimum(np.maximum(x, y), 0)
        d -= radius
        return coverage(d + 1), coverage(d + border + 1)

    outer, inner = rounded(128, 128, 18, 5)
    atlas[:128, :128, :3] = inner[..., None] * (0.16, 0.12, 0.3) + (1 - inner[..., None]) * (
        0.95, 0.8, 0.4)
    atlas[:128, :128, 3] = outer * (0.55 + 0.4 * (1 - inner))
    for k, shade in enumerate((0.85, 0.65)):
        o, i = rounded(64, 64, 8, 2)
        cell = atlas[:64, 128 + 64 * k:192 + 64 * k]
        cell[..., :3] = (shade * 0.75, shade * 0.8, shade)
        cell[..., 3] = o * 0.55
    o, i = rounded(32, 128, 14, 3)
    atlas[64:96, 128:, :3] = (0.2, 0.15, 0.25)
    atlas[64:96, 128:, 3] = o * 0.85
    ramp = gradient([(1.0, 0.85, 0.3), (0.95, 0.45, 0.2)], 32)[:, None, :]
    atlas[96:128, 128:, :3] = ramp
    atlas[96:128, 128:, 3] = o
    star = coverage(shape_distance("star", 64, 0.9))
    atlas[128:192, :64, :3] = 1.0
    atlas[128:192, :64, 3] = star
    uv = {"panel": (0, 0, 0.5, 0.5), "cell_light": (0.5, 0, 0.25, 0.25),
          "cell_dark": (0.75, 0, 0.25, 0.25), "bar": (0.5, 0.25, 0.5, 0.125),
          "bar_fill": (0.5, 0.375, 0.5, 0.125), "star": (0, 0.5, 0.25, 0.25)}
    return to_u8(atlas), uv


def background(seed: int) -> np.ndarray:
    """512x512 RGB: a violet-to-blue sky with soft clouds and dots."""
    rng = rng_for(seed, 1, 1)
    sky = gradient([(0.35, 0.2, 0.55), (0.25, 0.35, 0.75), (0.45, 0.7, 0.9)], 512)
    image = np.repeat(sky[:, None, :], 512, axis=1)
    clouds = value_noise(rng, 512, 512, cells=3, octaves=5)
    image = image + 0.35 * np.clip(clouds - 0.45, 0, 1)[..., None]
    dots = rng.random((512, 512)) > 0.9993
    image[dots] = 1.0
    return to_u8(image)


# --- recording -----------------------------------------------------------------------------


@dataclass
class Layout:
    width: int
    height: int

    def __post_init__(self):
        w, h = self.width, self.height
        self.cell = max(2.0, float(np.floor(min(0.66 * w, 0.88 * h) / COLS)))
        size = self.cell * COLS
        self.bx = round(0.30 * w + (0.68 * w - size) / 2)
        self.by = round((h - size) / 2)
        self.panel = (0.03 * w, 0.08 * h, 0.24 * w, 0.84 * h)
        self.text = 0.055 * h

    def cell_rect(self, x: float, y: float, s: float = 1.0) -> tuple[float, ...]:
        c = self.cell
        return (self.bx + (x + 0.5 - s / 2) * c, self.by + (y + 0.5 - s / 2) * c, s * c, s * c)


def build(width: int, height: int, frames: int = 100, seed: int = 0):
    """The frames (lists of commands) of ``frames`` frames of the workload at width x height."""
    from tilesim.render.gl.commands import Recorder

    check_request(NAME, width, height, frames)
    gl = Recorder(width, height, name=NAME)
    game = Game(rng_for(seed, 0))
    lay = Layout(width, height)

    # --- setup (frame 0): programs, textures, static buffers
    sprites = Sprites(gl, width, height)
    bg_prog = gl.createProgram(BG_VS, BG_FS, attrib_locations={"a_pos": 0, "a_uv": 1})
    bg_loc = {n: gl.getUniformLocation(bg_prog, n) for n in ("u_tex", "u_center", "u_strength")}
    bg_vbo = gl.createBuffer()
    gl.bindBuffer("ARRAY_BUFFER", bg_vbo)
    gl.bufferData("ARRAY_BUFFER", np.array([-1, 1, 0, 0, 1, 1, 1, 0, 1, -1, 1, 1, -1, -1, 0, 1],
                                           dtype=np.float32), "STATIC_DRAW")
    gem_image, gem_uv = gem_atlas()
    ui_image, ui_uv = ui_atlas()
    font_image, font_uv = glyph_atlas()
    tex_bg = upload_texture(gl, background(seed))
    tex_gems = upload_texture(gl, gem_image, min_filter="LINEAR_MIPMAP_LINEAR", mipmap=True)
    tex_ui = upload_texture(gl, ui_image)
    tex_font = upload_texture(gl, font_image)

    # board cells: one static batch (checkerboard)
    cells = [(lay.cell_rect(c, r), ui_uv["cell_light" if (r + c) % 2 else "cell_dark"])
             for r in range(ROWS) for c in range(COLS)]
    cell_vbo = gl.createBuffer()
    gl.bindBuffer("ARRAY_BUFFER", cell_vbo)
    gl.bufferData("ARRAY_BUFFER", quad_batch([r for r, _ in cells], [u for _, u in cells]),
                  "STATIC_DRAW")
    # HUD labels: one static batch
    px, py, pw, ph = lay.panel
    t = lay.text
    labels = [text_quads("SCORE", px + 0.1 * pw, py + 0.06 * ph, t, font_uv),
              text_quads("MOVES", px + 0.1 * pw, py + 0.34 * ph, t, font_uv),
              text_quads("TARGET", px + 0.1 * pw, py + 0.62 * ph, t, font_uv,
                         color=(1.0, 0.9, 0.6, 1.0))]
    label_vbo = gl.createBuffer()
    gl.bindBuffer("ARRAY_BUFFER", label_vbo)
    gl.bufferData("ARRAY_BUFFER", quad_batch(*[np.concatenate(p) for p in zip(*labels,
                                                                               strict=True)]),
                  "STATIC_DRAW")
    label_quads = sum(len(rects) for rects, _, _ in labels)
    resting = DynamicBatch(gl, ROWS * COLS)
    digits = DynamicBatch(gl, 32)
    sparkles = DynamicBatch(gl, 512)
    gl.clearColor(0.0, 0.0, 0.0, 1.0)
    gl.disable("DEPTH_TEST")
    gl.disable("CULL_FACE")
    board_scissor = (int(lay.bx), int(height - (lay.by + lay.cell * ROWS)),
                     int(lay.cell * COLS), int(lay.cell * ROWS))

    for _ in range(frames):
        snap = game.step()
        gl.clear("COLOR_BUFFER_BIT")
        # background: opaque, its own program
        gl.disable("BLEND")
        gl.useProgram(bg_prog)
        gl.activeTexture(0)
        gl.bindTexture("TEXTURE_2D", tex_bg)
        gl.uniform1i(bg_loc["u_tex"], 0)
        gl.uniform2f(bg_loc["u_center"], 0.62, 0.5)
        gl.uniform1f(bg_loc["u_strength"], 1.6)
        gl.bindBuffer("ARRAY_BUFFER", bg_vbo)
        gl.enableVertexAttribArray(0)
        gl.enableVertexAttribArray(1)
        gl.disableVertexAttribArray(2)
        gl.vertexAttribPointer(0, 2, "FLOAT", False, 16, 0)
        gl.vertexAttribPointer(1, 2, "FLOAT", False, 16, 8)
        gl.drawArrays("TRIANGLE_FAN", 0, 4)

        # board: translucent panel and cells
        gl.enable("BLEND")
        gl.blendFunc("SRC_ALPHA", "ONE_MINUS_SRC_ALPHA")
        sprites.use()
        gl.bindTexture("TEXTURE_2D", tex_ui)
        margin = 0.25 * lay.cell
        sprites.draw_one((lay.bx - margin, lay.by - margin, lay.cell * COLS + 2 * margin,
                          lay.cell * ROWS + 2 * margin), ui_uv["panel"], (1, 1, 1, 0.9))
        sprites.draw_batch(cell_vbo, ROWS * COLS)

        # pieces at rest: one batch, uploaded when the board changed
        gl.bindTexture("TEXTURE_2D", tex_gems)
        rects = [lay.cell_rect(c, r) for r, c, _ in snap.resting]
        uvs = [gem_uv[("gem", k)] for _, _, k in snap.resting]
        resting.update(sprites, quad_batch(rects, uvs) if rects else np.zeros(0, np.uint8))
        sprites.draw_batch(resting.buffer, resting.quads)

        # animated pieces: a draw each, clipped to the board while pieces fall in
        if snap.falling:
            gl.enable("SCISSOR_TEST")
            gl.scissor(*board_scissor)
        for piece in snap.animated:
            sprites.draw_one(lay.cell_rect(piece.x, piece.y, piece.scale),
                             gem_uv[("gem", piece.kind)], (1, 1, 1, piece.alpha))
        if snap.falling:
            gl.disable("SCISSOR_TEST")
        if snap.ring is not None:
            sprites.draw_one(lay.cell_rect(*snap.ring, 1.1), gem_uv[("ring", 0)],
                             (1, 1, 1, 0.9))

        # sparkles: additive
        if len(snap.particles):
            p = snap.particles
            size = p[:, 2] * lay.cell
            rects = np.stack([lay.bx + p[:, 0] * lay.cell - size / 2,
                              lay.by + p[:, 1] * lay.cell - size / 2, size, size], axis=1)
            colors = np.concatenate([np.asarray(GEM_COLORS)[p[:, 4].astype(int)] * 0.5 + 0.5,
                                     p[:, 3:4]], axis=1)
            sparkles.update(sprites, quad_batch(rects, np.tile(gem_uv[("sparkle", 0)],
                                                               (len(p), 1)), colors))
            gl.blendFunc("SRC_ALPHA", "ONE")
            sprites.draw_batch(sparkles.buffer, sparkles.quads)
            gl.blendFunc("SRC_ALPHA", "ONE_MINUS_SRC_ALPHA")

        # HUD
        gl.bindTexture("TEXTURE_2D", tex_ui)
        sprites.draw_one(lay.panel, ui_uv["panel"])
        bar = (px + 0.1 * pw, py + 0.74 * ph, 0.8 * pw, 0.06 * ph)
        sprites.draw_one(bar, ui_uv["bar"])
        fill = min(snap.score / TARGET_SCORE, 1.0)
        if fill > 0:
            u0, v0, du, dv = ui_uv["bar_fill"]
            sprites.draw_one((bar[0], bar[1], bar[2] * fill, bar[3]), (u0, v0, du * fill, dv))
        for k in range(3):
            earned = snap.score >= TARGET_SCORE * (k + 1) / 3
            sprites.draw_one((px + (0.12 + 0.27 * k) * pw, py + 0.84 * ph, 0.2 * pw, 0.2 * pw),
                             ui_uv["star"],
                             (1.0, 0.85, 0.2, 1.0) if earned else (0.4, 0.4, 0.45, 0.8))
        gl.bindTexture("TEXTURE_2D", tex_font)
        sprites.draw_batch(label_vbo, label_quads)
        score = text_quads(f"{snap.score:06d}", px + 0.08 * pw, py + 0.15 * ph, 1.2 * t,
                           font_uv, color=(1.0, 1.0, 0.8, 1.0))
        moves = text_quads(f"{snap.moves:2d}", px + 0.1 * pw, py + 0.43 * ph, 1.4 * t,
                           font_uv)
        digits.update(sprites, quad_batch(*[np.concatenate(p) for p in zip(score, moves,
                                                                           strict=True)]))
        sprites.draw_batch(digits.buffer, digits.quads)
        if snap.combo > 1:
            combo = text_quads(f"x{snap.combo}", lay.bx + lay.cell * COLS * 0.4,
                               lay.by + lay.cell * 0.2, 2 * t, font_uv)
            for rect, uvrect, _ in zip(*combo, strict=True):
                sprites.draw_one(rect, uvrect, (1.0, 0.6, 0.9, 0.9))
        gl.endFrame()
    return gl.recorded_frames()
