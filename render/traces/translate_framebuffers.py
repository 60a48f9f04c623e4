"""Framebuffer and renderbuffer objects (ES 2.0 §4.4): bindings, renderbuffer storage, and
attachments of textures and renderbuffers.

Separate because the attachments tie the texture and renderbuffer domains together.
"""

from __future__ import annotations

from tilesim.render.gl.commands import ATTACHMENTS, IMAGE_TARGETS, RENDERBUFFER_FORMATS
from tilesim.shaders.trace_capture import GLSIZEI, GLUINT

GL_FRAMEBUFFER = 0x8D40
GL_RENDERBUFFER = 0x8D41


class FramebufferCalls:
    """Handlers of the framebuffer object calls.

    A mixin of :class:`~tilesim.render.traces.translator.Translator`, which provides the
    plumbing (:mod:`~tilesim.render.traces.translate_plumbing`) and the other domains'
    helpers.
    """

    def _check_target(self, key: str, value: int, what: str) -> None:
        if self._int(key, limits=GLUINT) != value:
            raise self._error(f"{key} must be {what}")

    def _glBindFramebuffer(self, call):
        self._check_target("target", GL_FRAMEBUFFER, "GL_FRAMEBUFFER")
        self._emit("bindFramebuffer", id=self._object("framebuffer", self._name("framebuffer")))

    def _glBindRenderbuffer(self, call):
        self._check_target("target", GL_RENDERBUFFER, "GL_RENDERBUFFER")
        self._emit("bindRenderbuffer",
                   id=self._object("renderbuffer", self._name("renderbuffer")))

    def _glRenderbufferStorage(self, call):
        self._check_target("target", GL_RENDERBUFFER, "GL_RENDERBUFFER")
        self._emit("renderbufferStorage",
                   internalformat=self._enum(call.args.get("internalformat"),
                                             RENDERBUFFER_FORMATS, "internalformat"),
                   width=self._size("width"), height=self._size("height"))

    def _glFramebufferTexture2D(self, call):
        self._check_target("target", GL_FRAMEBUFFER, "GL_FRAMEBUFFER")
        self._emit("framebufferTexture2D",
                   attachment=self._enum(call.args.get("attachment"), ATTACHMENTS,
                                         "attachment"),
                   textarget=self._enum(call.args.get("textarget"), IMAGE_TARGETS,
                                        "textarget"),
                   texture=self._object("texture", self._name("texture")),
                   level=self._int("level", limits=GLSIZEI))

    def _glFramebufferRenderbuffer(self, call):
        self._check_target("target", GL_FRAMEBUFFER, "GL_FRAMEBUFFER")
        self._check_target("renderbuffertarget", GL_RENDERBUFFER, "GL_RENDERBUFFER")
        self._emit("framebufferRenderbuffer",
                   attachment=self._enum(call.args.get("attachment"), ATTACHMENTS,
                                         "attachment"),
                   renderbuffer=self._object("renderbuffer", self._name("renderbuffer")))
