"""Widgets of the live console: the node grid, the link panel and the summary bar."""
