/* SPDX-License-Identifier: BSD-3-Clause */
/* esp_encap.c - outbound: policy lookup, ESP tunnel encapsulation, encryption. */
#include <string.h>

#include <rte_byteorder.h>
#include <rte_ip.h>

#include "crypto.h"
#include "esp.h"
#include "sa.h"
#include "spd.h"

#define ESP_PREPEND	(sizeof(struct rte_ipv4_hdr) + ESP_HDR_LEN + ESP_IV_LEN)

static void
build_outer(struct dp_worker *w, const struct sa *sa, struct rte_ipv4_hdr *outer,
	    uint8_t inner_tos, uint16_t total)
{
	outer->version_ihl = RTE_IPV4_VHL_DEF;
	/* DSCP is copied from the inner header; ECN is not (RFC 6040 is [esp]). */
	outer->type_of_service = inner_tos & ~RTE_IPV4_HDR_ECN_MASK;
	outer->total_length = rte_cpu_to_be_16(total);
	outer->packet_id = rte_cpu_to_be_16((uint16_t)w->ip_id++);
	outer->fragment_offset = 0;
	outer->time_to_live = ESP_OUTER_TTL;
	outer->next_proto_id = IPPROTO_ESP;
	outer->src_addr = sa->local;
	outer->dst_addr = sa->remote;
	outer->hdr_checksum = 0;
	outer->hdr_checksum = rte_ipv4_cksum(outer);
}

/*
 * Turn m (an inner IPv4 packet) into an ESP packet for sa and describe the
 * encryption in op.  Returns DPVPN_DROP_MAX on success.
 */
static enum dpvpn_drop_reason
encap_one(struct dp_worker *w, struct sa *sa, struct rte_mbuf *m, struct crypto_op *op)
{
	uint16_t inner_len = rte_pktmbuf_data_len(m);
	uint16_t pad = (uint16_t)(-(inner_len + ESP_TRAILER_LEN) & 3);
	uint8_t inner_tos = rte_pktmbuf_mtod(m, struct rte_ipv4_hdr *)->type_of_service;
	uint8_t *tail, *hdr;
	uint64_t seq;
	rte_be64_t iv;

	seq = __atomic_add_fetch(&sa->seq, 1, __ATOMIC_RELAXED);
	if (seq > UINT32_MAX)	/* no ESN yet: never wrap the 32-bit counter */
		return DPVPN_DROP_SEQ_EXHAUSTED;
	tail = (uint8_t *)rte_pktmbuf_append(m, pad + ESP_TRAILER_LEN + ESP_ICV_LEN);
	if (tail == NULL)
		return DPVPN_DROP_TOO_BIG;
	hdr = (uint8_t *)rte_pktmbuf_prepend(m, ESP_PREPEND);
	if (hdr == NULL)
		return DPVPN_DROP_TOO_BIG;
	for (uint16_t i = 0; i < pad; i++)
		tail[i] = (uint8_t)(i + 1);	/* RFC 4303 2.4 default padding */
	tail[pad] = (uint8_t)pad;
	tail[pad + 1] = IPPROTO_IPIP;
	build_outer(w, sa, (struct rte_ipv4_hdr *)hdr, inner_tos, rte_pktmbuf_data_len(m));

	uint8_t *esp = hdr + sizeof(struct rte_ipv4_hdr);
	uint32_t spi = sa->spi, seq32 = rte_cpu_to_be_32((uint32_t)seq);

	iv = rte_cpu_to_be_64(seq);
	memcpy(esp, &spi, 4);
	memcpy(esp + 4, &seq32, 4);
	memcpy(esp + ESP_HDR_LEN, &iv, ESP_IV_LEN);

	op->key = &sa->key;
	op->dir = CRYPTO_ENCRYPT;
	op->data = esp + ESP_HDR_LEN + ESP_IV_LEN;
	op->len = inner_len + pad + ESP_TRAILER_LEN;
	op->aad = esp;
	op->aad_len = ESP_HDR_LEN;
	op->tag = tail + pad + ESP_TRAILER_LEN;
	memcpy(op->iv, &sa->salt, 4);
	memcpy(op->iv + 4, &iv, ESP_IV_LEN);
	return DPVPN_DROP_MAX;
}

uint16_t
esp_encap_burst(struct dp_worker *w, struct dp_lstats *st, struct rte_mbuf **pkts, uint16_t n)
{
	struct crypto_op ops[DP_BURST];
	struct sa *sas[DP_BURST];
	uint16_t lens[DP_BURST];
	const struct spd *spd = spd_get();
	uint16_t k = 0;

	for (uint16_t i = 0; i < n; i++) {
		struct rte_mbuf *m = pkts[i];
		const struct rte_ipv4_hdr *ip = rte_pktmbuf_mtod(m, struct rte_ipv4_hdr *);
		enum dpvpn_drop_reason why;
		int slot = spd_match(spd, ip->src_addr, ip->dst_addr);
		struct sa *sa;

		if (slot < 0) {
			dp_drop(st, m, DPVPN_DROP_NO_POLICY);
			continue;
		}
		sa = sa_slot((uint16_t)slot);
		if (sa == NULL) {
			dp_drop(st, m, DPVPN_DROP_SA_GONE);
			continue;
		}
		lens[k] = rte_pktmbuf_data_len(m);
		why = encap_one(w, sa, m, &ops[k]);
		if (why != DPVPN_DROP_MAX) {
			sa->stats[w->index].drop_other++;
			dp_drop(st, m, why);
			continue;
		}
		sas[k] = sa;
		pkts[k++] = m;
	}
	crypto_run(w->mb, ops, k);

	uint16_t good = 0;

	for (uint16_t i = 0; i < k; i++) {
		if (!ops[i].ok) {
			sas[i]->stats[w->index].drop_other++;
			dp_drop(st, pkts[i], DPVPN_DROP_CRYPTO_ERROR);
			continue;
		}
		sas[i]->stats[w->index].packets++;
		sas[i]->stats[w->index].bytes += lens[i];
		pkts[good++] = pkts[i];
	}
	st->encrypted += good;
	return good;
}
