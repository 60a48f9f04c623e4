"""Texture objects as the GL state machine keeps them (OpenGL ES 2.0 §3.7).

A :class:`Texture` is a TEXTURE_2D or TEXTURE_CUBE_MAP object: for every face (1 or 6) and
mip level an image, plus the sampler parameters (min/mag filter, wrap s/t) with GL's
defaults. Each image keeps

- ``texels``: (H, W, 4) float32 RGBA in [0, 1] after the GLES2 format conversion (RGBA;
  RGB -> (R, G, B, 1); LUMINANCE -> (L, L, L, 1); ALPHA -> (0, 0, 0, A); LUMINANCE_ALPHA ->
  (L, L, L, A)), each component c of b bits converted exactly as GL does, c / (2^b - 1);
- ``stored``: (H, W, C) uint16, the components as the format stores them (C = 1..4), which
  is what glGenerateMipmap and texSubImage2D work on;
- ``bytes_per_texel``: the size of one texel of the internal format (RGBA/UNSIGNED_BYTE 4,
  RGB 3, LUMINANCE_ALPHA 2, LUMINANCE and ALPHA 1, the packed 16-bit types 2) for the
  memory-traffic counters; ``bits_per_texel`` the same in bits, which is what a compressed
  format has (ETC1_RGB8_OES and DXT1: 4 bits, DXT3 / DXT5: 8 bits, decoded to RGB or RGBA
  at upload, :mod:`.compressed`).

Rows follow GL's convention: ``texels[t][s]``, row 0 is the first row of the client data,
t = 0 (the bottom of the image in GL's picture). Client data are unpacked with
UNPACK_ALIGNMENT row padding and, as EXT_unpack_subimage adds to OpenGL ES 2.0,
UNPACK_ROW_LENGTH / UNPACK_SKIP_ROWS / UNPACK_SKIP_PIXELS (a sub-rectangle of a larger client
image: :func:`unpack_layout`); 16-bit packed texels are read little-endian (client memory of
the machines traces come from).

Completeness (ES 2.0 §3.7.10, §3.8.2): :meth:`Texture.incomplete_reason` says why a texture
would sample as (0, 0, 0, 1): a mipmapping min filter without a full mip chain of
consistent sizes and formats, a missing or empty level 0, cube faces that are missing, not
square or of different sizes or formats, and, unless ``oes_texture_npot`` is set (Mesa
exposes GL_OES_texture_npot on its ES2 contexts, so traces captured on Mesa may rely on it),
a non-power-of-two texture with a wrap mode other than CLAMP_TO_EDGE or with a mipmapping
min filter.

glGenerateMipmap (:meth:`Texture.generate_mipmap`) reproduces Mesa llvmpipe bit for bit
(checked against it for power-of-two and odd sizes): level i + 1 is level i resampled at the
centers of its texels with a clamp-to-edge bilinear filter in 8.8 fixed point, each lerp
``a + ((w * (b - a) + 128) >> 8)`` with w the 8-bit weight. For even sizes that is the 2x2
box filter ``((a + b + 1) >> 1`` across, then down); odd sizes weigh the source texels by
where the destination centers fall (5 -> 2 texels: weights 3/4 and 1/4), as Mesa's blit does.
Formats with fewer than 8 bits per component are widened to 8 bits, filtered the same way and
rounded back.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

import numpy as np

from tilesim.errors import InputError
from tilesim.render.gl.commands import (
    CUBE_FACES,
    DEPTH_TEXEL_TYPES,
    DEPTH_TEXTURE_FORMATS,
    FILTERS,
    IMAGE_TARGETS,
    TEXEL_TYPES,
    TEXTURE_FORMATS,
    WRAPS,
)
from tilesim.render.gl.compressed import (
    BITS_PER_TEXEL,
    COMPRESSED_COMPONENTS,
    COMPRESSED_FORMATS,
    compressed_image_size,
    decode_compressed,
)

__all__ = [
    "DEPTH_BITS",
    "MAX_LEVELS",
    "MAX_TEXTURE_SIZE",
    "MIPMAP_FILTERS",
    "Texture",
    "TextureImage",
    "lerp_u8",
    "requantize",
    "unpack_layout",
    "unpack_pixels",
]

TEXTURE_2D = "TEXTURE_2D"
TEXTURE_CUBE_MAP = "TEXTURE_CUBE_MAP"
# OES_texture_3D. Each level is one image of ``depth`` slices stacked along its rows (row
# z * height + y), so the flat texel arrays, uploads and the cache model's addresses see a
# 3D level as slices one after another in memory.
TEXTURE_3D = "TEXTURE_3D_OES"
# llvmpipe's LP_MAX_TEXTURE_3D_LEVELS = 12: 2048 x 2048 x 2048, levels 0..11.
MAX_3D_LEVELS = 12
# Mesa llvmpipe's limits (LP_MAX_TEXTURE_2D_LEVELS = 14): 8192 x 8192, levels 0..13.
MAX_LEVELS = 14
MAX_TEXTURE_SIZE = 1 << (MAX_LEVELS - 1)
MIPMAP_FILTERS = ("NEAREST_MIPMAP_NEAREST", "LINEAR_MIPMAP_NEAREST", "NEAREST_MIPMAP_LINEAR",
                  "LINEAR_MIPMAP_LINEAR")
MAG_FILTERS = ("NEAREST", "LINEAR")
FACE_OF_TARGET = {TEXTURE_2D: 0, **{face: i for i, face in enumerate(CUBE_FACES)}}

# Components stored by each format, and how they become RGBA: index into the stored
# components, or -1 for 0 and -2 for 1.
# BGRA_EXT (EXT_texture_format_BGRA8888) stores the client's B, G, R, A bytes in that order.
# ETC1_RGB8_OES (OES_compressed_ETC1_RGB8_texture) and DXT1 RGB keep their decoded R, G, B,
# the other S3TC formats R, G, B, A.
_COMPONENTS = {"RGBA": 4, "RGB": 3, "LUMINANCE_ALPHA": 2, "LUMINANCE": 1, "ALPHA": 1,
               "DEPTH_COMPONENT": 1, "BGRA_EXT": 4, **COMPRESSED_COMPONENTS}
_TO_RGBA = {"RGBA": (0, 1, 2, 3), "RGB": (0, 1, 2, -2), "LUMINANCE_ALPHA": (0, 0, 0, 1),
            "LUMINANCE": (0, 0, 0, -2), "ALPHA": (-1, -1, -1, 0),
            "DEPTH_COMPONENT": (0, 0, 0, -2), "BGRA_EXT": (2, 1, 0, 3),
            **{fmt: (0, 1, 2, -2) if n == 3 else (0, 1, 2, 3)
               for fmt, n in COMPRESSED_COMPONENTS.items()}}
# The RGBA components each color format stores (rendering into it, copying to it).
_FROM_RGBA = {"RGBA": (0, 1, 2, 3), "RGB": (0, 1, 2), "LUMINANCE_ALPHA": (0, 3),
              "LUMINANCE": (0,), "ALPHA": (3,), "BGRA_EXT": (2, 1, 0, 3)}
# Formats that store alpha.
_ALPHA_FORMATS = ("RGBA", "ALPHA", "LUMINANCE_ALPHA", "BGRA_EXT")
# Depth textures (GL_OES_depth_texture): bits of the depth value Mesa llvmpipe stores per
# client type (UNSIGNED_SHORT: Z16_UNORM; UNSIGNED_INT: 24 bits, the client's 32-bit values
# truncated, u >> 8; softpipe would keep 32 bits), and client bytes per texel.
DEPTH_BITS = {"UNSIGNED_SHORT": 16, "UNSIGNED_INT": 24}
_DEPTH_CLIENT_BYTES = {"UNSIGNED_SHORT": 2, "UNSIGNED_INT": 4}
# Packed 16-bit types: the one format each goes with, and its component sizes, most
# significant bits first (ES 2.0 table 3.5).
_PACKED_BITS = {"UNSIGNED_SHORT_5_6_5": ("RGB", (5, 6, 5)),
                "UNSIGNED_SHORT_4_4_4_4": ("RGBA", (4, 4, 4, 4)),
                "UNSIGNED_SHORT_5_5_5_1": ("RGBA", (5, 5, 5, 1))}
# OES_texture_half_float: components stored as IEEE half-float bit patterns, sampled as the
# floats they are (not normalized, not clamped).
HALF_FLOAT = "HALF_FLOAT_OES"
_ALIGNMENTS = (1, 2, 4, 8)
_uids = itertools.count(1)


def _is_pot(n: int) -> bool:
    return n > 0 and n & (n - 1) == 0


def component_bits(fmt: str, type_: str) -> tuple[int, ...]:
    """Bits of each stored component of ``fmt``/``type_``."""
    if fmt in DEPTH_TEXTURE_FORMATS:
        return (DEPTH_BITS[type_],)
    if type_ == "UNSIGNED_BYTE":
        return (8,) * _COMPONENTS[fmt]
    if type_ == HALF_FLOAT:
        return (16,) * _COMPONENTS[fmt]
    return _PACKED_BITS[type_][1]


def bytes_per_texel(fmt: str, type_: str) -> int:
    """Size in bytes of one texel as the client's uncompressed format stores it."""
    if fmt in DEPTH_TEXTURE_FORMATS:
        return _DEPTH_CLIENT_BYTES[type_]
    if type_ == HALF_FLOAT:
        return 2 * _COMPONENTS[fmt]
    return _COMPONENTS[fmt] if type_ == "UNSIGNED_BYTE" else 2


def bits_per_texel(fmt: str, type_: str) -> int:
    """Bits of texture memory per texel: a compressed format's rate (ETC1: 4), else 8 x
    :func:`bytes_per_texel`. The texture cache and memory traffic are counted with these."""
    if fmt in BITS_PER_TEXEL:
        return BITS_PER_TEXEL[fmt]
    return 8 * bytes_per_texel(fmt, type_)


def _check_format(call: str, fmt: str, type_: str, where: str | None,
                  depth: bool = False) -> None:
    """``depth``: DEPTH_COMPONENT with UNSIGNED_SHORT / UNSIGNED_INT is allowed too."""
    if fmt in DEPTH_TEXTURE_FORMATS and depth:
        if type_ not in DEPTH_TEXEL_TYPES:
            raise InputError(f"{call}: format DEPTH_COMPONENT needs type "
                             f"{' or '.join(DEPTH_TEXEL_TYPES)}, got {type_!r}", source=where)
        return
    formats = TEXTURE_FORMATS + (DEPTH_TEXTURE_FORMATS if depth else ())
    if fmt not in TEXTURE_FORMATS:
        raise InputError(f"{call}: unknown format {fmt!r} (expected one of "
                         f"{', '.join(formats)})", source=where)
    if type_ not in TEXEL_TYPES:
        hint = (f" ({type_} goes with format DEPTH_COMPONENT)"
                if depth and type_ in DEPTH_TEXEL_TYPES else "")
        raise InputError(f"{call}: unknown type {type_!r} for format {fmt} (expected one of "
                         f"{', '.join(TEXEL_TYPES)}){hint}", source=where)
    if type_ in _PACKED_BITS and _PACKED_BITS[type_][0] != fmt:
        raise InputError(f"{call}: type {type_} goes with format {_PACKED_BITS[type_][0]}, "
                         f"not {fmt}", source=where)


def unpack_layout(width: int, height: int, bytes_per_pixel: int, alignment: int = 4,
                  subimage: tuple[int, int, int] = (0, 0, 0)) -> tuple[int, int, int]:
    """(offset of the first texel, row stride, bytes GL reads), in bytes, of a ``width`` x
    ``height`` image in client memory: rows of UNPACK_ROW_LENGTH pixels (0: ``width``) padded
    to ``alignment``, the image starting UNPACK_SKIP_ROWS rows and UNPACK_SKIP_PIXELS pixels
    in (``subimage`` = (row length, skip rows, skip pixels); OpenGL ES 2.0 spec section 3.6.2
    with EXT_unpack_subimage, the rules of OpenGL 2.0 section 3.6.4). The last row needs no
    padding."""
    row_length, skip_rows, skip_pixels = subimage
    stride = -(-(row_length or width) * bytes_per_pixel // alignment) * alignment
    offset = skip_rows * stride + skip_pixels * bytes_per_pixel
    read = offset + stride * (height - 1) + width * bytes_per_pixel if width and height else 0
    return offset, stride, read


def unpack_pixels(call: str, fmt: str, type_: str, width: int, height: int, data,
                  alignment: int = 4, where: str | None = None,
                  subimage: tuple[int, int, int] = (0, 0, 0)) -> np.ndarray:
    """Client pixel data as stored components: (height, width, C) uint16 (depth: (height,
    width, 1) uint32 of ``DEPTH_BITS[type_]`` bits).

    ``data``: bytes (any array is read as its raw bytes), laid out as :func:`unpack_layout`
    says for ``alignment`` and ``subimage`` (UNPACK_ROW_LENGTH, UNPACK_SKIP_ROWS,
    UNPACK_SKIP_PIXELS). The data must hold at least the bytes GL reads and, without a
    ``subimage`` (whose data may be the whole client image the rectangle is cut from), at most
    the last row's padding more. Raises InputError naming ``call`` otherwise.
    """
    _check_format(call, fmt, type_, where, depth=True)
    if alignment not in _ALIGNMENTS:
        raise InputError(f"{call}: UNPACK_ALIGNMENT must be 1, 2, 4 or 8, got {alignment}",
                         source=where)
    if min(subimage) < 0:
        raise InputError(f"{call}: UNPACK_ROW_LENGTH, UNPACK_SKIP_ROWS and UNPACK_SKIP_PIXELS "
                         f"must not be negative, got {subimage}", source=where)
    bpp = bytes_per_texel(fmt, type_)
    row = width * bpp
    offset, stride, needed = unpack_layout(width, height, bpp, alignment, subimage)
    raw = np.ascontiguousarray(data).reshape(-1).view(np.uint8)
    most = None if subimage != (0, 0, 0) else max(needed, stride * height)
    if raw.size < needed or (most is not None and raw.size > most):
        layout = "" if subimage == (0, 0, 0) else (
            f", UNPACK_ROW_LENGTH {subimage[0]}, SKIP_ROWS {subimage[1]}, SKIP_PIXELS "
            f"{subimage[2]}")
        raise InputError(f"{call}: {width}x{height} {fmt}/{type_} with UNPACK_ALIGNMENT "
                         f"{alignment}{layout} needs {needed} bytes of data (rows of {row} "
                         f"bytes, {stride} apart), got {raw.size}", source=where)
    if needed == 0:
        return _zeros(fmt, width, height)
    padded = np.zeros(offset + stride * height, np.uint8)
    padded[:min(raw.size, padded.size)] = raw[:padded.size]
    rows = padded[offset:].reshape(height, stride)[:, :row]
    if fmt in DEPTH_TEXTURE_FORMATS:  # little-endian; 32-bit values truncated to 24 bits
        values = np.ascontiguousarray(rows).view("<u2" if bpp == 2 else "<u4")
        if bpp == 4:
            values = values >> np.uint32(32 - DEPTH_BITS[type_])
        return values.reshape(height, width, 1)
    if type_ == "UNSIGNED_BYTE":
        return rows.reshape(height, width, bpp).astype(np.uint16)
    if type_ == HALF_FLOAT:  # little-endian half-float bit patterns, kept as they are
        return np.ascontiguousarray(rows).view("<u2").reshape(height, width, -1).astype(
            np.uint16)
    words = rows.reshape(height, width, 2).astype(np.uint16)
    words = words[..., 0] | (words[..., 1] << 8)
    bits = _PACKED_BITS[type_][1]
    out = np.empty((height, width, len(bits)), np.uint16)
    shift = 16
    for i, b in enumerate(bits):
        shift -= b
        out[..., i] = (words >> shift) & ((1 << b) - 1)
    return out


def _zeros(fmt: str, width: int, height: int) -> np.ndarray:
    """The stored components of an image without data."""
    dtype = np.uint32 if fmt in DEPTH_TEXTURE_FORMATS else np.uint16
    return np.zeros((height, width, _COMPONENTS[fmt]), dtype)


def _expand(stored: np.ndarray, fmt: str, bits: tuple[int, ...], scale: float | None = None,
            half: bool = False) -> np.ndarray:
    """Stored components -> (H, W, 4) RGBA: float32 c / (2^b - 1), or uint8 when ``scale``.

    A depth texture samples as (d, d, d, 1) (OES_depth_texture; what Mesa's GLES2 contexts
    return), d = n * float32(1 / (2^b - 1)) as llvmpipe converts unorm depth to float.
    ``half``: the components are half floats (OES_texture_half_float), widened to float32
    as they are; as uint8 (``scale``) they are clamped to [0, 1] and rounded.
    """
    h, w = stored.shape[:2]
    if half:
        comps = [stored[..., i].astype(np.uint16).view(np.float16).astype(np.float32)
                 for i in range(stored.shape[2])]
        zero, one, dtype = np.float32(0), np.float32(1), np.float32
        if scale is not None:
            comps = [np.rint(np.clip(np.nan_to_num(c), 0, 1) * 255).astype(np.uint8)
                     for c in comps]
            zero, one, dtype = 0, 255, np.uint8
        out = np.empty((h, w, 4), dtype)
        for channel, source in enumerate(_TO_RGBA[fmt]):
            out[..., channel] = comps[source] if source >= 0 else (zero if source == -1
                                                                    else one)
        return out
    if scale is None and fmt in DEPTH_TEXTURE_FORMATS:
        d = stored[..., 0].astype(np.float32) * np.float32(1.0 / ((1 << bits[0]) - 1))
        out = np.empty((h, w, 4), np.float32)
        out[..., :3] = d[..., None]
        out[..., 3] = 1
        return out
    if scale is None:
        comps = [stored[..., i].astype(np.float32) / np.float32((1 << b) - 1)
                 for i, b in enumerate(bits)]
        zero, one, dtype = np.float32(0), np.float32(1), np.float32
    else:
        comps = [requantize(stored[..., i], b, 8) for i, b in enumerate(bits)]
        zero, one, dtype = 0, 255, np.uint8
    out = np.empty((h, w, 4), dtype)
    for channel, source in enumerate(_TO_RGBA[fmt]):
        out[..., channel] = comps[source] if source >= 0 else (zero if source == -1 else one)
    return out


def requantize(values: np.ndarray, bits_from: int, bits_to: int) -> np.ndarray:
    """round(c * (2^to - 1) / (2^from - 1)) as int64 (identity when the sizes agree)."""
    if bits_from == bits_to:
        return values.astype(np.int64)
    top_from, top_to = (1 << bits_from) - 1, (1 << bits_to) - 1
    return (values.astype(np.int64) * (2 * top_to) + top_from) // (2 * top_from)


def lerp_u8(a, b, w):
    """llvmpipe's 8-bit lerp: ``a + ((w * (b - a) + 128) >> 8)``, w in 0..255 (int arrays).

    gallivm's lp_build_lerp for unorm8 with pre-scaled weights multiplies with pmulhrsw,
    which rounds: the result is a + floor((w * (b - a) + 128) / 256).
    """
    return a + ((w * (b - a) + 128) >> 8)


def fixed_point_coords(s, size: int):
    """Clamp-to-edge bilinear taps of llvmpipe's 8.8 fixed-point path for one axis.

    ``s``: normalized coordinates (float32). Returns (i0, i1, w) int64 arrays: the two texel
    indices and the 8-bit weight of i1 (see lp_bld_sample_aos.c).
    """
    scaled = np.rint(np.asarray(s, np.float32) * np.float32(size * 256)).astype(np.int64) - 128
    i0, w = scaled >> 8, scaled & 255
    inside = (i0 >= 0) & (i0 < size - 1)
    i0 = np.clip(i0, 0, size - 1)
    return i0, np.where(inside, i0 + 1, i0), w


@dataclass
class TextureImage:
    """One face/level image: stored components and their RGBA expansion."""

    width: int
    height: int
    format: str
    type: str
    stored: np.ndarray                  # (H, W, C) uint16 (depth: (H, W, 1) uint32)
    # slices (OES_texture_3D): stored, texels and rgba8 then hold (depth * H, W, ...)
    depth: int = 1
    texels: np.ndarray = field(init=False)  # (H, W, 4) float32 RGBA in [0, 1]

    def __post_init__(self) -> None:
        self.texels = _expand(self.stored, self.format, self.bits, half=self.is_half)
        self._rgba8: np.ndarray | None = None

    @property
    def is_half(self) -> bool:
        """Whether the components are half floats (OES_texture_half_float)."""
        return self.type == HALF_FLOAT

    @property
    def bits(self) -> tuple[int, ...]:
        return component_bits(self.format, self.type)

    @property
    def bytes_per_texel(self) -> int:
        return bytes_per_texel(self.format, self.type)

    @property
    def bits_per_texel(self) -> int:
        return bits_per_texel(self.format, self.type)

    @property
    def nbytes(self) -> int:
        """Bytes the image occupies in texture memory (tightly packed; a compressed format
        in its whole blocks)."""
        if self.format in COMPRESSED_FORMATS:
            return compressed_image_size(self.format, self.width, self.height)
        return self.width * self.height * self.depth * self.bytes_per_texel

    def rgba8(self) -> np.ndarray:
        """(H, W, 4) uint8 RGBA, as an 8-bit texture unit reads the texels."""
        if self._rgba8 is None:
            self._rgba8 = _expand(self.stored, self.format, self.bits, scale=255.0,
                                  half=self.is_half)
        return self._rgba8

    def refresh(self) -> None:
        """Recompute ``texels`` after ``stored`` changed."""
        self.__post_init__()


class Texture:
    """A GLES2 texture object: images per face and level, filters, wraps, completeness.

    ``Texture("TEXTURE_2D")`` / ``Texture("TEXTURE_CUBE_MAP")``, or ``Texture(name)`` with the
    GL name (an int) and no target yet: as with glBindTexture, the first
    :meth:`bind_target` fixes it. ``oes_texture_npot``: apply GL_OES_texture_npot
    (non-power-of-two textures may repeat and be mipmapped) instead of the core ES 2.0 rule.
    ``name`` (the GL id) and ``where`` (file/frame/call) make error messages precise.
    ``version`` grows with every change of image contents, so users can cache what they
    derive from the images (in ``derived``).
    """

    def __init__(self, target: str | int | None = TEXTURE_2D, *, name: int = 0,
                 oes_texture_npot: bool = False, where: str | None = None):
        if isinstance(target, (int, np.integer)) and not isinstance(target, bool):
            name, target = int(target), None
        self.name = name
        self.oes_texture_npot = oes_texture_npot
        self.where = where
        self.uid = next(_uids)  # distinct texture-memory address range for cache models
        self.target: str | None = None
        self.faces: list[dict[int, TextureImage]] = []
        self.min_filter = "NEAREST_MIPMAP_LINEAR"
        self.mag_filter = "LINEAR"
        self.wrap_s = "REPEAT"
        self.wrap_t = "REPEAT"
        self.wrap_r = "REPEAT"      # OES_texture_3D's TEXTURE_WRAP_R_OES
        # EXT_texture_filter_anisotropic: above 1, the sampler filters as llvmpipe does
        # through an elliptical footprint (texture_sampler._Sampling._anisotropic).
        self.max_anisotropy = 1.0
        self.version = 0
        # What users derive from the images (the sampler's packed arrays), keyed by them;
        # each entry must check ``version`` itself.
        self.derived: dict = {}
        if target is not None:
            self.bind_target(target)

    def bind_target(self, target: str) -> None:
        """glBindTexture: the first bind fixes the target; binding to another is an error."""
        if target not in (TEXTURE_2D, TEXTURE_CUBE_MAP, TEXTURE_3D):
            raise InputError(f"texture target must be TEXTURE_2D, TEXTURE_CUBE_MAP or "
                             f"TEXTURE_3D_OES, got {target!r}", source=self.where)
        if self.target is None:
            self.target = target
            self.faces = [{} for _ in range(6 if target == TEXTURE_CUBE_MAP else 1)]
        elif self.target != target:
            raise InputError(f"bindTexture: texture {self.name} is a {self.target}, it cannot "
                             f"be bound to {target}", source=self.where)

    def __repr__(self) -> str:
        base = self.image(0, 0) if self.faces else None
        size = f"{base.width}x{base.height}" if base else "empty"
        return (f"Texture({self.target}, name={self.name}, {size}, min={self.min_filter}, "
                f"mag={self.mag_filter}, wrap=({self.wrap_s}, {self.wrap_t}))")

    # -- images -----------------------------------------------------------------------------

    def _face(self, call: str, target) -> int:
        target = _target_name(target)
        if target == TEXTURE_3D or self.target == TEXTURE_3D:
            if target != self.target:
                raise InputError(f"{call}: target {target} does not fit a {self.target} "
                                 f"texture (texture {self.name})", source=self.where)
            return 0
        if self.target is None:
            self.bind_target(TEXTURE_2D if target == TEXTURE_2D else TEXTURE_CUBE_MAP)
        if target not in IMAGE_TARGETS:
            raise InputError(f"{call}: unknown image target {target!r}", source=self.where)
        if (target == TEXTURE_2D) != (self.target == TEXTURE_2D):
            raise InputError(f"{call}: target {target} does not fit a {self.target} texture "
                             f"(texture {self.name})", source=self.where)
        return FACE_OF_TARGET[target]

    def _check_level(self, call: str, level: int) -> None:
        if not 0 <= level < MAX_LEVELS:
            raise InputError(f"{call}: level {level} out of range 0..{MAX_LEVELS - 1}",
                             source=self.where)

    def image(self, face: int, level: int) -> TextureImage | None:
        """The image of ``face`` (0 for 2D; 0..5 = +X, -X, +Y, -Y, +Z, -Z) and ``level``."""
        return self.faces[face].get(level) if face < len(self.faces) else None

    def tex_image_2d(self, target: str, level: int, internalformat: str, width: int,
                     height: int, format: str, type: str, data=None,
                     unpack_alignment: int = 4, *, call: str = "texImage2D",
                     subimage: tuple[int, int, int] = (0, 0, 0)) -> None:
        """glTexImage2D: define the image of one face and level (``data`` None: zeros).

        DEPTH_COMPONENT with UNSIGNED_SHORT / UNSIGNED_INT makes a depth texture
        (GL_OES_depth_texture). ``call`` names the GL command in errors; ``subimage`` the
        unpack state of EXT_unpack_subimage (:func:`unpack_layout`).
        """
        face = self._face(call, target)
        self._check_level(call, level)
        _check_format(call, format, type, self.where, depth=True)
        if internalformat != format:
            raise InputError(f"{call}: internalformat {internalformat} must equal format "
                             f"{format} in OpenGL ES 2.0", source=self.where)
        self._check_image_size(call, target, level, width, height)
        if data is None:
            stored = _zeros(format, width, height)
        else:
            stored = unpack_pixels(call, format, type, width, height, data, unpack_alignment,
                                   self.where, subimage)
        self.faces[face][level] = TextureImage(width, height, format, type, stored)
        self.version += 1

    def compressed_tex_image_2d(self, target: str, level: int, internalformat: str,
                                width: int, height: int, data) -> None:
        """glCompressedTexImage2D: define an image from compressed blocks, decoded here.

        OES_compressed_ETC1_RGB8_texture, EXT_texture_compression_s3tc: ``data`` must hold
        exactly :func:`~.compressed.compressed_image_size` bytes (imageSize; INVALID_VALUE
        otherwise); the image stores the decoded RGB (ETC1, DXT1 RGB) or RGBA and samples as
        such a texture, while
        its memory size stays the compressed one (:attr:`TextureImage.nbytes`).
        """
        call = "compressedTexImage2D"
        face = self._face(call, target)
        self._check_level(call, level)
        if internalformat not in COMPRESSED_FORMATS:
            raise InputError(f"{call}: unknown compressed format {internalformat!r} (expected "
                             f"one of {', '.join(COMPRESSED_FORMATS)})", source=self.where)
        self._check_image_size(call, target, level, width, height)
        need = compressed_image_size(internalformat, width, height)
        got = 0 if data is None else np.asarray(data).nbytes
        if got != need:
            raise InputError(f"{call}: a {width}x{height} {internalformat} image is {need} "
                             f"bytes (4x4 blocks of {16 * BITS_PER_TEXEL[internalformat] // 8} "
                             f"bytes), the data holds {got}",
                             source=self.where)
        stored = decode_compressed(internalformat, data, width, height).astype(np.uint16)
        self.faces[face][level] = TextureImage(width, height, internalformat, "UNSIGNED_BYTE",
                                               stored)
        self.version += 1

    def compressed_tex_sub_image_2d(self, target: str, level: int, xoffset: int,
                                    yoffset: int, width: int, height: int, format: str,
                                    data) -> None:
        """glCompressedTexSubImage2D of an ETC1 (EXT_compressed_ETC1_RGB8_sub_texture) or S3TC
        image (EXT_texture_compression_s3tc): the rectangle starts on a block (offsets
        multiples of 4) and is whole blocks, or reaches the image's right / top edge;
        ``data`` its blocks, decoded as at upload."""
        call = "compressedTexSubImage2D"
        face, image = self._existing_image(call, target, level)
        self._check_sub_rectangle(call, image, level, format, xoffset, yoffset, width, height)
        if (xoffset % 4 or yoffset % 4
                or (width % 4 and xoffset + width != image.width)
                or (height % 4 and yoffset + height != image.height)):
            raise InputError(f"{call}: rectangle {width}x{height} at ({xoffset}, {yoffset}) "
                             "is not whole 4x4 blocks (INVALID_OPERATION)", source=self.where)
        need = compressed_image_size(format, width, height)
        got = np.asarray(data).nbytes
        if got != need:
            raise InputError(f"{call}: a {width}x{height} {format} rectangle is {need} bytes, "
                             f"the data holds {got}", source=self.where)
        image.stored[yoffset:yoffset + height, xoffset:xoffset + width] = decode_compressed(
            format, data, width, height)
        image.refresh()
        self.version += 1

    def _check_sub_rectangle(self, call: str, image, level: int, format: str, xoffset: int,
                             yoffset: int, width: int, height: int) -> None:
        """A sub-image call's format is the image's and its rectangle lies inside it."""
        if format != image.format:
            raise InputError(f"{call}: format {format} differs from the image's "
                             f"{image.format}", source=self.where)
        if (xoffset < 0 or yoffset < 0 or width < 0 or height < 0
                or xoffset + width > image.width or yoffset + height > image.height):
            raise InputError(f"{call}: rectangle {width}x{height} at ({xoffset}, {yoffset}) "
                             f"is outside the {image.width}x{image.height} level {level} "
                             f"image", source=self.where)

    def _check_image_size(self, call: str, target: str, level: int, width: int,
                          height: int) -> None:
        """An image's size fits its level (MAX_TEXTURE_SIZE >> level), square on a cube face."""
        limit = MAX_TEXTURE_SIZE >> level
        if not (0 <= width <= limit and 0 <= height <= limit):
            raise InputError(f"{call}: size {width}x{height} out of range 0..{limit} for "
                             f"level {level}", source=self.where)
        if self.target == TEXTURE_CUBE_MAP and width != height:
            raise InputError(f"{call}: cube map face {target} must be square, got "
                             f"{width}x{height}", source=self.where)

    def _existing_image(self, call: str, target: str, level: int):
        """(face, image) of ``level`` of ``target``, which a sub-image call needs to exist."""
        face = self._face(call, target)
        self._check_level(call, level)
        image = self.image(face, level)
        if image is None:
            raise InputError(f"{call}: level {level} of {target} (texture {self.name}) has no "
                             f"image; call texImage2D first", source=self.where)
        return face, image

    def tex_sub_image_2d(self, target: str, level: int, xoffset: int, yoffset: int,
                         width: int, height: int, format: str, type: str, data,
                         unpack_alignment: int = 4, *,
                         subimage: tuple[int, int, int] = (0, 0, 0)) -> None:
        """glTexSubImage2D: replace a rectangle of an existing image (``subimage``: as
        :meth:`tex_image_2d`)."""
        call = "texSubImage2D"
        face, image = self._existing_image(call, target, level)
        _check_modifiable(call, image, self.where)
        self._check_sub_rectangle(call, image, level, format, xoffset, yoffset, width, height)
        if data is None:
            raise InputError(f"{call}: data is required", source=self.where)
        if HALF_FLOAT in (type, image.type) and type != image.type:
            raise InputError(f"{call}: type {type} differs from the image's {image.type} "
                             "(OES_texture_half_float images take HALF_FLOAT_OES data only)",
                             source=self.where)
        stored = unpack_pixels(call, format, type, width, height, data, unpack_alignment,
                               self.where, subimage)
        if type != image.type:  # convert to the image's component sizes
            stored = np.stack([requantize(stored[..., i], b_in, b_out)
                               for i, (b_in, b_out) in enumerate(
                                   zip(component_bits(format, type), image.bits, strict=True))],
                              axis=-1).astype(np.uint16)
        image.stored[yoffset:yoffset + height, xoffset:xoffset + width] = stored
        image.refresh()
        self.version += 1

    def write_rgba(self, target: str, level: int, rgba, xoffset: int = 0,
                   yoffset: int = 0) -> None:
        """Store RGBA floats (h, w, 4) into an existing image (rendering into a texture,
        copyTexImage2D): each component rounded to the image's format."""
        call = "write_rgba"
        face = self._face(call, target)
        image = self.image(face, level)
        if image is None:
            raise InputError(f"{call}: level {level} of {target} has no image",
                             source=self.where)
        z = _slice_of(target, image, call, self.where)
        if z is not None:
            # a slice of a 3D level (glFramebufferTexture3DOES): rows z * height onwards
            rgba = np.asarray(rgba, np.float32)
            if yoffset + rgba.shape[0] > image.height:
                raise InputError(f"{call}: {rgba.shape[0]} rows at {yoffset} are outside "
                                 f"the slices of {image.height} rows", source=self.where)
            yoffset += z * image.height
        if image.format in DEPTH_TEXTURE_FORMATS:
            raise InputError(f"{call}: texture {self.name} is a depth texture; colors cannot "
                             f"be stored in it", source=self.where)
        _check_modifiable(call, image, self.where)
        rgba = np.asarray(rgba, np.float32)
        h, w = rgba.shape[:2]
        rows = image.height * image.depth
        if xoffset < 0 or yoffset < 0 or xoffset + w > image.width or yoffset + h > rows:
            raise InputError(f"{call}: {w}x{h} at ({xoffset}, {yoffset}) is outside the "
                             f"{image.width}x{image.height} image", source=self.where)
        pick = _FROM_RGBA[image.format]
        comps = [np.rint(np.clip(rgba[..., c], 0, 1) * ((1 << b) - 1))
                 for c, b in zip(pick, image.bits, strict=True)]
        image.stored[yoffset:yoffset + h, xoffset:xoffset + w] = np.stack(comps, -1)
        image.refresh()
        self.version += 1

    # -- OES_texture_3D ---------------------------------------------------------------------

    def _check_3d_size(self, call: str, level: int, width: int, height: int,
                       depth: int) -> None:
        if not 0 <= level < MAX_3D_LEVELS:
            raise InputError(f"{call}: level {level} out of range 0..{MAX_3D_LEVELS - 1}",
                             source=self.where)
        limit = (1 << (MAX_3D_LEVELS - 1)) >> level
        if not all(0 <= v <= limit for v in (width, height, depth)):
            raise InputError(f"{call}: size {width}x{height}x{depth} out of range 0..{limit} "
                             f"for level {level}", source=self.where)

    def tex_image_3d(self, target: str, level: int, internalformat: str, width: int,
                     height: int, depth: int, format: str, type: str, data=None,
                     unpack_alignment: int = 4, *,
                     subimage: tuple[int, int, int] = (0, 0, 0)) -> None:
        """glTexImage3DOES (OES_texture_3D): define level ``level`` as ``depth`` slices of
        ``width`` x ``height``; the client's slices follow each other, each of ``height``
        rows laid out as glTexImage2D's (ES 2.0 §3.7.1, which the extension extends with
        the image index; UNPACK_ROW_LENGTH / SKIP_PIXELS / SKIP_ROWS apply to every slice)."""
        call = "texImage3D"
        self._face(call, target)
        self._check_3d_size(call, level, width, height, depth)
        _check_format(call, format, type, self.where)
        if internalformat != format:
            raise InputError(f"{call}: internalformat {internalformat} must equal format "
                             f"{format} in OpenGL ES 2.0", source=self.where)
        if data is None:
            stored = _zeros(format, width, height * depth)
        else:
            stored = unpack_pixels(call, format, type, width, height * depth, data,
                                   unpack_alignment, self.where, subimage)
        self.faces[0][level] = TextureImage(width, height, format, type, stored, depth)
        self.version += 1

    def tex_sub_image_3d(self, target: str, level: int, xoffset: int, yoffset: int,
                         zoffset: int, width: int, height: int, depth: int, format: str,
                         type: str, data, unpack_alignment: int = 4, *,
                         subimage: tuple[int, int, int] = (0, 0, 0)) -> None:
        """glTexSubImage3DOES: replace a box of an existing 3D image (slices as in
        :meth:`tex_image_3d`)."""
        call = "texSubImage3D"
        self._face(call, target)
        image = self._level_3d(call, level)
        if format != image.format or type != image.type:
            raise InputError(f"{call}: format/type {format}/{type} differ from the image's "
                             f"{image.format}/{image.type}", source=self.where)
        if (min(xoffset, yoffset, zoffset, width, height, depth) < 0
                or xoffset + width > image.width or yoffset + height > image.height
                or zoffset + depth > image.depth):
            raise InputError(f"{call}: box {width}x{height}x{depth} at ({xoffset}, {yoffset}, "
                             f"{zoffset}) is outside the {image.width}x{image.height}x"
                             f"{image.depth} level {level} image", source=self.where)
        if data is None:
            raise InputError(f"{call}: data is required", source=self.where)
        stored = unpack_pixels(call, format, type, width, height * depth, data,
                               unpack_alignment, self.where, subimage)
        for z in range(depth):
            row = (zoffset + z) * image.height + yoffset
            image.stored[row:row + height, xoffset:xoffset + width] = \
                stored[z * height:(z + 1) * height]
        image.refresh()
        self.version += 1

    def copy_tex_sub_image_3d(self, target: str, level: int, xoffset: int, yoffset: int,
                              zoffset: int, x: int, y: int, width: int, height: int,
                              framebuffer: np.ndarray, framebuffer_alpha: bool = True) -> None:
        """glCopyTexSubImage3DOES: framebuffer pixels into the rectangle at (xoffset,
        yoffset) of slice ``zoffset`` (as :meth:`copy_tex_sub_image_2d` does for a 2D
        image)."""
        call = "copyTexSubImage3D"
        self._face(call, target)
        image = self._level_3d(call, level)
        self._check_copy(call, image.format, framebuffer_alpha)
        if (min(xoffset, yoffset, width, height) < 0 or xoffset + width > image.width
                or yoffset + height > image.height or not 0 <= zoffset < image.depth):
            raise InputError(f"{call}: rectangle {width}x{height} at ({xoffset}, {yoffset}) "
                             f"of slice {zoffset} is outside the {image.width}x{image.height}x"
                             f"{image.depth} level {level} image", source=self.where)
        self._copy_pixels(target, level, xoffset, yoffset + zoffset * image.height, x, y,
                          width, height, framebuffer)

    def compressed_tex_image_3d(self, target: str, level: int, internalformat: str,
                                width: int, height: int, depth: int, data) -> None:
        """glCompressedTexImage3DOES: none of the compressed formats tilesim decodes has 3D
        images (OES_compressed_ETC1_RGB8_texture and EXT_texture_compression_s3tc define 2D
        blocks only; Mesa answers INVALID_ENUM for each with a TEXTURE_3D target)."""
        raise InputError(f"compressedTexImage3D: {internalformat} has no 3D images (its "
                         "extension defines 2D blocks; INVALID_ENUM)", source=self.where)

    def _level_3d(self, call: str, level: int) -> TextureImage:
        image = self.image(0, level) if 0 <= level < MAX_3D_LEVELS else None
        if image is None:
            raise InputError(f"{call}: level {level} of texture {self.name} has no image; "
                             "call texImage3D first", source=self.where)
        return image

    @property
    def base_depth(self) -> int:
        """Slices of level 0 (1 for 2D and cube map textures)."""
        base = self.image(0, 0) if self.faces else None
        return base.depth if base else 0

    def copy_tex_image_2d(self, target: str, level: int, internalformat: str, x: int, y: int,
                          width: int, height: int, framebuffer: np.ndarray,
                          framebuffer_alpha: bool = True) -> None:
        """glCopyTexImage2D: a new ``internalformat`` image from the ``width`` x ``height``
        rectangle at (x, y) of ``framebuffer``, the (H, W, 4) uint8 color buffer being read
        (row 0 = window y 0). Pixels outside it are undefined in GL; they are 0 here, as
        llvmpipe leaves them. ``framebuffer_alpha``: whether the buffer stores alpha (a
        format with alpha cannot be made from one without)."""
        call = "copyTexImage2D"
        self._check_copy(call, internalformat, framebuffer_alpha)
        if width < 0 or height < 0:
            raise InputError(f"{call}: negative size {width}x{height}", source=self.where)
        self.tex_image_2d(target, level, internalformat, width, height, internalformat,
                          "UNSIGNED_BYTE", None, call=call)
        self._copy_pixels(target, level, 0, 0, x, y, width, height, framebuffer)

    def copy_tex_sub_image_2d(self, target: str, level: int, xoffset: int, yoffset: int,
                              x: int, y: int, width: int, height: int, framebuffer: np.ndarray,
                              framebuffer_alpha: bool = True) -> None:
        """glCopyTexSubImage2D: replace a rectangle of an existing image with framebuffer
        pixels (see :meth:`copy_tex_image_2d`). Texels whose source pixel lies outside the
        framebuffer keep their values, as Mesa clips the copy."""
        call = "copyTexSubImage2D"
        face, image = self._existing_image(call, target, level)
        _check_modifiable(call, image, self.where)
        self._check_copy(call, image.format, framebuffer_alpha)
        if (xoffset < 0 or yoffset < 0 or width < 0 or height < 0
                or xoffset + width > image.width or yoffset + height > image.height):
            raise InputError(f"{call}: rectangle {width}x{height} at ({xoffset}, {yoffset}) "
                             f"is outside the {image.width}x{image.height} level {level} "
                             f"image", source=self.where)
        self._copy_pixels(target, level, xoffset, yoffset, x, y, width, height, framebuffer)

    def _check_copy(self, call: str, fmt: str, framebuffer_alpha: bool) -> None:
        if fmt in DEPTH_TEXTURE_FORMATS:
            raise InputError(f"{call}: texture {self.name} is a depth texture; only color "
                             "can be copied from the framebuffer", source=self.where)
        if fmt in _ALPHA_FORMATS and not framebuffer_alpha:
            raise InputError(f"{call}: format {fmt} needs alpha, which the framebuffer's "
                             "color buffer does not have (ES 2.0 table 3.9)", source=self.where)

    def _copy_pixels(self, target: str, level: int, xoffset: int, yoffset: int, x: int,
                     y: int, width: int, height: int, framebuffer: np.ndarray) -> None:
        """Store the framebuffer pixels of the rectangle that lie inside it: the components
        the image's format keeps, 8-bit values truncated to its component sizes (c >> 3 for
        5 bits), as Mesa packs them."""
        fb_h, fb_w = framebuffer.shape[:2]
        x0, y0 = max(x, 0), max(y, 0)
        x1, y1 = min(x + width, fb_w), min(y + height, fb_h)
        if x1 <= x0 or y1 <= y0:
            return
        image = self.image(0 if target == TEXTURE_3D else FACE_OF_TARGET[target], level)
        pixels = np.asarray(framebuffer[y0:y1, x0:x1], np.uint16)
        pick = _FROM_RGBA[image.format]
        stored = np.stack([pixels[..., c] >> (8 - b)
                           for c, b in zip(pick, image.bits, strict=True)], -1)
        tx, ty = xoffset + x0 - x, yoffset + y0 - y
        image.stored[ty:ty + y1 - y0, tx:tx + x1 - x0] = stored
        image.refresh()
        self.version += 1

    def generate_mipmap(self) -> None:
        """glGenerateMipmap: levels 1..q from level 0 of every face, as Mesa llvmpipe makes them."""
        call = "generateMipmap"
        if self.is_depth:
            raise InputError(f"{call}: texture {self.name} is a depth texture "
                             "(GL_OES_depth_texture allows no mipmap generation)",
                             source=self.where)
        for images in self.faces:
            if images.get(0) is not None:
                _check_modifiable(call, images[0], self.where)
        for face, images in enumerate(self.faces):
            base = images.get(0)
            if base is None or base.width == 0 or base.height == 0:
                raise InputError(f"{call}: texture {self.name} has no level 0 image"
                                 + (f" on face {CUBE_FACES[face]}" if len(self.faces) > 1
                                    else ""), source=self.where)
            if not self.oes_texture_npot and not (_is_pot(base.width) and _is_pot(base.height)
                                                  and _is_pot(base.depth)):
                raise InputError(f"{call}: level 0 is {base.width}x{base.height}, not a power of "
                                 f"two (OpenGL ES 2.0 without GL_OES_texture_npot)",
                                 source=self.where)
        if self.target == TEXTURE_CUBE_MAP:
            reason = self._cube_base_reason()
            if reason:
                raise InputError(f"{call}: cube map is not cube complete: {reason}",
                                 source=self.where)
        for images in self.faces:
            level, current = 0, images[0]
            for stale in [k for k in images if k > 0]:
                del images[stale]
            while current.width > 1 or current.height > 1 or current.depth > 1:
                level += 1
                current = _downsample(current)
                images[level] = current
        self.version += 1

    # -- parameters -------------------------------------------------------------------------

    def parameter(self, pname: str, value: str) -> None:
        """glTexParameteri for the four GLES2 parameters."""
        allowed = {"TEXTURE_MIN_FILTER": FILTERS, "TEXTURE_MAG_FILTER": MAG_FILTERS,
                   "TEXTURE_WRAP_S": WRAPS, "TEXTURE_WRAP_T": WRAPS,
                   "TEXTURE_WRAP_R_OES": WRAPS}
        if pname not in allowed:
            raise InputError(f"texParameter: unknown parameter {pname!r}", source=self.where)
        if value not in allowed[pname]:
            raise InputError(f"texParameter: {value!r} is not a valid {pname} (expected one "
                             f"of {', '.join(allowed[pname])})", source=self.where)
        attr = {"TEXTURE_MIN_FILTER": "min_filter", "TEXTURE_MAG_FILTER": "mag_filter",
                "TEXTURE_WRAP_S": "wrap_s", "TEXTURE_WRAP_T": "wrap_t",
                "TEXTURE_WRAP_R_OES": "wrap_r"}[pname]
        setattr(self, attr, value)

    set_parameter = parameter

    def parameter_float(self, pname: str, value: float) -> None:
        """glTexParameterf of TEXTURE_MAX_ANISOTROPY_EXT (EXT_texture_filter_anisotropic):
        a value below 1 is INVALID_VALUE; above 1, 2D textures are filtered anisotropically
        (render/pipeline/texture_sampler.py)."""
        if pname != "TEXTURE_MAX_ANISOTROPY_EXT":
            raise InputError(f"texParameterf: unknown parameter {pname!r}", source=self.where)
        if not value >= 1.0:
            raise InputError(f"texParameterf: TEXTURE_MAX_ANISOTROPY_EXT must be at least 1, "
                             f"got {value}", source=self.where)
        self.max_anisotropy = float(value)

    # -- render to texture (framebuffer attachments) ------------------------------------------

    def _attached(self, call: str, target: str, level: int) -> TextureImage:
        face = self._face(call, target)
        image = self.image(face, level)
        if image is None:
            raise InputError(f"{call}: texture {self.name} has no image at {target} level "
                             f"{level}", source=self.where)
        return image

    def level_size(self, target, level: int) -> tuple[int, int]:
        """(width, height) of the image at ``target`` (TEXTURE_2D, a cube face, or
        (TEXTURE_3D_OES, slice) for a slice of a 3D level), ``level``."""
        image = self._attached("framebuffer attachment", target, level)
        _slice_of(target, image, "framebuffer attachment", self.where)
        return image.width, image.height

    def format_has_alpha(self) -> bool:
        """Whether the format of level 0 stores alpha (RGBA, ALPHA, LUMINANCE_ALPHA)."""
        image = next((im for face in self.faces for im in face.values()), None)
        return image is None or image.format in _ALPHA_FORMATS

    def level_rgba(self, target: str, level: int) -> np.ndarray | None:
        """A copy of the image's (H, W, 4) float32 texels, or None when it has none."""
        image = self.image(self._face("level_rgba", target), level)
        if image is None:
            return None
        z = _slice_of(target, image, "level_rgba", self.where)
        if z is not None:
            return image.texels[z * image.height:(z + 1) * image.height].copy()
        return image.texels.copy()

    def store_rendered(self, target: str, level: int, rgba) -> None:
        """What a pass rendered into this texture image: (H, W, 4) floats in [0, 1]."""
        self.write_rgba(target, level, rgba)

    # -- depth textures (GL_OES_depth_texture) -------------------------------------------------

    @property
    def is_depth(self) -> bool:
        """Whether the texture's images are DEPTH_COMPONENT (level 0, or any image)."""
        image = self.image(0, 0) if self.faces else None
        if image is None:
            image = next((im for face in self.faces for im in face.values()), None)
        return image is not None and image.format in DEPTH_TEXTURE_FORMATS

    @property
    def is_half_float(self) -> bool:
        """Whether level 0 holds half floats (OES_texture_half_float), which are filtered
        in float, never in llvmpipe's 8-bit fixed point."""
        image = self.image(0, 0) if self.faces else None
        return image is not None and image.is_half

    def depth_bits(self, target: str, level: int) -> int | None:
        """Bits of the depth values of a depth image (None: not a depth image)."""
        image = self._attached("framebuffer attachment", target, level)
        return image.bits[0] if image.format in DEPTH_TEXTURE_FORMATS else None

    def level_depth(self, target: str, level: int) -> np.ndarray | None:
        """A copy of a depth image's (H, W) uint32 values, or None when it has no image."""
        image = self.image(self._face("level_depth", target), level)
        if image is None:
            return None
        if image.format not in DEPTH_TEXTURE_FORMATS:
            raise InputError(f"level_depth: texture {self.name} is not a depth texture",
                             source=self.where)
        return image.stored[..., 0].copy()

    def store_depth(self, target: str, level: int, values, bits: int) -> None:
        """What a pass wrote into this depth texture image: (h, w) unsigned integers of
        ``bits`` bits, converted to the image's depth bits, stored from texel (0, 0) (a
        framebuffer's attachments may be larger than the area it renders)."""
        call = "store_depth"
        image = self._attached(call, target, level)
        if image.format not in DEPTH_TEXTURE_FORMATS:
            raise InputError(f"{call}: texture {self.name} is not a depth texture",
                             source=self.where)
        values = np.asarray(values)
        h, w = values.shape
        if h > image.height or w > image.width:
            raise InputError(f"{call}: {w}x{h} depth values for the "
                             f"{image.width}x{image.height} image", source=self.where)
        image.stored[:h, :w, 0] = requantize(values, bits, image.bits[0])
        image.refresh()
        self.version += 1

    # -- completeness -----------------------------------------------------------------------

    @property
    def mipmapped(self) -> bool:
        """Whether the min filter uses mipmaps."""
        return self.min_filter in MIPMAP_FILTERS

    @property
    def base_size(self) -> tuple[int, int]:
        base = self.image(0, 0)
        return (base.width, base.height) if base else (0, 0)

    def max_level(self) -> int:
        """q = floor(log2(max(width, height(, depth)))) of level 0 (-1 without a level 0)."""
        w, h = self.base_size
        d = self.base_depth
        return max(w, h, d).bit_length() - 1 if w and h and d else -1

    def sampled_levels(self) -> int:
        """How many levels sampling may use: q + 1 with a mipmapping min filter, else 1."""
        return self.max_level() + 1 if self.mipmapped else 1

    def _cube_base_reason(self) -> str | None:
        base = self.faces[0].get(0)
        for face, images in enumerate(self.faces):
            image = images.get(0)
            if image is None or image.width == 0:
                return f"face {CUBE_FACES[face]} has no level 0 image"
            if image.width != image.height:
                return f"face {CUBE_FACES[face]} is not square"
            if (image.width, image.format, image.type) != (base.width, base.format, base.type):
                return (f"face {CUBE_FACES[face]} is {image.width}x{image.height} "
                        f"{image.format}/{image.type}, face {CUBE_FACES[0]} "
                        f"{base.width}x{base.height} {base.format}/{base.type}")
        return None

    def incomplete_reason(self) -> str | None:
        """Why sampling this texture returns (0, 0, 0, 1), or None when it is complete."""
        if self.target is None:
            return "the texture was never bound to a target"
        base = self.image(0, 0)
        if base is None or base.width == 0 or base.height == 0:
            return "level 0 has no image (or an empty one)"
        if self.target == TEXTURE_CUBE_MAP:
            reason = self._cube_base_reason()
            if reason:
                return reason
        if base.depth == 0:
            return "level 0 has no image (or an empty one)"
        npot = not (_is_pot(base.width) and _is_pot(base.height) and _is_pot(base.depth))
        if npot and not self.oes_texture_npot:
            if self.wrap_s != "CLAMP_TO_EDGE" or self.wrap_t != "CLAMP_TO_EDGE" or (
                    self.target == TEXTURE_3D and self.wrap_r != "CLAMP_TO_EDGE"):
                return (f"non-power-of-two size {base.width}x{base.height} with wrap "
                        f"({self.wrap_s}, {self.wrap_t}); ES 2.0 requires CLAMP_TO_EDGE")
            if self.mipmapped:
                return (f"non-power-of-two size {base.width}x{base.height} with mipmapping "
                        f"min filter {self.min_filter}")
        if self.mipmapped:
            for face, images in enumerate(self.faces):
                w, h, d = base.width, base.height, base.depth
                for level in range(1, self.max_level() + 1):
                    w, h, d = max(1, w >> 1), max(1, h >> 1), max(1, d >> 1)
                    image = images.get(level)
                    label = f"level {level}" + (f" of {CUBE_FACES[face]}"
                                                if len(self.faces) > 1 else "")
                    if image is None:
                        return f"min filter {self.min_filter} needs {label}, which is missing"
                    if (image.width, image.height, image.depth) != (w, h, d):
                        size = (f"{image.width}x{image.height}x{image.depth}, expected "
                                f"{w}x{h}x{d}" if self.target == TEXTURE_3D else
                                f"{image.width}x{image.height}, expected {w}x{h}")
                        return f"{label} is {size}"
                    if (image.format, image.type) != (base.format, base.type):
                        return (f"{label} is {image.format}/{image.type}, level 0 "
                                f"{base.format}/{base.type}")
        return None

    def is_complete(self) -> bool:
        return self.incomplete_reason() is None

    @property
    def nbytes(self) -> int:
        """Texture memory of all images, in bytes."""
        return sum(image.nbytes for images in self.faces for image in images.values())


def _target_name(target) -> str:
    """An image target's name: ``target``, or the first item of a (TEXTURE_3D_OES, slice)
    pair."""
    return target[0] if isinstance(target, tuple) else target


def _slice_of(target, image: TextureImage, call: str, where: str | None) -> int | None:
    """The slice of a (TEXTURE_3D_OES, slice) target, checked against ``image`` (None for
    a 2D or cube-face target)."""
    if not isinstance(target, tuple):
        return None
    z = int(target[1])
    if not 0 <= z < image.depth:
        raise InputError(f"{call}: slice {z} is outside the {image.depth} slices of the "
                         f"{image.width}x{image.height}x{image.depth} image "
                         "(OES_texture_3D's zoffset)", source=where)
    return z


def _check_modifiable(call: str, image: TextureImage, where: str | None) -> None:
    """OES_compressed_ETC1_RGB8_texture (and S3TC as tilesim takes it): a compressed image
    cannot be modified by TexSubImage2D, CopyTexSubImage2D or rendering, nor mipmapped by
    GenerateMipmap (ES 2.0 §3.7.11).
    Half-float images (OES_texture_half_float) are not rendered into or copied to (that is
    EXT_color_buffer_half_float) nor mipmapped here: a one-line error says so."""
    if image.is_half and call != "texSubImage2D":
        raise InputError(f"{call}: the image is HALF_FLOAT_OES; tilesim does not render, copy "
                         "or generate mipmaps into half-float textures (upload each level "
                         "with texImage2D instead)", source=where)
    if image.format in COMPRESSED_FORMATS:
        raise InputError(f"{call}: the image is {image.format}, a compressed format, which "
                         "OES_compressed_ETC1_RGB8_texture allows no changes to "
                         "(INVALID_OPERATION)", source=where)


def _downsample(src: TextureImage) -> TextureImage:
    """The next mip level: llvmpipe's clamp-to-edge 8.8 fixed-point bilinear blit; a 3D
    level (OES_texture_3D) then blends the two source slices of each destination slice the
    same way, after x and y (lp_build_lerp_3d's order in its trilinear blit)."""
    w, h, d = max(1, src.width >> 1), max(1, src.height >> 1), max(1, src.depth >> 1)
    bits = src.bits
    comps = np.stack([requantize(src.stored[..., i], b, 8) for i, b in enumerate(bits)], -1)
    comps = comps.reshape(src.depth, src.height, src.width, -1)

    def taps(n_dst: int, n_src: int):
        centers = ((np.arange(n_dst, dtype=np.float32) + np.float32(0.5))
                   / np.float32(n_dst)).astype(np.float32)
        return fixed_point_coords(centers, n_src)

    x0, x1, wx = taps(w, src.width)
    y0, y1, wy = taps(h, src.height)
    wx = wx[None, None, :, None]
    top = lerp_u8(comps[:, y0][:, :, x0], comps[:, y0][:, :, x1], wx)
    bottom = lerp_u8(comps[:, y1][:, :, x0], comps[:, y1][:, :, x1], wx)
    out = lerp_u8(top, bottom, wy[None, :, None, None])
    if src.depth > 1:
        z0, z1, wz = taps(d, src.depth)
        out = lerp_u8(out[z0], out[z1], wz[:, None, None, None])
    out = out.reshape(d * h, w, -1)
    stored = np.stack([requantize(out[..., i], 8, b) for i, b in enumerate(bits)], -1)
    return TextureImage(w, h, src.format, src.type, stored.astype(np.uint16), d)
