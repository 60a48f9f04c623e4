"""tilesim: a tile-based mobile GPU simulator for OpenGL ES 2.0 command streams.

The distribution is laid out as the design card asks: ``render`` (functional tile-based
pipeline), ``shaders`` (the TGSI language), ``timing`` (time and energy models); this
package holds what they share: the array backend, errors, atomic output and the CLI.

The Python API (:mod:`tilesim.api`) is here too, loaded on first use so that importing a
light module such as ``tilesim.errors`` does not load the renderer:

    import tilesim
    frames = list(tilesim.render_frames("traces/bunny.tsim", frames=range(2), technique="re"))
    estimates = tilesim.estimate(frames)
"""

__version__ = "0.1.0"

_API = ("open_trace", "render_frames", "estimate", "open_results", "Trace", "FrameResult",
        "FrameEstimate", "StudyResults")
__all__ = ["__version__", *_API]


def __getattr__(name: str):
    if name in _API:
        from tilesim import api

        return getattr(api, name)
    raise AttributeError(f"module 'tilesim' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *_API])
