"""The studies ``tilesim run --all`` adds to the report: the shader core (Shader Core ch. 5),
execution-time prediction (Execution Time, seeds 000/003), multi-application scheduling
(Scheduling, seed 004) and the golden-image check of every technique.

Each runs as its own ``tilesim`` command, as a user would run it (``--json`` for the numbers,
``--plot``/``--out`` for the figures, into ``OUT/sections/NAME``), in a child process so its
memory goes back when it ends; the section is that command's JSON turned into tables and its
figures. A section whose command fails says so in the report instead of failing the run.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from tilesim.atomic import write_json

TIMEOUT_S = 1800


def _tilesim(argv: list[str]) -> tuple[int, str, str]:
    run = subprocess.run([sys.executable, "-m", "tilesim.cli", *argv], capture_output=True,
                         text=True, timeout=TIMEOUT_S)
    return run.returncode, run.stdout, run.stderr


def _images(out: Path, folder: Path, captions: dict[str, str] | None = None) -> list[dict]:
    return [{"src": str(p.relative_to(out)),
             "caption": (captions or {}).get(p.stem, p.stem.replace("-", " "))}
            for p in sorted(folder.glob("*.png"))]


def _failed(title: str, argv: list[str], code: int, stderr: str) -> dict:
    last = (stderr.strip().splitlines() or ["(no message)"])[-1]
    return {"title": title, "text": f"`tilesim {' '.join(argv)}` failed (exit {code}): {last}",
            "tables": [], "images": []}


def _run_json(out: Path, name: str, title: str, argv: list[str]) -> tuple[dict | None, dict]:
    """Run a command; (its JSON, None) or (None, the failure section). Its stdout is kept
    in OUT/sections/NAME/NAME.json."""
    code, stdout, stderr = _tilesim(argv)
    try:
        data = json.loads(stdout) if code in (0, 1) else None
    except ValueError:
        data = None
    if data is None:
        return None, _failed(title, argv, code, stderr)
    write_json(out / "sections" / name / f"{name}.json", data)
    return data, {}


def core_section(out: Path, trace: str, frame: int) -> dict:
    title = "Shader core (Shader Core ch. 5)"
    folder = out / "sections" / "core"
    argv = ["core", "explore", trace, "--frame", str(frame), "--out", str(folder), "--json"]
    data, failure = _run_json(out, "core", title, argv)
    if data is None:
        return failure
    warps = [[str(p["warps"]), f"{p['ipc']:.3f}", f"{p['registers']:.1f}"]
             for p in data["warps_study"]]
    hashes = [[scheme, *(f"{p['ipc']:.3f}" for p in points)]
              for scheme, points in data["hash"].items()]
    banks = [str(p["banks"]) for p in next(iter(data["hash"].values()), [])]
    return {"title": title,
            "text": f"The fragment programs of frame {frame} of {Path(trace).name}, on the "
                    "quads they shaded, through the cycle-level core: IPC against warps in "
                    "flight and register-file banks and bank hashing. "
                    f"Command: tilesim {' '.join(argv[:-1])}.",
            "tables": [{"caption": "IPC and registers in use by warps", "id": "core-warps",
                        "columns": ["warps", "IPC", "registers"], "rows": warps},
                       {"caption": "IPC by register-file banks and hash", "id": "core-hash",
                        "columns": ["hash", *(f"{b} banks" for b in banks)],
                        "rows": hashes}],
            "images": _images(out, folder)}


def prediction_section(out: Path, traces: list[str], frames: int) -> dict:
    title = "Execution-time prediction (Execution Time, seeds 000 and 003)"
    folder = out / "sections" / "prediction"
    rows, failures = [], []
    for trace in traces:
        argv = ["predict", trace, "--max-frames", str(frames), "--json", "--plot",
                str(folder), "--calibration", str(out / "sections" / "calibration")]
        data, failure = _run_json(out, f"prediction-{Path(trace).stem}", title, argv)
        if data is None:
            failures.append(failure["text"])
            continue
        for estimator, s in data["summary"].items():
            rows.append([data["name"], estimator, str(s["groups"]),
                         f"{1e6 * s['mean_measured']:.1f}", f"{1e6 * s['mean_abs_error']:.1f}",
                         f"{1e6 * s['p95_abs_error']:.1f}", f"{100 * s['mean_rel_error']:.1f}%",
                         f"{100 * s['underestimated']:.0f}%"])
    return {"title": title,
            "text": "Each command group's execution time predicted before it runs, against "
                    "the timing model's (the ground truth here), per estimator. "
                    + " ".join(failures),
            "tables": [{"caption": "prediction error per workload and estimator (µs)",
                        "id": "prediction",
                        "columns": ["workload", "estimator", "groups", "mean measured",
                                    "mean |error|", "p95 |error|", "mean relative error",
                                    "underestimated"], "rows": rows}],
            "images": _images(out, folder)}


def scheduling_section(out: Path) -> dict:
    title = "Scheduling several applications (Scheduling, seed 004)"
    tables, images, texts = [], [], []
    for scenario in ("MTS-1", "MTS-2"):
        folder = out / "sections" / "scheduling"
        argv = ["schedule", scenario, "--policy", "all", "--json", "--plot", str(folder)]
        data, failure = _run_json(out, f"schedule-{scenario}", title, argv)
        if data is None:
            texts.append(failure["text"])
            continue
        rows = []
        for policy, run in data["runs"].items():
            for app in run["apps"]:
                pmd = app.get("pmd")     # None: the application finished no frame
                rows.append([policy, app["app"], str(app["priority"]),
                             f"{app['desired_fps']:.0f}", f"{app['afr']:.1f}",
                             "–" if pmd is None else f"{100 * pmd:.1f}%"])
        tables.append({"caption": f"{scenario}: average frame rate (AFR) and probability of "
                                  "meeting deadlines (PMD) per policy and application",
                       "id": f"schedule-{scenario}",
                       "columns": ["policy", "application", "priority", "desired FPS", "AFR",
                                   "PMD"], "rows": rows})
        expected = data.get("seed_004") or {}
        texts.append(f"{scenario}, seed 004's results: "
                     + "; ".join(f"{k}: {v}" for k, v in expected.items()) + ".")
        images += [i for i in _images(out, folder)
                   if i["src"].endswith(("-afr.png", "-pmd.png"))
                   and Path(i["src"]).name.startswith(scenario)]
    return {"title": title, "text": " ".join(texts), "tables": tables, "images": images}


def goldens_section(out: Path, workers: int = 1) -> dict:
    title = "Golden images, every technique"
    argv = ["goldens", "check", "--all-techniques", "--json", "--workers", str(workers)]
    data, failure = _run_json(out, "goldens", title, argv)
    if data is None:
        return failure
    rows = data["rows"] if isinstance(data, dict) else data
    columns = ["technique", "golden", "frame", "bit_identical", "mssim", "max_diff", "passed"]
    return {"title": title,
            "text": "Each golden frame rendered with each technique: lossless techniques "
                    "bit-identical to the golden, DSR and memo/32 at or above the MSSIM floor. "
                    "Command: tilesim goldens check --all-techniques.",
            "tables": [{"caption": "per golden and technique", "id": "goldens",
                        "columns": columns,
                        "rows": [[str(r.get(c, "")) for c in columns] for r in rows]}],
            "images": []}


def all_sections(settings, workers: int = 1) -> dict[str, Callable[[Path], dict]]:
    """The sections of ``--all`` for a study's settings (``workers``: processes a section
    may use): name -> make(OUT)."""
    traces = [w for w in settings.workloads if w.origin == "bundled"
              and w.name != "bunny"] or settings.workloads
    first = traces[0]
    frame = min(first.frames[1] - 1, first.frames[0] + 1)
    return {"core": lambda out: core_section(out, first.trace, frame),
            "prediction": lambda out: prediction_section(out, [w.trace for w in traces[:2]],
                                                         12),
            "scheduling": scheduling_section,
            "goldens": lambda out: goldens_section(out, workers)}
