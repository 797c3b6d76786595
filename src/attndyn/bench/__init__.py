"""Benchmarks of attndyn's simulators (``attndyn bench``); not run by the test suite.

:mod:`attndyn.bench.aim` times tied AIM online SGD against the machine's float32 matmul throughput
and against a plain PyTorch eager loop.
"""
