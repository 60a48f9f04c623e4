"""What a study may watch of a render: frames, commands and passes, as they happen.

The renderer calls a :class:`RenderObserver` (the counterpart of the Mesa replayer's
``ReplayObserver``) at the start of every frame, around every command, at the end of every
render pass and at the end of every frame. An observer only watches: it gets the frame and
command numbers, the command, the GL state and the counters, never the renderer. Timing,
progress bars and per-draw statistics (``tilesim characterize``) are observers.
"""

from __future__ import annotations


class RenderObserver:
    """Hooks a render calls; each does nothing here. ``frame`` and ``index`` count from 0
    (``index`` is the command's position in its frame)."""

    def begin_frame(self, frame: int) -> None:
        pass

    def before_command(self, frame: int, index: int, command, state, counters) -> None:
        """Before ``command`` runs; ``state`` is the GL state (``gl.state.GLState``) it runs
        on, ``counters`` the frame's counters so far (``counters.FrameCounters``)."""

    def after_command(self, frame: int, index: int, command, state, counters) -> None:
        pass

    def end_pass(self, frame: int, counters) -> None:
        """A render pass ended; ``counters`` are its per-tile counters (on the host)."""

    def end_frame(self, result) -> None:
        """Frame ``result`` (``renderer.FrameResult``) is complete, as a technique released
        it (memoization may release a frame after the next one is rendered)."""
