"""Machinery shared by every model family: configs, time grids, schedules, update rules (optax),
the trainer and the Trajectory container. Imports no family."""
