"""``tilesim compare``: MSSIM, PSNR and differences of two folders of frames."""

from __future__ import annotations

import argparse
import json
import math

from tilesim.errors import EXIT_FAILED_CHECK, EXIT_OK, InputError
from tilesim.images import SSIM_WINDOW
from tilesim.thresholds import PROBE_TOLERANCE


def _mssim_text(value: float | None) -> str:
    return "probe" if value is None else f"{value:.5f}"


def _psnr_text(value: float | None) -> str:
    return "inf" if value is None or math.isinf(value) else f"{value:.2f}"


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "compare", help="MSSIM / PSNR / max difference of two folders of frames",
        description="Pair the frames of DIR_A and DIR_B by number (frames/NNNNNN.png as "
                    "`tilesim render` writes, frame_NNNNNN.png as `tilesim reference` "
                    "writes, or NNNNNN.png) and print per-frame MSSIM, PSNR and the largest "
                    "channel difference on RGB, then min and mean. A frame smaller than the "
                    f"{SSIM_WINDOW}x{SSIM_WINDOW} SSIM window is compared as piglit's probes "
                    "do: every pixel within --tolerance. Exit status 1 when --min-mssim or "
                    "--tolerance is given and a frame is below it or over it.")
    p.add_argument("folder_a", metavar="DIR_A",
                   help="a folder of frames: a `tilesim render` output, or PNGs numbered "
                        "frame_NNNNNN.png or NNNNNN.png")
    p.add_argument("folder_b", metavar="DIR_B", help="the folder to compare it with")
    p.add_argument("--min-mssim", type=float, default=None, metavar="X",
                   help="fail (exit 1) when any frame's MSSIM is below X")
    p.add_argument("--tolerance", type=int, default=None, metavar="N",
                   help="largest channel difference (in 1/255) a frame too small for MSSIM "
                        f"may have at any pixel (default {PROBE_TOLERANCE}, piglit's probe "
                        "tolerance; 0: exact); given, such a frame over it fails (exit 1)")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.set_defaults(func=_compare_command)


def _compare_command(args: argparse.Namespace) -> int:
    from tilesim.studies.compare import compare_folders

    if args.min_mssim is not None and not -1.0 <= args.min_mssim <= 1.0:
        raise InputError(f"--min-mssim {args.min_mssim}: expected a value in -1..1",
                         source="tilesim compare")
    if args.tolerance is not None and not 0 <= args.tolerance <= 255:
        raise InputError(f"--tolerance {args.tolerance}: expected a value in 0..255",
                         source="tilesim compare")
    tolerance = PROBE_TOLERANCE if args.tolerance is None else args.tolerance
    comparison = compare_folders(args.folder_a, args.folder_b, tolerance=tolerance)
    summary = comparison.summary()
    checked = args.min_mssim is not None or args.tolerance is not None
    failed = checked and not comparison.passed(args.min_mssim)
    if args.json:
        print(json.dumps({"a": str(args.folder_a), "b": str(args.folder_b),
                          "frames": [f.as_json() for f in comparison.frames],
                          "summary": summary, "min_mssim_required": args.min_mssim,
                          "tolerance": tolerance, "passed": not failed}, indent=2))
    else:
        print(f"{'frame':>6}  {'MSSIM':>8}  {'PSNR dB':>8}  {'max diff':>8}")
        for f in comparison.frames:
            row = (f"{f.frame:>6}  {_mssim_text(f.mssim):>8}  {_psnr_text(f.psnr):>8}  "
                   f"{f.max_diff:>8}")
            if f.mssim is None:
                row += f"  {100 * f.over_tolerance:.2f}% of pixels over {f.tolerance}"
            print(row)
        mssim = ("MSSIM none (every frame is below the SSIM window)"
                 if summary["min_mssim"] is None else
                 f"MSSIM min {summary['min_mssim']:.5f} (frame {summary['worst_frame']}), "
                 f"mean {summary['mean_mssim']:.5f}")
        print(f"{summary['frames']} frame(s): {mssim}; "
              f"PSNR min {_psnr_text(summary['min_psnr'])}, "
              f"mean {_psnr_text(summary['mean_psnr'])} dB; max diff {summary['max_diff']}")
        probes = summary["probe_frames"]
        if probes:
            over = summary["probes_over_tolerance"]
            print(f"{len(probes)} frame(s) below the {SSIM_WINDOW}x{SSIM_WINDOW} SSIM window "
                  f"compared as probes within {tolerance}/255: "
                  + (f"{len(over)} with pixels over it ({_frame_list(over)})" if over
                     else "all within"))
        for side, frames in (("A", comparison.only_a), ("B", comparison.only_b)):
            if frames:
                print(f"frames only in {side}: {_frame_list(frames)}")
        if checked:
            required = [f"minimum MSSIM {args.min_mssim}"] if args.min_mssim is not None else []
            if probes:
                required.append(f"probes within {tolerance}/255")
            print(f"{'FAILED' if failed else 'passed'}: "
                  + (" and ".join(required) or "no frame to check") + " required")
    return EXIT_FAILED_CHECK if failed else EXIT_OK


def _frame_list(frames: list[int]) -> str:
    return ", ".join(map(str, frames[:20])) + (" ..." if len(frames) > 20 else "")
