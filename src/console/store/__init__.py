"""SQLite history of sweeps, findings, baselines, pins, the audit log and the console's drains."""

from console.store.audit import AuditEntry, current_user
from console.store.db import ProbeRunRecord, Store, default_store_path
from console.store.drains import DrainRecord

__all__ = ["AuditEntry", "DrainRecord", "ProbeRunRecord", "Store", "current_user", "default_store_path"]
