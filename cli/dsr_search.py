"""``tilesim dsr-search``: fitting DSR's parameters (Frame Coherence §6.3)."""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path
from typing import TYPE_CHECKING

from tilesim.atomic import check_output
from tilesim.errors import EXIT_FAILED_CHECK, EXIT_OK, InputError
from tilesim.options import (
    default_workers,
    frames_argument,
    out_file,
    positive_int,
    window_size,
)
from tilesim.studies.defaults import LOCAL_MINIMUM_TILES, PARAMETERS_FILE
from tilesim.studies.dsr_grid import SearchGrid
from tilesim.thresholds import DSR_MIN_MSSIM

if TYPE_CHECKING:
    from tilesim.render.techniques.dynamic_sampling_rate import DSRParameters


def _number_list(text: str, option: str, kind=float) -> tuple:
    from tilesim.render.techniques.dynamic_sampling_rate import MAX_DIAGONAL

    try:
        values = tuple(kind(v) for v in text.split(",") if v.strip())
    except ValueError:
        values = ()
    if not values:
        raise InputError(f"{option} {text!r}: expected comma-separated "
                         f"{'integers' if kind is int else 'numbers'}",
                         source="tilesim dsr-search")
    for v in values:
        bad = (not 0 <= v <= MAX_DIAGONAL) if kind is int else not (math.isfinite(v) and v >= 0)
        if bad:
            expected = f"0..{MAX_DIAGONAL}" if kind is int else "finite and >= 0"
            raise InputError(f"{option}: {v} is out of range ({expected})",
                             source="tilesim dsr-search")
    return values


def register(subparsers) -> None:
    defaults = SearchGrid()
    p = subparsers.add_parser(
        "dsr-search", help="fit the Dynamic Sampling Rate parameters (Frame Coherence §6.3)",
        description="Render each trace at the five uniform sampling rates (cached in --cache, "
                    "so a rerun resumes), then search the FSM's <T, D> pairs: Algorithm 6 "
                    "(Local Minimum) for the increase transitions, then Algorithm 5 for the "
                    "reduce transitions. The combination with the lowest average sample rate "
                    "and no frame below MSSIM 0.95 on the training traces is evaluated on the "
                    "--eval traces and written as a parameters TOML with provenance. Exit "
                    "status 1 when no combination is error-free.")
    p.add_argument("--train", nargs="+", required=True, metavar="TRACE[@A:B]",
                   help=".tsim traces to fit on, optionally with their own frame range")
    p.add_argument("--eval", nargs="*", default=[], metavar="TRACE[@A:B]",
                   help=".tsim traces to evaluate the chosen parameters on")
    p.add_argument("--frames", type=frames_argument(), default=":", metavar="A:B",
                   help="frames of each trace, A:B from A up to, not including, B (default: "
                        "all)")
    p.add_argument("--size", default=None, metavar="WxH",
                   help="render window size instead of each trace's own")
    p.add_argument("--cache", default="out/dsr_cache", metavar="DIR",
                   help="renders and tile tables (default out/dsr_cache)")
    p.add_argument("--out", "-o", default=".", metavar="DIR",
                   help=f"folder of the parameters file DIR/{PARAMETERS_FILE} (default: the "
                        "current folder)")
    p.add_argument("--workers", type=positive_int, default=None, metavar="N",
                   help="local worker processes (default: the CPU count, capped by the "
                        "traces; 1: no Dask)")
    p.add_argument("--strategy", choices=("coordinate", "product"), default=defaults.strategy,
                   help="how the states of a step are combined (default coordinate)")
    p.add_argument("--sweeps", type=int, default=defaults.sweeps, metavar="N",
                   help="coordinate descent: most sweeps over the states (default 3)")
    for kind, values in (("increase-thresholds", defaults.increase_thresholds),
                         ("increase-diagonals", defaults.increase_diagonals),
                         ("reduce-thresholds", defaults.reduce_thresholds),
                         ("reduce-diagonals", defaults.reduce_diagonals)):
        p.add_argument(f"--{kind}", default=",".join(f"{v:g}" for v in values),
                       metavar="LIST", help=f"values tried per state (default "
                                            f"{','.join(f'{v:g}' for v in values)})")
    p.add_argument("--guard-thresholds",
                   default=",".join(f"{v:g}" for v in defaults.guard_thresholds),
                   metavar="LIST",
                   help="content-change guard: mean-luma changes (0..255 levels; 255: only the "
                        "first frame) tried (default "
                        f"{','.join(f'{v:g}' for v in defaults.guard_thresholds)})")
    p.add_argument("--guard-caps", default=",".join(str(v) for v in defaults.guard_caps),
                   metavar="LIST",
                   help="content-change guard: rate indices a changed tile is capped at "
                        "(0: back to 1x, 4: no reduction only; default "
                        f"{','.join(str(v) for v in defaults.guard_caps)})")
    p.add_argument("--no-guard", action="store_true",
                   help="fit the thesis's FSM alone, without the content-change guard")
    validation = p.add_mutually_exclusive_group()
    validation.add_argument("--folds", type=int, default=None, metavar="K",
                            help="leave-workloads-out validation: deal the --train traces "
                                 "round-robin into K folds (K = their number: leave one "
                                 "out); each fold fits on the others and runs on its own. "
                                 "The parameters written are then fitted on all of them")
    validation.add_argument("--leave-out", action="append", default=[], metavar="A,B",
                            help="a fold: the comma-separated trace names (file stems) it "
                                 "holds out; repeat for each fold (instead of --folds)")
    p.add_argument("--min-mssim", type=float, default=DSR_MIN_MSSIM, metavar="X",
                   help="frame error below this MSSIM (default 0.95, Frame Coherence §6.3)")
    p.add_argument("--train-min-mssim", type=float, default=None, metavar="X",
                   help="frame MSSIM the training traces must keep (default: --min-mssim); "
                        "above it, a margin for traces the fit has not seen")
    p.add_argument("--local-minimum-mssim", type=float, default=DSR_MIN_MSSIM, metavar="X",
                   help="tile MSSIM the Local Minimum keeps (Algorithm 6's reduction; default "
                        "0.95; raise it when the Local Minimum alone already gives frames "
                        "below --min-mssim)")
    p.add_argument("--local-minimum-tile", choices=LOCAL_MINIMUM_TILES, default="context",
                   help="judge a tile for the Local Minimum in its 1x surroundings over all "
                        "its pixels (context, default) or alone as scikit-image would, only "
                        "its central 6x6 pixels counting (alone)")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.set_defaults(func=_search_command)


def _search_command(args: argparse.Namespace) -> int:
    from tilesim.render.techniques.dynamic_sampling_rate import DSRParameters
    from tilesim.studies.dsr_search import (
        fold_groups,
        params_dict,
        provenance,
        run_cross_validation,
        run_search,
        trace_spec,
    )

    for option, value in (("--min-mssim", args.min_mssim),
                          ("--local-minimum-mssim", args.local_minimum_mssim),
                          ("--train-min-mssim", args.train_min_mssim)):
        if value is not None and not 0 < value <= 1:
            raise InputError(f"{option} {value}: expected a value in (0, 1]",
                             source="tilesim dsr-search")
    if args.sweeps < 1:
        raise InputError("--sweeps must be at least 1", source="tilesim dsr-search")
    grid = SearchGrid(
        _number_list(args.increase_thresholds, "--increase-thresholds"),
        _number_list(args.increase_diagonals, "--increase-diagonals", int),
        _number_list(args.reduce_thresholds, "--reduce-thresholds"),
        _number_list(args.reduce_diagonals, "--reduce-diagonals", int),
        args.strategy, args.sweeps, args.local_minimum_mssim, args.local_minimum_tile,
        () if args.no_guard else _number_list(args.guard_thresholds, "--guard-thresholds"),
        _number_list(args.guard_caps, "--guard-caps", int), args.train_min_mssim)
    grid.check()
    validating = args.folds is not None or bool(args.leave_out)
    if validating and args.eval:
        raise InputError("--folds/--leave-out hold out --train traces themselves: leave out "
                         "--eval", source="tilesim dsr-search")
    size = window_size(args.size) if args.size else None
    train = [trace_spec(t, args.frames, size) for t in args.train]
    evaluation = [trace_spec(t, args.frames, size) for t in args.eval]
    args.workers = args.workers or default_workers(len(train) + len(evaluation))
    names = [s.name for s in [*train, *evaluation]]
    if len(set(names)) != len(names):
        raise InputError("two traces share a file name: give them distinct names",
                         source="tilesim dsr-search")
    check_output(args.out, folder=True)   # all before the search, not after it
    out = check_output(out_file(args.out, PARAMETERS_FILE), folder=False)
    check_output(args.cache, folder=True)
    if validating:
        groups = fold_groups(names, args.folds,
                             [[n.strip() for n in text.split(",") if n.strip()]
                              for text in args.leave_out])
        report = run_cross_validation(train, groups, grid, cache=Path(args.cache),
                                      workers=args.workers, min_mssim=args.min_mssim)
    else:
        report = run_search(train, evaluation, grid, cache=Path(args.cache),
                            workers=args.workers, min_mssim=args.min_mssim)
    report["command"] = _command_line(args)
    params = report["params"]
    if params is not None:
        params = DSRParameters.from_key(params.key(), provenance(report))
        params.save(out)
    if args.json:
        print(json.dumps({**report, "params": None if params is None else params_dict(params),
                          "out": None if params is None else str(out)}, indent=2))
    else:
        _print_report(report, params, out)
    passed = params is not None and (not validating or report["cross_validation"]["passed"])
    return EXIT_OK if passed else EXIT_FAILED_CHECK


def _command_line(args: argparse.Namespace) -> str:
    """The command as typed when run as ``tilesim``, else rebuilt from the options."""
    import shlex
    import sys

    if Path(sys.argv[0]).name == "tilesim" and "dsr-search" in sys.argv:
        return shlex.join(["tilesim", *sys.argv[1:]])
    parts = ["tilesim", "dsr-search", "--train", *args.train]
    if args.eval:
        parts += ["--eval", *args.eval]
    parts += ["--frames", args.frames]
    if args.size:
        parts += ["--size", args.size]
    if args.folds is not None:
        parts += ["--folds", str(args.folds)]
    for group in args.leave_out:
        parts += ["--leave-out", group]
    if args.no_guard:
        parts.append("--no-guard")
    if args.train_min_mssim is not None:
        parts += ["--train-min-mssim", f"{args.train_min_mssim:g}"]
    return shlex.join(parts)


def _print_report(report: dict, params: DSRParameters | None, out: Path) -> None:
    from tilesim.render.techniques.dynamic_sampling_rate import RATE_NAMES
    from tilesim.studies.dsr_search import print_folds

    if report.get("folds"):
        print_folds(report)
    for name, floor in report["local_minimum"].items():
        print(f"local minimum {name}: ASR {floor['asr']:.4f}, min MSSIM "
              f"{floor['min_mssim']:.4f}, {floor['frames_below']} frames below "
              f"{report['min_mssim']}")
    inc = report["increase_step"]
    print(f"increase step (Algorithm 6): {inc['combinations']} combinations, best ASR "
          f"{inc['asr']:.4f}{' WITH ERRORS' if inc['error'] else ''}")
    if report["reduce_step"] is not None:
        red = report["reduce_step"]
        print(f"reduce step (Algorithm 5): {red['combinations']} combinations, best ASR "
              f"{red['asr']:.4f}")
    if params is None:
        print("no parameter combination is free of frame errors on the training traces; "
              "nothing written")
        if any(f["frames_below"] for f in report["local_minimum"].values()):
            print("the Local Minimum alone has frames below the limit, and Algorithm 6 never "
                  "samples above it: try a higher --local-minimum-mssim")
        return
    for label, figures in (("train", report["train_figures"]),
                           ("eval", report["eval_figures"])):
        if figures is None:
            continue
        print(f"{label}: ASR {figures['asr']:.4f}, min MSSIM {figures['min_mssim']:.4f}, "
              f"{figures['frames_below']} of {figures['frames']} frames below "
              f"{report['min_mssim']}")
        for name, t in figures["traces"].items():
            print(f"  {name}: ASR {t['asr']:.4f}, min MSSIM {t['min_mssim']:.4f}, "
                  f"{t['frames_below']} frames below")
    print(f"T_R {list(params.reduce_thresholds)} D_R {list(params.reduce_diagonals)}; "
          f"T_I {list(params.increase_thresholds)} D_I {list(params.increase_diagonals)}"
          + (f"; guard: change > {params.change_threshold:g} -> rate <= "
             f"{RATE_NAMES[params.change_cap]}" if params.guarded else ""))
    print(f"written: {out}")
