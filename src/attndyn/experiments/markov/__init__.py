"""Experiments on the one-layer transformer on Markov chains (arXiv 2605.01199)."""
