"""A render folder: its layout, its manifest, and the checks every reader of it makes.

``tilesim render`` (and each unit of ``tilesim run``) writes one folder per trace and
technique::

    render.json              the identity: trace digest, technique, tile size, renderer, ...
    frames.json              the manifest: every finished frame, its counter totals and the
                             SHA-256 of its two files
    frames/NNNNNN.png        the frame as shown
    counters/NNNNNN.npz      its counters; the member ``provenance`` repeats the identity
                             with the frame number and image size, so a file moved from
                             another frame, trace or render is known wherever it is read

A number read from such a folder is traceable to the files it came from: a reader takes the
frames the manifest lists, checks each file's digest against it and each counters file's
provenance against the identity, and refuses (one line naming the file) anything that does
not match. A folder another process is writing (it holds the folder's lock) is refused,
since its manifest is behind its files. Folders without ``render.json`` (written by
``tilesim coherence --save``, a test, an older tilesim) are read as before, with the one
check they allow: each counters file's frame number against its name.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path

from tilesim.errors import InputError
from tilesim.folder_lock import LOCK_FILE, holds

try:
    import fcntl
except ImportError:  # not POSIX: no locks to test
    fcntl = None

IDENTITY_FILE = "render.json"
MANIFEST_FILE = "frames.json"
FRAMES_DIR = "frames"
COUNTERS_DIR = "counters"
FRAME_PNG = re.compile(r"(\d{6,})\.png")
FRAME_NPZ = re.compile(r"(\d{6,})\.npz")
PROVENANCE_MEMBER = "provenance"
# Fields of render.json that say where the numbers came from but not what they are: a
# baseline may differ from its run in these (the technique, by design).
# What reading a damaged zip member raises (zlib.error: a damaged deflate stream).
UNREADABLE = (OSError, zipfile.BadZipFile, KeyError, ValueError, EOFError, zlib.error)
NOT_COMPARED = ("format", "trace", "frames", "technique", "dsr_parameters_sha256", "backend")


def frame_files(folder: str | os.PathLike, index: int) -> tuple[Path, Path]:
    """The PNG and counters file of frame ``index`` in a render folder."""
    name = f"{index:06d}"
    return (Path(folder) / FRAMES_DIR / f"{name}.png",
            Path(folder) / COUNTERS_DIR / f"{name}.npz")


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def file_sha256(path: str | os.PathLike, chunk: int = 1 << 20) -> str:
    """SHA-256 of a file's bytes, read in chunks (traces can be large); a fifo or device is
    refused (InputError naming it), never read forever."""
    from tilesim.inputs import open_input

    digest = hashlib.sha256()
    with open_input(path, "input file", whole=False) as f:
        while block := f.read(chunk):
            digest.update(block)
    return digest.hexdigest()


def provenance(identity: dict, frame: int, image_shape) -> dict:
    """What a frame's counters file records of where it came from: the folder's identity
    (render.json, less the informational trace path and frame range), the frame number and
    the image's width and height."""
    kept = {k: v for k, v in identity.items() if k not in ("trace", "frames")}
    height, width = int(image_shape[0]), int(image_shape[1])
    return {**kept, "frame": int(frame), "image_size": [width, height]}


def _member(archive: zipfile.ZipFile, name: str):
    """The array member ``name`` of an open counters file (raises what UNREADABLE lists)."""
    import io

    import numpy as np

    return np.load(io.BytesIO(archive.read(name + ".npy")), allow_pickle=False)


def read_provenance(npz: Path) -> dict | None:
    """The ``provenance`` member of a counters file (None when it has none: an older file);
    InputError naming the file when it cannot be read."""
    try:
        with zipfile.ZipFile(npz) as archive:
            if PROVENANCE_MEMBER + ".npy" not in archive.namelist():
                return None
            value = json.loads(str(_member(archive, PROVENANCE_MEMBER)))
    except UNREADABLE as exc:
        raise InputError(f"unreadable counters file: {exc}", source=str(npz)) from None
    return value if isinstance(value, dict) else None


SEAL = "record_sha256"


def _record_digest(record: dict) -> str:
    body = {k: v for k, v in record.items() if k != SEAL}
    return sha256_bytes(json.dumps(body, sort_keys=True, separators=(",", ":")).encode())


def sealed(record: dict) -> dict:
    """``record`` with its own SHA-256 (``record_sha256``, over its canonical JSON): a record
    tilesim reads back (frames.json, a study unit's quality.json, a characterization) is
    used only when the digest still matches, so a damaged number is never taken for one."""
    return {**{k: v for k, v in record.items() if k != SEAL}, SEAL: _record_digest(record)}


def unsealed(record) -> dict | None:
    """The record when it is a JSON object whose ``record_sha256`` matches, else None."""
    if not isinstance(record, dict) or record.get(SEAL) is None:
        return None
    try:
        return record if record[SEAL] == _record_digest(record) else None
    except (TypeError, ValueError):
        return None


def seal_failure(record) -> str:
    """Why :func:`unsealed` refused ``record``, for the user: no digest at all (a folder an
    older tilesim wrote, before its records carried one) or a digest that does not match."""
    if isinstance(record, dict) and record.get(SEAL) is None:
        return (f"has no {SEAL} (written by a tilesim older than its record digests, or "
                "edited)")
    return "does not match its own SHA-256 (damaged or edited)"


def read_sealed(path: str | os.PathLike) -> dict | None:
    """A record tilesim wrote :func:`sealed` (a study unit's quality.json, a
    characterization, an overlay index): None when it is absent, unreadable or does not
    match its own digest, so that the study makes it again."""
    try:
        return unsealed(json.loads(Path(path).read_text(encoding="utf-8")))
    except (OSError, UnicodeDecodeError, ValueError):
        return None


def read_json_object(path: Path) -> dict | None:
    """A JSON object file: None when absent; InputError naming it when it is not one."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read: {exc}", source=str(path)) from None
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise InputError(f"not valid JSON: {exc}", source=str(path)) from None
    if not isinstance(data, dict):
        raise InputError("not a JSON object", source=str(path))
    return data


def being_written(folder: str | os.PathLike) -> bool:
    """Whether another process holds the folder's lock (a tilesim render or run writing into
    it; a lock this process holds is its own finished work). Never creates the lock file."""
    if fcntl is None or holds(folder):
        return False
    try:
        fd = os.open(Path(folder) / LOCK_FILE, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    except OSError:
        return False
    finally:
        os.close(fd)
    return False


# -- checks -----------------------------------------------------------------------------------


def image_problem(png: Path, expected_size) -> str | None:
    """Why a frame's PNG is not a frame of ``expected_size`` ([width, height]), or None: it
    must decode as an RGB or RGBA image of that size (a 1x1 or grayscale file in its place
    would change the screen's energy)."""
    from PIL import Image, UnidentifiedImageError

    try:
        with Image.open(png) as image:
            size, mode = list(image.size), image.mode
            image.verify()
    except (OSError, UnidentifiedImageError, ValueError, SyntaxError, zlib.error,
            Image.DecompressionBombError) as exc:
        return f"not a readable PNG ({exc})"
    if mode not in ("RGB", "RGBA"):
        return f"a {mode} image, not the RGBA frame tilesim writes"
    if expected_size is not None and size != list(expected_size):
        return (f"a {size[0]}x{size[1]} image where the frame is "
                f"{expected_size[0]}x{expected_size[1]}")
    return None


def provenance_problem(npz: Path, index: int, identity: dict | None) -> str | None:
    """Why a counters file is not frame ``index`` of the render ``identity``, or None."""
    held = read_provenance(npz)
    if held is None:
        if identity is not None:
            return "it records no provenance (written by an older tilesim, or not by tilesim)"
        return None
    if held.get("frame") != index:
        return f"it holds frame {held.get('frame')}, not frame {index}"
    if identity is not None:
        differ = [k for k, v in identity.items()
                  if k not in ("trace", "frames") and held.get(k) != v]
        if differ:
            return ("it was rendered with other settings than the folder's render.json ("
                    + ", ".join(sorted(differ)) + ")")
    return None


def entry_problem(folder: Path, index: int, entry: dict, identity: dict | None,
                  hashes: bool = True) -> tuple[Path, str] | None:
    """Why a frame the manifest lists is not as finished: (the file, the reason), or None.
    Checks both files exist and, with ``hashes``, that their SHA-256 is the manifest's."""
    png, npz = frame_files(folder, index)
    for path, key in ((npz, "counters_sha256"), (png, "png_sha256")):
        if not path.is_file() or path.is_symlink():
            return path, "is missing (frames.json lists the frame as finished)"
        if hashes:
            want = entry.get(key)
            if not isinstance(want, str):
                return path, "has no digest in frames.json (written by an older tilesim)"
            if file_sha256(path) != want:
                return path, "does not match the SHA-256 frames.json recorded for it " \
                             "(damaged or replaced)"
    return None


@dataclass
class RenderFolder:
    """A render folder as a reader sees it: its identity (None for a folder without
    render.json) and the frames it holds, checked."""

    path: Path
    identity: dict | None
    frames: list[int]

    def counters(self) -> list[Path]:
        return [frame_files(self.path, i)[1] for i in self.frames]

    def pngs(self) -> list[Path]:
        return [frame_files(self.path, i)[0] for i in self.frames]


def _listed(folder: Path) -> dict[int, dict]:
    manifest = read_json_object(folder / MANIFEST_FILE)
    if manifest is None:
        raise InputError(f"has {IDENTITY_FILE} but no {MANIFEST_FILE}: the render never "
                         "finished a frame, or the manifest was removed; rerun `tilesim "
                         "render` on it", source=str(folder))
    if unsealed(manifest) is None:
        raise InputError(f"{seal_failure(manifest)}; rerun `tilesim render` on the folder to "
                         "list its frames again", source=str(folder / MANIFEST_FILE))
    listed = manifest.get("frames")
    if not isinstance(listed, list):
        raise InputError("has no list of frames", source=str(folder / MANIFEST_FILE))
    entries = {}
    for entry in listed:
        if not isinstance(entry, dict) or type(entry.get("frame")) is not int:
            raise InputError("lists a frame that is not an object with an integer 'frame'",
                             source=str(folder / MANIFEST_FILE))
        entries[entry["frame"]] = entry
    return entries


def _on_disk(folder: Path) -> list[int]:
    try:
        names = [e.name for e in os.scandir(folder / COUNTERS_DIR)]
    except (FileNotFoundError, NotADirectoryError):
        return []
    return sorted(int(m[1]) for n in names if (m := FRAME_NPZ.fullmatch(n)))


def open_render_folder(folder: str | os.PathLike, frames: range | None = None, *,
                       check_writer: bool = True) -> RenderFolder:
    """The frames of a render folder a reader may count, every one checked; InputError naming
    the file and what is wrong otherwise.

    ``frames``: the frames wanted (each must be finished), else every finished frame.
    ``check_writer``: refuse a folder another process is writing (off for a study reading
    the folders it writes itself)."""
    folder = Path(folder)
    if check_writer and being_written(folder):
        raise InputError("is being written by a running tilesim render or run (it holds "
                         f"{LOCK_FILE}): its frames are not all finished; wait for it to end",
                         source=str(folder))
    identity = read_json_object(folder / IDENTITY_FILE)
    if identity is None:
        return _legacy_folder(folder, frames)
    entries = _listed(folder)
    if frames is None:
        chosen = sorted(entries)
    else:
        missing = [i for i in frames if i not in entries]
        if missing:
            raise InputError(f"frame {missing[0]} is not finished here ({len(missing)} of the "
                             f"{len(frames)} frames asked for are missing); render them first",
                             source=str(folder))
        chosen = list(frames)
    if not chosen:
        raise InputError(f"{MANIFEST_FILE} lists no finished frame; render some first",
                         source=str(folder))
    for index in chosen:
        problem = entry_problem(folder, index, entries[index], identity)
        if problem is None:
            npz = frame_files(folder, index)[1]
            reason = provenance_problem(npz, index, identity)
            problem = None if reason is None else (npz, reason)
        if problem is not None:
            path, reason = problem
            raise InputError(f"{reason}; not counted: rerun `tilesim render` on {folder} to "
                             "render it again", source=str(path))
    return RenderFolder(folder, identity, chosen)


def _legacy_folder(folder: Path, frames: range | None) -> RenderFolder:
    """A folder of counters without render.json: every counters file (or those of
    ``frames``), each holding the frame its name says."""
    found = _on_disk(folder)
    if frames is not None:
        missing = [i for i in frames if i not in found]
        if missing:
            raise InputError(f"has no counters of frame {missing[0]}", source=str(folder))
        found = list(frames)
    if not found:
        raise InputError("no counters (*.npz) found; run `tilesim render ... --out DIR` first",
                         source=str(folder / COUNTERS_DIR))
    for index in found:
        png, npz = frame_files(folder, index)
        reason = provenance_problem(npz, index, None) or _index_problem(npz, index)
        if reason is not None:
            raise InputError(f"{reason}; not counted", source=str(npz))
        if png.is_file():
            reason = image_problem(png, _screen_size(npz))
            if reason is not None:
                raise InputError(f"{reason}; not counted", source=str(png))
    return RenderFolder(folder, None, found)


def _screen_size(npz: Path) -> list[int] | None:
    """[width, height] of the frame's pass into the default framebuffer (the image its PNG
    shows), None when it drew none."""
    try:
        with zipfile.ZipFile(npz) as archive:
            k = 0
            while f"pass{k}.meta.npy" in archive.namelist():
                meta = json.loads(str(_member(archive, f"pass{k}.meta")))
                if meta.get("target") == "default":
                    return [int(meta["width"]), int(meta["height"])]
                k += 1
    except (*UNREADABLE, TypeError) as exc:
        raise InputError(f"unreadable counters file: {exc}", source=str(npz)) from None
    return None


def _index_problem(npz: Path, index: int) -> str | None:
    """The frame number a counters file holds (member ``frame.index``) against its name."""
    try:
        with zipfile.ZipFile(npz) as archive:
            held = int(_member(archive, "frame.index"))
    except UNREADABLE as exc:
        return f"unreadable counters file ({exc})"
    return None if held == index else f"it holds frame {held}, not frame {index}"


def comparable(run: RenderFolder, baseline: RenderFolder) -> None:
    """Refuse (InputError naming both) a baseline that is not a render of the run's frames
    of the same trace with the same settings (the technique aside)."""
    where = f"{baseline.path} (baseline of {run.path})"
    if run.frames != baseline.frames:
        raise InputError(f"holds frames {_span(baseline.frames)}, the run frames "
                         f"{_span(run.frames)}: a baseline must be of the same frames",
                         source=where)
    if run.identity is None or baseline.identity is None:
        return
    differ = [k for k in sorted(set(run.identity) | set(baseline.identity))
              if k not in NOT_COMPARED and run.identity.get(k) != baseline.identity.get(k)]
    if differ:
        shown = "; ".join(f"{k} {_short(baseline.identity.get(k))} there, "
                          f"{_short(run.identity.get(k))} in the run" for k in differ)
        raise InputError(f"is a render with other settings than the run's: {shown}",
                         source=where)


def _span(frames: list[int]) -> str:
    if frames and frames == list(range(frames[0], frames[-1] + 1)):
        return f"{frames[0]}..{frames[-1]}"
    return ",".join(map(str, frames))


def _short(value) -> str:
    if isinstance(value, str) and len(value) == 64:
        return value[:12]
    return "none" if value is None else repr(value)
