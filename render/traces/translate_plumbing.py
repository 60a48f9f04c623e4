"""The translator's plumbing: the call being translated, its checked arguments, commands out.

Every handler of :class:`~tilesim.render.traces.translator.Translator` reads the current call's
arguments through these typed accessors (each checks its GL type's range; a failure is an
:class:`~tilesim.errors.InputError` naming the trace file, the call number and the call) and
emits commands through :meth:`TranslatorPlumbing._emit`, which also keeps the context-switch
state shadow (:mod:`~tilesim.render.traces.translate_contexts`). The share group's object
bookkeeping (:class:`_Group`) and the bindings of the current context are kept here because
every GL domain's handlers read them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from tilesim.errors import InputError
from tilesim.render.gl.commands import enum_name, make_command
from tilesim.shaders.trace_capture import GLINT, GLSIZEI, GLUINT, REQUIRED, CallArgs, show


@dataclass
class _Mapping:
    """A mapped range of a buffer: ``pointer`` in the program is byte ``offset`` of it."""

    buffer: int   # trace id
    target: str
    pointer: int
    offset: int
    length: int


@dataclass
class _Group:
    """Objects of one EGL share group: application names -> trace ids, and what is known."""

    names: dict[str, dict[int, int]] = field(default_factory=lambda: {
        k: {} for k in ("buffer", "texture", "framebuffer", "renderbuffer", "program",
                        "vertex_array")})
    linked: dict[int, int] = field(default_factory=dict)       # app program -> link call
    uniform_names: dict[int, dict[int, str]] = field(default_factory=dict)
    buffer_sizes: dict[int, int] = field(default_factory=dict)  # trace id -> bytes
    mappings: dict[int, _Mapping] = field(default_factory=dict)  # trace id -> mapping
    contexts: set[int] = field(default_factory=set)             # live contexts of the group



class TranslatorPlumbing:
    """The current call, its arguments, the commands emitted, and the bindings a context holds.

    A mixin of :class:`~tilesim.render.traces.translator.Translator`, which provides the
    plumbing (:mod:`~tilesim.render.traces.translate_plumbing`) and the other domains'
    helpers.
    """

    def _reset_bindings(self) -> None:
        self._array_buffer = 0        # trace ids
        self._element_buffer = 0
        self._program = 0             # application name of the program in use
        self._pending_delete: set[int] = set()  # app programs deleted while in use
        self._attrib_state: dict[int, str] = {}  # index -> 'buffer' | 'client' | 'unknown'
        self._attrib_enabled: set[int] = set()
        # OES_vertex_array_object: the bound object (trace id, 0 the default) and what the
        # others hold of the three above (element buffer, attribute states, enabled set)
        self._vertex_array = 0
        self._vertex_arrays: dict[int, tuple[int, dict[int, str], set[int]]] = {}
        self._dirty: set[tuple] = set()
        self._units: set[int] = set()
        self._bound_3d = False   # a TEXTURE_3D_OES binding was made (OES_texture_3D)

    @property
    def _group(self) -> _Group:
        return self._groups[self._group_key]

    def _where(self) -> str:
        call = self._call
        return f"{self.source}: call {call.number}" if call else self.source

    def _error(self, message: str) -> InputError:
        name = self._call.name if self._call else "?"
        return InputError(f"{name}: {message}", source=self._where())

    @property
    def _args(self) -> CallArgs:
        return CallArgs(self._call, self.source)

    def _emit(self, op: str, **args) -> None:
        command = make_command(op, args, self._where())
        self.frame.append(command)
        self._produced = True
        self._mark_dirty(command)

    def _enum(self, value, choices: tuple[str, ...], what: str) -> str:
        if isinstance(value, bool) or not isinstance(value, int):
            raise self._error(f"{what} must be a GL enumerant, got {show(value)}")
        if not GLUINT[0] <= value <= GLUINT[1]:
            raise self._error(f"{what} {show(value)} is not a GL enumerant (32 bits)")
        try:
            name = enum_name(int(value), self._where(), choices)
        except InputError:
            name = None
        if name not in choices:
            raise self._error(f"{what} 0x{int(value):04X} is not supported (expected one of "
                              f"{', '.join(choices)})")
        return name

    def _arg(self, key: str, default=REQUIRED):
        """An argument's value; InputError naming it when it is missing (no default)."""
        return self._args.get(key, default)

    def _int(self, key: str, default=REQUIRED, limits: tuple[int, int] = GLINT) -> int:
        """An integer argument within its GL type's ``limits`` (GLINT by default; GLSIZEI
        for sizes and counts, GLUINT for names and masks, ...)."""
        return self._args.int(key, default, limits=limits)

    def _size(self, key: str) -> int:
        """A GLsizei: a size or count, 0..2^31-1 (GL refuses a negative one)."""
        return self._args.int(key, limits=GLSIZEI)

    def _name(self, key: str) -> int:
        """A GLuint object name."""
        return self._args.int(key, limits=GLUINT)

    def _bool(self, key: str) -> bool:
        """A GLboolean."""
        return bool(self._args.int(key, limits=GLUINT))

    def _float(self, key: str) -> float:
        return self._args.float(key)

    def _blob(self, value, what: str, *, required: bool) -> np.ndarray | None:
        """Recorded memory as flat uint8; None for NULL; an error for unrecorded pointers."""
        if isinstance(value, (bytes, bytearray)):
            return np.frombuffer(bytes(value), dtype=np.uint8).copy()
        if isinstance(value, int) and not isinstance(value, bool) and value == 0:
            if required:
                raise self._error(f"{what} is NULL")
            return None
        raise self._error(f"{what} points to memory apitrace did not record "
                          f"({show(value)}); the import needs the data itself")
