"""``tilesim coherence``: every technique against the baseline."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from tilesim.atomic import check_output, write_json
from tilesim.errors import EXIT_OK, InputError
from tilesim.options import (
    default_workers,
    frame_range,
    frames_argument,
    out_file,
    positive_int,
)
from tilesim.studies.defaults import DEFAULT_TECHNIQUES, REPORT_FILE
from tilesim.thresholds import DSR_MIN_MSSIM


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "coherence", help="compare every frame-coherence technique with the baseline",
        description="Render each TRACE at baseline and with each technique (TE, RE, RE with an "
                    "XOR signature, EVR, RE+EVR, DSR, memoization) and report per technique: "
                    "tiles skipped and the oracle, flushes avoided, fragments shaded, "
                    "overshading, average sample rate, per-frame MSSIM against the baseline "
                    "and frames bit-identical to it; with several traces, also the average. "
                    "Exit 1 when a lossless technique changed a frame or DSR fell below "
                    f"MSSIM {DSR_MIN_MSSIM}.")
    p.add_argument("traces", nargs="+", metavar="TRACE", help=".tsim traces")
    p.add_argument("--frames", type=frames_argument(), default=":", metavar="A:B",
                   help="frames to compare, A:B from A up to, not including, B (default: "
                        "all); earlier frames are rendered too")
    p.add_argument("--techniques", default=",".join(DEFAULT_TECHNIQUES), metavar="LIST",
                   help="comma-separated techniques (default: %(default)s); re/xor signs "
                        "with XOR, re/uniforms signs only the uniforms of each draw (the "
                        "thesis's constants block, §4.1.5), memo/32 uses 32-bit LUT keys")
    p.add_argument("--dsr-parameters", metavar="FILE",
                   help="DSR parameters (TOML from `tilesim dsr-search`; default: shipped)")
    p.add_argument("--images", metavar="DIR", help="write per-frame overlays to DIR")
    p.add_argument("--out", metavar="DIR",
                   help=f"also write the JSON report to DIR/{REPORT_FILE}")
    p.add_argument("--save", metavar="DIR",
                   help="keep every run as `tilesim render` output in DIR/TECHNIQUE/TRACE "
                        "(for `tilesim estimate DIR/re --baseline DIR/baseline`)")
    p.add_argument("--workers", type=positive_int, default=None, metavar="N",
                   help="traces in parallel on a local Dask cluster; with one trace, N > 1 "
                        "renders its techniques side by side after the baseline (default: "
                        "the CPU count, capped by the traces, or by the techniques of one "
                        "trace)")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.set_defaults(func=_coherence)


def _job(trace: str, names: list[str], frames: tuple[int, int], dsr_parameters, images,
         save, backend: str = "numpy"):
    """One trace's comparison in a worker process, on the parent's array backend."""
    from tilesim.backend import use_backend
    from tilesim.studies.coherence import compare_trace

    folder = None if images is None else Path(images) / Path(trace).stem
    with use_backend(backend):
        return compare_trace(trace, names, range(*frames), dsr_parameters=dsr_parameters,
                             images=folder, save=None if save is None else Path(save))


def _coherence(args: argparse.Namespace) -> int:
    from tqdm import tqdm

    from tilesim.backend import backend_name
    from tilesim.render.techniques.bus import Techniques
    from tilesim.render.traces.trace_file import open_trace
    from tilesim.studies.coherence import EXIT_NOT_LOSSLESS, LOSSLESS, average, compare_trace
    from tilesim.studies.dask_cluster import dask_client, map_in_order

    names = [n.strip().lower() for n in args.techniques.split(",") if n.strip()]
    if not names:
        raise InputError("--techniques: no technique given")

    for name in names:
        Techniques.from_name(name)   # fail before any work
    for folder in (args.images, args.save):
        if folder is not None:
            check_output(folder, folder=True)
    if args.out:
        check_output(args.out, folder=True)
        check_output(out_file(args.out, REPORT_FILE), folder=False)
    jobs = []
    for trace in args.traces:
        with open_trace(trace) as t:
            frames = frame_range(args.frames, t.frame_count, source=trace)
        jobs.append((trace, names, (frames.start, frames.stop), args.dsr_parameters,
                     args.images, args.save, backend_name()))
    if len(jobs) == 1:
        frames = range(*jobs[0][2])
        with tqdm(total=frames.stop * (len(names) + 1), desc="coherence", unit="frame",
                  disable=None, leave=False) as bar:
            folder = None if args.images is None else Path(args.images)
            reports = [compare_trace(args.traces[0], names, frames,
                                     dsr_parameters=args.dsr_parameters, images=folder,
                                     save=None if args.save is None else Path(args.save),
                                     progress=bar,
                                     workers=args.workers or default_workers(len(names)))]
    else:
        workers = args.workers or default_workers(len(jobs))
        with dask_client(workers) as client:
            reports = map_in_order(client, _job, jobs, desc="coherence", unit="trace",
                                   leave=False)
    report = {"workloads": reports, "average": average(reports)}
    if args.out:
        write_json(out_file(args.out, REPORT_FILE), report)
    broken = [f"{Path(r['trace']).name}: {name}" for r in reports
              for name, t in r["techniques"].items()
              if (name in LOSSLESS and t["frames_bit_identical"] != t["frames"])
              or (name == "dsr" and t["mssim_min"] is not None and t["mssim_min"] < DSR_MIN_MSSIM)]
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        for r in reports:
            print(f"{r['trace']} (frames {r['frames'][0]}:{r['frames'][1]})")
            _print_table(r["baseline"], r["techniques"])
        if len(reports) > 1:
            print("average over workloads")
            _print_table(None, report["average"])
    if broken:
        print(f"quality check failed: {', '.join(broken)}", file=sys.stderr)
        return EXIT_NOT_LOSSLESS
    return EXIT_OK


def _fmt(value, percent: bool = False) -> str:
    if value is None:
        return "-"
    if percent:
        return f"{100 * value:5.1f}%"
    if isinstance(value, float):
        return f"{value:.3f}"
    return str(value)


def _print_table(baseline: dict | None, techniques: dict) -> None:
    rows = [("technique", "identical", "min MSSIM", "skipped", "oracle", "flush avoided",
             "shaded vs base", "overshading", "sample rate")]
    entries = ([("baseline", baseline)] if baseline else []) + list(techniques.items())
    for name, r in entries:
        identical = r.get("frames_bit_identical")
        rows.append((name, f"{identical}/{r['frames']}", _fmt(r.get("mssim_min")),
                     _fmt(r.get("tiles_skipped"), True),
                     _fmt(r.get("tiles_equal_color_oracle"), True),
                     _fmt(r.get("flushes_avoided"), True),
                     _fmt(r.get("fragments_shaded_vs_baseline")), _fmt(r.get("overshading")),
                     _fmt(r.get("average_sample_rate"))))
    widths = [max(len(row[c]) for row in rows) for c in range(len(rows[0]))]
    for row in rows:
        print("  " + "  ".join(cell.rjust(w) for cell, w in zip(row, widths, strict=True)))
