"""Issue 48 item 6: a config's peak memory is estimated from its config before anything is
allocated (each family's ``memory_terms``), and a config above the machine's memory is refused
in under 5 s with one line naming the fields and the estimate, exit 2, nothing written; the dry
run answers at once for it."""

from __future__ import annotations

import json
import time

import pytest
from helpers import cli

from attndyn.models import family_names, get_family
from attndyn.runs import family_config, memory

GIB = 2**30

PROBES = {  # the probes: each ended in an out-of-memory traceback
    "circuits": dict(t_max=20, seeds=4096, vocab=4096, seq_len=8192, batch=65536),
    "langevin": dict(model="quadratic", dim=10**6, seeds=4096),
    "query": dict(d=65536, n_nuisance=10**7),
    "markov": dict(d=10**5, m=16384),
}
FIELDS = {  # fields the refusal names (through its largest terms)
    "circuits": ("seeds", "batch", "seq_len"),
    "langevin": ("seeds", "dim"),
    "query": ("seeds", "batch", "n_nuisance", "d"),
    "markov": ("seeds", "d²", "m"),
}


@pytest.fixture
def machine_16gb(monkeypatch):
    """A machine with 16 GiB available, whatever this one has (the probes stay refused on a
    larger machine too, and no test ever tries to allocate them)."""
    monkeypatch.setenv(memory.ENV, str(16 * GIB))


def _warm(family, monkeypatch, capsys, tmp_path):
    """Load the family and the command line once (JAX, typer, rich: the process's start-up, not
    the check) with a config refused by validation."""
    get_family(family)
    code, _, _ = cli(monkeypatch, capsys, "simulate", family, "--set", "seeds=0", "--out", tmp_path)
    assert code == 2


def _sets(values):
    return [x for k, v in values.items() for x in ("--set", f"{k}={v}")]


@pytest.mark.parametrize("family", sorted(PROBES))
def test_over_large_config_refused_fast_one_line_exit_2_nothing_written(
    family, machine_16gb, tmp_path, monkeypatch, capsys
):
    _warm(family, monkeypatch, capsys, tmp_path)
    out = tmp_path / "results"
    start = time.perf_counter()
    code, stdout, stderr = cli(
        monkeypatch, capsys, "simulate", family, *_sets(PROBES[family]), "--out", out
    )
    took = time.perf_counter() - start
    assert code == 2, stderr
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: {family} config needs an estimated")
    assert "above the 17.2 GB" in lines[0]  # the estimate against the machine's figure
    for field in FIELDS[family]:
        assert field in lines[0], (field, lines[0])
    assert took < 5, took
    assert not out.exists() or not any(out.rglob("*.parquet"))


@pytest.mark.parametrize("family", sorted(PROBES))
def test_dry_run_of_over_large_config_answers_without_calibrating(
    family, machine_16gb, tmp_path, monkeypatch, capsys
):
    _warm(family, monkeypatch, capsys, tmp_path)
    start = time.perf_counter()
    code, stdout, stderr = cli(
        monkeypatch,
        capsys,
        "simulate",
        family,
        *_sets(PROBES[family]),
        "--dry-run",
        "--json",
        "--out",
        tmp_path / "results",
    )
    took = time.perf_counter() - start
    assert code == 0, stderr
    payload = json.loads(stdout)
    assert payload["error"].startswith("not calibrated: needs an estimated")
    assert payload["peak"]["memory_bytes"] > 16 * GIB
    assert took < 5, took


def test_config_just_under_the_limit_runs_and_just_over_is_refused(
    tiny, tmp_path, monkeypatch, capsys
):
    config = family_config("aim", tiny)
    needs = memory.estimate("aim", config).total
    assert needs > 0
    out = tmp_path / "results"
    args = ("simulate", "aim", *_sets(tiny), "--out", out, "--yes", "--json")
    monkeypatch.setenv(memory.ENV, str(needs - 1))
    code, _, stderr = cli(monkeypatch, capsys, *args)
    assert code == 2 and "aim config needs an estimated" in stderr
    assert not out.exists() or not any(out.rglob("*.parquet"))
    monkeypatch.setenv(memory.ENV, str(needs + 1))
    code, stdout, stderr = cli(monkeypatch, capsys, *args)
    assert code == 0, stderr
    assert json.loads(stdout)["reused"] is False


def test_api_refuses_before_computing(tiny, monkeypatch):
    import attndyn

    monkeypatch.setenv(memory.ENV, "1000")
    with pytest.raises(memory.TooLarge, match="aim config needs an estimated"):
        attndyn.simulate("aim", **tiny)


@pytest.mark.parametrize("family", family_names())
def test_every_family_declares_a_positive_estimate_growing_with_seeds(family):
    module = get_family(family)
    config = family_config(family, dict(module.EXAMPLE))
    one = memory.estimate(family, config, 1)
    assert one.known and one.total > 0
    assert memory.estimate(family, config, 8).total > one.total


def test_available_memory_is_the_machines_figure(monkeypatch):
    monkeypatch.delenv(memory.ENV, raising=False)
    available, source = memory.available_bytes()
    assert 0 < available < float("inf")
    assert "available" in source or "free" in source
    monkeypatch.setenv(memory.ENV, "many")
    with pytest.raises(memory.InputError, match=memory.ENV):
        memory.available_bytes()


def test_family_without_estimate_is_not_checked(monkeypatch, tiny):
    from attndyn.models.base import no_memory_terms

    module = get_family("aim")
    monkeypatch.setattr(module, "memory_terms", no_memory_terms)
    monkeypatch.setenv(memory.ENV, "1")
    est = memory.check("aim", family_config("aim", tiny))
    assert not est.known
