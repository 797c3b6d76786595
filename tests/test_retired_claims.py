"""A claim's history is data (issue 49 item 1; docs/claims.md, "Retired claims"): a claim changed
after it failed keeps its old statement, target and failing value as a
:class:`~attndyn.claims.spec.Retired` record, shown on its claims page, by ``attndyn describe``
and in the report."""

from __future__ import annotations

import datetime
import re

import pytest

from attndyn.claims import Retired, experiment_names, get_experiment
from attndyn.claims.pages import render
from attndyn.claims.runner import PRESETS, experiment_config

WITH_RETIRED = [n for n in experiment_names() if get_experiment(n).retired]


def _declared_patterns(name: str) -> list[re.Pattern]:
    """Every claim name the experiment declares at any preset, and each declaration's pattern
    (``split-rate-{}`` matches ``split-rate-{case}``)."""
    exp = get_experiment(name)
    names = set()
    for preset in (p for p in PRESETS if p in exp.presets):
        names |= set(exp.claim_names(experiment_config(name, preset, {})[1]))
    patterns = [re.compile(re.escape(n) + "$") for n in names]
    for spec in type(exp).claims:
        pattern = re.escape(spec.named("\0")).replace("\0", r"\{[^}]*\}")
        patterns.append(re.compile(pattern + "$"))
    return patterns


def test_the_four_changed_claims_named_by_the_referee_are_retired_records():
    """aim-parameterization's trapped bound, langevin-plateau's first-order Laplace ratio,
    markov-stages' entropy rank and aim-direct-escape's h3 ratio (issue 49's list)."""
    named = {(n, r.name) for n in WITH_RETIRED for r in get_experiment(n).retired}
    for exp, old in (
        ("aim-parameterization", "direct-{h2,h3}-trapped (√d scale)"),
        ("langevin-plateau", "laplace-attention (first order)"),
        ("markov-stages", "rank-steps (entropy rank)"),
        ("aim-direct-escape", "h3-slower-than-h1"),
    ):
        assert (exp, old) in named


@pytest.mark.parametrize("name", WITH_RETIRED)
def test_a_retired_record_is_complete_and_points_at_what_replaced_it(name):
    patterns = _declared_patterns(name)
    # a replacement may itself have been retired later (a chain ends in a claim or "reported")
    patterns += [re.compile(re.escape(r.name) + "$") for r in get_experiment(name).retired]
    for r in get_experiment(name).retired:
        assert isinstance(r, Retired)
        for field in ("name", "statement", "target", "failed", "why", "now"):
            assert getattr(r, field).strip(), (name, r.name, field)
        assert datetime.date.fromisoformat(r.retired) <= datetime.date.today()
        # a number in the failing value: the old result itself, not a description of it
        assert re.search(r"\d", r.failed), (name, r.name)
        if r.now.startswith(("reported", "dropped")):
            continue
        for replacement in r.now.split(", "):
            claim = replacement.split(" (")[0]
            assert any(p.match(claim) for p in patterns), (name, r.name, claim)


@pytest.mark.parametrize("name", WITH_RETIRED)
def test_the_claims_page_shows_every_retired_record(name):
    exp = get_experiment(name)
    page = render(exp, {})
    section = page.split("## Retired claims", 1)[1].split("\n## ", 1)[0]
    for r in exp.retired:
        assert f"| `{r.name}` |" in section and r.retired in section


def test_an_experiment_without_retired_claims_has_no_such_section():
    plain = next(n for n in experiment_names() if not get_experiment(n).retired)
    assert "## Retired claims" not in render(get_experiment(plain), {})


def test_describe_shows_the_retired_records(capsys):
    from rich.console import Console

    from attndyn.cli.ui.describe import describe_experiment
    from attndyn.cli.ui.describe import render as show

    info = describe_experiment("aim-strong-recovery")
    assert [r["name"] for r in info["retired"]] == ["pl-rate-d{}"]
    assert "0.908 [0.891, 0.925]" in info["retired"][0]["failed"]
    show(info, Console(width=200, force_terminal=False))
    out = capsys.readouterr().out
    assert "retired claims" in out and "pl-rate-d{}" in out and "0.908" in out
    # the retired table is not read back as a claims table (its meanings stay the declared)
    assert all(c["name"] != "pl-rate-d{}" for c in info["claims"])


def test_the_report_page_of_an_experiment_shows_its_retired_claims():
    from attndyn.report import sitedata
    from attndyn.report.site import _environment

    retired = sitedata._retired("aim-parameterization")
    assert retired and retired[0]["name"].startswith("direct-{h2,h3}-trapped")
    assert sitedata._retired("no-such-experiment") == []
    e = {
        "experiment": "aim-parameterization", "preset": "tiny", "control": None,
        "verdict": "passed", "paper": "", "key": "k", "created": None, "wall_s": None,
        "claims": [], "preconditions": [], "run_ids": [], "config": {}, "summary": {},
        "retired": retired,
    }  # fmt: skip
    html = _environment().get_template("experiment.html").render(
        e=e, figure=None, runs={}, cols=[], up="../", root="", written="", n_runs=0,
        n_problems=0,
    )  # fmt: skip
    assert "Retired claims" in html and "1.00 [0.75, 1.25]" in html
