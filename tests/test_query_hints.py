"""A query naming a column that does not exist (a binder error) is one line that lists the
columns of the views it names: ``SELECT name FROM claims`` (``run --json`` calls a claim's name
``name``, the ``claims`` view ``claim``) says so."""

from __future__ import annotations

import pytest
from helpers import cli

import attndyn
from attndyn.errors import InputError
from attndyn.store import Store


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    root = tmp_path_factory.mktemp("hints")
    record = {
        "experiment": "exp-a",
        "preset": "small",
        "run_ids": [],
        "claims": [{"name": "c1", "statement": "s", "value": 1.0, "target": "t", "passed": True}],
        "summary": {},
        "figure": "f.png",
        "config": {"seeds": 2},
    }
    Store(root).write_experiment(record, "exp-a-small-1")
    return root


def test_a_missing_column_lists_the_views_columns(folder, monkeypatch, capsys):
    res = attndyn.results(folder)
    assert list(res.query("SELECT claim FROM claims")["claim"]) == ["c1"]  # unchanged
    with pytest.raises(InputError) as caught:
        res.query("SELECT name FROM claims")
    text = str(caught.value)
    assert 'Referenced column "name" not found' in text
    assert "claims has the columns experiment, preset, key, claim, statement" in text
    assert "the name --json gives 'name' is 'claim' here" in text
    code, out, err = cli(monkeypatch, capsys, "query", "SELECT name FROM claims", "--out", folder)
    assert code == 2 and out == "" and err.count("\n") == 1 and "'claim' here" in err
    code, _, err = cli(monkeypatch, capsys, "query", "SELECT c.keyy FROM experiments c",
                       "--out", folder)  # fmt: skip
    assert code == 2 and "experiments has the columns key, experiment" in err
    assert "did you mean 'key'" in err


def test_other_errors_are_left_as_they_were(folder):
    res = attndyn.results(folder)
    with pytest.raises(InputError) as caught:
        res.query("SELECT x FROM (SELECT 1 AS y)")  # no view named: nothing to list
    assert str(caught.value).endswith('Referenced column "x" not found in FROM clause!')
    with pytest.raises(InputError) as caught:
        res.query("SELEC 1")
    assert "has the columns" not in str(caught.value)
