"""Experiments of the langevin family (arXiv 2605.07959, reconstruction: docs/langevin.md)."""
