"""The TGSI shader language: parser, vectorized interpreter, statistics, GLSL->TGSI.

Typical use::

    from shaders import parse_file, Interpreter
    program = parse_file("shaders/corpus/<id>/fragment.tgsi")
    execution = Interpreter(program).run(inputs, constants, sampler=my_sampler)
"""

from .interpreter import Execution, Interpreter, interpret
from .ir import Program
from .parser import parse, parse_file
from .stats import DynamicStats, StaticStats, static_stats

__all__ = ["DynamicStats", "Execution", "Interpreter", "Program", "StaticStats", "interpret",
           "parse", "parse_file", "static_stats"]
