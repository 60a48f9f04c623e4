"""The TGSI shader language: parser, vectorized interpreter, statistics, GLSL->TGSI.

Typical use::

    from tilesim.shaders import parse_file, Interpreter
    program = parse_file("shaders/corpus/<id>/fragment.tgsi")
    execution = Interpreter(program).run(inputs, constants, sampler=my_sampler)

May import: the ``tilesim`` base only (backend, errors, atomic output). Mesa (GLSL -> TGSI)
runs in child processes (``mesa_softpipe_child``, ``mesa_fullscreen``).
"""

from tilesim.shaders.interpreter import Execution, Interpreter, interpret
from tilesim.shaders.ir import Program
from tilesim.shaders.parser import parse, parse_file
from tilesim.shaders.stats import DynamicStats, StaticStats, static_stats

__all__ = ["DynamicStats", "Execution", "Interpreter", "Program", "StaticStats", "interpret",
           "parse", "parse_file", "static_stats"]
