"""Every tool the console reads and every probe it runs, by id: the names check packs ``require``,
findings cite and parsers are registered under.

The catalogue (``console.sweep.catalog``) says how each one runs; this list is below the checks so
the pack loader can refuse a ``requires`` that names no probe (a typo there made a check silently
absent: it ran only when the probes it named were part of a sweep, and none ever was).
"""

from __future__ import annotations

from enum import StrEnum


class Tool(StrEnum):
    """The vendor tools the console reads (a parser package each: ``console.probes.parser_for``)."""

    AMD_SMI = "amd-smi"
    ROCM_SMI = "rocm-smi"
    ROCMINFO = "rocminfo"
    RVS = "rvs"
    RCCL_TESTS = "rccl-tests"
    TRANSFERBENCH = "transferbench"
    TORCH = "torch"


class ProbeId(StrEnum):
    """A probe's id, as packs, findings and the history database write it."""

    AMDSMI_VERSION = "amdsmi.version"
    AMDSMI_LIST = "amdsmi.list"
    AMDSMI_STATIC = "amdsmi.static"
    AMDSMI_METRIC = "amdsmi.metric"
    AMDSMI_FIRMWARE = "amdsmi.firmware"
    AMDSMI_BAD_PAGES = "amdsmi.bad_pages"
    AMDSMI_XGMI = "amdsmi.xgmi"
    AMDSMI_XGMI_STATUS = "amdsmi.xgmi_status"
    AMDSMI_CPER = "amdsmi.cper"
    HOST_OS = "host.os"
    HOST_KERNEL = "host.kernel"
    HOST_ROCM = "host.rocm"
    HOST_AMDGPU = "host.amdgpu"
    HOST_DKMS = "host.dkms"
    HOST_NIC = "host.nic"
    HOST_NIC_RATE = "host.nic_rate"
    HOST_STAMP = "host.stamp"
    HOST_MODULE_STAMP = "host.module_stamp"
    HOST_UPTIME = "host.uptime"
    TB_A2A = "tb.a2a"
    TB_P2P = "tb.p2p"
    TB_HEALTHCHECK = "tb.healthcheck"
    RCCL_ALL_REDUCE = "rccl.all_reduce"
    RVS_LEVEL3 = "rvs.level3"
    FRAMEWORK_TORCH = "framework.torch"


PROBE_IDS = frozenset(ProbeId)
