"""A simulated AMD Instinct cluster: node state from a cluster file, and the tools' outputs rendered from it.

``models`` holds the cluster description and node state, ``faults`` the fault catalogue,
``commands`` the program dispatcher, and ``render`` the per-tool output renderers.
"""
