"""docs/claims/NAME.md is written from the experiment's declarations and its measured values
(scripts/claims_pages.py): a page that differs from what the declarations give, or a measured
record whose claims or targets no longer match the declarations, fails here."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from attndyn.claims import experiment_names, get_experiment
from attndyn.claims.pages import render, stale

DOCS = Path(__file__).resolve().parents[1] / "docs" / "claims"
NAMES = experiment_names()


def _measured(name: str) -> dict:
    path = DOCS / "measured" / f"{name}.json"
    return json.loads(path.read_text()) if path.is_file() else {}


@pytest.mark.parametrize("name", NAMES)
def test_the_committed_page_is_what_the_declarations_give(name):
    page = DOCS / f"{name}.md"
    assert page.is_file(), f"run: python scripts/claims_pages.py (docs/claims/{name}.md missing)"
    expected = render(get_experiment(name), _measured(name))
    assert page.read_text() == expected, "stale page: run python scripts/claims_pages.py"


@pytest.mark.parametrize("name", NAMES)
def test_the_measured_values_match_the_declared_claims(name):
    measured = _measured(name)
    assert "tiny" in measured, f"measure it: python scripts/claims_pages.py --measure {name}"
    assert stale(get_experiment(name), measured) == []
    controls = {k.split("/", 1)[1] for k in measured if "/" in k}
    assert controls == set(get_experiment(name).controls), "every control measured at tiny"


def test_a_changed_target_or_claim_makes_the_record_stale():
    name = NAMES[0]
    measured = _measured(name)
    entry = measured["tiny"]
    renamed = {**entry, "claims": [{**entry["claims"][0], "name": "no-such-claim"}]}
    assert stale(get_experiment(name), {"tiny": renamed}) != []
    assert stale(get_experiment(name), {"tiny": entry}) == []


def test_a_changed_threshold_makes_the_record_stale():
    measured = _measured("aim-solvable")
    entry = measured["tiny"]
    claims = [dict(c) for c in entry["claims"]]
    claims[1]["target"] = "< 0.07 (95% CI)"  # sgd-tracks-exact-d64 was measured at track_tol
    problems = stale(get_experiment("aim-solvable"), {"tiny": {**entry, "claims": claims}})
    assert problems and "sgd-tracks-exact-d64" in problems[0]


def test_an_interval_of_one_value_is_written_as_exact():
    """Issue 49 item 5: [v, v] (every seed gave v) is an exact value, not a confidence interval."""
    from attndyn.claims.pages import EXACT, _value

    assert _value({"value": 1.0, "ci_low": 1.0, "ci_high": 1.0, "n_seeds": 8}) == f"1 ({EXACT})"
    assert (
        _value({"value": 0.5, "ci_low": 0.25, "ci_high": 0.75, "n_seeds": 8}) == "0.5 [0.25, 0.75]"
    )
    assert _value({"value": 2.0}) == "2"


def test_the_generated_blocks_of_the_readme_and_claims_md_match_the_records():
    """Issue 49 item 6: the README's experiments table and docs/claims.md's counts, retired
    claims and thin margins are written from the records (scripts/claims_pages.py), so no
    hand-copied verdict can go stale."""
    from attndyn.claims.pages import fill, generated

    for path, blocks in generated(DOCS.parents[1]).items():
        text = path.read_text()
        assert fill(text, blocks) == text, f"stale {path.name}: run python scripts/claims_pages.py"


def test_fill_replaces_only_a_marked_block_and_refuses_a_missing_one():
    from attndyn.claims.pages import BLOCK, END, fill

    text = f"a\n{BLOCK.format(name='x')}\nold\n{END.format(name='x')}\nb\n"
    assert fill(text, {"x": "new"}) == text.replace("old", "new")
    with pytest.raises(ValueError, match="'y'"):
        fill(text, {"y": "new"})


def test_the_readme_table_shows_each_measured_verdict_and_otherwise_the_estimate():
    from attndyn.claims.pages import experiments_table

    exp = get_experiment("aim-solvable")
    tiny = {"verdict": "passed", "wall_s": 12.0, "date": "2026-12-01"}
    paper = {"verdict": "failed", "wall_s": 600.0, "date": "2026-12-02"}
    table = experiments_table([exp], {exp.name: {"tiny": tiny, "paper": paper}}, {})
    assert "tiny passed (12 s, 2026-12-01); small not measured" in table, table
    assert "ran 10 min" in table and "failed" in table
    table = experiments_table([exp], {}, {exp.name: {"seconds": 7200.0, "not_estimated": 2}})
    assert "not run at the current claims; est. 2 h" in table and "2 runs not estimated" in table
