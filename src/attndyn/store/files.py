"""Atomic Parquet writing and reading of single runs."""

from __future__ import annotations

import contextlib
import json
import os
import time
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import xarray as xr

from attndyn.core.config import SCHEMA_VERSION, flatten
from attndyn.core.trajectory import config_of, from_frame, to_frame

META_KEY = b"attndyn"
DEFAULT_DIR = "attndyn-results"


class StoreError(OSError):
    """The results folder cannot be written or read; the message is one line."""


def results_dir(out: str | os.PathLike | None = None) -> Path:
    """``out`` if given, else ``$ATTNDYN_RESULTS``, else ``./attndyn-results``."""
    return Path(out or os.environ.get("ATTNDYN_RESULTS") or DEFAULT_DIR)


class Store:
    """A results folder. ``write`` is atomic; ``exists`` only sees complete files."""

    def __init__(self, root: str | os.PathLike | None = None):
        self.root = results_dir(root)
        self.runs = self.root / "runs"

    def path(self, run_id: str) -> Path:
        return self.runs / f"{run_id}.parquet"

    def exists(self, run_id: str) -> bool:
        return self.path(run_id).is_file()

    def write(self, traj: xr.Dataset, run_id: str, wall_s: float = float("nan")) -> Path:
        """Write a Trajectory as ``<run_id>.parquet`` (temporary file, fsync, rename)."""
        from attndyn import __version__

        frame = to_frame(traj)
        frame.insert(0, "run_id", run_id)
        config = config_of(traj)
        div = traj["diverged_step"].values if "diverged_step" in traj.coords else np.array([])
        meta: dict[str, Any] = {
            "run_id": run_id,
            "family": traj.attrs.get("family", ""),
            "kind": "simulation" if "seed" in traj.dims else "theory",
            "config": config,
            "config_flat": flatten(config),
            "schema": SCHEMA_VERSION,
            "version": __version__,
            "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "wall_s": None if np.isnan(wall_s) else round(float(wall_s), 4),
            "status": "ok",
            "n_diverged": int((div >= 0).sum()),
            "diverged_step": {str(s): int(v) for s, v in zip(traj["seed"].values, div, strict=True)}
            if "seed" in traj.dims
            else {},
            "extra_times": {
                str(c): traj[c].values.tolist()
                for c in traj.coords
                if traj[c].dims == ("time",) and c not in ("time", "samples", "step")
            },
        }
        table = pa.Table.from_pandas(frame, preserve_index=False)
        table = table.replace_schema_metadata({META_KEY: json.dumps(meta).encode()})
        final = self.path(run_id)
        tmp = self.runs / f".{run_id}.{os.getpid()}.tmp"
        try:
            self.runs.mkdir(parents=True, exist_ok=True)
            with open(tmp, "wb") as fh:
                pq.write_table(table, fh, compression="zstd")
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, final)
        except OSError as exc:
            with contextlib.suppress(OSError):
                tmp.unlink()
            raise StoreError(
                f"cannot write results to {self.root}: {exc.strerror or exc}"
            ) from None
        return final

    def write_experiment(self, record: dict[str, Any], key: str) -> Path:
        """Store an experiment's claims as ``experiments/<key>.parquet`` (one row per claim;
        the whole record, summary included, in the metadata)."""
        from attndyn import __version__

        created = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        rows = [
            {
                "experiment": record["experiment"],
                "preset": record["preset"],
                "key": key,
                "claim": c["name"],
                "statement": c["statement"],
                "value": c["value"],
                "target": c["target"],
                "passed": c["passed"],
                "created": created,
                "version": __version__,
            }
            for c in record["claims"]
        ]
        schema = pa.schema(
            [
                ("experiment", pa.string()),
                ("preset", pa.string()),
                ("key", pa.string()),
                ("claim", pa.string()),
                ("statement", pa.string()),
                ("value", pa.float64()),
                ("target", pa.string()),
                ("passed", pa.bool_()),
                ("created", pa.string()),
                ("version", pa.string()),
            ]
        )
        table = pa.Table.from_pylist(rows, schema=schema)
        table = table.replace_schema_metadata({META_KEY: json.dumps(record, default=str).encode()})
        return self._atomic_write(table, self.root / "experiments", key)

    def _atomic_write(self, table: pa.Table, folder: Path, key: str) -> Path:
        final = folder / f"{key}.parquet"
        tmp = folder / f".{key}.{os.getpid()}.tmp"
        try:
            folder.mkdir(parents=True, exist_ok=True)
            with open(tmp, "wb") as fh:
                pq.write_table(table, fh, compression="zstd")
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, final)
        except OSError as exc:
            with contextlib.suppress(OSError):
                tmp.unlink()
            raise StoreError(
                f"cannot write results to {self.root}: {exc.strerror or exc}"
            ) from None
        return final

    def metadata(self, run_id: str) -> dict[str, Any]:
        """The run record stored with a run."""
        meta = pq.read_schema(self.path(run_id)).metadata or {}
        return json.loads(meta[META_KEY])

    def read(self, run_id: str) -> xr.Dataset:
        """The stored Trajectory of ``run_id`` (extra time axes are restored from ``samples``)."""
        meta = self.metadata(run_id)
        frame = pq.read_table(self.path(run_id)).to_pandas()
        div = {int(k): v for k, v in meta["diverged_step"].items()}
        traj = from_frame(
            frame.drop(columns="run_id"),
            diverged_step=div or None,
            extra_times={k: np.asarray(v) for k, v in meta["extra_times"].items()},
            family=meta["family"],
            config=meta["config"],
        )
        traj.attrs["run_id"] = run_id
        return traj

    def run_ids(self) -> list[str]:
        if not self.runs.is_dir():
            return []
        return sorted(p.stem for p in self.runs.glob("*.parquet"))
