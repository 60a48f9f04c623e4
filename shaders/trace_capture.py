"""Capture real GLES2 programs with apitrace and recover the GLSL they link.

Traces are read through ``apitrace pickle`` (one pickle per call: ``(number, name, [(arg name,
value)...], return value, flags)``) with :class:`RestrictedUnpickler`, which admits only the two
globals apitrace writes (``unpickle.Pointer`` for pointers and ``__builtin__.bytearray`` for
blobs) and refuses any other, so a hostile trace gets an error instead of running code. The
pickle stream was chosen over ``apitrace dump`` text because it carries the exact bytes of every
string (dump text escapes and abbreviates them) and needs no parsing of C-like syntax.

:class:`ProgramTracker` follows glCreateShader / glShaderSource / glCompileShader /
glCreateProgram / glAttachShader / glBindAttribLocation / glLinkProgram per context share group
and yields, at each link, the sources compiled into the program and its attribute bindings.
"""

from __future__ import annotations

import os
import pickle
import shutil
import subprocess
import tempfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from tilesim.errors import InputError, ToolMissing
from tilesim.mesa import program_environment

GL_VERTEX_SHADER = 0x8B31
GL_FRAGMENT_SHADER = 0x8B30


class Pointer(int):
    """An opaque pointer value from the trace (apitrace pickles pointers as unpickle.Pointer)."""


def _pointer(value=0) -> Pointer:
    """unpickle.Pointer(int): nothing else is accepted (REDUCE may pass anything)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise pickle.UnpicklingError(f"unpickle.Pointer takes an integer, got "
                                     f"{type(value).__name__}")
    return Pointer(value)


def _bytearray(data=b"", encoding=None) -> bytearray:
    """bytearray(bytes) or bytearray(str, encoding) as older apitrace versions write blobs;
    never bytearray(n), which would allocate n bytes on the trace's say-so."""
    if isinstance(data, (bytes, bytearray)) and encoding is None:
        return bytearray(data)
    if isinstance(data, str) and isinstance(encoding, (str, bytes)):
        codec = encoding.decode("ascii") if isinstance(encoding, bytes) else encoding
        if codec.lower().replace("_", "-") not in ("latin-1", "latin1", "iso-8859-1"):
            raise pickle.UnpicklingError(f"bytearray with encoding {codec!r:.20}")
        return bytearray(data, "latin-1")
    raise pickle.UnpicklingError("bytearray takes bytes or a latin-1 string")


# The only globals an apitrace pickle may name, mapped to harmless constructors.
_ALLOWED_GLOBALS = {
    ("unpickle", "Pointer"): _pointer,
    ("__builtin__", "bytearray"): _bytearray,
    ("builtins", "bytearray"): _bytearray,
}


class RestrictedUnpickler(pickle.Unpickler):
    """Unpickler for ``apitrace pickle`` output that refuses every global but plain types."""

    def find_class(self, module: str, name: str):
        try:
            return _ALLOWED_GLOBALS[(module, name)]
        except KeyError:
            raise pickle.UnpicklingError(
                f"trace pickle refers to {module}.{name}, which is not a plain apitrace value; "
                "refusing to load it") from None

    def persistent_load(self, pid):
        raise pickle.UnpicklingError("trace pickle uses persistent ids; refusing to load it")


@dataclass(frozen=True)
class Call:
    """One traced call: number, function name, arguments by name, return value, flags."""

    number: int
    name: str
    args: dict
    ret: object
    flags: int


def read_pickled_calls(stream: IO[bytes], *, source: str) -> Iterator[Call]:
    """Calls from an ``apitrace pickle`` byte stream; malformed records raise InputError."""
    unpickler = RestrictedUnpickler(stream, encoding="bytes")
    previous = None
    while True:
        try:
            record = unpickler.load()
        except EOFError:
            return
        except (pickle.UnpicklingError, ValueError, TypeError, AttributeError, IndexError,
                KeyError, OverflowError, MemoryError) as exc:
            after = f" after call {previous}" if previous is not None else ""
            raise InputError(f"unreadable apitrace pickle record{after}: {exc}",
                             source=source) from None
        if not (isinstance(record, tuple) and len(record) == 5 and isinstance(record[0], int)
                and isinstance(record[1], bytes) and isinstance(record[2], list)):
            raise InputError(f"unexpected apitrace pickle record after call {previous}: "
                             f"{type(record).__name__}", source=source)
        number, name, args, ret, flags = record
        try:
            named = {key.decode("ascii"): value for key, value in args}
        except (TypeError, ValueError, AttributeError):
            raise InputError(f"call {number}: malformed argument list", source=source) from None
        previous = number
        yield Call(number, name.decode("ascii", "replace"), named, ret, int(flags or 0))


def iter_trace_calls(trace_path: str | os.PathLike) -> Iterator[Call]:
    """Stream the calls of a trace file through ``apitrace pickle``."""
    apitrace = shutil.which("apitrace")
    if apitrace is None:
        raise ToolMissing("apitrace is not installed (Debian package apitrace)")
    # stderr goes to a file so that a chatty apitrace can never block on a full pipe.
    with tempfile.TemporaryFile() as err:
        proc = subprocess.Popen([apitrace, "pickle", str(trace_path)], stdout=subprocess.PIPE,
                                stderr=err)
        try:
            yield from read_pickled_calls(proc.stdout, source=str(trace_path))
        finally:
            proc.stdout.close()
            code = proc.wait()
        err.seek(0)
        stderr = err.read().decode("utf-8", "replace")
    if code != 0:
        raise InputError(f"apitrace pickle failed (exit {code}): {stderr.strip()}",
                         source=str(trace_path))


@dataclass
class LinkedProgram:
    """The sources a traced program was linked from (what glLinkProgram saw)."""

    call: int                  # call number of glLinkProgram
    program: int               # GL program object name in the traced application
    vertex: str
    fragment: str
    attrib_bindings: dict[str, int] = field(default_factory=dict)


@dataclass
class _Shader:
    kind: int
    source: str | None = None
    compiled: str | None = None


@dataclass
class _Program:
    attached: set[int] = field(default_factory=set)
    bindings: dict[str, int] = field(default_factory=dict)


class ProgramTracker:
    """Follows shader and program objects through a call stream (see the module docstring).

    Objects are keyed by the current context's share group, because each EGL context (glmark2
    makes one per scene) numbers its shaders and programs from 1 again.
    """

    def __init__(self, source: str):
        self.source = source
        self.share_root: dict[int, int] = {}
        self.current = 0
        self.shaders: dict[tuple[int, int], _Shader] = {}
        self.programs: dict[tuple[int, int], _Program] = {}

    def _key(self, name) -> tuple[int, int]:
        return (self.current, int(name))

    def feed(self, calls: Iterable[Call]) -> Iterator[LinkedProgram]:
        for call in calls:
            handler = getattr(self, "_" + call.name, None)
            if handler is not None:
                linked = handler(call)
                if linked is not None:
                    yield linked

    def _eglCreateContext(self, call: Call) -> None:
        ctx, share = int(call.ret or 0), int(call.args.get("share_context") or 0)
        self.share_root[ctx] = self.share_root.get(share, share) if share else ctx

    def _eglMakeCurrent(self, call: Call) -> None:
        ctx = int(call.args.get("ctx") or 0)
        self.current = self.share_root.get(ctx, ctx)

    def _glCreateShader(self, call: Call) -> None:
        self.shaders[self._key(call.ret)] = _Shader(int(call.args["type"]))

    def _glShaderSource(self, call: Call) -> None:
        shader = self.shaders.get(self._key(call.args["shader"]))
        if shader is None:
            raise InputError(f"call {call.number}: glShaderSource on unknown shader "
                             f"{call.args['shader']}", source=self.source)
        strings = call.args["string"]
        if isinstance(strings, (bytes, bytearray)):
            strings = [strings]
        lengths = call.args.get("length")
        parts = []
        for i, text in enumerate(strings[:int(call.args["count"])]):
            text = bytes(text)
            if isinstance(lengths, list) and i < len(lengths) and int(lengths[i]) >= 0:
                text = text[:int(lengths[i])]
            else:
                text = text.split(b"\0", 1)[0]
            parts.append(text)
        try:
            shader.source = b"".join(parts).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InputError(f"call {call.number}: shader source is not UTF-8 ({exc.reason})",
                             source=self.source) from None

    def _glCompileShader(self, call: Call) -> None:
        shader = self.shaders.get(self._key(call.args["shader"]))
        if shader is not None:
            shader.compiled = shader.source

    def _glCreateProgram(self, call: Call) -> None:
        self.programs[self._key(call.ret)] = _Program()

    def _glAttachShader(self, call: Call) -> None:
        program = self.programs.setdefault(self._key(call.args["program"]), _Program())
        program.attached.add(int(call.args["shader"]))

    def _glDetachShader(self, call: Call) -> None:
        program = self.programs.get(self._key(call.args["program"]))
        if program is not None:
            program.attached.discard(int(call.args["shader"]))

    def _glBindAttribLocation(self, call: Call) -> None:
        program = self.programs.setdefault(self._key(call.args["program"]), _Program())
        name = bytes(call.args["name"]).decode("utf-8")
        program.bindings[name] = int(call.args["index"])

    def _glLinkProgram(self, call: Call) -> LinkedProgram | None:
        number = int(call.args["program"])
        program = self.programs.get(self._key(number))
        if program is None:
            raise InputError(f"call {call.number}: glLinkProgram on unknown program {number}",
                             source=self.source)
        stages: dict[int, str] = {}
        for name in sorted(program.attached):
            shader = self.shaders.get((self.current, name))
            if shader is None or shader.compiled is None:
                raise InputError(f"call {call.number}: program {number} has shader {name} "
                                 "attached that was never compiled", source=self.source)
            if shader.kind in stages:
                raise InputError(f"call {call.number}: program {number} has two shaders of "
                                 f"type 0x{shader.kind:04X}", source=self.source)
            stages[shader.kind] = shader.compiled
        if set(stages) != {GL_VERTEX_SHADER, GL_FRAGMENT_SHADER}:
            raise InputError(f"call {call.number}: program {number} is not one vertex and one "
                             "fragment shader", source=self.source)
        return LinkedProgram(call=call.number, program=number,
                             vertex=stages[GL_VERTEX_SHADER],
                             fragment=stages[GL_FRAGMENT_SHADER],
                             attrib_bindings=dict(sorted(program.bindings.items())))


def linked_programs(trace_path: str | os.PathLike) -> list[LinkedProgram]:
    """Every glLinkProgram of a trace, with the sources and bindings it linked."""
    tracker = ProgramTracker(str(trace_path))
    return list(tracker.feed(iter_trace_calls(trace_path)))


def capture_trace(command: list[str], trace_path: Path, *, screen: str = "1024x768x24",
                  timeout: float = 300.0) -> subprocess.CompletedProcess:
    """Run ``command`` under Xvfb with apitrace writing ``trace_path``, on Mesa's llvmpipe
    (:func:`tilesim.mesa.program_environment`)."""
    missing = [tool for tool in ("xvfb-run", "apitrace") if shutil.which(tool) is None]
    if missing:
        raise ToolMissing(f"{' and '.join(missing)} not installed (Debian packages xvfb, "
                          "apitrace)")
    trace_path.unlink(missing_ok=True)
    argv = ["xvfb-run", "-a", "-s", f"-screen 0 {screen}", "apitrace", "trace", "--api", "egl",
            "-o", str(trace_path), *command]
    proc = subprocess.run(argv, capture_output=True, timeout=timeout, check=False,
                          env=program_environment())
    if not trace_path.exists():
        raise RuntimeError(f"apitrace wrote no trace for {' '.join(command)} (exit "
                           f"{proc.returncode}):\n{proc.stderr.decode('utf-8', 'replace')}")
    return proc
