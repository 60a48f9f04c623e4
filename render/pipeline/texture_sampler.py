"""The texture sampler of the fragment (and vertex) processors: GLES2 sampling, counters and a
texture-cache model, vectorized over lanes.

``TextureSampler(units)`` implements :class:`tilesim.shaders.sampling.Sampler` for the TGSI
interpreter: ``units`` maps each SAMP index of the program to the
:class:`~tilesim.render.gl.textures.Texture`
bound for it (None: nothing bound). Sampling follows OpenGL ES 2.0 §3.7.7-3.7.9 as Mesa 22.3
llvmpipe (the reference renderer of this project) implements it, which the spec allows:

- Wrap modes REPEAT, CLAMP_TO_EDGE, MIRRORED_REPEAT; NEAREST picks floor(s * W), LINEAR
  blends the 2x2 texels around u = s * W - 0.5 (texel centers); the mipmap filters
  NEAREST_MIPMAP_NEAREST, LINEAR_MIPMAP_NEAREST, NEAREST_MIPMAP_LINEAR, LINEAR_MIPMAP_LINEAR.
- Level of detail (gallivm lp_bld_sample.c, default GALLIVM_PERF): rho^2 = max((W dsdx)^2 +
  (H dtdx)^2, (W dsdy)^2 + (H dtdy)^2) in level-0 texels, lambda = 0.5 * log2(rho^2) (+ bias).
  Implicit LOD is one value per 2x2 quad, from the differences of the top-left lane to its
  right and lower neighbours (lanes 4q..4q+3 = top-left, top-right, bottom-left,
  bottom-right). With a bias (TXB) the quad's rho gets each lane's own bias; explicit LOD
  (TXL) and gradients (TXD) are per lane. Cube maps with a mipmapping filter take rho per
  lane from the analytic derivative of the face coordinates (fine quad differences of s, t, r).
  log2 is llvmpipe's piecewise-linear ``fast_log2`` (exact at powers of two); a nearest level
  is round(lambda) (exactly, via the exponent of rho^2, without bias; nearest-even with one).
- Magnification when lambda <= c. ``SamplerOptions.mag_switchover = "spec"`` (default) uses
  ES 2.0's rule, c = 0.5 when the mag filter is LINEAR and the min filter
  NEAREST_MIPMAP_NEAREST or NEAREST_MIPMAP_LINEAR, else 0; "zero" is llvmpipe's c = 0.
- Cube maps: face by major axis (ties: z over y over x), s, t per ES 2.0 table 3.21; like
  llvmpipe, NEAREST clamps to the edge of the face whatever the wrap modes. LINEAR is
  seamless (``SamplerOptions.cube_seamless``, default): Mesa's GLES2 contexts are ES 3.x
  contexts, whose cube maps are always filtered across faces (GL_TEXTURE_CUBE_MAP_SEAMLESS).
  As llvmpipe does it (lp_bld_sample_soa.c, lp_build_sample_image_linear, in float): the
  taps x0 = floor(u), x0 + 1 (u = s * W - 0.5, likewise y) that fall off the face read the
  edge texels of the adjacent face (lp_build_cube_new_coords; a tap off both axes reads the
  x neighbour at the clamped row), and where the footprint covers a corner of the cube
  (x and y taps both off), the corner tap's weight goes in thirds to the three real texels:
  the missing texel is faked as the average of the other three. ``cube_seamless=False``
  (ES 2.0, which requires no seamless filtering; Mesa with the cap disabled) clamps LINEAR
  to the edge of the face too.
- 8-bit textures: where llvmpipe filters in 8.8 fixed point (lp_bld_sample_aos.c: wrap REPEAT
  or CLAMP_TO_EDGE, not both a per-lane LOD and different min/mag filters, and no seamless
  cube map with a LINEAR filter), so do we:
  coordinates rounded to 1/256 texel, 8-bit weights, each lerp
  ``a + ((w (b - a) + 128) >> 8)``, results n/255. Elsewhere filtering is float32, on the
  texel values c / (2^b - 1).
- Depth textures (GL_OES_depth_texture) sample as (d, d, d, 1), as Mesa's GLES2 contexts
  return them (no comparison mode in ES 2.0), filtered in float.
- Incomplete textures (see :meth:`Texture.incomplete_reason`) and unbound units sample as
  (0, 0, 0, 1).
- 3D textures (OES_texture_3D): the LOD of three dimensions, NEAREST and the 2x2x2 LINEAR
  footprint with each wrap on its own coordinate, in NumPy only
  (:meth:`_Sampling._sample_level_3d`).
- EXT_texture_filter_anisotropic: a texture whose maximum anisotropy exceeds 1 is
  filtered as llvmpipe's lp_build_sample_aniso does whatever its filters, an elliptical
  weighted average of NEAREST taps at the level of the footprint's minor axis, in (s, t)
  (a cube map's face coordinates; a 3D texture's r NEAREST per tap)
  (:meth:`_Sampling._anisotropic`); each tap counts as a nearest fetch.

``SamplerOptions.llvmpipe()`` (c = 0 too) agrees with llvmpipe bit for bit on every case of
tests/render/test_texture_sampler.py; ``SamplerOptions.exact()`` replaces the llvmpipe
approximations by the spec's formulas (exact log2, level ceil(lambda + 0.5) - 1, float
filtering, the texture's wrap modes on cube faces, no seamless cube filtering). Two llvmpipe
details are not reproduced, both decided per SIMD vector of 8 lanes, which the sampler cannot
see: where lanes of one vector mix minification and magnification with different filters and
llvmpipe filters in float, it takes the nearest texel from its bilinear taps (weight > 0.5),
which differs from floor(s * W) only when s * W is an exact integer (on a seamless cube map,
s = 0 exactly, as on the diagonals of a symmetric view, then gives the adjacent face's edge
texel); and where one lane of a vector has a cube corner in its footprint, llvmpipe filters
every lane of the vector as the weighted sum w00 c00 + w01 c01 + w10 c10 + w11 c11 (we do
only for corner lanes; the others take the two lerps), which differs in the last bits of
float32 only.

On NumPy arrays with Numba, the compiled kernels at the end of this module
(``implicit_lod_compiled`` and ``sample_lanes_compiled``, :mod:`tilesim.jit`) do the same
arithmetic in the same order, one pass per lane from the coordinates to the color, counters
and cache accesses, except for seamless cube-map LINEAR taps and recorded accesses;
tests/render/test_compiled_path.py checks them bit for bit against the NumPy code, which CuPy arrays
and machines without Numba run.

Using it from the renderer: keep one sampler per frame (the caches persist in it), call
:meth:`TextureSampler.begin` with the lanes' tile indices before each interpreter run, point
``units`` at the textures bound for the draw's SAMP registers, and read :attr:`stats`
(``stats.per_tile(lane_tile, tiles)``) after the run.

Counters (DESIGN §5), when ``counters`` is on, accumulate per lane in :attr:`TextureSampler.stats`
(a :class:`TextureStats`): samples, texels fetched and the filter kind of each sample
(nearest: 1 texel; nearest from two levels, NEAREST_MIPMAP_LINEAR: 2; bilinear: 4;
trilinear: 8; a two-level filter whose level weight is 0, magnification, and lambda beyond the
last level count as single-level; a seamless cube-map bilinear sample fetches its 4 taps
wherever they are, the corner tap of a cube corner included, as llvmpipe does), and
texture-cache accesses and misses (each tap in the face image it reads). See
:class:`TextureCacheConfig` for the cache model and what is counted.
"""

from __future__ import annotations

import contextlib
import functools
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from tilesim.backend import array_module, to_host
from tilesim.errors import InputError
from tilesim.jit import (
    in_threads,
    jit,
    nondecreasing,
    power_of_two_shift,
    spans,
    spans_of_runs,
    usable,
    weighted_spans,
)
from tilesim.render.gl.textures import MAX_LEVELS, TEXTURE_3D, TEXTURE_CUBE_MAP, Texture
from tilesim.render.pipeline.gpu_config import (
    GPU_CONFIG,
    counted_entry,
    gpu_config_values,
    overrides_key,
)
from tilesim.render.pipeline.set_associative import (
    SetAssociativeLRU,
    lru_access_first,
)
from tilesim.shaders.sampling import BIAS, EXPLICIT, GRADIENT, IMPLICIT, LEVEL_ZERO, TextureRequest

__all__ = ["KINDS", "TEXEL_COUNTER_KINDS", "TEXELS_PER_KIND", "SamplerOptions",
           "TextureCacheConfig", "TextureSampler", "TextureStats", "stats_texels_consistent"]

F32 = np.float32
_INV255 = F32(1.0 / 255.0)
_COORD_LIMIT = F32(1 << 30)     # clamp before float -> int conversions
_COORD_RANGE = F32(1 << 24)     # texture coordinates beyond this sample like it
_CUBE_TARGETS = ("CUBE", "SHADOWCUBE", "CUBE_ARRAY", "SHADOWCUBE_ARRAY")
# Lanes sampled at a time: a request over more lanes is sampled in consecutive chunks (whole
# quads; the cache sees the same accesses in the same lane order), which bounds the memory of
# the filter's temporaries (a few hundred bytes per lane) for full-screen draws.
SAMPLE_CHUNK_LANES = 1 << 18
KINDS = ("nearest", "nearest_mip_linear", "bilinear", "trilinear", "incomplete")
# llvmpipe's anisotropic filter (EXT_texture_filter_anisotropic): the Gaussian weights
# exp(-2 r^2) of its 1024-entry table (r^2 = i / 1023, the ellipse's edge at 1), as the table
# in lp_bld_sample.c prints them (6 decimals); the half box of a footprint is capped here at
# ANISO_MAX_HALF_BOX texels (llvmpipe loops over any box; footprints wider than 256 texels
# after the minor-axis LOD come only from derivative ratios beyond 256).
_ANISO_WEIGHTS = np.round(np.exp(-2.0 * np.arange(1024) / 1023.0), 6).astype(np.float32)
ANISO_MAX_HALF_BOX = 256
# Taps of anisotropic footprints handled at a time (memory of the per-tap temporaries).
ANISO_CHUNK_TAPS = 1 << 21
TEXELS_PER_KIND = {"nearest": 1, "nearest_mip_linear": 2, "bilinear": 4, "trilinear": 8,
                   "incomplete": 0}
# The texel counters by image filter: the sample kinds each adds, TEXELS_PER_KIND texels a
# sample (a nearest filter between two mip levels reads one texel of each).
TEXEL_COUNTER_KINDS = {"texels_nearest": ("nearest", "nearest_mip_linear"),
                       "texels_bilinear": ("bilinear",), "texels_trilinear": ("trilinear",)}


@dataclass(frozen=True)
class SamplerOptions:
    """How closely to follow llvmpipe where the spec leaves freedom (module docstring)."""

    mag_switchover: str = "spec"      # "spec": ES 2.0's c (0.5 or 0); "zero": llvmpipe's c = 0
    fast_log2: bool = True            # llvmpipe's log2 and level rounding; False: exact, spec
    unorm8_fixed_point: bool = True   # 8.8 fixed-point filtering where llvmpipe uses it
    cube_clamp_to_edge: bool = True   # llvmpipe; False: the texture's wrap modes on cube faces
    cube_seamless: bool = True        # Mesa's GLES2 (ES 3.x) contexts; False: ES 2.0, per face
    # EXT_texture_filter_anisotropic: llvmpipe's elliptical footprint (lp_build_sample_aniso)
    # for textures whose TEXTURE_MAX_ANISOTROPY_EXT exceeds 1; False: isotropic
    anisotropic: bool = True

    def __post_init__(self) -> None:
        if self.mag_switchover not in ("spec", "zero"):
            raise ValueError(f"mag_switchover must be 'spec' or 'zero', got "
                             f"{self.mag_switchover!r}")

    @classmethod
    def llvmpipe(cls, *, cube_seamless: bool = True) -> SamplerOptions:
        """Everything as Mesa 22.3 llvmpipe does it (c = 0 too). ``cube_seamless=False``:
        as llvmpipe with GL_TEXTURE_CUBE_MAP_SEAMLESS disabled (a desktop GL context)."""
        return cls(mag_switchover="zero", cube_seamless=cube_seamless)

    @classmethod
    def exact(cls) -> SamplerOptions:
        """The ES 2.0 formulas without llvmpipe's approximations (cube maps not seamless)."""
        return cls(fast_log2=False, unorm8_fixed_point=False, cube_clamp_to_edge=False,
                   cube_seamless=False)


@dataclass(frozen=True)
class TextureCacheConfig:
    """Texture caches (Frame Coherence Table 3.1: 4 caches of 8 KB, 2-way set associative, 64-byte
    lines; :meth:`from_gpu_config` reads them from ``[caches.texture]`` of the GPU
    configuration file, the default of every sampler).

    The model, exactly: each texture occupies its own address range; its images (face-major,
    then level) each start on a line boundary and store texels in ``block`` x ``block`` blocks
    (row-major blocks, row-major texels inside a block), ``bits_per_texel`` of the internal
    format each (a compressed format's rate: ETC1 4 bits, so a 4x4 block is 8 bytes), as GPUs
    tile textures; a tap of a seamless cube-map sample that falls off
    its face is looked up in the adjacent face's image. Lane i uses cache
    ``lane_tile[i] % caches`` (tiles go round-robin to the fragment processors, each with its
    own cache) or, without a tile map, cache ``(i // 4) % caches`` (quads round-robin). A
    sample's texels are looked up in lane
    order, level 0 taps then level 1 taps (top-left, top-right, bottom-left, bottom-right);
    the texels of one lane and level that fall in one 64-byte line are one access. Each set is
    an exact LRU over the accesses in that order, starting from the state the previous
    sampling instructions left (:meth:`TextureSampler.reset_cache` empties every cache).
    accesses and misses are counted per lane.

    Tile by tile, as the renderer runs it (``TextureSampler(tile_caches=...)``, the pass's
    ``tile_caches.TileCaches``): lane i uses the cache of its tile, ``lane_tile[i]``, one per
    tile, which the pass's later draws find as the earlier ones left it; at the pass's end
    each tile is started from what the tile before it on its processor left, so the counts
    are those of processors taking tile after tile (Frame Coherence §2.3), whatever order
    the renderer shaded the tiles in (render/pipeline/tile_caches.py).

    Several sampling instructions: a fragment processor holds ``warps_in_flight`` quads at
    once and runs them in lock step, so its cache sees every held quad's first texture
    instruction, then every held quad's second, and so on (Shader Core §3.2: warps issue in
    turn; Table 4.1: 32 warps). Within :meth:`TextureSampler.warps_in_flight` the accesses are
    replayed so: each cache's (or tile's) quads in batch order, ``warps_in_flight`` at a time;
    within such a window, the lanes' k-th texel-reading instructions in lane order for k = 1,
    2, ... (a lane's own k-th, whatever its control flow took); windows one after the other.
    A program that reads texels once per lane is in lane order either way.
    """

    caches: int = 4
    size_bytes: int = 8192
    ways: int = 2
    line_bytes: int = 64
    block: int = 4
    warps_in_flight: int = 32

    def __post_init__(self) -> None:
        for name in ("caches", "size_bytes", "ways", "line_bytes", "block", "warps_in_flight"):
            if getattr(self, name) < 1:
                raise ValueError(f"TextureCacheConfig.{name} must be positive")
        if self.size_bytes % (self.ways * self.line_bytes):
            raise ValueError("TextureCacheConfig: size must be a multiple of ways x line size")
        if self.line_bytes & (self.line_bytes - 1) or self.block & (self.block - 1):
            raise ValueError("TextureCacheConfig: line size and block must be powers of two")

    @property
    def sets(self) -> int:
        return self.size_bytes // (self.ways * self.line_bytes)

    @classmethod
    def from_gpu_config(cls, path: str | Path | None = None) -> TextureCacheConfig:
        """``[caches.texture]`` (count, size, ways, line_size) and
        ``processors.fragment.warps_in_flight`` of a GPU configuration file (default: the
        shipped ``baseline_gpu.toml``); ``block`` is the texture layout's."""
        return _gpu_texture_cache(str(path or GPU_CONFIG), overrides_key())


@functools.lru_cache(maxsize=8)
def _gpu_texture_cache(path: str, _overrides: tuple = ()) -> TextureCacheConfig:
    values = gpu_config_values(path, "caches.texture", ("count", "size", "ways", "line_size"))
    warps = counted_entry(path, "processors.fragment.warps_in_flight")
    try:
        return TextureCacheConfig(caches=int(values["count"]), size_bytes=int(values["size"]),
                                  ways=int(values["ways"]), line_bytes=int(values["line_size"]),
                                  warps_in_flight=warps)
    except ValueError as error:
        raise InputError(str(error), source=path) from None


@dataclass
class TextureStats:
    """Per-lane texture counters of one batch of lanes, each (N,) int64 on the lanes' backend.

    samples: sampling instructions executed (active lanes; TXQ excluded); texels: texels
    fetched; nearest / nearest_mip_linear / bilinear / trilinear / incomplete: samples by
    filter kind (incomplete: texture incomplete or unbound, 0 texels); cache_accesses /
    cache_misses: see :class:`TextureCacheConfig`.
    """

    samples: Any
    texels: Any
    nearest: Any
    nearest_mip_linear: Any
    bilinear: Any
    trilinear: Any
    incomplete: Any
    cache_accesses: Any
    cache_misses: Any

    FIELDS = ("samples", "texels") + KINDS + ("cache_accesses", "cache_misses")

    @classmethod
    def zeros(cls, n: int, xp=np) -> TextureStats:
        return cls(**{name: xp.zeros(n, dtype=np.int64) for name in cls.FIELDS})

    @property
    def lanes(self) -> int:
        return int(self.samples.shape[0])

    # Texels fetched by image filter (TEXEL_COUNTER_KINDS), under the counters' names.
    @property
    def texels_fetched(self):
        return self.texels

    def _texels_by(self, counter: str):
        kinds = TEXEL_COUNTER_KINDS[counter]
        total = getattr(self, kinds[0]) * TEXELS_PER_KIND[kinds[0]]
        for kind in kinds[1:]:
            total = total + getattr(self, kind) * TEXELS_PER_KIND[kind]
        return total

    @property
    def texels_nearest(self):
        """Texels fetched by samples that used the nearest image filter."""
        return self._texels_by("texels_nearest")

    @property
    def texels_bilinear(self):
        return self._texels_by("texels_bilinear")

    @property
    def texels_trilinear(self):
        return self._texels_by("texels_trilinear")

    @property
    def tex_cache_accesses(self):
        return self.cache_accesses

    @property
    def tex_cache_misses(self):
        return self.cache_misses

    def totals(self) -> dict[str, int]:
        """Sums over all lanes."""
        return {name: int(getattr(self, name).sum()) for name in self.FIELDS}

    def per_tile(self, lane_tile, tiles: int | None = None) -> dict[str, np.ndarray]:
        """Sums per tile: {field: (tiles,) int64 host array}; ``lane_tile`` (N,) tile ids."""
        lane_tile = to_host(lane_tile).astype(np.int64)
        tiles = int(lane_tile.max()) + 1 if tiles is None and lane_tile.size else (tiles or 0)
        return {name: np.bincount(lane_tile, weights=to_host(getattr(self, name)),
                                  minlength=tiles).astype(np.int64)
                for name in self.FIELDS}


# ------------------------------------------------------------------------------------------
# Packed texture images


class _Packed:
    """Every image of one texture version in flat arrays on one backend.

    texels (T, 4) float32 and (lazily) texels8 (T, 4) int32 hold level ``l`` of face ``f``
    at rows offsets[f * L + l] + y * width + x, so one gather serves lanes of mixed levels
    and faces. ``levels`` (L) is the length of the mip chain every face has with consistent
    sizes (the levels a complete texture samples).
    """

    def __init__(self, texture: Texture, xp, block: int, line_bytes: int):
        self.xp = xp
        self.version = texture.version
        w0, h0 = texture.base_size
        d0 = max(texture.base_depth, 1)
        levels = 0
        while levels < MAX_LEVELS:
            size = (max(1, w0 >> levels), max(1, h0 >> levels), max(1, d0 >> levels))
            images = [face.get(levels) for face in texture.faces]
            if any(im is None or (im.width, im.height, im.depth) != size for im in images):
                break
            levels += 1
            if size == (1, 1, 1):
                break
        self.levels = max(levels, 1)
        self.faces = len(texture.faces)
        # bits of texture memory per texel: texel offsets times bits, >> 3 more for bytes
        self.bits = texture.image(0, 0).bits_per_texel
        self.pot = (w0 & (w0 - 1)) == 0 and (h0 & (h0 - 1)) == 0
        # OES_texture_3D: llvmpipe decides power-of-two wrapping per dimension
        # (pot_width / pot_height / pot_depth of the texture's static state).
        self.pot_dims = tuple((v & (v - 1)) == 0 for v in (w0, h0, d0))
        self.base_width, self.base_height, self.base_depth = w0, h0, d0
        count = self.faces * self.levels
        offsets = np.zeros(count, np.int64)
        widths = np.ones(count, np.int32)
        heights = np.ones(count, np.int32)
        depths = np.ones(count, np.int32)
        bases = np.zeros(count, np.int64)
        blocks_w = np.ones(count, np.int32)
        chunks, total, address = [], 0, 0
        self._images = []
        for f in range(self.faces):
            for lev in range(self.levels):
                image = texture.image(f, lev)
                k = f * self.levels + lev
                if image is None:  # incomplete texture: keep a 1x1 placeholder
                    chunks.append(np.array([[0, 0, 0, 1]], np.float32))
                    self._images.append(None)
                else:
                    chunks.append(image.texels.reshape(-1, 4))
                    self._images.append(image)
                    widths[k], heights[k] = image.width, image.height
                    depths[k] = image.depth
                offsets[k] = total
                total += chunks[-1].shape[0]
                bw = -(-int(widths[k]) // block)
                # a 3D level's slices one after another: a height x depth tall image
                bh = -(-int(heights[k] * depths[k]) // block)
                blocks_w[k] = bw
                bases[k] = address
                size = -(-bw * bh * block * block * self.bits // 8)
                address += -(-size // line_bytes) * line_bytes
        self.texels = xp.asarray(np.concatenate(chunks).astype(np.float32))
        self._texels8 = None
        self._texels_spread = None
        self.offsets = xp.asarray(offsets)
        self.widths = xp.asarray(widths)
        self.heights = xp.asarray(heights)
        self.widths_f = xp.asarray(widths.astype(np.float32))
        self.heights_f = xp.asarray(heights.astype(np.float32))
        self.depths = xp.asarray(depths)
        self.depths_f = xp.asarray(depths.astype(np.float32))
        # Byte addresses: a 2^40-byte range per texture.
        # Cache lines: a 2^40-byte address range per texture, images on line boundaries.
        self.line_bases = xp.asarray((bases + (np.int64(texture.uid) << 40)) // line_bytes)
        self.blocks_w = xp.asarray(blocks_w)

    @property
    def texels8(self):
        """(T, 4) int32: the texels as 8-bit unorm values (llvmpipe's AoS path reads these)."""
        if self._texels8 is None:
            chunks = [np.array([[0, 0, 0, 255]], np.int32) if im is None
                      else im.rgba8().reshape(-1, 4).astype(np.int32) for im in self._images]
            self._texels8 = self.xp.asarray(np.concatenate(chunks))
        return self._texels8

    @property
    def texels_spread(self):
        """(T,) int64: the 8-bit texels with r, g, b, a in 16-bit fields (bits 0, 16, 32, 48),
        as the compiled sampler's fixed-point filter lerps them (host arrays only)."""
        if self._texels_spread is None:
            channels = np.asarray(self.texels8).astype(np.int64)
            self._texels_spread = (channels[:, 0] | (channels[:, 1] << 16)
                                   | (channels[:, 2] << 32) | (channels[:, 3] << 48))
        return self._texels_spread


# ------------------------------------------------------------------------------------------
# Small helpers (all backend-agnostic: they use the arrays' own methods / module)


def _ifloor(xp, v):
    """floor to int32, saturating like llvmpipe's conversions stay in range."""
    return xp.floor(xp.clip(v, -_COORD_LIMIT, _COORD_LIMIT)).astype(np.int32)


def _iceil(xp, v):
    """ceil to int32, saturating as :func:`_ifloor`."""
    return xp.ceil(xp.clip(v, -_COORD_LIMIT, _COORD_LIMIT)).astype(np.int32)


def _itrunc(xp, v):
    return xp.trunc(xp.clip(v, -_COORD_LIMIT, _COORD_LIMIT)).astype(np.int32)


def _iround(xp, v):
    return xp.rint(xp.clip(v, -_COORD_LIMIT, _COORD_LIMIT)).astype(np.int32)


def _exponent(xp, x):
    """floor(log2(x)) from the float32 exponent field (as lp_build_extract_exponent)."""
    bits = x.astype(np.float32).view(np.int32)
    return ((bits >> 23) & 0xFF) - 127


def _fast_log2(xp, x):
    """llvmpipe's lp_build_fast_log2: (floor(log2 x) - 1) + mantissa in [1, 2)."""
    bits = x.astype(np.float32).view(np.int32)
    mantissa = ((bits & 0x007FFFFF) | 0x3F800000).view(np.float32)
    return (((bits >> 23) & 0xFF) - 128).astype(np.float32) + mantissa


def _mirror(xp, s):
    """lp_build_coord_mirror(posOnly): |2 (s/2 - round(s/2))|, in [0, 1]."""
    half = s * F32(0.5)
    frac = half - xp.rint(half)
    return xp.abs(frac + frac)


def _quad_broadcast(xp, v):
    """(n/4,) per-quad values -> (n,)."""
    return xp.repeat(v, 4)


def _lerp_fixed(a, b, w):
    """llvmpipe's 8-bit lerp ``a + ((w (b - a) + 128) >> 8)`` (see texture.lerp_u8), computed
    in place in ``b`` (a fresh int32 array)."""
    b -= a
    b *= w
    b += 128
    b >>= 8
    b += a
    return b


def _lerp_float(a, b, w):
    """``a + w (b - a)`` in float32, in place in ``b`` (a fresh array)."""
    b -= a
    b *= w
    b += a
    return b


def _cube_new_coords(xp, face, x0, x1, y0, y1, last):
    """lp_build_cube_new_coords: faces and texel coordinates where taps fall off a face.

    ``face`` (m,) 0..5 = +X, -X, +Y, -Y, +Z, -Z; x0, x1 = x0 + 1; y0, y1 (clamped to the
    face); ``last`` = size - 1. Returns (faces[4], xs[4][2], ys[4][2]) for falling off at
    x < 0, x > last, y < 0, y > last (in this order), [k][0] for the lower coordinate's tap
    (x0 / y0), [k][1] for the higher one's. Next faces: x-: 451110, x+: 540001, y-: 225422,
    y+: 334533.
    """
    where = xp.where
    f2345 = face > 1
    fand1 = face & 1
    odd = fand1 == 1
    f23 = (face & ~4) > 1
    f2 = face == 2
    nf0 = where(f2345, where(face == 5, 0, 1), fand1 + 4)
    nf3 = where(f23, face + 2, 3)
    faces = [nf0, nf0 ^ 1, nf3 ^ 1, nf3]
    xs = [[None, None], [None, None], [None, None], [None, None]]
    ys = [[None, None], [None, None], [None, None], [None, None]]
    for j, (x, y) in enumerate(((x0, y0), (x1, y1))):
        # new x: x-: max max t max-t max max; x+: 0 0 max-t t 0 0;
        #        y-: max 0 max-s s s max-s;   y+: max 0 s max-s s max-s
        xs[1][j] = where(f23, where(f2, last - y, y), 0)
        xs[0][j] = last - xs[1][j]
        xs[3][j] = where(f2345, where(odd, last - x, x), where(odd, 0, last))
        xs[2][j] = where(f23, last - xs[3][j], xs[3][j])
        # new y: x-, x+: t t 0 max t t; y-: max-s s 0 max max 0; y+: s max-s 0 max 0 max
        ys[0][j] = ys[1][j] = where(f23, where(f2, 0, last), y)
        ys[3][j] = where(f2345, where(odd, last, 0), where(odd, last - x, x))
        ys[2][j] = where(f23, ys[3][j], last - ys[3][j])
    return faces, xs, ys


def _corner_filter(xp, c, ws, wt, off):
    """llvmpipe's accurate cube corners: w00 c00 + w01 c01 + w10 c10 + w11 c11 in float32,
    the corner tap's weight (the tap off both axes) moved in thirds to the other three.
    ``c``: the 4 taps' colors (m, 4); ``off``: fall-off masks x-, x+, y-, y+ (m,)."""
    one = F32(1)
    wx0, wy0 = one - ws, one - wt
    weights = [wx0 * wy0, ws * wy0, wx0 * wt, ws * wt]
    corners = [off[0] & off[2], off[1] & off[2], off[0] & off[3], off[1] & off[3]]
    c_weight = xp.zeros_like(ws)
    for w, k in zip(weights, corners, strict=True):
        c_weight = xp.where(k, w, c_weight)
    c_weight = c_weight * F32(1.0 / 3.0)
    weights = [xp.where(k, F32(0), w + c_weight) for w, k in zip(weights, corners, strict=True)]
    color = weights[0][:, None] * c[0]
    for w, ck in zip(weights[1:], c[1:], strict=True):
        color = w[:, None] * ck + color
    return color.astype(np.float32)


def _take(v, index):
    """``v[index]``, or ``v`` itself when ``index`` is None (every lane)."""
    return v if index is None else v[index]


def _sanitize(xp, v):
    """Coordinates as float32: NaN -> 0 (texel 0, where llvmpipe's out-of-range conversions
    end up), clamped to +-2^24. Beyond 2^24 every float32 is an even integer, which samples
    like 2^24 itself in every wrap mode, and the clamp keeps s * size finite."""
    v = v.astype(np.float32)
    return xp.clip(xp.where(xp.isnan(v), F32(0), v), -_COORD_RANGE, _COORD_RANGE)


@dataclass
class _Taps:
    """Texel footprint of one level for m lanes: texel columns and rows (k, m), k taps;
    ``images``: (k, m) image (face * levels + level) of each tap where the taps of a lane
    are in different faces (seamless cube maps), None: all in the lane's image."""

    xs: Any
    ys: Any
    images: Any = None


@dataclass
class _Lod:
    """Per-lane mip selection: minified?, level 0, level 1, weight of level 1 (n,)."""

    minified: Any
    level0: Any
    level1: Any = None
    weight: Any = None   # float32 fraction (None: single level)


# ------------------------------------------------------------------------------------------
# Accesses held for the warps-in-flight order


class _HeldAccesses:
    """The texture-cache accesses of a batch's lanes 0..total, held until the quads that made
    them have run, then replayed in the order the fragment processors' warps in flight issue
    them (:class:`TextureCacheConfig`, :meth:`TextureSampler.warps_in_flight`).

    Every quad belongs to a window: its cache's quads in batch order, ``warps_in_flight`` at
    a time (:attr:`window`: the window's rank among its cache's times caches plus the cache,
    so the windows of each cache are in order). Windows are replayed one after the other;
    within one, the accesses by (the lane's own count of texel-reading instructions before
    them, its "seq"; lane), each lane's taps in their order: a stable sort, or the compiled
    walk :func:`replay_held_compiled`. Held per instruction as (lanes, lines, seq):
    lane-ordered, one seq each (an instruction whose lanes had read different counts is held
    as one part per seq)."""

    def __init__(self, sampler: TextureSampler, total: int, xp):
        cfg = sampler.cache
        caches = sampler.cache_count
        self.sampler, self.total, self.xp = sampler, int(total), xp
        quads = -(-self.total // 4)
        lane_tile = sampler._lane_tile
        if lane_tile is not None and getattr(lane_tile, "ndim", 0) == 1 \
                and lane_tile.shape[0] == self.total:
            cache_of_quad = xp.asarray(lane_tile[::4]).astype(np.int64) % caches
        else:
            cache_of_quad = xp.arange(quads, dtype=np.int64) % caches
        # rank of every quad among its cache's quads, in batch order
        by_cache = xp.argsort(cache_of_quad, kind="stable")
        first = xp.searchsorted(xp.take(cache_of_quad, by_cache),
                                xp.arange(caches, dtype=np.int64))
        rank = xp.empty(quads, dtype=np.int64)
        rank[by_cache] = xp.arange(quads, dtype=np.int64) - xp.take(
            first, xp.take(cache_of_quad, by_cache))
        self.window = (rank // cfg.warps_in_flight) * caches + cache_of_quad
        windows = int(self.window.max()) + 1 if quads else 0
        # the last quad of every window: a window is replayed once its quads have all run
        # (one write an index: which of repeated ones wins is undefined on CuPy)
        self.window_end = xp.full(windows, -1, dtype=np.int64)
        if quads:
            by_window = xp.argsort(self.window, kind="stable")
            ordered = xp.take(self.window, by_window)
            last = xp.concatenate([ordered[1:] != ordered[:-1], xp.ones(1, dtype=bool)])
            self.window_end[ordered[last]] = by_window[last]
        self.replayed = xp.zeros(windows, dtype=bool)
        self.cache_of_quad = cache_of_quad
        self.seq = xp.zeros(self.total, dtype=np.int32)   # texel reads per lane so far
        self.held: list[tuple[Any, Any, int]] = []         # (lanes, lines, seq)
        self.misses = xp.zeros(self.total, dtype=np.int64)

    def record(self, lane, lines, first: int, active) -> None:
        """Hold one instruction's accesses: ``lane`` (M,) batch lanes, ``lines`` (M,) their
        lines, in the instruction's order (lane by lane, taps in order); ``active`` (n,) the
        lanes ``first..first + n`` that ran it. (One part an instruction and seq: the replay
        merges the parts of a seq by lane, a search among them for every lane.)"""
        if not lane.shape[0]:
            return
        xp = self.xp
        lane = lane.astype(np.int64, copy=False)
        lines = lines.astype(np.int64, copy=False)
        ran = self.seq[first:first + active.shape[0]][active]
        if int(ran.min()) == int(ran.max()):
            self.held.append((lane, lines, int(ran[0])))
            return
        seq = self.seq[lane]                                # divergent control flow
        for value in to_host(xp.unique(seq)).tolist():
            part = seq == value
            self.held.append((lane[part], lines[part], int(value)))

    def ran(self, active, base: int) -> None:
        """The ``active`` lanes (from ``base``) ran one more texel-reading instruction."""
        n = active.shape[0]
        self.seq[base:base + n] += active

    def replay(self, before_quad: int | None = None) -> None:
        """Replay (into :attr:`misses`) the held accesses of the windows whose quads all lie
        before ``before_quad`` (None: every window); keep the rest."""
        xp = self.xp
        replayed = self.replayed
        ready = ~replayed
        if before_quad is not None:
            ready &= self.window_end < before_quad
        self.replayed = replayed | ready
        if not self.held or not bool(ready.any()):
            return
        # by seq, then in the order held (the parts of a batch come in lane order)
        held = sorted(self.held, key=lambda h: h[2])
        self.held = []
        sampler = self.sampler
        sets = sampler.cache.sets
        sizes = [int(h[0].shape[0]) for h in held]
        lane = xp.concatenate([h[0] for h in held]) if len(held) > 1 else held[0][0]
        lines = xp.concatenate([h[1] for h in held]) if len(held) > 1 else held[0][1]
        if usable(lane, lines, self.window, self.cache_of_quad):
            rows, first_ways = sampler._lru_table().kernel_rows()
            lane, lines, keep = replay_held_compiled(
                lane, lines, np.array(sizes, dtype=np.int64),
                np.array([h[2] for h in held], dtype=np.int64), self.window_end, ready,
                replayed, self.cache_of_quad, sampler.cache_count, sets, rows, first_ways,
                sampler.owner_base, self.misses)
            self._keep(held, sizes, lane, lines, keep)
            return
        seq = xp.concatenate([xp.full(size, h[2], dtype=np.int64)
                              for h, size in zip(held, sizes, strict=True)])
        window = xp.take(self.window, lane >> 2)
        now = xp.take(ready, window)
        if not bool(now.all()):
            self._keep(held, sizes, lane, lines, ~now)
            lane, lines, seq, window = lane[now], lines[now], seq[now], window[now]
        if lane.shape[0] == 0:
            return
        total = self.total
        seqs = int(seq.max()) + 1
        if (int(self.window_end.shape[0]) * seqs + 1) * total < (1 << 62):
            order = xp.argsort((window * seqs + seq) * total + lane, kind="stable")
        else:       # a key that would overflow: three stable sorts
            order = xp.lexsort(xp.stack([lane, seq, window]))
        lane, lines = xp.take(lane, order), xp.take(lines, order)
        cache = xp.take(self.cache_of_quad, lane >> 2)
        hit = sampler._lru(xp, cache * sets + lines % sets, lines // sets,
                           sampler.owner_base + lane)
        self.misses += xp.bincount(lane[~hit], minlength=total)

    def _keep(self, held, sizes, lane, lines, keep) -> None:
        """Hold again the accesses ``keep`` of the parts ``held`` (runs of ``sizes``)."""
        offset = 0
        for (_, _, value), size in zip(held, sizes, strict=True):
            part = keep[offset:offset + size]
            if bool(part.any()):
                self.held.append((lane[offset:offset + size][part],
                                  lines[offset:offset + size][part], value))
            offset += size


# ------------------------------------------------------------------------------------------
# The sampler


class TextureSampler:
    """GLES2 texture sampling for the TGSI interpreter, with counters and a cache model.

    units: SAMP index -> Texture (or None: nothing bound, samples (0, 0, 0, 1)).
    lane_tile: optional (N,) tile index of every lane of the batch (see :meth:`begin`).
    counters: accumulate :attr:`stats` and run the cache model (off: no counting cost).
    cache: the cache geometry; options: fidelity choices (:class:`SamplerOptions`).
    record_accesses: keep, per sampling instruction, (instruction, lane (M,), byte address
        (M,)) of every cache access in :attr:`accesses`, for other cache models.
    tile_caches: a pass's per-tile cache state (``tile_caches.TileCaches.table``), shared by
        the samplers of its draws: each lane's accesses go to its tile's cache (see
        :class:`TextureCacheConfig`); None: the sampler's own caches.
    """

    def __init__(self, units: dict[int, Texture | None], *, lane_tile=None,
                 counters: bool = True, cache: TextureCacheConfig | None = None,
                 options: SamplerOptions | None = None, record_accesses: bool = False,
                 tile_caches: SetAssociativeLRU | None = None):
        self.units = dict(units)
        self.counters = counters
        self.cache = cache or TextureCacheConfig.from_gpu_config()
        self.options = options or SamplerOptions()
        self.record_accesses = record_accesses
        self.accesses: list[tuple[int, Any, Any]] = []
        self.stats: TextureStats | None = None
        self._used = False      # stats asked for in the current :meth:`lanes` block
        self._lane_tile = lane_tile
        self._cache_lru: SetAssociativeLRU | None = tile_caches
        self._per_tile = tile_caches is not None
        # who made an access, for the cache's first tags: this plus the lane in the batch
        self.owner_base = 0
        self._held: _HeldAccesses | None = None    # within :meth:`warps_in_flight`
        self._lane_base = 0     # the batch lane of lane 0 of the requests, in :meth:`lanes`

    # -- batches, caches --------------------------------------------------------------------

    def begin(self, lane_tile=None) -> None:
        """Start a new batch of lanes: zero :attr:`stats`; ``lane_tile`` (N,) maps each lane
        to its tile (which picks its texture cache). The cache contents carry over."""
        self._lane_tile = lane_tile
        self.stats = None
        self._used = False
        self.accesses = []

    def reset_cache(self) -> None:
        """Empty every texture cache (e.g. at the start of a frame)."""
        if self._per_tile:
            self._cache_lru.reset()
        else:
            self._cache_lru = None

    @property
    def cache_count(self) -> int:
        """The caches lanes are spread over: one per tile with ``tile_caches``, else the
        configuration's (a lane's cache: its tile, or its quad, modulo this)."""
        if self._per_tile:
            return self._cache_lru.groups // self.cache.sets
        return self.cache.caches

    @contextlib.contextmanager
    def warps_in_flight(self, total: int, xp=np):
        """Count the cache accesses of the batch's lanes ``0..total`` (the lanes of
        :meth:`begin`'s tile map, whole quads) in the order warps in flight issue them
        (:class:`TextureCacheConfig`): within the block they are held, and replayed at
        :meth:`finished` and at the end of the block, whatever parts (:meth:`lanes`) the
        program ran in. Needed where a program can read texels more than once per lane
        (``Program.reads_texels_at_most_once``); for one that reads once it changes nothing.
        Does nothing without counters or with ``record_accesses``."""
        if not self.counters or self.record_accesses or self._held is not None:
            yield
            return
        self._held = held = _HeldAccesses(self, total, xp)
        try:
            yield
            held.replay()
            if self.stats is not None and self.stats.lanes == held.total:
                self.stats.cache_misses += held.misses
        finally:
            self._held = None

    def finished(self, stop: int) -> None:
        """Within :meth:`warps_in_flight`: the program has run on every lane before ``stop``,
        so the windows of those quads can be replayed (bounds what is held)."""
        if self._held is not None:
            self._held.replay(before_quad=stop // 4)

    def set_unit(self, unit: int, texture: Texture | None) -> None:
        self.units[unit] = texture

    def _stats_for(self, n: int, xp) -> TextureStats | None:
        if not self.counters:
            return None
        self._used = True
        if self.stats is None or self.stats.lanes != n:
            self.stats = TextureStats.zeros(n, xp)
        return self.stats

    def _pack(self, texture: Texture, xp) -> _Packed:
        """The texture's images as flat arrays on ``xp``, kept on the texture until it
        changes (so samplers of later draws reuse them)."""
        key = ("texture_sampler.packed", xp.__name__, self.cache.block, self.cache.line_bytes)
        packed = texture.derived.get(key)
        if packed is None or packed.version != texture.version:
            packed = _Packed(texture, xp, self.cache.block, self.cache.line_bytes)
            texture.derived[key] = packed
        return packed

    def _texture(self, unit: int, target: str) -> Texture | None:
        """The texture to sample, or None when sampling returns (0, 0, 0, 1)."""
        texture = self.units.get(unit)
        if texture is None:
            return None
        want_cube = target in _CUBE_TARGETS
        if texture.target is None or want_cube != (texture.target == TEXTURE_CUBE_MAP):
            return None
        if (target == "3D") != (texture.target == TEXTURE_3D):
            return None
        return texture if texture.is_complete() else None

    # -- Sampler protocol -------------------------------------------------------------------

    def sample(self, request: TextureRequest):
        xp = array_module(request.coords)
        coords = request.coords
        n = coords.shape[1]
        if n > SAMPLE_CHUNK_LANES and not self.record_accesses:
            return self._sample_in_chunks(request, n, xp)
        active = (xp.ones(n, dtype=bool) if request.active is None
                  else xp.broadcast_to(xp.asarray(request.active, dtype=bool), (n,)))
        stats = self._stats_for(n, xp)
        texture = self._texture(request.unit, request.target)
        if texture is None:
            out = _incomplete(stats, active, n, xp)
        else:
            packed = self._pack(texture, xp)
            out = _Sampling(self, texture, packed, request, xp, active, stats).run()
        if self._held is not None and stats is not None:
            self._held.ran(active, self._lane_base)
        return out

    @contextlib.contextmanager
    def lanes(self, start: int, stop: int, total: int, xp=np):
        """Sample lanes ``start..stop`` of a batch of ``total`` lanes that is sampled in
        consecutive parts (whole quads, in lane order): the block's requests are counted into
        that slice of the batch's :attr:`stats` and its lanes' tiles pick their caches, so the
        caches see the accesses, and :attr:`stats` ends with the counts, of one request over
        the whole batch (None, as then, where nothing was sampled). Several requests per block
        reach the caches block by block, unless :meth:`warps_in_flight` holds them (a program
        that reads texels more than once: ``quad_stages.SHADE_CHUNK_LANES``)."""
        before, lane_tile, used_before = self.stats, self._lane_tile, self._used
        full = None
        if self.counters:
            full = before if before is not None and before.lanes == total else \
                TextureStats.zeros(total, xp)
            self.stats = TextureStats(**{name: getattr(full, name)[start:stop]
                                         for name in TextureStats.FIELDS})
        if lane_tile is not None and getattr(lane_tile, "ndim", 0) == 1 \
                and lane_tile.shape[0] == total:
            self._lane_tile = lane_tile[start:stop]
        self._used = False
        base = self._lane_base
        self._lane_base = base + start
        try:
            yield
        finally:
            used = self._used
            self._used = used_before or used
            self.stats = full if before is not None or used else before
            self._lane_tile = lane_tile
            self._lane_base = base

    def _sample_in_chunks(self, request: TextureRequest, n: int, xp):
        """``sample`` over consecutive chunks of SAMPLE_CHUNK_LANES lanes (:meth:`lanes`)."""
        out = xp.empty((4, n), dtype=np.float32)

        def part(v, start, stop, axis):
            if v is None or getattr(v, "ndim", 0) <= axis or v.shape[axis] != n:
                return v                               # None, or the same for every lane
            return v[start:stop] if axis == 0 else v[:, start:stop]

        for start in range(0, n, SAMPLE_CHUNK_LANES):
            stop = min(start + SAMPLE_CHUNK_LANES, n)
            chunk = replace(request, coords=request.coords[:, start:stop],
                            lod=part(request.lod, start, stop, 0),
                            ddx=part(request.ddx, start, stop, 1),
                            ddy=part(request.ddy, start, stop, 1),
                            active=part(request.active, start, stop, 0))
            with self.lanes(start, stop, n, xp):
                out[:, start:stop] = self.sample(chunk)
        return out

    def fetch(self, unit: int, target: str, texel, active):
        """TXF: texel (4, N) int = x, y, (layer,) level of a 2D texture; (4, N) float32.

        Out-of-range coordinates or levels return (0, 0, 0, 0) (llvmpipe); incomplete or
        unbound textures (0, 0, 0, 1)."""
        xp = array_module(texel)
        texel = xp.asarray(texel).astype(np.int32)
        n = texel.shape[1]
        active = (xp.ones(n, dtype=bool) if active is None
                  else xp.broadcast_to(xp.asarray(active, dtype=bool), (n,)))
        stats = self._stats_for(n, xp)
        texture = self._texture(unit, target)
        if texture is None or texture.target == TEXTURE_CUBE_MAP:
            out = _incomplete(stats, active, n, xp)
        else:
            out = self._fetch(texture, texel, active, stats, n, xp)
        if self._held is not None and stats is not None:
            self._held.ran(active, self._lane_base)
        return out

    def _fetch(self, texture: Texture, texel, active, stats, n: int, xp):
        """:meth:`fetch` of a bound 2D texture."""
        packed = self._pack(texture, xp)
        level = texel[3]
        inside_level = (level >= 0) & (level < packed.levels)
        fl = xp.clip(level, 0, packed.levels - 1)
        w, h = packed.widths[fl], packed.heights[fl]
        x, y = texel[0], texel[1]
        inside = inside_level & (x >= 0) & (x < w) & (y >= 0) & (y < h)
        x, y = xp.where(inside, x, 0), xp.where(inside, y, 0)
        rows = packed.offsets[fl] + y.astype(np.int64) * w + x
        out = xp.where(inside[:, None], xp.take(packed.texels, rows, axis=0), F32(0)).T
        if stats is not None:
            stats.samples += active
            stats.nearest += active
            stats.texels += active
            taps = _Taps(xs=x[None], ys=y[None])
            self._count_cache(xp, packed, [(taps, fl, None, 0)], active, n, -1)
        return xp.ascontiguousarray(out)

    def size(self, unit: int, target: str, level):
        """TXQ: (4, N) int32 = width, height, 1, levels of the texture at ``level``."""
        xp = array_module(level)
        level = xp.asarray(level).astype(np.int32)
        texture = self.units.get(unit)
        n = level.shape[0]
        if texture is None or texture.target is None or texture.image(0, 0) is None:
            return xp.zeros((4, n), dtype=np.int32)
        w0, h0 = texture.base_size
        shift = xp.clip(level, 0, 31)
        w = xp.maximum(w0 >> shift, 1)
        h = xp.maximum(h0 >> shift, 1)
        d = xp.maximum(max(texture.base_depth, 1) >> shift, 1)
        levels = xp.full(n, self._pack(texture, xp).levels, dtype=np.int32)
        return xp.stack([w, h, d, levels]).astype(np.int32)

    # -- the cache model --------------------------------------------------------------------

    def _count_cache(self, xp, packed: _Packed, footprints, active, n: int,
                     instruction: int) -> None:
        """Cache accesses and misses of one sampling instruction.

        ``footprints``: [(taps, fl, lanes, slot)]: taps (k, m) texel columns / rows of the
        lanes ``lanes`` (None: all n) in image ``fl`` (m,) (or each tap in its own image,
        ``taps.images``); slot 0 for the first level of a
        sample, 1 for the second. Accesses are ordered lane by lane, slot 0 before slot 1.
        """
        stats, cfg = self.stats, self.cache
        shift, mask = cfg.block.bit_length() - 1, cfg.block - 1
        line_shift = cfg.line_bytes.bit_length() - 1
        width0 = max(t.xs.shape[0] for t, _, _, slot in footprints if slot == 0)
        width = width0 + max([t.xs.shape[0] for t, _, _, slot in footprints if slot == 1],
                             default=0)
        table = xp.full((n, width), -1, dtype=np.int64)
        if usable(table, active, self._lane_tile, packed.blocks_w) \
                and not self.record_accesses and self._held is None:
            self._count_cache_compiled(packed, footprints, active, n, table, width0)
            return
        for taps, fl, lanes, slot in footprints:
            x, y = taps.xs, taps.ys
            image = fl if taps.images is None else taps.images
            offset = ((((y >> shift) * packed.blocks_w[image] + (x >> shift)) << (2 * shift))
                      + ((y & mask) << shift) + (x & mask))       # texel index, in-level
            line = ((offset * packed.bits) >> (line_shift + 3)) + packed.line_bases[image]
            # One access per distinct line among the taps of one lane and level.
            k = line.shape[0]
            if k > 8:
                # (an anisotropic footprint's many taps) the same, through a stable sort:
                # every repeat of a line after its first tap is dropped
                order = xp.argsort(line, axis=0, kind="stable")
                ranked = xp.take_along_axis(line, order, axis=0)
                repeat = xp.zeros(line.shape, dtype=bool)
                repeat[1:] = ranked[1:] == ranked[:-1]
                line[order, xp.arange(line.shape[1])[None, :]] = xp.where(repeat, -1, ranked)
            for j in range(1, k if k <= 8 else 1):
                same = line[j] == line[0]
                for i in range(1, j):
                    same |= line[j] == line[i]
                line[j] = xp.where(same, -1, line[j])
            column = 0 if slot == 0 else width0
            if lanes is None:
                table[:, column:column + k] = line.T
            else:
                table[lanes, column:column + k] = line.T
        if not bool(active.all()):
            table[~active] = -1
        flat = table.reshape(-1)
        index = xp.flatnonzero(flat >= 0)
        if index.size == 0:
            return
        lines = xp.take(flat, index)
        lane = index >> (width.bit_length() - 1) if width & (width - 1) == 0 else index // width
        if self.record_accesses:
            self.accesses.append((instruction, lane, lines << line_shift))
        stats.cache_accesses += xp.bincount(lane, minlength=n)
        if self._held is not None:
            self._held.record(lane + self._lane_base, lines, self._lane_base, active)
            return
        if self._lane_tile is not None:
            tile = xp.asarray(self._lane_tile).astype(np.int64)
            cache_of = xp.take(tile, lane) % self.cache_count
        else:
            cache_of = (lane >> 2) % self.cache_count
        sets = cfg.sets
        hit = self._lru(xp, cache_of * sets + lines % sets, lines // sets,
                        self.owner_base + self._lane_base + lane)
        stats.cache_misses += xp.bincount(lane[~hit], minlength=n)

    def _count_cache_compiled(self, packed: _Packed, footprints, active, n: int, table,
                              width0: int) -> None:
        """``_count_cache`` in compiled kernels: the line numbers of every footprint written
        into ``table`` ((n, width) int64, -1 filled), then the accesses lane by lane (repeats
        of a line among a level's taps dropped) through the exact LRU."""
        cfg = self.cache
        shift, mask = cfg.block.bit_length() - 1, cfg.block - 1
        line_shift = cfg.line_bytes.bit_length() - 1
        for taps, fl, lanes, slot in footprints:
            images = (np.broadcast_to(fl, taps.xs.shape) if taps.images is None
                      else taps.images)
            fill_lines_compiled(table, 0 if slot == 0 else width0, taps.xs, taps.ys, images,
                                lanes, packed.blocks_w, packed.line_bases, packed.bits, shift,
                                mask, line_shift + 3)
        if self._lane_tile is not None:
            cache_of = np.asarray(self._lane_tile).astype(np.int64) % self.cache_count
        else:
            cache_of = (np.arange(n) >> 2) % self.cache_count
        rows, first_ways = self._lru_table().kernel_rows()
        texture_cache_compiled(table, width0, np.asarray(active, dtype=bool), cache_of,
                               cfg.sets, rows, first_ways, self.owner_base + self._lane_base,
                               self.stats.cache_accesses, self.stats.cache_misses)

    def _lru(self, xp, key, tag, owner=None):
        """Exact LRU of every set over the accesses in order
        (tilesim.render.pipeline.set_associative); returns
        hit (M,) bool. The sets persist until :meth:`reset_cache` (``xp``: the module of
        ``key`` and ``tag``, which the table follows); ``owner``: each access's
        (:attr:`owner_base` plus its batch lane)."""
        return self._lru_table().access(key, tag, owner)

    def _lru_table(self) -> SetAssociativeLRU:
        cfg = self.cache
        if self._cache_lru is None:
            # first tags kept, as the pass's tile caches keep them: the compiled lookups
            # then take one form (tile_caches.py)
            self._cache_lru = SetAssociativeLRU(cfg.caches * cfg.sets, cfg.ways,
                                                first_tags=True)
        return self._cache_lru



# ------------------------------------------------------------------------------------------
# One sampling instruction


class _Sampling:
    """Everything one TEX/TXB/TXL/TXD/TXP request computes."""

    def __init__(self, sampler: TextureSampler, texture: Texture, packed: _Packed,
                 request: TextureRequest, xp, active, stats):
        self.sampler, self.texture, self.packed = sampler, texture, packed
        self.request, self.xp, self.active, self.stats = request, xp, active, stats
        self.options = sampler.options
        self.n = request.coords.shape[1]
        self.cube = texture.target == TEXTURE_CUBE_MAP
        self.three_d = texture.target == TEXTURE_3D
        # EXT_texture_filter_anisotropic: llvmpipe filters a texture with a maximum
        # anisotropy above 1 through its elliptical footprint whatever the filters
        self.aniso = (self.options.anisotropic and texture.max_anisotropy > 1.0
                      and self.n % 4 == 0)
        tex = texture
        self.mip = ("none" if not tex.mipmapped or packed.levels == 1
                    else "linear" if tex.min_filter.endswith("MIPMAP_LINEAR") else "nearest")
        self.min_linear = tex.min_filter.startswith("LINEAR")
        self.mag_linear = tex.mag_filter == "LINEAR"
        wrap_s, wrap_t = tex.wrap_s, tex.wrap_t
        if self.cube and self.options.cube_clamp_to_edge:
            wrap_s = wrap_t = "CLAMP_TO_EDGE"
        self.wrap_s, self.wrap_t = wrap_s, wrap_t
        self.wrap_r = tex.wrap_r if self.three_d else "CLAMP_TO_EDGE"
        self.switchover = F32(0.5 if (
            self.options.mag_switchover == "spec" and tex.mag_filter == "LINEAR"
            and tex.min_filter in ("NEAREST_MIPMAP_NEAREST", "NEAREST_MIPMAP_LINEAR")) else 0)
        mode = request.lod_mode
        self.mode = EXPLICIT if mode == LEVEL_ZERO else mode
        self.need_lod = self.min_linear != self.mag_linear or self.mip != "none"
        # llvmpipe: one LOD per lane with a bias/explicit LOD/gradients (when it matters),
        # and for cube maps with mipmaps; else one per quad.
        self.per_lane_lod = ((self.mode in (BIAS, EXPLICIT, GRADIENT)
                              and (self.mip != "none" or self.min_linear != self.mag_linear))
                             or (self.cube and self.mip != "none"))
        # Seamless cube filtering (LINEAR taps only; NEAREST clamps to the face anyway).
        self.seamless = self.cube and self.options.cube_seamless
        simple = all(w in ("REPEAT", "CLAMP_TO_EDGE") for w in (wrap_s, wrap_t, self.wrap_r))
        # llvmpipe's AoS (8.8 fixed-point) path; not for seamless cube maps with a LINEAR
        # filter ("theoretically possible with AoS filtering but not implemented").
        # Depth textures (16 / 24-bit unorm) and half-float ones (OES_texture_half_float)
        # never take it: llvmpipe filters them in float.
        self.fixed = (self.options.unorm8_fixed_point and simple and not tex.is_depth
                      and not tex.is_half_float
                      and (not self.per_lane_lod or self.min_linear == self.mag_linear)
                      and not (self.seamless and (self.min_linear or self.mag_linear)))

    # -- coordinates and LOD ----------------------------------------------------------------

    def run(self):
        # Hostile coordinates (inf, NaN, 1e38) overflow on the way; every value that selects
        # texels is sanitized, so the warnings say nothing useful.
        with np.errstate(over="ignore", invalid="ignore", divide="ignore", under="ignore"):
            return self._run()

    def _run(self):
        xp, req = self.xp, self.request
        if self.aniso:
            return self._anisotropic()
        if self._compiled_lod():
            packed = self.packed
            s, t, minified, level0, level1, weight = implicit_lod_compiled(
                req.coords[0], req.coords[1], self.need_lod, packed.base_width,
                packed.base_height, self.mip, packed.levels - 1 if self.mip != "none" else 0,
                self.switchover)
            lod = _Lod(minified=minified, level0=level0, level1=level1, weight=weight)
            return self._filter(s, t, np.zeros(self.n, dtype=np.int32), lod)
        coords = _sanitize(xp, req.coords[:3])
        s, t = coords[0], coords[1]
        r = coords[2] if self.three_d else None
        face = xp.zeros(self.n, dtype=np.int32)
        rho2 = None
        if self.cube:
            s, t, face, rho2 = self._cube(coords)
        elif self.need_lod and self.mode in (IMPLICIT, BIAS):
            rho2 = self._rho2_quads(s, t, r)
        elif self.need_lod and self.mode == GRADIENT:
            rho2 = self._rho2_lanes(req.ddx[0], req.ddx[1], req.ddy[0], req.ddy[1],
                                    self.packed.base_width, self.packed.base_height,
                                    *((req.ddx[2], req.ddy[2]) if self.three_d else ()))
        lod = self._lod(rho2)
        return self._filter(s, t, face, lod, r)

    def _compiled_lod(self) -> bool:
        """Whether implicit_lod_compiled gives these lanes' coordinates and LOD: NumPy arrays
        with the kernels on, a 2D texture, and no LOD or an implicit one in llvmpipe's fast
        log2 over whole quads (what most fragment programs' TEX asks)."""
        return (usable(self.request.coords) and not self.cube and not self.three_d
                and (not self.need_lod or (self.mode == IMPLICIT and self.options.fast_log2
                                           and self.n % 4 == 0)))

    def _anisotropic(self):
        """EXT_texture_filter_anisotropic as llvmpipe filters (lp_build_sample_aniso, an
        elliptical weighted average after Heckbert): per quad, the derivatives of the
        top-left lane to its right and lower neighbours in level-0 texels give the level,
        lambda = log2(min(|d/dx|, |d/dy|)) (lp_build_pmin; explicit LOD and bias as usual,
        the level the integer part, truncated, never two levels), and, scaled to that
        level, the ellipse A u^2 + B u v + C v^2 = F with A = vx^2 + vy^2 + 1,
        B = -2 (ux vx + uy vy), C = ux^2 + uy^2 + 1. Every texel of the ellipse's bounding
        box around (s W - 1/2, t H - 1/2) is a NEAREST fetch weighted by exp(-2 q / F) from
        the table (q scaled so that F = 1023; q > 1023 weighs 0); the color is the weighted
        mean, a lane without weight samples LINEAR. The texture's wraps apply to each tap.
        Counted per tap: a nearest fetch each (``nearest``, 1 texel) and its cache line."""
        xp, req, packed, n = self.xp, self.request, self.packed, self.n
        self.fixed = False
        coords = _sanitize(xp, req.coords[:3])
        s, t = coords[0], coords[1]
        face = xp.zeros(n, dtype=np.int32)
        if self.cube:
            # the ellipse in the face's coordinates (lp_build_cube_lookup first)
            s, t, face, _ = self._cube(coords)
        r = coords[2] if self.three_d else None
        w0, h0 = F32(packed.base_width), F32(packed.base_height)
        qs, qt = s.reshape(-1, 4), t.reshape(-1, 4)
        dsdx, dsdy = (qs[:, 1] - qs[:, 0]) * w0, (qs[:, 2] - qs[:, 0]) * w0
        dtdx, dtdy = (qt[:, 1] - qt[:, 0]) * h0, (qt[:, 2] - qt[:, 0]) * h0
        last = packed.levels - 1 if self.mip != "none" else 0
        if self.mode == EXPLICIT:
            lod = (xp.zeros(n, dtype=np.float32) if req.lod_mode != EXPLICIT or req.lod is None
                   else xp.broadcast_to(req.lod, (n,)).astype(np.float32))
        elif self.need_lod:
            pmin2 = xp.minimum(dsdx * dsdx + dtdx * dtdx, dsdy * dsdy + dtdy * dtdy)
            pmin2 = xp.where(xp.isnan(pmin2), F32(0), pmin2).astype(np.float32)
            with np.errstate(divide="ignore", invalid="ignore"):
                lod = _quad_broadcast(xp, _fast_log2(xp, pmin2) * F32(0.5))
            if self.mode == BIAS and req.lod is not None:
                lod = lod + req.lod.astype(np.float32)
        else:
            lod = xp.zeros(n, dtype=np.float32)
        lod = xp.clip(xp.where(xp.isnan(lod), F32(0), lod), F32(-1000), F32(1000))
        level = xp.clip(_itrunc(xp, lod), 0, last).astype(np.int32)
        scaling = (F32(1) / (xp.ones(n, dtype=np.int32) << level).astype(np.float32))
        ux, uy = (_quad_broadcast(xp, v) * scaling for v in (dsdx, dsdy))
        vx, vy = (_quad_broadcast(xp, v) * scaling for v in (dtdx, dtdy))
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            a = vx * vx + vy * vy + F32(1)
            b = (ux * vx + uy * vy) * F32(-2)
            c = ux * ux + uy * uy + F32(1)
            f = a * c - b * b / F32(4)
            d = (F32(0) - b * b) + (a * c) * F32(4)
            box_u = F32(2) / d * xp.sqrt(d * c * f)
            box_v = F32(2) / d * xp.sqrt(a * d * f)
            scale = F32(1023) / f
        box_u = xp.clip(xp.nan_to_num(box_u), 0, ANISO_MAX_HALF_BOX).astype(np.float32)
        box_v = xp.clip(xp.nan_to_num(box_v), 0, ANISO_MAX_HALF_BOX).astype(np.float32)
        a, b, c = (xp.nan_to_num(v * scale).astype(np.float32) for v in (a, b, c))
        tex_u = s * (w0 * scaling) + F32(-0.5)
        tex_v = t * (h0 * scaling) + F32(-0.5)
        u0 = _ifloor(xp, tex_u - box_u)
        v0 = _ifloor(xp, tex_v - box_v)
        width = (_iceil(xp, tex_u + box_u) - u0 + 1).astype(np.int64)
        height = (_iceil(xp, tex_v + box_v) - v0 + 1).astype(np.int64)
        count = width * height
        out = xp.empty((4, n), dtype=np.float32)
        taps_of_lane = xp.zeros(n, dtype=np.int64)
        footprint_x, footprint_y = [], []
        ends = to_host(xp.cumsum(count))
        start = 0
        while start < n:
            stop = int(np.searchsorted(ends, (ends[start - 1] if start else 0) + ANISO_CHUNK_TAPS,
                                       side="right"))
            stop = max(stop, start + 1)
            lanes = xp.arange(start, stop)
            color, used, xs, ys = self._ellipse_taps(
                lanes, level, face, r, count, width, u0, v0, tex_u, tex_v, a, b, c)
            out[:, start:stop] = color
            taps_of_lane[start:stop] = used
            footprint_x.append(xs)
            footprint_y.append(ys)
            start = stop
        empty = taps_of_lane == 0
        image = face * packed.levels + level
        fallback = None
        if bool(empty.any()):
            # no weight: llvmpipe's LINEAR sample of the level instead
            sub = xp.flatnonzero(empty)
            color, fallback = self._sample_level(s[sub], t[sub], image[sub], True,
                                                 None if r is None else r[sub])
            out[:, sub] = color.T
            fallback = (fallback, image[sub], sub)
        if self.stats is not None:
            self._count_anisotropic(image, taps_of_lane, empty, footprint_x, footprint_y,
                                    fallback)
        return out

    def _ellipse_taps(self, lanes, level, face, r, count, width, u0, v0, tex_u, tex_v, a, b,
                      c):
        """The weighted mean over the bounding boxes of ``lanes`` (a contiguous range):
        (colors (4, m), taps with weight per lane (m,), and the texel columns / rows of
        those taps (k, m), each lane's list padded with its first tap). A cube map's taps
        are in the lane's face (clamped to its edges, as llvmpipe's NEAREST), a 3D
        texture's in the slice its r selects (NEAREST, with wrap R)."""
        xp, packed = self.xp, self.packed
        m = lanes.shape[0]
        cnt = count[lanes]
        ends = xp.cumsum(cnt)
        first = ends - cnt
        # lane (within m) of each tap (a search rather than a repeat by counts: CuPy's
        # repeat takes no array of counts)
        lane = xp.searchsorted(ends, xp.arange(int(ends[-1]) if m else 0), side="right")
        k = xp.arange(lane.shape[0], dtype=np.int64) - first[lane]
        gl = lanes[lane]
        w = width[gl]
        u = u0[gl] + (k % w).astype(np.int32)
        v = v0[gl] + (k // w).astype(np.int32)
        big_u = u.astype(np.float32) - tex_u[gl]
        big_v = v.astype(np.float32) - tex_v[gl]
        with np.errstate(over="ignore", invalid="ignore"):
            q = (a[gl] * big_u) * big_u + (b[gl] * big_u) * big_v + (c[gl] * big_v) * big_v
            qi = _itrunc(xp, q)
        inside = (qi <= 1023) & xp.isfinite(q)
        weight = xp.where(inside, xp.asarray(_ANISO_WEIGHTS)[xp.clip(qi, 0, 1023)], F32(0))
        keep = xp.flatnonzero(weight > 0)
        lane, u, v, weight = lane[keep], u[keep], v[keep], weight[keep]
        gl = lanes[lane]
        fl = face[gl] * packed.levels + level[gl]
        size_w, size_h = packed.widths[fl], packed.heights[fl]
        pot = packed.pot_dims if self.three_d else (None, None, None)
        # each tap a NEAREST fetch at (u / W, v / H) of its level, as llvmpipe addresses it
        x = self._wrap_nearest(u.astype(np.float32) / packed.widths_f[fl], size_w,
                               packed.widths_f[fl], self.wrap_s, pot[0])
        y = self._wrap_nearest(v.astype(np.float32) / packed.heights_f[fl], size_h,
                               packed.heights_f[fl], self.wrap_t, pot[1])
        rows = y.astype(np.int64) * size_w + x
        if r is not None:
            z = self._wrap_nearest(r[gl], packed.depths[fl], packed.depths_f[fl], self.wrap_r,
                                   pot[2])
            rows = rows + z.astype(np.int64) * size_h * size_w
            y = z * size_h + y         # the slice's rows, as the cache model addresses them
        texels = xp.take(packed.texels, packed.offsets[fl] + rows, axis=0)
        den = xp.bincount(lane, weights=weight, minlength=m)
        color = xp.stack([xp.bincount(lane, weights=weight * texels[:, ch], minlength=m)
                          for ch in range(4)])
        with np.errstate(divide="ignore", invalid="ignore"):
            color = (color / den).astype(np.float32)
        used = xp.bincount(lane, minlength=m)
        # the taps as a (k, m) footprint for the cache model
        rank = xp.arange(lane.shape[0]) - (xp.cumsum(used) - used)[lane]
        depth = max(int(used.max()) if m else 0, 1)
        first_tap = xp.cumsum(used) - used
        has = used > 0
        xs = xp.zeros((depth, m), dtype=np.int32)
        ys = xp.zeros((depth, m), dtype=np.int32)
        if lane.shape[0]:
            pad_x = xp.where(has, x[xp.minimum(first_tap, lane.shape[0] - 1)], 0)
            pad_y = xp.where(has, y[xp.minimum(first_tap, lane.shape[0] - 1)], 0)
            xs[:] = pad_x
            ys[:] = pad_y
            xs[rank, lane] = x
            ys[rank, lane] = y
        return color, used, xs, ys

    def _count_anisotropic(self, image, taps, empty, footprint_x, footprint_y,
                           fallback) -> None:
        """Counters of an anisotropic sample: each tap a nearest fetch (its texel and cache
        line), a lane without weight the 4 texels of its LINEAR sample."""
        xp, stats, active, n = self.xp, self.stats, self.active, self.n
        stats.samples += active
        stats.nearest += xp.where(active, taps, 0)
        stats.bilinear += empty & active
        stats.texels += xp.where(active, xp.where(empty, 4, taps), 0)
        depth = max(x.shape[0] for x in footprint_x)
        xs = xp.concatenate([xp.concatenate([x, xp.repeat(x[:1], depth - x.shape[0], axis=0)])
                             for x in footprint_x], axis=1)
        ys = xp.concatenate([xp.concatenate([y, xp.repeat(y[:1], depth - y.shape[0], axis=0)])
                             for y in footprint_y], axis=1)
        footprints = [(_Taps(xs=xs, ys=ys), image, None, 0)]
        if fallback is not None:
            taps4, fl, sub = fallback
            # the LINEAR lanes' own footprint replaces their (empty) tap list
            keep = ~empty
            footprints = [(_Taps(xs=xs[:, keep], ys=ys[:, keep]), image[keep],
                           xp.flatnonzero(keep), 0), (taps4, fl, sub, 0)]
        self.sampler._count_cache(xp, self.packed, footprints, active, n,
                                  self.request.instruction)

    def _rho2_quads(self, s, t, r=None):
        """Per-quad rho^2 from the top-left lane's neighbours, broadcast to the lanes; ``r``
        (3D textures) adds (D drdx)^2 and (D drdy)^2 (lp_build_rho with three dimensions)."""
        xp = self.xp
        if self.n % 4:
            return xp.zeros(self.n, dtype=np.float32)
        qs, qt = s.reshape(-1, 4), t.reshape(-1, 4)
        w, h = F32(self.packed.base_width), F32(self.packed.base_height)
        dsdx, dsdy = (qs[:, 1] - qs[:, 0]) * w, (qs[:, 2] - qs[:, 0]) * w
        dtdx, dtdy = (qt[:, 1] - qt[:, 0]) * h, (qt[:, 2] - qt[:, 0]) * h
        rx, ry = dsdx * dsdx + dtdx * dtdx, dsdy * dsdy + dtdy * dtdy
        if r is not None:
            qr, d = r.reshape(-1, 4), F32(self.packed.base_depth)
            drdx, drdy = (qr[:, 1] - qr[:, 0]) * d, (qr[:, 2] - qr[:, 0]) * d
            rx, ry = rx + drdx * drdx, ry + drdy * drdy
        rho2 = xp.maximum(rx, ry)
        rho2 = xp.where(xp.isnan(rho2), F32(0), rho2)   # inf stays: the smallest level
        return _quad_broadcast(xp, rho2.astype(np.float32))

    def _rho2_lanes(self, dsdx, dtdx, dsdy, dtdy, width, height, drdx=None, drdy=None):
        """Per-lane rho^2 from derivatives (llvmpipe's derivs path: inf / NaN -> 0); drdx,
        drdy: a 3D texture's r derivatives, scaled by its depth."""
        xp = self.xp
        w, h = F32(width), F32(height)
        dsdx, dsdy = dsdx.astype(np.float32) * w, dsdy.astype(np.float32) * w
        dtdx, dtdy = dtdx.astype(np.float32) * h, dtdy.astype(np.float32) * h
        with np.errstate(over="ignore", invalid="ignore"):
            rx, ry = dsdx * dsdx + dtdx * dtdx, dsdy * dsdy + dtdy * dtdy
            if drdx is not None:
                d = F32(self.packed.base_depth)
                drdx, drdy = drdx.astype(np.float32) * d, drdy.astype(np.float32) * d
                rx, ry = rx + drdx * drdx, ry + drdy * drdy
            rho2 = xp.maximum(rx, ry)
        return xp.where(xp.isfinite(rho2), rho2, F32(0)).astype(np.float32)

    def _cube(self, coords):
        """Face selection and face coordinates (ES 2.0 table 3.21, as lp_build_cube_lookup)."""
        xp = self.xp
        s, t, r = coords[0], coords[1], coords[2]
        as_, at, ar = xp.abs(s), xp.abs(t), xp.abs(r)
        x_major = as_ > at
        z_major = ar >= xp.maximum(as_, at)

        def select(vx, vy, vz):
            return xp.where(z_major, vz, xp.where(x_major, vx, vy))

        ma = select(s, t, r)
        neg = xp.signbit(ma)
        face = (select(0, 2, 4) + neg).astype(np.int32)
        sc = select(xp.where(neg, r, -r), s, xp.where(neg, -s, s))
        tc = select(-t, xp.where(neg, -r, r), -t)
        need_derivs = self.need_lod and self.mode != EXPLICIT
        rho2 = None
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            if need_derivs:
                ima = F32(1) / ma
                imahalf = F32(0.5) * ima
                scale = xp.abs(imahalf)
                if self.mode == GRADIENT:
                    ddx = [v.astype(np.float32) for v in self.request.ddx[:3]]
                    ddy = [v.astype(np.float32) for v in self.request.ddy[:3]]
                else:
                    ddx = [self._fine(v, "x") for v in (s, t, r)]
                    ddy = [self._fine(v, "y") for v in (s, t, r)]
                derivs = []
                for d in (ddx, ddy):
                    dma = select(d[0], d[1], d[2])
                    dsc = select(xp.where(neg, d[2], -d[2]), d[0], xp.where(neg, -d[0], d[0]))
                    dtc = select(-d[1], xp.where(neg, -d[2], d[2]), -d[1])
                    ratio = dma * ima
                    derivs.append(((dsc - ratio * sc) * imahalf, (dtc - ratio * tc) * imahalf))
                size = self.packed.base_width
                rho2 = self._rho2_lanes(derivs[0][0], derivs[0][1], derivs[1][0], derivs[1][1],
                                        size, size)
                if not self.per_lane_lod and self.n % 4 == 0:
                    rho2 = _quad_broadcast(xp, rho2.reshape(-1, 4)[:, 0])
            else:
                absma = xp.abs(ma)
                scale = xp.where(absma > 0, F32(0.5) / absma, F32(0))
            s_face = (sc * scale + F32(0.5)).astype(np.float32)
            t_face = (tc * scale + F32(0.5)).astype(np.float32)
        return _sanitize(xp, s_face), _sanitize(xp, t_face), face, rho2

    def _fine(self, v, axis: str):
        """llvmpipe's lp_build_ddx / lp_build_ddy: per row / per column of each quad."""
        xp = self.xp
        if self.n % 4:
            return xp.zeros_like(v)
        q = v.reshape(-1, 4)
        if axis == "x":
            top, bottom = q[:, 1] - q[:, 0], q[:, 3] - q[:, 2]
            d = xp.stack([top, top, bottom, bottom], axis=1)
        else:
            left, right = q[:, 2] - q[:, 0], q[:, 3] - q[:, 1]
            d = xp.stack([left, right, left, right], axis=1)
        return d.reshape(-1).astype(np.float32)

    def _lod(self, rho2) -> _Lod:
        """Minification and mip levels per lane (lp_build_lod_selector + mip level helpers)."""
        xp, n, opts = self.xp, self.n, self.options
        last = self.packed.levels - 1 if self.mip != "none" else 0
        zero_levels = xp.zeros(n, dtype=np.int32)
        if not self.need_lod:
            return _Lod(minified=xp.ones(n, dtype=bool), level0=zero_levels)
        c = self.switchover
        fast = (opts.fast_log2 and self.mode in (IMPLICIT, GRADIENT)
                and self.mip != "linear")
        if fast:
            # ipart = round(log2(rho)) exactly; minified when lambda > c.
            ipart = (_exponent(xp, rho2) + 1) >> 1
            minified = rho2 > (F32(2) if c > 0 else F32(1))
            level0 = xp.clip(ipart, 0, last).astype(np.int32) if self.mip == "nearest" \
                else zero_levels
            return _Lod(minified=minified, level0=level0)
        if self.mode == EXPLICIT:
            explicit = self.request.lod if self.request.lod_mode == EXPLICIT else None
            lod = (xp.zeros(n, dtype=np.float32) if explicit is None
                   else xp.broadcast_to(explicit, (n,)).astype(np.float32))
        else:
            with np.errstate(divide="ignore", invalid="ignore"):
                log2 = (_fast_log2(xp, rho2) if opts.fast_log2
                        else xp.log2(rho2).astype(np.float32))
            lod = log2 * F32(0.5)
            if self.mode == BIAS and self.request.lod is not None:
                lod = lod + self.request.lod.astype(np.float32)
        lod = xp.clip(xp.where(xp.isnan(lod), F32(0), lod), F32(-1000), F32(1000))
        minified = lod > c
        if self.mip == "none":
            return _Lod(minified=minified, level0=zero_levels)
        if self.mip == "nearest":
            if opts.fast_log2:
                ipart = _iround(xp, lod)
            else:  # ES 2.0: ceil(lambda + 1/2) - 1 for lambda > 1/2, else 0
                ipart = (xp.ceil(lod + F32(0.5)) - 1).astype(np.int32)
            return _Lod(minified=minified, level0=xp.clip(ipart, 0, last).astype(np.int32))
        floor = xp.floor(lod)
        frac = (lod - floor).astype(np.float32)
        ipart = floor.astype(np.int32)
        low, high = ipart < 0, ipart >= last
        level0 = xp.clip(ipart, 0, last).astype(np.int32)
        level1 = xp.clip(ipart + 1, 0, last).astype(np.int32)
        frac = xp.where(low | high, F32(0), frac)
        return _Lod(minified=minified, level0=level0, level1=level1, weight=frac)

    # -- filtering --------------------------------------------------------------------------

    def _filter(self, s, t, face, lod: _Lod, r=None):
        """Filter every lane: lanes are grouped by image filter (linear or nearest); lanes
        whose mip filter blends two levels also sample their second level. ``r``: the third
        coordinate of a 3D texture."""
        xp, n = self.xp, self.n
        if r is None and self._compiled_filter(s, t, face, lod):
            return self._filter_compiled(s, t, face, lod)
        linear = xp.where(lod.minified, self.min_linear, self.mag_linear)
        level0 = xp.where(lod.minified, lod.level0, 0).astype(np.int32)
        two = weight = None
        if lod.weight is not None:
            weight = (lod.weight * F32(256)).astype(np.int32) if self.fixed else lod.weight
            two = lod.minified & (weight > 0)
        out = xp.empty((4, n), dtype=np.float32)
        footprints = []
        n_linear = int(linear.sum())
        if n_linear in (0, n):
            groups = [(n_linear == n, None)]
        else:
            groups = [(True, xp.flatnonzero(linear)), (False, xp.flatnonzero(~linear))]
        levels = self.packed.levels
        for is_linear, lanes in groups:
            gs, gt, gface = _take(s, lanes), _take(t, lanes), _take(face, lanes)
            gr = None if r is None else _take(r, lanes)
            fl = gface * levels + _take(level0, lanes)
            color, taps = self._sample_level(gs, gt, fl, is_linear, gr)
            footprints.append((taps, fl, lanes, 0))
            gtwo = None if two is None else _take(two, lanes)
            count = 0 if gtwo is None else int(gtwo.sum())
            if count:
                sub = None if count == gtwo.shape[0] else xp.flatnonzero(gtwo)
                fl1 = _take(gface, sub) * levels + _take(_take(lod.level1, lanes), sub)
                color1, taps1 = self._sample_level(_take(gs, sub), _take(gt, sub), fl1,
                                                   is_linear, None if gr is None
                                                   else _take(gr, sub))
                w = _take(_take(weight, lanes), sub)[:, None]
                c0 = _take(color, sub)
                mixed = (_lerp_fixed if self.fixed else _lerp_float)(c0, color1, w)
                if sub is None:
                    color = mixed
                else:
                    color[sub] = mixed
                footprints.append((taps1, fl1, _take(lanes, sub) if lanes is not None
                                   else sub, 1))
            if self.fixed:   # n / 255 as llvmpipe converts: n * float32(1 / 255)
                color = color.astype(np.float32)
                color *= _INV255
            if lanes is None:
                out[:] = color.T
            else:
                out[:, lanes] = color.T
        if self.stats is not None:
            self._count(linear, two, footprints)
        return out

    def _compiled_filter(self, s, t, face, lod) -> bool:
        """Whether :meth:`_filter_compiled` serves these lanes: NumPy arrays with the kernels
        on, no seamless cube-map LINEAR taps, no recorded accesses."""
        sampler = self.sampler
        return (usable(s, t, face, lod.minified, lod.level0, lod.level1, lod.weight,
                                self.packed.texels, self.active, sampler._lane_tile)
                and not (self.seamless and (self.min_linear or self.mag_linear))
                and not sampler.record_accesses)

    def _filter_compiled(self, s, t, face, lod):
        """:meth:`_filter` and :meth:`_count` in one compiled pass over the lanes (the same
        colors, counters and cache accesses in the same order)."""
        sampler, stats = self.sampler, self.stats
        out = np.empty((4, self.n), dtype=np.float32)
        tiles = None if sampler._lane_tile is None else np.asarray(sampler._lane_tile, np.int64)
        # Lanes in spans side by side. Their lookups too, where the spans' lanes use disjoint
        # caches: one per tile (tile_caches.py), the tiles in runs (tile_major), each in one
        # span; else the spans' accesses are looked up after, in lane order.
        by_tile = (stats is not None and sampler._held is None and sampler._per_tile
                   and tiles is not None and tiles.shape[0] == self.n
                   and spans(self.n) != [(0, self.n)] and nondecreasing(tiles))
        # (four a thread: a span's cost depends on its filters and its active lanes)
        parts = (spans_of_runs(tiles, per_thread=4) if by_tile
                 else spans(self.n, per_thread=4))
        held = each_part = None
        if stats is not None:
            # The accesses written out, then looked up (held: later, in the warps' order; else
            # now, by a loop of their own, see _lanes_kernel). At most 8 lines a lane; pages
            # never written are never committed.
            # Held lanes are the batch's; looked up now, the request's.
            held = (np.empty(8 * self.n, dtype=np.int64), np.empty(8 * self.n, dtype=np.int64),
                    np.zeros(len(parts), dtype=np.int64),
                    sampler._lane_base if sampler._held is not None else 0)
            rows, first_ways = sampler._lru_table().kernel_rows()

            def look_up(lanes, lines):
                lookup_in_order_compiled(
                    lanes, lines, np.zeros(1, np.int64) if tiles is None else tiles,
                    tiles is not None, sampler.cache_count, sampler.cache.sets, rows,
                    first_ways, sampler.owner_base + sampler._lane_base, stats.cache_misses)

            def part_accesses(k):
                first = 8 * parts[k][0]
                return held[0][first:first + held[2][k]], held[1][first:first + held[2][k]]

            if by_tile:
                def each_part(k):
                    look_up(*part_accesses(k))
        sample_lanes_compiled(out, s, t, face, lod, self.packed, fixed=self.fixed,
                              min_linear=self.min_linear, mag_linear=self.mag_linear,
                              wrap_s=self.wrap_s, wrap_t=self.wrap_t, stats=stats,
                              active=self.active, cache=sampler.cache, held=held, parts=parts,
                              each_part=each_part)
        if held is not None and each_part is None:
            accesses = [part_accesses(k) for k in range(len(parts))]
            lanes, lines = (accesses[0] if len(accesses) == 1 else
                            [np.concatenate(c) for c in zip(*accesses, strict=True)])
            if sampler._held is not None:
                sampler._held.record(lanes, lines, sampler._lane_base, self.active)
            else:
                look_up(lanes, lines)
        return out

    def _sample_level(self, s, t, fl, linear: bool, r=None):
        """Colors (m, 4) (float32, or int 0..255 in fixed point) of one level per lane
        (``r`` given: of a 3D texture, :meth:`_sample_level_3d`)."""
        if r is not None:
            return self._sample_level_3d(s, t, r, fl, linear)
        packed, xp = self.packed, self.xp
        width, height = packed.widths[fl], packed.heights[fl]
        width_f, height_f = packed.widths_f[fl], packed.heights_f[fl]
        base = packed.offsets[fl]
        texels = packed.texels8 if self.fixed else packed.texels
        if not linear:
            x = self._wrap_nearest(s, width, width_f, self.wrap_s)
            y = self._wrap_nearest(t, height, height_f, self.wrap_t)
            rows = base + y.astype(np.int64) * width + x
            return xp.take(texels, rows, axis=0), _Taps(xs=x[None], ys=y[None])
        if self.seamless:
            return self._sample_seamless(s, t, fl, texels)
        if self.fixed:
            x0, x1, ws = self._wrap_linear_fixed(s, width, width_f, self.wrap_s)
            y0, y1, wt = self._wrap_linear_fixed(t, height, height_f, self.wrap_t)
        else:
            x0, x1, ws = self._wrap_linear(s, width, width_f, self.wrap_s)
            y0, y1, wt = self._wrap_linear(t, height, height_f, self.wrap_t)
        taps = _Taps(xs=xp.stack([x0, x1, x0, x1]), ys=xp.stack([y0, y0, y1, y1]))
        if self.fixed and usable(texels, base, width, x0, y0, ws, wt):
            return bilinear_fixed_compiled(texels, base, width, x0, x1, y0, y1, ws, wt), taps
        row0, row1 = base + y0.astype(np.int64) * width, base + y1.astype(np.int64) * width
        c00, c01 = xp.take(texels, row0 + x0, axis=0), xp.take(texels, row0 + x1, axis=0)
        c10, c11 = xp.take(texels, row1 + x0, axis=0), xp.take(texels, row1 + x1, axis=0)
        ws, wt = ws[:, None], wt[:, None]
        lerp = _lerp_fixed if self.fixed else _lerp_float
        color = lerp(lerp(c00, c01, ws), lerp(c10, c11, ws), wt)
        return color, taps

    def _sample_level_3d(self, s, t, r, fl, linear: bool):
        """One level of a 3D texture (OES_texture_3D; ES 3.0 §3.8.10-11 for the 2x2x2
        footprint): NEAREST takes the texel (i, j, k) of the three wrapped coordinates, LINEAR
        blends the 8 around u, v, w (texel centers) as llvmpipe does, x then y then z
        (lp_build_lerp_3d), in 8.8 fixed point where its AoS path runs (all three wraps
        REPEAT or CLAMP_TO_EDGE, 8-bit texels). The taps address each slice as rows
        z * height + y of the level, which the cache model reads as a tall 2D image."""
        packed, xp = self.packed, self.xp
        width, height, depth = packed.widths[fl], packed.heights[fl], packed.depths[fl]
        sizes_f = (packed.widths_f[fl], packed.heights_f[fl], packed.depths_f[fl])
        base = packed.offsets[fl]
        texels = packed.texels8 if self.fixed else packed.texels
        pots = packed.pot_dims
        wraps = (self.wrap_s, self.wrap_t, self.wrap_r)
        sizes = (width, height, depth)
        plane = height.astype(np.int64) * width
        if not linear:
            x, y, z = (self._wrap_nearest(c, n, nf, wrap, pot) for c, n, nf, wrap, pot in
                       zip((s, t, r), sizes, sizes_f, wraps, pots, strict=True))
            rows = base + z.astype(np.int64) * plane + y.astype(np.int64) * width + x
            return (xp.take(texels, rows, axis=0),
                    _Taps(xs=x[None], ys=(z * height + y)[None]))
        wrap = self._wrap_linear_fixed if self.fixed else self._wrap_linear
        (x0, x1, ws), (y0, y1, wt), (z0, z1, wr) = (
            wrap(c, n, nf, w, pot) for c, n, nf, w, pot in
            zip((s, t, r), sizes, sizes_f, wraps, pots, strict=True))
        lerp = _lerp_fixed if self.fixed else _lerp_float
        ws, wt, wr = ws[:, None], wt[:, None], wr[:, None]
        slices = []
        for z in (z0, z1):
            row0 = base + z.astype(np.int64) * plane + y0.astype(np.int64) * width
            row1 = base + z.astype(np.int64) * plane + y1.astype(np.int64) * width
            c00, c01 = xp.take(texels, row0 + x0, axis=0), xp.take(texels, row0 + x1, axis=0)
            c10, c11 = xp.take(texels, row1 + x0, axis=0), xp.take(texels, row1 + x1, axis=0)
            slices.append(lerp(lerp(c00, c01, ws), lerp(c10, c11, ws), wt))
        color = lerp(slices[0], slices[1], wr)
        ys = [z * height + y for z in (z0, z1) for y in (y0, y0, y1, y1)]
        taps = _Taps(xs=xp.stack([x0, x1, x0, x1] * 2), ys=xp.stack(ys))
        return color, taps

    def _sample_seamless(self, s, t, fl, texels):
        """Bilinear filtering of a cube map across faces, as llvmpipe's
        lp_build_sample_image_linear with seamless_cube_map (float32): colors (m, 4) and the
        taps, each in the face image it reads."""
        packed, xp = self.packed, self.xp
        levels = packed.levels
        face = fl // levels
        level = fl - face * levels
        size, size_f = packed.widths[fl], packed.widths_f[fl]     # faces are square
        last = size - 1
        half = F32(0.5)
        # Face coordinates are in [0, 1] (NaN already 0); the clip only keeps hostile inputs
        # from indexing outside the images (llvmpipe assumes they are in range).
        u = xp.clip(s, F32(0), F32(1)) * size_f - half
        v = xp.clip(t, F32(0), F32(1)) * size_f - half
        floor_u, floor_v = xp.floor(u), xp.floor(v)
        ws, wt = (u - floor_u).astype(np.float32), (v - floor_v).astype(np.float32)
        x0, y0 = floor_u.astype(np.int32), floor_v.astype(np.int32)
        x1, y1 = x0 + 1, y0 + 1
        off_xm, off_xp, off_ym, off_yp = x0 < 0, x1 > last, y0 < 0, y1 > last
        y0c, y1c = xp.maximum(y0, 0), xp.minimum(y1, last)
        faces, new_x, new_y = _cube_new_coords(xp, face, x0, x1, y0c, y1c, last)
        # Taps 00, 01, 10, 11 (x0/x1 at y0, then at y1): off in x first; off in y only when
        # not off in x too (the corner tap then reads the x neighbour at the clamped row).
        where = xp.where
        xs = [where(off_xm, new_x[0][0], x0), where(off_xp, new_x[1][0], x1),
              where(off_xm, new_x[0][1], x0), where(off_xp, new_x[1][1], x1)]
        ys = [where(off_xm, new_y[0][0], y0c), where(off_xp, new_y[1][0], y0c),
              where(off_xm, new_y[0][1], y1c), where(off_xp, new_y[1][1], y1c)]
        zs = [where(off_xm, faces[0], face), where(off_xp, faces[1], face)]
        zs = [zs[0], zs[1], zs[0], zs[1]]
        for k, (off_y, off_x, side) in enumerate([(off_ym, off_xm, 2), (off_ym, off_xp, 2),
                                                  (off_yp, off_xm, 3), (off_yp, off_xp, 3)]):
            sel = off_y & ~off_x
            xs[k] = where(sel, new_x[side][k & 1], xs[k])
            ys[k] = where(sel, new_y[side][k & 1], ys[k])
            zs[k] = where(sel, faces[side], zs[k])
        images = [(z * levels + level).astype(np.int32) for z in zs]
        c = [xp.take(texels, packed.offsets[im] + y.astype(np.int64) * size + x, axis=0)
             for im, x, y in zip(images, xs, ys, strict=True)]
        corner = (off_xm | off_xp) & (off_ym | off_yp)
        color = _lerp_float(_lerp_float(c[0], c[1].copy(), ws[:, None]),
                            _lerp_float(c[2], c[3].copy(), ws[:, None]), wt[:, None])
        if bool(corner.any()):
            sub = xp.flatnonzero(corner)
            color[sub] = _corner_filter(xp, [ci[sub] for ci in c], ws[sub], wt[sub],
                                        [m[sub] for m in (off_xm, off_xp, off_ym, off_yp)])
        taps = _Taps(xs=xp.stack(xs), ys=xp.stack(ys), images=xp.stack(images))
        return color, taps

    def _wrap_nearest(self, s, size, size_f, wrap: str, pot: bool | None = None):
        """lp_build_sample_wrap_nearest: texel index (m,) int32 (``pot``: the dimension is a
        power of two; default the texture's width and height both are)."""
        xp = self.xp
        if wrap == "REPEAT":
            if self.packed.pot if pot is None else pot:
                return _ifloor(xp, s * size_f) & (size - 1)
            frac = xp.minimum(s - xp.floor(s), F32(0.99999994))
            return _itrunc(xp, frac * size_f)
        if wrap == "CLAMP_TO_EDGE":
            return xp.clip(_itrunc(xp, s * size_f), 0, size - 1)
        return xp.minimum(_itrunc(xp, _mirror(xp, s) * size_f), size - 1)   # MIRRORED_REPEAT

    def _wrap_linear(self, s, size, size_f, wrap: str, pot: bool | None = None):
        """lp_build_sample_wrap_linear: (i0, i1, weight float32)."""
        xp = self.xp
        half = F32(0.5)
        if wrap == "REPEAT":
            if self.packed.pot if pot is None else pot:
                u = s * size_f - half
                floor = xp.floor(u)
                i0 = _ifloor(xp, u) & (size - 1)
                return i0, (i0 + 1) & (size - 1), (u - floor).astype(np.float32)
            u = (s - xp.floor(s)) * size_f - half
            floor = xp.floor(u)
            i0 = xp.where(u < 0, size - 1, _ifloor(xp, u))
            i1 = xp.where(i0 != size - 1, i0 + 1, 0)
            return i0, i1, (u - floor).astype(np.float32)
        if wrap == "CLAMP_TO_EDGE":
            u = xp.maximum(xp.minimum(s * size_f, size_f) - half, F32(0))
            floor = xp.floor(u)
            i0 = _ifloor(xp, u)
            return i0, xp.minimum(i0 + 1, size - 1), (u - floor).astype(np.float32)
        u = _mirror(xp, s) * size_f - half                                       # MIRRORED
        floor = xp.floor(u)
        i0 = _ifloor(xp, u)
        return (xp.maximum(i0, 0), xp.minimum(i0 + 1, size - 1),
                (u - floor).astype(np.float32))

    def _wrap_linear_fixed(self, s, size, size_f, wrap: str, pot: bool | None = None):
        """lp_build_sample_wrap_linear_int (8.8 fixed point): (i0, i1, 8-bit weight)."""
        xp = self.xp
        if wrap == "REPEAT" and not (self.packed.pot if pot is None else pot):
            frac = s - xp.floor(s)
            scaled = _iround(xp, (frac * size_f) * F32(256)) - 128
            i0 = scaled >> 8
            i0 = xp.minimum(xp.where(i0 < 0, size - 1, i0), size - 1)
            return i0, xp.where(i0 != size - 1, i0 + 1, 0), scaled & 255
        scaled = _iround(xp, s * (size_f * F32(256))) - 128
        i0, weight = scaled >> 8, scaled & 255
        if wrap == "REPEAT":
            i0 = i0 & (size - 1)
            return i0, xp.where(i0 != size - 1, i0 + 1, 0), weight
        inside = (i0 >= 0) & (i0 < size - 1)                                     # CLAMP
        i0 = xp.clip(i0, 0, size - 1)
        return i0, xp.where(inside, i0 + 1, i0), weight

    # -- counters ---------------------------------------------------------------------------

    def _count(self, linear, two, footprints) -> None:
        xp, stats, active = self.xp, self.stats, self.active
        two = xp.zeros(self.n, dtype=bool) if two is None else two
        stats.samples += active
        kinds = {"nearest": ~linear & ~two, "nearest_mip_linear": ~linear & two,
                 "bilinear": linear & ~two, "trilinear": linear & two}
        if self.three_d:
            # A 3D LINEAR level is a 2x2x2 footprint, 8 texels: counted as one trilinear
            # sample per level (texels = sum over kinds of samples x texels per kind holds).
            kinds = {"nearest": ~linear & ~two, "nearest_mip_linear": ~linear & two,
                     "trilinear": xp.where(linear, xp.where(two, 2, 1), 0)}
        for name, mask in kinds.items():
            getattr(stats, name)[...] += mask * active
        # a 3D texture's LINEAR footprint is 2x2x2 texels per level
        per_linear = 8 if self.three_d else 4
        stats.texels += xp.where(active, xp.where(linear, per_linear, 1)
                                 * xp.where(two, 2, 1), 0)
        self.sampler._count_cache(xp, self.packed, footprints, active, self.n,
                                  self.request.instruction)


def stats_texels_consistent(stats: TextureStats) -> bool:
    """texels == sum over kinds of samples x texels per kind (a self-check for tests)."""
    expected = sum(getattr(stats, kind) * TEXELS_PER_KIND[kind] for kind in KINDS)
    return bool((expected == stats.texels).all())



def _incomplete(stats, active, n: int, xp):
    """What sampling an unbound or incomplete texture returns: (0, 0, 0, 1) per lane
    (counted as samples and as incomplete ones)."""
    if stats is not None:
        stats.samples += active
        stats.incomplete += active
    out = xp.zeros((4, n), dtype=np.float32)
    out[3] = 1
    return out


# == the compiled path (Numba, tilesim.jit): bit-identical to the code above =============

# The per-lane arithmetic of ``texture_sampler._Sampling`` (wrap, taps, fetch, filter, level
# blend) in float32 / int steps in the same order, so colors are bit-identical; the cache
# accesses are written out lane by lane, level 0 taps then level 1 taps, as ``_count_cache``
# orders them, and looked up by a loop of their own (``lookup_in_order_compiled``) or held
# (``_HeldAccesses``).


@jit(inline=True)
def line_access(rows, first_ways, base, line, sets, set_shift,
                owner):  # pragma: no cover - compiled
    """One access of cache line ``line`` to the cache whose sets start at ``base``
    (``lru_access_first`` on the line's set and tag; ``set_shift``: log2 of ``sets`` where a
    power of two, else -1); returns whether it hit."""
    if set_shift >= 0:      # a power of two (lines are non-negative)
        return lru_access_first(rows, first_ways, base + (line & (sets - 1)),
                                line >> set_shift, owner)
    return lru_access_first(rows, first_ways, base + line % sets, line // sets, owner)


@jit
def _texture_cache(table, width0, active, cache_of_lane, sets, set_shift, state, first_ways,
                   owner_base, accesses, misses):  # pragma: no cover - compiled
    n, width = table.shape
    for lane in range(n):
        if not active[lane]:
            continue
        base = cache_of_lane[lane] * sets
        for column in range(width):
            line = table[lane, column]
            if line < 0:
                continue
            # One access per distinct line among the columns of one level (slot).
            first = 0 if column < width0 else width0
            repeat = False
            for other in range(first, column):
                if table[lane, other] == line:
                    repeat = True
                    break
            if repeat:
                continue
            accesses[lane] += 1
            if not line_access(state, first_ways, base, line, sets, set_shift,
                               owner_base + lane):
                misses[lane] += 1


@jit
def _cache_segments(lane, sizes, cache_of_quad, caches, segment):  # pragma: no cover
    """Count each held part's accesses by cache into ``segment`` (see :func:`_by_cache`);
    whether every part's accesses already come cache by cache (lanes tile by tile, a cache
    a tile: ``quad_stages.tile_major``), so the split moves nothing."""
    start = 0
    ordered = True
    for e in range(sizes.shape[0]):
        stop = start + sizes[e]
        row = e * caches
        segment[row] = start
        last = -1
        for i in range(start, stop):
            c = cache_of_quad[lane[i] >> 2]
            segment[row + c + 1] += 1
            if c < last:
                ordered = False
            last = c
        for c in range(caches):
            segment[row + c + 1] += segment[row + c]
        start = stop
    return ordered


@jit
def _by_cache(lane, lines, sizes, cache_of_quad, caches, out_lane, out_lines,
              segment):  # pragma: no cover - compiled
    """Each held part's accesses split by cache, in their order (a stable counting sort,
    ``segment`` counted by :func:`_cache_segments`): part e's accesses of cache c are
    out_*[segment[e * caches + c]:segment[... + 1]]."""
    start = 0
    for e in range(sizes.shape[0]):
        stop = start + sizes[e]
        row = e * caches
        cursor = segment[row:row + caches].copy()
        for i in range(start, stop):
            c = cache_of_quad[lane[i] >> 2]
            out_lane[cursor[c]] = lane[i]
            out_lines[cursor[c]] = lines[i]
            cursor[c] += 1
        start = stop


@jit
def _held_walk(lane, lines, seqs, segment, window_end, ready, replayed, caches, sets, set_shift,
               state, first_ways, owner_base, misses, keep, first_cache,
               stop_cache):  # pragma: no cover - compiled
    """The LRU over the held accesses (split by :func:`_by_cache`) of the ready windows of
    caches ``first_cache..stop_cache``, cache by cache, window by window; in a window, seq by
    seq (the parts of one seq merged by lane), each lane's accesses in order. ``keep``
    (True on entry): the accesses not replayed. A cache's accesses, lanes and state rows are
    its own, so ranges of caches may run side by side."""
    parts = seqs.shape[0]
    windows = window_end.shape[0]
    cursor = np.empty(parts, dtype=np.int64)
    for c in range(first_cache, stop_cache):
        left = 0                # the cache's accesses not replayed yet
        for e in range(parts):
            cursor[e] = segment[e * caches + c]
            left += segment[e * caches + c + 1] - cursor[e]
        base = c * sets
        for w in range(c, windows, caches):
            if left == 0:
                break               # (one cache a tile: most have none, or few windows)
            if not ready[w]:
                if replayed[w]:
                    continue        # replayed before: none of its accesses are held
                break               # the cache's windows from here on have not all run
            limit = 4 * (window_end[w] + 1)     # the window's lanes lie below, after the last
            first = 0
            while first < parts:
                last = first + 1
                while last < parts and seqs[last] == seqs[first]:
                    last += 1
                while True:
                    # the part (of this seq) whose next access has the lowest lane
                    best, best_lane = -1, limit
                    for e in range(first, last):
                        k = cursor[e]
                        if k < segment[e * caches + c + 1] and lane[k] < best_lane:
                            best, best_lane = e, lane[k]
                    if best < 0:
                        break
                    k, end = cursor[best], segment[best * caches + c + 1]
                    while k < end and lane[k] == best_lane:
                        if not line_access(state, first_ways, base, lines[k], sets,
                                           set_shift, owner_base + best_lane):
                            misses[best_lane] += 1
                        keep[k] = False
                        k += 1
                        left -= 1
                    cursor[best] = k
                first = last


def replay_held_compiled(lane, lines, sizes, seqs, window_end, ready, replayed, cache_of_quad,
                         caches: int, sets: int, state, first_ways: int, owner_base: int,
                         misses):
    """``_HeldAccesses.replay`` compiled: the held parts (consecutive runs of ``sizes`` (E,)
    in ``lane``, ``lines``, each in lane order, the parts sorted by their seq ``seqs``)
    through the exact LRU ``state``, window by window of the ``ready`` ones (``replayed``:
    those replayed before), adding each miss to ``misses``. Returns (lane, lines, keep): the
    parts' accesses split by cache (each part's runs stay where they were) and which are
    still held."""
    segment = np.zeros(sizes.shape[0] * caches + 1, dtype=np.int64)
    out_lane, out_lines = lane, lines
    if not _cache_segments(lane, sizes, cache_of_quad, caches, segment):
        out_lane, out_lines = np.empty_like(lane), np.empty_like(lines)
        _by_cache(lane, lines, sizes, cache_of_quad, caches, out_lane, out_lines, segment)
    keep = np.ones(lane.shape[0], dtype=bool)
    set_shift = power_of_two_shift(sets)
    per_cache = np.diff(segment)[:sizes.shape[0] * caches].reshape(-1, caches).sum(axis=0)

    def walk(span):
        _held_walk(out_lane, out_lines, seqs, segment, window_end, ready, replayed, caches,
                   sets, set_shift, state, first_ways, owner_base, misses, keep, *span)

    in_threads(walk, weighted_spans(per_cache, per_thread=4))
    return out_lane, out_lines, keep


@jit
def _lookup_in_order(lanes, lines, lane_tile, has_tile, caches, sets, set_shift, rows,
                     first_ways, owner_base, misses):  # pragma: no cover - compiled
    for k in range(lanes.shape[0]):
        lane = lanes[k]
        line = lines[k]
        cache = lane_tile[lane] if has_tile else lane >> 2
        if cache >= caches:     # (one cache a tile: never, and no division)
            cache %= caches
        if not line_access(rows, first_ways, cache * sets, line, sets, set_shift,
                           owner_base + lane):
            misses[lane] += 1


def lookup_in_order_compiled(lanes, lines, lane_tile, has_tile: bool, caches: int, sets: int,
                             rows, first_ways: int, owner_base: int, misses) -> None:
    """The accesses (``lanes`` (M,) of the request, ``lines``) in order through the exact
    LRU (``rows``, ``first_ways``: ``SetAssociativeLRU.kernel_rows``; a lane's cache: its
    tile, or its quad, modulo ``caches``), adding each miss to ``misses`` (n,); lane i's
    owner is ``owner_base + i``."""
    set_shift = power_of_two_shift(sets)
    _lookup_in_order(lanes, lines, lane_tile, has_tile, caches, sets, set_shift, rows,
                     first_ways, owner_base, misses)


@jit
def _fill_lines(table, column, xs, ys, images, lanes, has_lanes, blocks_w, line_bases, bpp,
                shift, mask, line_shift):  # pragma: no cover - compiled
    k, m = xs.shape
    for i in range(m):
        row = lanes[i] if has_lanes else i
        for j in range(k):
            x = np.int64(xs[j, i])
            y = np.int64(ys[j, i])
            image = images[j, i]
            offset = ((((y >> shift) * np.int64(blocks_w[image]) + (x >> shift))
                       << (2 * shift)) + ((y & mask) << shift) + (x & mask))
            table[row, column + j] = ((offset * bpp) >> line_shift) + line_bases[image]


def fill_lines_compiled(table, column: int, xs, ys, images, lanes, blocks_w, line_bases, bpp: int,
                        shift: int, mask: int, line_shift: int) -> None:
    """Write the cache line of every tap ((k, m) texel columns ``xs``, rows ``ys``, images)
    into ``table[lanes[i], column + j]`` (``lanes`` None: row i), as
    ``TextureSampler._count_cache`` computes them: the texel's offset in its level's
    block-linear layout, times ``bpp`` (bits per texel, with ``line_shift`` the line size's
    log2 in bits), in lines, after the image's first line."""
    has_lanes = lanes is not None
    _fill_lines(table, column, xs, ys, images,
                lanes if has_lanes else np.zeros(0, dtype=np.int64), has_lanes, blocks_w,
                line_bases, bpp, shift, mask, line_shift)


def texture_cache_compiled(table, width0: int, active, cache_of_lane, sets: int, state,
                           first_ways: int, owner_base: int, accesses, misses) -> None:
    """The cache accesses of one sampling instruction, lane by lane and column by column:
    ``table`` (N, width) int64 line numbers (negative: none; a line repeated among the
    columns of one level, the first ``width0`` or the rest, is accessed once),
    ``active`` (N,) bool,
    ``cache_of_lane`` (N,) int64 the cache each lane uses; adds each lane's accesses and
    misses to ``accesses`` / ``misses`` (N,) int64 and updates ``state`` and ``first_ways``
    (``SetAssociativeLRU.kernel_rows``; lane i's owner ``owner_base + i``) as
    ``TextureSampler._count_cache`` does with the vectorized LRU."""
    set_shift = power_of_two_shift(sets)
    _texture_cache(table, width0, active, cache_of_lane, sets, set_shift, state, first_ways,
                   owner_base, accesses, misses)


@jit
def _bilinear_fixed(texels, base, width, x0, x1, y0, y1, ws, wt, out):  # pragma: no cover
    count = texels.shape[0]
    for i in range(x0.shape[0]):
        row0 = base[i] + np.int64(y0[i]) * width[i]
        row1 = base[i] + np.int64(y1[i]) * width[i]
        r00, r01, r10, r11 = row0 + x0[i], row0 + x1[i], row1 + x0[i], row1 + x1[i]
        if min(r00, r01, r10, r11) < 0 or max(r00, r01, r10, r11) >= count:
            return False
        w, v = np.int64(ws[i]), np.int64(wt[i])
        for c in range(4):
            a = np.int64(texels[r00, c])
            top = a + (((np.int64(texels[r01, c]) - a) * w + 128) >> 8)
            a = np.int64(texels[r10, c])
            bottom = a + (((np.int64(texels[r11, c]) - a) * w + 128) >> 8)
            out[i, c] = top + (((bottom - top) * v + 128) >> 8)
    return True


def bilinear_fixed_compiled(texels, base, width, x0, x1, y0, y1, ws, wt) -> np.ndarray:
    """llvmpipe's 8.8 fixed-point bilinear filter (``_lerp_fixed`` of the four taps, as
    ``_Sampling._sample_level``): (m, 4) int32 from the (T, 4) int32 ``texels`` of each
    lane's image (first texel ``base``, row length ``width``) at columns x0/x1, rows y0/y1,
    with 8-bit weights ws, wt."""
    out = np.empty((x0.size, 4), dtype=np.int32)
    if not _bilinear_fixed(texels, base, width, x0, x1, y0, y1, ws, wt, out):
        raise IndexError("bilinear taps outside the texture's texels")
    return out


WRAP_CODES = {"REPEAT": 0, "CLAMP_TO_EDGE": 1, "MIRRORED_REPEAT": 2}


_F0, _HALF, _F256 = np.float32(0), np.float32(0.5), np.float32(256)




_BELOW_ONE = np.float32(0.99999994)




@jit
def _clip_coord(v):  # pragma: no cover - compiled
    """np.clip(v, -2^30, 2^30) of a finite float32 (before float -> int conversions)."""
    if v < -_COORD_LIMIT:
        return -_COORD_LIMIT
    if v > _COORD_LIMIT:
        return _COORD_LIMIT
    return v


@jit
def _mirror_kernel(s):  # pragma: no cover - compiled
    half = s * _HALF
    frac = half - np.rint(half)
    return abs(frac + frac)


@jit
def _wrap_nearest(s, size, size_f, wrap, pot):  # pragma: no cover - compiled
    """_Sampling._wrap_nearest for one coordinate."""
    if wrap == 0:
        if pot:
            return np.int64(np.floor(_clip_coord(s * size_f))) & (size - 1)
        frac = min(s - np.floor(s), _BELOW_ONE)
        return np.int64(_clip_coord(frac * size_f))        # truncation
    if wrap == 1:
        return min(max(np.int64(_clip_coord(s * size_f)), 0), size - 1)
    return min(np.int64(_clip_coord(_mirror_kernel(s) * size_f)), size - 1)


@jit
def _wrap_linear(s, size, size_f, wrap, pot):  # pragma: no cover - compiled
    """_Sampling._wrap_linear for one coordinate: (i0, i1, float32 weight)."""
    if wrap == 0:
        if pot:
            u = s * size_f - _HALF
            i0 = np.int64(np.floor(_clip_coord(u))) & (size - 1)
            return i0, (i0 + 1) & (size - 1), u - np.floor(u)
        u = (s - np.floor(s)) * size_f - _HALF
        i0 = size - 1 if u < _F0 else np.int64(np.floor(_clip_coord(u)))
        return i0, (i0 + 1 if i0 != size - 1 else 0), u - np.floor(u)
    if wrap == 1:
        u = max(min(s * size_f, size_f) - _HALF, _F0)
        i0 = np.int64(np.floor(_clip_coord(u)))
        return i0, min(i0 + 1, size - 1), u - np.floor(u)
    u = _mirror_kernel(s) * size_f - _HALF
    i0 = np.int64(np.floor(_clip_coord(u)))
    return max(i0, 0), min(i0 + 1, size - 1), u - np.floor(u)


@jit
def _wrap_linear_fixed(s, size, size_f, wrap, pot):  # pragma: no cover - compiled
    """_Sampling._wrap_linear_fixed (REPEAT or CLAMP_TO_EDGE): (i0, i1, 8-bit weight)."""
    if wrap == 0 and not pot:
        scaled = np.int64(np.rint(_clip_coord((s - np.floor(s)) * size_f * _F256))) - 128
        i0 = min(size - 1 if (scaled >> 8) < 0 else scaled >> 8, size - 1)
        return i0, (i0 + 1 if i0 != size - 1 else 0), scaled & 255
    scaled = np.int64(np.rint(_clip_coord(s * (size_f * _F256)))) - 128
    i0, weight = scaled >> 8, scaled & 255
    if wrap == 0:
        i0 = i0 & (size - 1)
        return i0, (i0 + 1 if i0 != size - 1 else 0), weight
    inside = i0 >= 0 and i0 < size - 1
    i0 = min(max(i0, 0), size - 1)
    return i0, (i0 + 1 if inside else i0), weight


@jit(inline=True)
def _taps(s, t, linear, fixed, width, height, width_f, height_f, wrap_s, wrap_t,
          pot):  # pragma: no cover - compiled
    """The taps of one level (``_sample_level``'s wrap): columns x0, x1, rows y0, y1 (x1 = x0,
    y1 = y0 for NEAREST) and the weights, 8-bit (fixed) or float32."""
    if not linear:
        x = _wrap_nearest(s, width, width_f, wrap_s, pot)
        y = _wrap_nearest(t, height, height_f, wrap_t, pot)
        return x, x, y, y, 0, 0, _F0, _F0
    if fixed:
        x0, x1, wsi = _wrap_linear_fixed(s, width, width_f, wrap_s, pot)
        y0, y1, wti = _wrap_linear_fixed(t, height, height_f, wrap_t, pot)
        return x0, x1, y0, y1, wsi, wti, _F0, _F0
    x0, x1, wsf = _wrap_linear(s, width, width_f, wrap_s, pot)
    y0, y1, wtf = _wrap_linear(t, height, height_f, wrap_t, pot)
    return x0, x1, y0, y1, 0, 0, wsf, wtf


# 8-bit channels r, g, b, a in the 16-bit fields of one int64 ("spread" texels): one
# multiply-add lerps all four, a (256 - w) + b w + 128 < 2^16 per field (a + ((w (b - a) + 128)
# >> 8) == (a (256 - w) + b w + 128) >> 8 exactly); the top field may wrap the sign, which
# the mask after the shift drops.
_FIELDS = np.int64(0x00FF00FF00FF00FF)


_ROUND = np.int64(0x0080008000800080)


@jit
def _lerp_spread(a, b, w):  # pragma: no cover - compiled
    """llvmpipe's 8-bit lerp of four spread channels at once (see ``_lerp_fixed``)."""
    return ((a * (256 - w) + b * w + _ROUND) >> 8) & _FIELDS


def _lanes_kernel(fixed, min_linear, mag_linear, has_two, counting):
    """The lane loop of :func:`sample_lanes_compiled` for one combination of the per-call
    flags: Numba compiles each closure with the flags as constants (and caches each on disk,
    keyed by them), so the loop body has no branches on them (about 10% of its time on the
    runner trace). ``run(count, arrays)``: ``count`` the texels, ``arrays`` the wrapper's
    tuple of the rest, unpacked once before the loop (unpacked per lane, as an inlined
    per-lane helper does, each array costs a reference count per lane: the loop ran 3.4x
    slower).

    ``run(count, arrays, start, stop, part)`` samples lanes ``start..stop`` (a thread's span,
    :func:`sample_lanes_compiled`). ``counting``: the counters, and the cache accesses written
    out in order from entry ``8 * start`` (at most 8 a lane, so spans never overlap), each
    distinct line of a level's taps once: access h is line ``held_lines[h]`` of lane
    ``lane_base + i`` (``held_lanes[h]``), ``held_count[part]`` the number written. The
    lookups are a loop of their own (``lookup_in_order_compiled``, or :class:`_HeldAccesses`):
    noting the caches' first tags (tile_caches.py) in this loop slowed it more than the
    separate loop costs
    (docs/notes/texture-cache-order.md)."""

    @jit
    def run(count, arrays, start, stop, part):  # pragma: no cover - compiled
        (s, t, face, minified, level0, level1, weight, levels, spread, texels, offsets, widths,
         heights, widths_f, heights_f, wrap_s, wrap_t, pot, out, active, blocks_w, line_bases,
         bpp, shift, mask, line_shift, samples, texel_counts, nearest, nearest_mip_linear,
         bilinear, trilinear, accesses, held_lanes, held_lines, held_count, lane_base) = arrays
        color_f = np.empty((2, 4), dtype=np.float32)
        held = first_held = 8 * start
        for i in range(start, stop):
            mini = minified[i]
            linear = min_linear if mini else mag_linear
            two = False
            weight_i = 0
            weight_f = _F0
            if has_two and mini:
                weight_f = weight[i]
                if fixed:
                    weight_i = np.int64(np.int32(weight_f * _F256))
                    two = weight_i > 0
                else:
                    two = weight_f > _F0
            lane_counted = counting and active[i]
            lane_accesses = np.int64(0)
            color = color1 = np.int64(0)
            for slot in range(2 if two else 1):
                image = np.int64(face[i]) * levels + (
                    np.int64(level1[i]) if slot else (np.int64(level0[i]) if mini else 0))
                width = np.int64(widths[image])
                x0, x1, y0, y1, wsi, wti, wsf, wtf = _taps(
                    s[i], t[i], linear, fixed, width, np.int64(heights[image]),
                    widths_f[image], heights_f[image], wrap_s, wrap_t, pot)
                row0 = offsets[image] + y0 * width
                row1 = offsets[image] + y1 * width
                r00, r01, r10, r11 = row0 + x0, row0 + x1, row1 + x0, row1 + x1
                if min(r00, r01, r10, r11) < 0 or max(r00, r01, r10, r11) >= count:
                    if lane_counted:        # the accesses made so far, as they were counted
                        accesses[i] += lane_accesses
                    held_count[part] = held - first_held
                    return False
                if fixed:
                    c = spread[r00]
                    if linear:
                        c = _lerp_spread(_lerp_spread(c, spread[r01], wsi),
                                         _lerp_spread(spread[r10], spread[r11], wsi), wti)
                    if slot:
                        color1 = c
                    else:
                        color = c
                else:
                    for ch in range(4):
                        a = texels[r00, ch]
                        if linear:
                            top = (texels[r01, ch] - a) * wsf + a
                            a = texels[r10, ch]
                            bottom = (texels[r11, ch] - a) * wsf + a
                            a = (bottom - top) * wtf + top
                        color_f[slot, ch] = a
                if lane_counted:
                    # as _fill_lines: each distinct line among the level's taps (00, 01, 10,
                    # 11) is one access. The texel offset in the block-linear level is a
                    # column part plus a row part.
                    blocks = np.int64(blocks_w[image])
                    first = line_bases[image]
                    column0 = ((x0 >> shift) << (2 * shift)) + (x0 & mask)
                    row_part0 = (((y0 >> shift) * blocks) << (2 * shift)) + ((y0 & mask) << shift)
                    line00 = (((row_part0 + column0) * bpp) >> line_shift) + first
                    line01 = line10 = line11 = line00
                    if linear:
                        column1 = ((x1 >> shift) << (2 * shift)) + (x1 & mask)
                        row_part1 = ((((y1 >> shift) * blocks) << (2 * shift))
                                     + ((y1 & mask) << shift))
                        line01 = (((row_part0 + column1) * bpp) >> line_shift) + first
                        line10 = (((row_part1 + column0) * bpp) >> line_shift) + first
                        line11 = (((row_part1 + column1) * bpp) >> line_shift) + first
                    for j in range(4 if linear else 1):
                        if j == 0:
                            line = line00
                        elif j == 1:
                            if line01 == line00:
                                continue
                            line = line01
                        elif j == 2:
                            if line10 == line00 or line10 == line01:
                                continue
                            line = line10
                        else:
                            if line11 == line00 or line11 == line01 or line11 == line10:
                                continue
                            line = line11
                        lane_accesses += 1
                        held_lanes[held] = lane_base + i
                        held_lines[held] = line
                        held += 1
            if two:
                if fixed:
                    color = _lerp_spread(color, color1, weight_i)
                else:
                    for ch in range(4):
                        color_f[0, ch] = ((color_f[1, ch] - color_f[0, ch]) * weight_f
                                          + color_f[0, ch])
            for ch in range(4):
                # Fixed point: n / 255 as llvmpipe converts, n * float32(1 / 255).
                out[ch, i] = (np.float32((color >> (16 * ch)) & 255) * _INV255 if fixed
                              else color_f[0, ch])
            if lane_counted:
                samples[i] += 1
                texel_counts[i] += (4 if linear else 1) * (2 if two else 1)
                if linear:
                    if two:
                        trilinear[i] += 1
                    else:
                        bilinear[i] += 1
                elif two:
                    nearest_mip_linear[i] += 1
                else:
                    nearest[i] += 1
                accesses[i] += lane_accesses
        held_count[part] = held - first_held
        return True

    return run


_lane_kernels = {}


def _lane_kernel(fixed: bool, min_linear: bool, mag_linear: bool, has_two: bool,
                 counting: bool):
    """The lane loop for these flags, compiled on first use (from Numba's disk cache after)."""
    key = (fixed, min_linear, mag_linear, has_two, counting)
    kernel = _lane_kernels.get(key)
    if kernel is None:
        kernel = _lane_kernels[key] = _lanes_kernel(*key)
    return kernel


def sample_lanes_compiled(out, s, t, face, lod, packed, *, fixed: bool, min_linear: bool,
                          mag_linear: bool, wrap_s: str, wrap_t: str, stats=None, active=None,
                          cache=None, held=None, parts=None, each_part=None) -> None:
    """Sample every lane (not seamless cube-map LINEAR taps) into ``out`` (4, n) float32, as
    ``_Sampling._filter`` does: ``s``, ``t`` sanitized float32 coordinates, ``face`` (n,),
    ``lod`` the sampler's ``_Lod``, ``packed`` its ``_Packed`` texture; with ``stats`` (a
    TextureStats), also its counters of the ``active`` lanes but misses, their cache lines
    (``cache`` the TextureCacheConfig) written to ``held``: (lanes, lines, counts, lane base),
    see :func:`_lanes_kernel`; the caller looks them up.

    ``parts``: (start, stop) spans of the lanes, run side by side (each lane writes only its
    own outputs; :func:`tilesim.jit.in_threads`); part k's accesses are ``held``'s entries
    from ``8 * start``, ``held[2][k]`` of them, and ``each_part(k)`` (if given) runs in part
    k's thread after its lanes. None: one part."""
    parts = [(0, int(s.shape[0]))] if parts is None else list(parts)
    has_two = lod.weight is not None
    floats0 = np.zeros(1, dtype=np.float32)
    ints0 = np.zeros(1, dtype=np.int64)
    counting = stats is not None
    if counting:
        geometry = (packed.blocks_w, packed.line_bases, packed.bits,
                    cache.block.bit_length() - 1, cache.block - 1,
                    cache.line_bytes.bit_length() - 1 + 3)
        counters = tuple(getattr(stats, name) for name in (
            "samples", "texels", "nearest", "nearest_mip_linear", "bilinear", "trilinear",
            "cache_accesses"))
        active = np.ascontiguousarray(active, dtype=bool)
    else:
        geometry = (packed.blocks_w, packed.line_bases, 1, 0, 0, 0)
        counters = (ints0,) * 7
        active = np.zeros(1, dtype=bool)
        held = (ints0, ints0, np.zeros(len(parts), dtype=np.int64), 0)
    run = _lane_kernel(bool(fixed), bool(min_linear), bool(mag_linear), has_two, counting)
    count = packed.texels_spread.shape[0] if fixed else packed.texels.shape[0]
    arrays = (
        s, t, face, lod.minified, lod.level0,
        lod.level1 if has_two else np.zeros(1, dtype=np.int32),
        lod.weight if has_two else floats0, packed.levels,
        packed.texels_spread if fixed else ints0, packed.texels,
        packed.offsets, packed.widths, packed.heights, packed.widths_f, packed.heights_f,
        WRAP_CODES[wrap_s], WRAP_CODES[wrap_t], packed.pot, out, active, *geometry, *counters,
        *held)

    def one(k):
        start, stop = parts[k]
        ran = run(count, arrays, start, stop, k)
        if ran and each_part is not None:
            each_part(k)
        return ran

    if not all(in_threads(one, range(len(parts)))):
        raise IndexError("texture taps outside the texture's texels")


_LOD_LIMIT = np.float32(1000)


MIP_CODES = {"none": 0, "nearest": 1, "linear": 2}


@jit
def _sanitize_kernel(v):  # pragma: no cover - compiled
    """texture_sampler._sanitize of one float32: NaN -> 0, clamped to +-2^24."""
    if v != v:
        return _F0
    return min(max(v, -_COORD_RANGE), _COORD_RANGE)


@jit
def _implicit_lod(coords_s, coords_t, need_lod, width, height, mip, last, switchover, s, t,
                  minified, level0, level1, weight):  # pragma: no cover - compiled
    for i in range(coords_s.shape[0]):
        s[i] = _sanitize_kernel(np.float32(coords_s[i]))
        t[i] = _sanitize_kernel(np.float32(coords_t[i]))
    if not need_lod:    # one image filter: every lane "minified" from level 0
        minified[:] = True
        level0[:] = 0
        return
    bits = np.empty(1, dtype=np.int32)
    value = bits.view(np.float32)       # float32 <-> bits, as the NumPy code's .view
    for q in range(s.shape[0] // 4):
        i = 4 * q
        # _rho2_quads: from the top-left lane's right and lower neighbours.
        dsdx, dsdy = (s[i + 1] - s[i]) * width, (s[i + 2] - s[i]) * width
        dtdx, dtdy = (t[i + 1] - t[i]) * height, (t[i + 2] - t[i]) * height
        a = dsdx * dsdx + dtdx * dtdx
        b = dsdy * dsdy + dtdy * dtdy
        rho2 = _F0 if a != a or b != b else max(a, b)
        value[0] = rho2
        exponent = (bits[0] >> 23) & 0xFF
        # _lod with llvmpipe's fast log2.
        if mip != 2:
            # ipart = round(log2(rho)) exactly; minified when lambda > c.
            mini = rho2 > (np.float32(2) if switchover > _F0 else np.float32(1))
            lev0 = min(max((exponent - 127 + 1) >> 1, 0), last) if mip == 1 else 0
            lev1, frac = 0, _F0
        else:
            bits[0] = (bits[0] & 0x007FFFFF) | 0x3F800000      # the mantissa in [1, 2)
            lod = (np.float32(exponent - 128) + value[0]) * _HALF
            lod = min(max(lod, -_LOD_LIMIT), _LOD_LIMIT)        # never NaN: rho2 is finite
            mini = lod > switchover
            floor = np.floor(lod)
            frac = lod - floor
            ipart = np.int64(floor)
            lev0 = min(max(ipart, 0), last)
            lev1 = min(max(ipart + 1, 0), last)
            if ipart < 0 or ipart >= last:
                frac = _F0
        for k in range(4):
            minified[i + k] = mini
            level0[i + k] = lev0
            level1[i + k] = lev1
            weight[i + k] = frac


def implicit_lod_compiled(coords_s, coords_t, need_lod: bool, width: int, height: int, mip: str,
                          last: int, switchover):
    """Sanitized s, t and the level of detail of 2D lanes, as ``_Sampling._run`` computes them
    (``_sanitize_kernel``, then, with ``need_lod``, ``_rho2_quads`` and ``_lod`` for an implicit LOD
    with llvmpipe's fast log2, per quad: lanes 4q..4q+3, n a multiple of 4):
    (s, t, minified, level0, level1, weight), level1 and weight None unless ``mip`` is
    "linear"."""
    n = coords_s.shape[0]
    s = np.empty(n, dtype=np.float32)
    t = np.empty(n, dtype=np.float32)
    minified = np.empty(n, dtype=bool)
    level0 = np.empty(n, dtype=np.int32)
    level1 = np.empty(n, dtype=np.int32)
    weight = np.empty(n, dtype=np.float32)
    _implicit_lod(coords_s, coords_t, need_lod, np.float32(width), np.float32(height),
                  MIP_CODES[mip], last, np.float32(switchover), s, t, minified, level0, level1,
                  weight)
    if mip != "linear" or not need_lod:
        level1 = weight = None
    return s, t, minified, level0, level1, weight
