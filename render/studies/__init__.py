"""What people run: each module is a study or a command of ``tilesim``.

    study            ``tilesim run``: the main job, every workload and technique, resumable
    study_results    its results.json and tilesim.open_results (pandas, xarray)
    study_report     its index.html, readable offline
    study_sections   the studies ``tilesim run --all`` adds (core, predict, schedule, goldens)
    render_command   ``tilesim render``: frames, counters and summaries of traces
    batch            render jobs on Dask, resumable, with their output-folder identity
    compare          ``tilesim compare``: MSSIM, PSNR and differences of two folders of frames
    conformance      ``tilesim conformance``: the conformance scenes, tilesim against Mesa
    goldens          ``tilesim goldens``: golden frames, accepted against Mesa when made
    suite            ``tilesim suite``: glmark2-es2 and es2gears captured, imported, compared
    coherence        ``tilesim coherence``: every technique against the baseline
    characterize     ``tilesim characterize``: the workload columns of Tables 3.3 and 3.4
    dsr_search       ``tilesim dsr-search``: fitting DSR's parameters (Algorithms 5, 6)
    estimate         ``tilesim estimate``: time, energy and traffic from a render's counters
    dask_cluster     the one way to run tasks on Dask (a local cluster or a scheduler)

The top layer: may import everything below (``traces``, ``reference``, ``workloads``,
``techniques``, ``pipeline``, ``gl``), ``tilesim.timing``, ``tilesim.shaders`` and the base.
"""
