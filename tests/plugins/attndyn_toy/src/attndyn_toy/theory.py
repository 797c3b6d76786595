"""The toy's closed-form theory (see the package docstring)."""

from attndyn_toy import SUMMARY, predict
from attndyn_toy import Grid as Config

__all__ = ["Config", "SUMMARY", "predict"]
