"""Experiments on single-query softmax attention (arXiv 2606.22406): one module per claim."""
