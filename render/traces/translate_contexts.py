"""State reset when another EGL context is made current, and its state put back later.

A tilesim stream holds one GL state, while a capture may switch between EGL contexts, each with
its own (EGL 1.4 §3.7; objects are per share group). Every command emitted is remembered in a
shadow of the current context's state; on a switch the stream is reset to GL's initial values
and, for a context seen before, its own state is put back from its shadow. This bookkeeping is
not any one GL domain's: it reads the commands every domain emits, so it is kept apart from them.
"""

from __future__ import annotations

from tilesim.render.gl.commands import BUFFER_TARGETS, TEXTURE_TARGETS, UNPACK_SUBIMAGE, Command


class ContextState:
    """Remembers the state each command sets (:meth:`_remember`), resets it
    (:meth:`_reset_state`) and puts a context's back (:meth:`_restore_state`).

    A mixin of :class:`~tilesim.render.traces.translator.Translator`, which provides the
    plumbing (:mod:`~tilesim.render.traces.translate_plumbing`) and the other domains'
    helpers.
    """

    def _mark_dirty(self, command: Command) -> None:
        op, a = command.op, command.args
        self._remember(op, a)
        if op in ("enable", "disable"):
            self._dirty.add(("cap", a["cap"]))
        elif op == "bindTexture":
            self._dirty.add(("texture",))
        elif op in ("enableVertexAttribArray", "disableVertexAttribArray"):
            self._dirty.add(("attribArray", a["index"]))
        elif op == "vertexAttrib":
            self._dirty.add(("vertexAttrib", a["index"]))
        elif op == "hint":
            self._dirty.add(("hint", a["target"]))
        elif op == "pixelStorei":
            self._dirty.add(("pixelStorei", a["pname"]))
        elif op in _DEFAULT_STATE or op in ("activeTexture", "useProgram", "bindBuffer",
                                             "bindFramebuffer", "bindRenderbuffer"):
            self._dirty.add((op,))

    def _remember(self, op: str, a: dict) -> None:
        """Keep ``op`` in the current context's state shadow (:attr:`_shadow`): per piece of
        context state (EGL 1.4 §3.7: each context has its own; objects are the share group's),
        the latest command that set it, so that :meth:`_restore_state` can put the context
        back when the program makes it current again. Vertex-array state is kept only while
        the default vertex array object is bound (a bound object keeps its own, and the
        stream's object keeps it across the switch); a pointer is kept with the
        ARRAY_BUFFER it was read from (GLES 2.0 §2.9.1)."""
        shadow = self._shadow
        vao = shadow.get(("bindVertexArray",), ("", {"id": 0}))[1]["id"]
        if op in ("enable", "disable"):
            shadow[("cap", a["cap"])] = (op, a)
        elif op == "activeTexture":
            shadow[(op,)] = (op, a)
        elif op == "bindTexture":
            unit = shadow.get(("activeTexture",), ("", {"unit": 0}))[1]["unit"]
            shadow[("texture", unit, a["target"])] = (op, a)
        elif op == "bindBuffer":
            if a["target"] != "ELEMENT_ARRAY_BUFFER" or vao == 0:
                shadow[(op, a["target"])] = (op, a)
        elif op in ("enableVertexAttribArray", "disableVertexAttribArray"):
            if vao == 0:
                shadow[("attribArray", a["index"])] = (op, a)
        elif op == "vertexAttribPointer":
            if vao == 0:
                array = shadow.get(("bindBuffer", "ARRAY_BUFFER"), ("", {"id": 0}))[1]["id"]
                shadow[("attribPointer", a["index"])] = (op, {**a, "_buffer": array})
        elif op in ("vertexAttrib", "hint", "pixelStorei"):
            shadow[(op, a.get("index", a.get("target", a.get("pname"))))] = (op, a)
        elif op in ("stencilFuncSeparate", "stencilOpSeparate", "stencilMaskSeparate"):
            faces = ("FRONT", "BACK") if a["face"] == "FRONT_AND_BACK" else (a["face"],)
            for face in faces:
                shadow[(op, face)] = (op, {**a, "face": face})
        elif op in _DEFAULT_STATE or op in ("useProgram", "bindFramebuffer",
                                             "bindRenderbuffer", "bindVertexArray"):
            shadow[(op,)] = (op, a)
        elif op in _UNBINDS:
            # deleting a bound object unbinds it (ES 2.0 §2.9, §3.8.12, §4.4); other contexts
            # would keep the orphan bound, which the stream's one state cannot: theirs revert
            # to 0 as well
            binds = _UNBINDS[op]
            for held in [shadow] + [saved for saved, _ in self._saved.values()]:
                for key, (bound_op, bound) in list(held.items()):
                    if (bound_op == binds and bound["id"] == a["id"]) or (
                            op == "deleteBuffer" and bound.get("_buffer") == a["id"]):
                        del held[key]

    def _restore_state(self, shadow: dict) -> None:
        """Commands that make the GL state (just reset to its initial values) the context's
        whose shadow ``shadow`` is: the default vertex array object's arrays first (each
        pointer with its ARRAY_BUFFER bound), then buffer bindings, the vertex array object,
        every unit's textures, and the rest."""
        rest = dict(shadow)
        pointers = sorted(k for k in rest if k[0] == "attribPointer")
        for key in pointers:
            op, a = rest.pop(key)
            a = dict(a)
            self._emit("bindBuffer", target="ARRAY_BUFFER", id=a.pop("_buffer"))
            self._emit(op, **a)
        buffers = {k: rest.pop(k) for k in sorted(k for k in list(rest) if k[0] == "bindBuffer")}
        if pointers and ("bindBuffer", "ARRAY_BUFFER") not in buffers:
            self._emit("bindBuffer", target="ARRAY_BUFFER", id=0)
        for op, a in buffers.values():
            self._emit(op, **a)
        if ("bindVertexArray",) in rest:
            op, a = rest.pop(("bindVertexArray",))
            self._emit(op, **a)
        textures = sorted(k for k in rest if k[0] == "texture")
        for key in textures:
            self._emit("activeTexture", unit=key[1])
            op, a = rest.pop(key)
            self._emit(op, **a)
        active = rest.pop(("activeTexture",), ("activeTexture", {"unit": 0}))
        if textures or active[1]["unit"]:
            self._emit(active[0], **active[1])
        for key in sorted(rest, key=repr):
            op, a = rest[key]
            self._emit(op, **a)

    def _reset_state(self) -> None:
        """Commands that return every state the stream changed to GL's initial values."""
        dirty = self._dirty
        if self._vertex_array:   # the rest resets the default vertex array object's state
            self._emit("bindVertexArray", id=0)
        if ("texture",) in dirty:
            for unit in sorted(self._units | {0}):
                self._emit("activeTexture", unit=unit)
                for target in TEXTURE_TARGETS:
                    if target != "TEXTURE_3D_OES" or self._bound_3d:
                        self._emit("bindTexture", target=target, id=0)
            self._emit("activeTexture", unit=0)
        elif ("activeTexture",) in dirty:
            self._emit("activeTexture", unit=0)
        if ("useProgram",) in dirty:
            self._emit("useProgram", id=0)
        if ("bindBuffer",) in dirty:
            for target in BUFFER_TARGETS:
                self._emit("bindBuffer", target=target, id=0)
        if ("bindFramebuffer",) in dirty:
            self._emit("bindFramebuffer", id=0)
        if ("bindRenderbuffer",) in dirty:
            self._emit("bindRenderbuffer", id=0)
        for key in sorted(k for k in dirty if k[0] in ("attribArray", "vertexAttrib", "cap",
                                                       "hint", "pixelStorei")):
            if key[0] == "attribArray":
                self._emit("disableVertexAttribArray", index=key[1])
            elif key[0] == "vertexAttrib":
                self._emit("vertexAttrib", index=key[1], values=[0.0, 0.0, 0.0, 1.0])
            elif key[0] == "cap":
                self._emit("enable" if key[1] == "DITHER" else "disable", cap=key[1])
            elif key[0] == "hint":
                self._emit("hint", target=key[1], mode="DONT_CARE")
            else:
                self._emit("pixelStorei", pname=key[1],
                           value=0 if key[1] in UNPACK_SUBIMAGE else 4)
        for op, args in _DEFAULT_STATE.items():
            if (op,) in dirty:
                if op in ("viewport", "scissor"):
                    args = {"x": 0, "y": 0, "width": self.width, "height": self.height}
                self._emit(op, **args)
        self._reset_bindings()

    def _release_group(self, key: int) -> None:
        """Delete every object of a share group none of whose contexts is alive."""
        group = self._groups.pop(key, None)
        if group is None:
            return
        ops = {"buffer": "deleteBuffer", "texture": "deleteTexture",
               "framebuffer": "deleteFramebuffer", "renderbuffer": "deleteRenderbuffer",
               "vertex_array": "deleteVertexArray"}
        for kind, op in ops.items():
            for ident in sorted(group.names[kind].values()):
                self._emit(op, id=ident)
        for app in sorted(group.names["program"]):
            if app in group.linked:
                self._emit("deleteProgram", id=group.names["program"][app])


# The binding a deletion undoes in the context that deletes (the state shadow's entries).
_UNBINDS = {"deleteBuffer": "bindBuffer", "deleteTexture": "bindTexture",
            "deleteFramebuffer": "bindFramebuffer", "deleteRenderbuffer": "bindRenderbuffer",
            "deleteVertexArray": "bindVertexArray"}

# GL's initial value of each piece of state a context-switch reset may put back.
_DEFAULT_STATE: dict[str, dict] = {
    "depthFunc": {"func": "LESS"}, "depthMask": {"flag": True},
    "depthRangef": {"near": 0.0, "far": 1.0},
    "clearColor": {"red": 0.0, "green": 0.0, "blue": 0.0, "alpha": 0.0},
    "clearDepthf": {"depth": 1.0}, "clearStencil": {"s": 0},
    "colorMask": {"red": True, "green": True, "blue": True, "alpha": True},
    "blendFuncSeparate": {"src_rgb": "ONE", "dst_rgb": "ZERO", "src_alpha": "ONE",
                          "dst_alpha": "ZERO"},
    "blendEquationSeparate": {"mode_rgb": "FUNC_ADD", "mode_alpha": "FUNC_ADD"},
    "blendColor": {"red": 0.0, "green": 0.0, "blue": 0.0, "alpha": 0.0},
    "cullFace": {"mode": "BACK"}, "frontFace": {"mode": "CCW"},
    "viewport": {}, "scissor": {},
    "lineWidth": {"width": 1.0}, "polygonOffset": {"factor": 0.0, "units": 0.0},
    "stencilFuncSeparate": {"face": "FRONT_AND_BACK", "func": "ALWAYS", "ref": 0,
                            "mask": 0xFFFFFFFF},
    "stencilOpSeparate": {"face": "FRONT_AND_BACK", "fail": "KEEP", "zfail": "KEEP",
                          "zpass": "KEEP"},
    "stencilMaskSeparate": {"face": "FRONT_AND_BACK", "mask": 0xFFFFFFFF},
}
