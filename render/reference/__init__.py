"""The reference driver: tilesim's commands replayed on Mesa (softpipe or llvmpipe) in a child
process, for reference images and Mesa's own fragment counts.

    replay_gl   the GL function table, the replay of a command stream, the child process

May import: ``render.traces``, ``render.gl``, ``tilesim.shaders`` and the ``tilesim`` base.
"""
