"""Which apitrace calls the importer skips or folds, and which draw or copy from a surface.

Both passes of ``tilesim import`` ask: the scan
(:func:`~tilesim.render.traces.apitrace_import.scan_calls`) counts the draws after the last
frame end, and the translator (:class:`~tilesim.render.traces.translator.Translator`) counts
each call it has no handler for as skipped (cannot change the image) or folded (its effect is
carried by other commands), and skips draws into a surface that is not shown. The lists live
here, apart from both, so that the translator's modules need not import the scan's.
"""

from __future__ import annotations

# Calls that cannot change what is drawn: skipped and counted. Names matched exactly, then by
# prefix (all glGet*/glIs*/egl* except those the translator handles).
SKIPPED_CALLS = frozenset({
    "glGetError", "glCheckFramebufferStatus", "glReadPixels", "glValidateProgram",
    "glReleaseShaderCompiler", "glShaderBinary", "glSampleCoverage", "glDiscardFramebufferEXT",
    "glInvalidateFramebuffer",
    "glGenQueriesEXT", "glDeleteQueriesEXT", "glBeginQueryEXT", "glEndQueryEXT",
    "glQueryCounterEXT", "glGenQueries", "glDeleteQueries", "glBeginQuery", "glEndQuery",
    "glPushGroupMarkerEXT", "glPopGroupMarkerEXT", "glInsertEventMarkerEXT",
    "glPushDebugGroup", "glPopDebugGroup", "glPushDebugGroupKHR", "glPopDebugGroupKHR",
    "glDebugMessageInsert", "glDebugMessageInsertKHR", "glDebugMessageControl",
    "glDebugMessageControlKHR", "glDebugMessageCallback", "glDebugMessageCallbackKHR",
    "glObjectLabel", "glObjectLabelKHR", "glObjectPtrLabel", "glObjectPtrLabelKHR",
    "glLabelObjectEXT", "glStringMarkerGREMEDY", "glFrameTerminatorGREMEDY",
})
SKIPPED_PREFIXES = ("glGet", "glIs", "egl")
# Calls that produce no command of their own; their effect is carried by other commands.
FOLDED_CALLS = frozenset({
    "glCreateShader", "glShaderSource", "glCompileShader", "glAttachShader", "glDetachShader",
    "glDeleteShader", "glBindAttribLocation", "glCreateProgram", "glGetUniformLocation",
    "glMapBufferOES", "glMapBufferRangeEXT", "glMapBufferRange", "glUnmapBufferOES",
    "glUnmapBuffer", "glFlushMappedBufferRangeEXT", "glFlushMappedBufferRange",
    "eglCreateContext", "eglMakeCurrent", "eglDestroyContext",
    "eglCreateWindowSurface", "eglCreatePbufferSurface", "eglCreatePlatformWindowSurface",
    "eglCreatePlatformWindowSurfaceEXT",
})
FRAME_END_SWAPS = ("eglSwapBuffers", "eglSwapBuffersWithDamageKHR", "eglSwapBuffersWithDamageEXT")


def skip_kind(name: str) -> str | None:
    """'skipped' (cannot change the image), 'folded' (no command of its own) or None."""
    if name in FOLDED_CALLS:
        return "folded"
    if name in FRAME_END_SWAPS:
        return None
    if name in SKIPPED_CALLS or name.startswith(SKIPPED_PREFIXES):
        return "skipped"
    return None


DRAW_CALLS = frozenset({"glDrawArrays", "glDrawElements", "glClear"})
OFF_SURFACE_READS = frozenset({"glCopyTexImage2D", "glCopyTexSubImage2D",
                               "glCopyTexSubImage3DOES", "glCopyTexSubImage3D"})
