/* SPDX-License-Identifier: BSD-3-Clause */
/* esp_encap.c - outbound: policy lookup, ESP tunnel encapsulation, encryption. */
#include <string.h>

#include <rte_byteorder.h>
#include <rte_hash_crc.h>
#include <rte_ip.h>
#include <rte_udp.h>

#include "crypto.h"
#include "esp.h"
#include "host.h"
#include "ip.h"
#include "pmtu.h"
#include "sa.h"
#include "spd.h"
#include "tunif.h"


/* The outer DF bit: the inner one (RFC 4301 8.1 "copy"), or the SA's choice. */
static uint16_t
outer_frag(const struct sa *sa, rte_be16_t inner_frag)
{
	if (sa->df == DPVPN_DF_SET)
		return RTE_IPV4_HDR_DF_FLAG;
	if (sa->df == DPVPN_DF_CLEAR)
		return 0;
	return rte_be_to_cpu_16(inner_frag) & RTE_IPV4_HDR_DF_FLAG;
}

/*
 * The whole TOS byte is copied: DSCP as RFC 4301 5.1.2 says, and ECN as
 * RFC 6040's normal mode says (the decapsulator combines them again).
 */
static void
build_outer(struct dp_worker *w, const struct sa *sa, struct rte_ipv4_hdr *outer,
	    uint8_t tos, rte_be16_t inner_frag, uint16_t total)
{
	uint16_t id = (uint16_t)w->esp.ip_id++, frag = outer_frag(sa, inner_frag);
	uint32_t sum = sa->outer_sum + tos + total + id + frag;
	uint64_t w0, w2;
	uint32_t w1;

	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	/* three stores, in the header's own byte order (x86 is little-endian):
	 * version/IHL, TOS, length, ID, flags and offset; TTL, protocol,
	 * checksum; the addresses */
	w0 = RTE_IPV4_VHL_DEF | (uint64_t)tos << 8 | (uint64_t)rte_cpu_to_be_16(total) << 16 |
	     (uint64_t)rte_cpu_to_be_16(id) << 32 | (uint64_t)rte_cpu_to_be_16(frag) << 48;
	w1 = ESP_OUTER_TTL | (uint32_t)(sa->udp ? IPPROTO_UDP : IPPROTO_ESP) << 8 |
	     (uint32_t)rte_cpu_to_be_16((uint16_t)~sum) << 16;
	w2 = (uint64_t)sa->local | (uint64_t)sa->remote << 32;
	memcpy(outer, &w0, 8);
	memcpy((uint8_t *)outer + 8, &w1, 4);
	memcpy((uint8_t *)outer + 12, &w2, 8);
}


/* IPv6 outer header: traffic class copied as for IPv4, flow label 0. */
static void
build_outer6(const struct sa *sa, struct rte_ipv6_hdr *outer, uint8_t tc, uint16_t payload)
{
	outer->vtc_flow = rte_cpu_to_be_32(6u << 28 | (uint32_t)tc << 20);
	outer->payload_len = rte_cpu_to_be_16(payload);
	outer->proto = sa->udp ? IPPROTO_UDP : IPPROTO_ESP;
	outer->hop_limits = ESP_OUTER_TTL;
	memcpy(outer->src_addr, sa->local6, 16);
	memcpy(outer->dst_addr, sa->remote6, 16);
}


/*
 * RFC 3948 UDP header; checksum 0, as IPv4 allows (over IPv6 it is filled in
 * after encryption, natt6_checksum).  Returns where ESP starts.
 */
static uint8_t *
natt_header(const struct sa *sa, uint8_t *at, uint16_t udp_len, const uint8_t *inner)
{
	struct rte_udp_hdr *u = (struct rte_udp_hdr *)at;

	u->src_port = sa->udp_spread_mask == 0 ? sa->udp_local :
		rte_cpu_to_be_16((uint16_t)(rte_be_to_cpu_16(sa->udp_local) +
					    (ip_flow_hash(inner) & sa->udp_spread_mask)));
	u->dst_port = sa->udp_remote;
	u->dgram_len = rte_cpu_to_be_16(udp_len);
	u->dgram_cksum = 0;
	return at + NATT_HDR_LEN;
}

/*
 * The inner packet, forwarded (RFC 4301 5.1.2): its TTL / hop limit one less
 * (select_sa made sure it does not expire) unless the host originated it
 * (fwd false: a tunnel twin's, esp_encap_sa), its TOS / traffic class and DF
 * for the outer header.  Returns ESP's next header for it.
 */
static inline uint8_t
inner_hop(uint8_t *inner, uint8_t *tc, rte_be16_t *frag, bool fwd)
{
	if (inner[0] >> 4 == 6) {
		struct rte_ipv6_hdr *in6 = (struct rte_ipv6_hdr *)inner;

		if (fwd)
			in6->hop_limits--;
		*tc = ip6_tc(in6);
		/* IPv6 is never fragmented on the way: "copy" means DF set */
		*frag = rte_cpu_to_be_16(RTE_IPV4_HDR_DF_FLAG);
		return IPPROTO_IPV6;
	}
	struct rte_ipv4_hdr *in4 = (struct rte_ipv4_hdr *)inner;

	if (fwd)
		ip4_dec_ttl(in4);
	*tc = in4->type_of_service;
	*frag = in4->fragment_offset;
	return IPPROTO_IPIP;
}

/*
 * ESP's trailer: RFC 4303 2.4 default padding 1, 2, 3, ... (one store for
 * up to 8 bytes: the trailer and ICV after them make room for 8, and what
 * lands there is written again below and by the cipher), pad length, next
 * header.
 */
static inline void
trailer(uint8_t *tail, uint16_t pad, uint8_t nh)
{
	if (likely(pad <= 8)) {
		uint64_t ramp = 0x0807060504030201ull;

		memcpy(tail, &ramp, 8);
	} else {
		for (uint16_t i = 0; i < pad; i++)
			tail[i] = (uint8_t)(i + 1);
	}
	tail[pad] = (uint8_t)pad;
	tail[pad + 1] = nh;
}

/*
 * Turn m (an inner IPv4 or IPv6 packet) into an ESP packet for sa (outer
 * IPv4 or IPv6) with sequence number seq, and describe the encryption in op;
 * ttl_step: the inner TTL or hop limit goes down by one (not for what the
 * host wrote into a tunnel twin).  DPVPN_DROP_MAX on success.
 */
static enum dpvpn_drop_reason
encap_one(struct dp_worker *w, struct sa *sa, uint64_t seq, struct rte_mbuf *m,
	  struct crypto_op *op, bool ttl_step)
{
	uint16_t inner_len = rte_pktmbuf_data_len(m);
	uint16_t pad = (uint16_t)(-(inner_len + ESP_TRAILER_LEN) & (sa->block - 1));
	uint16_t outer_len = sa->outer_len, prepend = sa->hdr_len;
	uint8_t *inner = rte_pktmbuf_mtod(m, uint8_t *);
	uint64_t spi_seq;
	uint8_t *tail, *hdr, *iv, tc, nh;
	rte_be16_t inner_frag;
	uint64_t limit;

	if (seq > UINT32_MAX && !sa->esn)	/* never wrap the 32-bit counter */
		return DPVPN_DROP_SEQ_EXHAUSTED;
	/* only numbers dpvpnd has persisted: none is ever sent twice (0 = no limit) */
	limit = __atomic_load_n(&sa->seq_limit, __ATOMIC_ACQUIRE);
	if (unlikely(seq > limit && limit != 0))
		return DPVPN_DROP_SEQ_UNRESERVED;
	nh = inner_hop(inner, &tc, &inner_frag, ttl_step);
	tail = (uint8_t *)rte_pktmbuf_append(m, pad + ESP_TRAILER_LEN + sa->icv_len);
	if (tail == NULL)
		return DPVPN_DROP_TOO_BIG;
	hdr = (uint8_t *)rte_pktmbuf_prepend(m, prepend);
	if (hdr == NULL)
		return DPVPN_DROP_TOO_BIG;
	trailer(tail, pad, nh);
	if (sa->outer6)
		build_outer6(sa, (struct rte_ipv6_hdr *)hdr, tc,
			     (uint16_t)(rte_pktmbuf_data_len(m) - outer_len));
	else
		build_outer(w, sa, (struct rte_ipv4_hdr *)hdr, tc, inner_frag,
			    rte_pktmbuf_data_len(m));

	uint8_t *esp = hdr + outer_len;

	if (sa->udp)
		esp = natt_header(sa, esp, rte_pktmbuf_data_len(m) - outer_len,
				  hdr + prepend);
	spi_seq = sa->spi | (uint64_t)rte_cpu_to_be_32((uint32_t)seq) << 32;
	memcpy(esp, &spi_seq, 8);
	iv = esp + ESP_HDR_LEN;
	crypto_op_key(op, &sa->key, sa->alg, sa->icv_len);
	op->dir = CRYPTO_ENCRYPT;
	op->data = iv + sa->iv_len;
	op->len = inner_len + pad + ESP_TRAILER_LEN;
	op->tag = tail + pad + ESP_TRAILER_LEN;
	if (sa->aead) {
		/* RFC 4106 / 7634: the IV is the sequence number, unique per key */
		rte_be64_t seq64 = rte_cpu_to_be_64(seq);

		memcpy(iv, &seq64, sizeof(seq64));
		esp_aad(op, sa, esp, seq);
		memcpy(op->iv, &sa->salt, 4);
		memcpy(op->iv + 4, &seq64, sizeof(seq64));
		return DPVPN_DROP_MAX;
	}
	/* RFC 3602: an unpredictable IV, from this lcore's random pool */
	if (sa->iv_len != 0 && !crypto_random(w->esp.mb, iv, sa->iv_len))
		return DPVPN_DROP_CRYPTO_ERROR;
	esp_hmac_span(op, sa, esp, seq);
	return DPVPN_DROP_MAX;
}

/* UDP over IPv6 needs its checksum (RFC 8200 8.1), over the ciphertext. */
static void
natt6_checksum(struct rte_mbuf *m)
{
	struct rte_ipv6_hdr *ip = rte_pktmbuf_mtod(m, struct rte_ipv6_hdr *);
	struct rte_udp_hdr *u = (struct rte_udp_hdr *)(ip + 1);

	u->dgram_cksum = 0;
	u->dgram_cksum = rte_ipv6_udptcp_cksum(ip, u);
}

/*
 * Sequence numbers for a burst: one atomic add per run of packets that share
 * an SA (usually the whole burst), not one per packet, and none at all when
 * this is the only worker.  Numbers stay unique per SA however many workers
 * encrypt for it.
 */
static void
reserve_seq(struct sa *const *sas, uint64_t *seqs, uint16_t n)
{
	bool alone = dp.n_workers == 1;	/* no other thread encrypts: no atomic add */

	for (uint16_t i = 0; i < n;) {
		uint16_t run = 1;
		uint64_t first;

		while (i + run < n && sas[i + run] == sas[i])
			run++;
		if (alone) {	/* a plain add; show sa reads it whole all the same */
			first = __atomic_load_n(&sas[i]->seq, __ATOMIC_RELAXED) + 1;
			__atomic_store_n(&sas[i]->seq, first + run - 1, __ATOMIC_RELAXED);
		} else {
			first = __atomic_fetch_add(&sas[i]->seq, run, __ATOMIC_RELAXED) + 1;
		}

		for (uint16_t j = 0; j < run; j++)
			seqs[i + j] = first + j;
		i += run;
	}
}

/*
 * The gateway forwards the inner packet (RFC 4301 5.1.2), so its TTL / hop
 * limit must not expire here: if it would, the sender hears ICMP Time
 * Exceeded from the port it came in by (RFC 1812 5.3.1), and m is dropped.
 */
static void
expired(struct dp_worker *w, struct dp_lstats *st, const struct dp_port *port, struct sa *sa,
	struct rte_mbuf *m, struct dp_out *out)
{
	struct rte_mbuf *r = pmtu_icmp_expired(w, st, port, m);

	sa->stats[w->index].drop_other++;
	dp_drop(st, m, DPVPN_DROP_TTL_EXPIRED);
	if (r != NULL) {
		dp_mark_answer_inside(r);	/* m came in on an inside port */
		dp_out_add(out, r);
	}
}

/* An outer packet over the port's MTU, on a tunnel that fragments outer packets? */
static inline bool
outer_too_big(const struct sa *sa, const struct rte_mbuf *m)
{
	return sa->frag_outer && rte_pktmbuf_data_len(m) > sa->port_mtu;
}

/*
 * A packet over its tunnel's MTU: IPv6 and DF-set IPv4 get an ICMP error
 * (to out) and are dropped; DF-clear IPv4 is moved to big[] to be fragmented
 * before encryption.  (DF-clear IPv4 on a tunnel that fragments outer
 * packets never comes here: it is encrypted whole.)
 */
static void
too_big(struct dp_worker *w, struct dp_lstats *st, const struct dp_port *port, struct sa *sa,
	struct rte_mbuf *m, struct dp_out *out, struct rte_mbuf **big, struct sa **big_sa,
	uint16_t *nbig)
{
	const uint8_t *ip = rte_pktmbuf_mtod(m, const uint8_t *);

	if (ip[0] >> 4 == 6 || (((const struct rte_ipv4_hdr *)ip)->fragment_offset &
				rte_cpu_to_be_16(RTE_IPV4_HDR_DF_FLAG))) {
		struct rte_mbuf *r = pmtu_icmp_too_big(w, st, port, m, sa->mtu);

		if (r != NULL) {
			dp_mark_answer_inside(r);	/* m came in on an inside port */
			dp_out_add(out, r);
		}
		sa->stats[w->index].drop_other++;
		dp_drop(st, m, DPVPN_DROP_PMTU);
		return;
	}
	big_sa[*nbig] = sa;
	big[(*nbig)++] = m;
}

/* Why a packet has no SA: select_sa's negative slot codes (tunif.h). */
static enum dpvpn_drop_reason
no_sa_reason(int32_t slot)
{
	if (slot == TUNIF_NO_ROUTE)
		return DPVPN_DROP_NO_ROUTE;
	if (slot == TUNIF_DOWN)
		return DPVPN_DROP_TUNNEL_DOWN;
	return DPVPN_DROP_NO_POLICY;
}

/* Does m fit its tunnel as it is (or may its outer packet be fragmented)? */
static inline bool
fits(const struct sa *sa, const uint8_t *ip, uint16_t len)
{
	return likely(len <= sa->mtu) ||
	       (sa->frag_outer && ip[0] >> 4 == 4 &&
		!(((const struct rte_ipv4_hdr *)ip)->fragment_offset &
		  rte_cpu_to_be_16(RTE_IPV4_HDR_DF_FLAG)));
}

/*
 * Policy lookup for the burst, then per packet its SA's state, TTL (with
 * ttl_step: the step is encap's), MSS clamp and MTU: the packets to encrypt
 * as they are stay in pkts[], their SAs in sas[]; those to fragment first
 * go to big[] (too_big).
 */
static uint16_t
select_sa(struct dp_worker *w, struct dp_lstats *st, const struct dp_port *port,
	  struct rte_mbuf **pkts, uint16_t n, struct sa **sas, struct dp_out *out,
	  struct rte_mbuf **big, struct sa **big_sa, uint16_t *nbig, bool ttl_step)
{
	const uint8_t *hdrs[DP_BURST];
	int32_t slots[DP_BURST];
	uint16_t k = 0;
	STAGE_CLOCK(t);

	for (uint16_t i = 0; i < n; i++)
		hdrs[i] = rte_pktmbuf_mtod(pkts[i], const uint8_t *);
	spd_classify_flows(w->esp.spd_cache, hdrs, slots, n);
	/* what no policy took is routed, once a route-based tunnel exists */
	if (unlikely(__atomic_load_n(&dp.n_tunifs, __ATOMIC_RELAXED) != 0))
		tunif_route(w->index, hdrs, slots, n);
	STAGE(st, t, SPD);
	for (uint16_t i = 0; i < n; i++) {	/* many tunnels: fetched for the burst */
		sas[i] = slots[i] < 0 ? NULL : sa_slot((uint32_t)slots[i]);
		if (sas[i] != NULL && (i == 0 || sas[i] != sas[i - 1]))
			sa_prefetch(sas[i]);
	}
	*nbig = 0;
	for (uint16_t i = 0; i < n; i++) {
		struct rte_mbuf *m = pkts[i];
		int32_t slot = slots[i];
		struct sa *sa = sas[i];
		uint8_t *ip = (uint8_t *)hdrs[i];
		uint16_t len = rte_pktmbuf_data_len(m);

		if (sa == NULL) {
			dp_drop(st, m, slot >= 0 ? DPVPN_DROP_SA_GONE : no_sa_reason(slot));
			continue;
		}
		if (sa->life_state == DPVPN_LIFE_HARD || (sa->limited && !sa_account(sa, len))) {
			dp_drop(st, m, DPVPN_DROP_SA_EXPIRED);
			continue;
		}
		/* checked before a sequence number is spent on it */
		if (ttl_step && (ip[0] >> 4 == 6 ? ((const struct rte_ipv6_hdr *)ip)->hop_limits :
				 ((const struct rte_ipv4_hdr *)ip)->time_to_live) <= 1) {
			expired(w, st, port, sa, m, out);
			continue;
		}
		if (sa->mss != 0 && pmtu_is_tcp(ip) && pmtu_clamp_mss(ip, len, sa->mss))
			st->mss_clamped++;
		if (unlikely(!fits(sa, ip, len))) {
			too_big(w, st, port, sa, m, out, big, big_sa, nbig);
			continue;
		}
		if (k == 0 || sa != sas[k - 1])
			sa_prefetch2(sa, w->index);
		sas[k] = sa;
		pkts[k++] = m;
	}
	STAGE(st, t, SA);
	return k;
}

/* An encrypted packet leaves: the UDP checksum over IPv6, the SA's counters. */
static inline void
sealed(struct dp_worker *w, struct sa *sa, struct rte_mbuf *m, uint16_t inner_len)
{
	struct sa_stats *s = &sa->stats[w->index];

	if (sa->udp && sa->outer6)
		natt6_checksum(m);
	s->packets++;
	s->bytes += inner_len;
	sa_stamp(s, w->now_tsc);
}

static void
encap_failed(struct dp_worker *w, struct dp_lstats *st, struct sa *sa, struct rte_mbuf *m,
	     enum dpvpn_drop_reason why)
{
	if (why == DPVPN_DROP_SEQ_EXHAUSTED)
		sa->stats[w->index].drop_seq++;
	else
		sa->stats[w->index].drop_other++;
	dp_drop(st, m, why);
}

/*
 * Reserve, encapsulate and encrypt packets whose SA is chosen.  Headers are
 * built for the whole burst first and crypto_run then encrypts it in one go:
 * measured, the AES-GCM calls back to back beat each one right after its
 * header (64 B: 190 against 227 cycles per packet here).  Returns the good ones;
 * *outer: one of them is over its port's MTU and to be fragmented; ttl_step
 * as encap_one's.
 */
static uint16_t
encap_core(struct dp_worker *w, struct dp_lstats *st, struct rte_mbuf **pkts, struct sa **sas,
	   uint16_t n, bool *outer, bool ttl_step)
{
	struct crypto_op ops[DP_BURST];
	uint64_t seqs[DP_BURST];
	uint16_t lens[DP_BURST];
	uint16_t k = 0, good = 0;
	STAGE_CLOCK(t);

	reserve_seq(sas, seqs, n);
	STAGE(st, t, SEQ);
	for (uint16_t i = 0; i < n; i++) {
		struct sa *sa = sas[i];
		struct rte_mbuf *m = pkts[i];
		enum dpvpn_drop_reason why;

		lens[k] = rte_pktmbuf_data_len(m);
		why = encap_one(w, sa, seqs[i], m, &ops[k], ttl_step);
		if (why != DPVPN_DROP_MAX) {
			encap_failed(w, st, sa, m, why);
			continue;
		}
		*outer |= outer_too_big(sa, m);
		sas[k] = sa;
		pkts[k++] = m;
	}
	STAGE(st, t, HDR);
	crypto_run(w->esp.mb, ops, k);
	STAGE(st, t, CRYPTO);
	for (uint16_t i = 0; i < k; i++) {
		if (unlikely(!ops[i].ok)) {
			sas[i]->stats[w->index].drop_other++;
			dp_drop(st, pkts[i], DPVPN_DROP_CRYPTO_ERROR);
			continue;
		}
		sealed(w, sas[i], pkts[i], lens[i]);
		sas[good] = sas[i];
		pkts[good++] = pkts[i];
	}
	st->encrypted += good;
	STAGE(st, t, COUNT);
	return good;
}


/*
 * The rare path, when fragments are involved: everything goes to out, in
 * order (the burst, outer fragments in their place, then the inner fragments
 * of what was too big), so the peer sees sequence numbers rise.  ttl_step:
 * whether the fragments of what was too big take encap's TTL step.
 */
static void
out_with_fragments(struct dp_worker *w, struct dp_lstats *st, struct rte_mbuf **pkts,
		   struct sa **sas, uint16_t n, struct rte_mbuf **big, struct sa **big_sa,
		   uint16_t nbig, struct dp_out *out, bool ttl_step)
{
	struct rte_mbuf *frags[PMTU_MAX_FRAGS];
	struct sa *fsas[PMTU_MAX_FRAGS];
	enum dpvpn_drop_reason why;
	bool outer = false;	/* pre-fragmented to fit: never over the port's MTU */
	uint16_t f;

	for (uint16_t i = 0; i < n; i++) {
		if (!outer_too_big(sas[i], pkts[i])) {
			dp_out_add(out, pkts[i]);
			continue;
		}
		f = pmtu_fragment4(pkts[i], sas[i]->port_mtu, frags, PMTU_MAX_FRAGS, &why);
		if (f == 0) {
			dp_drop(st, pkts[i], why);
			continue;
		}
		st->fragments += f;
		st->fragmented++;
		for (uint16_t j = 0; j < f; j++)
			dp_out_add(out, frags[j]);
	}
	/* RFC 4459 pre-fragmentation: each fragment is a packet of its own */
	for (uint16_t i = 0; i < nbig; i++) {
		f = pmtu_fragment4(big[i], big_sa[i]->mtu, frags, PMTU_MAX_FRAGS, &why);
		if (f == 0) {
			big_sa[i]->stats[w->index].drop_other++;
			dp_drop(st, big[i], why);
			continue;
		}
		st->fragments += f;
		st->fragmented++;
		for (uint16_t j = 0; j < f; j++)
			fsas[j] = big_sa[i];
		f = encap_core(w, st, frags, fsas, f, &outer, ttl_step);
		for (uint16_t j = 0; j < f; j++)
			dp_out_add(out, frags[j]);
	}
}

uint16_t
esp_encap_sa(struct dp_worker *w, struct dp_lstats *st, struct rte_mbuf *m, struct sa *sa,
	     struct dp_out *out)
{
	uint16_t len = rte_pktmbuf_data_len(m), good;
	bool outer = false;

	if (sa->life_state == DPVPN_LIFE_HARD || (sa->limited && !sa_account(sa, len))) {
		dp_drop(st, m, DPVPN_DROP_SA_EXPIRED);
		return 0;
	}
	if (unlikely(!fits(sa, rte_pktmbuf_mtod(m, const uint8_t *), len))) {
		/* the twin's MTU is the SA's (dpvpnd): the host sent past it */
		sa->stats[w->index].drop_other++;
		dp_drop(st, m, DPVPN_DROP_PMTU);
		return 0;
	}
	good = encap_core(w, st, &m, &sa, 1, &outer, false);	/* the host's: no TTL step */
	if (likely(good == 0 || !outer))
		return good;
	out_with_fragments(w, st, &m, &sa, good, NULL, NULL, 0, out, false);
	return 0;
}

static inline uint16_t
encap_burst(struct dp_worker *w, struct dp_lstats *st, const struct dp_port *port,
	    struct rte_mbuf **pkts, uint16_t n, struct dp_out *out, bool ttl_step)
{
	struct sa *sas[DP_BURST], *big_sa[DP_BURST];
	struct rte_mbuf *big[DP_BURST];
	uint16_t nbig, good;
	bool outer = false;

	n = select_sa(w, st, port, pkts, n, sas, out, big, big_sa, &nbig, ttl_step);
	good = encap_core(w, st, pkts, sas, n, &outer, ttl_step);
	if (likely(nbig == 0 && !outer))
		return good;
	out_with_fragments(w, st, pkts, sas, good, big, big_sa, nbig, out, ttl_step);
	return 0;
}

uint16_t
esp_encap_burst(struct dp_worker *w, struct dp_lstats *st, const struct dp_port *port,
		struct rte_mbuf **pkts, uint16_t n, struct dp_out *out)
{
	return encap_burst(w, st, port, pkts, n, out, true);
}

uint16_t
esp_encap_transit(struct dp_worker *w, struct dp_lstats *st, const struct dp_port *port,
		  struct rte_mbuf **pkts, uint16_t n, struct dp_out *out)
{
	return encap_burst(w, st, port, pkts, n, out, false);
}
