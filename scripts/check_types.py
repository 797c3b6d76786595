"""Type-check src/ with mypy against a baseline that may only shrink (issue 27, item 7).

    python scripts/check_types.py [MYPY OPTION ...]   # e.g. --python-executable .venv/bin/python

pyproject.toml's [tool.mypy] sets what is checked; its override with ``ignore_errors = true``
lists the modules that had type errors when the check was added (the baseline). This script runs
mypy once with that override removed and fails (exit 1) when

- a module outside the baseline has an error (fix it: new code is typed), or
- a module in the baseline has none (delete its line: the baseline only shrinks).

Plain ``mypy`` with pyproject.toml as it is passes whenever this script does.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ERROR = re.compile(r"^(?P<path>[^:\n]+\.pyi?):\d+(?::\d+)?: error: ", re.M)


def baseline(config: dict) -> tuple[list[str], list[dict]]:
    """The modules of the ``ignore_errors`` override and the other overrides."""
    listed: list[str] = []
    others = []
    for override in config.get("overrides", []):
        if override.get("ignore_errors"):
            modules = override["module"]
            listed += [modules] if isinstance(modules, str) else modules
        else:
            others.append(override)
    return listed, others


def module_name(path: str) -> str:
    """``src/attndyn/core/ode.py`` -> ``attndyn.core.ode`` (a package's ``__init__`` -> the
    package)."""
    parts = list(Path(path).with_suffix("").parts)
    if parts and parts[0] == "src":
        parts = parts[1:]
    if parts and parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _toml(value) -> str:
    # the subset [tool.mypy] uses: strings, booleans, numbers and lists of them
    if isinstance(value, list):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value)
    return str(value)


def config_without_baseline(config: dict, others: list[dict]) -> str:
    """[tool.mypy] as TOML text with the ``ignore_errors`` override left out."""
    lines = ["[tool.mypy]"]
    lines += [f"{k} = {_toml(v)}" for k, v in config.items() if k != "overrides"]
    for override in others:
        lines += ["", "[[tool.mypy.overrides]]"]
        lines += [f"{k} = {_toml(v)}" for k, v in override.items()]
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["mypy"]
    listed, others = baseline(config)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "mypy.toml"
        path.write_text(config_without_baseline(config, others))
        proc = subprocess.run(
            [sys.executable, "-m", "mypy", "--config-file", str(path), *argv],
            cwd=ROOT, capture_output=True, text=True,
        )  # fmt: skip
    if proc.returncode not in (0, 1) or (proc.returncode == 1 and not ERROR.search(proc.stdout)):
        print(proc.stdout + proc.stderr, end="", file=sys.stderr)
        print(f"check_types: mypy exited {proc.returncode} without type errors", file=sys.stderr)
        return 2
    failing = {module_name(m["path"]) for m in ERROR.finditer(proc.stdout)}
    new = sorted(failing - set(listed))
    fixed = sorted(set(listed) - failing)
    if new:
        lines = [ln for ln in proc.stdout.splitlines() if module_name(ln.split(":")[0]) in new]
        print("\n".join(lines))
        print(f"check_types: type errors in {len(new)} module(s) outside the baseline: {new}")
    if fixed:
        print(
            f"check_types: {fixed} now pass: delete them from the ignore_errors override in "
            "pyproject.toml"
        )
    if new or fixed:
        return 1
    print(f"check_types: ok ({len(listed)} modules in the baseline, no error outside it)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
