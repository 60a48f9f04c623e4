"""``tilesim render``: replay traces on the tile-based model; PNGs, counters and summaries.

Output layout (one trace: DIR itself; several: DIR/<trace name>/), every file written
atomically, so an interrupted run leaves no half-written file and a rerun resumes:

    frames/NNNNNN.png      the default framebuffer at each frame end
    counters/NNNNNN.npz    per-tile and per-frame counters (see tilesim.render.pipeline.counters)
    frames.json            per-frame counter totals of every frame in the folder
    render.json            what the folder holds (trace hash, technique, tile size, ...):
                           a rerun with other settings is refused; --force starts over
    DIR/summary.json       the jobs, what each wrote or skipped, run time
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from tilesim.atomic import remove_temporaries
from tilesim.errors import EXIT_OK, InputError
from tilesim.inputs import trace_and_frames
from tilesim.options import (
    default_workers,
    frame_range,
    frames_argument,
    positive_int,
    technique_name,
)
from tilesim.render.pipeline.options import FILL_RULES, MEDIUMP_HELP, TRAVERSALS
from tilesim.shaders.interpreter import MEDIUMP_MODES
from tilesim.studies.config_options import (
    add_config_arguments,
    config_from_args,
    configured_mediump_of,
    renderer_values,
    tile_size_problem,
)

# The fewest frames worth a worker of their own when one trace is split (process start-up
# and the GL-state replay of the frames before the part cost about a frame's render).
MIN_SEGMENT_FRAMES = 4


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "render", help="render traces: PNG per frame, per-tile counters, JSON summaries",
        description="Replay each TRACE (.tsim) on the tile-based GPU model and write a PNG per "
                    "frame, the per-tile counters and JSON summaries into DIR. Several traces "
                    "run in parallel with Dask; a rerun skips frames already written.")
    p.add_argument("traces", nargs="+", metavar="TRACE[@A:B]",
                   help="a .tsim trace, optionally with its own frame range")
    p.add_argument("--frames", type=frames_argument(), default=":", metavar="A:B",
                   help="frames to write, A:B from A up to, not including, B; :N the first N "
                        "(default: all)")
    p.add_argument("--out", "-o", required=True, metavar="DIR", help="output folder")
    # --tile-size, and the GPU configuration's entries the renderer reads (texture caches,
    # Overlapped Tiles Queue, GLES2 limits, mediump_fp16); the timing ones change nothing here.
    add_config_arguments(p, energy=False)
    p.add_argument("--traversal", choices=TRAVERSALS, default="scanline",
                   help="tile traversal order: orders Fragment Memoization's LUT and is "
                        "recorded in the counters (the timing model's order is "
                        "screen.zorder_traversal in its configuration)")
    p.add_argument("--fill-rule", choices=FILL_RULES, default="bottom_left",
                   help=argparse.SUPPRESS)
    p.add_argument("--technique", type=technique_name, default="baseline", metavar="NAME",
                   help="frame-coherence techniques: baseline, te, re, evr, re+evr (any of "
                        "te/re/evr joined by +), dsr or memo; re/xor signs with XOR, re/uniforms "
                        "signs only the uniforms as each draw's constants block (Frame "
                        "Coherence §4.1.5; may skip tiles wrongly), memo/32 keys with 32 bits "
                        "(default: baseline)")
    p.add_argument("--mediump", choices=MEDIUMP_MODES, default=None,
                   help=MEDIUMP_HELP)
    p.add_argument("--dsr-parameters", metavar="FILE",
                   help="DSR parameters from `tilesim dsr-search` (default: the shipped ones)")
    p.add_argument("--workers", type=positive_int, default=None, metavar="N",
                   help="local worker processes for several traces, or for the parts of one "
                        "trace's frames (cut where a frame clears the whole window and no "
                        "earlier frame draws into a texture; the baseline only) (default: the "
                        "CPU count, capped by the traces or parts)")
    p.add_argument("--scheduler", metavar="ADDRESS",
                   help="run on an existing Dask cluster (e.g. tcp://host:8786)")
    p.add_argument("--force", action="store_true",
                   help="start over: remove the frames, counters, frames.json and render.json "
                        "tilesim wrote in the output folder(s) (other files stay) and render "
                        "again; without it, a folder holding a render made with other settings "
                        "(trace, technique, tile size, ...) is refused")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    p.set_defaults(func=_render)


def _jobs(args: argparse.Namespace) -> list:
    from tilesim.backend import backend_name
    from tilesim.render.traces.trace_file import open_trace
    from tilesim.studies.batch import Job

    cfg = config_from_args(args)     # before any trace is read: a bad --set fails first
    gpu_values = renderer_values(cfg)
    jobs = []
    names: set[str] = set()
    for spec in args.traces:
        path, frames = trace_and_frames(spec)     # an existing path with '@' is a path
        with open_trace(path) as trace:
            wanted = frame_range(frames or args.frames, trace.frame_count, source=path)
        name = Path(path).stem
        if len(args.traces) > 1:
            if name in names:
                raise InputError(f"two traces named {name!r}: give them distinct file names")
            names.add(name)
        out = Path(args.out) / name if len(args.traces) > 1 else Path(args.out)
        jobs.append(Job(str(path), (wanted.start, wanted.stop), str(out), cfg.tile_size,
                        args.traversal, args.fill_rule, args.technique, args.dsr_parameters,
                        backend_name(), args.mediump or configured_mediump_of(cfg),
                        gpu_values))
    return jobs


def _render(args: argparse.Namespace) -> int:
    from tilesim.studies.batch import (
        frame_segments,
        is_render_summary,
        job_techniques,
        prepare_jobs,
        refuse_foreign,
        run_batch,
        run_segments,
        write_batch_summary,
    )

    started = time.perf_counter()
    jobs = _jobs(args)
    job_techniques(jobs[0])   # a bad --technique fails here, before any work starts
    problem = tile_size_problem(args.technique, jobs[0].tile_size)
    if problem:
        raise InputError(problem, source="--tile-size")
    # Every folder checked against what this run would render (refused before anything is
    # written), then render.json written, stale temporaries removed, frames.json brought up to
    # date with the files.
    if len(jobs) > 1:     # DIR's own summary.json: refused when it is not tilesim's
        refuse_foreign([(Path(args.out) / "summary.json", is_render_summary)], "tilesim render")
    prepare_jobs(jobs, force=args.force)
    remove_temporaries(args.out, "summary.json")   # DIR's own, when it holds several traces
    if len(jobs) == 1 and not args.scheduler:
        job = jobs[0]
        # One trace's frames split where a frame starts afresh, the parts rendered in
        # parallel; a part of fewer than MIN_SEGMENT_FRAMES frames would not repay its worker.
        pieces = len(job.missing()) // MIN_SEGMENT_FRAMES
        parts = min(args.workers or default_workers(pieces), pieces)
        segments = frame_segments(job, parts)
        summaries = ([_run_with_progress(job)] if len(segments) == 1 else
                     [run_segments(job, segments, workers=parts)])
    else:
        summaries = run_batch(jobs, workers=args.workers or default_workers(len(jobs)),
                              scheduler=args.scheduler,
                              prepare=False)
    seconds = time.perf_counter() - started
    write_batch_summary(args.out, summaries, seconds)
    if args.json:
        print(json.dumps({"jobs": summaries, "seconds": round(seconds, 3)}, indent=2))
    else:
        for s in summaries:
            shaded = sum(f["fragments_shaded"] for f in s["counters"])
            print(f"{s['trace']}: {s['written']} frames written, {s['skipped']} already done "
                  f"({s['seconds']} s, {shaded} fragments shaded)")
    return EXIT_OK


def _run_with_progress(job) -> dict:
    """One job in this process, with a progress bar over its frames."""
    from tqdm import tqdm

    from tilesim.studies.batch import run_job

    with tqdm(total=len(job.missing()), desc="render", unit="frame", disable=None) as bar:
        return run_job(job, on_frame=lambda index: bar.update(1), prepare=False)
