"""``tilesim estimate DIR|TRACE ...``: cycles, time, energy and memory traffic from counters.

Each DIR is a `tilesim render` output folder (``counters/*.npz``, ``frames/*.png``) or a suite
folder holding several. ``--baseline`` gives the baseline runs (matched by workload name, else by
position) that ``--plot`` and the normalized table divide by. A ``.tsim`` TRACE is first rendered
with ``--technique`` into ``--work`` (resumable, reused by later calls), and at baseline too so
the figures come normalized; the model itself only ever reads the saved counters.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

from tilesim.atomic import check_output
from tilesim.errors import InputError
from tilesim.options import frame_range, frames_argument, technique_name
from tilesim.render.pipeline.gpu_config import RENDERER_KEYS
from tilesim.render_folder import IDENTITY_FILE, comparable, read_json_object
from tilesim.studies.config_options import (
    add_config_arguments,
    config_from_args,
    configured_mediump_of,
    renderer_values,
)

if TYPE_CHECKING:
    from tilesim.timing.config import EffectiveConfig


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "estimate", help="timing, energy and memory traffic from a render's counters",
        description="Read DIR/counters/*.npz written by `tilesim render` (DIR may also be a "
                    "folder of several render outputs, a suite) and print, per frame and in "
                    "total: cycles (geometry, raster), time at the configured clock, energy "
                    "(GPU by unit incl. technique hardware, main memory, OLED screen from "
                    "DIR/frames/*.png) and memory traffic by source.")
    p.add_argument("dirs", nargs="+", metavar="DIR|TRACE",
                   help="output folder(s) of `tilesim render`, or .tsim traces to render first")
    p.add_argument("--technique", type=technique_name, default="baseline", metavar="NAME",
                   help="for traces: the technique to render with (as `tilesim render`)")
    p.add_argument("--frames", type=frames_argument(), default=":", metavar="A:B",
                   help="for traces: the frames to render and estimate, A:B from A up to, not "
                        "including, B (default: all)")
    p.add_argument("--work", default="out/estimate", metavar="DIR",
                   help="for traces: where renders are kept (default: %(default)s)")
    # --config, --energy-config, --set, --tile-size (screen.tile_size: a render's tile size
    # when not given; one that disagrees with the render's is refused)
    add_config_arguments(p)
    p.add_argument("--baseline", nargs="+", metavar="DIR",
                   help="baseline render output(s) to normalize to (matched by workload name, "
                        "else by position)")
    p.add_argument("--plot", metavar="PLOTDIR",
                   help="write the theses' figures (time, energy, traffic, shader, units .png)")
    p.add_argument("--no-screen", action="store_true",
                   help="skip the OLED model (do not decode the frames' PNGs)")
    p.add_argument("--sensitivity", action="store_true",
                   help="also report how each workload's time and energy move when each "
                        "uncertain parameter (entries with a range in the configuration "
                        "files: leakage, DRAM energy and row-buffer policy, Accumulate CRC "
                        "rate, Overlapped Tiles Queue stall, flush overlap, DSR's DCT order, "
                        "shader-core throughput) moves across its documented range")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.add_argument("--per-tile", action="store_true",
                   help="with --json: add to each frame 'tiles', one entry per render pass into "
                        "the default framebuffer (the screen): 'pass' (its index among the "
                        "frame's passes), 'tiles_x', 'tiles_y', 'cycles' (raster cycles) and "
                        "'energy_j' (joules) as [tiles_y][tiles_x] lists, row 0 the BOTTOM tile "
                        "row (window y = 0, as the counters store tiles). A frame's tiles' cycles "
                        "add up to its raster cycles over all its passes; their energy is the "
                        "frame's less the frame-counter work (vertices, primitive assembly, "
                        "Parameter Buffer records) and the geometry phase's leakage "
                        "(tilesim.timing.tiles). --plot draws the cycles as a heat map anyway")
    p.set_defaults(func=_estimate)


def _render_traces(args, cfg: EffectiveConfig) -> None:
    """Render the .tsim arguments (and their baselines) into --work with the configuration's
    tile size and renderer entries; replace them by the render folders."""
    from tilesim.render.traces.trace_file import open_trace
    from tilesim.studies.batch import Job, job_techniques, run_job

    traces = [d for d in args.dirs if str(d).endswith(".tsim")]
    if not traces:
        return
    techniques = [args.technique] + (["baseline"] if args.technique != "baseline"
                                     and not args.baseline else [])
    folders: dict[str, list[str]] = {t: [] for t in techniques}
    args.frames_of = {}   # render folder -> the frames asked for (the folder may hold more)
    for trace in traces:
        with open_trace(trace) as t:
            frames = frame_range(args.frames, t.frame_count, source=str(trace))
        for technique in techniques:
            out = Path(args.work) / technique.replace("/", "-") / Path(trace).stem
            job = Job(str(trace), (frames.start, frames.stop), str(out),
                      tile_size=cfg.tile_size, technique=technique,
                      mediump=configured_mediump_of(cfg), gpu_config=renderer_values(cfg))
            job_techniques(job)
            run_job(job)
            folders[technique].append(str(out))
            args.frames_of[str(out)] = frames
    args.dirs = [d for d in args.dirs if not str(d).endswith(".tsim")] + \
        folders[args.technique]
    if "baseline" in folders and args.technique != "baseline":
        args.baseline = folders["baseline"]


def _estimate(args) -> int:
    import numpy as np

    # An overflow (a configuration of absurd scale) is reported once, by check_finite on the
    # figures, not as NumPy's warnings along the way.
    with np.errstate(over="ignore", invalid="ignore"):
        return _estimate_checked(args)


def _estimate_checked(args) -> int:
    from tilesim.timing.config import check_finite
    from tilesim.timing.report import (
        average,
        estimate_render,
        find_renders,
        match_baselines,
        normalize,
        normalized_table,
        text_report,
        totals,
    )
    from tilesim.timing.tiles import mean_screen_cycles, screen_tiles

    if args.per_tile and not args.json:
        raise InputError("--per-tile adds per-tile maps to the JSON report: give --json too")
    if not any(str(d).endswith(".tsim") for d in args.dirs):
        # they say what to render: with render folders only they were silently left out (a
        # baseline folder estimated as asked for "--technique re", every frame for "--frames")
        for option, given in (("--technique", args.technique != "baseline"),
                              ("--frames", args.frames != ":")):
            if given:
                raise InputError(f"{option} is for .tsim traces (what to render); a render "
                                 "folder is estimated as it was rendered: give the trace, or "
                                 f"render the folder with {option}")
    if args.plot:
        check_output(args.plot, folder=True)   # before rendering or estimating anything
    config = config_from_args(args)
    _render_traces(args, config)
    found = find_renders(args.dirs)
    config = _agreeing_config(args, config, [d for _, d in found] + [
        d for _, d in (find_renders(args.baseline) if args.baseline else [])])
    cfg, ecfg = config.gpu, config.energy
    screen = not args.no_screen
    frames_of = getattr(args, "frames_of", {})
    runs = [estimate_render(name, d, cfg, ecfg, screen, frames_of.get(str(d)))
            for name, d in found]
    bases = None
    if args.baseline:
        matched = match_baselines(found, find_renders(args.baseline))
        # A baseline is estimated over its run's frames (it may hold more); one of other
        # frames, another trace or other settings is refused (render_folder.comparable).
        bases = [estimate_render(name, d, cfg, ecfg, screen, run.render.frames)
                 for (name, d), run in zip(matched, runs, strict=True)]
        for run, base in zip(runs, bases, strict=True):
            comparable(run.render, base.render)

    run_totals = [totals(w.estimate) for w in runs]
    swings = None
    if args.sensitivity:
        from tilesim.timing.sensitivity import sensitivity

        swings = [sensitivity(w.estimate.batch, cfg, ecfg) for w in runs]
    base_totals = [totals(w.estimate) for w in bases] if bases else None
    normalized = ([normalize(r, b) for r, b in zip(run_totals, base_totals, strict=True)]
                  if base_totals else None)
    # before anything is drawn or printed (the JSON report is checked whole below)
    check_finite({"workloads": run_totals, "baselines": base_totals, "normalized": normalized,
                  "sensitivity": swings}, config)
    tile_maps = ([screen_tiles(w.estimate, cfg, ecfg) for w in runs] if args.per_tile
                 else None)
    if args.plot:
        try:
            import matplotlib  # noqa: F401
        except ModuleNotFoundError:
            raise InputError("--plot needs matplotlib (pip install 'matplotlib>=3.7')") from None
        from tilesim.timing.plots import write_plots, write_tile_heatmaps

        write_plots(args.plot, [w.name for w in runs], run_totals, base_totals)
        cycles = tile_maps or [screen_tiles(w.estimate, cfg, ecfg, energy=False) for w in runs]
        write_tile_heatmaps(args.plot, [w.name for w in runs],
                            [mean_screen_cycles(m) for m in cycles])

    if args.json:
        workloads = []
        for i, w in enumerate(runs):
            frames = [f.to_dict() for f in w.frames]
            if tile_maps:
                for frame, passes in zip(frames, tile_maps[i], strict=True):
                    frame["tiles"] = [p.to_dict() for p in passes]
            entry = {"name": w.name, "dir": str(w.directory), "frames": frames,
                     "total": run_totals[i], "bound_shares": run_totals[i]["bound_shares"],
                     "regime": run_totals[i]["regime"]}
            if bases:
                entry["baseline"] = {"name": bases[i].name, "dir": str(bases[i].directory),
                                     "total": base_totals[i]}
                entry["normalized"] = normalized[i]
            if swings:
                entry["sensitivity"] = swings[i]
            workloads.append(entry)
        report = {"config": cfg.path, "energy_config": ecfg.path,
                  "config_sha256": config.sha256, "workloads": workloads}
        if len(workloads) == 1:  # one render: its frames and total at the top level too
            report["frames"], report["total"] = workloads[0]["frames"], workloads[0]["total"]
        if normalized:
            report["average_normalized"] = average(normalized)
        check_finite(report, config)
        print(json.dumps(report, indent=1, allow_nan=False))
    else:
        clock = cfg["tech.clock"]
        parts = [text_report(w.name, [f.to_dict() for f in w.frames], run_totals[i], clock)
                 for i, w in enumerate(runs)]
        if normalized:
            parts.append(normalized_table([(w.name, n) for w, n in zip(runs, normalized,
                                                                        strict=True)],
                                          average(normalized)))
        if swings:
            from tilesim.timing.sensitivity import sensitivity_table

            parts += [sensitivity_table(w.name, r) for w, r in zip(runs, swings, strict=True)]
        print("\n\n".join(parts))
    return 0


def _agreeing_config(args, config: EffectiveConfig, folders) -> EffectiveConfig:
    """The configuration made to agree with the renders it estimates: screen.tile_size is
    the renders' tile size (render.json) when the command line and --config leave it at the
    shipped value, and refused when they set another; the entries the renderer reads must be
    the renders' (render.json ``gpu_config``: the values other than the shipped file's).
    Folders without render.json (older renders) are taken as they are."""
    from tilesim.timing.config import effective_config

    identities = [(Path(d), read_json_object(Path(d) / IDENTITY_FILE)) for d in folders]
    identities = [(d, i) for d, i in identities if i is not None]
    sizes = {i.get("tile_size") for _, i in identities}
    if len(sizes) > 1:
        shown = ", ".join(f"{d} {i.get('tile_size')}" for d, i in identities)
        raise InputError(f"the renders have different tile sizes ({shown}): estimate them "
                         "separately", source="tilesim estimate")
    if sizes:
        [size] = sizes
        given = (args.tile_size is not None or args.config is not None
                 or any(str(s).partition("=")[0].strip() == "screen.tile_size"
                        for s in args.config_set))
        if isinstance(size, int) and size != config.tile_size:
            if given:
                raise InputError(f"rendered at tile size {size}, the configuration's "
                                 f"screen.tile_size is {config.tile_size}: give --tile-size "
                                 f"{size} (the tile size is the render's)",
                                 source=str(identities[0][0]))
            config = effective_config(args.config, args.energy_config, args.config_set, size)
    wanted = dict(renderer_values(config))
    for folder, identity in identities:
        held = identity.get("gpu_config") or {}
        if held != wanted:
            differ = sorted(k for k in RENDERER_KEYS if held.get(k) != wanted.get(k))
            shown = "; ".join(f"{k} {held.get(k, 'as shipped')} there, "
                              f"{wanted.get(k, 'as shipped')} asked" for k in differ)
            raise InputError(f"rendered with another GPU configuration than the estimate's "
                             f"({shown}): give the render's values (--set KEY=VALUE)",
                             source=str(folder))
    return config
