"""A griffe extension for the documentation site (mkdocs.yml): the docstrings cross-reference
with Sphinx roles (:func:`simulate`, :class:`~attndyn.claims.base.Control`), which mkdocstrings
would print verbatim; this turns each into inline code of the name (the last component with
``~``), as Sphinx displays it."""

from __future__ import annotations

import re
from typing import Any

from griffe import Extension, Object

ROLE = re.compile(r":(?:func|class|mod|meth|attr|data|obj|exc):`(~?)([^`]+)`")


def plain(text: str) -> str:
    """``text`` with every Sphinx role replaced by inline code of its target."""
    return ROLE.sub(lambda m: f"`{m[2].rsplit('.', 1)[-1] if m[1] else m[2]}`", text)


class SphinxRoles(Extension):
    def on_object(self, *, obj: Object, **kwargs: Any) -> None:
        if obj.docstring is not None:
            obj.docstring.value = plain(obj.docstring.value)
