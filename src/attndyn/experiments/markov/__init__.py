"""Experiments of the focus–dilution family (arXiv 2605.01199, :mod:`attndyn.models.markov`)."""
