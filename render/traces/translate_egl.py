"""EGL calls: contexts, their share groups, making one current, and swaps that end frames.

eglCreateContext / eglDestroyContext keep the share groups (EGL 1.4 §3.7.1) whose object names
the GL handlers map; eglMakeCurrent switches the stream's one GL state between contexts
(:mod:`~tilesim.render.traces.translate_contexts`); eglSwapBuffers of the surface shown ends a
frame. Separate from the GL domains: EGL calls name no GL object; they decide which context's
state and which share group's objects the GL calls act on.
"""

from __future__ import annotations

from tilesim.render.traces.translate_plumbing import _Group


class EglCalls:
    """Handlers of the EGL calls that matter to the stream.

    A mixin of :class:`~tilesim.render.traces.translator.Translator`, which provides the
    plumbing (:mod:`~tilesim.render.traces.translate_plumbing`) and the other domains'
    helpers.
    """

    def _eglCreateContext(self, call):
        ctx = self._args.ret_handle()
        share = self._args.handle("share_context")
        root = self._share_root.get(share, share) if share else ctx
        self._share_root[ctx] = root
        self._groups.setdefault(root, _Group()).contexts.add(ctx)

    def _eglDestroyContext(self, call):
        ctx = self._args.handle("ctx")
        self._destroyed.add(ctx)
        if ctx != self._owner:
            self._forget_context(ctx)

    def _forget_context(self, ctx: int) -> None:
        root = self._share_root.get(ctx, ctx)
        group = self._groups.get(root)
        if group is None:
            return
        group.contexts.discard(ctx)
        if not group.contexts:
            self._release_group(root)

    _BINDINGS = ("_array_buffer", "_element_buffer", "_program", "_pending_delete",
                 "_attrib_state", "_attrib_enabled", "_vertex_array", "_vertex_arrays",
                 "_units")

    def _eglMakeCurrent(self, call):
        """A context made current (EGL 1.4 §3.7.3). The stream holds one GL state: a context
        made current after another gets the state reset to GL's initial values, then, if it
        was current before, its own state put back from its shadow (:meth:`_remember`);
        objects stay shared per share group (§3.7.1). The window is the first surface
        drawn to (:func:`scan_calls`' main surface); a context may be current on another
        surface (a loader's pbuffer) as long as it draws nothing into its default
        framebuffer there."""
        ctx = self._args.handle("ctx")
        draw = self._args.handle("draw")
        if draw and self._surface is None:
            self._surface = draw
        self._current_draw = draw or None
        if ctx == 0 or ctx == self._owner:
            return  # releasing a context keeps its state for when it comes back
        previous = self._owner
        if previous is not None:
            bookkeeping = {name: getattr(self, name) for name in self._BINDINGS}
            self._saved[previous] = (self._shadow, bookkeeping)
            self._shadow = {}
            self._reset_state()
            if previous in self._destroyed:
                self._forget_context(previous)
                self._saved.pop(previous, None)
        self._owner = ctx
        self._used_contexts.add(ctx)
        root = self._share_root.setdefault(ctx, ctx)
        group = self._groups.setdefault(root, _Group())
        group.contexts.add(ctx)
        self._group_key = root
        self._shadow = {}
        saved = self._saved.pop(ctx, None)
        if saved is not None:
            shadow, bookkeeping = saved
            self._restore_state(shadow)
            for name, value in bookkeeping.items():
                setattr(self, name, value)

    def _eglSwapBuffers(self, call):
        if self.scan.frame_end == "eglSwapBuffers" and \
                self.scan.main_surface in (None, self._args.handle("surface")):
            return self._end_frame()
        return None

    _eglSwapBuffersWithDamageKHR = _eglSwapBuffers
    _eglSwapBuffersWithDamageEXT = _eglSwapBuffers
