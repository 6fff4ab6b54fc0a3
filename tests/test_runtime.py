# SPDX-License-Identifier: BSD-3-Clause
"""Runtime commands of dpvpnctl: monitor (rates per SA and port, refreshed
each second), clear (counters from 0), tunnel NAME down/up (the tunnel's SAs
and policy removed, then installed again from the config, its sequence
numbers continuing above what was reserved)."""
import re

import pytest

import lab

pytestmark = pytest.mark.control


@pytest.fixture(scope="module")
def net():
    with lab.Lab() as n:
        n.ping(count=3)
        yield n


def ctl(net, *args, check=True):
    r = lab.sh(lab.DPVPNCTL, "-s", net.a.ctl_sock, *args, check=False, timeout=30)
    if check:
        assert r.returncode == 0, r.stderr
    return r


def test_monitor_shows_rates(net):
    flood = net.bg("ping-mon", net.ns_a, "ping", "-i", "0.01", "-w", "4", "-q", "198.18.2.2")
    out = ctl(net, "monitor", "2").stdout
    flood.stop()
    rows = [l for l in out.splitlines() if l.startswith("to-b ")]
    assert len(rows) == 4, out                        # 2 frames x (in, out)
    rate = float(rows[-1].split()[3])                 # PKT/S of the last frame
    assert 20 < rate < 1000, out
    assert re.search(r"^PORT\s+DEVICE", out, re.M)


def test_clear_counters(net):
    before = net.a.ctl("show", "counters")["rx_packets"]
    assert before > 0
    assert "counters cleared" in ctl(net, "clear").stdout
    after = net.a.ctl("show", "counters")["rx_packets"]
    assert after < before


def test_tunnel_down_and_up(net):
    seq = next(s for s in net.a.ctl("show", "sa")["sas"] if s["dir"] == "out")["seq"]
    assert "0 added, 1 removed" in ctl(net, "tunnel", "to-b", "down").stdout.replace(
        "tunnels added", "added")
    assert net.a.ctl("show", "sa")["sas"] == []
    assert net.ping(count=2).returncode != 0
    assert "1 tunnels added" in ctl(net, "tunnel", "to-b", "up").stdout
    sas = net.a.ctl("show", "sa")["sas"]
    assert len(sas) == 2
    lab.wait_for(lambda: net.ping(count=1).returncode == 0, 10, "the tunnel back")
    new = next(s for s in net.a.ctl("show", "sa")["sas"] if s["dir"] == "out")["seq"]
    assert new > seq + 1000    # above the old reservation, not from 1 again


def test_unknown_tunnel(net):
    r = ctl(net, "tunnel", "nosuch", "down", check=False)
    assert r.returncode != 0 and "no tunnel 'nosuch'" in r.stderr
