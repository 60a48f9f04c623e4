"""Buffer objects (ES 2.0 §2.9): bindings, data, and what a program wrote into mapped buffers.

glMapBufferOES / glMapBufferRangeEXT (and their GLES 3 names) only record the mapping;
apitrace's fake ``memcpy`` into it becomes ``bufferSubData`` of the range written. Separate
because the mapping bookkeeping is the buffers' own.
"""

from __future__ import annotations

from tilesim.render.gl.commands import BUFFER_TARGETS, BUFFER_USAGES
from tilesim.render.traces.translate_plumbing import _Mapping
from tilesim.shaders.trace_capture import GLINTPTR, POINTER


class BufferCalls:
    """Handlers of the buffer calls, and of apitrace's ``memcpy`` into mapped memory.

    A mixin of :class:`~tilesim.render.traces.translator.Translator`, which provides the
    plumbing (:mod:`~tilesim.render.traces.translate_plumbing`) and the other domains'
    helpers.
    """

    def _buffer_target(self) -> str:
        return self._enum(self._call.args.get("target"), BUFFER_TARGETS, "target")

    def _bound(self, target: str) -> int:
        return self._array_buffer if target == "ARRAY_BUFFER" else self._element_buffer

    def _glBindBuffer(self, call):
        target = self._buffer_target()
        ident = self._object("buffer", self._name("buffer"))
        self._emit("bindBuffer", target=target, id=ident)
        if target == "ARRAY_BUFFER":
            self._array_buffer = ident
        else:
            self._element_buffer = ident

    def _glBufferData(self, call):
        target = self._buffer_target()
        size = self._int("size", limits=GLINTPTR)
        data = self._blob(call.args.get("data"), "data", required=False)
        usage = self._enum(call.args.get("usage"), BUFFER_USAGES, "usage")
        self._emit("bufferData", target=target, data=data, size=size, usage=usage)
        if self._bound(target):
            self._group.buffer_sizes[self._bound(target)] = size

    def _glBufferSubData(self, call):
        target = self._buffer_target()
        data = self._blob(call.args.get("data"), "data", required=True)
        size = self._int("size", limits=GLINTPTR)
        self._emit("bufferSubData", target=target, offset=self._int("offset", limits=GLINTPTR),
                   data=data[:size])

    def _map(self, offset: int, length: int | None) -> None:
        target = self._buffer_target()
        ident = self._bound(target)
        if not ident:
            raise self._error(f"no buffer is bound to {target}")
        if length is None:
            length = self._group.buffer_sizes.get(ident, 0)
        pointer = self._args.ret_handle()
        if pointer:
            self._group.mappings[ident] = _Mapping(ident, target, pointer, offset, length)

    def _glMapBufferOES(self, call):
        self._map(0, None)

    _glMapBuffer = _glMapBufferOES

    def _glMapBufferRangeEXT(self, call):
        self._map(self._int("offset", limits=GLINTPTR), self._int("length", limits=GLINTPTR))

    _glMapBufferRange = _glMapBufferRangeEXT

    def _glUnmapBufferOES(self, call):
        ident = self._bound(self._buffer_target())
        self._group.mappings.pop(ident, None)

    _glUnmapBuffer = _glUnmapBufferOES

    def _memcpy(self, call):
        """apitrace's record of what a program wrote into mapped buffer memory."""
        dest, count = self._int("dest", limits=POINTER), self._int("n", limits=GLINTPTR)
        data = self._blob(call.args.get("src"), "src", required=True)[:count]
        for mapping in self._group.mappings.values():
            start = dest - mapping.pointer
            if 0 <= start and start + data.size <= mapping.length:
                break
        else:
            raise self._error("a write to memory that is not a mapped buffer range")
        current = self._bound(mapping.target)
        if current != mapping.buffer:
            self._emit("bindBuffer", target=mapping.target, id=mapping.buffer)
        self._emit("bufferSubData", target=mapping.target, offset=mapping.offset + start,
                   data=data)
        if current != mapping.buffer:
            self._emit("bindBuffer", target=mapping.target, id=current)
