"""The README's Python API example (one-call plotting) runs as written, at a smaller size."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

README = Path(__file__).resolve().parents[1] / "README.md"


@pytest.mark.slow  # 7 CPU s
def test_readme_plotting_example_runs(tmp_path, monkeypatch):
    """The README's Python API example up to "# reproduce", as written except for its sizes
    (``common`` at d = 32, lr = 0.02, two seeds, eight records instead of d = 128; at lr = 0.05
    and d ≤ 24 the seeds diverge)."""
    block = re.search(r"```python\n(import attndyn\n.*?)```", README.read_text(), re.S).group(1)
    head = block.split("# reproduce a published claim")[0]
    assert "attndyn.plot(tied, theory" in head
    small = "common = dict(d=32, activation='h2', lr=0.02, batch=32, seeds=2, records=8)"
    code, n = re.subn(r"^common = dict\(.*\)$", small, head, flags=re.M)
    assert n == 1
    monkeypatch.chdir(tmp_path)
    scope: dict = {}
    exec(compile(code, "README.md", "exec"), scope)
    fig, theory = scope["fig"], scope["theory"]
    assert not scope["tied"]["diverged"].any() and not scope["direct"]["diverged"].any()
    assert (tmp_path / "tied.png").stat().st_size > 0 and len(fig.axes) == 3
    line = next(ln for ln in fig.axes[0].get_lines() if ln.get_label() == "theory")
    np.testing.assert_array_equal(line.get_xdata(), theory["time"].values)
    assert not list(tmp_path.glob("attndyn-results"))  # stored in $ATTNDYN_RESULTS (conftest)
