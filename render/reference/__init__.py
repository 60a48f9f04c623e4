"""The reference driver: tilesim's commands replayed on Mesa (softpipe or llvmpipe) in a child
process, for reference images and Mesa's own fragment counts.

    replay_gl   the replay of a command stream on Mesa, in a child process (its environment,
                EGL context, GL entry points and info logs come from ``tilesim.mesa``)

May import: ``render.traces``, ``render.gl``, ``tilesim.shaders`` and the ``tilesim`` base.
"""
