"""``tilesim characterize``: the workload columns of Tables 3.3 and 3.4."""

from __future__ import annotations

import argparse
import json

from tilesim.errors import EXIT_OK
from tilesim.options import frame_range, frames_argument, positive_int


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "characterize",
        help="the workload columns of Frame Coherence Tables 3.3 and 3.4 for a trace",
        description="Render TRACE on the tile-based model and print its geometry and raster "
                    "characterization (Frame Coherence Tables 3.3 and 3.4): draw calls per frame, "
                    "vertices per draw, attributes per vertex, VS/FS instructions, "
                    "primitives per draw and per tile, fragments per primitive, ALU:TEX "
                    "ratio, texels per fragment, overshading.")
    p.add_argument("trace", metavar="TRACE", help="a .tsim trace")
    p.add_argument("--frames", type=frames_argument(), default=":", metavar="A:B",
                   help="frames to count, A:B from A up to, not including, B (default: all; "
                        "earlier frames are rendered too, for their state)")
    p.add_argument("--tile-size", type=positive_int, default=16, metavar="N",
                   help="tile size in pixels (default 16, Table 3.1)")
    p.add_argument("--json", action="store_true",
                   help="print JSON (the columns, per-frame columns and notes)")
    p.set_defaults(func=_characterize)


def _characterize(args: argparse.Namespace) -> int:
    from tqdm import tqdm

    from tilesim.render.traces.trace_file import open_trace
    from tilesim.studies.characterize import characterize, format_report
    from tilesim.timing.config import effective_config

    # checked as every command's --tile-size is (the renderer's own error named no option)
    effective_config(tile_size=args.tile_size)
    with open_trace(args.trace) as trace:
        wanted = frame_range(args.frames, trace.frame_count, source=args.trace)
        bar = tqdm(total=wanted.stop, desc="characterize", unit="frame", disable=None)
        try:
            report = characterize(trace, wanted, tile_size=args.tile_size,
                                  progress=lambda _: bar.update(1))
        finally:
            bar.close()
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print(format_report(report))
    return EXIT_OK
