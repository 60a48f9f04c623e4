"""Fixed-function state: capabilities, depth, stencil, blending, masks, clears, viewport and
scissor, rasterization, hints, and glFlush / glFinish / glReadPixels (which may end a frame).

Each call becomes the command of the same name; glBlendFunc, glStencilFunc and their kin
become the ``*Separate`` commands. Separate from the object domains: these calls set context
state only.
"""

from __future__ import annotations

from tilesim.render.gl.commands import (
    BLEND_EQUATIONS,
    BLEND_FACTORS,
    CAPABILITIES,
    COMPARE_FUNCS,
    DUAL_SOURCE_FACTORS,
    FACES,
    HINT_MODES,
    HINT_TARGETS,
    STENCIL_OPS,
    WINDINGS,
)
from tilesim.shaders.trace_capture import GLUINT, MASK

# glBlendFunc* factors: ES 2.0's and EXT_blend_func_extended's SRC1_* ones.
_FACTORS = BLEND_FACTORS + DUAL_SOURCE_FACTORS

CLEAR_BITS = ((0x4000, "COLOR_BUFFER_BIT"), (0x100, "DEPTH_BUFFER_BIT"),
              (0x400, "STENCIL_BUFFER_BIT"))


class FixedFunctionCalls:
    """Handlers of the fixed-function state calls and of the calls that may end a frame.

    A mixin of :class:`~tilesim.render.traces.translator.Translator`, which provides the
    plumbing (:mod:`~tilesim.render.traces.translate_plumbing`) and the other domains'
    helpers.
    """

    def _glEnable(self, call):
        self._emit("enable", cap=self._enum(call.args.get("cap"), CAPABILITIES, "cap"))

    def _glDisable(self, call):
        self._emit("disable", cap=self._enum(call.args.get("cap"), CAPABILITIES, "cap"))

    def _glDepthFunc(self, call):
        self._emit("depthFunc", func=self._enum(call.args.get("func"), COMPARE_FUNCS, "func"))

    def _glDepthMask(self, call):
        self._emit("depthMask", flag=self._bool("flag"))

    def _glDepthRangef(self, call):
        self._emit("depthRangef", near=self._float("n"), far=self._float("f"))

    def _glClearColor(self, call):
        self._emit("clearColor", red=self._float("red"), green=self._float("green"),
                   blue=self._float("blue"), alpha=self._float("alpha"))

    def _glClearDepthf(self, call):
        self._emit("clearDepthf", depth=self._float("d"))

    def _glClearStencil(self, call):
        self._emit("clearStencil", s=self._int("s"))

    def _glClear(self, call):
        mask = self._int("mask", limits=GLUINT)
        names = [name for bit, name in CLEAR_BITS if mask & bit]
        if mask & ~sum(bit for bit, _ in CLEAR_BITS):
            raise self._error(f"mask 0x{mask:X} has bits other than COLOR/DEPTH/STENCIL")
        self._emit("clear", mask=names)

    def _glColorMask(self, call):
        self._emit("colorMask", red=self._bool("red"), green=self._bool("green"),
                   blue=self._bool("blue"), alpha=self._bool("alpha"))

    def _glBlendFunc(self, call):
        src = self._enum(call.args.get("sfactor"), _FACTORS, "sfactor")
        dst = self._enum(call.args.get("dfactor"), _FACTORS, "dfactor")
        self._emit("blendFuncSeparate", src_rgb=src, dst_rgb=dst, src_alpha=src, dst_alpha=dst)

    def _glBlendFuncSeparate(self, call):
        a = call.args
        self._emit("blendFuncSeparate",
                   src_rgb=self._enum(a.get("sfactorRGB"), _FACTORS, "sfactorRGB"),
                   dst_rgb=self._enum(a.get("dfactorRGB"), _FACTORS, "dfactorRGB"),
                   src_alpha=self._enum(a.get("sfactorAlpha"), _FACTORS, "sfactorAlpha"),
                   dst_alpha=self._enum(a.get("dfactorAlpha"), _FACTORS, "dfactorAlpha"))

    def _glBlendEquation(self, call):
        mode = self._enum(call.args.get("mode"), BLEND_EQUATIONS, "mode")
        self._emit("blendEquationSeparate", mode_rgb=mode, mode_alpha=mode)

    def _glBlendEquationSeparate(self, call):
        self._emit("blendEquationSeparate",
                   mode_rgb=self._enum(call.args.get("modeRGB"), BLEND_EQUATIONS, "modeRGB"),
                   mode_alpha=self._enum(call.args.get("modeAlpha"), BLEND_EQUATIONS,
                                         "modeAlpha"))

    def _glBlendColor(self, call):
        self._emit("blendColor", red=self._float("red"), green=self._float("green"),
                   blue=self._float("blue"), alpha=self._float("alpha"))

    def _glCullFace(self, call):
        self._emit("cullFace", mode=self._enum(call.args.get("mode"), FACES, "mode"))

    def _glFrontFace(self, call):
        self._emit("frontFace", mode=self._enum(call.args.get("mode"), WINDINGS, "mode"))

    def _glViewport(self, call):
        self._emit("viewport", x=self._int("x"), y=self._int("y"), width=self._size("width"),
                   height=self._size("height"))

    def _glScissor(self, call):
        self._emit("scissor", x=self._int("x"), y=self._int("y"), width=self._size("width"),
                   height=self._size("height"))

    def _glLineWidth(self, call):
        self._emit("lineWidth", width=self._float("width"))

    def _glPolygonOffset(self, call):
        self._emit("polygonOffset", factor=self._float("factor"), units=self._float("units"))

    def _stencil_func(self, face: str) -> None:
        self._emit("stencilFuncSeparate", face=face,
                   func=self._enum(self._call.args.get("func"), COMPARE_FUNCS, "func"),
                   ref=self._int("ref"), mask=self._int("mask", limits=MASK) & 0xFFFFFFFF)

    def _glStencilFunc(self, call):
        self._stencil_func("FRONT_AND_BACK")

    def _glStencilFuncSeparate(self, call):
        self._stencil_func(self._enum(call.args.get("face"), FACES, "face"))

    def _stencil_op(self, face: str) -> None:
        a = self._call.args
        self._emit("stencilOpSeparate", face=face,
                   fail=self._enum(a.get("fail", a.get("sfail")), STENCIL_OPS, "fail"),
                   zfail=self._enum(a.get("zfail", a.get("dpfail")), STENCIL_OPS, "zfail"),
                   zpass=self._enum(a.get("zpass", a.get("dppass")), STENCIL_OPS, "zpass"))

    def _glStencilOp(self, call):
        self._stencil_op("FRONT_AND_BACK")

    def _glStencilOpSeparate(self, call):
        self._stencil_op(self._enum(call.args.get("face"), FACES, "face"))

    def _glStencilMask(self, call):
        self._emit("stencilMaskSeparate", face="FRONT_AND_BACK",
                   mask=self._int("mask", limits=MASK) & 0xFFFFFFFF)

    def _glStencilMaskSeparate(self, call):
        self._emit("stencilMaskSeparate", face=self._enum(call.args.get("face"), FACES, "face"),
                   mask=self._int("mask", limits=MASK) & 0xFFFFFFFF)

    def _glHint(self, call):
        self._emit("hint", target=self._enum(call.args.get("target"), HINT_TARGETS, "target"),
                   mode=self._enum(call.args.get("mode"), HINT_MODES, "mode"))

    def _glFlush(self, call):
        self._emit("flush")

    def _glFinish(self, call):
        if self.scan.frame_end == "glFinish":
            return self._end_frame()
        self._emit("finish")
        return None

    def _glReadPixels(self, call):
        if self.scan.frame_end != "glReadPixels":
            return None  # reads nothing back into the stream: skipped
        self._emit("readPixels", x=self._int("x"), y=self._int("y"),
                   width=self._size("width"), height=self._size("height"))
        return self._end_frame()
