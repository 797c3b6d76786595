"""``attndyn report`` opened in headless Chromium (Debian ``chromium`` + ``chromium-driver``,
driven by selenium; neither downloads a browser or driver): the index lists the experiment and
its claims, every local link resolves, the run table sorts and filters, figures and plots
render. A screenshot of the index is saved under ``$ATTNDYN_ARTIFACTS`` (else a tmp folder).

Without chromium the tests fail under CI (``CI`` set) and skip elsewhere."""

from __future__ import annotations

import contextlib
import io
import os
import time
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urljoin, urlparse

import numpy as np
import pytest

from attndyn.core.config import GridConfig, SimulationConfig
from attndyn.figures.draw import plot_observable
from attndyn.store import Store

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
SIM = dict(d=8, t_max=0.05, records=4, batch=4, test_size=16, seeds=2)


def _need_browser():
    missing = [p for p in (CHROMIUM, CHROMEDRIVER) if not os.access(p, os.X_OK)]
    try:
        import selenium  # noqa: F401
    except ImportError:
        missing.append("the selenium package")
    if missing:
        why = (
            f"headless Chromium needs {', '.join(missing)} "
            "(apt-get install chromium chromium-driver)"
        )
        if os.environ.get("CI"):
            pytest.fail(why)
        pytest.skip(why)


def diverged_copy(store: Store, traj, run_id: str) -> None:
    """Store ``traj`` again as ``run_id`` with its last seed marked diverged at its second
    record (its values missing from there on), as the trainer marks one."""
    bad = traj.copy(deep=True)
    seed = bad.sizes["seed"] - 1
    for name in bad.data_vars:
        bad[name][seed, 1:] = np.nan
    steps = bad["diverged_step"].values.copy()
    steps[seed] = int(bad["step"].values[1])
    bad = bad.assign_coords(diverged_step=("seed", steps), diverged=("seed", steps >= 0))
    store.write(bad, run_id, wall_s=0.1)


MARKOV = dict(m=8, t_max=20.0, records=6, seeds=1, grid="log")  # a log record grid


class ToyGrid(GridConfig):
    """docs/plugins.md's toy: the theory's Config is the grid alone."""

    d: int = 16
    lr: float = 0.5

    @property
    def total_steps(self) -> int:
        return max(1, round(self.t_max * self.d))


class ToyConfig(ToyGrid, SimulationConfig):
    """The toy's simulation config: the grid plus seeds, seed and dtype."""


def plugin_runs(store: Store) -> None:
    """A plug-in family's runs as the toy stores them: simulations at t_max 1 and 0.25 (with an
    observable that never changes, 2 seeds) and the theory at t_max 1."""
    from attndyn.core.config import canonical, run_id
    from attndyn.core.trajectory import make_trajectory

    times = np.array([0.0, 0.5, 1.0])
    for t_max in (1.0, 0.25):
        config = ToyConfig(t_max=t_max, records=3, grid="linear", seeds=2)
        R = np.outer([1.0, 1.2], np.exp(-times))
        traj = make_trajectory(
            {"R": R, "const": np.ones_like(R)}, time=times * t_max, samples=np.arange(3),
            step=np.arange(3), seeds=np.arange(2), family="toy", config=canonical(config),
        )  # fmt: skip
        store.write(traj, run_id("toy", config), wall_s=0.01)
    theory = ToyGrid(t_max=1.0, records=3, grid="linear")
    traj = make_trajectory(
        {"R": np.exp(-times), "const": np.ones(3)}, time=times, samples=np.arange(3),
        family="toy", config=canonical(theory),
    )  # fmt: skip
    store.write(traj, run_id("toy:theory", theory), wall_s=0.01)


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """A results folder with a tiny aim simulation and its theory, the tiny circuits-ode
    experiment (the fastest tiny preset, about 4 s), a figure of no experiment (as the demo's), a
    run with a diverged seed, a failure and a damaged file; the report written by
    ``attndyn report``."""
    _need_browser()
    import attndyn
    from attndyn.cli import main

    root = tmp_path_factory.mktemp("report") / "res"
    sim = attndyn.simulate("aim", out=root, **SIM)
    attndyn.predict("aim", out=root, **SIM)
    attndyn.run("circuits-ode", "tiny", out=root)
    plot_observable({"simulation": sim}, "loss", root / "figures" / "sim loss.png")
    attndyn.simulate("markov", out=root, **MARKOV)
    store = Store(root)
    plugin_runs(store)
    diverged_copy(store, sim, "d1verged0000seed")
    store.write_failure(
        "f41led0000000run", kind="aim", name="aim", config={"d": 8}, error="boom: no memory"
    )
    (root / "runs" / "0000damaged00000.parquet").write_bytes(b"not parquet")
    stdout = io.StringIO()
    with contextlib.redirect_stdout(stdout), pytest.raises(SystemExit) as done:
        main(["report", "--out", str(root)])
    assert done.value.code == 0
    index = Path(stdout.getvalue().split("report:", 1)[1].strip())
    assert index == root / "report" / "index.html" and index.is_file()
    return root, index


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    _need_browser()
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    profile = tmp_path_factory.mktemp("chromium-profile")
    for flag in (
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-dev-shm-usage",
        "--window-size=1400,1000",
        f"--user-data-dir={profile}",
    ):
        opts.add_argument(flag)
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=opts)
    yield driver
    driver.quit()


def _open(driver, path: Path) -> None:
    driver.get(path.resolve().as_uri())


def _wait(predicate, timeout: float = 10.0):
    end = time.monotonic() + timeout
    while True:
        value = predicate()
        if value or time.monotonic() > end:
            return value
        time.sleep(0.05)


def test_index_lists_experiment_and_claims(site, browser):
    root, index = site
    _open(browser, index)
    text = browser.find_element("tag name", "body").text
    assert "circuits-ode" in text and "tiny" in text
    import pyarrow.parquet as pq

    claims = pq.read_table(next((root / "experiments").glob("*.parquet"))).to_pylist()
    assert claims
    rows = browser.find_elements("css selector", "table.claims tbody tr")
    assert len(rows) == len(claims)
    for claim in claims:
        assert claim["claim"] in text
        row = next(r for r in rows if claim["claim"] in r.text)
        assert ("pass" if claim["passed"] else "fail") in row.get_attribute("class")
    shots = Path(os.environ.get("ATTNDYN_ARTIFACTS") or root.parent) / "report-index.png"
    shots.parent.mkdir(parents=True, exist_ok=True)
    assert browser.save_screenshot(str(shots)) and shots.stat().st_size > 0
    print(f"screenshot of the index: {shots}")


class Links(HTMLParser):
    """The ``href`` and ``src`` of a page's elements, as written in its HTML."""

    def __init__(self):
        super().__init__()
        self.urls: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.urls += [v for k, v in attrs if k in ("href", "src") and v]


def _resolves(site_dir: Path, page: Path, url: str) -> None:
    parsed = urlparse(url)
    assert parsed.scheme == "file", f"{page.name} links outside the site: {url}"
    target = Path(unquote(parsed.path))
    assert target.is_file(), f"{page.relative_to(site_dir)}: broken link {url}"
    assert site_dir.resolve() in target.resolve().parents, f"{url} is outside the site"


def test_every_local_link_resolves(site, browser):
    """The pages whose links the browser sees (those made by JavaScript included) are opened
    in Chromium; every page's HTML links are resolved as Chromium resolves them."""
    _, index = site
    site_dir = index.parent
    pages = sorted(site_dir.rglob("*.html"))
    assert len(pages) >= 8  # index, runs, problems, an experiment, run pages
    checked = 0
    for page in pages:
        if page.parent.name != "runs" or page.stem == "d1verged0000seed":
            _open(browser, page)
            urls = browser.execute_script(
                "return [...document.querySelectorAll('a[href]')].map((a) => a.href).concat("
                "[...document.querySelectorAll('img[src], script[src], link[href]')]"
                ".map((e) => e.src || e.href))"
            )
        else:
            parser = Links()
            parser.feed(page.read_text())
            urls = [urljoin(page.resolve().as_uri(), u) for u in parser.urls]
        for url in urls:
            _resolves(site_dir, page, url)
            checked += 1
    assert checked > 2 * len(pages)


def test_run_table_sorts_and_filters(site, browser):
    _, index = site
    _open(browser, index.parent / "runs.html")

    def column(key: str) -> list[str]:
        return browser.execute_script(
            "const j = [...document.querySelectorAll('#runs thead th')]"
            ".findIndex((h) => h.dataset.col === arguments[0]);"
            "return [...document.querySelectorAll('#runs tbody tr')]"
            ".map((r) => r.children[j].textContent);",
            key,
        )

    ids = column("run_id")
    assert len(ids) >= 4
    head = browser.find_element("css selector", "#runs thead th[data-col='run_id']")
    head.click()
    ascending = column("run_id")
    assert ascending == sorted(ids)
    head.click()
    assert column("run_id") == sorted(ids, reverse=True)
    kinds = column("kind")
    assert "theory" in kinds and "simulation" in kinds
    box = browser.find_element("id", "filter")
    box.send_keys("theory")
    assert _wait(lambda: len(browser.find_elements("css selector", "#runs tbody tr")) < len(ids))
    assert set(column("kind")) == {"theory"}
    box.clear()
    box.send_keys("no-such-run-anywhere")
    assert _wait(lambda: not browser.find_elements("css selector", "#runs tbody tr"))


def test_figures_and_plots_render(site, browser):
    root, index = site
    experiment = next((index.parent / "experiments").glob("*.html"))
    _open(browser, experiment)
    img = browser.find_element("css selector", "img.figure")
    assert _wait(lambda: browser.execute_script("return arguments[0].naturalWidth", img)) > 0
    _open(browser, index)  # a figure of no experiment record (the demo's) shows on the index
    img = browser.find_element("css selector", "#figures ~ figure img")
    assert "sim%20loss.png" in img.get_attribute("src")
    assert _wait(lambda: browser.execute_script("return arguments[0].naturalWidth", img)) > 0
    # the simulation with its theory overlaid: a band, a mean and a dashed theory line per plot
    sim = next(
        p
        for p in (index.parent / "runs").glob("*.html")
        if "Theory of this config" in p.read_text()
    )
    _open(browser, sim)
    plots = browser.find_elements("css selector", "#plots .plot")
    assert plots
    assert _wait(lambda: browser.find_elements("css selector", "#plots .plot .main-svg"))
    for plot in plots:
        lines = plot.find_elements("css selector", ".scatterlayer path.js-line")
        assert len(lines) >= 2, "mean and theory lines"
        assert any(len(p.get_attribute("d") or "") > 10 for p in lines)
        assert plot.find_elements("css selector", ".scatterlayer path.js-fill"), "seed band"


def test_problems_visible(site, browser):
    _, index = site
    _open(browser, index)
    text = browser.find_element("tag name", "body").text
    for what in ("d1verged0000seed", "f41led0000000run", "0000damaged00000"):
        assert what in text
    _open(browser, index.parent / "problems.html")
    text = browser.find_element("tag name", "body").text
    assert "boom: no memory" in text and "runs/0000damaged00000.parquet" in text
    row = browser.find_element("xpath", "//tr[td//code[text()='d1verged0000seed']]")
    assert "1 of 2" in row.text
    _open(browser, index.parent / "runs" / "d1verged0000seed.html")
    assert "Diverged seeds" in browser.find_element("tag name", "body").text


def _plot_layouts(browser) -> list[dict]:
    """Every drawn plot's x-axis type and title, and the smallest x of its traces."""
    return browser.execute_script(
        "return [...document.querySelectorAll('#plots .plot')].filter((d) => d._fullLayout)"
        ".map((d) => ({type: d._fullLayout.xaxis.type, title: d._fullLayout.xaxis.title.text,"
        " xmin: Math.min(...d.data.flatMap((t) => t.x))}));"
    )


def test_log_grid_runs_get_a_log_time_axis(site, browser):
    """A markov run on a log record grid: every plot's time axis is log, labelled with the
    family's TIME_LABEL, and shows no t <= 0; the linear-grid plug-in run keeps a linear axis
    with its t = 0."""
    root, index = site
    from attndyn import runs
    from attndyn.core.config import run_id

    markov = (
        index.parent / "runs" / f"{run_id('markov', runs.family_config('markov', MARKOV))}.html"
    )
    _open(browser, markov)
    assert _wait(lambda: _plot_layouts(browser))
    layouts = _plot_layouts(browser)
    assert layouts and all(p["type"] == "log" and p["xmin"] > 0 for p in layouts), layouts
    from attndyn.models import markov  # the family's own time, not a bare "t"

    assert {p["title"] for p in layouts} == {f"{markov.TIME_LABEL} (log)"}, layouts


def test_plugin_theory_is_overlaid_constants_collapse_and_columns_share_a_format(site, browser):
    """The plug-in simulation at t_max 1 shows its grid-only theory dashed over the seed band;
    its constant observable is one line of text; the run table's t_max column prints 1, 0.25 and
    0.05 with the same number of decimals."""
    from attndyn.core.config import run_id

    root, index = site
    config = ToyConfig(t_max=1.0, records=3, grid="linear", seeds=2)
    page = index.parent / "runs" / f"{run_id('toy', config)}.html"
    assert "Theory of this config" in page.read_text()
    _open(browser, page)
    assert _wait(lambda: browser.find_elements("css selector", "#plots .plot .main-svg"))
    plots = {
        d.get_attribute("data-name"): d
        for d in browser.find_elements("css selector", "#plots .plot")
    }
    assert "constant" in plots["const"].get_attribute("class")
    assert plots["const"].text == "const = 1 at every record (theory too)"
    dashed = browser.execute_script(
        "return arguments[0].data.filter((t) => t.line && t.line.dash === 'dash').length",
        plots["R"],
    )
    assert dashed == 1 and _plot_layouts(browser)[0]["type"] == "linear"
    _open(browser, index.parent / "runs.html")
    cells = browser.execute_script(
        "const j = [...document.querySelectorAll('#runs thead th')]"
        ".findIndex((h) => h.dataset.col === 'config.t_max');"
        "return [...document.querySelectorAll('#runs tbody tr')]"
        ".map((r) => r.children[j].textContent).filter((t) => t !== '—');"
    )
    assert {"1.00", "0.25", "0.05"} <= set(cells), cells
    assert len({len(c.split(".")[1]) for c in cells}) == 1, cells
