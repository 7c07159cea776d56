"""The one place the sweep engine is put together, for every entry point.

``sweep``, ``drift``, ``check-local``, the engine process and the console's thread mode each describe
the engine they want as an ``EngineSpec`` and get it from ``build_engine``. So every engine judges
against the same pins (the inventory's, overridden field by field by the stored ones: one merge, in
``console.store.pins``), caps probes the same way, and records the host keys its transport accepted.
Before, five places built engines and only two passed the stored pins: the console judged a fleet
against one ROCm pin while its detail screen and ``sweep`` used another.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from console.actions.acceptance import with_images
from console.checks import CheckPack
from console.inventory.model import Inventory, StackPin
from console.store import Store
from console.store.pins import effective_pins
from console.sweep.checker import NodeChecker
from console.sweep.checker_local import LocalChecker
from console.sweep.checker_slurm import SlurmChecker
from console.sweep.checker_workers import WorkerChecker
from console.sweep.engine import SweepEngine
from console.sweep.hostkey_audit import HostKeyAudit
from console.sweep.via_slurm import SlurmJobSettings, slurm_job
from console.transport import Transport
from console.transport.connect import transport_for
from console.transport.priority import LowPriorityTransport


@dataclass(frozen=True)
class EngineSpec:
    """Everything needed to build the engine: what ``build_engine`` makes, wherever it runs.

    It crosses to the engine process as it is (``console.service.wire``), so it holds data, not
    connections: the transport and the store connection are made where the engine runs.
    """

    inventory: Inventory
    packs: dict[str, CheckPack]
    store_path: Path | None
    accept_new: bool = False  # record host keys of first contact in known_hosts (and in the audit log)
    read_only: bool = False  # the action service refuses every action that changes the cluster
    local: bool = False  # run the probes on this host instead of over SSH
    probe_timeout_cap_s: float | None = None  # --probe-timeout: a node still busy after it is UNKNOWN
    slurm: SlurmJobSettings | None = None  # sweep --via-slurm: one Slurm job runs check-local on every node
    # Pools judged against these pins instead of their effective ones: check-local told the console's.
    pins: dict[str, StackPin] | None = None
    # (workload, pool) -> image over the store's: check-local told the console's (``rollback`` set them back).
    images: dict[tuple[str, str], str] | None = None
    # watch: every probe under nice 19 and ionice idle on the node, so a job that lands there comes first.
    low_priority: bool = False
    # Engine worker processes that check and judge the nodes (``console.service.workers``); 0: this one.
    # Over SSH only: a local or Slurm sweep, and one recording first-contact host keys, stay in process.
    workers: int = 0
    # The command the engine sweeps for, stored with each sweep: a console following the history
    # database says "sweep 14 by watch" of a verdict it did not make.
    origin: str = ""


def build_transport(spec: EngineSpec) -> Transport:
    """The transport the spec asks for: SSH to every node, or this host (``local``), low priority or not."""
    transport = transport_for(spec.inventory, accept_new=spec.accept_new, local=spec.local)
    if spec.low_priority:
        transport = LowPriorityTransport(transport)
    return transport


def build_checker(spec: EngineSpec) -> NodeChecker:
    """How the spec's nodes are checked, chosen here once: from one Slurm job's reports (``slurm``), in
    engine worker processes (``workers``, over SSH only), or in this process over ``build_transport``.

    Raises ValueError when the inventory cannot be reached that way (a Slurm controller outside it).
    """
    if spec.slurm is not None:
        return SlurmChecker(slurm_job(spec.inventory, spec.slurm, accept_new=spec.accept_new))
    transport = build_transport(spec)
    if spec.workers > 0 and not spec.local and not spec.accept_new:
        from console.service.workers import WorkerPool

        # Each worker builds its own transport from the spec (low priority included): one assembly.
        return WorkerChecker(WorkerPool(spec, spec.workers), transport)
    return LocalChecker(transport)


def build_engine(spec: EngineSpec, store: Store | None, checker: NodeChecker | None = None) -> SweepEngine:
    """The engine ``spec`` describes, writing to ``store`` (this thread's connection, or None).

    The engine runs the framework probe in the image ``rollback`` set back for a pool (``with_images``: the
    store's, and ``spec.images`` over them): this engine and its worker processes alike, as the checker is
    built here; ``check-local`` has no store and takes the images a ``sweep --via-slurm`` told it.
    ``checker`` replaces the spec's own (``check-local`` checks through a recording transport; a Slurm
    job's is built before the store is opened).
    With a store, host keys the engine's transport accepts on first contact go to its audit log as the
    sweep goes (a Slurm job's nodes are reached by Slurm: only its SSH hop to the controller accepts keys).
    """
    images = {**(store.image_overrides() if store is not None else {}), **(spec.images or {})}
    if images:
        # The images ``rollback`` set back, before the checker: its worker processes get this spec.
        spec = replace(spec, inventory=with_images(spec.inventory, images))
    checker = checker if checker is not None else build_checker(spec)
    engine = SweepEngine(
        spec.inventory,
        checker.transport,
        spec.packs,
        store,
        checker=checker,
        pins={**effective_pins(spec.inventory, store), **(spec.pins or {})},
        probe_timeout_cap_s=spec.probe_timeout_cap_s,
        origin=spec.origin,
    )
    if store is not None:
        engine.subscribe(HostKeyAudit(engine.writes, engine.transport))
    return engine
