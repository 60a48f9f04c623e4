"""The report of a study: ``OUT/index.html``, one page readable offline.

Everything the page shows lies in OUT (images under ``OUT/img``, full-size frames under
``OUT/runs``); no script, font or style sheet comes from the network. Per workload: the
characterization (Frame Coherence Tables 3.3, 3.4), the last studied frame side by side for
the baseline and every technique with a difference heat map and its MSSIM, the per-tile
overlays (RE's skipped tiles, TE's unflushed tiles, DSR's sampling rates, EVR's farthest
visible point), the per-frame MSSIM, and the seeds-style figures of normalized time, energy,
memory traffic and shader activity. Then the suite: a row per workload and technique, the
averages beside the thesis's, and the sections ``tilesim run --all`` adds.
"""

from __future__ import annotations

import html
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

from tilesim.atomic import write_bytes, write_text
from tilesim.images import png_bytes, read_png
from tilesim.render.studies.characterize import EXTRA, GEOMETRY, RASTER

THUMBNAIL_WIDTH = 480
DIFF_GAIN = 8          # the heat map shows 8x the largest channel difference (32/255 saturates)
OVERLAY_TITLES = {
    "re_skipped": "RE: tiles skipped (magenta)",
    "te_not_flushed": "TE: tiles not flushed (cyan)",
    "dsr_rate": "DSR: sampling rate (blue 1/4x, green 1/16x, yellow 1/64x, red 1/256x)",
    "evr_fvp": "EVR: farthest visible point (gray: depth, near dark; orange: layer)",
}
STYLE = """
body { font: 14px/1.45 system-ui, sans-serif; margin: 0 auto; max-width: 1400px;
       padding: 0 1.5em 3em; color: #222; }
h1 { margin-top: 1em; } h2 { border-bottom: 2px solid #1f4e79; padding-bottom: .2em;
     margin-top: 2em; } h3 { margin-top: 1.4em; }
table { border-collapse: collapse; margin: .6em 0; font-size: 13px; }
th, td { border: 1px solid #ccc; padding: 2px 7px; text-align: right; }
th { background: #eef3f8; } td.name, th.name { text-align: left; }
tr.fail td { background: #fde2e1; } tr.average td { font-weight: bold; background: #f6f6f6; }
.gallery { display: flex; flex-wrap: wrap; gap: 10px; }
figure { margin: 0; } figcaption { font-size: 12px; color: #444; max-width: 320px; }
img { border: 1px solid #ddd; max-width: 100%; height: auto; }
.gallery img.frame { width: 320px; } .gallery img.plot { width: 560px; }
figure.plot figcaption { max-width: 560px; }
.ok { color: #1a7f37; font-weight: bold; } .bad { color: #b42318; font-weight: bold; }
nav a { margin-right: 1em; } .note { color: #555; font-size: 13px; }
"""


def _e(value) -> str:
    return html.escape(str(value), quote=True)


def _fmt(value, spec: str = ".3f") -> str:
    if value is None:
        return "–"
    if isinstance(value, float):
        if np.isnan(value):
            return "–"
        return format(value, spec)
    return str(value)


def _table(columns: list[str], rows: list[list], *, table_id: str | None = None,
           row_attrs: list[dict] | None = None, caption: str | None = None) -> str:
    head = "".join(f'<th class="{"name" if i == 0 else ""}">{_e(c)}</th>'
                   for i, c in enumerate(columns))
    body = []
    for r, row in enumerate(rows):
        attrs = (row_attrs or [{}] * len(rows))[r]
        attr = "".join(f' {k}="{_e(v)}"' for k, v in attrs.items())
        cells = "".join(f'<td class="{"name" if i == 0 else ""}">{_e(v)}</td>'
                        for i, v in enumerate(row))
        body.append(f"<tr{attr}>{cells}</tr>")
    ident = f' id="{table_id}"' if table_id else ""
    cap = f"<caption>{_e(caption)}</caption>" if caption else ""
    return (f"<table{ident}>{cap}<thead><tr>{head}</tr></thead>"
            f"<tbody>{''.join(body)}</tbody></table>")


def _figure(src: str, caption: str, link: str | None = None, kind: str = "frame") -> str:
    """An image with its caption; ``kind`` "frame" (a thumbnail, linked to ``link``, the
    full-size frame) or "plot"."""
    image = f'<img class="{kind}" src="{_e(src)}" alt="{_e(caption)}" loading="eager">'
    if link:
        image = f'<a href="{_e(link)}">{image}</a>'
    return f'<figure class="{kind}">{image}<figcaption>{_e(caption)}</figcaption></figure>'



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


def _workload_images(out: Path, workload: dict, techniques: list[str]) -> dict:
    """Write the thumbnails, heat maps and overlays of a workload's shown frame under
    OUT/img; returns {technique: {"frame", "diff", "overlays": {kind: src}}}."""
    name = workload["name"]
    runs = workload["runs"]
    shown = workload["frames"][1] - 1
    folder = out / "img" / name
    base_png = out / runs["baseline"]["folder"] / "frames" / f"{shown:06d}.png"
    reference = read_png(base_png, "RGBA")
    images = {}
    for technique in techniques:
        run = runs[technique]
        slug = technique.replace("/", "-").replace("+", "_")
        full = out / run["folder"] / "frames" / f"{shown:06d}.png"
        image = reference if technique == "baseline" else read_png(full, "RGBA")
        entry = {"full": str(full.relative_to(out))}
        write_bytes(folder / f"{slug}.png", _thumbnail(image))
        entry["frame"] = f"img/{name}/{slug}.png"
        if technique != "baseline":
            write_bytes(folder / f"{slug}-diff.png", _thumbnail(_heat_map(image, reference)))
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
                    estimates: dict, config: dict | None = None) -> list[tuple[str, str]]:
    from tilesim.timing.plots import write_plots

    others = [t for t in techniques if t != "baseline"]
    if not others:
        return []
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
    return [(str(p.relative_to(out)), captions[p.stem] + ", normalized to the baseline")
            for p in written] + heat_maps


def _tile_heat_maps(out: Path, workload: dict, techniques: list[str],
                    estimates: dict, config: dict | None = None) -> list[tuple[str, str]]:
    """The timing model's raster cycles per screen tile, mean over the frames, of some runs
    (Frame Coherence §2.3: where a tile-based GPU spends its raster time); a run's estimate
    is taken from ``estimates`` (by "workload/technique", as the study made them) when there,
    else made again from its counters."""
    from tilesim.timing.config import config_from_record
    from tilesim.timing.plots import plot_tile_heatmap
    from tilesim.timing.report import estimate_workload
    from tilesim.timing.tiles import mean_screen_cycles, screen_tiles

    config = config_from_record(config)       # the study's (results.json's "config")
    cfg, ecfg = config.gpu, config.energy
    made = []
    for technique in techniques:
        run = estimates.get(f"{workload['name']}/{technique}")
        if run is None:
            run = estimate_workload(workload["name"], out / workload["runs"][technique]["folder"],
                                    cfg, ecfg, screen=False,
                                    frames=range(*workload["frames"]), check_writer=False)
        estimate = run.estimate
        cycles = mean_screen_cycles(screen_tiles(estimate, cfg, ecfg, energy=False))
        if cycles is None:
            continue
        path = out / "img" / workload["name"] / "plots" / f"tiles-{technique}.png"
        write_bytes(path, plot_tile_heatmap(f"{workload['name']}, {technique}", cycles))
        made.append((str(path.relative_to(out)),
                     f"{technique}: raster cycles per tile, mean over the frames"))
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


# -- sections -----------------------------------------------------------------------------------


def _characterization(workload: dict) -> str:
    columns = workload.get("characterization")
    if not columns:
        return '<p class="note">No characterization (the baseline was resumed).</p>'
    rows = []
    for title, group in (("Geometry (Table 3.3)", GEOMETRY), ("Raster (Table 3.4)", RASTER),
                         ("Other", EXTRA)):
        for key, label, fmt in group:
            value = columns.get(key)
            rows.append([f"{title}: {label}",
                         "–" if value is None else fmt.format(value)])
    return _table(["characterization", "value"], rows,
                  table_id=f"characterization-{workload['name']}")


def _workload_section(out: Path, workload: dict, techniques: list[str],
                      estimates: dict, config: dict | None = None) -> str:
    name = workload["name"]
    runs = workload["runs"]
    shown = workload["frames"][1] - 1
    with ThreadPoolExecutor(max_workers=1) as pool:
        # The thumbnails and heat maps (PNG decoding, resizing and encoding, mostly outside
        # the GIL) in a thread while matplotlib draws the plots.
        making_images = pool.submit(_workload_images, out, workload, techniques)
        plots = _workload_plots(out, workload, techniques, estimates, config)
        images = making_images.result()
    parts = [f'<section id="w-{_e(name)}"><h2>{_e(name)}</h2>',
             f'<p class="note">{_e(workload["trace"])} ({_e(workload["origin"])}), '
             f'{workload["width"]}x{workload["height"]}, frames {workload["frames"][0]}.. '
             f'{workload["frames"][1] - 1}</p>', _characterization(workload),
             f"<h3>Frame {shown}: the baseline and every technique</h3>",
             '<div class="gallery">']
    for technique in techniques:
        entry = images[technique]
        frames = runs[technique]["frames"]
        mssim = next((r["mssim"] for r in frames if r["frame"] == shown), None)
        caption = (technique if technique == "baseline"
                   else f"{technique}: MSSIM {_fmt(mssim, '.4f')}"
                        + (" (bit-identical)" if mssim == 1.0 else ""))
        parts.append(_figure(entry["frame"], caption, entry["full"]))
    parts.append("</div><h3>Difference from the baseline</h3><p class='note'>The largest "
                 f"channel difference per pixel, x{DIFF_GAIN} (black: equal; "
                 f"{256 // DIFF_GAIN}/255 or more saturates).</p><div class='gallery'>")
    for technique in techniques[1:]:
        parts.append(_figure(images[technique]["diff"], f"{technique} − baseline"))
    parts.append("</div>")
    overlays = [(t, kind, src) for t in techniques for kind, src in
                images[t]["overlays"].items()]
    if overlays:
        parts.append("<h3>Per-tile views</h3><div class='gallery'>")
        for technique, kind, src in overlays:
            parts.append(_figure(src, f"{technique}: {OVERLAY_TITLES.get(kind, kind)}"))
        parts.append("</div>")
    frame_rows = []
    indices = [r["frame"] for r in runs["baseline"]["frames"]]
    for index in indices:
        row = [str(index)]
        for technique in techniques[1:]:
            m = next((r["mssim"] for r in runs[technique]["frames"] if r["frame"] == index),
                     None)
            row.append("identical" if m == 1.0 else _fmt(m, ".4f"))
        frame_rows.append(row)
    parts.append("<h3>MSSIM per frame against the baseline</h3>")
    parts.append(_table(["frame", *techniques[1:]], frame_rows, table_id=f"mssim-{name}"))
    if plots:
        parts.append("<h3>Time, energy, traffic and shader activity</h3>"
                     "<div class='gallery'>")
        parts += [_figure(src, caption, kind="plot") for src, caption in plots]
        parts.append("</div>")
    parts.append("</section>")
    return "\n".join(parts)


def _summary_section(out: Path, results: dict) -> str:
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
    parts = ["<section id='suite'><h2>Suite</h2>",
             "<p class='note'>Time, energy, traffic and fragments shaded are normalized to the "
             "baseline of the same workload and frames; tiles skipped is RE's share of the "
             "screen's tiles; identical frames counts frames bit-identical to the baseline's. "
             f"Checks: {_e(results['checks']['rule'])}.</p>",
             _table(columns, rows, table_id="summary", row_attrs=attrs)]
    summary, thesis = results["summary"], results["thesis"]
    bound = [w for w in results["workloads"] if w.get("bound_shares")]
    in_regime = (f"{sum(bool(w['regime']['fragment_bound']) for w in bound)}/{len(bound)}"
                 if bound else "n/a")
    avg_rows = []
    for technique, row in summary.items():
        t = thesis.get(technique, {})
        avg_rows.append([technique, _fmt(row.get("time")), _fmt(t.get("time")),
                         _fmt(row.get("energy")), _fmt(t.get("energy")),
                         _fmt(row.get("traffic")), _fmt(row.get("mssim_min"), ".4f"),
                         in_regime, t.get("source", "")])
    parts.append("<h3>Averages over workloads, beside the thesis</h3>")
    parts.append(_table(["technique", "time", "time (thesis)", "energy", "energy (thesis)",
                         "traffic", "min MSSIM", "fragment-bound workloads",
                         "thesis source"], avg_rows, table_id="averages"))
    if results.get("thesis_comparison"):
        parts.append(_thesis_comparison_table(results["thesis_comparison"]))
    if bound:
        parts.append(_regime_table(bound))
    plot = _suite_plot(out, results)
    if plot:
        parts.append(_figure(plot, "normalized time and energy, mean over workloads, with "
                                   "Frame Coherence's averages", kind="plot"))
    parts.append("</section>")
    return "\n".join(parts)


def _thesis_comparison_table(comparison: dict) -> str:
    """The averages over the thesis-regime workloads (``like_*``) beside the thesis's, on the
    benchmark set each technique was evaluated on, and by set and 2D/3D
    (render/studies/thesis_comparison.py)."""
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
    return ("<h3>The thesis-regime workloads beside the thesis</h3>"
            "<p class='note'>Programs built from the rows of Frame Coherence Tables 3.3-3.4 "
            "(render/workloads/thesis_games.py), averaged on the benchmark set the thesis "
            "evaluates each technique on (chapters 4-5 at 1196x768; DSR chapter 6 at "
            "1920x1080). Read a difference against what bounds each workload (the table "
            "below).</p>"
            + _table(["technique", "set", "workloads", "time", "time (thesis)", "energy",
                      "energy (thesis)", "tiles skipped"], rows, table_id="thesis")
            + _table(["technique (time / energy)", *others], split, table_id="thesis-split"))


def _regime_table(workloads: list[dict]) -> str:
    """What bounds each workload's baseline (share of its frame time,
    ``tilesim.timing.model.bound_cycles``) and whether it is fragment-bound like the thesis's
    games (shading + texturing the largest share), the regime the thesis's figures hold in."""
    from tilesim.timing.model import BOUND_CATEGORIES

    rows = [[w["name"], *(_fmt(w["bound_shares"].get(k), ".0%") for k in BOUND_CATEGORIES),
             "yes" if w["regime"]["fragment_bound"] else "no"] for w in workloads]
    return ("<h3>What bounds each workload (baseline, share of frame time)</h3>"
            "<p class='note'>Each tile's cycles go to its bottleneck stage (bus: DRAM reads on "
            "the shared bus; shading; texturing: filtering and texture memory; raster_fixed: "
            "rasterizer, early Z, blending; other: tile fetch, technique stages), its exposed "
            "flush and color "
            "buffer floor (flush), its pipeline fill (fill); geometry is the geometry phase. "
            "The thesis's games are fragment-bound (Frame Coherence Tables 3.3-3.4); a "
            "comparison with its figures holds where this workload is too.</p>"
            + _table(["workload", *BOUND_CATEGORIES, "fragment-bound"], rows,
                     table_id="regime"))


def _extra_section(key: str, section: dict) -> str:
    """A section of `--all`: {"title", "text", "tables": [{"caption", "columns", "rows"}],
    "images": [{"src", "caption"}]}."""
    parts = [f"<section id='{_e(key)}'><h2>{_e(section.get('title', key))}</h2>"]
    if section.get("text"):
        parts.append(f"<p>{_e(section['text'])}</p>")
    for table in section.get("tables", []):
        parts.append(_table(table["columns"], table["rows"], caption=table.get("caption"),
                            table_id=table.get("id")))
    if section.get("images"):
        parts.append("<div class='gallery'>")
        parts += [_figure(i["src"], i["caption"], kind="plot") for i in section["images"]]
        parts.append("</div>")
    parts.append("</section>")
    return "\n".join(parts)


def _config_note(record: dict) -> str:
    """The configuration's digest and its values other than the shipped files' (results.json
    ``config``), as a clause of the report's first paragraph."""
    if not isinstance(record, dict) or not isinstance(record.get("sha256"), str):
        return ""
    changed = record.get("changed") or {}
    what = ", ".join(f"{k}={v:g}" for k, v in changed.items()) or "as shipped"
    return f", configuration {record['sha256'][:12]} ({what})"


def write_report(out: str | Path, results: dict, *, progress: bool = True,
                 estimates: dict | None = None) -> Path:
    """Write OUT/index.html (and its images) for ``results`` (results.json's contents).
    ``estimates``: the runs' timing estimates the study made, by "workload/technique" (the
    others are made again from the counters)."""
    from tqdm import tqdm

    out = Path(out)
    techniques = list(results["settings"]["techniques"])
    workloads = results["workloads"]
    sections = []
    for w in tqdm(workloads, desc="report", unit="workload", disable=None if progress else True,
                  leave=False):
        sections.append(_workload_section(out, w, techniques, estimates or {},
                                          results.get("config")))
    failed = results["checks"]["failed"]
    status = (f"<span class='bad'>quality check failed: {_e(', '.join(failed))}</span>"
              if failed else "<span class='ok'>every quality check passed</span>")
    nav = " ".join(f"<a href='#w-{_e(w['name'])}'>{_e(w['name'])}</a>" for w in workloads)
    extra = "".join(f"<a href='#{_e(k)}'>{_e(s.get('title', k))}</a>"
                    for k, s in results.get("sections", {}).items())
    skipped = results["settings"].get("skipped") or []
    skipped_html = ("<p class='note'>Not in this study: " + "; ".join(
        f"{_e(s['spec'])} ({_e(s['reason'])})" for s in skipped) + "</p>") if skipped else ""
    seconds = results.get("seconds") or {}
    timing = ", ".join(f"{k.replace('_', ' ')} {v:.0f} s" for k, v in seconds.items())
    page = f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>tilesim study</title><style>{STYLE}</style></head>
<body>
<h1>tilesim study</h1>
<p>{status}. {len(workloads)} workloads, {len(techniques)} runs each
({_e(', '.join(techniques))}); made {_e(results['created'])} by
<code>{_e(results['command'])}</code>, tilesim {_e(results['tilesim_version'])};
timing model <code>{_e(results['config']['gpu'])}</code>,
<code>{_e(results['config']['energy'])}</code>{_e(_config_note(results['config']))}.</p>
{skipped_html}
<nav><a href="#suite">suite</a> {nav} {extra}</nav>
{_summary_section(out, results)}
{''.join(sections)}
{''.join(_extra_section(k, s) for k, s in results.get('sections', {}).items())}
<p class="note">The numbers are in <a href="results.json">results.json</a>
(<code>tilesim.open_results("{_e(out.name)}")</code> in Python). {_e(timing)}</p>
</body></html>
"""
    return write_text(out / "index.html", page)
