"""The OpenGL ES 2.0 API as tilesim sees it: what a program asks for, and the state it leaves.

    commands   the command schema (every GL call a trace may hold) and the WebGL-style recorder
    state      the GLES2 state machine: objects, bindings, fragment state, linked programs
    textures   texture objects: images per level and face, completeness, mipmap generation
    uniforms   uniform storage and its layout for the shader interpreter

May import: ``tilesim.shaders`` and the ``tilesim`` base. Nothing of the rest of ``render``.
"""
