"""A study's numbers: ``results.json`` (what `tilesim run` writes) and
:func:`open_results`, the same numbers as pandas data frames and xarray datasets.

``results.json`` (format ``"tilesim study 1"``; times in seconds, energies in joules, traffic
in bytes, cycles at the configured clock; "normalized" = technique / baseline of the same
workload, frames and model)::

    format, tilesim_version, created (UTC, ISO 8601), command
    settings       {workloads: [{name, trace, frames: [start, stop), origin}], techniques,
                    tile_size, dsr_parameters, quick, skipped: [{spec, reason}]}
    config         the GPU and energy configuration the study ran with
                   (timing.config.EffectiveConfig.record): {gpu, energy} (the files), set
                   ({key: value} of --set and --tile-size), sha256 (of the values), changed
                   ({key: value} that differ from the shipped files), values ({gpu, energy}:
                   {key: value}, every entry)
    workloads      [{name, trace, origin, width, height, frames: [start, stop),
                     characterization: {column: value} (Frame Coherence Tables 3.3, 3.4;
                                       `tilesim characterize`'s columns) or null,
                     runs: {technique: {
                        folder        the render (`tilesim render` layout), relative to OUT
                        quality       `tilesim coherence`'s figures against the baseline:
                                      frames_bit_identical, mssim_min, tiles_skipped, ...
                        total         the timing model's totals (`tilesim estimate --json`)
                        normalized    {time, energy, gpu_energy, memory_energy, traffic,
                                       fs_instructions, fragments_shaded, ...}
                        per_frame     the totals as a frame's mean, in the units a paper
                                      gives (see ``units``): {ms, fps, cycles, mj: {gpu,
                                      dram, screen, total}} (screen: the OLED panel, null
                                      without frame images; total: GPU + DRAM)
                        frames        [{frame, mssim, bit_identical, cycles, seconds,
                                        energy_j, gpu_energy_j, memory_energy_j,
                                        screen_energy_j, traffic_bytes}]
                        overlays      {frame: [kind, ...]}: per-tile views in folder/overlays
                        seconds       {render, total}: wall time of the unit}}}]
    summary        {technique: the mean over workloads of normalized figures (time,
                    energy, ...) and of quality figures (min for mssim_min, sum for counts)}
    units          {field: unit} of per_frame's figures (ms, fps, cycles, mJ)
    thesis         {technique: {time, energy, source}}: Frame Coherence's averages
    thesis_comparison  the averages over the thesis-regime workloads (like_*) by the set
                   each technique was evaluated on, 2D/3D, with each workload's bound
                   (studies/thesis_comparison.py), or null without such workloads
    checks         {failed: ["workload: technique", ...], rule}
    sections       {name: ...}: `--all`'s studies (core, prediction, scheduling, goldens)
    seconds        {render_and_compare, report, ..., total}

From Python (needs pandas and xarray: ``pip install -e '.[analysis]'``)::

    results = tilesim.open_results("out/study")
    results.summary            # DataFrame: a row per technique
    results.runs               # DataFrame: a row per (workload, technique)
    results.frames             # DataFrame: a row per (workload, technique, frame)
    results.characterization   # DataFrame: a row per workload
    results.tiles("runner-1196x768", "re")   # xarray Dataset (frame, tile_y, tile_x):
                                             # counters, raster_cycles, energy_j per tile
"""

from __future__ import annotations

import datetime as _dt
import json
import sys
from dataclasses import asdict
from pathlib import Path

import numpy as np

from tilesim import __version__
from tilesim.errors import InputError, resolve_name
from tilesim.render_folder import open_render_folder, read_sealed, seal_failure, unsealed
from tilesim.studies.coherence import LOSSLESS, Tally
from tilesim.studies.coherence import average as quality_average
from tilesim.studies.thesis_comparison import THESIS, compare
from tilesim.thresholds import DSR_MIN_MSSIM

FORMAT = "tilesim study 1"
# The units of a run's ``per_frame`` figures (results.json ``units``).
PER_FRAME_UNITS = {"ms": "ms per frame", "fps": "frames per second (1000 / ms)",
                   "cycles": "GPU cycles per frame at tech.clock",
                   "mj": "mJ per frame: gpu (GPU dynamic + static), dram (main memory), "
                         "screen (OLED panel, one refresh period), total (gpu + dram)"}


def per_frame(total: dict) -> dict:
    """A run's totals (``timing.report.totals``) as a frame's mean in a paper's units:
    milliseconds, frames per second, cycles and millijoules by GPU / DRAM / screen
    (``PER_FRAME_UNITS``); the ratios say how much a technique saves, these what it costs."""
    frames = max(1, int(total["frames"]))
    energy = total["energy_j"]

    def mj(joules):
        return None if joules is None else 1e3 * joules / frames

    ms = 1e3 * total["seconds"] / frames
    return {"ms": ms, "fps": 1e3 / ms if ms > 0 else None,
            "cycles": total["cycles"]["total"] / frames,
            "mj": {"gpu": mj(energy["gpu"]), "dram": mj(energy["memory"]),
                   "screen": mj(energy["screen"]), "total": mj(energy["total"])}}


def _frame_rows(estimates, tally: Tally, wanted: range) -> list[dict]:
    by_frame = {e.frame: e for e in estimates}
    rows = []
    for i, index in enumerate(wanted):
        e = by_frame.get(index)
        mssim = tally.mssim[i] if i < len(tally.mssim) else None
        row = {"frame": index, "mssim": mssim, "bit_identical": mssim == 1.0}
        if e is not None:
            row.update({"cycles": e.cycles, "seconds": e.seconds, "energy_j": e.energy,
                        "gpu_energy_j": e.gpu_energy, "memory_energy_j": e.memory_energy,
                        "screen_energy_j": e.screen_energy,
                        "traffic_bytes": float(sum(e.traffic.values()))})
        rows.append(row)
    return rows


def _overlays(folder: Path, shown) -> dict[str, list[str]]:
    """The overlay kinds of the frames ``shown`` (the folder may hold overlays of frames an
    earlier run of other frames showed)."""
    out = {}
    for index in sorted((folder / "overlays").glob("*.json")):
        if not index.stem.isdigit() or int(index.stem) not in shown:
            continue
        data = read_sealed(index)
        if data is None:     # the study renders a frame whose index is damaged again
            continue
        out[str(data["frame"])] = list(data["kinds"])
    return out


def settings_record(settings) -> dict:
    """study.json's and results.json's ``settings``: what the study ran (a study.Settings)."""
    return {"workloads": [asdict(w) for w in settings.workloads],
            "techniques": list(settings.techniques), "tile_size": settings.tile_size,
            "dsr_parameters": settings.dsr_parameters, "quick": settings.quick,
            "skipped": settings.skipped}


def assemble_results(settings, units, records: dict[str, dict], out: Path, *,
                     progress: bool = True, estimates: dict | None = None) -> dict:
    """results.json's contents from the finished units: estimates from their counters
    (``estimates``: those already made, by unit key, e.g. by the workers that compared the
    units; the others are made here and added to it), quality from their records,
    characterizations, the averages and the checks."""
    from tilesim.studies.progress import progress_bar
    from tilesim.timing.config import check_finite
    from tilesim.timing.report import average, estimate_render, normalize, totals

    config = settings.effective
    cfg, ecfg = config.gpu, config.energy
    by_key = {u.key: u for u in units}
    estimates = {} if estimates is None else estimates

    def estimate(unit):
        made = estimates.get(unit.key)
        if made is None:
            with np.errstate(over="ignore", invalid="ignore"):    # check_finite says it
                made = estimates[unit.key] = estimate_render(
                    unit.workload.name, Path(unit.folder), cfg, ecfg,
                    frames=range(*unit.workload.frames), check_writer=False)
        return made

    workloads, per_technique, failed = [], {}, []
    bar = progress_bar(len(units), desc="estimate", unit="run", enabled=progress)
    for w in settings.workloads:
        with _open(w.trace) as trace:
            width, height = trace.width, trace.height
        base_unit = by_key[f"{w.name}/baseline"]
        base_tally = Tally.from_dict(records[base_unit.key]["tally"])
        base_est = estimate(base_unit)
        base_total = totals(base_est.estimate)
        runs = {}
        for technique in settings.techniques:
            unit = by_key[f"{w.name}/{technique}"]
            record = records[unit.key]
            tally = Tally.from_dict(record["tally"])
            est = base_est if technique == "baseline" else estimate(unit)
            total = base_total if technique == "baseline" else totals(est.estimate)
            quality = tally.report(base_tally)
            runs[technique] = {
                "folder": str(Path(unit.folder).relative_to(out)),
                "quality": quality, "total": total, "normalized": normalize(total, base_total),
                "per_frame": per_frame(total),
                "frames": _frame_rows(est.frames, tally, range(*w.frames)),
                "overlays": _overlays(Path(unit.folder), unit.shown),
                "seconds": record.get("seconds", {})}
            per_technique.setdefault(technique, []).append(
                {"normalized": runs[technique]["normalized"], "quality": quality})
            if ((technique in LOSSLESS and quality["frames_bit_identical"] != quality["frames"])
                    or (technique == "dsr" and quality["mssim_min"] is not None
                        and quality["mssim_min"] < DSR_MIN_MSSIM)):
                failed.append(f"{w.name}: {technique}")
            bar.update(1)
        characterization = None
        path = Path(base_unit.folder).parent / "characterization.json"
        if path.is_file():
            # checked by the study before (study.unit_done): counted again when damaged
            characterization = read_sealed(path)
            if characterization is None:
                raise InputError("does not match its own SHA-256 (changed while the study "
                                 "ran?); rerun `tilesim run` to count it again",
                                 source=str(path))
            characterization = characterization["columns"]
        workloads.append({"name": w.name, "trace": w.trace, "origin": w.origin,
                          "width": width, "height": height, "frames": list(w.frames),
                          "characterization": characterization, "runs": runs,
                          # what bounds the baseline (tilesim.timing.model.bound_cycles)
                          "bound_shares": base_total.get("bound_shares"),
                          "regime": base_total.get("regime")})
    bar.close()
    qualities = quality_average([{"techniques": {t: r["quality"] for t, r in w["runs"].items()}}
                                 for w in workloads])
    summary = {t: {**average([row["normalized"] for row in rows]), **qualities[t]}
               for t, rows in per_technique.items()}
    check_finite({"workloads": workloads, "summary": summary}, config)
    return {"format": FORMAT, "tilesim_version": __version__,
            "created": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
            "command": " ".join(["tilesim", *sys.argv[1:]]),
            "settings": settings_record(settings),
            "config": config.record(),
            "workloads": workloads, "summary": summary, "units": PER_FRAME_UNITS,
            "thesis": THESIS,
            "thesis_comparison": compare(workloads),
            "checks": {"failed": failed,
                       "rule": "lossless techniques (" + ", ".join(LOSSLESS) + ") "
                               "bit-identical to the baseline on every frame; DSR's every "
                               f"frame at MSSIM >= {DSR_MIN_MSSIM}"},
            "sections": {}, "seconds": {}}


def _open(trace: str):
    from tilesim.render.traces.trace_file import open_trace

    return open_trace(trace)


# -- reading a study back -----------------------------------------------------------------------


class StudyResults:
    """A study folder's results as data frames and labelled arrays (see the module doc)."""

    def __init__(self, folder: Path, raw: dict):
        self.folder, self.raw = folder, raw

    def __repr__(self) -> str:
        names = ", ".join(w["name"] for w in self.raw["workloads"])
        return (f"<StudyResults {self.folder}: {len(self.raw['workloads'])} workloads "
                f"({names}); techniques {', '.join(self.raw['settings']['techniques'])}>")

    @property
    def workloads(self) -> list[str]:
        return [w["name"] for w in self.raw["workloads"]]

    @property
    def techniques(self) -> list[str]:
        return list(self.raw["settings"]["techniques"])

    @property
    def summary(self):
        import pandas as pd

        frame = pd.DataFrame.from_dict(self.raw["summary"], orient="index")
        frame.index.name = "technique"
        return frame

    @property
    def runs(self):
        """A row per (workload, technique): normalized figures (``time``, ``energy``, ...),
        quality (``mssim_min``, ``frames_bit_identical``, ...), absolute totals
        (``seconds``, ``energy_j``, ``traffic_bytes``) and per-frame figures (``ms``,
        ``fps``, ``mj_gpu``, ``mj_dram``, ``mj_screen``, ``mj_total``: ``per_frame``)."""
        import pandas as pd

        rows = []
        for w in self.raw["workloads"]:
            for technique, run in w["runs"].items():
                quality = {k: v for k, v in run["quality"].items()
                           if not isinstance(v, (list, dict))}
                total = run["total"]
                rows.append({"workload": w["name"], "technique": technique,
                             **run["normalized"],
                             **{f"quality_{k}": v for k, v in quality.items()},
                             "seconds": total["seconds"],
                             "energy_j": total["energy_j"]["total"],
                             "traffic_bytes": total["traffic_bytes"]["total"],
                             **_per_frame_columns(run.get("per_frame") or per_frame(total))})
        return pd.DataFrame(rows).set_index(["workload", "technique"])

    @property
    def frames(self):
        import pandas as pd

        rows = [{"workload": w["name"], "technique": technique, **row}
                for w in self.raw["workloads"] for technique, run in w["runs"].items()
                for row in run["frames"]]
        return pd.DataFrame(rows).set_index(["workload", "technique", "frame"])

    @property
    def characterization(self):
        import pandas as pd

        rows = {w["name"]: w["characterization"] or {} for w in self.raw["workloads"]}
        frame = pd.DataFrame.from_dict(rows, orient="index")
        frame.index.name = "workload"
        return frame

    def _run(self, workload: str, technique: str) -> dict:
        """A run's record; InputError naming the study (with the names it has and the
        closest, case aside) for a workload or technique it does not hold."""
        source = str(self.folder / "results.json")
        workload = resolve_name("workload", str(workload), self.workloads, source=source)
        runs = next(w["runs"] for w in self.raw["workloads"] if w["name"] == workload)
        technique = resolve_name("technique", str(technique), list(runs), source=source)
        return runs[technique]

    def tiles(self, workload: str, technique: str = "baseline"):
        """Per-tile figures of the screen pass (the default framebuffer) of every frame of a
        run, as an xarray Dataset with dimensions (frame, tile_y, tile_x): one variable per
        counter (events per tile and frame) and the timing model's per-tile estimates
        (:mod:`tilesim.timing.tiles`, with this study's configuration files):
        ``raster_cycles`` (the tile's raster-phase cycles; they add up to the frame's raster
        cycles) and ``energy_j`` (the tile's own work and its share of the time-driven
        energy). ``tile_y`` 0 is the bottom tile row, as in GL window coordinates and the
        counters files. A frame with several screen passes shows the last one's counters
        and the sum of their estimates."""
        import xarray as xr

        from tilesim.render.pipeline.counters import load_counters
        from tilesim.timing.config import config_from_record
        from tilesim.timing.counter_batch import batch_from_frames
        from tilesim.timing.model import estimate_batch
        from tilesim.timing.tiles import screen_tiles

        run = self._run(workload, technique)
        # each counters file checked against its folder's manifest before it is counted
        checked = open_render_folder(self.folder / run["folder"],
                                     [row["frame"] for row in run["frames"]])
        frames = [load_counters(path) for path in checked.counters()]
        config = config_from_record(self.raw.get("config", {}))
        cfg, ecfg = config.gpu, config.energy
        estimates = screen_tiles(estimate_batch(batch_from_frames(frames), cfg, ecfg), cfg,
                                 ecfg)
        indices, grids, shape = [], {}, None
        for counters, passes in zip(frames, estimates, strict=True):
            if not passes:
                continue
            screen = counters.passes[passes[-1].pass_index]
            shape = (screen.tiles_y, screen.tiles_x)
            indices.append(counters.frame)
            for name, values in screen.tiles.items():
                grids.setdefault(name, []).append(np.asarray(values).reshape(shape))
            grids.setdefault("raster_cycles", []).append(sum(p.cycles for p in passes))
            grids.setdefault("energy_j", []).append(sum(p.energy_j for p in passes))
        if shape is None:
            raise InputError(f"{workload}/{technique}: no frame drew to the screen",
                             source=str(self.folder / "results.json"))
        dims = ("frame", "tile_y", "tile_x")
        dataset = xr.Dataset({name: (dims, np.stack(v)) for name, v in grids.items()},
                             coords={"frame": indices, "tile_y": np.arange(shape[0]),
                                     "tile_x": np.arange(shape[1])},
                             attrs={"workload": workload, "technique": technique,
                                    "tile_y_origin": "bottom (GL window coordinates)"})
        dataset["raster_cycles"].attrs["units"] = "cycles"
        dataset["energy_j"].attrs["units"] = "J"
        return dataset


def _per_frame_columns(figures: dict) -> dict:
    return {"ms": figures["ms"], "fps": figures["fps"],
            **{f"mj_{k}": v for k, v in figures["mj"].items()}}


def open_results(folder: str | Path) -> StudyResults:
    """The results of a `tilesim run` folder (its results.json) for analysis in Python."""
    folder = Path(folder)
    path = folder / "results.json"
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError("no results.json: not a finished `tilesim run` folder",
                         source=str(folder)) from None
    except (OSError, ValueError) as exc:
        raise InputError(f"unreadable results.json: {exc}", source=str(path)) from None
    if not isinstance(raw, dict) or raw.get("format") != FORMAT:
        raise InputError(f"not a tilesim study ({FORMAT!r} expected)", source=str(path))
    if unsealed(raw) is None:
        raise InputError(f"{seal_failure(raw)}; rerun `tilesim run` on the folder to write it "
                         "again", source=str(path))
    try:
        import pandas  # noqa: F401
        import xarray  # noqa: F401
    except ModuleNotFoundError as exc:
        raise InputError(f"open_results needs pandas and xarray ({exc.name} is missing): "
                         "pip install -e '.[analysis]'", source=str(folder)) from None
    return StudyResults(folder, raw)
