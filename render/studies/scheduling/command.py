"""``tilesim schedule``: several applications on one non-preemptive GPU (seed 004, *Fine-Grained
Semantics Driven Scheduling*, ch. 5-6).

    tilesim schedule MTS-2 --policy hpf            metrics per application (AFR, PMD)
    tilesim schedule MTS-2 --policy all --json     every policy, as JSON (PD-FFT included)
    tilesim schedule MTS-1 --policy all --plot DIR 004's figures: AFR and PMD bars, PD-FFTs
    tilesim schedule MTS-2 --sweep-error           HP's PMD vs prediction error and margin
"""

from __future__ import annotations

import io
import json
import math
from pathlib import Path

from tilesim.errors import EXIT_OK, InputError
from tilesim.render.studies.scheduling import metrics, robustness, scenarios
from tilesim.render.studies.scheduling.blocks import (
    DISTRIBUTIONS,
    History,
    InjectedError,
    Margin,
    Oracle,
)
from tilesim.render.studies.scheduling.policies import GUARDS, POLICIES, check_policy
from tilesim.render.studies.scheduling.simulation import simulate

# 004's results (§6.4, read from its text; the figures' bars are not in the seed's text).
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
                   help="MTS-1 or MTS-2 (or a scenario of --config)")
    p.add_argument("--scenario", dest="scenario_opt", metavar="NAME",
                   help="the same as the positional SCENARIO")
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
    p.add_argument("--predictor", choices=("oracle", "history"), default="oracle",
                   help="predicted block times: exact, or the same block of the last frame")
    p.add_argument("--error", metavar="DIST:SCALE",
                   help=f"inject prediction error: DIST one of {', '.join(DISTRIBUTIONS)}, "
                        "e.g. normal:0.2 (predictions = actual x (1 + e))")
    p.add_argument("--margin", type=float, default=1.0, metavar="F",
                   help="safety factor on every prediction (default 1)")
    p.add_argument("--seed", type=int, default=0, help="seed of the injected error")
    p.add_argument("--sweep-error", action="store_true",
                   help="HP's PMD under injected error of several spreads x safety margins "
                        "(and the history predictor), for --policy (default hpf)")
    p.add_argument("--config", metavar="FILE",
                   help="scenarios file (TOML, default: the bundled scenarios.toml)")
    p.add_argument("--blocks", metavar="FILE",
                   help="block costs (JSON, default: the bundled blocks.json)")
    p.add_argument("--rebuild-blocks", metavar="OUT",
                   help="render and time every application's blocks (minutes), write them to "
                        "OUT and use them")
    p.add_argument("--json", action="store_true", help="print the results as JSON")
    p.add_argument("--plot", metavar="DIR", help="write 004's figures as PNGs into DIR")
    p.set_defaults(func=_schedule)


def _positive(value: float | None, option: str) -> None:
    if value is not None and not (value >= 0 and math.isfinite(value)):
        raise InputError(f"must be a number >= 0, got {value}", source=option)


def _predictor(args):
    if args.error:
        dist, _, scale = args.error.partition(":")
        try:
            value = float(scale)
        except ValueError:
            raise InputError(f"expected DIST:SCALE (e.g. normal:0.2), got {args.error!r}",
                             source="--error") from None
        base = InjectedError(dist, value, args.seed)
    else:
        base = History() if args.predictor == "history" else Oracle()
    if not (args.margin > 0 and math.isfinite(args.margin)):
        raise InputError(f"must be > 0, got {args.margin}", source="--margin")
    return base if args.margin == 1.0 else Margin(base, args.margin)


def _schedule(args) -> int:
    scenario = args.scenario_arg or args.scenario_opt
    if not scenario:
        raise InputError("name a scenario (MTS-1 or MTS-2)", source="SCENARIO")
    if args.scenario_arg and args.scenario_opt and args.scenario_arg != args.scenario_opt:
        raise InputError("SCENARIO and --scenario differ", source="--scenario")
    policies = (list(POLICIES) if args.policy == "all"
                else [check_policy(p) for p in args.policy.split(",")])
    _positive(args.duration, "--duration")
    _positive(args.decision_overhead, "--decision-overhead")
    scen = scenarios.load_scenarios(args.config)
    if args.rebuild_blocks:
        from tilesim.atomic import write_json

        built = scenarios.build_blocks(scen)
        write_json(args.rebuild_blocks, scenarios.blocks_to_json(built, scen))
        blocks = built
    else:
        blocks = scenarios.load_blocks(args.blocks)
    apps = scenarios.applications(scen, scenario, blocks)
    config = scenarios.sim_config(scen, duration_s=args.duration,
                                  decision_s=args.decision_overhead, guard=args.guard,
                                  deadlines=args.deadlines)
    if args.sweep_error:
        policy = policies[0] if len(policies) == 1 else "hpf"
        dist = args.error.partition(":")[0] if args.error else "normal"
        result = robustness.sweep(apps, config, policy=policy, distribution=dist,
                                  seed=args.seed)
        result["scenario"] = scenario
        print(json.dumps(result, indent=1) if args.json else robustness.format_sweep(result))
        return EXIT_OK
    runs = {}
    for policy in policies:
        runs[policy] = metrics.summarize(simulate(apps, policy, _predictor(args), config))
    report = {"scenario": scenario, "config": {k: getattr(config, k) for k in (
        "duration_s", "decision_s", "record_s_per_command", "dispatch_s_per_command",
        "guard", "deadlines")}, "predictor": getattr(_predictor(args), "name", "?"),
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


def format_table(report: dict) -> str:
    apps = [a["app"] for a in report["applications"]]
    lines = [f"{report['scenario']}: " + ", ".join(
        f"{a['app']} (priority {a['priority']}, {a['fps']:g} FPS, "
        f"{a['blocks_per_frame']} blocks, {min(a['frame_ms']):.2f} ms/frame)"
        for a in report["applications"]),
        f"predictor {report['predictor']}, decision overhead "
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
