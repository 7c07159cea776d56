"""Families: the one vocabulary of what a probe, a check or a finding is about.

A family's value is the word findings, the history database, check packs (``family = "ecc"``), the
JUnit report's class names and the engine's rerun-by-family requests carry. Its ``column`` is its title in
the console's node grid: a member declares one or says why it has none, so a new family cannot be added
without deciding where an operator sees it (the grid takes its columns from here, in this order).
"""

from __future__ import annotations

from enum import StrEnum


class Family(StrEnum):
    """What a check, a probe or a finding is about; members in the order an operator reads a node:
    hardware first, fabric, stack, tests."""

    column: str | None

    def __new__(cls, value: str, column: str | None) -> Family:
        member = str.__new__(cls, value)
        member._value_ = value
        member.column = column
        return member

    INVENTORY = "inventory", "inv"
    MEMORY = "memory", "mem"
    PCIE = "pcie", "pci"
    ECC = "ecc", "ecc"
    RAS = "ras", "ras"
    THERMAL = "thermal", "thm"
    POWER = "power", "pwr"
    XGMI = "xgmi", "xgm"
    NIC = "nic", "nic"
    STACK = "stack", "stk"
    FIRMWARE = "firmware", "fw"
    RCCL = "rccl", "rcl"
    TRANSFERBENCH = "transferbench", "tb"
    RVS = "rvs", "rvs"
    FRAMEWORK = "framework", "frm"
    # No column: amd-smi's telemetry probe feeds the ecc, pcie, thermal and power checks, whose columns
    # show what it read (and, when it did not answer, their UNKNOWN).
    TELEMETRY = "telemetry", None
    # No column: a workload's runs have their own view (acceptance); their findings count in the verdict.
    WORKLOAD = "workload", None
    # No column: a node that could not be reached at all is its verdict (UNKNOWN) and its reason.
    REACHABILITY = "reachability", None
    # No column: a probe the catalogue does not know that gave nothing to read (its reason is the node's).
    PROBE = "probe", None

    @classmethod
    def columns(cls) -> tuple[Family, ...]:
        """The families the node grid shows, one column each, in the order it shows them."""
        return tuple(family for family in cls if family.column is not None)


# What a check pack may name as a check's family: every family with a column, so a check is always shown.
CHECK_FAMILIES: tuple[Family, ...] = Family.columns()
# The families ``drift`` compares with the pool's pins: the software stack and the firmware.
DRIFT_FAMILIES: frozenset[str] = frozenset({Family.STACK, Family.FIRMWARE})
