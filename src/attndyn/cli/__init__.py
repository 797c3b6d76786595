"""The ``attndyn`` command line (:mod:`.app`), a thin layer over the Python API."""

from attndyn.cli.app import main

__all__ = ["main"]
