# SPDX-License-Identifier: BSD-3-Clause
"""Runtime commands of dpvpnctl: monitor (rates per SA and port, refreshed
each second), clear (counters from 0), tunnel NAME down/up (the tunnel's SAs
and policy removed, then installed again from the config, its sequence
numbers continuing above what was reserved)."""
import re
import statistics
import time

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


def test_routes_at_runtime(net):
    routes = net.a.ctl("show", "routes")["routes"]
    assert {"dst": "198.18.1.0/24", "port": 0, "via": None, "tunnels": None} in routes  # connected
    ctl(net, "route", "add", "203.0.113.0/24", "1", "198.19.0.2")
    assert {"dst": "203.0.113.0/24", "port": 1, "via": "198.19.0.2", "tunnels": None} in \
        net.a.ctl("show", "routes")["routes"]
    ctl(net, "route", "del", "203.0.113.0/24")
    assert all(r["dst"] != "203.0.113.0/24" for r in net.a.ctl("show", "routes")["routes"])
    r = ctl(net, "route", "del", "203.0.113.0/24", check=False)
    assert r.returncode != 0 and "no such route" in r.stderr


def test_neighbours_at_runtime(net):
    ns = net.a.ctl("show", "neighbours")["neighbours"]
    host = next(n for n in ns if n["address"] == "198.18.1.2")
    assert host["mac"] and not host["static"]                  # learnt by ARP
    ctl(net, "neighbour", "del", "0", "198.18.1.2")
    gone = next(n for n in net.a.ctl("show", "neighbours")["neighbours"]
                if n["address"] == "198.18.1.2")
    assert gone["mac"] is None
    lab.wait_for(lambda: net.ping(count=1).returncode == 0, 10, "ARP again")
    ctl(net, "neighbour", "add", "1", "198.19.0.99", "02:00:00:00:00:99")
    assert {"port": 1, "address": "198.19.0.99", "mac": "02:00:00:00:00:99", "static": True} \
        in net.a.ctl("show", "neighbours")["neighbours"]
    r = ctl(net, "neighbour", "del", "1", "198.19.9.9", check=False)
    assert r.returncode != 0 and "no such neighbour" in r.stderr


def test_policies_and_sas_at_runtime(net):
    # a second policy for the tunnel's outbound SA, then gone again
    ctl(net, "policy", "add", "198.18.1.0/24", "198.18.5.0/24", "0x1001", "50")
    pols = net.a.ctl("show", "policies")["policies"]
    assert {"src": "198.18.1.0/24", "dst": "198.18.5.0/24", "spi": "0x00001001",
            "priority": 50} in pols
    ctl(net, "policy", "del", "198.18.1.0/24", "198.18.5.0/24")
    assert len(net.a.ctl("show", "policies")["policies"]) == len(pols) - 1
    r = ctl(net, "policy", "add", "198.18.1.0/24", "198.18.5.0/24", "0x7777", check=False)
    assert r.returncode != 0 and "no outbound SA" in r.stderr
    # deleting the outbound SA takes its policy with it; tunnel up brings both back
    ctl(net, "sa", "del", "0x1001", "out")
    assert net.a.ctl("show", "policies")["policies"] == []
    assert [s["dir"] for s in net.a.ctl("show", "sa")["sas"]] == ["in"]
    ctl(net, "tunnel", "to-b", "down")
    ctl(net, "tunnel", "to-b", "up")
    assert len(net.a.ctl("show", "sa")["sas"]) == 2
    lab.wait_for(lambda: net.ping(count=1).returncode == 0, 10, "the tunnel back")


def main_switches(gw):
    """Voluntary context switches of gw's dataplane main lcore (the process's
    main thread: it sleeps in poll())."""
    pid = gw.dataplane.p.pid
    with open(f"/proc/{pid}/task/{pid}/status") as f:
        return int(re.search(r"^voluntary_ctxt_switches:\s+(\d+)", f.read(), re.M).group(1))


@pytest.mark.scale
def test_main_lcore_sleeps_until_work(net):
    """[scale] issue 28 requirement 5: with no host twin, trace or tester,
    the dataplane's main lcore sleeps in poll() until work comes (a control
    message, its tick ten times a second, a worker's punt, which wakes it),
    instead of waking every millisecond to look: a worker beside it on its
    CPU is no longer disturbed a thousand times a second.  Over two idle
    seconds it wakes a few dozen times (a 1 ms poll: about 2 000); and an ARP
    request host A sends (after its neighbour entry is flushed) is still
    answered at once: a worker punts it and wakes the main lcore, not its
    next tick (up to 100 ms away)."""
    a = main_switches(net.a)
    time.sleep(2)
    woke = main_switches(net.a) - a
    assert woke < 400, f"{woke} wake-ups in 2 s: the main lcore polls instead of sleeping"
    rtts = []
    for k in range(7):
        time.sleep(0.13 + 0.01 * k)     # asleep again, at another point of its tick
        net.ns(net.ns_a, "ip", "neigh", "flush", "dev", "eth0")
        r = net.ns(net.ns_a, "ping", "-c", "1", "-W", "2", "198.18.1.1", check=False)
        m = re.search(r"time=([0-9.]+) ms", r.stdout)
        assert r.returncode == 0 and m, r.stdout + r.stderr
        rtts.append(float(m.group(1)))
    print(f"test_main_lcore_sleeps_until_work: {woke} wake-ups in 2 s; first pings {rtts} ms")
    assert statistics.median(rtts) < 20, f"first pings (ARP first) took {rtts} ms"
