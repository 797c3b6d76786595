"""Issue 48 item 6, time: a run's FLOPs floor (each family's ``flops_floor`` over the measured
matmul peak) bounds its time from below before anything is calibrated, so ``simulate aim --set
d=4096`` (222 s of calibration before) is refused in under 5 s, and a dry run at d = 10,007
answers in seconds."""

from __future__ import annotations

import json
import time

import numpy as np
import pytest
from helpers import cli

from attndyn.models.aim import flops, words
from attndyn.models.aim.observables import index_matrices, letters
from attndyn.runs import estimate, family_config


def _warm(monkeypatch, capsys, tmp_path):
    """Load the command line, JAX and the matmul peak once (process start-up, not the check)."""
    estimate.peak_flops()
    code, _, _ = cli(monkeypatch, capsys, "simulate", "aim", "--set", "seeds=0", "--out", tmp_path)
    assert code == 2


def test_large_aim_run_refused_by_its_floor_in_seconds(tmp_path, monkeypatch, capsys):
    _warm(monkeypatch, capsys, tmp_path)
    out = tmp_path / "results"
    start = time.perf_counter()
    code, _, stderr = cli(monkeypatch, capsys, "simulate", "aim", "--set", "d=4096", "--out", out)
    took = time.perf_counter() - start
    assert code == 2, stderr
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and "at least: its FLOPs over the measured matmul peak" in lines[0]
    assert "above --max-hours 1" in lines[0]
    assert took < 5, took
    assert not out.exists() or not any(out.rglob("*.parquet"))


def test_dry_run_at_d_10007_answers_with_the_floor(tmp_path, monkeypatch, capsys):
    _warm(monkeypatch, capsys, tmp_path)
    args = ("simulate", "aim", "--set", "d=10007", "--set", "t_max=0.1", "--dry-run", "--json")
    start = time.perf_counter()
    code, stdout, stderr = cli(monkeypatch, capsys, *args, "--out", tmp_path / "results")
    took = time.perf_counter() - start
    assert code == 0, stderr
    payload = json.loads(stdout)
    assert payload["error"].startswith("not calibrated: its first short run alone")
    assert payload["floor_seconds"] > 3600
    assert took < 5, took


@pytest.mark.slow  # six calibrations: about 10 CPU s
@pytest.mark.parametrize(
    "values",
    [
        dict(),
        dict(param="untied"),
        dict(param="direct"),
        dict(heads=2, teacher="product"),
        dict(teacher="identity", batch=8, L=3),
        dict(param="untied", moment_degree=4),
    ],
)
def test_floor_is_below_xlas_count_and_the_prefixes_are_exact(values):
    """The step floor is at most XLA's operation count of the compiled step (all seeds), and the
    number of d×d products of the observation equals the prefixes word_traces computes."""
    config = family_config("aim", dict(d=24, seeds=2, t_max=0.01, records=2, **values))
    est = estimate.calibrate("aim", config)
    step, _ = flops.flops_floor(config, 2)
    assert est.flops_per_step is not None and 0 < step <= est.flops_per_step

    class Counted(np.ndarray):
        calls = 0

        def __matmul__(self, other):
            Counted.calls += 1
            return (np.asarray(self) @ np.asarray(other)).view(Counted)

    rng = np.random.default_rng(0)
    ks, kt = config.n_student, config.n_teacher
    side = {
        "tied": {"F": rng.standard_normal((ks, 6, 3))},
        "direct": {"S": rng.standard_normal((ks, 6, 6))},
        "untied": {"U": rng.standard_normal((ks, 6, 3)), "V": rng.standard_normal((ks, 6, 3))},
    }[config.param]
    teacher = {
        "wishart": {"F": rng.standard_normal((kt, 6, 3))},
        "identity": {"F": np.broadcast_to(np.eye(6), (kt, 6, 6))},
        "product": {"U": rng.standard_normal((kt, 6, 3)), "V": rng.standard_normal((kt, 6, 3))},
    }[config.teacher_kind]
    alphabet = letters(index_matrices(side) + index_matrices(teacher))
    names = list(alphabet)
    transpose = {z: alphabet[z][1] for z in names}
    ws = [
        w
        for n in range(3, config.moment_degree + 1)
        for w in words.canonical_words(names, transpose, n)
    ]
    words.word_traces({z: np.asarray(alphabet[z][0]).view(Counted) for z in names}, ws)
    assert Counted.calls == flops.prefix_products(config)


def test_family_without_a_floor_has_none():
    config = family_config("circuits", {})
    assert estimate.floor_seconds("circuits", config) == 0.0


@pytest.mark.slow  # one calibration: about 3 CPU s
def test_floor_of_mixed_heads_is_below_xlas_count():
    """Per-head parameterisations (tied and untied student heads, a product and a Wishart
    teacher head): each index counts its own projections."""
    config = family_config(
        "aim",
        dict(
            d=24,
            seeds=2,
            t_max=0.01,
            records=2,
            heads=2,
            head_params=["tied", "untied"],
            teacher_head_kinds=["product", "wishart"],
        ),  # fmt: skip
    )
    est = estimate.calibrate("aim", config)
    step, record = flops.flops_floor(config, 2)
    assert est.flops_per_step is not None and 0 < step <= est.flops_per_step
    assert record > 0
