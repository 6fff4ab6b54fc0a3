# SPDX-License-Identifier: BSD-3-Clause
"""An independent ESP peer for the oracle tests: scapy's ESP (with Python's
`cryptography` underneath) plus Python's hmac where scapy 2.5 falls short.

scapy 2.5 builds and opens ESP for every transform dpvpn has, but its ESP
HMAC ignores extended sequence numbers (it hashes the ESN high half only for
AH), so for CBC/NULL + HMAC with ESN the ICV is computed here with hmac over
ESP header | IV | ciphertext | high half (RFC 4303 2.2.1).  The outer header
(IPv4 or IPv6, with or without the RFC 3948 UDP header) is built here too,
which also steps around scapy 2.5's NAT-T UDP length bug.
"""
import hashlib
import hmac
import secrets
import struct

from scapy.all import IP, UDP, Raw
from scapy.layers.inet6 import IPv6
from scapy.layers.ipsec import ESP, SecurityAssociation

# name: (scapy crypt, key bytes, salt bytes, scapy auth, auth key bytes, ICV, hash)
CIPHERS = {
    "aes128-gcm": ("AES-GCM", 16, 4, "NULL", 0, 16, None),
    "aes256-gcm": ("AES-GCM", 32, 4, "NULL", 0, 16, None),
    "aes128-cbc-sha1": ("AES-CBC", 16, 0, "HMAC-SHA1-96", 20, 12, hashlib.sha1),
    "aes256-cbc-sha1": ("AES-CBC", 32, 0, "HMAC-SHA1-96", 20, 12, hashlib.sha1),
    "aes128-cbc-sha256": ("AES-CBC", 16, 0, "SHA2-256-128", 32, 16, hashlib.sha256),
    "aes256-cbc-sha256": ("AES-CBC", 32, 0, "SHA2-256-128", 32, 16, hashlib.sha256),
    "chacha20-poly1305": ("CHACHA20-POLY1305", 32, 4, "NULL", 0, 16, None),
    "null-sha256": ("NULL", 0, 0, "SHA2-256-128", 32, 16, hashlib.sha256),
}

IPPROTO_ESP, IPPROTO_UDP = 50, 17


def ip_version(addr):
    return 6 if ":" in addr else 4


class SA:
    """One direction of a tunnel: its SPI and keys, from the peer's side."""

    def __init__(self, cipher, spi, src, dst, udp=False, esn=False):
        (self.crypt, klen, slen, self.auth, alen, self.icv, self.hash) = CIPHERS[cipher]
        self.cipher, self.spi, self.src, self.dst = cipher, spi, src, dst
        self.udp, self.esn = udp, esn
        self.key = secrets.token_bytes(klen + slen) if klen else b""
        self.auth_key = secrets.token_bytes(alen) if alen else b""

    def conf_keys(self, direction):
        """The tunnel's config lines for these keys (direction: out or in)."""
        lines = []
        if self.key:
            lines.append(f"{direction}-key = 0x{self.key.hex()}")
        if self.auth_key:
            lines.append(f"{direction}-auth-key = 0x{self.auth_key.hex()}")
        return "\n".join(lines) + "\n"

    def _scapy(self, with_auth=True):
        kw = {"crypt_key": self.key or None}
        auth = self.auth if with_auth else "NULL"
        if auth != "NULL":
            kw["auth_key"] = self.auth_key
        return SecurityAssociation(ESP, spi=self.spi, crypt_algo=self.crypt, auth_algo=auth,
                                   esn_en=self.esn, **kw)

    def _hmac_esn(self, esp, hi):
        return hmac.new(self.auth_key, esp + struct.pack("!L", hi),
                        self.hash).digest()[:self.icv]

    def outer(self, esp):
        """ESP bytes in the outer header(s) from src to dst."""
        payload = Raw(esp)
        if self.udp:
            payload = UDP(sport=4500, dport=4500, len=8 + len(esp), chksum=0) / payload
        proto = IPPROTO_UDP if self.udp else IPPROTO_ESP
        if ip_version(self.src) == 4:
            return bytes(IP(src=self.src, dst=self.dst, proto=proto, ttl=64) / payload)
        return bytes(IPv6(src=self.src, dst=self.dst, nh=proto, hlim=64) / payload)

    def seal(self, inner, seq):
        """inner (an IP or IPv6 packet) as ESP with 64-bit sequence number seq."""
        hi, lo = seq >> 32, seq & 0xffffffff
        assert self.esn or hi == 0
        manual = self.esn and self.hash is not None
        sa = self._scapy(with_auth=not manual)
        # tunnel mode: the ESP payload is the whole inner packet
        tunnel = IP(src="192.0.2.1", dst="192.0.2.2") / inner
        p = sa.encrypt(tunnel, seq_num=lo, esn_en=self.esn, esn=hi)
        esp = bytes(p[ESP])
        # scapy took the placeholder header's payload type from the inner packet
        if manual:
            esp += self._hmac_esn(esp, hi)
        return self.outer(esp)

    def open(self, outer, seq):
        """The inner packet's bytes from an ESP packet with sequence number seq;
        raises if the ICV does not check out."""
        hi = seq >> 32
        esp = esp_of(outer)
        spi, lo = struct.unpack("!LL", esp[:8])
        assert spi == self.spi and lo == seq & 0xffffffff, (hex(spi), lo, seq)
        if self.hash is not None:
            body, icv = esp[:-self.icv], esp[-self.icv:]
            want = (self._hmac_esn(body, hi) if self.esn else
                    hmac.new(self.auth_key, body, self.hash).digest()[:self.icv])
            if not hmac.compare_digest(icv, want):
                raise ValueError("ICV mismatch")
            if not self.esn:    # scapy checks it too, where it can
                self._scapy().auth_algo.verify(ESP(esp), self.auth_key)
            esp = body
        sa = self._scapy(with_auth=False)
        icv = sa.crypt_algo.icv_size or 0
        plain = sa.crypt_algo.decrypt(sa, ESP(esp), sa.crypt_key, icv, esn_en=self.esn, esn=hi)
        want_nh = 4 if plain.data[0] >> 4 == 4 else 41
        assert plain.nh == want_nh, f"next header {plain.nh} for an IPv{plain.data[0] >> 4} packet"
        return bytes(plain.data)


def tunnel_conf(name, out, inb, local_ts, remote_ts, extra=""):
    """A [tunnel] section for a pair of SAs as dpvpn sees them: out (dpvpn
    sends, the peer opens) and inb (the peer sends); extra: more lines."""
    return (f"\n[tunnel {name}]\nlocal = {out.src}\nremote = {out.dst}\n"
            f"local-ts = {local_ts}\nremote-ts = {remote_ts}\ncipher = {out.cipher}\n"
            f"out-spi = {out.spi:#x}\nin-spi = {inb.spi:#x}\n" + out.conf_keys("out") +
            inb.conf_keys("in") + ("encap = udp\n" if out.udp else "") +
            ("esn = yes\n" if out.esn else "") + extra)


def esp_of(outer):
    """The ESP bytes of an outer IPv4/IPv6 packet, behind UDP or not."""
    if outer[0] >> 4 == 4:
        ihl = (outer[0] & 0x0f) * 4
        proto, rest = outer[9], outer[ihl:]
    else:
        proto, rest = outer[6], outer[40:]
    if proto == IPPROTO_UDP:
        return rest[8:]
    assert proto == IPPROTO_ESP, proto
    return rest
