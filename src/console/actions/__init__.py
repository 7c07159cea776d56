"""Operator actions: Slurm drain/resume/undrain, Kubernetes cordon/taint, ROCm stack pins, drift and holds.

Every action goes through ``ActionService``: ``plan`` (a dry run with the exact commands) then
``execute`` (re-checked against the scheduler, run, and written to the audit log). The CLI
subcommands and the TUI use the same service.
"""

from console.actions.caps import CapPolicy
from console.actions.kube import KubeNodeApi
from console.actions.model import ActionKind, ActionPlan, ActionRequest, ActionResult, Step
from console.actions.pin import DriftRow, drift_report, fingerprint
from console.actions.runner import LOCAL, CommandRunner, RunOutput, TransportRunner, runner_for
from console.actions.service import ActionService, bare_inventory
from console.actions.slurm import TAG, SlurmError, tag_reason
from console.actions.slurm_state import SlurmNode
from console.store.pins import effective_pins

__all__ = [
    "LOCAL",
    "TAG",
    "ActionKind",
    "ActionPlan",
    "ActionRequest",
    "ActionResult",
    "ActionService",
    "CapPolicy",
    "CommandRunner",
    "DriftRow",
    "KubeNodeApi",
    "RunOutput",
    "SlurmError",
    "SlurmNode",
    "Step",
    "TransportRunner",
    "bare_inventory",
    "drift_report",
    "effective_pins",
    "fingerprint",
    "runner_for",
    "tag_reason",
]
