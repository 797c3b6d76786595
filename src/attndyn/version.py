"""The package version and how to cite attndyn: one place (pyproject.toml reads ``__version__``;
CITATION.cff and CHANGELOG.md's newest release agree with it, tests/test_release.py)."""

__version__ = "0.2.0"
RELEASED = "2026-12-07"
"""The date of the release ``__version__``."""

TITLE = "attndyn: a laboratory for the learning dynamics of attention"
AUTHORS = ("the attndyn developers",)
"""The title and authors attndyn is cited under (``attndyn cite``, CITATION.cff)."""
