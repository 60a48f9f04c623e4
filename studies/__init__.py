"""The studies: what ``tilesim run`` and the study commands compute, every module listed.
Their command lines live in ``tilesim.cli`` (a module per command, same name).

    study             ``tilesim run``: the main job, every workload and technique, resumable
    study_sections    the studies ``tilesim run --all`` adds (core, predict, schedule, goldens)
    report            its index.html, readable offline (a subpackage: page + templates)
    study_results     its results.json and tilesim.open_results (pandas, xarray)
    thesis_comparison the thesis's published figures and the regime note beside them
    batch             render jobs on Dask, resumable, with their output-folder identity
    dask_cluster      the one way to run tasks on Dask (a local cluster or a scheduler)
    progress          progress bars, and line progress when stdout is not a terminal
    config_options    --config / --energy-config / --set / --tile-size, shared by commands
    compare           MSSIM, PSNR and differences of two folders of frames
    conformance       the conformance scenes, tilesim against Mesa
    goldens           golden frames and their manifests, accepted against Mesa when made
    suite             glmark2-es2 and es2gears captured, imported, rendered and compared
    coherence         every technique against the baseline, frame by frame
    characterize      the workload columns of Tables 3.3 and 3.4
    dsr_search        fitting DSR's parameters (Algorithms 5, 6), cross-validated
    reference_timing  the cycle-level reference beside the analytic model
    quad_stream       the renderer's recording hook that feeds the cycle-level reference
    core_draws        a trace's draws as the shader core's workloads (``tilesim core``)

Layering (pyproject's contracts): ``study`` > ``report`` > ``study_results`` > the rest. The
studies may import the render layers, ``tilesim.timing``, ``tilesim.shaders`` and the base;
never ``tilesim.prediction``, ``tilesim.scheduling`` or the command line.
"""
