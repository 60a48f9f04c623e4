"""Pass 2 of ``tilesim import``: :class:`Translator`, composed of one mixin per GL domain.

Each GL call is dispatched by name: ``feed`` looks up the method ``"_" + call.name`` (only for
names starting with ``gl`` or ``egl``, and apitrace's ``memcpy``), so a call's handler is the
method named after it, in whichever domain's mixin it lives; names of the same handler (an
extension's and the core's, ``glUniform*``) are class attributes bound to the same function.
A call with no handler is skipped or folded as :mod:`~tilesim.render.traces.call_kinds` says,
and any other is an error. The domains, one module each:

    translate_plumbing        the call, its checked arguments, commands out, the bindings
    translate_contexts        state reset when another EGL context is made current
    translate_egl             EGL contexts, share groups, eglMakeCurrent, swaps
    translate_objects         object names (glGen*/glDelete*, vertex array objects)
    translate_buffers         buffer objects, mapped buffers
    translate_textures        textures (2D, cube maps, compressed, copies, parameters)
    translate_texture_3d      OES_texture_3D
    translate_programs        programs, uniforms
    translate_attributes      vertex attributes
    translate_draws           draws
    translate_fixed_function  fixed-function state, glFlush/glFinish/glReadPixels
    translate_framebuffers    framebuffer and renderbuffer objects

``Translator`` is also importable from :mod:`~tilesim.render.traces.apitrace_import`, which
runs it.
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING

from tilesim.errors import InputError
from tilesim.render.gl.commands import FRAME_END, Command
from tilesim.render.traces.call_kinds import DRAW_CALLS, OFF_SURFACE_READS, skip_kind
from tilesim.render.traces.translate_attributes import VertexAttribCalls
from tilesim.render.traces.translate_buffers import BufferCalls
from tilesim.render.traces.translate_contexts import ContextState
from tilesim.render.traces.translate_draws import DrawCalls
from tilesim.render.traces.translate_egl import EglCalls
from tilesim.render.traces.translate_fixed_function import FixedFunctionCalls
from tilesim.render.traces.translate_framebuffers import FramebufferCalls
from tilesim.render.traces.translate_objects import ObjectCalls
from tilesim.render.traces.translate_plumbing import TranslatorPlumbing, _Group
from tilesim.render.traces.translate_programs import ProgramCalls
from tilesim.render.traces.translate_texture_3d import Texture3DCalls
from tilesim.render.traces.translate_textures import TextureCalls
from tilesim.shaders.trace_capture import Call, show

if TYPE_CHECKING:
    from tilesim.render.traces.apitrace_import import ScanResult


class Translator(EglCalls, ObjectCalls, BufferCalls, TextureCalls, Texture3DCalls,
                 ProgramCalls, VertexAttribCalls, DrawCalls, FixedFunctionCalls,
                 FramebufferCalls, ContextState, TranslatorPlumbing):
    """Pass 2: turns calls into frames of commands (see
    :mod:`~tilesim.render.traces.apitrace_import`).

    ``feed(call)`` returns a finished frame (a list of commands ending with ``endFrame``) or
    None. ``scan`` and ``programs`` come from :func:`scan_calls` and :func:`compile_links`.
    """

    def __init__(self, scan: ScanResult, programs: dict[int, object], *, source: str,
                 width: int, height: int):
        self.scan, self.programs, self.source = scan, programs, source
        self.width, self.height = width, height
        self.frame: list[Command] = []
        self.frames_done = 0
        self.translated: Counter[str] = Counter()
        self.skipped: Counter[str] = Counter()
        self.folded: Counter[str] = Counter()
        self._next_id = {k: 1 for k in ("buffer", "texture", "framebuffer", "renderbuffer",
                                        "program", "vertex_array")}
        self._groups: dict[int, _Group] = {}
        self._share_root: dict[int, int] = {}
        self._destroyed: set[int] = set()
        self._used_contexts: set[int] = set()
        self._owner: int | None = None   # the context whose GL state the stream now holds
        self._surface: int | None = None  # the EGL surface drawn to (the window)
        self._current_draw: int | None = None  # the surface of the current context
        # the current context's state shadow (_remember), and each context made current
        # before: its shadow and the translator's bookkeeping of its bindings
        self._shadow: dict[tuple, tuple[str, dict]] = {}
        self._saved: dict[int, tuple[dict, dict]] = {}
        self._group_key = 0
        self._groups[0] = _Group()
        self._reset_bindings()
        self._call: Call | None = None
        self._produced = False

    # -- driving ----------------------------------------------------------------------------

    def feed(self, call: Call) -> list[Command] | None:
        """Translate one call; returns the frame it finished, if any."""
        self._call = call
        self._produced = False
        name = call.name
        # only calls have handlers: a record named after a helper ("error", "emit") is not one
        handler = getattr(self, "_" + name, None) if name.startswith(("gl", "egl")) or \
            name == "memcpy" else None
        kind = skip_kind(name)
        if handler is None and kind is None:
            raise InputError(f"{name} is not supported by the importer and may change the "
                             "image", source=self._where())
        if name in DRAW_CALLS | OFF_SURFACE_READS and self._off_surface(name):
            self.skipped[f"{name} (another EGL surface)"] += 1
            return None
        if handler is not None:
            try:
                finished = handler(call)
            except (KeyError, TypeError, ValueError, IndexError, OverflowError,
                    AttributeError) as exc:
                # a net under the typed accessors, which should leave nothing to catch here
                raise self._error(f"malformed call ({type(exc).__name__}: "
                                  f"{str(exc)[:120]})") from None
        else:
            finished = None
        if self._produced or finished is not None:
            self.translated[name] += 1
        elif kind == "skipped":
            self.skipped[name] += 1
        else:
            self.folded[name] += 1
        return finished

    def _off_surface(self, name: str) -> bool:
        """Whether call ``name`` draws into (or copies from) the default framebuffer of an EGL
        surface other than the one shown (a loader context's pbuffer). tilesim traces have
        one window framebuffer: such draws cannot change what is shown and are skipped; a
        copy from there into a texture would need that surface's image and is an error."""
        main, draw = self.scan.main_surface, self._current_draw
        framebuffer = self._shadow.get(("bindFramebuffer",), ("", {"id": 0}))[1]["id"]
        if main is None or draw is None or draw == main or framebuffer:
            return False
        if name in OFF_SURFACE_READS:
            raise self._error(f"copies from EGL surface {show(draw)}, not the surface shown "
                              f"({show(main)}): tilesim traces have one window framebuffer")
        return True

    def _end_frame(self) -> list[Command]:
        self._emit(FRAME_END)
        frame, self.frame = self.frame, []
        self.frames_done += 1
        return frame
