"""Robustness of HPF's deadline guarantee to prediction error (issue 18 item 5).

Seed 004 (*Fine-Grained Semantics Driven Scheduling*) §6.5: "since this model depends on the
predicted execution time values of the command blocks for making scheduling decisions
therefore the degree of accuracy in these values can change the behavior". Here the
scenario runs under a policy with predictions = actual x an injected error (blocks.py's
distributions) at several spreads, each under several safety margins (a factor on every
prediction), and with the history predictor; the result is the highest-priority
application's probability of meeting deadlines (PMD) for each, and for each spread the
smallest margin tried that keeps it at 100%.
"""

from __future__ import annotations

from tilesim.render.studies.scheduling.blocks import History, InjectedError, Margin, Oracle
from tilesim.render.studies.scheduling.metrics import summarize
from tilesim.render.studies.scheduling.simulation import Application, SimConfig, simulate

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
            base = Oracle() if scale == 0 else InjectedError(distribution, scale, seed)
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
    needed = {}
    for label in dict.fromkeys(r["predictor"] for r in rows):
        ok = [r["margin"] for r in rows if r["predictor"] == label and r["hp_pmd"] == 1.0]
        needed[label] = min(ok) if ok else None
    return {"policy": policy, "distribution": distribution, "seed": seed, "rows": rows,
            "smallest_margin_for_100pct": needed}


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
        need = result["smallest_margin_for_100pct"][label]
        lines.append(f"{label:<16}" + "".join(f"  {c}" for c in cells)
                     + f"  {'none tried' if need is None else f'x{need:g}'}")
    return "\n".join(lines)
