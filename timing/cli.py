"""``tilesim estimate DIR``: cycles, time, energy and memory traffic from saved counters."""

from __future__ import annotations

import json
from pathlib import Path

from render.counters import load_counters
from tilesim.errors import InputError
from timing.config import load_energy_config, load_gpu_config
from timing.model import FrameEstimate, estimate_frame


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "estimate", help="timing, energy and memory traffic from a render's counters",
        description="Read DIR/counters/*.npz written by `tilesim render` and print, per frame "
                    "and in total, cycles (geometry, raster), time at the configured clock, "
                    "energy (GPU by unit, main memory) and memory traffic by source.")
    p.add_argument("dir", metavar="RENDER_OUT_DIR", help="output folder of `tilesim render`")
    p.add_argument("--config", metavar="FILE",
                   help="GPU parameters (TOML, default timing/baseline_gpu.toml)")
    p.add_argument("--energy-config", metavar="FILE",
                   help="per-event energies and leakage (TOML, default timing/energy_32nm.toml)")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.set_defaults(func=_estimate)


def estimate_dir(directory: str | Path, cfg, ecfg) -> list[FrameEstimate]:
    folder = Path(directory) / "counters"
    files = sorted(folder.glob("*.npz"))
    if not files:
        raise InputError("no counters (*.npz) found; run `tilesim render ... --out DIR` first",
                         source=str(folder))
    out = []
    for path in files:
        try:
            frame = load_counters(path)
        except (OSError, ValueError, KeyError) as exc:
            raise InputError(f"unreadable counters file: {exc}", source=str(path)) from None
        out.append(estimate_frame(frame, cfg, ecfg))
    return out


def _sum_dicts(dicts: list[dict]) -> dict:
    keys = dicts[0].keys() if dicts else []
    return {k: sum(d[k] for d in dicts) for k in keys}


def totals(estimates: list[FrameEstimate]) -> dict:
    d = [e.to_dict() for e in estimates]
    return {
        "frames": len(estimates),
        "cycles": _sum_dicts([x["cycles"] for x in d]),
        "seconds": sum(x["seconds"] for x in d),
        "energy_j": {
            "total": sum(x["energy_j"]["total"] for x in d),
            "gpu": sum(x["energy_j"]["gpu"] for x in d),
            "memory": sum(x["energy_j"]["memory"] for x in d),
            "gpu_dynamic": _sum_dicts([x["energy_j"]["gpu_dynamic"] for x in d]),
            "gpu_static": _sum_dicts([x["energy_j"]["gpu_static"] for x in d]),
            "memory_parts": _sum_dicts([x["energy_j"]["memory_parts"] for x in d]),
        },
        "traffic_bytes": _sum_dicts([x["traffic_bytes"] for x in d]),
    }


def _text(frames: list[dict], total: dict, clock: float) -> str:
    lines = [f"clock {clock / 1e6:g} MHz",
             f"{'frame':>6} {'geom cyc':>10} {'raster cyc':>12} {'time ms':>9} "
             f"{'GPU mJ':>8} {'mem mJ':>8} {'traffic MB':>10}"]
    for x in frames:
        lines.append(f"{x['frame']:>6} {x['cycles']['geometry']:>10.0f} "
                     f"{x['cycles']['raster']:>12.0f} {x['seconds'] * 1e3:>9.3f} "
                     f"{x['energy_j']['gpu'] * 1e3:>8.3f} {x['energy_j']['memory'] * 1e3:>8.3f} "
                     f"{x['traffic_bytes']['total'] / 1e6:>10.3f}")
    e, t = total["energy_j"], total["traffic_bytes"]
    lines.append(f"{'total':>6} {total['cycles']['geometry']:>10.0f} "
                 f"{total['cycles']['raster']:>12.0f} {total['seconds'] * 1e3:>9.3f} "
                 f"{e['gpu'] * 1e3:>8.3f} {e['memory'] * 1e3:>8.3f} {t['total'] / 1e6:>10.3f}")
    lines.append("GPU energy by unit (mJ, dynamic + static):")
    for k, v in e["gpu_dynamic"].items():
        lines.append(f"  {k:<22} {v * 1e3:10.4f}")
    for k, v in e["gpu_static"].items():
        lines.append(f"  {'static ' + k:<22} {v * 1e3:10.4f}")
    lines.append("memory energy (mJ): " + ", ".join(
        f"{k} {v * 1e3:.4f}" for k, v in e["memory_parts"].items()))
    lines.append("memory traffic (bytes): " + ", ".join(f"{k} {v:.0f}" for k, v in t.items()))
    return "\n".join(lines)


def _estimate(args) -> int:
    cfg = load_gpu_config(args.config)
    ecfg = load_energy_config(args.energy_config)
    estimates = estimate_dir(args.dir, cfg, ecfg)
    frames = [e.to_dict() for e in estimates]
    total = totals(estimates)
    if args.json:
        print(json.dumps({"config": cfg.path, "energy_config": ecfg.path, "frames": frames,
                          "total": total}, indent=1))
    else:
        print(_text(frames, total, cfg["tech.clock"]))
    return 0
