"""Object names: glGen* / glDelete* of buffers, textures, framebuffers, renderbuffers and vertex
array objects (OES_vertex_array_object), mapped to trace ids per EGL share group.

Every domain that binds or attaches an object asks :meth:`ObjectCalls._object` for its trace id
(GLES2 creates an object on the first bind of a name never generated, and so does the
importer); the naming itself is kept here, apart from what each kind of object holds.
"""

from __future__ import annotations

from tilesim.shaders.trace_capture import GLSIZEI, GLUINT


class ObjectCalls:
    """Application object names -> trace ids; creation and deletion commands.

    A mixin of :class:`~tilesim.render.traces.translator.Translator`, which provides the
    plumbing (:mod:`~tilesim.render.traces.translate_plumbing`) and the other domains'
    helpers.
    """

    def _new_object(self, kind: str, app: int) -> int:
        ident = self._next_id[kind]
        self._next_id[kind] += 1
        self._group.names[kind][app] = ident
        if kind != "program":
            self._emit({"buffer": "createBuffer", "texture": "createTexture",
                        "framebuffer": "createFramebuffer",
                        "renderbuffer": "createRenderbuffer",
                        "vertex_array": "createVertexArray"}[kind], id=ident)
        return ident

    def _object(self, kind: str, app: int) -> int:
        """The trace id of application object ``app`` (0 stays 0); GLES2 creates an object
        on the first bind of a name never generated, and so does the importer."""
        if app == 0:
            return 0
        ident = self._group.names[kind].get(app)
        return self._new_object(kind, app) if ident is None else ident

    def _names(self, key: str) -> list[int]:
        names = self._args.ints(key, GLUINT, allow_none=False)
        return names[:self._int("n", len(names), limits=GLSIZEI)]

    def _generate(self, kind: str, key: str) -> None:
        for app in self._names(key):
            if app and app not in self._group.names[kind]:
                self._new_object(kind, app)

    def _delete(self, kind: str, key: str, op: str) -> None:
        for app in self._names(key):
            ident = self._group.names[kind].pop(app, None)
            if ident is None:
                continue
            self._emit(op, id=ident)
            if kind == "buffer":
                self._group.mappings.pop(ident, None)
                self._group.buffer_sizes.pop(ident, None)
                if self._array_buffer == ident:
                    self._array_buffer = 0
                if self._element_buffer == ident:
                    self._element_buffer = 0

    def _glGenBuffers(self, call):
        self._generate("buffer", "buffers")

    def _glGenTextures(self, call):
        self._generate("texture", "textures")

    def _glGenFramebuffers(self, call):
        self._generate("framebuffer", "framebuffers")

    def _glGenRenderbuffers(self, call):
        self._generate("renderbuffer", "renderbuffers")

    # OES_vertex_array_object, and the same entry points of GLES 3 under their core names
    def _glGenVertexArraysOES(self, call):
        self._generate("vertex_array", "arrays")

    def _glDeleteVertexArraysOES(self, call):
        bound = self._vertex_array
        self._delete("vertex_array", "arrays", "deleteVertexArray")
        if bound and bound not in self._group.names["vertex_array"].values():
            self._switch_vertex_array(0)   # GL binds the default object, as the renderer does
        live = set(self._group.names["vertex_array"].values()) | {0}
        for ident in set(self._vertex_arrays) - live:
            self._vertex_arrays.pop(ident)

    def _glBindVertexArrayOES(self, call):
        ident = self._object("vertex_array", self._name("array"))
        self._emit("bindVertexArray", id=ident)
        self._switch_vertex_array(ident)

    _glGenVertexArrays = _glGenVertexArraysOES
    _glDeleteVertexArrays = _glDeleteVertexArraysOES
    _glBindVertexArray = _glBindVertexArrayOES

    def _switch_vertex_array(self, ident: int) -> None:
        """Keep what the bound object holds (ELEMENT_ARRAY_BUFFER, the attribute arrays'
        kinds and enables) and take up those of object ``ident`` (a new one: none)."""
        self._vertex_arrays[self._vertex_array] = (self._element_buffer, self._attrib_state,
                                                   self._attrib_enabled)
        self._element_buffer, self._attrib_state, self._attrib_enabled = \
            self._vertex_arrays.pop(ident, (0, {}, set()))
        self._vertex_array = ident

    def _glDeleteBuffers(self, call):
        self._delete("buffer", "buffers", "deleteBuffer")

    def _glDeleteTextures(self, call):
        self._delete("texture", "textures", "deleteTexture")

    def _glDeleteFramebuffers(self, call):
        self._delete("framebuffer", "framebuffers", "deleteFramebuffer")

    def _glDeleteRenderbuffers(self, call):
        self._delete("renderbuffer", "renderbuffers", "deleteRenderbuffer")
