"""Layering: no import cycle anywhere in src/attndyn, counting module-level and function-level
imports alike, and nothing above models/ names a family."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

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


def test_the_graph_sees_function_level_imports():
    graph = import_graph()
    assert "attndyn.experiments.runner" in graph["attndyn.sweep.tasks"]  # a function-level import
    assert "attndyn.runs" in graph["attndyn.api"]


def test_a_planted_cycle_is_found():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(graph) == [["a", "b", "c"]]


def test_no_import_cycle():
    assert cycles(import_graph()) == []


def test_nothing_above_models_imports_a_family():
    """core/, store/, sweep/, runs, api, cli and the experiment framework reach families only
    through the registry (attndyn.models.get_family)."""
    graph = import_graph()
    families = {m for m in graph if m.count(".") >= 2 and m.startswith("attndyn.models.")}
    families -= {"attndyn.models.base"}
    above = [m for m in graph if not m.startswith(("attndyn.models.", "attndyn.experiments."))]
    above += ["attndyn.experiments", "attndyn.experiments.base", "attndyn.experiments.runner"]
    bad = {m: sorted(graph[m] & families) for m in above if graph[m] & families}
    assert bad == {}


def test_import_attndyn_does_not_import_jax():
    code = "import sys, attndyn; attndyn.results; print('jax' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
