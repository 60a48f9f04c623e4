"""Golden frames: tilesim's own frames, accepted against Mesa when made, re-checked by tests.

``goldens/manifest.json`` lists, for each golden, the trace and frame it comes from, how it
was made (tilesim version, tile size), its PNG and that PNG's SHA-256, and its MSSIM against
Mesa llvmpipe's frame of the same trace when it was accepted. Tests re-render every golden
and require bit equality with the PNG. ``tilesim goldens update`` remakes them on purpose:
it renders each golden with tilesim and with Mesa, refuses one whose MSSIM falls below the
acceptance threshold, writes the PNGs atomically, and prints what changed.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from tilesim import __version__
from tilesim.atomic import check_output, write_bytes, write_json
from tilesim.errors import EXIT_FAILED_CHECK, EXIT_OK, InputError
from tilesim.images import image_metrics, png_bytes, read_png
from tilesim.render.reference.replay_gl import reference_frames
from tilesim.render.studies.runner import render_trace
from tilesim.render.traces.trace_file import open_trace
from tilesim.thresholds import GOLDEN_ACCEPT_MSSIM

ROOT = Path(__file__).resolve().parents[2]
GOLDENS = ROOT / "goldens"
MANIFEST = GOLDENS / "manifest.json"


@dataclass
class Golden:
    name: str
    trace: str        # path relative to the repository root
    frame: int
    png: str          # path relative to goldens/
    sha256: str = ""
    mssim_vs_mesa: float | None = None
    made_with: dict | None = None

    def to_dict(self) -> dict:
        return dict(self.__dict__)


def load_manifest(path: Path = MANIFEST) -> list[Golden]:
    if not path.exists():
        return []
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return [Golden(**entry) for entry in data["goldens"]]
    except (ValueError, KeyError, TypeError) as exc:
        raise InputError(f"malformed golden manifest: {exc}", source=str(path)) from None


def save_manifest(goldens: list[Golden], path: Path = MANIFEST) -> None:
    write_json(path, {"format": "tilesim-goldens", "version": 1,
                      "accept_mssim": GOLDEN_ACCEPT_MSSIM,
                      "goldens": [g.to_dict() for g in goldens]})


def render_frames(trace_path: Path, frames: set[int]) -> dict[int, np.ndarray]:
    """tilesim's images of ``frames`` of a trace (rendered from its first frame)."""
    return {r.index: r.image for r in
            render_trace(trace_path, frames=frames, source=str(trace_path))}


def mesa_frames(trace_path: Path, frames: set[int]) -> dict[int, np.ndarray]:
    with open_trace(trace_path) as trace:
        stop = max(frames) + 1
        images = reference_frames(list(trace.frames(0, stop)), width=trace.width,
                                  height=trace.height)
    return {i: images[i] for i in frames}


def check(goldens: list[Golden]) -> list[tuple[Golden, int]]:
    """Re-render every golden; returns (golden, differing pixels) for those not identical."""
    failures = []
    by_trace: dict[str, list[Golden]] = {}
    for g in goldens:
        by_trace.setdefault(g.trace, []).append(g)
    for trace, items in by_trace.items():
        images = render_frames(ROOT / trace, {g.frame for g in items})
        for g in items:
            expected = read_png(GOLDENS / g.png, "RGBA")   # compared on every channel
            got = images[g.frame]
            if got.shape != expected.shape:
                failures.append((g, got.shape[0] * got.shape[1]))
            elif not np.array_equal(got, expected):
                failures.append((g, int((got != expected).any(axis=2).sum())))
    return failures


def update(goldens: list[Golden], *, out=sys.stdout) -> tuple[list[Golden], list[str]]:
    """Remake every golden (tilesim + Mesa acceptance); returns the new list and refusals."""

    refused: list[str] = []
    by_trace: dict[str, list[Golden]] = {}
    for g in goldens:
        by_trace.setdefault(g.trace, []).append(g)
    for trace, items in by_trace.items():
        frames = {g.frame for g in items}
        ours = render_frames(ROOT / trace, frames)
        theirs = mesa_frames(ROOT / trace, frames)
        for g in items:
            mssim = image_metrics(ours[g.frame], theirs[g.frame], g.frame, g.name).mssim
            if mssim < GOLDEN_ACCEPT_MSSIM:
                refused.append(f"{g.name}: MSSIM {mssim:.4f} against Mesa is below "
                               f"{GOLDEN_ACCEPT_MSSIM}; the golden was left as it was")
                continue
            data = png_bytes(ours[g.frame])
            digest = hashlib.sha256(data).hexdigest()
            path = GOLDENS / g.png
            if path.exists() and g.sha256 == digest:
                print(f"unchanged {g.name}", file=out)
            else:
                changed = "new" if not path.exists() else "changed"
                if changed == "changed":
                    old = read_png(path, "RGBA")
                    pixels = (int((old != ours[g.frame]).any(axis=2).sum())
                              if old.shape == ours[g.frame].shape else -1)
                    changed += f" ({pixels} pixels differ)"
                print(f"{changed} {g.name} (MSSIM vs Mesa {mssim:.5f})", file=out)
                write_bytes(path, data)
            g.sha256 = digest
            g.mssim_vs_mesa = round(mssim, 6)
            g.made_with = {"tilesim": __version__, "tile_size": 16,
                           "reference": "Mesa llvmpipe via tilesim.render.reference.replay_gl"}
    return goldens, refused


def register(subparsers) -> None:
    p = subparsers.add_parser("goldens", help="check or remake the golden frames",
                              description="Golden frames of the bundled traces: 'check' "
                                          "re-renders them (bit-exact), 'update' remakes "
                                          "them on purpose after accepting each against "
                                          "Mesa (needs Mesa), 'add' registers new ones.")
    sub = p.add_subparsers(dest="goldens_command", metavar="COMMAND", required=True)
    c = sub.add_parser("check", help="re-render every golden and compare bit for bit")
    c.add_argument("--json", action="store_true")
    c.set_defaults(func=_check)
    u = sub.add_parser("update", help="remake every golden (tilesim, accepted against Mesa)")
    u.set_defaults(func=_update)
    a = sub.add_parser("add", help="register goldens: TRACE:FRAME[,FRAME...] (then update)")
    a.add_argument("specs", nargs="+", metavar="TRACE:FRAMES")
    a.set_defaults(func=_add)


def _check(args: argparse.Namespace) -> int:
    goldens = load_manifest()
    failures = check(goldens)
    if args.json:
        print(json.dumps({"goldens": len(goldens),
                          "failed": [{"name": g.name, "pixels": n} for g, n in failures]}))
    else:
        for g, n in failures:
            print(f"FAILED {g.name}: {n} pixels differ from {GOLDENS / g.png}", file=sys.stderr)
        print(f"{len(goldens) - len(failures)} of {len(goldens)} goldens identical")
    return EXIT_FAILED_CHECK if failures else EXIT_OK


def _update(args: argparse.Namespace) -> int:
    goldens = load_manifest()
    for path in (MANIFEST, *(GOLDENS / g.png for g in goldens)):
        check_output(path, folder=False)   # before any rendering
    goldens, refused = update(goldens)
    save_manifest(goldens)
    for line in refused:
        print(f"REFUSED {line}", file=sys.stderr)
    return EXIT_FAILED_CHECK if refused else EXIT_OK


def _add(args: argparse.Namespace) -> int:
    goldens = load_manifest()
    check_output(MANIFEST, folder=False)
    names = {g.name for g in goldens}
    for spec in args.specs:
        trace, _, frames = spec.rpartition(":")
        if not trace or not frames:
            raise InputError(f"expected TRACE:FRAME[,FRAME...], got {spec!r}")
        path = Path(trace).resolve()
        try:
            relative = path.relative_to(ROOT)
        except ValueError:
            raise InputError(f"{trace}: goldens must come from traces inside the "
                             "repository") from None
        with open_trace(path) as opened:
            count = opened.frame_count
        for text in frames.split(","):
            try:
                frame = int(text)
            except ValueError:
                raise InputError(f"frame {text!r} is not a number", source=spec) from None
            if not 0 <= frame < count:
                raise InputError(f"the trace has frames 0..{count - 1}", source=spec)
            name = f"{path.stem}-{frame:04d}"
            if name not in names:
                goldens.append(Golden(name, str(relative), frame, f"{name}.png"))
                names.add(name)
    save_manifest(goldens)
    print(f"{len(goldens)} goldens registered; run 'tilesim goldens update' to make them")
    return EXIT_OK
