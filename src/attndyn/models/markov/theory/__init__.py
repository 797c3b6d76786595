"""Theory of the focus–dilution family (arXiv 2605.01199, Section 3): closed forms and flows."""
