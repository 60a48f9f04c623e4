"""Batch rendering: many traces and frame ranges, in parallel with Dask, resumable.

A job is one trace and the frames wanted from it. Each job runs in one worker process: a
trace is replayed from its first frame (later frames depend on the state, textures and
framebuffer objects earlier frames made), and the wanted frames are written as they finish:
``frames/NNNNNN.png`` and ``counters/NNNNNN.npz``, each atomically. A frame whose two files
both exist is finished; a rerun renders what it must to reach the missing frames and writes
only those, so an interrupted batch resumes where it stopped and never leaves a half-written
file. Jobs run on a local Dask cluster of processes, or on an existing one
(``--scheduler ADDRESS``).

A job's folder knows what it holds. ``render.json``, written (atomically) before any frame,
is its identity: the trace's content hash, the technique and its variant (and the DSR
parameters' hash), tile size, traversal, fill rule, array backend, tilesim version and the
renderer's source (:func:`renderer_sha256`: a render made by other renderer code, say one that
counts something more, is not silently reused). A run
whose identity differs from the folder's is refused before anything is written or removed
(:func:`prepare_jobs`), naming the fields that differ; ``force`` starts the folder over,
removing only the files tilesim writes there. The frame range is not part of the identity:
frame N is the same whichever range a run asks for (the trace is always replayed from frame
0), so a run asking for more frames extends the render.

``frames.json`` lists every finished frame in the folder with its counter totals: it is
rebuilt from the files on disk at every start (a frame finished by a killed run is read back
from its counters), rewritten at most once a second while frames are written, and at the end.

Clean-up touches only the temporaries ``tilesim.atomic`` makes for the files tilesim writes,
in the folders it writes them to (the job folder, ``frames/``, ``counters/``), never
recursively.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
import time
import warnings
from dataclasses import dataclass, field, replace
from pathlib import Path

from tilesim import __version__
from tilesim.atomic import (
    check_output,
    remove_temporaries,
    temporary_name,
    write_bytes,
    write_json,
)
from tilesim.backend import use_backend
from tilesim.errors import InputError
from tilesim.folder_lock import holds, lock_folder, release_folder
from tilesim.images import frame_png_bytes
from tilesim.options import default_workers
from tilesim.render.pipeline.counters import (
    FRAME_COUNTERS,
    TECHNIQUE_FRAME_COUNTERS,
    TECHNIQUE_TILE_COUNTERS,
    TILE_COUNTERS,
    load_counters,
)
from tilesim.render.pipeline.gpu_config import renderer_config
from tilesim.render.pipeline.renderer import configured_mediump
from tilesim.render.replay import (
    fresh_starts,
    render_side_by_side,
    render_trace,
    side_by_side_host,
)
from tilesim.render.techniques.bus import Techniques
from tilesim.render.techniques.dynamic_sampling_rate import DEFAULT_PARAMETERS, DSRParameters
from tilesim.render.traces.trace_file import open_trace
from tilesim.render_folder import (
    COUNTERS_DIR,
    FRAME_NPZ,
    FRAME_PNG,
    FRAMES_DIR,
    IDENTITY_FILE,
    entry_problem,
    file_sha256,
    frame_files,
    image_problem,
    provenance,
    provenance_problem,
    read_provenance,
    sealed,
    sha256_bytes,
    unsealed,
)
from tilesim.render_folder import MANIFEST_FILE as FRAMES_FILE
from tilesim.studies.dask_cluster import dask_client, map_in_order

IDENTITY_FORMAT = "tilesim render folder 2"   # 2: counters record provenance, frames.json digests
# The files tilesim writes in a job folder (summary.json: the batch's folder, not removed by
# --force) and in its frames/ and counters/ sub-folders (NNNNNN = frame number, >= 6 digits).
OWN_FILES = re.compile(r"render\.json|frames\.json|summary\.json")
# Fields of render.json a resume must match, with the words an error uses for them.
IDENTITY_FIELDS = {
    "format": "format",
    "trace_sha256": "trace content (SHA-256)",
    "technique": "technique",
    "dsr_parameters_sha256": "DSR parameters (SHA-256)",
    "tile_size": "tile size",
    "traversal": "traversal",
    "fill_rule": "fill rule",
    "backend": "backend",
    "tilesim_version": "tilesim version",
    "renderer_sha256": "renderer source (SHA-256)",
    "mediump": "mediump arithmetic",
    "gpu_config": "GPU configuration the renderer reads",
}
# What decides a render's frames and counters: the GL state machine, the pipeline, the
# techniques (their shipped parameters included), trace reading, the shader interpreter, and
# the GPU configuration the renderer reads (texture cache geometry, Overlapped Tiles Queue).
RENDERER_SOURCES = ("render/gl", "render/pipeline", "render/techniques", "render/traces",
                    "shaders")
RENDERER_DATA = ("timing/baseline_gpu.toml",)
SUMMARY_INTERVAL_S = 1.0   # frames.json is rewritten at most this often while frames are written
# Test hook: a worker stops (sleeps until killed, at most 10 minutes, then exits) after writing
# this many frames of its job, before it updates frames.json, so that a test can kill -9 a
# render midway deterministically however loaded the machine is.
HANG_ENV = "TILESIM_TEST_HANG_AFTER_FRAMES"


@dataclass(frozen=True)
class Job:
    trace: str
    frames: tuple[int, int]   # [start, stop)
    out: str
    tile_size: int = 16
    traversal: str = "scanline"
    fill_rule: str = "bottom_left"
    technique: str = "baseline"
    dsr_parameters: str | None = None
    backend: str = "numpy"    # the array backend the worker renders on (numpy or cupy)
    # how shaders compute mediump / lowp, "fp32" or "fp16" (default: the GPU configuration's)
    mediump: str = field(default_factory=configured_mediump)
    # the entries of the GPU configuration the renderer reads (gpu_config.RENDERER_KEYS) that
    # differ from the shipped file's, sorted (key, value) pairs; () renders with the file's
    gpu_config: tuple = ()

    def frame_files(self, index: int) -> tuple[Path, Path]:
        return frame_files(self.out, index)

    def finished(self, index: int) -> bool:
        return all(p.exists() for p in self.frame_files(index))

    def missing(self) -> list[int]:
        return [i for i in range(*self.frames) if not self.finished(i)]


# -- identity -----------------------------------------------------------------------------

@functools.lru_cache(maxsize=1)
def renderer_sha256() -> str:
    """SHA-256 over the renderer's source files (``RENDERER_SOURCES``' *.py and *.toml, and
    ``RENDERER_DATA``), each with its path relative to the package, in path order."""
    root = Path(__file__).resolve().parents[1]
    files = sorted(p for folder in RENDERER_SOURCES for pattern in ("*.py", "*.toml")
                   for p in (root / folder).rglob(pattern))
    files += [root / name for name in RENDERER_DATA]
    digest = hashlib.sha256()
    for path in files:
        digest.update(path.relative_to(root).as_posix().encode() + b"\0")
        digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()


def technique_identity(job: Job) -> str:
    """The technique with its variant, spelled one way (``evr+re`` and ``re+evr/crc32`` are
    ``re+evr``)."""
    techniques = job_techniques(job)
    name = techniques.name
    if techniques.signature != "crc32":
        name += f"/{techniques.signature}"
    if techniques.constants_block != "state":
        name += f"/{techniques.constants_block}"
    if techniques.memo_key_bits != 64:
        name += f"/{techniques.memo_key_bits}"
    return name


def job_identity(job: Job) -> dict:
    """What a job's folder holds (``render.json``): the fields of ``IDENTITY_FIELDS``, and the
    trace's path and the frames asked for by the run that wrote it (for information)."""
    technique = technique_identity(job)
    dsr_sha = None
    if "dsr" in technique.split("/")[0].split("+"):
        params = Path(job.dsr_parameters) if job.dsr_parameters else DEFAULT_PARAMETERS
        # read and checked here, before render.json records it: a file refused only when the
        # render started left a folder that a rerun with the fixed file was refused to resume
        DSRParameters.load(params)
        try:
            dsr_sha = file_sha256(params)
        except OSError as exc:
            raise InputError(f"cannot read the DSR parameters file: {exc.strerror or exc}",
                             source=str(params)) from None
    return {"format": IDENTITY_FORMAT,
            "trace": str(job.trace), "trace_sha256": file_sha256(job.trace),
            "frames": list(job.frames),
            "technique": technique, "dsr_parameters_sha256": dsr_sha,
            "tile_size": job.tile_size, "traversal": job.traversal, "fill_rule": job.fill_rule,
            "backend": job.backend, "tilesim_version": __version__,
            "renderer_sha256": renderer_sha256(),
            # Only fp16 is written: folders rendered before the option existed are fp32.
            **({} if job.mediump == "fp32" else {"mediump": job.mediump}),
            # Only values other than the shipped file's (whose bytes renderer_sha256 holds).
            **({"gpu_config": dict(job.gpu_config)} if job.gpu_config else {})}


def _shown(field: str, identity: dict) -> str:
    value = identity.get(field)
    if field == "trace_sha256" and isinstance(value, str):
        return f"{value[:12]} ({identity.get('trace')})"
    if field.endswith("sha256") and isinstance(value, str):
        return value[:12]
    return "none" if value is None else repr(value)


def _restart(command: str) -> str:
    """The advice ending a refusal: the command to rerun with --force."""
    return (f"; to start over, rerun `{command}` with --force (it removes the frames, "
            "counters, frames.json and render.json tilesim wrote there), or use another "
            "output folder")


_RESTART = _restart("tilesim render")


SUMMARY_FORMAT = "tilesim render summary 1"


def is_tilesim_json(path: Path, recognise) -> bool:
    """Whether ``path`` (which exists) is a JSON object tilesim wrote: ``recognise(record)``
    says so of the object (a format field, or the keys of an older tilesim's record). What
    cannot be read as one (a fifo, a huge file, not JSON) is not tilesim's."""
    from tilesim.inputs import read_input_bytes

    if path.is_symlink() or not path.is_file():
        return False
    try:
        record = json.loads(read_input_bytes(path, "JSON file"))
    except (InputError, ValueError):
        return False
    return isinstance(record, dict) and bool(recognise(record))


def refuse_foreign(files: list[tuple[Path, object]], command: str) -> None:
    """Ownership: tilesim never overwrites (or, with --force, removes) a file it did
    not write. For each (path, recognise) of a file ``command`` would write: InputError naming
    the first that exists and is not tilesim's (:func:`is_tilesim_json`; ``recognise`` None:
    any file or folder there is foreign). Changes nothing."""
    for path, recognise in files:
        if not os.path.lexists(path):
            continue
        if recognise is None or not is_tilesim_json(path, recognise):
            raise InputError(f"exists and was not written by tilesim; {command} would "
                             "overwrite it: move it away, or use another output folder",
                             source=str(path))


def holds_tilesim_files(files: list[tuple[Path, object]]) -> bool:
    """Whether one of ``files`` (as for :func:`refuse_foreign`) is tilesim's: the folder is
    then tilesim's, and a damaged file of it is for the resume checks (and --force)."""
    return any(recognise is not None and os.path.lexists(path)
               and is_tilesim_json(path, recognise) for path, recognise in files)


def refuse_symlinks(folders: list[Path]) -> None:
    """InputError naming the first of ``folders`` that is a symbolic link: tilesim never
    writes or removes through one (its target is not a folder tilesim made)."""
    for folder in folders:
        if folder.is_symlink():
            raise InputError("is a symbolic link; tilesim does not write or remove files "
                             "through one: replace it by a folder, or use another output "
                             "folder", source=str(folder))


def _render_files(job: Job) -> list[tuple[Path, object]]:
    """The JSON files a render writes in a job's folder, each with how tilesim's is known."""
    folder = Path(job.out)
    return [(folder / IDENTITY_FILE,
             lambda r: str(r.get("format", "")).startswith("tilesim render folder")),
            (folder / FRAMES_FILE, lambda r: isinstance(r.get("frames"), list)),
            (folder / "summary.json", is_render_summary)]


def is_render_summary(record: dict) -> bool:
    return (record.get("format") == SUMMARY_FORMAT
            or (isinstance(record.get("jobs"), list) and "seconds" in record))


def check_folder(job: Job, identity: dict, command: str = "tilesim render") -> None:
    """Refuse (InputError naming the folder) a folder that holds a render of another identity,
    or frames whose identity is unknown; changes nothing. ``command`` is what the advice
    tells to rerun with --force (``tilesim run`` for a study's unit folders)."""
    _RESTART = _restart(command)
    folder = Path(job.out)
    path = folder / IDENTITY_FILE
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        if _own_outputs(folder):
            raise InputError(f"holds rendered frames but no {IDENTITY_FILE} (made by an older "
                             "tilesim, or not by tilesim): what they were rendered with is "
                             "unknown" + _RESTART, source=str(folder)) from None
        return
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read {IDENTITY_FILE}: {exc}" + _RESTART,
                         source=str(folder)) from None
    try:
        held = json.loads(text)
    except ValueError:
        held = None
    if not isinstance(held, dict):
        raise InputError(f"{IDENTITY_FILE} is not a tilesim render identity (not a JSON "
                         "object)" + _RESTART, source=str(folder))
    fields = [f for f in IDENTITY_FIELDS if held.get(f) != identity.get(f)]
    if "technique" in fields and "dsr_parameters_sha256" in fields:
        fields.remove("dsr_parameters_sha256")      # follows from the technique
    differ = [f"{IDENTITY_FIELDS[f]} {_shown(f, held)} there, {_shown(f, identity)} asked"
              for f in fields]
    if differ:
        raise InputError("holds a render made with other settings, refusing to mix them: "
                         + "; ".join(differ) + _RESTART, source=str(folder))


def _own_outputs(folder: Path) -> list[Path]:
    """The frame and counters files tilesim writes in ``folder``'s frames/ and counters/."""
    found = []
    for sub, pattern in ((FRAMES_DIR, FRAME_PNG), (COUNTERS_DIR, FRAME_NPZ)):
        try:
            entries = list(os.scandir(folder / sub))
        except (FileNotFoundError, NotADirectoryError):
            continue
        found += [Path(e.path) for e in entries
                  if pattern.fullmatch(e.name) and e.is_file(follow_symlinks=False)]
    return found


def remove_outputs(folder: str | Path) -> int:
    """Start a folder over: remove the frames, counters, frames.json and render.json tilesim
    wrote there (and their temporaries); other files stay. Returns how many were removed."""
    folder = Path(folder)
    removed = clean_stale_temporaries(folder)
    for path in _own_outputs(folder) + [folder / FRAMES_FILE, folder / IDENTITY_FILE]:
        if path.is_symlink() or path.is_file():
            path.unlink(missing_ok=True)
            removed += 1
    return removed


def clean_stale_temporaries(out: str | Path) -> int:
    """Remove the temporaries an interrupted run left of the files tilesim writes: in the job
    folder itself (render.json, frames.json, summary.json), in ``frames/`` (NNNNNN.png) and
    in ``counters/`` (NNNNNN.npz); nothing else, and no deeper."""
    out = Path(out)
    return (remove_temporaries(out, OWN_FILES) + remove_temporaries(out / FRAMES_DIR, FRAME_PNG)
            + remove_temporaries(out / COUNTERS_DIR, FRAME_NPZ))


def prepare_jobs(jobs: list[Job], *, force: bool = False,
                 command: str = "tilesim render") -> list[dict]:
    """Before any frame: check every job's folder against its identity (all of them, before
    anything is changed), then, per folder, start it over if ``force``, remove stale
    temporaries, write ``render.json`` and bring ``frames.json`` up to date with the files.
    Returns the identities."""
    for job in jobs:
        check_output(job.out, folder=True)
    identities = [job_identity(job) for job in jobs]
    for job in jobs:    # a folder not tilesim's: its files refused, --force or not
        if not holds_tilesim_files(_render_files(job)) and not _own_outputs(Path(job.out)):
            refuse_foreign(_render_files(job), command)
        refuse_symlinks([Path(job.out, FRAMES_DIR), Path(job.out, COUNTERS_DIR)])
    taken = [job.out for job in jobs if not holds(job.out)]   # what a refusal gives back
    for job in jobs:   # one run per folder: a second fails here (the lock goes at exit)
        lock_folder(job.out, command)
    if not force:
        try:
            for job, identity in zip(jobs, identities, strict=True):
                check_folder(job, identity, command)
        except InputError:
            for folder in taken:     # a refused run leaves nothing behind
                release_folder(folder, undo=True)
            raise
    for job, identity in zip(jobs, identities, strict=True):
        if force:
            remove_outputs(job.out)
        clean_stale_temporaries(job.out)
        write_json(Path(job.out) / IDENTITY_FILE, identity)
        entries, changed = frame_entries(job)
        if changed or not (Path(job.out) / FRAMES_FILE).exists():
            _write_frames(job, entries)
    return identities


# -- frames.json ----------------------------------------------------------------------------

DIGESTS = ("png_sha256", "counters_sha256")


def _entry(summary: dict, digests: dict | None = None) -> dict:
    """A frame's counter totals in one key order (a summary of live counters and one of
    counters loaded from disk order their scalars differently), then its files' digests."""
    digests = digests if digests is not None else {k: summary[k] for k in DIGESTS
                                                   if k in summary}
    order = ["frame", *FRAME_COUNTERS, *TECHNIQUE_FRAME_COUNTERS, *TILE_COUNTERS,
             *TECHNIQUE_TILE_COUNTERS]
    known = set(order) | {"overshading", *DIGESTS}
    keys = [k for k in order if k in summary] + sorted(k for k in summary if k not in known)
    if "overshading" in summary:
        keys.append("overshading")
    return {**{k: summary[k] for k in keys}, **digests}


def finished_frames(job: Job) -> list[int]:
    """Every frame of the folder whose PNG and counters both exist (any frame, not only the
    job's range)."""
    folder = Path(job.out) / FRAMES_DIR
    try:
        names = [e.name for e in os.scandir(folder)]
    except (FileNotFoundError, NotADirectoryError):
        return []
    found = []
    for name in names:
        match = FRAME_PNG.fullmatch(name)
        if match and name == f"{int(match[1]):06d}.png" and job.finished(int(match[1])):
            found.append(int(match[1]))
    return sorted(found)


def _unlisted_entry(job: Job, index: int, identity: dict | None) -> tuple[dict | None, str]:
    """The manifest entry of a finished frame frames.json does not list (a run was killed
    before it wrote frames.json again): (entry, "") when its counters record this render and
    frame and its PNG is the image they describe, else (None, why not)."""
    png, npz = job.frame_files(index)
    try:
        reason = provenance_problem(npz, index, identity)
        if reason is None:
            size = (read_provenance(npz) or {}).get("image_size")
            reason = image_problem(png, size)
        if reason is not None:
            return None, reason
        summary = load_counters(npz).summary()
    except Exception as exc:  # noqa: BLE001  (a damaged file: say which)
        return None, f"unreadable counters file ({exc})"
    return _entry(summary, {"png_sha256": file_sha256(png),
                            "counters_sha256": file_sha256(npz)}), ""


def frame_entries(job: Job) -> tuple[dict[int, dict], bool]:
    """``frames.json``'s entries made to describe exactly the finished frames on disk, each
    checked: a listed frame's files must have the SHA-256 frames.json recorded; a frame it
    does not list is read back from its counters when they record this render and frame and
    its PNG is the image they describe. A frame that fails is named (a warning) and its
    files removed, so that it is rendered again; frames whose files are gone are dropped.
    Returns the entries and whether they differ from the file's."""
    folder = Path(job.out)
    held: dict[int, dict] = {}
    # A damaged or edited frames.json is not believed: its frames are checked as unlisted.
    data = unsealed(_read_json(folder / FRAMES_FILE)) or {}
    listed = data.get("frames") if isinstance(data.get("frames"), list) else []
    for entry in listed:
        if isinstance(entry, dict) and type(entry.get("frame")) is int:
            held[entry["frame"]] = _entry(entry)
    identity = _read_json(folder / IDENTITY_FILE) or None
    entries: dict[int, dict] = {}
    for index in finished_frames(job):
        if index in held:
            problem = entry_problem(folder, index, held[index], identity)
            if problem is None:
                entries[index] = held[index]
                continue
            path, reason = problem
        else:
            entries[index], reason = _unlisted_entry(job, index, identity)
            if entries[index] is not None:
                continue
            del entries[index]
            path = job.frame_files(index)[1]
        warnings.warn(f"{path}: {reason}; rendering frame {index} again", stacklevel=2)
        for own in job.frame_files(index):
            own.unlink(missing_ok=True)
    changed = (list(entries.values()) != [held[k] for k in sorted(held)]
               or data.get("trace") != job.trace or data.get("technique") != job.technique)
    return entries, changed


def _write_frames(job: Job, entries: dict[int, dict]) -> Path:
    return write_json(Path(job.out) / FRAMES_FILE,
                      sealed({"trace": job.trace, "technique": job.technique,
                              "frames": [entries[k] for k in sorted(entries)]}))


def _read_json(path: Path) -> dict:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


# -- running --------------------------------------------------------------------------------

class _FrameWriter:
    """Writes a job's finished frames as they come (counters first, the PNG last: its
    existence marks the frame finished) and keeps ``frames.json`` up to date."""

    def __init__(self, job: Job, entries: dict[int, dict], on_frame=None, before_write=None,
                 encode=None):
        self.job, self.entries = job, entries
        # What each counters file records of its render (render.json, written before any
        # frame by prepare_jobs).
        self.identity = _read_json(Path(job.out) / IDENTITY_FILE) or job_identity(job)
        self.on_frame, self.before_write = on_frame, before_write
        self.encode = encode or frame_png_bytes
        self.missing = set(job.missing())
        self.written: list[dict] = []
        self.hang_after = int(os.environ.get(HANG_ENV) or 0)
        self.last_write = time.monotonic()

    def write(self, result, techniques) -> None:
        """Write ``result`` if the job misses it (``techniques``: the hooks that rendered it,
        their state as the frame left them, for ``before_write``)."""
        if result.index not in self.missing:
            return
        png, npz = self.job.frame_files(result.index)
        counters = result.counters.to_npz_bytes(
            provenance(self.identity, result.index, result.image.shape))
        write_bytes(npz, counters)
        if self.before_write is not None:
            self.before_write(result, techniques)
        if isinstance(self.encode, _SharedEncoding):
            image = self.encode.store(png, result.image)
        else:
            image = self.encode(result.image)
            write_bytes(png, image)
        entry = _entry(result.counters.summary(), {"png_sha256": sha256_bytes(image),
                                                   "counters_sha256": sha256_bytes(counters)})
        self.written.append(entry)
        self.entries[result.index] = entry
        if self.on_frame is not None:
            self.on_frame(result.index)
        if self.hang_after and len(self.written) >= self.hang_after:
            time.sleep(600)        # test hook: wait here to be killed (bounded)
            os._exit(70)
        if time.monotonic() - self.last_write >= SUMMARY_INTERVAL_S:
            _write_frames(self.job, self.entries)
            self.last_write = time.monotonic()

    def close(self) -> None:
        _write_frames(self.job, self.entries)

    def summary(self, started: float) -> dict:
        job = self.job
        return {"trace": job.trace, "backend": job.backend, "frames": list(job.frames),
                "written": len(self.written),
                "skipped": (job.frames[1] - job.frames[0]) - len(self.written),
                "seconds": round(time.perf_counter() - started, 3), "counters": self.written}


def _writer(job: Job, on_frame=None, before_write=None, encode=None) -> _FrameWriter:
    """The job's writer, after bringing frames.json up to date with the files."""
    entries, changed = frame_entries(job)
    if changed:
        _write_frames(job, entries)
    return _FrameWriter(job, entries, on_frame, before_write, encode)


class _SharedEncoding:
    """PNG encoding and storage of frames that several jobs write: the runs of one
    side-by-side render hand on the baseline's image object itself wherever their frame
    equals it, so an image is encoded once (the last few kept, by identity; memoization
    releases a frame a frame late) and stored once: the later runs' files are hard links to
    the first file written with those bytes (a study's TE, RE and memoization frames are
    the baseline's), a copy only where the file system cannot link."""

    KEPT = 4

    def __init__(self):
        self._recent: list[tuple[object, bytes, list[Path]]] = []

    def _entry(self, image) -> tuple[object, bytes, list[Path]]:
        for entry in self._recent:
            if entry[0] is image:
                return entry
        entry = (image, frame_png_bytes(image), [])
        self._recent = [*self._recent[1 - self.KEPT:], entry]
        return entry

    def __call__(self, image) -> bytes:
        return self._entry(image)[1]

    def store(self, png: Path, image) -> bytes:
        """Write ``image``'s PNG at ``png`` (atomically), linking to an earlier file of the
        same bytes when there is one; returns the bytes."""
        _, data, written = self._entry(image)
        for earlier in written:
            if _link(earlier, png, data):
                break
        else:
            write_bytes(png, data)
        written.append(png)
        return data


def _link(source: Path, target: Path, data: bytes) -> bool:
    """Make ``target`` a hard link of ``source`` (atomically: a link under a temporary name,
    then renamed over ``target``) when ``source`` still holds ``data``; False when it does
    not, or the file system cannot link."""
    try:
        if source.stat().st_size != len(data) or source.read_bytes() != data:
            return False
        target.parent.mkdir(parents=True, exist_ok=True)
        temporary = target.with_name(temporary_name(target.name))
        os.link(source, temporary)
    except OSError:
        return False
    try:
        os.replace(temporary, target)
    except OSError:
        temporary.unlink(missing_ok=True)
        return False
    return True


def run_job(job: Job, on_frame=None, *, prepare: bool = True, force: bool = False,
            observer=None, before_write=None) -> dict:
    """Render one job's missing frames; returns a summary (runs in a worker process).

    ``prepare``: check and write the folder's identity first (:func:`prepare_jobs`; a caller
    that did so for all its jobs passes False). ``on_frame(index)`` is called after each
    frame is written (progress). ``observer``: a RenderObserver watching the render.
    ``before_write(result, techniques)`` is called with each frame's result and the technique
    hooks (their state as the frame left them) before its PNG is written, so whatever it
    writes exists whenever the frame counts as finished."""
    started = time.perf_counter()
    if prepare:
        prepare_jobs([job], force=force)
    writer = _writer(job, on_frame, before_write)
    if writer.missing:
        techniques = job_techniques(job)
        with use_backend(job.backend), renderer_config(job.gpu_config):
            replay_from = (None if observer is not None
                           else _replay_start(job, techniques, min(writer.missing)))
            for result in render_trace(job.trace, frames=writer.missing,
                                       tile_size=job.tile_size, traversal=job.traversal,
                                       fill_rule=job.fill_rule, technique=techniques,
                                       source=job.trace, mediump=job.mediump,
                                       observer=observer, replay_from=replay_from):
                writer.write(result, techniques)
        writer.close()
    return writer.summary(started)


def _replay_start(job: Job, techniques, first_missing: int) -> int | None:
    """Where a render of the job's frames from ``first_missing`` on may start, the frames
    before replayed for their GL state only: the latest fresh start (``replay.fresh_starts``)
    at or before it; None: frame 0 (or a technique that compares frames with the ones
    before)."""
    if first_missing == 0 or techniques.spans_frames:
        return None
    with open_trace(job.trace) as trace:
        return max(fresh_starts(trace, first_missing + 1, mediump=job.mediump)) or None


def frame_segments(job: Job, parts: int) -> list[Job]:
    """``job`` as up to ``parts`` jobs of consecutive frames that render in parallel: each
    starts at a fresh start (``replay.fresh_starts``: the frames before it are replayed for
    their GL state only), the cuts as near equal shares of the frames as fresh starts allow.
    [job] when its frames cannot be split (a technique compares frames with the ones before;
    no frame starts afresh)."""
    first, stop = job.frames
    if parts < 2 or stop - first < 2 or job_techniques(job).spans_frames:
        return [job]
    with open_trace(job.trace) as trace:
        starts = [s for s in fresh_starts(trace, stop, mediump=job.mediump) if first < s < stop]
    if not starts:
        return [job]
    share = (stop - first) / parts
    cuts = sorted({min(starts, key=lambda s: abs(s - (first + k * share)))
                   for k in range(1, parts)})
    bounds = [first, *cuts, stop]
    return [replace(job, frames=(a, b)) for a, b in zip(bounds, bounds[1:], strict=False)]


def run_segments(job: Job, segments: list[Job], *, workers: int | None = None,
                 scheduler: str | None = None, progress: bool = True) -> dict:
    """Render ``job``'s :func:`frame_segments` in parallel (one folder, prepared by the
    caller) and return the job's summary as :func:`run_job` gives it; frames.json ends up
    listing every frame (each segment's writer kept its own list)."""
    started = time.perf_counter()
    summaries = run_batch(segments, workers=workers, scheduler=scheduler, progress=progress,
                          prepare=False)
    entries, changed = frame_entries(job)
    if changed:
        _write_frames(job, entries)
    return {"trace": job.trace, "backend": job.backend, "frames": list(job.frames),
            "written": sum(s["written"] for s in summaries),
            "skipped": sum(s["skipped"] for s in summaries),
            "seconds": round(time.perf_counter() - started, 3),
            "counters": [entry for s in summaries for entry in s["counters"]]}


def render_host(job: Job) -> str | None:
    """The technique whose functional render gives a job's frames
    (:func:`tilesim.render.techniques.side_by_side.render_host`): ``baseline`` for the
    baseline, TE, RE and memoization, ``evr`` for EVR and RE+EVR; None for a job rendered on
    its own (DSR)."""
    from tilesim.render.techniques import side_by_side

    return side_by_side.render_host(job_techniques(job))


def run_side_by_side(jobs: list[Job], *, observer=None, before_writes=None) -> list[dict]:
    """Render jobs of one trace and pipeline options whose frames come from one host's render
    (:func:`render_host`: the baseline, or EVR; at most one job of the host itself) with one
    functional render (``replay.render_side_by_side``), and write each job's missing frames
    as :func:`run_job` writes them; returns their summaries in order. ``observer`` watches
    the render (the host's); ``before_writes``: per job, None or ``before_write(result,
    techniques)`` as :func:`run_job` takes it. Folders must have been prepared
    (:func:`prepare_jobs`)."""
    started = time.perf_counter()
    before_writes = before_writes or [None] * len(jobs)
    options = {(j.trace, j.tile_size, j.traversal, j.fill_rule, j.backend, j.mediump,
                j.gpu_config) for j in jobs}
    if len(options) != 1:
        raise ValueError("run_side_by_side: jobs of one trace and pipeline options")
    techniques = {str(k): job_techniques(j) for k, j in enumerate(jobs)}
    side_by_side_host(techniques)      # refused before any folder is touched
    encode = _SharedEncoding()
    writers = [_writer(j, before_write=b, encode=encode)
               for j, b in zip(jobs, before_writes, strict=True)]
    missing = sorted(set().union(*(w.missing for w in writers)))
    if missing:
        job = jobs[0]
        with use_backend(job.backend), renderer_config(job.gpu_config):
            for key, result, hooks in render_side_by_side(
                    job.trace, techniques, missing, observer=observer, tile_size=job.tile_size,
                    traversal=job.traversal, fill_rule=job.fill_rule, source=job.trace,
                    mediump=job.mediump):
                writers[int(key)].write(result, hooks)
        for writer in writers:
            writer.close()
    return [w.summary(started) for w in writers]


def _run_prepared_job(job: Job) -> dict:
    return run_job(job, prepare=False)


def job_techniques(job: Job):
    return Techniques.from_name(job.technique, source=job.trace,
                                dsr_parameters=job.dsr_parameters)


def run_batch(jobs: list[Job], *, workers: int | None = None, scheduler: str | None = None,
              progress: bool = True, prepare: bool = True, force: bool = False) -> list[dict]:
    """Run jobs in parallel on Dask; returns their summaries in job order. ``prepare``: check
    and write every folder's identity first (:func:`prepare_jobs`), unless the caller did."""
    if prepare:
        prepare_jobs(jobs, force=force)
    todo = [job for job in jobs if job.missing()]
    results: dict[int, dict] = {}
    for index, job in enumerate(jobs):
        if job not in todo:
            results[index] = {"trace": job.trace, "backend": job.backend,
                              "frames": list(job.frames), "written": 0,
                              "skipped": job.frames[1] - job.frames[0], "seconds": 0.0,
                              "counters": []}
    if todo:
        with dask_client(workers or default_workers(len(todo)), scheduler) as client:
            done = map_in_order(client, _run_prepared_job, [(job,) for job in todo],
                                desc="render batch", unit="trace", progress=progress)
        for job, summary in zip(todo, done, strict=True):
            results[jobs.index(job)] = summary
    return [results[i] for i in range(len(jobs))]


def write_batch_summary(out: str | Path, summaries: list[dict], seconds: float) -> Path:
    return write_json(Path(out) / "summary.json",
                      {"format": SUMMARY_FORMAT,
                       "jobs": [{k: v for k, v in s.items() if k != "counters"}
                                for s in summaries], "seconds": round(seconds, 3)})
