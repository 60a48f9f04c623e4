"""Execution-time prediction of GPU command groups (seeds 000 and 003).

    command_groups   a trace cut into command groups (the unit predicted and measured)
    predictor        the Predictor: command models, fragment-count estimators, calibration
    ground_truth     measured times of the same groups on Mesa (glFinish and timer queries)

``tilesim predict`` (``tilesim.cli.predict``) drives them; the scheduler
(``tilesim.scheduling``) takes its block times from here.
"""
