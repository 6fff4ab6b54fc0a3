# SPDX-License-Identifier: BSD-3-Clause
"""espgen: long ESP captures with rising sequence numbers, fast.

dpbench's decap rows run with anti-replay on, so every packet the dataplane
decrypts must carry a sequence number it has not seen: the capture is long
(hundreds of thousands of packets) and each tunnel's packets count up from 1.
scapy seals a few thousand packets a second; this seals them with Python's
`cryptography` (which scapy uses underneath) and writes the pcap by hand,
about 100 000 to 300 000 packets a second.  The frames are what scapy's
SecurityAssociation would make (tests/test_fast_harness.py checks one
against it): outer IPv4 without options, ESP header, IV, ciphertext of the
inner packet + RFC 4303 padding (1, 2, 3, ...) + pad length + next header 4,
ICV.
"""
import hashlib
import hmac
import struct

from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM, ChaCha20Poly1305

PCAP_HEADER = struct.pack("<IHHiIII", 0xa1b2c3d4, 2, 4, 0, 0, 65535, 1)   # Ethernet
NH_IPV4 = 4
# cipher: (kind, key bytes, salt bytes, IV bytes, ICV bytes, HMAC digest, block)
TRANSFORMS = {
    "aes128-gcm": ("gcm", 16, 4, 8, 16, None, 4),
    "aes256-gcm": ("gcm", 32, 4, 8, 16, None, 4),
    "chacha20-poly1305": ("chacha", 32, 4, 8, 16, None, 4),
    "aes128-cbc-sha1": ("cbc", 16, 0, 16, 12, "sha1", 16),
    "aes256-cbc-sha1": ("cbc", 32, 0, 16, 12, "sha1", 16),
    "aes128-cbc-sha256": ("cbc", 16, 0, 16, 16, "sha256", 16),
    "aes256-cbc-sha256": ("cbc", 32, 0, 16, 16, "sha256", 16),
    "null-sha256": ("null", 0, 0, 0, 16, "sha256", 4),
}


def _csum(hdr):
    s = sum(struct.unpack(f"!{len(hdr) // 2}H", hdr))
    while s >> 16:
        s = (s & 0xffff) + (s >> 16)
    return (~s) & 0xffff


def _ip4(a):
    return bytes(int(x) for x in a.split("."))


class Sealer:
    """One inbound SA as its peer sees it: seals inner IPv4 packets."""

    def __init__(self, cipher, key, auth_key):
        (self.kind, klen, slen, self.iv_len, self.icv, self.md,
         self.block) = TRANSFORMS[cipher]
        self.key, self.salt, self.auth_key = key[:klen], key[klen:klen + slen], auth_key
        if self.kind == "gcm":
            self.aead = AESGCM(self.key)
        elif self.kind == "chacha":
            self.aead = ChaCha20Poly1305(self.key)

    def trailer(self, inner):
        """RFC 4303 2.4: pad (1, 2, 3, ...) to the block, pad length, next header."""
        pad = -(len(inner) + 2) % self.block
        return inner + bytes(range(1, pad + 1)) + bytes((pad, NH_IPV4))

    def seal(self, spi, seq, inner):
        """ESP header through ICV for one inner packet."""
        hdr = struct.pack("!II", spi, seq)
        plain = self.trailer(inner)
        if self.kind in ("gcm", "chacha"):
            iv = struct.pack("!Q", seq)     # unique per key: the sequence number
            return hdr + iv + self.aead.encrypt(self.salt + iv, plain, hdr)
        if self.kind == "cbc":
            iv = hashlib.md5(hdr).digest()  # any unpredictable-enough value will do here
            enc = Cipher(algorithms.AES(self.key), modes.CBC(iv)).encryptor()
            body = hdr + iv + enc.update(plain) + enc.finalize()
        else:
            body = hdr + plain
        return body + hmac.digest(self.auth_key, body, self.md)[:self.icv]


def outer_header(src, dst, esp_len):
    """Outer IPv4 (no options, TTL 64, protocol 50) for an ESP payload."""
    h = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + esp_len, 0, 0, 64, 50, 0,
                    _ip4(src), _ip4(dst))
    return h[:10] + struct.pack("!H", _csum(h)) + h[12:]


def write(path, frames, packets):
    """A pcap of `packets` frames: frames is an iterator of bytes."""
    with open(path, "wb", buffering=1 << 20) as f:
        f.write(PCAP_HEADER)
        for _ in range(packets):
            fr = next(frames)
            f.write(struct.pack("<IIII", 0, 0, len(fr), len(fr)) + fr)


def esp_frames(cipher, key, auth_key, flows, eth, src, dst):
    """Endless Ethernet frames for flows [(spi, inner bytes), ...], round robin;
    each SPI's sequence numbers count up from 1.  eth: the 14-byte header."""
    sealer = Sealer(cipher, key, auth_key)
    seqs = {}
    while True:
        for spi, inner in flows:
            seq = seqs[spi] = seqs.get(spi, 0) + 1
            esp = sealer.seal(spi, seq, inner)
            yield eth + outer_header(src, dst, len(esp)) + esp
