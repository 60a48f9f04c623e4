"""Workloads (render output folders), their estimates, totals, and normalization to a baseline.

A workload is a folder ``tilesim render`` wrote: ``counters/NNNNNN.npz`` and, for the OLED model,
``frames/NNNNNN.png`` (same stem). A folder without ``counters/`` whose sub-folders have one is a
suite (``tilesim render`` with several traces writes ``DIR/<trace name>/``).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from tilesim.errors import InputError
from tilesim.inputs import shown_name
from tilesim.render_folder import COUNTERS_DIR, FRAMES_DIR, RenderFolder, open_render_folder
from tilesim.timing import techniques
from tilesim.timing.config import Config
from tilesim.timing.counter_batch import load_batch
from tilesim.timing.memory_traffic import TRAFFIC_SOURCES
from tilesim.timing.model import (
    BatchEstimate,
    FrameEstimate,
    bound_line,
    bound_report,
    estimate_batch,
)
from tilesim.timing.screen import png_histograms

# Metrics compared with the baseline (normalized = run / baseline).
NORMALIZED_METRICS = ("time", "geometry_cycles", "raster_cycles", "energy", "gpu_energy",
                      "memory_energy", "screen_energy", "traffic", "fs_instructions",
                      "fragments_shaded")


@dataclass
class RenderEstimate:
    """The model's estimate of one render folder's frames (a workload's run)."""

    name: str
    directory: Path
    estimate: BatchEstimate
    # the folder's identity and the frames counted, checked (tilesim.render_folder)
    render: RenderFolder | None = None

    @property
    def frames(self) -> list[FrameEstimate]:
        return self.estimate.frames()


def find_renders(paths: list[str | Path]) -> list[tuple[str, Path]]:
    """(name, folder) of every render folder (one with counters/) among or under the given
    folders, in order."""
    found: list[tuple[str, Path]] = []
    for raw in paths:
        path = Path(raw)
        if (path / COUNTERS_DIR).is_dir():
            found.append((path.resolve().name, path))
            continue
        subs = sorted(d for d in path.iterdir() if (d / COUNTERS_DIR).is_dir()) \
            if path.is_dir() else []
        if not subs:
            raise InputError("no counters/ here or in its sub-folders; run `tilesim render ... "
                             "--out DIR` first", source=str(path))
        found.extend((d.name, d) for d in subs)
    names = [n for n, _ in found]
    if len(set(names)) != len(names):  # same leaf names: qualify with the parent folder
        found = [(f"{d.resolve().parent.name}/{n}", d) for n, d in found]
    # names are text in reports and plots (a folder name that is not UTF-8 is no text)
    return [(shown_name(n), d) for n, d in found]


def estimate_render(name: str, directory: Path, cfg: Config, ecfg: Config,
                      screen: bool = True, frames: range | None = None,
                      check_writer: bool = True) -> RenderEstimate:
    """The model's estimate of a render folder's frames (``frames``, else every finished
    one), each file checked against the folder's manifest first
    (:func:`tilesim.render_folder.open_render_folder`; ``check_writer``: refuse a folder
    another process is writing)."""
    folder = open_render_folder(directory, frames, check_writer=check_writer)
    files = folder.counters()
    try:
        batch = load_batch(files)
    except ValueError as exc:
        raise InputError(str(exc), source=str(directory / COUNTERS_DIR)) from None
    histograms = None
    if screen:
        pngs = [p if p.is_file() else None for p in folder.pngs()]
        if any(p is not None for p in pngs):
            try:
                histograms = png_histograms(pngs)
            except OSError as exc:
                raise InputError(f"unreadable frame image: {exc}",
                                 source=str(directory / FRAMES_DIR)) from None
    return RenderEstimate(name, directory, estimate_batch(batch, cfg, ecfg, histograms), folder)


def _sum(d: dict[str, np.ndarray]) -> dict[str, float]:
    return {k: float(np.sum(v)) for k, v in d.items()}


def totals(est: BatchEstimate) -> dict:
    """Sums over the frames of a workload, in the per-frame schema of ``FrameEstimate``."""
    gpu_dyn, gpu_static = _sum(est.gpu_dynamic), _sum(est.gpu_static)
    memory, by_source, traffic = _sum(est.memory), _sum(est.memory_by_source), _sum(est.traffic)
    gpu = sum(gpu_dyn.values()) + sum(gpu_static.values())
    mem = sum(memory.values())
    screen = None if np.isnan(est.screen).any() else float(est.screen.sum())
    tech_gpu = (sum(gpu_dyn[u] for u in techniques.TECHNIQUE_UNITS)
                + sum(gpu_static[u] for u in techniques.TECHNIQUE_STATIC_UNITS))
    diag = _sum({k: v for k, v in est.diagnostics.items()
                 if k not in ("pb_tiles_per_primitive", "dsr_average_sample_rate")})
    rasterized = est.batch.scalars["prims_rasterized"].sum()
    diag["pb_tiles_per_primitive"] = (float(est.batch.tiles["prims_binned"].sum() / rasterized)
                                      if rasterized else 0.0)
    counted = sum(diag[f"dsr_tiles_rate{r}"] for r in range(5))
    diag["dsr_average_sample_rate"] = (sum(diag[f"dsr_tiles_rate{r}"] * 4.0 ** -r
                                           for r in range(5)) / counted if counted else None)
    present = [k for k in techniques.TECHNIQUES if est.batch.present[k].any()]
    geometry, raster = float(est.geometry_cycles.sum()), float(est.raster_cycles.sum())
    return {
        "frames": est.batch.frames,
        "cycles": {"geometry": geometry, "raster": raster, "total": geometry + raster,
                   "technique_overhead": float(est.technique_cycles.sum())},
        "seconds": float(est.seconds.sum()),
        "techniques": present,
        "geometry_stage_cycles": _sum(est.geometry_stages),
        "raster_stage_cycles_summed_over_tiles": _sum(est.raster_stages),
        "energy_j": {"total": gpu + mem, "gpu": gpu, "memory": mem, "screen": screen,
                     "system": None if screen is None else gpu + mem + screen,
                     "technique_overhead": {"gpu": tech_gpu,
                                            "memory": by_source["technique_tables"]},
                     "gpu_dynamic": gpu_dyn, "gpu_static": gpu_static, "memory_parts": memory,
                     "memory_dynamic_by_source": by_source},
        "traffic_bytes": {**traffic, "total": sum(traffic.values())},
        **bound_report(_sum(est.bound_cycles)),
        "diagnostics": diag,
    }


def metrics(total: dict) -> dict[str, float | None]:
    """The figures compared with the baseline, from a ``totals`` dict."""
    e = total["energy_j"]
    d = total["diagnostics"]
    return {
        "time": total["seconds"], "geometry_cycles": total["cycles"]["geometry"],
        "raster_cycles": total["cycles"]["raster"], "energy": e["total"], "gpu_energy": e["gpu"],
        "memory_energy": e["memory"], "screen_energy": e["screen"],
        "traffic": total["traffic_bytes"]["total"],
        "fs_instructions": d["fs_instructions_effective"],
        "fragments_shaded": d["fragments_shaded_effective"],
    }


def normalize(run: dict, base: dict) -> dict[str, float | None]:
    """run / baseline for every metric (None where either is missing or the baseline is 0)."""
    a, b = metrics(run), metrics(base)
    return {k: (a[k] / b[k] if a[k] is not None and b[k] else None) for k in NORMALIZED_METRICS}


def average(rows: list[dict[str, float | None]]) -> dict[str, float | None]:
    """Arithmetic mean over workloads per key (the theses' 'average' bar), skipping None."""
    out = {}
    for k in rows[0] if rows else ():
        vals = [r[k] for r in rows if r[k] is not None]
        out[k] = float(np.mean(vals)) if vals else None
    return out


def match_baselines(runs: list[tuple[str, Path]],
                    bases: list[tuple[str, Path]]) -> list[tuple[str, Path]]:
    """The baseline of each run: by workload name, else by position when the counts match."""
    by_name = dict(bases)
    if all(name in by_name for name, _ in runs):
        return [(name, by_name[name]) for name, _ in runs]
    if len(bases) == len(runs):
        return bases
    raise InputError(f"--baseline: {len(bases)} baseline workload(s) "
                     f"({', '.join(n for n, _ in bases)}) match neither the names nor the number "
                     f"of the {len(runs)} estimated ({', '.join(n for n, _ in runs)})")


def _fmt(value, scale=1.0, spec=".3f") -> str:
    return "n/a" if value is None else format(value * scale, spec)


def text_report(workload: str, frames: list[dict], total: dict, clock: float) -> str:
    lines = [f"== {workload} (clock {clock / 1e6:g} MHz)",
             f"{'frame':>6} {'geom cyc':>10} {'raster cyc':>12} {'time ms':>9} "
             f"{'GPU mJ':>8} {'mem mJ':>8} {'screen mJ':>9} {'traffic MB':>10}"]
    rows = [*frames, {**total, "frame": "total"}]
    for x in rows:
        e = x["energy_j"]
        lines.append(f"{x['frame']:>6} {x['cycles']['geometry']:>10.0f} "
                     f"{x['cycles']['raster']:>12.0f} {x['seconds'] * 1e3:>9.3f} "
                     f"{e['gpu'] * 1e3:>8.3f} {e['memory'] * 1e3:>8.3f} "
                     f"{_fmt(e['screen'], 1e3):>9} {x['traffic_bytes']['total'] / 1e6:>10.3f}")
    e, t = total["energy_j"], total["traffic_bytes"]
    if "bound_shares" in total:
        fragment = total["regime"]["fragment_bound"]
        lines.append(f"{bound_line(total['bound_shares'])} "
                     f"({'' if fragment else 'not '}fragment-bound like the thesis's games)")
    if total["techniques"]:
        lines.append(f"techniques: {', '.join(total['techniques'])}; overhead "
                     f"{total['cycles']['technique_overhead']:.0f} cycles, "
                     f"{e['technique_overhead']['gpu'] * 1e3:.4f} mJ GPU + "
                     f"{e['technique_overhead']['memory'] * 1e3:.4f} mJ memory")
    lines.append("GPU energy by unit (mJ, dynamic; then static):")
    for k, v in e["gpu_dynamic"].items():
        if v or k not in techniques.TECHNIQUE_UNITS:
            lines.append(f"  {k:<30} {v * 1e3:10.4f}")
    for k, v in e["gpu_static"].items():
        if v or k not in techniques.TECHNIQUE_STATIC_UNITS:
            lines.append(f"  {'static ' + k:<30} {v * 1e3:10.4f}")
    lines.append("memory energy (mJ): " + ", ".join(
        f"{k} {v * 1e3:.4f}" for k, v in e["memory_parts"].items()))
    lines.append("memory traffic (bytes): " + ", ".join(
        f"{k} {t[k]:.0f}" for k in (*TRAFFIC_SOURCES, "total")))
    return "\n".join(lines)


def normalized_table(rows: list[tuple[str, dict]], avg: dict) -> str:
    keys = ("time", "energy", "gpu_energy", "memory_energy", "traffic", "fs_instructions",
            "screen_energy")
    lines = ["normalized to the baseline (run / baseline):",
             f"{'workload':<28}" + "".join(f"{k:>16}" for k in keys)]
    for name, norm in [*rows, ("average", avg)]:
        lines.append(f"{name:<28}" + "".join(f"{_fmt(norm[k]):>16}" for k in keys))
    return "\n".join(lines)
