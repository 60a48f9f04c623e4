"""``tilesim coherence TRACE``: every frame-coherence technique against the baseline.

The baseline is rendered with the techniques that only watch its render beside it (TE, RE,
memoization), EVR with RE+EVR beside it, DSR alone (``render_groups``; every technique's frames
and counters as a render of its own gives them, ``side_by_side``). Per technique the report
gives what it skipped and what it cost next to the oracle, the fragments shaded and
overshading, the average sample rate, the per-frame MSSIM against the baseline frame
(luminance, Wang et al. 2004 settings) and how many frames are bit-identical to it.
``re/xor`` is the thesis's ablation (§4.3): RE with an XOR-based signature instead of CRC32,
whose collisions show up as false positives; ``memo/32`` keys memoization's LUT with the thesis's
32-bit signature instead of 64 bits, whose collisions are hits returning another color.
``--images DIR`` writes per-frame overlays.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from tilesim.atomic import write_bytes
from tilesim.backend import backend_name, to_host, use_backend
from tilesim.images import frame_png_bytes, png_bytes
from tilesim.render.replay import render_side_by_side, render_trace
from tilesim.render.techniques.bus import Techniques
from tilesim.render.techniques.dynamic_sampling_rate import frame_mssim
from tilesim.render_folder import frame_files
from tilesim.studies.dask_cluster import dask_client, map_in_order
from tilesim.studies.defaults import DEFAULT_TECHNIQUES, REPORT_FILE  # noqa: F401 (named here)

EXIT_NOT_LOSSLESS = 1

# Overlay colors (RGB) per DSR rate index: 1x, 1/4x, 1/16x, 1/64x, 1/256x.
RATE_COLORS = np.array([[0, 0, 0], [60, 160, 255], [60, 220, 120], [255, 200, 40],
                        [255, 60, 60]], dtype=np.float64)


@dataclass
class Tally:
    """What one technique did over the frames of one trace, accumulated frame by frame."""

    name: str
    frames: int = 0
    identical: int = 0
    mssim: list[float] = field(default_factory=list)
    tiles: int = 0
    totals: dict[str, int] = field(default_factory=dict)
    scalars: dict[str, int] = field(default_factory=dict)
    rate_histogram: np.ndarray = field(default_factory=lambda: np.zeros(5, dtype=np.int64))

    def add(self, image: np.ndarray | None, counters, reference: np.ndarray | None) -> None:
        """Count one frame: its ``image`` against the baseline's ``reference`` (both None when
        the caller knows them equal, e.g. byte-identical PNG files) and its counters."""
        self.frames += 1
        same = image is None and reference is None or np.array_equal(image, reference)
        # Memoization's frames show the LUT's colors on hits, so a key collision shows in the
        # image and its MSSIM; a frame with one is never counted identical, even where a
        # later write covered the wrong color.
        collided = int(counters.scalars.get("memo_collisions", 0)) > 0
        self.identical += int(same and not collided)
        self.mssim.append(1.0 if same else frame_mssim(image, reference))
        screen = _screen(counters)
        if screen is not None:
            self.tiles += screen.tiles_x * screen.tiles_y
            for name, values in screen.tiles.items():
                self.totals[name] = self.totals.get(name, 0) + int(values.sum())
            if "dsr_rate" in screen.tiles:
                self.rate_histogram += np.bincount(screen.tiles["dsr_rate"], minlength=5)
        for name in ("fragments_shaded", "pixels_written"):
            self.scalars[name] = self.scalars.get(name, 0) + counters.total(name)
        for name in ("re_disabled", "memo_collisions"):
            self.scalars[name] = self.scalars.get(name, 0) + int(counters.scalars.get(name, 0))

    def to_dict(self) -> dict:
        """The tally as JSON values (kept beside a resumable run, read by :meth:`from_dict`)."""
        return {"name": self.name, "frames": self.frames, "identical": self.identical,
                "mssim": self.mssim, "tiles": self.tiles, "totals": self.totals,
                "scalars": self.scalars, "rate_histogram": self.rate_histogram.tolist()}

    @classmethod
    def joined(cls, parts: list[Tally]) -> Tally:
        """One tally of consecutive runs of frames tallied apart (``parts`` in frame order)."""
        out = cls(parts[0].name)
        for part in parts:
            out.frames += part.frames
            out.identical += part.identical
            out.mssim += part.mssim
            out.tiles += part.tiles
            for mine, theirs in ((out.totals, part.totals), (out.scalars, part.scalars)):
                for name, value in theirs.items():
                    mine[name] = mine.get(name, 0) + value
            out.rate_histogram = out.rate_histogram + part.rate_histogram
        return out

    @classmethod
    def from_dict(cls, data: dict) -> Tally:
        return cls(data["name"], data["frames"], data["identical"], list(data["mssim"]),
                   data["tiles"], dict(data["totals"]), dict(data["scalars"]),
                   np.asarray(data["rate_histogram"], dtype=np.int64))

    def report(self, baseline: Tally) -> dict:
        t = self.totals
        tiles = self.tiles or 1
        shaded, written = self.scalars["fragments_shaded"], self.scalars["pixels_written"]
        base_shaded = baseline.scalars["fragments_shaded"]
        screen_shaded = baseline.totals.get("fragments_shaded", 0)
        histogram = self.rate_histogram
        rate = (float((histogram * 0.25 ** np.arange(5)).sum() / histogram.sum())
                if histogram.sum() else 1.0)
        out = {
            "frames": self.frames,
            "frames_bit_identical": self.identical,
            "mssim_min": float(min(self.mssim)) if self.mssim else None,
            "mssim": [round(m, 6) for m in self.mssim],
            "fragments_shaded": shaded,
            "fragments_shaded_vs_baseline": shaded / base_shaded if base_shaded else None,
            "overshading": shaded / written if written else None,
            "average_sample_rate": rate,
            "flushes_avoided": (t.get("te_flushes_skipped", 0)
                                + t.get("re_tiles_skipped", 0)) / tiles,
        }
        if "re_tiles_skipped" in t:
            out.update({"tiles_skipped": t["re_tiles_skipped"] / tiles,
                        "tiles_equal_color_oracle": t["re_tiles_equal_color"] / tiles,
                        "false_positives": t["re_false_positives"],
                        "frames_re_disabled": self.scalars["re_disabled"]})
        if "oracle_fragments_shaded" in t:
            out.update({"oracle_fragments_shaded": t["oracle_fragments_shaded"],
                        # The oracle covers the default framebuffer: compare it with the
                        # baseline's fragments there.
                        "oracle_vs_baseline": (t["oracle_fragments_shaded"] / screen_shaded
                                               if screen_shaded else None),
                        "prims_reordered": t.get("evr_prims_reordered", 0),
                        "prims_predicted_occluded": t.get("evr_prims_occluded", 0)})
        if histogram.sum():
            out["sampling_rate_histogram"] = dict(zip(RATE_LABELS, map(int, histogram),
                                                      strict=True))
        if "memo_lookups" in t:
            lookups = t["memo_lookups"]
            out.update({"memo_lookups": lookups,
                        "memo_hit_rate": t["memo_hits"] / lookups if lookups else 0.0,
                        "memo_collisions": self.scalars["memo_collisions"]})
        return out


RATE_LABELS = ("1x", "1/4x", "1/16x", "1/64x", "1/256x")


def _screen(counters):
    """The default framebuffer's pass of a frame (None when it drew nothing there)."""
    return next((p for p in counters.passes if p.target == "default"), None)


def _save(save: Path | None, name: str, trace_path: str, index: int, image, counters) -> None:
    """Keep a frame as `tilesim render` would (``NAME/TRACE/frames``, ``.../counters``), so
    `tilesim estimate` can read the run without rendering it again."""
    if save is None:
        return

    png, npz = frame_files(save / name.replace("/", "-") / Path(trace_path).stem, index)
    counters.save(npz)
    write_bytes(png, frame_png_bytes(image))


def render_groups(names: list[str], dsr_parameters=None) -> list[list[str]]:
    """The renders of a comparison: the baseline with the techniques that only watch its
    render (TE, RE, memoization), EVR with RE+EVR and the like, each other technique alone
    (``side_by_side.render_host``); the baseline's group first, then in ``names`` order."""
    from tilesim.render.techniques.side_by_side import render_host

    groups: dict[str, list[str]] = {"baseline": ["baseline"]}
    for name in dict.fromkeys(names):
        host = render_host(Techniques.from_name(name, dsr_parameters=dsr_parameters))
        group = groups.setdefault(host or name, [])
        if name not in group:
            group.append(name)
    return list(groups.values())


def compare_trace(trace_path: str, names: list[str], frames: range, *, dsr_parameters=None,
                  images: Path | None = None, save: Path | None = None, progress=None,
                  workers: int = 1) -> dict:
    """Baseline and every technique over one trace: the report of each technique.

    The baseline is rendered first, with the techniques that only watch its render beside it
    (:func:`render_groups`; each one's frames and counters bit-identical to a render of its
    own, ``side_by_side``), and its frames are the reference of every comparison. The other
    groups follow, side by side on a local Dask cluster of ``workers`` processes when more
    than one (they read the baseline frames from a temporary folder)."""
    reference: dict[int, np.ndarray] = {}
    first, *rest = render_groups(names, dsr_parameters)
    tallies = _group(trace_path, first, frames, dsr_parameters, reference, images, save,
                     progress)
    baseline = tallies["baseline"]
    if workers > 1 and len(rest) > 1:
        with tempfile.TemporaryDirectory(prefix="tilesim-coherence-") as folder:
            for index, image in reference.items():
                np.save(Path(folder, f"{index:06d}.npy"), image, allow_pickle=False)
            reference.clear()
            jobs = [(trace_path, group, (frames.start, frames.stop), dsr_parameters, folder,
                     images, save, backend_name()) for group in rest]
            with dask_client(min(workers, len(rest))) as client:
                done = map_in_order(client, _group_job, jobs, desc="techniques",
                                    unit="render", leave=False)
        if progress is not None:
            progress.update(sum(len(g) for g in rest) * len(frames))
        for made in done:
            tallies.update(made)
    else:
        for group in rest:
            tallies.update(_group(trace_path, group, frames, dsr_parameters, reference,
                                  images, save, progress))
    return {"trace": trace_path, "frames": [frames.start, frames.stop],
            "baseline": baseline.report(baseline),
            "techniques": {name: tallies[name].report(baseline) for name in names}}


def _group(trace_path: str, names: list[str], frames: range, dsr_parameters, reference,
           images: Path | None, save: Path | None, progress=None) -> dict[str, Tally]:
    """One render of the techniques ``names`` (a :func:`render_groups` group; the baseline's
    group fills ``reference``, the others read it), each frame compared with the baseline
    frame of its index; returns their tallies."""
    tallies = {name: Tally(name) for name in names}
    hooks = {name: Techniques.from_name(name, source=trace_path,
                                        dsr_parameters=dsr_parameters) for name in names}
    renders = (render_side_by_side(trace_path, hooks, frames, source=trace_path)
               if len(names) > 1 else
               ((names[0], result, hooks[names[0]]) for result in render_trace(
                   trace_path, frames=frames, technique=hooks[names[0]], source=trace_path)))
    for name, result, techniques in renders:
        index, image, counters = result.index, result.image, result.counters
        if name == "baseline":
            reference[index] = image
        tallies[name].add(image, counters, reference[index])
        _save(save, name, trace_path, index, image, counters)
        if images is not None and name != "baseline":
            write_overlays(images, name, index, image, counters, techniques)
        if progress is not None:
            progress.update(1)
    return tallies


def _group_job(trace_path: str, names: list[str], frames: tuple[int, int], dsr_parameters,
               folder: str, images, save, backend: str = "numpy") -> dict[str, Tally]:
    """``_group`` in a worker process, on the parent's array backend, the baseline frames
    read from ``folder``."""
    class Reference(dict):
        def __missing__(self, index: int) -> np.ndarray:
            return np.load(Path(folder, f"{index:06d}.npy"), allow_pickle=False)

    with use_backend(backend):
        return _group(trace_path, names, range(*frames), dsr_parameters, Reference(), images,
                      save)


AVERAGED = ("frames_bit_identical", "mssim_min", "fragments_shaded_vs_baseline", "overshading",
            "average_sample_rate", "flushes_avoided", "tiles_skipped",
            "tiles_equal_color_oracle", "false_positives", "oracle_vs_baseline",
            "memo_hit_rate", "memo_collisions")


def average(reports: list[dict]) -> dict:
    """Per technique, the mean over workloads of each figure (min for mssim_min, sum for
    counts that must be zero)."""
    out = {}
    names = reports[0]["techniques"] if reports else {}
    for name in names:
        rows = [r["techniques"][name] for r in reports]
        entry = {}
        for key in AVERAGED:
            values = [row[key] for row in rows if row.get(key) is not None]
            if not values:
                continue
            if key == "mssim_min":
                entry[key] = min(values)
            elif key in ("false_positives", "memo_collisions", "frames_bit_identical"):
                entry[key] = int(sum(values))
            else:
                entry[key] = float(np.mean(values))
        entry["frames"] = int(sum(row["frames"] for row in rows))
        out[name] = entry
    return out


# -- overlays ---------------------------------------------------------------------------------


def _tile_image(values: np.ndarray, counters_pass, height: int, width: int) -> np.ndarray:
    """Per-tile values spread over the image (row 0 at the top)."""
    t = counters_pass.tile_size
    grid = values.reshape(counters_pass.tiles_y, counters_pass.tiles_x)
    full = np.repeat(np.repeat(grid, t, axis=0), t, axis=1)[:height, :width]
    return full[::-1]


def overlay(image: np.ndarray, tile_rgb: np.ndarray, tile_alpha: np.ndarray, counters_pass,
            strength: float = 0.55) -> np.ndarray:
    """The frame with each tile tinted by ``tile_rgb`` (tiles, 3) where ``tile_alpha``."""
    h, w = image.shape[:2]
    rgb = np.stack([_tile_image(tile_rgb[:, c], counters_pass, h, w) for c in range(3)], -1)
    alpha = _tile_image(tile_alpha.astype(np.float64), counters_pass, h, w)[..., None]
    base = image[..., :3].astype(np.float64)
    out = base * (1 - strength * alpha) + rgb * strength * alpha
    return np.clip(out + 0.5, 0, 255).astype(np.uint8)


def write_overlays(folder: Path, name: str, index: int, image: np.ndarray, counters,
                   techniques) -> None:
    """The overlays of one frame of a technique: RE's skipped tiles, TE's unflushed tiles,
    DSR's sampling rate per tile, EVR's farthest visible point per tile."""

    screen = _screen(counters)
    if screen is None:
        return
    n = screen.tiles_x * screen.tiles_y

    def save(kind: str, picture: np.ndarray) -> None:
        rgba = np.concatenate([picture, np.full((*picture.shape[:2], 1), 255, np.uint8)], -1)
        write_bytes(folder / name.replace("/", "-") / kind / f"{index:06d}.png",
                    png_bytes(rgba))

    if "re_tiles_skipped" in screen.tiles:
        skipped = screen.tiles["re_tiles_skipped"] > 0
        save("re_skipped", overlay(image, np.tile([255, 0, 255], (n, 1)), skipped, screen))
    if "te_flushes_skipped" in screen.tiles:
        kept = screen.tiles["te_flushes_skipped"] > 0
        save("te_not_flushed", overlay(image, np.tile([0, 255, 255], (n, 1)), kept, screen))
    if "dsr_rate" in screen.tiles:
        rate = screen.tiles["dsr_rate"].astype(np.int64)
        save("dsr_rate", overlay(image, RATE_COLORS[rate], rate > 0, screen, 0.45))
    unit = techniques.unit("evr")
    if unit is not None:
        evr = unit.evr
        # The FVP left for the next frame: depths in gray (near dark, far light), layers in
        # orange (lower layers lighter).
        fvp, is_layer = to_host(evr.fvp), to_host(evr.fvp_is_layer)
        depth = np.where(is_layer, 0, fvp) / float(techniques.screen.depth_max)
        layer_shade = 1.0 - np.minimum(np.where(is_layer, fvp, 0), 8) / 8.0
        gray = np.repeat((255 * depth)[:, None], 3, axis=1)
        orange = np.stack([np.full(n, 255.0), 140 * layer_shade, np.zeros(n)], -1)
        rgb = np.where(is_layer[:, None], orange, gray)
        save("evr_fvp", overlay(image, rgb, np.ones(n, dtype=bool), screen, 0.6))


# -- command line -----------------------------------------------------------------------------


LOSSLESS = ("te", "re", "evr", "re+evr", "te+re", "te+evr", "te+re+evr", "memo")
