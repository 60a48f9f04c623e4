"""``tilesim capture`` and ``tilesim reference``: real GLES2 programs under apitrace, and
Mesa's images of a capture."""

from __future__ import annotations

import argparse
import sys

from tilesim.errors import EXIT_OK
from tilesim.options import first_frames_argument, window_size
from tilesim.render.traces.apitrace_import import FRAME_END_CHOICES
from tilesim.render.traces.capture import REFERENCE_DRIVERS


def register(subparsers) -> None:

    p = subparsers.add_parser(
        "capture", help="run a GLES2 program under apitrace + Mesa and keep N frames",
        description="Run PROGRAM-SPEC under xvfb-run with apitrace on Mesa llvmpipe and keep "
                    "its first N frames in an apitrace file. Specs: glmark2-es2[:SCENE[:OPTION="
                    "VALUE...]] (e.g. glmark2-es2:shading:shading=phong) and es2gears.")
    p.add_argument("spec", metavar="PROGRAM-SPEC",
                   help="glmark2-es2[:SCENE[:OPTION=VALUE...]] or es2gears")
    p.add_argument("--frames", type=first_frames_argument(), required=True, metavar=":N",
                   help="frames to keep: :N, the first N (a range from the program's start)")
    p.add_argument("--size", default=None, metavar="WxH",
                   help="window size (glmark2; default 800x600; es2gears is always 300x300)")
    p.add_argument("-o", "--output", required=True, metavar="X.trace", help="apitrace file")
    p.set_defaults(func=_capture_command)

    r = subparsers.add_parser(
        "reference", help="Mesa's image of every frame of an apitrace capture (PNG)",
        description="Replay an apitrace capture on Mesa with `apitrace dump-images` and "
                    "write each frame as DIR/frame_NNNNNN.png, for `tilesim compare`.")
    r.add_argument("trace", metavar="X.trace", help="apitrace capture")
    r.add_argument("--out", "-o", required=True, metavar="DIR", help="output folder")
    r.add_argument("--driver", choices=REFERENCE_DRIVERS, default="softpipe",
                   help="Mesa driver (default softpipe: 32-bit floats everywhere, like the "
                        "TGSI tilesim runs by default; llvmpipe computes mediump in 16-bit "
                        "floats: compare it with `tilesim render --mediump fp16`)")
    r.add_argument("--frame-end", choices=FRAME_END_CHOICES,
                   default="auto",
                   help="the call that ends a frame, as for `tilesim import` (default auto: "
                        "swap if the capture swaps, else readpixels if it reads, else finish); "
                        "a readpixels frame is the rectangle read from the framebuffer bound")
    r.set_defaults(func=_reference_command)


def _capture_command(args: argparse.Namespace) -> int:
    from tilesim.render.traces.capture import capture

    size = window_size(args.size) if args.size else None
    result = capture(args.spec, args.output, frames=args.frames, size=size)
    print(f"captured {result.frames} frame(s) of {args.spec} at {result.width}x"
          f"{result.height} into {result.path} ({result.seconds:.1f} s)")
    return EXIT_OK


def _reference_command(args: argparse.Namespace) -> int:
    from tilesim.render.traces.capture import reference_frames

    def warn(warning: str) -> None:   # as `tilesim import` says them
        print(f"tilesim: warning: {args.trace}: {warning}", file=sys.stderr)

    written = reference_frames(args.trace, args.out, driver=args.driver,
                               frame_end=args.frame_end, warn=warn)
    print(f"wrote {len(written)} reference frame(s) of {args.trace} into {args.out}")
    return EXIT_OK
