"""``tilesim schedule``: several applications on one non-preemptive GPU (seed 004, *Fine-Grained
Semantics Driven Scheduling*, ch. 5-6).

    tilesim schedule MTS-2 --policy hpf            metrics per application (AFR, PMD)
    tilesim schedule MTS-2 --policy all --json     every policy, as JSON (PD-FFT included)
    tilesim schedule MTS-1 --policy all --plot DIR 004's figures: AFR and PMD bars, PD-FFTs
    tilesim schedule MTS-2 --sweep-error           HP's PMD vs prediction error and margin
    tilesim schedule MTS-2 --predictor bbox        blocks predicted by `tilesim predict`'s bbox
    tilesim schedule MTS-2 --sweep-predictors      every estimator: its error, HP's PMD per
                                                   margin, the margin that keeps 100%
"""

from __future__ import annotations

import io
import json
import math
from pathlib import Path
from typing import TYPE_CHECKING

from tilesim.errors import EXIT_OK, InputError, resolve_name
from tilesim.memory_budget import check_memory
from tilesim.scheduling import actual
from tilesim.scheduling.blocks import DISTRIBUTIONS
from tilesim.scheduling.policies import GUARDS, POLICIES

if TYPE_CHECKING:
    from tilesim.scheduling.blocks import InjectedError

# 004's results (§6.4, read from its text; the figures' bars are not in the seed's text).
# Memory a simulated frame of one application keeps (its blocks' records and its own): about
# 24 KiB, measured on MTS-1 (400 s took 0.8 GB more than 20 s)
FRAME_BYTES = 24 * 1024
SEED_RESULTS = {
    "MTS-1": {"none": "all above the desired 30 FPS (Fig. 6.1)",
              "frrs": "all 30 FPS, all deadlines met (Fig. 6.2, 6.3)",
              "hpf": "speedometer 30 FPS, all deadlines met; menu's AFR lower (decision "
                     "overhead), tachometer and menu miss some deadlines (Fig. 6.2-6.9)"},
    "MTS-2": {"none": "speedometer drops from 30 to about 10 FPS; all treated alike "
                      "(Fig. 6.10)",
              "frrs": "all four about 10 FPS, few deadlines met (Fig. 6.11, 6.12)",
              "hpf": "speedometer 30 FPS and every deadline met; tachometer above menu; "
                     "tachometer meets its deadlines; spam renders no frame (Fig. 6.11-6.20)"},
}


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "schedule", help="schedule several applications on one non-preemptive GPU (FG-SDS)",
        description="Simulate the multitasking scenarios of seed 004 (MTS-1, MTS-2) under a "
                    "scheduling policy and print each application's average frame rate (AFR) "
                    "and probability of meeting deadlines (PMD); --json adds the distribution "
                    "of frame finish times relative to deadlines (PD-FFT).")
    p.add_argument("scenario_arg", nargs="?", metavar="SCENARIO",
                   help="MTS-1 or MTS-2 (or a scenario of --config), any case")
    p.add_argument("--policy", default="hpf", metavar="|".join(POLICIES + ("all",)),
                   help="scheduling policy, several separated by commas, or 'all' (default "
                        "%(default)s)")
    p.add_argument("--duration", type=float, metavar="S",
                   help="simulated seconds (default: the config's [run] duration_s)")
    p.add_argument("--decision-overhead", type=float, metavar="S",
                   help="scheduling thread's CPU seconds per decision (default: config)")
    p.add_argument("--guard", choices=GUARDS, help="HPF's deadline guard (default: config)")
    p.add_argument("--deadlines", choices=("grid", "rebase"),
                   help="frame j due at (j+1) periods (004 eq. 1), or one period after its "
                        "release (default: config)")
    p.add_argument("--predictor", metavar="NAME",
                   help="predicted block times: exact (default), history (the same block of "
                        "the last frame), or tilesim predict's estimators over the block's "
                        "commands, "
                        "named as in tilesim predict: bbox, history-ratio, history-seq, "
                        "oracle (E+runtime with --runtime-calibration), history-baseline; "
                        "with --sweep-predictors a comma-separated list (default: all)")
    p.add_argument("--runtime-calibration", type=int, default=0, metavar="N",
                   help="as tilesim predict: ESTIMATOR+runtime learns each program's c_f from "
                        "its blocks' measured times in the first N frames (default 0: off)")
    p.add_argument("--calibration", default="out/predict/calibration", metavar="DIR",
                   help="where the estimators' calibrations are cached, shared with tilesim "
                        "predict (default %(default)s; '' for none)")
    p.add_argument("--error", metavar="DIST:SCALE",
                   help=f"inject prediction error: DIST one of {', '.join(DISTRIBUTIONS)}, "
                        "e.g. normal:0.2 (predictions = actual x (1 + e))")
    p.add_argument("--margin", type=float, default=1.0, metavar="F",
                   help="safety factor on every prediction (default 1)")
    p.add_argument("--seed", type=int, default=0, help="seed of the injected error")
    p.add_argument("--sweep-error", action="store_true",
                   help="HP's PMD under injected error of several spreads x safety margins "
                        "(and the history predictor), for --policy (default hpf)")
    p.add_argument("--sweep-predictors", action="store_true",
                   help="every predictor (exact, history, the prediction study's estimators, the "
                        "history baseline, and --error's distribution if given): its "
                        "prediction error, HP's PMD and AFR under --policy (default hpf) at "
                        "every margin of --margins and the smallest that keeps 100%%")
    p.add_argument("--margins", metavar="LIST", default="1,1.1,1.25,1.5,2",
                   help="the safety margins the sweeps try (default %(default)s)")
    p.add_argument("--config", metavar="FILE",
                   help="scenarios file (TOML, default: the bundled scenarios.toml)")
    p.add_argument("--blocks", metavar="FILE",
                   help="block costs (JSON, default: the bundled blocks.json)")
    p.add_argument("--rebuild-blocks", metavar="OUT",
                   help="render and time every application's blocks (minutes), write them to "
                        "OUT and use them")
    p.add_argument("--actual", default="model", choices=actual.SOURCES,
                   help="where the blocks' actual GPU times come from: the tilesim timing "
                        "model (the block costs), or Mesa llvmpipe / softpipe measured block by "
                        "block (cached in --actual-cache); tilesim predict's estimators are "
                        "then "
                        "calibrated on the same driver (default %(default)s)")
    p.add_argument("--timer", default="auto", choices=("auto", "query", "finish"),
                   help="with --actual gl-*: as tilesim predict, GL_EXT_disjoint_timer_query "
                        "or the wall clock between two glFinish (default %(default)s: the "
                        "query where offered)")
    p.add_argument("--actual-cache", default="out/schedule/actual", metavar="DIR",
                   help="where measured block times are cached (default %(default)s; '' for "
                        "none)")
    p.add_argument("--actual-repeats", type=int, default=actual.REPEATS, metavar="N",
                   help="replays of each distinct frame; a block's time is their median "
                        "(default %(default)s)")
    p.add_argument("--json", action="store_true", help="print the results as JSON")
    p.add_argument("--plot", metavar="DIR", help="write 004's figures as PNGs into DIR")
    p.set_defaults(func=_schedule)


def _bar(total: int, desc: str):
    from tqdm import tqdm

    return tqdm(total=total, desc=desc, unit="app", disable=None)


def _step(bar, name: str) -> None:
    bar.set_postfix_str(name)
    bar.update(1)


def _positive(value: float | None, option: str) -> None:
    if value is not None and not (value >= 0 and math.isfinite(value)):
        raise InputError(f"must be a number >= 0, got {value}", source=option)


def _injected(args) -> InjectedError:
    from tilesim.scheduling.blocks import InjectedError

    dist, _, scale = args.error.partition(":")
    try:
        value = float(scale)
    except ValueError:
        raise InputError(f"expected DIST:SCALE (e.g. normal:0.2), got {args.error!r}",
                         source="--error") from None
    return InjectedError(dist, value, args.seed)


class _Factories:
    """Fresh predictors by name; the applications' commands and the calibrator are made
    once, on the first use of an estimator that needs them."""

    def __init__(self, args, scen, apps):
        self.args, self.scen, self.apps = args, scen, apps
        self._commands = None
        self._calibrator = None

    def check(self, name: str) -> str:
        from tilesim.scheduling import estimators

        names = estimators.predictor_names(self.args.runtime_calibration)
        if name.endswith(estimators.RUNTIME) and name.casefold() not in {
                n.casefold() for n in names}:
            raise InputError(f"unknown predictor {name!r} (E+runtime needs "
                             f"--runtime-calibration N) (known: {', '.join(names)})",
                             source="--predictor")
        # names without case, a misspelling answered with the closest predictor
        return resolve_name("predictor", name, names, source="--predictor")

    def make(self, name: str):
        from tilesim.scheduling import estimators, scenarios

        if name in estimators.OWN:
            return estimators.make_predictor(name)
        if self._commands is None:
            where = self.args.blocks or str(scenarios.BLOCKS_JSON)
            self._commands = scenarios.app_commands(self.scen, self.apps, where)
        if self._calibrator is None and name != estimators.BASELINE:
            self._calibrator = estimators.calibrator(
                self.args.calibration or None, actual.driver_of(self.args.actual),
                self.args.timer)
        cal = self._calibrator
        return estimators.make_predictor(
            name, self._commands, None if cal is None else cal.calibration,
            None if cal is None else cal.program_cost, self.args.runtime_calibration)


def _predictor(args, factories: _Factories):
    from tilesim.scheduling.blocks import Margin

    if args.error:
        base = _injected(args)
    else:
        base = factories.make(factories.check(args.predictor or "exact"))
    if not (args.margin > 0 and math.isfinite(args.margin)):
        raise InputError(f"must be > 0, got {args.margin}", source="--margin")
    return base if args.margin == 1.0 else Margin(base, args.margin)


def _margins(text: str) -> list[float]:
    try:
        values = [float(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise InputError(f"expected numbers separated by commas, got {text!r}",
                         source="--margins") from None
    if not values or not all(v > 0 and math.isfinite(v) for v in values):
        raise InputError(f"margins must be numbers > 0, got {text!r}", source="--margins")
    return sorted(set(values))


def _schedule(args) -> int:
    from tilesim.scheduling import estimators, metrics, robustness, scenarios
    from tilesim.scheduling.policies import check_policy
    from tilesim.scheduling.simulation import simulate

    scenario = args.scenario_arg
    if not scenario:
        raise InputError("name a scenario (MTS-1 or MTS-2)", source="tilesim schedule")
    policies = (list(POLICIES) if args.policy == "all"
                else [check_policy(p) for p in args.policy.split(",")])
    _positive(args.duration, "--duration")
    _positive(args.decision_overhead, "--decision-overhead")
    if args.runtime_calibration < 0:
        raise InputError(f"must be >= 0, got {args.runtime_calibration}",
                         source="--runtime-calibration")
    if args.sweep_error and args.sweep_predictors:
        raise InputError("one sweep at a time", source="--sweep-predictors")
    margins = _margins(args.margins)
    if args.predictor and "," in args.predictor and not args.sweep_predictors:
        raise InputError("one predictor per run (a list only with --sweep-predictors)",
                         source="--predictor")
    if args.actual_repeats < 1:
        raise InputError(f"must be >= 1, got {args.actual_repeats}", source="--actual-repeats")
    scen = scenarios.load_scenarios(args.config)
    scenario = resolve_name("scenario", scenario, scen.scenarios, source=str(scen.path))
    if args.rebuild_blocks:
        from tilesim.atomic import write_json

        with _bar(len(scen.apps), "render and time blocks") as bar:
            built = scenarios.build_blocks(scen, progress=lambda name: _step(bar, name))
        write_json(args.rebuild_blocks, scenarios.blocks_to_json(built, scen))
        blocks = built
    else:
        blocks = scenarios.load_blocks(args.blocks)
    measured = {}
    if args.actual != "model":
        names = [e["app"] for e in scen.scenarios.get(scenario, []) if e["app"] in blocks]
        with _bar(len(names), f"measure blocks on {args.actual}") as bar:
            timed, measured = actual.measured_blocks(
                scen, names, blocks, args.actual, args.timer, args.actual_cache or None,
                args.actual_repeats, progress=lambda name: _step(bar, name))
        blocks = {**blocks, **timed}
    apps = scenarios.applications(scen, scenario, blocks)
    config = scenarios.sim_config(scen, duration_s=args.duration,
                                  decision_s=args.decision_overhead, guard=args.guard,
                                  deadlines=args.deadlines)
    # A run keeps every frame's records: refused before it starts when they cannot fit
    # (--duration 1e9 grew past 2 GB in two minutes, never to finish)
    frames = config.duration_s * sum(app.fps for app in apps)
    check_memory(f"simulating {config.duration_s:g} s ({frames:.3g} frames)",
                 int(frames * FRAME_BYTES),
                 "--duration" if args.duration is not None else str(scen.path))
    factories = _Factories(args, scen, apps)
    if args.sweep_error:
        policy = policies[0] if len(policies) == 1 else "hpf"
        dist = args.error.partition(":")[0] if args.error else "normal"
        result = robustness.sweep(apps, config, policy=policy, distribution=dist,
                                  seed=args.seed, margins=margins)
        result["scenario"] = scenario
        print(json.dumps(result, indent=1) if args.json else robustness.format_sweep(result))
        return EXIT_OK
    if args.sweep_predictors:
        policy = policies[0] if len(policies) == 1 else "hpf"
        names = ([factories.check(n.strip()) for n in args.predictor.split(",") if n.strip()]
                 if args.predictor else
                 list(estimators.predictor_names(args.runtime_calibration)))
        makers = {name: (lambda name=name: factories.make(name)) for name in names}
        if args.error:
            injected = _injected(args)
            makers[injected.name] = lambda: _injected(args)
        result = robustness.sweep_predictors(apps, config, makers, policy=policy,
                                             margins=margins)
        result["scenario"] = scenario
        result["config"] = {k: getattr(config, k) for k in (
            "duration_s", "decision_s", "record_s_per_command", "dispatch_s_per_command",
            "guard", "deadlines")}
        result["actual"] = {"source": args.actual, "apps": measured}
        if args.plot:
            result["plots"] = [str(p) for p in write_margin_plot(result, Path(args.plot))]
        print(json.dumps(result, indent=1) if args.json
              else robustness.format_predictor_sweep(result))
        return EXIT_OK
    runs = {}
    name = None
    for policy in policies:
        predictor = _predictor(args, factories)
        name = getattr(predictor, "name", "?")
        runs[policy] = metrics.summarize(simulate(apps, policy, predictor, config))
    report = {"scenario": scenario, "config": {k: getattr(config, k) for k in (
        "duration_s", "decision_s", "record_s_per_command", "dispatch_s_per_command",
        "guard", "deadlines")}, "predictor": name,
        "actual": {"source": args.actual, "apps": measured},
        "applications": [{"app": a.name, "priority": a.priority, "fps": a.fps,
                          "blocks_per_frame": len(a.frames[0]),
                          "frame_ms": [round(1e3 * sum(b.actual_s for b in f), 4)
                                       for f in a.frames]} for a in apps],
        "runs": runs, "seed_004": SEED_RESULTS.get(scenario, {})}
    if args.plot:
        write_plots(report, Path(args.plot))
    if args.json:
        print(json.dumps(report, indent=1))
    else:
        print(format_table(report))
    return EXIT_OK


def _actual_text(about: dict) -> str:
    """Where the blocks' actual times came from, in words."""
    if about.get("source", "model") == "model":
        return "model"
    timers = sorted({a["timer"] for a in about["apps"].values()})
    repeats = sorted({a["repeats"] for a in about["apps"].values()})
    return (f"{about['source']} ({'/'.join(timers)} timer, median of "
            f"{'/'.join(map(str, repeats))})")


def format_table(report: dict) -> str:
    apps = [a["app"] for a in report["applications"]]
    lines = [f"{report['scenario']}: " + ", ".join(
        f"{a['app']} (priority {a['priority']}, {a['fps']:g} FPS, "
        f"{a['blocks_per_frame']} blocks, {min(a['frame_ms']):.2f} ms/frame)"
        for a in report["applications"]),
        f"predictor {report['predictor']}, actual times "
        f"{_actual_text(report.get('actual', {}))}, decision overhead "
        f"{1e3 * report['config']['decision_s']:g} ms, guard {report['config']['guard']}, "
        f"deadlines {report['config']['deadlines']}, "
        f"{report['config']['duration_s']:g} s simulated",
        f"{'policy':<10}" + "".join(f"  {a:>20}" for a in apps) + "  GPU busy",
        f"{'':<10}" + "".join(f"  {'AFR':>8} {'PMD':>11}" for _ in apps)]
    for policy, s in report["runs"].items():
        cells = []
        for a in s["apps"]:
            pmd = "-" if a["pmd"] is None else f"{100 * a['pmd']:.1f}%"
            cells.append(f"  {a['afr']:8.1f} {pmd:>11}")
        lines.append(f"{policy:<10}" + "".join(cells) + f"  {100 * s['gpu_utilization']:.0f}%")
    for policy, text in report.get("seed_004", {}).items():
        lines.append(f"004 {policy}: {text}")
    return "\n".join(lines)


def write_plots(report: dict, folder: Path) -> list[Path]:
    """004's figures: AFR bars and PMD bars per application and policy (Fig. 6.1-6.3,
    6.10-6.12), PD-FFT histograms per application and policy (Fig. 6.4-6.9, 6.13-6.20)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    from tilesim.atomic import write_bytes

    folder.mkdir(parents=True, exist_ok=True)
    written = []

    def save(fig, name):
        buf = io.BytesIO()
        fig.savefig(buf, format="png", dpi=100, bbox_inches="tight")
        plt.close(fig)
        written.append(write_bytes(folder / name, buf.getvalue()))

    runs, apps = report["runs"], [a["app"] for a in report["applications"]]
    x = np.arange(len(apps))
    width = 0.8 / max(1, len(runs))
    for key, label, scale in (("afr", "average frame rate (FPS)", 1.0),
                              ("pmd", "probability of meeting deadlines (%)", 100.0)):
        fig, ax = plt.subplots(figsize=(7, 3.5))
        for k, (policy, s) in enumerate(runs.items()):
            values = [(a[key] or 0.0) * scale for a in s["apps"]]
            ax.bar(x + k * width, values, width, label=policy)
        ax.set_xticks(x + width * (len(runs) - 1) / 2, apps)
        ax.set_ylabel(label)
        ax.set_title(f"{report['scenario']}: {key.upper()}")
        ax.legend(fontsize=8)
        save(fig, f"{report['scenario']}-{key}.png")
    for policy, s in runs.items():
        for a in s["apps"]:
            fig, ax = plt.subplots(figsize=(7, 3))
            frac = np.asarray(a["pd_fft"]["fraction"]) * 100
            colors = ["tab:green"] * 10 + ["tab:red"] * 11
            ax.bar(np.arange(len(frac)), frac, color=colors)
            ax.set_xticks(np.arange(len(frac)), a["pd_fft"]["labels"], rotation=70,
                          fontsize=7)
            ax.set_ylabel("frames (%)")
            ax.set_xlabel("(finish - deadline) / period")
            ax.set_title(f"{report['scenario']} {policy}: {a['app']} PD-FFT "
                         f"({a['frames']} frames)")
            save(fig, f"{report['scenario']}-{policy}-{a['app']}-pdfft.png")
    return written


def write_margin_plot(result: dict, folder: Path) -> list[Path]:
    """The highest-priority application's PMD against the safety margin, a line per
    predictor (the predictor sweep)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from tilesim.atomic import write_bytes

    folder.mkdir(parents=True, exist_ok=True)
    # the whole range above, the top 6% below (cold-start misses are a frame or two)
    fig, (ax, zoom) = plt.subplots(2, 1, figsize=(8, 6), sharex=True,
                                   gridspec_kw={"height_ratios": [3, 2]})
    labels = list(dict.fromkeys(r["predictor"] for r in result["rows"]))
    margins = result["margins"]
    colors = plt.get_cmap("tab20").colors
    markers = "osd^v<>xP*hH"
    styles = ("-", "--", ":", "-.")
    for k, label in enumerate(labels):
        by_margin = {r["margin"]: r for r in result["rows"] if r["predictor"] == label}
        # equally spaced margins (the grid is the experiment's, not a scale); lines that
        # coincide are told apart by marker and line style
        for axis in (ax, zoom):
            axis.plot(range(len(margins)),
                      [100 * (by_margin[m]["hp_pmd"] or 0.0) for m in margins],
                      marker=markers[k % len(markers)], linestyle=styles[k % len(styles)],
                      color=colors[(2 * k + k // 10) % 20], label=label, alpha=0.9,
                      markersize=6 + (k % 3))
    zoom.set_ylim(94, 100.5)
    zoom.set_xticks(range(len(margins)), [f"x{m:g}" for m in margins])
    zoom.set_xlabel("safety margin on predicted block times")
    ax.set_ylabel(f"{result['hp']}: deadlines met (%)")
    zoom.set_ylabel("(94-100%)")
    ax.set_title(f"{result.get('scenario', '')} under {result['policy']}, guard "
                 f"{result['config']['guard']}: {result['config']['duration_s']:g} s simulated")
    for axis in (ax, zoom):
        axis.grid(True, alpha=0.3)
    ax.legend(fontsize=8, loc="center left", bbox_to_anchor=(1.01, 0.3))
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100, bbox_inches="tight")
    plt.close(fig)
    name = (f"{result.get('scenario', 'scenario')}-{result['policy']}-"
            f"{result['config']['guard']}-pmd-vs-margin.png")
    return [write_bytes(folder / name, buf.getvalue())]

