"""Speed of ``tilesim estimate``: load + model time for many frames of synthetic counters.

    python -m tilesim.timing.benchmark [--frames 100] [--size 1920x1080] [--screen] [--keep DIR]

Writes ``--frames`` counter files of one render pass (every tile counter random, dense: the
slowest case for decompression; the fragment work split per tile among four corpus programs
and the vertex work among their vertex programs, so shading goes through the shader core's
per-program throughput) with ``FrameCounters.save``, then times, best of 3: reading them
into one batch, the model over the batch, and the whole command path (``estimate_render``,
with the OLED model over solid-grey PNGs when ``--screen``). A benchmark, never a test.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import numpy as np

from tilesim.images import png_bytes
from tilesim.options import window_size_argument
from tilesim.render.pipeline.counters import TILE_COUNTERS, FrameCounters, PassCounters
from tilesim.render_folder import COUNTERS_DIR, frame_files
from tilesim.shaders.ir import program_digest
from tilesim.timing.config import load_energy_config, load_gpu_config
from tilesim.timing.counter_batch import load_batch
from tilesim.timing.model import estimate_batch
from tilesim.timing.report import estimate_render

CORPUS = Path(__file__).resolve().parents[1] / "shaders" / "corpus"
PROGRAMS = ("es2gears-415c9aed", "glmark2-build-use-vbo-false-f1adc55f",
            "glmark2-bump-bump-render-height-22ad4501",
            "glmark2-effect2d-kernel-0-1-0-1-4-1-0-1-0-90d8191f")


def corpus_programs() -> list[tuple[str, str]]:
    """(vertex, fragment) TGSI texts of the benchmark's corpus programs."""
    return [((CORPUS / name / "vertex.tgsi").read_text(),
             (CORPUS / name / "fragment.tgsi").read_text()) for name in PROGRAMS]


def write_counters(folder: Path, frames: int, width: int, height: int, screen: bool) -> None:
    rng = np.random.default_rng(0)
    tiles_x, tiles_y = -(-width // 16), -(-height // 16)
    n = tiles_x * tiles_y
    programs = [(program_digest(v), v, program_digest(f), f) for v, f in corpus_programs()]
    for i in range(frames):
        f = FrameCounters(i)
        for k in f.scalars:
            f.scalars[k] = int(rng.integers(0, 100_000))
        p = PassCounters("default", width, height, 16, tiles_x, tiles_y, np.arange(n))
        for name in TILE_COUNTERS:
            p.tiles[name] = rng.integers(0, 3000, n)
        if programs:
            quad = p.tiles["fs_quad_alu"] + p.tiles["fs_quad_tex"] + p.tiles["fs_quad_flow"]
            share = rng.dirichlet(np.ones(len(programs)), n).T
            split = np.floor(quad * share).astype(np.int64)
            split[0] += quad - split.sum(axis=0)
            for (vd, vt, fd, ft), work in zip(programs, split, strict=True):
                p.fs_programs[fd] = work
                f.programs[vd], f.programs[fd] = vt, ft
                f.vs_programs[vd] = int(rng.integers(1, 100_000))
        f.passes.append(p)
        png, npz = frame_files(folder, i)
        f.save(npz)
        if screen:
            png.parent.mkdir(parents=True, exist_ok=True)
            image = np.full((height, width, 4), 100 + i % 50, dtype=np.uint8)
            png.write_bytes(png_bytes(image))


def best_of(fn, repeats: int = 3) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--frames", type=int, default=100)
    ap.add_argument("--size", type=window_size_argument(), default="1920x1080")
    ap.add_argument("--screen", action="store_true", help="also time the OLED model on PNGs")
    ap.add_argument("--keep", metavar="DIR", help="write the counters here (default: a temp dir)")
    args = ap.parse_args(argv)
    width, height = args.size
    cfg, ecfg = load_gpu_config(), load_energy_config()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(args.keep or tmp)
        write_counters(folder, args.frames, width, height, args.screen)
        files = sorted((folder / COUNTERS_DIR).glob("*.npz"))
        batch = load_batch(files)
        result = {
            "frames": args.frames, "size": f"{width}x{height}",
            "tiles": int(batch.tile_frame.size),
            "load_s": best_of(lambda: load_batch(files)),
            "model_s": best_of(lambda: estimate_batch(batch, cfg, ecfg)),
            "estimate_s": best_of(lambda: estimate_render("bench", folder, cfg, ecfg,
                                                            screen=args.screen).frames),
        }
    print(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
