"""``tilesim predict TRACE``: execution-time prediction of command groups against a ground truth.

The study of seeds 003 (Concepts for Execution Time Prediction of 3D GPU Rendering, §VI) and
000 (Hua Ma's thesis, ch. 7): the trace is cut into command groups
(:mod:`~tilesim.prediction.command_groups`), every group is measured on the ground-truth
backend (:mod:`~tilesim.prediction.ground_truth`: the tilesim timing model, or Mesa
measured with glFinish around each group and timed by GL_EXT_disjoint_timer_query where the
context offers it, ``--timer``; the report's ``timer`` and ``method`` say which), and replayed
in order through a :class:`~tilesim.prediction.predictor.Predictor` per estimator and the
history-based baseline, each seeing a group before its measurement and learning it after.
Printed: per group the measured and predicted times, and per predictor a summary of the errors
(predicted - measured): mean and percentiles of the absolute error, the signed interval (003
reports errors as such intervals), the mean relative error (000), the share of groups
underestimated; the fragment-count error of each estimator; the flush-loop jitter (003
§VI-B). ``--plot DIR`` draws the error CDFs of 003 Figs. 7-12.

``--workload NAME`` builds one of the prediction workloads
(:mod:`tilesim.render.workloads.prediction_programs`) into TRACE first.
"""

from __future__ import annotations

import json
from pathlib import Path

from tilesim.errors import InputError
from tilesim.options import (
    first_frames_argument,
    name_argument,
    nonnegative_int,
    positive_int,
)
from tilesim.prediction.ground_truth import JITTER_LOOP, TIMERS
from tilesim.prediction.predictor import ESTIMATORS
from tilesim.render.workloads.prediction_programs import PREDICTION_WORKLOADS

BASELINE = "history-baseline"


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "predict", help="predict the execution time of command groups (seeds 000, 003)",
        description="Cut TRACE into command groups as a driver flushes them, measure each on "
                    "the ground-truth backend (the tilesim timing model, or Mesa with a "
                    "glFinish before and after, timed by a GL timer query where offered), and "
                    "predict each before it runs with the models of 003/000 (FLUSH, CLEAR per "
                    "mask and per default framebuffer / framebuffer object, DRAW = c_v N_v + "
                    "c_f N_f, SWAP, texture and buffer uploads and render-target loads "
                    "linear in bytes), "
                    "calibrated on first use, and with the history-based baseline of 003 "
                    "§VI-A. Prints per group the measured and predicted times and an error "
                    "summary per estimator.")
    p.add_argument("trace", metavar="TRACE", help="a .tsim trace")
    p.add_argument("--workload", metavar="NAME", type=name_argument("prediction workload",
                                                                    PREDICTION_WORKLOADS),
                   help="first build this prediction workload into TRACE (es2gears, "
                        "glmark2-build, glmark2-shading, clearspd, clearspd-alternating, "
                        "texture-stream, vertex-stream)")
    p.add_argument("--frames", type=first_frames_argument(), default=":20", metavar=":N",
                   help="with --workload: frames to build, :N the first N (default "
                        "%(default)s)")
    p.add_argument("--seed", type=int, default=0, help="with --workload: the random seed")
    p.add_argument("--max-frames", type=positive_int, metavar="N",
                   help="predict only the first N frames of TRACE")
    # dest "truth": tilesim's own --backend (numpy/cupy) comes before the command
    p.add_argument("--backend", dest="truth", default="model",
                   choices=["model", "gl", "gl-llvmpipe", "gl-softpipe"],
                   help="ground truth: the tilesim timing model, or Mesa (gl = llvmpipe)")
    p.add_argument("--timer", choices=TIMERS, default="auto",
                   help="how a Mesa backend times a group: GL_EXT_disjoint_timer_query's "
                        "GL_TIME_ELAPSED around its commands (query), the wall clock between "
                        "a glFinish before and after it (finish), or the query where the "
                        "context offers it (auto, the default); the report names the one used")
    p.add_argument("--estimator", action="append",
                   type=name_argument("estimator", ESTIMATORS + ("all",)),
                   metavar="|".join(ESTIMATORS + ("all",)),
                   help="fragment-count estimator(s) (repeatable; default: all)")
    p.add_argument("--group-bytes", type=int, metavar="BYTES",
                   help="command-buffer size (default: command_groups.toml, 4864)")
    p.add_argument("--group-config", metavar="FILE",
                   help="command-buffer model (TOML, default prediction/command_groups.toml)")
    p.add_argument("--warmup", type=nonnegative_int, default=3, metavar="N",
                   help="first frames left out of the summary (000 §7.4: 'the first three "
                        "frames are not evaluated'; default %(default)s)")
    p.add_argument("--runtime-calibration", type=nonnegative_int, default=0, metavar="N",
                   help="also report every estimator with each program's c_f learned from its "
                        "draws' measured times in the first N frames (000 §5.5's run-time "
                        "calibration), as ESTIMATOR+runtime (default 0: not)")
    p.add_argument("--calibration", default="out/predict/calibration", metavar="DIR",
                   help="where calibrations are cached (default %(default)s; '' for none)")
    p.add_argument("--jitter-loop", type=nonnegative_int, default=JITTER_LOOP, metavar="N",
                   help="empty flushes of the jitter loop (default %(default)s)")
    p.add_argument("--config", metavar="FILE", help="GPU parameters of the model backend")
    p.add_argument("--plot", metavar="DIR", help="write the error CDFs (PNG) into DIR")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.set_defaults(func=_predict)


def error_summary(predicted, measured) -> dict:
    """Errors predicted - measured (seconds) of a set of groups."""
    import numpy as np

    p, m = np.asarray(predicted, float), np.asarray(measured, float)
    if p.size == 0:
        return {"groups": 0}
    e = p - m
    a = np.abs(e)
    rel = np.divide(a, m, out=np.full_like(a, np.nan), where=m > 0)
    return {"groups": int(e.size), "mean_measured": float(m.mean()),
            "mean_predicted": float(p.mean()), "mean_error": float(e.mean()),
            "mean_abs_error": float(a.mean()), "p50_abs_error": float(np.percentile(a, 50)),
            "p95_abs_error": float(np.percentile(a, 95)), "max_abs_error": float(a.max()),
            "min_error": float(e.min()), "max_error": float(e.max()),
            "p1_error": float(np.percentile(e, 1)), "p99_error": float(np.percentile(e, 99)),
            "mean_rel_error": float(np.nanmean(rel)) if np.isfinite(rel).any() else None,
            "p95_rel_error": float(np.nanpercentile(rel, 95)) if np.isfinite(rel).any()
            else None,
            "underestimated": float((e < 0).mean())}


def fragment_summary(estimated, actual) -> dict:
    """Fragment-count errors of the groups that draw (000 §7.4.4)."""
    import numpy as np

    est, act = np.asarray(estimated, float), np.asarray(actual, float)
    if est.size == 0:
        return {"groups": 0}
    rel = np.divide(np.abs(est - act), act, out=np.full_like(act, np.nan), where=act > 0)
    total = act.sum()
    return {"groups": int(est.size),
            "mean_abs_rel_error": float(np.nanmean(rel)) if np.isfinite(rel).any() else None,
            "max_abs_rel_error": float(np.nanmax(rel)) if np.isfinite(rel).any() else None,
            "total_rel_error": float((est.sum() - total) / total) if total else None}


def make_backend(name: str, config: str | None, depth_bits: int, stencil_bits: int,
                 timer: str = "auto"):
    from tilesim.prediction.ground_truth import GLBackend, ModelBackend

    if name == "model":
        return ModelBackend(config, depth_bits=depth_bits)
    driver = "llvmpipe" if name == "gl" else name.split("-", 1)[1]
    return GLBackend(driver, depth_bits=depth_bits, stencil_bits=stencil_bits, timer=timer)


def run_prediction(trace_path: str, backend: str = "model", estimators=ESTIMATORS,
                   group_bytes: int | None = None, group_config: str | None = None,
                   warmup: int = 3, calibration_dir: str | None = None,
                   jitter_loop: int = JITTER_LOOP, config: str | None = None,
                   max_frames: int | None = None, runtime_frames: int = 0,
                   timer: str = "auto") -> dict:
    """The whole study on one trace; returns the report (see the module doc)."""
    from tilesim.prediction.command_groups import (
        load_group_config,
        split_groups,
        trace_contexts,
    )
    from tilesim.prediction.ground_truth import Calibrator, ModelBackend
    from tilesim.prediction.predictor import UPLOAD_OPS, HistoryPredictor, Predictor
    from tilesim.render.traces.trace_file import open_trace

    with open_trace(trace_path) as trace:
        contexts, frame_context = trace_contexts(trace)
        frames = list(trace.frames(0, max_frames))
        frame_context = frame_context[:len(frames)]
        depth_bits, stencil_bits = trace.depth_bits, trace.stencil_bits
        name = trace.name
    cfg = load_group_config(group_config)
    groups = list(split_groups(frames, frame_context, cfg, group_bytes))
    truth = make_backend(backend, config, depth_bits, stencil_bits, timer)
    profiler = truth if isinstance(truth, ModelBackend) else ModelBackend(config,
                                                                          depth_bits=depth_bits)
    model_seconds, fragments = profiler.profile(contexts, groups, str(trace_path))
    measured = model_seconds if truth is profiler else truth.measure(
        frames, contexts, frame_context, groups, path=trace_path, source=str(trace_path))
    calibrator = Calibrator(truth, calibration_dir or None, jitter_loop=jitter_loop,
                            depth_bits=depth_bits, stencil_bits=stencil_bits)
    predictors = {e: Predictor(contexts, calibrator.calibration, calibrator.program_cost, e)
                  for e in estimators}
    if runtime_frames:   # the same estimators with 000's run-time calibration of c_f beside
        predictors.update({f"{e}+runtime": Predictor(
            contexts, calibrator.calibration, calibrator.program_cost, e,
            runtime_frames=runtime_frames) for e in estimators})
    estimators = tuple(predictors)
    history = HistoryPredictor()
    rows = []
    for g, t, f in zip(groups, measured, fragments, strict=True):
        row = {"group": g.index, "frame": g.frame, "context": g.context,
               "commands": g.stop - g.start, "bytes": g.bytes, "ends": g.ends,
               "draws": sum(op in ("drawArrays", "drawElements") for op in g.ops()),
               "clears": sum(op == "clear" for op in g.ops()),
               "uploads": sum(op in UPLOAD_OPS for op in g.ops()),
               "measured": t, "fragments": f, "predicted": {}, "fragments_estimated": {}}
        for e, p in predictors.items():
            prediction = p.predict(g, f)
            row["predicted"][e] = prediction.seconds
            row["fragments_estimated"][e] = prediction.fragments
            p.observe(g, f, t)
        row["predicted"][BASELINE] = history.predict(g)
        history.observe(g, t)
        rows.append(row)
    kept = [r for r in rows if r["frame"] >= warmup]
    summary = {k: error_summary([r["predicted"][k] for r in kept], [r["measured"] for r in kept])
               for k in (*estimators, BASELINE)}
    draw_rows = [r for r in kept if r["draws"]]
    fragment_errors = {e: fragment_summary([r["fragments_estimated"][e] for r in draw_rows],
                                           [r["fragments"] for r in draw_rows])
                       for e in estimators}
    by_kind = {}
    for kind, test in (("clear", lambda r: r["clears"] and not r["draws"]),
                       ("draw", lambda r: r["draws"] > 0),
                       ("upload", lambda r: r["uploads"] and not r["clears"] and
                        not r["draws"]),
                       ("flush", lambda r: not r["clears"] and not r["draws"] and
                        not r["uploads"])):
        chosen = [r for r in kept if test(r)]
        by_kind[kind] = {k: error_summary([r["predicted"][k] for r in chosen],
                                          [r["measured"] for r in chosen])
                         for k in (*estimators, BASELINE)}
    calibrations = {f"{c.width}x{c.height}": calibrator.calibration(c).to_dict()
                    for c in contexts}
    return {"trace": str(trace_path), "name": name, "backend": truth.name,
            "timer": truth.timer, "method": truth.method,
            "disjoint": getattr(truth, "disjoint", 0),
            "contexts": [c.__dict__ for c in contexts], "groups": len(groups),
            "frames": len(frames), "warmup_frames": warmup, "runtime_frames": runtime_frames,
            "history_misses": history.misses, "summary": summary, "by_kind": by_kind,
            "fragment_errors": fragment_errors, "calibration": calibrations, "rows": rows}


def _us(x) -> str:
    return "-" if x is None else f"{x * 1e6:9.1f}"


def text_report(report: dict) -> str:
    lines = [f"{report['name']} ({report['trace']}): {report['groups']} command groups in "
             f"{report['frames']} frames, ground truth {report['backend']}",
             f"measured with: {report['method']}"]
    keys = list(report["summary"])
    lines.append("group frame ctx draws clears   measured " +
                 " ".join(f"{k[:14]:>14}" for k in keys) + "   (us)")
    for r in report["rows"]:
        lines.append(f"{r['group']:5d} {r['frame']:5d} {r['context']:3d} {r['draws']:5d} "
                     f"{r['clears']:6d} {_us(r['measured'])}  " +
                     " ".join(f"{_us(r['predicted'][k]):>14}" for k in keys))
    lines.append(f"\nerrors (predicted - measured), frames >= {report['warmup_frames']}:")
    lines.append(f"{'predictor':18} {'mean |e|':>9} {'p95 |e|':>9} {'max |e|':>9} "
                 f"{'min e':>9} {'max e':>9} {'mean rel':>9} {'under':>6}  (us)")
    for k, s in report["summary"].items():
        if not s.get("groups"):
            continue
        rel = "-" if s["mean_rel_error"] is None else f"{100 * s['mean_rel_error']:8.2f}%"
        lines.append(f"{k:18} {_us(s['mean_abs_error'])} {_us(s['p95_abs_error'])} "
                     f"{_us(s['max_abs_error'])} {_us(s['min_error'])} {_us(s['max_error'])} "
                     f"{rel:>9} {100 * s['underestimated']:5.1f}%")
    lines.append(f"history baseline: {report['history_misses']} groups not found")
    for e, s in report["fragment_errors"].items():
        if s.get("groups") and s["mean_abs_rel_error"] is not None:
            lines.append(f"fragments {e:14}: mean |rel error| {100 * s['mean_abs_rel_error']:.3f}%"
                         f", max {100 * s['max_abs_rel_error']:.2f}%")
    for size, cal in report["calibration"].items():
        j = cal["jitter"]
        if j:
            central = j.get("std_central")
            lines.append(f"flush loop {size} ({j['samples']}x): peak {_us(j['peak']).strip()} "
                         f"us, std {_us(j['std']).strip()} us" +
                         ("" if central is None else f" ({_us(central).strip()} us of the "
                          "central 99%)") +
                         f", 95% in [{_us(j['p2_5']).strip()}, {_us(j['p97_5']).strip()}] us")
    return "\n".join(lines)


def write_plots(folder: str, report: dict) -> list[Path]:
    """003 Figs. 7-12: the CDF of the prediction error (us) of every predictor."""
    import numpy as np

    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ModuleNotFoundError:
        raise InputError("--plot needs matplotlib (pip install 'matplotlib>=3.7')") from None
    out = Path(folder)
    out.mkdir(parents=True, exist_ok=True)
    kept = [r for r in report["rows"] if r["frame"] >= report["warmup_frames"]]
    fig, ax = plt.subplots(figsize=(6, 4))
    for key in report["summary"]:
        errors = np.sort([(r["predicted"][key] - r["measured"]) * 1e6 for r in kept])
        if errors.size:
            ax.step(errors, np.arange(1, errors.size + 1) / errors.size, where="post",
                    label=key)
    # symmetric log: the baseline's misses (the largest time seen) dwarf the models' errors
    ax.set_xscale("symlog", linthresh=10.0)
    ax.set_xlabel("prediction error (predicted - measured), us (symmetric log)")
    ax.set_ylabel("share of command groups")
    ax.set_title(f"{report['name']} on {report['backend']}")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    path = out / f"{report['name']}-{report['backend']}-error-cdf.png"
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return [path]


def _predict(args) -> int:
    trace = args.trace
    if args.workload:
        from tilesim.render.workloads.prediction_programs import write_prediction_workload

        try:
            write_prediction_workload(args.workload, trace, args.frames, args.seed)
        except KeyError as exc:
            raise InputError(str(exc.args[0]), source="--workload") from None
    elif not Path(trace).exists():
        raise InputError("no such trace file", source=trace)
    if args.group_bytes is not None and args.group_bytes < 1:
        raise InputError(f"must be a positive number of bytes, got {args.group_bytes}",
                         source="--group-bytes")
    estimators = tuple(ESTIMATORS) if not args.estimator or "all" in args.estimator else \
        tuple(dict.fromkeys(args.estimator))
    report = run_prediction(trace, args.truth, estimators, args.group_bytes,
                            args.group_config, args.warmup, args.calibration or None,
                            args.jitter_loop, args.config, args.max_frames,
                            args.runtime_calibration, args.timer)
    if args.plot:
        report["plots"] = [str(p) for p in write_plots(args.plot, report)]
    print(json.dumps(report, indent=1) if args.json else text_report(report))
    return 0
