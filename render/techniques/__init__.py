"""The frame-coherence techniques, each a set of hooks on the pipeline:

    bus                       the hook bus: which techniques run and when they are called
    transaction_elimination   TE: skip writing tiles whose color signature did not change
    rendering_elimination     RE: skip rendering tiles whose inputs did not change (ch. 4)
    signature_unit            the incremental CRC32 Signature Unit RE and TE share
    early_visibility          EVR: resolve visibility before shading (ch. 5)
    dynamic_sampling_rate     DSR: a per-tile sampling rate from the DCT of the last frame (ch. 6)
    fragment_memoization      memoization of fragment colors by their inputs
    dsr_parameters.toml       the shipped DSR parameters, fitted by ``tilesim dsr-search``

May import: ``render.pipeline``, ``render.gl``, ``tilesim.shaders`` and the ``tilesim`` base.
"""
