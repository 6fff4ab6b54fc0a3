# SPDX-License-Identifier: BSD-3-Clause
"""The IKE punt path ([ike] issue, requirement 2): IKE messages that reach a
gateway's outside address (UDP 500, or 4500 behind the non-ESP marker) go to
the IKE channel, a control connection that sent IKE_OPEN, as IKE_RX pushes;
IKE_TX on that channel leaves through the outside port as a UDP packet.  Rate
limited (--ike-rate) and counted (ike_in, ike_out; drops ike, ike-limit).

The channel is driven here by a small client of the protocol
(include/dpvpn_proto.h), not dpvpnd: one on each gateway, so an IKE message
crosses both dataplanes, and scapy (the independent peer) writes frames onto
the link and reads what the gateways put on it."""
import os
import select
import socket
import struct
import sys
import time

import pytest

import lab

pytestmark = pytest.mark.ike

HDR = struct.Struct("<HHIIi")          # struct dpvpn_msg_hdr
PKT = struct.Struct("<HHHHB3x16sB3x16sII")   # struct dpvpn_ike_pkt
IKE_OPEN, IKE_TX, IKE_RX = 25, 26, 27
F_REPLY, F_PUSH, F_QUIET = 1, 2, 4
AF4, AF6 = 4, 6
A_OUT, B_OUT = "198.19.0.1", "198.19.0.2"
OUTSIDE = 1                             # port 1 on both gateways (lab.py)


def addr(a):
    if ":" in a:
        return AF6, socket.inet_pton(socket.AF_INET6, a)
    return AF4, socket.inet_pton(socket.AF_INET, a) + bytes(12)


class Channel:
    """A connection to a dataplane's control socket: requests and replies,
    and the IKE_RX pushes that arrive in between."""

    def __init__(self, path):
        self.s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.s.connect(path)
        self.seq = 0
        self.pushes = []

    def close(self):
        self.s.close()

    def _take(self, timeout):
        r, _, _ = select.select([self.s], [], [], timeout)
        if not r:
            return None
        d = self.s.recv(70000)
        assert len(d) >= HDR.size, d
        t, flags, seq, ln, status = HDR.unpack_from(d)
        assert ln == len(d) - HDR.size, (ln, len(d))
        if flags == F_PUSH:
            assert t == IKE_RX, t
            self.pushes.append(parse_push(d[HDR.size:]))
            return "push"
        assert flags == F_REPLY, flags
        return t, seq, status, d[HDR.size:]

    def call(self, t, payload=b"", flags=0, wait=5):
        """(status, message or body); None if nothing came within wait s."""
        self.seq += 1
        self.s.send(HDR.pack(t, flags, self.seq, len(payload), 0) + payload)
        end = time.monotonic() + wait
        while time.monotonic() < end:
            got = self._take(end - time.monotonic())
            if got is None:
                break
            if got == "push":
                continue
            rt, rseq, status, body = got
            assert (rt, rseq) == (t, self.seq)
            return status, body.rstrip(b"\0").decode() if status else body
        if flags:
            return None
        raise TimeoutError("no reply")

    def open(self):
        status, msg = self.call(IKE_OPEN)
        assert status == 0, msg

    def tx(self, local, lport, remote, rport, data, port=OUTSIDE, over=None, flags=0, wait=5):
        lf, la = addr(local)
        rf, ra = addr(remote)
        f = dict(port=port, lport=lport, rport=rport, res=0, lf=lf, la=la, rf=rf, ra=ra,
                 len=len(data), res2=0)
        f.update(over or {})
        return self.call(IKE_TX, PKT.pack(f["port"], f["lport"], f["rport"], f["res"], f["lf"],
                                          f["la"], f["rf"], f["ra"], f["len"], f["res2"]) + data,
                         flags, wait)

    def wait_push(self, timeout=5):
        end = time.monotonic() + timeout
        while not self.pushes and time.monotonic() < end:
            self._take(end - time.monotonic())
        assert self.pushes, "no IKE_RX push"
        return self.pushes.pop(0)


def parse_push(b):
    port, lport, rport, res, lf, la, rf, ra, ln, res2 = PKT.unpack_from(b)
    assert res == 0 and res2 == 0 and lf == rf and lf in (AF4, AF6)
    assert ln == len(b) - PKT.size
    fam = socket.AF_INET if lf == AF4 else socket.AF_INET6
    n = 4 if lf == AF4 else 16
    return dict(port=port, local=socket.inet_ntop(fam, la[:n]), lport=lport,
                remote=socket.inet_ntop(fam, ra[:n]), rport=rport, data=b[PKT.size:])


@pytest.fixture(scope="module")
def net():
    with lab.Lab() as n:
        n.ping(count=3)
        yield n


def drops(gw):
    return gw.ctl("show", "counters")["drops"]


SEND = r"""
import sys, time
from scapy.all import Ether, IP, UDP, Raw, sendp, conf
conf.verb = 0
dst, src_mac = sys.argv[1], sys.argv[2]
dport, count, marker = int(sys.argv[3]), int(sys.argv[4]), sys.argv[5] == "1"
payload = bytes.fromhex(sys.argv[6])
pre = b"\0\0\0\0" if marker else b""
f = (Ether(dst=dst, src=src_mac) / IP(src="198.19.0.2", dst="198.19.0.1") /
     UDP(sport=dport, dport=dport) / Raw(pre + payload))
sendp([f] * count, iface="gwb-out")
"""


def scapy_send(net, dport, payload, count=1, marker=False):
    """IKE frames onto the link, as if from gateway B's address, to A."""
    mac_a = net.ns(net.ns_gw, "cat", "/sys/class/net/gwa-out/address").stdout.strip()
    mac_b = net.ns(net.ns_gw, "cat", "/sys/class/net/gwb-out/address").stdout.strip()
    net.ns(net.ns_gw, sys.executable, "-c", SEND, mac_a, mac_b, str(dport), str(count),
           "1" if marker else "0", payload.hex(), timeout=60)


def test_ike_without_a_channel_is_counted(net):
    before = drops(net.a)
    scapy_send(net, 500, b"\x11" * 40)
    scapy_send(net, 4500, b"\x22" * 40, marker=True)
    lab.wait_for(lambda: drops(net.a)["ike"] >= before["ike"] + 2, 5, "2 ike drops")
    assert drops(net.a)["ike"] == before["ike"] + 2
    lab.wait_for(lambda: lab.counters_balance(net.a.ctl("show", "counters"))[0] ==
                 lab.counters_balance(net.a.ctl("show", "counters"))[1], 5, "A balanced")


def test_scapy_ike_reaches_the_channel(net):
    ch = Channel(net.a.dp_sock)
    try:
        ch.open()
        in0 = net.a.ctl("show", "counters")["ike_in"]
        ike = os.urandom(60)
        scapy_send(net, 500, ike)
        p = ch.wait_push()
        assert p == dict(port=OUTSIDE, local=A_OUT, lport=500, remote=B_OUT, rport=500,
                         data=ike), p
        scapy_send(net, 4500, ike[::-1], marker=True)      # marker stripped
        p = ch.wait_push()
        assert (p["lport"], p["rport"], p["data"]) == (4500, 4500, ike[::-1]), p
        assert net.a.ctl("show", "counters")["ike_in"] == in0 + 2
        # a second channel is refused while this one is open
        other = Channel(net.a.dp_sock)
        try:
            status, msg = other.call(IKE_OPEN)
            assert status != 0 and "IKE channel" in msg, (status, msg)
        finally:
            other.close()
    finally:
        ch.close()
    # closed: IKE is dropped again, counted
    before = drops(net.a)["ike"]
    time.sleep(0.2)
    scapy_send(net, 500, b"\x33" * 20)
    lab.wait_for(lambda: drops(net.a)["ike"] == before + 1, 5, "ike drop after close")
    # and a new channel may open
    ch = Channel(net.a.dp_sock)
    ch.open()
    ch.close()


def test_ike_between_two_dataplanes_both_ports(net):
    """A's channel sends, B's receives, and back over 4500; on the link the
    frames are what a UDP socket would send (scapy checks them)."""
    cap, pcap = net.capture("gwa-out", name="ike")
    cha, chb = Channel(net.a.dp_sock), Channel(net.b.dp_sock)
    try:
        cha.open()
        chb.open()
        out_a = net.a.ctl("show", "counters")["ike_out"]
        msg1, msg2 = os.urandom(300), os.urandom(1200)
        status, err = cha.tx(A_OUT, 500, B_OUT, 500, msg1)
        assert status == 0, err
        p = chb.wait_push()
        assert p == dict(port=OUTSIDE, local=B_OUT, lport=500, remote=A_OUT, rport=500,
                         data=msg1), p
        status, err = chb.tx(B_OUT, 4500, A_OUT, 4500, msg2)
        assert status == 0, err
        p = cha.wait_push()
        assert p == dict(port=OUTSIDE, local=A_OUT, lport=4500, remote=B_OUT, rport=4500,
                         data=msg2), p
        assert net.a.ctl("show", "counters")["ike_out"] == out_a + 1
    finally:
        cha.close()
        chb.close()
        net.stop_capture(cap)
    from scapy.all import IP, UDP, rdpcap
    seen = {}
    for f in rdpcap(pcap):
        if IP in f and UDP in f and f[UDP].dport in (500, 4500):
            raw = bytes(f[IP])
            again = IP(raw)
            del again[IP].chksum
            del again[UDP].chksum
            again = IP(bytes(again))        # scapy's own checksums
            assert again[IP].chksum == f[IP].chksum and again[UDP].chksum == f[UDP].chksum
            seen[f[UDP].dport] = (f[IP].src, f[IP].dst, bytes(f[UDP].payload))
    assert seen[500] == (A_OUT, B_OUT, msg1)
    assert seen[4500] == (B_OUT, A_OUT, b"\0\0\0\0" + msg2)    # the non-ESP marker
    for gw in (net.a, net.b):
        c = gw.ctl("show", "counters")
        total, gone = lab.counters_balance(c)
        assert total == gone, (gw.name, c)


def test_quiet_ike_tx_is_answered_only_when_refused(net):
    """IKE_TX with DPVPN_F_QUIET (what dpvpnd sends): a message that leaves
    gets no reply, so the channel's queue keeps room for IKE_RX; a refused
    one is answered with the field, as without the flag; the flag on any
    other request is refused."""
    cha, chb = Channel(net.a.dp_sock), Channel(net.b.dp_sock)
    try:
        cha.open()
        chb.open()
        out_a = net.a.ctl("show", "counters")["ike_out"]
        msg = os.urandom(200)
        assert cha.tx(A_OUT, 500, B_OUT, 500, msg, flags=F_QUIET, wait=1) is None
        p = chb.wait_push()
        assert p["data"] == msg and p["remote"] == A_OUT, p
        assert net.a.ctl("show", "counters")["ike_out"] == out_a + 1
        status, err = cha.tx(A_OUT, 500, B_OUT, 500, b"x", over=dict(port=0), flags=F_QUIET)
        assert status < 0 and err.startswith("ike.port: 0 is not an outside port"), err
        status, err = cha.call(IKE_OPEN, flags=F_QUIET)
        assert status < 0 and err.startswith("hdr.flags"), err
        assert cha.pushes == [], cha.pushes      # and no stray reply in between
    finally:
        cha.close()
        chb.close()


@pytest.mark.parametrize("over,want", [
    (dict(port=0), "ike.port: 0 is not an outside port"),
    (dict(port=9), "ike.port: 9 is not an outside port"),
    (dict(lport=501), "ike.local_port"),
    (dict(rport=0), "ike.remote_port"),
    (dict(res=1), "ike.reserved"),
    (dict(len=5), "ike.len"),
    (dict(len=0), "ike.len"),
    (dict(lf=AF6), "ike.local/remote: families"),
    (dict(la=socket.inet_aton("198.19.0.9") + bytes(12)), "ike.local: not port 1's IPv4"),
    (dict(ra=socket.inet_aton("224.0.0.1") + bytes(12)), "ike.remote: not a unicast"),
])
def test_ike_tx_refusals_name_the_field(net, over, want):
    ch = Channel(net.a.dp_sock)
    try:
        ch.open()
        status, msg = ch.tx(A_OUT, 500, B_OUT, 500, b"x" * 10, over=over)
        assert status < 0 and msg.startswith(want), (status, msg)
    finally:
        ch.close()


# DPDK's net_af_packet asks the kernel to reassemble IPv4 fragments before
# its socket sees them (PACKET_FANOUT_FLAG_DEFRAG): gateway B then needs
# ring frames that hold the whole datagram (jumbo slots), while A's outside
# port stays at 1500 and fragments.  The kernel's reassembly is an
# independent check of the fragments A builds.
FRAG_LAB = dict(mtu=9000, replace_a=(("role = outside\nmtu = 9000\n",
                                      "role = outside\nmtu = 1500\n"),))


def test_ike_tx_over_the_port_mtu_is_ip_fragmented():
    """An IKE message over the port's MTU (a certificate chain to a peer
    without RFC 7383) leaves as IPv4 fragments, as a kernel's UDP socket
    would send it: they are reassembled (by B's kernel socket) and B pushes
    the message whole; on the link scapy reassembles the fragments and
    finds the UDP checksum right; the fragments are counted (fragments,
    fragmented) and the counters balance.  Over DPVPN_IKE_MAX (8192) is
    still refused."""
    with lab.Lab(**FRAG_LAB) as net:
        net.ping(count=2)
        cap, pcap = net.capture("gwa-out", name="ikefrag")
        cha, chb = Channel(net.a.dp_sock), Channel(net.b.dp_sock)
        c0 = net.a.ctl("show", "counters")
        try:
            cha.open()
            chb.open()
            msg = os.urandom(3000)
            status, err = cha.tx(A_OUT, 4500, B_OUT, 4500, msg)
            assert status == 0, err
            p = chb.wait_push()
            assert p == dict(port=OUTSIDE, local=B_OUT, lport=4500, remote=A_OUT, rport=4500,
                             data=msg), p
            status, err = cha.tx(A_OUT, 500, B_OUT, 500, b"x" * 9000)
            assert status < 0 and err.startswith("ike.len"), err
        finally:
            cha.close()
            chb.close()
            net.stop_capture(cap)
        c1 = net.a.ctl("show", "counters")
        assert c1["fragments"] - c0["fragments"] == 3, (c0, c1)      # 1480 + 1480 + 52
        assert c1["fragmented"] - c0["fragmented"] == 1
        for gw in (net.a, net.b):
            total, gone = lab.counters_balance(gw.ctl("show", "counters"))
            assert total == gone, gw.name
        from scapy.all import IP, UDP, defragment, rdpcap
        frags = [f for f in rdpcap(pcap) if IP in f and f[IP].src == A_OUT and
                 (f[IP].flags.MF or f[IP].frag)]
    assert len(frags) == 3 and all(len(f[IP]) <= 1500 for f in frags), frags
    whole = [f for f in defragment(frags) if UDP in f]
    assert len(whole) == 1, whole
    u = whole[0][UDP]
    again = IP(bytes(whole[0][IP]))
    del again[UDP].chksum
    assert IP(bytes(again))[UDP].chksum == u.chksum != 0
    assert bytes(u.payload) == b"\0\0\0\0" + msg      # behind the non-ESP marker


def test_ike_tx_ipv6_fragmented():
    """The same over IPv6 (RFC 8200 4.5 Fragment headers; the UDP checksum
    is mandatory there): B's dataplane reassembles (the kernel does not for
    IPv6; jumbo buffers hold the whole datagram) and pushes it whole; scapy
    reassembles the capture and finds the checksum right."""
    a6, b6 = "2001:db8:19::1", "2001:db8:19::2"
    with lab.Lab(ipv6=True, **FRAG_LAB) as n:
        n.ping(count=2)
        cap, pcap = n.capture("gwa-out", name="ikefrag6")
        cha, chb = Channel(n.a.dp_sock), Channel(n.b.dp_sock)
        msg = os.urandom(4000)
        try:
            cha.open()
            chb.open()
            p = None
            for _ in range(2):          # the first may wait for neighbour discovery
                status, err = cha.tx(a6, 500, b6, 500, msg)
                assert status == 0, err
                try:
                    p = chb.wait_push(timeout=3)
                    break
                except AssertionError:
                    pass
            assert p == dict(port=OUTSIDE, local=b6, lport=500, remote=a6, rport=500,
                             data=msg), (p, n.b.ctl("show", "counters"))
            assert n.a.ctl("show", "counters")["fragments"] >= 3
        finally:
            cha.close()
            chb.close()
            n.stop_capture(cap)
        from scapy.all import IPv6, IPv6ExtHdrFragment, UDP, defragment6, rdpcap
        frags = [f[IPv6] for f in rdpcap(pcap) if IPv6ExtHdrFragment in f and f[IPv6].src == a6]
    assert len(frags) >= 3 and all(len(f) <= 1500 for f in frags), frags
    last = frags[-1][IPv6ExtHdrFragment].id         # the try that came through
    whole = IPv6(bytes(defragment6([f for f in frags if f[IPv6ExtHdrFragment].id == last])))
    u = whole[UDP]
    again = IPv6(bytes(whole))
    del again[UDP].chksum
    assert IPv6(bytes(again))[UDP].chksum == u.chksum != 0
    assert bytes(u.payload) == msg


def test_ike_rate_limit_counted():
    with lab.Lab(dp_args_a=("--ike-rate", "50")) as net:
        net.ping(count=2)
        ch = Channel(net.a.dp_sock)
        try:
            ch.open()
            c0 = net.a.ctl("show", "counters")
            t0 = time.monotonic()
            scapy_send(net, 500, b"\x44" * 100, count=600)
            took = time.monotonic() - t0
            time.sleep(0.5)
            while ch._take(0.2) is not None:
                pass
            c1 = net.a.ctl("show", "counters")
        finally:
            ch.close()
        passed = c1["ike_in"] - c0["ike_in"]
        limited = c1["drops"]["ike-limit"] - c0["drops"]["ike-limit"]
        full = c1["drops"]["punt-full"] - c0["drops"]["punt-full"]
        print(f"test_ike_punt: 600 IKE frames in {took:.2f} s at --ike-rate 50: {passed} "
              f"pushed, {limited} ike-limit, {full} punt-full, {len(ch.pushes)} read")
        assert limited > 0
        assert passed == len(ch.pushes)
        assert passed <= 16 + 50 * (took + 0.5) + 5, passed     # bucket depth + rate
        # what the kernel did not drop before A took it is all counted
        assert passed + limited + full <= 600
        total, gone = lab.counters_balance(c1)
        assert total == gone, c1
