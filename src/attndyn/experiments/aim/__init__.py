"""Experiments on the AIM family (arXiv 2609.03858): one module per published claim."""
