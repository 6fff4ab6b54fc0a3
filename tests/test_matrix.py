# SPDX-License-Identifier: BSD-3-Clause
"""The scapy oracle matrix: every cipher x {4o4, 6o6, 4o6, 6o4} x {plain
ESP, UDP-encapsulated} x {ESN off, ESN on across 2^32}, both directions, in
one run of the real dataplane (net_pcap ports, configured by the real dpvpnd).

Each combination is its own tunnel with its own random keys, SPIs and inner
prefixes (10.K.1.0/24 or fd00:K:1::/64 behind us, 10.K.2.0/24 or
fd00:K:2::/64 behind the peer), so one dataplane carries all of them at once
(64 IPv4 and 64 IPv6 policies: both rte_acl classifiers) and a packet that
went through the wrong SA would not verify.  Outbound: clear packets for every tunnel go in on
the inside port; each ESP packet that comes out is opened by the independent
peer (tests/helpers/esp_oracle.py).  Inbound: the peer seals packets for every
tunnel; what comes out of the inside port must be the inner packets, TTL
one less.  ESN tunnels start their outbound counter just below 2^32
(out-seq-start) and the peer sends across 2^32 too; one non-ESN tunnel
starts there as well and must stop at 2^32 - 1 (seq-exhausted).
"""
import pytest
from scapy.all import IP, UDP, Ether, Raw
from scapy.layers.inet6 import IPv6

import pcapgw
from esp_oracle import CIPHERS, SA, esp_of, tunnel_conf
from pcapgw import GW_A, GW_B, MAC_GW_B, MAC_HOST_A, MAC_IN, MAC_OUT, forwarded, inner

GW_A6, GW_B6 = "2001:db8:19::1", "2001:db8:19::2"
HOST_A6 = "2001:db8:18:1::2"
FAMILIES = [(4, 4), (6, 6), (4, 6), (6, 4)]     # (inner, outer)

pytestmark = pytest.mark.esp

BURST = 32              # net_pcap hands the dataplane 32 packets per burst
NEAR = 0xfffffffe       # out-seq-start of the ESN tunnels: sends 2^32-1, 2^32, ...
# What the peer sends on an ESN tunnel: a jump to 2^31 first, alone in its
# burst (the high half is inferred from the window as it stood before the
# burst), then across 2^32.  No low half of 0 (scapy reads it as "not given").
ESN_IN = [0x80000000, 0xffffffff, (1 << 32) + 1, (1 << 32) + 2]
PLAIN_IN = [1, 2, 3]
N_OUT = 3               # clear packets per tunnel


def inner6(i, size, src, dst):
    pad = max(0, size - 48)
    return IPv6(src=src, dst=dst, hlim=64, tc=0x28) / UDP(sport=1000 + i, dport=5000) / \
        Raw(bytes((i + k) & 0xff for k in range(pad)))


def forwarded_any(pkt):
    if isinstance(pkt, IPv6):
        p = IPv6(bytes(pkt))
        p.hlim -= 1
        return bytes(p)
    return forwarded(pkt)


class Tunnel:
    def __init__(self, k, cipher, udp, esn, seq_start=0, fam=(4, 4)):
        self.k, self.cipher, self.udp, self.esn = k, cipher, udp, esn
        self.seq_start, self.fam = seq_start, fam
        self.name = f"m{k}"
        if fam[0] == 4:
            self.ts = (f"10.{k}.1.0/24", f"10.{k}.2.0/24")
            self.ours = (f"10.{k}.1.2", f"10.{k}.2.2")  # host behind us, behind the peer
        else:
            self.ts = (f"fd00:{k:x}:1::/64", f"fd00:{k:x}:2::/64")
            self.ours = (f"fd00:{k:x}:1::2", f"fd00:{k:x}:2::2")
        self.gw = (GW_A, GW_B) if fam[1] == 4 else (GW_A6, GW_B6)
        self.out = SA(cipher, 0x10000 + k, *self.gw, udp, esn)      # we send, peer opens
        self.inb = SA(cipher, 0x20000 + k, *reversed(self.gw), udp, esn)  # peer sends

    def conf(self):
        return tunnel_conf(self.name, self.out, self.inb, *self.ts,
                           f"out-seq-start = {self.seq_start:#x}\n" if self.seq_start else "")

    def _inner(self, i, size, src, dst):
        return (inner if self.fam[0] == 4 else inner6)(i, size, src, dst)

    def clear(self, i):
        return self._inner(i, 60 + 97 * i, self.ours[0], self.ours[1])

    def back(self, i):
        return self._inner(i, 70 + 89 * i, self.ours[1], self.ours[0])

    def label(self):
        return (f"{self.name} {self.cipher} {self.fam[0]}o{self.fam[1]} udp={self.udp} "
                f"esn={self.esn}")

    def in_seqs(self):
        return ESN_IN if self.esn else PLAIN_IN


BASE = pcapgw.ports_conf("198.18.1.1/24, 2001:db8:18:1::1/64", f"{GW_A}/24, {GW_A6}/64") + f"""
[route behind-us]
dst = 10.0.0.0/8
port = inside
via = {pcapgw.HOST_A}

[route behind-us6]
dst = fd00::/16
port = inside
via = {HOST_A6}

[neighbor host-a6]
port = inside
address = {HOST_A6}
mac = {MAC_HOST_A}

[neighbor gw-b6]
port = outside
address = {GW_B6}
mac = {MAC_GW_B}
"""


def tunnels():
    out, k = [], 1
    for fam in FAMILIES:
        for cipher in CIPHERS:
            for udp in (False, True):
                for esn in (False, True):
                    out.append(Tunnel(k, cipher, udp, esn, NEAR if esn else 0, fam))
                    k += 1
    # a non-ESN SA two numbers before the end of its 32-bit space
    out.append(Tunnel(k, "aes128-cbc-sha1", False, False, NEAR))
    return out


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    tuns = tunnels()
    conf = BASE + "".join(t.conf() for t in tuns)
    clear = [(t, i, t.clear(i)) for i in range(N_OUT) for t in tuns]
    first, rest = [], []
    for t in tuns:
        for n, seq in enumerate(t.in_seqs()):
            pkt = t.inb.seal(t.back(n), seq)
            (first if t.esn and n == 0 else rest).append((t, n, pkt))
    fillers = [IP(src=GW_B, dst=GW_A) / UDP(sport=9, dport=9)
               for _ in range(-len(first) % BURST)]
    outside = [p for _, _, p in first] + [bytes(f) for f in fillers] + [p for _, _, p in rest]
    state = pcapgw.run(str(tmp_path_factory.mktemp("matrix")),
                       [Ether(src=MAC_HOST_A, dst=MAC_IN) / p for _, _, p in clear],
                       [Ether(src=MAC_GW_B, dst=MAC_OUT) / (IP(p) if p[0] >> 4 == 4 else IPv6(p))
                        for p in outside],
                       conf=conf)
    state.update(tuns=tuns, clear=clear, inbound=first + rest, fillers=len(fillers))
    return state


def outer_proto(raw):
    return raw[9] if raw[0] >> 4 == 4 else raw[6]


def test_outbound_opened_by_the_peer(run):
    """Every tunnel's packets, in order, each opened with that tunnel's keys."""
    by_spi = {}
    for pkt in run["out1"]:
        raw = bytes(pkt.payload)
        by_spi.setdefault(int.from_bytes(esp_of(raw)[:4], "big"), []).append(raw)
    bad = []
    for t in run["tuns"]:
        got = by_spi.pop(t.out.spi, [])
        sent = [p for tt, _, p in run["clear"] if tt is t]
        if t.seq_start and not t.esn:
            sent = sent[:1]         # 2^32 - 1 is the last number it may use
        if len(got) != len(sent):
            bad.append(f"{t.label()}: {len(got)} packets out, {len(sent)} expected")
            continue
        for n, (raw, orig) in enumerate(zip(got, sent)):
            try:
                assert raw[0] >> 4 == t.fam[1]
                assert (outer_proto(raw) == 17) == t.udp
                if t.udp and t.fam[1] == 6:     # UDP over IPv6 carries a checksum
                    p = IPv6(raw)
                    want = p[UDP].chksum
                    del p[UDP].chksum
                    assert want == IPv6(bytes(p))[UDP].chksum != 0
                assert t.out.open(raw, t.seq_start + n + 1) == forwarded_any(orig)
            except Exception as e:      # noqa: BLE001 - collect, then fail once
                bad.append(f"{t.label()} #{n}: {e!r}")
    assert not by_spi and not bad, bad


def test_cbc_ivs_unpredictable(run):
    """RFC 3602: CBC IVs are random, so none repeats and none is a counter."""
    ivs = []
    for pkt in run["out1"]:
        esp = esp_of(bytes(pkt.payload))
        spi = int.from_bytes(esp[:4], "big")
        t = next(t for t in run["tuns"] if t.out.spi == spi)
        if "cbc" in t.cipher:
            ivs.append(esp[8:24])
    assert len(ivs) > 30 and len(set(ivs)) == len(ivs)
    assert all(iv[:8] != bytes(8) for iv in ivs)


def test_inbound_decrypted_for_every_tunnel(run):
    got = {bytes(p.payload) for p in run["out0"]}
    want = {t: [forwarded_any(t.back(n)) for n in range(len(t.in_seqs()))] for t in run["tuns"]}
    missing = [f"{t.label()}: #{n}"
               for t, pkts in want.items() for n, p in enumerate(pkts) if p not in got]
    assert not missing, missing
    assert len(run["out0"]) == sum(len(v) for v in want.values())


def test_counters(run):
    c = run["counters"]
    drops = {k: v for k, v in c["drops"].items() if v}
    assert drops == {"not-esp": run["fillers"], "seq-exhausted": N_OUT - 1} or \
        (run["fillers"] == 0 and drops == {"seq-exhausted": N_OUT - 1}), drops
    assert c["encrypted"] == len(run["out1"]) and c["decrypted"] == len(run["out0"])
    inbound = [s for s in run["sas"] if s["dir"] == "in"]
    for t in run["tuns"]:
        s = next(s for s in inbound if s["spi"] == f"{t.inb.spi:#010x}")
        assert s["seq"] == t.in_seqs()[-1] and s["cipher"] == t.cipher


def test_null_is_flagged(run):
    for s in run["sas"]:
        assert s["encrypted"] is (s["cipher"] != "null-sha256")
    nulls = [t for t in run["tuns"] if t.cipher == "null-sha256"]
    for t in nulls:
        assert f"WARNING: tunnel {t.name} uses null-sha256: its traffic is NOT encrypted" \
            in run["log"]
