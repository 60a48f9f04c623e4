"""The evaluation metrics of seed 004 (*Fine-Grained Semantics Driven Scheduling*) §6.3.

AFR (eq. 6.1)
    frames finished / (end time - start time), over the run.
PMD (eq. 6.2)
    frames that met their deadline / frames finished.
PD-FFT (§6.3.3)
    the distribution of frame finish times relative to their deadlines, in periods:
    ``(finish - deadline) / period``, from -1 (finished the instant it was released) to 0
    (on the deadline), then late. 004's figures are not in the seed's text; their bins are
    taken as: ten bins of 0.1 period before the deadline, ten of 0.5 period after it up to
    5 periods late, and one bin for every frame later than that ("all those frames which are
    delayed by more than a factor of 5 are considered in the bar which appears just after 5",
    §6.4.2.3).

A frame still unfinished at the end of the run is not counted (a frame a policy starves, the
spam application's under HPF, never finishes and has no finish time); ``blocks_run`` says how
much of an application's work the GPU ran at all.
"""

from __future__ import annotations

import numpy as np

from tilesim.scheduling.simulation import RunResult

EDGES = np.concatenate([np.round(np.arange(-1.0, 0.0, 0.1), 10), np.arange(0.0, 5.01, 0.5),
                        [np.inf]])
LABELS = ([f"{a:.1f}..{b:.1f}" for a, b in zip(EDGES[:10], EDGES[1:11], strict=True)]
          + [f"+{a:.1f}..+{b:.1f}" for a, b in zip(EDGES[10:20], EDGES[11:21], strict=True)]
          + [">+5"])


def histogram(lateness: np.ndarray) -> np.ndarray:
    """Counts of frames per PD-FFT bin (len(LABELS)); lateness in periods. Bins are closed
    on the right (a frame finishing exactly on its deadline is in the last bin that met it);
    the first bin holds -1 too."""
    x = np.asarray(lateness, dtype=np.float64)
    index = np.clip(np.searchsorted(EDGES, x, side="left") - 1, 0, len(LABELS) - 1)
    return np.bincount(index, minlength=len(LABELS))


def app_metrics(result: RunResult, app: str) -> dict:
    frames = [f for f in result.frames if f.app == app]
    spec = next(a for a in result.apps if a.name == app)
    met = sum(f.met for f in frames)
    late = np.array([f.lateness_periods for f in frames])
    counts = histogram(late)
    blocks = [b for b in result.blocks if b.app == app]
    return {
        "app": app, "priority": spec.priority, "desired_fps": spec.fps,
        "frames": len(frames),
        "afr": len(frames) / result.duration_s if result.duration_s else 0.0,
        "pmd": met / len(frames) if frames else None,
        "met": met,
        "blocks_run": len(blocks),
        "max_lateness_periods": float(late.max()) if len(late) else None,
        "gpu_s": float(sum(b.actual_s for b in blocks)),
        "pd_fft": {"labels": LABELS,
                   "fraction": (counts / len(frames)).tolist() if frames else
                   [0.0] * len(LABELS), "count": counts.tolist()},
    }


def summarize(result: RunResult) -> dict:
    """Every application's metrics, the GPU's utilization and the scheduler's decisions."""
    return {"policy": result.policy, "duration_s": result.duration_s,
            "gpu_utilization": result.gpu_busy_s / result.duration_s
            if result.duration_s else 0.0,
            "decisions": result.decisions,
            "apps": [app_metrics(result, a.name)
                     for a in sorted(result.apps, key=lambda a: a.priority)]}
