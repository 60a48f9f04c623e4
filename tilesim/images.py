"""Frames as images: PNG files in and out, and the quality of a frame against a reference
(MSSIM, PSNR, largest channel difference, share of pixels over a tolerance).

One definition for every study and technique: MSSIM as the thesis computes it
(``skimage.metrics.structural_similarity`` with ``gaussian_weights=True, sigma=1.5,
use_sample_covariance=False, data_range=255``, Wang et al. 2004), on RGB with alpha dropped
(apitrace's reference images have none), 8 bits per channel. PSNR of identical images is
infinite (``null`` in JSON).

Small observations. The Gaussian window is :data:`SSIM_WINDOW` (11) pixels wide, so a frame
narrower or lower than that (a test program's glReadPixels of a few pixels, piglit's 1x1
probes) has no MSSIM. Such a frame is compared the way piglit's probes compare pixels
(``piglit_probe_pixel_rgb``): every channel of every pixel must be within a tolerance of the
reference, by default :data:`tilesim.thresholds.PROBE_TOLERANCE` (piglit's ``3 / 2**bits`` of
an 8-bit channel admits differences up to 2/255); its metrics give the largest difference and
the share of pixels over the tolerance, and ``mssim`` is None. Tolerance 0 compares exactly.
"""

from __future__ import annotations

import math
import struct
import zlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from tilesim.errors import InputError
from tilesim.thresholds import PROBE_TOLERANCE

SSIM_OPTIONS = {"gaussian_weights": True, "sigma": 1.5, "use_sample_covariance": False,
                "data_range": 255}
# The side of scikit-image's Gaussian SSIM window, in pixels: 2 * int(truncate * sigma + 0.5)
# + 1 with its truncate of 3.5 and sigma 1.5. A frame smaller on either side has no MSSIM.
SSIM_WINDOW = 2 * int(3.5 * SSIM_OPTIONS["sigma"] + 0.5) + 1


@dataclass(frozen=True)
class FrameMetrics:
    """Quality of one frame against its reference: ``mssim`` (0..1, 1 = identical; None for a
    frame smaller than :data:`SSIM_WINDOW`, compared as a probe), ``psnr`` (dB, ``inf`` when
    identical), ``max_diff`` (largest channel difference, 0..255), ``over_tolerance`` (share
    of pixels, 0..1, with a channel differing by more than ``tolerance``, in 1/255)."""

    frame: int
    mssim: float | None
    psnr: float
    max_diff: int
    over_tolerance: float = 0.0
    tolerance: int = PROBE_TOLERANCE

    @property
    def method(self) -> str:
        """``"mssim"``, or ``"probe"`` for a frame below the SSIM window."""
        return "probe" if self.mssim is None else "mssim"

    def passes(self, min_mssim: float | None) -> bool:
        """Whether the frame meets ``min_mssim`` (None: any MSSIM); a probe frame passes when
        no pixel is over the tolerance, as a piglit probe does."""
        if self.mssim is None:
            return self.over_tolerance == 0.0
        return min_mssim is None or self.mssim >= min_mssim

    def as_json(self) -> dict:
        return {"frame": self.frame, "method": self.method, "mssim": self.mssim,
                "psnr": None if math.isinf(self.psnr) else self.psnr, "max_diff": self.max_diff,
                "over_tolerance": self.over_tolerance, "tolerance": self.tolerance}


def as_rgb(image, where: str = "<image>") -> np.ndarray:
    """An (H, W, 3) uint8 array from (H, W), (H, W, 3) or (H, W, 4) uint8 data."""
    array = np.asarray(image)
    if array.dtype != np.uint8:
        raise InputError(f"image must be 8-bit (uint8), got {array.dtype}", source=where)
    if array.ndim == 2:
        return np.repeat(array[:, :, None], 3, axis=2)
    if array.ndim != 3 or array.shape[2] not in (3, 4):
        raise InputError(f"image must be (H, W), (H, W, 3) or (H, W, 4), got {array.shape}",
                         source=where)
    return np.ascontiguousarray(array[:, :, :3])


def image_metrics(image, reference, frame: int = 0, where: str = "<image>", *,
                  tolerance: int = PROBE_TOLERANCE) -> FrameMetrics:
    """MSSIM, PSNR, max channel difference and share of pixels over ``tolerance`` (0..255) of
    ``image`` against ``reference`` (RGB[A] uint8 arrays of the same height and width, alpha
    dropped); a frame below the SSIM window gets ``mssim`` None (module docstring)."""
    from skimage.metrics import peak_signal_noise_ratio, structural_similarity

    a, b = as_rgb(image, where), as_rgb(reference, where)
    if a.shape != b.shape:
        raise InputError(f"frame {frame}: sizes differ ({a.shape[1]}x{a.shape[0]} against "
                         f"{b.shape[1]}x{b.shape[0]})", source=where)
    if a.size == 0:
        raise InputError(f"frame {frame}: the images have no pixels", source=where)
    diff = np.abs(a.astype(np.int16) - b.astype(np.int16)).max(axis=2)
    max_diff = int(diff.max())
    probe = min(a.shape[:2]) < SSIM_WINDOW
    if max_diff == 0:
        return FrameMetrics(frame, None if probe else 1.0, math.inf, 0, 0.0, tolerance)
    over = float(np.count_nonzero(diff > tolerance) / diff.size)
    mssim = None if probe else float(structural_similarity(a, b, channel_axis=-1,
                                                           **SSIM_OPTIONS))
    psnr = float(peak_signal_noise_ratio(b, a, data_range=255))
    return FrameMetrics(frame, mssim, psnr, max_diff, over, tolerance)


def read_png(path: Path, mode: str = "RGB") -> np.ndarray:
    """A PNG as an (H, W, 3) uint8 RGB array (or RGBA with ``mode``); InputError naming the
    file when unreadable."""
    from PIL import Image, UnidentifiedImageError

    from tilesim.memory_budget import check_memory

    try:
        with Image.open(path) as image:
            # checked from the header, before the pixels are decoded (a small PNG may
            # declare 60000x60000)
            width, height = image.size
            check_memory("decoding the image", width * height * len(mode), str(path))
            return np.asarray(image.convert(mode))
    except (OSError, UnidentifiedImageError, ValueError, SyntaxError, zlib.error,
            Image.DecompressionBombError) as exc:
        raise InputError(f"not a readable image: {exc}", source=str(path)) from None


@dataclass
class Comparison:
    """Per-frame metrics of paired frames and frames only one side has."""

    frames: list[FrameMetrics]
    only_a: list[int]
    only_b: list[int]

    def summary(self) -> dict:
        """Min and mean of each metric; MSSIM's over the frames that have one (None when none
        has), the worst frame the lowest MSSIM, else the probe frame most over tolerance;
        ``probe_frames`` the frames compared as probes, ``probes_over_tolerance`` those with
        a pixel over it."""
        scored = [f for f in self.frames if f.mssim is not None]
        probes = [f for f in self.frames if f.mssim is None]
        psnr = [f.psnr for f in self.frames]
        finite = [p for p in psnr if not math.isinf(p)]
        worst = (min(scored, key=lambda f: f.mssim) if scored else
                 max(probes, key=lambda f: (f.over_tolerance, f.max_diff)))
        return {"frames": len(self.frames),
                "min_mssim": min(f.mssim for f in scored) if scored else None,
                "mean_mssim": float(np.mean([f.mssim for f in scored])) if scored else None,
                "worst_frame": worst.frame,
                "min_psnr": min(finite) if finite else None,
                "mean_psnr": float(np.mean(finite)) if len(finite) == len(psnr) else None,
                "max_diff": max(f.max_diff for f in self.frames),
                "probe_frames": [f.frame for f in probes],
                "probes_over_tolerance": [f.frame for f in probes if f.over_tolerance > 0],
                "only_in_a": self.only_a, "only_in_b": self.only_b}

    def passed(self, min_mssim: float | None) -> bool:
        """Every frame meets ``min_mssim``, probe frames their tolerance
        (:meth:`FrameMetrics.passes`)."""
        return all(f.passes(min_mssim) for f in self.frames)


def compare_images(images: dict[int, np.ndarray] | list[np.ndarray],
                   references: dict[int, np.ndarray] | list[np.ndarray],
                   where: str = "<images>", *, tolerance: int = PROBE_TOLERANCE) -> Comparison:
    """Metrics of every frame number present on both sides (lists count from 0); frames below
    the SSIM window are compared as probes within ``tolerance``."""
    a = dict(enumerate(images)) if isinstance(images, list) else dict(images)
    b = dict(enumerate(references)) if isinstance(references, list) else dict(references)
    common = sorted(set(a) & set(b))
    if not common:
        raise InputError("no frame number is present on both sides", source=where)
    metrics = [image_metrics(a[n], b[n], n, where, tolerance=tolerance) for n in common]
    return Comparison(metrics, sorted(set(a) - set(b)), sorted(set(b) - set(a)))




# The PNGs a render writes for every frame (batch render folders, coherence's baseline
# frames, a study's nine runs of a hundred frames each: 900 files) are encoded for speed: the
# Sub filter on every row and zlib's run-length strategy. Pillow tries several filters on
# every row; on the runner's 1196x768 frames that took about 85 ms a frame at zlib level 1
# (887 kB) against about 40 ms here (830 kB), the pixels the same.
FRAME_PNG_LEVEL = 1
_PNG_COLOR_TYPES = {1: 0, 3: 2, 4: 6}     # channels -> PNG colour type (grey, RGB, RGBA)


def png_bytes(image, level: int = 6, *, strategy: int = zlib.Z_DEFAULT_STRATEGY) -> bytes:
    """An (H, W) grey, (H, W, 3) RGB or (H, W, 4) RGBA uint8 image as an 8-bit PNG, every row
    Sub-filtered (each byte minus the same channel of the pixel to its left), deflated at zlib
    compression ``level`` (0-9) with zlib ``strategy``."""
    pixels = np.asarray(image)
    if pixels.dtype != np.uint8 or pixels.ndim not in (2, 3) or (
            pixels.ndim == 3 and pixels.shape[2] not in _PNG_COLOR_TYPES):
        raise ValueError(f"not an 8-bit grey, RGB or RGBA image: {pixels.dtype} "
                         f"{pixels.shape}")
    height, width = pixels.shape[:2]
    channels = 1 if pixels.ndim == 2 else pixels.shape[2]
    rows = pixels.reshape(height, width * channels)
    filtered = np.empty((height, 1 + width * channels), dtype=np.uint8)
    filtered[:, 0] = 1                                  # filter type 1: Sub
    filtered[:, 1:] = rows
    filtered[:, 1 + channels:] -= rows[:, :-channels]   # modulo 256, as PNG defines it
    deflate = zlib.compressobj(level, zlib.DEFLATED, 15, 9, strategy)
    data = deflate.compress(filtered.data) + deflate.flush()
    header = struct.pack(">IIBBBBB", width, height, 8, _PNG_COLOR_TYPES[channels], 0, 0, 0)
    return b"".join((b"\x89PNG\r\n\x1a\n", _png_chunk(b"IHDR", header),
                     _png_chunk(b"IDAT", data), _png_chunk(b"IEND", b"")))


def frame_png_bytes(image) -> bytes:
    """A rendered frame as the PNG a render writes for it (see :data:`FRAME_PNG_LEVEL`)."""
    return png_bytes(image, FRAME_PNG_LEVEL, strategy=zlib.Z_RLE)


def _png_chunk(kind: bytes, data: bytes) -> bytes:
    return b"".join((struct.pack(">I", len(data)), kind, data,
                     struct.pack(">I", zlib.crc32(data, zlib.crc32(kind)))))


def within_tolerance(image, reference, tolerance: int) -> tuple[float, int]:
    """(share of pixels whose channels all differ by at most ``tolerance``, the largest
    channel difference) of two uint8 images of one shape, every channel counted."""
    a, b = np.asarray(image), np.asarray(reference)
    if a.shape != b.shape:
        raise InputError(f"image sizes differ: {a.shape} against {b.shape}")
    diff = np.abs(a.astype(np.int16) - b.astype(np.int16))
    pixels = diff.reshape(diff.shape[0], diff.shape[1], -1)
    return float((pixels <= tolerance).all(axis=2).mean()), int(diff.max())
