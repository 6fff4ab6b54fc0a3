# SPDX-License-Identifier: BSD-3-Clause
r"""A pair of gateways with strongSwan on the other end ([ha] issue 30,
requirement 5): the takeover seen by a real, independent IKE peer.

tests/test_ha.py's Pair without gateway A: in its place a Linux router
(namespace pa) where strongSwan's charon (kernel-libipsec: ESP in UDP 4500,
`encap = yes`) is the pair's site-to-site peer; or strongSwan road warriors
in namespaces of their own on the outside bridge, which get virtual
addresses from the pair's pool.  B1 is made master (`dpvpnctl ha master`,
as keepalived's notify script does), B2 is backup and in sync; then B1 dies
(kill -9 of its dataplane and dpvpnd) and B2 is made master.  charon must
not notice: the same IKE SA and CHILD_SA (SPIs, as `swanctl --list-sas`
shows them), the same virtual address, no IKE_SA_INIT on its link, no
(SPI, sequence number) from the pair twice, its liveness checks answered.

    host A == [pa: router, charon] ==[br-out]== B1 ==[br-in]== host B
                 198.19.0.1            |    \== B2 ==/
    road warriors rw1 198.19.0.5, ---- +    (virtual 198.19.0.2, 198.18.2.1)
                  rw2 198.19.0.6, rw3 198.19.0.7 (each charon in its own netns)

Every wait is bounded; the Pair's close() stops every process (charons
included) and removes every namespace, even after a failure.
"""
import json
import os
import re
import socket
import struct
import time

import pytest

import lab
import swan
import test_ike_ra as ra
from test_ha import Pair, show_ha
from test_ike_lab import child_of, ike, psk_file, pskdir  # noqa: F401
from test_ike_pki import Pki, pem, write

pytestmark = [pytest.mark.ha, pytest.mark.ike, pytest.mark.strongswan]

VIP_OUT = "198.19.0.2"
HOST_B = "198.18.2.2"
# swanctl --list-sas, an IKE SA's first line and its local line:
#   "dpsw: #1, ESTABLISHED, IKEv2, 5d2ab4e3f0b9c6a1_i* 8c0e9b1d2a3f4e5d_r"
#   "  local  'rw1.example.org' @ 198.19.0.5[4500] [10.77.0.1]"
RE_IKE = re.compile(r"^(\S+): #(\d+), (\S+), IKEv2, ([0-9a-f]{16})_i\*? ([0-9a-f]{16})_r\*?$",
                    re.M)
RE_VIP = re.compile(r"^  local  '[^']*' @ \S+ \[([^\]]+)\]", re.M)


def need_swan():
    why = swan.ensure_installed()
    if why:
        pytest.skip(f"strongSwan interop: {why}")


def swan_view(ch):
    """charon's IKE SAs and CHILD_SAs (swanctl --list-sas): {"ike": [(name,
    uid, state, spi_i, spi_r)], "child": {uid: (state, mode, alg, spi_in,
    spi_out)}, "vips": [virtual addresses]}."""
    text = ch.swanctl("--list-sas")
    return {"ike": [(m.group(1), int(m.group(2)), m.group(3), m.group(4), m.group(5))
                    for m in RE_IKE.finditer(text)],
            "child": swan.parse_list_sas(text), "vips": RE_VIP.findall(text), "text": text}


def ike_requests(log):
    """charon's log: the IKE requests it generated and no response parsed
    for [(exchange, message ID)], and its retransmissions [(try, message ID)]."""
    asked = re.findall(r"generating (\S+) request (\d+)", log)
    answered = set(re.findall(r"parsed (\S+) response (\d+)", log))
    retrans = [(int(n), int(i)) for n, i in
               re.findall(r"retransmit (\d+) of request with message ID (\d+)", log)]
    return [r for r in asked if r not in answered], retrans


def udp_frames(pcap):
    """(src, dst, sport, dport, payload) of every IPv4 UDP frame of an
    Ethernet capture, read by hand (scapy's rdpcap is slow for an iperf3
    run's worth); payloads as far as the snap length kept them."""
    with open(pcap, "rb") as f:
        data = f.read()
    if len(data) < 24:
        return
    end = "<" if data[:4] in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1") else ">"
    at = 24
    while at + 16 <= len(data):
        incl = struct.unpack(end + "I", data[at + 8:at + 12])[0]
        fr = data[at + 16:at + 16 + incl]
        at += 16 + incl
        if len(fr) < 42 or fr[12:14] != b"\x08\x00" or fr[23] != 17:
            continue
        u = 14 + (fr[14] & 15) * 4
        sport, dport = struct.unpack("!HH", fr[u:u + 4])
        yield (socket.inet_ntoa(fr[26:30]), socket.inet_ntoa(fr[30:34]), sport, dport,
               fr[u + 8:])


def ike_sa_inits(pcap):
    """IKE_SA_INIT messages (exchange type 34) on UDP 500, or on 4500 after
    the non-ESP marker, as test_dpvpnd_restart's ike_sa_inits counts them."""
    n = 0
    for _, _, sport, dport, body in udp_frames(pcap):
        if 4500 in (sport, dport):
            if body[:4] != b"\0\0\0\0":
                continue        # ESP in UDP (or a keepalive)
            body = body[4:]
        elif 500 not in (sport, dport):
            continue
        n += len(body) > 18 and body[18] == 34
    return n


def esp_in_udp(pcap, src):
    """(SPI, sequence number) of every ESP-in-UDP packet (RFC 3948) from src."""
    return [struct.unpack("!II", body[:8])
            for s, _, sport, dport, body in udp_frames(pcap)
            if s == src and 4500 in (sport, dport) and len(body) >= 8 and
            body[:4] != b"\0\0\0\0"]


def capture(net, dev, name):
    """tcpdump of UDP on a bridge port of the outside link, headers only."""
    path = os.path.join(net.workdir, f"{name}.pcap")
    p = lab.Proc("tcpdump-" + name, ["tcpdump", "-i", dev, "--immediate-mode", "-U",
                                     "-s", "128", "-w", path, "udp"], net.workdir, net.ns_gw)
    net.procs.append(p)
    lab.wait_for(lambda: "listening" in p.output(), 10, "tcpdump")
    return p, path


def iperf(net, tag, seconds=3):
    """iperf3 TCP host A -> host B for seconds; its parsed report."""
    srv = lab.Proc(f"iperf3-server-{tag}", ["iperf3", "-s", "-1", "-B", HOST_B],
                   net.workdir, net.ns_b)
    net.procs.append(srv)
    lab.wait_for(lambda: ":5201" in net.ns(net.ns_b, "ss", "-ltn", check=False).stdout, 10,
                 "iperf3 server")
    r = net.ns(net.ns_a, "iperf3", "-c", HOST_B, "-t", str(seconds), "-J",
               "--connect-timeout", "5000", check=False, timeout=seconds + 25)
    srv.stop(timeout=5)
    assert r.returncode == 0, f"iperf3 ({tag}): {r.stdout[-2000:]} {r.stderr[-2000:]}"
    rep = json.loads(r.stdout)
    got = rep["end"]["sum_received"]["bytes"]
    assert got > 1_000_000, rep["end"]
    return rep["end"]["sum_received"]["bits_per_second"] / 1e6


# How B2 is told to take over: `dpvpnctl ha master` by the test, as
# keepalived's notify script does, or keepalived itself on the twins
# (Pair(keepalived=True): B1's adverts stop with its dataplane).
TAKEOVERS = ["dpvpnctl", "keepalived"]


def pair_master_b1(net):
    """The sync channel up, B1 master (made so by the test, as keepalived's
    notify would, or by keepalived), B2 backup."""
    b1, b2 = net.b["b1"], net.b["b2"]
    if not net.keepalived:
        lab.wait_for(lambda: show_ha(b1)["peer"]["channel"] and
                     show_ha(b2)["peer"]["role"] == "backup", 20, "the sync channel up")
        r = b1.ctl("ha", "master")
        assert "master" in r["message"], r
    lab.wait_for(lambda: show_ha(b1)["role"] == "master" and
                 show_ha(b2)["role"] == "backup" and show_ha(b2)["peer"]["channel"], 30,
                 "B1 master, B2 backup, the sync channel up")


def kill_b1_b2_master(net):
    """B1 dies (kill -9 of dpvpnd and dataplane); B2 master, told so by the
    test or by its keepalived."""
    b1, b2 = net.b["b1"], net.b["b2"]
    b1.dpvpnd.kill9()
    b1.dataplane.kill9()
    if net.keepalived:
        lab.wait_for(lambda: show_ha(b2)["role"] == "master", 10,
                     "B2's keepalived: master, and its notify run")
    else:
        r = b2.ctl("ha", "master")
        assert "master" in r["message"] and "stale" not in r["message"], r
    lab.wait_for(lambda: "taken up again" in b2.dpvpnd.output(), 10,
                 "B2's IKE engine taking the IKE SAs up")


def no_seq_twice(pcap, least):
    seqs = esp_in_udp(pcap, VIP_OUT)
    assert len(seqs) >= least, len(seqs)
    dup = len(seqs) - len(set(seqs))
    assert dup == 0, f"{dup} (SPI, sequence number) sent twice by the pair"
    return seqs


@pytest.mark.parametrize("takeover", TAKEOVERS)
def test_strongswan_site_to_site_through_a_takeover(pskdir, takeover):
    """charon (PSK, aes128gcm16, UDP encapsulation, DPD every second) and
    the pair: host A's subnet pings host B and iperf3 runs through B1; B1
    dies, B2 takes over: pings and iperf3 go on via B2, charon's IKE SA and
    CHILD_SA are the same (uids and SPIs) and established, B2's IKE SA has
    B1's SPIs, no IKE_SA_INIT on charon's link, no (SPI, sequence number)
    from the pair twice (ESP in UDP 4500), and charon's DPD requests after
    the takeover are answered (by B2: its IKE SA's rx grows), and a
    CHILD_SA rekey of charon's with B2 works.  B2 is made master by
    dpvpnctl or by keepalived (takeover)."""
    need_swan()
    psk = psk_file(pskdir, "swan.psk", swan.PSK)
    with Pair(psk, gateway_a=False, ike_b="encap = udp\n",
              keepalived=takeover == "keepalived") as net:
        b1, b2 = net.b["b1"], net.b["b2"]
        pair_master_b1(net)
        ch = swan.Charon("charon-a", net.ns_pa, net.workdir, "198.19.0.1", VIP_OUT,
                         swan.SWAN_NET, swan.PEER_NET, "aes128gcm16")
        ch.swanctl_conf["connections"]["dpsw"]["dpd_delay"] = "1s"
        ch.strongswan["charon"]["filelog"]["swan"]["time_format"] = '"%T"'
        ch.write_config()
        net.procs.append(ch)        # (stopped by the Pair's close)
        ch.start()
        # (the counting of IKE_SA_INITs checked on charon's own)
        cap, pcap = capture(net, "a-br", "init")
        out = ch.swanctl("--initiate", "--child", "net", "--timeout", "20", timeout=30,
                         check=False)
        assert "initiate completed successfully" in out, \
            out + ch.log_text()[-4000:] + b1.dpvpnd.output()[-3000:]
        lab.wait_for(lambda: child_of(b1, "to-a"), 10, "B1's CHILD_SA with charon")
        lab.Lab.stop_capture(cap)
        assert ike_sa_inits(pcap) == 2, "charon's IKE_SA_INIT and B1's answer not counted"
        lab.wait_for(lambda: show_ha(b2)["sync"] == "in sync" and show_ha(b2)["sas"] == 2,
                     20, "B2 in sync with B1's CHILD_SA")
        st = [s for s in ike(b1)["sas"] if s["name"] == "to-a"][0]
        assert st["udp_encap"] and st["remote"].endswith(":4500"), st
        net.ping(count=2)           # ARP on the host links
        r = net.ping(count=5)
        assert " 0% packet loss" in r.stdout, r.stdout + ch.log_text()[-3000:]
        before_mbit = iperf(net, "b1")
        drops1 = {k: v for k, v in b1.ctl("show", "counters")["drops"].items() if v}
        sw1 = swan_view(ch)
        assert len(sw1["ike"]) == 1 and sw1["ike"][0][2] == "ESTABLISHED", sw1["text"]
        assert len(sw1["child"]) == 1, sw1["text"]
        spi_i, spi_r = sw1["ike"][0][3:5]
        assert (st["spi_i"], st["spi_r"]) == (spi_i, spi_r), (st, sw1["text"])

        cap, pcap = capture(net, "a-br", "peer")
        r = net.ping(count=10)
        assert " 0% packet loss" in r.stdout, r.stdout
        mark = len(ch.log_text())
        kill_b1_b2_master(net)
        r = net.ping(count=10)
        assert " 0% packet loss" in r.stdout, r.stdout + b2.dpvpnd.output()[-3000:]
        after_mbit = iperf(net, "b2")
        # charon's liveness checks (dpd_delay 1 s, once idle) answered by B2
        rx = [s for s in ike(b2)["sas"] if s["name"] == "to-a"][0]["rx"]
        mark2 = len(ch.log_text())
        lab.wait_for(lambda: ch.log_text()[mark2:].count("sending DPD request") >= 2 and
                     ch.log_text()[mark2:].count("parsed INFORMATIONAL response") >= 2, 20,
                     "two of charon's DPD requests answered after the takeover")
        st2 = [s for s in ike(b2)["sas"] if s["name"] == "to-a"][0]
        assert st2["rx"] >= rx + 2 and st2["state"] == "established", st2
        assert (st2["spi_i"], st2["spi_r"]) == (spi_i, spi_r), st2
        r = net.ping(count=5)
        assert " 0% packet loss" in r.stdout, r.stdout
        lab.Lab.stop_capture(cap)
        sw2 = swan_view(ch)
        assert sw2["ike"] == sw1["ike"], (sw1["text"], sw2["text"])
        assert sw2["child"] == sw1["child"], (sw1["text"], sw2["text"])
        # every request of charon's since B1 died answered; one caught in the
        # gap (sent to B1, or before B2's gratuitous ARP) answered by B2 at
        # its first retransmission; none once B2 had long been master
        lab.wait_for(lambda: not ike_requests(ch.log_text()[mark:])[0], 6,
                     "every request of charon's since B1 died answered: "
                     f"{ike_requests(ch.log_text()[mark:])}")
        log = ch.log_text()[mark:]
        _, retrans = ike_requests(log)
        assert all(n == 1 for n, _ in retrans), (retrans, log)
        assert "deleting IKE_SA" not in log and "giving up" not in log, log[-3000:]
        assert "retransmit" not in ch.log_text()[mark2:], ch.log_text()[mark2:]
        assert ike_sa_inits(pcap) == 0, "an IKE_SA_INIT on charon's link"
        seqs = no_seq_twice(pcap, 100)
        c2 = child_of(b2, "to-a")
        out_spi = int(c2["spi_out"], 16)
        assert {s for s, _ in seqs} == {out_spi}, (c2, {s for s, _ in seqs})
        h2 = show_ha(b2)
        assert h2["role"] == "master" and h2["stale_takeovers"] == 0, h2
        # charon rekeys its CHILD_SA with B2 (the IKE SA's message IDs followed)
        ch.swanctl("--rekey", "--child", "net", timeout=20)
        lab.wait_for(lambda: (child_of(b2, "to-a") or {}).get("spi_out") not in
                     (None, c2["spi_out"]), 15, "charon's CHILD_SA rekey answered by B2")
        r = net.ping(count=5)
        assert " 0% packet loss" in r.stdout, r.stdout
        drops = {k: v for k, v in b2.ctl("show", "counters")["drops"].items() if v}
        assert not drops.get("bad-icv") and not drops.get("replay"), drops
        print(f"\ntest_ha_swan: charon <-> pair ({takeover}): iperf3 {before_mbit:.0f} "
              f"Mbit/s via B1, {after_mbit:.0f} via B2; {len(seqs)} ESP packets from the "
              f"pair, none twice; takeover {h2['last_takeover']}; charon's retransmissions "
              f"(try, message ID) {retrans}; B1's drops {drops1}, B2's "
              f"{drops} (seq-unreserved: seq-block 1024 against dpvpnd's 200 ms event poll)")




def road_warrior(net, pki, name, addr):
    """A strongSwan road warrior (certificate for NAME.example.org, asks
    for a virtual IP) in a namespace of its own on br-out; not started."""
    ns = net.outside_ns(name, f"{addr}/24")
    ch = swan.Charon(f"charon-{name}", ns, net.workdir, addr, VIP_OUT,
                     swan.SWAN_NET, swan.PEER_NET, "aes128gcm16")
    ra.client_files(ch, pki, f"{name}.example.org")
    net.procs.append(ch)        # (stopped by the Pair's close)
    return ns, ch


def connect(ch, gw):
    """charon started and connected; the virtual IP it installed."""
    ch.start()
    out = ch.swanctl("--initiate", "--child", "net", "--timeout", "20", timeout=30,
                     check=False)
    assert "initiate completed successfully" in out, \
        out + ch.log_text()[-4000:] + gw.dpvpnd.output()[-3000:]
    vips = re.findall(r"installing new virtual IP (\S+)", ch.log_text())
    assert vips, ch.log_text()[-3000:]
    return vips[-1]


def ping_from(net, ns, vip, count=3):
    r = None
    for _ in range(2):      # the first may wait for ARP
        r = net.ns(ns, "ping", "-c", str(count), "-i", "0.2", "-W", "2", "-I", vip, HOST_B,
                   check=False, timeout=count + 20)
        if " 0% packet loss" in r.stdout:
            break
    return r


def clients(gw):
    return sorted((c["identity"], c["vip"], c["spi_in"], c["spi_out"])
                  for c in gw.ctl("show", "ike")["clients"])


@pytest.mark.parametrize("takeover", TAKEOVERS)
def test_road_warriors_keep_their_addresses_through_a_takeover(pskdir, takeover):
    """Two strongSwan road warriors (certificates) connect through the pair
    to B1 as master and get 10.77.0.1 and .2 from its pool; both ping host
    B from them, B2 gets their SAs and IKE SA records (with the leases).
    B1 dies while both ping on; B2 takes over: both clients keep their
    virtual addresses (swanctl --list-sas), IKE SA and CHILD_SA SPIs, B2
    lists them as B1 did, they ping on, no IKE_SA_INIT and no (SPI,
    sequence number) twice on their links.  A third client that connects
    to B2 afterwards gets an address neither of the two holds (the leases
    are B2's pool's).  B2 is made master by dpvpnctl or by keepalived."""
    need_swan()
    pki = Pki()
    cert, key = pki.leaf("peer.example.org", "ecdsa")
    write(os.path.join(pskdir, "peer.pem"), pem(cert) + pem(pki.mid))
    write(os.path.join(pskdir, "peer.key"), pem(key), 0o600)
    write(os.path.join(pskdir, "ca.pem"), pem(pki.root))
    psk = psk_file(pskdir, "lab.psk")
    with Pair(psk, gateway_a=False, extra_b=ra.RW_TUNNEL.format(
                  out="198.19.0.2", peer_net="198.18.2.0/24", pool=ra.POOL, dir=pskdir),
              keepalived=takeover == "keepalived") as net:
        b1, b2 = net.b["b1"], net.b["b2"]
        pair_master_b1(net)
        rws = [road_warrior(net, pki, n, a) for n, a in (("rw1", "198.19.0.5"),
                                                           ("rw2", "198.19.0.6"))]
        got = {ns: connect(ch, b1) for ns, ch in rws}
        assert sorted(got.values()) == ["10.77.0.1", "10.77.0.2"], got
        for ns, vip in got.items():
            r = ping_from(net, ns, vip)
            assert " 0% packet loss" in r.stdout, r.stdout + r.stderr
        lab.wait_for(lambda: show_ha(b2)["sync"] == "in sync" and show_ha(b2)["sas"] == 4,
                     20, "B2 in sync with both clients' CHILD_SAs")
        before = clients(b1)
        assert sorted(c[1] for c in before) == ["10.77.0.1/32", "10.77.0.2/32"], before
        views = {ns: swan_view(ch) for ns, ch in rws}
        for ns, v in views.items():
            assert v["vips"] == [got[ns]], v["text"]
        caps = [capture(net, f"{n}-br", n) for n in ("rw1", "rw2")]
        marks = {ns: len(ch.log_text()) for ns, ch in rws}
        pings = [lab.Proc(f"ping-{ns}", ["ping", "-q", "-i", "0.05", "-c", "200", "-w", "30",
                                         "-I", vip, HOST_B], net.workdir, ns)
                 for ns, vip in got.items()]
        net.procs += pings
        time.sleep(2)       # pings through B1 first
        kill_b1_b2_master(net)
        for p in pings:
            lab.wait_for(lambda p=p: p.p.poll() is not None, 40, "the clients' pings")
        losses = []
        for p in pings:
            m = re.search(r"(\d+) packets transmitted, (\d+) received", p.output())
            assert m, p.output()
            sent, recv = int(m.group(1)), int(m.group(2))
            losses.append(sent - recv)
            # (-c with -w: on until 200 replies) the gap: a few pings sent
            # between B1's death and B2's takeover may go
            assert recv == 200 and sent - recv <= 20, p.output()
        for ns, vip in got.items():
            r = ping_from(net, ns, vip, count=5)
            assert " 0% packet loss" in r.stdout, r.stdout + b2.dpvpnd.output()[-3000:]
        after = clients(b2)
        assert after == before, (before, after)
        assert show_ha(b2)["stale_takeovers"] == 0, show_ha(b2)
        for ns, ch in rws:
            v = swan_view(ch)
            assert v["vips"] == [got[ns]], v["text"]
            assert v["ike"] == views[ns]["ike"] and v["ike"][0][2] == "ESTABLISHED", \
                (views[ns]["text"], v["text"])
            assert v["child"] == views[ns]["child"], (views[ns]["text"], v["text"])
            log = ch.log_text()[marks[ns]:]
            assert "installing new virtual IP" not in log and "IKE_SA_INIT" not in log, log
        for (cap, pcap), n in zip(caps, ("rw1", "rw2")):
            lab.Lab.stop_capture(cap)
            assert ike_sa_inits(pcap) == 0, f"an IKE_SA_INIT on {n}'s link"
            no_seq_twice(pcap, 150)
        # a new client of B2: the leases of the two are taken in its pool
        ns3, ch3 = road_warrior(net, pki, "rw3", "198.19.0.7")
        vip3 = connect(ch3, b2)
        assert vip3 not in got.values(), (vip3, got)
        r = ping_from(net, ns3, vip3)
        assert " 0% packet loss" in r.stdout, r.stdout + r.stderr
        assert len(clients(b2)) == 3, clients(b2)
        print(f"\ntest_ha_swan: road warriors {sorted(got.values())} kept through the "
              f"takeover ({losses} pings lost of about 200 each), a third got {vip3} from B2")
