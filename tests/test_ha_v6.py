# SPDX-License-Identifier: BSD-3-Clause
r"""[ha] issue 30, requirement 1 for IPv6: an HA node's IPv6 virtual address.

One gateway with an [ha] section whose sync peer is not there: its dpvpnd
starts as backup, and `dpvpnctl ha master` / `ha backup` (what keepalived's
notify script runs) move it.  Its outside port has an IPv6 virtual address,
2001:db8:19::10 (and an IPv4 one beside it), the local address of a tunnel;
host H, on the port's link, has IPv6 on and asks with scapy.

- As backup, H's Neighbour Solicitation for the virtual address gets no
  answer (the master's would).
- Made master, the dataplane announces the address: three unsolicited
  Neighbour Advertisements to ff02::1 about a second apart (RFC 4861
  7.2.6: Override set, Solicited clear, target the address, a target
  link-layer address option with the port's MAC); H's solicitation is
  answered from that MAC, and H's `ping -6` to it is answered.
- Made backup again, the solicitation goes unanswered once more.

    host H (netns) eth0 2001:db8:19::2 ==veth== v6-out [dpvpn, port 1, outside]
                                               2001:db8:19::3, VIP 2001:db8:19::10
    dpvpnd (the gateway's netns): sync local 10.255.0.1 (a veth),
    peer 10.255.0.2 (nobody)
"""
import json
import os
import secrets
import shutil
import sys
import tempfile

import pytest
from scapy.all import rdpcap
from scapy.layers.inet6 import ICMPv6ND_NA, ICMPv6NDOptDstLLAddr, IPv6

import lab

pytestmark = [pytest.mark.ha]

VIP6, VIP4 = "2001:db8:19::10", "198.19.0.10"
OWN6, HOST6 = "2001:db8:19::3", "2001:db8:19::2"
HOST_MAC = "02:00:00:00:0c:02"

CONF = f"""[port inside]
id = 0
role = inside
address = 198.18.1.1/24, 2001:db8:18:1::1/64

[port outside]
id = 1
role = outside
address = 198.19.0.3/24, {OWN6}/64

[tunnel to-peer]
local = {VIP6}
remote = 2001:db8:19::99
local-ts = 2001:db8:18:1::/64
remote-ts = 2001:db8:18:2::/64
cipher = aes128-gcm
out-spi = 0x00001001
out-key = 0x0123456789abcdef0123456789abcdef01020304
in-spi = 0x00002001
in-key = 0xfedcba9876543210fedcba987654321005060708
"""

# Run in H's namespace: one solicitation for the target (to its
# solicited-node group, with H's link-layer address), and every
# advertisement for it within the wait, as JSON.
SOLICIT = r"""
import json, sys, time
from scapy.all import AsyncSniffer, Ether, sendp
from scapy.layers.inet6 import (ICMPv6ND_NA, ICMPv6ND_NS, ICMPv6NDOptDstLLAddr,
                                ICMPv6NDOptSrcLLAddr, IPv6, in6_getnsma, in6_getnsmac,
                                inet_pton, inet_ntop, socket)
tgt, src, mac, wait = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])
snm = inet_ntop(socket.AF_INET6, in6_getnsma(inet_pton(socket.AF_INET6, tgt)))
s = AsyncSniffer(iface="eth0", lfilter=lambda p: ICMPv6ND_NA in p and p[ICMPv6ND_NA].tgt == tgt)
s.start()
time.sleep(0.3)
sendp(Ether(src=mac, dst=in6_getnsmac(inet_pton(socket.AF_INET6, snm))) /
      IPv6(src=src, dst=snm, hlim=255) / ICMPv6ND_NS(tgt=tgt) /
      ICMPv6NDOptSrcLLAddr(lladdr=mac), iface="eth0", verbose=False)
time.sleep(wait)
got = s.stop() or []
print(json.dumps([{"src": p[Ether].src, "dst": p[IPv6].dst, "R": p[ICMPv6ND_NA].R,
                   "S": p[ICMPv6ND_NA].S, "O": p[ICMPv6ND_NA].O,
                   "tlla": p[ICMPv6NDOptDstLLAddr].lladdr if ICMPv6NDOptDstLLAddr in p
                   else None} for p in got]))
"""


class Node(lab.Managed):
    """One gateway (dataplane + dpvpnd with [ha]) and host H on its outside link."""

    def __init__(self):
        tag = os.getpid()
        self.ns_gw, self.ns_h = f"hav6-gw-{tag}", f"hav6-h-{tag}"
        self.workdir = tempfile.mkdtemp(prefix="dpvpn-ha-v6-")
        self.gw = None
        self.procs = []

    def ns(self, ns, *args, **kw):
        return lab.sh("ip", "netns", "exec", ns, *args, **kw)

    def _net(self):
        g, h = self.ns_gw, self.ns_h
        for n in (g, h):
            lab.sh("ip", "netns", "add", n)
            lab.sh("ip", "-n", n, "link", "set", "lo", "up")
        lab.sh("ip", "-n", g, "link", "add", "v6-in", "type", "veth", "peer", "name", "in0",
               "netns", h)
        lab.sh("ip", "-n", g, "link", "add", "v6-out", "type", "veth", "peer", "name", "eth0",
               "netns", h)
        for dev in ("v6-in", "v6-out"):     # the dataplane's: no kernel IPv6 on them
            self.ns(g, "ethtool", "-K", dev, "tx", "off", "tso", "off", "gso", "off",
                    "gro", "off", check=False)
            self.ns(g, "sysctl", "-qw", f"net.ipv6.conf.{dev}.disable_ipv6=1")
            lab.sh("ip", "-n", g, "link", "set", dev, "up")
        # the sync link: a veth whose other end nobody answers on
        lab.sh("ip", "-n", g, "link", "add", "sync", "type", "veth", "peer", "name", "sync-x")
        lab.sh("ip", "-n", g, "addr", "add", "10.255.0.1/30", "dev", "sync")
        for dev in ("sync", "sync-x"):
            lab.sh("ip", "-n", g, "link", "set", dev, "up")
        self.ns(h, "ethtool", "-K", "eth0", "tx", "off", "tso", "off", "gso", "off",
                "gro", "off", check=False)
        for k, v in (("disable_ipv6", "0"), ("accept_dad", "0"), ("router_solicitations", "0")):
            self.ns(h, "sysctl", "-qw", f"net.ipv6.conf.eth0.{k}={v}")
        lab.sh("ip", "-n", h, "link", "set", "eth0", "address", HOST_MAC)
        lab.sh("ip", "-n", h, "link", "set", "eth0", "up")
        lab.sh("ip", "-n", h, "addr", "add", f"{HOST6}/64", "dev", "eth0", "nodad")

    def open(self):
        self._net()
        key = os.path.join(self.workdir, "sync.key")
        with open(os.open(key, os.O_WRONLY | os.O_CREAT, 0o600), "w") as f:
            f.write(secrets.token_hex(32) + "\n")
        conf = os.path.join(self.workdir, "base.conf")
        with open(conf, "w") as f:
            f.write(CONF)
        ha = (f"\n[ha]\nnode = v6a\nlocal = 10.255.0.1\npeer = 10.255.0.2\n"
              f"sync-key = {key}\ndead-ms = 3000\nheartbeat-ms = 100\n"
              f"virtual-address = outside {VIP6}/64\n"
              f"virtual-address = outside {VIP4}/24\n")
        self.gw = lab.Gateway("v6a", conf, ["net_af_packet0,iface=v6-in",
                                            "net_af_packet1,iface=v6-out,qdisc_bypass=0"],
                              self.workdir, ["-l", "0-1", "--main-lcore", "1"], self.ns_gw,
                              extra_config=ha)
        self.gw.dpvpnd_netns = self.ns_gw
        self.gw.start()

    def solicit(self, wait=1.5):
        """H's solicitation for VIP6; the advertisements for it that came back."""
        r = self.ns(self.ns_h, sys.executable, "-c", SOLICIT, VIP6, HOST6, HOST_MAC,
                    str(wait), timeout=30)
        return json.loads(r.stdout.strip().splitlines()[-1])

    def port_mac(self, port=1):
        return [p["mac"] for p in self.gw.ctl("show", "ports")["ports"] if p["id"] == port][0]

    def close(self):
        for p in self.procs:
            p.stop()
        if self.gw is not None:
            self.gw.stop()
        for n in (self.ns_gw, self.ns_h):
            lab.sh("ip", "netns", "del", n, check=False)
        if os.environ.get("DPVPN_KEEP_LAB"):
            print(f"lab: kept {self.workdir}")
        else:
            shutil.rmtree(self.workdir, ignore_errors=True)


def vips(gw):
    return {(v["address"], v["held"]) for v in gw.ctl("show", "ha")["virtual_addresses"]}


def unsolicited(pcap, mac):
    """The unsolicited advertisements of VIP6 from mac in a capture: (time, packet)."""
    if not os.path.exists(pcap) or os.path.getsize(pcap) < 24:
        return []
    try:
        pkts = rdpcap(pcap)
    except Exception:       # (a record half written)
        return []
    return [(p.time, p) for p in pkts
            if ICMPv6ND_NA in p and p[ICMPv6ND_NA].tgt == VIP6 and p.src == mac and
            p[IPv6].dst == "ff02::1"]


def test_ipv6_virtual_address_follows_the_role():
    """The backup answers no solicitation for the IPv6 virtual address; made
    master, it sends three unsolicited Neighbour Advertisements a second
    apart (Override, not Solicited, TLLA its MAC), answers H's solicitation
    and ping; made backup again, it answers neither."""
    with Node() as n:
        gw = n.gw
        mac = n.port_mac()
        assert gw.ctl("show", "ha")["role"] == "backup"
        assert vips(gw) == {(VIP6, False), (VIP4, False)}, vips(gw)
        # the tunnel with the virtual address as its local is installed
        assert gw.sa_ids() >= {("0x00001001", "out"), ("0x00002001", "in")}, gw.sa_ids()
        bad_nd = gw.ctl("show", "counters")["drops"].get("bad-nd", 0)

        # backup: nobody answers for the virtual address
        assert n.solicit() == []
        lab.wait_for(lambda: gw.ctl("show", "counters")["drops"].get("bad-nd", 0) > bad_nd,
                     5, "the backup's solicitation counted")

        # master: three unsolicited advertisements, then answers and pings
        pcap = os.path.join(n.workdir, "h.pcap")
        dump = lab.Proc("tcpdump-h", ["tcpdump", "-i", "eth0", "-U", "-n", "-w", pcap,
                                      "icmp6"], n.workdir, n.ns_h)
        n.procs.append(dump)
        lab.wait_for(lambda: "listening on" in dump.output(), 10, "tcpdump")
        r = gw.ctl("ha", "master")
        assert "master" in r["message"], r
        lab.wait_for(lambda: len(unsolicited(pcap, mac)) >= 3, 10,
                     "three unsolicited advertisements")
        lab.Lab.stop_capture(dump)
        na = unsolicited(pcap, mac)
        assert len(na) == 3, [p.summary() for _, p in na]
        for _, p in na:
            assert p[ICMPv6ND_NA].O == 1 and p[ICMPv6ND_NA].S == 0, p.show(dump=True)
            assert p[ICMPv6NDOptDstLLAddr].lladdr == mac, p.show(dump=True)
            assert p[IPv6].hlim == 255 and p.dst == "33:33:00:00:00:01", p.show(dump=True)
        gaps = [float(b[0] - a[0]) for a, b in zip(na, na[1:])]
        assert all(0.7 < g < 2.0 for g in gaps), gaps
        assert vips(gw) == {(VIP6, True), (VIP4, True)}, vips(gw)

        got = n.solicit()
        assert len(got) == 1 and got[0]["src"] == mac and got[0]["dst"] == HOST6, got
        assert got[0]["S"] == 1 and got[0]["O"] == 1 and got[0]["tlla"] == mac, got
        r = n.ns(n.ns_h, "ping", "-6", "-c", "3", "-i", "0.2", "-W", "2", VIP6, check=False)
        assert " 0% packet loss" in r.stdout, r.stdout + r.stderr
        neigh = n.ns(n.ns_h, "ip", "-6", "neigh", "show", VIP6, "dev", "eth0").stdout
        assert mac in neigh.lower(), neigh

        # backup again: no answer
        r = gw.ctl("ha", "backup")
        assert vips(gw) == {(VIP6, False), (VIP4, False)}, vips(gw)
        assert n.solicit() == []
        r = n.ns(n.ns_h, "ping", "-6", "-c", "2", "-i", "0.2", "-W", "1", VIP6, check=False)
        assert r.returncode != 0, r.stdout
