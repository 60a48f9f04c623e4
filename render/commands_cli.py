"""``tilesim render``: replay a trace on the tile-based model; PNGs, counters and a summary.

Output folder layout (every file written atomically, so an interrupted run leaves no
half-written file):

    DIR/frames/NNNNNN.png      the default framebuffer at each frame end
    DIR/counters/NNNNNN.npz    per-tile and per-frame counters (see render.counters)
    DIR/summary.json           parameters, per-frame counter totals, run time
"""

from __future__ import annotations

import argparse
import io
import json
import time
from pathlib import Path

from tqdm import tqdm

from tilesim.atomic import write_bytes, write_json
from tilesim.backend import backend_name
from tilesim.errors import EXIT_OK, InputError

from .framebuffer import TRAVERSALS
from .rasterizer import FILL_RULES


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "render", help="render a trace: PNG per frame, per-tile counters, JSON summary",
        description="Replay TRACE (.tsim) on the tile-based GPU model and write a PNG per "
                    "frame, the per-tile counters and a JSON summary into DIR.")
    p.add_argument("trace", metavar="TRACE", help="a .tsim trace")
    p.add_argument("--frames", default=":", metavar="A:B",
                   help="frames to write, Python slice style (default: all)")
    p.add_argument("--out", "-o", required=True, metavar="DIR", help="output folder")
    p.add_argument("--tile-size", type=int, default=16, metavar="N",
                   help="tile size in pixels (default 16, Table 3.1)")
    p.add_argument("--traversal", choices=TRAVERSALS, default="scanline",
                   help="tile traversal order recorded for the timing model")
    p.add_argument("--fill-rule", choices=FILL_RULES, default="bottom_left",
                   help=argparse.SUPPRESS)
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    p.set_defaults(func=_render)


def parse_frames(text: str, count: int) -> range:
    """'A:B' (either side optional) or 'N' into a range of frame numbers within count."""
    try:
        if ":" in text:
            a, _, b = text.partition(":")
            start = int(a) if a.strip() else 0
            stop = int(b) if b.strip() else count
        else:
            start = int(text)
            stop = start + 1
    except ValueError:
        raise InputError(f"--frames {text!r}: expected A:B, A: , :B or N") from None
    if start < 0:
        start += count
    if stop < 0:
        stop += count
    if not 0 <= start < stop <= count:
        raise InputError(f"--frames {text!r}: the trace has frames 0..{count - 1}")
    return range(start, stop)


def png_bytes(image) -> bytes:
    from PIL import Image

    buffer = io.BytesIO()
    Image.fromarray(image, mode="RGBA").save(buffer, format="PNG")
    return buffer.getvalue()


def _render(args: argparse.Namespace) -> int:
    from .pipeline import Renderer
    from .trace_file import open_trace

    if backend_name() != "numpy":
        raise InputError("the render pipeline runs on NumPy only so far "
                         "(the TGSI interpreter alone supports --backend cupy)")
    out = Path(args.out)
    started = time.perf_counter()
    with open_trace(args.trace) as trace:
        wanted = parse_frames(args.frames, trace.frame_count)
        renderer = Renderer(trace.width, trace.height, depth_bits=trace.depth_bits,
                            tile_size=args.tile_size, traversal=args.traversal,
                            fill_rule=args.fill_rule, source=str(args.trace))
        frames = []
        progress = tqdm(total=len(wanted), desc="render", unit="frame", disable=None)
        results = renderer.render(trace.frames(0, wanted.stop), keep=wanted)
        for result in results:
            name = f"{result.index:06d}"
            write_bytes(out / "frames" / f"{name}.png", png_bytes(result.image))
            result.counters.save(out / "counters" / f"{name}.npz")
            frames.append(result.counters.summary())
            progress.update(1)
        progress.close()
    summary = {
        "trace": str(args.trace), "width": renderer.default_target.width,
        "height": renderer.default_target.height, "tile_size": args.tile_size,
        "traversal": args.traversal, "frames": frames,
        "seconds": round(time.perf_counter() - started, 3),
    }
    write_json(out / "summary.json", summary)
    if args.json:
        print(json.dumps(summary, indent=2))
    else:
        shaded = sum(f["fragments_shaded"] for f in frames)
        print(f"rendered {len(frames)} frames of {args.trace} into {out} "
              f"({summary['seconds']} s, {shaded} fragments shaded)")
    return EXIT_OK
