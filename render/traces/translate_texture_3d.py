"""OES_texture_3D: 3D texture images, their copies, and a layer of one attached to a framebuffer.

Also under the ES 3.0 names, which a GLES2 context of Mesa (an ES 3.x context) answers too.
Separate from :mod:`~tilesim.render.traces.translate_textures` because it is an extension's.
"""

from __future__ import annotations

from tilesim.render.gl.commands import (
    ATTACHMENTS,
    COMPRESSED_TEXTURE_FORMATS,
    TEXEL_TYPES,
    TEXTURE_FORMATS,
)
from tilesim.render.traces.translate_framebuffers import GL_FRAMEBUFFER
from tilesim.shaders.trace_capture import GLSIZEI


class Texture3DCalls:
    """Handlers of the OES_texture_3D calls (target TEXTURE_3D_OES).

    A mixin of :class:`~tilesim.render.traces.translator.Translator`, which provides the
    plumbing (:mod:`~tilesim.render.traces.translate_plumbing`) and the other domains'
    helpers.
    """

    def _target_3d(self) -> str:
        return self._enum(self._call.args.get("target"), ("TEXTURE_3D_OES",), "target")

    def _glTexImage3DOES(self, call):
        if self._int("border", 0) != 0:
            raise self._error("border must be 0 (OES_texture_3D)")
        args = call.args
        self._emit("texImage3D", target=self._target_3d(),
                   level=self._int("level", limits=GLSIZEI),
                   internalformat=self._enum(args.get("internalformat"), TEXTURE_FORMATS,
                                             "internalformat"),
                   width=self._size("width"), height=self._size("height"),
                   depth=self._size("depth"),
                   format=self._enum(args.get("format"), TEXTURE_FORMATS, "format"),
                   type=self._enum(args.get("type"), TEXEL_TYPES, "type"),
                   data=self._blob(args.get("pixels"), "pixels", required=False))

    def _glTexSubImage3DOES(self, call):
        args = call.args
        self._emit("texSubImage3D", target=self._target_3d(),
                   level=self._int("level", limits=GLSIZEI), xoffset=self._int("xoffset"),
                   yoffset=self._int("yoffset"), zoffset=self._int("zoffset"),
                   width=self._size("width"), height=self._size("height"),
                   depth=self._size("depth"),
                   format=self._enum(args.get("format"), TEXTURE_FORMATS, "format"),
                   type=self._enum(args.get("type"), TEXEL_TYPES, "type"),
                   data=self._blob(args.get("pixels"), "pixels", required=True))

    def _glCopyTexSubImage3DOES(self, call):
        self._emit("copyTexSubImage3D", target=self._target_3d(),
                   level=self._int("level", limits=GLSIZEI), xoffset=self._int("xoffset"),
                   yoffset=self._int("yoffset"), zoffset=self._int("zoffset"),
                   x=self._int("x"), y=self._int("y"), width=self._size("width"),
                   height=self._size("height"))

    def _glCompressedTexImage3DOES(self, call):
        if self._int("border", 0) != 0:
            raise self._error("border must be 0 (OES_texture_3D)")
        args = call.args
        data = self._blob(args.get("data"), "data", required=True)
        size = self._int("imageSize")
        if size != data.size:
            raise self._error(f"imageSize is {size} but apitrace recorded {data.size} bytes")
        self._emit("compressedTexImage3D", target=self._target_3d(),
                   level=self._int("level", limits=GLSIZEI),
                   internalformat=self._enum(args.get("internalformat"),
                                             COMPRESSED_TEXTURE_FORMATS, "internalformat"),
                   width=self._size("width"), height=self._size("height"),
                   depth=self._size("depth"), data=data)

    def _glFramebufferTexture3DOES(self, call):
        self._check_target("target", GL_FRAMEBUFFER, "GL_FRAMEBUFFER")
        self._emit("framebufferTexture3D",
                   attachment=self._enum(call.args.get("attachment"), ATTACHMENTS,
                                         "attachment"),
                   textarget=self._enum(call.args.get("textarget"), ("TEXTURE_3D_OES",),
                                        "textarget"),
                   texture=self._object("texture", self._name("texture")),
                   level=self._int("level", limits=GLSIZEI), zoffset=self._int("zoffset"))

    # the ES 3.0 names, which a GLES2 context of Mesa (an ES 3.x context) also answers
    _glTexImage3D = _glTexImage3DOES
    _glTexSubImage3D = _glTexSubImage3DOES
    _glCopyTexSubImage3D = _glCopyTexSubImage3DOES
    _glCompressedTexImage3D = _glCompressedTexImage3DOES
