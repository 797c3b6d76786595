"""``attndyn report``: a static HTML site of a results folder (docs/report.md).

The site opens from disk (``file://``), needs no server and no network, and can be published as
is: ``index.html`` (experiment runs and their claims), ``experiments/<key>.html`` (figure,
claims, preconditions, the runs used), ``runs.html`` (every run, sorted and filtered in the page),
``runs/<run_id>.html`` (observables: seed mean, min–max band, the stored theory of the same
config overlaid) and ``problems.html`` (diverged seeds, failures, damaged files). Pages are
rendered with Jinja2; plots are drawn in the browser by plotly.js, copied once into ``assets/``,
from data embedded in each run page. The site is built in a hidden folder beside the target and
then put in its place.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import shutil
import time
import uuid
from importlib import resources
from pathlib import Path
from typing import Any

import jinja2

from attndyn.errors import InputError, StoreError
from attndyn.report.sitedata import SiteData, collect
from attndyn.store.files import outside_results, results_dir

MARKER = ".attndyn-report"  # in every site folder: only such a folder is ever replaced
ASSETS = ("style.css", "table.js", "plots.js")
GOOD = {"passed", "control-failed-as-expected"}
WARN = {"invalid"}
LATEST = 10  # runs listed on the index


def verdict_class(verdict: str | None) -> str:
    """CSS class of a verdict: good (passed, a control that failed as expected), warn
    (invalid: a precondition failed) or bad."""
    return "good" if verdict in GOOD else "warn" if verdict in WARN else "bad"


def _environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("attndyn.report", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.globals["verdict_class"] = verdict_class
    env.filters["date"] = lambda stamp: (stamp or "").replace("T", " ").removesuffix("Z")[:16]
    env.filters["plural"] = lambda n, word: f"{n} {word}" + ("" if n == 1 else "s")
    return env


def _script_json(value: Any) -> str:
    """JSON safe inside ``<script type="application/json">`` (no ``</``, no NaN)."""
    return json.dumps(value, separators=(",", ":"), allow_nan=False).replace("</", "<\\/")


def _plotly_js() -> str:
    from plotly.offline import get_plotlyjs

    return get_plotlyjs()


def _table(data: SiteData) -> dict[str, Any]:
    """The run table as columns and rows for ``table.js``."""
    fixed = [
        ("run_id", "run", False),
        ("family", "family", False),
        ("kind", "kind", False),
    ]
    tail = [
        ("seeds", "seeds", True),
        ("n_diverged", "diverged seeds", True),
        ("status", "status", False),
        ("wall_s", "wall s", True),
        ("experiment", "experiment", False),
        ("sweep", "sweep", False),
        ("created", "stored", False),
    ]
    columns = [{"key": k, "label": label, "num": num} for k, label, num in fixed]
    columns += [{"key": f"config.{c}", "label": c, "num": True} for c in data.config_columns]
    columns += [{"key": k, "label": label, "num": num} for k, label, num in tail]
    rows = []
    for run in data.runs:
        row = [run[k] for k, _, _ in fixed]
        row += [_cell(run["config"].get(c)) for c in data.config_columns]
        row += [run[k] for k, _, _ in tail]
        rows.append(row)
    return {"columns": columns, "rows": rows}


def _cell(value: Any) -> Any:
    if isinstance(value, float) and value != value:
        return None
    return value


def build(data: SiteData, folder: Path) -> None:
    """Render every page of the site for ``data`` into the empty folder ``folder``."""
    env = _environment()
    (folder / "assets").mkdir(parents=True)
    (folder / "experiments").mkdir()
    (folder / "runs").mkdir()
    (folder / "figures").mkdir()
    package = resources.files("attndyn.report") / "assets"
    for name in ASSETS:
        (folder / "assets" / name).write_text((package / name).read_text(encoding="utf-8"))
    (folder / "assets" / "plotly.min.js").write_text(_plotly_js(), encoding="utf-8")
    (folder / MARKER).write_text("written by attndyn report; replaced whole by the next one\n")

    common = {
        "root": str(data.root),
        "written": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "n_runs": len(data.runs),
        "n_problems": len(data.diverged) + len(data.failures) + len(data.damaged),
    }

    def page(template: str, path: Path, up: str = "", **values: Any) -> None:
        html = env.get_template(template).render(**common, up=up, **values)
        path.write_text(html, encoding="utf-8")

    for png in data.figures:
        shutil.copyfile(png, folder / "figures" / png.name)
    kinds = [r["kind"] for r in data.runs]
    page(
        "index.html",
        folder / "index.html",
        empty=data.empty,
        experiments=data.experiments,
        diverged=data.diverged,
        failures=data.failures,
        damaged=data.damaged,
        n_sim=kinds.count("simulation"),
        n_theory=kinds.count("theory"),
        figures=[f.name for f in data.figures],
        latest=sorted(data.runs, key=lambda r: (r["created"], r["run_id"]), reverse=True)[:LATEST],
        columns=data.config_columns[:12],
    )
    page("runs.html", folder / "runs.html", table_json=_script_json(_table(data)))
    page(
        "problems.html",
        folder / "problems.html",
        diverged=data.diverged,
        failures=data.failures,
        damaged=data.damaged,
    )
    by_id = {r["run_id"]: r for r in data.runs}
    for exp in data.experiments:
        figure: str | None = None
        if exp["figure"] is not None:
            figure = f"{exp['key']}.png"
            shutil.copyfile(exp["figure"], folder / "figures" / figure)
        used = [by_id[r] for r in exp["run_ids"] if r in by_id]
        page(
            "experiment.html",
            folder / "experiments" / f"{exp['key']}.html",
            up="../",
            e=exp,
            figure=figure,
            runs=by_id,
            cols=config_columns_of(used),
        )
    template = env.get_template("run.html")
    labels: dict[tuple[str, str], str] = {}
    for run in data.runs:
        key = (run["family"], run["kind"])
        if key not in labels:
            labels[key] = time_label(*key)
        page_path = folder / "runs" / f"{run['run_id']}.html"
        _run_page(template, common, data, run, page_path, labels[key])


def time_label(family: str, kind: str) -> str:
    """The label of a run page's time axis: the family's ``TIME_LABEL`` (models/base.py), or,
    for a theory on its own time axis (``SAME_GRID = False``) or a family that is not installed,
    a generic one."""
    from attndyn.figures.plot import family_labels
    from attndyn.models import get_theory

    label = family_labels(family)[1]
    if label is None:
        return "time t"
    if kind == "theory" and not getattr(get_theory(family), "SAME_GRID", True):
        return "the theory's own time t"
    return label


def config_columns_of(runs: list[dict[str, Any]]) -> list[str]:
    """The config fields that vary among ``runs``."""
    from attndyn.report.sitedata import config_columns

    return config_columns(runs)


def _run_page(
    template, common, data: SiteData, run: dict[str, Any], path: Path, time_label: str
) -> None:
    rid = run["run_id"]
    series = data.series.get(rid, {})
    theory = data.theory_of.get(rid, [])
    theory_series = [data.series.get(t, {}) for t in theory]
    plot = {
        "kind": run["kind"],
        "log_time": run["config"].get("grid") == "log",
        "time_label": time_label,
        "run": series,
        "theory": [
            {"label": t[:8], "series": s} for t, s in zip(theory, theory_series, strict=True)
        ],
    }
    html = template.render(
        **common,
        up="../",
        r=run,
        names=sorted(series),
        series=series,
        theory=theory,
        theory_series=theory_series,
        simulations=data.simulations_of.get(rid, []),
        time_label=time_label,
        plot_json=_script_json(plot),
    )
    path.write_text(html, encoding="utf-8")


def _replace(tmp: Path, dest: Path) -> None:
    """Put the finished site ``tmp`` at ``dest``: the old site is renamed aside, the new one
    renamed in, the old one removed (two renames: a reader never sees a half-written site).
    A report written at the same moment by another process may take the place in between:
    then this one tries again, and the last one renamed in stays."""
    for _ in range(10):
        aside = dest.with_name(f".{dest.name}.{os.getpid()}.{uuid.uuid4().hex[:6]}.old")
        old: Path | None = aside
        try:
            os.replace(dest, aside)
        except FileNotFoundError:
            old = None
        try:
            os.replace(tmp, dest)
            return
        except OSError as exc:
            if exc.errno not in (errno.ENOTEMPTY, errno.EEXIST):
                raise
        finally:
            if old is not None:
                shutil.rmtree(old, ignore_errors=True)
    raise StoreError(f"cannot put the report at {dest}: other processes keep replacing it")


def _check_target(dest: Path) -> None:
    """InputError unless ``dest`` is missing, an empty folder or an earlier report."""
    if not dest.exists():
        return
    if not dest.is_dir():
        raise InputError(f"invalid value for 'output': {dest} is a file, not a report folder")
    if any(dest.iterdir()) and not (dest / MARKER).is_file():
        raise InputError(
            f"invalid value for 'output': {dest} is a folder that attndyn report did not write; "
            "give a new or empty folder"
        )


def write_report(out: str | os.PathLike | None = None, output=None) -> Path:
    """Write the report of the results folder ``out`` (default ``$ATTNDYN_RESULTS`` or
    ``./attndyn-results``) into ``output`` (default ``<results>/report``) and return the path
    of its ``index.html``.

    Raises:
        InputError: ``out`` is not a folder, or ``output`` is a file or a folder that is
            neither empty nor an earlier report (nothing is written).
    """
    root = results_dir(out)
    if not root.is_dir():
        raise InputError(
            f"invalid value for 'out': no results folder {root} (give --out or set ATTNDYN_RESULTS)"
        )
    dest = Path(output) if output is not None else root / "report"
    outside_results(root, dest, whole=False)  # never into runs/, experiments/ or failures/
    _check_target(dest)
    data = collect(root)
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_name(f".{dest.name}.{os.getpid()}.{uuid.uuid4().hex[:6]}.tmp")
    try:
        build(data, tmp)
        _replace(tmp, dest)
    finally:
        with contextlib.suppress(FileNotFoundError):
            shutil.rmtree(tmp)
    return dest / "index.html"
