"""Experiments on stochastic training (arXiv 2605.07959, reconstructed in docs/langevin.md): one
module per claim."""
