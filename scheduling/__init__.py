"""Several applications on one non-preemptive GPU: FG-SDS with Highest Priority First.

The specification is seed 004 (*Fine-Grained Semantics Driven Scheduling of OpenGL ES 2.0
applications on a GPU*), ch. 4-6: frames split into command blocks by command semantics
(§4.1.3, §5.3), per-thread queues (§5.2), the scheduling thread and HPF with its deadline
guard (§5.7, Table 5-15), frame-rate restricted scheduling (FRRS, §6.4), the automotive
scenarios MTS-1 and MTS-2 (§6.2) and the metrics AFR, PMD and PD-FFT (§6.3).

Modules, bottom up:

``blocks``
    command blocks (what the scheduler sees: predicted and actual seconds), the split of a
    recorded frame into blocks, predictors (exact, injected error, history, safety margin).
``policies``
    the scheduling thread's choice: none (driver FIFO), FRRS, HPF (three dispatch modes,
    with the deadline guard) and EDF.
``simulation``
    the discrete-event model (SimPy): rendering threads, the scheduling thread with its
    decision overhead, one GPU that runs dispatched blocks to completion in order.
``metrics``
    AFR, PMD and the PD-FFT histogram of finish times relative to deadlines.
``robustness``
    the highest-priority application's PMD under injected prediction error, or under any set
    of predictors, x safety margins; the errors of the predictions a run made.
``scenarios``
    MTS-1 and MTS-2 from tilesim workloads rendered and timed (``scenarios.toml``; the block
    costs kept in ``blocks.json``: seconds and fragments shaded per block).
``actual``
    the blocks' actual times measured on Mesa llvmpipe / softpipe instead of the timing
    model (``tilesim schedule --actual gl-DRIVER``, through the prediction issue's
    ``GLBackend``), cached per application, driver and timer.
``estimators``
    the prediction issue's estimators (``tilesim predict --estimator``) and its history
    baseline as the scheduler's predictors, over the blocks' recorded commands.
``command``
    ``tilesim schedule``.

``blocks``, ``policies``, ``simulation``, ``metrics`` and ``robustness`` import neither the
renderer nor the timing model (an import-linter contract in ``pyproject.toml``): any block
stream (a trace timed by tilesim, a real driver's timer queries, a hand-made test) schedules
the same way.
"""
