"""tilesim: a tile-based mobile GPU simulator for OpenGL ES 2.0 command streams.

The distribution is laid out as the design card asks: ``render`` (functional tile-based
pipeline), ``shaders`` (the TGSI language), ``timing`` (time and energy models); this
package holds what they share: the array backend, errors, atomic output and the CLI.
"""

__version__ = "0.1.0"
