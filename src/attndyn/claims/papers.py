"""The paper an experiment reproduces, read from the convention its module docstring follows:
the docstring opens with ````name```` and, in parentheses before the first colon, the paper
(``(P1 = arXiv 2609.03858, Fig. 2, Cor. 3):``, ``(arXiv 2608.06776, Fig. 3 and §5.3):``).
``attndyn describe`` prints that text as its "paper:" line, and ``attndyn cite NAME`` prints the
BibTeX of the arXiv ids in it (docs/plugins.md, "Experiments")."""

from __future__ import annotations

import re
import sys

ARXIV_ID = re.compile(r"\b(\d{4}\.\d{4,5})(?:v\d+)?\b")


def paper(doc: str) -> str:
    """The reference an experiment's module docstring opens with: ``name`` (PAPER): …; else the
    first ``arXiv NNNN.NNNNN`` of the docstring; else ``""``."""
    head = " ".join((doc or "").split())
    found = re.match(r"``[^`]+``\s*\((.+?)\):", head)
    if found:
        return found.group(1)
    found = re.search(r"arXiv \d{4}\.\d{4,5}", head)
    return found.group(0) if found else ""


def experiment_doc(name: str) -> str:
    """The module docstring of the experiment registered as ``name`` (InputError if unknown)."""
    from attndyn.claims import get_experiment

    return sys.modules[type(get_experiment(name)).__module__].__doc__ or ""


def paper_of(name: str) -> str:
    """:func:`paper` of the experiment ``name``."""
    return paper(experiment_doc(name))


def arxiv_ids(text: str) -> list[str]:
    """The arXiv ids in ``text``, each once, in order."""
    return list(dict.fromkeys(ARXIV_ID.findall(text)))


def attndyn_entry() -> str:
    """attndyn's own BibTeX entry, from :mod:`attndyn.version` (as CITATION.cff)."""
    from attndyn.version import AUTHORS, RELEASED, TITLE, __version__

    title = TITLE.replace("attndyn", "{attndyn}", 1)
    authors = " and ".join(f"{{{a}}}" for a in AUTHORS)  # braced: a name, not First Last
    return (
        "@software{attndyn,\n"
        f"  title         = {{{title}}},\n"
        f"  author        = {{{authors}}},\n"
        f"  version       = {{{__version__}}},\n"
        f"  year          = {{{RELEASED[:4]}}},\n"
        f"  date          = {{{RELEASED}}},\n"
        "  note          = {MIT licence}\n"
        "}"
    )


def _unlisted(arxiv_id: str) -> str:
    """A minimal entry for an arXiv id that attndyn's references do not hold (a plug-in's)."""
    return (
        f"@misc{{arXiv:{arxiv_id},\n"
        f"  title         = {{arXiv:{arxiv_id}}},\n"
        f"  eprint        = {{{arxiv_id}}},\n"
        "  archivePrefix = {arXiv},\n"
        "  note          = {Not in attndyn's references: complete this entry}\n"
        "}"
    )


JAX_KEY = "jax2018github"


def cite(experiment: str | None = None) -> str:
    """BibTeX for attndyn, for JAX and, with ``experiment``, for the papers it reproduces (the
    arXiv ids of its :func:`paper` line, resolved in attndyn's references by ``eprint``), each
    entry after a ``%`` comment saying why it is there. InputError for an unknown experiment."""
    from attndyn.core.bibtex import by_eprint, references
    from attndyn.version import __version__

    parts = [f"% attndyn {__version__}", attndyn_entry(), "% JAX", references()[JAX_KEY]]
    if experiment is not None:
        line = paper_of(experiment)
        ids = arxiv_ids(line)
        if not ids:
            parts.append(f"% {experiment} names no arXiv paper ({line or 'no paper line'})")
        for arxiv_id in ids:
            found = by_eprint(arxiv_id)
            parts.append(f"% {experiment} reproduces arXiv {arxiv_id} ({line})")
            parts.append(found[1] if found else _unlisted(arxiv_id))
    return "\n".join(f"{p}\n" if p.startswith("@") else p for p in parts).rstrip() + "\n"
