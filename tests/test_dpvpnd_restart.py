# SPDX-License-Identifier: BSD-3-Clause
"""A dpvpnd restart keeps IKE tunnels up ([ops] issue 27, requirement 1).

dpvpnd keeps each IKE SA's state (SPIs, keys, message IDs, CHILD_SAs, a
client's lease) in the dataplane beside the CHILD_SAs' keys (KEEP_SET, before
every IKE message it sends); a dpvpnd started against a forwarding dataplane
takes each IKE SA up again (ike_sa_import): no new exchange, no packet lost,
liveness checks and rekeys go on.  Here dpvpnd is killed with SIGKILL at
random moments (DPVPN_FAULT_SEED repeats a run) under a ping flood and
started again, as systemd's Restart=on-failure does, on either gateway of the
IKE lab (tests/helpers/lab.py: A initiates, B answers; PSK, then certificates), and
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
import time

import pytest
from scapy.all import UDP, rdpcap

import lab
import swan
import test_ike_ra as ra
from test_ike_lab import child_of, ike, psk_file, pskdir, wait_up  # noqa: F401
from test_ike_pki import Pki, pem, write

pytestmark = [pytest.mark.ops, pytest.mark.ike]


@pytest.fixture
def rng():
    s = int(os.environ.get("DPVPN_FAULT_SEED", random.randrange(1 << 32)))
    print(f"\ntest_dpvpnd_restart: seed {s} (DPVPN_FAULT_SEED={s} repeats this run)")
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
    print("test_dpvpnd_restart: " + "; ".join(log))
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


def pki_lines(d, pki, me, peer):
    """auth = pubkey lines of a lab gateway: its certificate (for fqdn me,
    ECDSA P-256, issued by the intermediate), key, the root, both ids."""
    cert, key = pki.leaf(me, "ecdsa")
    write(os.path.join(d, me + ".pem"), pem(cert) + pem(pki.mid))
    write(os.path.join(d, me + ".key"), pem(key), 0o600)
    write(os.path.join(d, "ca.pem"), pem(pki.root))
    return (f"auth = pubkey\ncert = {d}/{me}.pem\nprivate-key = {d}/{me}.key\n"
            f"ca = {d}/ca.pem\nlocal-id = fqdn:{me}\nremote-id = fqdn:{peer}\n")


@pytest.mark.nosan      # (the PSK case runs under ASan; this one repeats it)
def test_certificate_tunnel_survives_dpvpnd_kill9(pskdir, rng):
    """The same with certificates (ECDSA, a chain through an intermediate):
    four restarts of either side's dpvpnd under a ping flood."""
    pki = Pki()
    a = pki_lines(pskdir, pki, "a.example.org", "b.example.org")
    b = pki_lines(pskdir, pki, "b.example.org", "a.example.org")
    with lab.Lab(ike={"psk": None, "a": "start = yes\ndpd = 1\n" + a,
                      "b": "start = no\ndpd = 1\n" + b}) as net:
        wait_up(net)
        net.ping(count=2)
        kill_rounds(net, rng, 4)
        rekeys_work(net)


def test_changed_tunnel_replaced_make_before_break(pskdir, monkeypatch):
    """A's config changes while its dpvpnd is away (dpd = 1 -> 2): the new
    dpvpnd does not take the IKE SA up, says so, negotiates a new one, and
    its CHILD_SA replaces the old SAs make before break: the old ones forward
    until then (B sends on them until its old IKE SA's liveness check fails),
    so a ping flood loses nothing; B's old IKE SA ends, one is left."""
    monkeypatch.setenv("DPVPND_IKE_RETRANS_MS", "200")
    monkeypatch.setenv("DPVPND_IKE_RETRANS_TRIES", "3")
    psk = psk_file(pskdir, "lab.psk")
    with lab.Lab(ike={"psk": psk, "a": "start = yes\ndpd = 1\n",
                      "b": "start = no\ndpd = 1\n"}) as net:
        wait_up(net)
        net.ping(count=2)
        old = child_of(net.a, "to-b")
        ping = flood(net, 8)
        time.sleep(1)
        net.a.dpvpnd.kill9()
        with open(net.a.config) as f:
            text = f.read()
        with open(net.a.config, "w") as f:
            f.write(text.replace("dpd = 1\n", "dpd = 2\n"))
        net.a.dpvpnd = lab.Proc("gw-a-dpvpnd-2", [lab.DPVPND, "-c", net.a.config, "-D",
                                                  net.a.dp_sock, "-s", net.a.ctl_sock],
                                net.a.dir)
        lab.wait_for(lambda: "replaces the" in net.a.dpvpnd.output(), 20,
                     "A's new CHILD_SA replacing the old SAs")
        out = net.a.dpvpnd.output()
        assert "IKE SA not taken up (the tunnel's config changed while dpvpnd was away)" \
            in out, out
        lab.wait_for(lambda: "IKE SA ended" in net.b.dpvpnd.output(), 20,
                     "B's old IKE SA ended by its liveness check")
        lab.wait_for(lambda: ping.p.poll() is not None, 30, "ping flood")
        assert " 0% packet loss" in ping.output(), ping.output() + out
        new = child_of(net.a, "to-b")
        assert new and new["spi_in"] != old["spi_in"], (old, new)
        lab.wait_for(lambda: len(ike(net.b)["sas"]) == 1, 10, "one IKE SA left on B")
        r = net.ping(count=3)
        assert " 0% packet loss" in r.stdout, r.stdout


@pytest.mark.strongswan
def test_road_warriors_survive_dpvpnd_kill9(rng):
    """Two strongSwan road warriors (certificates, virtual IPs) of a
    remote = %any tunnel: the gateway's dpvpnd restarted four times at random
    moments while both ping host D; each client's IKE SA is taken up with its
    lease (same addresses, listed again), nothing lost, no IKE_SA_INIT, and
    a client's CHILD_SA rekey works afterwards."""
    ra.need_swan()
    pki = Pki()
    with swan.SwanLab("aes128gcm16") as sl:
        ra.setup_lab(sl, pki)
        c2 = ra.second_client(sl, pki)
        sl.gw.start()
        got = ra.connect_both(sl, c2)
        for ns, vip in got.items():
            assert " 0% packet loss" in ra.ping_from(sl, ns, vip).stdout
        before = sorted((c["identity"], c["vip"]) for c in sl.gw.ctl("show", "ike")["clients"])
        cap, pcap = sl.capture(sl.ns_pe, "pe-out", "ike")
        pings = [sl.bg(f"ping-{ns}", ns, "ping", "-q", "-i", "0.02", "-c", "400", "-w", "25",
                       "-I", vip, swan.HOST_D) for ns, vip in got.items()]
        time.sleep(0.5)
        for n in range(4):
            time.sleep(rng.uniform(0.05, 1.2))
            out = restart_dpvpnd(sl.gw, f"r{n}")
            assert "2 of 2 IKE SAs taken up again" in out, out
            assert out.count("up, lease") >= 2, out     # the clients' log lines again
        for p in pings:
            lab.wait_for(lambda: p.p.poll() is not None, 30, "pings")
            assert " 0% packet loss" in p.output(), p.output()
        after = sorted((c["identity"], c["vip"]) for c in sl.gw.ctl("show", "ike")["clients"])
        assert after == before, (before, after)
        old_in = sl.gw.ctl("show", "ike")["clients"][0]["spi_in"]
        sl.swan.swanctl("--rekey", "--child", "net", timeout=20, check=False)
        lab.wait_for(lambda: all(c["spi_in"] != old_in or c["vip"] != "10.77.0.1/32"
                                 for c in sl.gw.ctl("show", "ike")["clients"]), 15,
                     "the client's CHILD_SA rekeyed after the restarts")
        r = ra.ping_from(sl, sl.ns_sw, got[sl.ns_sw])
        assert " 0% packet loss" in r.stdout, r.stdout
        cap.stop()
        assert ike_sa_inits(pcap) == 0, "an IKE_SA_INIT on the wire"
        print(f"test_dpvpnd_restart: road warriors {got} kept through 4 restarts")
