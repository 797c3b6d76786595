"""``attndyn demo``: tied W-flow recovers, direct S-flow is trapped (P1 Fig. 2, h2 activation).

Both parameterisations learn the same Wishart teacher through the normalised Hermite activation
h2(x) = (x² − 1)/√2 at L = 1 with the same sample budget n. For direct S, E h2'(Z) = 0 makes the
uninformative manifold {t₁ = 0, p = 0} invariant (P1 Cor. 7), so p_12 stays near 0; the tied
parameterisation breaks the symmetry through the shared isotropic feature (P1 Eq. 23) and p_12
grows to O(1) within n = O(d² log d) samples (P1 Cor. 3). P1 is arXiv 2609.03858
(docs/references.md).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

from rich.table import Table

from attndyn.cli import options as opt

if TYPE_CHECKING:
    import xarray as xr
    from rich.console import Console

DEMO_BASE = dict(d=128, L=1, activation="h2", lr=0.05, batch=32, seeds=4, records=40, grid="linear")
TIED_T_MAX = 1.0  # tied time t = 4 n α_d / d; direct S sees t/4 on its own axis for the same n


@dataclass
class DemoResult:
    tied: xr.Dataset
    direct: xr.Dataset
    figure: Path
    root: Path
    reused: int


def run_demo(out=None, force: bool = False, d: int | None = None) -> DemoResult:
    """Run (or reuse) both runs and both theories, store them, and write the p_12 figure with
    each theory overlaid: direct S's Theorem-4 ODE (under a second) and tied's population flow
    of Φ (P1 Theorem 1; about 8 s at d = 128 on two cores under load, once: it is stored)."""
    import numpy as np

    from attndyn import runs
    from attndyn.figures.draw import plot_observable
    from attndyn.store import Store

    store = Store(out)
    base = dict(DEMO_BASE, **({"d": d} if d else {}))
    tied_cfg = runs.family_config("aim", dict(base, param="tied", t_max=TIED_T_MAX))
    direct_cfg = runs.family_config("aim", dict(base, param="direct", t_max=TIED_T_MAX / 4))
    tied, reused_t = runs.simulation("aim", tied_cfg, store, force)
    direct, reused_d = runs.simulation("aim", direct_cfg, store, force)
    direct_th, _ = runs.theory(
        "aim",
        runs.theory_config("aim", dict(base, param="direct", t_max=TIED_T_MAX / 4)),
        store,
        force,
    )
    tied_th, _ = runs.theory(
        "aim", runs.theory_config("aim", dict(base, param="tied", t_max=TIED_T_MAX)), store, force
    )
    d_val = tied_cfg.model_dump()["d"]  # an aim field: the CLI reaches aim only by its name
    scale = d_val**2 * np.log(d_val)
    tied_label = "tied S = WWᵀ"
    theory = {"direct S": direct_th, tied_label: tied_th}
    for traj in (tied, direct, direct_th, tied_th):
        traj.coords["n_scaled"] = ("time", traj["samples"].values / scale)
    figure = plot_observable(
        {tied_label: tied, "direct S": direct},
        "p_12",
        store.root / "figures" / "demo-p12.png",
        x="n_scaled",
        xlabel="samples n / (d² log d)",
        ylabel="structural overlap p₁₂ = q₁₂ − t₁t₂",
        title=f"AIM, h2 activation, L = 1, d = {d_val}: tied recovers, direct S is trapped",
        theory=theory,
        legend_loc="upper left",
    )
    return DemoResult(tied, direct, figure, store.root, int(reused_t) + int(reused_d))


def demo_configs(d: int | None = None) -> list:
    """The demo's two aim configs (tied, direct), as :func:`run_demo` builds them."""
    from attndyn import runs

    base = dict(DEMO_BASE, **({"d": d} if d else {}))
    return [
        runs.family_config("aim", dict(base, param="tied", t_max=TIED_T_MAX)),
        runs.family_config("aim", dict(base, param="direct", t_max=TIED_T_MAX / 4)),
    ]


def show_demo(console: Console, out=None, force: bool = False) -> DemoResult:
    """Say how long it will take, run the demo and print its table, where it stored the runs
    and the figure, and how to query them."""
    import numpy as np

    from attndyn.runs.estimate import expected_time
    from attndyn.store import Store

    start = time.perf_counter()
    console.print("attndyn demo: AIM, h2 activation, L = 1; tied S = WWᵀ vs direct S (P1 Fig. 2)")
    planned = [("aim", cfg) for cfg in demo_configs()]
    console.print(
        f"expected time: {expected_time(planned, Store(out), force)[1]}, for the simulations; "
        "the theory run, the figure and the report follow, and the last line says the total",
        highlight=False,
        soft_wrap=True,
    )
    result = run_demo(out, force)
    table = Table(title="final structural overlap p₁₂ = q₁₂ − t₁t₂ (same sample budget)")
    for col in ("parameterisation", "samples", "p_12 mean", "|p_12| max over seeds", "test loss"):
        table.add_column(col, justify="right")
    for label, traj in (("tied", result.tied), ("direct", result.direct)):
        p = traj["p_12"].isel(time=-1).values
        table.add_row(
            label,
            f"{int(traj['samples'][-1]):,}",
            f"{np.mean(p):.4f}",
            f"{np.max(np.abs(p)):.4f}",
            f"{float(traj['loss'].isel(time=-1).mean()):.4f}",
        )
    console.print(table)
    # plain print: paths must not be wrapped at the terminal width
    print(f"runs stored in: {result.root / 'runs'}")
    print(f"figure:         {result.figure}")
    print(f'query them:     attndyn query --out {result.root} "SELECT * FROM runs"')
    from attndyn.report.site import write_report

    print(f"report:         {write_report(result.root)}  (open it in a browser)")
    print(f"done in {time.perf_counter() - start:.1f} s")
    return result


def demo(
    out: opt.Out = None,
    force: Annotated[bool, opt.force_flag("recompute stored runs")] = False,
    progress: opt.Progress = True,
    devices: opt.Devices = None,
) -> None:
    """The showcase run: see attndyn.cli.commands.demo (the README's first command)."""
    from attndyn.cli.ui.terminal import console
    from attndyn.core.progress_bars import on_terminal, shown

    with shown(on_terminal(progress), count="runs"), opt.on_devices(devices):
        show_demo(console, out, force)
