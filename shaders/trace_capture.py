"""Capture real GLES2 programs with apitrace and recover the GLSL they link.

Traces are read through ``apitrace pickle`` (one pickle per call: ``(number, name, [(arg name,
value)...], return value, flags)``) with :class:`RestrictedUnpickler`, which admits only the two
globals apitrace writes (``unpickle.Pointer`` for pointers and ``__builtin__.bytearray`` for
blobs) and refuses any other, so a hostile trace gets an error instead of running code. The
pickle stream was chosen over ``apitrace dump`` text because it carries the exact bytes of every
string (dump text escapes and abbreviates them) and needs no parsing of C-like syntax.

Every record is checked where it is read (:func:`read_calls`, :func:`check_record`): a
``(number, name, [(argument, value)...], return value, flags)`` tuple with a non-negative call
number, an identifier for a name, flags that fit 32 bits, and values of the plain types
apitrace writes (integers within 64 bits, floats, byte strings, lists, tuples, dicts, at most
32 deep). Arguments are then read through a typed accessor (:class:`CallArgs`) that checks
each one's type and the range of its GL type. A record that fails is an
:class:`~tilesim.errors.InputError`, one line naming the file and the call number (or, before
one is known, the record's place in the stream). What reading met that a caller must say
(apitrace's own warnings, a stream cut inside a record) goes into :class:`StreamNotes`.
``tilesim import`` (:mod:`tilesim.render.traces.apitrace_import`) reads captures with the same
functions.

:class:`ProgramTracker` follows glCreateShader / glShaderSource / glCompileShader /
glCreateProgram / glAttachShader / glBindAttribLocation / glLinkProgram per context share group
and yields, at each link, the sources compiled into the program and its attribute bindings;
each call's arguments are checked before it reads them.
"""

from __future__ import annotations

import os
import pickle
import re
import shutil
import subprocess
import tempfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from tilesim.errors import InputError, ToolMissing
from tilesim.mesa import program_environment, run_program

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


# --- reading the call stream (every record checked) --------------------------------------------

INT64_MIN, UINT64_MAX = -2**63, 2**64 - 1   # apitrace records no value wider than 64 bits
MAX_NESTING = 32                            # lists in lists... (apitrace's are a few deep)
IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}\Z")
# The ranges (inclusive) arguments are read in: a GL type's range (no traced program can
# pass a value outside it), narrowed to what GL accepts for sizes and byte offsets (GL
# refuses a negative one with GL_INVALID_VALUE: the call did nothing, and the import says so).
GLINT = (-2**31, 2**31 - 1)
GLSIZEI = (0, 2**31 - 1)       # sizes, counts
GLUINT = (0, 2**32 - 1)        # also GLenum, GLbitfield, GLboolean
MASK = (-2**31, 2**32 - 1)     # a GLuint mask, ~0 written as -1 too
GLINTPTR = (0, 2**63 - 1)      # offsets and sizes in bytes (GLintptr, GLsizeiptr) that GL
#                                 refuses when negative
POINTER = (0, UINT64_MAX)
ANY_INT = (INT64_MIN, UINT64_MAX)
MAX_TOOL_WARNINGS = 10         # lines of apitrace's stderr passed on


def show(value, limit: int = 40) -> str:
    """A short description of a value read from a capture, for error messages: bounded in
    length and always computable (repr of a huge integer, a deeply nested list or a huge
    blob would fail or take long)."""
    if value is None or isinstance(value, (bool, float)):
        return repr(value)
    if isinstance(value, int):
        return repr(int(value)) if abs(value) < 10**24 else \
            f"an integer of {value.bit_length()} bits"
    if isinstance(value, (bytes, bytearray)):
        head = repr(bytes(value[:limit]))
        return head + (f"... ({len(value)} bytes)" if len(value) > limit else "")
    if isinstance(value, str):
        return repr(value[:limit]) + ("..." if len(value) > limit else "")
    if isinstance(value, (list, tuple)):
        items = [show(v, 12) for v in value[:4]] if all(
            v is None or isinstance(v, (bool, int, float, bytes, str)) for v in value[:4]) \
            else None
        if items is not None and len(value) <= 4:
            text = ", ".join(items) + ("," if isinstance(value, tuple) and len(value) == 1
                                       else "")
            return f"[{text}]" if isinstance(value, list) else f"({text})"
        return f"a {type(value).__name__} of {len(value)} item(s)"
    if isinstance(value, dict):
        return f"a dict of {len(value)} item(s)"
    if isinstance(value, (set, frozenset)):
        return f"a {type(value).__name__} of {len(value)} item(s)"
    return f"a {type(value).__name__}"


_SCALARS = frozenset({type(None), bool, float, bytes, bytearray, str})


def _value_problem(value) -> str | None:
    """What is wrong with a value read from a capture (None: a plain apitrace value)."""
    kind = type(value)
    if kind in _SCALARS or ((kind is int or kind is Pointer) and
                            INT64_MIN <= value <= UINT64_MAX):
        return None  # the common case, without the walk
    stack = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if item is None or isinstance(item, (bool, float, bytes, bytearray, str)):
            continue
        if isinstance(item, int):
            if not INT64_MIN <= item <= UINT64_MAX:
                return f"holds {show(item)}, wider than the 64 bits apitrace records"
            continue
        if isinstance(item, (list, tuple, dict)):
            if depth >= MAX_NESTING:
                return f"nests lists more than {MAX_NESTING} deep"
            if isinstance(item, dict):
                stack.extend((k, depth + 1) for k in item)
                stack.extend((v, depth + 1) for v in item.values())
            else:
                stack.extend((v, depth + 1) for v in item)
            continue
        return f"holds {show(item)}, not a value apitrace writes"
    return None


_NAMES: dict[bytes, str | None] = {}  # names seen: a capture repeats a few hundred


def _decode_name(raw) -> str | None:
    """An identifier (a function or argument name) as apitrace writes it, else None."""
    if type(raw) is bytes:
        name = _NAMES.get(raw, False)
        if name is False:
            name = _check_name(raw)
            if len(_NAMES) < 65536:
                _NAMES[raw] = name
        return name
    return _check_name(raw)


def _check_name(raw) -> str | None:
    if isinstance(raw, (bytes, bytearray)):
        try:
            raw = bytes(raw).decode("ascii")
        except UnicodeDecodeError:
            return None
    return raw if isinstance(raw, str) and IDENTIFIER.match(raw) else None


def _record_place(index: int, previous: int | None) -> str:
    """Where a record is in the stream, for errors about a record with no call number."""
    return f"record {index} " + (f"(after call {previous})" if previous is not None
                                 else "(the first)")


def check_record(record, source: str, index: int, previous: int | None) -> Call:
    """One unpickled record of ``apitrace pickle`` as a :class:`Call`, every field checked
    (see the module docstring); InputError naming the call, or the record's place in the
    stream (``index``: 0 for the first; ``previous``: the call number before it)."""
    if not isinstance(record, tuple) or len(record) != 5:
        raise InputError(f"expected an apitrace call (number, name, arguments, return value, "
                         f"flags), got {show(record)}",
                         source=f"{source}: {_record_place(index, previous)}")
    number, raw_name, raw_args, ret, flags = record
    if isinstance(number, bool) or not isinstance(number, int) or \
            not 0 <= number <= 2**63 - 1:
        raise InputError(f"the call number must be a non-negative integer, got {show(number)}",
                         source=f"{source}: {_record_place(index, previous)}")
    name = _decode_name(raw_name)
    if name is None:
        raise InputError(f"the function name must be an ASCII identifier, got "
                         f"{show(raw_name)}", source=f"{source}: call {number}")
    if flags is None:
        flags = 0
    if isinstance(flags, bool) or not isinstance(flags, int) or not 0 <= flags <= 2**32 - 1:
        raise InputError(f"{name}: the call flags must be a 32-bit unsigned integer, got "
                         f"{show(flags)}", source=f"{source}: call {number}")
    if not isinstance(raw_args, list):
        raise InputError(f"{name}: the arguments must be a list of (name, value) pairs, "
                         f"got {show(raw_args)}", source=f"{source}: call {number}")
    args: dict = {}
    for k, pair in enumerate(raw_args):
        if not isinstance(pair, tuple) or len(pair) != 2:
            raise InputError(f"{name}: argument {k} must be a (name, value) pair, got "
                             f"{show(pair)}", source=f"{source}: call {number}")
        key = _decode_name(pair[0])
        if key is None:
            raise InputError(f"{name}: argument {k} has no identifier for a name, got "
                             f"{show(pair[0])}", source=f"{source}: call {number}")
        if key in args:
            raise InputError(f"{name}: argument {key!r} appears twice",
                             source=f"{source}: call {number}")
        problem = _value_problem(pair[1])
        if problem is not None:
            raise InputError(f"{name}: argument {key!r} {problem}",
                             source=f"{source}: call {number}")
        args[key] = pair[1]
    problem = _value_problem(ret)
    if problem is not None:
        raise InputError(f"{name}: the return value {problem}", source=f"{source}: call {number}")
    return Call(number, name, args, ret, flags)


@dataclass
class StreamNotes:
    """What reading a call stream met that the import must say: ``warnings`` (one line
    each) and whether the stream was cut (``truncated``: apitrace's "unexpected end of
    file", or a pickle stream that ends inside a record)."""

    warnings: list[str] = field(default_factory=list)
    truncated: bool = False

    def warn(self, message: str) -> None:
        if message not in self.warnings:  # a stream is read twice (scan, translate)
            self.warnings.append(message)


def _at_end(stream) -> bool | None:
    """Whether a readable stream has nothing left (None: cannot tell without consuming)."""
    try:
        if not stream.seekable():
            return None
        return stream.read(1) == b""
    except (OSError, ValueError, AttributeError):
        return None


def read_calls(stream, *, source: str, notes: StreamNotes | None = None) -> Iterator[Call]:
    """The calls of an ``apitrace pickle`` byte stream, read with :class:`RestrictedUnpickler`
    and checked by :func:`check_record`. A stream that ends
    inside a record (a cut file) ends the calls with a warning in ``notes``; any other
    unreadable record is an InputError naming the record's place."""
    notes = notes if notes is not None else StreamNotes()
    unpickler = RestrictedUnpickler(stream, encoding="bytes")
    previous = None
    index = 0
    while True:
        try:
            position = stream.tell() if stream.seekable() else None
        except (OSError, ValueError, AttributeError):
            position = None
        try:
            record = unpickler.load()
        except EOFError:
            try:
                cut = position is not None and stream.tell() > position
            except (OSError, ValueError):
                cut = False
            if cut:
                notes.truncated = True
                notes.warn(f"the call stream ends inside {_record_place(index, previous)}: "
                           "the file is cut; the calls before it are kept")
            return
        except Exception as exc:  # the unpickling of untrusted bytes, whatever its error
            place = f"{source}: {_record_place(index, previous)}"
            if isinstance(exc, pickle.UnpicklingError) and "truncated" in str(exc) \
                    and _at_end(stream):
                notes.truncated = True
                notes.warn(f"the call stream ends inside {_record_place(index, previous)}: "
                           "the file is cut; the calls before it are kept")
                return
            detail = str(exc).split("\n", 1)[0][:200] or type(exc).__name__
            raise InputError(f"unreadable apitrace pickle record: {detail}",
                             source=place) from None
        call = check_record(record, source, index, previous)
        previous = call.number
        index += 1
        yield call


def apitrace_calls(trace_path: str | os.PathLike, notes: StreamNotes | None = None
                   ) -> Iterator[Call]:
    """The calls of an apitrace capture, through ``apitrace pickle`` and :func:`read_calls`.
    Once the stream is read to its end, what apitrace printed on stderr is passed on as
    warnings in ``notes`` (its "unexpected end of file" marks the capture as cut), and a
    failure of apitrace is an InputError with its message."""
    notes = notes if notes is not None else StreamNotes()
    apitrace = shutil.which("apitrace")
    if apitrace is None:
        raise ToolMissing("apitrace is not installed (Debian package apitrace)")
    source = str(trace_path)
    # stderr goes to a file so that a chatty apitrace can never block on a full pipe
    with tempfile.TemporaryFile() as err:
        proc = subprocess.Popen([apitrace, "pickle", source], stdout=subprocess.PIPE,
                                stderr=err)
        try:
            yield from read_calls(proc.stdout, source=source, notes=notes)
        finally:
            proc.stdout.close()  # an early stop (frame limit, error): apitrace gets EPIPE
            code = proc.wait()
        err.seek(0)
        lines = [line.strip() for line in
                 err.read(1 << 20).decode("utf-8", "replace").splitlines() if line.strip()]
    if code != 0:
        how = f"exit {code}" if code > 0 else f"killed by signal {-code}"
        raise InputError(f"apitrace cannot read it ({how}; is it an apitrace capture?): "
                         f"{'; '.join(line[:200] for line in lines[:3]) or 'no message'}",
                         source=source)
    for line in lines[:MAX_TOOL_WARNINGS]:
        if "unexpected end of file" in line:
            notes.truncated = True
        notes.warn(f"apitrace: {line[:300]}")
    if len(lines) > MAX_TOOL_WARNINGS:
        notes.warn(f"apitrace: ... {len(lines) - MAX_TOOL_WARNINGS} more line(s)")


REQUIRED = object()


class CallArgs:
    """Typed access to one call's arguments: a missing argument, a wrong type or a value
    outside the argument's GL type is an InputError naming the file, the call number, the
    call and the argument (never a TypeError, ValueError or OverflowError from deeper)."""

    def __init__(self, call: Call, source: str):
        self.call, self.source = call, source

    def error(self, message: str) -> InputError:
        return InputError(f"{self.call.name}: {message}",
                          source=f"{self.source}: call {self.call.number}")

    def get(self, key: str, default=REQUIRED):
        if key in self.call.args:
            return self.call.args[key]
        if default is REQUIRED:
            raise self.error(f"argument {key!r} is missing")
        return default

    def int(self, key: str, default=REQUIRED, *, limits: tuple[int, int] = ANY_INT) -> int:
        """An integer argument (GLboolean True/False counts as 1/0) within ``limits``."""
        return self.check_int(self.get(key, default), f"argument {key!r}", limits)

    def check_int(self, value, what: str, limits: tuple[int, int] = ANY_INT) -> int:
        if not isinstance(value, int):
            raise self.error(f"{what} must be an integer, got {show(value)}")
        value = int(value)
        low, high = limits
        if not low <= value <= high:
            raise self.error(f"{what} is {show(value)}, outside {low}..{high}")
        return value

    def handle(self, key: str) -> int:
        """An EGL handle, a pointer or an object name: None (NULL) is 0."""
        value = self.get(key, None)
        return 0 if value is None else self.check_int(value, f"argument {key!r}", POINTER)

    def ret_handle(self) -> int:
        ret = self.call.ret
        return 0 if ret is None else self.check_int(ret, "the return value", POINTER)

    def float(self, key: str) -> float:
        value = self.get(key)
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise self.error(f"argument {key!r} must be a number, got {show(value)}")
        return float(value)

    def ints(self, key: str, limits: tuple[int, int] = ANY_INT, *,
             allow_none: bool = True) -> list[int] | None:
        """A list of integers (a bare integer is a list of one); None where allowed."""
        value = self.get(key, None)
        if value is None and allow_none:
            return None
        if isinstance(value, int):
            value = [value]
        if not isinstance(value, list):
            raise self.error(f"argument {key!r} must be a list of integers, got "
                             f"{show(value)}")
        return [self.check_int(v, f"item {i} of argument {key!r}", limits)
                for i, v in enumerate(value)]

    def blob_or_list(self, key: str) -> list[bytes]:
        """Byte strings: one, or a list of them (glShaderSource's strings)."""
        value = self.get(key)
        if isinstance(value, (bytes, bytearray)):
            value = [value]
        if not isinstance(value, list) or not all(isinstance(v, (bytes, bytearray))
                                                  for v in value):
            raise self.error(f"argument {key!r} must be a byte string or a list of them, "
                             f"got {show(value)}")
        return [bytes(v) for v in value]

    def text(self, key: str) -> str:
        """A UTF-8 byte string (an attribute or uniform name) as text."""
        value = self.get(key)
        if isinstance(value, (bytes, bytearray)):
            try:
                return bytes(value).split(b"\0", 1)[0].decode("utf-8")
            except UnicodeDecodeError:
                raise self.error(f"argument {key!r} is not UTF-8 text: {show(value)}") from None
        if isinstance(value, str):
            return value
        raise self.error(f"argument {key!r} must be a string, got {show(value)}")


def _check_program_call(args: CallArgs) -> None:
    """The arguments :class:`ProgramTracker` reads, checked before it reads them (it converts
    with int() and indexes without asking)."""
    name = args.call.name
    if name == "eglCreateContext":
        args.ret_handle()
        args.handle("share_context")
    elif name == "eglMakeCurrent":
        args.handle("ctx")
    elif name in ("glCreateShader", "glCreateProgram"):
        if args.call.ret is None:
            raise args.error("the return value (the new object's name) is missing")
        args.check_int(args.call.ret, "the return value", GLUINT)
        if name == "glCreateShader":
            args.int("type", limits=GLUINT)
    elif name == "glShaderSource":
        args.int("shader", limits=GLUINT)
        args.int("count", limits=GLSIZEI)
        args.blob_or_list("string")
        args.ints("length", GLINT)
    elif name in ("glCompileShader",):
        args.int("shader", limits=GLUINT)
    elif name in ("glAttachShader", "glDetachShader"):
        args.int("program", limits=GLUINT)
        args.int("shader", limits=GLUINT)
    elif name == "glBindAttribLocation":
        args.int("program", limits=GLUINT)
        args.int("index", limits=GLUINT)
        value = args.get("name")
        if not isinstance(value, (bytes, bytearray)):
            raise args.error(f"argument 'name' must be a byte string, got {show(value)}")
        try:
            bytes(value).decode("utf-8")
        except UnicodeDecodeError:
            raise args.error(f"argument 'name' is not UTF-8 text: {show(value)}") from None
    elif name == "glLinkProgram":
        args.int("program", limits=GLUINT)


# The calls ProgramTracker handles (it dispatches on any name: "key" would reach a helper).
TRACKED_CALLS = frozenset({
    "eglCreateContext", "eglMakeCurrent", "glCreateShader", "glShaderSource",
    "glCompileShader", "glCreateProgram", "glAttachShader", "glDetachShader",
    "glBindAttribLocation", "glLinkProgram"})


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
            linked = self.follow(call)
            if linked is not None:
                yield linked

    def follow(self, call: Call) -> LinkedProgram | None:
        """One call (any call: those that touch no shader or program are passed over), its
        arguments checked (:func:`_check_program_call`) before the handler reads them; what
        a handler still trips on is an InputError naming the call; a glLinkProgram gives the
        program it linked."""
        if call.name not in TRACKED_CALLS:
            return None
        args = CallArgs(call, self.source)
        _check_program_call(args)
        try:
            return getattr(self, "_" + call.name)(call)
        except (KeyError, TypeError, ValueError, IndexError, OverflowError,
                AttributeError) as exc:
            raise args.error(f"malformed call ({type(exc).__name__}: "
                             f"{str(exc)[:120]})") from None

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
    return list(tracker.feed(apitrace_calls(trace_path)))


def stop_after(seconds: float) -> list[str]:
    """The prefix that stops a program which never exits (es2gears): SIGINT after ``seconds``,
    which lets apitrace finish the capture, and SIGKILL 10 s later if that did not end it.
    ``timeout`` runs under apitrace's preload too, but makes no GL call, so it writes no
    trace."""
    return ["timeout", "-k", "10", "-s", "INT", f"{seconds:g}"]


def capture_trace(command: list[str], trace_path: Path, *, screen: str = "1024x768x24",
                  timeout: float = 300.0, xvfb_run: str = "xvfb-run",
                  apitrace: str = "apitrace",
                  expect_trace: bool = True) -> subprocess.CompletedProcess:
    """Run ``command`` under Xvfb with apitrace writing ``trace_path``, on Mesa's llvmpipe
    (:func:`tilesim.mesa.program_environment`), for ``timeout`` seconds at most
    (:func:`tilesim.mesa.run_program`). The caller judges the exit status and output; a
    missing trace is an InputError naming the command unless ``expect_trace`` is false (the
    caller has a better message from the program's output)."""
    missing = [tool for tool in (xvfb_run, apitrace) if shutil.which(tool) is None]
    if missing:
        raise ToolMissing(f"{' and '.join(missing)} not installed (Debian packages xvfb, "
                          "apitrace)")
    trace_path.unlink(missing_ok=True)
    argv = [xvfb_run, "-a", "-s", f"-screen 0 {screen}", apitrace, "trace", "--api", "egl",
            "-o", str(trace_path), *command]
    proc = run_program(argv, timeout=timeout, env=program_environment(),
                       what=Path(command[0]).name, source=" ".join(command))
    if expect_trace and not trace_path.exists():
        raise InputError(f"apitrace wrote no capture (exit {proc.returncode}): "
                         + proc.stderr.decode("utf-8", "replace").strip()[-300:],
                         source=" ".join(command))
    return proc
