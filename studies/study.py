"""``tilesim run``: the main job, from workloads to a browsable study.

A study renders every workload at baseline and with every frame-coherence technique, checks
each technique's frames against the baseline's, estimates time and energy from the counters,
characterizes the workloads (Frame Coherence Tables 3.3, 3.4) and writes a report:

    OUT/index.html          the report (studies.report), readable offline
    OUT/results.json        the same numbers (schema in study_results; tilesim.open_results)
    OUT/runs/W/T/           the render of workload W with technique T, as `tilesim render`
                            writes it (frames/, counters/, render.json), plus quality.json
                            (the comparison with the baseline, the unit's finished mark) and
                            overlays/ (per-tile views of the frames the report shows)
    OUT/runs/W/characterization.json
    OUT/captures/           glmark2-es2 and es2gears captured and imported, when installed

The work is split into units, one per workload and technique. The techniques that only watch
the pipeline (TE, RE, memoization: render/techniques/side_by_side.py) are rendered with their
workload's baseline in one functional render, which gives each of them the frames and counters
a render of its own gives; RE+EVR likewise watches EVR's render and is rendered with its
workload's EVR; DSR changes the render and is rendered on its own. The renders run in
parallel on Dask, the longest first, and each unit's comparison with the baseline runs when
both renders are done. A unit's render resumes
frame by frame (:mod:`tilesim.studies.batch`); its quality.json, written last, marks
it finished, so an interrupted run picks up where it stopped and never mixes settings (a
unit folder refuses a render of other settings, as `tilesim render` does; ``--force``
starts over).

The GPU and energy configuration (``--config``, ``--energy-config``, ``--set``,
``--tile-size``: studies/config_options.py) is one of the study's settings: its
contents and digest go to study.json and results.json, the digest into every unit's
identity, and the entries the renderer reads into every render's. A study folder made with
another configuration is refused (``--force`` starts it over, or use another ``--out``): its
renders may hold other counters, and its finished units were compared and estimated with
the other numbers, so a resume would mix two configurations in one report.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path

from tilesim import __version__
from tilesim.atomic import write_json
from tilesim.errors import InputError
from tilesim.images import read_png
from tilesim.options import frame_span
from tilesim.render.pipeline.counters import load_counters
from tilesim.render.traces.trace_file import open_trace
from tilesim.render.workloads import GAME_LIKE, NATIVE_SIZES, trace_name
from tilesim.render_folder import read_sealed, sealed, sha256_bytes
from tilesim.studies.batch import (
    DIGESTS,
    FRAMES_FILE,
    Job,
    file_sha256,
    holds_tilesim_files,
    prepare_jobs,
    refuse_foreign,
    render_host,
    renderer_sha256,
    run_job,
    run_side_by_side,
)
from tilesim.studies.characterize import Characterizer, characterization, characterize
from tilesim.studies.coherence import Tally, write_overlays
from tilesim.studies.defaults import DEFAULT_TECHNIQUES, FRAMES, QUICK_FRAMES, QUICK_WORKLOADS  # noqa: F401 (named here)

# The bundled workloads (traces/, made by scripts/make_bunny_trace.py and make_workloads.py):
# glmark2's bunny, four game-like programs at the resolution of Frame Coherence Table 3.1, and
# the thesis-regime suite: a program per game of Frame Coherence Tables 3.3 and 3.4
# (render/workloads/thesis_games.py), each at its chapter set's screen.
THESIS_TRACES = tuple(Path(trace_name(name, w, h)).stem for name, sizes in NATIVE_SIZES.items()
                      if name not in GAME_LIKE for w, h in sizes)
BUNDLED = ("bunny", "match3-1196x768", "sidescroller-1196x768", "runner-1196x768",
           "render_to_texture-1196x768", *THESIS_TRACES)
# Real programs captured when apitrace, Xvfb and the programs are installed: one scene per
# kind of work glmark2 has (textures with mipmaps, per-pixel lighting, 2D filtering) and
# es2gears. Captured at the thesis's resolution (es2gears draws its fixed 300x300 window).
CAPTURED = ("glmark2-es2:texture:texture-filter=mipmap", "glmark2-es2:shading:shading=phong",
            "glmark2-es2:effect2d", "es2gears")
CAPTURE_SIZE = (1196, 768)
TECHNIQUES = ("baseline", *DEFAULT_TECHNIQUES)
QUALITY_FILE = "quality.json"
STUDY_FILE = "study.json"


@dataclass(frozen=True)
class Workload:
    """One trace of the study and the frames studied ([start, stop))."""

    name: str
    trace: str
    frames: tuple[int, int]
    origin: str = "given"        # bundled, a capture spec, or given (--trace)


@dataclass(frozen=True)
class Unit:
    """One workload rendered with one technique: what a worker runs."""

    workload: Workload
    technique: str
    folder: str                  # OUT/runs/W/T
    baseline_folder: str         # OUT/runs/W/baseline
    shown: tuple[int, ...]       # frames whose per-tile overlays the report shows
    tile_size: int = 16
    dsr_parameters: str | None = None
    backend: str = "numpy"
    # the study's configuration (timing.config.EffectiveConfig; None: the shipped files), and
    # the entries of it the renderer reads that differ from the shipped file (Job.gpu_config)
    config: object = field(default=None, compare=False, repr=False)
    gpu_config: tuple = ()

    @property
    def job(self) -> Job:
        extra = {}
        if self.config is not None:
            from tilesim.studies.config_options import configured_mediump_of

            extra["mediump"] = configured_mediump_of(self.config)
        return Job(self.workload.trace, self.workload.frames, self.folder,
                   tile_size=self.tile_size, technique=self.technique,
                   dsr_parameters=self.dsr_parameters, backend=self.backend,
                   gpu_config=self.gpu_config, **extra)

    @property
    def key(self) -> str:
        return f"{self.workload.name}/{self.technique}"


@dataclass
class Settings:
    """What a study runs (everything `tilesim run` is told)."""

    workloads: list[Workload]
    techniques: tuple[str, ...] = TECHNIQUES
    tile_size: int = 16
    dsr_parameters: str | None = None
    quick: bool = False
    skipped: list[dict] = field(default_factory=list)    # captures that could not be made
    # the GPU and energy configuration (timing.config.EffectiveConfig); None: the shipped
    # files, with tile_size as screen.tile_size
    config: object = None

    @property
    def effective(self):
        """The configuration the study runs with (``config``, else the shipped files at
        ``tile_size``); its screen.tile_size is the study's tile size."""
        from tilesim.timing.config import effective_config

        if self.config is None:
            self.config = effective_config(tile_size=self.tile_size)
        if self.config.tile_size != self.tile_size:
            raise InputError(f"the study's tile size {self.tile_size} and its configuration's "
                             f"screen.tile_size {self.config.tile_size} disagree")
        return self.config


def folder_name(technique: str) -> str:
    return technique.replace("/", "-")


# -- the workloads ------------------------------------------------------------------------------


def bundled_traces() -> Path | None:
    """The bundled traces' folder: the repository's traces/ (an editable install or a
    checkout), else the installed package data ``tilesim.bundled_traces`` (``pip install
    .``); None if neither holds them."""
    from importlib.resources import files

    folder = Path(__file__).resolve().parents[1] / "traces"
    if (folder / "bunny.tsim").is_file():
        return folder
    try:
        installed = Path(str(files("tilesim.bundled_traces")))
    except ModuleNotFoundError:
        return None
    return installed if (installed / "bunny.tsim").is_file() else None


def _frames(trace: str, frames: int | str | None) -> tuple[int, int]:
    """[start, stop) of ``frames`` in ``trace``: a range 'A:B' (B past the trace's end is its
    end), the first N frames (an int) or every frame (None)."""
    from tilesim.options import frame_range

    with open_trace(trace) as t:
        total = t.frame_count
    if frames is None or isinstance(frames, int):
        return (0, total if frames is None else min(frames, total))
    start, stop = frame_span(frames, source=trace)
    if stop is not None and stop > total:
        stop = total
    chosen = frame_range(f"{'' if start is None else start}:{'' if stop is None else stop}",
                         total, option="--frames", source=trace)
    return (chosen.start, chosen.stop)


def bundled_workloads(frames: int | str, names=BUNDLED) -> list[Workload]:
    folder = bundled_traces()
    if folder is None:
        raise InputError("the bundled traces (tilesim.bundled_traces) are not installed: "
                         "reinstall tilesim, or give traces with --trace", source="tilesim run")
    return [Workload(name, str(folder / f"{name}.tsim"), _frames(str(folder / f"{name}.tsim"),
                                                                   frames), "bundled")
            for name in names]


def capture_tools_missing() -> list[str]:
    """What every capture needs and is not installed (empty: captures can be tried; a
    program missing is then the reason of its own capture's skip)."""
    needed = ["xvfb-run", "apitrace"]
    missing = [tool for tool in needed if shutil.which(tool) is None]
    try:
        import moderngl  # noqa: F401   (the import compiles the captured GLSL on Mesa)
    except ModuleNotFoundError:
        missing.append("moderngl (pip install -e '.[mesa]')")
    return missing


def capture_name(spec: str) -> str:
    """A workload's name for a capture spec: ``glmark2-es2:shading:shading=phong`` is
    ``glmark2-shading-phong``, ``es2gears`` is itself."""
    app, *rest = spec.split(":")
    if not rest:
        return app
    scene, *options = rest
    return "-".join(["glmark2", scene, *(o.partition("=")[2] or o for o in options)])


def captured_workloads(folder: Path, frames: int, specs=CAPTURED,
                       progress=None) -> tuple[list[Workload], list[dict]]:
    """Capture and import ``specs`` into ``folder`` (each kept: a rerun reuses it); returns
    the workloads and, for those that failed, ``{"spec", "reason"}``."""
    from tilesim.render.traces.apitrace_import import import_apitrace
    from tilesim.render.traces.capture import capture

    made, skipped = [], []
    for spec in specs:
        name = capture_name(spec)
        tsim = folder / f"{name}-{frames}.tsim"
        try:
            if not tsim.exists():
                raw = folder / f"{name}-{frames}.trace"
                if not raw.exists():
                    capture(spec, raw, frames=frames,
                            size=None if spec == "es2gears" else CAPTURE_SIZE)
                import_apitrace(raw, tsim, frames=frames)
            made.append(Workload(name, str(tsim), _frames(str(tsim), frames), spec))
        except Exception as exc:  # noqa: BLE001  (a capture that fails is reported, not fatal)
            skipped.append({"spec": spec, "reason": str(exc).splitlines()[0]})
        if progress is not None:
            progress.update(1)
    return made, skipped


def given_workloads(paths: list[str], frames: int | str | None) -> list[Workload]:
    """Workloads of ``--trace`` arguments (``X.tsim`` or ``X.tsim@A:B``; ``frames`` as
    :func:`_frames` where a trace has no range of its own); names from the file names, made
    unique."""
    from tilesim.inputs import shown_name, trace_and_frames
    from tilesim.options import frame_range

    out, names = [], set()
    for raw in paths:
        path, span = trace_and_frames(raw)
        if not Path(path).is_file():
            raise InputError("no such trace", source=path)
        with open_trace(path) as t:
            count = t.frame_count
            chosen = (frame_range(span, count, option="--trace", source=path) if span
                      else range(*_frames(path, frames)))
        name = shown_name(Path(path).stem)    # text in the report and its plots
        while name in names:
            name += "+"
        names.add(name)
        out.append(Workload(name, path, (chosen.start, chosen.stop), "given"))
    return out


# -- one unit -----------------------------------------------------------------------------------


def unit_identity(unit: Unit) -> dict:
    """What a unit's quality.json must match to count as finished."""
    return {"format": "tilesim study unit 1", "trace_sha256": file_sha256(unit.workload.trace),
            "frames": list(unit.workload.frames), "technique": unit.technique,
            "tile_size": unit.tile_size, "tilesim_version": __version__,
            "renderer_sha256": renderer_sha256(), "dsr_parameters": unit.dsr_parameters,
            # compared and estimated with these numbers (None: the shipped files)
            "config_sha256": None if unit.config is None else unit.config.sha256}


def compared_files_sha256(unit: Unit) -> str | None:
    """One SHA-256 over the manifest digests (frames.json) of the files a unit's comparison
    and estimate read: its frames' PNGs and counters and the baseline's PNGs. None when a
    frame is not finished. Recorded in quality.json: a frame changed or rendered again with
    other bytes after the comparison makes the unit unfinished."""
    parts = []
    for folder, keys in ((unit.folder, DIGESTS), (unit.baseline_folder, ("png_sha256",))):
        try:
            listed = json.loads(Path(folder, FRAMES_FILE).read_text(encoding="utf-8"))["frames"]
            entries = {e["frame"]: e for e in listed}
        except (OSError, ValueError, KeyError, TypeError):
            return None
        for index in range(*unit.workload.frames):
            entry = entries.get(index, {})
            if not all(isinstance(entry.get(k), str) for k in keys):
                return None
            parts += [entry[k] for k in keys]
    return sha256_bytes("\n".join(parts).encode())


def unit_done(unit: Unit) -> dict | None:
    """The unit's quality record when it finished with these settings and its frames are
    the ones it compared, else None."""
    held = read_sealed(Path(unit.folder, QUALITY_FILE))
    if held is None or held.get("identity") != unit_identity(unit):
        return None
    compared = held.get("compared_files_sha256")
    if compared is None or compared != compared_files_sha256(unit):
        return None
    if not all(_overlays_kept(unit, index) for index in unit.shown):
        return None      # the shown frame is rendered again for its overlays
    if unit.technique == "baseline" and _characterized_frames(_characterization(unit)) != [
            unit.workload.frames[0], unit.workload.frames[1] - 1]:
        return None      # the characterization is counted again with the unit
    return held


def _overlay_index(unit: Unit, index: int) -> Path:
    return Path(unit.folder, "overlays", f"{index:06d}.json")


def _characterization(unit: Unit) -> Path:
    return Path(unit.folder).parent / "characterization.json"


def _characterized_frames(path: Path) -> list[int] | None:
    """The [first, last] frames a kept characterization counted (None: none kept, or one
    that does not match its own digest)."""
    return (read_sealed(path) or {}).get("frames")


@dataclass
class _UnitRender:
    """What rendering a unit needs in the worker: its job, the baseline's characterizer
    (when it renders from scratch) and the callback writing the shown frames' overlays."""

    unit: Unit
    observer: Characterizer | None
    before_write: object

    @property
    def job(self) -> Job:
        return self.unit.job


def _forget_shown_without_overlays(unit: Unit) -> None:
    """A shown frame rendered without its overlays (an earlier run stopped in between, or the
    folder came from `tilesim render`) is rendered again: the overlays need the technique's
    state as that frame left it. Done before the render starts, so a frame on disk is final."""
    job = unit.job
    for index in unit.shown:
        if job.finished(index) and not _overlays_kept(unit, index):
            job.frame_files(index)[0].unlink()


def _overlays_kept(unit: Unit, index: int) -> bool:
    """Whether the overlays of shown frame ``index`` were written (their index, sealed)."""
    return read_sealed(_overlay_index(unit, index)) is not None


def _start_unit(unit: Unit) -> _UnitRender:
    job = unit.job
    wanted = range(*unit.workload.frames)
    is_baseline = unit.technique == "baseline"
    fresh = job.missing() == list(wanted)
    observer = Characterizer(wanted, None) if is_baseline and fresh else None

    def before_write(result, techniques) -> None:
        if result.index not in unit.shown:
            return
        folder = Path(unit.folder, "overlays")
        if not is_baseline:
            write_overlays(folder, "", result.index, result.image, result.counters, techniques)
        kinds = sorted(p.parent.name for p in folder.glob(f"*/{result.index:06d}.png"))
        write_json(_overlay_index(unit, result.index),
                   sealed({"frame": result.index, "kinds": kinds}))

    return _UnitRender(unit, observer, before_write)


def _characterize(unit: Unit, observer: Characterizer | None) -> None:
    """The baseline unit's characterization.json: from the render's observer, or counted
    again when the render resumed or the kept one is of other frames."""
    wanted = range(*unit.workload.frames)
    path = _characterization(unit)
    if observer is not None:
        with open_trace(unit.workload.trace) as trace:
            write_json(path, sealed(characterization(observer, trace, wanted, unit.tile_size)))
    elif _characterized_frames(path) != [wanted.start, wanted.stop - 1]:
        write_json(path, sealed(characterize(unit.workload.trace, wanted,
                                             tile_size=unit.tile_size)))


def render_units(units: list[Unit]) -> dict[str, dict]:
    """Render units of one workload (resuming): one unit on its own, or units whose frames
    come from one host's render (the baseline with TE, RE and memoization; EVR with RE+EVR:
    batch.render_host) with one functional render; writes their overlays and the baseline's
    characterization. Returns, per unit key, the render's wall time and the units it was
    rendered with."""
    started = time.perf_counter()
    renders = [_start_unit(u) for u in units]
    if len(renders) == 1:
        r = renders[0]
        run_job(r.job, prepare=False, observer=r.observer, before_write=r.before_write)
    else:
        observers = [r.observer for r in renders if r.observer is not None]
        run_side_by_side([r.job for r in renders], observer=observers[0] if observers else None,
                         before_writes=[r.before_write for r in renders])
    rendered = round(time.perf_counter() - started, 3)
    for r in renders:
        if r.unit.technique == "baseline":
            _characterize(r.unit, r.observer)
    together = [u.key for u in units]
    return {u.key: {"render": rendered, "rendered_with": together} for u in units}


def compare_frames(unit: Unit, frames: range, _rendered=None, _baseline=None) -> dict:
    """The comparison of a rendered unit's ``frames`` with the baseline's frames: {"tally":
    ``Tally.to_dict``, "seconds": its wall time}. ``_rendered``, ``_baseline``: the unit's
    and the baseline's renders when they ran in this study (Dask dependencies: their frames
    must exist), unused."""
    started = time.perf_counter()
    job = unit.job
    is_baseline = unit.technique == "baseline"
    tally = Tally(unit.technique)
    baseline = Job(unit.workload.trace, unit.workload.frames, unit.baseline_folder)
    for index in frames:
        png, npz = job.frame_files(index)
        reference_png = png if is_baseline else baseline.frame_files(index)[0]
        # Frames are encoded by one encoder at one level, so equal pixels give byte-identical
        # files (a side-by-side render writes the same bytes): equal files need no decoding.
        if png == reference_png or png.read_bytes() == reference_png.read_bytes():
            tally.add(None, load_counters(npz), None)
        else:
            tally.add(read_png(png, "RGBA"), load_counters(npz), read_png(reference_png, "RGBA"))
    return {"tally": tally.to_dict(), "seconds": time.perf_counter() - started}


def comparison_parts(unit: Unit, parts: int, first: int | None = None) -> list[range]:
    """A unit's frames (from ``first``, else all) as ``parts`` consecutive runs (fewer for
    fewer frames), compared side by side (:func:`compare_frames`)."""
    start, stop = unit.workload.frames
    first = start if first is None else first
    if first >= stop:
        return []
    parts = max(1, min(parts, stop - first))
    bounds = [first + (stop - first) * k // parts for k in range(parts + 1)]
    return [range(a, b) for a, b in zip(bounds, bounds[1:], strict=False)]


def finish_unit(unit: Unit, rendered: dict, compared: list[dict] | None = None) -> dict:
    """Compare a rendered unit's frames with the baseline's (or join ``compared``, its
    :func:`comparison_parts` compared already, in frame order) and write its quality record
    (quality.json, the unit's finished mark); returns it. ``rendered``: what
    :func:`render_units` returned for it."""
    started = time.perf_counter()
    if compared is None:
        compared = [compare_frames(unit, range(*unit.workload.frames))]
    tally = Tally.joined([Tally.from_dict(part["tally"]) for part in compared])
    own = rendered[unit.key]
    comparing = sum(part["seconds"] for part in compared)
    record = {"identity": unit_identity(unit), "workload": unit.workload.name,
              "technique": unit.technique, "tally": tally.to_dict(),
              "seconds": {"render": own["render"],
                          "total": round(own["render"] + comparing
                                         + time.perf_counter() - started, 3)},
              "rendered_with": own["rendered_with"],
              "compared_files_sha256": compared_files_sha256(unit)}
    write_json(Path(unit.folder, QUALITY_FILE), sealed(record))
    return record


def estimate_unit(unit: Unit):
    """The timing model's estimate of a unit's frames (timing.report.estimate_render), as
    the study's results take it."""
    import numpy as np

    from tilesim.timing.config import effective_config
    from tilesim.timing.report import estimate_render

    cfg = unit.config if unit.config is not None else effective_config(
        tile_size=unit.tile_size)
    # The unit's frames only: the folder may hold more (a narrower re-run of the study). An
    # overflow is said once, by the results' check_finite, not as NumPy's warnings.
    with np.errstate(over="ignore", invalid="ignore"):
        return estimate_render(unit.workload.name, Path(unit.folder), cfg.gpu, cfg.energy,
                                 frames=range(*unit.workload.frames), check_writer=False)


def plan_renders(units: list[Unit]) -> list[list[Unit]]:
    """The renders of ``units``: per workload, the units whose frames come from one host's
    render (batch.render_host: the baseline with TE, RE and memoization; EVR with RE+EVR) as
    one, every other unit alone; the baselines' renders first (the others are compared with
    their frames), then the renders with the most units (the longest: a worker that starts
    them last would keep the study waiting), otherwise in the order given."""
    groups: dict[tuple[str, str], list[Unit]] = {}
    alone: list[list[Unit]] = []
    for unit in units:
        host = render_host(unit.job)
        if host is not None:
            groups.setdefault((unit.workload.name, host), []).append(unit)
        else:
            alone.append([unit])
    renders = list(groups.values()) + alone
    # A unit is compared with its baseline's frames: in a serial run the baseline's render
    # goes first (EVR's render with RE+EVR is larger than a baseline rendered alone).
    return sorted(renders, key=lambda g: (not any(u.technique == "baseline" for u in g),
                                          -len(g)))


# -- the study ----------------------------------------------------------------------------------


def plan_units(settings: Settings, out: Path) -> list[Unit]:
    """Every unit of the study, baselines first."""
    from tilesim.backend import backend_name
    from tilesim.studies.config_options import renderer_values

    cfg = settings.effective
    gpu_values = renderer_values(cfg)
    units = []
    for technique in settings.techniques:
        for w in settings.workloads:
            runs = out / "runs" / w.name
            units.append(Unit(w, technique, str(runs / folder_name(technique)),
                              str(runs / "baseline"), shown=(w.frames[1] - 1,),
                              tile_size=settings.tile_size,
                              dsr_parameters=settings.dsr_parameters, backend=backend_name(),
                              config=cfg, gpu_config=gpu_values))
    return units


def run_units(units: list[Unit], *, workers: int, progress: bool = True,
              estimates: dict | None = None) -> dict[str, dict]:
    """Run the units not yet finished (in parallel when ``workers`` > 1): their renders
    (:func:`plan_renders`), then each unit's comparison once its render and its baseline's
    are done; returns every unit's quality record by key. With ``workers`` > 1 the workers
    also estimate the units they compare, into ``estimates`` (by key) when given."""
    from tilesim.studies.progress import progress_bar

    records = {u.key: r for u in units if (r := unit_done(u)) is not None}
    todo = [u for u in units if u.key not in records]
    for unit in todo:
        _forget_shown_without_overlays(unit)
    renders = plan_renders(todo)
    bar = progress_bar(len(units), initial=len(records), desc="study", unit="run",
                       enabled=progress)
    try:
        if workers <= 1 or len(renders) <= 1:
            for group in renders:
                bar.set_postfix_str(", ".join(u.key for u in group), refresh=True)
                rendered = render_units(group)
                for unit in group:
                    records[unit.key] = finish_unit(unit, rendered)
                    bar.update(1)
        else:
            _run_units_on_dask(todo, renders, workers, records, estimates, bar)
    finally:
        bar.close()
    return records


# A render's frames are compared as they are written, in runs of this many frames, by
# whichever worker is free: the last render's comparison (DSR's MSSIM, ~0.35 s a frame) would
# otherwise start when it ends, with the study waiting on it.
STREAM_FRAMES = 5
POLL_S = 0.5


class _Comparison:
    """A unit's comparison parts on Dask: runs of frames submitted while its render writes
    them, then the rest once the render is done."""

    def __init__(self, unit: Unit, baseline_job: Job):
        self.unit, self.baseline_job = unit, baseline_job
        self.next = unit.workload.frames[0]
        self.parts: list = []

    def written(self) -> list[range]:
        """The next runs of STREAM_FRAMES frames the unit and its baseline have finished."""
        runs = []
        stop = self.unit.workload.frames[1]
        while self.next + STREAM_FRAMES <= stop and all(
                self.unit.job.finished(i) and self.baseline_job.finished(i)
                for i in range(self.next, self.next + STREAM_FRAMES)):
            runs.append(range(self.next, self.next + STREAM_FRAMES))
            self.next += STREAM_FRAMES
        return runs


def _run_units_on_dask(todo: list[Unit], renders: list[list[Unit]], workers: int,
                       records: dict, estimates: dict | None, bar) -> None:
    """run_units on a local Dask cluster of ``workers``: the renders, longest first; each
    unit's frames compared in runs as they are written and the rest in a part per worker
    when its render and its baseline's are done; then its quality record and, beside it, its
    estimate (into ``estimates``)."""
    from tilesim.studies.dask_cluster import dask_client, task_result

    with dask_client(workers) as client:
        # Dask starts earlier submissions first: the renders, then the comparisons.
        rendered = {}
        for group in renders:
            future = client.submit(render_units, group, pure=False)
            rendered.update({u.key: future for u in group})
        comparisons = {u.key: _Comparison(u, Job(u.workload.trace, u.workload.frames,
                                                 u.baseline_folder)) for u in todo}
        finishing, estimating = {}, {}
        while comparisons or finishing or estimating:
            for key, comparison in list(comparisons.items()):
                unit = comparison.unit
                render = rendered[key]
                baseline = rendered.get(f"{unit.workload.name}/baseline")
                for future in (render, baseline):
                    if future is not None and future.status == "error":
                        task_result(future)     # raises the render's error
                if render.done() and (baseline is None or baseline.done()):
                    # The estimate first (the longest task left of the unit: the last
                    # render's rest of frames is a few seconds of comparing).
                    if estimates is not None:
                        estimating[client.submit(estimate_unit, unit, pure=False)] = unit
                    rest = comparison_parts(unit, workers, comparison.next)
                    comparison.parts += [client.submit(compare_frames, unit, frames, render,
                                                       baseline, pure=False)
                                         for frames in rest]
                    finishing[client.submit(finish_unit, unit, render, comparison.parts,
                                            pure=False)] = unit
                    del comparisons[key]
                else:
                    # Frames on disk are final: the writer writes a frame once, its PNG last.
                    comparison.parts += [client.submit(compare_frames, unit, frames,
                                                       pure=False)
                                         for frames in comparison.written()]
            done = [future for future in (*finishing, *estimating) if future.done()]
            if not done:
                time.sleep(POLL_S)
            for future in done:
                if future in estimating:
                    estimates[estimating.pop(future).key] = task_result(future)
                    continue
                unit = finishing.pop(future)
                records[unit.key] = task_result(future)
                bar.set_postfix_str(unit.key, refresh=False)
                bar.update(1)


def check_study_config(settings: Settings, out: Path) -> None:
    """Refuse (InputError, one line) a study folder whose study.json records another
    configuration than ``settings``' (a folder without one, or of an older tilesim that
    recorded none, is not refused: its units' identities decide)."""
    try:
        held = json.loads((out / STUDY_FILE).read_text(encoding="utf-8")).get("config")
    except (OSError, ValueError, AttributeError):
        return
    if not isinstance(held, dict) or not isinstance(held.get("sha256"), str):
        return
    cfg = settings.effective
    if held["sha256"] == cfg.sha256:
        return
    mine, theirs = cfg.values(), held.get("values") or {}
    differ = [f"{k} {_value(theirs.get(part, {}).get(k))} there, {_value(v)} asked"
              for part in ("gpu", "energy") for k, v in mine[part].items()
              if not isinstance(theirs.get(part), dict) or theirs[part].get(k) != v]
    shown = "; ".join(differ[:3]) + (f"; and {len(differ) - 3} more" if len(differ) > 3
                                     else "")
    raise InputError(f"holds a study made with another configuration ({held['sha256'][:12]} "
                     f"there, {cfg.sha256[:12]} asked: {shown or 'other values'}); to start "
                     "over, rerun with --force, or use another --out", source=str(out))


def _value(value) -> str:
    return "none" if value is None else f"{value:g}" if isinstance(value, float) else str(value)


_OVERLAY_INDEX = re.compile(r"\d{6,}\.json")
_OVERLAY_PNG = re.compile(r"\d{6,}\.png")


def remove_overlays(folder: Path) -> int:
    """Start a unit's overlays over: remove only what tilesim writes there (NNNNNN.json, and
    KIND/NNNNNN.png one level down), never following a symlink; other files, and the folders
    holding them, stay (--force must never remove the whole folder). Returns the count."""
    from tilesim.atomic import remove_temporaries

    if folder.is_symlink() or not folder.is_dir():
        return 0
    removed = remove_temporaries(folder, _OVERLAY_INDEX)
    for entry in os.scandir(folder):
        if entry.is_symlink():
            continue
        if entry.is_file() and _OVERLAY_INDEX.fullmatch(entry.name):
            os.unlink(entry.path)
            removed += 1
        elif entry.is_dir():
            removed += remove_temporaries(Path(entry.path), _OVERLAY_PNG)
            for png in os.scandir(entry.path):
                if (_OVERLAY_PNG.fullmatch(png.name) and not png.is_symlink()
                        and png.is_file()):
                    os.unlink(png.path)
                    removed += 1
            with contextlib.suppress(OSError):
                os.rmdir(entry.path)          # only when nothing else is there
    with contextlib.suppress(OSError):
        folder.rmdir()
    return removed


STUDY_FORMAT = "tilesim study 1"


def _study_files(out: Path) -> list[tuple[Path, object]]:
    """What ``tilesim run`` writes at the top of its folder, each with how tilesim's is
    known (study.json and results.json by their fields; index.html and img/ only by being
    in a folder whose study.json or results.json is tilesim's)."""
    return [(out / STUDY_FILE, _is_study),
            (out / "results.json", lambda r: "sections" in r or "record_sha256" in r),
            (out / "index.html", None), (out / "img", None)]


def _is_study(record: dict) -> bool:
    return record.get("format") == STUDY_FORMAT or isinstance(record.get("settings"), dict)


def prepare(settings: Settings, out: Path, *, force: bool) -> list[Unit]:
    """Check the output folder and every unit's folder before any work (refusing folders
    holding renders of other settings, or a study of another configuration, unless
    ``force``)."""
    if not force:
        check_study_config(settings, out)
    units = plan_units(settings, out)
    if force:
        for unit in units:
            Path(unit.folder, QUALITY_FILE).unlink(missing_ok=True)
            Path(unit.folder).parent.joinpath("characterization.json").unlink(missing_ok=True)
            remove_overlays(Path(unit.folder, "overlays"))
    prepare_jobs([u.job for u in units], force=force, command="tilesim run")
    return units


def run_study(settings: Settings, out: str | Path, *, workers: int = 1, force: bool = False,
              progress: bool = True, extra_sections=None) -> dict:
    """Run a study into ``out`` (resuming what an earlier run of it finished) and write
    results.json and the report; returns the results."""
    from tilesim.folder_lock import holds, lock_folder, release_folder
    from tilesim.studies.report.page import write_report
    from tilesim.studies.study_results import assemble_results, settings_record

    out = Path(out)
    started = time.perf_counter()
    if not holds_tilesim_files(_study_files(out)):       # before anything is made
        refuse_foreign(_study_files(out), "tilesim run")
    taken = not holds(out)
    lock_folder(out, "tilesim run")
    try:
        try:
            units = prepare(settings, out, force=force)
        except InputError:
            if taken:
                release_folder(out, undo=True)   # a refused run leaves nothing behind
            raise
        write_json(out / STUDY_FILE, {"format": STUDY_FORMAT, "settings": settings_record(settings),
                                      "config": settings.effective.record()})
        render_started = time.perf_counter()
        estimates: dict = {}
        records = run_units(units, workers=workers, progress=progress, estimates=estimates)
        seconds = {"render_and_compare": time.perf_counter() - render_started}
        results = assemble_results(settings, units, records, out, progress=progress,
                                   estimates=estimates)
        if extra_sections:
            for name, make in extra_sections.items():
                section_started = time.perf_counter()
                results["sections"][name] = make(out)
                seconds[name] = time.perf_counter() - section_started
                write_json(out / "results.json", sealed(results))    # a later section may fail
        report_started = time.perf_counter()
        results["seconds"] = {k: round(v, 2) for k, v in seconds.items()}
        write_report(out, results, progress=progress, estimates=estimates)
        seconds["report"] = time.perf_counter() - report_started
        seconds["total"] = time.perf_counter() - started
        results["seconds"] = {k: round(v, 2) for k, v in seconds.items()}
        write_json(out / "results.json", sealed(results))
        return results
    finally:
        release_folder(out)


# -- command line -------------------------------------------------------------------------------


def regime_lines(workloads: list[dict]) -> str:
    """What bounds each workload's baseline, one line each (``bound_shares`` and ``regime`` of
    results.json; ``tilesim.timing.model.bound_cycles``), and how many are fragment-bound like
    the thesis's games."""
    from tilesim.timing.model import bound_line

    shown = [w for w in workloads if w.get("bound_shares")]
    if not shown:
        return ""
    lines = ["what bounds each baseline (share of frame time):"]
    for w in shown:
        fragment = w["regime"]["fragment_bound"]
        lines.append(f"  {w['name']:<28} {bound_line(w['bound_shares'])}"
                     f"{'  [fragment-bound]' if fragment else ''}")
    regime = sum(bool(w["regime"]["fragment_bound"]) for w in shown)
    lines.append(f"  fragment-bound like the thesis's games: {regime}/{len(shown)} workloads")
    return "\n".join(lines)
