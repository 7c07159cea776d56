"""SQLite history of sweeps, findings, baselines, pins and the audit log."""

from console.store.db import ProbeRunRecord, Store, current_user, default_store_path

__all__ = ["ProbeRunRecord", "Store", "current_user", "default_store_path"]
