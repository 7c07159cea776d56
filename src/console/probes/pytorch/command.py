"""The framework probe's command line, built in one place: ``python3 -c <script> <options>``.

The console installs nothing on a node: the script travels in the argv and runs on the node's own
``python3``, or, for a pool that names its framework's container (``[pools.framework]``), on the
``python3`` of that image: ``podman run --rm <GPU devices> <image> python3 -c ...`` or ``apptainer exec
--rocm <image> python3 -c ...``, wrapped by the workloads' one ``container_argv``. The script is told
the runtime and image (``--container-runtime``/``--container-image``) so its document names them, and
the node's stack records the image the framework ran in.
"""

from __future__ import annotations

import shlex
from functools import cache
from importlib import resources

from console.model.workload import ContainerSpec
from console.probes.workload import container_argv

# The first line of the script: how the simulator (and a reader of ``ps``) knows this ``python3 -c``.
SCRIPT_MARK = "# instinct-console torch probe"
PROBE_NAME = "instinct-console/torch"

# GEMMs of 8192^3: large enough for every Instinct GPU to reach its matrix-core rate (RVS's GST uses
# 4864x4096x8192 on MI300X and 8192x8192x16384 on MI350X), small enough to take seconds.
GEMM_SIZE = 8192
GEMM_ITERS = 20
GEMM_WARMUP = 3
ALLREDUCE_MIB = 64
ALLREDUCE_TIMEOUT_S = 120


@cache
def node_script() -> str:
    """The script the node's Python runs (``node_script.py`` beside this module, as text)."""
    return resources.files(__package__ or "console.probes.pytorch").joinpath("node_script.py").read_text("utf-8")


def torch_probe_argv(python: str = "python3", container: ContainerSpec | None = None) -> tuple[str, ...]:
    """What runs on the node: ``python`` with the script and its options, in ``container`` when given."""
    told = ("--container-runtime", container.runtime, "--container-image", container.image) if container else ()
    argv = (
        python,
        "-c",
        node_script(),
        "--size",
        str(GEMM_SIZE),
        "--iters",
        str(GEMM_ITERS),
        "--warmup",
        str(GEMM_WARMUP),
        "--allreduce-mib",
        str(ALLREDUCE_MIB),
        "--allreduce-timeout",
        str(ALLREDUCE_TIMEOUT_S),
        *told,
    )
    return container_argv(container, argv) if container is not None else argv


def torch_probe_shown(argv: tuple[str, ...]) -> str:
    """``argv`` as findings and the history show it: the script named by its first line, not spelled out."""
    return shlex.join(["<" + SCRIPT_MARK.removeprefix("# ") + ">" if arg == node_script() else arg for arg in argv])
