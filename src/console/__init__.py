"""instinct-console: health sweeps, verdicts and operator actions for AMD Instinct GPU clusters.

Data flows one way: inventory -> transport -> probes -> checks -> findings -> store / UI / reports.
Only ``console.ui`` may import Textual.
"""

import warnings

__version__ = "0.1.0"


def _quiet_dependency_warnings() -> None:
    """Keep the SSH library's own deprecation notices off the operator's terminal.

    cryptography 51 deprecates DSA (seen 2026-12-07), and asyncssh names the DSA types at import: every command
    (``--version`` included) then printed ten warning lines before its output, and every check of a quiet
    stderr failed. The console never offers DSA keys (OpenSSH dropped them), so the notice says nothing to
    an operator. Only that category raised from asyncssh's own modules is silenced; every other warning,
    and that one from any other module, still shows. This runs before anything imports asyncssh because
    every entry point (the CLI, the engine and worker processes, the simulator) imports this package first.
    """
    try:
        from cryptography.utils import CryptographyDeprecationWarning
    except ImportError:  # no cryptography, so no asyncssh either: nothing to quiet
        return
    warnings.filterwarnings("ignore", category=CryptographyDeprecationWarning, module=r"asyncssh(\.|$)")


_quiet_dependency_warnings()
