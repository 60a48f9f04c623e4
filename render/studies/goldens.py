"""Golden frames: tilesim's own frames, accepted against Mesa when made, re-checked by tests.

``goldens/manifest.json`` lists, for each golden, the trace and frame it comes from, how it
was made (tilesim version, tile size), its PNG and that PNG's SHA-256, and its MSSIM against
Mesa llvmpipe's frame of the same trace when it was accepted (for a frame smaller than the SSIM
window, which has none, its largest channel difference from Mesa's instead, accepted within the
probe tolerance: :mod:`tilesim.images`). Tests re-render every golden
and require bit equality with the PNG. ``tilesim goldens update`` remakes them on purpose:
it renders each golden with tilesim and with Mesa, refuses one whose MSSIM falls below the
acceptance threshold, writes the PNGs atomically, and prints what changed.

``tilesim goldens check --technique T`` (or ``--all-techniques``) re-renders each golden's
trace with a frame-coherence technique instead (:func:`check_techniques`): a lossless one
must give the golden bit for bit, a quality-affecting one (DSR, memoization with 32-bit keys,
RE with an XOR signature) must stay at or above DSR's MSSIM floor against it.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from tilesim import __version__
from tilesim.atomic import check_output, write_bytes, write_json
from tilesim.backend import backend_name, to_host, use_backend
from tilesim.errors import EXIT_FAILED_CHECK, EXIT_OK, InputError
from tilesim.images import SSIM_WINDOW, image_metrics, png_bytes, read_png
from tilesim.options import positive_int
from tilesim.render.reference.replay_gl import reference_frames
from tilesim.render.studies.cluster import dask_client, map_in_order
from tilesim.render.studies.coherence import DEFAULT_TECHNIQUES, LOSSLESS
from tilesim.render.studies.runner import render_trace
from tilesim.render.techniques.bus import Techniques
from tilesim.render.techniques.dynamic_sampling_rate import frame_mssim
from tilesim.render.traces.trace_file import open_trace
from tilesim.thresholds import DSR_MIN_MSSIM, GOLDEN_ACCEPT_MSSIM, PROBE_TOLERANCE

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
    max_diff_vs_mesa: int | None = None   # a frame below the SSIM window (mssim_vs_mesa None)

    def to_dict(self) -> dict:
        d = dict(self.__dict__)
        if d["max_diff_vs_mesa"] is None:
            del d["max_diff_vs_mesa"]
        return d

    def accepted(self) -> bool:
        """Whether the golden met the acceptance bar against Mesa when it was made: MSSIM >=
        GOLDEN_ACCEPT_MSSIM, or for a probe-sized frame every channel within
        PROBE_TOLERANCE."""
        if self.mssim_vs_mesa is not None:
            return self.mssim_vs_mesa >= GOLDEN_ACCEPT_MSSIM
        return self.max_diff_vs_mesa is not None and self.max_diff_vs_mesa <= PROBE_TOLERANCE


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


def _by_trace(goldens: list[Golden]) -> dict[str, list[Golden]]:
    by_trace: dict[str, list[Golden]] = {}
    for g in goldens:
        by_trace.setdefault(g.trace, []).append(g)
    return by_trace


def check(goldens: list[Golden], folder: Path | None = None) -> list[tuple[Golden, int]]:
    """Re-render every golden; returns (golden, differing pixels) for those not identical.
    ``folder``: where the PNGs are (default ``goldens/``)."""
    folder = GOLDENS if folder is None else folder
    failures = []
    for trace, items in _by_trace(goldens).items():
        images = render_frames(ROOT / trace, {g.frame for g in items})
        for g in items:
            expected = read_png(folder / g.png, "RGBA")   # compared on every channel
            got = images[g.frame]
            if got.shape != expected.shape:
                failures.append((g, got.shape[0] * got.shape[1]))
            elif not np.array_equal(got, expected):
                failures.append((g, int((got != expected).any(axis=2).sum())))
    return failures


def technique_names(names: Iterable[str]) -> list[str]:
    """``names`` normalized (lower case, no repeats, order kept), each checked by
    ``Techniques.from_name`` before anything renders (InputError: unknown technique)."""
    out: list[str] = []
    for name in (n.strip().lower() for n in names):
        if not name:
            raise InputError("empty technique name", source="--technique")
        Techniques.from_name(name, source="--technique")
        if name not in out:
            out.append(name)
    return out


def is_lossless(name: str) -> bool:
    """Whether technique ``name`` must leave frames bit-identical to the baseline (coherence's
    LOSSLESS set with the default CRC32 signature and 64-bit memo keys; ``re/crc32`` and
    ``memo/64`` count too)."""
    hooks = Techniques.from_name(name)
    return ((hooks.name == "baseline" or hooks.name in LOSSLESS)
            and hooks.signature == "crc32" and hooks.memo_key_bits == 64)


def check_techniques(goldens: list[Golden], techniques: Iterable[str], *,
                     folder: Path | None = None, workers: int = 1,
                     progress: bool = False) -> list[dict]:
    """Every golden re-rendered with every technique, one row per (technique, golden).

    Each trace is rendered once per technique, from its first frame to its last golden's
    (techniques carry state from frame to frame). A lossless technique (:func:`is_lossless`)
    passes when the frame equals the golden bit for bit on RGBA, any other when its MSSIM
    (luminance, ``frame_mssim``: the measure DSR's floor is fitted with) is at least
    ``DSR_MIN_MSSIM``. Row keys: technique, golden, trace, frame, criterion, bit_identical,
    mssim, max_diff (largest channel difference, 0..255), passed; mssim and max_diff are None
    when the sizes differ. Rows in the order of ``techniques``, then of ``goldens``.

    ``folder``: where the PNGs are (default ``goldens/``). ``workers`` > 1 renders the
    (trace, technique) pairs side by side on a local Dask cluster of that many processes.
    ``progress``: a progress bar on stderr where it is a terminal."""
    from tqdm import tqdm

    names = technique_names(techniques)
    folder = GOLDENS if folder is None else Path(folder)
    jobs = [(trace, name, items, str(folder), backend_name())
            for name in names for trace, items in _by_trace(goldens).items()]
    if workers > 1 and len(jobs) > 1:
        with dask_client(min(workers, len(jobs))) as client:
            done = map_in_order(client, _technique_job, jobs, desc="goldens",
                                unit="render", progress=progress, leave=False)
    else:
        total = sum(max(g.frame for g in items) + 1 for _, _, items, _, _ in jobs)
        with tqdm(total=total, desc="goldens", unit="frame", leave=False,
                  disable=None if progress else True) as bar:
            done = [_technique_rows(*job[:4], progress=bar) for job in jobs]
    by_key = {(row["technique"], row["golden"]): row for rows in done for row in rows}
    return [by_key[name, g.name] for name in names for g in goldens]


def _technique_rows(trace: str, name: str, items: list[Golden], folder: str,
                    progress=None) -> list[dict]:
    """One technique's render of ``trace`` up to its last golden frame, checked against each
    golden of ``items``."""
    hooks = Techniques.from_name(name, source=trace)
    lossless = is_lossless(name)
    wanted = {g.frame for g in items}
    images: dict[int, np.ndarray] = {}
    # Every frame is yielded (not only the wanted ones) so the bar moves frame by frame.
    for result in render_trace(ROOT / trace, frames=range(max(wanted) + 1),
                               technique=None if hooks.name == "baseline" else hooks,
                               source=trace):
        if result.index in wanted:
            images[result.index] = to_host(result.image)
        if progress is not None:
            progress.update(1)
    return [_row(name, g, images[g.frame], read_png(Path(folder) / g.png, "RGBA"), lossless)
            for g in items]


def _technique_job(trace: str, name: str, items: list[Golden], folder: str,
                   backend: str = "numpy") -> list[dict]:
    """``_technique_rows`` in a worker process, on the parent's array backend."""
    with use_backend(backend):
        return _technique_rows(trace, name, items, folder)


def _row(name: str, g: Golden, got: np.ndarray, expected: np.ndarray, lossless: bool) -> dict:
    """A frame below the SSIM window has no MSSIM: a quality-affecting technique must keep
    every channel of it within PROBE_TOLERANCE, as a probe."""
    probe = min(expected.shape[:2]) < SSIM_WINDOW
    criterion = ("bit-identical" if lossless else
                 f"every channel within {PROBE_TOLERANCE}/255" if probe else
                 f"MSSIM >= {DSR_MIN_MSSIM}")
    row = {"technique": name, "golden": g.name, "trace": g.trace, "frame": g.frame,
           "criterion": criterion}
    if got.shape != expected.shape:
        return {**row, "bit_identical": False, "mssim": None, "max_diff": None,
                "passed": False}
    identical = bool(np.array_equal(got, expected))
    max_diff = int(np.abs(got.astype(np.int16) - expected.astype(np.int16)).max())
    if probe:
        return {**row, "bit_identical": identical, "mssim": None, "max_diff": max_diff,
                "passed": identical if lossless else max_diff <= PROBE_TOLERANCE}
    mssim = frame_mssim(got, expected)
    return {**row, "bit_identical": identical, "mssim": round(mssim, 6), "max_diff": max_diff,
            "passed": identical if lossless else mssim >= DSR_MIN_MSSIM}


def update(goldens: list[Golden], *, out=sys.stdout) -> tuple[list[Golden], list[str]]:
    """Remake every golden (tilesim + Mesa acceptance); returns the new list and refusals."""

    refused: list[str] = []
    for trace, items in _by_trace(goldens).items():
        frames = {g.frame for g in items}
        ours = render_frames(ROOT / trace, frames)
        theirs = mesa_frames(ROOT / trace, frames)
        for g in items:
            metrics = image_metrics(ours[g.frame], theirs[g.frame], g.frame, g.name)
            against = (f"MSSIM vs Mesa {metrics.mssim:.5f}" if metrics.mssim is not None else
                       f"max difference from Mesa {metrics.max_diff}/255")
            if not metrics.passes(GOLDEN_ACCEPT_MSSIM):
                why = (f"MSSIM {metrics.mssim:.4f} against Mesa is below {GOLDEN_ACCEPT_MSSIM}"
                       if metrics.mssim is not None else
                       f"a frame below the {SSIM_WINDOW}x{SSIM_WINDOW} SSIM window differs "
                       f"from Mesa's by up to {metrics.max_diff}/255, over the probe "
                       f"tolerance {PROBE_TOLERANCE}")
                refused.append(f"{g.name}: {why}; the golden was left as it was")
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
                print(f"{changed} {g.name} ({against})", file=out)
                write_bytes(path, data)
            g.sha256 = digest
            g.mssim_vs_mesa = None if metrics.mssim is None else round(metrics.mssim, 6)
            g.max_diff_vs_mesa = metrics.max_diff if metrics.mssim is None else None
            g.made_with = {"tilesim": __version__, "tile_size": 16,
                           "reference": "Mesa llvmpipe via tilesim.render.reference.replay_gl"}
    return goldens, refused


def register(subparsers) -> None:
    p = subparsers.add_parser("goldens", help="check or remake the golden frames",
                              description="Golden frames of the bundled traces: 'check' "
                                          "re-renders them (bit-exact; with --technique, "
                                          "with frame-coherence techniques), 'update' remakes "
                                          "them on purpose after accepting each against "
                                          "Mesa (needs Mesa), 'add' registers new ones.")
    sub = p.add_subparsers(dest="goldens_command", metavar="COMMAND", required=True)
    c = sub.add_parser("check", help="re-render every golden and compare bit for bit",
                       description="Re-render every golden at baseline and compare it bit for "
                                   "bit; with --technique or --all-techniques, render each "
                                   "golden's trace (from its first frame) with each technique "
                                   "and require lossless ones (te, re, evr, re+evr, memo) to "
                                   "be bit-identical and the others (dsr, memo/32, re/xor) "
                                   f"to keep MSSIM >= {DSR_MIN_MSSIM}. Exit 1 when a check "
                                   "fails.")
    which = c.add_mutually_exclusive_group()
    which.add_argument("--technique", action="append", metavar="T",
                       help="check the goldens rendered with technique T (te, re, evr, "
                            "re+evr, dsr, memo, memo/32, re/xor, ...); repeat for several")
    which.add_argument("--all-techniques", action="store_true",
                       help="baseline and every technique of `tilesim coherence` "
                            f"({', '.join(DEFAULT_TECHNIQUES)})")
    c.add_argument("--workers", type=positive_int, default=1, metavar="N",
                   help="with techniques: render the (trace, technique) pairs on a local Dask "
                        "cluster of N processes (default 1: one after the other)")
    c.add_argument("--manifest", metavar="FILE",
                   help="the goldens of FILE (PNGs beside it; traces relative to the "
                        "repository) instead of goldens/manifest.json")
    c.add_argument("--json", action="store_true", help="print the result as JSON")
    c.set_defaults(func=_check)
    u = sub.add_parser("update", help="remake every golden (tilesim, accepted against Mesa)")
    u.set_defaults(func=_update)
    a = sub.add_parser("add", help="register goldens: TRACE:FRAME[,FRAME...] (then update)")
    a.add_argument("specs", nargs="+", metavar="TRACE:FRAMES")
    a.set_defaults(func=_add)


def _check(args: argparse.Namespace) -> int:
    if args.manifest is None:
        goldens, folder = load_manifest(), GOLDENS
    else:
        path = Path(args.manifest)
        if not path.is_file():
            raise InputError("no such golden manifest", source=str(path))
        goldens, folder = load_manifest(path), path.parent
    if args.technique or args.all_techniques:
        return _check_techniques(args, goldens, folder)
    failures = check(goldens, folder)
    if args.json:
        print(json.dumps({"goldens": len(goldens),
                          "failed": [{"name": g.name, "pixels": n} for g, n in failures]}))
    else:
        for g, n in failures:
            print(f"FAILED {g.name}: {n} pixels differ from {folder / g.png}", file=sys.stderr)
        print(f"{len(goldens) - len(failures)} of {len(goldens)} goldens identical")
    return EXIT_FAILED_CHECK if failures else EXIT_OK


def _check_techniques(args: argparse.Namespace, goldens: list[Golden], folder: Path) -> int:
    names = (["baseline", *DEFAULT_TECHNIQUES] if args.all_techniques
             else technique_names(args.technique))   # unknown names: exit 2 before rendering
    rows = check_techniques(goldens, names, folder=folder, workers=args.workers, progress=True)
    failed = [r for r in rows if not r["passed"]]
    summary = {"checks": len(rows), "passed": len(rows) - len(failed), "failed": len(failed),
               "techniques": names, "goldens": len(goldens), "mssim_floor": DSR_MIN_MSSIM}
    if args.json:
        print(json.dumps({"rows": rows, "summary": summary}, indent=2))
    else:
        _print_rows(rows)
        print(f"{summary['passed']} of {len(rows)} checks passed ({len(names)} techniques, "
              f"{len(goldens)} goldens)")
    if failed:
        print("goldens check failed: " + ", ".join(f"{r['technique']} {r['golden']}"
                                                   for r in failed), file=sys.stderr)
        return EXIT_FAILED_CHECK
    return EXIT_OK


def _print_rows(rows: list[dict]) -> None:
    table = [("technique", "golden", "frame", "identical", "MSSIM", "max diff", "check",
              "result")]
    for r in rows:
        table.append((r["technique"], r["golden"], str(r["frame"]),
                      "yes" if r["bit_identical"] else "no",
                      "-" if r["mssim"] is None else f"{r['mssim']:.6f}",
                      "-" if r["max_diff"] is None else str(r["max_diff"]),
                      r["criterion"], "pass" if r["passed"] else "FAIL"))
    widths = [max(len(row[c]) for row in table) for c in range(len(table[0]))]
    for row in table:
        print("  " + "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True))
              .rstrip())


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
