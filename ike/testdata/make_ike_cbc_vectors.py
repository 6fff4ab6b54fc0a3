#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Known answers for test_ike_crypto.c's SK payload with ENCR_AES_CBC and
AUTH_HMAC_SHA2_* (RFC 7296 3.14, RFC 4868), computed independently of
ike_crypto.c with the Python `cryptography` package and hmac.  Prints C
string constants to paste into the test; the inputs are fixed patterns."""
import hashlib
import hmac

from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

AAD = bytes(range(0x20, 0x20 + 32))          # an IKE header + SK generic header
IV = bytes(range(0x40, 0x50))
PLAIN = bytes(range(0x60, 0x60 + 47)) + b"\x00"  # payloads, pad length 0: 48 bytes

CASES = [  # name, AES key bytes, hash, ICV bytes
    ("128_sha256", 16, hashlib.sha256, 16),
    ("256_sha384", 32, hashlib.sha384, 24),
    ("256_sha512", 32, hashlib.sha512, 32),
]

for name, klen, h, icv_len in CASES:
    ek = bytes((0x01 + i) & 0xFF for i in range(klen))
    ak = bytes((0x80 + i) & 0xFF for i in range(h().digest_size))
    enc = Cipher(algorithms.AES(ek), modes.CBC(IV)).encryptor()
    ct = enc.update(PLAIN) + enc.finalize()
    icv = hmac.new(ak, AAD + IV + ct, h).digest()[:icv_len]
    print(f'#define CBC_{name.upper()}\t"{(ct + icv).hex()}"')
