"""Subcommands of ``instinct-console``; see ``console.cli``."""
