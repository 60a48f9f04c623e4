"""Technique / baseline ratios of a study folder's finished units (a stopped study too), by
`tilesim estimate RUN --baseline BASE --json` with the install that rendered them.

    PYTHONPATH=FROZEN_SITE python ratios.py STUDY te,re,memo [ENERGY.toml] > ratios.json
"""

import json
import subprocess
import sys
from pathlib import Path


def main() -> None:
    study, techniques = Path(sys.argv[1]), sys.argv[2].split(",")
    energy = sys.argv[3] if len(sys.argv) > 3 else None
    rows = []
    for workload in sorted((study / "runs").iterdir()):
        base = workload / "baseline"
        for technique in techniques:
            run = workload / technique.replace("/", "-")
            if not (run / "quality.json").is_file():
                continue
            cmd = [sys.executable, "-m", "tilesim.cli", "estimate", str(run),
                   "--baseline", str(base), "--json"]
            if energy:
                cmd += ["--energy-config", energy]
            out = subprocess.run(cmd, capture_output=True, text=True)
            if out.returncode:
                print(workload.name, technique, out.stderr.strip(), file=sys.stderr)
                continue
            normalized = json.loads(out.stdout)["workloads"][0]["normalized"]
            tally = json.loads((run / "quality.json").read_text())["tally"]
            rows.append({"workload": workload.name, "technique": technique,
                         "time": normalized["time"], "energy": normalized["energy"],
                         "gpu_energy": normalized.get("gpu_energy"),
                         "memory_energy": normalized.get("memory_energy"),
                         "frames": tally.get("frames"), "identical": tally.get("identical"),
                         "tiles_skipped": tally["totals"].get("re_tiles_skipped", 0)
                         / tally["tiles"],
                         "memo_collisions": tally["scalars"].get("memo_collisions")})
    json.dump(rows, sys.stdout, indent=1)


if __name__ == "__main__":
    main()
