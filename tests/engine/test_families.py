"""One vocabulary of families: check packs and the probe catalogue name members of ``Family``, and a
check of a family with no grid column is refused when its pack loads, naming the file and the check."""

from __future__ import annotations

from pathlib import Path

import pytest

from console.checks import CheckConfigError, load_pack_file, load_packs
from console.model.family import CHECK_FAMILIES, Family
from console.sweep.catalog import PROBES

_CHECK = (
    '[pack]\nmodel = "MI300X"\n[[checks]]\nid = "gemm.speed"\ntitle = "t"\nfamily = "{family}"\n'
    'metric = "framework.bf16_tflops"\nfail_if = "< 100"\nsource = "s"\nsource_kind = "estimate"\n'
)


@pytest.mark.parametrize("family", ["frameworks", "Framework", "telemetry", "reachability", ""])
def test_a_check_of_no_check_family_is_a_load_error_naming_the_file_and_the_check(tmp_path: Path, family: str) -> None:
    path = tmp_path / "site.toml"
    path.write_text(_CHECK.format(family=family), encoding="utf-8")
    with pytest.raises(CheckConfigError) as info:
        load_pack_file(path)
    said = str(info.value)
    assert said.startswith(f"{path}: field checks[0](id=gemm.speed).family: ")
    assert "unknown family" in said and "framework" in said  # the families it may name


def test_a_check_of_a_check_family_loads_as_that_member(tmp_path: Path) -> None:
    path = tmp_path / "site.toml"
    path.write_text(_CHECK.format(family="framework"), encoding="utf-8")
    assert load_pack_file(path).checks[0].family is Family.FRAMEWORK


def test_every_built_in_check_and_probe_names_a_family() -> None:
    checks = {check.family for pack in load_packs().values() for check in pack.checks}
    assert checks <= set(CHECK_FAMILIES)
    assert all(isinstance(probe.family, Family) for probe in PROBES)
    assert {Family(probe.family) for probe in PROBES} - set(CHECK_FAMILIES) == {Family.TELEMETRY}


def test_the_operator_guide_lists_the_families_a_site_check_may_name() -> None:
    guide = (Path(__file__).resolve().parents[2] / "docs" / "operator-guide.md").read_text(encoding="utf-8")
    listed = guide[guide.index("Its `family` is") :].split("any other word", 1)[0]
    assert [family for family in CHECK_FAMILIES if f"`{family.value}`" not in listed] == []
