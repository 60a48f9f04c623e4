"""``tilesim reference-timing``: the cycle-level reference beside the analytic model."""

from __future__ import annotations

import argparse
import json

from tilesim.errors import EXIT_OK, InputError
from tilesim.options import (
    frame_range,
    frames_argument,
    positive_int,
    technique_name,
    window_size_argument,
)
from tilesim.studies.config_options import add_config_arguments


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "reference-timing",
        help="the analytic timing model's error against the cycle-level raster reference",
        description="Render frames of TRACE recording every tile's quads, run the cycle-level "
                    "reference of the raster pipeline (Frame Coherence Table 3.1's queues, "
                    "early Z with 32 quads in flight, the shader core's cycles, texture "
                    "misses on the shared bus, the one-tile color buffer and its flush) on "
                    "every tile, and print the analytic model's raster cycles beside the "
                    "reference's with the error distribution per frame and per tile.")
    p.add_argument("trace", metavar="TRACE", help="a .tsim trace")
    p.add_argument("--frames", type=frames_argument(), default="1:3", metavar="A:B",
                   help="frames to compare, A:B from A up to, not including, B (default 1:3; "
                        "earlier frames are rendered too, for their state)")
    p.add_argument("--technique", type=technique_name, default="baseline", metavar="NAME",
                   help="baseline (default) or a technique set (re, te, re+evr, dsr...)")
    p.add_argument("--size", type=window_size_argument(), metavar="WxH",
                   help="render into a window of this size instead of the trace's")
    p.add_argument("--tiles", type=positive_int, metavar="N",
                   help="compare only each pass's first N tiles in traversal order (the "
                        "reference runs one more); default: every tile")
    add_config_arguments(p)      # --config, --energy-config, --set, --tile-size
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    import numpy as np
    from tqdm import tqdm

    from tilesim.render.pipeline.gpu_config import renderer_config
    from tilesim.render.traces.trace_file import open_trace
    from tilesim.studies.config_options import config_from_args, renderer_values
    from tilesim.studies.reference_timing import format_report, reference_report
    from tilesim.timing.config import check_finite

    config = config_from_args(args)
    cfg, ecfg = config.gpu, config.energy
    with open_trace(args.trace) as trace:
        count = trace.frame_count
    wanted = frame_range(args.frames, count, source=args.trace)
    bar = tqdm(total=len(wanted), desc="render", unit="frame", disable=None)
    tiles = tqdm(desc="reference", unit="tile", disable=None)
    try:
        with renderer_config(renderer_values(config)), \
                np.errstate(over="ignore", invalid="ignore"):    # check_finite says it
            report = reference_report(args.trace, wanted, technique=args.technique,
                                      size=args.size, tiles=args.tiles, cfg=cfg, ecfg=ecfg,
                                      progress=lambda _: bar.update(1),
                                      tile_progress=tiles.update)
    except RuntimeError as exc:
        changed = config.changed()
        if not changed:
            raise           # a bug of the reference: its message asks for a report
        # a configuration of absurd scale (a bandwidth of 1e-300 bytes a cycle) can stall it
        raise InputError("the cycle-level reference cannot run with this configuration ("
                         + ", ".join(f"{k}={v:g}" for k, v in changed.items())
                         + f"): {str(exc).partition(': please report')[0]}",
                         source=config.gpu_file or "the configuration") from None
    finally:
        bar.close()
        tiles.close()
    if config.changed():     # the shipped numbers' figures are the tests'; others checked
        check_finite(report["frames"], config)
    print(json.dumps(report, indent=2) if args.json else format_report(report))
    return EXIT_OK
