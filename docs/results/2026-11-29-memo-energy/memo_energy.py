"""Where memoization's energy goes: per workload of a study folder, memo against its baseline
by `tilesim estimate MEMO --baseline BASE --json`, each term as a share of the baseline's energy.

    PYTHONPATH=FROZEN_SITE python memo_energy.py STUDY [--set SECTION.KEY=VALUE ...] > out.json

Columns: hit rate (all, even, odd frames); baseline shares (main memory, fragment work =
fragment processors + texture caches + texture units + L2, fragment processors alone, color
flush DRAM, texture DRAM, DRAM background + refresh); the savings (fragment work, DRAM
background + refresh, texture DRAM) and the LUT's cost (dynamic + leakage); pJ per lookup;
and two bounds: the ratio without the LUT, and with Parallel Frame Rendering's texture sharing
(Frame Coherence §1.3.1: one texture fetch serves both frames of a pair), not modelled by
tilesim, taken as removing `share` (1.0 and 0.86) of the odd frames' texture DRAM energy.
"""

import json
import subprocess
import sys
from pathlib import Path

FRAGMENT = ("fragment_processors", "texture_caches", "texture_units", "l2")


def rows(study: Path, sets: list[str]) -> list[dict]:
    out = []
    for workload in sorted((study / "runs").iterdir()):
        memo, base = workload / "memo", workload / "baseline"
        if not (memo / "counters").is_dir():
            continue
        cmd = [sys.executable, "-m", "tilesim.cli", "estimate", str(memo), "--baseline",
               str(base), "--json", "--no-screen"]
        for s in sets:
            cmd += ["--set", s]
        d = json.loads(subprocess.run(cmd, capture_output=True, text=True, check=True).stdout)
        w = d["workloads"][0]
        m, b = w["total"], w["baseline"]["total"]
        e0, e1 = b["energy_j"]["total"], m["energy_j"]["total"]
        g0, g1 = b["energy_j"]["gpu_dynamic"], m["energy_j"]["gpu_dynamic"]
        p0, p1 = b["energy_j"]["memory_parts"], m["energy_j"]["memory_parts"]
        q0, q1 = (b["energy_j"]["memory_dynamic_by_source"],
                  m["energy_j"]["memory_dynamic_by_source"])
        hits = lambda fs: (sum(f["diagnostics"]["memo_hits"] for f in fs)  # noqa: E731
                           / sum(f["diagnostics"]["fragments_shaded"] for f in fs))
        even = [f for f in d["frames"] if f["frame"] % 2 == 0]
        odd = [f for f in d["frames"] if f["frame"] % 2]
        frag0, frag1 = sum(g0[k] for k in FRAGMENT), sum(g1[k] for k in FRAGMENT)
        lut = g1["memo_lut"] + m["energy_j"]["gpu_static"]["memo_structures"]
        bg0, bg1 = p0["background"] + p0["refresh"], p1["background"] + p1["refresh"]
        odd_tex = sum(f["energy_j"]["memory_dynamic_by_source"]["textures"] for f in odd)
        lookups = m["diagnostics"]["memo_lookups"]
        out.append({
            "workload": workload.name, "time": w["normalized"]["time"], "energy": e1 / e0,
            "gpu_energy": w["normalized"]["gpu_energy"],
            "memory_energy": w["normalized"]["memory_energy"],
            "hit": m["diagnostics"]["memo_hits"] / lookups, "hit_even": hits(even),
            "hit_odd": hits(odd),
            "base_memory": b["energy_j"]["memory"] / e0, "base_fragment": frag0 / e0,
            "base_fragment_processors": g0["fragment_processors"] / e0,
            "base_flush_dram": q0["color_flush"] / e0, "base_texture_dram": q0["textures"] / e0,
            "base_background": bg0 / e0,
            "texture_share_of_dram_bytes": b["traffic_bytes"]["textures"]
            / b["traffic_bytes"]["total"],
            "saved_fragment": (frag0 - frag1) / e0, "saved_background": (bg0 - bg1) / e0,
            "saved_texture_dram": (q0["textures"] - q1["textures"]) / e0, "lut": lut / e0,
            "lut_pj_per_lookup": g1["memo_lut"] / lookups * 1e12,
            "fragment_pj_per_fragment": frag0 / lookups * 1e12,
            "without_lut": (e1 - lut) / e0,
            "pfr_1.0": (e1 - odd_tex) / e0, "pfr_0.86": (e1 - 0.86 * odd_tex) / e0,
        })
    return out


def main() -> None:
    args = sys.argv[1:]
    study = Path(args[0])
    sets = [args[i + 1] for i, a in enumerate(args) if a == "--set"]
    table = rows(study, sets)
    mean = {k: sum(r[k] for r in table) / len(table) for k in table[0] if k != "workload"}
    json.dump({"set": sets, "rows": table, "mean": mean}, sys.stdout, indent=1)


if __name__ == "__main__":
    main()
