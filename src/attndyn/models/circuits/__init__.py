"""QK/OV circuits toy of Vashisht & Ramaswamy (ICML 2026, arXiv 2608.06776); see docs/circuits.md."""

NAME = "circuits"
