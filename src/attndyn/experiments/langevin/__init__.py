"""Experiments on stochastic training of attention and LoRA (arXiv 2605.07959): one module per claim."""
