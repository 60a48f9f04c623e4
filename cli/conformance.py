"""``tilesim conformance``: the conformance scenes, tilesim against Mesa."""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import TYPE_CHECKING

from tilesim.atomic import check_output
from tilesim.errors import EXIT_FAILED_CHECK, EXIT_OK
from tilesim.options import window_size_argument
from tilesim.render.pipeline.options import FILL_RULES, MEDIUMP_HELP
from tilesim.shaders.interpreter import MEDIUMP_MODES
from tilesim.thresholds import (
    CONFORMANCE_COUNT_RTOL,
    CONFORMANCE_MIN_MSSIM,
    CONFORMANCE_MIN_WITHIN,
    CONFORMANCE_TOLERANCE,
)

if TYPE_CHECKING:
    from tilesim.studies.conformance import SceneResult


def register(subparsers) -> None:
    """Add ``tilesim conformance`` to the CLI's subparsers."""
    p = subparsers.add_parser(
        "conformance", help="render the conformance scenes with tilesim and Mesa llvmpipe, "
                            "compare (MSSIM, pixels within 2/255, fragment counts)",
        description="Render every conformance scene (or those named) with tilesim and with "
                    "Mesa llvmpipe at the same size and compare them. A scene passes with "
                    f"MSSIM >= {CONFORMANCE_MIN_MSSIM}, >= "
                    f"{100 * CONFORMANCE_MIN_WITHIN:.1f}% of pixels within "
                    f"{CONFORMANCE_TOLERANCE}/255 on every channel and fragment counts within "
                    f"{100 * CONFORMANCE_COUNT_RTOL:.1f}%. Exit 0 when all pass, 1 otherwise.")
    p.add_argument("--scene", action="extend", nargs="+", metavar="NAME", default=None,
                   help="scenes to run (default: all; see --list)")
    p.add_argument("--size", type=window_size_argument(minimum=16, maximum=4096),
                   metavar="WxH", default=None,
                   help="render every scene at this size instead of its own")
    p.add_argument("--out", metavar="DIR", default=None,
                   help="write DIR/<scene>/frameNNN_{tilesim,mesa,diff}.png")
    p.add_argument("--json", action="store_true", help="print the results as JSON")
    p.add_argument("--list", action="store_true", help="list the scenes and exit")
    p.add_argument("--fill-rule", choices=FILL_RULES, default=None, help=argparse.SUPPRESS)
    p.add_argument("--mediump", choices=MEDIUMP_MODES, default=None,
                   help=MEDIUMP_HELP.replace("pairs with `tilesim reference --driver "
                                             "llvmpipe`", "llvmpipe is the reference here"))
    p.set_defaults(func=_main)


def _format_row(r: SceneResult) -> str:
    status = "PASS" if r.passed else "FAIL"
    if r.error:
        return f"{r.scene:<22} {'':>8} {'':>8} {'':>9} {'':>9} {'':>8}  {status}  {r.error}"
    err = r.count_error
    err_text = "-" if err is None else f"{100 * err:.3f}%"
    mesa = "-" if r.fragments_mesa is None else str(r.fragments_mesa)
    return (f"{r.scene:<22} {r.mssim:8.5f} {100 * r.within:7.3f}% {r.fragments_tilesim:9d} "
            f"{mesa:>9} {err_text:>8}  {status}")


def _main(args: argparse.Namespace) -> int:
    from tilesim.render.workloads.conformance_scenes import SCENES
    from tilesim.studies.conformance import run_conformance

    if args.list:
        for scene in SCENES.values():
            print(f"{scene.name:<22} {scene.size[0]}x{scene.size[1]:<5} {scene.covers}")
        return EXIT_OK
    out = check_output(args.out, folder=True) if args.out else None   # before any scene
    start = time.perf_counter()
    if not args.json:
        print(f"{'scene':<22} {'MSSIM':>8} {'within':>8} {'frag ts':>9} {'frag mesa':>9} "
              f"{'diff':>8}  result")
    progress = None if args.json else (lambda r: (print(_format_row(r)), sys.stdout.flush()))
    options = {"fill_rule": args.fill_rule} if args.fill_rule else {}
    if args.mediump:
        options["mediump"] = args.mediump
    results = run_conformance(args.scene, args.size, out=out, progress=progress,
                              renderer_options=options)
    elapsed = time.perf_counter() - start
    passed = sum(r.passed for r in results)
    if args.json:
        print(json.dumps({"thresholds": {"mssim": CONFORMANCE_MIN_MSSIM,
                                         "within": CONFORMANCE_MIN_WITHIN,
                                         "tolerance": CONFORMANCE_TOLERANCE,
                                         "count_rtol": CONFORMANCE_COUNT_RTOL},
                          "scenes": [r.as_dict() for r in results], "passed": passed,
                          "total": len(results), "seconds": elapsed}, indent=2))
    else:
        print(f"{passed}/{len(results)} scenes pass ({elapsed:.1f} s)")
        for r in results:
            for failure in r.failures():
                print(f"  {r.scene}: {failure}")
    return EXIT_OK if passed == len(results) else EXIT_FAILED_CHECK
