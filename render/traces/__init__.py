"""Command streams on disk: tilesim's own trace format and real programs' captures.

    trace_file        the .tsim format (``TRACE_FORMAT.md``): lazy, validated reading; writing
    capture           running a GLES2 program under apitrace + Mesa (``tilesim capture``),
                      Mesa's frames of a capture (``tilesim reference``)
    apitrace_import   an apitrace capture -> a .tsim trace (``tilesim import``); the capture is
                      read with ``tilesim.shaders.trace_capture``'s checked reader
    translator        its second pass: apitrace calls -> commands, one mixin per GL domain in
                      ``translate_*`` (plumbing, contexts, egl, objects, buffers, textures,
                      texture_3d, programs, attributes, draws, fixed_function, framebuffers)
    call_kinds        the calls both passes skip, fold, or count as draws

May import: ``render.gl``, ``tilesim.shaders`` and the ``tilesim`` base.
"""
