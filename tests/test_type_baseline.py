"""The type-check baseline in pyproject.toml names real modules, once each, in order, and the
package ships ``py.typed`` (issue 27, item 7). ``scripts/check_types.py`` (run by .ci/run) runs
mypy and checks that the baseline still matches what fails."""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())


def _baseline() -> list[str]:
    overrides = PYPROJECT["tool"]["mypy"]["overrides"]
    (entry,) = [o for o in overrides if o.get("ignore_errors")]
    return entry["module"]


def _source(module: str) -> Path:
    path = ROOT / "src" / Path(*module.split("."))
    return path / "__init__.py" if path.is_dir() else path.with_suffix(".py")


def test_the_baseline_lists_existing_modules_once_in_order():
    listed = _baseline()
    assert listed == sorted(set(listed)), "keep the ignore_errors list sorted, one line a module"
    missing = [m for m in listed if not _source(m).is_file()]
    assert missing == [], f"baseline modules with no source file (moved or deleted?): {missing}"


def test_the_package_ships_py_typed():
    assert (ROOT / "src" / "attndyn" / "py.typed").is_file()
    assert "py.typed" in PYPROJECT["tool"]["setuptools"]["package-data"]["attndyn"]
