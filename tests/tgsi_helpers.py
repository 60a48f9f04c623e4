"""Small helpers to write TGSI test programs and run them on per-lane values."""

from __future__ import annotations

import numpy as np

from tilesim.shaders.interpreter import Interpreter
from tilesim.shaders.parser import parse


def program_text(body: list[str], *, processor: str = "FRAG", inputs: int = 3, temps: int = 4,
                 extra: list[str] | None = None) -> str:
    lines = [processor]
    lines += [f"DCL IN[{i}], GENERIC[{i}], PERSPECTIVE" if processor == "FRAG"
              else f"DCL IN[{i}]" for i in range(inputs)]
    lines += ["DCL OUT[0], COLOR" if processor == "FRAG" else "DCL OUT[0], POSITION"]
    lines += [f"DCL TEMP[0..{temps - 1}]"]
    lines += extra or []
    lines += [f"{n:3d}: {text}" for n, text in enumerate(body + ["END"])]
    return "\n".join(lines) + "\n"


def lanes_of(values, dtype=np.float32) -> np.ndarray:
    """(4, N) register data from a list of per-lane scalars (replicated to xyzw) or 4-vectors."""
    if np.dtype(dtype).kind in "iu":
        a = np.asarray(values, dtype=np.int64).astype(dtype)  # both signs wrap to 32 bits
    else:
        a = np.asarray(values, dtype=dtype)
    if a.ndim == 1:
        a = np.repeat(a[None, :], 4, axis=0)
    return a


def run(body: list[str], *ins, dtype=np.float32, out_dtype=np.float32, constants=None,
        sampler=None, extra=None, processor="FRAG", **kwargs):
    """Run ``body`` with IN[i] = ins[i]; return OUT[0] as (4, N) of ``out_dtype``, and more."""
    regs = [lanes_of(v, dtype).view(np.uint32) for v in ins]
    n = regs[0].shape[1] if regs else kwargs.pop("lanes")
    inputs = np.stack(regs) if regs else np.zeros((1, 4, n), np.uint32)
    program = parse(program_text(body, inputs=max(len(ins), 1), extra=extra,
                                 processor=processor))
    execution = Interpreter(program).run(inputs, constants, sampler=sampler, lanes=n, **kwargs)
    return execution.outputs[0].view(out_dtype), execution
