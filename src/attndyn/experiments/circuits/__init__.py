"""Experiments on the QK/OV circuits family (arXiv 2608.06776): one module per published claim."""
