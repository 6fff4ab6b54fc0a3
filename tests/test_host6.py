# SPDX-License-Identifier: BSD-3-Clause
"""Issue 17, requirement 1: the host exception path over IPv6 (doc/host-path.md).

The dual-stack split lab (lab.py, split=True, ipv6=True; configs/lab6-*.conf),
both outside ports with a twin (dpvpn-out): each gateway namespace is that
box's Linux host, as in test_host.py.

- B's host pings A's outside IPv6 address and A's host pings B's: the
  kernels resolve each other through their twins (their Neighbour
  Solicitations leave by the port, the dataplane answers them, and the
  Advertisements it learns from are copied to the twin) and answer; the
  dataplanes' own echo replies stay put.
- TCP over IPv6 from B's host to a server on A's host.
"""
import sys

import pytest

import lab
from test_host import CLIENT, ECHO, counters, server

pytestmark = pytest.mark.deploy

OUT6_A, OUT6_B = "2001:db8:19::1", "2001:db8:19::2"


@pytest.fixture(scope="module")
def net():
    twin_a = ("address = 198.19.0.1/24, 2001:db8:19::1/64\n",
              "address = 198.19.0.1/24, 2001:db8:19::1/64\nhost-interface = dpvpn-out\n")
    twin_b = ("address = 198.19.0.2/24, 2001:db8:19::2/64\n",
              "address = 198.19.0.2/24, 2001:db8:19::2/64\nhost-interface = dpvpn-out\n")
    with lab.Lab(split=True, ipv6=True, replace_a=(twin_a,), replace_b=(twin_b,)) as n:
        yield n


def test_host_ping6(net):
    before_a, before_b = counters(net.a), counters(net.b)
    for ns, dst in ((net.ns_gwb, OUT6_A), (net.ns_gw, OUT6_B)):
        r = net.ns(ns, "ping", "-6", "-c", "3", "-i", "0.2", "-W", "2", dst, check=False)
        assert "3 received" in r.stdout, r.stdout + r.stderr
    a, b = counters(net.a), counters(net.b)
    assert a["icmp_echo"] == before_a["icmp_echo"] and b["icmp_echo"] == before_b["icmp_echo"]
    assert a["host_in"] - before_a["host_in"] >= 6 and b["host_out"] - before_b["host_out"] >= 6
    nd = net.ns(net.ns_gwb, "ip", "-6", "neigh", "show", OUT6_A, "dev", "dpvpn-out").stdout
    mac_a = {p["id"]: p for p in net.a.ctl("show", "ports")["ports"]}[1]["mac"]
    assert mac_a in nd.lower(), nd


def test_tcp6_to_gateway(net):
    srv = server(net, "echo6-a", net.ns_gw, ECHO, OUT6_A, 7777)
    r = net.ns(net.ns_gwb, sys.executable, "-c", CLIENT, OUT6_A, "7777", "50", timeout=30)
    srv.stop()
    assert r.stdout.split() == ["50"], r.stdout + r.stderr
