# SPDX-License-Identifier: BSD-3-Clause
"""The tester's lab: dpvpn-dataplane --tester N and a dpvpn DUT (dataplane
+ dpvpnd) keyed from the tester's --emit-peer-config dpvpn output, meeting
over two veth pairs in a namespace of their own, driven by net_af_packet:

  tester port A (198.18.1.2) == t-a | d-in  == DUT inside  (198.18.1.1)
  tester port B (198.19.0.2) == t-b | d-out == DUT outside (198.19.0.1)

Used by tests/test_tester.py and perf/restartbench.py.
"""
import os
import secrets
import sys
import tempfile
import time

import lab

sys.path.insert(0, os.path.join(os.path.dirname(lab.CONFIGS), "tester"))
import tester as T  # noqa: E402


def link(ns_a, a, ns_b, b, addr_b=None):
    """A veth pair, a in ns_a and b in ns_b, up and quiet (no offloads, so
    DPDK sees whole frames with real checksums; no IPv6 chatter); addr_b:
    an address for b."""
    lab.sh("ip", "-n", ns_a, "link", "add", a, "type", "veth", "peer", "name", b, "netns", ns_b)
    for ns, dev in ((ns_a, a), (ns_b, b)):
        lab.sh("ip", "netns", "exec", ns, "ethtool", "-K", dev, "tx", "off", "tso", "off",
               "gso", "off", "gro", "off", check=False)
        lab.sh("ip", "netns", "exec", ns, "sysctl", "-qw",
               f"net.ipv6.conf.{dev}.disable_ipv6=1", check=False)
        lab.sh("ip", "-n", ns, "link", "set", dev, "up")
    if addr_b:
        lab.sh("ip", "-n", ns_b, "addr", "add", addr_b, "dev", b)


class Pair(lab.Managed):
    """A tester and a dpvpn DUT around it (see the module docstring)."""

    def __init__(self, tunnels, wrong_key=None, shape_out=None, ike=False, start_tester=True,
                 paced=False, dut_args=(), outer_addresses=None, nat_t_ports=None,
                 dut_initiates=False):
        """shape_out: a tc qdisc (argument list) on the DUT's outside link,
        the way to the tester (the DUT's frames then pass the qdisc).  ike:
        tunnels keyed by IKEv2 (PSK), the tester initiating.  start_tester
        False: the test starts the tester itself (self.tester made, not started).
        dut_args: more options of the DUT's dataplane (a later --max-sa wins).
        outer_addresses, nat_t_ports: Plan's (a peer address or UDP port per tunnel).
        dut_initiates: with ike, the DUT's dpvpnd initiates every tunnel at its
        start (start = yes there) and the tester's responds."""
        self.shape_out = shape_out
        self.dut_args = list(dut_args)
        self.start_tester = start_tester
        self.tag = secrets.token_hex(2)
        self.ns = f"dpvpn-{self.tag}-tst"
        self.dir = tempfile.mkdtemp(prefix="dpvpn-tester-")
        self.plan = T.Plan(tunnels, outer_addresses=outer_addresses, nat_t_ports=nat_t_ports)
        self.procs = []
        if ike:
            self.plan.use_ike(os.path.join(self.dir, "ike.psk"))
            self.plan.ike_start = not paced     # paced: the test initiates each tunnel
            if dut_initiates:
                self.plan.ike_initiator = "dut"
        dut = self.plan.dut_config_dpvpn()
        if wrong_key is not None:     # the DUT encrypts tunnel wrong_key's traffic wrongly
            k_dut, k_tester = self.plan.keys[wrong_key]
            bad = ("0" if k_tester[0] != "0" else "1") + k_tester[1:]
            dut = dut.replace(f"out-key = 0x{k_tester}", f"out-key = 0x{bad}", 1)
        self.dut_cfg = os.path.join(self.dir, "dut.conf")
        T.private_file(self.dut_cfg, dut)
        self.tester = self.dut = None

    def open(self):
        lab.sh("ip", "netns", "add", self.ns)
        for a, b in (("t-a", "d-in"), ("t-b", "d-out")):
            link(self.ns, a, self.ns, b)
        # the tester busy-polls on CPU 1, the DUT's worker on CPU 0
        bypass = ""
        if self.shape_out:
            lab.sh("ip", "netns", "exec", self.ns, "tc", "qdisc", "add", "dev", "d-out",
                   "root", *self.shape_out)
            bypass = ",qdisc_bypass=0"
        self.dut = lab.Gateway("dut", self.dut_cfg,
                               ["net_af_packet0,iface=d-in",
                                f"net_af_packet1,iface=d-out{bypass}"],
                               self.dir, ["-l", "0-1", "--main-lcore", "1"], self.ns,
                               dp_args=["--max-sa", str(2 * self.plan.tunnels + 16),
                                        *self.dut_args])
        self.dut.start(60)
        self.tester = T.Tester(self.plan, ["net_af_packet0,iface=t-a",
                                           "net_af_packet1,iface=t-b"],
                               self.dir, ["-l", "0-1", "--main-lcore", "0"], self.ns)
        if self.start_tester:
            self.tester.start(60)

    def close(self):
        for p in self.procs:
            p.stop()
        for p in (self.tester, self.dut):
            if p is not None:
                p.stop()
        lab.sh("ip", "netns", "del", self.ns, check=False)

    def capture(self, devs=("d-out", "t-b")):
        """tcpdump on both ends of the outside link, beside the af_packet
        sockets: the PMDs send past the qdisc, which taps do not see, so
        each end shows what it received (d-out the tester's ESP, t-b the
        DUT's).  Returns a function that stops them and gives the frames."""
        from scapy.all import rdpcap
        procs = []
        for dev in devs:
            path = os.path.join(self.dir, f"{dev}.pcap")
            p = lab.Proc(f"tcpdump-{dev}", ["tcpdump", "-i", dev, "--immediate-mode", "-s",
                                            "96", "-U", "-w", path], self.dir, self.ns)
            self.procs.append(p)
            procs.append((p, path))
            lab.wait_for(lambda: "listening" in p.output(), 10, "tcpdump")

        def stop():
            time.sleep(0.5)     # the last frames still on their way
            frames = []
            for p, path in procs:
                p.stop()
                frames += list(rdpcap(path))
            return frames
        return stop

    def all_up(self, pps, timeout):
        """Short trials (pps each way) until every tunnel carried traffic both
        ways in one: the seconds that took, or None at timeout."""
        t0 = time.monotonic()
        while time.monotonic() - t0 < timeout:
            self.tester.trial(pps, pps, 1.0, [64])
            per = self.tester.tunnels()
            if len(per) == self.plan.tunnels and all(t["e_received"] and t["d_received"]
                                                     for t in per.values()):
                return round(time.monotonic() - t0, 1)
        return None

    def warm(self):
        """One short trial, both ways: ARP resolved on both sides before any
        measured trial (the first packets would otherwise wait for it)."""
        for _ in range(20):
            s = self.tester.trial(1000, 1000, 0.2, [64])
            if all(s[d]["received"] == s[d]["sent"] > 0 for d in T.DIRS):
                return
        raise AssertionError(f"no traffic through the DUT: {s}")
