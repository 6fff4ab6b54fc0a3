/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * esp.h - ESP tunnel mode (RFC 4303) with AES-GCM (RFC 4106), IPv4 in IPv4.
 *
 * Burst stages in the DPDK style: each takes packets whose data starts at an
 * IPv4 header, processes the whole burst (one crypto_run for all of it),
 * counts and frees the packets it drops, and returns the good ones compacted
 * at the front of pkts[], still starting at an IPv4 header (outer after
 * encap, inner after decap).
 *
 * Wire format built and accepted:
 *   outer IPv4 | SPI (4) | seq (4) | IV (8) | inner IPv4 | pad | padlen | 4 | ICV (16)
 * The IV is the 64-bit sequence number, unique under a key as RFC 4106 asks;
 * the nonce is salt (4) || IV (8); the AAD is SPI || seq.
 */
#ifndef ESP_H
#define ESP_H

#include <stdint.h>

#include <rte_mbuf.h>

#include "dp.h"

struct crypto_op;
struct sa;

/*
 * The AAD (RFC 4106 5): SPI || sequence number as in the packet, or with
 * ESN SPI || high half || low half, built in the op.
 */
void esp_aad(struct crypto_op *op, const struct sa *sa, const uint8_t *esp, uint64_t seq);

uint16_t esp_encap_burst(struct dp_worker *w, struct dp_lstats *st,
			 struct rte_mbuf **pkts, uint16_t n);
/* port: the outside port the packets came in on (its address is checked). */
uint16_t esp_decap_burst(struct dp_worker *w, struct dp_lstats *st,
			 const struct dp_port *port, struct rte_mbuf **pkts, uint16_t n);

#endif /* ESP_H */
