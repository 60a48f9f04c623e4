"""Render targets: the color and depth buffers draws write, and their tile grid.

Colors are stored RGBA8 (H, W, 4) uint8 and depth as unsigned integers of ``depth_bits``
(H, W) uint32, row 0 being window y = 0 (the bottom, as in GL), on the active array backend
(``image()`` brings the color buffer to the host). A framebuffer object's
target may write its color into a texture (``texture``) and its depth into a depth texture
(``depth_texture``) at the end of each pass. The tile grid is what the
tile-based GPU walks: ``tile_of(x, y)`` numbers tiles in row-major order from the bottom
left; ``traversal`` gives the order the GPU visits them (scanline or Z order).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from tilesim.backend import array_module, to_host
from tilesim.backend import xp as active_xp
from tilesim.errors import InputError
from tilesim.jit import jit, usable
from tilesim.render.pipeline.options import TRAVERSALS


@dataclass
class RenderTarget:
    """One color buffer with an optional depth buffer, as a framebuffer presents them."""

    width: int
    height: int
    depth_bits: int = 24
    has_depth: bool = True
    name: str = "default"
    tile_size: int = 16
    # For a texture attachment: (texture id, image target, level) to write back to.
    texture: tuple[int, str, int] | None = None
    has_alpha: bool = True
    # A depth texture attachment (GL_OES_depth_texture) to write the depth buffer back to.
    depth_texture: tuple[int, str, int] | None = None
    # False for a framebuffer object without a color attachment (a depth-only pass): the
    # color buffer is kept but written nowhere.
    has_color: bool = True
    color: np.ndarray = field(init=False)
    depth: np.ndarray | None = field(init=False)
    dirty: bool = field(init=False, default=False)
    # What the renderer identifies the attachments by, and the texture versions the buffers
    # hold ("color" / "depth" -> Texture.version when last loaded from or stored to it).
    key: tuple | None = field(init=False, default=None)
    synced: dict[str, int] = field(init=False, default_factory=dict)
    _pixel_tiles: np.ndarray | None = field(init=False, default=None, repr=False)

    def __post_init__(self):
        if self.width <= 0 or self.height <= 0:
            raise InputError(f"render target {self.name} has an empty size "
                             f"{self.width}x{self.height}")
        xp = active_xp()
        self.color = xp.zeros((self.height, self.width, 4), dtype=np.uint8)
        self.depth = (xp.full((self.height, self.width), self.depth_max, dtype=np.uint32)
                      if self.has_depth else None)

    @property
    def depth_max(self) -> int:
        return (1 << self.depth_bits) - 1

    @property
    def tiles_x(self) -> int:
        return -(-self.width // self.tile_size)

    @property
    def tiles_y(self) -> int:
        return -(-self.height // self.tile_size)

    @property
    def tile_count(self) -> int:
        return self.tiles_x * self.tiles_y

    def tile_of(self, x, y):
        """Tile number of pixels (arrays of x, y): row-major from the bottom-left tile."""
        return (y // self.tile_size) * self.tiles_x + (x // self.tile_size)

    def tile_pixels(self) -> np.ndarray:
        """(tile_count,) pixels inside each tile (edge tiles may be partial)."""
        t = self.tile_size
        widths = np.minimum(t, self.width - np.arange(self.tiles_x) * t)
        heights = np.minimum(t, self.height - np.arange(self.tiles_y) * t)
        return (heights[:, None] * widths[None, :]).ravel()

    def pixel_tiles(self) -> np.ndarray:
        """(H, W) tile number of every pixel (row 0 = window y 0), beside the buffers."""
        if self._pixel_tiles is None:
            xp = array_module(self.color)
            ys, xs = xp.mgrid[0:self.height, 0:self.width]
            self._pixel_tiles = self.tile_of(xs, ys)
        return self._pixel_tiles

    def rect_tile_pixels(self, x0: int, y0: int, x1: int, y1: int) -> np.ndarray:
        """(tile_count,) int64 pixels of the rectangle [x0, x1) x [y0, y1) in every tile."""
        t = self.tile_size
        edges_x = np.arange(self.tiles_x) * t
        edges_y = np.arange(self.tiles_y) * t
        wide = np.clip(np.minimum(x1, edges_x + t) - np.maximum(x0, edges_x), 0, None)
        high = np.clip(np.minimum(y1, edges_y + t) - np.maximum(y0, edges_y), 0, None)
        return (high[:, None] * wide[None, :]).ravel().astype(np.int64)

    def count_per_tile(self, mask: np.ndarray) -> np.ndarray:
        """(tile_count,) int64 number of true pixels of an (H, W) or flat bool ``mask`` in
        every tile."""
        xp = array_module(mask)
        t, ty, tx = self.tile_size, self.tiles_y, self.tiles_x
        rows = mask.reshape(self.height, self.width)
        if usable(rows) and rows.dtype == np.bool_:
            counts = np.zeros(tx * ty, dtype=np.int64)
            _count_per_tile(rows, t, tx, counts)
            return counts
        if self.width % t:
            rows = xp.concatenate(
                [rows, xp.zeros((self.height, tx * t - self.width), dtype=rows.dtype)], axis=1)
        # Pixels per (row, tile column), then rows summed per tile row.
        per_row = rows.reshape(self.height, tx, t).sum(axis=2, dtype=np.int64)
        if self.height % t:
            per_row = xp.concatenate(
                [per_row, xp.zeros((ty * t - self.height, tx), dtype=np.int64)])
        return per_row.reshape(ty, t, tx).sum(axis=1).ravel()

    def tiles_equal(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """(tile_count,) bool: whether two (H, W, channels) images agree on every pixel of
        each tile (RGBA8 pixels compared as one 32-bit word each, then counted per tile: a
        seventh of comparing tile blocks cut from both)."""
        xp = array_module(a)
        if a.dtype == np.uint8 and a.shape[-1] == 4:
            differ = (xp.ascontiguousarray(a).view(xp.uint32)
                      != xp.ascontiguousarray(b).view(xp.uint32))
        else:
            differ = (a != b).reshape(self.height, self.width, -1).any(axis=-1)
        return self.count_per_tile(differ) == 0

    def restore_tiles(self, image: np.ndarray, tiles: np.ndarray) -> None:
        """Put back the colors of ``image`` (an (H, W, channels) copy of :attr:`color`) in the
        pixels of the ``tiles`` ((tile_count,) bool). RGBA8 pixels are copied as one 32-bit
        word each: a twentieth of a boolean-mask assignment of the channels."""
        xp = array_module(self.color)
        pixels = xp.asarray(tiles)[self.pixel_tiles()]
        color = self.color
        if (color.dtype == np.uint8 and color.shape[-1] == 4 and image.dtype == np.uint8
                and image.shape == color.shape and color.flags.c_contiguous
                and image.flags.c_contiguous):
            xp.copyto(color.view(xp.uint32)[..., 0], image.view(xp.uint32)[..., 0],
                      where=pixels)
        else:
            color[pixels] = image[pixels]

    def tile_blocks(self, array: np.ndarray) -> np.ndarray:
        """A per-pixel (H, W, ...) array cut into (tiles, t, t, ...) tile blocks in tile-number
        order; partial edge tiles are padded with zeros."""
        t, ty, tx = self.tile_size, self.tiles_y, self.tiles_x
        rest = array.shape[2:]
        padded = array_module(array).zeros((ty * t, tx * t, *rest), dtype=array.dtype)
        padded[:self.height, :self.width] = array
        blocks = padded.reshape(ty, t, tx, t, *rest).swapaxes(1, 2)
        return blocks.reshape(ty * tx, t, t, *rest)

    def traversal(self, order: str = "scanline") -> np.ndarray:
        """Tile numbers in the order the GPU renders them."""
        if order not in TRAVERSALS:
            raise InputError(f"unknown tile traversal {order!r}: expected one of "
                             f"{', '.join(TRAVERSALS)}")
        ty, tx = np.meshgrid(np.arange(self.tiles_y), np.arange(self.tiles_x), indexing="ij")
        tx, ty = tx.ravel(), ty.ravel()
        if order == "scanline":
            # Top row first, as a display scans out (window y grows upward).
            key = (self.tiles_y - 1 - ty) * self.tiles_x + tx
        else:
            key = _morton(tx, self.tiles_y - 1 - ty)
        return (ty * self.tiles_x + tx)[np.argsort(key, kind="stable")]

    def clear(self, color=None, depth=None, color_mask=(True,) * 4, scissor=None) -> int:
        """Clear within ``scissor`` (x, y, w, h) or everywhere; returns the pixels cleared."""
        x0, y0, x1, y1 = 0, 0, self.width, self.height
        if scissor is not None:
            sx, sy, sw, sh = scissor
            x0, y0 = max(x0, sx), max(y0, sy)
            x1, y1 = min(x1, sx + sw), min(y1, sy + sh)
        if x1 <= x0 or y1 <= y0:
            return 0
        if color is not None and any(color_mask):
            value = np.round(np.asarray(color, dtype=np.float64) * 255).astype(np.uint8)
            for c in range(4):
                if color_mask[c]:
                    self.color[y0:y1, x0:x1, c] = int(value[c])
            self.dirty = True
        if depth is not None and self.depth is not None:
            self.depth[y0:y1, x0:x1] = int(round(depth * self.depth_max))
        return (x1 - x0) * (y1 - y0)

    def image(self) -> np.ndarray:
        """The color buffer as an image: (H, W, 4) uint8, row 0 at the top."""
        # A copy (to_host may return a view on NumPy): the buffer keeps changing.
        return to_host(self.color[::-1]).copy()


def _morton(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    key = np.zeros_like(x, dtype=np.int64)
    for bit in range(16):
        key |= ((x >> bit) & 1).astype(np.int64) << (2 * bit)
        key |= ((y >> bit) & 1).astype(np.int64) << (2 * bit + 1)
    return key


# == the compiled path (Numba, tilesim.jit): the same counts as the code above ============

@jit
def _count_per_tile(rows, tile_size, tiles_x, counts):  # pragma: no cover - compiled
    # a row's pixels tile column by tile column, no division a pixel (NumPy's sums over
    # (row, tile column) blocks made an int64 copy of the mask first)
    width = rows.shape[1]
    for y in range(rows.shape[0]):
        base = (y // tile_size) * tiles_x
        for column in range(tiles_x):
            x0 = column * tile_size
            n = 0
            for x in range(x0, min(x0 + tile_size, width)):
                n += rows[y, x]
            counts[base + column] += n
