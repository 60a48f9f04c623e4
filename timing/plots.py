"""The theses' figures for one workload or a suite (one bar per workload, plus the average).

Every plot takes ``totals`` dicts (``tilesim.timing.report.totals``) of the runs and, optionally, of
their baselines; with baselines, each workload shows the baseline bar (1.0) beside the run's bar,
normalized to the baseline's total. Drawn on matplotlib's Agg canvas without pyplot (no global
state), rendered to PNG bytes and written atomically.

* ``time.png``: execution time split geometry / raster (001 Figs. 4.10, 5.6, 6.10)
* ``energy.png``: energy split GPU / main memory / technique overheads (Figs. 4.11, 5.5, 6.9)
* ``traffic.png``: main-memory traffic by source (Fig. 4.13)
* ``shader.png``: fragment shader instructions and fragments shaded (Fig. 6.12)
* ``units.png``: share of the GPU + memory energy by unit (Fig. 1.5)
* ``tiles-<workload>.png``: heat map of the raster cycles per tile of the screen, averaged over
  the frames (``tilesim.timing.tiles``), the top of the screen at the top
"""

from __future__ import annotations

import io
import re
from pathlib import Path

import numpy as np

from tilesim.atomic import write_bytes
from tilesim.timing.memory_traffic import TRAFFIC_SOURCES

PLOTS = ("time", "energy", "traffic", "shader", "units")
COLORS = ["#1f4e79", "#6fa8dc", "#e69138", "#93c47d", "#cc4125", "#8e7cc3", "#c9a227",
          "#76a5af", "#999999", "#d5a6bd", "#38761d", "#b45f06", "#444444"]
# Font sizes (points at 110 dpi): readable where a report shows a plot at 560-640 px on a
# 1080p screen (8-point ticks were ~10 px there).
TICK_FONT, LEGEND_FONT, TITLE_FONT = 10, 9, 11


def _figure(width_per_bar: float, bars: int):
    from matplotlib.figure import Figure

    fig = Figure(figsize=(max(6.0, 1.2 + width_per_bar * bars), 4.2), layout="constrained")
    return fig, fig.subplots()


def _png(fig) -> bytes:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=110)
    return buffer.getvalue()


def _stacked(ax, names: list[str], runs: list[np.ndarray], bases: list[np.ndarray] | None,
             parts: list[str], ylabel: str, normalize: bool, average: bool = True) -> None:
    """Bars of ``parts`` (rows of each (parts,) vector) per workload (+ their average)."""
    runs = [np.asarray(r, dtype=np.float64) for r in runs]
    if bases is not None:
        bases = [np.asarray(b, dtype=np.float64) for b in bases]
    if normalize and bases is not None:
        scale = [b.sum() if b.sum() > 0 else 1.0 for b in bases]
        runs = [r / s for r, s in zip(runs, scale, strict=True)]
        bases = [b / s for b, s in zip(bases, scale, strict=True)]
    labels = [*names, "average"] if average else list(names)
    if average:
        runs = [*runs, np.mean(runs, axis=0)]
        if bases is not None:
            bases = [*bases, np.mean(bases, axis=0)]
    x = np.arange(len(labels), dtype=np.float64)
    width = 0.38 if bases is not None else 0.7
    groups = [(x, runs, "")] if bases is None else [
        (x - width / 2, bases, "//"), (x + width / 2, runs, "")]
    for pos, data, hatch in groups:
        bottom = np.zeros(len(labels))
        for i, part in enumerate(parts):
            values = np.array([d[i] for d in data])
            ax.bar(pos, values, width, bottom=bottom,
                   color=COLORS[i % len(COLORS)], hatch=hatch, edgecolor="white",
                   linewidth=0.5, label=part if hatch == "" else None)
            bottom += values
    ax.set_xticks(x, labels, rotation=30, ha="right", fontsize=TICK_FONT)
    ax.set_ylabel(ylabel)
    if bases is not None:
        ax.axhline(1.0, color="black", linewidth=0.6, linestyle=":")
        ax.set_title("left (hatched): baseline; right: run", fontsize=TITLE_FONT)
    ax.legend(fontsize=LEGEND_FONT, loc="upper left", bbox_to_anchor=(1.0, 1.0))


def _vectors(totals: list[dict], pick) -> list[np.ndarray]:
    return [np.asarray(pick(t), dtype=np.float64) for t in totals]


def plot_time(names, runs, bases=None, average=True) -> bytes:
    fig, ax = _figure(0.7, len(names) + average)
    pick = lambda t: [t["seconds"] * t["cycles"][k] / max(t["cycles"]["total"], 1e-300)  # noqa: E731
                      * (1 if bases else 1e3) for k in ("geometry", "raster")]
    _stacked(ax, names, _vectors(runs, pick), bases and _vectors(bases, pick),
             ["geometry", "raster"],
             "execution time (normalized)" if bases else "execution time (ms)", bases is not None,
             average)
    return _png(fig)


def _energy_parts(t: dict) -> list[float]:
    e = t["energy_j"]
    tech = e["technique_overhead"]
    return [e["gpu"] - tech["gpu"], e["memory"] - tech["memory"], tech["gpu"] + tech["memory"]]


def plot_energy(names, runs, bases=None, average=True) -> bytes:
    fig, ax = _figure(0.7, len(names) + average)
    scale = 1 if bases else 1e3
    pick = lambda t: [v * scale for v in _energy_parts(t)]  # noqa: E731
    _stacked(ax, names, _vectors(runs, pick), bases and _vectors(bases, pick),
             ["GPU", "main memory", "technique overhead"],
             "energy (normalized)" if bases else "energy (mJ)", bases is not None, average)
    return _png(fig)


def plot_traffic(names, runs, bases=None, average=True) -> bytes:
    fig, ax = _figure(0.7, len(names) + average)
    scale = 1 if bases else 1e-6
    pick = lambda t: [t["traffic_bytes"][s] * scale for s in TRAFFIC_SOURCES]  # noqa: E731
    _stacked(ax, names, _vectors(runs, pick), bases and _vectors(bases, pick),
             list(TRAFFIC_SOURCES),
             "main-memory traffic (normalized)" if bases else "main-memory traffic (MB)",
             bases is not None, average)
    return _png(fig)


def _shader_figures(t: dict) -> list[float]:
    d = t["diagnostics"]
    return [d["fs_instructions_effective"], d["fragments_shaded_effective"],
            t["traffic_bytes"]["textures"]]


def plot_shader(names, runs, bases=None, average=True) -> bytes:
    """Fragment shader instructions, fragments shaded and texture bytes from main memory,
    run / baseline (or per frame: millions, MB)."""
    fig, ax = _figure(0.9, len(names) + average)
    if bases:
        rows = [[a / b if b else np.nan for a, b in zip(_shader_figures(r), _shader_figures(s),
                                                          strict=True)]
                for r, s in zip(runs, bases, strict=True)]
        ylabel = "shader activity (normalized)"
    else:
        rows = [[v / max(r["frames"], 1) / 1e6 for v in _shader_figures(r)] for r in runs]
        ylabel = "per frame (millions; texture MB)"
    if average:
        rows.append(list(np.nanmean(np.array(rows, dtype=np.float64), axis=0)))
    labels = [*names, "average"] if average else list(names)
    x = np.arange(len(labels), dtype=np.float64)
    width = 0.27
    for i, label in enumerate(("fragment shader instructions", "fragments shaded",
                               "texture traffic to main memory")):
        ax.bar(x + (i - 1) * width, [r[i] for r in rows], width, color=COLORS[i], label=label)
    if bases:
        ax.axhline(1.0, color="black", linewidth=0.6, linestyle=":")
    ax.set_xticks(x, labels, rotation=30, ha="right", fontsize=TICK_FONT)
    ax.set_ylabel(ylabel)
    ax.legend(fontsize=LEGEND_FONT, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    return _png(fig)


def unit_groups(t: dict) -> dict[str, float]:
    """GPU + memory energy (J) in the groups of Frame Coherence Fig. 1.5."""
    e = t["energy_j"]
    d, s, m = e["gpu_dynamic"], e["gpu_static"], e["memory_dynamic_by_source"]
    parts = e["memory_parts"]
    return {
        "fragment processors": d["fragment_processors"] + s["fragment_processors"],
        "vertex processor": d["vertex_processor"] + s["vertex_processor"],
        "texture units + caches": d["texture_units"] + d["texture_caches"],
        "tile cache, L2, vertex cache": d["tile_cache"] + d["l2"] + d["vertex_cache"]
        + s["caches"],
        "fixed function": sum(d[k] for k in ("primitive_assembly", "tiler", "rasterizer",
                                             "early_z", "color_buffer", "blend"))
        + s["fixed_function"],
        "technique hardware": e["technique_overhead"]["gpu"],
        "DRAM: textures": m["textures"],
        "DRAM: Parameter Buffer": m["pb_writes"] + m["pb_reads"],
        "DRAM: color/depth flush": m["color_flush"] + m["depth_flush"],
        "DRAM: vertices + indices": m["vertices"] + m["indices"],
        "DRAM: technique tables": m["technique_tables"],
        "DRAM: background + refresh": parts["background"] + parts["refresh"],
    }


def plot_units(names, runs, bases=None, average=True) -> bytes:
    fig, ax = _figure(0.7, len(names) + average)
    groups = [unit_groups(t) for t in runs]
    parts = list(groups[0])
    shares = [np.array(list(g.values())) / max(sum(g.values()), 1e-300) * 100 for g in groups]
    _stacked(ax, names, shares, None, parts, "share of GPU + memory energy (%)", False, average)
    return _png(fig)


def write_plots(directory: str | Path, names: list[str], runs: list[dict],
                bases: list[dict] | None = None, *, average: bool = True,
                plots: tuple[str, ...] = PLOTS) -> list[Path]:
    """Draw ``plots`` (default all) into ``directory``; returns the files written.
    ``average``: add the bar of the mean over ``names`` (off when the bars are not a suite's
    workloads, e.g. one workload's techniques)."""
    out = Path(directory)
    drawers = {"time": plot_time, "energy": plot_energy, "traffic": plot_traffic,
               "shader": plot_shader, "units": plot_units}
    written = []
    for name in plots:
        written.append(write_bytes(out / f"{name}.png",
                                   drawers[name](names, runs, bases, average)))
    return written


def plot_normalized_vs_thesis(techniques: list[str], measured: dict[str, list[float | None]],
                              thesis: dict[str, list[float | None]]) -> bytes:
    """Bars of each figure in ``measured`` (e.g. time, energy: one value per technique,
    normalized to the baseline) with the thesis's value of the same figure as a marker."""
    fig, ax = _figure(0.9, len(techniques))
    x = np.arange(len(techniques), dtype=np.float64)
    width = 0.8 / max(len(measured), 1)
    for i, (label, values) in enumerate(measured.items()):
        pos = x + (i - (len(measured) - 1) / 2) * width
        ax.bar(pos, [np.nan if v is None else v for v in values], width, color=COLORS[i],
               label=f"{label} (tilesim)")
        marks = [np.nan if v is None else v for v in thesis.get(label, [None] * len(x))]
        ax.plot(pos, marks, linestyle="none", marker="D", markersize=7, color="black",
                markerfacecolor=COLORS[i], label=f"{label} (thesis)")
    ax.axhline(1.0, color="black", linewidth=0.6, linestyle=":")
    ax.set_xticks(x, techniques, rotation=30, ha="right", fontsize=TICK_FONT)
    ax.set_ylabel("normalized to the baseline (mean over workloads)")
    ax.set_title("bars: tilesim; diamonds: Frame Coherence's averages",
                 fontsize=TITLE_FONT)
    ax.legend(fontsize=LEGEND_FONT, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    return _png(fig)


def plot_tile_heatmap(name: str, cycles: np.ndarray, vmax: float | None = None) -> bytes:
    """Heat map of ``cycles`` (tiles_y, tiles_x) per tile, row 0 the bottom tile row as the
    counters store it; drawn with image row 0 (the top of the screen) at the top. ``vmax``:
    the top of the color scale (give maps that are compared side by side the same one; by
    default this map's largest value). Tile axes have integer ticks at tile centers."""
    from matplotlib.figure import Figure
    from matplotlib.ticker import FuncFormatter, MaxNLocator

    cycles = np.asarray(cycles, dtype=np.float64)
    ty, tx = cycles.shape
    # about as wide as a report shows it (640 px at 110 dpi), so its fonts stay readable
    fig = Figure(figsize=(6.4, max(3.0, min(7.0, 1.4 + 5.0 * ty / max(tx, 1)))),
                 layout="constrained")
    ax = fig.subplots()
    # extent puts tile i's center at i: the ticks name tiles, not their edges
    image = ax.imshow(np.flipud(cycles), cmap="inferno", interpolation="nearest",
                      origin="upper", extent=(-0.5, tx - 0.5, ty - 0.5, -0.5),
                      vmin=0.0, vmax=vmax)
    for axis in (ax.xaxis, ax.yaxis):
        axis.set_major_locator(MaxNLocator(integer=True, nbins=8))
        axis.set_major_formatter(FuncFormatter(lambda v, _pos: f"{v:.0f}"))
        axis.set_tick_params(labelsize=TICK_FONT)
    ax.set_title(f"{name}: raster cycles per tile (mean over frames)", fontsize=TITLE_FONT)
    ax.set_xlabel("tile column (left to right)", fontsize=TICK_FONT)
    ax.set_ylabel("tile row (top to bottom)", fontsize=TICK_FONT)
    bar = fig.colorbar(image, ax=ax)
    bar.set_label("cycles per frame", fontsize=TICK_FONT)
    bar.ax.tick_params(labelsize=TICK_FONT)
    return _png(fig)


def heatmap_file(name: str) -> str:
    """The heat map's file name of a workload: ``tiles-<name>.png``, characters outside
    ``[A-Za-z0-9._-]`` (a suite's ``parent/name``) replaced by ``_``."""
    return f"tiles-{re.sub(r'[^A-Za-z0-9._-]', '_', name)}.png"


def write_tile_heatmaps(directory: str | Path, names: list[str],
                        maps: list[np.ndarray | None]) -> list[Path]:
    """One heat map per workload that has screen tiles (``maps``: (tiles_y, tiles_x) mean
    cycles or None); returns the files written."""
    out = Path(directory)
    return [write_bytes(out / heatmap_file(name), plot_tile_heatmap(name, cycles))
            for name, cycles in zip(names, maps, strict=True) if cycles is not None]
