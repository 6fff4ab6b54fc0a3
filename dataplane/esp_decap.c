/* SPDX-License-Identifier: BSD-3-Clause */
/* esp_decap.c - inbound: SPI lookup, anti-replay, decryption, ICV, inner checks. */
#include <string.h>

#include <rte_byteorder.h>
#include <rte_ip.h>
#include <rte_udp.h>

#include "crypto.h"
#include "esp.h"
#include "host.h"
#include "ike_punt.h"
#include "ip.h"
#include "pmtu.h"
#include "route.h"
#include "sa.h"
#include "tunif.h"


/* Header checks and crypto setup for one packet; DPVPN_DROP_MAX if sound. */
/* The SA of the previous packet: a burst mostly carries one SPI. */
struct spi_cache {
	uint32_t spi;		/* 0: empty (SPI 0 is never installed) */
	struct sa *sa;
};

static struct sa *
lookup_cached(struct spi_cache *c, uint32_t spi)
{
	if (spi != c->spi || spi == 0) {
		c->sa = sa_lookup_in(spi);
		c->spi = spi;
	}
	return c->sa;
}

/*
 * UDP to us (RFC 3948): ESP behind the UDP header if the port is one an SA
 * listens on and the payload is neither a keepalive (one 0xff byte) nor IKE
 * (the 4-byte non-ESP marker, zero where an SPI would be).  On success *off
 * is where ESP starts, and m is trimmed to the UDP datagram.
 */
static enum dpvpn_drop_reason
natt_classify(struct rte_mbuf *m, uint16_t ihl, uint16_t *off)
{
	const struct rte_udp_hdr *u;
	const uint8_t *pl;
	uint16_t ulen, dport;
	bool natt;

	if (rte_pktmbuf_data_len(m) < ihl + NATT_HDR_LEN)
		return DPVPN_DROP_SHORT;
	u = rte_pktmbuf_mtod_offset(m, const struct rte_udp_hdr *, ihl);
	dport = rte_be_to_cpu_16(u->dst_port);
	natt = sa_natt_port(dport);
	if (!natt && dport != DPVPN_IKE_PORT && dport != DPVPN_IKE_NATT_PORT)
		return DPVPN_DROP_NOT_ESP;
	ulen = rte_be_to_cpu_16(u->dgram_len);
	if (ulen < NATT_HDR_LEN || ulen > rte_pktmbuf_data_len(m) - ihl)
		return DPVPN_DROP_SHORT;
	rte_pktmbuf_trim(m, (uint16_t)(rte_pktmbuf_data_len(m) - ihl - ulen));
	if (!natt && dport == DPVPN_IKE_PORT)	/* IKE's own port: never ESP */
		return DPVPN_DROP_IKE;
	pl = (const uint8_t *)(u + 1);
	if (ulen - NATT_HDR_LEN == 1 && pl[0] == 0xff)
		return DPVPN_DROP_NATT_KEEPALIVE;
	if (ulen - NATT_HDR_LEN >= 4 && (pl[0] | pl[1] | pl[2] | pl[3]) == 0)
		return DPVPN_DROP_IKE;
	if (!natt)	/* 4500 without the marker, and no SA takes ESP there */
		return DPVPN_DROP_NOT_ESP;
	*off = ihl + NATT_HDR_LEN;
	return DPVPN_DROP_MAX;
}

/*
 * Many tunnels: each packet's SPI, read where plain ESP or ESP in UDP has
 * it, the burst's SAs looked up at once and their lines fetched before
 * decap_prepare reads them: first each SA's own lines, then, once those are
 * on their way, what they point at (this worker's counters, the window's
 * block for the packet's number).  hint[i] is a hint only: decap_prepare
 * checks the packet itself and looks up what the hint does not answer.  A
 * burst of one SPI (one tunnel) takes decap_prepare's own one lookup.
 */
static void
prefetch_sas(struct rte_mbuf **pkts, uint16_t n, struct sa **hint, unsigned int worker)
{
	uint32_t spis[DP_BURST], seqs[DP_BURST], spread = 0;

	for (uint16_t i = 0; i < n; i++) {
		const uint8_t *ip = rte_pktmbuf_mtod(pkts[i], const uint8_t *);
		bool v6 = ip[0] >> 4 == 6;
		uint16_t off = v6 ? sizeof(struct rte_ipv6_hdr) : (uint16_t)((ip[0] & 0x0f) * 4);

		if ((v6 ? ip[6] : ip[9]) == IPPROTO_UDP)
			off += NATT_HDR_LEN;
		spis[i] = seqs[i] = 0;
		if (rte_pktmbuf_data_len(pkts[i]) >= off + 8) {
			memcpy(&spis[i], ip + off, 4);
			memcpy(&seqs[i], ip + off + 4, 4);
		}
		spread |= spis[i] ^ spis[0];
	}
	if (spread == 0) {
		memset(hint, 0, n * sizeof(*hint));
		return;
	}
	sa_lookup_in_bulk(spis, n, hint);
	for (uint16_t i = 0; i < n; i++)
		if (hint[i] != NULL && (i == 0 || hint[i] != hint[i - 1]))
			sa_prefetch_in(hint[i]);
	for (uint16_t i = 0; i < n; i++)
		if (hint[i] != NULL) {
			if (i == 0 || hint[i] != hint[i - 1])
				rte_prefetch0(&hint[i]->stats[worker]);
			replay_prefetch(&hint[i]->replay, rte_be_to_cpu_32(seqs[i]));
		}
}

static enum dpvpn_drop_reason
decap_prepare(const struct dp_port *port, struct rte_mbuf *m, struct spi_cache *cache,
	      struct sa *hint, struct sa **sap, struct crypto_op *op, uint64_t *seq)
{
	const uint8_t *outer = rte_pktmbuf_mtod(m, const uint8_t *);
	bool out6 = outer[0] >> 4 == 6;
	uint16_t ihl, off, esp_len, overhead;
	enum dpvpn_drop_reason why;
	uint32_t spi, seq32;
	uint8_t *esp, proto;
	struct sa *sa;

	if (out6) {
		const struct rte_ipv6_hdr *ip = (const struct rte_ipv6_hdr *)outer;

		if (!dp_port_owns6(port, ip->dst_addr))
			return DPVPN_DROP_NOT_LOCAL;
		ihl = sizeof(*ip);
		proto = ip->proto;
		if (proto == IPPROTO_FRAGMENT)
			return DPVPN_DROP_FRAGMENT;
	} else {
		const struct rte_ipv4_hdr *ip = (const struct rte_ipv4_hdr *)outer;

		if (!dp_port_owns4(port, ip->dst_addr))
			return DPVPN_DROP_NOT_LOCAL;
		if (ip4_is_fragment(ip))
			return DPVPN_DROP_FRAGMENT;
		ihl = (uint16_t)((ip->version_ihl & 0x0f) * 4);
		proto = ip->next_proto_id;
	}
	off = ihl;
	if (proto == IPPROTO_UDP) {
		why = natt_classify(m, ihl, &off);
		if (why != DPVPN_DROP_MAX)
			return why;
	} else if (proto != IPPROTO_ESP) {
		return DPVPN_DROP_NOT_ESP;
	}
	esp_len = (uint16_t)(rte_pktmbuf_data_len(m) - off);
	esp = rte_pktmbuf_mtod_offset(m, uint8_t *, off);
	if (esp_len < ESP_HDR_LEN)
		return DPVPN_DROP_SHORT;
	memcpy(&spi, esp, 4);
	memcpy(&seq32, esp + 4, 4);
	sa = hint != NULL && hint->spi == spi ? hint : lookup_cached(cache, spi);
	if (sa == NULL)
		return DPVPN_DROP_UNKNOWN_SPI;
	*sap = sa;
	overhead = (uint16_t)(ESP_HDR_LEN + sa->iv_len + sa->icv_len);
	/* at least pad length and next header, padded to the block */
	if (esp_len < overhead + sa->block)
		return DPVPN_DROP_SHORT;
	if (sa->life_state == DPVPN_LIFE_HARD)
		return DPVPN_DROP_SA_EXPIRED;
	if (sa->udp != (off != ihl) || sa->outer6 != out6)
		return DPVPN_DROP_ENCAP_MISMATCH;
	*seq = rte_be_to_cpu_32(seq32);
	if (sa->esn && !replay_esn_infer(&sa->replay, rte_be_to_cpu_32(seq32), seq)) {
		*seq = 0;	/* from before the first packet: late (replay_late) */
		return DPVPN_DROP_REPLAY;
	}
	if (!replay_check(&sa->replay, *seq))
		return DPVPN_DROP_REPLAY;
	if (((esp_len - overhead) & (sa->block - 1)) != 0)	/* block: a power of 2 */
		return DPVPN_DROP_BAD_LENGTH;

	crypto_op_key(op, &sa->key, sa->alg, sa->icv_len);
	op->dir = CRYPTO_DECRYPT;
	op->data = esp + ESP_HDR_LEN + sa->iv_len;
	op->len = esp_len - overhead;
	op->tag = op->data + op->len;	/* the received ICV */
	if (!sa->aead) {
		esp_hmac_span(op, sa, esp, *seq);
		return DPVPN_DROP_MAX;
	}
	esp_aad(op, sa, esp, *seq);
	memcpy(op->iv, &sa->salt, 4);
	memcpy(op->iv + 4, esp + ESP_HDR_LEN, 8);
	return DPVPN_DROP_MAX;
}

/* The outer header's TOS / traffic class. */
static uint8_t
outer_tc(const struct rte_mbuf *m)
{
	const uint8_t *ip = rte_pktmbuf_mtod(m, const uint8_t *);

	if (ip[0] >> 4 == 6)
		return ip6_tc((const struct rte_ipv6_hdr *)ip);
	return ((const struct rte_ipv4_hdr *)ip)->type_of_service;
}

/* inner_rules for IPv6: ECN (RFC 6040) in the traffic class. */
static enum dpvpn_drop_reason
inner_rules6(struct rte_ipv6_hdr *in, uint8_t outer_tc)
{
	uint8_t tc = ip6_tc(in);
	int ecn = ip4_ecn_decap(tc & RTE_IPV4_HDR_ECN_MASK, outer_tc & RTE_IPV4_HDR_ECN_MASK);

	if (ecn < 0)
		return DPVPN_DROP_ECN_DROP;
	if (ecn != (tc & RTE_IPV4_HDR_ECN_MASK))
		ip6_set_tc(in, (uint8_t)((tc & ~RTE_IPV4_HDR_ECN_MASK) | ecn));
	return DPVPN_DROP_MAX;
}

/*
 * The decrypted inner IPv6 packet: sound, at most inner_len long (m is trimmed
 * to it: what follows is TFC padding), within the selectors.
 */
static enum dpvpn_drop_reason
inner_check6(const struct sa *sa, struct rte_mbuf *m, uint16_t inner_len)
{
	const struct rte_ipv6_hdr *in = rte_pktmbuf_mtod(m, const struct rte_ipv6_hdr *);
	uint32_t len;

	if (inner_len < sizeof(*in) || (rte_be_to_cpu_32(in->vtc_flow) >> 28) != 6)
		return DPVPN_DROP_BAD_INNER;
	len = sizeof(*in) + rte_be_to_cpu_16(in->payload_len);
	if (len > inner_len)
		return DPVPN_DROP_BAD_INNER;
	rte_pktmbuf_trim(m, (uint16_t)(inner_len - len));	/* RFC 4303 2.7 TFC padding */
	if ((!dp_in_prefix6(in->src_addr, sa->rts6, sa->rts6_len) ||
	     !dp_in_prefix6(in->dst_addr, sa->lts6, sa->lts6_len)) &&
	    (!sa->more_sel || !sa_sel_more6(sa, in->src_addr, in->dst_addr)))
		return DPVPN_DROP_POLICY_MISMATCH;
	return DPVPN_DROP_MAX;
}

/*
 * The inner header as it leaves: ECN combined with the outer one (RFC 6040).
 * Its TTL is the output stage's to step, where it is forwarded
 * (ip_output.c): a packet for the gateway or its host is not forwarded.
 */
static enum dpvpn_drop_reason
inner_rules(struct rte_ipv4_hdr *in, uint8_t outer_tos)
{
	int ecn = ip4_ecn_decap(in->type_of_service & RTE_IPV4_HDR_ECN_MASK,
				outer_tos & RTE_IPV4_HDR_ECN_MASK);

	if (ecn < 0)
		return DPVPN_DROP_ECN_DROP;
	if (ecn != (in->type_of_service & RTE_IPV4_HDR_ECN_MASK)) {	/* rare: full sum */
		in->type_of_service = (uint8_t)((in->type_of_service & ~RTE_IPV4_HDR_ECN_MASK) |
						ecn);
		in->hdr_checksum = 0;
		in->hdr_checksum = rte_ipv4_cksum(in);
	}
	return DPVPN_DROP_MAX;
}

/* After decryption: ICV, replay window, trailer, inner header, selectors. */
static enum dpvpn_drop_reason
decap_finish(struct sa *sa, struct rte_mbuf *m, const struct crypto_op *op, uint64_t seq)
{
	const uint8_t *ct = op->data;
	uint8_t outer_tos = outer_tc(m);
	uint8_t pad, nh;
	uint16_t inner_len;
	enum dpvpn_drop_reason why;
	bool v6;

	if (!op->ok)
		return DPVPN_DROP_CRYPTO_ERROR;
	if (!crypto_icv_equal(op->computed, op->tag, sa->icv_len))
		return DPVPN_DROP_BAD_ICV;
	/* Checked again: the same number may come twice in one burst. */
	if (!replay_update(&sa->replay, seq))
		return DPVPN_DROP_REPLAY;
	pad = ct[op->len - 2];
	nh = ct[op->len - 1];
	if (nh == IPPROTO_NONE)		/* RFC 4303 2.6: a dummy packet, its number spent */
		return DPVPN_DROP_ESP_DUMMY;
	if ((uint32_t)pad + ESP_TRAILER_LEN > op->len)
		return DPVPN_DROP_BAD_PADDING;
	for (uint8_t i = 0; i < pad; i++)
		if (ct[op->len - ESP_TRAILER_LEN - pad + i] != i + 1)
			return DPVPN_DROP_BAD_PADDING;
	/* a route-based tunnel's SA carries either family */
	v6 = unlikely(sa->route) ? nh == IPPROTO_IPV6 : sa->inner6;
	if (nh != (v6 ? IPPROTO_IPV6 : IPPROTO_IPIP))
		return DPVPN_DROP_BAD_NEXT_HDR;
	inner_len = (uint16_t)(op->len - pad - ESP_TRAILER_LEN);
	rte_pktmbuf_adj(m, (uint16_t)(op->data - rte_pktmbuf_mtod(m, uint8_t *)));
	rte_pktmbuf_trim(m, (uint16_t)(rte_pktmbuf_data_len(m) - inner_len));
	/* The inner packet may be shorter than the payload: the rest is TFC
	 * padding (RFC 4303 2.7), trimmed by inner_check6 / ip4_check. */
	if (v6) {
		why = inner_check6(sa, m, inner_len);
		if (why != DPVPN_DROP_MAX)
			return why;
		if (sa->limited && !sa_account(sa, rte_pktmbuf_data_len(m)))
			return DPVPN_DROP_SA_EXPIRED;
		return inner_rules6(rte_pktmbuf_mtod(m, struct rte_ipv6_hdr *), outer_tos);
	}
	if (ip4_check(m) != DPVPN_DROP_MAX)	/* total length over the payload, too */
		return DPVPN_DROP_BAD_INNER;

	struct rte_ipv4_hdr *in = rte_pktmbuf_mtod(m, struct rte_ipv4_hdr *);

	if ((!dp_in_prefix(in->src_addr, sa->remote_net, sa->remote_mask) ||
	     !dp_in_prefix(in->dst_addr, sa->local_net, sa->local_mask)) &&
	    (!sa->more_sel || !sa_sel_more4(sa, in->src_addr, in->dst_addr)))
		return DPVPN_DROP_POLICY_MISMATCH;
	if (sa->limited && !sa_account(sa, rte_pktmbuf_data_len(m)))
		return DPVPN_DROP_SA_EXPIRED;
	return inner_rules(in, outer_tos);
}

/*
 * A replay drop left of the window (or before the first packet) is late, not
 * repeated: counted apart too, so reordering beyond the window (a stalled
 * worker, a reordering path: raise replay_window) tells itself from replays.
 */
static inline void
count_replay_late(struct dp_lstats *st, const struct sa *sa, uint64_t seq)
{
	if (replay_late(&sa->replay, seq))
		st->replay_late++;
}

static void
count_sa_drop(struct sa_stats *s, enum dpvpn_drop_reason why)
{
	if (why == DPVPN_DROP_REPLAY)
		s->drop_replay++;
	else if (why == DPVPN_DROP_BAD_ICV)
		s->drop_icv++;
	else if (why == DPVPN_DROP_POLICY_MISMATCH)
		s->drop_policy++;
	else if (why != DPVPN_DROP_ESP_DUMMY)	/* a dummy is no error of the SA's */
		s->drop_other++;
}

/*
 * Decrypted m is for the gateway's address on port p: to that port's twin
 * when the SA says host-access (DPVPN_SA_F_HOST) and the port has one (1:
 * punted), else to self[] (0: pings answered, the rest to-self).
 */
static inline uint16_t
to_self(struct dp_worker *w, struct dp_lstats *st, const struct sa *sa, int p,
	struct rte_mbuf *m, struct dp_out *self)
{
	if ((sa->cfg.flags & DPVPN_SA_F_HOST) && dp.ports[p].twin) {
		host_punt(w, st, &dp.ports[p], m);
		return 1;
	}
	dp_out_add(self, m);
	return 0;
}

uint16_t
esp_decap_burst(struct dp_worker *w, struct dp_lstats *st, const struct dp_port *port,
		struct rte_mbuf **pkts, uint16_t n, struct dp_out *self)
{
	struct crypto_op ops[DP_BURST];
	struct sa *sas[DP_BURST];
	uint64_t seqs[DP_BURST];
	struct spi_cache cache = { .spi = 0 };
	struct sa *hint[DP_BURST];
	uint16_t k = 0, good = 0, punted = 0;
	STAGE_CLOCK(t);

	prefetch_sas(pkts, n, hint, w->index);
	for (uint16_t i = 0; i < n; i++) {
		struct sa *sa = NULL;
		enum dpvpn_drop_reason why = decap_prepare(port, pkts[i], &cache, hint[i], &sa,
							   &ops[k], &seqs[k]);

		if (why == DPVPN_DROP_IKE) {	/* to the IKE channel, if one is open */
			ike_punt(w, st, pkts[i]);
			continue;
		}
		if (unlikely(port->twin) && (why == DPVPN_DROP_NOT_ESP ||	/* host.h */
		    (why == DPVPN_DROP_NOT_LOCAL && host_link_dst(port, pkts[i])))) {
			host_punt(w, st, port, pkts[i]);
			continue;
		}
		if (why != DPVPN_DROP_MAX) {
			if (sa != NULL)
				count_sa_drop(&sa->stats[w->index], why);
			if (why == DPVPN_DROP_REPLAY)
				count_replay_late(st, sa, seqs[k]);
			dp_drop(st, pkts[i], why);
			continue;
		}
		sas[k] = sa;
		pkts[k++] = pkts[i];
	}
	STAGE(st, t, SA);	/* SPI lookup, replay check, header parse */
	crypto_run(w->esp.mb, ops, k);
	STAGE(st, t, CRYPTO);
	for (uint16_t i = 0; i < k; i++) {
		struct sa_stats *s = &sas[i]->stats[w->index];
		enum dpvpn_drop_reason why = decap_finish(sas[i], pkts[i], &ops[i], seqs[i]);
		bool to_host = false;
		int own;

		if (why == DPVPN_DROP_MAX && unlikely(sas[i]->route)) {
			const uint8_t *ip = rte_pktmbuf_mtod(pkts[i], const uint8_t *);

			to_host = tunif_to_host(w->index, sas[i], ip);	/* host.h */
			if (!to_host && !tunif_rx(w->index, sas[i], ip))
				why = DPVPN_DROP_RPF;
		}
		if (why != DPVPN_DROP_MAX) {
			count_sa_drop(s, why);
			if (why == DPVPN_DROP_REPLAY)
				count_replay_late(st, sas[i], seqs[i]);
			dp_drop(st, pkts[i], why);
			continue;
		}
		if (sas[i]->mss != 0 && pmtu_is_tcp(rte_pktmbuf_mtod(pkts[i], uint8_t *)) &&
		    pmtu_clamp_mss(rte_pktmbuf_mtod(pkts[i], uint8_t *),
				   rte_pktmbuf_data_len(pkts[i]), sas[i]->mss))
			st->mss_clamped++;
		s->packets++;
		s->bytes += rte_pktmbuf_data_len(pkts[i]);
		sa_stamp(s, w->now_tsc);
		if (unlikely(to_host)) {
			host_punt_tun(w, st, sas[i]->tunif, pkts[i]);
			punted++;
		} else if (unlikely((own = dp_owner(rte_pktmbuf_mtod(pkts[i], const uint8_t *),
						    NULL)) >= 0))
			punted += to_self(w, st, sas[i], own, pkts[i], self);
		else
			pkts[good++] = pkts[i];
	}
	st->decrypted += good + self->n + punted;
	STAGE(st, t, HDR);	/* ICV compare, replay update, trailer, inner checks, counters */
	return good;
}
