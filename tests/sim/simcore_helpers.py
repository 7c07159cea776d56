"""Small builders shared by the SIM-CORE tests: one-node clusters and running a command on them."""

from __future__ import annotations

from console.sim.commands import SimContext, SimReply, run_program
from console.sim.faults import Fault, FaultKind
from console.sim.models import ClusterSpec, NodeSpec, build_node
from console.sim.specs import DEFAULT_STACK, GpuModel, stack_preset

NODE = "n01"


def cluster(
    model: GpuModel = GpuModel.MI300X, rocm: str | None = None, faults: list[Fault] | None = None, seed: int = 3
) -> ClusterSpec:
    """A one-node cluster (node ``n01``) on ``rocm`` (default: the model's usual ROCm line)."""
    stack = stack_preset(rocm or DEFAULT_STACK[model])
    node = NodeSpec(name=NODE, gpu_model=model, stack=stack)
    return ClusterSpec(name="t", seed=seed, nodes=[node], faults=faults or [])


def fault(kind: FaultKind, gpu: int | None = None, peer: int | None = None, **params: str | int | float) -> Fault:
    """A fault on ``n01``."""
    return Fault(kind=kind, node=NODE, gpu=gpu, peer=peer, params=dict(params))


def run(spec: ClusterSpec, *argv: str, invocation: int = 1) -> SimReply:
    """Run ``argv`` on ``n01`` of ``spec`` as invocation number ``invocation``."""
    ctx = SimContext(node=build_node(spec, NODE), cluster=spec, invocation=invocation)
    return run_program(ctx, list(argv))
