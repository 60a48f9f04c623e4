"""The texture interface between the interpreter and whoever owns the textures.

The interpreter turns TEX/TXB/TXL/TXP/TXD/TXF/TXQ into ``TextureRequest`` records (arrays
over lanes) and hands them to a ``Sampler``; the renderer provides the real one (formats,
wraps, filters, mipmaps, cube maps, texel caches). ``ProceduralSampler`` here is a stand-in
with no texture memory, used to run shaders on generated inputs (``tilesim shader check``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from tilesim.backend import array_module

IMPLICIT, BIAS, EXPLICIT, GRADIENT, LEVEL_ZERO = "implicit", "bias", "explicit", "grad", "zero"


@dataclass
class TextureRequest:
    """One texture instruction over N lanes.

    coords: (4, N) float32; s, t, r and, for shadow targets, the reference value, already
        divided by q for TXP.
    lod_mode: implicit (LOD from the 2x2 quad of each lane: lanes 4q..4q+3 are top-left,
        top-right, bottom-left, bottom-right), bias, explicit, grad or zero.
    lod: (N,) float32 bias or explicit LOD, else None.
    ddx, ddy: (4, N) float32 coordinate derivatives for grad, else None.
    active: (N,) bool, lanes whose results are used (the rest may be garbage).
    """

    unit: int
    target: str
    coords: Any
    lod_mode: str = IMPLICIT
    lod: Any = None
    ddx: Any = None
    ddy: Any = None
    active: Any = None
    instruction: int = -1


class Sampler(Protocol):
    def sample(self, request: TextureRequest):
        """RGBA as a (4, N) float32 array."""

    def fetch(self, unit: int, target: str, texel: Any, active: Any):
        """TXF: texel (4, N) int32 = x, y, z, level; returns (4, N) float32."""

    def size(self, unit: int, target: str, level: Any):
        """TXQ: (4, N) int32 = width, height, depth, levels."""


class ProceduralSampler:
    """A texture of every unit defined by a formula, smooth and in [0, 1].

    Deterministic, backend-agnostic and cheap; it makes every texture path of a shader
    produce varied, finite values without any texture memory. ``size`` reports 256x256 with
    9 levels.
    """

    SIZE = 256
    LEVELS = 9

    def sample(self, request: TextureRequest):
        xp = array_module(request.coords)
        c = request.coords.astype(np.float32)
        phase = np.float32(0.37 * (request.unit + 1))
        s, t, r = c[0], c[1], c[2]
        out = xp.stack([
            0.5 + 0.5 * xp.sin(6.2831855 * s + phase),
            0.5 + 0.5 * xp.cos(6.2831855 * t - phase),
            0.5 + 0.5 * xp.sin(3.1415927 * (s + t + r)),
            0.75 + 0.25 * xp.cos(6.2831855 * (s - t)),
        ]).astype(np.float32)
        if request.lod_mode in (BIAS, EXPLICIT) and request.lod is not None:
            # Blurrier levels pull toward the mean, as a mip chain would.
            weight = xp.clip(request.lod.astype(np.float32) / self.LEVELS, 0, 1)
            out = out * (1 - weight) + 0.5 * weight
        return out.astype(np.float32)

    def fetch(self, unit, target, texel, active):
        xp = array_module(texel)
        coords = texel.astype(np.float32) / np.float32(self.SIZE)
        return self.sample(TextureRequest(unit, target, xp.asarray(coords)))

    def size(self, unit, target, level):
        xp = array_module(level)
        dim = xp.maximum(self.SIZE >> xp.clip(level, 0, 31).astype(np.int32), 1)
        depth = xp.ones_like(dim)
        levels = xp.full_like(dim, self.LEVELS)
        return xp.stack([dim, dim, depth, levels]).astype(np.int32)
