"""Helpers shared by test modules (imported as ``from helpers import cli``)."""

from __future__ import annotations

import sys


def cli(monkeypatch, capsys, *args):
    """Run the real entry point in this process: (exit code, stdout, stderr)."""
    from attndyn.cli import main

    monkeypatch.setattr(sys, "argv", ["attndyn", *map(str, args)])
    try:
        main()
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    out, err = capsys.readouterr()
    return code, out, err


def quadratic_gauss_newton():
    """The ROS2 solver's GaussNewton of L = ½‖Cy‖² (state holds C, 4×4): u = z = Cy, H = I,
    L and its Gram by autodiff."""
    import jax.numpy as jnp

    from attndyn.core.flow import GaussNewton, autodiff_gram, autodiff_linearize

    def inner(p, s):
        return s["C"] @ p["y"]

    return GaussNewton(
        autodiff_linearize(inner), lambda u, s: u, lambda z, s: jnp.eye(4), autodiff_gram(inner)
    )
