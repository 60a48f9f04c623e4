"""How an estimate moves when each uncertain parameter moves across its documented range.

Entries of the GPU and energy configuration files may carry ``range = [low, high]`` (leakage
of a low-power process at 300 K up to a high-performance one, DRAM energy spread, the DRAM
row-buffer policy, rows' accesses per activation and texture row hits, the Signature Unit's
Accumulate accounting and Overlapped Tiles Queue stall, the flush-overlap, DSR DCT-order and
shader-core switches; each range's source is in the entry's ``source``).
:func:`sensitivity` re-runs the model over the same counters with one parameter at a time at
each end of its range, the others at their values, and reports the workload's total time and
energy relative to the estimate at the configured values (one-at-a-time sensitivity, as a
tornado chart shows it).
"""

from __future__ import annotations

import numpy as np

from tilesim.timing.config import Config
from tilesim.timing.counter_batch import Batch
from tilesim.timing.model import estimate_batch


def _figures(batch: Batch, cfg: Config, ecfg: Config, histograms) -> tuple[float, float]:
    est = estimate_batch(batch, cfg, ecfg, histograms)
    energy = sum(float(np.sum(v)) for part in (est.gpu_dynamic, est.gpu_static, est.memory)
                 for v in part.values())
    return float(est.seconds.sum()), energy


def sensitivity(batch: Batch, cfg: Config, ecfg: Config, histograms=None) -> dict:
    """{"seconds", "energy_j" at the configured values, "parameters": [{file, parameter,
    value, low, high, seconds_low, seconds_high, energy_low, energy_high (relative changes,
    -0.1 = 10% less)}] sorted by the widest swing of either figure}; energy is GPU + memory
    (the screen does not depend on these parameters)."""
    seconds, energy = _figures(batch, cfg, ecfg, histograms)
    rows = []
    for which, conf in (("gpu", cfg), ("energy", ecfg)):
        for name, (low, high) in conf.ranges.items():
            row = {"file": which, "parameter": name, "value": conf[name], "low": low,
                   "high": high, "unit": conf.units[name]}
            for end, value in (("low", low), ("high", high)):
                moved = conf.replace(**{name: value})
                s, e = _figures(batch, moved if which == "gpu" else cfg,
                                moved if which == "energy" else ecfg, histograms)
                row[f"seconds_{end}"] = s / seconds - 1.0 if seconds else 0.0
                row[f"energy_{end}"] = e / energy - 1.0 if energy else 0.0
            rows.append(row)
    rows.sort(key=lambda r: -max(abs(r["seconds_low"] - r["seconds_high"]),
                                 abs(r["energy_low"] - r["energy_high"])))
    return {"seconds": seconds, "energy_j": energy, "parameters": rows}


def sensitivity_table(name: str, result: dict) -> str:
    """The text report: one line per parameter, the relative change at each end."""
    lines = [f"{name}: sensitivity of {result['seconds'] * 1e3:.3f} ms and "
             f"{result['energy_j'] * 1e3:.3f} mJ (GPU + memory) to each parameter's range",
             f"{'parameter':42s} {'low':>9s} {'high':>9s}  {'time low/high':>17s}  "
             f"{'energy low/high':>17s}"]
    for r in result["parameters"]:
        lines.append(f"{r['parameter']:42s} {r['low']:9.4g} {r['high']:9.4g}  "
                     f"{100 * r['seconds_low']:+7.2f}% {100 * r['seconds_high']:+7.2f}%  "
                     f"{100 * r['energy_low']:+7.2f}% {100 * r['energy_high']:+7.2f}%")
    return "\n".join(lines)
