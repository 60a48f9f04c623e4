"""Vertex attributes: arrays (buffer offsets, or client memory apitrace recorded), their
enables, and constant values (glVertexAttrib*).

A glVertexAttribPointer into user memory apitrace did not record leaves the array "unknown"
until the fake call with its data that apitrace writes before a draw; the draws
(:mod:`~tilesim.render.traces.translate_draws`) check that no enabled array is still unknown.
Separate because that bookkeeping is the attributes' own.
"""

from __future__ import annotations

from tilesim.render.gl.commands import ATTRIB_TYPES
from tilesim.shaders.trace_capture import POINTER, show

MAX_VERTEX_ATTRIBS = 32


class VertexAttribCalls:
    """Handlers of the vertex attribute calls.

    A mixin of :class:`~tilesim.render.traces.translator.Translator`, which provides the
    plumbing (:mod:`~tilesim.render.traces.translate_plumbing`) and the other domains'
    helpers.
    """

    def _index(self) -> int:
        index = self._int("index")
        if not 0 <= index < MAX_VERTEX_ATTRIBS:
            raise self._error(f"attribute index {index} out of range")
        return index

    def _glVertexAttribPointer(self, call):
        args, index = call.args, self._index()
        fields = {"index": index, "size": self._int("size", limits=(1, 4)),
                  "type": self._enum(args.get("type"), ATTRIB_TYPES, "type"),
                  "normalized": self._bool("normalized"), "stride": self._size("stride")}
        pointer = args.get("pointer")
        if isinstance(pointer, (bytes, bytearray)):
            self._emit("vertexAttribPointer", **fields, offset=0,
                       data=self._blob(pointer, "pointer", required=True))
            self._attrib_state[index] = "client"
        elif self._array_buffer:
            self._emit("vertexAttribPointer", **fields,
                       offset=self._int("pointer", limits=POINTER), data=None)
            self._attrib_state[index] = "buffer"
        else:
            # user memory apitrace did not record here; a fake call with the data follows
            # before any draw that reads it
            self._attrib_state[index] = "unknown"

    def _glEnableVertexAttribArray(self, call):
        index = self._index()
        self._attrib_enabled.add(index)
        self._emit("enableVertexAttribArray", index=index)

    def _glDisableVertexAttribArray(self, call):
        index = self._index()
        self._attrib_enabled.discard(index)
        self._emit("disableVertexAttribArray", index=index)

    def _vertex_attrib(self, call):
        name = call.name  # glVertexAttrib{1,2,3,4}f[v]
        n = int(name[len("glVertexAttrib")])
        if name.endswith("v"):
            values = self._arg("v")
            if isinstance(values, (int, float)) and not isinstance(values, bool):
                values = [values]
            if not isinstance(values, list):
                raise self._error(f"v must be a list of numbers, got {show(values)}")
            values = values[:n]
        else:
            values = [self._arg(k) for k in ("x", "y", "z", "w")[:n]]
        if len(values) != n or not all(isinstance(v, (int, float)) and not isinstance(v, bool)
                                       for v in values):
            raise self._error(f"expected {n} numbers, got {show(values)}")
        values = [float(v) for v in values] + [0.0, 0.0, 1.0][n - 1:]
        self._emit("vertexAttrib", index=self._index(), values=values[:4])


for _n in "1234":
    setattr(VertexAttribCalls, f"_glVertexAttrib{_n}f", VertexAttribCalls._vertex_attrib)
    setattr(VertexAttribCalls, f"_glVertexAttrib{_n}fv", VertexAttribCalls._vertex_attrib)
