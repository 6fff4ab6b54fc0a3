# SPDX-License-Identifier: BSD-3-Clause
"""tests/frr.py works, and control/nl.c's RIB follows what FRR puts in the
kernel: eBGP between two namespaces, no dpvpn dataplane (the route-based
tunnels come from another branch; here the veth stands for a tunnel twin).

    netns A (AS 65001)                         netns B (AS 65002)
    zebra + bgpd, nl_watch va=t1               zebra + bgpd
    announces 198.18.1.0/24                    announces 198.18.2.0/24
    va 169.254.10.1/30 ========veth======== vb 169.254.10.2/30

BGP timers 1 3, connect 1.  Marker `frr`: not in the default pass
(`pytest -m frr tests/test_frr_harness.py`); skipped where FRR is not
installed.
"""
import os

import pytest

import frr
import lab
from lab import Proc, sh, wait_for

pytestmark = [pytest.mark.deploy, pytest.mark.frr]

NL_WATCH = os.path.join(lab.BUILD, "control", "nl_watch")


def bgpd_conf(asn, peer_asn, router_id, peer, prefix):
    return f"""\
router bgp {asn}
 bgp router-id {router_id}
 no bgp ebgp-requires-policy
 no bgp network import-check
 timers bgp 1 3
 neighbor {peer} remote-as {peer_asn}
 neighbor {peer} timers 1 3
 neighbor {peer} timers connect 1
 address-family ipv4 unicast
  network {prefix}
 exit-address-family
"""


class Watch(Proc):
    """nl_watch in a namespace: the RIB's install/remove lines."""

    def __init__(self, name, ns, logdir, *twins):
        super().__init__(name, [NL_WATCH, *twins], logdir, netns=ns)
        wait_for(lambda: "ready" in self.output() or not self.alive(), 10,
                 f"{name} ready")
        assert self.alive(), self.output()

    def installed(self):
        """prefix -> next hop names, replaying the lines so far."""
        state = {}
        for line in self.output().splitlines():
            w = line.split()
            if w[:1] == ["install"]:
                state[w[1]] = w[2]
            elif w[:1] == ["remove"]:
                state.pop(w[1], None)
        return state


@pytest.fixture(scope="module")
def bgp(tmp_path_factory):
    if not frr.available():
        pytest.skip("FRR is not installed (apt-get install frr)")
    if not os.access(NL_WATCH, os.X_OK):
        pytest.skip(f"{NL_WATCH} not built")
    tag = str(os.getpid())
    a, b = f"frra{tag}", f"frrb{tag}"
    logdir = str(tmp_path_factory.mktemp("frr"))
    made, watches = [], []
    try:
        for ns in (a, b):
            sh("ip", "netns", "add", ns)
            made.append(ns)
            sh("ip", "-n", ns, "link", "set", "lo", "up")
        sh("ip", "link", "add", "va", "netns", a, "type", "veth", "peer", "vb", "netns", b)
        sh("ip", "-n", a, "addr", "add", "169.254.10.1/30", "dev", "va")
        sh("ip", "-n", b, "addr", "add", "169.254.10.2/30", "dev", "vb")
        sh("ip", "-n", a, "link", "set", "va", "up")
        sh("ip", "-n", b, "link", "set", "vb", "up")
        # listening before FRR starts: the BGP route arrives as an event
        watch = Watch("nl_watch", a, logdir, "va=t1")
        watches.append(watch)
        with frr.Frr(a, bgpd_conf(65001, 65002, "10.0.0.1", "169.254.10.2",
                                  "198.18.1.0/24")) as fa, \
             frr.Frr(b, bgpd_conf(65002, 65001, "10.0.0.2", "169.254.10.1",
                                  "198.18.2.0/24")) as fb:
            yield {"a": a, "b": b, "fa": fa, "fb": fb, "watch": watch,
                   "logdir": logdir, "watches": watches}
            procs = [p for f in (fa, fb) for p in f.procs.values()]
        assert not any(p.alive() for p in procs), "an FRR daemon outlived its Frr"
    finally:
        for w in watches:
            w.stop()
        for ns in made:
            sh("ip", "netns", "del", ns, check=False)
    for w in watches:   # an ASan build (DPVPN_BUILD) reports at exit
        assert "Sanitizer" not in w.output() and "runtime error" not in w.output(), w.output()


def kernel_route(ns, prefix):
    return sh("ip", "-n", ns, "route", "show", prefix).stdout.strip()


def test_bgp_routes_reach_kernel_and_rib(bgp):
    """Both sessions come up; each kernel gets the other's /24 via the veth;
    the RIB installs B's prefix on t1 (the veth's twin name)."""
    fa, fb, a, b = bgp["fa"], bgp["fb"], bgp["a"], bgp["b"]
    fa.wait_established("169.254.10.2")
    fb.wait_established("169.254.10.1")
    wait_for(lambda: "via 169.254.10.2 dev va" in kernel_route(a, "198.18.2.0/24"), 15,
             "198.18.2.0/24 in A's kernel")
    wait_for(lambda: "via 169.254.10.1 dev vb" in kernel_route(b, "198.18.1.0/24"), 15,
             "198.18.1.0/24 in B's kernel")
    assert "proto bgp" in kernel_route(a, "198.18.2.0/24")
    watch = bgp["watch"]
    wait_for(lambda: watch.installed().get("198.18.2.0/24") == "t1", 5,
             "nl_watch installs 198.18.2.0/24 on t1")
    rib = watch.installed()
    assert rib.get("169.254.10.0/30") == "t1"     # the twin's connected route
    assert "198.18.1.0/24" not in rib             # A's own, not via the twin
    # a RIB started now finds the BGP route (a nexthop object: RTA_NH_ID) in its dump
    late = Watch("nl_watch_late", a, bgp["logdir"], "va=t1")
    bgp["watches"].append(late)
    assert late.installed().get("198.18.2.0/24") == "t1", late.output()


def test_bgp_withdraw_removes(bgp):
    """B stops announcing 198.18.2.0/24: gone from A's kernel and from the RIB;
    announced again: back."""
    fa, fb, a = bgp["fa"], bgp["fb"], bgp["a"]
    watch = bgp["watch"]
    fa.wait_established("169.254.10.2")
    wait_for(lambda: watch.installed().get("198.18.2.0/24") == "t1", 15, "route in")
    fb.configure("router bgp 65002", "address-family ipv4 unicast",
                 "no network 198.18.2.0/24")
    wait_for(lambda: "198.18.2.0/24" not in watch.installed(), 10,
             "nl_watch removes 198.18.2.0/24")
    assert kernel_route(a, "198.18.2.0/24") == ""
    fb.configure("router bgp 65002", "address-family ipv4 unicast",
                 "network 198.18.2.0/24")
    wait_for(lambda: watch.installed().get("198.18.2.0/24") == "t1", 10,
             "nl_watch installs 198.18.2.0/24 again")
