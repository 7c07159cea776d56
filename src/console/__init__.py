"""instinct-console: health sweeps, verdicts and operator actions for AMD Instinct GPU clusters.

Data flows one way: inventory -> transport -> probes -> checks -> findings -> store / UI / reports.
Only ``console.ui`` may import Textual.
"""

__version__ = "0.1.0"
