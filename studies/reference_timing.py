"""``tilesim reference-timing``: the analytic timing model against the cycle-level reference.

    tilesim reference-timing TRACE [--frames A:B] [--technique re] [--size WxH] [--tiles N]
                             [--config F] [--energy-config F] [--json]

Renders the frames of TRACE with a recording hook (``quad_stream``: every tile's quads as the
pipeline processed them), runs the cycle-level reference of the raster pipeline on every tile
of every pass (``tilesim.timing.cycle_level``) and the analytic model (``tilesim.timing.model``)
on the same counters, and prints both raster cycles per frame and the analytic model's relative
error, per frame and per tile (mean, mean absolute, p50 / p90 / max of the absolute error),
the same for the geometry phase (``tilesim.timing.cycle_level.geometry`` on the frame's
recorded draws), the worst tiles, and the reference's speed in tiles per second. A study:
it renders and times.
"""

from __future__ import annotations

import numpy as np

WORST = 5


def reference_report(trace: str, frames: range, *, technique: str = "baseline",
                     size: tuple[int, int] | None = None, tiles: int | None = None,
                     cfg=None, ecfg=None, progress=None, tile_progress=None) -> dict:
    """Both models on ``frames`` of ``trace`` (see the module notes) as a JSON-ready dict;
    ``tiles``: only each pass's first ``tiles`` tiles in traversal order (the raster figures
    are then sums over them). ``progress(frame)`` after each frame rendered,
    ``tile_progress(tiles)`` after each pass simulated."""
    from tilesim.studies.quad_stream import record_frames
    from tilesim.timing.config import load_energy_config, load_gpu_config
    from tilesim.timing.cycle_level.agreement import (
        compare,
        compare_geometry,
        distribution,
        energy_comparison,
    )

    cfg = cfg if cfg is not None else load_gpu_config()
    ecfg = ecfg if ecfg is not None else load_energy_config()
    traversal = "zorder" if cfg["screen.zorder_traversal"] else "scanline"
    # rendered at the configuration's tile size (the model's screen.tile_size: one fact)
    recorded = record_frames(trace, frames, technique=technique, size=size,
                             traversal=traversal, progress=progress,
                             tile_size=int(cfg["screen.tile_size"]))
    result = compare([(r.counters, r.streams) for r in recorded], cfg, ecfg,
                     progress=tile_progress, tiles=tiles)
    geometry = compare_geometry([(r.counters, r.draws) for r in recorded], cfg, ecfg)
    dram = energy_comparison(result, geometry, cfg, ecfg) if tiles is None else None
    lookups = result.lookups.tolist() if result.lookups is not None else [0] * 6
    total_analytic = result.analytic_frame + geometry.analytic
    total_reference = result.reference_frame + geometry.reference
    total_error = (total_analytic - total_reference) / np.maximum(total_reference, 1.0)
    if tiles is not None:        # a sample of the raster phase and a whole geometry phase
        total_error = np.full(total_error.size, np.nan)
    rendered = result.quads > 0
    tile_errors = result.tile_error()[rendered[result.reference > 0]]
    gap = np.abs(result.analytic - result.reference)
    worst = np.argsort(-gap, kind="stable")[:WORST]
    return {
        "trace": str(trace), "technique": technique, "size": list(size) if size else None,
        "tiles_per_pass": tiles,
        "config": cfg.path, "energy_config": ecfg.path,
        "frames": [{"frame": int(f), "analytic_raster_cycles": float(a),
                    "reference_raster_cycles": float(r), "relative_error": float(e),
                    "analytic_geometry_cycles": float(ga),
                    "reference_geometry_cycles": float(gr),
                    "geometry_relative_error": float(ge),
                    "total_relative_error": None if np.isnan(te) else float(te)}
                   for f, a, r, e, ga, gr, ge, te in zip(
                       result.frame_ids, result.analytic_frame, result.reference_frame,
                       result.frame_error, geometry.analytic, geometry.reference,
                       geometry.error, total_error, strict=True)],
        "frame_error": distribution(result.frame_error),
        "geometry_error": distribution(geometry.error),
        "total_error": None if tiles is not None else distribution(total_error),
        "tile_error": distribution(tile_errors),
        "dram_energy": dram,
        "reference_caches": {"tile_cache_lookups": lookups[0], "tile_cache_hits": lookups[1],
                             "l2_lookups": lookups[2], "l2_hits": lookups[3],
                             "dram_parameter_buffer_lines": lookups[4],
                             "dram_texture_lines": lookups[5]},
        "worst_tiles": [{"frame": int(result.frame[i]), "pass": int(result.pass_index[i]),
                         "tile": int(result.tile_in_pass[i]), "quads": int(result.quads[i]),
                         "analytic_cycles": float(result.analytic[i]),
                         "reference_cycles": float(result.reference[i])} for i in worst],
        "reference_speed": {"tiles": result.tiles_simulated, "seconds": result.seconds,
                            "tiles_per_second": (result.tiles_simulated / result.seconds
                                                 if result.seconds > 0 else None),
                            "geometry_frames_per_second": (len(geometry.reference)
                                                           / geometry.seconds
                                                           if geometry.seconds > 0 else None)},
        "notes": ["frame_error and relative_error: the raster phase (with --tiles: of the "
                  "compared tiles only); geometry_error: the geometry phase; total_error: both",
                  "tile error over the tiles with quads; a tile's reference cycles are "
                  "finish(t) - finish(t - 1) in traversal order, the analytic's its "
                  "bottleneck + fill + exposed flush, so single tiles differ in attribution "
                  "where frames agree",
                  "dram_energy: the frame's main-memory energy (J), the reference's DRAM "
                  "commands and states (DRAMPower's split: activate/precharge, read and write "
                  "bursts, refresh, active/precharge standby and power-down) against the "
                  "analytic memory energy; absent with --tiles",
                  "reference_caches: the reference's own tile cache and L2 lookups (addresses "
                  "derived from the recorded primitive, draw and tile ids, "
                  "timing/cycle_level/inputs.py)"],
    }


def format_report(report: dict) -> str:
    lines = [f"{report['trace']} ({report['technique']}): cycles, analytic model vs "
             "cycle-level reference",
             f"{'frame':>6} {'raster A':>12} {'raster R':>12} {'error':>8} "
             f"{'geometry A':>11} {'geometry R':>11} {'error':>8} {'total':>8}"]
    for row in report["frames"]:
        lines.append(f"{row['frame']:>6} {row['analytic_raster_cycles']:>12,.0f} "
                     f"{row['reference_raster_cycles']:>12,.0f} "
                     f"{100 * row['relative_error']:>7.2f}% "
                     f"{row['analytic_geometry_cycles']:>11,.0f} "
                     f"{row['reference_geometry_cycles']:>11,.0f} "
                     f"{100 * row['geometry_relative_error']:>7.2f}% "
                     + ("       -" if row["total_relative_error"] is None
                        else f"{100 * row['total_relative_error']:>7.2f}%"))
    for name in ("frame_error", "geometry_error", "total_error", "tile_error"):
        d = report[name]
        if d is None:
            continue
        lines.append(f"{name.replace('_', ' ')} ({d['count']}): mean {100 * d['mean']:.2f}%, "
                     f"mean abs {100 * d['mean_abs']:.2f}%, p50 {100 * d['p50']:.2f}%, "
                     f"p90 {100 * d['p90']:.2f}%, max {100 * d['max']:.2f}%")
    if report.get("dram_energy"):
        for row in report["dram_energy"]["frames"]:
            lines.append(f"frame {row['frame']} DRAM energy: analytic "
                         f"{1e6 * row['analytic_dram_energy']:.1f} uJ, reference "
                         f"{1e6 * row['reference_dram_energy']:.1f} uJ "
                         f"({100 * row['relative_error']:+.1f}%), activations "
                         f"{row['activations']['analytic']:.0f} vs "
                         f"{row['activations']['reference']:.0f}")
    lines.append("worst tiles (frame/pass/tile: quads, analytic, reference cycles):")
    for w in report["worst_tiles"]:
        lines.append(f"  {w['frame']}/{w['pass']}/{w['tile']}: {w['quads']}, "
                     f"{w['analytic_cycles']:.0f}, {w['reference_cycles']:.0f}")
    speed = report["reference_speed"]
    if speed["tiles_per_second"]:
        lines.append(f"reference: {speed['tiles']} tiles in {speed['seconds']:.2f} s, "
                     f"{speed['tiles_per_second']:.0f} tiles/s")
    return "\n".join(lines)
