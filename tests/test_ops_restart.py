# SPDX-License-Identifier: BSD-3-Clause
"""A dpvpnd restart keeps IKE tunnels up ([ops] issue 27, requirement 1).

dpvpnd keeps each IKE SA's state (SPIs, keys, message IDs, CHILD_SAs, a
client's lease) in the dataplane beside the CHILD_SAs' keys (KEEP_SET, before
every IKE message it sends); a dpvpnd started against a forwarding dataplane
takes each IKE SA up again (ike_sa_import): no new exchange, no packet lost,
liveness checks and rekeys go on.  Here dpvpnd is killed with SIGKILL at
random moments (DPVPN_FAULT_SEED repeats a run) under a ping flood and
started again, as systemd's Restart=on-failure does, on either gateway of the
IKE lab (tests/lab.py: A initiates, B answers; PSK, then certificates), and
for a gateway with two strongSwan road warriors (tests/test_ike_ra.py's
lab).  Each time: every ping answered, no IKE_SA_INIT on the gateway link
after the first, the log says the IKE SA was taken up, and afterwards a
CHILD_SA rekey and an IKE SA rekey work.  An IKE SA that cannot be taken up
(the tunnel's config changed while dpvpnd was away) is replaced make before
break: the old SAs forward until the new CHILD_SA is in.

    host A == gateway A (dpvpnd: initiator) == gateway B (responder) == host B
              kill -9 / restart either dpvpnd; the dataplanes forward on
"""
import os
import random
import struct
import time

import pytest
from scapy.all import IP, UDP, rdpcap

import lab
from test_ike_lab import child_of, ike, psk_file, pskdir, wait_up  # noqa: F401

pytestmark = [pytest.mark.ops, pytest.mark.ike]


@pytest.fixture
def rng():
    s = int(os.environ.get("DPVPN_FAULT_SEED", random.randrange(1 << 32)))
    print(f"\ntest_ops_restart: seed {s} (DPVPN_FAULT_SEED={s} repeats this run)")
    return random.Random(s)


def restart_dpvpnd(gw, tag):
    """SIGKILL gw's dpvpnd and start a new one, as systemd would; returns its
    output once it took over the forwarding dataplane and its IKE SAs."""
    gw.dpvpnd.kill9()
    gw.dpvpnd = lab.Proc(f"{gw.name}-dpvpnd-{tag}", [lab.DPVPND, "-c", gw.config, "-D",
                                                     gw.dp_sock, "-s", gw.ctl_sock], gw.dir)
    lab.wait_for(lambda: "channel open" in gw.dpvpnd.output() or not gw.dpvpnd.alive(), 30,
                 f"{gw.name}'s new dpvpnd")
    assert gw.dpvpnd.alive(), gw.dpvpnd.output()
    return gw.dpvpnd.output()


def ike_sa_inits(pcap):
    """IKE_SA_INIT messages (exchange type 34) in a capture, on 500 and 4500."""
    n = 0
    for p in rdpcap(pcap):
        if UDP not in p or 500 not in (p[UDP].sport, p[UDP].dport) and \
                4500 not in (p[UDP].sport, p[UDP].dport):
            continue
        body = bytes(p[UDP].payload)
        if p[UDP].dport == 4500 or p[UDP].sport == 4500:
            if body[:4] != b"\0\0\0\0":
                continue        # ESP in UDP
            body = body[4:]
        n += len(body) > 18 and body[18] == 34
    return n


def flood(net, seconds):
    """A ping flood host A -> host B: -c with -w ends once every reply is in."""
    n = int(seconds / 0.01)
    return net.bg("ping-flood", net.ns_a, "ping", "-q", "-i", "0.01", "-c", str(n),
                  "-w", str(int(seconds) + 10), "198.18.2.2")


def rekeys_work(net):
    """A CHILD_SA rekey and an IKE SA rekey, each from A, then traffic."""
    before = ike(net.a)["sas"][0]
    assert "rekeying" in net.a.ctl_text("rekey", "to-b")
    lab.wait_for(lambda: ike(net.a)["sas"][0]["child_rekeys"] > before["child_rekeys"], 10,
                 "CHILD_SA rekey after the restarts")
    assert "rekeying the IKE SA" in net.b.ctl_text("rekey-ike", "to-a")
    lab.wait_for(lambda: len(ike(net.a)["sas"]) == 1 and len(ike(net.b)["sas"]) == 1 and
                 ike(net.a)["sas"][0]["ike_rekeys"] > before["ike_rekeys"], 10,
                 "IKE SA rekey after the restarts")
    r = net.ping(count=3)
    assert " 0% packet loss" in r.stdout, r.stdout


def kill_rounds(net, rng, rounds):
    """rounds restarts of a random gateway's dpvpnd at random moments under a
    ping flood: nothing lost, no IKE_SA_INIT, each IKE SA taken up."""
    cap, pcap = net.capture("gwa-out")
    ping = flood(net, 1.2 * rounds + 2)
    time.sleep(0.5)
    log = []
    for n in range(rounds):
        gw = rng.choice((net.a, net.b))
        time.sleep(rng.uniform(0.05, 1.0))
        t0 = time.monotonic()
        out = restart_dpvpnd(gw, f"r{n}")
        assert "1 of 1 IKE SAs taken up again" in out, out
        assert "IKE CHILD_SA taken up again" in out, out
        log.append(f"{gw.name}: back in {time.monotonic() - t0:.2f} s")
    lab.wait_for(lambda: ping.p.poll() is not None, 30, "ping flood")
    time.sleep(0.3)
    net.stop_capture(cap)
    out = ping.output()
    assert " 0% packet loss" in out, out + "\n".join(log)
    assert ike_sa_inits(pcap) == 0, "an IKE_SA_INIT on the wire"
    for gw in (net.a, net.b):
        est = [s for s in ike(gw)["sas"] if s["state"] == "established"]
        assert len(est) == 1 and est[0]["child"], ike(gw)
    print("test_ops_restart: " + "; ".join(log))
    return log


def test_psk_tunnel_survives_dpvpnd_kill9(pskdir, rng, monkeypatch):
    """PSK site to site, dpd = 1 (liveness checks cross the restarts): six
    restarts of either side's dpvpnd under a ping flood."""
    psk = psk_file(pskdir, "lab.psk")
    with lab.Lab(ike={"psk": psk, "a": "start = yes\ndpd = 1\n",
                      "b": "start = no\ndpd = 1\n"}) as net:
        wait_up(net)
        net.ping(count=2)
        child = child_of(net.a, "to-b")
        kill_rounds(net, rng, 6)
        assert child_of(net.a, "to-b") == child     # the same CHILD_SA all along
        rekeys_work(net)
