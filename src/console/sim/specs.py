"""Static facts of the simulated hardware and software: GPU model specs and ROCm stack presets.

Values come from /work/shared/reference/thresholds.md (vendor figures where they exist, realistic
estimates otherwise) so that a healthy simulated node passes the console's checks and a faulted one
fails them for the documented reason.
"""

from __future__ import annotations

from enum import StrEnum

from pydantic import Field

from console.model.base import Model

GIB = 1024**3


class GpuModel(StrEnum):
    """The Instinct models the simulator can build."""

    MI300X = "MI300X"
    MI325X = "MI325X"
    MI350X = "MI350X"
    MI355X = "MI355X"
    MI250X = "MI250X"


class GpuModelSpec(Model):
    """Everything the renderers need to know about one GPU model (one logical GPU; one GCD on MI250X)."""

    model: GpuModel
    market_name: str = Field(description="amd-smi MARKET_NAME, e.g. 'AMD Instinct MI300X'")
    device_id: str = Field(description="PCI device id, 4 lower-case hex digits without 0x")
    subsystem_id: str
    revision_id: str
    gfx_target: str
    gfx_version: str = Field(description="KFD gfx_target_version as rocminfo/amd-smi print it, e.g. 'gfx942'")
    compute_units: int
    simds_per_cu: int = 4
    xcds: int
    gpus_per_node: int
    bus_numbers: list[int] = Field(description="PCI bus of each GPU in amd-smi enumeration order")
    vram_bytes: int
    vram_type: str
    vram_vendor: str
    vram_bit_width: int
    hbm_bandwidth_gbps: float = Field(description="peak HBM bandwidth, GB/s")
    power_cap_w: float = Field(description="default power cap = TBP = RVS IET target")
    idle_power_w: float
    pcie_gen: int
    pcie_width: int
    xgmi_links: int = Field(description="XGMI links per GPU")
    xgmi_bit_rate_gbps: int = Field(description="per-lane bit rate amd-smi xgmi prints, Gb/s")
    xgmi_max_bandwidth_gbps: int = Field(description="per-link max bandwidth amd-smi xgmi prints, Gb/s")
    gfx_clock_min_mhz: int
    gfx_clock_max_mhz: int
    gfx_clock_idle_mhz: int
    mem_clock_mhz: int = Field(description="HBM clock (MCLK) at its top DPM level")
    mem_clock_idle_mhz: int = Field(description="HBM clock (MCLK) an idle GPU reports")
    mem_clock_min_mhz: int
    fclk_mhz: int
    socclk_mhz: int
    idle_hotspot_c: float
    idle_mem_c: float
    slowdown_hotspot_c: float
    shutdown_hotspot_c: float
    slowdown_vram_c: float
    shutdown_vram_c: float
    bad_page_threshold: int = Field(description="driver default retired-page threshold")
    vbios_part_number: str
    vbios_version: str
    firmware: dict[str, str] = Field(description="firmware block -> version as amd-smi firmware prints")
    gst_targets_gflops: dict[str, float] = Field(description="RVS gst_single.conf target per data type")
    iet_target_w: float
    rccl_busbw_gbps: float = Field(description="expected single-node all_reduce in-place busbw at 8 GB")
    transferbench_pair_gbps: float = Field(description="healthy TransferBench a2a per GPU pair")
    mem_test_bandwidth_gbps: float = Field(description="RVS mem Test 11 bandwidth")
    has_violation_api: bool = Field(description="MI300 and newer report PVIOL/TVIOL; MI250X only THROTTLE_STATUS")

    @property
    def pcie_speed_gts(self) -> float:
        """Transfer rate of the nominal PCIe generation."""
        return pcie_gen_speed(self.pcie_gen)


_PCIE_GTS = {1: 2.5, 2: 5.0, 3: 8.0, 4: 16.0, 5: 32.0, 6: 64.0}


def pcie_gen_speed(gen: int) -> float:
    """GT/s of a PCIe generation (Gen5 -> 32.0)."""
    return _PCIE_GTS[gen]


_MI300_FW = {
    "CP_MEC1": "147",
    "CP_MEC2": "147",
    "RLC": "64",
    "SDMA0": "19",
    "SDMA1": "19",
    "VCN": "61.13.00.C",
    "PSP_SOSDRV": "36.02.4C",
    "TA_RAS": "20.00.00.0D",
    "TA_XGMI": "20.00.01.13",
    "PM": "85.110.0",
}
_MI325_FW = {**_MI300_FW, "CP_MEC1": "154", "CP_MEC2": "154", "PSP_SOSDRV": "36.02.50", "PM": "85.118.0"}
_MI350_FW = {
    "CP_MEC1": "31",
    "CP_MEC2": "31",
    "RLC": "87",
    "SDMA0": "12",
    "SDMA1": "12",
    "VCN": "62.03.00.1A",
    "PSP_SOSDRV": "00.38.0B",
    "TA_RAS": "1B.00.00.05",
    "TA_XGMI": "20.00.01.1A",
    "PM": "128.69.0",
}
_MI250_FW = {
    "CP_MEC1": "78",
    "CP_MEC2": "78",
    "RLC": "17",
    "SDMA0": "8",
    "SDMA1": "8",
    "VCN": "0x0110101b",
    "PSP_SOSDRV": "00.27.00.00",
    "TA_RAS": "1B.00.00.07",
    "TA_XGMI": "20.00.00.0F",
    "PM": "68.55.0",
}

_MI300_BUSES = [0x0C, 0x22, 0x38, 0x5C, 0x9F, 0xAF, 0xBF, 0xDF]
_MI350_BUSES = [0x05, 0x15, 0x65, 0x75, 0x85, 0x95, 0xE5, 0xF5]
_MI250_BUSES = [0xC1, 0xC6, 0xC9, 0xCE, 0xD1, 0xD6, 0xD9, 0xDE]

_GST_MI300X = {"fp8": 1215e3, "fp16": 639e3, "bf16": 581e3, "sgemm": 100e3, "dgemm": 70e3}
_GST_MI325X = {"fp8": 1438e3, "fp16": 696e3, "bf16": 669e3, "sgemm": 100e3, "dgemm": 70e3}
_GST_MI35X = {"fp8": 2061e3, "bf8": 1854e3, "fp16": 946e3, "bf16": 956e3}
_GST_MI250X = {"fp16": 150e3, "bf16": 41e3, "dgemm": 30e3}

_MI300_COMMON: dict[str, object] = {
    "gfx_target": "gfx942",
    "gfx_version": "gfx942",
    "compute_units": 304,
    "xcds": 8,
    "gpus_per_node": 8,
    "bus_numbers": _MI300_BUSES,
    "vram_type": "HBM3",
    "vram_vendor": "HYNIX",
    "vram_bit_width": 8192,
    "pcie_gen": 5,
    "pcie_width": 16,
    "xgmi_links": 7,
    "xgmi_bit_rate_gbps": 32,
    "xgmi_max_bandwidth_gbps": 512,
    "gfx_clock_min_mhz": 500,
    "gfx_clock_max_mhz": 2100,
    "gfx_clock_idle_mhz": 132,
    "mem_clock_mhz": 1300,
    "mem_clock_idle_mhz": 900,
    "mem_clock_min_mhz": 900,
    "fclk_mhz": 1800,
    "socclk_mhz": 1143,
    "idle_hotspot_c": 40.0,
    "idle_mem_c": 34.0,
    "slowdown_hotspot_c": 100.0,
    "shutdown_hotspot_c": 110.0,
    "slowdown_vram_c": 105.0,
    "shutdown_vram_c": 115.0,
    "bad_page_threshold": 128,
    "has_violation_api": True,
    "transferbench_pair_gbps": 46.5,
    "mem_test_bandwidth_gbps": 2003.0,
}
_MI350_COMMON: dict[str, object] = {
    "gfx_target": "gfx950",
    "gfx_version": "gfx950",
    "compute_units": 256,
    "xcds": 8,
    "gpus_per_node": 8,
    "bus_numbers": _MI350_BUSES,
    "vram_bytes": 288 * GIB,
    "vram_type": "HBM3E",
    "vram_vendor": "SAMSUNG",
    "vram_bit_width": 8192,
    "hbm_bandwidth_gbps": 8000.0,
    "pcie_gen": 5,
    "pcie_width": 16,
    "xgmi_links": 7,
    "xgmi_bit_rate_gbps": 38,
    "xgmi_max_bandwidth_gbps": 608,
    "gfx_clock_min_mhz": 500,
    "gfx_clock_idle_mhz": 148,
    "mem_clock_mhz": 2000,
    "mem_clock_idle_mhz": 1900,
    "mem_clock_min_mhz": 900,
    "fclk_mhz": 2000,
    "socclk_mhz": 1143,
    "idle_hotspot_c": 60.0,
    "idle_mem_c": 48.0,
    "slowdown_hotspot_c": 100.0,
    "shutdown_hotspot_c": 110.0,
    "slowdown_vram_c": 100.0,
    "shutdown_vram_c": 110.0,
    "bad_page_threshold": 256,
    "firmware": _MI350_FW,
    "gst_targets_gflops": _GST_MI35X,
    "has_violation_api": True,
    "rccl_busbw_gbps": 367.5,
    "transferbench_pair_gbps": 55.7,
    "mem_test_bandwidth_gbps": 2800.0,
}

GPU_SPECS: dict[GpuModel, GpuModelSpec] = {
    GpuModel.MI300X: GpuModelSpec.model_validate(
        {
            **_MI300_COMMON,
            "model": GpuModel.MI300X,
            "market_name": "AMD Instinct MI300X",
            "device_id": "74a1",
            "subsystem_id": "74a1",
            "revision_id": "00",
            "vram_bytes": 192 * GIB,
            "hbm_bandwidth_gbps": 5300.0,
            "power_cap_w": 750.0,
            "idle_power_w": 140.0,
            "vbios_part_number": "113-M3000100-102",
            "vbios_version": "022.040.003.043.000001",
            "firmware": _MI300_FW,
            "gst_targets_gflops": _GST_MI300X,
            "iet_target_w": 750.0,
            "rccl_busbw_gbps": 316.0,
        }
    ),
    GpuModel.MI325X: GpuModelSpec.model_validate(
        {
            **_MI300_COMMON,
            "model": GpuModel.MI325X,
            "market_name": "AMD Instinct MI325X",
            "device_id": "74a5",
            "subsystem_id": "74a5",
            "revision_id": "00",
            "vram_bytes": 256 * GIB,
            "vram_type": "HBM3E",
            "vram_vendor": "SAMSUNG",
            "hbm_bandwidth_gbps": 6000.0,
            "power_cap_w": 1000.0,
            "idle_power_w": 165.0,
            "mem_clock_mhz": 1400,
            "vbios_part_number": "113-M3250101-100",
            "vbios_version": "022.050.000.017.000001",
            "firmware": _MI325_FW,
            "gst_targets_gflops": _GST_MI325X,
            "iet_target_w": 1000.0,
            "rccl_busbw_gbps": 318.0,
        }
    ),
    GpuModel.MI350X: GpuModelSpec.model_validate(
        {
            **_MI350_COMMON,
            "model": GpuModel.MI350X,
            "market_name": "AMD Instinct MI350X",
            "device_id": "75a0",
            "subsystem_id": "75a0",
            "revision_id": "00",
            "power_cap_w": 1000.0,
            "idle_power_w": 256.0,
            "gfx_clock_max_mhz": 2200,
            "vbios_part_number": "113-M3500100-100",
            "vbios_version": "023.080.000.021.000001",
            "iet_target_w": 1000.0,
        }
    ),
    GpuModel.MI355X: GpuModelSpec.model_validate(
        {
            **_MI350_COMMON,
            "model": GpuModel.MI355X,
            "market_name": "AMD Instinct MI355X",
            "device_id": "75a3",
            "subsystem_id": "75a3",
            "revision_id": "00",
            "power_cap_w": 1400.0,
            "idle_power_w": 270.0,
            "gfx_clock_max_mhz": 2400,
            "vbios_part_number": "113-M3550100-100",
            "vbios_version": "023.080.000.027.000001",
            "iet_target_w": 1400.0,
            "rccl_busbw_gbps": 407.0,
        }
    ),
    GpuModel.MI250X: GpuModelSpec.model_validate(
        {
            "model": GpuModel.MI250X,
            "market_name": "AMD Instinct MI250X",
            "device_id": "740c",
            "subsystem_id": "0b0c",
            "revision_id": "01",
            "gfx_target": "gfx90a",
            "gfx_version": "gfx90a",
            "compute_units": 110,
            "xcds": 1,
            "gpus_per_node": 8,
            "bus_numbers": _MI250_BUSES,
            "vram_bytes": 64 * GIB,
            "vram_type": "HBM2E",
            "vram_vendor": "SAMSUNG",
            "vram_bit_width": 4096,
            "hbm_bandwidth_gbps": 1600.0,
            "power_cap_w": 560.0,
            "idle_power_w": 90.0,
            "pcie_gen": 4,
            "pcie_width": 16,
            "xgmi_links": 8,
            "xgmi_bit_rate_gbps": 25,
            "xgmi_max_bandwidth_gbps": 400,
            "gfx_clock_min_mhz": 500,
            "gfx_clock_max_mhz": 1700,
            "gfx_clock_idle_mhz": 800,
            "mem_clock_mhz": 1600,
            "mem_clock_idle_mhz": 1600,
            "mem_clock_min_mhz": 400,
            "fclk_mhz": 1600,
            "socclk_mhz": 1090,
            "idle_hotspot_c": 42.0,
            "idle_mem_c": 40.0,
            "slowdown_hotspot_c": 100.0,
            "shutdown_hotspot_c": 110.0,
            "slowdown_vram_c": 95.0,
            "shutdown_vram_c": 105.0,
            "bad_page_threshold": 64,
            "vbios_part_number": "113-D65201-042",
            "vbios_version": "113-D65201-042",
            "firmware": _MI250_FW,
            "gst_targets_gflops": _GST_MI250X,
            "iet_target_w": 560.0,
            "rccl_busbw_gbps": 150.0,
            "transferbench_pair_gbps": 37.0,
            "mem_test_bandwidth_gbps": 1100.0,
            "has_violation_api": False,
        }
    ),
}


class StackSpec(Model):
    """The software a node runs: OS, kernel, ROCm and the tools' own versions.

    amd-smi changes its JSON schema at ROCm 7.0 (``{"gpu_data": [...]}`` instead of a top-level list),
    so renderers branch on ``rocm_major``.
    """

    os_id: str = "ubuntu"
    os_name: str = "Ubuntu"
    os_version: str = Field(description="VERSION_ID, e.g. '22.04'")
    os_pretty: str = Field(description="PRETTY_NAME, e.g. 'Ubuntu 22.04.5 LTS'")
    os_codename: str
    kernel: str = Field(description="uname -r")
    rocm: str = Field(description="ROCm release, e.g. '6.4.1'")
    rocm_build: str = Field(description="/opt/rocm/.info/version, e.g. '6.4.1-83'")
    amdgpu_driver: str = Field(description="kernel-style amdgpu version, e.g. '6.12.12'")
    amdgpu_package: str = Field(description="amdgpu-dkms package version")
    firmware_bundle: str = Field(description="PLDM bundle / IFWI version")
    amdsmi_tool: str = Field(description="'AMDSMI Tool' version incl. +hash")
    amdsmi_lib: str
    rocm_smi: str = Field(description="rocm-smi --version 'ROCM-SMI version'")
    rocm_smi_lib: str
    hsa_runtime: str = Field(description="rocminfo 'Runtime Version'")
    hsa_ext_version: str = Field(description="rocminfo 'Runtime Ext Version'")
    hip: str
    rccl: str
    rvs: str
    transferbench: str

    @property
    def rocm_major(self) -> int:
        """Major ROCm number (6 or 7...), which selects output layouts."""
        return int(self.rocm.split(".", 1)[0])

    @property
    def rocm_tuple(self) -> tuple[int, ...]:
        """ROCm version as a tuple for ordered comparisons."""
        return tuple(int(part) for part in self.rocm.split(".") if part.isdigit())


STACK_PRESETS: dict[str, StackSpec] = {
    "6.2.2": StackSpec(
        os_version="22.04",
        os_pretty="Ubuntu 22.04.4 LTS",
        os_codename="jammy",
        kernel="5.15.0-119-generic",
        rocm="6.2.2",
        rocm_build="6.2.2-116",
        amdgpu_driver="6.8.5",
        amdgpu_package="1:6.8.5.60202-2041575.22.04",
        firmware_bundle="01.25.03.12",
        amdsmi_tool="24.6.3+9578815",
        amdsmi_lib="24.6.3.0",
        rocm_smi="2.3.1+8813c55",
        rocm_smi_lib="7.3.0",
        hsa_runtime="1.14",
        hsa_ext_version="1.6",
        hip="6.2.41134",
        rccl="2.20.5",
        rvs="0.0.60202",
        transferbench="1.50",
    ),
    "6.4.1": StackSpec(
        os_version="22.04",
        os_pretty="Ubuntu 22.04.5 LTS",
        os_codename="jammy",
        kernel="5.15.0-136-generic",
        rocm="6.4.1",
        rocm_build="6.4.1-83",
        amdgpu_driver="6.12.12",
        amdgpu_package="1:6.12.12.60401-2164967.22.04",
        firmware_bundle="01.25.06.05",
        amdsmi_tool="25.4.2+aca1101",
        amdsmi_lib="25.4.0",
        rocm_smi="3.0.0+bd8bdb5",
        rocm_smi_lib="7.5.0",
        hsa_runtime="1.15",
        hsa_ext_version="1.7",
        hip="6.4.43483",
        rccl="2.22.3",
        rvs="1.1.0",
        transferbench="1.59",
    ),
    "7.0.2": StackSpec(
        os_version="24.04",
        os_pretty="Ubuntu 24.04.3 LTS",
        os_codename="noble",
        kernel="6.8.0-79-generic",
        rocm="7.0.2",
        rocm_build="7.0.2-56",
        amdgpu_driver="6.14.14",
        amdgpu_package="1:6.14.14.30100200-2226257.24.04",
        firmware_bundle="01.26.00.04",
        amdsmi_tool="26.0.2+2e9a2b2d",
        amdsmi_lib="26.0.2",
        rocm_smi="4.0.0+4179531dcd",
        rocm_smi_lib="7.8.0",
        hsa_runtime="1.18",
        hsa_ext_version="1.11",
        hip="7.0.51831",
        rccl="2.26.6",
        rvs="1.3.0",
        transferbench="1.64",
    ),
}

# gfx950 needs ROCm 7; the older lines stay on hardware they support.
DEFAULT_STACK: dict[GpuModel, str] = {
    GpuModel.MI300X: "6.4.1",
    GpuModel.MI325X: "6.4.1",
    GpuModel.MI350X: "7.0.2",
    GpuModel.MI355X: "7.0.2",
    GpuModel.MI250X: "6.2.2",
}


def stack_preset(rocm: str) -> StackSpec:
    """A copy of the preset for ROCm ``rocm`` (KeyError names the known presets)."""
    try:
        return STACK_PRESETS[rocm].model_copy(deep=True)
    except KeyError:
        raise KeyError(f"no stack preset for ROCm {rocm!r}; known: {', '.join(STACK_PRESETS)}") from None
