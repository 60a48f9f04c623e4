"""The technique averages of a study over the thesis-regime workloads (like_*), beside Frame
Coherence's, by the benchmark set each technique was evaluated on and by 2D/3D.

The thesis evaluates TE, RE, memoization and EVR on the benchmarks of chapters 4-5 (1196x768)
and DSR on those of chapter 6 (1920x1080) (Frame Coherence §3.2, Table 3.2); each average here
is over the rows of the matching set, with the other set and the 2D/3D split beside it. Each
workload's bound (what its baseline's frame time is spent on, `bound_shares` of results.json)
is listed so a difference can be read against the regime.

    python scripts/thesis_comparison.py OUT/study [--json] [--markdown FILE]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tilesim.render.studies.study_results import THESIS  # noqa: E402
from tilesim.render.workloads import thesis_games  # noqa: E402

TECHNIQUES = ("te", "re", "re+evr", "evr", "dsr", "memo")
# Frame Coherence's benchmark set of each technique's evaluation (§4.3, §5.4, §6.5).
EVALUATED_ON = {"te": "4-5", "re": "4-5", "re+evr": "4-5", "evr": "4-5", "memo": "4-5",
                "dsr": "6"}


def _rows_by_name() -> dict:
    rows, _profiles, _suite = thesis_games.load_table()
    return {row.name: row for row in rows.values()}


def _mean(values):
    values = [v for v in values if v is not None]
    return sum(values) / len(values) if values else None


def compare(results: dict) -> dict:
    """{"groups": {group: {technique: {time, energy, n}}}, "workloads": [...], "thesis"}."""
    rows = _rows_by_name()
    workloads = []
    for w in results["workloads"]:
        base = w["name"].rsplit("-", 1)[0]
        if base not in rows:
            continue
        row = rows[base]
        entry = {"name": w["name"], "benchmark": row.benchmark, "chapters": row.chapters,
                 "type": row.type, "bound_shares": w.get("bound_shares"),
                 "regime": w.get("regime"), "techniques": {}}
        for t in TECHNIQUES:
            run = w["runs"].get(t)
            if run is None or not run.get("normalized"):
                continue
            n, q = run["normalized"], run.get("quality", {})
            entry["techniques"][t] = {"time": n.get("time"), "energy": n.get("energy"),
                                      "tiles_skipped": q.get("tiles_skipped"),
                                      "average_sample_rate": q.get("average_sample_rate")}
        workloads.append(entry)
    groups = {"evaluated set": lambda e, t: e["chapters"] == EVALUATED_ON[t],
              "chapters 4-5": lambda e, t: e["chapters"] == "4-5",
              "chapter 6": lambda e, t: e["chapters"] == "6",
              "2D": lambda e, t: e["type"] == "2D", "3D": lambda e, t: e["type"] == "3D",
              "all": lambda e, t: True}
    table = {}
    for g, keep in groups.items():
        table[g] = {}
        for t in TECHNIQUES:
            picked = [e["techniques"][t] for e in workloads if t in e["techniques"] and keep(e, t)]
            table[g][t] = {"time": _mean([p["time"] for p in picked]),
                           "energy": _mean([p["energy"] for p in picked]),
                           "tiles_skipped": _mean([p["tiles_skipped"] for p in picked]),
                           "n": len(picked)}
    return {"groups": table, "workloads": workloads, "thesis": THESIS,
            "evaluated_on": EVALUATED_ON}


def _f(v, fmt=".3f"):
    return "-" if v is None else format(v, fmt)


def markdown(report: dict) -> str:
    lines = ["| technique | set | time | time (thesis) | energy | energy (thesis) | n |",
             "|---|---|---|---|---|---|---|"]
    evaluated = report["groups"]["evaluated set"]
    for t in TECHNIQUES:
        th = report["thesis"].get(t, {})
        g = evaluated[t]
        lines.append(f"| {t} | ch. {EVALUATED_ON[t]} | {_f(g['time'])} | "
                     f"{_f(th.get('time'), '.2f')} | {_f(g['energy'])} | "
                     f"{_f(th.get('energy'), '.2f')} | {g['n']} |")
    lines += ["", "| technique | " + " | ".join(k for k in report["groups"] if k != "evaluated set")
              + " |", "|---" * (len(report["groups"])) + "|"]
    for t in TECHNIQUES:
        cells = [f"{_f(g[t]['time'], '.2f')} / {_f(g[t]['energy'], '.2f')}"
                 for k, g in report["groups"].items() if k != "evaluated set"]
        lines.append(f"| {t} (time / energy) | " + " | ".join(cells) + " |")
    lines += ["", "| workload | set | type | bound (baseline) | RE skipped | RE time | "
              "DSR time | DSR rate |", "|---|---|---|---|---|---|---|---|"]
    for e in report["workloads"]:
        shares = e.get("bound_shares") or {}
        top = ", ".join(f"{k} {v:.0%}" for k, v in sorted(shares.items(), key=lambda kv: -kv[1])
                        [:3] if v)
        re_, dsr = e["techniques"].get("re", {}), e["techniques"].get("dsr", {})
        lines.append(f"| {e['name']} | {e['chapters']} | {e['type']} | {top or '-'} | "
                     f"{_f(re_.get('tiles_skipped'), '.0%')} | {_f(re_.get('time'))} | "
                     f"{_f(dsr.get('time'))} | {_f(dsr.get('average_sample_rate'), '.2f')} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     epilog="Exit codes: 0 written, 2 bad usage or input.")
    parser.add_argument("study", help="a `tilesim run` folder (its results.json)")
    parser.add_argument("--json", action="store_true", help="print the comparison as JSON")
    parser.add_argument("--markdown", metavar="FILE", help="also write the tables to FILE")
    args = parser.parse_args(argv)
    path = Path(args.study) / "results.json"
    try:
        results = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        print(f"{path}: cannot read a study's results ({exc})", file=sys.stderr)
        return 2
    report = compare(results)
    if not report["workloads"]:
        print(f"{path}: no thesis-regime workload (like_*) in this study", file=sys.stderr)
        return 2
    text = markdown(report)
    if args.markdown:
        Path(args.markdown).write_text(text, encoding="utf-8")
    print(json.dumps(report, indent=1) if args.json else text, end="" if not args.json else "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
