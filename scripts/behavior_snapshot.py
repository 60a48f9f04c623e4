#!/usr/bin/env python3
"""Fingerprint everything tilesim produces, to prove a refactoring changes no behavior.

Drives the installed `tilesim` command only (the CLI and the `.tsim` format are the stable
surface, so the same script runs before and after a move of the Python modules):

- every bundled trace (`traces/*.tsim`), its first frames rendered with every technique:
  the SHA-256 of each frame's pixels and of each counter array, and `tilesim estimate --json`;
- every conformance scene rendered by tilesim (`tilesim conformance --out`): the SHA-256 of
  each tilesim frame's pixels and the fragment counts of the JSON report.

    python scripts/behavior_snapshot.py --out before.json      # at the old commit
    python scripts/behavior_snapshot.py --out after.json       # at the new one
    python scripts/behavior_snapshot.py --compare before.json after.json

`--compare` prints every entry that differs and exits 1 if any does, 0 if all are identical.
The snapshot is written after each entry; run again with the same `--out` to resume.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
from PIL import Image

ROOT = Path(__file__).resolve().parent.parent
PATH_KEYS = ("dir", "path", "out", "config", "energy_config")
TECHNIQUES = ("baseline", "te", "re", "re/xor", "evr", "re+evr", "dsr", "memo", "memo/32")


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:32]


def _png_digest(path: Path) -> str:
    pixels = np.asarray(Image.open(path))
    return _sha(pixels.tobytes() + str(pixels.shape).encode())


# A counters file's record of what made it (the renderer's source digest among it): it changes
# with any source change by design, so it is no part of the behaviour compared.
METADATA_MEMBERS = ("provenance",)


def _npz_digests(path: Path) -> dict[str, str]:
    with np.load(path) as arrays:
        return {
            name: _sha(arrays[name].tobytes() + str(arrays[name].dtype).encode())
            for name in sorted(arrays.files) if name not in METADATA_MEMBERS
        }


def _behaviour(entry):
    """An entry without the metadata members (snapshots written before they were left out)."""
    if isinstance(entry, dict):
        return {k: _behaviour(v) for k, v in entry.items() if k not in METADATA_MEMBERS}
    return entry


def _run(args: list[str]) -> str:
    done = subprocess.run(["tilesim", *args], capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"tilesim {' '.join(args)} failed:\n{done.stderr}")
    return done.stdout


def _without_paths(value):
    """An estimate's JSON minus the folder and config paths, which differ between checkouts."""
    if isinstance(value, dict):
        return {k: _without_paths(v) for k, v in value.items() if k not in PATH_KEYS}
    if isinstance(value, list):
        return [_without_paths(v) for v in value]
    return value


def snapshot_traces(work: Path, frames: str, entries: dict, save) -> dict:
    """Add every (trace, technique)'s entries not in ``entries`` yet, calling ``save`` after
    each, so that an interrupted snapshot resumes where it stopped."""
    for trace in sorted((ROOT / "traces").glob("*.tsim")):
        for technique in TECHNIQUES:
            key = f"{trace.stem}/{technique}"
            if key + "/estimate" in entries:
                continue
            out = work / f"{trace.stem}-{technique.replace('/', '_').replace('+', '_')}"
            _run(["render", str(trace), "--frames", frames, "--technique", technique,
                  "--out", str(out), "--workers", "1"])
            entries[key + "/frames"] = {
                p.name: _png_digest(p) for p in sorted((out / "frames").glob("*.png"))
            }
            entries[key + "/counters"] = {
                p.name: _npz_digests(p) for p in sorted((out / "counters").glob("*.npz"))
            }
            estimate = json.loads(_run(["estimate", str(out), "--json"]))
            entries[key + "/estimate"] = _sha(
                json.dumps(_without_paths(estimate), sort_keys=True).encode()
            )
            save(entries)
            print(key, flush=True)
    return entries


def snapshot_conformance(work: Path) -> dict:
    out = work / "conformance"
    done = subprocess.run(["tilesim", "conformance", "--out", str(out), "--json"],
                          capture_output=True, text=True)
    if done.returncode not in (0, 1):
        raise SystemExit(f"tilesim conformance failed:\n{done.stderr}")
    report = json.loads(done.stdout)
    if not out.is_dir():
        raise SystemExit(f"tilesim conformance wrote no frames (exit {done.returncode}):\n"
                         f"{done.stderr[-2000:]}")
    entries = {}
    for scene_dir in sorted(p for p in out.iterdir() if p.is_dir()):
        entries[f"conformance/{scene_dir.name}/frames"] = {
            p.name: _png_digest(p) for p in sorted(scene_dir.glob("*_tilesim.png"))
        }
    entries["conformance/report"] = _sha(
        json.dumps(_without_paths(_fragment_counts(report)), sort_keys=True).encode()
    )
    print("conformance", flush=True)
    return entries


def _fragment_counts(report):
    """The parts of the conformance report that tilesim alone decides."""
    scenes = report.get("scenes", report) if isinstance(report, dict) else report
    kept = []
    for scene in scenes:
        kept.append({k: v for k, v in scene.items() if "fragment" in k or k in ("scene", "name")})
    return kept


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, help="write the snapshot here (JSON)")
    parser.add_argument("--frames", default="0:2", help="frames of each trace (default 0:2)")
    parser.add_argument("--compare", nargs=2, type=Path, metavar=("BEFORE", "AFTER"))
    parser.add_argument("--no-conformance", action="store_true",
                        help="skip the conformance scenes (they need Mesa)")
    args = parser.parse_args()
    if args.compare:
        before, after = (json.loads(p.read_text()) for p in args.compare)
        differ = sorted(k for k in before.keys() | after.keys()
                        if _behaviour(before.get(k)) != _behaviour(after.get(k)))
        for key in differ:
            print(f"differs: {key}")
        print(f"{len(before.keys() | after.keys()) - len(differ)} entries identical, "
              f"{len(differ)} differ")
        return 1 if differ else 0
    if args.out is None:
        parser.error("give --out FILE or --compare BEFORE AFTER")
    # An existing --out is resumed: what it holds is not made again.
    entries = json.loads(args.out.read_text()) if args.out.is_file() else {}

    def save(done: dict) -> None:
        partial = args.out.with_name(args.out.name + ".partial")
        partial.write_text(json.dumps(done, indent=1, sort_keys=True))
        partial.replace(args.out)

    with tempfile.TemporaryDirectory(prefix="tilesim-snapshot-") as tmp:
        # the conformance scenes first: a minute, and the step most likely to need Mesa
        if not args.no_conformance and "conformance/report" not in entries:
            entries.update(snapshot_conformance(Path(tmp)))
            save(entries)
        snapshot_traces(Path(tmp), args.frames, entries, save)
    print(f"{len(entries)} entries -> {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
