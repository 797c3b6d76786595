"""Results on disk: one Parquet file per run, DuckDB views over all of them.

Layout: ``<root>/runs/<run_id>.parquet``. Each file holds the run's observables in tidy form
(``run_id, seed, time, samples, step, name, value``) and, in the Parquet key-value metadata under
``attndyn``, a JSON record of the run: id, family, config (nested and flattened), schema and package
versions, creation time, wall time, status and the divergence marks. Files are written under a
temporary name in the same folder and renamed, so a crash never leaves a visible half-file.
"""

from attndyn.store.files import Store, StoreError, results_dir
from attndyn.store.views import connect

__all__ = ["Store", "StoreError", "connect", "results_dir"]
