#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""Print ike/testdata/ike_msg_vectors.h: IKEv2 messages built by scapy's
IKEv2 layer (scapy.contrib.ikev2, an implementation independent of ours), so
that test_ike_msg checks the codec against bytes it did not produce itself.

    /usr/bin/python3 ike/testdata/make_ike_msg_vectors.py \
        > ike/testdata/ike_msg_vectors.h

Every next-payload and length field that scapy would have to guess is set by
hand: scapy 2.5's automatic chaining leaves the SA payload's next-payload at 0,
and its ID and Notify lengths ignore the ID data and the Notify SPI.  Each
message is dissected again by scapy and compared, as a check of the vector.
The Delete payload has no fields in scapy 2.5, so its body is packed here.
Nothing is random: the output is the same on every run.
"""
import struct
import sys

import scapy
from scapy.contrib.ikev2 import (IKEv2, IKEv2_payload_AUTH, IKEv2_payload_Delete,
                                 IKEv2_payload_Encrypted, IKEv2_payload_IDi,
                                 IKEv2_payload_IDr, IKEv2_payload_KE, IKEv2_payload_Nonce,
                                 IKEv2_payload_Notify, IKEv2_payload_Proposal,
                                 IKEv2_payload_SA, IKEv2_payload_Transform,
                                 IKEv2_payload_TSi, IKEv2_payload_TSr, IPv4TrafficSelector,
                                 IPv6TrafficSelector)

# Payload types, RFC 7296 section 3.2.
SA, KE, IDI, IDR, AUTH, NONCE, NOTIFY, DELETE, TSI, TSR, SK = (
    33, 34, 35, 36, 39, 40, 41, 42, 44, 45, 46)
LAST_PROP, MORE_PROP, LAST_TR, MORE_TR = 0, 2, 0, 3

SPI_I = bytes(range(0x01, 0x09))
SPI_R = bytes(range(0x11, 0x19))
KE_DATA = bytes(range(0x80, 0xC0))		# 64 bytes: an ECP-256 x || y
NONCE_DATA = bytes(range(0x20, 0x40))		# 32 bytes
NATD_SRC = bytes(range(0xA0, 0xB4))		# 20 bytes: a SHA-1 digest's size
NATD_DST = bytes(range(0xB0, 0xC4))
SK_BODY = bytes(range(0x40, 0x40 + 88))		# IV 8 + ciphertext 64 + ICV 16
ID_FQDN = b"gw-a.example.net"
AUTH_DATA = bytes(range(0x60, 0x80))		# 32 bytes: an HMAC-SHA-256
ESP_SPI = bytes([0xC0, 0x01, 0x02, 0x03])
REKEY_SPI = bytes([0xC0, 0x0F, 0xFE, 0xE0])
DEL_SPIS = bytes([0xC1, 0x00, 0x00, 0x01, 0xC1, 0x00, 0x00, 0x02])


def tr(ttype, tid, more, key_len=None):
	if key_len is None:
		return IKEv2_payload_Transform(next_payload=more, length=8, transform_type=ttype,
					       transform_id=tid)
	return IKEv2_payload_Transform(next_payload=more, length=12, transform_type=ttype,
				       transform_id=tid, key_length=key_len)


def chain(*parts):
	out = parts[0]
	for p in parts[1:]:
		out = out / p
	return out


def sa_init():
	p1 = IKEv2_payload_Proposal(next_payload=MORE_PROP, proposal=1, proto=1, trans_nb=4,
				    trans=chain(tr(1, 20, MORE_TR, 256), tr(2, 5, MORE_TR),
						tr(4, 19, MORE_TR), tr(4, 31, LAST_TR)))
	p2 = IKEv2_payload_Proposal(next_payload=LAST_PROP, proposal=2, proto=1, trans_nb=4,
				    trans=chain(tr(1, 12, MORE_TR, 128), tr(2, 5, MORE_TR),
						tr(3, 12, MORE_TR), tr(4, 19, LAST_TR)))
	return IKEv2(init_SPI=SPI_I, resp_SPI=bytes(8), next_payload=SA, exch_type=34,
		     flags="Initiator", id=0) / \
		IKEv2_payload_SA(next_payload=KE, prop=p1 / p2) / \
		IKEv2_payload_KE(next_payload=NONCE, group=19, load=KE_DATA) / \
		IKEv2_payload_Nonce(next_payload=NOTIFY, load=NONCE_DATA) / \
		IKEv2_payload_Notify(next_payload=NOTIFY, proto=0, type=16388, load=NATD_SRC) / \
		IKEv2_payload_Notify(next_payload=0, proto=0, type=16389, load=NATD_DST)


def ike_auth():
	return IKEv2(init_SPI=SPI_I, resp_SPI=SPI_R, next_payload=SK, exch_type=35,
		     flags="Initiator", id=1) / \
		IKEv2_payload_Encrypted(next_payload=IDI, load=SK_BODY)


def informational():
	esp = struct.pack("!BBH", 3, 4, 2) + DEL_SPIS
	ike = struct.pack("!BBH", 1, 0, 0)
	return IKEv2(init_SPI=SPI_I, resp_SPI=SPI_R, next_payload=DELETE, exch_type=37,
		     flags=0, id=7) / \
		IKEv2_payload_Delete(next_payload=DELETE, vendorID=esp) / \
		IKEv2_payload_Delete(next_payload=0, vendorID=ike)


def inner():
	"""The decrypted body of an IKE_AUTH request: a payload chain, first IDi."""
	prop = IKEv2_payload_Proposal(next_payload=LAST_PROP, proposal=1, proto=3, SPIsize=4,
				      SPI=ESP_SPI, trans_nb=2,
				      trans=chain(tr(1, 20, MORE_TR, 256), tr(5, 0, LAST_TR)))
	ts4 = IPv4TrafficSelector(IP_protocol_ID=0, start_port=0, end_port=65535,
				  starting_address_v4="10.1.0.0", ending_address_v4="10.1.0.255")
	ts6 = IPv6TrafficSelector(IP_protocol_ID=17, length=40, start_port=500, end_port=500,
				  starting_address_v6="2001:db8:1::",
				  ending_address_v6="2001:db8:1::ffff")
	tsr = IPv4TrafficSelector(IP_protocol_ID=6, start_port=1024, end_port=2047,
				  starting_address_v4="10.2.0.0", ending_address_v4="10.2.255.255")
	return IKEv2_payload_IDi(next_payload=IDR, length=8 + len(ID_FQDN), IDtype=2,
				 ID=ID_FQDN) / \
		IKEv2_payload_IDr(next_payload=AUTH, length=12, IDtype=1, ID="198.19.0.2") / \
		IKEv2_payload_AUTH(next_payload=SA, auth_type=2, load=AUTH_DATA) / \
		IKEv2_payload_SA(next_payload=TSI, prop=prop) / \
		IKEv2_payload_TSi(next_payload=TSR, traffic_selector=[ts4, ts6]) / \
		IKEv2_payload_TSr(next_payload=NOTIFY, traffic_selector=[tsr]) / \
		IKEv2_payload_Notify(next_payload=NOTIFY, proto=0, type=16384) / \
		IKEv2_payload_Notify(next_payload=0, proto=3, SPIsize=4, SPI=REKEY_SPI,
				     length=12, type=16393)


def carray(name, data):
	lines = ["static const uint8_t %s[%d] = {" % (name, len(data))]
	for i in range(0, len(data), 12):
		lines.append("\t" + ", ".join("0x%02x" % b for b in data[i:i + 12]) + ",")
	lines.append("};")
	return "\n".join(lines)


def check(name, pkt, cls):
	raw = bytes(pkt)
	again = bytes(cls(raw))
	if again != raw:
		sys.exit("%s: scapy does not read back what it built" % name)
	return raw


def main():
	msgs = [
		("ike_v_sa_init", check("sa_init", sa_init(), IKEv2)),
		("ike_v_ike_auth", check("ike_auth", ike_auth(), IKEv2)),
		("ike_v_informational", check("informational", informational(), IKEv2)),
		("ike_v_inner", check("inner", inner(), IKEv2_payload_IDi)),
	]
	data = [
		("ike_v_spi_i", SPI_I), ("ike_v_spi_r", SPI_R), ("ike_v_ke_data", KE_DATA),
		("ike_v_nonce", NONCE_DATA), ("ike_v_natd_src", NATD_SRC),
		("ike_v_natd_dst", NATD_DST), ("ike_v_sk_body", SK_BODY),
		("ike_v_id_fqdn", ID_FQDN), ("ike_v_auth_data", AUTH_DATA),
		("ike_v_esp_spi", ESP_SPI), ("ike_v_rekey_spi", REKEY_SPI),
		("ike_v_del_spis", DEL_SPIS),
	]
	print("/* SPDX-License-Identifier: BSD-3-Clause */")
	print("/*")
	print(" * ike_msg_vectors.h - IKEv2 messages built by scapy %s (scapy.contrib.ikev2)"
	      % scapy.VERSION)
	print(" * for test_ike_msg.c.  Generated by make_ike_msg_vectors.py: do not edit.")
	print(" * ike_v_inner is a payload chain without an IKE header (first payload IDi).")
	print(" */")
	print("#ifndef DPVPN_IKE_MSG_VECTORS_H")
	print("#define DPVPN_IKE_MSG_VECTORS_H")
	print()
	print("#include <stdint.h>")
	for name, raw in msgs + data:
		print()
		print(carray(name, raw))
	print()
	print("#endif /* DPVPN_IKE_MSG_VECTORS_H */")


if __name__ == "__main__":
	main()
