"""``bundle NODE``: one archive of a node's evidence, for an RMA or a vendor ticket.

Everything comes from the history database (nothing reaches the node): the sweep's raw probe outputs
byte for byte, every finding with its evidence and action, the CPER records decoded with what each
AFID means, the GPUs' serials and firmware, the node's stack and verdict history, the console's drains
of it and the audit entries naming it. ``manifest.json`` lists each file with its SHA-256.

``--redact`` replaces host names (every node the database knows) and IP addresses with stable
placeholders in every file, raw outputs included, so the archive can leave the site; PCI addresses,
serials and timestamps stay, since they are the evidence.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import io
import json
import re
import sqlite3
import tarfile
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from console import __version__
from console.checks.afid import describe_afid
from console.checks.cper import describe_record, severity_class
from console.commands.arguments import UsageError, add_force_overwrite, add_store, existing_store
from console.commands.terminal import plain_console
from console.exitcodes import ExitCode
from console.files import replacing
from console.inert import printable
from console.model.findings import Status, worst_action
from console.model.gpu import GpuRecord, merge_gpu_records
from console.probes import Tool, parse_output
from console.probes.base import ParseError
from console.probes.ids import ProbeId
from console.store import Store
from console.store.db import StoreError

# Octets of 0-255 without leading zeros: firmware versions such as 27.00.01.1D are evidence, not addresses.
_OCTET = r"(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)"
_IPV4 = re.compile(rf"(?<![\w.]){_OCTET}(?:\.{_OCTET}){{3}}(?![\w.])")
# Three colons at least (or ``::``): a PCI address (``0000:05:00.0``) and a time (``10:45:13``) have two.
_IPV6 = re.compile(
    r"(?<![\w:])(?:[0-9A-Fa-f]{1,4}:){3,7}[0-9A-Fa-f]{1,4}(?![\w:])|(?<![\w:])[0-9A-Fa-f:]*::[0-9A-Fa-f]{1,4}\b"
)
_GPU_PROBES = (ProbeId.AMDSMI_STATIC, ProbeId.AMDSMI_FIRMWARE)

BUNDLE_EXIT_HELP = """exit codes:
  0    the archive is written (its path and what it holds on stdout)
  2    usage error: no history database, no sweep of the node, a sweep that did not judge it, or an
       archive path that cannot be written"""


def register(sub: Any) -> None:
    """Add ``bundle``."""
    said = "write one archive of a node's evidence (raw outputs, CPER, findings, audit)"
    b = sub.add_parser(
        "bundle",
        help=said,
        description=f"{said[0].upper()}{said[1:]}\n"
        "from the history database, to attach to a vendor case (RMA); --redact before it leaves the site.",
        epilog=BUNDLE_EXIT_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_store(b)
    b.add_argument("node", help="the node, as the history database names it")
    b.add_argument(
        "--sweep",
        type=int,
        help="sweep to take the evidence from (default: the node's newest in which it did not pass, else its newest)",
    )
    b.add_argument("-o", "--output", help="archive path (default: <node>-evidence-<sweep>.tar.gz here)")
    b.add_argument("--redact", action="store_true", help="replace host names and IP addresses with placeholders")
    add_force_overwrite(b)
    b.set_defaults(func=run_bundle)


def _store_for_bundle(path: Path | None) -> Store:
    """The history database, read-only; a corrupt one is still read (evidence is wanted most when things
    broke) after a warning on stderr that names it and the way to recover it."""
    try:
        return existing_store(path)
    except StoreError as exc:
        if exc.fault is None or exc.fault.kind != "corrupt":
            raise
        plain_console(stderr=True).print(f"warning: {printable(str(exc))}; bundling what can still be read")
        return existing_store(path, check=False)


def run_bundle(args: argparse.Namespace) -> int:
    """Write the archive and say where, with what it holds."""
    store = _store_for_bundle(args.store)
    try:
        try:
            sweep_id = args.sweep if args.sweep is not None else _newest_sweep(store, args.node)
            files = evidence_files(store, args.node, sweep_id)
        except sqlite3.DatabaseError as exc:  # the corrupt part of a store it was warned about
            raise UsageError(f"{store.path}: cannot read the evidence of {args.node}: {exc}") from None
        redactor = Redactor(_known_hosts(store)) if args.redact else None
        name = redactor.text(args.node) if redactor else args.node
        output = Path(args.output or f"{name}-evidence-{sweep_id}.tar.gz")
        # A link, another's file, a missing directory or a full disk: one line, exit 2 (console.files).
        write_archive(output, files, node=name, sweep_id=sweep_id, redactor=redactor, force=args.force_overwrite)
    finally:
        store.close()
    console = plain_console()
    redacted = " (redacted)" if redactor else ""
    chosen = "given" if args.sweep is not None else "the node's newest in which it did not pass, else its newest"
    console.print(f"{printable(str(output))}: {len(files)} files from sweep {sweep_id} ({chosen}){redacted}")
    return int(ExitCode.OK)


def _newest_sweep(store: Store, node: str) -> int:
    """The node's newest sweep in which it did not pass (the evidence of a fault), else its newest."""
    rows = store.node_history(node, limit=1000)
    if not rows:
        raise UsageError(f"the history database has no sweep of {node!r}")
    failing = next((r for r in rows if r["status"] not in ("PASS", "SKIP")), None)
    return int((failing or rows[0])["sweep_id"])


def _known_hosts(store: Store) -> list[str]:
    """Every node name the database holds: all of them are redacted, wherever they appear."""
    return [r[0] for r in store.conn.execute("SELECT DISTINCT node FROM node_verdicts")]


def evidence_files(store: Store, node: str, sweep_id: int) -> dict[str, bytes]:
    """Archive member name -> content, for ``node`` in ``sweep_id``."""
    verdict = store.conn.execute(
        "SELECT * FROM node_verdicts WHERE sweep_id = ? AND node = ?", (sweep_id, node)
    ).fetchone()
    if verdict is None:
        raise UsageError(f"sweep {sweep_id} did not judge {node!r}")
    findings = store.findings(sweep_id, node)
    files: dict[str, bytes] = {}
    action = worst_action(findings, Status(verdict["status"]))
    files["verdict.json"] = _json(
        {
            "judged_at_utc": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(verdict["updated_at"])),
            "node": node,
            "sweep_id": sweep_id,
            "pool": verdict["pool"],
            "status": verdict["status"],
            "reason": verdict["reason"],
            "action": action,
            "families": json.loads(verdict["families"]),
            "stack": json.loads(verdict["stack"]),
            "judged_at": verdict["updated_at"],
        }
    )
    files["findings.json"] = _json([f.model_dump(mode="json", exclude_none=True) for f in findings])
    raw: dict[str, str] = {}
    for probe, run_id in sorted(store.probe_run_ids(sweep_id).get(node, {}).items()):
        stored = store.probe_output(run_id)
        if stored is None:
            continue
        stdout, stderr = stored
        files[f"raw/{probe}.out"] = stdout
        if stderr:
            files[f"raw/{probe}.err"] = stderr
        raw[probe] = stdout.decode("utf-8", errors="replace")
    files["cper.txt"] = cper_text(raw.get(ProbeId.AMDSMI_CPER)).encode()
    files["gpus.json"] = _json(gpu_identities(raw))
    files["history.json"] = _json([_row(r) for r in store.node_history(node, limit=100)])
    files["drains.json"] = _json([_readable(vars(d)) for d in store.drains(node)])
    files["cases.json"] = _json(
        [
            {**_readable(vars(case)), "steps": [_readable(vars(step)) for step in store.case_steps(case.id)]}
            for case in store.cases(node)
        ]
    )
    files["audit.json"] = _json([_row(r) for r in store.audit_log(limit=10_000) if node in json.loads(r["targets"])])
    return files


def cper_text(output: str | None) -> str:
    """The CPER records of the sweep, decoded: each record's AFIDs with their meaning and action."""
    if output is None:
        return "no CPER listing in this sweep (amdsmi.cper did not run)\n"
    try:
        parsed = parse_output(output, tool=Tool.AMD_SMI, kind="ras")
    except ParseError as exc:
        return f"the CPER listing could not be read: {exc}\n(raw/amdsmi.cper.out holds it as the node printed it)\n"
    records = list(getattr(parsed.data, "cper", None) or [])
    lines = [f"{len(records)} CPER records ({', '.join(parsed.errors) or 'as amd-smi listed them'})"]
    for record in records:
        gpu = f"GPU {record.gpu_index}" if record.gpu_index is not None else "GPU ?"
        saved = f" {record.file_name}" if record.file_name else ""
        lines.append(f"{gpu} {record.severity or severity_class(record)}{saved}: {describe_record(record)}")
        lines += [f"    {describe_afid(int(number))}" for number in record.afids]
    return "\n".join(lines) + "\n"


def gpu_identities(raw: dict[str, str]) -> list[dict[str, Any]]:
    """Each GPU's identity (serial, PCI address, VBIOS, partition) and firmware versions, from amd-smi."""
    records: list[GpuRecord] = []
    for probe in _GPU_PROBES:
        if probe not in raw:
            continue
        try:
            parsed = parse_output(raw[probe], tool=Tool.AMD_SMI)
        except ParseError:
            continue
        records.extend(getattr(parsed.data, "gpus", None) or [])
    return [
        {"identity": g.identity.model_dump(mode="json", exclude_none=True), "firmware": g.firmware}
        for g in merge_gpu_records(records, same_tool=True)
    ]


# Columns that hold JSON text in the store, and those that say which console process wrote a row (its
# host, boot and pid: bookkeeping of the console's own host, not evidence about the node).
_JSON_COLUMNS = frozenset({"families", "stack", "passed", "targets", "inputs", "commands", "findings"})
_NOT_EVIDENCE = frozenset({"owner"})
_TIMES = frozenset({"at", "started_at", "finished_at", "updated_at", "opened_at", "closed_at", "ended_at"})


def _row(row: Any) -> dict[str, Any]:
    """A store row as readable JSON: JSON columns decoded, times also in UTC, process bookkeeping left out."""
    values = {key: row[key] for key in row.keys() if key not in _NOT_EVIDENCE}  # noqa: SIM118 (no items())
    for key in _JSON_COLUMNS & values.keys():
        if isinstance(values[key], str):
            with contextlib.suppress(ValueError):  # text that is no JSON is kept as it is
                values[key] = json.loads(values[key])
    return _readable(values)


def _readable(values: dict[str, Any]) -> dict[str, Any]:
    """``values`` with each epoch time beside it in UTC (``at`` -> ``at_utc``) and enums as their words."""
    shown = {key: getattr(value, "value", value) for key, value in values.items()}
    for key in _TIMES & values.keys():
        if isinstance(values[key], int | float):
            shown[f"{key}_utc"] = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(values[key]))
    return shown


def _json(value: Any) -> bytes:
    return (json.dumps(value, indent=2, sort_keys=True, default=str) + "\n").encode()


class Redactor:
    """Stable placeholders for host names (``node-1``, ...) and IP addresses (``ipv4-1``, ``ipv6-1``)."""

    def __init__(self, hosts: Iterable[str]) -> None:
        names = sorted(set(hosts), key=lambda h: (-len(h), h))  # a longer name first: sim010 before sim01
        self._hosts = {name: f"node-{i}" for i, name in enumerate(sorted(set(hosts)), 1)}
        self._host = re.compile("|".join(rf"(?<![\w.-]){re.escape(n)}(?![\w-])" for n in names)) if names else None
        self._addresses: dict[str, str] = {}

    def text(self, text: str) -> str:
        """``text`` with every host name and IP address replaced."""
        if self._host is not None:
            text = self._host.sub(lambda m: self._hosts[m.group(0)], text)
        text = _IPV4.sub(self._address("ipv4"), text)
        return _IPV6.sub(self._address("ipv6"), text)

    def data(self, content: bytes) -> bytes:
        """Raw bytes redacted as text (invalid UTF-8 kept as it was, byte for byte)."""
        return self.text(content.decode("utf-8", errors="surrogateescape")).encode("utf-8", errors="surrogateescape")

    def _address(self, kind: str) -> Callable[[re.Match[str]], str]:
        def replace(match: re.Match[str]) -> str:
            found = match.group(0)
            if found not in self._addresses:
                self._addresses[found] = f"{kind}-{sum(v.startswith(kind) for v in self._addresses.values()) + 1}"
            return self._addresses[found]

        return replace


def write_archive(
    path: Path, files: dict[str, bytes], *, node: str, sweep_id: int, redactor: Redactor | None, force: bool = False
) -> None:
    """A gzip'd tar of ``files`` under ``<node>-evidence/``, with a manifest; replaces ``path`` (console.files)."""
    if redactor is not None:
        files = {name: redactor.data(content) for name, content in files.items()}
    manifest = {
        "node": node,
        "sweep_id": sweep_id,
        "created_at": time.time(),
        "tool": "instinct-console",
        "tool_version": __version__,
        "redacted": redactor is not None,
        "files": [
            {"name": name, "bytes": len(content), "sha256": hashlib.sha256(content).hexdigest()}
            for name, content in sorted(files.items())
        ],
    }
    members = {"manifest.json": _json(manifest), **files}
    with replacing(path, force=force) as out, tarfile.open(fileobj=out, mode="w:gz") as tar:
        for name, content in members.items():
            info = tarfile.TarInfo(f"{node}-evidence/{name}")
            info.size, info.mtime, info.mode = len(content), int(time.time()), 0o600
            tar.addfile(info, io.BytesIO(content))
