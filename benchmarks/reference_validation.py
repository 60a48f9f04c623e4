"""Out-of-sample validation of the analytic model against the cycle-level reference (issue 30).

The analytic model has three constants fitted to the cycle-level reference
(``baseline_gpu.toml``: ``buffers.color.flush_hidden_quads``, ``buffers.color.flush_read_share``,
``techniques.signature.otq_stall_share``). This script fits them on one part of the workloads
(``--fit``) and reports, on the others (``--hold``), what a user reads: per workload and technique
(TE, RE, RE+EVR, EVR, DSR, memoization) the technique-vs-baseline ratio of frame time and of
energy, analytic and reference, and the analytic ratio's error.

* The reference (``tilesim.timing.cycle_level``) has its own caches and DRAM and reads none of the
  fitted constants, so it runs once per workload and technique; the fit re-runs only the
  analytic model (``estimate_batch``) over a grid of the three constants, minimizing the mean
  absolute relative error of the frames' total cycles (geometry + raster) over the fit part's
  workloads and techniques.
* Reference energy of a frame: the GPU's per-event energy (the counters x the energy table: the
  same events both ways, the analytic model's ``gpu_dynamic``), the GPU's static power over the
  reference's frame time (``gpu_static`` scaled by reference / analytic time) and the
  reference's own DRAM energy (its commands and states, ``dram.energy``). Its time: the geometry
  and raster reference cycles.
* Ratios are sums over the frames: technique / baseline. Error = analytic ratio - reference
  ratio.
* Memoization: the quad stream does not mark memoization hits, so the reference shades every
  quad; its memo rows measure that gap, not the analytic model (the analytic model removes the
  hits' shader work). The reference leaves EVR's and DSR's raster structures out likewise
  (``timing/cycle_level/raster.py``).

Timings and errors are a measurement, never a test. Usage::

    python benchmarks/reference_validation.py [--frames 1:3] [--size 1196x768]
        [--fit runner-1196x768,sidescroller-1196x768]
        [--hold bunny,match3-1196x768,render_to_texture-1196x768] [--json F]

The held-out errors are reported with both the shipped and the fitted constants; the shipped
file is never changed by the script.
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

TECHNIQUES = ["baseline", "te", "re", "re+evr", "evr", "dsr", "memo"]
GRID = {
    "buffers.color.flush_hidden_quads": [0, 16, 32, 48, 64, 96, 112, 160, 256],
    "buffers.color.flush_read_share": [0.0, 0.25, 0.5, 0.75, 1.0],
    "techniques.signature.otq_stall_share": [0.0, 0.1, 0.2, 0.4, 0.7, 1.0],
}


def measure(trace: Path, technique: str, frames: range, size, cfg, ecfg) -> dict:
    """Render ``frames`` of ``trace`` with ``technique`` and run the reference on them."""
    from tilesim.studies.quad_stream import record_frames
    from tilesim.timing.cycle_level.agreement import compare, compare_geometry, energy_comparison

    traversal = "zorder" if cfg["screen.zorder_traversal"] else "scanline"
    recorded = record_frames(trace, frames, technique=technique, size=size,
                             traversal=traversal)
    raster = compare([(r.counters, r.streams) for r in recorded], cfg, ecfg)
    geometry = compare_geometry([(r.counters, r.draws) for r in recorded], cfg, ecfg)
    energy = energy_comparison(raster, geometry, cfg, ecfg)
    return {"counters": [r.counters for r in recorded],
            "reference_cycles": raster.reference_frame + geometry.reference,
            "reference_dram": np.array([f["reference_dram_energy"] for f in energy["frames"]])}


def analytic(counters, cfg, ecfg) -> dict:
    """The analytic model's frame cycles and energy parts: (F,) arrays."""
    from tilesim.timing.counter_batch import batch_from_frames
    from tilesim.timing.model import estimate_batch

    est = estimate_batch(batch_from_frames(counters), cfg, ecfg)
    total = lambda d: np.sum([np.asarray(v, dtype=np.float64) for v in d.values()],  # noqa: E731
                             axis=0)
    return {"cycles": est.raster_cycles + est.geometry_cycles,
            "gpu_dynamic": total(est.gpu_dynamic), "gpu_static": total(est.gpu_static),
            "memory": total(est.memory)}


def reference_energy(m: dict, shipped: dict) -> np.ndarray:
    """The reference's frame energy (module notes): per-event GPU energy, static power over the
    reference's time, its own DRAM energy."""
    scale = np.divide(m["reference_cycles"], shipped["cycles"],
                      out=np.ones_like(shipped["cycles"]), where=shipped["cycles"] > 0)
    return shipped["gpu_dynamic"] + shipped["gpu_static"] * scale + m["reference_dram"]


def fit(measured: dict, workloads: list[str], cfg, ecfg) -> tuple[dict, float]:
    """The grid point with the least mean absolute relative error of the frames' cycles over
    ``workloads`` x techniques: (constants, error)."""
    best, best_error = None, np.inf
    keys = list(GRID)
    for values in itertools.product(*GRID.values()):
        constants = dict(zip(keys, values, strict=True))
        trial = cfg.replace(**constants)
        errors = []
        for w in workloads:
            for t in TECHNIQUES:
                m = measured[(w, t)]
                a = analytic(m["counters"], trial, ecfg)["cycles"]
                errors.append(np.abs(a - m["reference_cycles"]) / m["reference_cycles"])
        error = float(np.mean(np.concatenate(errors)))
        if error < best_error:
            best, best_error = constants, error
    return best, best_error


def ratios(measured: dict, workload: str, cfg, ecfg) -> list[dict]:
    """Per technique: time and energy ratios to the baseline, analytic and reference."""
    rows = []
    shipped = {t: analytic(measured[(workload, t)]["counters"], cfg, ecfg) for t in TECHNIQUES}
    time_a = {t: shipped[t]["cycles"].sum() for t in TECHNIQUES}
    time_r = {t: measured[(workload, t)]["reference_cycles"].sum() for t in TECHNIQUES}
    energy_a = {t: (shipped[t]["gpu_dynamic"] + shipped[t]["gpu_static"]
                    + shipped[t]["memory"]).sum() for t in TECHNIQUES}
    energy_r = {t: reference_energy(measured[(workload, t)], shipped[t]).sum()
                for t in TECHNIQUES}
    for t in TECHNIQUES[1:]:
        ta, tr = time_a[t] / time_a["baseline"], time_r[t] / time_r["baseline"]
        ea, er = energy_a[t] / energy_a["baseline"], energy_r[t] / energy_r["baseline"]
        rows.append({"workload": workload, "technique": t,
                     "time_analytic": ta, "time_reference": tr, "time_error": ta - tr,
                     "energy_analytic": ea, "energy_reference": er, "energy_error": ea - er,
                     "frame_cycles_error": float(np.mean(
                         (shipped[t]["cycles"] - measured[(workload, t)]["reference_cycles"])
                         / measured[(workload, t)]["reference_cycles"]))})
    return rows


def summary(rows: list[dict]) -> dict:
    out = {}
    for key in ("time_error", "energy_error"):
        a = np.abs([r[key] for r in rows])
        out[key] = {"mean_abs": float(a.mean()), "max_abs": float(a.max())} if a.size else {}
    return out


def table(rows: list[dict], title: str) -> str:
    lines = [title, f"{'workload':<28} {'tech':<7} {'time A':>7} {'time R':>7} {'err':>7} "
                    f"{'energy A':>8} {'energy R':>8} {'err':>7} {'cycles err':>10}"]
    for r in rows:
        lines.append(f"{r['workload']:<28} {r['technique']:<7} {r['time_analytic']:>7.3f} "
                     f"{r['time_reference']:>7.3f} {r['time_error']:>+7.3f} "
                     f"{r['energy_analytic']:>8.3f} {r['energy_reference']:>8.3f} "
                     f"{r['energy_error']:>+7.3f} {100 * r['frame_cycles_error']:>+9.1f}%")
    s = summary(rows)
    if s["time_error"]:
        lines.append(f"time ratio error: mean abs {s['time_error']['mean_abs']:.3f}, max abs "
                     f"{s['time_error']['max_abs']:.3f}; energy ratio error: mean abs "
                     f"{s['energy_error']['mean_abs']:.3f}, max abs "
                     f"{s['energy_error']['max_abs']:.3f}")
    return "\n".join(lines)


def main(argv=None) -> int:
    from tilesim.options import window_size
    from tilesim.timing.config import load_energy_config, load_gpu_config

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--frames", default="1:3")
    p.add_argument("--size", default=None, help="WxH (default: each trace's own)")
    p.add_argument("--fit", default="runner-1196x768,sidescroller-1196x768")
    p.add_argument("--hold", default="bunny,match3-1196x768,render_to_texture-1196x768")
    p.add_argument("--json", metavar="FILE")
    args = p.parse_args(argv)
    a, b = (int(v) for v in args.frames.split(":"))
    frames = range(a, b)
    size = window_size(args.size) if args.size else None
    cfg, ecfg = load_gpu_config(), load_energy_config()
    fit_set = [w for w in args.fit.split(",") if w]
    hold_set = [w for w in args.hold.split(",") if w]
    measured = {}
    clock = time.perf_counter()
    for w in fit_set + hold_set:
        for t in TECHNIQUES:
            start = time.perf_counter()
            measured[(w, t)] = measure(ROOT / "traces" / f"{w}.tsim", t, frames, size, cfg,
                                       ecfg)
            print(f"measured {w} {t} in {time.perf_counter() - start:.1f} s", file=sys.stderr)
    measure_seconds = time.perf_counter() - clock
    shipped = {k: float(cfg[k]) for k in GRID}
    constants, fit_error = fit(measured, fit_set, cfg, ecfg)
    shipped_rows = [r for w in hold_set for r in ratios(measured, w, cfg, ecfg)]
    fitted_cfg = cfg.replace(**constants)
    fitted_rows = [r for w in hold_set for r in ratios(measured, w, fitted_cfg, ecfg)]
    in_sample = [r for w in fit_set for r in ratios(measured, w, fitted_cfg, ecfg)]
    report = {"frames": [a, b], "fit_workloads": fit_set, "held_out": hold_set,
              "shipped_constants": shipped, "fitted_constants": constants,
              "fit_cycles_mean_abs_error": fit_error,
              "held_out_shipped": shipped_rows, "held_out_fitted": fitted_rows,
              "in_sample_fitted": in_sample,
              "summary": {"held_out_shipped": summary(shipped_rows),
                          "held_out_fitted": summary(fitted_rows),
                          "in_sample_fitted": summary(in_sample)},
              "measure_seconds": measure_seconds}
    print(f"fitted on {', '.join(fit_set)} (frames {a}:{b}): {constants} "
          f"(mean abs cycle error {100 * fit_error:.1f}%); shipped {shipped}")
    print(table(shipped_rows, "held out, shipped constants"))
    print(table(fitted_rows, "held out, fitted constants"))
    print(table(in_sample, "in sample (the fit's workloads), fitted constants"))
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
