"""``tilesim run``: the main job (the study engine is tilesim.studies.study)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from tilesim.atomic import check_output
from tilesim.errors import InputError
from tilesim.options import default_workers, frame_span, frames_argument, positive_int
from tilesim.studies.config_options import add_config_arguments
from tilesim.studies.defaults import DEFAULT_TECHNIQUES, FRAMES, QUICK_FRAMES, QUICK_WORKLOADS

if TYPE_CHECKING:
    from tilesim.studies.study import Settings


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "run", help="the main job: every workload, baseline and every technique, a report",
        description="Render the default suite (the bundled workloads; glmark2-es2 scenes and "
                    "es2gears too when apitrace, Xvfb and those programs are installed) or "
                    "the traces given with --trace, at baseline and with every "
                    "frame-coherence technique; check each technique's frames against the "
                    "baseline (lossless ones bit-identical, DSR and memo/32 by MSSIM); "
                    "estimate time, energy and memory traffic; characterize the workloads; "
                    "write OUT/index.html (a report readable offline) and OUT/results.json "
                    "(the same numbers; tilesim.open_results(OUT) from Python). Rerunning "
                    "resumes an interrupted run. Exit 1 when a lossless technique changed a "
                    "frame or DSR fell below its MSSIM floor.")
    p.add_argument("--out", default="out/study", metavar="DIR",
                   help="the study folder (default: %(default)s)")
    p.add_argument("--trace", action="append", metavar="X.tsim[@A:B]",
                   help="study these traces instead of the default suite (repeatable)")
    p.add_argument("--frames", type=frames_argument(), metavar="A:B",
                   help=f"frames A:B of every workload, B past a trace's end meaning its end "
                        f"(default :{FRAMES}, the first {FRAMES}; :{QUICK_FRAMES} with --quick; "
                        "a --trace@A:B range wins); captures record the first B frames")
    p.add_argument("--quick", action="store_true",
                   help=f"a short version: {', '.join(QUICK_WORKLOADS)}, {QUICK_FRAMES} frames "
                        "each, no captures")
    p.add_argument("--techniques", metavar="LIST",
                   help="comma-separated techniques besides the baseline (default: "
                        f"{','.join(DEFAULT_TECHNIQUES)})")
    p.add_argument("--no-captures", action="store_true",
                   help="leave out the glmark2-es2 / es2gears captures")
    p.add_argument("--all", action="store_true",
                   help="also the shader-core studies, execution-time prediction, scheduling "
                        "scenarios and the golden-image check of every technique")
    p.add_argument("--workers", type=positive_int, metavar="N",
                   help="processes rendering side by side (default: the CPU count, capped "
                        "by the units to render)")
    add_config_arguments(p)
    p.add_argument("--force", action="store_true",
                   help="start over: render again what an earlier run left in DIR")
    p.add_argument("--json", action="store_true", help="print results.json's summary as JSON")
    p.set_defaults(func=_run)


def _settings(args) -> Settings:
    from tilesim.render.techniques.bus import Techniques
    from tilesim.studies.config_options import (
        config_from_args,
        renderer_values,
        tile_size_problem,
    )
    from tilesim.studies.study import (
        CAPTURED,
        Settings,
        bundled_workloads,
        capture_tools_missing,
        captured_workloads,
        given_workloads,
    )

    config = config_from_args(args)    # a bad --set or --config fails before any work
    renderer_values(config)
    frames = args.frames if args.frames is not None else (
        f":{QUICK_FRAMES if args.quick else FRAMES}")
    # Captures record a program from its start: the first B frames (B of the range).
    stop = frame_span(frames, source="tilesim run")[1]
    captured_frames = stop if stop is not None and stop > 0 else FRAMES
    names = (DEFAULT_TECHNIQUES if args.techniques is None
             else [n.strip().lower() for n in args.techniques.split(",") if n.strip()])
    if not names:
        raise InputError("--techniques: no technique given", source="tilesim run")
    for name in names:
        Techniques.from_name(name)    # an unknown technique fails before any work
    techniques = ("baseline", *[n for n in dict.fromkeys(names) if n != "baseline"])
    skipped: list[dict] = []
    # A technique that cannot render at the tile size: refused when asked for, left out of
    # the default set (and said so in the report), before any work.
    for name in techniques:
        problem = tile_size_problem(name, config.tile_size)
        if problem and args.techniques is not None:
            raise InputError(f"{name}: {problem}", source="--tile-size")
        if problem:
            skipped.append({"spec": name, "reason": problem})
    techniques = tuple(t for t in techniques if t not in {s["spec"] for s in skipped})
    if args.trace:
        workloads = given_workloads(args.trace, args.frames)
    elif args.quick:
        workloads = bundled_workloads(frames, QUICK_WORKLOADS)
    else:
        workloads = bundled_workloads(frames)
        missing = capture_tools_missing()
        if args.no_captures:
            pass
        elif missing:
            skipped += [{"spec": spec, "reason": "not installed: " + ", ".join(missing)}
                        for spec in CAPTURED]
        else:
            from tqdm import tqdm

            with tqdm(total=len(CAPTURED), desc="capture", unit="program",
                      disable=None) as bar:
                made, failed = captured_workloads(Path(args.out) / "captures",
                                                   captured_frames,
                                                   progress=bar)
            skipped += failed
            workloads += made
    return Settings(workloads, techniques, tile_size=config.tile_size, quick=args.quick,
                    skipped=skipped, config=config)


def _run(args) -> int:
    from tilesim.errors import EXIT_FAILED_CHECK, EXIT_OK
    from tilesim.studies.study import regime_lines, run_study

    check_output(args.out, folder=True)
    settings = _settings(args)
    workers = args.workers or default_workers(len(settings.workloads)
                                              * len(settings.techniques))
    sections = None
    if args.all:
        from tilesim.studies.study_sections import all_sections

        sections = all_sections(settings, workers)
    from tilesim.studies import progress

    progress.LINES = not args.json       # with --json, stdout is the JSON
    results = run_study(settings, args.out, workers=workers, force=args.force,
                        extra_sections=sections)
    failed = results["checks"]["failed"]
    if args.json:
        print(json.dumps({**{k: results[k] for k in ("summary", "checks", "seconds")},
                          "config_sha256": results["config"]["sha256"]}, indent=1))
    else:
        print(f"report: {Path(args.out) / 'index.html'} ({results['seconds']['total']:.0f} s; "
              f"{len(settings.workloads)} workloads x {len(settings.techniques)} runs)")
        print(f"results: {Path(args.out) / 'results.json'} (tilesim.open_results)")
        print(f"  {settings.effective.line()}")
        print("  ratios to the baseline of the same workload and frames, mean over workloads "
              "(below 1: the technique saves):")
        for name, row in results["summary"].items():
            if name == "baseline":
                continue
            t, e = row.get("time"), row.get("energy")
            print(f"  {name:<8} time x{t:.3f}  energy x{e:.3f}  min MSSIM "
                  f"{row['mssim_min']:.4f}  identical {row['frames_bit_identical']}/"
                  f"{row['frames']}" if t is not None and e is not None else f"  {name}")
        print(regime_lines(results["workloads"]))
        for skipped in settings.skipped:
            print(f"skipped: {skipped['spec']} ({skipped['reason']})")
    if failed:
        print("quality check failed: " + ", ".join(failed), file=sys.stderr)
        return EXIT_FAILED_CHECK
    return EXIT_OK
