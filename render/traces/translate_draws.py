"""Draws: glDrawArrays and glDrawElements (client index arrays as recorded blobs).

Before each draw, the attributes the program in use reads must have data (a buffer or a
recorded blob). Separate from the state calls because draws are what the stream renders.
"""

from __future__ import annotations

from tilesim.render.gl.commands import INDEX_TYPES, PRIMITIVE_MODES
from tilesim.shaders.trace_capture import GLSIZEI, POINTER


class DrawCalls:
    """Handlers of the draw calls.

    A mixin of :class:`~tilesim.render.traces.translator.Translator`, which provides the
    plumbing (:mod:`~tilesim.render.traces.translate_plumbing`) and the other domains'
    helpers.
    """

    def _check_attributes(self) -> None:
        if not self._program or self._program not in self._group.linked:
            return
        interface = self.programs[self._group.linked[self._program]].interface
        for attribute in interface.get("attributes", []):
            location = attribute.get("location")
            if not isinstance(location, int) or not attribute.get("registers"):
                continue
            for index in range(location, location + len(attribute["registers"])):
                if index in self._attrib_enabled and \
                        self._attrib_state.get(index) == "unknown":
                    raise self._error(f"attribute {attribute.get('name')!r} (array {index}) "
                                      "reads client memory apitrace did not record")

    def _glDrawArrays(self, call):
        self._check_attributes()
        self._emit("drawArrays", mode=self._enum(call.args.get("mode"), PRIMITIVE_MODES,
                                                 "mode"),
                   first=self._int("first", limits=GLSIZEI), count=self._size("count"))

    def _glDrawElements(self, call):
        self._check_attributes()
        mode = self._enum(call.args.get("mode"), PRIMITIVE_MODES, "mode")
        type_ = self._enum(call.args.get("type"), INDEX_TYPES, "type")
        indices = call.args.get("indices")
        if isinstance(indices, (bytes, bytearray)):
            self._emit("drawElements", mode=mode, count=self._size("count"), type=type_,
                       offset=0, indices=self._blob(indices, "indices", required=True))
        elif self._element_buffer:
            self._emit("drawElements", mode=mode, count=self._size("count"), type=type_,
                       offset=self._int("indices", limits=POINTER), indices=None)
        else:
            raise self._error("indices point to client memory apitrace did not record")
