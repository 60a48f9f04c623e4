"""Light parsing of what Mesa prints on stderr with ``SOFTPIPE_DEBUG=vs,fs``.

For each linked stage Mesa prints the final NIR (we read only its ``decl_var`` lines, which give
each variable's slot and ``driver_location``) followed by the TGSI text (header ``VERT`` or
``FRAG``, declarations, immediates, numbered instructions, ``END``). This module cuts that text
into blocks and reads the ``DCL`` lines; it is deliberately not a TGSI parser (that lives in
``shaders/parser.py``): instructions are kept as opaque text, except the plain ``MOV`` lines the
varying probe of :mod:`tilesim.shaders.glsl_compile` needs.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

NIR_STAGE = {"MESA_SHADER_VERTEX": "vertex", "MESA_SHADER_FRAGMENT": "fragment"}
TGSI_HEADER = {"VERT": "vertex", "FRAG": "fragment"}
_END_RE = re.compile(r"^\s*\d+: END$")


class MesaOutputError(Exception):
    """Mesa printed something this module cannot read (message says what and where)."""


@dataclass(frozen=True)
class NirVar:
    """One ``decl_var`` line: ``decl_var [quals] MODE INTERP_MODE_X [quals] TYPE NAME (LOC, DRV,
    BIND)``.

    ``slot`` is the symbolic location (e.g. ``VARYING_SLOT_VAR0``) for inputs/outputs, else None;
    ``components`` the component letters printed after it (``xy``); ``location`` the numeric
    location for uniforms.
    """

    mode: str
    interp: str
    qualifiers: tuple[str, ...]
    type: str
    name: str
    slot: str | None
    components: str
    location: int | None
    driver_location: int
    binding: int

    @property
    def precision(self) -> str | None:
        for q in self.qualifiers:
            if q in ("highp", "mediump", "lowp"):
                return q
        return None


@dataclass
class StageDump:
    """What Mesa printed for one stage of one link: its NIR variables and TGSI text."""

    stage: str
    nir_vars: list[NirVar] = field(default_factory=list)
    tgsi: str = ""


@dataclass(frozen=True)
class Dcl:
    """One TGSI declaration, expanded to a single register (ranges become several Dcl)."""

    file: str            # IN, OUT, SV, SAMP, SVIEW, CONST, TEMP, ADDR
    index: int           # register index (for CONST: the slot inside the buffer)
    buffer: int | None   # CONST buffer (the first bracket of CONST[b][i]); else None
    mask: str            # written/read component mask, "xyzw" when none printed
    semantic: str | None        # e.g. GENERIC, POSITION, COLOR, FACE
    semantic_index: int | None  # e.g. 0 for GENERIC[0]
    extra: tuple[str, ...]      # the remaining comma-separated fields (interpolation, target...)

    @property
    def register(self) -> str:
        return f"{self.file}[{self.index}]"


def parse_decl_var(line: str) -> NirVar:
    """Parse one ``decl_var`` line of NIR print output."""
    head, sep, loc = line.rstrip().rpartition(" (")
    tokens = head.split()
    if not sep or not loc.endswith(")") or len(tokens) < 5 or tokens[0] != "decl_var":
        raise MesaOutputError(f"unreadable NIR declaration: {line!r}")
    fields = [f.strip() for f in loc[:-1].split(",")]
    if len(fields) != 3:
        raise MesaOutputError(f"unreadable NIR location tuple: {line!r}")
    slot, components, location = None, "", None
    first = fields[0]
    if re.fullmatch(r"-?\d+", first):
        location = int(first)
    else:
        slot, _, components = first.partition(".")
    # nir_print writes qualifiers such as "invariant", "centroid" or "sample" before the mode;
    # the mode is the token before the INTERP_MODE_ one.
    at = next((i for i in range(1, len(tokens) - 3)
               if tokens[i + 1].startswith("INTERP_MODE_")), None)
    if at is None:
        raise MesaOutputError(f"unreadable NIR declaration (no interpolation mode): {line!r}")
    interp = tokens[at + 1].removeprefix("INTERP_MODE_")
    return NirVar(mode=tokens[at], interp=interp,
                  qualifiers=tuple(tokens[1:at] + tokens[at + 2:-2]), type=tokens[-2],
                  name=tokens[-1], slot=slot, components=components, location=location,
                  driver_location=int(fields[1]), binding=int(fields[2]))


def split_stages(text: str, *, where: str) -> dict[str, StageDump]:
    """Cut Mesa's output for one link into one :class:`StageDump` per stage.

    Expects, per stage, a NIR block (``shader: MESA_SHADER_...``) and then a TGSI block; other
    lines (blank lines, NIR bodies) are skipped. ``where`` names the link in error messages.
    """
    stages: dict[str, StageDump] = {}
    nir_stage: str | None = None
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("shader: "):
            kind = line.split()[1]
            nir_stage = NIR_STAGE.get(kind)
            if nir_stage is None:
                raise MesaOutputError(f"{where}: unexpected NIR stage {kind}")
            stages.setdefault(nir_stage, StageDump(nir_stage))
            if stages[nir_stage].tgsi:
                raise MesaOutputError(f"{where}: Mesa printed the {nir_stage} shader twice")
            # With MESA_GLSL=dump Mesa prints each stage's NIR once more before the driver
            # does; the driver's print, the last before the TGSI, is the one kept.
            stages[nir_stage].nir_vars = []
        elif line.startswith("decl_var ") and nir_stage is not None:
            stages[nir_stage].nir_vars.append(parse_decl_var(line))
        elif line in TGSI_HEADER:
            stage = TGSI_HEADER[line]
            if stage != nir_stage:
                raise MesaOutputError(f"{where}: TGSI {line} does not follow the {stage} NIR")
            end = i
            while end < len(lines) and not _END_RE.match(lines[end]):
                end += 1
            if end == len(lines):
                raise MesaOutputError(f"{where}: TGSI {line} has no END instruction")
            stages[stage].tgsi = "\n".join(lines[i:end + 1]) + "\n"
            nir_stage = None
            i = end
        i += 1
    for stage in ("vertex", "fragment"):
        if stage not in stages or not stages[stage].tgsi:
            raise MesaOutputError(f"{where}: Mesa printed no TGSI for the {stage} shader "
                                  "(is SOFTPIPE_DEBUG=vs,fs honoured and the driver softpipe?)")
    return stages


_IR_DECLARE_RE = re.compile(
    r"^\(declare \((?P<qualifiers>[^)]*)\) (?P<type>\(array [^)]*\)|\w+) (?P<name>[\w@]+)\)$")


def glsl_ir_precisions(text: str, *, where: str) -> dict[str, dict[str, str]]:
    """Precision qualifiers of the global variables of a linked program, per stage, from the
    GLSL IR Mesa prints with ``MESA_GLSL=dump``: ``{"vertex": {name: "highp", ...},
    "fragment": {...}}``. Unlike the NIR, which may pack several varyings into one variable
    (``packed:a,b``) and print only the first one's precision, the IR keeps every variable.

    The linked IR is two top-level blocks, each opening with a line ``(``, in stage order
    (vertex, fragment); a variable without a qualifier is left out.
    """
    blocks: list[dict[str, str]] = []
    for line in text.split("\n"):
        if line == "(":
            blocks.append({})
            continue
        m = _IR_DECLARE_RE.match(line)
        if m is None or not blocks:
            continue
        for qualifier in m["qualifiers"].split():
            if qualifier in ("highp", "mediump", "lowp"):
                blocks[-1][m["name"]] = qualifier
    if len(blocks) != 2:
        raise MesaOutputError(f"{where}: expected the GLSL IR of two linked stages "
                              f"(MESA_GLSL=dump), found {len(blocks)} blocks")
    return {"vertex": blocks[0], "fragment": blocks[1]}


_DCL_RE = re.compile(
    r"^DCL (?P<file>[A-Z]+)\[(?P<a>\d+)(?:\.\.(?P<b>\d+))?\]"
    r"(?:\[(?P<c>\d+)(?:\.\.(?P<d>\d+))?\])?"
    r"(?:\.(?P<mask>[xyzw]+))?(?:, (?P<rest>.*))?$")
_SEM_RE = re.compile(r"^(?P<name>[A-Z_]+)(?:\[(?P<a>\d+)(?:\.\.(?P<b>\d+))?\])?$")


def parse_dcls(tgsi: str) -> list[Dcl]:
    """The declarations of a TGSI text, one :class:`Dcl` per register."""
    out: list[Dcl] = []
    for line in tgsi.split("\n"):
        if not line.startswith("DCL "):
            continue
        m = _DCL_RE.match(line)
        if m is None:
            raise MesaOutputError(f"unreadable TGSI declaration: {line!r}")
        file, rest = m["file"], m["rest"]
        extra = tuple(rest.split(", ")) if rest else ()
        if m["c"] is not None:  # two brackets: CONST[buffer][first..last]
            buffer, first = int(m["a"]), int(m["c"])
            last = int(m["d"]) if m["d"] else first
        else:
            buffer, first = None, int(m["a"])
            last = int(m["b"]) if m["b"] else first
        semantic, sem_first = None, None
        if file in ("IN", "OUT", "SV") and extra:
            sm = _SEM_RE.match(extra[0])
            if sm is None:
                raise MesaOutputError(f"unreadable TGSI semantic in {line!r}")
            semantic = sm["name"]
            sem_first = int(sm["a"]) if sm["a"] is not None else None
            extra = extra[1:]
        for k, index in enumerate(range(first, last + 1)):
            sem_index = None if sem_first is None else sem_first + k
            out.append(Dcl(file=file, index=index, buffer=buffer, mask=m["mask"] or "xyzw",
                           semantic=semantic, semantic_index=sem_index, extra=extra))
    return out


_MOV_RE = re.compile(
    r"^\s*\d+: MOV (?P<dfile>OUT|TEMP)\[(?P<di>\d+)\](?:\.(?P<mask>[xyzw]+))?, "
    r"(?P<sfile>IN|TEMP)\[(?P<si>\d+)\](?:\.(?P<swz>[xyzw]{4}))?$")
_WRITE_RE = re.compile(r"^\s*\d+: [A-Z0-9_]+ (?P<dfile>OUT|TEMP)\[(?P<di>\d+)\]")


def trace_input_moves(tgsi: str) -> dict[tuple[int, int], tuple[int, int]]:
    """Follow plain ``MOV`` chains from IN to OUT registers in a straight-line TGSI program.

    Returns {(OUT index, component): (IN index, component)} for every output component that is a
    copy of an input component. Any other instruction that writes an output, or a write whose
    source is not a traced copy, leaves that output component out of the result; the caller
    decides whether that is an error.
    """
    temps: dict[tuple[int, int], tuple[int, int]] = {}
    outs: dict[tuple[int, int], tuple[int, int]] = {}
    for line in tgsi.split("\n"):
        m = _MOV_RE.match(line)
        if m is None:
            w = _WRITE_RE.match(line)
            if w is not None:  # some other instruction writes here: forget what it held
                target = outs if w["dfile"] == "OUT" else temps
                for c in range(4):
                    target.pop((int(w["di"]), c), None)
            continue
        swz = m["swz"] or "xyzw"
        for c, letter in enumerate("xyzw"):
            if letter not in (m["mask"] or "xyzw"):
                continue
            src_c = "xyzw".index(swz[c])
            if m["sfile"] == "IN":
                src = (int(m["si"]), src_c)
            else:
                src = temps.get((int(m["si"]), src_c))
            target = outs if m["dfile"] == "OUT" else temps
            if src is None:
                target.pop((int(m["di"]), c), None)
            else:
                target[(int(m["di"]), c)] = src
    return outs
