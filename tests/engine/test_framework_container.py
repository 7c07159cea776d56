"""The framework probe in a pool's container (``[pools.framework]``): the cluster file, the probe's form
per pool, the image in the node's stack and in the framework workload's acceptance stack. The operator
guide's example is read from the guide itself, so it cannot drift."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from console.actions.acceptance import BARE, framework_view, merge_stacks, stack_changes
from console.actions.pin import drift_rows
from console.checks.facts import ProbeOutcome, build_facts
from console.inventory import InventoryError, load_inventory
from console.inventory.model import StackPin
from console.model.findings import Status
from console.model.workload import image_reference
from console.probes import Tool, parse_output
from console.probes.ids import ProbeId
from console.sweep.catalog import PROBES_BY_ID, in_pool

GUIDE = Path(__file__).resolve().parents[2] / "docs" / "operator-guide.md"
BARE_POOL = '[[pools]]\nname = "bare"\nnodes = "gpu[05-06]"\ngpu_model = "MI300X"\n\n'


def _guide_example() -> str:
    section = GUIDE.read_text().split("### The framework in the pool's container", 1)[1]
    block = re.search(r"\n((?:    .*\n)(?:    .*\n|\n)*)", section)  # the first indented block
    assert block is not None
    return "\n".join(line.removeprefix("    ") for line in block.group(1).splitlines()) + "\n"


@pytest.fixture
def cluster(tmp_path: Path) -> Path:
    path = tmp_path / "cluster.toml"
    path.write_text(_guide_example() + "\n" + BARE_POOL, encoding="utf-8")
    return path


def test_the_documented_pool_runs_its_framework_in_its_container(cluster: Path) -> None:
    inventory = load_inventory(cluster)
    container = inventory.pools["mi300x-a"].framework.container
    assert container is not None and container.runtime == "podman" and container.reference == "digest"
    assert inventory.pools["bare"].framework.container is None
    torch = PROBES_BY_ID[ProbeId.FRAMEWORK_TORCH]
    inside = in_pool(torch, inventory.pools["mi300x-a"])
    assert inside.argv[:3] == ("podman", "run", "--rm") and inside.program == "podman"
    assert inside.argv[inside.argv.index(container.image) + 1 :][:2] == ("python3", "-c")
    assert inside.argv[-4:] == ("--container-runtime", "podman", "--container-image", container.image)
    assert inside.command_line.startswith("podman run --rm --device=/dev/kfd")
    assert "--shm-size=16g " + container.image + " python3 -c '<instinct-console torch probe>'" in inside.command_line
    # A bare pool, and every other probe, run as catalogued.
    assert in_pool(torch, inventory.pools["bare"]) is torch
    quick = PROBES_BY_ID[ProbeId.HOST_OS]
    assert in_pool(quick, inventory.pools["mi300x-a"]) is quick


@pytest.mark.parametrize(
    ("container", "words"),
    [
        ('{ runtime = "podman", image = "rocm/pytorch:latest" }', "is not pinned"),
        ('{ runtime = "podman", image = "rocm/pytorch" }', "is not pinned"),
        ('{ runtime = "lxc", image = "x.sif" }', "runtime"),
        ('{ runtime = "docker", image = "rocm/pytorch:2.7", gpus = "all" }', "gpus"),
    ],
)
def test_a_bad_framework_container_is_refused_naming_the_field(tmp_path: Path, container: str, words: str) -> None:
    path = tmp_path / "cluster.toml"
    path.write_text(BARE_POOL + f"[pools.framework]\ncontainer = {container}\n", encoding="utf-8")
    with pytest.raises(InventoryError, match=words):
        load_inventory(path)


@pytest.mark.parametrize(
    ("runtime", "image", "kind"),
    [
        ("podman", "docker.io/rocm/pytorch@sha256:" + "ab" * 32, "digest"),
        ("docker", "rocm/pytorch:rocm6.4.1_ubuntu22.04_py3.10_pytorch_release_2.7.1", "tag"),
        ("apptainer", "/shared/images/pytorch.sif", "file"),
        ("apptainer", "docker://rocm/pytorch:rocm6.4.1", "tag"),
        ("apptainer", "docker://rocm/pytorch@sha256:" + "cd" * 32, "digest"),
    ],
)
def test_a_tag_is_not_a_digest(runtime: str, image: str, kind: str) -> None:
    assert image_reference(runtime, image) == kind


def _document(params: str, seen: str) -> str:
    return (
        '{"probe": "instinct-console/torch", "schema": 1, "params": ' + params + ', "container_seen": ' + seen + ","
        ' "torch": {"status": "ok", "version": "2.7.1+rocm6.4", "hip": "6.4", "cuda_available": true,'
        ' "device_count": 0}, "devices": [], "all_reduce": {"status": "skipped"}}\n'
    )


def test_the_image_joins_the_nodes_stack_and_the_framework_acceptance_stack(cluster: Path) -> None:
    inventory = load_inventory(cluster)
    image = "rocm/pytorch:rocm6.4.1_ubuntu22.04_py3.10_pytorch_release_2.7.1"
    params = '{"size": 8192, "container_runtime": "docker", "container_image": "' + image + '"}'
    stacks = []
    for text in (_document(params, '"docker"'), _document('{"size": 8192}', "null")):
        parsed = parse_output(text, tool=Tool.TORCH, kind="torch")
        outcome = ProbeOutcome(probe=ProbeId.FRAMEWORK_TORCH, parsed=parsed)
        stacks.append(build_facts(inventory.nodes[0], StackPin(), {ProbeId.FRAMEWORK_TORCH: outcome}).stack)
    inside, bare = stacks
    assert (inside["framework_image"], inside["framework_image_ref"]) == (image, "tag")
    assert "image_digest" not in inside, "a tag names no digest: the pin's image_digest is not observed"
    assert "framework_image" not in bare and bare["torch"] == "2.7.1+rocm6.4"
    # The framework workload reads it as its image; a bare run says so; a stack without torch says nothing.
    assert framework_view(inside)["image"] == image and framework_view(inside)["image_ref"] == "tag"
    assert framework_view(bare)["image"] == BARE
    assert "image" not in framework_view({"rocm": "6.4.1"})
    accepted = merge_stacks([bare], framework=True)
    moved = merge_stacks([inside], framework=True)
    assert stack_changes(accepted, moved) == {"image": (BARE, image)}
    # A site workload's stack never takes the framework's image: its own container is its image.
    assert "image" not in merge_stacks([inside]) and merge_stacks([inside], "vllm@sha256:1")["image"] == "vllm@sha256:1"


def test_an_image_named_by_digest_is_the_pins_image_digest(cluster: Path) -> None:
    inventory = load_inventory(cluster)
    image = "docker.io/rocm/pytorch@sha256:" + "2f" * 32
    params = '{"container_runtime": "podman", "container_image": "' + image + '"}'
    parsed = parse_output(_document(params, '"podman"'), tool=Tool.TORCH, kind="torch")
    outcomes = {ProbeId.FRAMEWORK_TORCH: ProbeOutcome(probe=ProbeId.FRAMEWORK_TORCH, parsed=parsed)}
    facts = build_facts(inventory.nodes[0], StackPin(), outcomes)
    assert facts.stack["image_digest"] == "sha256:" + "2f" * 32
    rows = {r.field: r for r in drift_rows(facts, StackPin(image_digest="sha256:" + "2f" * 32), None)}
    assert rows["image_digest"].status is Status.PASS
    rows = {r.field: r for r in drift_rows(facts, StackPin(image_digest="sha256:" + "00" * 32), None)}
    assert rows["image_digest"].status is Status.WARN, rows["image_digest"]
