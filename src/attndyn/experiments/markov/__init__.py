"""Experiments on the one-layer transformer of arXiv 2605.01199 (focus and dilution)."""
