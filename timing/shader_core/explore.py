"""``tilesim core explore``: the three studies of Shader Core ch. 5 on tilesim's programs
(corpus programs over generated inputs, or the draws of a trace's frame).

1. Register-allocation hash (§5.1): IPC against the number of banks (1-8), warp_shift
   (Eq. 5.1) against sequential (Eq. 5.2), 32 warps; and the reads per bank at 4 banks.
2. Number of warps (§5.2): IPC and mean registers in use against warps in flight (1-64),
   4 banks.
3. Register-file size (§5.3): IPC against warps in flight for 100-700 registers and 8000
   (the unbounded case), 4 banks.

Each point runs every program's paths (recorded once) through the core; a study's IPC
is the instructions of all programs over their cycles.
"""

from __future__ import annotations

from pathlib import Path

from tilesim.timing.shader_core.config import CoreConfig
from tilesim.timing.shader_core.core import simulate
from tilesim.timing.shader_core.warp_paths import WarpPaths, record_file

BANKS = [1, 2, 3, 4, 5, 6, 8]
WARPS = [1, 2, 4, 8, 16, 32, 48, 64]
REGISTERS = [100, 250, 400, 550, 700, 8000]


def _run(all_paths, cfg: CoreConfig) -> dict:
    cycles = instructions = 0
    regs = reads = 0.0
    bank_reads = None
    for w in all_paths:
        r = simulate(w, cfg)
        cycles += r.cycles
        instructions += r.instructions
        regs += r.occupancy["registers"] * r.cycles
        bank_reads = (r.bank_reads if bank_reads is None
                      else [a + b for a, b in zip(bank_reads, r.bank_reads, strict=True)])
        reads += sum(r.bank_reads)
    return {"ipc": instructions / cycles, "registers": regs / cycles, "bank_reads": bank_reads}


def explore(programs: list, cfg: CoreConfig, warps: int = 512) -> dict:
    """The three studies over ``programs``: program files (run over ``warps`` warps of
    generated inputs) or all_paths already recorded (a trace's draws)."""
    all_paths = [p if isinstance(p, WarpPaths) else record_file(p, warps) for p in programs]
    out = {"programs": [w.name for w in all_paths],
           "warps": [w.warps for w in all_paths],
           "hash": {}, "warps_study": {}, "registers_study": {}}
    for scheme in ("warp_shift", "sequential"):
        out["hash"][scheme] = [
            _run(all_paths, cfg.replace(**{"registers.banks": b, "registers.bank_hash": scheme,
                                           "warps.max_warps": 32}))
            | {"banks": b} for b in BANKS]
    out["warps_study"] = [
        _run(all_paths, cfg.replace(**{"registers.banks": 4, "warps.max_warps": w}))
        | {"warps": w} for w in WARPS]
    need = max(w.registers_per_warp for w in all_paths)
    for total in REGISTERS:
        if total < need:
            continue
        out["registers_study"][str(total)] = [
            _run(all_paths, cfg.replace(**{"registers.banks": 4, "warps.max_warps": w,
                                           "registers.total": total})) | {"warps": w}
            for w in WARPS]
    return out


def plot(study: dict, folder: Path) -> list[Path]:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    folder.mkdir(parents=True, exist_ok=True)
    made = []
    fig, ax = plt.subplots(figsize=(5, 3.5))
    for scheme, points in study["hash"].items():
        ax.plot([p["banks"] for p in points], [p["ipc"] for p in points], "o-", label=scheme)
    ax.set_xlabel("register banks")
    ax.set_ylabel("IPC")
    ax.set_title("Register-allocation hash (002 Fig. 5.1)")
    ax.legend()
    made.append(folder / "hash_ipc.png")
    fig.tight_layout()
    fig.savefig(made[-1], dpi=120)
    plt.close(fig)
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(9, 3.5))
    points = study["warps_study"]
    a1.plot([p["warps"] for p in points], [p["ipc"] for p in points], "o-")
    a1.set_xlabel("warps")
    a1.set_ylabel("IPC")
    a1.set_title("Number of warps (002 Fig. 5.3)")
    a2.plot([p["warps"] for p in points], [p["registers"] for p in points], "o-")
    a2.set_xlabel("warps")
    a2.set_ylabel("registers in use")
    a2.set_title("Registers in use (002 Fig. 5.4)")
    made.append(folder / "warps.png")
    fig.tight_layout()
    fig.savefig(made[-1], dpi=120)
    plt.close(fig)
    fig, ax = plt.subplots(figsize=(5, 3.5))
    for total, pts in study["registers_study"].items():
        ax.plot([p["warps"] for p in pts], [p["ipc"] for p in pts], "o-", label=f"{total} regs")
    ax.set_xlabel("warps")
    ax.set_ylabel("IPC")
    ax.set_title("Register-file size (002 Fig. 5.5)")
    ax.legend(fontsize=7)
    made.append(folder / "registers.png")
    fig.tight_layout()
    fig.savefig(made[-1], dpi=120)
    plt.close(fig)
    return made
