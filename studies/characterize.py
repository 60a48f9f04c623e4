"""``tilesim characterize``: the workload characterization of Frame Coherence Tables 3.3 and 3.4 for
a trace.

The trace is rendered on the tile-based model (:class:`tilesim.render.pipeline.renderer.Renderer`,
command by command) and the columns come from its counters, as ratios of totals over the chosen
frames (so every "per X" value is weighted by X, and "per frame" values are means over frames):

Geometry (Frame Coherence Table 3.3)
    draw calls per frame         draw_calls
    vertices per draw call       vertices_fetched / draw_calls (distinct vertices of a draw)
    attributes per vertex        vertex-shader input registers of the draw's program,
                                 weighted by the draw's vertices (from the program)
    VS instructions per vertex   static: instructions of the draw's vertex program (END left
                                 out), mean over draws (from the program); dynamic:
                                 (vs_alu + vs_tex + vs_flow) / vertices_shaded
    primitives per draw call     prims_assembled / draw_calls
    primitives per tile          prims_binned / tiles, over every tile of every render pass

Raster (Frame Coherence Table 3.4)
    fragments per primitive      fragments_rasterized / prims_rasterized (set-up triangles)
    FS instructions per fragment static: instructions of the draw's fragment program, mean over
                                 draws (from the program); dynamic: (fs_alu + fs_tex + fs_flow)
                                 / (4 * quads_shaded), per shader invocation (helper lanes of a
                                 quad run the program too)
    ALU:TEX ratio                fs_alu / fs_tex (dynamic, i.e. weighted by invocations)
    texels per fragment          texels_fetched / tex_samples: texels per texture instruction,
                                 001's definition (1 nearest, 4 bilinear, 8 trilinear)
    overshading                  fragments_shaded / pixels_written (FrameCounters.overshading)

Attributes per vertex and the static instruction counts are not in the counters (they are
properties of the programs): they are read from the program bound at each draw.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from tilesim.render.pipeline.observer import RenderObserver
from tilesim.render.replay import render_trace
from tilesim.render.traces.trace_file import Trace, open_trace
from tilesim.shaders.stats import static_stats

DRAWS = ("drawArrays", "drawElements")

# (key, label, format) of the columns, in 001's order.
GEOMETRY = (("draw_calls_per_frame", "draw calls per frame", "{:.2f}"),
            ("vertices_per_draw", "vertices per draw call", "{:.2f}"),
            ("attributes_per_vertex", "attributes per vertex", "{:.2f}"),
            ("vs_instructions_static", "VS instructions (static, per draw)", "{:.2f}"),
            ("vs_instructions_per_vertex", "VS instructions per vertex (executed)", "{:.2f}"),
            ("primitives_per_draw", "primitives per draw call", "{:.2f}"),
            ("primitives_per_tile", "primitives per tile (binned)", "{:.2f}"))
RASTER = (("fragments_per_primitive", "fragments per primitive", "{:.2f}"),
          ("fs_instructions_static", "FS instructions (static, per draw)", "{:.2f}"),
          ("fs_instructions_per_fragment", "FS instructions per fragment (executed)",
           "{:.2f}"),
          ("alu_tex_ratio", "ALU:TEX ratio", "{:.2f}"),
          ("texels_per_fragment", "texels per fragment (per texture instruction)", "{:.2f}"),
          ("overshading", "overshading", "{:.2f}"))
EXTRA = (("state_changes_per_frame", "state changes per frame", "{:.2f}"),
         ("passes_per_frame", "render passes per frame", "{:.2f}"),
         ("helper_lane_fraction", "helper lanes / shaded lanes", "{:.3f}"),
         ("texels_per_shaded_fragment", "texels per shaded fragment", "{:.2f}"),
         ("alu_tex_ratio_static", "ALU:TEX ratio (static, per draw with TEX)", "{:.2f}"),
         ("seconds_per_frame", "render time per frame (s, wall clock)", "{:.3f}"),
         ("cpu_seconds_per_frame", "render time per frame (s, CPU of this process)", "{:.3f}"))

_SCALARS = ("draw_calls", "state_changes", "passes", "vertices_fetched", "vertices_shaded",
            "vs_alu", "vs_tex", "vs_flow", "prims_assembled", "prims_rasterized")
_TILES = ("prims_binned", "fragments_rasterized", "fragments_shaded", "quads_shaded", "fs_alu",
          "fs_tex", "fs_flow", "tex_samples", "texels_fetched", "pixels_written")


@dataclass
class Totals:
    """Sums over frames (and draws) from which every column is a ratio."""

    frames: int = 0
    tiles: int = 0
    counters: dict[str, float] = field(default_factory=dict)
    draws: int = 0
    attribute_vertices: float = 0.0     # sum over draws of attributes x vertices
    vs_static: float = 0.0              # sum over draws of static VS instructions
    fs_static: float = 0.0
    alu_tex_static: float = 0.0         # sum over draws with TEX of static ALU / TEX
    draws_with_tex: int = 0
    seconds: float = 0.0
    cpu_seconds: float = 0.0

    def add(self, other: Totals) -> None:
        self.frames += other.frames
        self.tiles += other.tiles
        for k, v in other.counters.items():
            self.counters[k] = self.counters.get(k, 0) + v
        for name in ("draws", "attribute_vertices", "vs_static", "fs_static", "alu_tex_static",
                     "draws_with_tex", "seconds", "cpu_seconds"):
            setattr(self, name, getattr(self, name) + getattr(other, name))

    def columns(self) -> dict[str, float | None]:
        c = self.counters.get

        def ratio(a, b):
            return float(a) / float(b) if b else None

        vs = c("vs_alu", 0) + c("vs_tex", 0) + c("vs_flow", 0)
        fs = c("fs_alu", 0) + c("fs_tex", 0) + c("fs_flow", 0)
        lanes = 4 * c("quads_shaded", 0)
        return {
            "draw_calls_per_frame": ratio(c("draw_calls", 0), self.frames),
            "vertices_per_draw": ratio(c("vertices_fetched", 0), c("draw_calls", 0)),
            "attributes_per_vertex": ratio(self.attribute_vertices, c("vertices_shaded", 0)),
            "vs_instructions_static": ratio(self.vs_static, self.draws),
            "vs_instructions_per_vertex": ratio(vs, c("vertices_shaded", 0)),
            "primitives_per_draw": ratio(c("prims_assembled", 0), c("draw_calls", 0)),
            "primitives_per_tile": ratio(c("prims_binned", 0), self.tiles),
            "fragments_per_primitive": ratio(c("fragments_rasterized", 0),
                                             c("prims_rasterized", 0)),
            "fs_instructions_static": ratio(self.fs_static, self.draws),
            "fs_instructions_per_fragment": ratio(fs, lanes),
            "alu_tex_ratio": ratio(c("fs_alu", 0), c("fs_tex", 0)),
            "texels_per_fragment": ratio(c("texels_fetched", 0), c("tex_samples", 0)),
            "overshading": ratio(c("fragments_shaded", 0), c("pixels_written", 0)),
            "state_changes_per_frame": ratio(c("state_changes", 0), self.frames),
            "passes_per_frame": ratio(c("passes", 0), self.frames),
            "helper_lane_fraction": (1 - c("fragments_shaded", 0) / lanes) if lanes else None,
            "texels_per_shaded_fragment": ratio(c("texels_fetched", 0),
                                                c("fragments_shaded", 0)),
            "alu_tex_ratio_static": ratio(self.alu_tex_static, self.draws_with_tex),
            "seconds_per_frame": ratio(self.seconds, self.frames),
            "cpu_seconds_per_frame": ratio(self.cpu_seconds, self.frames),
        }


def _program_facts(program) -> tuple[int, int, int, int, int]:
    """(vertex inputs, static VS instructions, static FS instructions, FS ALU, FS TEX)."""
    vs = static_stats(program.vertex.program)
    fs = static_stats(program.fragment.program)
    inputs = sum(len(a.get("registers", ())) for a in program.interface.get("attributes", []))
    if not inputs:
        inputs = program.vertex.program.register_count("IN")
    return inputs, vs.total, fs.total, fs.alu, fs.tex


class Characterizer(RenderObserver):
    """Sums a render's counters and the facts of the programs its draws run, frame by frame
    (the frames in ``wanted``; the others are rendered, not counted)."""

    def __init__(self, wanted: range, progress: Callable[[int], None] | None):
        self.wanted, self.progress = wanted, progress
        self.total, self.per_frame = Totals(), []
        self.facts: dict[int, tuple] = {}     # id(program) -> (program, its facts)
        self.frame = Totals(frames=1)
        self.started = self.cpu_started = 0.0
        self.vertices_before = 0

    def begin_frame(self, frame: int) -> None:
        self.frame = Totals(frames=1)
        self.started, self.cpu_started = time.perf_counter(), time.process_time()

    def before_command(self, frame, index, command, state, counters) -> None:
        if frame in self.wanted and command.op in DRAWS:
            self.vertices_before = counters.scalars["vertices_shaded"]

    def after_command(self, frame, index, command, state, counters) -> None:
        if frame not in self.wanted or command.op not in DRAWS:
            return
        program = state.current_program()
        if id(program) not in self.facts:
            self.facts[id(program)] = (program, _program_facts(program))
        inputs, vs_total, fs_total, fs_alu, fs_tex = self.facts[id(program)][1]
        vertices = counters.scalars["vertices_shaded"] - self.vertices_before
        self.frame.draws += 1
        self.frame.attribute_vertices += inputs * vertices
        self.frame.vs_static += vs_total
        self.frame.fs_static += fs_total
        if fs_tex:
            self.frame.alu_tex_static += fs_alu / fs_tex
            self.frame.draws_with_tex += 1

    def end_frame(self, result) -> None:
        if result.index in self.wanted:
            frame, counters = self.frame, result.counters
            frame.seconds = time.perf_counter() - self.started
            frame.cpu_seconds = time.process_time() - self.cpu_started
            frame.tiles = sum(p.tiles_x * p.tiles_y for p in counters.passes)
            frame.counters = {name: counters.total(name) for name in _SCALARS + _TILES}
            self.total.add(frame)
            self.per_frame.append({"frame": result.index, **frame.columns()})
        if self.progress is not None:
            self.progress(result.index)


def characterize(trace, frames: range | None = None, *, tile_size: int = 16,
                 progress: Callable[[int], None] | None = None) -> dict:
    """Render ``trace`` (a path or an open :class:`tilesim.render.traces.trace_file.Trace`) and
    return the characterization of ``frames`` (default all; earlier frames are rendered, not
    counted):
    ``{"trace", "name", "width", "height", "frames": [first, last], "columns": {...},
    "per_frame": [{"frame", ...columns}], "notes": [...]}``. ``progress(frame)`` is called
    after each frame rendered."""
    own = not isinstance(trace, Trace)
    handle = open_trace(trace) if own else trace
    try:
        wanted = range(handle.frame_count) if frames is None else frames
        observer = Characterizer(wanted, progress)
        for _ in render_trace(handle, frames=range(wanted.stop), tile_size=tile_size,
                              observer=observer, source=str(handle.path)):
            pass
        return characterization(observer, handle, wanted, tile_size)
    finally:
        if own:
            handle.close()


def characterization(observer: Characterizer, trace: Trace, wanted: range,
                     tile_size: int) -> dict:
    """The report of :func:`characterize` from a :class:`Characterizer` that watched a render
    of ``trace`` counting the frames ``wanted``."""
    notes = ["attributes per vertex and the static VS/FS instruction counts are not in "
             "the counters: they come from the program bound at each draw",
             "per-X columns are ratios of totals over the frames (weighted by X)"]
    return {"trace": str(trace.path), "name": trace.name, "width": trace.width,
            "height": trace.height, "tile_size": tile_size,
            "frames": [wanted.start, wanted.stop - 1], "frame_count": len(wanted),
            "columns": observer.total.columns(), "per_frame": observer.per_frame,
            "notes": notes}


def format_report(report: dict) -> str:
    """The characterization as text: Table 3.3 and 3.4 columns, then a few extras."""
    cols = report["columns"]
    first, last = report["frames"]
    lines = [f"{report['trace']}: {report['name']}, {report['width']}x{report['height']}, "
             f"frames {first}..{last} ({report['frame_count']}), {report['tile_size']}x"
             f"{report['tile_size']} tiles"]
    for title, rows in (("Geometry (Frame Coherence Table 3.3)", GEOMETRY),
                        ("Raster (Frame Coherence Table 3.4)", RASTER), ("Other", EXTRA)):
        lines.append(title)
        for key, label, fmt in rows:
            value = cols.get(key)
            lines.append(f"  {label:<48} {'-' if value is None else fmt.format(value):>10}")
    lines.append("Notes: " + "; ".join(report["notes"]) + ".")
    return "\n".join(lines)
