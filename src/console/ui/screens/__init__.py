"""Screens of the live console: the node list, a node's details, raw output and the dialogs."""
