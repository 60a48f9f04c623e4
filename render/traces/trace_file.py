"""The on-disk trace format (``.tsim``): a versioned ZIP of JSON frames and content-addressed blobs.

A trace file holds the frames of one command stream (see :mod:`tilesim.render.gl.commands`) and the
size of the window-system framebuffer they draw into. Layout (``render/TRACE_FORMAT.md`` has the
full description)::

    manifest.json          {"format": "tilesim-trace", "version": 1, "width", "height",
                            "depth_bits", "stencil_bits", "frames": N, "frame_commands": [...],
                            "name", "source": {...}, "created_by"}
    frames/000000.json     [[op, {args}], ...]   one member per frame; arrays are
    ...                                          {"blob": "<sha256>"} references
    blobs/<sha256>.npy     np.save format, hash of the member bytes; each stored once
    extra/...              optional, ignored by this reader (provenance files)

Why a ZIP: one file per trace that any tool can list and unpack; members are read individually
through the central directory, so :func:`open_trace` reads only the manifest and
:meth:`Trace.frame` only that frame's JSON and the blobs it references (a 100-frame trace never
needs all its frames in memory); content addressing makes repeated uploads (the same texture or
vertex data every frame) cost nothing; JSON and ``.npy`` are data formats, so loading never runs
code (no pickle, no eval: ``np.load(allow_pickle=False)`` semantics). Writers are deterministic:
the same frames give a byte-identical file (fixed member timestamps and order).

Every problem found on load raises :class:`tilesim.errors.InputError` naming the file and, where
it applies, the member, frame and command index: bad or unexpected member names (absolute paths,
``..``), duplicated, encrypted or oversized members (zip-bomb guard: declared sizes are checked
before anything is decompressed), a wrong format or version, missing frames or blobs, blobs
whose hash does not match, malformed JSON, wrong types, unknown commands or enumerants (checked
by :func:`tilesim.render.gl.commands.make_command`).

Arrays returned by :meth:`Trace.frame` are read-only (one array may be shared by several
commands and frames through the blob cache).
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import re
import tempfile
import zipfile
from collections import OrderedDict
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

from tilesim import __version__
from tilesim.atomic import default_mode
from tilesim.errors import InputError
from tilesim.inputs import parse_json
from tilesim.memory_budget import check_memory
from tilesim.render.gl.commands import FRAME_END, SCHEMA, Command, make_command

FORMAT = "tilesim-trace"
VERSION = 1
MANIFEST = "manifest.json"

# Limits on what a reader accepts (declared uncompressed sizes, checked before reading).
MAX_MANIFEST_BYTES = 64 << 20
MAX_FRAME_BYTES = 1 << 30
MAX_BLOB_BYTES = 2 << 30
MAX_SIZE = 16384          # largest width / height (pixels), as GL_MAX_RENDERBUFFER_SIZE
MAX_FRAMES = 10_000_000
DEPTH_BITS = (0, 16, 24, 32)
STENCIL_BITS = (0, 8)
BLOB_CACHE_BYTES = 256 << 20  # blobs kept decoded per open trace (least recently used go)

# dtype kinds a blob may have: bool, signed, unsigned, float (no objects, strings, records).
_BLOB_KINDS = "biuf"
_BLOB_ARGS = {op: tuple(name for name, kind in spec.items() if kind in ("blob", "blob?"))
              for op, spec in SCHEMA.items()}
_HASH_RE = re.compile(r"[0-9a-f]{64}")
_FRAME_RE = re.compile(r"frames/(\d{6,})\.json")
_BLOB_RE = re.compile(r"blobs/([0-9a-f]{64})\.npy")
_EXTRA_PART_RE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._-]*")
_FOLDERS = ("frames/", "blobs/", "extra/")
# Fixed member timestamp (the ZIP epoch) so that the same trace gives the same bytes.
_DATE_TIME = (1980, 1, 1, 0, 0, 0)
_INT64 = (-(1 << 63), (1 << 63) - 1)


def frame_member(index: int) -> str:
    """The member name of frame ``index`` (0-based): ``frames/000042.json``."""
    return f"frames/{index:06d}.json"


def blob_member(digest: str) -> str:
    """The member name of the blob whose ``.npy`` bytes have SHA-256 ``digest`` (hex)."""
    return f"blobs/{digest}.npy"


def encode_blob(array: np.ndarray, where: str = "<blob>") -> tuple[str, bytes]:
    """(sha256 hex, ``.npy`` bytes) of an array; refuses object, string and record dtypes."""
    array = np.asarray(array)
    if array.dtype.kind not in _BLOB_KINDS or array.dtype.fields is not None:
        raise InputError(f"array of dtype {array.dtype} cannot be stored (expected bool, "
                         "integer or float data)", source=where)
    out = io.BytesIO()
    np.lib.format.write_array(out, np.ascontiguousarray(array), allow_pickle=False)
    data = out.getvalue()
    return hashlib.sha256(data).hexdigest(), data


def decode_blob(data: bytes, where: str) -> np.ndarray:
    """The read-only array stored in ``.npy`` bytes; InputError when they are not a plain array."""
    try:
        stream = io.BytesIO(data)
        major, minor = np.lib.format.read_magic(stream)
        if (major, minor) == (1, 0):
            shape, fortran, dtype = np.lib.format.read_array_header_1_0(stream)
        elif (major, minor) in ((2, 0), (3, 0)):
            shape, fortran, dtype = np.lib.format.read_array_header_2_0(stream)
        else:
            raise ValueError(f"unsupported .npy version {major}.{minor}")
        if dtype.kind not in _BLOB_KINDS or dtype.fields is not None or dtype.hasobject:
            raise ValueError(f"dtype {dtype} is not bool, integer or float")
        count = 1
        for n in shape:
            count *= int(n)
        body = memoryview(data)[stream.tell():]
        if len(body) != count * dtype.itemsize:
            raise ValueError(f"shape {shape} of {dtype} needs {count * dtype.itemsize} bytes, "
                             f"the member holds {len(body)}")
        array = np.frombuffer(body, dtype=dtype, count=count)
        array = array.reshape(shape[::-1]).T if fortran else array.reshape(shape)
    except InputError:
        raise
    except Exception as exc:  # numpy raises ValueError, SyntaxError, TypeError, ... on junk
        raise InputError(f"not a valid .npy array: {exc}", source=where) from None
    array.flags.writeable = False
    return array


# A JSON escape of a UTF-16 surrogate: the only way a lone surrogate gets into a parsed string.
_SURROGATE_ESCAPE_RE = re.compile(r"\\u[dD][89a-fA-F]")


def _checked_int(text: str) -> int:
    value = int(text)
    if not _INT64[0] <= value <= _INT64[1]:
        raise InputError(f"integer {text[:24]}... does not fit in 64 bits")
    return value


def _check_strings(value: Any, where: str) -> None:
    """Every string (and key) is valid Unicode: no lone surrogate. Raises InputError."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            try:
                item.encode("utf-8")
            except UnicodeEncodeError:
                raise InputError("string is not valid Unicode (lone surrogate escape)",
                                 source=where) from None
        elif isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())


def _parse_json(data: bytes, where: str) -> Any:
    """Plain JSON data: integers that fit in 64 bits, strings that are valid Unicode."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"member is not UTF-8 text ({exc.reason} at byte {exc.start})",
                         source=where) from None
    try:
        value = parse_json(text, where, parse_int=_checked_int)
    except InputError as exc:
        raise InputError(exc.bare_message, source=where, line=exc.line,
                         column=exc.column) from None
    if _SURROGATE_ESCAPE_RE.search(text):
        _check_strings(value, where)
    return value


# --- writing ---------------------------------------------------------------------------------


def _is_int(value) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool)


def _check_header(width, height, depth_bits, stencil_bits, name, source, where: str) -> None:
    for label, value in (("width", width), ("height", height)):
        if not _is_int(value) or not 1 <= int(value) <= MAX_SIZE:
            raise InputError(f"{label} must be an integer in 1..{MAX_SIZE}, got {value!r:.40}",
                             source=where)
    if not _is_int(depth_bits) or depth_bits not in DEPTH_BITS:
        raise InputError(f"depth_bits must be one of {DEPTH_BITS}, got {depth_bits!r:.40}",
                         source=where)
    if not _is_int(stencil_bits) or stencil_bits not in STENCIL_BITS:
        raise InputError(f"stencil_bits must be one of {STENCIL_BITS}, got "
                         f"{stencil_bits!r:.40}", source=where)
    if not isinstance(name, str):
        raise InputError(f"name must be a string, got {name!r:.40}", source=where)
    if not isinstance(source, dict):
        raise InputError(f"source must be a JSON object (dict), got {source!r:.40}",
                         source=where)


# The GLES2 limits a trace may carry (what its program queried): name -> (type, low, high).
LIMITS = {"texture_units": (int, 1, 4096), "point_size_max": (float, 1.0, 65536.0),
          "viewport_max_width": (int, 1, 65536), "viewport_max_height": (int, 1, 65536),
          "renderbuffer_size_max": (int, 1, 65536)}


def check_limits(limits, where: str) -> dict:
    """``limits`` as a manifest holds it (an object of :data:`LIMITS` entries, each optional),
    checked; InputError naming ``where`` otherwise."""
    if not isinstance(limits, dict):
        raise InputError(f"limits must be a JSON object, got {limits!r:.40}", source=where)
    out = {}
    for key, value in limits.items():
        if key not in LIMITS:
            raise InputError(f"limits: unknown entry {key!r:.40} (known: {', '.join(LIMITS)})",
                             source=where)
        kind, low, high = LIMITS[key]
        number = (_is_int(value) if kind is int else
                  isinstance(value, (int, float)) and not isinstance(value, bool)
                  and np.isfinite(value))
        if not number or not low <= value <= high:
            raise InputError(f"limits: {key} must be {'an integer' if kind is int else 'a number'}"
                             f" in {low:g}..{high:g}, got {value!r:.40}", source=where)
        out[key] = kind(value)
    return out


class TraceWriter:
    """Writes a trace frame by frame; the file appears under its name only at :meth:`close`.

    ``with TraceWriter(path, width=W, height=H) as out: out.add_frame(commands)``. The ZIP is
    written to a temporary file in the same folder and renamed over ``path`` when closed, so an
    interrupted capture never leaves a half-written trace; leaving the ``with`` block through an
    exception discards it (without a ``with`` block, call :meth:`close` or :meth:`abort`).
    Each frame must end with its ``endFrame`` command and hold no other.
    """

    def __init__(self, path: str | os.PathLike, *, width: int, height: int,
                 depth_bits: int = 24, stencil_bits: int = 0, name: str | None = None,
                 source: dict | None = None, compresslevel: int = 6,
                 limits: dict | None = None):
        self.path = Path(path)
        self.name = self.path.stem if name is None else name
        source = {} if source is None else source
        _check_header(width, height, depth_bits, stencil_bits, self.name, source, str(path))
        try:
            source_text = json.dumps(source, allow_nan=False)
        except (TypeError, ValueError) as exc:
            raise InputError(f"source is not plain JSON data: {exc}", source=str(path)) from None
        self._header = {"width": int(width), "height": int(height),
                        "depth_bits": int(depth_bits), "stencil_bits": int(stencil_bits),
                        "name": self.name, "source": json.loads(source_text)}
        if limits:
            self._header["limits"] = check_limits(limits, str(path))
        self._level = compresslevel
        self._frame_commands: list[int] = []
        self._blobs: set[str] = set()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{self.path.name}.", suffix=".tmp",
                                   dir=self.path.parent)
        self._tmp = Path(tmp)
        self._file = os.fdopen(fd, "w+b")
        self._zip: zipfile.ZipFile | None = zipfile.ZipFile(self._file, "w", allowZip64=True)

    @property
    def frame_count(self) -> int:
        """Frames added so far."""
        return len(self._frame_commands)

    def _put(self, member: str, data: bytes, compress: int) -> None:
        info = zipfile.ZipInfo(member, date_time=_DATE_TIME)
        info.compress_type = zipfile.ZIP_DEFLATED if compress else zipfile.ZIP_STORED
        info.external_attr = 0o644 << 16
        assert self._zip is not None
        try:
            self._zip.writestr(info, data, compresslevel=compress or None)
        except OSError as exc:
            if exc.filename is not None:
                raise
            # A full disk fails the write naming no file: name the trace being written.
            raise OSError(exc.errno, exc.strerror or str(exc), str(self.path)) from exc

    def add_frame(self, commands: Iterable[Command]) -> None:
        """Validate one frame's commands and append it (its new blobs first)."""
        if self._zip is None:
            raise ValueError(f"{self.path}: trace writer is closed")
        index = len(self._frame_commands)
        encoded = []
        commands = list(commands)
        for k, command in enumerate(commands):
            where = f"{self.path}: frame {index}, command {k}"
            if not isinstance(command, Command):
                raise InputError(f"expected a Command, got {type(command).__name__}",
                                 source=where)
            checked = make_command(command.op, dict(command.args), where)
            if (checked.op == FRAME_END) != (k == len(commands) - 1):
                raise InputError(f"a frame must end with exactly one {FRAME_END} command, "
                                 f"its last one", source=where)
            args: dict[str, Any] = {}
            for key, value in checked.args.items():
                if key in _BLOB_ARGS[checked.op] and value is not None:
                    digest, data = encode_blob(value, where)
                    if digest not in self._blobs:
                        self._put(blob_member(digest), data, min(self._level, 1))
                        self._blobs.add(digest)
                    value = {"blob": digest}
                args[key] = value
            encoded.append([checked.op, args])
        if not commands:
            raise InputError(f"frame {index} is empty (it needs at least {FRAME_END})",
                             source=str(self.path))
        try:
            text = json.dumps(encoded, separators=(",", ":"))
        except (TypeError, ValueError) as exc:  # e.g. a non-JSON value in an "interface"
            raise InputError(f"frame {index} is not plain JSON data: {exc}",
                             source=str(self.path)) from None
        self._put(frame_member(index), text.encode("utf-8"), self._level)
        self._frame_commands.append(len(encoded))

    def set_source(self, source: dict) -> None:
        """Replace the manifest's ``source`` (plain JSON data): provenance that is known only
        once every frame is written, such as an importer's call counts."""
        if not isinstance(source, dict):
            raise InputError(f"source must be a JSON object (dict), got {source!r:.40}",
                             source=str(self.path))
        try:
            text = json.dumps(source, allow_nan=False)
        except (TypeError, ValueError) as exc:
            raise InputError(f"source is not plain JSON data: {exc}",
                             source=str(self.path)) from None
        self._header["source"] = json.loads(text)

    def close(self) -> Path:
        """Write the manifest, finish the ZIP and rename it to ``path``; returns ``path``."""
        if self._zip is None:
            return self.path
        manifest = {"format": FORMAT, "version": VERSION, **self._header,
                    "frames": len(self._frame_commands),
                    "frame_commands": self._frame_commands,
                    "created_by": f"tilesim {__version__}"}
        try:
            self._put(MANIFEST, (json.dumps(manifest, indent=1) + "\n").encode("utf-8"),
                      self._level)
            self._zip.close()
            self._zip = None
            self._file.flush()
            os.fsync(self._file.fileno())
            self._file.close()
            os.chmod(self._tmp, default_mode())
            os.replace(self._tmp, self.path)
        except BaseException as exc:
            self.abort()
            if isinstance(exc, OSError) and exc.filename is None:   # disk full: name the file
                raise OSError(exc.errno, exc.strerror or str(exc), str(self.path)) from exc
            raise
        return self.path

    def abort(self) -> None:
        """Discard what was written; ``path`` is left as it was."""
        if self._zip is not None:
            try:
                self._zip.close()
            except Exception:  # already failing; the temp file goes anyway
                pass
            self._zip = None
        self._file.close()
        self._tmp.unlink(missing_ok=True)

    def __enter__(self) -> TraceWriter:
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None:
            self.close()
        else:
            self.abort()


def write_trace(path: str | os.PathLike, frames: Iterable[Iterable[Command]], *, width: int,
                height: int, depth_bits: int = 24, stencil_bits: int = 0,
                name: str | None = None, source: dict | None = None,
                limits: dict | None = None) -> Path:
    """Write ``frames`` (lists of commands, each ending with ``endFrame``) atomically to
    ``path`` (conventionally ``*.tsim``). ``width`` x ``height`` pixels and ``depth_bits`` /
    ``stencil_bits`` describe the window-system framebuffer; ``name`` defaults to the file stem;
    ``source`` is free-form provenance (plain JSON data); ``limits`` the GLES2 limits the
    program queried (:data:`LIMITS`). Returns ``path``."""
    with TraceWriter(path, width=width, height=height, depth_bits=depth_bits,
                     stencil_bits=stencil_bits, name=name, source=source,
                     limits=limits) as writer:
        for frame in frames:
            writer.add_frame(frame)
    return writer.path


# --- reading ---------------------------------------------------------------------------------


def _member_kind(name: str) -> str | None:
    """"manifest", "frame", "blob", "extra", "folder", or None for a name this format refuses."""
    if name == MANIFEST:
        return "manifest"
    if _FRAME_RE.fullmatch(name):
        return "frame"
    if _BLOB_RE.fullmatch(name):
        return "blob"
    if name in _FOLDERS:
        return "folder"
    if name.startswith("extra/"):
        parts = name[len("extra/"):].rstrip("/").split("/")
        if all(_EXTRA_PART_RE.fullmatch(p) and p not in (".", "..") for p in parts):
            return "extra"
    return None


class Trace:
    """An open trace file: header fields, and frames read on demand.

    Attributes: ``path``, ``width``, ``height`` (pixels), ``depth_bits``, ``stencil_bits``,
    ``frame_count``, ``frame_commands`` (commands per frame), ``name``, ``source``
    (provenance dict), ``created_by``, ``version``, ``limits`` (the GLES2 limits its
    program queried, :data:`LIMITS`; empty when none). Use as a context manager or call
    :meth:`close`.
    """

    def __init__(self, path: str | os.PathLike, *, blob_cache_bytes: int = BLOB_CACHE_BYTES):
        self.path = Path(path)
        self._where = str(path)
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self._cache_bytes = 0
        self._cache_limit = blob_cache_bytes
        from tilesim.inputs import open_input

        # A fifo or device is refused at once (ZipFile would wait on it or read it forever).
        open_input(self.path, "trace file", whole=False).close()
        try:
            self._zip = zipfile.ZipFile(self.path, "r")
        except FileNotFoundError:
            raise InputError("no such trace file", source=self._where) from None
        except IsADirectoryError:
            raise InputError("is a folder, not a trace file", source=self._where) from None
        except OSError as exc:
            raise InputError(f"cannot read the trace file: {exc.strerror or exc}",
                             source=self._where) from None
        except Exception as exc:  # BadZipFile, ValueError, struct.error, ...
            raise InputError(f"not a tilesim trace (not a readable ZIP file: {exc})",
                             source=self._where) from None
        try:
            self._index_members()
            self._read_manifest()
        except BaseException:
            self._zip.close()
            raise

    def _index_members(self) -> None:
        limits = {"manifest": MAX_MANIFEST_BYTES, "frame": MAX_FRAME_BYTES,
                  "blob": MAX_BLOB_BYTES, "extra": None, "folder": None}
        self._members: dict[str, zipfile.ZipInfo] = {}
        for info in self._zip.infolist():
            name = info.filename
            where = f"{self._where}: member {name!r:.120}"
            if name in self._members:
                raise InputError("member appears twice in the ZIP", source=where)
            kind = _member_kind(name)
            if kind is None:
                raise InputError(
                    "unexpected member name (a trace holds only manifest.json, "
                    "frames/NNNNNN.json, blobs/<sha256>.npy and extra/...; absolute paths "
                    "and '..' are refused)", source=where)
            if info.flag_bits & 0x1:
                raise InputError("member is encrypted", source=where)
            if info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
                raise InputError(f"member uses compression method {info.compress_type} "
                                 "(only stored and deflate are allowed)", source=where)
            limit = limits[kind]
            if limit is not None and info.file_size > limit:
                raise InputError(f"member declares {info.file_size} bytes uncompressed, more "
                                 f"than the {limit}-byte limit (refusing a possible zip bomb)",
                                 source=where)
            self._members[name] = info
        # Blobs are decoded as frames need them; all of them decompressed must fit.
        blobs = [info.file_size for name, info in self._members.items()
                 if _member_kind(name) == "blob"]
        check_memory(f"decompressing the trace's {len(blobs)} blobs", sum(blobs), self._where)

    def _read_member(self, name: str, where: str) -> bytes:
        info = self._members.get(name)
        if info is None:
            raise InputError(f"member {name} is missing from the trace", source=where)
        try:
            with self._zip.open(info) as member:
                return member.read()
        except Exception as exc:  # BadZipFile, zlib.error, EOFError, OSError...
            raise InputError(f"cannot read member {name}: {exc}", source=where) from None

    def _read_manifest(self) -> None:
        where = f"{self._where}: {MANIFEST}"
        if MANIFEST not in self._members:
            raise InputError(f"not a tilesim trace: no {MANIFEST}", source=self._where)
        manifest = _parse_json(self._read_member(MANIFEST, self._where), where)
        if not isinstance(manifest, dict):
            raise InputError("the manifest must be a JSON object", source=where)
        if manifest.get("format") != FORMAT:
            raise InputError(f"format is {manifest.get('format')!r:.60}, expected {FORMAT!r}",
                             source=where)
        version = manifest.get("version")
        if isinstance(version, bool) or not isinstance(version, int):
            raise InputError(f"version must be an integer, got {version!r:.40}", source=where)
        if version != VERSION:
            newer = " (written by a newer tilesim?)" if version > VERSION else ""
            raise InputError(f"unsupported trace format version {version}{newer}; this reader "
                             f"reads version {VERSION}", source=where)
        required = ("width", "height", "depth_bits", "frames", "frame_commands", "name")
        missing = [key for key in required if key not in manifest]
        if missing:
            raise InputError(f"missing field(s) {', '.join(missing)}", source=where)
        source = manifest.get("source", {})
        _check_header(manifest["width"], manifest["height"], manifest["depth_bits"],
                      manifest.get("stencil_bits", 0), manifest["name"], source, where)
        frames, counts = manifest["frames"], manifest["frame_commands"]
        if isinstance(frames, bool) or not isinstance(frames, int) or \
                not 0 <= frames <= MAX_FRAMES:
            raise InputError(f"frames must be an integer in 0..{MAX_FRAMES}, got "
                             f"{frames!r:.40}", source=where)
        if not isinstance(counts, list) or len(counts) != frames or any(
                isinstance(n, bool) or not isinstance(n, int) or n < 1 for n in counts):
            raise InputError(f"frame_commands must list {frames} positive integers",
                             source=where)
        created_by = manifest.get("created_by", "")
        if not isinstance(created_by, str):
            raise InputError("created_by must be a string", source=where)
        present = sorted(n for n in self._members if _member_kind(n) == "frame")
        for name in present:
            number = int(_FRAME_RE.fullmatch(name).group(1))
            if number >= frames or name != frame_member(number):
                raise InputError(f"member {name} is not one of the {frames} declared frames",
                                 source=where)
        if len(present) != frames:  # every present name is a distinct declared one
            first = next(frame_member(i) for i in range(frames)
                         if frame_member(i) not in self._members)
            raise InputError(f"member {first} is missing ({frames} frames declared)",
                             source=where)
        self.version = version
        self.width, self.height = manifest["width"], manifest["height"]
        self.depth_bits = manifest["depth_bits"]
        self.stencil_bits = manifest.get("stencil_bits", 0)
        self.frame_count = frames
        self.frame_commands = list(counts)
        self.name = manifest["name"]
        self.source = source
        self.created_by = created_by
        self.limits = check_limits(manifest.get("limits", {}), where)

    def __len__(self) -> int:
        return self.frame_count

    def __repr__(self) -> str:
        return (f"Trace({str(self.path)!r}, {self.width}x{self.height}, "
                f"{self.frame_count} frames)")

    def _blob(self, digest: str, where: str) -> np.ndarray:
        cached = self._cache.get(digest)
        if cached is not None:
            self._cache.move_to_end(digest)
            return cached
        data = self._read_member(blob_member(digest), where)
        if hashlib.sha256(data).hexdigest() != digest:
            raise InputError(f"blob {digest[:12]}... is corrupt: its SHA-256 does not match "
                             "its name", source=where)
        array = decode_blob(data, f"{where}: {blob_member(digest)}")
        if array.nbytes <= self._cache_limit:
            self._cache[digest] = array
            self._cache_bytes += array.nbytes
            while self._cache_bytes > self._cache_limit:
                _, old = self._cache.popitem(last=False)
                self._cache_bytes -= old.nbytes
        return array

    def frame(self, index: int) -> list[Command]:
        """The validated commands of frame ``index`` (0-based; negative counts from the end).

        Reads only that frame's member and the blobs it references.
        """
        if isinstance(index, bool) or not isinstance(index, (int, np.integer)):
            raise TypeError(f"frame index must be an integer, got {index!r:.40}")
        index = int(index)
        if index < 0:
            index += self.frame_count
        if not 0 <= index < self.frame_count:
            raise IndexError(f"{self._where}: frame {index} out of range (the trace has "
                             f"{self.frame_count} frames)")
        member = frame_member(index)
        where = f"{self._where}: frame {index}"
        raw = _parse_json(self._read_member(member, where), f"{where} ({member})")
        if not isinstance(raw, list):
            raise InputError("a frame must be a JSON list of [op, {args}] commands",
                             source=where)
        if len(raw) != self.frame_commands[index]:
            raise InputError(f"frame holds {len(raw)} commands, the manifest says "
                             f"{self.frame_commands[index]}", source=where)
        commands = []
        for k, item in enumerate(raw):
            at = f"{where}, command {k}"
            if not (isinstance(item, list) and len(item) == 2 and isinstance(item[0], str)
                    and isinstance(item[1], dict)):
                raise InputError("a command must be [op, {args}]", source=at)
            op, args = item
            if op not in SCHEMA:
                raise InputError(f"unknown command {op!r:.60}", source=at)
            for key in _BLOB_ARGS[op]:
                ref = args.get(key)
                if ref is None:
                    continue
                if not (isinstance(ref, dict) and set(ref) == {"blob"}
                        and isinstance(ref["blob"], str) and _HASH_RE.fullmatch(ref["blob"])):
                    raise InputError(f"{op}: argument {key!r} must be null or "
                                     '{"blob": "<sha256 hex>"}', source=at)
                args[key] = self._blob(ref["blob"], at)
            command = make_command(op, args, at)
            if (op == FRAME_END) != (k == len(raw) - 1):
                raise InputError(f"a frame must end with exactly one {FRAME_END} command, its "
                                 "last one", source=at)
            commands.append(command)
        return commands

    def frames(self, start: int = 0, stop: int | None = None) -> Iterator[list[Command]]:
        """Frames ``start`` .. ``stop - 1`` (default: all), one at a time."""
        stop = self.frame_count if stop is None else min(stop, self.frame_count)
        for index in range(max(start, 0), stop):
            yield self.frame(index)

    def __iter__(self) -> Iterator[list[Command]]:
        return self.frames()

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called (its frames can no longer be read)."""
        return self._zip.fp is None

    def close(self) -> None:
        """Release the file (cached blobs are dropped too)."""
        self._zip.close()
        self._cache.clear()
        self._cache_bytes = 0

    def __enter__(self) -> Trace:
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        self.close()


def open_trace(path: str | os.PathLike, **options) -> Trace:
    """Open a ``.tsim`` trace: reads and checks the manifest and member list only.

    ``options``: ``blob_cache_bytes`` (decoded blobs kept for reuse across frames).
    """
    return Trace(path, **options)


def read_frames(path: str | os.PathLike) -> list[list[Command]]:
    """Every frame of a trace at once (small traces, tests)."""
    with open_trace(path) as trace:
        return list(trace.frames())
