"""Technique / baseline ratios of a (possibly unfinished) study folder's finished units, by
`tilesim estimate RUN --baseline BASE --json` (the frozen install that rendered them)."""
import json, os, subprocess, sys
from pathlib import Path

study = Path(sys.argv[1]); techniques = sys.argv[2].split(","); energy = sys.argv[3] if len(sys.argv) > 3 else None
env = dict(os.environ, PYTHONPATH="/tmp/wt_site")
rows = []
for w in sorted((study / "runs").iterdir()):
    base = w / "baseline"
    for t in techniques:
        run = w / t.replace("/", "-")
        if not (run / "quality.json").is_file():
            continue
        cmd = [sys.executable, "-m", "tilesim.cli", "estimate", str(run), "--baseline", str(base), "--json"]
        if energy:
            cmd += ["--energy-config", energy]
        out = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd="/tmp")
        if out.returncode:
            print(w.name, t, out.stderr.strip()); continue
        r = json.loads(out.stdout)
        n = r["workloads"][0]["normalized"]
        q = json.loads((run / "quality.json").read_text())["tally"]
        rows.append({"workload": w.name, "technique": t, "time": n["time"], "energy": n["energy"],
                     "gpu_energy": n.get("gpu_energy"), "memory_energy": n.get("memory_energy"),
                     "frames": q.get("frames"), "identical": q.get("identical"),
                     "tiles_skipped": q["totals"].get("re_tiles_skipped", 0) / q["tiles"],
                     "memo_collisions": q["scalars"].get("memo_collisions")})
json.dump(rows, sys.stdout, indent=1)
