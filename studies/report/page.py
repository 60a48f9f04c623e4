"""The report of a study: ``OUT/index.html``, one page readable offline.

Everything the page shows lies in OUT (images under ``OUT/img``, full-size frames under
``OUT/runs``); no script, font or style sheet comes from the network. Per workload: the
characterization (Frame Coherence Tables 3.3, 3.4), the last studied frame side by side for
the baseline and every technique with a difference heat map and its MSSIM, the per-tile
overlays (RE's skipped tiles, TE's unflushed tiles, DSR's sampling rates, EVR's farthest
visible point), the per-frame MSSIM, and the seeds-style figures of normalized time, energy,
memory traffic and shader activity. Before them: the modelled GPU (the configuration the
study ran with), a glossary, the suite as workloads x techniques (ratios to the baseline with
ms and mJ per frame beside them), the averages beside the thesis's with the regime note; after
them the sections ``tilesim run --all`` adds. The page is templates/report.html.j2 (Jinja2,
autoescaped), filled from results.json's contents.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

from tilesim.atomic import write_bytes, write_text
from tilesim.images import png_bytes, read_png
from tilesim.studies.characterize import EXTRA, GEOMETRY, RASTER
from tilesim.studies.study_results import PER_FRAME_UNITS, per_frame
from tilesim.studies.thesis_comparison import REGIME_NOTE

TEMPLATES = Path(__file__).with_name("templates")   # package data (pyproject)

THUMBNAIL_WIDTH = 480
DIFF_GAIN = 8          # the heat map shows 8x the largest channel difference (32/255 saturates)
OVERLAY_TITLES = {
    "re_skipped": "RE: tiles skipped (magenta)",
    "te_not_flushed": "TE: tiles not flushed (cyan)",
    "dsr_rate": "DSR: sampling rate (blue 1/4x, green 1/16x, yellow 1/64x, red 1/256x)",
    "evr_fvp": "EVR: farthest visible point (gray: depth, near dark; orange: layer)",
}
STYLE = """
body { font: 16px/1.5 system-ui, sans-serif; margin: 0 auto; max-width: 1500px;
       padding: 0 1.5em 3em; color: #222; }
h1 { margin-top: 1em; } h2 { border-bottom: 2px solid #1f4e79; padding-bottom: .2em;
     margin-top: 2em; } h3 { margin-top: 1.4em; }
code { overflow-wrap: anywhere; }
.scroll { max-width: 100%; overflow-x: auto; }
table { border-collapse: collapse; margin: .6em 0; font-size: 15px; }
th, td { border: 1px solid #ccc; padding: 3px 8px; text-align: right; }
th { background: #eef3f8; } td.name, th.name { text-align: left; }
td small { color: #555; display: block; font-size: 13px; white-space: nowrap; }
#averages td:last-child { min-width: 22em; }
tr.fail td { background: #fde2e1; } tr.average td { font-weight: bold; background: #f6f6f6; }
.gallery { display: flex; flex-wrap: wrap; gap: 12px; }
figure { margin: 0; max-width: 100%; } figcaption { font-size: 14px; color: #444;
  max-width: 320px; }
img { border: 1px solid #ddd; max-width: 100%; height: auto; }
.gallery img.frame { width: 320px; } .gallery img.plot { width: 640px; }
figure.plot figcaption { max-width: 640px; }
.identical-line { background: #eef6ee; border-left: 4px solid #1a7f37; padding: .4em .8em; }
.identical-line strong { color: #1a7f37; }
.ok { color: #1a7f37; font-weight: bold; } .bad { color: #b42318; font-weight: bold; }
nav ol { padding-left: 1.4em; } nav ol.inline { padding-left: 0; display: inline; }
nav ol.inline li { display: inline; margin-right: .8em; }
.note { color: #555; font-size: 15px; }
.regime-note { background: #fff8e5; border-left: 4px solid #c9a227; padding: .5em .8em; }
dl.glossary { display: grid; grid-template-columns: max-content 1fr; gap: .3em 1em; }
dl.glossary dt { font-weight: bold; font-family: monospace; } dl.glossary dd { margin: 0; }
#gpu-summary td, #gpu-summary th, #averages td:last-child { text-align: left; }
details summary { cursor: pointer; font-weight: bold; margin: 1em 0 .4em; }
"""
# What each name in the report means: the techniques (Frame Coherence's chapters, the variants
# of render/techniques/bus.py) and the figures.
GLOSSARY = {
    "baseline": "the GPU without any frame-coherence technique; every ratio divides by it",
    "te": "Transaction Elimination: a tile whose color signature (CRC32) equals last frame's "
          "is not written to memory (its flush is skipped); the tile is still rendered "
          "(Frame Coherence §4.3.1). Lossless.",
    "re": "Rendering Elimination: a tile whose inputs (the signature of its primitives, "
          "uniforms and draw state) equal last frame's is not rendered at all; the frame "
          "buffer keeps last frame's colors (Frame Coherence ch. 4). Lossless.",
    "re/xor": "RE signing with XOR instead of CRC32, the thesis's ablation (§4.3): its "
              "collisions would show as false positives (frames not identical).",
    "re/uniforms": "RE whose constants block signs only the uniform values (§4.1.5).",
    "evr": "Early Visibility Resolution: visibility of a tile's fragments resolved before "
           "shading with last frame's farthest visible point, so occluded fragments are not "
           "shaded (Frame Coherence ch. 5). Lossless.",
    "re+evr": "RE and EVR together (Frame Coherence §5.4). Lossless.",
    "dsr": "Dynamic Sampling Rate: each tile shaded at a sampling rate (1 to 1/256) chosen "
           "from the DCT of last frame's tile (Frame Coherence ch. 6). Lossy: checked by "
           "MSSIM.",
    "memo": "Fragment memoization: a fragment whose shader inputs hash to a key in the LUT "
            "takes the stored color instead of being shaded (64-bit keys). Lossless.",
    "memo/32": "memoization keyed with the thesis's 32-bit signature: its collisions return "
               "another fragment's color (checked by MSSIM).",
    "MSSIM": "mean structural similarity of the luminance against the baseline's frame "
             "(Wang et al. 2004); 1 is identical.",
    "ms, fps": "the modelled GPU's time per frame (geometry + raster phases at tech.clock) "
               "and its inverse; not this machine's rendering time.",
    "mJ": "energy per frame: GPU (dynamic + static), DRAM (main memory, dynamic + "
          "background), screen (the OLED panel over one refresh period, from the frame's "
          "colors); GPU + DRAM is the energy the ratios compare, as the thesis does.",
    "ratio": "the technique's figure over the baseline's on the same workload and frames.",
}


# -- images -------------------------------------------------------------------------------------


def _thumbnail(rgba: np.ndarray) -> bytes:
    from PIL import Image

    picture = Image.fromarray(np.ascontiguousarray(rgba[..., :3]), mode="RGB")
    if picture.width > THUMBNAIL_WIDTH:
        height = max(1, round(picture.height * THUMBNAIL_WIDTH / picture.width))
        picture = picture.resize((THUMBNAIL_WIDTH, height), Image.Resampling.BILINEAR)
    return png_bytes(np.asarray(picture))


def _heat_map(image: np.ndarray, reference: np.ndarray) -> np.ndarray:
    """The largest channel difference per pixel, times DIFF_GAIN, through matplotlib's
    inferno color map."""
    from matplotlib import colormaps

    diff = np.abs(image[..., :3].astype(np.int16) - reference[..., :3].astype(np.int16))
    level = np.minimum(diff.max(axis=-1).astype(np.int32) * DIFF_GAIN, 255)
    lut = (colormaps["inferno"](np.linspace(0.0, 1.0, 256))[:, :3] * 255).astype(np.uint8)
    return lut[level]


def _fmt(value, spec: str = ".3f") -> str:
    if value is None:
        return "–"
    if isinstance(value, float):
        if np.isnan(value):
            return "–"
        return format(value, spec)
    return str(value)


def _slug(technique: str) -> str:
    return technique.replace("/", "-").replace("+", "_")


def _workload_images(out: Path, workload: dict, techniques: list[str]) -> dict:
    """Write the thumbnails, heat maps and overlays of a workload's shown frame under
    OUT/img; returns {technique: {"frame", "full", "diff" or "identical", "overlays": {kind:
    src}}}. A frame equal to the baseline's in every pixel gets no (all-black) heat map:
    "identical" is True instead."""
    name = workload["name"]
    runs = workload["runs"]
    shown = workload["frames"][1] - 1
    folder = out / "img" / name
    base_png = out / runs["baseline"]["folder"] / "frames" / f"{shown:06d}.png"
    reference = read_png(base_png, "RGBA")
    images = {}
    for technique in techniques:
        run = runs[technique]
        slug = _slug(technique)
        full = out / run["folder"] / "frames" / f"{shown:06d}.png"
        image = reference if technique == "baseline" else read_png(full, "RGBA")
        entry = {"full": str(full.relative_to(out)), "identical": False}
        write_bytes(folder / f"{slug}.png", _thumbnail(image))
        entry["frame"] = f"img/{name}/{slug}.png"
        if technique != "baseline":
            if np.array_equal(image[..., :3], reference[..., :3]):
                entry["identical"] = True
            else:
                write_bytes(folder / f"{slug}-diff.png",
                            _thumbnail(_heat_map(image, reference)))
                entry["diff"] = f"img/{name}/{slug}-diff.png"
        entry["overlays"] = {}
        for kind in run["overlays"].get(str(shown), []):
            source = out / run["folder"] / "overlays" / kind / f"{shown:06d}.png"
            if source.is_file():
                write_bytes(folder / f"{slug}-{kind}.png",
                            _thumbnail(read_png(source, "RGBA")))
                entry["overlays"][kind] = f"img/{name}/{slug}-{kind}.png"
        images[technique] = entry
    return images


def _workload_plots(out: Path, workload: dict, techniques: list[str],
                    estimates: dict, config: dict | None = None
                    ) -> tuple[list[dict], list[dict]]:
    """(the normalized figures, the tile heat maps) of a workload, each {src, caption}."""
    from tilesim.timing.plots import write_plots

    others = [t for t in techniques if t != "baseline"]
    if not others:
        return [], []
    runs = workload["runs"]
    base = runs["baseline"]["total"]
    folder = out / "img" / workload["name"] / "plots"
    written = write_plots(folder, others, [runs[t]["total"] for t in others],
                          [base] * len(others), average=False,
                          plots=("time", "energy", "traffic", "shader"))
    heat_maps = _tile_heat_maps(out, workload, [t for t in ("baseline", "re")
                                                 if t in techniques], estimates, config)
    captions = {"time": "execution time (Frame Coherence Figs. 4.10, 5.6, 6.10)",
                "energy": "GPU + memory energy (Figs. 4.11, 5.5, 6.9)",
                "traffic": "main-memory traffic by source (Fig. 4.13)",
                "shader": "shader activity (Fig. 6.12)"}
    return ([{"src": str(p.relative_to(out)),
              "caption": captions[p.stem] + ", normalized to the baseline"} for p in written],
            heat_maps)


def _tile_heat_maps(out: Path, workload: dict, techniques: list[str],
                    estimates: dict, config: dict | None = None) -> list[dict]:
    """The timing model's raster cycles per screen tile, mean over the frames, of some runs
    (Frame Coherence §2.3: where a tile-based GPU spends its raster time), on one color scale
    so that the maps compare; a run's estimate is taken from ``estimates`` (by
    "workload/technique", as the study made them) when there, else made again from its
    counters."""
    from tilesim.timing.config import config_from_record
    from tilesim.timing.plots import plot_tile_heatmap
    from tilesim.timing.report import estimate_render
    from tilesim.timing.tiles import mean_screen_cycles, screen_tiles

    config = config_from_record(config)       # the study's (results.json's "config")
    cfg, ecfg = config.gpu, config.energy
    maps = {}
    for technique in techniques:
        run = estimates.get(f"{workload['name']}/{technique}")
        if run is None:
            run = estimate_render(workload["name"], out / workload["runs"][technique]["folder"],
                                    cfg, ecfg, screen=False,
                                    frames=range(*workload["frames"]), check_writer=False)
        cycles = mean_screen_cycles(screen_tiles(run.estimate, cfg, ecfg, energy=False))
        if cycles is not None:
            maps[technique] = cycles
    top = max((float(np.max(c)) for c in maps.values()), default=0.0) or None
    made = []
    for technique, cycles in maps.items():
        path = out / "img" / workload["name"] / "plots" / f"tiles-{_slug(technique)}.png"
        write_bytes(path, plot_tile_heatmap(f"{workload['name']}, {technique}", cycles,
                                            vmax=top))
        made.append({"src": str(path.relative_to(out)),
                     "caption": f"{technique}: raster cycles per tile, mean over the frames"})
    return made


def _suite_plot(out: Path, results: dict) -> str | None:
    from tilesim.timing.plots import plot_normalized_vs_thesis

    techniques = [t for t in results["summary"] if t != "baseline"]
    if not techniques:
        return None
    summary, thesis = results["summary"], results["thesis"]
    measured = {k: [summary[t].get(k) for t in techniques] for k in ("time", "energy")}
    marks = {k: [thesis.get(t, {}).get(k) for t in techniques] for k in ("time", "energy")}
    write_bytes(out / "img" / "suite.png", plot_normalized_vs_thesis(techniques, measured, marks))
    return "img/suite.png"


# -- the page's parts (plain data for the template) --------------------------------------------


def _per_frame(run: dict) -> dict:
    """A run's per-frame figures: results.json's ``per_frame``, else (a study of an older
    tilesim) made from its totals."""
    return run.get("per_frame") or per_frame(run["total"])


def _characterization(workload: dict) -> list[list[str]] | None:
    columns = workload.get("characterization")
    if not columns:
        return None
    rows = []
    for title, group in (("Geometry (Table 3.3)", GEOMETRY), ("Raster (Table 3.4)", RASTER),
                         ("Other", EXTRA)):
        for key, label, fmt in group:
            value = columns.get(key)
            rows.append([f"{title}: {label}", "–" if value is None else fmt.format(value)])
    return rows


ABSOLUTE_COLUMNS = ["technique", "ms / frame", "fps", "Mcycles / frame", "mJ GPU", "mJ DRAM",
                    "mJ screen", "mJ GPU + DRAM", "time ratio", "energy ratio", "min MSSIM"]


def _absolute_table(workload: dict, techniques: list[str]) -> dict:
    """A row per run of a workload: its per-frame time, rate, cycles and energy by GPU /
    DRAM / screen, beside its ratios to the baseline."""
    rows = []
    for technique in techniques:
        run = workload["runs"][technique]
        f, n = _per_frame(run), run["normalized"]
        mj = f["mj"]
        rows.append([technique, _fmt(f["ms"], ".3f"), _fmt(f["fps"], ".1f"),
                     _fmt(f["cycles"] / 1e6, ".3f"), _fmt(mj["gpu"], ".3f"),
                     _fmt(mj["dram"], ".3f"), _fmt(mj["screen"], ".3f"),
                     _fmt(mj["total"], ".3f"), _fmt(n.get("time")), _fmt(n.get("energy")),
                     _fmt(run["quality"].get("mssim_min"), ".4f")])
    return {"columns": ABSOLUTE_COLUMNS, "rows": rows}


def _pivots(results: dict, techniques: list[str]) -> list[dict]:
    """The suite as workloads x techniques: time (ratio, ms per frame) and energy (ratio, mJ
    per frame of GPU + DRAM); the baseline column gives the absolute figure alone."""
    from markupsafe import Markup, escape

    def cell(ratio, absolute, unit, technique):
        if technique == "baseline":
            return f"{_fmt(absolute, '.3f')} {unit}"
        return Markup("{}<small>{} {}</small>").format(
            _fmt(ratio), _fmt(absolute, ".3f"), escape(unit))

    pivots = []
    for key, title, unit, pick in (
            ("time", "Time per frame: ratio to the baseline (ms per frame below)", "ms",
             lambda f: f["ms"]),
            ("energy", "Energy per frame, GPU + DRAM: ratio to the baseline (mJ per frame "
                       "below)", "mJ", lambda f: f["mj"]["total"])):
        rows = []
        for w in results["workloads"]:
            row = [Markup('<a href="#{}">{}</a>').format(_anchor(w["name"]), w["name"])]
            for technique in techniques:
                run = w["runs"][technique]
                row.append(cell(run["normalized"].get(key), pick(_per_frame(run)), unit,
                                technique))
            rows.append(row)
        mean = ["mean"]
        for technique in techniques:
            values = [w["runs"][technique]["normalized"].get(key) for w in results["workloads"]]
            values = [v for v in values if v is not None]
            absolute = [pick(_per_frame(w["runs"][technique])) for w in results["workloads"]]
            absolute = [v for v in absolute if v is not None]
            mean.append(cell(float(np.mean(values)) if values else None,
                             float(np.mean(absolute)) if absolute else None, unit, technique))
        rows.append(mean)
        pivots.append({"id": f"pivot-{key}", "title": title,
                       "columns": ["workload", *techniques], "rows": rows})
    return pivots


def _summary(results: dict) -> dict:
    failed = set(results["checks"]["failed"])
    columns = ["workload", "technique", "time", "energy", "traffic", "fragments shaded",
               "tiles skipped", "identical frames", "min MSSIM", "check"]
    rows, attrs = [], []
    for w in results["workloads"]:
        for technique, run in w["runs"].items():
            n, q = run["normalized"], run["quality"]
            bad = f"{w['name']}: {technique}" in failed
            rows.append([w["name"], technique, _fmt(n.get("time")), _fmt(n.get("energy")),
                         _fmt(n.get("traffic")), _fmt(n.get("fragments_shaded")),
                         _fmt(q.get("tiles_skipped"), ".1%"),
                         f"{q['frames_bit_identical']}/{q['frames']}",
                         _fmt(q.get("mssim_min"), ".4f"), "FAIL" if bad else "ok"])
            attrs.append({"data-workload": w["name"], "data-technique": technique,
                          **({"class": "fail"} if bad else {})})
    return {"columns": columns, "rows": rows, "attrs": attrs,
            "rule": results["checks"]["rule"]}


def _averages(results: dict) -> dict:
    summary, thesis = results["summary"], results["thesis"]
    bound = [w for w in results["workloads"] if w.get("bound_shares")]
    in_regime = (f"{sum(bool(w['regime']['fragment_bound']) for w in bound)}/{len(bound)}"
                 if bound else "n/a")
    rows = []
    for technique, row in summary.items():
        t = thesis.get(technique, {})
        rows.append([technique, _fmt(row.get("time")), _fmt(t.get("time")),
                     _fmt(row.get("energy")), _fmt(t.get("energy")),
                     _fmt(row.get("traffic")), _fmt(row.get("mssim_min"), ".4f"),
                     in_regime, t.get("source", "")])
    return {"columns": ["technique", "time", "time (thesis)", "energy", "energy (thesis)",
                        "traffic", "min MSSIM", "fragment-bound workloads", "thesis source"],
            "rows": rows}


def _thesis_comparison(comparison: dict | None) -> dict | None:
    """The averages over the thesis-regime workloads (``like_*``) beside the thesis's, on the
    benchmark set each technique was evaluated on, and by set and 2D/3D
    (studies/thesis_comparison.py)."""
    if not comparison:
        return None
    groups = comparison["groups"]
    evaluated = groups["evaluated set"]
    rows = []
    for technique, on in comparison["evaluated_on"].items():
        g, t = evaluated[technique], comparison["thesis"].get(technique, {})
        if not g["n"]:
            continue
        rows.append([technique, f"chapter{'s' if '-' in on else ''} {on}", g["n"],
                     _fmt(g["time"]), _fmt(t.get("time")), _fmt(g["energy"]),
                     _fmt(t.get("energy")), _fmt(g["tiles_skipped"], ".1%")])
    others = [k for k in groups if k != "evaluated set"]
    split = [[technique, *(f"{_fmt(groups[k][technique]['time'])} / "
                           f"{_fmt(groups[k][technique]['energy'])}" for k in others)]
             for technique in comparison["evaluated_on"] if groups["all"][technique]["n"]]
    return {"columns": ["technique", "set", "workloads", "time", "time (thesis)", "energy",
                        "energy (thesis)", "tiles skipped"], "rows": rows,
            "split_columns": ["technique (time / energy)", *others], "split_rows": split}


def _regime(results: dict) -> dict | None:
    """What bounds each workload's baseline (share of its frame time,
    ``tilesim.timing.model.bound_cycles``) and whether it is fragment-bound like the thesis's
    games (shading + texturing the largest share), the regime the thesis's figures hold in."""
    from tilesim.timing.model import BOUND_CATEGORIES

    bound = [w for w in results["workloads"] if w.get("bound_shares")]
    if not bound:
        return None
    rows = [[w["name"], *(_fmt(w["bound_shares"].get(k), ".0%") for k in BOUND_CATEGORIES),
             "yes" if w["regime"]["fragment_bound"] else "no"] for w in bound]
    return {"columns": ["workload", *BOUND_CATEGORIES, "fragment-bound"], "rows": rows}


def _bytes(n: float) -> str:
    for unit, size in (("GB", 1 << 30), ("MB", 1 << 20), ("KB", 1 << 10)):
        if n >= size:
            return f"{n / size:g} {unit}"
    return f"{n:g} B"


def _gpu_summary(record: dict | None) -> dict:
    """The modelled GPU in a paper's terms, from the configuration the study ran with
    (results.json ``config``: its values; a study of an older tilesim recorded the files
    only, which are loaded)."""
    from tilesim.timing.config import config_from_record

    record = record if isinstance(record, dict) else {}
    config = config_from_record(record)
    v = config.gpu.values

    def get(key, default=None):
        return v.get(key, default)

    def cache(name):
        count, size = int(get(f"caches.{name}.count", 1)), get(f"caches.{name}.size")
        return (f"{f'{count} x ' if count > 1 else ''}{_bytes(size)}, "
                f"{int(get(f'caches.{name}.ways'))}-way, {int(get(f'caches.{name}.line_size'))}"
                f"-byte lines, {int(get(f'caches.{name}.latency'))}-cycle latency")

    clock = get("tech.clock")
    bandwidth = get("memory.bandwidth")
    tile = int(get("screen.tile_size"))
    tiles = get("buffers.color.entries") / tile ** 2
    rows = [
        ["clock", f"{clock / 1e6:g} MHz"],
        ["process", f"{get('tech.node'):g} nm, {get('tech.voltage'):g} V"],
        ["tile size", f"{tile}x{tile} pixels"],
        ["processors", f"{int(get('processors.vertex.count', 0))} vertex, "
                       f"{int(get('processors.fragment.count', 0))} fragment; "
                       "threads per cycle each: "
                       f"{get('processors.shader.threads_per_cycle', 0):g}"],
        ["vertex cache", cache("vertex")],
        ["texture caches", cache("texture")],
        ["tile cache", cache("tile")],
        ["L2 cache", cache("l2")],
        ["color buffer", f"{int(get('buffers.color.entries'))} x "
                         f"{int(get('buffers.color.entry_bits'))} bits ({tiles:g} "
                         f"tile{'' if tiles == 1 else 's'})"],
        ["depth buffer", f"{int(get('buffers.depth.entries'))} x "
                         f"{int(get('buffers.depth.entry_bits'))} bits"],
        ["main memory", f"{_bytes(get('memory.size'))}, {int(get('memory.channels'))} "
                        f"channels, {bandwidth:g} bytes/cycle "
                        f"({bandwidth * clock / 1e9:.1f} GB/s), latency "
                        f"{get('memory.latency_min'):g}-{get('memory.latency_max'):g} cycles"],
        ["screen", f"OLED, {get('screen.refresh_rate'):g} Hz refresh"],
    ]
    e = config.energy.values
    if e:   # the energy model's headline figures (its file cites a source for each)
        rows += [
            ["energy: shader", f"{e['gpu.shader.lane_op']:g} pJ per lane-instruction, "
                               f"{e['gpu.shader.issue']:g} pJ per warp-instruction issue"],
            ["energy: DRAM", f"{e['memory.read_per_byte']:g} / {e['memory.write_per_byte']:g} "
                             f"pJ per byte read / written, {e['memory.act_pre']:g} pJ per "
                             f"activation, {e['memory.background']:g} mW per channel standby"
                             + (", power-down when idle" if e['memory.power_down'] else "")],
            ["energy: leakage", f"{e['gpu.static.fragment_processor']:g} mW per fragment "
                                f"processor, {e['gpu.static.sram']:g} mW per KB of SRAM"],
            ["energy: screen", f"OLED, {e['screen.panel']:g} mW panel and driver plus the "
                               "per-channel pixel power of the frame shown"],
        ]
    changed = record.get("changed") or {}
    origin = ("From the configuration this study ran with (results.json \"config\")."
              if isinstance(record.get("values"), dict)
              else "From the configuration files results.json names.")
    return {"rows": rows, "digest": config.sha256[:12], "origin": origin,
            "changed": ", ".join(f"{k}={_value(val)}" for k, val in changed.items())}


def _value(value: float) -> str:
    """A configuration value as its file would write it: 800000000, not 8e+08."""
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


def _anchor(name: str) -> str:
    return f"w-{name}"


def _workload_section(out: Path, workload: dict, techniques: list[str],
                      estimates: dict, config: dict | None = None) -> dict:
    name = workload["name"]
    runs = workload["runs"]
    shown = workload["frames"][1] - 1
    with ThreadPoolExecutor(max_workers=1) as pool:
        # The thumbnails and heat maps (PNG decoding, resizing and encoding, mostly outside
        # the GIL) in a thread while matplotlib draws the plots.
        making_images = pool.submit(_workload_images, out, workload, techniques)
        plots, heat_maps = _workload_plots(out, workload, techniques, estimates, config)
        images = making_images.result()
    frames, diffs = [], []
    for technique in techniques:
        entry = images[technique]
        mssim = next((r["mssim"] for r in runs[technique]["frames"] if r["frame"] == shown),
                     None)
        caption = (technique if technique == "baseline"
                   else f"{technique}: MSSIM {_fmt(mssim, '.4f')}"
                        + (" (bit-identical)" if mssim == 1.0 else ""))
        frames.append({"src": entry["frame"], "caption": caption, "link": entry["full"]})
        if technique != "baseline":
            diffs.append({"src": entry.get("diff"), "identical": entry["identical"],
                          "technique": technique, "caption": f"{technique} − baseline"})
    overlays = [{"src": src, "caption": f"{t}: {OVERLAY_TITLES.get(kind, kind)}"}
                for t in techniques for kind, src in images[t]["overlays"].items()]
    frame_rows = []
    for index in [r["frame"] for r in runs["baseline"]["frames"]]:
        row = [str(index)]
        for technique in techniques[1:]:
            m = next((r["mssim"] for r in runs[technique]["frames"] if r["frame"] == index),
                     None)
            row.append("identical" if m == 1.0 else _fmt(m, ".4f"))
        frame_rows.append(row)
    return {"name": name, "id": _anchor(name), "shown": shown,
            "note": f"{workload['trace']} ({workload['origin']}), {workload['width']}x"
                    f"{workload['height']}, frames {workload['frames'][0]}.."
                    f"{workload['frames'][1] - 1}.",
            "absolute": _absolute_table(workload, techniques),
            "characterization": _characterization(workload),
            "frames": frames, "diffs": diffs, "overlays": overlays,
            "mssim": {"columns": ["frame", *techniques[1:]], "rows": frame_rows},
            "plots": plots, "heat_maps": heat_maps,
            "heat_maps_note": "The timing model's raster cycles per screen tile, mean over the "
                              "frames; the maps share one color scale (0 to the largest "
                              "tile of either)."}


def _extra(key: str, section: dict) -> dict:
    """A section of `--all` ({"title", "text", "tables": [{"caption", "columns", "rows"}],
    "images": [{"src", "caption"}]}, study_sections.py) for the template."""
    return {"id": key, "title": section.get("title", key), "text": section.get("text"),
            "tables": [{"columns": t["columns"], "rows": t["rows"],
                        "caption": t.get("caption"), "id": t.get("id")}
                       for t in section.get("tables", [])],
            "images": section.get("images", [])}


def _extra_section(key: str, section: dict) -> str:
    """A section of `--all` as HTML (the template's extra_section)."""
    macros = _environment().get_template("macros.html.j2").module
    return str(macros.extra_section(_extra(key, section)))


def _config_note(record: dict) -> str:
    """The configuration's digest and its values other than the shipped files' (results.json
    ``config``), as a clause of the report's first paragraph."""
    if not isinstance(record, dict) or not isinstance(record.get("sha256"), str):
        return ""
    changed = record.get("changed") or {}
    what = ", ".join(f"{k}={_value(v)}" for k, v in changed.items()) or "as shipped"
    return f", configuration {record['sha256'][:12]} ({what})"


def _environment():
    import jinja2

    return jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES),
                              autoescape=True, undefined=jinja2.StrictUndefined,
                              trim_blocks=False, lstrip_blocks=False)


def render_page(out: Path, results: dict, workload_sections: list[dict]) -> str:
    """The page's HTML from results.json's contents and the workload sections' parts (their
    images already written)."""
    techniques = list(results["settings"]["techniques"])
    workloads = results["workloads"]
    extras = [_extra(k, s) for k, s in results.get("sections", {}).items()]
    thesis = _thesis_comparison(results.get("thesis_comparison"))
    regime = _regime(results)
    toc = [{"id": "gpu", "title": "The modelled GPU"},
           {"id": "glossary", "title": "Glossary"},
           {"id": "suite", "title": "Summary: workloads x techniques"}]
    if thesis or regime:
        toc.append({"id": "thesis-comparison", "title": "Beside the thesis"})
    toc.append({"id": workload_sections[0]["id"] if workload_sections else "suite",
                "title": "Workloads",
                "children": [{"id": w["id"], "title": w["name"]} for w in workload_sections]})
    toc += [{"id": e["id"], "title": e["title"]} for e in extras]
    toc = [{"children": [], **entry} for entry in toc]
    names = [t for t in techniques if t in GLOSSARY]
    glossary = [(t, GLOSSARY[t]) for t in names] + [
        (k, v) for k, v in GLOSSARY.items() if k not in TECHNIQUE_NAMES]
    seconds = results.get("seconds") or {}
    skipped = results["settings"].get("skipped") or []
    config = results.get("config") or {}
    return _environment().get_template("report.html.j2").render(
        style=STYLE, failed=results["checks"]["failed"], workloads=workloads,
        techniques=techniques, created=results["created"], command=results["command"],
        version=results["tilesim_version"],
        config_files={"gpu": config.get("gpu"), "energy": config.get("energy")},
        config_note=_config_note(config),
        skipped=[f"{s['spec']} ({s['reason']})" for s in skipped], toc=toc,
        gpu=_gpu_summary(config), glossary=glossary,
        units_line="; ".join(f"{k}: {v}" for k, v in
                             (results.get("units") or PER_FRAME_UNITS).items()),
        pivots=_pivots(results, techniques), averages=_averages(results),
        summary=_summary(results), suite_plot=_suite_plot(out, results),
        thesis=thesis, regime=regime, regime_note=REGIME_NOTE,
        workload_sections=workload_sections, diff_gain=DIFF_GAIN, extra_sections=extras,
        out_name=out.name,
        timing=", ".join(f"{k.replace('_', ' ')} {v:.0f} s" for k, v in seconds.items()))


TECHNIQUE_NAMES = ("baseline", "te", "re", "re/xor", "re/uniforms", "evr", "re+evr", "dsr",
                   "memo", "memo/32")


def write_report(out: str | Path, results: dict, *, progress: bool = True,
                 estimates: dict | None = None) -> Path:
    """Write OUT/index.html (and its images) for ``results`` (results.json's contents).
    ``estimates``: the runs' timing estimates the study made, by "workload/technique" (the
    others are made again from the counters)."""
    from tilesim.studies.progress import progress_bar

    out = Path(out)
    techniques = list(results["settings"]["techniques"])
    sections = []
    with progress_bar(len(results["workloads"]), desc="writing the report", unit="workload",
                      enabled=progress, leave=False) as bar:
        for w in results["workloads"]:
            sections.append(_workload_section(out, w, techniques, estimates or {},
                                              results.get("config")))
            bar.update(1)
    return write_text(out / "index.html", render_page(out, results, sections))
