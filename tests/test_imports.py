"""Layering: no import cycle anywhere in src/attndyn, counting module-level and function-level
imports alike, and nothing above models/ names a family."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

import attndyn

ROOT = Path(attndyn.__file__).parent


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph() -> dict[str, set[str]]:
    """module → attndyn modules it imports explicitly (anywhere in its body)."""
    modules = {_module_name(p): p for p in ROOT.rglob("*.py")}
    graph: dict[str, set[str]] = {m: set() for m in modules}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text())):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join([*anchor, base] if base else anchor)
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base
                           for a in node.names]  # fmt: skip
            for target in targets:
                while target and target not in modules:
                    target = target.rpartition(".")[0]
                if target and target != name:
                    graph[name].add(target)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(10_000)
    for v in graph:
        if v not in index:
            visit(v)
    return out


# The layers, top to bottom: a module imports only modules of its own package or of a layer
# below (README "Layout"). The package face (attndyn, api) sits under the command line; errors
# and version are leaves that every layer may use.
LAYERS: list[tuple[str, ...]] = [
    ("attndyn.__main__",),
    ("attndyn.cli",),
    ("attndyn",),
    ("attndyn.api",),
    ("attndyn.report", "attndyn.sweep"),
    ("attndyn.experiments",),
    ("attndyn.claims",),
    ("attndyn.runs", "attndyn.figures"),
    ("attndyn.store", "attndyn.models"),
    ("attndyn.core",),
    ("attndyn.errors", "attndyn.version"),
]


def layer_of(module: str) -> tuple[int, str]:
    """(rank, package) of ``module``: the longest package prefix listed in :data:`LAYERS`."""
    best: tuple[int, str] | None = None
    for rank, packages in enumerate(LAYERS):
        for pkg in packages:
            if (module == pkg or module.startswith(pkg + ".")) and pkg != "attndyn":
                if best is None or len(pkg) > len(best[1]):
                    best = (rank, pkg)
    if best is None and module == "attndyn":
        return (LAYERS.index(("attndyn",)), "attndyn")
    assert best is not None, f"{module} is in no layer: add its package to LAYERS"
    return best


def test_the_graph_sees_function_level_imports():
    graph = import_graph()
    assert "attndyn.claims.runner" in graph["attndyn.sweep.tasks"]  # a function-level import
    assert "attndyn.runs" in graph["attndyn.api"]


def test_a_planted_cycle_is_found():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(graph) == [["a", "b", "c"]]


def test_no_import_cycle():
    assert cycles(import_graph()) == []


def test_no_top_level_module_but_the_package_face():
    top = {p.stem for p in ROOT.glob("*.py")}
    assert top == {"__init__", "__main__", "api", "errors", "version"}


def test_every_import_points_down_the_layers():
    """A module imports only its own package or packages of lower layers: one direction."""
    bad = []
    for module, targets in import_graph().items():
        rank, pkg = layer_of(module)
        for target in targets:
            t_rank, t_pkg = layer_of(target)
            if t_pkg != pkg and t_rank <= rank:
                bad.append(f"{module} -> {target}")
    assert sorted(bad) == []


def test_a_planted_upward_import_is_caught():
    assert layer_of("attndyn.core.trainer")[0] > layer_of("attndyn.models.aim.model")[0]
    assert layer_of("attndyn.claims.runner")[0] > layer_of("attndyn.experiments.aim.untied")[0]


def test_nothing_above_models_imports_a_family_and_no_family_imports_another():
    """Everything outside models/ and experiments/ reaches a family only through the registry
    (attndyn.models.get_family); a family imports no other family."""
    graph = import_graph()
    family_of = {
        m: m.split(".")[2]
        for m in graph
        if m.count(".") >= 2 and m.startswith("attndyn.models.") and m != "attndyn.models.base"
    }
    above = [m for m in graph if not m.startswith(("attndyn.models.", "attndyn.experiments."))]
    bad = {m: sorted(graph[m] & set(family_of)) for m in above if graph[m] & set(family_of)}
    assert bad == {}
    crossing = {
        m: sorted(t for t in graph[m] if t in family_of and family_of[t] != family_of[m])
        for m in family_of
    }
    assert {m: v for m, v in crossing.items() if v} == {}


def test_core_never_looks_up_a_family_or_an_experiment():
    """core/ holds the machinery every family shares: only core.registry reads entry points."""
    users = [
        p.name
        for p in (ROOT / "core").glob("*.py")
        if p.name != "registry.py" and re.search(r"\bregistry\b", p.read_text())
    ]
    assert users == []


def test_import_attndyn_does_not_import_jax():
    code = "import sys, attndyn; attndyn.results; print('jax' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_the_helpers_an_experiment_needs_are_exported():
    """docs/plugins.md, "Experiments": an experiment imports its contract, targets and intervals
    from attndyn.claims and its figure helpers from attndyn.figures (loaded, with matplotlib,
    only when first used: importing attndyn loads neither)."""
    import attndyn.claims
    import attndyn.figures

    needed = {"Base", "Check", "Control", "Evidence", "Experiment", "ExperimentConfig", "above",
              "below", "claim", "jackknife_ci", "mean_ci", "bootstrap_ci", "variant",
              "within"}  # fmt: skip
    assert needed <= set(attndyn.claims.__all__)
    assert {"new_figure", "save_figure"} <= set(attndyn.figures.__all__)
    for module in (attndyn.claims, attndyn.figures):
        for name in module.__all__:
            assert getattr(module, name) is not None, name
    assert "new_figure" in dir(attndyn.figures)
    code = (
        "import sys, attndyn, attndyn.figures; print('matplotlib' in sys.modules); "
        "from attndyn.figures import new_figure; fig, ax = new_figure(); print(type(fig).__name__)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "Figure"]


def test_help_loads_no_heavy_library():
    """``attndyn -h`` (and ``import attndyn``) load neither pandas, DuckDB, xarray, JAX nor
    matplotlib: the package face is lazy (2.2-2.6 s before, 0.43 s after, at load 7 on the
    project's two cores). The first API name used registers ``traj.attndyn``, as does
    ``import attndyn`` after xarray."""
    heavy = ("pandas", "duckdb", "xarray", "jax", "matplotlib", "scipy")
    code = (
        "import sys\nfrom attndyn.cli import main\ntry:\n    main(['-h'])\n"
        "except SystemExit:\n    pass\n"
        f"print(sorted(m for m in {heavy!r} if m in sys.modules), file=sys.stderr)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "Usage" in out.stdout and out.stderr.strip() == "[]", out.stderr
    code = (
        "import attndyn, xarray as xr\nprint(hasattr(xr.Dataset(), 'attndyn'))\n"
        "attndyn.simulate\nprint(hasattr(xr.Dataset(), 'attndyn'), 'simulate' in vars(attndyn))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "True", "True"]
    code = "import xarray as xr, attndyn\nprint(hasattr(xr.Dataset(), 'attndyn'))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["True"]
    code = "import attndyn\nprint('aim' in attndyn.models.family_names())"  # as when eager
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["True"]
    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        attndyn.nothing  # noqa: B018
