"""A trace's draws as the shader core's workloads: the fragments each draw really shaded.

The cycle-level shader core (``tilesim.timing.shader_core``, Shader Core ch. 3) runs what the
interpreter executed. For a corpus program alone that is generated inputs; for a trace it is
the frame itself: this module renders the trace up to frame N with a watching hook
(:class:`ShadingCapture`) which, every time a draw of that frame shades a batch of quads,
runs the draw's fragment program again over the same lanes (their inputs, system values and
constants) with tilesim's texture sampler over the draw's own textures, recording every
lane's path and the cache lines every texture instruction really reads
(``TextureSampler(record_accesses=True)``). A draw's batches make one workload, so its warps
have the frame's divergence and texture locality (Shader Core §4.1 drives TEAPOT's core the
same way, from the frames the GPU renders).

Recording happens inside the hook, while the draw's textures hold what it samples (a later
pass of the frame may render into them again). Programs without a color output (depth-only
passes) are not seen by the hook and are left out.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from tilesim.backend import to_host
from tilesim.errors import InputError
from tilesim.render.pipeline.hooks import PipelineHooks

DRAW_COMMANDS = ("drawArrays", "drawElements")


@dataclass
class CapturedDraw:
    """The workload pieces of one draw of the watched frame."""

    index: int                      # the draw's number in the frame (0-based)
    program: int                    # GL program name
    pieces: list = field(default_factory=list)
    warps: int = 0
    quads_total: int = 0            # quads the draw shaded (all batches, also those not kept)


class ShadingCapture(PipelineHooks):
    """Watch frame ``frame``: record its draws' fragment shading as core workloads, at most
    ``max_warps`` warps (quads) per draw, in the order the pipeline shaded them."""

    name = "baseline"    # it observes; the render is the baseline's

    def __init__(self, frame: int, max_warps: int | None = None):
        self.frame, self.max_warps = int(frame), max_warps
        self.current_frame = 0
        self._by_number: dict[int, CapturedDraw] = {}    # in the order they shaded
        self._draws_seen = 0

    @property
    def draws(self) -> list[CapturedDraw]:
        """The frame's draws that shaded fragments, in draw order."""
        return list(self._by_number.values())

    def command(self, op: str) -> None:
        if op == "endFrame":
            self.current_frame += 1
        elif op in DRAW_COMMANDS and self.current_frame == self.frame:
            self._draws_seen += 1

    def shaded(self, draw, inputs, system_values, color, tile, alive) -> None:
        if self.current_frame != self.frame:
            return
        from tilesim.render.pipeline.texture_sampler import SamplerOptions, TextureSampler
        from tilesim.timing.shader_core.warp_paths import record

        # the baseline shades a draw while its command runs: the draw is the last one seen
        number = self._draws_seen - 1
        captured = self._by_number.get(number)
        if captured is None:
            captured = self._by_number[number] = CapturedDraw(number, draw.program.ident)
        lanes = int(alive.shape[0])
        captured.quads_total += lanes // 4
        room = lanes // 4 if self.max_warps is None else self.max_warps - captured.warps
        if room <= 0:
            return
        keep = min(room, lanes // 4) * 4
        sampler = (TextureSampler(draw.texture_units, options=SamplerOptions.llvmpipe(),
                                  record_accesses=True) if draw.texture_units else None)
        if sampler is not None:
            sampler.begin(tile[:keep])
        piece = record(draw.program.fragment.program, to_host(inputs[..., :keep]),
                       to_host(draw.fs_constants), lanes=keep, sampler=sampler,
                       system_values={k: to_host(v[..., :keep])
                                      for k, v in system_values.items()},
                       name=f"frame {self.frame} draw {captured.index}")
        captured.pieces.append(piece)
        captured.warps += keep // 4


def frame_workloads(trace: str | os.PathLike, frame: int, *,
                    size: tuple[int, int] | None = None, max_warps: int | None = None,
                    draws: list[int] | None = None) -> list[tuple[CapturedDraw, object]]:
    """[(the draw, its workload)] of the draws of ``frame`` of a ``.tsim`` trace that shaded
    fragments (``draws``: only these draw numbers), each at most ``max_warps`` warps."""
    from tilesim.render.replay import render_trace
    from tilesim.render.traces.trace_file import open_trace
    from tilesim.timing.shader_core.warp_paths import concatenate

    opened = open_trace(trace)
    if not 0 <= frame < opened.frame_count:
        raise InputError(f"--frame {frame}: the trace has frames 0..{opened.frame_count - 1}",
                         source=str(trace))
    capture = ShadingCapture(frame, max_warps)
    for _ in render_trace(opened, frames=[frame], size=size, technique=capture):
        pass
    out = []
    for captured in capture.draws:
        if draws is not None and captured.index not in draws:
            continue
        if captured.pieces:
            name = f"{os.fspath(trace)} frame {frame} draw {captured.index}"
            out.append((captured, concatenate(captured.pieces, name)))
    if draws is not None:
        missing = sorted(set(draws) - {c.index for c, _ in out})
        if missing:
            raise InputError(f"--draw {','.join(map(str, missing))}: no such draw shaded "
                             f"fragments in frame {frame} (draws that did: "
                             f"{', '.join(str(c.index) for c in capture.draws) or 'none'})",
                             source=str(trace))
    return out
