"""Image quality of frames against reference frames: MSSIM, PSNR, largest channel difference.

``tilesim compare DIR_A DIR_B`` pairs the frames of two folders by frame number and prints,
per frame and in summary (min, mean), the mean structural similarity (MSSIM), the peak
signal-to-noise ratio (PSNR, dB) and the largest difference of any channel (0..255). A frame
smaller than the SSIM window (11x11 pixels: a test program's glReadPixels of a few pixels, a
1x1 probe) has no MSSIM: it is compared as piglit's probes compare, every channel of every pixel
within ``--tolerance`` (default :data:`tilesim.thresholds.PROBE_TOLERANCE`, 0 for exact), and
its row gives the share of pixels over it. It exits with 1 when ``--min-mssim`` or
``--tolerance`` is given and a frame falls below the MSSIM or has a pixel over the tolerance.

Frame folders may be laid out as ``tilesim render`` writes them (``DIR/frames/NNNNNN.png``), as
``tilesim reference`` writes them (``DIR/frame_NNNNNN.png``), or hold ``NNNNNN.png`` directly.

Metrics are computed on RGB (alpha is dropped: apitrace's reference images have none), 8 bits per
channel, exactly as the theses compute MSSIM: ``skimage.metrics.structural_similarity`` with
``gaussian_weights=True, sigma=1.5, use_sample_covariance=False, data_range=255`` and
``channel_axis=-1`` (Wang et al. 2004). PSNR of identical images is infinite (reported as
``null`` in JSON, ``inf`` in text). The metrics themselves are :mod:`tilesim.images`.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from tilesim.errors import InputError
from tilesim.images import Comparison, image_metrics, read_png
from tilesim.render_folder import FRAMES_DIR, IDENTITY_FILE, open_render_folder
from tilesim.thresholds import PROBE_TOLERANCE

_FRAME_NAME = re.compile(r"^(?:frame_)?(\d+)\.png$")


def frame_files(folder: str | os.PathLike) -> dict[int, Path]:
    """Frame number -> PNG of a frame folder (``frames/NNNNNN.png``, ``frame_NNNNNN.png`` or
    ``NNNNNN.png``)."""
    root = Path(folder)
    if not root.is_dir():
        raise InputError("is a file, not a folder of frames" if root.exists()
                         else "no such folder", source=str(root))
    if (root / IDENTITY_FILE).is_file():
        # a tilesim render: the frames its manifest lists, each checked against its digest
        render = open_render_folder(root)
        return dict(zip(render.frames, render.pngs(), strict=True))
    for candidate in (root / FRAMES_DIR, root):
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


def compare_folders(folder_a: str | os.PathLike, folder_b: str | os.PathLike, *,
                    tolerance: int = PROBE_TOLERANCE) -> Comparison:
    """Metrics of the frames of two folders paired by frame number (see :func:`frame_files`);
    frames below the SSIM window are compared as probes within ``tolerance`` (1/255)."""
    files_a, files_b = frame_files(folder_a), frame_files(folder_b)
    common = sorted(set(files_a) & set(files_b))
    if not common:
        raise InputError(f"no frame number is present in both {folder_a} ({len(files_a)} "
                         f"frames) and {folder_b} ({len(files_b)} frames)",
                         source=f"{folder_a} vs {folder_b}")
    metrics = [image_metrics(read_png(files_a[n]), read_png(files_b[n]), n,
                             f"{files_a[n]} vs {files_b[n]}", tolerance=tolerance)
               for n in common]
    return Comparison(metrics, sorted(set(files_a) - set(files_b)),
                      sorted(set(files_b) - set(files_a)))
