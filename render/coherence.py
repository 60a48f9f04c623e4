"""``tilesim coherence TRACE``: every frame-coherence technique against the baseline.

The trace is rendered once per technique (``render.techniques``) and once at baseline; per
technique the report gives what it skipped and what it cost next to the oracle, the fragments
shaded and overshading, the average sample rate, the per-frame MSSIM against the baseline
frame (luminance, Wang et al. 2004 settings) and how many frames are bit-identical to it.
``re/xor`` is the seed's ablation (§4.3): RE with an XOR-based signature instead of CRC32,
whose collisions show up as false positives. ``--images DIR`` writes per-frame overlays.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from tilesim.atomic import write_bytes, write_json
from tilesim.errors import EXIT_OK, InputError

DEFAULT_TECHNIQUES = ("te", "re", "re/xor", "evr", "re+evr", "dsr", "memo")
EXIT_NOT_LOSSLESS = 1

# Overlay colors (RGB) per DSR rate index: 1x, 1/4x, 1/16x, 1/64x, 1/256x.
RATE_COLORS = np.array([[0, 0, 0], [60, 160, 255], [60, 220, 120], [255, 200, 40],
                        [255, 60, 60]], dtype=np.float64)


@dataclass
class Run:
    """One render of the trace: images, counters and per-frame technique state."""

    name: str
    images: list[np.ndarray] = field(default_factory=list)
    counters: list = field(default_factory=list)
    fvp: list[tuple[np.ndarray, np.ndarray]] = field(default_factory=list)


def _split(name: str) -> tuple[str, str]:
    technique, _, signature = name.partition("/")
    return technique, signature or "crc32"


def render_run(trace_path: str, name: str, frames: range, dsr_parameters=None,
               progress=None) -> Run:
    from .pipeline import Renderer
    from .techniques import Techniques
    from .trace_file import open_trace

    technique, signature = _split(name)
    run = Run(name)
    with open_trace(trace_path) as trace:
        techniques = Techniques.parse(technique, source=trace_path, signature=signature,
                                      dsr_parameters=dsr_parameters)
        renderer = Renderer(trace.width, trace.height, depth_bits=trace.depth_bits,
                            source=trace_path, techniques=techniques)
        for result in renderer.render(trace.frames(0, frames.stop), keep=frames):
            run.images.append(result.image)
            run.counters.append(result.counters)
            evr = renderer.techniques.evr
            if evr is not None:
                run.fvp.append((evr.fvp.copy(), evr.fvp_is_layer.copy()))
            if progress is not None:
                progress.update(1)
    return run


def _screen(counters):
    """The default framebuffer's pass of a frame (None when it drew nothing there)."""
    return next((p for p in counters.passes if p.target == "default"), None)


def _tile_total(run: Run, name: str) -> int:
    return int(sum(p.tiles[name].sum() for c in run.counters for p in c.passes
                   if p.target == "default" and name in p.tiles))


def summarize(run: Run, baseline: Run) -> dict:
    from .dynamic_sampling_rate import frame_mssim

    frames = len(run.images)
    screens = [_screen(c) for c in run.counters]
    tiles = sum(p.tiles_x * p.tiles_y for p in screens if p is not None) or 1
    shaded = sum(c.total("fragments_shaded") for c in run.counters)
    base_shaded = sum(c.total("fragments_shaded") for c in baseline.counters)
    written = sum(c.total("pixels_written") for c in run.counters)
    mssim = [frame_mssim(a, b) for a, b in zip(run.images, baseline.images, strict=True)]
    identical = sum(np.array_equal(a, b) for a, b in zip(run.images, baseline.images,
                                                         strict=True))
    rates = [p.tiles["dsr_rate"] for p in screens if p is not None and "dsr_rate" in p.tiles]
    sample_rate = (float(np.mean([np.mean(0.25 ** r) for r in rates])) if rates else 1.0)
    report = {
        "frames": frames,
        "frames_bit_identical": int(identical),
        "mssim_min": float(min(mssim)) if mssim else None,
        "mssim": [round(m, 6) for m in mssim],
        "fragments_shaded": int(shaded),
        "fragments_shaded_vs_baseline": shaded / base_shaded if base_shaded else None,
        "overshading": shaded / written if written else None,
        "average_sample_rate": sample_rate,
    }
    if any("re_tiles_skipped" in p.tiles for p in screens if p is not None):
        report.update({
            "tiles_skipped": _tile_total(run, "re_tiles_skipped") / tiles,
            "tiles_equal_color_oracle": _tile_total(run, "re_tiles_equal_color") / tiles,
            "false_positives": _tile_total(run, "re_false_positives"),
            "frames_re_disabled": sum(int(c.scalars.get("re_disabled", 0))
                                      for c in run.counters),
        })
    flushes = _tile_total(run, "te_flushes_skipped") + _tile_total(run, "re_tiles_skipped")
    report["flushes_avoided"] = flushes / tiles
    if any("oracle_fragments_shaded" in p.tiles for p in screens if p is not None):
        report["oracle_fragments_shaded"] = _tile_total(run, "oracle_fragments_shaded")
        report["prims_reordered"] = _tile_total(run, "evr_prims_reordered")
    if rates:
        histogram = np.bincount(np.concatenate(rates), minlength=5)
        report["sampling_rate_histogram"] = {
            label: int(n) for label, n in zip(("1x", "1/4x", "1/16x", "1/64x", "1/256x"),
                                              histogram, strict=True)}
    if any("memo_lookups" in p.tiles for p in screens if p is not None):
        lookups = _tile_total(run, "memo_lookups")
        report["memo_lookups"] = lookups
        report["memo_hit_rate"] = _tile_total(run, "memo_hits") / lookups if lookups else 0.0
        report["memo_collisions"] = sum(int(c.scalars.get("memo_collisions", 0))
                                        for c in run.counters)
    return report


# -- overlays ---------------------------------------------------------------------------------


def _tile_image(values: np.ndarray, counters_pass, height: int, width: int) -> np.ndarray:
    """Per-tile values spread over the image (row 0 at the top)."""
    t = counters_pass.tile_size
    grid = values.reshape(counters_pass.tiles_y, counters_pass.tiles_x)
    full = np.repeat(np.repeat(grid, t, axis=0), t, axis=1)[:height, :width]
    return full[::-1]


def overlay(image: np.ndarray, tile_rgb: np.ndarray, tile_alpha: np.ndarray, counters_pass,
            strength: float = 0.55) -> np.ndarray:
    """The frame with each tile tinted by ``tile_rgb`` (tiles, 3) where ``tile_alpha``."""
    h, w = image.shape[:2]
    rgb = np.stack([_tile_image(tile_rgb[:, c], counters_pass, h, w) for c in range(3)], -1)
    alpha = _tile_image(tile_alpha.astype(np.float64), counters_pass, h, w)[..., None]
    base = image[..., :3].astype(np.float64)
    out = base * (1 - strength * alpha) + rgb * strength * alpha
    return np.clip(out + 0.5, 0, 255).astype(np.uint8)


def write_overlays(folder: Path, runs: dict[str, Run], frames: range) -> list[Path]:
    from .commands_cli import png_bytes

    written = []

    def save(kind: str, k: int, image: np.ndarray) -> None:
        path = folder / kind / f"{frames[k]:06d}.png"
        written.append(write_bytes(path, png_bytes(image)))

    for name, run in runs.items():
        for k, (image, counters) in enumerate(zip(run.images, run.counters, strict=True)):
            screen = _screen(counters)
            if screen is None:
                continue
            n = screen.tiles_x * screen.tiles_y
            if name == "re" and "re_tiles_skipped" in screen.tiles:
                skipped = screen.tiles["re_tiles_skipped"] > 0
                save("re_skipped", k, overlay(image, np.tile([255, 0, 255], (n, 1)),
                                              skipped, screen))
            if name == "te" and "te_flushes_skipped" in screen.tiles:
                kept = screen.tiles["te_flushes_skipped"] > 0
                save("te_not_flushed", k, overlay(image, np.tile([0, 255, 255], (n, 1)),
                                                  kept, screen))
            if name == "dsr" and "dsr_rate" in screen.tiles:
                rate = screen.tiles["dsr_rate"].astype(np.int64)
                save("dsr_rate", k, overlay(image, RATE_COLORS[rate], rate > 0, screen, 0.45))
            if name == "evr" and k < len(run.fvp):
                fvp, is_layer = run.fvp[k]
                # Depth FVPs in gray (near dark, far light), layer FVPs in orange shades.
                depth = np.where(is_layer, 0, fvp) / float((1 << 24) - 1)
                layer = np.where(is_layer, fvp, 0)
                shade = np.where(is_layer, 1.0 - np.minimum(layer, 8) / 8.0, depth)
                rgb = np.where(is_layer[:, None], np.stack([255 * np.ones(n), 140 * shade,
                                                            0 * shade], -1),
                               (255 * shade)[:, None].repeat(3, axis=1))
                save("evr_fvp", k, overlay(image, rgb, np.ones(n, dtype=bool), screen, 0.6))
    return written


# -- command line -----------------------------------------------------------------------------


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "coherence", help="compare every frame-coherence technique with the baseline",
        description="Render TRACE at baseline and with each technique (TE, RE, RE with an XOR "
                    "signature, EVR, RE+EVR, DSR, memoization) and report per technique: tiles "
                    "skipped and the oracle, flushes avoided, fragments shaded, overshading, "
                    "average sample rate, per-frame MSSIM against the baseline and frames "
                    "bit-identical to it. Exit 1 when a lossless technique changed a frame.")
    p.add_argument("trace", help="a .tsim trace")
    p.add_argument("--frames", default=":", metavar="A:B",
                   help="frames to compare (default: all); earlier frames are rendered too")
    p.add_argument("--techniques", default=",".join(DEFAULT_TECHNIQUES), metavar="LIST",
                   help="comma-separated techniques (default: %(default)s); NAME/xor uses "
                        "the XOR signature")
    p.add_argument("--dsr-parameters", metavar="FILE",
                   help="DSR parameters (TOML from `tilesim dsr-search`; default: shipped)")
    p.add_argument("--images", metavar="DIR", help="write per-frame overlays to DIR")
    p.add_argument("--out", metavar="FILE", help="also write the JSON report to FILE")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.set_defaults(func=_coherence)


LOSSLESS = ("te", "re", "evr", "re+evr", "memo")


def _coherence(args: argparse.Namespace) -> int:
    from tqdm import tqdm

    from .commands_cli import parse_frames
    from .trace_file import open_trace

    with open_trace(args.trace) as trace:
        frames = parse_frames(args.frames, trace.frame_count)
        size = (trace.width, trace.height)
    names = [n.strip() for n in args.techniques.split(",") if n.strip()]
    if not names:
        raise InputError("--techniques: no technique given")
    renders = (frames.stop) * (len(names) + 1)
    with tqdm(total=renders, desc="coherence", unit="frame", disable=not sys.stderr.isatty(),
              leave=False) as bar:
        baseline = render_run(args.trace, "baseline", range(0, frames.stop), progress=bar)
        runs = {name: render_run(args.trace, name, range(0, frames.stop),
                                 args.dsr_parameters, progress=bar) for name in names}
    # Only the frames asked for are reported.
    keep = list(frames)
    for run in (baseline, *runs.values()):
        run.images = [run.images[k] for k in keep]
        run.counters = [run.counters[k] for k in keep]
        run.fvp = [run.fvp[k] for k in keep] if run.fvp else []
    report = {"trace": args.trace, "frames": [frames.start, frames.stop], "size": list(size),
              "baseline": summarize(baseline, baseline),
              "techniques": {name: summarize(run, baseline) for name, run in runs.items()}}
    if args.images:
        write_overlays(Path(args.images), {"baseline": baseline, **runs}, frames)
    if args.out:
        write_json(args.out, report)
    lossless_broken = [n for n in names if _split(n)[1] == "crc32" and n in LOSSLESS
                       and report["techniques"][n]["frames_bit_identical"] != len(keep)]
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        _print_table(report)
    if lossless_broken:
        print(f"not lossless: {', '.join(lossless_broken)}", file=sys.stderr)
        return EXIT_NOT_LOSSLESS
    return EXIT_OK


def _fmt(value, percent: bool = False) -> str:
    if value is None:
        return "-"
    if percent:
        return f"{100 * value:5.1f}%"
    if isinstance(value, float):
        return f"{value:.3f}"
    return str(value)


def _print_table(report: dict) -> None:
    rows = [("technique", "identical", "min MSSIM", "skipped", "oracle", "flush avoided",
             "shaded vs base", "overshading", "sample rate")]
    for name, r in [("baseline", report["baseline"]), *report["techniques"].items()]:
        rows.append((name, f"{r['frames_bit_identical']}/{r['frames']}", _fmt(r["mssim_min"]),
                     _fmt(r.get("tiles_skipped"), True), _fmt(r.get("tiles_equal_color_oracle"),
                                                              True),
                     _fmt(r["flushes_avoided"], True), _fmt(r["fragments_shaded_vs_baseline"]),
                     _fmt(r["overshading"]), _fmt(r["average_sample_rate"])))
    widths = [max(len(row[c]) for row in rows) for c in range(len(rows[0]))]
    for row in rows:
        print("  ".join(cell.rjust(w) for cell, w in zip(row, widths, strict=True)))
