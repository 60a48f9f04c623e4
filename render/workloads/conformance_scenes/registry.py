"""The conformance scene registry: :class:`Scene`, ``SCENES`` (by name, in the order the
scene modules register them), the :func:`scene` decorator and :func:`record_scene`."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from tilesim.errors import InputError
from tilesim.render.gl.commands import Command, Recorder

GLMARK2 = Path("/usr/share/glmark2")


@dataclass(frozen=True)
class Scene:
    """A conformance scene: ``build(gl)`` records its frames; ``size`` is the default
    (width, height) in pixels; ``covers`` says what it exercises; ``mediump``: how tilesim
    computes mediump arithmetic for it unless the caller says ("fp16" for a scene about
    precision, which llvmpipe computes in 16-bit floats; None: the renderer's default)."""

    name: str
    build: Callable[[Recorder], None]
    size: tuple[int, int]
    covers: str
    mediump: str | None = None


SCENES: dict[str, Scene] = {}


def scene(name: str, size: tuple[int, int] = (128, 128), mediump: str | None = None):
    """Register the decorated ``scene_<name>(gl)`` as scene ``name`` of default ``size`` (and
    ``mediump`` mode, see :class:`Scene`); its docstring's first line says what it covers."""
    def register_scene(fn):
        doc = (fn.__doc__ or "").strip().splitlines()
        SCENES[name] = Scene(name, fn, size, doc[0] if doc else name, mediump)
        return fn
    return register_scene


def record_scene(name: str, size: tuple[int, int] | None = None
                 ) -> tuple[list[list[Command]], int, int]:
    """Record scene ``name``: (frames of commands, width, height)."""
    found = SCENES.get(name)
    if found is None:
        raise InputError(f"unknown conformance scene {name!r}; scenes: {', '.join(SCENES)}")
    width, height = size or found.size
    gl = Recorder(width, height, name=f"conformance scene {name}")
    found.build(gl)
    frames = gl.recorded_frames()
    if not frames:
        raise AssertionError(f"scene {name} recorded no frame")  # pragma: no cover
    return frames, width, height
