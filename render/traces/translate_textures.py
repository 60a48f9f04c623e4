"""Textures: units, bindings, 2D and cube-map images (compressed and copied included),
parameters and mipmaps.

Separate from the 3D images of OES_texture_3D
(:mod:`~tilesim.render.traces.translate_texture_3d`), an extension; texture parameters and
glGenerateMipmap, which apply to every texture target, are here.
"""

from __future__ import annotations

from tilesim.render.gl.commands import (
    COMPRESSED_TEXTURE_FORMATS,
    DEPTH_TEXEL_TYPES,
    DEPTH_TEXTURE_FORMATS,
    FILTERS,
    FLOAT_TEXTURE_PARAMETERS,
    IMAGE_TARGETS,
    PIXEL_STORE,
    TEXEL_TYPES,
    TEXTURE_FORMATS,
    TEXTURE_PARAMETERS,
    TEXTURE_TARGETS,
    WRAPS,
)
from tilesim.shaders.trace_capture import GLSIZEI, GLUINT, show

GL_TEXTURE0 = 0x84C0
MAX_TEXTURE_UNITS = 32


class TextureCalls:
    """Handlers of the texture calls of ES 2.0 and its compressed-format extensions.

    A mixin of :class:`~tilesim.render.traces.translator.Translator`, which provides the
    plumbing (:mod:`~tilesim.render.traces.translate_plumbing`) and the other domains'
    helpers.
    """

    def _glActiveTexture(self, call):
        unit = self._int("texture", limits=GLUINT) - GL_TEXTURE0
        units = self.scan.texture_units
        if not 0 <= unit < units:
            raise self._error(f"texture unit 0x{unit + GL_TEXTURE0:04X} is not "
                              f"GL_TEXTURE0..GL_TEXTURE{units - 1} (the units the program may "
                              "use: GL_MAX_COMBINED_TEXTURE_IMAGE_UNITS as it queried it, at "
                              f"least {MAX_TEXTURE_UNITS})")
        self._units.add(unit)
        self._emit("activeTexture", unit=unit)

    def _glBindTexture(self, call):
        target = self._enum(call.args.get("target"), TEXTURE_TARGETS, "target")
        if target == "TEXTURE_3D_OES":
            self._bound_3d = True   # context switches then reset the 3D bindings too
        self._emit("bindTexture", target=target, id=self._object("texture",
                                                                 self._name("texture")))

    def _glPixelStorei(self, call):
        pname = self._enum(call.args.get("pname"), PIXEL_STORE, "pname")
        self._emit("pixelStorei", pname=pname, value=self._int("param"))

    def _image_args(self, with_internal: bool) -> dict:
        args = self._call.args
        formats = TEXTURE_FORMATS + DEPTH_TEXTURE_FORMATS
        out = {"target": self._enum(args.get("target"), IMAGE_TARGETS, "target"),
               "level": self._int("level", limits=GLSIZEI)}
        if with_internal:
            out["internalformat"] = self._enum(args.get("internalformat"), formats,
                                               "internalformat")
        return out | {"width": self._size("width"), "height": self._size("height"),
                      "format": self._enum(args.get("format"), formats, "format"),
                      "type": self._enum(args.get("type"), TEXEL_TYPES + DEPTH_TEXEL_TYPES,
                                         "type")}

    def _glTexImage2D(self, call):
        if self._int("border", 0) != 0:
            raise self._error("border must be 0 in OpenGL ES 2.0")
        args = self._image_args(True)
        self._emit("texImage2D", **args,
                   data=self._blob(call.args.get("pixels"), "pixels", required=False))

    def _glTexSubImage2D(self, call):
        args = self._image_args(False)
        if args["format"] in DEPTH_TEXTURE_FORMATS or args["type"] in DEPTH_TEXEL_TYPES:
            raise self._error("texSubImage2D of depth textures is not supported")
        self._emit("texSubImage2D", **args, xoffset=self._int("xoffset"),
                   yoffset=self._int("yoffset"),
                   data=self._blob(call.args.get("pixels"), "pixels", required=True))

    def _glCompressedTexImage2D(self, call):
        """OES_compressed_ETC1_RGB8_texture and S3TC (EXT_texture_compression_s3tc, 0x83F0
        ..0x83F3): the recorded blocks; imageSize must be their length (other compressed
        formats are named in the enum error)."""
        if self._int("border", 0) != 0:
            raise self._error("border must be 0 in OpenGL ES 2.0")
        args = call.args
        data = self._blob(args.get("data"), "data", required=True)
        size = self._int("imageSize")
        if size != data.size:
            raise self._error(f"imageSize is {size} but apitrace recorded {data.size} bytes")
        self._emit("compressedTexImage2D",
                   target=self._enum(args.get("target"), IMAGE_TARGETS, "target"),
                   level=self._int("level", limits=GLSIZEI),
                   internalformat=self._enum(args.get("internalformat"),
                                             COMPRESSED_TEXTURE_FORMATS, "internalformat"),
                   width=self._size("width"), height=self._size("height"), data=data)

    def _glCompressedTexSubImage2D(self, call):
        """EXT_compressed_ETC1_RGB8_sub_texture, S3TC: the recorded blocks of a rectangle."""
        args = call.args
        data = self._blob(args.get("data"), "data", required=True)
        size = self._int("imageSize")
        if size != data.size:
            raise self._error(f"imageSize is {size} but apitrace recorded {data.size} bytes")
        self._emit("compressedTexSubImage2D",
                   target=self._enum(args.get("target"), IMAGE_TARGETS, "target"),
                   level=self._int("level", limits=GLSIZEI), xoffset=self._int("xoffset"),
                   yoffset=self._int("yoffset"), width=self._size("width"),
                   height=self._size("height"),
                   format=self._enum(args.get("format"), COMPRESSED_TEXTURE_FORMATS, "format"),
                   data=data)

    def _glCopyTexImage2D(self, call):
        if self._int("border", 0) != 0:
            raise self._error("border must be 0 in OpenGL ES 2.0")
        args = call.args
        self._emit("copyTexImage2D",
                   target=self._enum(args.get("target"), IMAGE_TARGETS, "target"),
                   level=self._int("level", limits=GLSIZEI),
                   internalformat=self._enum(args.get("internalformat"), TEXTURE_FORMATS,
                                             "internalformat"),
                   x=self._int("x"), y=self._int("y"), width=self._size("width"),
                   height=self._size("height"))

    def _glCopyTexSubImage2D(self, call):
        self._emit("copyTexSubImage2D",
                   target=self._enum(call.args.get("target"), IMAGE_TARGETS, "target"),
                   level=self._int("level", limits=GLSIZEI), xoffset=self._int("xoffset"),
                   yoffset=self._int("yoffset"), x=self._int("x"), y=self._int("y"),
                   width=self._size("width"), height=self._size("height"))

    def _tex_parameter(self, value) -> None:
        args = self._call.args
        target = self._enum(args.get("target"), TEXTURE_TARGETS, "target")
        pname = self._enum(args.get("pname"), TEXTURE_PARAMETERS + FLOAT_TEXTURE_PARAMETERS,
                           "pname")
        if pname in FLOAT_TEXTURE_PARAMETERS:  # EXT_texture_filter_anisotropic
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise self._error(f"param of {pname} must be a number, got {show(value)}")
            self._emit("texParameterf", target=target, pname=pname, value=float(value))
            return
        if isinstance(value, float) and value.is_integer() and abs(value) < 2**32:
            value = int(value)
        self._emit("texParameter", target=target, pname=pname,
                   value=self._enum(value, FILTERS + WRAPS, "param"))

    def _glTexParameteri(self, call):
        self._tex_parameter(self._arg("param"))

    _glTexParameterf = _glTexParameteri

    def _glTexParameteriv(self, call):
        params = self._arg("params")
        self._tex_parameter(params[0] if isinstance(params, list) and params else params)

    _glTexParameterfv = _glTexParameteriv

    def _glGenerateMipmap(self, call):
        self._emit("generateMipmap",
                   target=self._enum(call.args.get("target"), TEXTURE_TARGETS, "target"))
