# SPDX-License-Identifier: BSD-3-Clause
"""The lab with every link at MTU 1500, then at 9000 (jumbo frames: the
dataplanes run with --jumbo, the ports get `mtu = 9000`): path MTU discovery
works through the tunnel (a DF ping one byte too big gets "fragmentation
needed" with the tunnel MTU from gateway A, one that fits passes), and iperf3
runs with the hosts' full MTU (TCP's MSS is clamped to what the tunnel
carries).  Tunnel MTU for AES-128-GCM in IPv4: MTU - 54 rounded down to a
multiple of 4, minus 2 (1446 for 1500, 8946 for 9000)."""
import pytest

import lab

pytestmark = pytest.mark.scale


def tunnel_mtu(link):
    return ((link - 20 - 8 - 8 - 16) & ~3) - 2


@pytest.fixture(scope="module", params=[1500, 9000], ids=["mtu1500", "mtu9000"])
def net(request):
    with lab.Lab(mtu=request.param) as the_lab:
        the_lab.ping(count=3)
        the_lab.link_mtu = request.param
        yield the_lab


def test_pmtu_through_the_tunnel(net):
    t = tunnel_mtu(net.link_mtu)
    r = net.ping(count=2, size=t - 28)              # exactly the tunnel MTU
    assert r.returncode == 0 and " 0% packet loss" in r.stdout, r.stdout + r.stderr
    r = net.ping(count=2, size=t - 27)              # one byte over, DF set
    assert r.returncode != 0
    out = r.stdout + r.stderr
    assert f"mtu = {t}" in out, out                 # the ICMP from gateway A
    assert net.a.ctl("show", "counters")["drops"]["pmtu"] >= 1


def test_iperf3_full_host_mtu(net):
    # forget the path MTU the ping above taught host A: its SYN offers the full MSS
    net.ns(net.ns_a, "ip", "route", "flush", "cache")
    rep = net.iperf(seconds=3)
    assert rep["end"]["sum_received"]["bytes"] > 1_000_000, rep["end"]
    print(f"iperf3 at MTU {net.link_mtu}: "
          f"{rep['end']['sum_received']['bits_per_second'] / 1e9:.2f} Gbit/s")
    c = net.a.ctl("show", "counters")
    assert c["mss_clamped"] >= 1                    # the SYN
    sa = [s for s in net.a.ctl("show", "sa")["sas"] if s["dir"] == "out"][0]
    assert sa["bytes"] > rep["end"]["sum_received"]["bytes"]
