"""``tilesim import``: an apitrace capture as a .tsim trace."""

from __future__ import annotations

import argparse
import json
import sys

from tilesim.errors import EXIT_OK
from tilesim.options import first_frames_argument, window_size
from tilesim.render.traces.apitrace_import import FRAME_END_CHOICES


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "import", help="import an apitrace capture of a GLES2 program as a .tsim trace",
        description="Translate an apitrace capture (made with `tilesim capture` or `apitrace "
                    "trace --api egl`) into tilesim's command stream, compiling every GLSL "
                    "program to TGSI with Mesa softpipe. Calls that cannot change the image "
                    "are skipped and counted; any other call the importer does not know is "
                    "an error naming its call number.")
    p.add_argument("trace", metavar="X.trace", help="apitrace capture")
    p.add_argument("-o", "--output", required=True, metavar="X.tsim", help="trace to write")
    p.add_argument("--frames", type=first_frames_argument(), default=None, metavar=":N",
                   help="keep the first N frames, :N (default: all)")
    p.add_argument("--size", default=None, metavar="WxH",
                   help="window size, when the capture does not tell it")
    p.add_argument("--name", default=None, help="trace name (default: the capture's stem)")
    p.add_argument("--frame-end", choices=FRAME_END_CHOICES, default="auto",
                   help="the call that ends a frame: eglSwapBuffers (swap), glReadPixels "
                        "(readpixels: the frame's image is the rectangle read, for programs "
                        "that never swap), glFinish (finish); auto (default): swap if the "
                        "capture swaps, else readpixels if it reads, else finish")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    p.set_defaults(func=_import_command)


def _import_command(args: argparse.Namespace) -> int:
    from tilesim.render.traces.apitrace_import import import_apitrace

    size = window_size(args.size) if args.size else None
    summary = import_apitrace(args.trace, args.output, frames=args.frames, size=size,
                              name=args.name, frame_end=args.frame_end)
    if args.json:
        report = summary.source(str(args.trace)) | {
            "output": str(summary.path), "frames": summary.frames, "width": summary.width,
            "height": summary.height, "seconds": round(summary.seconds, 3)}
        print(json.dumps(report, indent=2))
    else:
        print(summary.describe())
    for warning in summary.warnings:
        print(f"tilesim: warning: {args.trace}: {warning}", file=sys.stderr)
    return EXIT_OK
