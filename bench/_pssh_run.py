"""parallel-ssh (``pssh.clients.ParallelSSHClient``) running one command on every host, output read in full.

Run as a child of bench/sweep.py so its CPU is measured alone:
``python bench/_pssh_run.py HOSTS_FILE PORT USER KEY FANOUT COMMAND``; prints ``<hosts ok> <bytes>``.
"""

from __future__ import annotations

import sys
from pathlib import Path

from pssh.clients import ParallelSSHClient


def main() -> None:
    """Connect to every host (``FANOUT`` at a time), run the command, read every stdout line."""
    hosts_file, port, user, key, fanout, command = sys.argv[1:7]
    hosts = Path(hosts_file).read_text().split()
    client = ParallelSSHClient(hosts, port=int(port), user=user, pkey=key, pool_size=int(fanout), timeout=60)
    output = client.run_command(command, stop_on_errors=False)
    client.join(output)
    ok = received = 0
    for host_output in output:
        if host_output.exception is None and host_output.stdout is not None:
            received += sum(len(line) + 1 for line in host_output.stdout)
            ok += host_output.exit_code == 0
    print(ok, received)


if __name__ == "__main__":
    main()
