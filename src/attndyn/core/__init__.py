"""Machinery shared by every model family: configs, time grids, schedules, the trainer and the
Trajectory container. Imports no family."""
