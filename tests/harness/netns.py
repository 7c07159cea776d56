"""A real-sshd fleet whose nodes each own a network namespace, for faults that need a real network.

Node *i* lives in namespace ``<tag>-<name>`` with ``eth0`` at ``10.200.B.i/24``; the other end of its
veth pair hangs on the bridge ``<tag>br`` (``10.200.B.254``) in the root namespace, where the console
runs. The faults act on that network the way a cluster fabric fails:

* ``link_down``: the node's veth goes down (cable pulled, switch port dead) - also mid-command;
* ``blackhole``: the node drops every packet that reaches it (firewall, dead host with ARP cached);
* ``loss``: a share of the packets reaching the node is dropped at random;
* ``throttle``: the node's egress goes through a token bucket (``tc tbf``): a slow link.

The kernel here has no ``netem``: latency comes from a user-space proxy (tests/reliability/latency.py).

Safety: the namespaces have no default route; the root namespace gets ``unreachable 10.200.B.0/24``
with a high metric (a vanished bridge refuses instead of leaking to the default route) and an nftables
guard that drops and counts lab packets leaving through anything but the bridge (``guard_hits``).
Each fleet picks a free third octet B (its tag is ``ic<B>``), cleans up leftovers of an earlier crashed
run with the same tag, and removes everything it created on ``stop``.
"""

from __future__ import annotations

import ipaddress
import json
import os
import shutil
import subprocess

import pytest

from tests.harness.sshd_fleet import SSHD, FleetNode, SshdFleet

LAB_NET = ipaddress.IPv4Network("10.200.0.0/16")
GATEWAY_HOST = 254  # the bridge's address in every /24
PORT = 22


def _ip(*args: str, check: bool = True, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    """Run a networking command (``ip``, ``nft``, ``tc``); raise with its stderr when it fails and ``check``."""
    done = subprocess.run(args, input=stdin, capture_output=True, text=True, check=False)
    if check and done.returncode:
        raise RuntimeError(f"{' '.join(args)} failed ({done.returncode}): {done.stderr.strip()}")
    return done


def skip_unless_netns_possible() -> None:
    """Skip the calling test unless network namespaces, bridges and nftables can be used here."""
    if os.geteuid() != 0:
        pytest.skip("network-namespace fleet needs root")
    for tool in ("ip", "nft", "tc"):
        if shutil.which(tool) is None:
            pytest.skip(f"network-namespace fleet needs {tool} (Debian: iproute2, nftables)")


def _pick_subnet() -> int:
    """A third octet B whose bridge does not exist yet, starting from one derived from our pid."""
    links = _ip("ip", "-o", "link", "show", "type", "bridge").stdout
    routes = _ip("ip", "route", "show", "table", "all").stdout
    start = os.getpid() % 200
    for step in range(200):
        block = (start + step) % 200 + 1
        if f"ic{block}br:" not in links and f"10.200.{block}.0/24" not in routes:
            return block
    raise RuntimeError("no free 10.200.B.0/24 lab subnet")


class NetnsFleet(SshdFleet):
    """``count`` sshd nodes, each in its own network namespace on one bridge, with network faults."""

    def __init__(self, count: int = 4, *, prefix: str = "net", subnet: int | None = None, **kwargs: object) -> None:
        super().__init__(count, prefix=prefix, port=PORT, **kwargs)  # type: ignore[arg-type]
        self.subnet = subnet
        self.tag = ""

    # -- addresses and names --------------------------------------------------------------------
    @property
    def lab(self) -> ipaddress.IPv4Network:
        """This fleet's /24 of the lab network."""
        return ipaddress.IPv4Network(f"10.200.{self.subnet}.0/24")

    @property
    def bridge(self) -> str:
        return f"{self.tag}br"

    def namespace(self, node: FleetNode | str) -> str:
        """The node's network namespace."""
        return f"{self.tag}-{self._resolve(node).name}"

    def veth(self, node: FleetNode | str) -> str:
        """The root-namespace end of the node's veth pair (interface names have at most 15 characters)."""
        return f"{self.tag}v{int(self._resolve(node).name[len(self.prefix) :])}"

    # -- lifecycle ------------------------------------------------------------------------------
    def start(self, timeout_s: float = 60.0) -> NetnsFleet:
        """Build the network, then start sshd inside every namespace."""
        skip_unless_netns_possible()
        if self.subnet is None:
            self.subnet = _pick_subnet()
        self.tag = f"ic{self.subnet}"
        self._net_down()  # whatever a crashed run with this tag left behind
        try:
            self._net_up()
            super().start(timeout_s)
        except BaseException:
            self._net_down()
            raise
        return self

    def stop(self) -> None:
        """Stop the nodes (failing on leftover processes, like SshdFleet), then remove the network."""
        try:
            super().stop()
        finally:
            self._net_down()

    def reset(self) -> None:
        """Undo network faults too."""
        for node in self.nodes:
            self.link_up(node)
            self.blackhole(node, on=False)
            self.loss(node, 0)
            self.throttle(node, None)
        super().reset()

    # -- faults ---------------------------------------------------------------------------------
    def link_down(self, node: FleetNode | str) -> None:
        """Pull the node's cable: its veth end on the bridge goes down."""
        _ip("ip", "link", "set", self.veth(node), "down")

    def link_up(self, node: FleetNode | str) -> None:
        _ip("ip", "link", "set", self.veth(node), "up")

    def blackhole(self, node: FleetNode | str, *, on: bool = True) -> None:
        """The node silently drops everything that reaches it (SYNs included)."""
        ns = self.namespace(node)
        _ip("ip", "netns", "exec", ns, "nft", "delete", "table", "inet", "ic_blackhole", check=False)
        if on:
            rules = (
                "table inet ic_blackhole {\n"
                ' chain blackhole_in { type filter hook input priority 0; iifname "eth0" drop; }\n'
                "}\n"
            )
            _ip("ip", "netns", "exec", ns, "nft", "-f", "-", stdin=rules)

    def loss(self, node: FleetNode | str, percent: int) -> None:
        """Drop ``percent`` % of the packets reaching the node, at random (0 removes the fault)."""
        ns = self.namespace(node)
        _ip("ip", "netns", "exec", ns, "nft", "delete", "table", "inet", "ic_loss", check=False)
        if percent > 0:
            rules = (
                "table inet ic_loss {\n chain loss_in { type filter hook input priority 0; "
                f'iifname "eth0" numgen random mod 100 < {percent} drop; }}\n}}\n'
            )
            _ip("ip", "netns", "exec", ns, "nft", "-f", "-", stdin=rules)

    def throttle(self, node: FleetNode | str, kbit: int | None) -> None:
        """Shape the node's outgoing traffic to ``kbit`` kbit/s (None removes the shaper)."""
        ns = self.namespace(node)
        _ip("ip", "netns", "exec", ns, "tc", "qdisc", "del", "dev", "eth0", "root", check=False)
        if kbit:
            _ip("ip", "netns", "exec", ns, "tc", "qdisc", "add", "dev", "eth0", "root", "tbf",
                "rate", f"{kbit}kbit", "burst", "4kb", "latency", "30s")  # fmt: skip

    def guard_hits(self) -> int:
        """Lab packets the guard dropped because they tried to leave through another interface (must be 0)."""
        listing = _ip("nft", "-j", "list", "table", "ip", f"{self.tag}_guard", check=False).stdout
        hits = 0
        for item in json.loads(listing or '{"nftables": []}')["nftables"]:
            for expr in item.get("rule", {}).get("expr", []):
                hits += expr.get("counter", {}).get("packets", 0)
        return hits

    # -- SshdFleet hooks ------------------------------------------------------------------------
    def _sshd_config(self, node: FleetNode, extra: str) -> str:
        # The one per-node call SshdFleet.start() makes before it writes known_hosts and ssh_config:
        # move the node from its loopback address to its lab address here.
        node.addr = str(self.lab.network_address + int(node.name[len(self.prefix) :]))
        return super()._sshd_config(node, extra)

    def _spawn(self, node: FleetNode) -> None:
        # SshdFleet's node command, entered into the node's network namespace first. setpriv stays
        # outermost so the death signal still ties the node to this process.
        argv = [
            "setpriv", "--pdeathsig", "KILL", "--",
            "ip", "netns", "exec", self.namespace(node),
            "unshare", "--uts", "--pid", "--fork", "--kill-child", "--mount-proc", "--",
            "sh", "-c", 'hostname "$1" && shift && exec "$@"', "sh", node.name,
            SSHD, "-D", "-e", "-f", str(node.dir / "sshd_config"),
        ]  # fmt: skip
        with node.log.open("ab") as log:
            node.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)
        node.namespace = None

    # -- the network ----------------------------------------------------------------------------
    def _net_up(self) -> None:
        gateway = self.lab.network_address + GATEWAY_HOST
        _ip("ip", "link", "add", self.bridge, "type", "bridge")
        _ip("ip", "addr", "add", f"{gateway}/24", "dev", self.bridge)
        _ip("ip", "link", "set", self.bridge, "up")
        _ip("ip", "route", "add", "unreachable", str(self.lab), "metric", "9999")
        guard = (
            f"table ip {self.tag}_guard {{\n"
            f"  chain lab_out {{ type filter hook output priority 0; "
            f'ip daddr {self.lab} oifname != "{self.bridge}" counter drop; }}\n'
            f"  chain lab_forward {{ type filter hook forward priority 0; ip saddr {self.lab} counter drop; }}\n"
            "}\n"
        )
        _ip("nft", "-f", "-", stdin=guard)
        names = [f"{self.prefix}{i:02d}" for i in range(1, self.count + 1)]
        batch = []
        for i, name in enumerate(names, start=1):
            ns, veth = f"{self.tag}-{name}", f"{self.tag}v{i}"
            batch += [
                f"netns add {ns}",
                f"link add {veth} type veth peer name eth0 netns {ns}",
                f"link set {veth} master {self.bridge} up",
            ]
        _ip("ip", "-batch", "-", stdin="\n".join(batch) + "\n")
        for i, name in enumerate(names, start=1):
            address = self.lab.network_address + i
            _ip("ip", "-n", f"{self.tag}-{name}", "-batch", "-",
                stdin=f"addr add {address}/24 dev eth0\nlink set eth0 up\nlink set lo up\n")  # fmt: skip

    def _net_down(self) -> None:
        # Host-side veths go explicitly: a namespace kept alive by an orphaned socket outlives
        # ``netns del`` and would keep its veth on the bridge.
        namespaces = [line.split()[0] for line in _ip("ip", "netns", "list").stdout.splitlines() if line.strip()]
        ours = [ns for ns in namespaces if ns.startswith(f"{self.tag}-")]
        links = _ip("ip", "-o", "link", "show").stdout
        veths = sorted({part.split("@")[0] for part in links.split() if part.startswith(f"{self.tag}v")})
        batch = [f"link del {veth}" for veth in veths] + [f"netns del {ns}" for ns in ours]
        if batch:
            _ip("ip", "-force", "-batch", "-", stdin="\n".join(batch) + "\n", check=False)
        _ip("ip", "link", "del", self.bridge, check=False)
        _ip("ip", "route", "del", "unreachable", str(self.lab), "metric", "9999", check=False)
        _ip("nft", "delete", "table", "ip", f"{self.tag}_guard", check=False)


def leftover_network(tag: str) -> list[str]:
    """Namespaces and links of ``tag`` that still exist (for tests asserting a clean teardown)."""
    namespaces = [line.split()[0] for line in _ip("ip", "netns", "list").stdout.splitlines() if line.strip()]
    links = [part.rstrip(":").split("@")[0] for part in _ip("ip", "-o", "link", "show").stdout.split()]
    return [n for n in namespaces if n.startswith(f"{tag}-")] + [
        link for link in links if link.startswith((f"{tag}v", f"{tag}br"))
    ]
