"""The cluster: TOML cluster files, hostlists, hostfiles, sinfo and ROCm/cvs cluster.json imports."""

from console.inventory.hostlist import HostlistError, expand, fold
from console.inventory.load import (
    InventoryError,
    expand_inventory,
    from_cvs_cluster_json,
    from_hostfile,
    from_mapping,
    from_sinfo,
    load_inventory,
)
from console.inventory.model import GPU_MODELS, Inventory, Node, Pool, SshConfig, StackPin
from console.inventory.paths import default_inventory_paths
from console.inventory.select import SelectionError, select_exactly, select_nodes, selection_problem

__all__ = [
    "GPU_MODELS",
    "HostlistError",
    "Inventory",
    "InventoryError",
    "Node",
    "Pool",
    "SelectionError",
    "SshConfig",
    "StackPin",
    "default_inventory_paths",
    "expand",
    "expand_inventory",
    "fold",
    "from_cvs_cluster_json",
    "from_hostfile",
    "from_mapping",
    "from_sinfo",
    "load_inventory",
    "select_exactly",
    "select_nodes",
    "selection_problem",
]
