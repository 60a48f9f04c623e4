"""The shader corpus: TGSI and interface of every program glmark2-es2 and es2gears compile.

Layout (``shaders/corpus/``)::

    index.json                      programs, their hashes and which benchmark used them
    <program_id>/vertex.glsl        the exact strings the application passed to glShaderSource
    <program_id>/fragment.glsl
    <program_id>/vertex.tgsi        what Mesa softpipe printed
    <program_id>/fragment.tgsi
    <program_id>/interface.json     see tilesim.shaders.glsl_compile

``program_id`` is ``<app>-<scene>-<options>-<first 8 hex of sha256>``, named after the first
benchmark that linked it; ``sha256`` hashes the canonical JSON of the program's inputs
(``{"vertex", "fragment", "attrib_bindings"}``), so identical source pairs are stored once.

:func:`capture_corpus` runs every benchmark in :data:`GLMARK2_BENCHMARKS` (at glmark2's default
800x600 window, plus :data:`GLMARK2_OTHER_WINDOWS`) and es2gears under Xvfb + apitrace, recovers
the linked sources from the traces and compiles them;
:func:`recompile_corpus` recompiles the committed GLSL only (fast) and either rewrites or checks
the TGSI and interface files.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from tilesim.atomic import write_json
from tilesim.errors import InputError, ToolMissing
from tilesim.shaders.glsl_compile import OUTPUT_FILES, CompiledProgram, ProgramSource, compile_many
from tilesim.shaders.trace_capture import LinkedProgram, capture_trace, linked_programs, stop_after

CORPUS_DIR = Path(__file__).resolve().parent / "corpus"
INDEX_NAME = "index.json"
CORPUS_FORMAT = "tilesim-shader-corpus"
CORPUS_VERSION = 1

GLMARK2 = "glmark2-es2"
GLMARK2_WINDOW = "800x600"   # glmark2's default window size
GLMARK2_FRAMES = 2           # programs are made during scene setup; two frames are plenty
ES2GEARS_CANDIDATES = ("es2gears_x11", "es2gears_x11.x86_64-linux-gnu", "es2gears")
ES2GEARS_SECONDS = 3

# glmark2 2023.01's default benchmark list, verbatim. (The loop scene's options are really
# fragment-loop / vertex-loop: --list-scenes mislabels them *-function, which glmark2 rejects.)
GLMARK2_DEFAULT_BENCHMARKS = [
    "build:use-vbo=false",
    "build:use-vbo=true",
    "texture:texture-filter=nearest",
    "texture:texture-filter=linear",
    "texture:texture-filter=mipmap",
    "shading:shading=gouraud",
    "shading:shading=blinn-phong-inf",
    "shading:shading=phong",
    "shading:shading=cel",
    "bump:bump-render=high-poly",
    "bump:bump-render=normals",
    "bump:bump-render=height",
    "effect2d:kernel=0,1,0;1,-4,1;0,1,0;",
    "effect2d:kernel=1,1,1,1,1;1,1,1,1,1;1,1,1,1,1;",
    "pulsar:quads=5:texture=false:light=false",
    "desktop:windows=4:effect=blur:blur-radius=5:passes=1:separable=true",
    "desktop:windows=4:effect=shadow",
    "buffer:update-fraction=0.5:update-dispersion=0.9:columns=200:update-method=map:"
    "interleave=false",
    "buffer:update-fraction=0.5:update-dispersion=0.9:columns=200:update-method=subdata:"
    "interleave=false",
    "buffer:update-fraction=0.5:update-dispersion=0.9:columns=200:update-method=map:"
    "interleave=true",
    "ideas:speed=duration",
    "jellyfish",
    "terrain",
    "shadow",
    "refract",
    "conditionals:vertex-steps=0:fragment-steps=0",
    "conditionals:vertex-steps=0:fragment-steps=5",
    "conditionals:vertex-steps=5:fragment-steps=0",
    "function:fragment-steps=5:fragment-complexity=low",
    "function:fragment-steps=5:fragment-complexity=medium",
    "loop:vertex-steps=5:fragment-steps=5:fragment-loop=false",
    "loop:vertex-steps=5:fragment-steps=5:fragment-uniform=false",
    "loop:vertex-steps=5:fragment-steps=5:fragment-uniform=true",
]

# Further values of every option that changes shader code (numeric options: the defaults plus a
# small spread), scenes' defaults, the text renderer (show-fps/title) and precision variants.
GLMARK2_EXTRA_BENCHMARKS = [
    "texture",
    "texture:texture-filter=linear-shader",
    "texture:texgen=true",
    "texture:texture-filter=linear-shader:texgen=true",
    "shading",
    "shading:shading=phong:num-lights=2",
    "shading:shading=phong:num-lights=4",
    "bump",
    "bump:bump-render=normals-tangent",
    "effect2d",
    "effect2d:kernel=1,2,1;2,4,2;1,2,1;",
    "effect2d:kernel=0,1,0;1,-4,1;0,1,0;:normalize=false",
    "effect2d:kernel=1,1,1,1,1;1,1,1,1,1;1,1,1,1,1;1,1,1,1,1;1,1,1,1,1;",
    "pulsar:light=true",
    "pulsar:texture=true",
    "pulsar:light=true:texture=true",
    "desktop",
    "desktop:effect=blur:blur-radius=5:separable=false",
    "desktop:effect=blur:blur-radius=1",
    "desktop:effect=blur:blur-radius=3:separable=false",
    "desktop:effect=blur:blur-radius=10",
    "desktop:effect=shadow:shadow-size=40",
    "ideas",
    "terrain:bloom=false",
    "terrain:tilt-shift=false",
    "terrain:bloom=false:tilt-shift=false",
    "refract:index=1.5",
    "conditionals",
    "conditionals:vertex-steps=3:fragment-steps=3",
    "conditionals:vertex-steps=5:fragment-steps=5:vertex-conditionals=false:"
    "fragment-conditionals=false",
    "function",
    "function:fragment-steps=5:fragment-function=false",
    "function:vertex-steps=5:vertex-complexity=medium",
    "function:vertex-steps=5:vertex-function=false",
    "loop",
    "loop:vertex-steps=5:fragment-steps=5:vertex-loop=false",
    "loop:vertex-steps=5:fragment-steps=5:vertex-uniform=false",
    "clear",
    "clear:show-fps=true:title=tilesim",
    "shading:shading=phong:fragment-precision=highp,highp,highp,highp",
    "shading:shading=gouraud:vertex-precision=mediump,mediump,mediump,mediump",
    "texture:fragment-precision=lowp,lowp,lowp,lowp",
]

GLMARK2_BENCHMARKS = GLMARK2_DEFAULT_BENCHMARKS + GLMARK2_EXTRA_BENCHMARKS

# The desktop and terrain blur shaders bake the texel step (1/width, 1/height) into the source, so
# they are also captured at the 1196x768 screen of the simulated GPU (DESIGN.md section 6).
GLMARK2_OTHER_WINDOWS = [("desktop", "1196x768"),
                         ("desktop:effect=blur:blur-radius=5:separable=false", "1196x768"),
                         ("terrain", "1196x768")]

Progress = Callable[[str], None]


def _stderr_progress(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


@dataclass(frozen=True)
class Run:
    """One captured run: glmark2 with one benchmark and window size, or es2gears."""

    app: str
    benchmark: str
    window: str | None

    def describe(self) -> str:
        if self.app != GLMARK2:
            return self.app
        return f"{self.app} {self.benchmark or '(default)'} at {self.window}"


@dataclass
class Usage:
    """One link of a program by one run."""

    run: Run
    linked: LinkedProgram

    def record(self) -> dict:
        return {"app": self.run.app, "benchmark": self.run.benchmark, "window": self.run.window,
                "program": self.linked.program, "link_call": self.linked.call}


def program_sha256(vertex: str, fragment: str, attrib_bindings: dict[str, int]) -> str:
    """Hash of a program's compile inputs (the canonical JSON described in the docstring)."""
    canonical = json.dumps({"vertex": vertex, "fragment": fragment,
                            "attrib_bindings": dict(sorted(attrib_bindings.items()))},
                           sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def program_id(run: Run, sha256: str) -> str:
    """``glmark2-shading-phong-1a2b3c4d``: app, scene, [window,] option values, short hash."""
    parts = [run.app.removesuffix("-es2")]
    if run.benchmark:
        scene, *options = run.benchmark.split(":")
        parts.append(scene)
        if run.window not in (None, GLMARK2_WINDOW):
            parts.append(run.window)
        for option in options:
            key, _, value = option.partition("=")
            parts.append(value if key == scene else f"{key}-{value}")
    slug = re.sub(r"[^a-z0-9]+", "-", "-".join(parts).lower()).strip("-")
    if len(slug) > 48:
        slug = slug[:48].rstrip("-")
    return f"{slug}-{sha256[:8]}"


def _glmark2_command(benchmark: str, window: str) -> list[str]:
    return [GLMARK2, "-s", window, "-b", f"{benchmark}:nframes={GLMARK2_FRAMES}"]


def capture_glmark2(benchmark: str, workdir: Path, *,
                    window: str = GLMARK2_WINDOW) -> list[LinkedProgram]:
    """Trace one glmark2 benchmark and return the programs it linked."""
    if shutil.which(GLMARK2) is None:
        raise ToolMissing("glmark2-es2 is not installed (Debian packages glmark2-es2-x11 "
                          "glmark2-data)")
    trace = workdir / "glmark2.trace"
    proc = capture_trace(_glmark2_command(benchmark, window), trace)
    output = (proc.stdout + proc.stderr).decode("utf-8", "replace")
    warnings = [line for line in output.split("\n") if line.startswith(("Warning", "Error"))]
    if proc.returncode != 0 or warnings:
        raise InputError(f"glmark2 rejected the benchmark (exit {proc.returncode}): "
                         + "; ".join(warnings or output.strip().split("\n")[-3:]),
                         source=benchmark)
    return linked_programs(trace)


def capture_es2gears(workdir: Path) -> list[LinkedProgram]:
    """Trace es2gears for a few seconds (it never exits by itself)."""
    exe = next((shutil.which(name) for name in ES2GEARS_CANDIDATES if shutil.which(name)), None)
    if exe is None:
        raise ToolMissing("es2gears_x11 is not installed (Debian package mesa-utils-bin)")
    trace = workdir / "es2gears.trace"
    capture_trace([*stop_after(ES2GEARS_SECONDS), exe], trace)
    return linked_programs(trace)


def capture_corpus(corpus_dir: Path = CORPUS_DIR, *, progress: Progress = _stderr_progress,
                   benchmarks: list[str] | None = None, with_es2gears: bool = True) -> dict:
    """Capture every benchmark, compile the distinct programs, write the corpus and its index."""
    runs = [Run(GLMARK2, b, GLMARK2_WINDOW) for b in benchmarks or GLMARK2_BENCHMARKS]
    if benchmarks is None:
        runs += [Run(GLMARK2, b, window) for b, window in GLMARK2_OTHER_WINDOWS]
    if with_es2gears:
        runs.append(Run("es2gears", "", None))
    usages: list[Usage] = []
    per_run: dict[Run, int] = {}
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="tilesim-capture-") as tmp:
        for number, run in enumerate(runs, 1):
            t0 = time.monotonic()
            linked = (capture_glmark2(run.benchmark, Path(tmp), window=run.window)
                      if run.app == GLMARK2 else capture_es2gears(Path(tmp)))
            usages += [Usage(run, lp) for lp in linked]
            per_run[run] = len(linked)
            progress(f"[{number}/{len(runs)}] {run.describe()}: {len(linked)} program(s) "
                     f"linked ({time.monotonic() - t0:.1f} s)")
    progress(f"capture took {time.monotonic() - started:.1f} s")
    programs: dict[str, dict] = {}  # sha256 -> index entry (insertion order = first use)
    for usage in usages:
        lp = usage.linked
        sha = program_sha256(lp.vertex, lp.fragment, lp.attrib_bindings)
        entry = programs.setdefault(sha, {
            "id": program_id(usage.run, sha), "sha256": sha,
            "attrib_bindings": lp.attrib_bindings, "used_by": [],
            "_sources": (lp.vertex, lp.fragment)})
        entry["used_by"].append(usage.record())
    sources = [ProgramSource(e["_sources"][0], e["_sources"][1], name=e["id"],
                             attrib_bindings=e["attrib_bindings"]) for e in programs.values()]
    t0 = time.monotonic()
    compiled = compile_many(sources)
    progress(f"compiled {len(compiled)} distinct programs in {time.monotonic() - t0:.1f} s")
    entries = []
    for entry in programs.values():
        entry.pop("_sources")
        entries.append(entry)
    users: dict[Run, set[str]] = {run: set() for run in runs}
    for entry in entries:
        for u in entry["used_by"]:
            users[Run(u["app"], u["benchmark"], u["window"])].add(entry["id"])
    benchmarks_index = [{"app": run.app, "benchmark": run.benchmark, "window": run.window,
                         "links": per_run[run], "programs": sorted(users[run])} for run in runs]
    index = _index(entries, benchmarks_index, compiled)
    _write_corpus(corpus_dir, index, compiled)
    return index


def _index(entries: list[dict], benchmarks: list[dict], compiled: list[CompiledProgram]) -> dict:
    mesa = ({"renderer": compiled[0].renderer, "version": compiled[0].version}
            if compiled else None)
    return {
        "format": CORPUS_FORMAT,
        "version": CORPUS_VERSION,
        "description": "GLSL ES 1.00 programs captured with apitrace from glmark2-es2 and "
                       "es2gears, compiled to TGSI by Mesa softpipe "
                       "(scripts/regenerate_corpus.py)",
        "mesa": mesa,
        "capture": {
            "glmark2_command": " ".join(_glmark2_command("BENCHMARK", "WINDOW")),
            "es2gears_command": f"timeout -s INT {ES2GEARS_SECONDS} es2gears_x11",
            "trace_reader": "apitrace pickle through a restricted unpickler",
        },
        "programs": entries,
        "benchmarks": benchmarks,
    }


def _write_corpus(corpus_dir: Path, index: dict, compiled: list[CompiledProgram]) -> None:
    """Write program folders, then the index; drop folders of programs no longer listed."""
    corpus_dir.mkdir(parents=True, exist_ok=True)
    for entry, program in zip(index["programs"], compiled, strict=True):
        program.write(corpus_dir / entry["id"])
    write_json(corpus_dir / INDEX_NAME, index)
    keep = {e["id"] for e in index["programs"]}
    for child in corpus_dir.iterdir():
        # Only folders that look like ours (nothing but corpus files) are removed.
        if (child.is_dir() and child.name not in keep
                and {p.name for p in child.iterdir()} <= set(OUTPUT_FILES)):
            shutil.rmtree(child)


def load_index(corpus_dir: Path = CORPUS_DIR) -> dict:
    """Read and check index.json."""
    path = corpus_dir / INDEX_NAME
    try:
        index = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError("no corpus index (run scripts/regenerate_corpus.py --capture)",
                         source=str(path)) from None
    except json.JSONDecodeError as exc:
        raise InputError(f"not JSON: {exc.msg}", source=str(path), line=exc.lineno,
                         column=exc.colno) from None
    if index.get("format") != CORPUS_FORMAT or index.get("version") != CORPUS_VERSION:
        raise InputError(f"expected format {CORPUS_FORMAT} version {CORPUS_VERSION}",
                         source=str(path))
    return index


def corpus_sources(corpus_dir: Path = CORPUS_DIR) -> tuple[dict, list[ProgramSource]]:
    """The index and the committed GLSL of every corpus program (hashes checked)."""
    index = load_index(corpus_dir)
    sources = []
    for entry in index["programs"]:
        folder = corpus_dir / entry["id"]
        texts = []
        for name in ("vertex.glsl", "fragment.glsl"):
            try:
                texts.append((folder / name).read_bytes().decode("utf-8"))
            except FileNotFoundError:
                raise InputError("missing corpus file", source=str(folder / name)) from None
        if program_sha256(texts[0], texts[1], entry["attrib_bindings"]) != entry["sha256"]:
            raise InputError("sources do not match the sha256 in index.json",
                             source=str(folder))
        sources.append(ProgramSource(texts[0], texts[1], name=entry["id"],
                                     attrib_bindings=entry["attrib_bindings"],
                                     vertex_origin=str(folder / "vertex.glsl"),
                                     fragment_origin=str(folder / "fragment.glsl")))
    return index, sources


def recompile_corpus(corpus_dir: Path = CORPUS_DIR, *, check: bool = False,
                     progress: Progress = _stderr_progress) -> list[str]:
    """Recompile the committed GLSL of every program.

    With ``check`` nothing is written and the differences from the committed files are returned
    (an empty list means byte-identical); otherwise the TGSI, interface and index are rewritten
    and the list of files that changed is returned.
    """
    index, sources = corpus_sources(corpus_dir)
    t0 = time.monotonic()
    compiled = compile_many(sources)
    progress(f"recompiled {len(compiled)} programs in {time.monotonic() - t0:.1f} s")
    changes = []
    if compiled:
        mesa = {"renderer": compiled[0].renderer, "version": compiled[0].version}
        if mesa != index["mesa"]:
            changes.append(f"{INDEX_NAME}: Mesa {index['mesa']} -> {mesa}")
            index["mesa"] = mesa
    for source, program in zip(sources, compiled, strict=True):
        folder = corpus_dir / source.name
        for name, text in program.files().items():
            path = folder / name
            old = path.read_bytes().decode("utf-8") if path.exists() else None
            if old != text:
                changes.append(str(path.relative_to(corpus_dir)))
    if not check:
        for source, program in zip(sources, compiled, strict=True):
            program.write(corpus_dir / source.name)
        write_json(corpus_dir / INDEX_NAME, index)
    return changes
