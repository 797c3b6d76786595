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
