"""Write the varied set of traces the shipped DSR parameters are fitted and validated on.

Dynamic Sampling Rate's <T, D> pairs (Frame Coherence §6.3) must keep MSSIM >= 0.95 on
programs the fit has not seen, so they are fitted on workloads of different kinds and
validated by leaving whole workloads out (``tilesim dsr-search --folds K``):

- the four game-like workloads of ``tilesim.render.workloads`` (2D puzzle, side-scroller,
  3D runner, render-to-texture);
- ``spinning_sprites`` with the sprites appearing on frame 1 over a background DSR has
  already reduced (abrupt content change);
- glmark2's bunny (``traces/bunny.tsim``, the captured build scene) and glmark2-es2 scenes
  captured with apitrace on Mesa and imported (texture, effect2d, desktop, shading, build,
  bump, pulsar), when glmark2-es2, apitrace and Xvfb are installed.

Every trace is written at one small size so the five uniform-rate renders stay quick::

    python scripts/make_dsr_training_set.py --out-dir out/dsr_set --size 320x240 --frames 30
    tilesim dsr-search --train out/dsr_set/*.tsim --folds 4 --size 320x240 \
        --train-min-mssim 0.97 --local-minimum-mssim 0.98 -o out/dsr_fit

(the command the shipped ``render/techniques/dsr_parameters.toml`` was fitted with, written as
out/dsr_fit/dsr_parameters.toml; ``-o params.toml`` when it was, before ``--out`` was a folder).
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tilesim.errors import InputError  # noqa: E402
from tilesim.options import window_size  # noqa: E402

GLMARK2_SCENES = ("texture", "effect2d", "desktop", "shading", "build", "bump", "pulsar")


def write_synthetic(out_dir: Path, width: int, height: int, frames: int) -> list[Path]:
    from tilesim.render.traces.trace_file import write_trace
    from tilesim.render.workloads import GAME_LIKE, spinning_sprites, write_workload

    written = []
    for name in GAME_LIKE:
        written.append(write_workload(name, out_dir / f"{name}.tsim", width, height, frames))
    commands = spinning_sprites.build(width, height, frames, appear=1)
    source = {"generator": "tilesim.render.workloads.spinning_sprites", "appear": 1,
              "frames": frames, "width": width, "height": height,
              "made_by": "scripts/make_dsr_training_set.py"}
    written.append(write_trace(out_dir / "spinning_sprites.tsim", commands, width=width,
                               height=height, name="spinning_sprites", source=source))
    bunny = out_dir / "bunny.tsim"
    shutil.copyfile(ROOT / "traces" / "bunny.tsim", bunny)   # rendered at --size by the search
    written.append(bunny)
    return written


def write_glmark2(out_dir: Path, width: int, height: int, frames: int) -> list[Path]:
    from tilesim.render.traces.apitrace_import import import_apitrace
    from tilesim.render.traces.capture import capture

    written = []
    with tempfile.TemporaryDirectory() as work:
        for scene in GLMARK2_SCENES:
            raw = Path(work) / f"{scene}.trace"
            capture(f"glmark2-es2:{scene}", raw, frames=frames, size=(width, height))
            target = out_dir / f"glmark2-{scene}.tsim"
            import_apitrace(raw, target, frames=frames, name=f"glmark2-{scene}")
            written.append(target)
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     epilog="Exit codes: 0 written, 2 bad usage or input.")
    parser.add_argument("--out-dir", default="out/dsr_set", help="folder (default %(default)s)")
    parser.add_argument("--size", default="320x240", help="window size (default %(default)s)")
    parser.add_argument("--frames", type=int, default=30,
                        help="frames per trace (default %(default)s)")
    parser.add_argument("--no-glmark2", action="store_true",
                        help="only the synthetic workloads (no apitrace capture)")
    args = parser.parse_args(argv)
    try:
        width, height = window_size(args.size)
        out_dir = Path(args.out_dir)
        out_dir.mkdir(parents=True, exist_ok=True)
        written = write_synthetic(out_dir, width, height, args.frames)
        if not args.no_glmark2:
            if not (shutil.which("glmark2-es2") and shutil.which("apitrace")):
                raise InputError("glmark2-es2 or apitrace is not installed "
                                 "(apt install glmark2-es2-x11 apitrace), or pass --no-glmark2")
            written += write_glmark2(out_dir, width, height, args.frames)
    except InputError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    for path in written:
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
