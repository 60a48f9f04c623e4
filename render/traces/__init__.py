"""Command streams on disk: tilesim's own trace format and real programs' captures.

    trace_file        the .tsim format (``TRACE_FORMAT.md``): lazy, validated reading; writing
    capture           running a GLES2 program under apitrace + Mesa (``tilesim capture``),
                      Mesa's frames of a capture (``tilesim reference``)
    apitrace_import   an apitrace capture -> a .tsim trace (``tilesim import``); the capture is
                      read with ``tilesim.shaders.trace_capture``'s checked reader

May import: ``render.gl``, ``tilesim.shaders`` and the ``tilesim`` base.
"""
