"""Textures and sampling requests shared by the sampler's tests
(tests/render/test_texture_sampler.py) and the compiled path's
(tests/render/test_compiled_path.py)."""

from __future__ import annotations

import numpy as np

from tilesim.render.gl.textures import Texture
from tilesim.shaders.sampling import TextureRequest

F32 = np.float32
CUBE_FACES = ("TEXTURE_CUBE_MAP_POSITIVE_X", "TEXTURE_CUBE_MAP_NEGATIVE_X",
              "TEXTURE_CUBE_MAP_POSITIVE_Y", "TEXTURE_CUBE_MAP_NEGATIVE_Y",
              "TEXTURE_CUBE_MAP_POSITIVE_Z", "TEXTURE_CUBE_MAP_NEGATIVE_Z")



def rgba8_texture(pixels: np.ndarray, *, min_filter="NEAREST", mag_filter="NEAREST",
                  wrap=("REPEAT", "REPEAT"), mipmaps=False, npot=False) -> Texture:
    """A 2D RGBA/UNSIGNED_BYTE texture from (H, W, 4) uint8 rows (row 0 at t = 0)."""
    h, w = pixels.shape[:2]
    tex = Texture(oes_texture_npot=npot)
    tex.tex_image_2d("TEXTURE_2D", 0, "RGBA", w, h, "RGBA", "UNSIGNED_BYTE",
                     np.ascontiguousarray(pixels, np.uint8).reshape(-1), unpack_alignment=1)
    if mipmaps:
        tex.generate_mipmap()
    tex.parameter("TEXTURE_MIN_FILTER", min_filter)
    tex.parameter("TEXTURE_MAG_FILTER", mag_filter)
    tex.parameter("TEXTURE_WRAP_S", wrap[0])
    tex.parameter("TEXTURE_WRAP_T", wrap[1])
    return tex


def request(s, t, *, r=None, mode="implicit", lod=None, ddx=None, ddy=None, target="2D",
            unit=0) -> TextureRequest:
    s = np.asarray(s, F32).reshape(-1)
    t = np.broadcast_to(np.asarray(t, F32), s.shape).astype(F32)
    r = np.zeros_like(s) if r is None else np.broadcast_to(np.asarray(r, F32), s.shape)
    coords = np.stack([s, t, r.astype(F32), np.ones_like(s)])
    if lod is not None:
        lod = np.broadcast_to(np.asarray(lod, F32), s.shape).astype(F32)
    return TextureRequest(unit=unit, target=target, coords=coords, lod_mode=mode, lod=lod,
                          ddx=ddx, ddy=ddy)


def cube_texture(size=2, texels=None, **params) -> Texture:
    """Cube map; face f texel (x, y) = (f * 40, x * 100, y * 100, 255) unless given."""
    tex = Texture("TEXTURE_CUBE_MAP")
    for f, face in enumerate(CUBE_FACES):
        if texels is None:
            pixels = np.zeros((size, size, 4), np.uint8)
            pixels[..., 0] = f * 40
            pixels[..., 1] = (np.arange(size) * 100)[None, :]
            pixels[..., 2] = (np.arange(size) * 100)[:, None]
            pixels[..., 3] = 255
        else:
            pixels = texels[f]
        tex.tex_image_2d(face, 0, "RGBA", size, size, "RGBA", "UNSIGNED_BYTE",
                         np.ascontiguousarray(pixels).reshape(-1))
    for name, value in {"TEXTURE_MIN_FILTER": "NEAREST", "TEXTURE_MAG_FILTER": "NEAREST",
                        **params}.items():
        tex.parameter(name, value)
    return tex


def lru_touch(tags: list, tag, ways: int) -> bool:
    """One access of ``tag`` to a set (``tags``: least recent first) of ``ways`` ways, LRU,
    one access at a time as a cache does: the oracle the cache-order tests simulate with.
    Returns whether it hit."""
    hit = tag in tags
    if hit:
        tags.remove(tag)
    elif len(tags) == ways:
        tags.pop(0)
    tags.append(tag)
    return hit
