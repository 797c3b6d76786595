"""Reference loops of other frameworks (PyTorch eager, plain NumPy) that ``attndyn bench``
times against the simulators, one module per family.

Kept out of attndyn's runtime code: nothing in :mod:`attndyn` imports this package at module
level; a family's ``bench.py`` imports its module here only when a benchmark asks for the
reference (``torch_reference=True``, or the NumPy baselines). Each module reproduces the
family's model the way a researcher writes it in that framework; the tests of
``tests/test_bench_*.py`` check each against the simulator's gradients or learning curves.
"""
