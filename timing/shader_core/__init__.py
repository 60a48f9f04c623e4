"""The shader core of Shader Core ch. 3 (seed 002), cycle by cycle, running real TGSI programs.

    config             shader_core.toml: every size, width and latency with its source
    program            a TGSI program as the core sees it (classes, registers, redirects)
    warp_paths         the warps' paths and texel lines, recorded by the interpreter
    state              the core's state as arrays (what the compiled loop works on)
    warp_entry         warp ids and register allocation; retirement
    fetch, caches      loose-round-robin fetch through the instruction cache
    decode             the I-buffer (two slots per warp)
    issue              loose-round-robin issue with the scoreboard (RAW, WAW, WAR)
    operand_collector  collector units, bank queues, wavefront allocator, dispatch
    execute            pipelined ALUs, the texture unit and its cache, end of program
    writeback          a port per bank and for memory; retirement
    core               the cycle loop (Numba where installed) and its figures
    throughput         cycles per warp instruction and per TEX, cached per program
    explore            the three studies of Shader Core ch. 5

``tilesim core`` (``tilesim.cli.core``) and a trace's draws as workloads
(``tilesim.studies.core_draws``) live above: they render.

May import: ``tilesim.shaders`` (programs, the interpreter) and the ``tilesim`` base; like
all of ``tilesim.timing``, never the pipeline.
"""
