# PYTHON_ARGCOMPLETE_OK   (argcomplete: the entry point completes, see _complete)
"""The ``tilesim`` command line. Each package registers its own command group.

Exit codes: 0 success, 1 a check or comparison failed, 2 bad usage or input, 130 interrupted
(Ctrl-C), 143 terminated (SIGTERM).
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
import traceback
import warnings

from tilesim import __version__
from tilesim.errors import EXIT_BAD_INPUT, TilesimError
from tilesim.memory_budget import BUDGET_ENV
from tilesim.options import byte_size


def build_parser() -> argparse.ArgumentParser:
    # Imported here, not at the top: `tilesim --version` and the error path stay fast.
    from tilesim.cli import (
        capture,
        characterize,
        coherence,
        compare,
        conformance,
        core,
        dsr_search,
        estimate,
        goldens,
        import_trace,
        predict,
        reference_timing,
        render,
        run,
        schedule,
        shader,
        suite,
    )

    parser = argparse.ArgumentParser(
        prog="tilesim",
        description="Tile-based mobile GPU simulator for OpenGL ES 2.0 command streams.")
    parser.add_argument("--version", action="version", version=f"tilesim {__version__}")
    parser.add_argument("--backend", choices=["numpy", "cupy"], default="numpy",
                        help="array backend for numeric work (default numpy)")
    parser.add_argument("--memory-budget", type=_size, metavar="SIZE",
                        help="memory one input may ask for (framebuffers, textures, trace "
                             "blobs), e.g. 8G; default half of physical memory")
    parser.add_argument("--instruction-budget", type=_positive, metavar="N",
                        help="instructions one shader invocation may execute across loops and "
                             "calls (default 262144)")
    parser.add_argument("--call-depth", type=_positive, metavar="N",
                        help="subroutine calls one shader invocation may nest (default 64)")
    parser.add_argument("--threads", type=_positive, metavar="N",
                        help="threads the compiled kernels of one render use (default every "
                             "core; a study's worker processes share the cores)")
    parser.add_argument("--debug", action="store_true",
                        help="print the Python traceback of an error")
    parser.add_argument("--print-completion", action=_PrintCompletion, metavar="SHELL",
                        choices=("bash", "zsh", "fish", "tcsh", "powershell"),
                        help="print the shell code of tab completion (needs the completion "
                             "extra), e.g. eval \"$(tilesim --print-completion bash)\"")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    # The order of `tilesim --help`.
    for module in (run, shader, render, characterize, conformance, goldens, capture,
                   import_trace, compare, suite, coherence, dsr_search, estimate,
                   reference_timing, predict, core, schedule):
        module.register(sub)
    _complete(parser)
    return parser


def _complete(parser: argparse.ArgumentParser) -> None:
    """Tab completion when the shell asks for it (argcomplete's _ARGCOMPLETE variable: it
    prints the completions and exits); nothing otherwise, or without argcomplete."""
    if "_ARGCOMPLETE" not in os.environ:
        return
    try:
        import argcomplete
    except ModuleNotFoundError:
        return
    from tilesim.options import technique_name
    from tilesim.studies.defaults import DEFAULT_TECHNIQUES

    # the names an option takes (tilesim.options.name_argument's, the techniques)
    todo = [parser]
    while todo:
        for action in todo.pop()._actions:
            if isinstance(action, argparse._SubParsersAction):
                todo += action.choices.values()
            known = (("baseline", *DEFAULT_TECHNIQUES) if action.type is technique_name
                     else getattr(action.type, "known", None))
            if known:
                action.completer = argcomplete.completers.ChoicesCompleter(known)
    argcomplete.autocomplete(parser)


class _PrintCompletion(argparse.Action):
    """``--print-completion SHELL``: argcomplete's shell code for ``tilesim`` (as
    ``register-python-argcomplete tilesim`` prints it), then exit."""

    def __call__(self, parser, namespace, values, option_string=None):
        try:
            import argcomplete
        except ModuleNotFoundError:
            print("tilesim: error: tab completion needs argcomplete: "
                  "pip install 'tilesim[completion]'", file=sys.stderr)
            parser.exit(EXIT_BAD_INPUT)
        sys.stdout.write(argcomplete.shellcode(["tilesim"], shell=values))
        parser.exit(0)


def _size(text: str) -> int:
    try:
        return byte_size(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised where Python raises Ctrl-C's KeyboardInterrupt: the same clean-up
    (temporaries removed, a Dask cluster closed) and one line, where the default action would
    end the process at once, its Dask workers left to notice."""


def _terminate(signum, frame) -> None:
    raise Terminated()


def main(argv: list[str] | None = None) -> int:
    """Run the command ``argv`` (default: the process's arguments); its exit code. Ctrl-C and
    SIGTERM, from the loading of the commands on, are one line and exit 130 / 143."""
    # Main thread only (where Python runs handlers; tests may call main from others).
    on_main = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, _terminate) if on_main else None
    try:
        return _run(argv)
    except KeyboardInterrupt as exc:
        print("tilesim: interrupted", file=sys.stderr)
        return 128 + (signal.SIGTERM if isinstance(exc, Terminated) else signal.SIGINT)
    finally:
        if on_main:
            signal.signal(signal.SIGTERM, previous if previous is not None else signal.SIG_DFL)


def _run(argv: list[str] | None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    # Here, not at the top: --help and --version need neither.
    from tilesim.backend import BackendUnavailable, set_backend
    from tilesim.jit import THREADS_ENV
    from tilesim.shaders.interpreter import BUDGET_ENV as INSTRUCTION_BUDGET_ENV
    from tilesim.shaders.interpreter import CALL_DEPTH_ENV

    # In the environment, so that worker and replay processes keep the same limits.
    for env, value in ((BUDGET_ENV, args.memory_budget),
                       (INSTRUCTION_BUDGET_ENV, args.instruction_budget),
                       (CALL_DEPTH_ENV, args.call_depth), (THREADS_ENV, args.threads)):
        if value is not None:
            os.environ[env] = str(value)
    try:
        with warnings.catch_warnings():
            if not args.debug:
                warnings.showwarning = _show_warning
            set_backend(args.backend)
            _check_environment()
            return int(args.func(args) or 0)
    except (TilesimError, BackendUnavailable) as exc:
        return _fail(args, str(exc), getattr(exc, "exit_code", EXIT_BAD_INPUT))
    except MemoryError:
        return _fail(args, "out of memory (lower the input's size, or the frames or workers "
                           "of the run)", EXIT_BAD_INPUT)
    except OSError as exc:
        # A file the command reads or writes: missing, a folder, read-only, disk full.
        where = f"{exc.filename}: " if exc.filename else ""
        return _fail(args, f"{where}{exc.strerror or exc}", EXIT_BAD_INPUT)


def _check_environment() -> None:
    """The limits the environment sets (TILESIM_THREADS, TILESIM_INSTRUCTION_BUDGET,
    TILESIM_CALL_DEPTH, TILESIM_MEMORY_BUDGET), checked before the command starts: each is
    read where it is first used, and a render folder was made before TILESIM_THREADS=0 was
    refused. InputError naming the variable."""
    from tilesim.jit import threads
    from tilesim.memory_budget import memory_budget
    from tilesim.shaders.interpreter import BUDGET_ENV, CALL_DEPTH_ENV, _limit

    threads()
    memory_budget()
    for env in (BUDGET_ENV, CALL_DEPTH_ENV):
        _limit(env, 1)


def _show_warning(message, category, filename, lineno, file=None, line=None) -> None:
    """A warning as one line on stderr, like errors (where in tilesim's source it was raised
    is for --debug, which keeps Python's format)."""
    print(f"tilesim: warning: {message}", file=sys.stderr if file is None else file)


def _fail(args: argparse.Namespace, message: str, code: int) -> int:
    """One line on stderr (the traceback too with --debug); the exit code."""
    if args.debug:
        traceback.print_exc()
    print(f"tilesim: error: {message}", file=sys.stderr)
    return code

