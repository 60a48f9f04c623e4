"""Costs of the frame-coherence techniques' hardware, from their counters (absent = 0).

The renderer already applies each technique's savings to the baseline counters (RE removes the
raster work of skipped tiles, TE leaves skipped flushes out of ``color_flush_bytes``, EVR's
reordering and DSR's lower sampling rates show up as fewer shaded fragments) with one
exception, Fragment Memoization: its LUT hits are *not* subtracted by the renderer, and the model
removes the fragment-shader work of the hit fragments (``memo_keep`` in ``tilesim.timing.model``).
This module adds what the techniques' own structures cost:

Time (cycles)
* RE, geometry phase: the Compute CRC unit signs 1 sub-block per cycle and the Accumulate CRC unit
  does 1 step per cycle, beside the binner, decoupled from it by the 128-entry Overlapped Tiles
  Queue (Frame Coherence §4.1.2: the signature work overlapped with the geometry pipeline;
  §4.2.1: the binner pushes a primitive's tiles into the queue, the SU pops them). A step folds
  one display-list entry into its tile (``accumulate_per_entry``, the default: a shift by the
  block's whole length; 0: Algorithm 3's one Shift step per sub-block of zeros,
  ``re_shifts``). Both are stages of the geometry bottleneck (``sum re_subblocks_signed / 1``,
  ``sum steps / 1``), so the geometry phase grows by ``max(0, signature work - the other
  stages' time)``: the signature unit slows the binner only when it has more work than the
  rest of the geometry phase hides. On top of that, a primitive covering more tiles than the
  queue holds stalls the pipeline (§4.3: "only stalled when computing signatures for primitives
  that cover a large amount of tiles, resulting in an overflow of the Overlapped Tiles Queue";
  +2% geometry cycles on average): the binner queues 128 of its tiles and moves on only when
  the rest are folded, so those ``re_otq_overflow_entries`` (the renderer's sum over primitives
  of max(0, tiles covered - 128)) are folded in series, ``otq_stall = overflow x
  otq_stall_share x steps per fold / accumulate_rate`` (the share the pipeline does not hide,
  fitted to the cycle-level geometry reference ``tilesim.timing.cycle_level.geometry``), and
  leave the overlapped ``crc_accumulate`` stage (``techniques.signature.otq_stall = 0``:
  frame totals only, the stage keeps them). The
  renderer charges each signed block once (to one of its tiles), so the frame's
  ``re_subblocks_signed`` is the Compute CRC unit's work; ``re_shifts`` counts every fold
  into every tile.
* RE, raster phase: ``compare_cycles`` per signed tile (``re_signature_accesses > 0``), serial,
  to read and compare its two signatures before the tile is scheduled or skipped.
* TE: no cycles (Frame Coherence §4.2.3: energy only).
* EVR: Layer Generator Table and FVP Table lookups (one each per display-list entry, in parallel
  at ``table_rate``) are a geometry stage; the FVP update (23 cycles per tile) and Layer Buffer
  writes (at the blend rate) are raster stages, overlapped with the tile's other stages.
* DSR: the 2D DCT of the finished tile (Frame Coherence §6.4.1: "the contents of the Color
  Buffer are transferred to main memory and the DCT computation of the tile starts"), with the
  Frequency Analysis Unit of §6.4.2: ``dct_units`` compute units each compute the 1D-DCTs of
  ``tile_size / dct_units`` rows, one coefficient (16 MACs) per cycle, reading the rows from
  the Color Buffer into the DCT Buffer; then the column pass works on the DCT Buffer alone.
  The row pass, ``tile_size / dct_units x tile_size`` = 64 cycles, is the DCT's time on the
  one-tile color buffer; the column pass (the other half of ``dct_cycles``) overlaps the next
  tile (the unit's 128 cycles per tile stay below the period of any tile that flushes). With
  ``dct_after_flush`` = 1 the row pass follows the tile's flush, and the next tile waits for
  both, less what its start hides, as for the flush alone; 0 (the default): beside the flush,
  the next tile waiting for the longer of the two (hidden behind a 1 KB flush at 4 B/cycle:
  Frame Coherence §6.5's "no execution time penalty").
* Memoization: LUT lookups at ``lookups_per_cycle``, a raster stage beside shading.

Energy (joules): event counts x per-event energies of ``energy_32nm.toml`` (``technique.*``), by
unit, plus the SRAM leakage of every structure of a technique present in the frame (plus the DCT
logic for DSR) x frame time. EVR's layer identifiers in the Parameter Buffer are main-memory
traffic (source ``technique_tables``, see ``tilesim.timing.memory_traffic``).

Seed checks (not hard-coded; ``tests/timing/test_timing_techniques.py`` reports them on synthetic
frames): RE adds < 0.5% energy (Frame Coherence §4.3), EVR's structures ~0.5% (Frame Coherence
§5.4), DSR < 2% (Frame Coherence §6.5).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from tilesim.timing.config import Config

TECHNIQUES = ("te", "re", "evr", "dsr", "memo")

# Counters that cost time or energy (work), counters that report savings the renderer already
# applied (or, for memo_hits, that the model applies), and diagnostics that cost nothing.
TECHNIQUE_WORK_COUNTERS = (
    "te_subblocks_signed", "te_signature_accesses",
    "re_subblocks_signed", "re_shifts", "re_signature_accesses", "re_bitmap_accesses",
    "re_otq_overflow_entries",
    "evr_lgt_accesses", "evr_fvp_reads", "evr_layer_bytes_written", "evr_layer_buffer_writes",
    "evr_fvp_updates",
    "dsr_dcts", "dsr_srt_accesses",
    "memo_lookups", "memo_table_writes",
)
TECHNIQUE_SAVINGS_COUNTERS = (
    "te_flushes_skipped", "te_flush_bytes_saved", "re_tiles_skipped", "evr_prims_occluded",
    "evr_prims_reordered", "memo_hits",
)
TECHNIQUE_DIAGNOSTIC_COUNTERS = (
    "re_tiles_equal_color", "re_false_positives", "oracle_fragments_shaded", "dsr_rate",
)
TECHNIQUE_TILE_COUNTERS = (*TECHNIQUE_WORK_COUNTERS, *TECHNIQUE_SAVINGS_COUNTERS,
                           *TECHNIQUE_DIAGNOSTIC_COUNTERS)
TECHNIQUE_FRAME_COUNTERS = ("re_disabled", "memo_collisions")

# A technique's hardware exists in a frame when any of these arrays is in one of its passes.
TECHNIQUE_PRESENCE = {
    "te": ("te_subblocks_signed", "te_signature_accesses", "te_flushes_skipped",
           "te_flush_bytes_saved"),
    "re": ("re_subblocks_signed", "re_shifts", "re_signature_accesses", "re_bitmap_accesses",
           "re_otq_overflow_entries", "re_tiles_skipped"),
    "evr": ("evr_lgt_accesses", "evr_fvp_reads", "evr_prims_occluded", "evr_layer_bytes_written",
            "evr_layer_buffer_writes", "evr_fvp_updates"),
    "dsr": ("dsr_dcts", "dsr_srt_accesses", "dsr_rate"),
    "memo": ("memo_lookups", "memo_hits", "memo_table_writes"),
}

# Energy units of the techniques' hardware (dynamic energy keys of the estimate).
TECHNIQUE_UNITS = ("crc_luts", "signature_buffer", "ot_queue", "constant_bitmap",
                   "layer_generator_table", "fvp_table", "fvp_unit", "layer_buffer", "dct_unit",
                   "sampling_rate_table", "memo_lut")
TECHNIQUE_STATIC_UNITS = tuple(f"{t}_structures" for t in TECHNIQUES)

GEOMETRY_STAGES = ("crc_compute", "crc_accumulate", "evr_tables")
# Geometry-phase cycles in series with the overlapped stages (the binner waits on a full
# Overlapped Tiles Queue, and every stage before it with it).
GEOMETRY_SERIAL = ("otq_stall",)
RASTER_STAGES = ("evr_fvp_update", "evr_layer_buffer", "memo_lut")
# Work on the finished tile's color buffer, beside its flush (see tilesim.timing.model.tile_cycles).
END_OF_TILE_STAGES = ("dsr_dct",)


def dct_color_buffer_cycles(cfg: Config) -> float:
    """Cycles one DSR DCT holds the finished tile's color buffer: its row pass (Frame Coherence
    §6.4.2: ``ceil(tile_size / dct_units)`` rows per compute unit, ``tile_size`` cycles each;
    the column pass works on the DCT Buffer alone), after the tile's flush with
    ``techniques.dsr.dct_after_flush``, else beside it (module notes)."""
    tile = cfg["screen.tile_size"]
    return float(np.ceil(tile / cfg["techniques.dsr.dct_units"]) * tile)


KB = 1024.0


def accumulate_steps(per_frame: dict[str, np.ndarray], cfg: Config) -> np.ndarray:
    """The Accumulate CRC unit's steps: one per folded display-list entry (two Signature
    Buffer accesses each) with ``accumulate_per_entry``, else one per sub-block of zeros
    shifted in (Frame Coherence Algorithm 3 literally)."""
    if cfg["techniques.signature.accumulate_per_entry"]:
        return per_frame["re_signature_accesses"] / 2.0
    return per_frame["re_shifts"]


def otq_stalled_steps(per_frame: dict[str, np.ndarray], cfg: Config) -> np.ndarray:
    """Accumulate steps folded while the binner waits on a full Overlapped Tiles Queue: the
    ``re_otq_overflow_entries`` (tiles of a primitive beyond the queue's entries) times
    ``otq_stall_share`` (the share the geometry pipeline does not hide: while the binner waits
    the stages before it fill their queues and the bus drains the Parameter Buffer writes;
    fitted to the cycle-level geometry reference) times the steps of one fold (1 per entry
    with ``accumulate_per_entry``, else the frame's mean Shift steps per fold), at most every
    step; 0 with ``otq_stall = 0``. (F,)."""
    overflow = per_frame["re_otq_overflow_entries"] * cfg["techniques.signature.otq_stall_share"]
    if not cfg["techniques.signature.otq_stall"]:
        return np.zeros_like(overflow)
    steps = accumulate_steps(per_frame, cfg)
    if cfg["techniques.signature.accumulate_per_entry"]:
        per_fold = 1.0
    else:
        folds = per_frame["re_signature_accesses"] / 2.0
        per_fold = np.divide(steps, folds, out=np.ones_like(steps), where=folds > 0)
    return np.minimum(overflow * per_fold, steps)


def geometry_stage_cycles(per_frame: dict[str, np.ndarray], cfg: Config) -> dict[str, np.ndarray]:
    """Technique stages of the geometry phase; ``per_frame`` holds (F,) sums of tile counters.
    ``crc_accumulate`` is the Accumulate CRC unit's work overlapped with the other stages;
    ``otq_stall`` (``GEOMETRY_SERIAL``) its folds of the entries that overflow the Overlapped
    Tiles Queue, while the binner and the stages before it wait (in series)."""
    rate = cfg["techniques.signature.accumulate_rate"]
    stalled = otq_stalled_steps(per_frame, cfg)
    return {
        "crc_compute": per_frame["re_subblocks_signed"] / cfg["techniques.signature.compute_rate"],
        "crc_accumulate": (accumulate_steps(per_frame, cfg) - stalled) / rate,
        "otq_stall": stalled / rate,
        "evr_tables": np.maximum(per_frame["evr_lgt_accesses"], per_frame["evr_fvp_reads"])
        / cfg["techniques.evr.table_rate"],
    }


def raster_stage_cycles(t: dict[str, np.ndarray], cfg: Config) -> dict[str, np.ndarray]:
    """Technique stages of each tile: (N,) arrays. All overlap the tile's other stages but the
    DCT's time on the finished tile's color buffer, after or beside its flush
    (``END_OF_TILE_STAGES``, :func:`dct_color_buffer_cycles`)."""
    return {
        "evr_fvp_update": t["evr_fvp_updates"] * cfg["techniques.evr.fvp_update_cycles"],
        "evr_layer_buffer": t["evr_layer_buffer_writes"] / cfg["stages.blend.rate"],
        "dsr_dct": t["dsr_dcts"] * dct_color_buffer_cycles(cfg),
        "memo_lut": (t["memo_lookups"] + t["memo_table_writes"])
        / cfg["techniques.memo.lookups_per_cycle"],
    }


def raster_serial_cycles(t: dict[str, np.ndarray], cfg: Config) -> np.ndarray:
    """Technique cycles each tile spends before its pipeline starts (RE's signature compare)."""
    return np.where(t["re_signature_accesses"] > 0, cfg["techniques.signature.compare_cycles"], 0.0)


def dynamic_energy(per_frame: dict[str, np.ndarray], ecfg: Config,
                   cfg: Config) -> dict[str, np.ndarray]:
    """Dynamic energy (J) of each technique unit per frame from (F,) counter sums of
    ``TECHNIQUE_WORK_COUNTERS`` and ``memo_hits`` (at most the lookups) (``cfg``: the GPU's,
    for how the Accumulate CRC unit steps)."""
    pj = 1e-12
    e = lambda k: ecfg[k] * pj  # noqa: E731
    lut = memo_lut_scale(cfg)
    sig_accesses = per_frame["re_signature_accesses"] + per_frame["te_signature_accesses"]
    return {
        "crc_luts": (per_frame["re_subblocks_signed"] + per_frame["te_subblocks_signed"])
        * e("technique.crc.compute_subblock") + accumulate_steps(per_frame, cfg)
        * e("technique.crc.accumulate_shift"),
        "signature_buffer": sig_accesses * e("technique.signature_buffer.access"),
        # every folded (primitive, tile) entry is pushed and popped once: 2 OT-queue accesses
        # for its 2 Signature Buffer accesses (read + write)
        "ot_queue": per_frame["re_signature_accesses"] * e("technique.ot_queue.access"),
        "constant_bitmap": per_frame["re_bitmap_accesses"] * e("technique.bitmap.access"),
        "layer_generator_table": per_frame["evr_lgt_accesses"] * e("technique.lgt.access"),
        "fvp_table": per_frame["evr_fvp_reads"] * e("technique.fvp_table.access"),
        "fvp_unit": per_frame["evr_fvp_updates"] * e("technique.fvp_update.tile"),
        "layer_buffer": per_frame["evr_layer_buffer_writes"] * e("technique.layer_buffer.write"),
        "dct_unit": per_frame["dsr_dcts"] * e("technique.dct.tile"),
        "sampling_rate_table": per_frame["dsr_srt_accesses"] * e("technique.srt.access"),
        # every lookup hashes the fragment's inputs and reads its set's tags; a hit reads
        # one color, a miss writes one entry
        # (the per-access figures are Table 4.1's LUT's, scaled to the configured one)
        "memo_lut": per_frame["memo_lookups"] * (e("technique.memo.hash")
                                                 + e("technique.memo.lookup") * lut["lookup"])
        + per_frame["memo_hits"] * e("technique.memo.hit_read") * lut["hit_read"]
        + per_frame["memo_table_writes"] * e("technique.memo.write") * lut["write"],
    }


def sram_access_pj(capacity_bytes: float, bits: float) -> float:
    """The SRAM rule of energy_32nm.toml: pJ for one access of ``bits`` to an array of
    ``capacity_bytes``, 9.0 pJ x sqrt(C / 8 KB) x w / 64 (Horowitz ISSCC 2014's SRAM reads,
    x0.9 to 32 nm)."""
    return 9.0 * math.sqrt(capacity_bytes / 8192) * bits / 64


# Frame Coherence Table 4.1's LUT, the one energy_32nm.toml's technique.memo figures are for.
TABLE_4_1_LUT = (2048, 4)           # sets, ways
MEMO_COLOR_BITS = 32                # the RGBA8 color an entry memoizes
# A tag compare, per bit: Horowitz ISSCC 2014's 0.1 pJ 32-bit add, x0.9 to 32 nm.
COMPARE_PJ_PER_BIT = 0.1 * 0.9 / 32


@dataclass(frozen=True)
class MemoLUT:
    """The memoization LUT's organization (Frame Coherence Table 4.1 by default), way-banked
    as a set-associative array is, CACTI-style: per way a tag bank and a color bank of
    ``sets`` rows. A tag holds what the set does not imply, the signature less its
    log2(sets) index bits, and a valid bit; each set keeps exact LRU as the renderer's MemoLUT
    replaces, the ways' pairwise orders."""

    sets: int
    ways: int
    signature_bits: int

    @classmethod
    def of(cls, cfg: Config) -> MemoLUT:
        memo = "techniques.memo."
        return cls(int(cfg[memo + "lut_sets"]), int(cfg[memo + "lut_ways"]),
                   int(cfg[memo + "signature_bits"]))

    @property
    def tag_bits(self) -> int:
        return self.signature_bits - int(math.log2(self.sets)) + 1

    @property
    def lru_bits(self) -> int:
        return self.ways * (self.ways - 1) // 2

    @property
    def bytes(self) -> float:
        return self.sets * (self.ways * (self.tag_bits + MEMO_COLOR_BITS) + self.lru_bits) / 8

    def access_pj(self) -> dict[str, float]:
        """The SRAM rule's pJ of a lookup (every way's tag read and compared, the set's LRU
        bits read and written), a hit's color read and a miss's entry write."""
        tag = sram_access_pj(self.sets * self.tag_bits / 8, self.tag_bits)
        color = sram_access_pj(self.sets * MEMO_COLOR_BITS / 8, MEMO_COLOR_BITS)
        lru = sram_access_pj(self.sets * self.lru_bits / 8, self.lru_bits)
        compare = COMPARE_PJ_PER_BIT * (self.tag_bits - 1)
        return {"lookup": self.ways * (tag + compare) + 2 * lru, "hit_read": color,
                "write": tag + color}


def memo_lut_scale(cfg: Config) -> dict[str, float]:
    """Per access kind, the configured LUT's SRAM-rule energy over Table 4.1's: the factor on
    energy_32nm.toml's technique.memo figures (1 for the thesis's LUT), so a LUT of another
    size costs what an SRAM of that size does."""
    lut = MemoLUT.of(cfg)
    configured = lut.access_pj()
    thesis = MemoLUT(*TABLE_4_1_LUT, lut.signature_bits).access_pj()
    return {kind: configured[kind] / thesis[kind] for kind in configured}


def structure_bytes(cfg: Config) -> dict[str, float]:
    """SRAM capacity (bytes) of each technique's structures, from the GPU config."""
    sig = "techniques.signature."
    signature_buffer = (cfg[sig + "buffer_entries"] * cfg[sig + "buffer_frames"]
                        * cfg[sig + "buffer_entry_bits"] / 8)
    evr = "techniques.evr."
    dsr = "techniques.dsr."
    return {
        "te": cfg[sig + "compute_lut_bytes"] + signature_buffer,
        "re": cfg[sig + "compute_lut_bytes"] + cfg[sig + "accumulate_lut_bytes"]
        + signature_buffer + cfg[sig + "ot_queue_entries"] * cfg[sig + "ot_queue_entry_bits"] / 8
        + cfg[sig + "bitmap_entries"] / 8,
        "evr": (cfg[evr + "lgt_entries"] * cfg[evr + "lgt_entry_bits"]
                + cfg[evr + "layer_buffer_entries"] * cfg[evr + "layer_buffer_entry_bits"]
                + cfg[evr + "fvp_entries"] * cfg[evr + "fvp_entry_bits"]) / 8,
        "dsr": cfg[dsr + "srt_entries"] * cfg[dsr + "srt_entry_bits"] / 8
        + cfg[dsr + "dct_buffer_bytes"],
        "memo": MemoLUT.of(cfg).bytes,
    }


def static_power(cfg: Config, ecfg: Config) -> dict[str, float]:
    """Leakage (W) of each technique's hardware when present."""
    sram = ecfg["gpu.static.sram"] * 1e-3 / KB  # W per byte
    power = {f"{t}_structures": b * sram for t, b in structure_bytes(cfg).items()}
    power["dsr_structures"] += ecfg["technique.static.dct_logic"] * 1e-3
    return power
