"""Image quality of frames against reference frames: MSSIM, PSNR, largest channel difference.

``tilesim compare DIR_A DIR_B`` pairs the frames of two folders by frame number and prints,
per frame and in summary (min, mean), the mean structural similarity (MSSIM), the peak
signal-to-noise ratio (PSNR, dB) and the largest difference of any channel (0..255). It exits
with 1 when ``--min-mssim`` is given and a frame falls below it.

Frame folders may be laid out as ``tilesim render`` writes them (``DIR/frames/NNNNNN.png``), as
``tilesim reference`` writes them (``DIR/frame_NNNNNN.png``), or hold ``NNNNNN.png`` directly.

Metrics are computed on RGB (alpha is dropped: apitrace's reference images have none), 8 bits per
channel, exactly as the seeds compute MSSIM: ``skimage.metrics.structural_similarity`` with
``gaussian_weights=True, sigma=1.5, use_sample_covariance=False, data_range=255`` and
``channel_axis=-1`` (Wang et al. 2004). PSNR of identical images is infinite (reported as
``null`` in JSON, ``inf`` in text). :func:`image_metrics` and :func:`compare_images` are the
library entry points (tests and ``render.conformance`` use them).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from tilesim.errors import EXIT_FAILED_CHECK, EXIT_OK, InputError

_FRAME_NAME = re.compile(r"^(?:frame_)?(\d+)\.png$")
SSIM_OPTIONS = {"gaussian_weights": True, "sigma": 1.5, "use_sample_covariance": False,
                "data_range": 255}


@dataclass(frozen=True)
class FrameMetrics:
    """Quality of one frame against its reference: ``mssim`` (0..1, 1 = identical), ``psnr``
    (dB, ``inf`` when identical), ``max_diff`` (largest channel difference, 0..255)."""

    frame: int
    mssim: float
    psnr: float
    max_diff: int

    def as_json(self) -> dict:
        return {"frame": self.frame, "mssim": self.mssim,
                "psnr": None if math.isinf(self.psnr) else self.psnr, "max_diff": self.max_diff}


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


def image_metrics(image, reference, frame: int = 0, where: str = "<image>") -> FrameMetrics:
    """MSSIM, PSNR and max channel difference of ``image`` against ``reference`` (RGB[A] uint8
    arrays of the same height and width)."""
    from skimage.metrics import peak_signal_noise_ratio, structural_similarity

    a, b = as_rgb(image, where), as_rgb(reference, where)
    if a.shape != b.shape:
        raise InputError(f"frame {frame}: sizes differ ({a.shape[1]}x{a.shape[0]} against "
                         f"{b.shape[1]}x{b.shape[0]})", source=where)
    if min(a.shape[:2]) < 7:
        raise InputError(f"frame {frame}: images smaller than 7x7 pixels have no MSSIM",
                         source=where)
    max_diff = int(np.abs(a.astype(np.int16) - b.astype(np.int16)).max())
    if max_diff == 0:
        return FrameMetrics(frame, 1.0, math.inf, 0)
    mssim = float(structural_similarity(a, b, channel_axis=-1, **SSIM_OPTIONS))
    psnr = float(peak_signal_noise_ratio(b, a, data_range=255))
    return FrameMetrics(frame, mssim, psnr, max_diff)


def frame_files(folder: str | os.PathLike) -> dict[int, Path]:
    """Frame number -> PNG of a frame folder (``frames/NNNNNN.png``, ``frame_NNNNNN.png`` or
    ``NNNNNN.png``)."""
    root = Path(folder)
    if not root.is_dir():
        raise InputError("no such folder", source=str(root))
    for candidate in (root / "frames", root):
        if not candidate.is_dir():
            continue
        found: dict[int, Path] = {}
        for path in sorted(candidate.iterdir()):
            match = _FRAME_NAME.match(path.name)
            if match and path.is_file():
                number = int(match.group(1))
                if number in found:
                    raise InputError(f"frame {number} appears twice ({found[number].name}, "
                                     f"{path.name})", source=str(candidate))
                found[number] = path
        if found:
            return found
    raise InputError("no frame images (expected frames/NNNNNN.png, frame_NNNNNN.png or "
                     "NNNNNN.png)", source=str(root))


def read_png(path: Path, mode: str = "RGB") -> np.ndarray:
    """A PNG as an (H, W, 3) uint8 RGB array (or RGBA with ``mode``); InputError naming the
    file when unreadable."""
    from PIL import Image, UnidentifiedImageError

    try:
        with Image.open(path) as image:
            return np.asarray(image.convert(mode))
    except (OSError, UnidentifiedImageError, ValueError) as exc:
        raise InputError(f"not a readable image: {exc}", source=str(path)) from None


@dataclass
class Comparison:
    """Per-frame metrics of paired frames and frames only one side has."""

    frames: list[FrameMetrics]
    only_a: list[int]
    only_b: list[int]

    def summary(self) -> dict:
        mssim = [f.mssim for f in self.frames]
        psnr = [f.psnr for f in self.frames]
        finite = [p for p in psnr if not math.isinf(p)]
        worst = min(self.frames, key=lambda f: f.mssim)
        return {"frames": len(self.frames), "min_mssim": min(mssim),
                "mean_mssim": float(np.mean(mssim)), "worst_frame": worst.frame,
                "min_psnr": min(finite) if finite else None,
                "mean_psnr": float(np.mean(finite)) if len(finite) == len(psnr) else None,
                "max_diff": max(f.max_diff for f in self.frames),
                "only_in_a": self.only_a, "only_in_b": self.only_b}


def compare_images(images: dict[int, np.ndarray] | list[np.ndarray],
                   references: dict[int, np.ndarray] | list[np.ndarray],
                   where: str = "<images>") -> Comparison:
    """Metrics of every frame number present on both sides (lists count from 0)."""
    a = dict(enumerate(images)) if isinstance(images, list) else dict(images)
    b = dict(enumerate(references)) if isinstance(references, list) else dict(references)
    common = sorted(set(a) & set(b))
    if not common:
        raise InputError("no frame number is present on both sides", source=where)
    metrics = [image_metrics(a[n], b[n], n, where) for n in common]
    return Comparison(metrics, sorted(set(a) - set(b)), sorted(set(b) - set(a)))


def compare_folders(folder_a: str | os.PathLike, folder_b: str | os.PathLike) -> Comparison:
    """Metrics of the frames of two folders paired by frame number (see :func:`frame_files`)."""
    files_a, files_b = frame_files(folder_a), frame_files(folder_b)
    common = sorted(set(files_a) & set(files_b))
    if not common:
        raise InputError(f"no frame number is present in both {folder_a} ({len(files_a)} "
                         f"frames) and {folder_b} ({len(files_b)} frames)",
                         source=f"{folder_a} vs {folder_b}")
    metrics = [image_metrics(read_png(files_a[n]), read_png(files_b[n]), n,
                             f"{files_a[n]} vs {files_b[n]}") for n in common]
    return Comparison(metrics, sorted(set(files_a) - set(files_b)),
                      sorted(set(files_b) - set(files_a)))


def _psnr_text(value: float | None) -> str:
    return "inf" if value is None or math.isinf(value) else f"{value:.2f}"


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "compare", help="MSSIM / PSNR / max difference of two folders of frames",
        description="Pair the frames of DIR_A and DIR_B by number (frames/NNNNNN.png as "
                    "`tilesim render` writes, frame_NNNNNN.png as `tilesim reference` "
                    "writes, or NNNNNN.png) and print per-frame MSSIM, PSNR and the largest "
                    "channel difference on RGB, then min and mean. Exit status 1 when "
                    "--min-mssim is given and a frame is below it.")
    p.add_argument("folder_a", metavar="DIR_A")
    p.add_argument("folder_b", metavar="DIR_B")
    p.add_argument("--min-mssim", type=float, default=None, metavar="X",
                   help="fail (exit 1) when any frame's MSSIM is below X")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.set_defaults(func=_compare_command)


def _compare_command(args: argparse.Namespace) -> int:
    if args.min_mssim is not None and not -1.0 <= args.min_mssim <= 1.0:
        raise InputError(f"--min-mssim {args.min_mssim}: expected a value in -1..1",
                         source="tilesim compare")
    comparison = compare_folders(args.folder_a, args.folder_b)
    summary = comparison.summary()
    failed = args.min_mssim is not None and summary["min_mssim"] < args.min_mssim
    if args.json:
        print(json.dumps({"a": str(args.folder_a), "b": str(args.folder_b),
                          "frames": [f.as_json() for f in comparison.frames],
                          "summary": summary, "min_mssim_required": args.min_mssim,
                          "passed": not failed}, indent=2))
    else:
        print(f"{'frame':>6}  {'MSSIM':>8}  {'PSNR dB':>8}  {'max diff':>8}")
        for f in comparison.frames:
            print(f"{f.frame:>6}  {f.mssim:>8.5f}  {_psnr_text(f.psnr):>8}  {f.max_diff:>8}")
        print(f"{summary['frames']} frame(s): MSSIM min {summary['min_mssim']:.5f} "
              f"(frame {summary['worst_frame']}), mean {summary['mean_mssim']:.5f}; "
              f"PSNR min {_psnr_text(summary['min_psnr'])}, "
              f"mean {_psnr_text(summary['mean_psnr'])} dB; max diff {summary['max_diff']}")
        for side, frames in (("A", comparison.only_a), ("B", comparison.only_b)):
            if frames:
                print(f"frames only in {side}: {', '.join(map(str, frames[:20]))}"
                      f"{' ...' if len(frames) > 20 else ''}")
        if args.min_mssim is not None:
            print(f"{'FAILED' if failed else 'passed'}: minimum MSSIM required "
                  f"{args.min_mssim}")
    return EXIT_FAILED_CHECK if failed else EXIT_OK
