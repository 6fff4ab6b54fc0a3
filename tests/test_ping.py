# SPDX-License-Identifier: BSD-3-Clause
"""Issue 13, item 8: the gateway answers ping, and the first packets after a
start are not lost while ARP / Neighbour Discovery resolve their next hop.

The dual-stack lab (lab.py, ipv6=True: no static neighbours, every next hop
is learned), fresh for this module:

    host A ==== [inside gw A outside] ==== [outside gw B inside] ==== host B
    198.18.1.2   198.18.1.1  198.19.0.1     198.19.0.2  198.18.2.1   198.18.2.2
    ...:1::2     ...:1::1    ...:19::1      ...:19::2   ...:2::1     ...:2::2

- The very first `ping -c 3` from host A to host B after the start, IPv4
  and IPv6, gets 3 replies of 3: gateway A holds the first echo while it
  solicits gateway B, gateway B holds the next while it resolves host B
  (before: each dropped one as no-neighbour, and ping got 1 of 3).
- Host A pings gateway A's inside and outside addresses, and host B pings
  gateway A's inside address through the tunnel: echo replies (TTL 64 as
  sent; 63 once gateway B forwarded it), icmp_echo counts them, nothing is
  dropped as to-self.
- A flood of echo requests is limited (1000 a second per worker, 50 at
  once) and every request is counted: answered, echo-limit, or missed by
  the port.

And on net_pcap ports (pcapgw.py, scapy on both sides, no static
neighbour for gateway B): the reply's bytes (addresses swapped, type,
checksum, id, sequence, payload, TTL / hop limit 64; IPv4 options not
echoed), an echo in cleartext to the outside port's address, one sealed
into the tunnel and answered into it, packets held while gateway B is
resolved and sent in order once its ARP reply comes, and a next hop that
never answers: 4 held, the rest no-neighbour, the 4 neigh-timeout after
3 s and 2 or 3 ARP requests.
"""
import os
import sys
import time

import pytest
from scapy.all import ARP, ICMP, IP, UDP, Ether, Raw
from scapy.layers.inet6 import ICMPv6EchoReply, ICMPv6EchoRequest, IPv6
from scapy.layers.ipsec import ESP

import lab
import pcapgw
from pcapgw import GW_A, GW_B, HOST_A, HOST_B, KEY_AB, KEY_BA, MAC_GW_B, MAC_HOST_A, MAC_IN, \
    MAC_OUT, sa

pytestmark = pytest.mark.operator

IN4, IN6 = "198.18.1.1", "2001:db8:18:1::1"         # gateway A's inside port
OUT4, OUT6 = "198.19.0.1", "2001:db8:19::1"         # gateway A's outside port
FAR4, FAR6 = "198.18.2.2", "2001:db8:18:2::2"       # host B
FLOOD = 2000
ECHO_RATE, ECHO_BURST = 1000, 50                    # dataplane/dp.h


def ping(net, ns, dst, count=3):
    """ping -c count; returns (replies, ttls seen)."""
    r = net.ns(ns, "ping", "-c", str(count), "-i", "0.2", "-W", "2", dst, check=False,
               timeout=30)
    ttls = [int(w[4:]) for w in r.stdout.split() if w.startswith("ttl=")]
    return len(ttls), ttls


@pytest.fixture(scope="module")
def net():
    with lab.Lab(ipv6=True) as n:
        # before anything else crossed the lab: every next hop still unknown
        n.first = {dst: ping(n, n.ns_a, dst) for dst in (FAR4, FAR6)}
        n.first_counters = {gw.name: gw.ctl("show", "counters") for gw in n.gws}
        yield n


def test_first_pings_after_start_all_answered(net):
    for dst, (got, _) in net.first.items():
        assert got == 3, f"the first ping -c 3 to {dst}: {got} replies"
    for name, c in net.first_counters.items():
        assert c["drops"]["no-neighbour"] == 0, (name, c["drops"])
        assert c["neigh_queued"] >= 1, (name, c)     # each held at least one


def counters_delta(gw, before):
    c = gw.ctl("show", "counters")
    return c, {k: c["drops"][k] - before["drops"][k] for k in c["drops"]}


def test_ping_gateway_from_inside(net):
    before = net.a.ctl("show", "counters")
    for dst in (IN4, IN6, OUT4, OUT6):
        got, ttls = ping(net, net.ns_a, dst)
        assert got == 3 and set(ttls) == {64}, (dst, ttls)
    c, drops = counters_delta(net.a, before)
    assert c["icmp_echo"] - before["icmp_echo"] == 12
    assert drops["to-self"] == 0 and drops["echo-limit"] == 0, drops


def test_ping_gateway_through_the_tunnel(net):
    before = net.a.ctl("show", "counters")
    for dst in (IN4, IN6):
        got, ttls = ping(net, net.ns_b, dst)
        # sent with 64, one less after gateway B forwarded the decrypted reply
        assert got == 3 and set(ttls) == {63}, (dst, ttls)
    c, drops = counters_delta(net.a, before)
    assert c["icmp_echo"] - before["icmp_echo"] == 6
    assert c["decrypted"] - before["decrypted"] >= 6 and c["encrypted"] - before["encrypted"] >= 6
    assert drops["to-self"] == 0 and drops["no-neighbour"] == 0, drops


FLOODER = r"""
import socket, sys, time
from scapy.all import ICMP, IP, Ether, Raw, get_if_hwaddr
n, dst_mac = int(sys.argv[1]), sys.argv[2]
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
s.bind(("eth0", 0))
frames = [bytes(Ether(src=get_if_hwaddr("eth0"), dst=dst_mac) /
                IP(src="198.18.1.2", dst="198.18.1.1") / ICMP(id=0x4242, seq=i) / Raw(b"f" * 56))
          for i in range(n)]
t0 = time.monotonic()
for k in range(0, n, 100):          # bursts of 100: the port's ring keeps up
    for f in frames[k:k + 100]:
        s.send(f)
    time.sleep(0.002)
print(time.monotonic() - t0)
"""


def test_flood_limited_and_counted(net):
    gw_mac = net.a.ctl("show", "ports")["ports"][0]["mac"]
    time.sleep(0.1)                 # the bucket full again
    before = net.a.ctl("show", "counters")
    missed0 = net.a.ctl("show", "ports")["ports"][0]["rx_missed"]
    r = net.ns(net.ns_a, sys.executable, "-c", FLOODER, str(FLOOD), gw_mac, timeout=60)
    took = float(r.stdout.split()[-1])

    def settled():
        c = net.a.ctl("show", "counters")
        return c["icmp_echo"] - before["icmp_echo"] + \
            c["drops"]["echo-limit"] - before["drops"]["echo-limit"] + \
            net.a.ctl("show", "ports")["ports"][0]["rx_missed"] - missed0 >= FLOOD
    lab.wait_for(settled, 10, "every flood request counted")
    c, drops = counters_delta(net.a, before)
    missed = net.a.ctl("show", "ports")["ports"][0]["rx_missed"] - missed0
    echo = c["icmp_echo"] - before["icmp_echo"]
    assert echo + drops["echo-limit"] + missed == FLOOD, (echo, drops["echo-limit"], missed)
    assert drops["echo-limit"] > 0
    # one worker: at most its burst plus the rate over the time the flood took
    assert echo <= ECHO_BURST + ECHO_RATE * (took + 0.5), (echo, took)
    print(f"flood: {FLOOD} requests in {took:.3f} s: {echo} answered, "
          f"{drops['echo-limit']} echo-limit, {missed} missed")


def test_counters_balance(net):
    for gw in net.gws:
        lab.wait_for(lambda: gw.ctl("show", "counters")["neigh_held"] == 0, 5, "nothing held")
        got, gone = lab.counters_balance(gw.ctl("show", "counters"))
        assert got == gone, gw.name


# ---- net_pcap: the reply's bytes, the tunnel, the hold queue ----

UNANSWERED = "198.18.1.3"       # an inside host that never answers ARP
PCAP_CONF_TAIL = """
[tunnel to-b6]
local = 198.19.0.1
remote = 198.19.0.2
local-ts = 2001:db8:18:1::/64
remote-ts = 2001:db8:18:2::/64
cipher = aes128-gcm
out-spi = 0x00001006
out-key = 0x0123456789abcdef0123456789abcdef01020304
in-spi = 0x00002006
in-key = 0xfedcba9876543210fedcba987654321005060708
"""
HOST_A6_NEIGH = f"""
[neighbor host-a6]
port = inside
address = 2001:db8:18:1::2
mac = {MAC_HOST_A}

# outside hosts with known MACs: an answer to them would leave at once
[neighbor out9]
port = outside
address = 198.19.0.9
mac = 02:00:00:00:0b:09

[neighbor out9-6]
port = outside
address = 2001:db8:19::9
mac = 02:00:00:00:0b:09
"""


def echo4(src, dst, i, **kw):
    return IP(src=src, dst=dst, ttl=kw.pop("ttl", 60), **kw) / \
        ICMP(type=8, id=0x1234, seq=i) / Raw(bytes(range(i, i + 40)))


def echo6(src, dst, i):
    return IPv6(src=src, dst=dst, hlim=60) / ICMPv6EchoRequest(id=0x4321, seq=i) / \
        Raw(bytes(range(i, i + 40)))


@pytest.fixture(scope="module")
def pcap(tmp_path_factory):
    to_b = sa(0x2001, KEY_BA, GW_B, GW_A)           # gateway B's outbound SA
    to_b6 = sa(0x2006, KEY_BA, GW_B, GW_A)
    host = lambda p: Ether(src=MAC_HOST_A, dst=MAC_IN) / p      # noqa: E731
    peer = lambda p: Ether(src=MAC_GW_B, dst=MAC_OUT) / p       # noqa: E731
    inside = [
        host(echo4(HOST_A, IN4, 1)),
        host(echo6("2001:db8:18:1::2", IN6, 2)),
        host(echo4(HOST_A, GW_A, 3)),                   # the outside port's address
        host(echo4(HOST_A, IN4, 4, options=b"\x01\x01\x01\x00")),    # options: not echoed
        host(IP(src=HOST_A, dst=IN4) / UDP(sport=9, dport=9)),      # to-self
        host(echo4(GW_A, IN4, 9)),          # from one of our own addresses: to-self
        # from sources that route out the outside port: no cleartext answer there
        host(echo4("198.19.0.9", IN4, 10)),
        host(echo6("2001:db8:19::9", IN6, 11)),
        host(IP(src=HOST_A, dst=HOST_B, id=77) / UDP(sport=7, dport=7) / Raw(b"held")),
    ]
    outside = [
        # held with the packet above: gateway B is not known yet
        peer(echo4(GW_B, GW_A, 5)),                     # cleartext, the outside address
        peer(to_b.encrypt(echo4("198.18.2.2", IN4, 6), seq_num=1)),
        peer(to_b6.encrypt(echo6("2001:db8:18:2::2", IN6, 7), seq_num=1)),
        peer(echo4(GW_B, IN4, 8)),                      # cleartext to an inside address
        peer(ARP(op=2, hwsrc=MAC_GW_B, psrc=GW_B, hwdst=MAC_OUT, pdst=GW_A)),
        # to a host that never answers: 4 held, 2 no-neighbour, then 4 neigh-timeout
        *[peer(to_b.encrypt(IP(src="198.18.2.2", dst=UNANSWERED, id=100 + i) /
                            UDP(sport=5, dport=5), seq_num=2 + i)) for i in range(6)],
    ]
    conf = open(os.path.join(lab.CONFIGS, "lab-a.conf")).read()
    conf = conf.replace("address = 198.18.1.1/24", f"address = 198.18.1.1/24, {IN6}/64")
    conf = conf.replace("address = 198.19.0.1/24", "address = 198.19.0.1/24, 2001:db8:19::1/64")
    conf += PCAP_CONF_TAIL
    t0 = time.monotonic()
    state = pcapgw.run(str(tmp_path_factory.mktemp("ping")), inside, outside, conf=conf,
                       neighbours=pcapgw.NEIGHBOURS.split("[neighbor gw-b]")[0] + HOST_A6_NEIGH,
                       settle=lambda gw: lab.wait_for(
                           lambda: gw.ctl("show", "counters")["drops"]["neigh-timeout"] >= 4,
                           10, "the unanswered next hop given up"))
    state["took"] = time.monotonic() - t0
    return state


def replies(frames, layer):
    return [p for p in frames if layer in p]


def test_pcap_echo_replies_built_in_place(pcap):
    out = {p[ICMP].seq: p for p in replies(pcap["out0"], ICMP)}
    for seq, src in ((1, IN4), (3, GW_A), (4, IN4)):
        p = out[seq]
        assert p[Ether].src == MAC_IN and p[Ether].dst == MAC_HOST_A
        assert (p[IP].src, p[IP].dst, p[IP].ttl, p[IP].ihl) == (src, HOST_A, 64, 5)
        assert (p[ICMP].type, p[ICMP].code, p[ICMP].id) == (0, 0, 0x1234)
        assert bytes(p[Raw]) == bytes(range(seq, seq + 40))
        raw = IP(bytes(p[IP]))
        del raw.chksum, raw[ICMP].chksum
        assert IP(bytes(raw)).chksum == p[IP].chksum
        assert IP(bytes(raw))[ICMP].chksum == p[ICMP].chksum
    six = replies(pcap["out0"], ICMPv6EchoReply)
    assert len(six) == 1
    p = six[0]
    assert (p[IPv6].src, p[IPv6].dst, p[IPv6].hlim) == (IN6, "2001:db8:18:1::2", 64)
    assert (p[ICMPv6EchoReply].id, p[ICMPv6EchoReply].seq) == (0x4321, 2)
    want = p[ICMPv6EchoReply].cksum
    del p[ICMPv6EchoReply].cksum
    assert Ether(bytes(p))[ICMPv6EchoReply].cksum == want


def test_pcap_echo_on_the_outside_and_through_the_tunnel(pcap):
    out1 = pcap["out1"]
    clear = replies([p for p in out1 if ESP not in p], ICMP)
    assert [(p[IP].src, p[IP].dst, p[ICMP].type, p[ICMP].seq) for p in clear] == \
        [(GW_A, GW_B, 0, 5)]                            # not the one to the inside address
    esp = [p for p in out1 if ESP in p]
    plain = {}
    for p in esp:
        spi = p[ESP].spi
        q = sa(spi, KEY_AB, GW_A, GW_B).decrypt(IP(bytes(p[IP])))
        plain[(spi, q.payload.name)] = q
    r4 = plain[(0x1001, "ICMP")]
    assert (r4[IP].src, r4[IP].dst, r4[IP].ttl, r4[ICMP].type, r4[ICMP].seq) == \
        (IN4, "198.18.2.2", 64, 0, 6)
    r6 = plain[(0x1006, "ICMPv6 Echo Reply")]
    assert (r6[IPv6].src, r6[IPv6].dst, r6[IPv6].hlim, r6[ICMPv6EchoReply].seq) == \
        (IN6, "2001:db8:18:2::2", 64, 7)


def test_pcap_held_then_sent_in_order(pcap):
    out1 = pcap["out1"]
    # everything for gateway B waited for its ARP reply, then left in the order held
    # (the replies were held too, or sent after it if the ARP reply came first)
    first = [p for p in out1 if ARP not in p][:4]
    assert [p[Ether].dst for p in first] == [MAC_GW_B] * 4
    held = sa(0x1001, KEY_AB, GW_A, GW_B).decrypt(IP(bytes(first[0][IP])))
    assert held[IP].id == 77 and bytes(held[Raw]) == b"held"
    assert sorted(ESP in p for p in first[1:]) == [False, True, True]
    # asked for unless the main lcore had gateway B's ARP reply first
    asked = [p for p in out1 if ARP in p and p[ARP].op == 1 and p[ARP].pdst == GW_B]
    assert len(asked) <= 1


def test_pcap_unanswered_next_hop(pcap):
    c = pcap["counters"]
    assert c["drops"]["no-neighbour"] == 2 and c["drops"]["neigh-timeout"] == 4, c["drops"]
    asked = [p for p in pcap["out0"] if ARP in p and p[ARP].pdst == UNANSWERED]
    assert 2 <= len(asked) <= 3, len(asked)        # one a second for 3 s
    assert not [p for p in pcap["out0"] if IP in p and p[IP].dst == UNANSWERED]


def test_pcap_no_answer_out_of_the_outside_port(pcap):
    """An inside host whose source routes out the outside port (spoofed, or
    misrouted) gets no answer there: the gateway would carry its words past
    the policies in clear (found by fuzz_ip: an echo reply on the outside link)."""
    for frames in (pcap["out0"], pcap["out1"]):
        assert not [p for p in frames if ICMP in p and p[ICMP].seq == 10]
        assert not [p for p in frames if ICMPv6EchoReply in p and p[ICMPv6EchoReply].seq == 11]
        assert not [p for p in frames if IP in p and p[IP].dst == "198.19.0.9"]


def test_pcap_counted(pcap):
    c = pcap["counters"]
    d = {k: v for k, v in c["drops"].items() if v}
    assert d == {"to-self": 2, "not-local": 1, "no-neighbour": 2, "neigh-timeout": 4,
                 "answer-outside": 2}, d
    assert c["icmp_echo"] == 9 and c["neigh_held"] == 0
    # 1 to 4 for gateway B (the replies, unless it was resolved by then), 4 for the silent host
    assert 5 <= c["neigh_queued"] <= 8, c["neigh_queued"]
    got, gone = lab.counters_balance(c)
    assert got == gone
