"""The release files agree: LICENSE is the MIT licence pyproject.toml declares, and the version
(one place: attndyn.version, with the title and authors), CITATION.cff and CHANGELOG.md's newest
release name the same version and date; the changelog records every storage schema."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

from attndyn.core.config import SCHEMA_VERSION
from attndyn.version import AUTHORS, RELEASED, TITLE, __version__

ROOT = Path(__file__).resolve().parents[1]


def test_license_is_the_declared_mit():
    text = (ROOT / "LICENSE").read_text()
    assert text.startswith("MIT License\n")
    assert "Copyright (c) 2026 the attndyn developers" in text
    assert 'THE SOFTWARE IS PROVIDED "AS IS"' in text
    assert tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["license"] == "MIT"


def test_pyproject_reads_the_one_version():
    from setuptools.config.expand import read_attr

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert project["project"]["dynamic"] == ["version"]
    attr = project["tool"]["setuptools"]["dynamic"]["version"]["attr"]
    assert read_attr(attr, package_dir={"": "src"}, root_dir=ROOT) == __version__


def test_citation_cff_names_this_release_and_the_paper():
    yaml = pytest.importorskip("yaml")
    cff = yaml.safe_load((ROOT / "CITATION.cff").read_text())
    assert cff["cff-version"] == "1.2.0"
    assert (cff["version"], str(cff["date-released"])) == (__version__, RELEASED)
    assert cff["license"] == "MIT"
    assert cff["title"] == TITLE
    assert [a["name"] for a in cff["authors"]] == list(AUTHORS)
    assert any("2609.03858" in str(ref) for ref in cff["references"])


def test_changelog_newest_release_is_the_version():
    text = (ROOT / "CHANGELOG.md").read_text()
    releases = re.findall(r"^## \[([^\]]+)\](?: - (\d{4}-\d{2}-\d{2}))?", text, re.M)
    assert releases[0] == ("Unreleased", "")
    assert releases[1] == (__version__, RELEASED)
    dates = [d for _, d in releases[1:]]
    assert dates == sorted(dates, reverse=True)


def test_changelog_records_every_storage_schema():
    text = (ROOT / "CHANGELOG.md").read_text()
    for schema in range(1, SCHEMA_VERSION + 1):
        assert re.search(rf"[Ss]chema {schema}\b", text), schema
    # and today's id changes: ID_NEUTRAL and the aim family's former two-layer output
    assert "ID_NEUTRAL" in text and "output='two-layer'" in text
