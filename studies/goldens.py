"""Golden frames: frames of .tsim traces kept as PNGs, re-checked by tests.

A manifest (``manifest.json``, anywhere on disk: :class:`Manifest`) lists, for each golden,
the trace and frame it comes from (relative to the manifest's ``root``, by default its own
folder), how it was made (tilesim version, tile size), its PNG (beside the manifest) and
that PNG's SHA-256, and its MSSIM against Mesa llvmpipe's frame of the same trace when it was
accepted (for a frame smaller than the SSIM window, which has none, its largest channel
difference from Mesa's instead, accepted within the probe tolerance: :mod:`tilesim.images`).
tilesim's own goldens are ``goldens/manifest.json`` (root: the repository).

``tilesim goldens check`` re-renders every golden and requires bit equality with the PNG;
with ``--technique T`` (or ``--all-techniques``) it renders each golden's trace with a
frame-coherence technique instead (:func:`check_techniques`): a lossless one must give the
golden bit for bit, a quality-affecting one (DSR, memoization with 32-bit keys, RE with an
XOR signature) must stay at or above DSR's MSSIM floor against it. A failed check can write
the obtained frame, the golden and their difference with an HTML summary (``--results``).
``tilesim goldens update`` remakes them on purpose: it renders each golden with tilesim and
with Mesa, refuses one whose MSSIM falls below the acceptance threshold, writes the PNGs
atomically, and prints what changed (``--no-mesa``: regression goldens, no acceptance).
``tilesim goldens add`` registers frames of a trace. The pytest plugin
(:mod:`tilesim.pytest_plugin`) does the same in a project's own test suite.
"""

from __future__ import annotations

import hashlib
import os
import re
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from html import escape
from pathlib import Path

import numpy as np

from tilesim import __version__
from tilesim.atomic import write_bytes, write_json, write_text
from tilesim.backend import backend_name, to_host, use_backend
from tilesim.errors import InputError
from tilesim.images import SSIM_WINDOW, image_metrics, png_bytes, read_png
from tilesim.inputs import read_json
from tilesim.render.reference.replay_gl import reference_frames
from tilesim.render.replay import render_trace
from tilesim.render.techniques.bus import Techniques
from tilesim.render.techniques.dynamic_sampling_rate import frame_mssim
from tilesim.render.traces.trace_file import open_trace
from tilesim.studies.coherence import LOSSLESS
from tilesim.studies.dask_cluster import dask_client, map_in_order
from tilesim.studies.defaults import MANIFEST_HELP  # noqa: F401 (named here)
from tilesim.thresholds import DSR_MIN_MSSIM, GOLDEN_ACCEPT_MSSIM, PROBE_TOLERANCE

ROOT = Path(__file__).resolve().parents[1]
GOLDENS = ROOT / "goldens"
MANIFEST = GOLDENS / "manifest.json"
# What a project keeps its goldens in when no manifest is named: goldens/manifest.json under the
# current folder (tilesim's own source checkout keeps its goldens there too).
DEFAULT_MANIFEST = Path("goldens") / "manifest.json"


@dataclass
class Golden:
    name: str
    trace: str        # path relative to the manifest's root (or absolute)
    frame: int
    png: str          # path relative to the manifest's folder
    sha256: str = ""
    mssim_vs_mesa: float | None = None
    made_with: dict | None = None
    max_diff_vs_mesa: int | None = None   # a frame below the SSIM window (mssim_vs_mesa None)

    def __post_init__(self):
        # a manifest is user data: a wrong type is a malformed manifest (open_manifest's
        # TypeError), not a traceback where the field is used
        text, whole, number, table = ((str, "text"), (int, "a whole number"),
                                      ((int, float), "a number"), (dict, "a JSON object"))
        for field, (kinds, what), optional in (
                ("name", text, False), ("trace", text, False), ("frame", whole, False),
                ("png", text, False), ("sha256", text, False),
                ("mssim_vs_mesa", number, True), ("made_with", table, True),
                ("max_diff_vs_mesa", whole, True)):
            value = getattr(self, field)
            if value is None and optional:
                continue
            if isinstance(value, bool) or not isinstance(value, kinds):
                raise TypeError(f"golden {self.name!r:.40}: {field} {value!r:.40} is not "
                                f"{what}")
        if self.frame < 0:
            raise ValueError(f"golden {self.name!r:.40}: frame {self.frame} is negative")

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


@dataclass
class Manifest:
    """A golden manifest anywhere on disk: ``path`` (the JSON file; the PNGs lie beside it),
    ``root`` (the folder the goldens' relative trace paths start from: the manifest's
    ``"root"`` entry, relative to its folder, default the folder itself) and ``goldens``."""

    path: Path
    root: Path
    goldens: list[Golden]

    @property
    def folder(self) -> Path:
        return self.path.parent

    def save(self) -> None:
        save_manifest(self.goldens, self.path, root=self.root)

    def register(self, trace: str | os.PathLike, frames: Iterable[int], *,
                 name: str | None = None) -> list[Golden]:
        """The goldens of ``frames`` of ``trace`` (a path from the current folder), added to
        the manifest (in memory; :meth:`save` writes it) where it has none yet, named
        ``<name or the trace's stem>-<frame:04d>``. InputError: the trace cannot be opened,
        a frame is not in it, or the name is taken by another trace's golden."""
        # Absolute and relative by the paths' text, as they are read back (_lexical).
        path = Path(os.path.abspath(trace))
        with open_trace(path) as opened:
            count = opened.frame_count
        stored = Path(os.path.relpath(path, os.path.abspath(self.root))).as_posix()
        by_name = {g.name: g for g in self.goldens}
        out = []
        for frame in frames:
            if not 0 <= frame < count:
                raise InputError(f"frame {frame} is not in the trace: the trace has frames "
                                 f"0..{count - 1}", source=str(trace))
            key = f"{name or path.stem}-{frame:04d}"
            golden = by_name.get(key)
            if golden is None:
                golden = by_name[key] = Golden(key, stored, frame, f"{key}.png")
                self.goldens.append(golden)
            elif Path(os.path.abspath(self.root / golden.trace)) != path or golden.frame != frame:
                raise InputError(f"golden {key} already comes from {golden.trace} frame "
                                 f"{golden.frame} (give another name)", source=str(self.path))
            out.append(golden)
        return out


def open_manifest(path: str | os.PathLike | None = None, *, create: bool = False,
                  root: str | os.PathLike | None = None) -> Manifest:
    """The manifest at ``path`` (default :func:`default_manifest`). InputError when it is
    missing (unless ``create``: an empty one, not written until saved, whose traces start at
    ``root``, default its folder) or malformed."""
    path = default_manifest(create=create) if path is None else Path(path)
    if not path.is_file():
        if create and not path.exists():
            return Manifest(path, _lexical(path.parent if root is None else Path(root)), [])
        raise InputError("no such golden manifest", source=str(path))
    data = read_json(path, "golden manifest")
    try:
        goldens = [Golden(**entry) for entry in data["goldens"]]
        root = _lexical(path.parent / data.get("root", "."))
    except (ValueError, KeyError, TypeError) as exc:
        raise InputError(f"malformed golden manifest: {exc}", source=str(path)) from None
    return Manifest(path, root, goldens)


def _lexical(path: str | os.PathLike) -> Path:
    """``path`` with ``..`` taken out by its text (a folder in it need not exist yet)."""
    return Path(os.path.normpath(path))


def default_manifest(*, create: bool = False) -> Path:
    """``goldens/manifest.json`` under the current folder, else tilesim's own when it runs
    from a source checkout; with ``create``, the first when neither exists. InputError
    otherwise (an installed tilesim has no goldens of its own)."""
    for path in (DEFAULT_MANIFEST, MANIFEST):
        if path.is_file():
            return path
    if create:
        return DEFAULT_MANIFEST
    raise InputError("no golden manifest here, nor in a tilesim source checkout (give "
                     "--manifest FILE)", source=str(DEFAULT_MANIFEST))


def load_manifest(path: Path = MANIFEST) -> list[Golden]:
    """The goldens of the manifest at ``path``; none when there is no file there."""
    return open_manifest(path).goldens if path.exists() else []


def save_manifest(goldens: list[Golden], path: Path = MANIFEST, *,
                  root: str | os.PathLike | None = None) -> None:
    """Write a manifest; ``root`` (default: its folder, or the repository for tilesim's own
    manifest) is stored relative to the manifest's folder."""
    path = Path(path)
    if root is None:
        root = ROOT if path == MANIFEST else path.parent
    relative = os.path.relpath(os.path.abspath(root), os.path.abspath(path.parent))
    write_json(path, {"format": "tilesim-goldens", "version": 1,
                      "accept_mssim": GOLDEN_ACCEPT_MSSIM, "root": Path(relative).as_posix(),
                      "goldens": [g.to_dict() for g in goldens]})


def render_frames(trace_path: Path, frames: set[int]) -> dict[int, np.ndarray]:
    """tilesim's images of ``frames`` of a trace (rendered from its first frame)."""
    return {r.index: to_host(r.image) for r in
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


def check(goldens: list[Golden], folder: Path | None = None, *, root: Path | None = None,
          results: Path | None = None) -> list[tuple[Golden, int]]:
    """Re-render every golden at baseline; returns (golden, differing pixels) for those not
    identical. ``folder``: where the PNGs are (default ``goldens/``); ``root``: where
    relative trace paths start (default the repository); ``results``: as
    :func:`check_techniques`."""
    rows = check_techniques(goldens, ["baseline"], folder=folder, root=root, results=results)
    by_name = {g.name: g for g in goldens}
    return [(by_name[r["golden"]], r["pixels"]) for r in rows if not r["passed"]]


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
                     folder: Path | None = None, root: Path | None = None,
                     results: Path | None = None, workers: int = 1,
                     progress: bool = False) -> list[dict]:
    """Every golden re-rendered with every technique, one row per (technique, golden).

    Each trace is rendered once per technique, from its first frame to its last golden's
    (techniques carry state from frame to frame). A lossless technique (:func:`is_lossless`)
    passes when the frame equals the golden bit for bit on RGBA, any other when its MSSIM
    (luminance, ``frame_mssim``: the measure DSR's floor is fitted with) is at least
    ``DSR_MIN_MSSIM``. Row keys: technique, golden, trace, frame, criterion, bit_identical,
    mssim, max_diff (largest channel difference, 0..255), pixels (pixels with a channel
    differing; all of them when the sizes differ), passed; mssim and max_diff are None when
    the sizes differ. Rows in the order of ``techniques``, then of ``goldens``.

    ``folder``: where the PNGs are (default ``goldens/``); ``root``: where relative trace paths
    start (default the repository). ``results``: a folder where each failed check writes the
    obtained frame, the golden and their difference (:func:`write_failure`; the row gets
    their paths under ``images``) and, when any failed, ``index.html`` summing up every row
    (:func:`write_summary`). ``workers`` > 1 renders the (trace, technique) pairs side by
    side on a local Dask cluster of that many processes. ``progress``: a progress bar on
    stderr where it is a terminal."""
    from tqdm import tqdm

    names = technique_names(techniques)
    folder = GOLDENS if folder is None else Path(folder)
    root = ROOT if root is None else Path(root)
    out = None if results is None else str(results)
    jobs = [(str(_lexical(root / trace)), trace, name, items, str(folder), out, backend_name())
            for name in names for trace, items in _by_trace(goldens).items()]
    if workers > 1 and len(jobs) > 1:
        with dask_client(min(workers, len(jobs))) as client:
            done = map_in_order(client, _technique_job, jobs, desc="goldens",
                                unit="render", progress=progress, leave=False)
    else:
        total = sum(max(g.frame for g in job[3]) + 1 for job in jobs)
        with tqdm(total=total, desc="goldens", unit="frame", leave=False,
                  disable=None if progress else True) as bar:
            done = [_technique_rows(*job[:6], progress=bar) for job in jobs]
    by_key = {(row["technique"], row["golden"]): row for rows in done for row in rows}
    rows = [by_key[name, g.name] for name in names for g in goldens]
    if results is not None and not all(r["passed"] for r in rows):
        write_summary(rows, Path(results))
    return rows


def _technique_rows(path: str, trace: str, name: str, items: list[Golden], folder: str,
                    results: str | None = None, progress=None) -> list[dict]:
    """One technique's render of the trace at ``path`` (``trace`` as the manifest gives it)
    up to its last golden frame, checked against each golden of ``items``."""
    hooks = Techniques.from_name(name, source=trace)
    lossless = is_lossless(name)
    wanted = {g.frame for g in items}
    images: dict[int, np.ndarray] = {}
    # Every frame is yielded (not only the wanted ones) so the bar moves frame by frame.
    for result in render_trace(path, frames=range(max(wanted) + 1),
                               technique=None if hooks.name == "baseline" else hooks,
                               source=trace):
        if result.index in wanted:
            images[result.index] = to_host(result.image)
        if progress is not None:
            progress.update(1)
    rows = []
    for g in items:
        expected = read_png(Path(folder) / g.png, "RGBA")
        row = _row(name, g, images[g.frame], expected, lossless)
        if results is not None and not row["passed"]:
            row["images"] = write_failure(Path(results), row, images[g.frame], expected)
        rows.append(row)
    return rows


def _technique_job(path: str, trace: str, name: str, items: list[Golden], folder: str,
                   results: str | None = None, backend: str = "numpy") -> list[dict]:
    """``_technique_rows`` in a worker process, on the parent's array backend."""
    with use_backend(backend):
        return _technique_rows(path, trace, name, items, folder, results)


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
                "pixels": got.shape[0] * got.shape[1], "passed": False}
    identical = bool(np.array_equal(got, expected))
    max_diff = int(np.abs(got.astype(np.int16) - expected.astype(np.int16)).max())
    pixels = int((got != expected).any(axis=2).sum())
    if probe:
        return {**row, "bit_identical": identical, "mssim": None, "max_diff": max_diff,
                "pixels": pixels,
                "passed": identical if lossless else max_diff <= PROBE_TOLERANCE}
    mssim = frame_mssim(got, expected)
    return {**row, "bit_identical": identical, "mssim": round(mssim, 6), "max_diff": max_diff,
            "pixels": pixels, "passed": identical if lossless else mssim >= DSR_MIN_MSSIM}


def _safe(name: str) -> str:
    """A technique or golden name as a file name (``re+evr/xor`` -> ``re+evr_xor``)."""
    return re.sub(r"[^A-Za-z0-9._+-]", "_", name)


def difference_image(got: np.ndarray, expected: np.ndarray) -> np.ndarray:
    """(H, W, 3) uint8: black where the frames agree; elsewhere each RGB channel's absolute
    difference scaled so the largest is 255 (a 1/255 difference shows as brightly as a large
    one), and pure magenta where only alpha differs."""
    diff = np.abs(got.astype(np.int16) - expected.astype(np.int16))
    rgb = diff[:, :, :3]
    largest = max(int(rgb.max()), 1)
    out = np.rint(rgb * (255.0 / largest)).astype(np.uint8)
    alpha_only = (diff[:, :, 3] > 0) & (rgb.max(axis=2) == 0)
    out[alpha_only] = (255, 0, 255)
    return out


def difference_box(got: np.ndarray, expected: np.ndarray) -> list[int] | None:
    """[x0, y0, x1, y1] (inclusive pixel columns and rows, row 0 at the top) of the pixels
    with a channel differing; None when the sizes differ or nothing does."""
    if got.shape != expected.shape:
        return None
    rows, columns = np.nonzero((got != expected).any(axis=2))
    if rows.size == 0:
        return None
    return [int(columns.min()), int(rows.min()), int(columns.max()), int(rows.max())]


ZOOM_PIXELS = 192   # the side the zoomed crop of small differences is enlarged to, about


def zoom_image(images: list[np.ndarray], box: list[int], pad: int = 8) -> np.ndarray | None:
    """The region ``box`` (padded by ``pad`` pixels) of each of ``images`` (same size, 3 or 4
    channels; alpha dropped), enlarged by a whole factor (nearest neighbour) to about
    :data:`ZOOM_PIXELS`, side by side with grey gaps: small differences made visible. None
    when the region is not small (over a quarter of the frame on a side)."""
    height, width = images[0].shape[:2]
    x0, y0 = max(box[0] - pad, 0), max(box[1] - pad, 0)
    x1, y1 = min(box[2] + pad, width - 1), min(box[3] + pad, height - 1)
    if (x1 - x0 + 1) * 4 > width or (y1 - y0 + 1) * 4 > height:
        return None
    factor = max(1, ZOOM_PIXELS // max(x1 - x0 + 1, y1 - y0 + 1))
    crops = [np.repeat(np.repeat(image[y0:y1 + 1, x0:x1 + 1, :3], factor, axis=0),
                       factor, axis=1) for image in images]
    gap = np.full((crops[0].shape[0], 4, 3), 128, np.uint8)
    parts = [crops[0]]
    for crop in crops[1:]:
        parts += [gap, crop]
    return np.concatenate(parts, axis=1)


def write_failure(results: Path, row: dict, got: np.ndarray, expected: np.ndarray) -> dict:
    """The obtained frame, the golden and (same size) their :func:`difference_image` of a
    failed check, written atomically as ``results/<technique>/<golden>.{obtained,expected,
    diff}.png``, and where the differences are few, ``.zoom.png`` (:func:`zoom_image` of the
    three); returns their paths relative to ``results``."""
    base = f"{_safe(row['technique'])}/{_safe(row['golden'])}"
    images = {"obtained": got, "expected": expected}
    box = difference_box(got, expected)
    if got.shape == expected.shape:
        images["diff"] = difference_image(got, expected)
        zoom = None if box is None else zoom_image(
            [images["expected"], got, images["diff"]], box)
        if zoom is not None:
            images["zoom"] = zoom
    paths = {}
    for kind, image in images.items():
        paths[kind] = f"{base}.{kind}.png"
        write_bytes(results / paths[kind], png_bytes(image))
    return paths


def write_summary(rows: list[dict], results: Path) -> Path:
    """``results/index.html``: a table with one row per check (technique, golden, frame,
    criterion, MSSIM, largest difference, differing pixels, result), then the images of each
    failed check (expected, obtained, difference; the zoom of small differences);
    self-contained (relative links, no scripts). Returns its path."""
    failed = [r for r in rows if not r["passed"]]
    title = f"tilesim goldens: {len(failed)} of {len(rows)} checks failed"
    lines = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
             '<meta name="viewport" content="width=device-width, initial-scale=1">',
             f"<title>{title}</title>",
             "<style>body{font-family:sans-serif;margin:1em;max-width:100%}"
             "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:4px}"
             ".FAIL{color:#b00;font-weight:bold}.images{display:flex;flex-wrap:wrap;gap:8px}"
             "figure{margin:0;flex:1 1 300px;min-width:0}figure img{width:100%;"
             "image-rendering:pixelated;border:1px solid #ccc}.zoom img{width:auto;"
             "max-width:100%}</style></head><body>",
             f"<h1>{title}</h1>",
             "<p>Lossless techniques must reproduce the golden bit for bit; the others must "
             f"keep MSSIM &ge; {DSR_MIN_MSSIM} against it. The difference image is black where "
             "the frames agree and scaled so the largest difference is full brightness "
             "(magenta: only alpha differs).</p>",
             "<table><tr><th>technique</th><th>golden</th><th>frame</th><th>check</th>"
             "<th>MSSIM</th><th>max diff</th><th>pixels</th><th>result</th></tr>"]
    for r in rows:
        cells = [r["technique"], r["golden"], str(r["frame"]), r["criterion"],
                 "-" if r["mssim"] is None else f"{r['mssim']:.6f}",
                 "-" if r["max_diff"] is None else str(r["max_diff"]), str(r["pixels"])]
        result = "pass" if r["passed"] else "FAIL"
        html = "".join(f"<td>{escape(c)}</td>" for c in cells)
        if "images" in r:   # the technique links to the check's images below
            anchor = f"{_safe(r['technique'])}-{_safe(r['golden'])}"
            html = html.replace("<td>", f'<td><a href="#{anchor}">', 1).replace(
                "</td>", "</a></td>", 1)
        lines.append(f'<tr>{html}<td class="{result}">{result}</td></tr>')
    lines.append("</table>")
    for r in failed:
        images = r.get("images", {})
        anchor = f"{_safe(r['technique'])}-{_safe(r['golden'])}"
        lines.append(f'<h2 id="{anchor}">{escape(r["technique"])} {escape(r["golden"])} '
                     f"(frame {r['frame']}): {escape(r['criterion'])} failed</h2>")
        lines.append('<div class="images">')
        for kind, caption in (("expected", "expected (the golden)"),
                              ("obtained", "obtained (rendered now)"), ("diff", "difference")):
            if kind in images:
                path = escape(images[kind])
                lines.append(f'<figure><a href="{path}"><img src="{path}" alt="{kind}"></a>'
                             f"<figcaption>{caption}</figcaption></figure>")
        lines.append("</div>")
        if "zoom" in images:
            path = escape(images["zoom"])
            lines.append(f'<figure class="zoom"><img src="{path}" alt="zoom"><figcaption>'
                         "where they differ, enlarged: expected, obtained, difference"
                         "</figcaption></figure>")
    lines.append("</body></html>")
    return write_text(results / "index.html", "\n".join(lines) + "\n")


def update(goldens: list[Golden], *, folder: Path | None = None, root: Path | None = None,
           mesa: bool = True, out=None) -> tuple[list[Golden], list[str]]:
    """Remake every golden; returns the new list and refusals. With ``mesa`` (the default)
    each is accepted against Mesa llvmpipe first (MSSIM >= GOLDEN_ACCEPT_MSSIM, or within the
    probe tolerance); without, it is what tilesim renders now (a regression golden, nothing
    recorded against Mesa). ``folder`` and ``root`` as :func:`check`; what changed is printed
    to ``out`` (default stdout)."""
    out = sys.stdout if out is None else out
    folder = GOLDENS if folder is None else Path(folder)
    root = ROOT if root is None else Path(root)
    refused: list[str] = []
    for trace, items in _by_trace(goldens).items():
        frames = {g.frame for g in items}
        trace_path = _lexical(root / trace)
        theirs = mesa_frames(trace_path, frames) if mesa else None   # first: no Mesa, no work
        ours = render_frames(trace_path, frames)
        for g in items:
            against = "not compared with Mesa"
            if theirs is not None:
                metrics = image_metrics(ours[g.frame], theirs[g.frame], g.frame, g.name)
                against = (f"MSSIM vs Mesa {metrics.mssim:.5f}" if metrics.mssim is not None
                           else f"max difference from Mesa {metrics.max_diff}/255")
                if not metrics.passes(GOLDEN_ACCEPT_MSSIM):
                    why = (f"MSSIM {metrics.mssim:.4f} against Mesa is below "
                           f"{GOLDEN_ACCEPT_MSSIM}" if metrics.mssim is not None else
                           f"a frame below the {SSIM_WINDOW}x{SSIM_WINDOW} SSIM window differs "
                           f"from Mesa's by up to {metrics.max_diff}/255, over the probe "
                           f"tolerance {PROBE_TOLERANCE}")
                    refused.append(f"{g.name}: {why}; the golden was left as it was")
                    continue
            data = png_bytes(ours[g.frame])
            digest = hashlib.sha256(data).hexdigest()
            path = folder / g.png
            # The file's own bytes, not the digest recorded: a PNG changed by hand is remade.
            if path.is_file() and hashlib.sha256(path.read_bytes()).hexdigest() == digest:
                print(f"unchanged {g.name}", file=out)
            else:
                if path.exists():
                    old = read_png(path, "RGBA")
                    pixels = (f"{int((old != ours[g.frame]).any(axis=2).sum())} pixels differ"
                              if old.shape == ours[g.frame].shape else "size differs")
                    print(f"changed {g.name} ({pixels}; {against})", file=out)
                else:
                    print(f"new {g.name} ({against})", file=out)
                write_bytes(path, data)
            g.sha256 = digest
            if theirs is None:
                g.mssim_vs_mesa = g.max_diff_vs_mesa = None
            else:
                g.mssim_vs_mesa = None if metrics.mssim is None else round(metrics.mssim, 6)
                g.max_diff_vs_mesa = metrics.max_diff if metrics.mssim is None else None
            g.made_with = {"tilesim": __version__, "tile_size": 16,
                           "reference": "Mesa llvmpipe via tilesim.render.reference.replay_gl"
                           if mesa else None}
    return goldens, refused

