"""The conformance scenes as data: small GLES2 programs, each recorded once with the
WebGL-style :class:`tilesim.render.gl.commands.Recorder`, that ``tilesim conformance``
(:mod:`tilesim.studies.conformance`) renders with tilesim and with Mesa and compares.

A scene is a function ``scene_<name>(gl)`` registered in ``SCENES`` with its default size;
its docstring's first line says what it exercises. :func:`record_scene` records one into
frames of commands. They cover the OpenGL ES 2.0 pipeline feature by feature, a module each:

    registry         Scene, SCENES, the scene decorator, record_scene
    helpers          shaders, draws, quads, colors, matrices, textures the scenes share
    rasterization    fill-rule edge cases, tile boundaries, tiny and sliver triangles
    clipping_depth   clipping, culling and winding, viewport and depth range, depth functions
    blending         every blend factor and equation, color and depth masks, scissor
    primitives       strips and fans, indexed draws, client-side arrays
    shader_features  gl_FragCoord, gl_FrontFacing, discard; a 70k triangle mesh (the bunny)
    textures         filtering, mipmaps, wrapping, formats, cube maps, render-to-texture
    depth_textures   a shadow map, copies from the framebuffer into textures
    multipass        render-to-texture with mipmaps of rendered textures, post-processing,
                     re-attached textures
    limits           texture units beyond the eighth, 255-pixel points

May import: ``render.gl``, ``render.traces``, ``tilesim.shaders`` and the ``tilesim`` base.
"""

from __future__ import annotations

# The scene modules register their scenes when imported, in this order (the order of SCENES,
# in which `tilesim conformance` runs and lists them).
# isort: off
from tilesim.render.workloads.conformance_scenes import rasterization  # noqa: F401
from tilesim.render.workloads.conformance_scenes import clipping_depth  # noqa: F401
from tilesim.render.workloads.conformance_scenes import blending  # noqa: F401
from tilesim.render.workloads.conformance_scenes import primitives  # noqa: F401
from tilesim.render.workloads.conformance_scenes import shader_features  # noqa: F401
from tilesim.render.workloads.conformance_scenes import textures  # noqa: F401
from tilesim.render.workloads.conformance_scenes import depth_textures  # noqa: F401
from tilesim.render.workloads.conformance_scenes import multipass  # noqa: F401
from tilesim.render.workloads.conformance_scenes import limits  # noqa: F401
# isort: on
from tilesim.render.workloads.conformance_scenes.registry import (
    GLMARK2,
    SCENES,
    Scene,
    record_scene,
    scene,
)

__all__ = ["GLMARK2", "SCENES", "Scene", "record_scene", "scene"]
