"""Memoization with another LUT size against Table 4.1's 2048 sets, over the same frames.

    PYTHONPATH=FROZEN_SITE python lut_sets.py OTHER CONTROL BASELINE [--set K=V ...] > out.json

OTHER, CONTROL and BASELINE hold one render folder per workload (same names): `tilesim render
--technique memo` with the other LUT (small_lut.py), with 2048 sets (small_lut.py 2048, equal
to the study's memo counters), and the baseline, over the same frames. Per workload: the hit
rate (memo_hits / memo_lookups) and `tilesim estimate RUN --baseline BASE --json` time and
energy of each memo render; the --set values (the other LUT's size and energies) apply to
OTHER's estimates only.
"""

import json
import subprocess
import sys
from pathlib import Path


def estimate(run: Path, base: Path, sets: list[str]) -> dict:
    cmd = [sys.executable, "-m", "tilesim.cli", "estimate", str(run), "--baseline", str(base),
           "--json", "--no-screen"]
    for s in sets:
        cmd += ["--set", s]
    w = json.loads(subprocess.run(cmd, capture_output=True, text=True,
                                  check=True).stdout)["workloads"][0]
    d = w["total"]["diagnostics"]
    return {"hit": d["memo_hits"] / d["memo_lookups"], "time": w["normalized"]["time"],
            "energy": w["normalized"]["energy"],
            "lut_pj_per_lookup": w["total"]["energy_j"]["gpu_dynamic"]["memo_lut"]
            / d["memo_lookups"] * 1e12}


def main() -> None:
    other, control, base = (Path(a) for a in sys.argv[1:4])
    sets = [sys.argv[i + 1] for i, a in enumerate(sys.argv) if a == "--set"]
    rows = [{"workload": run.name, "other": estimate(run, base / run.name, sets),
             "control": estimate(control / run.name, base / run.name, [])}
            for run in sorted(other.iterdir())]
    mean = {side: {k: sum(r[side][k] for r in rows) / len(rows) for k in rows[0][side]}
            for side in ("other", "control")}
    json.dump({"set": sets, "rows": rows, "mean": mean}, sys.stdout, indent=1)


if __name__ == "__main__":
    main()
