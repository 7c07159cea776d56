"""Package holds that keep a node on its pool's pin: ``apt-mark hold``, ``dnf versionlock add``, ``zypper addlock``.

Which package manager a node has is read from ``/etc/os-release`` (``ID``). Which packages to hold
follows from the pinned fields: a pinned amdgpu driver holds ``amdgpu-dkms`` and its firmware, a
pinned ROCm holds ``rocm-core`` and the ``rocm`` meta-package, a pinned kernel holds that kernel's
image (and headers, which DKMS builds against). A hold freezes the version installed now, so it is
applied to nodes that match their pin, after a drift check, never to fix drift.
"""

from __future__ import annotations

from enum import StrEnum

from console.inventory.model import StackPin

OS_RELEASE_ARGV = ("cat", "/etc/os-release")


class PackageManager(StrEnum):
    """How a distribution holds packages."""

    APT = "apt"
    DNF = "dnf"
    ZYPPER = "zypper"


_MANAGERS = {
    "debian": PackageManager.APT,
    "ubuntu": PackageManager.APT,
    "rhel": PackageManager.DNF,
    "rocky": PackageManager.DNF,
    "almalinux": PackageManager.DNF,
    "ol": PackageManager.DNF,
    "centos": PackageManager.DNF,
    "fedora": PackageManager.DNF,
    "sles": PackageManager.ZYPPER,
    "opensuse-leap": PackageManager.ZYPPER,
}

# Pinned field -> packages (same names in AMD's deb and rpm repositories).
_PACKAGES: dict[str, tuple[str, ...]] = {
    "amdgpu_driver": ("amdgpu-dkms", "amdgpu-dkms-firmware"),
    "rocm": ("rocm-core", "rocm"),
    "rccl": ("rccl",),
    "rvs": ("rocm-validation-suite",),
    "transferbench": ("transferbench",),
}


HELD_FIELDS = tuple(_PACKAGES)  # pinned fields a hold freezes through their packages (and the kernel)


def manager_for(os_id: str | None) -> PackageManager | None:
    """The package manager of an os-release ``ID`` (or an ``ubuntu 22.04`` label); None when unknown."""
    if not os_id or not os_id.split():
        return None
    return _MANAGERS.get(os_id.split()[0].strip().lower())


def _kernel_packages(kernel: str, manager: PackageManager) -> tuple[str, ...]:
    if manager is PackageManager.APT:
        return (f"linux-image-{kernel}", f"linux-headers-{kernel}")
    return (
        (f"kernel-{kernel}", f"kernel-devel-{kernel}")
        if manager is PackageManager.DNF
        else (f"kernel-default-{kernel}",)
    )


def packages_to_hold(pin: StackPin, manager: PackageManager) -> list[str]:
    """Packages whose installed versions carry the pinned fields of ``pin``."""
    fields = pin.pinned_fields()
    packages = [pkg for field, pkgs in _PACKAGES.items() if field in fields for pkg in pkgs]
    if pin.kernel:
        packages.extend(_kernel_packages(pin.kernel, manager))
    return packages


def hold_argv(manager: PackageManager, packages: list[str]) -> tuple[str, ...]:
    """The command that holds ``packages`` at their installed versions."""
    if manager is PackageManager.APT:
        return ("apt-mark", "hold", *packages)
    if manager is PackageManager.DNF:
        return ("dnf", "-y", "versionlock", "add", *packages)
    return ("zypper", "--non-interactive", "addlock", *packages)
