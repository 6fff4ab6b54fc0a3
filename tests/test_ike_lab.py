# SPDX-License-Identifier: BSD-3-Clause
"""IKEv2 between two dpvpn gateways ([ike] issue): the lab of tests/helpers/lab.py
with its tunnel keyed by IKE (keying = ike, a PSK file) instead of static
keys.  Gateway A initiates (start = yes), B waits (start = no); the IKE
messages cross the dataplanes' IKE channels (UDP 500 on the gateway link);
the CHILD_SA each dpvpnd derives is installed as the tunnel's SA pair.

    host A == gateway A (dpvpnd: IKE initiator) == gateway B (responder) == host B
"""
import json
import os
import secrets
import shutil
import sys
import tempfile
import time

import pytest

import lab

pytestmark = pytest.mark.ike


def psk_file(d, name, data=None):
    path = os.path.join(d, name)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(data or secrets.token_hex(24) + "\n")
    return path


@pytest.fixture
def pskdir():
    d = tempfile.mkdtemp(prefix="dpvpn-ike-")
    os.chmod(d, 0o700)
    yield d
    shutil.rmtree(d, ignore_errors=True)


def ike(gw):
    return gw.ctl("show", "ike")


def child_of(gw, name):
    for sa in ike(gw)["sas"]:
        if sa["name"] == name and sa["state"] == "established" and sa["child"]:
            return sa["child"]
    return None


def wait_up(net, timeout=20):
    lab.wait_for(lambda: child_of(net.a, "to-b") and child_of(net.b, "to-a"), timeout,
                 "IKE CHILD_SA up on both gateways")
    return child_of(net.a, "to-b"), child_of(net.b, "to-a")


def installed(gw, name):
    return sorted((s["dir"], s["spi"]) for s in gw.ctl("show", "sa")["sas"]
                  if s["name"] == name)


def test_ike_tunnel_comes_up_and_carries_traffic(pskdir):
    psk = psk_file(pskdir, "lab.psk")
    with lab.Lab(ike={"psk": psk, "a": "start = yes\n", "b": "start = no\n"}) as net:
        ca, cb = wait_up(net)
        # the two ends agree, mirrored
        assert (ca["spi_in"], ca["spi_out"]) == (cb["spi_out"], cb["spi_in"]), (ca, cb)
        assert installed(net.a, "to-b") == sorted([("in", ca["spi_in"]), ("out", ca["spi_out"])])
        assert installed(net.b, "to-a") == sorted([("in", cb["spi_in"]), ("out", cb["spi_out"])])
        a = ike(net.a)
        assert a["sas"][0]["role"] == "initiator" and ike(net.b)["sas"][0]["role"] == "responder"
        assert all(v == 0 for v in a["stats"]["rejected"].values()), a["stats"]
        net.ping(count=2)       # the first may wait for ARP on a host link
        r = net.ping(count=5)
        assert " 0% packet loss" in r.stdout, r.stdout
        for gw in (net.a, net.b):
            c = gw.ctl("show", "counters")
            assert c["ike_in"] >= 2 and c["ike_out"] >= 2, c
            assert c["drops"]["bad-icv"] == 0 and c["drops"]["unknown-spi"] == 0, c["drops"]
        rep = net.iperf(seconds=3)
        print(f"test_ike_lab: CHILD_SA {ca['spi_out']}/{ca['spi_in']}; iperf3 "
              f"{rep['end']['sum_received']['bits_per_second'] / 1e6:.0f} Mbit/s")


def test_ike_negotiates_esn(pskdir):
    """esp-proposals with esn on both gateways: the CHILD_SA's dataplane SAs
    have 64-bit sequence numbers (`show sa` esn 1; the high half in the
    GCM AAD, so the two must agree for a packet to pass) and carry pings,
    and so does the CHILD_SA after a rekey.  (charon's kernel-libipsec
    cannot install ESN SAs: tests/test_ike_proposals.py has it negotiate.)"""
    psk = psk_file(pskdir, "lab.psk")
    with lab.Lab(ike={"psk": psk, "a": "start = yes\nesp-proposals = aes128gcm16-esn\n",
                      "b": "start = no\nesp-proposals = aes256gcm16-noesn, "
                           "aes128gcm16-esn-noesn\n"}) as net:
        ca, _ = wait_up(net)
        for gw, name in ((net.a, "to-b"), (net.b, "to-a")):
            sas = [s for s in gw.ctl("show", "sa")["sas"] if s["name"] == name]
            assert len(sas) == 2 and all(s["esn"] == 1 for s in sas), sas
            assert all(s["cipher"] == "aes128-gcm" for s in sas), sas
        net.ping(count=2)       # the first may wait for ARP on a host link
        r = net.ping(count=5)
        assert " 0% packet loss" in r.stdout, r.stdout
        assert "rekeying" in net.b.ctl_text("rekey", "to-a")
        lab.wait_for(lambda: (child_of(net.a, "to-b") or ca)["spi_out"] != ca["spi_out"], 15,
                     "the CHILD_SA rekeyed")
        r = net.ping(count=3)
        assert " 0% packet loss" in r.stdout, r.stdout
        for gw in (net.a, net.b):
            assert all(s["esn"] == 1 for s in gw.ctl("show", "sa")["sas"])
            assert gw.ctl("show", "counters")["drops"]["bad-icv"] == 0


def test_ike_terminate_and_initiate(pskdir):
    psk = psk_file(pskdir, "lab.psk")
    with lab.Lab(ike={"psk": psk, "a": "start = yes\n", "b": "start = no\n"}) as net:
        first, _ = wait_up(net)
        out = net.a.ctl_text("terminate", "to-b")
        assert "terminating" in out, out
        lab.wait_for(lambda: not installed(net.a, "to-b") and not installed(net.b, "to-a"), 10,
                     "CHILD_SA removed on both gateways")
        r = net.ping(count=2)
        assert " 100% packet loss" in r.stdout, r.stdout
        time.sleep(6)       # terminated on purpose: not started again by itself
        assert not installed(net.a, "to-b")
        assert "initiating" in net.a.ctl_text("initiate", "to-b")
        again, _ = wait_up(net)
        assert again["spi_out"] != first["spi_out"] and again["spi_in"] != first["spi_in"]
        net.ping(count=1)
        r = net.ping(count=3)
        assert " 0% packet loss" in r.stdout, r.stdout


def test_ike_wrong_psk_installs_nothing(pskdir):
    pa, pb = psk_file(pskdir, "a.psk"), psk_file(pskdir, "b.psk")
    with lab.Lab(ike={"psk_a": pa, "psk_b": pb, "a": "start = yes\n",
                      "b": "start = no\n"}) as net:
        lab.wait_for(lambda: ike(net.b)["stats"]["rejected"]["auth-fail"] >= 1, 15,
                     "B refused A's AUTH")
        assert ike(net.a)["stats"]["rejected"]["peer-error"] >= 1
        assert not installed(net.a, "to-b") and not installed(net.b, "to-a")
        assert child_of(net.a, "to-b") is None


REKEYS = int(os.environ.get("DPVPN_IKE_REKEYS", "100"))


def test_rekeys_under_iperf3_lose_nothing(pskdir, monkeypatch):
    """Requirement 3: CHILD_SA rekeys make-before-break.  UDP iperf3 A -> B
    (its receiver counts every datagram) while REKEYS (100) rekeys run, from
    A and from B in turn: each end installs the new pair at the exchange,
    moves the outbound policy at the old one's Delete in one published change,
    and keeps the old inbound SA 2 s more.  Zero datagrams lost, and no
    unknown-spi, no-policy, replay or bad-icv drop on either gateway.
    DPVPND_REKEY_GRACE_MS=300 shortens the wait before each old CHILD_SA's
    Delete (default 2 s), or 100 rekeys would take minutes."""
    monkeypatch.setenv("DPVPND_REKEY_GRACE_MS", "300")
    psk = psk_file(pskdir, "lab.psk")
    with lab.Lab(ike={"psk": psk, "a": "start = yes\n", "b": "start = no\n"}) as net:
        wait_up(net)
        net.ping(count=2)
        srv = net.bg("iperf3-server", net.ns_b, "iperf3", "-s", "-1", "-B", "198.18.2.2")
        lab.wait_for(lambda: ":5201" in net.ns(net.ns_b, "ss", "-ltn", check=False).stdout, 10,
                     "iperf3 server")
        seconds = 8 + REKEYS * 0.4
        client = net.bg("iperf3-udp", net.ns_a, "sh", "-c",
                        f"iperf3 -c 198.18.2.2 -u -b 20M -l 1200 -t {seconds:.0f} -J "
                        f"> {net.workdir}/iperf-udp.json")
        time.sleep(2)
        t0, done = time.monotonic(), 0
        while done < REKEYS and time.monotonic() - t0 < seconds - 4:
            gw, name = (net.a, "to-b") if done % 2 == 0 else (net.b, "to-a")
            before = ike(net.a)["sas"][0]["child_rekeys"]
            r = lab.sh(lab.DPVPNCTL, "-s", gw.ctl_sock, "rekey", name, check=False)
            if r.returncode != 0:       # the previous one's old CHILD_SA still there
                time.sleep(0.05)
                continue
            lab.wait_for(lambda: ike(net.a)["sas"][0]["child_rekeys"] > before, 10,
                         f"rekey {done + 1}")
            done += 1
        took = time.monotonic() - t0
        lab.wait_for(lambda: client.p.poll() is not None, seconds + 30, "iperf3 client")
        srv.stop()
        with open(f"{net.workdir}/iperf-udp.json") as f:
            rep = json.load(f)
        s = rep["end"]["sum"]
        print(f"test_ike_lab: {done} rekeys in {took:.1f} s under iperf3 UDP 20 Mbit/s: "
              f"{s['packets']} datagrams, {s['lost_packets']} lost, "
              f"{s.get('out_of_order', 0)} out of order")
        assert done == REKEYS, done
        assert s["packets"] > 1000 and s["lost_packets"] == 0, s
        for gw in (net.a, net.b):
            d = gw.ctl("show", "counters")["drops"]
            assert all(d[r] == 0 for r in ("unknown-spi", "no-policy", "replay", "bad-icv",
                                           "sa-expired")), (gw.name, d)


def test_soft_lifetime_rekeys(pskdir, monkeypatch):
    """Requirement 3, by lifetime: soft-packets = 300 on A's tunnel: once an
    SA of the CHILD_SA has carried 300 packets the dataplane says so and
    dpvpnd rekeys (each new CHILD_SA starts its count again), with no loss
    (the old CHILD_SA deleted 0.3 s after each rekey here)."""
    monkeypatch.setenv("DPVPND_REKEY_GRACE_MS", "300")
    psk = psk_file(pskdir, "lab.psk")
    with lab.Lab(ike={"psk": psk, "a": "start = yes\nsoft-packets = 300\n",
                      "b": "start = no\n"}) as net:
        first, _ = wait_up(net)
        net.ping(count=2)
        r = net.ns(net.ns_a, "ping", "-q", "-c", "2000", "-i", "0.002", "198.18.2.2",
                   check=False, timeout=60)
        assert " 0% packet loss" in r.stdout, r.stdout
        lab.wait_for(lambda: ike(net.a)["sas"][0]["child_rekeys"] >= 2, 10, "rekeys by lifetime")
        assert "soft lifetime: rekeying" in net.a.dpvpnd.output()
        now = child_of(net.a, "to-b")
        assert now["spi_out"] != first["spi_out"]
        for gw in (net.a, net.b):
            d = gw.ctl("show", "counters")["drops"]
            assert d["unknown-spi"] == 0 and d["no-policy"] == 0 and d["sa-expired"] == 0, d


def test_malformed_and_replayed_ike_refused_and_counted(pskdir):
    """Requirement 5: garbage on UDP 500 and 4500 (behind the marker) and every
    IKE message of the setup replayed onto the link: all counted as refused
    (or answered from the cache, for a retransmitted request), nothing changes."""
    psk = psk_file(pskdir, "lab.psk")
    with lab.Lab(ike={"psk": psk, "a": "start = no\n", "b": "start = no\n"}) as net:
        cap, pcap = net.capture("gwa-out", name="ike-setup")
        assert "initiating" in net.a.ctl_text("initiate", "to-b")
        before, _ = wait_up(net)
        net.stop_capture(cap)
        b0 = ike(net.b)["stats"]
        mac_a = net.ns(net.ns_gw, "cat", "/sys/class/net/gwa-out/address").stdout.strip()
        mac_b = net.ns(net.ns_gw, "cat", "/sys/class/net/gwb-out/address").stdout.strip()
        net.ns(net.ns_gw, sys.executable, "-c", REPLAY, pcap, mac_b, mac_a, timeout=60)
        time.sleep(1)
        b1 = ike(net.b)["stats"]
        refused = sum(b1["rejected"].values()) - sum(b0["rejected"].values())
        resent = b1["resent_responses"] - b0["resent_responses"]
        print(f"test_ike_lab: garbage and replays at B: {refused} refused "
              f"{ {k: v - b0['rejected'][k] for k, v in b1['rejected'].items() if v != b0['rejected'][k]} }"
              f", {resent} answered from the cache")
        garbage = sum(b1["rejected"][r] - b0["rejected"][r] for r in ("malformed", "unsupported"))
        assert garbage >= 40, (b0, b1)                  # every garbage datagram refused
        assert resent >= 1 and refused + resent >= 40 + 2, (b0, b1)   # + the replays
        assert child_of(net.b, "to-a") == before_b(before)
        now_a, now_b = wait_up(net)
        assert now_a == before, (now_a, before)
        net.ping(count=1)
        r = net.ping(count=3)
        assert " 0% packet loss" in r.stdout, r.stdout


def before_b(c):
    """A's CHILD_SA as B sees it: the SPIs swapped, the rest (the PFS group) alike."""
    return dict(c, spi_in=c["spi_out"], spi_out=c["spi_in"])


REPLAY = r"""
import os, sys
from scapy.all import Ether, IP, UDP, Raw, rdpcap, sendp, conf
conf.verb = 0
pcap, mac_b, mac_a = sys.argv[1:4]
frames = []
for f in rdpcap(pcap):          # A's IKE messages of the setup, again, to B
    if IP in f and UDP in f and f[IP].src == "198.19.0.1" and f[UDP].dport in (500, 4500):
        frames.append(Ether(dst=mac_b, src=mac_a) / f[IP])
assert frames, "no IKE from A in the capture"
for i in range(20):             # garbage: on 500, and on 4500 behind the marker
    for dport, pre in ((500, b""), (4500, b"\0\0\0\0")):
        frames.append(Ether(dst=mac_b, src=mac_a) / IP(src="198.19.0.1", dst="198.19.0.2") /
                      UDP(sport=dport, dport=dport) / Raw(pre + os.urandom(20 + i * 7)))
sendp(frames, iface="gwa-out", inter=0.005)    # within B's --ike-rate
"""


def test_iperf3_both_ways_then_peer_vanishes(pskdir, monkeypatch):
    """iperf3 B -> A as well (A -> B: above); then B's dpvpnd is killed with
    SIGKILL (no Delete; its dataplane keeps forwarding, but nobody answers
    IKE there any more): A's liveness check (dpd = 2, retransmissions
    shortened) finds the peer gone and removes the tunnel's SAs."""
    monkeypatch.setenv("DPVPND_IKE_RETRANS_MS", "200")
    monkeypatch.setenv("DPVPND_IKE_RETRANS_TRIES", "3")
    psk = psk_file(pskdir, "lab.psk")
    with lab.Lab(ike={"psk": psk, "a": "start = yes\ndpd = 2\n", "b": "start = no\n"}) as net:
        wait_up(net)
        net.ping(count=2)
        srv = net.bg("iperf3-server", net.ns_b, "iperf3", "-s", "-1", "-B", "198.18.2.2")
        lab.wait_for(lambda: ":5201" in net.ns(net.ns_b, "ss", "-ltn", check=False).stdout, 10,
                     "iperf3 server")
        r = net.ns(net.ns_a, "iperf3", "-c", "198.18.2.2", "-R", "-t", "3", "-J",
                   check=False, timeout=40)
        srv.stop()
        rep = json.loads(r.stdout)
        mbit = rep["end"]["sum_received"]["bits_per_second"] / 1e6
        assert mbit > 10, rep["end"]
        net.b.dpvpnd.kill9()
        t0 = time.monotonic()
        lab.wait_for(lambda: not installed(net.a, "to-b"), 20, "A finding B gone")
        print(f"test_ike_lab: iperf3 B -> A {mbit:.0f} Mbit/s; B's dpvpnd killed, A removed "
              f"the SAs {time.monotonic() - t0:.1f} s later")
        assert "IKE SA ended" in net.a.dpvpnd.output()
        d = net.a.ctl("show", "counters")["drops"]
        assert d["bad-icv"] == 0 and d["replay"] == 0, d


FLOOD_INIT = r"""
import os, sys
sys.path.insert(0, sys.argv[4])
from cryptography.hazmat.primitives.asymmetric import ec
from scapy.all import Ether, IP, UDP, sendp, conf
from scapy.contrib.ikev2 import (IKEv2, IKEv2_payload_KE, IKEv2_payload_Nonce,
                                 IKEv2_payload_Proposal, IKEv2_payload_SA)
import make_ike_msg_vectors as v
conf.verb = 0
mac_b, mac_a, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
frames = []
for _ in range(n):              # IKE_SA_INIT as A would send it, new SPIs each time
    pub = ec.generate_private_key(ec.SECP256R1()).public_key().public_numbers()
    ke = pub.x.to_bytes(32, "big") + pub.y.to_bytes(32, "big")
    prop = IKEv2_payload_Proposal(next_payload=0, proposal=1, proto=1, trans_nb=3,
                                  trans=v.chain(v.tr(1, 20, 3, 128), v.tr(2, 5, 3),
                                                v.tr(4, 19, 0)))
    ike = (IKEv2(init_SPI=os.urandom(8), resp_SPI=bytes(8), next_payload=33, exch_type=34,
                 flags="Initiator", id=0) /
           IKEv2_payload_SA(next_payload=34, prop=prop) /
           IKEv2_payload_KE(next_payload=40, group=19, load=ke) /
           IKEv2_payload_Nonce(next_payload=0, load=os.urandom(32)))
    frames.append(Ether(dst=mac_b, src=mac_a) / IP(src="198.19.0.1", dst="198.19.0.2") /
                  UDP(sport=500, dport=500) / ike)
sendp(frames, iface="gwa-out", inter=0.005)
"""


def test_cookies_under_an_ike_sa_init_flood(pskdir, monkeypatch):
    """RFC 7296 2.6 at work: 40 well-formed IKE_SA_INIT requests (valid ECP-256
    keys, new SPIs) from A's address flood B; with DPVPND_IKE_COOKIE_THRESHOLD
    = 8, B keeps 8 half-open SAs and answers the rest with a COOKIE; then A's
    dpvpnd initiates for real, gets a COOKIE, returns it and the tunnel comes up."""
    monkeypatch.setenv("DPVPND_IKE_COOKIE_THRESHOLD", "8")
    psk = psk_file(pskdir, "lab.psk")
    with lab.Lab(ike={"psk": psk, "a": "start = no\n", "b": "start = no\n"}) as net:
        mac_a = net.ns(net.ns_gw, "cat", "/sys/class/net/gwa-out/address").stdout.strip()
        mac_b = net.ns(net.ns_gw, "cat", "/sys/class/net/gwb-out/address").stdout.strip()
        testdata = os.path.join(lab.ROOT, "ike", "testdata")
        net.ns(net.ns_gw, sys.executable, "-c", FLOOD_INIT, mac_b, mac_a, "40", testdata,
               timeout=120)
        time.sleep(1)
        b = ike(net.b)
        half = [s for s in b["sas"] if s["state"] == "half-open"]
        print(f"test_ike_lab: 40 IKE_SA_INIT at B: {len(half)} half-open, "
              f"{b['stats']['rejected']['cookie']} answered with a COOKIE")
        assert len(half) == 8, b["sas"]
        assert b["stats"]["rejected"]["cookie"] == 32, b["stats"]
        assert "initiating" in net.a.ctl_text("initiate", "to-b")
        wait_up(net)
        assert ike(net.b)["stats"]["rejected"]["cookie"] == 33   # A's first try, then its cookie
        net.ping(count=1)
        r = net.ping(count=3)
        assert " 0% packet loss" in r.stdout, r.stdout


def test_ike_sa_rekeys_keep_the_child(pskdir):
    """IKE SA rekeys (RFC 7296 2.18), from A and then from B, under a ping
    flood: new IKE SPIs, the CHILD_SA and its SPIs unchanged, nothing lost;
    a CHILD_SA rekey works over the new IKE SA afterwards."""
    psk = psk_file(pskdir, "lab.psk")
    with lab.Lab(ike={"psk": psk, "a": "start = yes\n", "b": "start = no\n"}) as net:
        child, _ = wait_up(net)
        net.ping(count=2)
        # -c with -w: ends when every reply is in (see test_reload)
        flood = net.bg("ping-flood", net.ns_a, "ping", "-q", "-i", "0.01", "-c", "800",
                       "-w", "20", "198.18.2.2")
        spis = set()
        for gw, name in ((net.a, "to-b"), (net.b, "to-a"), (net.a, "to-b")):
            est = [s for s in ike(gw)["sas"] if s["state"] == "established"][0]
            spis.add(est["spi_i"] + est["spi_r"])
            assert "rekeying the IKE SA" in gw.ctl_text("rekey-ike", name)
            lab.wait_for(lambda: any(s["state"] == "established" and
                                     s["ike_rekeys"] > est["ike_rekeys"]
                                     for s in ike(net.a)["sas"]), 10, "IKE SA rekeyed")
            lab.wait_for(lambda: len(ike(net.a)["sas"]) == 1 and len(ike(net.b)["sas"]) == 1,
                         10, "the old IKE SA deleted on both ends")
        now = ike(net.a)["sas"][0]
        assert now["ike_rekeys"] == 3 and now["spi_i"] + now["spi_r"] not in spis, now
        assert child_of(net.a, "to-b") == child, (child_of(net.a, "to-b"), child)
        lab.wait_for(lambda: flood.p.poll() is not None, 20, "ping flood")
        out = flood.output()
        assert " 0% packet loss" in out, out
        assert "rekeying" in net.b.ctl_text("rekey", "to-a")
        lab.wait_for(lambda: ike(net.a)["sas"][0]["child_rekeys"] >= 1, 10, "CHILD_SA rekey")
        net.ping(count=1)
        r = net.ping(count=3)
        assert " 0% packet loss" in r.stdout, r.stdout


def reload(gw, text=None):
    """Write gw's config (if text) and reload it: dpvpnctl's output."""
    if text is not None:
        with open(gw.config, "w") as f:
            f.write(text)
    r = lab.sh(lab.DPVPNCTL, "-s", gw.ctl_sock, "reload", check=False)
    assert r.returncode == 0, r.stderr
    return r.stdout


def test_reload_applies_ike_changes(pskdir):
    """A reload leaves an unchanged IKE tunnel alone (the same IKE SA and
    CHILD_SA), ends a changed one (the peer hears the Delete) and negotiates
    it anew (also when only its PSK file's content changed), ends one taken
    down (dpvpnctl tunnel NAME down: out of both dataplanes, nothing left on
    the peer) and brings it back up; a config error is refused whole, the
    tunnel untouched."""
    psk = psk_file(pskdir, "lab.psk")
    with lab.Lab(ike={"psk": psk, "a": "start = yes\n", "b": "start = no\n"}) as net:
        first, _ = wait_up(net)
        net.ping(count=1)
        ike_spi = ike(net.a)["sas"][0]["spi_i"]
        out = reload(net.a)
        assert "keying = ike: 0 added, 0 removed, 0 changed" in out, out
        assert child_of(net.a, "to-b") == first and ike(net.a)["sas"][0]["spi_i"] == ike_spi

        original = open(net.a.config).read()
        with open(net.a.config, "a") as f:
            f.write("\nthis is not a key\n")
        r = lab.sh(lab.DPVPNCTL, "-s", net.a.ctl_sock, "reload", check=False)
        assert r.returncode != 0 and "refused, running config kept" in r.stderr, r.stderr
        assert child_of(net.a, "to-b") == first

        # changed (dpd on A only; 30 by default): A deletes the old IKE SA, B
        # follows, A starts anew
        out = reload(net.a, original.replace("start = yes\n", "start = yes\ndpd = 17\n"))
        assert "keying = ike: 0 added, 0 removed, 1 changed" in out, out
        lab.wait_for(lambda: child_of(net.a, "to-b") not in (None, first) and
                     child_of(net.b, "to-a") not in (None, first) and
                     len(ike(net.b)["sas"]) == 1, 20, "the changed tunnel up anew")
        second, back = wait_up(net)
        assert second["spi_out"] != first["spi_out"] and back["spi_out"] == second["spi_in"]
        assert installed(net.b, "to-a") == sorted([("in", back["spi_in"]),
                                                   ("out", back["spi_out"])])
        assert ike(net.b)["stats"]["rejected"]["auth-fail"] == 0
        net.ping(count=1)
        r = net.ping(count=3)
        assert " 0% packet loss" in r.stdout, r.stdout

        # a new PSK (the file's content, same path) on both: each end's tunnel
        # changed, negotiated anew with it, no AUTH refused
        psk_file(pskdir, "lab.psk")
        for gw in (net.b, net.a):
            out = reload(gw)
            assert "keying = ike: 0 added, 0 removed, 1 changed" in out, out
        lab.wait_for(lambda: child_of(net.a, "to-b") not in (None, second) and
                     child_of(net.b, "to-a") not in (None, back), 20, "up with the new PSK")
        wait_up(net)
        assert ike(net.a)["stats"]["rejected"]["auth-fail"] == 0
        assert ike(net.b)["stats"]["rejected"]["auth-fail"] == 0
        net.ping(count=1)
        r = net.ping(count=3)
        assert " 0% packet loss" in r.stdout, r.stdout

        # taken down: gone from both gateways, then back
        out = net.a.ctl_text("tunnel", "to-b", "down")
        assert "keying = ike: 0 added, 1 removed, 0 changed" in out, out
        assert not installed(net.a, "to-b") and not ike(net.a)["sas"]
        lab.wait_for(lambda: not installed(net.b, "to-a") and not ike(net.b)["sas"], 10,
                     "B told by A's Delete")
        r = net.ping(count=2)
        assert " 100% packet loss" in r.stdout, r.stdout
        out = net.a.ctl_text("tunnel", "to-b", "up")
        assert "keying = ike: 1 added, 0 removed, 0 changed" in out, out
        third, _ = wait_up(net)
        assert third["spi_out"] not in (first["spi_out"], second["spi_out"])
        net.ping(count=1)
        r = net.ping(count=3)
        assert " 0% packet loss" in r.stdout, r.stdout


def test_reload_turns_a_static_tunnel_into_ike(pskdir):
    """Gateways with static keys and no IKE at start: a reload of both to
    keying = ike opens the IKE channel, removes the static SAs and the
    tunnel comes up negotiated; a reload back to static keys ends it again."""
    psk = psk_file(pskdir, "lab.psk")
    with lab.Lab() as net:
        net.ping(count=1)
        static = {gw.name: open(gw.config).read() for gw in net.gws}
        with pytest.raises(RuntimeError, match="no IKE"):
            ike(net.a)
        for gw, lines, extra in ((net.b, lab.Lab.STATIC_B, "start = no\n"),
                                 (net.a, lab.Lab.STATIC_A, "start = yes\n")):
            text = static[gw.name]
            assert lines in text
            out = reload(gw, text.replace(lines, f"keying = ike\npsk-file = {psk}\n{extra}"))
            assert "keying = ike: 1 added, 0 removed, 0 changed" in out, out
        ca, cb = wait_up(net)
        assert installed(net.a, "to-b") == sorted([("in", ca["spi_in"]), ("out", ca["spi_out"])])
        net.ping(count=1)
        r = net.ping(count=3)
        assert " 0% packet loss" in r.stdout, r.stdout
        for gw in (net.a, net.b):
            out = reload(gw, static[gw.name])
            assert "keying = ike: 0 added, 1 removed, 0 changed" in out, out
        assert not ike(net.a)["sas"]
        spis = sorted(s["spi"] for s in net.a.ctl("show", "sa")["sas"])
        assert spis == ["0x00001001", "0x00002001"], spis
        net.ping(count=1)
        r = net.ping(count=3)
        assert " 0% packet loss" in r.stdout, r.stdout
