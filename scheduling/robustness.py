"""Robustness of HPF's deadline guarantee to prediction error (seed 004).

Seed 004 (*Fine-Grained Semantics Driven Scheduling*) §6.5: "since this model depends on the
predicted execution time values of the command blocks for making scheduling decisions
therefore the degree of accuracy in these values can change the behavior". Two sweeps, each
under several safety margins (a factor on every prediction):

:func:`sweep`
    predictions = actual x an injected error (blocks.py's distributions) at several
    spreads, and the block-level history predictor;
:func:`sweep_predictors`
    any set of predictors, given as factories (``tilesim schedule --sweep-predictors``:
    tilesim predict's estimators, ``estimators.py``), each with its prediction error measured on
    the blocks the run laid out.

The result is the highest-priority application's probability of meeting deadlines (PMD)
for each, and the smallest margin tried that keeps it at 100%.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from tilesim.scheduling.blocks import (
    Exact,
    History,
    InjectedError,
    Margin,
    Predictor,
)
from tilesim.scheduling.metrics import summarize
from tilesim.scheduling.simulation import (
    Application,
    RunResult,
    SimConfig,
    simulate,
)

SCALES = (0.0, 0.1, 0.2, 0.3, 0.5)
MARGINS = (1.0, 1.1, 1.25, 1.5, 2.0)


def _hp(summary: dict) -> dict:
    return summary["apps"][0]


def sweep(apps: list[Application], config: SimConfig, *, policy: str = "hpf",
          distribution: str = "normal", scales=SCALES, margins=MARGINS,
          seed: int = 0) -> dict:
    """HP's PMD and AFR (and the others' frame rates) for every (spread, margin), and for the
    history predictor under every margin."""
    rows = []
    for scale in scales:
        for margin in margins:
            base = Exact() if scale == 0 else InjectedError(distribution, scale, seed)
            s = summarize(simulate(apps, policy, Margin(base, margin), config))
            hp = _hp(s)
            rows.append({"predictor": f"{distribution}({scale:g})", "scale": scale,
                         "margin": margin, "hp_pmd": hp["pmd"], "hp_afr": hp["afr"],
                         "afr": {a["app"]: a["afr"] for a in s["apps"]}})
    for margin in margins:
        s = summarize(simulate(apps, policy, Margin(History(), margin), config))
        hp = _hp(s)
        rows.append({"predictor": "history", "scale": None, "margin": margin,
                     "hp_pmd": hp["pmd"], "hp_afr": hp["afr"],
                     "afr": {a["app"]: a["afr"] for a in s["apps"]}})
    return {"policy": policy, "distribution": distribution, "seed": seed, "rows": rows,
            "smallest_margin_for_100pct": _needed(rows), "100pct_up_to": _kept_up_to(rows)}


def _needed(rows: list[dict]) -> dict:
    """Per predictor, the smallest margin whose run kept HP's PMD at 100% (None if none did)."""
    needed = {}
    for label in dict.fromkeys(r["predictor"] for r in rows):
        ok = [r["margin"] for r in rows if r["predictor"] == label and r["hp_pmd"] == 1.0]
        needed[label] = min(ok) if ok else None
    return needed


def _kept_up_to(rows: list[dict]) -> dict:
    """Per predictor, the largest margin up to which every margin tried from the smallest
    one at 100% kept HP's PMD at 100% (a margin is not free: the scheduling thread sleeps
    for the predicted time of what it dispatched, 004 Table 5-9 line 40)."""
    out = {}
    for label, low in _needed(rows).items():
        top = None
        if low is not None:
            for r in sorted((r for r in rows if r["predictor"] == label),
                            key=lambda r: r["margin"]):
                if r["margin"] < low:
                    continue
                if r["hp_pmd"] != 1.0:
                    break
                top = r["margin"]
        out[label] = top
    return out


def prediction_errors(run: RunResult, margin: float = 1.0) -> dict:
    """Errors of the predictions a run made (every block laid out, run or not), the margin
    divided out: per application and pooled, the mean absolute relative error of blocks
    (those that take time), the signed mean, the share underestimated, and the mean
    absolute relative error of whole frames (the sum of a frame's blocks)."""
    by_app: dict[str, list] = {a.name: [] for a in run.apps}
    frames: dict[tuple[str, int], list[float]] = {}
    for b in run.predicted:
        predicted = b.predicted_s / margin
        total = frames.setdefault((b.app, b.frame), [0.0, 0.0, 0])
        total[0] += predicted
        total[1] += b.actual_s
        total[2] += 1
        if b.actual_s > 0:
            by_app[b.app].append((predicted - b.actual_s) / b.actual_s)
    complete = {a.name: [] for a in run.apps}
    blocks_per_frame = {a.name: [len(f) for f in a.frames] for a in run.apps}
    for (app, j), (p, m, n) in frames.items():
        sizes = blocks_per_frame[app]
        if n == sizes[j % len(sizes)] and m > 0:
            complete[app].append((p - m) / m)

    def stats(rel: list[float], frame_rel: list[float]) -> dict:
        e = np.asarray(rel, float)
        f = np.asarray(frame_rel, float)
        if e.size == 0:
            return {"blocks": 0}
        return {"blocks": int(e.size), "mean_abs_pct": float(100 * np.abs(e).mean()),
                "mean_pct": float(100 * e.mean()), "under": float((e < 0).mean()),
                "frames": int(f.size),
                "frame_mean_abs_pct": float(100 * np.abs(f).mean()) if f.size else None}

    out = {app: stats(rel, complete[app]) for app, rel in by_app.items()}
    out["all"] = stats([x for rel in by_app.values() for x in rel],
                       [x for rel in complete.values() for x in rel])
    return out


def sweep_predictors(apps: list[Application], config: SimConfig,
                     predictors: dict[str, Callable[[], Predictor]], *, policy: str = "hpf",
                     margins=MARGINS, progress: Callable[[str], None] | None = None) -> dict:
    """For every predictor (a factory: each run starts a fresh, untrained one) and margin:
    HP's PMD and AFR and the others' frame rates under ``policy``; the predictor's errors
    (from its run at the smallest margin, the margin divided out: :func:`prediction_errors`)
    and the smallest margin that keeps HP's PMD at 100%."""
    margins = sorted(margins)
    rows, errors = [], {}
    for label, make in predictors.items():
        for margin in margins:
            if progress:
                progress(f"{label} x{margin:g}")
            run = simulate(apps, policy, Margin(make(), margin), config)
            if label not in errors:
                errors[label] = prediction_errors(run, margin)
            s = summarize(run)
            hp = _hp(s)
            rows.append({"predictor": label, "margin": margin, "hp_pmd": hp["pmd"],
                         "hp_afr": hp["afr"], "afr": {a["app"]: a["afr"] for a in s["apps"]},
                         "pmd": {a["app"]: a["pmd"] for a in s["apps"]},
                         "gpu_utilization": s["gpu_utilization"]})
    return {"policy": policy, "hp": apps[0].name if apps else None,
            "apps": [a.name for a in apps], "margins": margins, "rows": rows,
            "errors": errors, "smallest_margin_for_100pct": _needed(rows),
            "100pct_up_to": _kept_up_to(rows)}


def _margin_cell(result: dict, label: str) -> str:
    """'x1.5' (100% from x1.5 on), 'x1-x2' (from x1, lost above x2), 'x2 only', 'none
    tried'."""
    low = result["smallest_margin_for_100pct"][label]
    if low is None:
        return "none tried"
    top = result.get("100pct_up_to", {}).get(label)
    largest = max(r["margin"] for r in result["rows"] if r["predictor"] == label)
    if top in (None, largest):
        return f"x{low:g}"
    return f"x{low:g} only" if top == low else f"x{low:g}-x{top:g}"


def format_sweep(result: dict) -> str:
    margins = sorted({r["margin"] for r in result["rows"]})
    labels = list(dict.fromkeys(r["predictor"] for r in result["rows"]))
    head = f"{'predictor':<16}" + "".join(f"  x{m:<6g}" for m in margins) + "  margin for 100%"
    lines = [f"highest-priority application's PMD under {result['policy']} "
             f"(columns: safety margin on predictions)", head]
    for label in labels:
        cells = []
        for m in margins:
            r = next(r for r in result["rows"] if r["predictor"] == label and r["margin"] == m)
            cells.append("   -   " if r["hp_pmd"] is None else f"{100 * r['hp_pmd']:6.1f}%")
        lines.append(f"{label:<16}" + "".join(f"  {c}" for c in cells)
                     + f"  {_margin_cell(result, label)}")
    return "\n".join(lines)


def format_predictor_sweep(result: dict) -> str:
    """The predictor sweep as text: per predictor its errors, HP's PMD and AFR at the
    smallest margin, HP's PMD at every margin and the margin that keeps it at 100%."""
    margins, hp = result["margins"], result["hp"]
    first = margins[0]
    lines = [f"{result.get('scenario', '')} under {result['policy']}: prediction errors "
             f"(blocks laid out, margin divided out) and {hp}'s PMD (columns: safety margin "
             "on predictions)".strip(),
             f"{'predictor':<22} {'|err|':>8} {'under':>6} {'frame':>8}  {'AFR':>5}"
             + "".join(f"  {'x' + format(m, 'g'):>7}" for m in margins) + "  margin for 100%"]
    for label in dict.fromkeys(r["predictor"] for r in result["rows"]):
        e = result["errors"][label]["all"]
        rows = {r["margin"]: r for r in result["rows"] if r["predictor"] == label}
        err = "-" if not e.get("blocks") else f"{e['mean_abs_pct']:7.1f}%"
        under = "-" if not e.get("blocks") else f"{100 * e['under']:5.0f}%"
        frame = "-" if e.get("frame_mean_abs_pct") is None else \
            f"{e['frame_mean_abs_pct']:7.1f}%"
        cells = "".join("  " + ("      -" if rows[m]["hp_pmd"] is None
                                else f"{100 * rows[m]['hp_pmd']:6.1f}%") for m in margins)
        lines.append(f"{label:<22} {err:>8} {under:>6} {frame:>8}  {rows[first]['hp_afr']:5.1f}"
                     + cells + f"  {_margin_cell(result, label)}")
    apps = result["apps"]
    lines.append("")
    lines.append("mean |error| of blocks per application (% of the actual time):")
    lines.append(f"{'predictor':<22}" + "".join(f" {a:>12}" for a in apps))
    for label, e in result["errors"].items():
        cells = "".join(f" {'-':>12}" if not e[a].get("blocks")
                        else f" {e[a]['mean_abs_pct']:11.1f}%" for a in apps)
        lines.append(f"{label:<22}" + cells)
    return "\n".join(lines)

