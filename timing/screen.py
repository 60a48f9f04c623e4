"""OLED screen energy of each frame from its pixel colors (TEAPOT models the screen, Shader Core
§2.2).

Dong, Choi and Zhong's pixel-level model (DAC 2009; 002 ref. 12): the panel draws a constant
``panel`` power plus, for every pixel, one term per sub-pixel that depends only on that
channel's value, ``f_c(v) = c_c x (v / 255) ^ gamma`` (emission is linear in the gamma-decoded
intensity). The frame is the PNG ``tilesim render`` wrote (``frames/NNNNNN.png``); its size is
the panel's. The frame is on screen for one refresh period, so its energy is
``(panel + sum of f) / refresh_rate``. Reported beside GPU and memory energy, never inside them.

Only per-channel histograms are needed, so a frame costs one PNG decode and PIL's C histogram
(``Image.histogram``), run in threads (both release the GIL), and a PNG whose bytes were seen
before in the process costs neither.
"""

from __future__ import annotations

import hashlib
import io
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

from tilesim.errors import InputError
from tilesim.timing.config import Config

NW = 1e-9
MW = 1e-3


def channel_power(ecfg: Config) -> np.ndarray:
    """(3, 256) watts drawn by one pixel's R, G, B sub-pixel at each 8-bit value."""
    levels = (np.arange(256) / 255.0) ** ecfg["screen.gamma"]
    coeff = np.array([ecfg["screen.red"], ecfg["screen.green"], ecfg["screen.blue"]]) * NW
    return coeff[:, None] * levels[None, :]


def histogram(image: np.ndarray) -> np.ndarray:
    """(3, 256) pixel counts per channel value of an (H, W, 3 or 4) uint8 image."""
    rgb = np.asarray(image)[..., :3].reshape(-1, 3)
    return np.stack([np.bincount(rgb[:, c], minlength=256) for c in range(3)]).astype(np.float64)


# Histograms by the PNG file's content digest: a study estimates every technique's frames in
# the same worker processes, and a lossless technique's frames are byte-identical to the
# baseline's, so each is decoded once. Bounded (6 KiB an entry); oldest dropped first.
_HISTOGRAMS: dict[bytes, np.ndarray] = {}
_HISTOGRAMS_KEPT = 4096


def _png_histogram(path: Path) -> np.ndarray:
    from PIL import Image, UnidentifiedImageError

    from tilesim.inputs import read_input_bytes

    data = read_input_bytes(path, "frame PNG")
    key = hashlib.blake2b(data, digest_size=16).digest()
    known = _HISTOGRAMS.get(key)
    if known is not None:
        return known
    try:
        with Image.open(io.BytesIO(data)) as im:
            if im.mode not in ("RGB", "RGBA"):
                im = im.convert("RGB")
            counts = im.histogram()  # 256 bins per band, bands in order
    except (OSError, UnidentifiedImageError, ValueError, SyntaxError,
            Image.DecompressionBombError):
        # PIL's message names the BytesIO object, not the file: name the file
        raise InputError(f"not a readable PNG ({len(data)} bytes)", source=str(path)) from None
    histogram = np.asarray(counts[:768], dtype=np.float64).reshape(3, 256)
    histogram.setflags(write=False)
    while len(_HISTOGRAMS) >= _HISTOGRAMS_KEPT:
        _HISTOGRAMS.pop(next(iter(_HISTOGRAMS)), None)   # threads may race here: harmless
    _HISTOGRAMS[key] = histogram
    return histogram


def png_histograms(paths: list[Path | None], workers: int = 8) -> np.ndarray:
    """(F, 3, 256) histograms of the frames' PNGs; a missing PNG (None) gives NaN."""
    out = np.full((len(paths), 3, 256), np.nan)
    todo = [(i, p) for i, p in enumerate(paths) if p is not None]
    if todo:
        with ThreadPoolExecutor(max_workers=max(1, min(workers, len(todo)))) as pool:
            for (i, _), hist in zip(todo, pool.map(_png_histogram, [p for _, p in todo]),
                                    strict=True):
                out[i] = hist
    return out


def screen_power(histograms: np.ndarray, ecfg: Config) -> np.ndarray:
    """Panel power (W) of each frame from (F, 3, 256) histograms: (F,); NaN where unknown."""
    pixels = np.einsum("fcv,cv->f", histograms, channel_power(ecfg))
    return ecfg["screen.panel"] * MW + pixels


def screen_energy(histograms: np.ndarray, cfg: Config, ecfg: Config) -> np.ndarray:
    """Energy (J) of showing each frame for one refresh period: (F,)."""
    return screen_power(histograms, ecfg) / cfg["screen.refresh_rate"]
