#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""fuzz/make_seeds.py: (re)write the seed corpora fuzz/corpus/TARGET/seed-*.

Each seed is an input in the format its target's comment describes.  The
ESP ones are sealed here, with python3-cryptography, under the keys of the
fixed SA set of fuzz/fuzz_dp.c (made-up, public keys; the table below must
match it), so they get past the ICV check: an implementation independent of
the dataplane's.  Packets are built with scapy.  Files named regress-* (inputs
that once found a bug) and peer-* (messages a real peer sent, e.g. strongSwan's
IKE_SA_INIT taken off the IKE channel by tests/test_ike_swan.py with
DPVPN_SAVE_IKE=FILE) are kept; seed-* files are replaced.

    /usr/bin/python3 fuzz/make_seeds.py [TARGET...]
"""
import ctypes
import hashlib
import hmac
import os
import struct
import sys
from ipaddress import ip_address

from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM, ChaCha20Poly1305
from scapy.all import (ARP, ICMP, IP, TCP, UDP, Ether, ICMPv6EchoRequest,
                       ICMPv6ND_NA, ICMPv6ND_NS, ICMPv6NDOptDstLLAddr,
                       ICMPv6NDOptSrcLLAddr, IPv6, Raw, fragment, fragment6,
                       IPv6ExtHdrFragment)

HERE = os.path.dirname(os.path.abspath(__file__))
CORPUS = os.path.join(HERE, 'corpus')

OUR_IN_MAC = '02:00:00:00:01:00'
OUR_OUT_MAC = '02:00:00:00:01:01'
NONE_MAC = '02:00:00:00:01:02'
HOST_MAC = '02:00:00:00:0a:02'
PEER_MAC = '02:00:00:00:0b:02'
OUT4, OUT6 = '198.19.0.1', '2001:db8:ff::1'
IN4, IN6 = '198.18.1.1', '2001:db8:1::1'
HOST4, HOST6 = '198.18.1.2', '2001:db8:1::2'

# name: key_len, auth_key_len, iv_len, icv_len, block, aead (include/dpvpn_alg.h)
ALGS = {
    'aes128-gcm': (16, 0, 8, 16, 4, True),
    'aes256-gcm': (32, 0, 8, 16, 4, True),
    'aes128-cbc-sha1': (16, 20, 16, 12, 16, False),
    'aes256-cbc-sha256': (32, 32, 16, 16, 16, False),
    'chacha20-poly1305': (32, 0, 8, 16, 4, True),
    'null-sha256': (0, 32, 0, 16, 4, False),
    'aes128-cbc-sha256': (16, 32, 16, 16, 16, False),
}
ALG_IDS = {'aes128-gcm': 1, 'aes256-gcm': 2, 'aes128-cbc-sha1': 3, 'aes256-cbc-sha1': 4,
           'aes128-cbc-sha256': 5, 'aes256-cbc-sha256': 6, 'chacha20-poly1305': 7,
           'null-sha256': 8}

# The fixed SA set: fuzz/fuzz_dp.c, defs[] (same order).
TUNNELS = [
    dict(alg='aes128-gcm', peer='198.19.0.2', rts='198.18.2.0'),
    dict(alg='aes256-gcm', udp=4500, esn=True, peer='198.19.0.2', rts='198.18.3.0'),
    dict(alg='aes128-cbc-sha1', peer='2001:db8:ff::2', rts='2001:db8:2::'),
    dict(alg='aes256-cbc-sha256', udp=4501, peer='198.19.0.3', rts='2001:db8:3::'),
    dict(alg='chacha20-poly1305', udp=4500, esn=True, peer='2001:db8:ff::3',
         rts='198.18.4.0'),
    dict(alg='null-sha256', peer='198.19.0.2', rts='198.18.5.0'),
    dict(alg='aes128-cbc-sha256', esn=True, peer='198.19.0.2', rts='198.18.6.0'),
    dict(alg='aes128-gcm', peer='198.19.0.2', rts='198.18.7.0'),
    # route-based (tunnel interface 0, rpf loose): IPv4 selectors narrowed to
    # rts, IPv6 0/0; routes 198.18.9.0/24 and 2001:db8:9::/48 lead into it
    dict(alg='aes128-gcm', peer='198.19.0.4', rts='198.18.9.0', route=True),
]


def keys(i, inbound):
    """The keys sa_cfg() in fuzz_dp.c makes up for tunnel i."""
    key = bytes((i * 41 + k * 7 + (1 if inbound else 0x81)) & 0xff for k in range(32))
    auth = bytes((i * 13 + k * 3 + (5 if inbound else 0x85)) & 0xff for k in range(32))
    salt = bytes((0xc0 + i * 4 + k + (0 if inbound else 0x20)) & 0xff for k in range(4))
    return key, auth, salt


def v6(addr):
    return ':' in addr


def host_behind_peer(i, last=9):
    rts = TUNNELS[i]['rts']
    return rts[:-1] + str(last) if not v6(rts) else rts + str(last)


def inner_packet(i, payload=b'hello, dpvpn', l4=None, **kw):
    """A packet from a host behind tunnel i's peer to our host: what the peer seals."""
    src = host_behind_peer(i)
    if v6(src):
        return bytes(IPv6(src=src, dst=HOST6, hlim=kw.get('ttl', 64), tc=kw.get('tos', 0)) /
                     (l4 or UDP(sport=1234, dport=5678)) / Raw(payload))
    return bytes(IP(src=src, dst=HOST4, ttl=kw.get('ttl', 64), tos=kw.get('tos', 0)) /
                 (l4 or UDP(sport=1234, dport=5678)) / Raw(payload))


def esp_seal(i, seq, inner, nh=None, iv=None, bad_pad=False):
    """ESP (RFC 4303) for tunnel i's inbound SA: header, IV, ciphertext, ICV."""
    t = TUNNELS[i]
    key_len, auth_len, iv_len, icv_len, block, aead = ALGS[t['alg']]
    key, auth, salt = keys(i, True)
    key, auth = key[:key_len], auth[:auth_len]
    if nh is None:
        nh = 41 if v6(t['rts']) else 4
    pad = -(len(inner) + 2) % block
    padding = bytearray(range(1, pad + 1))
    if bad_pad and pad:
        padding[-1] ^= 0x5a
    pt = inner + bytes(padding) + bytes([pad, nh])
    spi = 0x2001 + i
    hdr = struct.pack('>II', spi, seq & 0xffffffff)
    hi = struct.pack('>I', seq >> 32)
    esn = t.get('esn', False)
    if aead:
        iv = iv or struct.pack('>Q', seq)
        aad = struct.pack('>I', spi) + hi + hdr[4:] if esn else hdr
        box = ChaCha20Poly1305(key) if t['alg'].startswith('chacha') else AESGCM(key)
        return hdr + iv + box.encrypt(salt + iv, pt, aad)
    if iv_len:
        iv = iv or bytes(range(0x40, 0x40 + iv_len))
        enc = Cipher(algorithms.AES(key), modes.CBC(iv)).encryptor()
        ct = enc.update(pt) + enc.finalize()
    else:
        iv, ct = b'', pt
    digest = hashlib.sha1 if t['alg'].endswith('sha1') else hashlib.sha256
    icv = hmac.new(auth, hdr + iv + ct + (hi if esn else b''), digest).digest()[:icv_len]
    return hdr + iv + ct + icv


def outer(i, esp, udp=None, tos=0):
    """The frame the peer of tunnel i sends: Ethernet, IP, maybe UDP, ESP."""
    t = TUNNELS[i]
    udp = t.get('udp', 0) if udp is None else udp
    l4 = UDP(sport=4500, dport=udp) / Raw(esp) if udp else Raw(esp)
    if v6(t['peer']):
        ip = IPv6(src=t['peer'], dst=OUT6, tc=tos, nh=17 if udp else 50) / l4
    else:
        ip = IP(src=t['peer'], dst=OUT4, tos=tos, proto=17 if udp else 50) / l4
    return Ether(dst=OUR_OUT_MAC, src=PEER_MAC) / ip


def rec(kind, body):
    body = bytes(body)
    return bytes([kind]) + struct.pack('>H', len(body)) + body


def sealed(i, inner, flags=0x03, tos=0, frag=0, seq=1, hi=0, nh=0, iv=b'', flush=False,
           kind=0):
    """A record the target seals itself (fuzz_esp_in.c's kind 2); flush: a burst ends."""
    body = (bytes([i, flags, tos, frag]) + struct.pack('>I', seq) + bytes([hi, nh]) +
            iv.ljust(16, b'\0')[:16] + inner)
    return rec(kind | (6 if flush else 2), body)


def write(target, name, data):
    d = os.path.join(CORPUS, target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, 'seed-' + name), 'wb') as f:
        f.write(data)


# ---- fuzz_esp_in ----

def esp_in_seeds():
    out = {}
    for i, t in enumerate(TUNNELS):
        inner = inner_packet(i)
        out['valid-t%d' % i] = rec(0, outer(i, esp_seal(i, 1, inner)))
        out['sealed-t%d' % i] = sealed(i, inner)
        # a burst: in order, a replay, one left of the window, one far ahead
        out['window-t%d' % i] = b''.join([
            rec(0, outer(i, esp_seal(i, 5, inner))),
            rec(0, outer(i, esp_seal(i, 5, inner))),
            rec(0, outer(i, esp_seal(i, 3, inner))),
            rec(4, outer(i, esp_seal(i, 5000, inner))),
            rec(0, outer(i, esp_seal(i, 4, inner))),
        ])
        out['sealed-frag-t%d' % i] = sealed(i, inner_packet(i, b'x' * 900), flags=0x07,
                                            frag=40)
        out['sealed-frag-rev-t%d' % i] = sealed(i, inner_packet(i, b'y' * 600),
                                                flags=0x0f, frag=20)
        out['bad-pad-t%d' % i] = rec(0, outer(i, esp_seal(i, 2, inner, bad_pad=True)))
        out['bad-nh-t%d' % i] = sealed(i, inner, flags=0x13, nh=17)
        out['encap-mismatch-t%d' % i] = sealed(i, inner, flags=0x23)
    # ESN: numbers across 2^32 (tunnels 1, 4, 6)
    for i in (1, 4, 6):
        inner = inner_packet(i)
        # up the first 2^32 in two jumps, across, back into the window, replayed,
        # each its own burst (a burst's numbers are inferred from the window before it)
        out['esn-wrap-t%d' % i] = b''.join([
            sealed(i, inner, seq=1000, flush=True),
            sealed(i, inner, seq=0x80000000, flush=True),
            sealed(i, inner, seq=0xfffffff0, flush=True),
            sealed(i, inner, seq=5, hi=1, flush=True),
            rec(4, outer(i, esp_seal(i, (1 << 32) + 6, inner))),
            sealed(i, inner, seq=0xfffffff1, flush=True),
            sealed(i, inner, seq=0xfffffff0, flush=True),
            sealed(i, inner, seq=7, hi=2, flush=True),
        ])
    # the inner packet: selectors, ECN, TTL, length, MSS clamping, lifetimes
    out['policy-mismatch'] = sealed(0, bytes(IP(src='203.0.113.5', dst=HOST4) / UDP()))
    out['ecn-ce-not-ect'] = sealed(0, inner_packet(0), tos=3)
    out['ecn-ce-ect0'] = sealed(0, inner_packet(0, tos=2), tos=3)
    out['ecn6-ce-not-ect'] = sealed(2, inner_packet(2), tos=3)
    out['ecn6-ce-ect0'] = sealed(2, inner_packet(2, tos=2), tos=3)
    out['ecn-ect1-ect0'] = sealed(4, inner_packet(4, tos=2), tos=1)
    out['inner-ttl-1'] = sealed(0, inner_packet(0, ttl=1))
    out['inner6-hop-1'] = sealed(2, inner_packet(2, ttl=1))
    out['inner-bad-length'] = sealed(0, inner_packet(0) + b'junk', flags=0x01)
    out['inner-not-ip'] = sealed(0, b'\x00' * 40, flags=0x01)
    # RFC 4303 2.7 TFC padding after the inner packet, and 2.6 dummy packets
    out['inner-tfc'] = rec(0, outer(0, esp_seal(0, 3, inner_packet(0) + bytes(range(37)))))
    out['inner6-tfc'] = rec(0, outer(2, esp_seal(2, 3, inner_packet(2) + b'\xa5' * 64)))
    out['inner-longer-than-payload'] = rec(0, outer(0, esp_seal(0, 4, inner_packet(0)[:-3])))
    out['dummy'] = rec(0, outer(0, esp_seal(0, 5, bytes(40), nh=59)))
    out['dummy-cbc'] = rec(0, outer(2, esp_seal(2, 5, b'', nh=59)))
    syn = TCP(sport=40000, dport=80, flags='S', options=[('MSS', 1460), ('NOP', None),
                                                         ('WScale', 7)])
    out['mss-clamp'] = sealed(5, inner_packet(5, b'', l4=syn))
    out['mss-clamp6'] = sealed(3, inner_packet(3, b'', l4=syn))
    out['lifetime'] = b''.join(sealed(5, inner_packet(5), seq=s) for s in range(1, 7))
    out['inner-no-route'] = sealed(6, bytes(IP(src='198.18.6.9', dst='192.0.2.1') / UDP()))
    out['inner-unresolved'] = sealed(6, bytes(IP(src='198.18.6.9', dst='203.0.113.7') /
                                              UDP()))
    out['long-pad'] = sealed(2, inner_packet(2), flags=0x83, frag=200)
    # NAT-T: keepalive, IKE marker, unknown port, too short, second port
    for name, port, pl in (('keepalive', 4500, b'\xff'), ('ike', 4500, b'\0\0\0\0ikev2'),
                           ('udp-other-port', 53, b'dns?'), ('udp-4501-short', 4501, b'ab')):
        out['natt-' + name] = rec(0, Ether(dst=OUR_OUT_MAC, src=PEER_MAC) /
                                  IP(src='198.19.0.2', dst=OUT4) /
                                  UDP(sport=4500, dport=port) / Raw(pl))
    out['natt6-keepalive'] = rec(0, Ether(dst=OUR_OUT_MAC, src=PEER_MAC) /
                                 IPv6(src='2001:db8:ff::3', dst=OUT6) /
                                 UDP(sport=4500, dport=4500) / Raw(b'\xff'))
    # outer fragments built here (scapy), in order, reversed, overlapping
    big = outer(0, esp_seal(0, 9, inner_packet(0, b'z' * 1200)))
    frags = fragment(big[IP], fragsize=400)
    out['frag4'] = b''.join(rec(0, Ether(dst=OUR_OUT_MAC, src=PEER_MAC) / f) for f in frags)
    out['frag4-rev'] = b''.join(rec(0, Ether(dst=OUR_OUT_MAC, src=PEER_MAC) / f)
                                for f in reversed(frags))
    out['frag4-dup'] = b''.join(rec(0, Ether(dst=OUR_OUT_MAC, src=PEER_MAC) / f)
                                for f in frags + frags[:1])
    big6 = outer(2, esp_seal(2, 9, inner_packet(2, b'w' * 1200)))
    p6 = big6[IPv6]
    p6 = IPv6(src=p6.src, dst=p6.dst) / IPv6ExtHdrFragment(id=99, nh=50) / p6.payload
    frags6 = fragment6(p6, 600)
    out['frag6'] = b''.join(rec(0, Ether(dst=OUR_OUT_MAC, src=PEER_MAC) / f) for f in frags6)
    out['frag-unfinished'] = rec(0, Ether(dst=OUR_OUT_MAC, src=PEER_MAC) / frags[0])
    # the slow path: ARP and Neighbour Discovery
    out['arp-request'] = rec(0, Ether(dst='ff:ff:ff:ff:ff:ff', src=PEER_MAC) /
                             ARP(op=1, hwsrc=PEER_MAC, psrc='198.19.0.9', pdst=OUT4))
    out['arp-reply'] = rec(0, Ether(dst=OUR_OUT_MAC, src=PEER_MAC) /
                           ARP(op=2, hwsrc=PEER_MAC, psrc='198.19.0.3', pdst=OUT4))
    out['nd-ns'] = rec(0, Ether(dst='33:33:ff:00:00:01', src=PEER_MAC) /
                       IPv6(src='2001:db8:ff::9', dst='ff02::1:ff00:1', hlim=255) /
                       ICMPv6ND_NS(tgt=OUT6) / ICMPv6NDOptSrcLLAddr(lladdr=PEER_MAC))
    out['nd-ns-dad'] = rec(0, Ether(dst='33:33:ff:00:00:01', src=PEER_MAC) /
                           IPv6(src='::', dst='ff02::1:ff00:1', hlim=255) / ICMPv6ND_NS(tgt=OUT6))
    out['nd-na'] = rec(0, Ether(dst=OUR_OUT_MAC, src=PEER_MAC) /
                       IPv6(src='2001:db8:ff::3', dst=OUT6, hlim=255) /
                       ICMPv6ND_NA(tgt='2001:db8:ff::3', R=0, S=1, O=1) /
                       ICMPv6NDOptDstLLAddr(lladdr=PEER_MAC))
    # malformed outer packets
    good = bytes(outer(0, esp_seal(0, 1, inner_packet(0))))
    out['short-frame'] = rec(0, good[:10])
    out['wrong-mac'] = rec(0, b'\x02\x00\x00\x00\x09\x09' + good[6:])
    out['vlan'] = rec(0, good[:12] + b'\x81\x00' + good[14:])
    out['ipv4-bad-sum'] = rec(0, good[:24] + b'\0\0' + good[26:])
    out['ipv4-truncated'] = rec(0, good[:60])
    out['esp-short'] = rec(3, bytes(IP(src='198.19.0.2', dst=OUT4, proto=50) /
                                    Raw(b'\0\0\x20\x01')))
    out['unknown-spi'] = rec(3, bytes(IP(src='198.19.0.2', dst=OUT4, proto=50) /
                                      Raw(b'\0\0\x99\x99' + bytes(60))))
    out['not-local'] = rec(3, bytes(IP(src='198.19.0.2', dst='198.19.0.77', proto=50) /
                                    Raw(bytes(64))))
    out['not-esp'] = rec(3, bytes(IP(src='198.19.0.2', dst=OUT4) / ICMP(type=3, code=3) /
                                  Raw(bytes(28))))
    # pings (dataplane/echo.c): in clear, the outside port's own addresses only;
    # through a tunnel, any address, answered back into it
    out['echo-outside'] = rec(3, IP(src='198.19.0.2', dst=OUT4) / ICMP(id=9, seq=1) /
                              Raw(b'ping'))
    out['echo6-outside'] = rec(3, IPv6(src='2001:db8:ff::2', dst=OUT6) /
                               ICMPv6EchoRequest(id=9, seq=1, data=b'ping'))
    out['echo-outside-inside-addr'] = rec(3, IP(src='198.19.0.2', dst=IN4) / ICMP())
    out['echo-outside-unresolved'] = rec(3, IP(src='198.19.0.9', dst=OUT4) / ICMP())
    out['sealed-echo'] = sealed(0, bytes(IP(src=host_behind_peer(0), dst=IN4) /
                                         ICMP(id=3, seq=1) / Raw(b'through the tunnel')))
    out['sealed-echo6'] = sealed(2, bytes(IPv6(src=host_behind_peer(2), dst=IN6) /
                                          ICMPv6EchoRequest(id=3, seq=1, data=b'six')))
    out['sealed-to-self'] = sealed(0, bytes(IP(src=host_behind_peer(0), dst=IN4) / UDP()))
    # replies held for a next hop not known yet (dataplane/neighq.c), then its
    # ARP reply / Neighbour Advertisement: sent when the main lcore has learned it
    out['held-then-arp'] = (rec(3, IP(src='198.19.0.9', dst=OUT4) / ICMP(seq=1)) +
                            rec(3, IP(src='198.19.0.9', dst=OUT4) / ICMP(seq=2)) +
                            rec(0, Ether(dst=OUR_OUT_MAC, src=PEER_MAC) /
                                ARP(op=2, hwsrc=PEER_MAC, psrc='198.19.0.9', pdst=OUT4)))
    out['held-then-na'] = (rec(3, IPv6(src='2001:db8:ff::9', dst=OUT6) /
                               ICMPv6EchoRequest(seq=1)) +
                           rec(0, Ether(dst=OUR_OUT_MAC, src=PEER_MAC) /
                               IPv6(src='2001:db8:ff::9', dst=OUT6, hlim=255) /
                               ICMPv6ND_NA(tgt='2001:db8:ff::9', R=0, S=1, O=1) /
                               ICMPv6NDOptDstLLAddr(lladdr=PEER_MAC)))
    out['ipv6-bad-length'] = rec(1, bytes(IPv6(src='2001:db8:ff::2', dst=OUT6, plen=500) /
                                          Raw(bytes(20))))
    out['ipv6-multicast'] = rec(3, bytes(IPv6(src='2001:db8:ff::2', dst='ff02::16') /
                                         ICMPv6EchoRequest()))
    out['no-role-ethertype'] = rec(0, good[:12] + b'\x88\xcc' + good[14:])
    # a scattered frame; captures at each point
    out['multiseg'] = rec(8, outer(0, esp_seal(0, 1, inner_packet(0))))
    out['trace-decrypted'] = rec(1 << 6, outer(0, esp_seal(0, 1, inner_packet(0))))
    out['trace-outside-tx'] = sealed(6, bytes(IP(src='198.18.6.9', dst='198.19.0.2') / UDP()),
                                     kind=2 << 6)
    # a long input: 40 frames, two bursts
    out['many'] = b''.join(sealed(i % 8, inner_packet(i % 8), seq=1 + i // 8)
                           for i in range(40))
    # the route tunnel (8): IPv6 through its IPv4-selector SA (next header 41);
    # a source with no route (rpf); an IPv4 source outside its selectors
    r = len(TUNNELS) - 1
    six = bytes(IPv6(src='2001:db8:9::9', dst=HOST6) / UDP(sport=1, dport=2) / Raw(b'six'))
    norpf = bytes(IPv6(src='2001:db8:77::9', dst=HOST6) / UDP(sport=1, dport=2) / Raw(b'x'))
    outside = bytes(IP(src='10.9.9.9', dst=HOST4) / UDP(sport=1, dport=2) / Raw(b'x'))
    out['route-families'] = b''.join([
        rec(0, outer(r, esp_seal(r, 11, six, nh=41))),
        rec(0, outer(r, esp_seal(r, 12, norpf, nh=41))),
        rec(0, outer(r, esp_seal(r, 13, outside))),
        rec(0, outer(r, esp_seal(r, 14, inner_packet(r), nh=41))),   # wrong next header
    ])
    return out


# ---- fuzz_ip ----

def ip_rec(i, pkt, kind=2, host=2):
    return rec(kind, bytes([i, host]) + bytes(pkt))


def to_tunnel(i, l4=None, payload=b'ping', size=None, **kw):
    """What a host behind us sends into tunnel i (addresses set by the target)."""
    if size is not None:
        payload = b'p' * size
    if v6(TUNNELS[i]['rts']):
        return IPv6(src=HOST6, dst=host_behind_peer(i), hlim=kw.get('ttl', 64)) / \
            (l4 or UDP(sport=5000, dport=6000)) / Raw(payload)
    return IP(src=HOST4, dst=host_behind_peer(i), ttl=kw.get('ttl', 64),
              flags=kw.get('flags', 0), tos=kw.get('tos', 0)) / \
        (l4 or UDP(sport=5000, dport=6000)) / Raw(payload)


def ip_seeds():
    out = {}
    for i in range(len(TUNNELS)):
        out['udp-t%d' % i] = ip_rec(i, to_tunnel(i))
        out['tight-t%d' % i] = rec(8 | 2, bytes([i, 7]) + bytes(to_tunnel(i)))
        out['raw-frame-t%d' % i] = rec(0, Ether(dst=OUR_IN_MAC, src=HOST_MAC) / to_tunnel(i))
        out['big-df-t%d' % i] = ip_rec(i, to_tunnel(i, size=1450, flags='DF'))
        out['big-t%d' % i] = ip_rec(i, to_tunnel(i, size=1450))
    syn = TCP(sport=40000, dport=80, flags='S', options=[('MSS', 1460), ('SAckOK', b''),
                                                         ('Timestamp', (1, 0))])
    out['mss-clamp'] = ip_rec(0, to_tunnel(0, l4=syn, payload=b''))
    out['mss-clamp6'] = ip_rec(2, to_tunnel(2, l4=syn, payload=b''))
    odd = TCP(sport=40000, dport=80, flags='S', options=[('NOP', None), ('MSS', 1400)])
    out['mss-odd-offset'] = ip_rec(1, to_tunnel(1, l4=odd, payload=b''))
    odd6 = TCP(sport=40000, dport=80, flags='S', options=[('NOP', None), ('MSS', 1400)])
    out['mss-odd-offset6'] = ip_rec(2, to_tunnel(2, l4=odd6, payload=b''))
    out['multiseg'] = rec(32, Ether(dst=OUR_IN_MAC, src=HOST_MAC) / to_tunnel(0))
    for k, point in ((1, 'inside-rx'), (2, 'pre-encrypt'), (3, 'outside-tx')):
        out['trace-' + point] = rec(k << 6 | 2, bytes([k, 2]) + bytes(to_tunnel(k)))
    out['ttl-1'] = ip_rec(0, to_tunnel(0, ttl=1))
    out['hop-1'] = ip_rec(2, to_tunnel(2, ttl=1))
    out['icmp-echo-big-df'] = ip_rec(3, IP(src=HOST4, dst='198.18.2.9', flags='DF') /
                                     ICMP() / Raw(b'e' * 1400))
    out['icmp-error-big-df'] = ip_rec(0, IP(src=HOST4, dst='198.18.2.9', flags='DF') /
                                      ICMP(type=3, code=4) / Raw(b'e' * 1500))
    out['icmp-limit'] = b''.join(ip_rec(0, to_tunnel(0, size=1450, flags='DF'))
                                 for _ in range(12))
    out['already-fragment'] = ip_rec(3, IP(src=HOST4, dst='198.18.2.9', flags='MF', frag=100) /
                                     Raw(b'f' * 1400))
    out['outer-frag'] = ip_rec(5, to_tunnel(5, size=1800))
    out['seq-unreserved'] = b''.join(ip_rec(6, to_tunnel(6)) for _ in range(5))
    out['seq-exhausted'] = b''.join(ip_rec(7, to_tunnel(7)) for _ in range(3))
    out['life-bytes'] = b''.join(ip_rec(7, to_tunnel(7, size=1000)) for _ in range(4))
    out['icmp-to-unresolved'] = ip_rec(0, to_tunnel(0, size=1450, flags='DF'), host=7)
    out['no-policy'] = rec(3, IP(src=HOST4, dst='192.0.2.1') / UDP())
    out['to-self'] = rec(3, IP(src=HOST4, dst=IN4) / UDP(sport=7, dport=7))
    out['to-self6'] = rec(3, IPv6(src=HOST6, dst=IN6) / UDP(sport=7, dport=7))
    # pings to the gateway (dataplane/echo.c): answered in place from any port's address
    ping = Raw(bytes(range(48)))
    out['echo'] = rec(3, IP(src=HOST4, dst=IN4) / ICMP(id=7, seq=1) / ping)
    out['echo6'] = rec(3, IPv6(src=HOST6, dst=IN6) /
                       ICMPv6EchoRequest(id=7, seq=1, data=bytes(range(48))))
    out['echo-outside-addr'] = rec(3, IP(src=HOST4, dst=OUT4) / ICMP(id=7, seq=2) / ping)
    out['echo6-outside-addr'] = rec(3, IPv6(src=HOST6, dst=OUT6) / ICMPv6EchoRequest(seq=2))
    out['echo-options'] = rec(3, IP(src=HOST4, dst=IN4, options=b'\x01\x01\x01\x00') /
                              ICMP(id=7, seq=3) / ping)
    out['echo-fragment'] = rec(3, IP(src=HOST4, dst=IN4, flags='MF') / ICMP(seq=4) / ping)
    out['echo-bad-source'] = rec(3, IP(src='127.0.0.1', dst=IN4) / ICMP(seq=5))
    out['echo-own-source'] = rec(3, IP(src=OUT4, dst=IN4) / ICMP(seq=6))
    out['echo6-own-source'] = rec(3, IPv6(src=OUT6, dst=IN6) / ICMPv6EchoRequest(seq=6))
    out['echo-short'] = rec(1, IP(src=HOST4, dst=IN4, proto=1) / Raw(b'\x08\0\0\0'))
    out['echo6-short'] = rec(1, IPv6(src=HOST6, dst=IN6, nh=58) / Raw(b'\x80\0\0\0'))
    out['echo-reply-to-self'] = rec(3, IP(src=HOST4, dst=IN4) / ICMP(type=0))
    out['echo-limit'] = b''.join(rec(3, IP(src=HOST4, dst=IN4) / ICMP(seq=k)) for k in range(60))
    out['multicast6'] = rec(3, IPv6(src=HOST6, dst='ff02::1') / ICMPv6EchoRequest())
    out['arp-request'] = rec(0, Ether(dst='ff:ff:ff:ff:ff:ff', src=HOST_MAC) /
                             ARP(op=1, hwsrc=HOST_MAC, psrc='198.18.1.7', pdst=IN4))
    out['nd-ns'] = rec(0, Ether(dst='33:33:ff:00:00:01', src=HOST_MAC) /
                       IPv6(src='2001:db8:1::7', dst='ff02::1:ff00:1', hlim=255) /
                       ICMPv6ND_NS(tgt=IN6) / ICMPv6NDOptSrcLLAddr(lladdr=HOST_MAC))
    out['no-role'] = rec(16 | 0, Ether(dst=NONE_MAC, src=HOST_MAC) / to_tunnel(0))
    out['ipv4-options'] = ip_rec(0, IP(src=HOST4, dst='198.18.2.9', options=b'\x01\x01\x01\x00') /
                                 UDP() / Raw(b'opt'))
    out['bad-ipv4'] = rec(1, bytes(to_tunnel(0))[:30])
    out['many'] = b''.join(ip_rec(i % 8, to_tunnel(i % 8, size=100 + i)) for i in range(40))
    # a host with checksum offload: the L4 checksum field holds the pseudo-header sum
    # only (CHECKSUM_PARTIAL); the inside port finishes it (kind 1: addresses kept)
    out['csum-partial-tcp'] = rec(1, partial_csum(to_tunnel(0, l4=syn, payload=b'x' * 99)))
    out['csum-partial-udp6'] = rec(1, partial_csum(to_tunnel(2, payload=b'y' * 77)))
    return out


def partial_csum(pkt):
    """pkt (IPv4 or IPv6, then TCP or UDP) with the checksum field as Linux leaves
    it for CHECKSUM_PARTIAL: the pseudo-header sum, folded, not complemented."""
    raw = bytearray(bytes(pkt))
    if raw[0] >> 4 == 6:
        l3, proto = 40, raw[6]
        words = raw[8:40] + struct.pack('>IxxxB', len(raw) - l3, proto)
    else:
        l3, proto = (raw[0] & 15) * 4, raw[9]
        words = raw[12:20] + struct.pack('>xBH', proto, len(raw) - l3)
    total = sum(struct.unpack('>%dH' % (len(words) // 2), bytes(words)))
    while total >> 16:
        total = (total & 0xffff) + (total >> 16)
    at = l3 + (16 if proto == 6 else 6)
    raw[at:at + 2] = struct.pack('>H', total)
    return bytes(raw)


# ---- fuzz_ctl_dp: the dataplane protocol (include/dpvpn_proto.h) ----

class AddrU(ctypes.Union):
    _fields_ = [('v4', ctypes.c_uint8 * 4), ('v6', ctypes.c_uint8 * 16)]


class Addr(ctypes.Structure):
    _fields_ = [('family', ctypes.c_uint8), ('reserved', ctypes.c_uint8 * 3), ('u', AddrU)]


class Prefix(ctypes.Structure):
    _fields_ = [('family', ctypes.c_uint8), ('len', ctypes.c_uint8),
                ('reserved', ctypes.c_uint8 * 2), ('u', AddrU)]


class PortCfg(ctypes.Structure):
    _fields_ = [('port_id', ctypes.c_uint16), ('role', ctypes.c_uint8),
                ('reserved', ctypes.c_uint8), ('addr4', Prefix), ('addr6', Prefix),
                ('mtu', ctypes.c_uint16), ('reserved2', ctypes.c_uint8 * 2),
                ('extra4', Prefix), ('host_iface', ctypes.c_char * 16)]


class Neigh(ctypes.Structure):
    _fields_ = [('port_id', ctypes.c_uint16), ('mac', ctypes.c_uint8 * 6), ('addr', Addr)]


class Route(ctypes.Structure):
    _fields_ = [('dst', Prefix), ('port_id', ctypes.c_uint16),
                ('kind', ctypes.c_uint8), ('n_tunif', ctypes.c_uint8), ('gateway', Addr),
                ('tunif', ctypes.c_uint16 * 8)]


class Tunif(ctypes.Structure):
    _fields_ = [('id', ctypes.c_uint16), ('rpf', ctypes.c_uint8), ('up', ctypes.c_uint8),
                ('out_spi', ctypes.c_uint8 * 4), ('name', ctypes.c_char * 32),
                ('host_iface', ctypes.c_char * 16), ('inside4', ctypes.c_uint8 * 4),
                ('inside6', ctypes.c_uint8 * 16)]


class SaCfg(ctypes.Structure):
    _fields_ = [('spi', ctypes.c_uint8 * 4), ('dir', ctypes.c_uint8), ('alg', ctypes.c_uint8),
                ('key_len', ctypes.c_uint8), ('df', ctypes.c_uint8),
                ('replay_window', ctypes.c_uint32), ('local', Addr), ('remote', Addr),
                ('udp_local', ctypes.c_uint16), ('udp_remote', ctypes.c_uint16),
                ('esn', ctypes.c_uint8), ('auth_key_len', ctypes.c_uint8),
                ('flags', ctypes.c_uint8), ('tunif', ctypes.c_uint8),
                ('life_bytes', ctypes.c_uint64 * 2),
                ('life_packets', ctypes.c_uint64 * 2), ('life_seconds', ctypes.c_uint32 * 2),
                ('seq_start', ctypes.c_uint64), ('seq_limit', ctypes.c_uint64),
                ('mtu', ctypes.c_uint16), ('mss', ctypes.c_uint16),
                ('frag_outer', ctypes.c_uint8), ('udp_spread_log2', ctypes.c_uint8),
                ('n_more_lts', ctypes.c_uint8), ('n_more_rts', ctypes.c_uint8),
                ('local_ts', Prefix), ('remote_ts', Prefix),
                ('more_lts', Prefix * 7), ('more_rts', Prefix * 7),
                ('name', ctypes.c_char * 32), ('key', ctypes.c_uint8 * 32),
                ('salt', ctypes.c_uint8 * 4), ('auth_key', ctypes.c_uint8 * 32)]


class SaId(ctypes.Structure):
    _fields_ = [('spi', ctypes.c_uint8 * 4), ('dir', ctypes.c_uint8),
                ('reserved', ctypes.c_uint8 * 3)]


class Policy(ctypes.Structure):
    _fields_ = [('src', Prefix), ('dst', Prefix), ('spi', ctypes.c_uint8 * 4),
                ('priority', ctypes.c_uint32)]


class SeqGrant(ctypes.Structure):
    _fields_ = [('spi', ctypes.c_uint8 * 4), ('reserved', ctypes.c_uint32),
                ('limit', ctypes.c_uint64)]


class VipSet(ctypes.Structure):
    _fields_ = [('port_id', ctypes.c_uint16), ('held', ctypes.c_uint8),
                ('held6', ctypes.c_uint8), ('reserved', ctypes.c_uint8 * 4),
                ('vip', ctypes.c_uint8 * 16), ('vip6', (ctypes.c_uint8 * 16) * 4)]


class TraceReq(ctypes.Structure):
    _fields_ = [('point', ctypes.c_uint8), ('reserved', ctypes.c_uint8 * 3),
                ('count', ctypes.c_uint32), ('path', ctypes.c_char * 256)]


SIZES = {Addr: 20, Prefix: 20, PortCfg: 84, Neigh: 28, Route: 60, SaCfg: 552, SaId: 8,
         Policy: 48, SeqGrant: 16, TraceReq: 264, Tunif: 76, VipSet: 88}
for cls, size in SIZES.items():
    assert ctypes.sizeof(cls) == size, (cls.__name__, ctypes.sizeof(cls), size)

(HELLO, PORT_SET, NEIGH_ADD, ROUTE_ADD, SA_ADD, SA_DEL, POLICY_ADD, START, SHOW_PORTS,
 SHOW_SA, SHOW_POLICIES, SHOW_COUNTERS, BATCH_BEGIN, BATCH_COMMIT, EVENTS, SEQ_GRANT,
 SHOW_LCORES, TRACE_START, TRACE_STATUS, ROUTE_DEL, NEIGH_DEL, SHOW_ROUTES, SHOW_NEIGHS,
 POLICY_DEL) = range(1, 25)
TUNIF_SET, TUNIF_DEL, SHOW_TUNIFS = range(28, 31)
VIP_SET = 35


def set_addr(a, s):
    ip = ip_address(s)
    a.family = 6 if ip.version == 6 else 4
    ctypes.memmove(ctypes.addressof(a.u), ip.packed, len(ip.packed))


def set_prefix(p, s):
    addr, plen = s.split('/')
    set_addr(p, addr)
    p.len = int(plen)


def be32(v):
    return (ctypes.c_uint8 * 4)(*struct.pack('>I', v))


class Msgs:
    """A list of control messages, each one record of fuzz_ctl_dp.c's input."""

    def __init__(self):
        self.parts, self.seq = [], 0

    def add(self, mtype, payload=b'', flags=0, fix=0, hdr_len=None, status=0):
        self.seq += 1
        payload = bytes(payload)
        hdr = struct.pack('<HHIIi', mtype, flags, self.seq,
                          len(payload) if hdr_len is None else hdr_len, status)
        self.raw(hdr + payload, fix)
        return self

    def raw(self, data, flags=0):
        self.parts.append(rec(flags, data))
        return self

    def bytes(self):
        return b''.join(self.parts)


def port_cfg(pid, role, a4=None, a6=None, mtu=0, extra4=None, host=b''):
    c = PortCfg(port_id=pid, role=role, mtu=mtu, host_iface=host)
    if a4:
        set_prefix(c.addr4, a4)
    if a6:
        set_prefix(c.addr6, a6)
    if extra4:
        set_prefix(c.extra4, extra4)
    return c


def sa_cfg(i, inbound, **over):
    t = TUNNELS[i]
    key_len, auth_len = ALGS[t['alg']][0], ALGS[t['alg']][1]
    key, auth, salt = keys(i, inbound)
    c = SaCfg(dir=1 if inbound else 2, alg=ALG_IDS[t['alg']], key_len=key_len,
              auth_key_len=auth_len, replay_window=64 if inbound else 0,
              udp_local=t.get('udp', 0), udp_remote=4500 if t.get('udp') else 0,
              esn=1 if t.get('esn') else 0, name=b'tun%d' % i)
    c.spi = be32((0x2001 if inbound else 0x1001) + i)
    set_addr(c.local, OUT6 if v6(t['peer']) else OUT4)
    set_addr(c.remote, t['peer'])
    six = v6(t['rts'])
    set_prefix(c.local_ts, '2001:db8:1::/64' if six else '198.18.1.0/24')
    set_prefix(c.remote_ts, t['rts'] + ('/64' if six else '/24'))
    ctypes.memmove(c.key, key, 32)
    ctypes.memmove(c.auth_key, auth, 32)
    ctypes.memmove(c.salt, salt, 4)
    for k, v in over.items():
        setattr(c, k, v)
    return c


def policy(i, prio=100, src=None, dst=None):
    t = TUNNELS[i]
    six = v6(t['rts'])
    p = Policy(priority=prio)
    set_prefix(p.src, src or ('2001:db8:1::/64' if six else '198.18.1.0/24'))
    set_prefix(p.dst, dst or (t['rts'] + ('/64' if six else '/24')))
    p.spi = be32(0x1001 + i)
    return p


def dump(start=0):
    return struct.pack('<I', start)


def install(m, tunnels=range(len(TUNNELS))):
    """What dpvpnd's install does (control/install.c), in its order."""
    m.add(HELLO)
    m.add(PORT_SET, port_cfg(0, 1, '198.18.1.1/24', '2001:db8:1::1/64'))
    m.add(PORT_SET, port_cfg(1, 2, '198.19.0.1/24', '2001:db8:ff::1/64',
                             extra4='198.19.128.0/17'))
    n = Neigh(port_id=1, mac=(ctypes.c_uint8 * 6)(2, 0, 0, 0, 0xb, 2))
    set_addr(n.addr, '198.19.0.2')
    m.add(NEIGH_ADD, n)
    r = Route(port_id=1)
    set_prefix(r.dst, '203.0.113.0/24')
    set_addr(r.gateway, '198.19.0.254')
    m.add(ROUTE_ADD, r)
    r6 = Route(port_id=0)
    set_prefix(r6.dst, '2001:db8:99::/48')
    m.add(ROUTE_ADD, r6)
    m.add(BATCH_BEGIN)
    for i in tunnels:
        m.add(SA_ADD, sa_cfg(i, True))
        m.add(SA_ADD, sa_cfg(i, False))
        m.add(POLICY_ADD, policy(i))
    m.add(BATCH_COMMIT)
    return m


def vip_set(v4=(), v6=(), held=0, held6=0, port=1, reserved=0):
    """VIP_SET: port's virtual addresses (vip: four IPv4 ones, network order)."""
    v = VipSet(port_id=port, held=held, held6=held6)
    v.reserved[0] = reserved
    ctypes.memmove(v.vip, b''.join(ip_address(a).packed for a in v4), 4 * len(v4))
    for i, a in enumerate(v6):
        ctypes.memmove(v.vip6[i], ip_address(a).packed, 16)
    return v


def vip_set_seeds():
    """Held, released, and every refusal of VIP_SET (dataplane/port.c)."""
    m = Msgs()
    m.add(VIP_SET, vip_set(['198.19.0.10'], ['2001:db8:ff::10', '2001:db8:ff::11'], 1, 3))
    m.add(VIP_SET, vip_set(['198.19.0.10'], ['2001:db8:ff::10'], 1, 1))
    m.add(VIP_SET, vip_set(['198.19.0.10'], ['2001:db8:ff::10']))
    for bad in (dict(v6=['2001:db8:ff::10'], held6=2), dict(v6=['ff02::1']),
                dict(v6=['::1']), dict(v6=['2001:db8:ff::1']),
                dict(v6=['2001:db8:ff::10', '2001:db8:ff::10']), dict(held6=0x10),
                dict(v4=['224.0.0.1']), dict(reserved=1), dict(port=9)):
        m.add(VIP_SET, vip_set(**bad))
    return m


def ctl_dp_seeds():
    out = {}
    m = install(Msgs(), [0, 2, 4])
    for t in (SHOW_PORTS, SHOW_SA, SHOW_POLICIES, SHOW_LCORES, SHOW_ROUTES, SHOW_NEIGHS,
              EVENTS):
        m.add(t, dump())
    m.add(SHOW_COUNTERS).add(TRACE_STATUS).add(START)
    out['install-show'] = m.bytes()
    for i in range(len(TUNNELS)):
        out['sa-t%d' % i] = install(Msgs(), [i]).add(SHOW_SA, dump()).bytes()
    m = install(Msgs(), [0])
    m.add(SA_ADD, sa_cfg(6, False, seq_limit=100))
    m.add(SEQ_GRANT, SeqGrant(spi=be32(0x1007), limit=1000))
    m.add(SEQ_GRANT, SeqGrant(spi=be32(0x1001), limit=1000))
    m.add(SA_DEL, SaId(spi=be32(0x1001), dir=2))
    m.add(SA_DEL, SaId(spi=be32(0x2001), dir=1))
    m.add(SA_DEL, SaId(spi=be32(0x2001), dir=1))
    m.add(POLICY_DEL, policy(6))
    m.add(POLICY_DEL, policy(6))
    r = Route()
    set_prefix(r.dst, '203.0.113.0/24')
    m.add(ROUTE_DEL, r).add(ROUTE_DEL, r)
    n = Neigh(port_id=1)
    set_addr(n.addr, '198.19.0.2')
    m.add(NEIGH_DEL, n).add(NEIGH_DEL, n)
    m.add(SHOW_SA, dump(1)).add(SHOW_SA, dump(1000)).add(EVENTS, dump())
    out['delete'] = m.bytes()
    m = Msgs()
    tr = TraceReq(point=2, count=10, path=b'/tmp/not-used.pcapng')
    m.add(TRACE_START, tr).add(TRACE_STATUS).add(TRACE_START, tr)
    m.add(TRACE_START, TraceReq(point=0)).add(TRACE_START, TraceReq(point=9, count=1))
    m.add(TRACE_START, TraceReq(point=1, count=5, path=b'relative'))
    out['trace'] = m.bytes()
    out['vip-set'] = install(Msgs(), [0]).bytes() + vip_set_seeds().bytes()
    # every field check of SA_ADD
    m = Msgs()
    bad = [dict(spi=be32(255)), dict(dir=3), dict(alg=99), dict(key_len=15),
           dict(auth_key_len=7), dict(replay_window=100), dict(esn=2), dict(df=9),
           dict(mtu=100), dict(frag_outer=1, mtu=1400), dict(seq_start=5),
           dict(udp_local=4500, udp_remote=0), dict(udp_spread_log2=3),
           dict(life_bytes=(ctypes.c_uint64 * 2)(10, 5)),
           dict(name=b'x' * 32)]
    for over in bad[:8]:
        m.add(SA_ADD, sa_cfg(0, True, **over))
    out['sa-errors'] = m.bytes()
    m = Msgs()
    for over in bad[8:]:
        m.add(SA_ADD, sa_cfg(0, True, **over))
    c = sa_cfg(0, True)
    c.local.family = 6
    m.add(SA_ADD, c)
    c = sa_cfg(0, False, seq_start=0xfffffffe, seq_limit=0xffffffff)
    m.add(SA_ADD, c).add(SA_ADD, c)
    c = sa_cfg(0, False, frag_outer=1, mtu=2000, udp_spread_log2=0)
    c.spi = be32(0x3333)
    m.add(SA_ADD, c)
    # selector lists: too many, another family, then a good one
    m.add(SA_ADD, sa_cfg(0, True, n_more_lts=8))
    c = sa_cfg(0, True, n_more_rts=1)
    set_prefix(c.more_rts[0], '2001:db8:9::/64')
    m.add(SA_ADD, c)
    c = sa_cfg(0, True, n_more_lts=1, n_more_rts=2)
    c.spi = be32(0x3334)
    set_prefix(c.more_lts[0], '10.1.0.0/16')
    set_prefix(c.more_rts[0], '10.2.0.0/16')
    set_prefix(c.more_rts[1], '10.3.0.0/33')
    m.add(SA_ADD, c)
    set_prefix(c.more_rts[1], '10.3.0.0/16')
    m.add(SA_ADD, c)
    m.add(POLICY_ADD, policy(1)).add(POLICY_ADD, policy(0, prio=0xffffffff))
    p = policy(0)
    p.src.family = 6
    m.add(POLICY_ADD, p)
    out['sa-errors2'] = m.bytes()
    # ports, neighbours and routes that are refused
    m = Msgs()
    m.add(PORT_SET, port_cfg(7, 1)).add(PORT_SET, port_cfg(0, 5))
    m.add(PORT_SET, port_cfg(0, 1, '198.18.1.1/40')).add(PORT_SET, port_cfg(0, 1, None,
                                                                             'ff02::1/64'))
    m.add(PORT_SET, port_cfg(0, 1, '198.18.1.1/24', mtu=9000))
    m.add(PORT_SET, port_cfg(0, 1, '198.18.1.1/24', mtu=1400))
    m.add(PORT_SET, port_cfg(1, 2, '198.19.0.1/24', extra4='198.19.128.1/17'))  # host bits
    m.add(PORT_SET, port_cfg(0, 1, '198.18.1.1/24', extra4='198.18.2.0/24'))   # inside
    m.add(PORT_SET, port_cfg(0, 1, '198.18.1.1/24', host=b'a,b=c'))     # not a name
    m.add(PORT_SET, port_cfg(0, 1, '198.18.1.1/24', host=b'dpvpn-in'))  # no twins here
    m.add(PORT_SET, port_cfg(2, 0))
    n = Neigh(port_id=0, mac=(ctypes.c_uint8 * 6)(1, 0, 0, 0, 0, 1))
    set_addr(n.addr, '198.18.1.9')
    m.add(NEIGH_ADD, n)
    n = Neigh(port_id=0, mac=(ctypes.c_uint8 * 6)(2, 0, 0, 0, 0, 1))
    set_addr(n.addr, 'ff02::1')
    m.add(NEIGH_ADD, n)
    r = Route(port_id=0)
    set_prefix(r.dst, '10.0.0.0/8')
    set_addr(r.gateway, '2001:db8::1')
    m.add(ROUTE_ADD, r)
    r = Route(port_id=9)
    set_prefix(r.dst, '10.0.0.0/40')
    m.add(ROUTE_ADD, r)
    r = Route(port_id=0)
    set_prefix(r.dst, '2001:db8:5::/200')
    m.add(ROUTE_ADD, r).add(ROUTE_DEL, r)
    out['port-route-errors'] = m.bytes()
    # the transport: sizes, flags, types
    m = Msgs()
    m.add(HELLO, flags=1).add(99).add(0).add(HELLO, b'x').add(HELLO, hdr_len=4)
    m.add(SA_ADD, b'\0' * 100).add(SHOW_SA, dump(), fix=1, hdr_len=77)
    m.raw(b'\x01\x00').raw(b'\x01\x00\x00\x00' + b'\0' * 12 + b'abc')
    m.raw(struct.pack('<HHIIi', SHOW_SA, 0, 77, 65536 - 16 + 5, 0), flags=2)
    out['transport'] = m.bytes()
    out['empty-datagram'] = Msgs().add(HELLO).raw(b'', flags=4).add(HELLO).bytes()
    out['route-tunnel'] = route_tunnel_seed()
    return out


def tunnel_route(dst, *ids):
    r = Route(kind=1, n_tunif=len(ids))
    set_prefix(r.dst, dst)
    for k, i in enumerate(ids):
        r.tunif[k] = i
    return r


def route_tunnel_seed():
    """Route-based tunnels: route-mode SAs, tunnel interfaces, routes into them
    (one, an ECMP pair, either family), dumps, then the refusals."""
    m = install(Msgs(), [])
    m.add(BATCH_BEGIN)
    for i in (0, 2):
        for inbound in (True, False):
            c = sa_cfg(i, inbound, flags=1, tunif=i // 2)
            set_prefix(c.local_ts, '0.0.0.0/0')
            set_prefix(c.remote_ts, '0.0.0.0/0')
            m.add(SA_ADD, c)
        m.add(TUNIF_SET, Tunif(id=i // 2, rpf=1, up=1, out_spi=be32(0x1001 + i),
                               name=b'rt%d' % i))
    m.add(BATCH_COMMIT)
    m.add(ROUTE_ADD, tunnel_route('10.9.0.0/16', 0))
    m.add(ROUTE_ADD, tunnel_route('10.8.0.0/16', 0, 1))
    m.add(ROUTE_ADD, tunnel_route('2001:db8:9::/48', 1, 0))
    m.add(SHOW_TUNIFS, dump()).add(SHOW_ROUTES, dump()).add(SHOW_SA, dump())
    m.add(TUNIF_SET, Tunif(id=0, rpf=2, up=0, name=b'rt0'))
    m.add(TUNIF_DEL, Tunif(id=1))                       # busy: routes lead into it
    m.add(SA_DEL, SaId(spi=be32(0x1003), dir=2))        # takes tunif 1 down
    m.add(SHOW_TUNIFS, dump())
    m.add(TUNIF_SET, Tunif(id=2, up=1, out_spi=be32(0x1005), name=b'x'))   # no such SA
    m.add(TUNIF_SET, Tunif(id=300, name=b'x')).add(TUNIF_SET, Tunif(id=3, rpf=7, name=b'x'))
    m.add(TUNIF_SET, Tunif(id=3, up=0, out_spi=be32(5), name=b'x'))
    m.add(TUNIF_SET, Tunif(id=3, name=b'y' * 32))
    # a twin (the fuzz target makes none: refused), a name DPDK's devargs would split
    m.add(TUNIF_SET, Tunif(id=0, rpf=1, up=1, out_spi=be32(0x1001), name=b'rt0',
                           host_iface=b'vti-rt0', inside4=(169, 254, 10, 1)))
    m.add(TUNIF_SET, Tunif(id=0, name=b'rt0', host_iface=b'a,b=c'))
    m.add(TUNIF_SET, Tunif(id=0, name=b'rt0', host_iface=b'z' * 16))
    m.add(ROUTE_ADD, tunnel_route('10.7.0.0/16', 9))                        # no tunif 9
    r = tunnel_route('10.7.0.0/16', *range(8))
    r.n_tunif = 9
    m.add(ROUTE_ADD, r)
    m.add(ROUTE_ADD, Route(kind=2))
    r = tunnel_route('10.7.0.0/16', 0)
    r.port_id = 1
    m.add(ROUTE_ADD, r)
    m.add(SA_ADD, sa_cfg(1, True, flags=2)).add(SA_ADD, sa_cfg(1, True, tunif=3))
    for dst in ('10.9.0.0/16', '10.8.0.0/16', '2001:db8:9::/48'):
        m.add(ROUTE_DEL, tunnel_route(dst))
    m.add(TUNIF_DEL, Tunif(id=1)).add(TUNIF_DEL, Tunif(id=1)).add(SHOW_TUNIFS, dump())
    return m.bytes()


# ---- fuzz_ctl_d: the operator protocol (control/ctl_proto.h) ----

def ctl_d_seeds():
    reqs = {
        'status': '{"cmd":"status"}',
        'reload': '{"cmd":"reload"}',
        'clear': '{"cmd":"clear"}',
        'tunnel-up': '{"cmd":"tunnel","name":"to-b","state":"up"}',
        'tunnel-down': '{"cmd":"tunnel","name":"to-bb","state":"down"}',
        'tunnel-bad': '{"cmd":"tunnel","name":"to-b","state":"sideways"}',
        'route-add': '{"cmd":"route","op":"add","dst":"203.0.113.0/24","port":1,'
                     '"via":"198.19.0.254"}',
        'route-add6': '{"cmd":"route","op":"add","dst":"2001:db8:99::/48","port":0,'
                      '"via":null}',
        'route-del': '{"cmd":"route","op":"del","dst":"203.0.113.0/24"}',
        'route-bad': '{"cmd":"route","op":"add","dst":"203.0.113.0/33","port":-1,'
                     '"via":"::1"}',
        'route-tunnels': '{"cmd":"route","op":"add","dst":"10.9.0.0/16",'
                         '"tunnels":["to-b","to-c"]}',
        'route-tunnels-bad': '{"cmd":"route","op":"add","dst":"10.9.0.0/16","port":1,'
                             '"tunnels":[1,"a","b","c","d","e","f","g","h"]}',
        'neighbour-add': '{"cmd":"neighbour","op":"add","port":0,"address":"198.18.1.9",'
                         '"mac":"02:00:00:00:0a:09"}',
        'neighbour-add6': '{"cmd":"neighbour","op":"add","port":0,"address":"2001:db8:1::9",'
                          '"mac":"02:00:00:00:0a:09"}',
        'neighbour-del': '{"cmd":"neighbour","op":"del","port":0,"address":"198.18.1.9"}',
        'neighbour-bad': '{"cmd":"neighbour","op":"add","port":70000,"address":"1.2.3",'
                         '"mac":"zz:00:00:00:0a:09"}',
        'policy-add': '{"cmd":"policy","op":"add","src":"198.18.1.0/24",'
                      '"dst":"198.18.9.0/24","spi":"0x00001001","priority":10}',
        'policy-del': '{"cmd":"policy","op":"del","src":"198.18.1.0/24",'
                      '"dst":"198.18.9.0/24"}',
        'policy-bad': '{"cmd":"policy","op":"add","src":"198.18.1.0/24","dst":"2001:db8::/32",'
                      '"spi":"4097x","priority":-5}',
        'sa-del': '{"cmd":"sa","op":"del","spi":"0x00002001","dir":"in"}',
        'sa-add': '{"cmd":"sa","op":"add","spi":"0x00002001","dir":"out"}',
        'trace': '{"cmd":"trace","point":"decrypted","count":10,"file":"/tmp/x.pcapng"}',
        'trace-off': '{"cmd":"trace","point":"off"}',
        'trace-bad': '{"cmd":"trace","point":"inside-rx","count":0,"file":"rel"}',
        'unknown-cmd': '{"cmd":"reboot"}',
        'unknown-member': '{"cmd":"status","verbose":true}',
        'not-object': '["cmd","status"]',
        'cmd-not-string': '{"cmd":7}',
        'no-cmd': '{"what":"sa"}',
        'duplicate': '{"cmd":"status","cmd":"show"}',
        'syntax': '{"cmd":"show",',
        'unicode': '{"cmd":"tunnel","name":"t\\u00fcnnel\\u20ac","state":"up"}',
    }
    for what in ('sa', 'ports', 'counters', 'policies', 'trace', 'routes', 'neighbours',
                 'lcores', 'tunnels', 'nothing'):
        reqs['show-' + what] = '{"cmd":"show","what":"%s"}' % what
    reqs['show-tunnels-page'] = '{"cmd":"show","what":"tunnels","first":2}'
    reqs['show-no-what'] = '{"cmd":"show"}'
    reqs['show-what-number'] = '{"cmd":"show","what":1}'
    return {k: v.encode() for k, v in reqs.items()}


# ---- fuzz_config ----

def config_seeds():
    out = {}
    for name in ('lab-a.conf', 'lab-b.conf'):
        with open(os.path.join(HERE, '..', 'configs', name), 'rb') as f:
            out[name] = f.read()
    base = """[dataplane]
socket = /run/dpvpn/fuzz/dataplane.sock
[control]
socket = /run/dpvpn/fuzz/dpvpnd.sock
state = fuzz.state
seq-block = 4096
metrics = 127.0.0.1:9477
[port inside]
id = 0
role = inside
mtu = 1500
address = 198.18.1.1/24, 2001:db8:1::1/64
[port outside]
id = 1
role = outside
address = 198.19.0.1/24,2001:db8:ff::1/64
[neighbor peer]
port = outside
address = 198.19.0.2
mac = 02:00:00:00:0b:02
[neighbor peer6]
port = 1
address = 2001:db8:ff::2
mac = 02:00:00:00:0b:03
[route far]
dst = 203.0.113.0/24
port = outside
via = 198.19.0.254
[route far6]
dst = 2001:db8:99::/48
port = inside
"""
    tun = """[tunnel t%(i)d]
local = %(local)s
remote = %(remote)s
local-ts = %(lts)s
remote-ts = %(rts)s
cipher = %(alg)s
out-spi = 0x%(out)08x
in-spi = %(in_)d
%(keys)s%(extra)s
"""
    tunnels = []
    for i, t in enumerate(TUNNELS[:8]):      # (the route tunnel: seed-route-tunnels)
        six_out, six_in = v6(t['peer']), v6(t['rts'])
        key_len, auth_len = ALGS[t['alg']][:2]
        salt = 4 if ALGS[t['alg']][5] else 0
        keys_txt = ''
        if key_len:
            keys_txt += 'out-key = 0x%s\nin-key = %s\n' % ('11' * (key_len + salt),
                                                          '12' * (key_len + salt))
        if auth_len:
            keys_txt += 'out-auth-key = %s\nin-auth-key = 0x%s\n' % ('22' * auth_len,
                                                                   '33' * auth_len)
        extra = ''
        if t.get('udp'):
            extra += ('encap = udp\nlocal-port = %d\nremote-port = 4500\n'
                      'local-ports = 2\n' % t['udp'])
        if t.get('esn'):
            extra += 'esn = yes\nout-seq-start = 4294967300\n'
        extra += ['df = set\n', 'df = clear\n', 'replay-window = 4096\n', 'mtu = 1400\n',
                  'soft-packets = 10\nhard-packets = 20\nsoft-bytes = 1000\n'
                  'hard-bytes = 2000\nsoft-seconds = 60\nhard-seconds = 120\n',
                  'fragment = outer\nmss-clamp = 1300\n',
                  'replay-window = 0\nmss-clamp = off\n', 'mss-clamp = auto\n'][i]
        tunnels.append(tun % dict(i=i, local=OUT6 if six_out else OUT4, remote=t['peer'],
                                  lts='2001:db8:1::/64' if six_in else '198.18.1.0/24',
                                  rts=t['rts'] + ('/64' if six_in else '/24'), alg=t['alg'],
                                  out=0x1001 + i, in_=0x2001 + i, keys=keys_txt, extra=extra))
    for k in range(0, len(tunnels), 2):	# two tunnels a file: inputs stay small
        out['ciphers-%d.conf' % k] = (base + ''.join(tunnels[k:k + 2])).encode()
    out['one-tunnel.conf'] = (base + tunnels[0]).encode()
    rt = ('[tunnel r%d]\nmode = route\nrpf = %s\nlocal = 198.19.0.1\nremote = 198.19.0.%d\n'
          'cipher = aes128-gcm\nout-spi = 0x%x\nin-spi = 0x%x\n'
          'out-key = 0x0123456789abcdef0123456789abcdef01020304\n'
          'in-key = 0xfedcba9876543210fedcba987654321005060708\n')
    routed = (rt % (1, 'loose', 2, 0x3001, 0x4001) + rt % (2, 'strict', 3, 0x3002, 0x4002) +
              '[routes]\nroute = 10.9.0.0/16 via tunnel r1\nroute = 10.9.0.0/16 via tunnel r2\n'
              'route = 2001:db8:9::/48 via tunnel r2\n'
              'route = 192.0.2.0/24 via 198.19.0.254 port outside\n'
              '[route more]\ndst = 10.8.0.0/16\ntunnel = r1, r2\n'
              '[tunnel r3]\nmode = route\nkeying = ike\npsk-file = a.key\n'
              'local = 198.19.0.1\nremote = 198.19.0.4\ncipher = aes128-gcm\n'
              '[route to-r3]\ndst = 10.7.0.0/16\ntunnel = r3\n')
    out['route-tunnels.conf'] = (base + routed).encode()
    out['route-tunnels-bad.conf'] = (base + routed.replace('rpf = strict', 'local-ts = 10.0.0.0/8')
                                     .replace('via tunnel r2\nroute = 2001', 'via tunnel r9\n'
                                              'route = 2001') + '[routes]\nroute = x y\n').encode()
    # route tunnels' twins: names, addresses, a
    # policy tunnel's, a duplicate, an inside-address without its twin
    twins = (routed.replace('rpf = loose\n', 'rpf = loose\nhost-interface = vti-r1\n'
                            'inside-address = 169.254.10.1/30, fd00:10::1/126\n')
             .replace('rpf = strict\n', 'rpf = strict\nhost-interface = vti-r1\n'
                      'inside-address = 169.254.10.5, 169.254.10.6/30,169.254.10.7/30\n'))
    out['tunnel-twins.conf'] = (base + twins + tunnels[0] + 'host-interface = a,b\n'
                                'inside-address = fd00::1/129\n').encode()
    # selector lists: good ones, then too many, two families, overlap, empty entry
    lists = tunnels[0].replace('local-ts = 198.18.1.0/24',
                               'local-ts = 198.18.1.0/24, 10.1.0.0/16,10.2.0.0/16')
    lists = lists.replace('remote-ts = 198.18.2.0/24', 'remote-ts = 198.18.2.0/24 ,10.3.0.0/24')
    out['ts-lists.conf'] = (base + lists).encode()
    bad = [', '.join('10.%d.0.0/16' % i for i in range(9)), '10.1.0.0/16, 2001:db8::/64',
           '10.0.0.0/8, 10.1.0.0/16', '10.1.0.0/16,', ',', '10.1.0.0/16,,10.2.0.0/16']
    out['ts-lists-bad.conf'] = (base + ''.join(
        tunnels[0].replace('[tunnel t0]', '[tunnel l%d]' % i)
        .replace('remote-ts = 198.18.2.0/24', 'remote-ts = ' + b)
        for i, b in enumerate(bad))).encode()
    def key_file(i, name, auth=False):
        """Tunnel i with its inbound (auth) key read from a file of fuzz_config.c's."""
        lines = tunnels[i].split('\n')
        want = 'in-auth-key = ' if auth else 'in-key = '
        return '\n'.join(('%s-file = %s' % (want[:-3], name)) if x.startswith(want) else x
                         for x in lines)
    good = key_file(0, 'a.key') + key_file(3, 'b.key')
    out['key-files.conf'] = (base + good).encode()
    bad = (key_file(0, 'open.key') + key_file(1, 'two.key') + key_file(2, 'big.key') +
           key_file(4, 'missing.key'))
    out['key-files-bad.conf'] = (base + bad.replace('out-spi = 0x00001002',
                                                    'out-spi = 0x00001001')).encode()
    bad = key_file(5, 'auth.key', auth=True) + key_file(7, '/dev/null') + key_file(6, '../a.key')
    out['key-files-bad2.conf'] = (base + bad).encode()
    out['errors.conf'] = b"""\xef\xbb\xbf# errors of every kind
key = outside
[port a]
id = 99999
role = sideways
address = 300.1.1.1/24, 2001:db8::1/129, 198.18.1.1/24
mtu = 10
unknown = 1
[port a]
id = 0
[port b]
id = 0
role = outside
[neighbor n]
port = c
address = 2001:db8:ff::
mac = ff:ff:ff:ff:ff:ff
[route r]
dst = 10.1.2.3/8
port = b
via = 2001:db8::1
[tunnel t]
local = 198.19.0.9
remote = 2001:db8:ff::2
local-ts = 198.18.1.0/24
remote-ts = 2001:db8:2::/64
cipher = aes512-gcm
out-spi = 12
in-spi = 0x1_0000
out-key = 0xabc
out-key = 0x00
in-key = nothex
replay-window = 100
esn = maybe
df = sometimes
encap = tcp
local-ports = 3
compress = lzo
hard-packets = 5
soft-packets = 10
[tunnel t]
[weird section name with spaces]
[control]
group = no-such-group-here
metrics = 10.0.0.1:
seq-block = 12
[dataplane]
[dataplane]
socket = relative/path
= value
just a line
[unterminated
"""
    # [neighbour] is [neighbor] (British spelling): one name space, one error list
    out['neighbour.conf'] = (base.replace('[neighbor peer6]', '[neighbour peer6]') +
                             '[neighbour peer]\nport = outside\n[neighbour x]\nport = c\n'
                             'address = 198.19.0.9\nmac = 02:00:00:00:00:00:01\n' +
                             tunnels[0]).encode()
    out['long-line.conf'] = ('[port p]\nid = 0\nrole = inside\naddress = ' + '1' * 300 +
                             '\n').encode()
    out['empty.conf'] = b''
    out['host-interface.conf'] = (base.replace('role = outside\n', 'role = outside\n'
                                               'host-interface = dpvpn-out\n') +
                                  '[port third]\nid = 2\nrole = inside\n'
                                  'address = 10.1.0.1/24\nhost-interface = dpvpn-out\n' +
                                  tunnels[0]).encode()
    # keying = ike: fuzz_config.c's key files serve as PSK files (the whole
    # file is the key: a.key and b.key are good ones, open.key is 0644,
    # big.key too long)
    ike = """[tunnel ike%(i)d]
local = %(local)s
remote = %(remote)s
local-ts = %(lts)s
remote-ts = %(rts)s
cipher = %(alg)s
keying = ike
psk-file = %(psk)s
%(extra)s
"""
    good = (ike % dict(i=0, local=OUT4, remote='198.19.0.2', lts='198.18.1.0/24',
                       rts='198.18.2.0/24', alg='aes128-gcm', psk='a.key',
                       extra='local-id = fqdn:gw-a.example\nremote-id = email:vpn@gw-b.example\n'
                             'ike-proposals = aes128gcm16-prfsha256-ecp256, '
                             'aes256gcm16-prfsha256-x25519\nstart = no\ndpd = 10\n'
                             'encap = udp\nlocal-ports = 2\nreplay-window = 4096\n') +
            ike % dict(i=1, local=OUT6, remote='2001:db8:ff::2', lts='2001:db8:1::/64',
                       rts='2001:db8:2::/64', alg='aes256-cbc-sha256', psk='b.key',
                       extra='local-id = keyid:0x0102030405\nremote-id = ip:2001:db8:ff::2\n'
                             'dpd = 0\nmtu = 1400\nfragmentation = no\n'
                             'fragment-size = 576\n'))
    out['ike.conf'] = (base + good + tunnels[0]).encode()
    bad = (ike % dict(i=0, local=OUT4, remote='198.19.0.2', lts='198.18.1.0/24',
                      rts='198.18.2.0/24', alg='chacha20-poly1305', psk='open.key',
                      extra='out-spi = 0x1001\nin-key = 0x00\nout-seq-start = 5\n'
                            'local-id = fqdn:\nremote-id = dn:CN=x\nstart = maybe\n'
                            'ike-proposals = aes128gcm16-prfsha256-modp2048, x, y, z, w\n'
                            'dpd = -1\nfragmentation = maybe\nfragment-size = 100\n') +
           ike % dict(i=1, local=OUT4, remote='198.19.0.3', lts='198.18.1.0/24',
                      rts='198.18.3.0/24', alg='aes128-gcm', psk='big.key',
                      extra='keying = ike\nlocal-id = keyid:0xzz\nremote-id = email:nobody\n'
                            'ike-proposals = aes256gcm16-prfsha256-x25519, '
                            'aes256gcm16-prfsha256-x25519\n') +
           (ike % dict(i=2, local=OUT4, remote='198.19.0.4', lts='198.18.1.0/24',
                       rts='198.18.4.0/24', alg='aes128-gcm', psk='two.key',
                       extra='in-key-file = a.key\n')).replace('keying = ike',
                                                                'keying = ikev1') +
           tunnels[1].replace('cipher =', 'start = yes\ndpd = 5\npsk-file = a.key\n'
                                          'local-id = ip:198.19.0.1\ncipher ='))
    out['ike-bad.conf'] = (base + bad).encode()
    # auth = pubkey ([ikepki]): the keys, dn: identities and remote-id patterns
    # (the files do not exist where the target runs: their errors are parsed too)
    pub = (ike % dict(i=0, local=OUT4, remote='198.19.0.2', lts='198.18.1.0/24',
                      rts='198.18.2.0/24', alg='aes128-gcm', psk='a.key',
                      extra='')).replace(
        'psk-file = a.key\n',
        'auth = pubkey\ncert = pki/gw.pem\nprivate-key = pki/gw.key\nca = pki/cacerts\n'
        'crl = pki/ca.crl\nlocal-id = dn:C=CH, O=Example, CN=gw-a\n'
        'remote-id = dn:CN=*, O=Example\n') + \
        (ike % dict(i=1, local=OUT4, remote='198.19.0.3', lts='198.18.1.0/24',
                    rts='198.18.3.0/24', alg='aes128-gcm', psk='a.key',
                    extra='auth = pubkey\nremote-id = fqdn:*.example.org\n'))
    out['ike-pubkey.conf'] = (base + pub).encode()
    # remote = %any ([ikepki] remote access): pool and dns, good and refused
    ra = ('[tunnel ra]\nlocal = %s\nremote = %%any\nlocal-ts = 198.18.1.0/24\n'
          'keying = ike\nauth = pubkey\ncert = pki/gw.pem\nprivate-key = pki/gw.key\n'
          'ca = pki/cacerts\nremote-id = fqdn:*.example.org\n'
          'pool = 10.10.0.0/24, fd00:10::/120\ndns = 10.10.0.1, 2001:db8::53\n'
          '[tunnel ra-bad]\nlocal = %s\nremote = %%any\nlocal-ts = 198.18.1.0/24\n'
          'remote-ts = 10.20.0.0/24\nkeying = ike\npsk-file = a.key\nstart = yes\n'
          'pool = 10.20.0.1/24, 10.30.0.0/24\ndns = 10.20.0.1, x, ::\n'
          '[tunnel not-ra]\nlocal = %s\nremote = 198.19.0.9\nlocal-ts = 198.18.1.0/24\n'
          'remote-ts = 198.18.9.0/24\nkeying = ike\npsk-file = a.key\n'
          'pool = 10.40.0.0/24\ndns = 10.40.0.1\n'
          '[tunnel client]\nlocal = %s\nremote = 198.19.0.10\nlocal-ts = 0.0.0.0/0\n'
          'remote-ts = 198.18.10.0/24\nkeying = ike\npsk-file = a.key\n'
          'virtual-ip = request\n'
          '[tunnel client-bad]\nlocal = %s\nremote = %%any\nlocal-ts = 198.18.1.0/24\n'
          'keying = ike\npsk-file = a.key\nvirtual-ip = 10.0.0.1\nvirtual-ip = request\n'
          'pool = 10.50.0.0/24\n') % (OUT4, OUT4, OUT4, OUT4, OUT4)
    out['ike-remote-access.conf'] = (base + ra).encode()
    # [ha]: a pair's node, sync channel (b.key is a good sync key: 64 hex
    # digits), virtual addresses, one of them a tunnel's local; then refused
    # values of every key, and the key files that are not one
    ha = ('[ha]\nnode = gw-a\nlocal = 10.255.0.1:4510\npeer = 10.255.0.2\nsync-key = b.key\n'
          'priority = 150\nvirtual-address = outside 198.19.0.10/24\n'
          'virtual-address = inside 198.18.1.10/24\n'
          'virtual-address = outside 2001:db8:ff::10/64 group b\n'
          'virtual-address = inside\t2001:db8:1::10/64 group b\n'
          'takeover-rekey = always\ndead-ms = 900\nheartbeat-ms = 300\n')
    vip_tun = tunnels[0].replace('local = %s' % OUT4, 'local = 198.19.0.10')
    out['ha.conf'] = (base + ha + vip_tun).encode()
    out['ha-ipv6.conf'] = (base + '[ha]\nlocal = [2001:db8:ff::1]:4600\n'
                           'peer = [2001:db8:ff::2]\nsync-key = b.key\n' + tunnels[0]).encode()
    bad = ('[ha]\nnode = gw a\nlocal = [10.255.0.1]\npeer = 2001:db8::2\nsync-key = open.key\n'
           'priority = 0\npriority = 255\nvirtual-address = outside\n'
           'virtual-address = outside 198.19.0.1/24\nvirtual-address = nope 10.9.0.1/24\n'
           'virtual-address = outside 198.19.0.11/0\nvirtual-address = x/y 198.19.0.12/24\n'
           'virtual-address = outside 198.19.0.13/24 group a:b\n'
           'virtual-address = outside 198.19.0.14/24 group c\n'
           'virtual-address = outside 198.19.0.15/24 group d\n'
           'virtual-address = inside 198.19.0.14/32\n'
           'takeover-rekey = maybe\ndead-ms = 100\nheartbeat-ms = 5\nsync = yes\n'
           '[ha]\nlocal = 10.255.0.1\n[ha x]\n' +
           tunnels[0].replace('local = %s' % OUT4, 'local = 198.19.0.14'))
    out['ha-bad.conf'] = (base + bad).encode()
    # one [ha] a file: each of fuzz_config.c's key files that is no sync key
    for k in ('a.key', 'two.key', 'big.key', 'missing.key'):
        out['ha-%s.conf' % k.replace('.', '-')] = (
            base + '[ha]\nlocal = 10.255.0.1\npeer = 10.255.0.1:4510\nsync-key = %s\n'
            'dead-ms = 299\n' % k + tunnels[0]).encode()
    return out


# ---- fuzz_ike_msg ----

def ike_msg_seeds():
    """IKEv2 datagrams built by scapy.contrib.ikev2 (the messages of
    ike/testdata/make_ike_msg_vectors.py), plus IKE_AUTH and
    CREATE_CHILD_SA whose SK body is a real inner chain: the target parses
    an SK body as if decrypted."""
    sys.path.insert(0, os.path.join(HERE, '..', 'ike', 'testdata'))
    import make_ike_msg_vectors as v
    from scapy.contrib.ikev2 import IKEv2, IKEv2_payload_Encrypted
    inner = bytes(v.inner())
    seeds = {'ike-sa-init': bytes(v.sa_init()), 'ike-auth-opaque': bytes(v.ike_auth()),
             'ike-informational-delete': bytes(v.informational())}
    for name, exch, mid in (('ike-auth-inner', 35, 1), ('ike-create-child-inner', 36, 2)):
        seeds[name] = bytes(IKEv2(init_SPI=v.SPI_I, resp_SPI=v.SPI_R, next_payload=v.SK,
                                  exch_type=exch, flags='Initiator', id=mid) /
                            IKEv2_payload_Encrypted(next_payload=v.IDI, load=inner))
    seeds['ike-auth-cert-inner'] = ike_auth_cert_seed(v.SPI_I, v.SPI_R)
    seeds.update(ike_skf_seeds(v.SPI_I, v.SPI_R, inner))
    seeds['ike-auth-cp-inner'] = ike_auth_cp_seed(v.SPI_I, v.SPI_R)
    return seeds


def ike_skf_seeds(spi_i, spi_r, inner):
    """IKE_AUTH as Encrypted Fragments (RFC 7383 2.5): fragment 1 of 3
    whose data is the start of a real inner chain (the target parses it as
    if decrypted), a middle and a last fragment, and hostile ones: total 0,
    number beyond the total, number 0, too many, shorter than its fields."""
    import struct

    def skf(number, total, data, nxt=None, body=None):
        if body is None:
            body = struct.pack('!HH', number, total) + data
        pl = struct.pack('!BBH', (35 if number == 1 else 0) if nxt is None else nxt, 0,
                         4 + len(body)) + body
        return spi_i + spi_r + struct.pack('!BBBBII', 53, 0x20, 35, 0x08, 1, 28 + len(pl)) + pl
    third = (len(inner) + 2) // 3
    return {'ike-skf-1-of-3': skf(1, 3, inner[:third]),
            'ike-skf-2-of-3': skf(2, 3, inner[third:2 * third]),
            'ike-skf-3-of-3': skf(3, 3, inner[2 * third:]),
            'ike-skf-total-0': skf(1, 0, inner[:32]),
            'ike-skf-number-past-total': skf(4, 3, inner[:32]),
            'ike-skf-number-0': skf(0, 3, inner[:32]),
            'ike-skf-too-many': skf(1, 200, inner[:32]),
            'ike-skf-short': skf(1, 1, b'', body=b'\x00\x01')}


def ike_auth_cert_seed(spi_i, spi_r):
    """An IKE_AUTH request whose SK body (as if decrypted) carries what a
    certificate peer sends (the [ikepki] issue): IDi (a DER DN), CERT
    (X.509 signature, a DER stand-in), CERTREQ (two SHA-1 key ids), AUTH
    method 14 (a length, an AlgorithmIdentifier, a signature) and the
    SIGNATURE_HASH_ALGORITHMS notify.  Raw bytes: RFC 7296 3.5-3.10."""
    import struct

    def pl(nxt, body):
        return struct.pack('!BBH', nxt, 0, 4 + len(body)) + body
    dn = bytes.fromhex('3021310b3009060355040613024348311230100603550403130967772e6578616d706c65')
    cert = bytes.fromhex('3082000a3003020107') + bytes(range(8))
    keyids = bytes(range(40))
    ed25519 = bytes.fromhex('300506032b6570')
    auth = bytes([14, 0, 0, 0, len(ed25519)]) + ed25519 + bytes(range(64))
    hashes = bytes.fromhex('0002000300040005')
    inner = (pl(37, bytes([9, 0, 0, 0]) + dn) + pl(38, bytes([4]) + cert) +
             pl(39, bytes([4]) + keyids) + pl(41, auth) +
             pl(0, struct.pack('!BBH', 0, 0, 16431) + hashes))
    sk = pl(35, inner)          # the SK body as the target takes it: as if decrypted
    hdr = spi_i + spi_r + struct.pack('!BBBBII', 46, 0x20, 35, 0x08, 1, 28 + len(sk))
    return hdr + sk


def ike_auth_cp_seed(spi_i, spi_r):
    """An IKE_AUTH request whose SK body (as if decrypted) is what a
    road warrior (strongSwan, vips = 0.0.0.0,::) sends: IDi, CP(CFG_REQUEST)
    with empty INTERNAL_IP4_ADDRESS, IP6_ADDRESS, IP4_DNS, IP6_DNS and a
    private attribute with the reserved bit set, then TSi/TSr of anything.
    Raw bytes: RFC 7296 3.5, 3.13, 3.15 (the [ikepki] issue's remote access)."""
    import struct

    def pl(nxt, body):
        return struct.pack('!BBH', nxt, 0, 4 + len(body)) + body
    attrs = b''.join(struct.pack('!HH', t, 0) for t in (1, 8, 3, 10))
    attrs += struct.pack('!HH', 0xe000, 2) + b'\xab\xcd'
    ts4 = struct.pack('!BBHHH', 7, 0, 16, 0, 65535) + bytes(4) + b'\xff' * 4
    ts = struct.pack('!B3x', 1) + ts4
    inner = (pl(47, bytes([2, 0, 0, 0]) + b'rw.example') +
             pl(44, bytes([1, 0, 0, 0]) + attrs) + pl(45, ts) + pl(0, ts))
    sk = pl(35, inner)
    hdr = spi_i + spi_r + struct.pack('!BBBBII', 46, 0x20, 35, 0x08, 1, 28 + len(sk))
    return hdr + sk


# ---- fuzz_ha_wire: the HA sync channel's frames (control/ha_wire.h) ----

(HA_HELLO, HA_SNAP_BEGIN, HA_SNAP_END, HA_IKE_SET, HA_IKE_DEL, HA_SA_ADD, HA_SA_DEL,
 HA_SEQ, HA_ACK, HA_MARKS, HA_ROLE, HA_POLICY) = range(1, 13)
HA_WIRE_VERSION, DPVPN_PROTO_VERSION = 2, 32
KEEP_MAX = 16384


def ha_frame(mtype, body, seq=1, flags=0, hdr_len=None):
    """Header (u16 type, u16 flags, u32 seq, u32 body length), big-endian, and body."""
    return struct.pack('>HHII', mtype, flags, seq,
                       len(body) if hdr_len is None else hdr_len) + body


def ha_name(s):
    return s.encode().ljust(32, b'\0')


def ha_hello(node=ha_name('gw-a'), role=1, role_b=0):
    return struct.pack('>IIBBBBQ', HA_WIRE_VERSION << 16 | DPVPN_PROTO_VERSION,
                       ctypes.sizeof(SaCfg), role, 100, role_b, 0, 7) + node


def ha_marks(n, count=None):
    return struct.pack('>H', n if count is None else count) + b''.join(
        struct.pack('>IQ', 0x2001 + i, 1000 * i + 64) for i in range(n))


def ha_policy(op, spi, family=4, host_bits=False):
    """A POLICY body: op, src and dst prefixes (family, len, 16 bytes), spi, priority."""
    def prefix(net):
        if family == 4:
            return struct.pack('>BB', 4, 24) + bytes([198, 18, net, 1 if host_bits else 0]) + \
                bytes(12)
        return struct.pack('>BB', 6, 64) + bytes.fromhex(f"20010db80018000{net}") + bytes(8)
    return struct.pack('>B', op) + prefix(2) + prefix(1) + struct.pack('>II', spi, 100)


def ha_wire_seeds():
    """One valid frame of every type (SA_ADD: fuzz_ctl_dp's SAs, host order,
    as dpvpnd builds them), the largest IKE_SET and MARKS, and frames each
    wrong in one field."""
    key = bytes(range(0xa0, 0xb0))
    record = bytes((i * 7 + 3) & 0xff for i in range(200))
    sa_out, sa_in = bytes(sa_cfg(0, False)), bytes(sa_cfg(4, True))
    seq = ha_name('tun0') + struct.pack('>IQ', 0x1001, 1 << 26)
    seeds = {
        'hello': ha_frame(HA_HELLO, ha_hello()),
        'snap-begin': ha_frame(HA_SNAP_BEGIN, struct.pack('>Q', 7), seq=2),
        'snap-end': ha_frame(HA_SNAP_END, struct.pack('>I', 12), seq=15),
        'ike-set': ha_frame(HA_IKE_SET, key + struct.pack('>I', len(record)) + record, seq=3),
        'ike-set-largest': ha_frame(HA_IKE_SET, key + struct.pack('>I', KEEP_MAX) +
                                    bytes(i & 0xff for i in range(KEEP_MAX)), seq=4),
        'ike-del': ha_frame(HA_IKE_DEL, key, seq=5),
        'sa-add-out': ha_frame(HA_SA_ADD, struct.pack('>I', len(sa_out)) + sa_out, seq=6),
        'sa-add-in': ha_frame(HA_SA_ADD, struct.pack('>I', len(sa_in)) + sa_in, seq=7),
        'sa-del': ha_frame(HA_SA_DEL, ha_name('tun0') + struct.pack('>IB', 0x2001, 1), seq=8),
        'seq': ha_frame(HA_SEQ, seq, seq=9),
        'ack': ha_frame(HA_ACK, struct.pack('>I', 9), seq=10),
        'marks-1': ha_frame(HA_MARKS, ha_marks(1), seq=11),
        'marks-256': ha_frame(HA_MARKS, ha_marks(256), seq=12),
        'role': ha_frame(HA_ROLE, struct.pack('>BQB', 2, 8, 1), seq=13),
        'policy-add': ha_frame(HA_POLICY, ha_policy(1, 0x2001), seq=14),
        'policy-del6': ha_frame(HA_POLICY, ha_policy(2, 0, family=6), seq=15),
        # each refused, for one field
        'bad-short-header': ha_frame(HA_ACK, b'')[:5],
        'bad-flags': ha_frame(HA_ACK, struct.pack('>I', 9), flags=1),
        'bad-type': ha_frame(99, struct.pack('>I', 9)),
        'bad-hdr-len': ha_frame(HA_ACK, struct.pack('>I', 9), hdr_len=5),
        'bad-trailing-byte': ha_frame(HA_SEQ, seq + b'\0'),
        'bad-hello-node': ha_frame(HA_HELLO, ha_hello(node=b'n' * 32)),
        'bad-hello-role': ha_frame(HA_HELLO, ha_hello(role=3)),
        'bad-ike-set-len': ha_frame(HA_IKE_SET, key + struct.pack('>I', 20000) + record),
        'bad-sa-add-len': ha_frame(HA_SA_ADD, struct.pack('>I', 500) + sa_out[:500]),
        'bad-sa-del-dir': ha_frame(HA_SA_DEL, ha_name('tun0') + struct.pack('>IB', 0x2001, 0)),
        'bad-seq-limit': ha_frame(HA_SEQ, ha_name('tun0') + struct.pack('>IQ', 0x1001, 0)),
        'bad-marks-count': ha_frame(HA_MARKS, ha_marks(3, count=4)),
        'bad-role': ha_frame(HA_ROLE, struct.pack('>BQB', 3, 8, 0)),
        'bad-role-b': ha_frame(HA_ROLE, struct.pack('>BQB', 1, 8, 3)),
        'bad-hello-role-b': ha_frame(HA_HELLO, ha_hello(role_b=7)),
        'bad-policy-op': ha_frame(HA_POLICY, ha_policy(3, 0x2001)),
        'bad-policy-host-bits': ha_frame(HA_POLICY, ha_policy(1, 0x2001, host_bits=True)),
    }
    return seeds


def main():
    targets = {'fuzz_esp_in': esp_in_seeds, 'fuzz_ip': ip_seeds, 'fuzz_ctl_dp': ctl_dp_seeds,
               'fuzz_ctl_d': ctl_d_seeds, 'fuzz_config': config_seeds,
               'fuzz_ike_msg': ike_msg_seeds, 'fuzz_ha_wire': ha_wire_seeds}
    only = sys.argv[1:]         # make_seeds.py [TARGET...]: just these
    for target, make in targets.items():
        if only and target not in only:
            continue
        d = os.path.join(CORPUS, target)
        os.makedirs(d, exist_ok=True)
        for old in os.listdir(d):
            if old.startswith('seed-'):
                os.unlink(os.path.join(d, old))
        seeds = make()
        for name, data in seeds.items():
            write(target, name, bytes(data))
        print('%s: %d seeds, %d bytes' % (target, len(seeds),
                                          sum(len(bytes(v)) for v in seeds.values())))
    return 0


if __name__ == '__main__':
    sys.exit(main())
