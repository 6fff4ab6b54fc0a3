/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * esp.h - ESP tunnel mode (RFC 4303), IPv4 in IPv4, with the transforms of
 * dpvpn_alg.h: AES-GCM (RFC 4106), ChaCha20-Poly1305 (RFC 7634), AES-CBC
 * with HMAC-SHA1-96 or HMAC-SHA-256-128 (RFC 3602, 2404, 4868) and NULL with
 * HMAC-SHA-256-128 (RFC 2410).
 *
 * Burst stages in the DPDK style: each takes packets whose data starts at an
 * IPv4 header, processes the whole burst (one crypto_run for all of it),
 * counts and frees the packets it drops, and returns the good ones compacted
 * at the front of pkts[], still starting at an IPv4 header (outer after
 * encap, inner after decap).
 *
 * Wire format built and accepted:
 *   outer IPv4 | [UDP] | SPI (4) | seq (4) | IV | inner IPv4 | pad | padlen | 4 | ICV
 * AEAD: the IV (8) is the 64-bit sequence number, unique under a key as RFC
 * 4106 and 7634 ask; the nonce is salt (4) || IV (8); the AAD is SPI || seq.
 * CBC: the IV (16) is random; the payload is padded to 16 bytes; the ICV
 * (12 or 16) is a truncated HMAC over SPI, seq, IV and ciphertext.  NULL:
 * no IV, padding to 4, HMAC as for CBC.
 */
#ifndef ESP_H
#define ESP_H

#include <stdint.h>

#include <string.h>

#include <rte_byteorder.h>
#include <rte_mbuf.h>

#include "crypto.h"
#include "dp.h"
#include "sa.h"

/*
 * The AAD (RFC 4106 5): SPI || sequence number as in the packet, or with
 * ESN SPI || high half || low half, built in the op.
 */
static inline void
esp_aad(struct crypto_op *op, const struct sa *sa, const uint8_t *esp, uint64_t seq)
{
	rte_be32_t hi = rte_cpu_to_be_32((uint32_t)(seq >> 32));

	if (!sa->esn) {
		op->aad = esp;
		op->aad_len = ESP_HDR_LEN;
		return;
	}
	memcpy(op->aad_buf, esp, 4);
	memcpy(op->aad_buf + 4, &hi, 4);
	memcpy(op->aad_buf + 8, esp + 4, 4);
	op->aad = op->aad_buf;
	op->aad_len = 12;
}
/*
 * CBC/NULL + HMAC: what the ICV covers (ESP header, IV, payload, and with
 * ESN the high sequence half after it, RFC 4303 2.2.1).  Call once op->data,
 * len, dir and tag are set.
 */
static inline void
esp_hmac_span(struct crypto_op *op, const struct sa *sa, uint8_t *esp, uint64_t seq)
{
	rte_be32_t hi = rte_cpu_to_be_32((uint32_t)(seq >> 32));

	op->auth = esp;
	op->auth_len = ESP_HDR_LEN + sa->iv_len + op->len;
	if (!sa->esn)
		return;
	/* RFC 4303 2.2.1: with ESN the high half is hashed after the payload
	 * but not sent.  It goes where the ICV sits; the received ICV was
	 * moved aside first, and an outgoing one is written after hashing. */
	if (op->dir == CRYPTO_DECRYPT) {
		memcpy(op->rx_icv, op->tag, sa->icv_len);
		op->tag = op->rx_icv;
	}
	memcpy(esp + op->auth_len, &hi, sizeof(hi));
	op->auth_len += sizeof(hi);
}

/*
 * port: the inside port the packets came in on (ICMP errors come from its
 * address).  Returns the ESP packets to send, at the front of pkts[]; ICMP
 * errors (too big, TTL expired) go to out, to be sent after them.  When
 * fragments are involved the whole burst goes to out, in order, and 0 is
 * returned.
 */
uint16_t esp_encap_burst(struct dp_worker *w, struct dp_lstats *st, const struct dp_port *port,
			 struct rte_mbuf **pkts, uint16_t n, struct dp_out *out);
/*
 * esp_encap_burst for decrypted packets routed into another tunnel
 * (transit): their TTL step is taken already (route_tx), none here.
 */
uint16_t esp_encap_transit(struct dp_worker *w, struct dp_lstats *st,
			   const struct dp_port *port, struct rte_mbuf **pkts, uint16_t n,
			   struct dp_out *out);
/*
 * One packet the host wrote into a tunnel twin (host.h), into sa, the
 * tunnel's outbound SA: no policy or route chooses it and its TTL is
 * neither checked nor lowered (the host originates it: eBGP's TTL 1, GTSM's
 * 255).  1: m is the
 * ESP packet to send; 0: dropped, or it went to out (outer fragments).
 */
uint16_t esp_encap_sa(struct dp_worker *w, struct dp_lstats *st, struct rte_mbuf *m,
		      struct sa *sa, struct dp_out *out);
/*
 * port: the outside port the packets came in on (its address is checked).
 * Returns the inner packets to forward, at the front of pkts[], their TTL /
 * hop limit as they came (the output stage takes the step: route_tx with a
 * struct dp_fwd, ip_output.h); inner packets addressed to the gateway
 * itself go to self (empty when called).
 */
uint16_t esp_decap_burst(struct dp_worker *w, struct dp_lstats *st,
			 const struct dp_port *port, struct rte_mbuf **pkts, uint16_t n,
			 struct dp_out *self);

#endif /* ESP_H */
