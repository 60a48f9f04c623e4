"""Batch rendering: many traces and frame ranges, in parallel with Dask, resumable.

A job is one trace and the frames wanted from it. Each job runs in one worker process: a
trace is replayed from its first frame (later frames depend on the state, textures and
framebuffer objects earlier frames made), and the wanted frames are written as they finish:
``frames/NNNNNN.png`` and ``counters/NNNNNN.npz``, each atomically. A frame whose two files
both exist is finished; a rerun renders what it must to reach the missing frames and writes
only those, so an interrupted batch resumes where it stopped and never leaves a half-written
file. Jobs run on a local Dask cluster of processes, or on an existing one
(``--scheduler ADDRESS``).
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path

from tilesim.atomic import write_bytes, write_json


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

    def frame_files(self, index: int) -> tuple[Path, Path]:
        name = f"{index:06d}"
        return (Path(self.out) / "frames" / f"{name}.png",
                Path(self.out) / "counters" / f"{name}.npz")

    def finished(self, index: int) -> bool:
        return all(p.exists() for p in self.frame_files(index))

    def missing(self) -> list[int]:
        return [i for i in range(*self.frames) if not self.finished(i)]


def clean_stale_temporaries(out: str | Path) -> int:
    """Remove temporary files an interrupted run left (``.name.XXXX.tmp``)."""
    removed = 0
    for path in Path(out).glob("**/.*.tmp"):
        path.unlink(missing_ok=True)
        removed += 1
    return removed


def run_job(job: Job, on_frame=None) -> dict:
    """Render one job's missing frames; returns a summary (runs in a worker process).

    ``on_frame(index)`` is called after each frame is written (progress)."""
    from tilesim.backend import use_backend

    from .commands_cli import png_bytes
    from .pipeline import Renderer
    from .trace_file import open_trace

    started = time.perf_counter()
    summary_path = Path(job.out) / "frames.json"
    previous_run = _read_summary(summary_path)
    if previous_run.get("technique", "baseline") != job.technique and job.missing() != list(
            range(*job.frames)):
        from tilesim.errors import InputError

        raise InputError(f"{job.out} holds frames rendered with technique "
                         f"{previous_run.get('technique')!r}, not {job.technique!r}: use "
                         "another --out folder", source=job.trace)
    missing = set(job.missing())
    written: list[dict] = []
    if missing:
        with use_backend(job.backend), open_trace(job.trace) as trace:
            renderer = Renderer(trace.width, trace.height, depth_bits=trace.depth_bits,
                                tile_size=job.tile_size, traversal=job.traversal,
                                fill_rule=job.fill_rule, source=job.trace,
                                techniques=job_techniques(job))
            last = max(missing) + 1
            for result in renderer.render(trace.frames(0, last), keep=missing):
                png, npz = job.frame_files(result.index)
                # Counters first, PNG last: the PNG's existence marks the frame finished.
                result.counters.save(npz)
                write_bytes(png, png_bytes(result.image))
                written.append(result.counters.summary())
                if on_frame is not None:
                    on_frame(result.index)
    summary = {"trace": job.trace, "backend": job.backend, "frames": list(job.frames),
               "written": len(written),
               "skipped": (job.frames[1] - job.frames[0]) - len(written),
               "seconds": round(time.perf_counter() - started, 3), "counters": written}
    # Per-frame summaries accumulate across runs in the job's folder.
    try:
        previous = {f["frame"]: f for f in previous_run.get("frames", [])}
    except (KeyError, TypeError):
        previous = {}
    previous.update({f["frame"]: f for f in written})
    write_json(summary_path, {"trace": job.trace, "technique": job.technique,
                              "frames": [previous[k] for k in sorted(previous)]})
    return summary


def _read_summary(path: Path) -> dict:
    if not path.exists():
        return {}
    try:
        data = json.loads(path.read_text())
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}


def job_techniques(job: Job):
    from .techniques import Techniques

    return Techniques.from_name(job.technique, source=job.trace,
                                dsr_parameters=job.dsr_parameters)


def run_batch(jobs: list[Job], *, workers: int | None = None, scheduler: str | None = None,
              progress: bool = True) -> list[dict]:
    """Run jobs in parallel on Dask; returns their summaries in job order."""
    from dask.distributed import Client, LocalCluster, as_completed
    from tqdm import tqdm

    for job in jobs:
        clean_stale_temporaries(job.out)
    todo = [job for job in jobs if job.missing()]
    results: dict[int, dict] = {}
    for index, job in enumerate(jobs):
        if job not in todo:
            results[index] = {"trace": job.trace, "frames": list(job.frames), "written": 0,
                              "skipped": job.frames[1] - job.frames[0], "seconds": 0.0,
                              "counters": []}
    if todo:
        if scheduler:
            client = Client(scheduler)
            cluster = None
        else:
            cluster = LocalCluster(n_workers=workers or min(len(todo), 2), threads_per_worker=1,
                                   processes=True, dashboard_address=":0")
            client = Client(cluster)
        try:
            futures = {client.submit(run_job, job, pure=False): jobs.index(job) for job in todo}
            bar = tqdm(total=len(futures), desc="render batch", unit="trace",
                       disable=None if progress else True)
            for future in as_completed(futures):
                results[futures[future]] = future.result()
                bar.update(1)
            bar.close()
        finally:
            client.close()
            if cluster is not None:
                cluster.close()
    return [results[i] for i in range(len(jobs))]


def write_batch_summary(out: str | Path, summaries: list[dict], seconds: float) -> Path:
    return write_json(Path(out) / "summary.json",
                      {"jobs": [{k: v for k, v in s.items() if k != "counters"}
                                for s in summaries], "seconds": round(seconds, 3)})
