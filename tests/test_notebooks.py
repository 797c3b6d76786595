"""The example notebooks (docs/notebooks/*.py, jupytext percent format; docs/notebooks.md): each is
in mkdocs.yml's nav and on the notebooks page, parses as a notebook with a title, compiles, keeps
every run out of the repository (a temporary results folder), and the plug-in notebook writes the
toy package's files as they are. Executing them is the site build's job (.ci/run:
``mkdocs build --strict`` runs every notebook through mkdocs-jupyter and fails on a cell error)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

jupytext = pytest.importorskip("jupytext")

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
NOTEBOOKS = sorted((DOCS / "notebooks").glob("*.py"))
TOY = ROOT / "tests" / "plugins" / "attndyn_toy" / "src" / "attndyn_toy"
FAMILIES = ("aim", "circuits", "markov", "query", "langevin")
# calls that write to or read a results folder: each must name one (``out=``)
STORE_CALLS = {"simulate", "predict", "run", "results", "run_sweep", "plan_sweep"}


def nav_notebooks() -> set[str]:
    text = (ROOT / "mkdocs.yml").read_text()
    nav = text[text.index("\nnav:") :]
    return set(re.findall(r"^\s*-\s+(?:[^:\n]+:\s+)?(notebooks/[\w.-]+\.py)\s*$", nav, flags=re.M))


def code(cell) -> str:
    """A code cell's Python: IPython magics (``%matplotlib``, ``%%writefile``) left out."""
    return "\n".join(line for line in cell.source.splitlines() if not line.startswith("%"))


def test_there_is_a_notebook_per_family_and_a_plugin_one():
    names = {p.stem for p in NOTEBOOKS}
    assert names >= {*FAMILIES, "plugin"}, names


def test_every_notebook_is_in_the_nav_and_on_the_notebooks_page():
    listed = {f"notebooks/{p.name}" for p in NOTEBOOKS}
    assert listed == nav_notebooks()
    page = (DOCS / "notebooks.md").read_text()
    for p in NOTEBOOKS:
        assert f"](notebooks/{p.name})" in page, f"docs/notebooks.md does not link {p.name}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_is_valid_jupytext(path):
    text = path.read_text()
    nb = jupytext.reads(text, fmt="py:percent")
    assert nb.metadata["kernelspec"]["language"] == "python"
    assert nb.metadata["jupytext"]["text_representation"]["format_name"] == "percent"
    # written back, it is the same file (but the version lines jupytext adds to the header): the
    # canonical form, magics commented, so that the file is plain Python
    written = jupytext.writes(nb, "py:percent")
    back = re.sub(r"^#       (format|jupytext)_version: .*\n", "", written, flags=re.M)
    assert back.strip() == text.strip()
    first = nb.cells[0]
    assert first.cell_type == "markdown" and first.source.startswith("# "), "a title first"
    cells = [c for c in nb.cells if c.cell_type == "code"]
    assert cells and all(not c.get("outputs") for c in cells), "no outputs in git"
    for i, cell in enumerate(cells):
        compile(code(cell), f"{path.name}, code cell {i}", "exec")
    # inline figures: attndyn.plot returns a Figure outside pyplot, shown by evaluating it
    assert cells[0].source.startswith("%matplotlib inline")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_writes_only_to_a_temporary_folder(path):
    nb = jupytext.read(path)
    source = "\n".join(code(c) for c in nb.cells if c.cell_type == "code"
                       and not c.source.startswith("%%writefile"))  # fmt: skip
    assert "tempfile.mkdtemp" in source
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute | ast.Name):
            name = node.func.attr if isinstance(node.func, ast.Attribute) else node.func.id
            if name in STORE_CALLS and name != "results":
                assert any(k.arg == "out" for k in node.keywords) or len(node.args) >= 2, (
                    f"{path.name}: {ast.unparse(node)} names no results folder"
                )
            elif name == "results":
                assert node.args, f"{path.name}: attndyn.results() without a folder"


def test_plugin_notebook_writes_the_toy_package_as_it_is():
    nb = jupytext.read(DOCS / "notebooks" / "plugin.py")
    written = {}
    for cell in nb.cells:
        first, _, body = cell.source.partition("\n")
        if cell.cell_type == "code" and first.startswith("%%writefile"):
            written[first.split("/")[-1]] = body
    assert set(written) == {"__init__.py", "theory.py", "experiment.py"}
    for name, body in written.items():
        assert body.strip() == (TOY / name).read_text().strip(), name
