/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * reass.c - reassembly of outer IPv4 and IPv6 fragments (rte_ip_frag), on the worker
 * that received them, before its burst is handed round: the fragments of one
 * packet share outer addresses, so they arrive on one RX queue.
 *
 * Memory is bounded per worker: at most REASS_MAX_ENTRIES packets in
 * reassembly, each of at most RTE_LIBRTE_IP_FRAG_MAX_FRAG fragments, kept at
 * most REASS_TIMEOUT_MS; whatever the library gives up (timed out, evicted,
 * too many fragments, overlapping) is freed through the death row and
 * counted as reass-dropped.  A flood of fragments can hold no more than that
 * many mbufs (the pool is sized for it).
 */
#include <string.h>

#include <rte_cycles.h>
#include <rte_ether.h>
#include <rte_ip.h>
#include <rte_ip_frag.h>
#include <rte_log.h>

#include "reass.h"

int
reass_init(struct dp_worker *w)
{
	uint64_t cycles = rte_get_timer_hz() * REASS_TIMEOUT_MS / 1000;

	/* the library says what it allocated at INFO on USER1: not news */
	rte_log_set_level(RTE_LOGTYPE_USER1, RTE_LOG_WARNING);
	w->reass.tbl = rte_ip_frag_table_create(REASS_BUCKETS, REASS_BUCKET_ENTRIES,
					       REASS_MAX_ENTRIES, cycles, (int)rte_socket_id());
	w->reass.dr = rte_zmalloc("dpvpn_death_row", sizeof(*w->reass.dr), RTE_CACHE_LINE_SIZE);
	return w->reass.tbl == NULL || w->reass.dr == NULL ? -1 : 0;
}

void
reass_free(struct dp_worker *w)
{
	if (w->reass.tbl != NULL)
		rte_ip_frag_table_destroy(w->reass.tbl);
	rte_free(w->reass.dr);
}

/* An IPv4 fragment addressed to port?  (m starts at its Ethernet header.) */
static struct rte_ipv4_hdr *
outer_fragment(const struct dp_port *port, struct rte_mbuf *m)
{
	const struct rte_ether_hdr *eth = rte_pktmbuf_mtod(m, const struct rte_ether_hdr *);
	struct rte_ipv4_hdr *ip;
	uint16_t ihl;

	if (rte_pktmbuf_data_len(m) < sizeof(*eth) + sizeof(*ip) ||
	    eth->ether_type != rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV4))
		return NULL;
	ip = (struct rte_ipv4_hdr *)(eth + 1);
	ihl = (uint16_t)((ip->version_ihl & 0x0f) * 4);
	if (!rte_ipv4_frag_pkt_is_fragmented(ip) || !dp_port_owns4(port, ip->dst_addr) ||
	    (ip->version_ihl >> 4) != 4 || ihl < sizeof(*ip) ||
	    rte_pktmbuf_data_len(m) < sizeof(*eth) + ihl ||
	    rte_raw_cksum(ip, ihl) != 0xffff)
		return NULL;	/* not ours to hold: the normal checks count it */
	m->l2_len = sizeof(*eth);
	m->l3_len = ihl;
	return ip;
}

/*
 * An IPv6 fragment addressed to port, its fragment header right after the
 * IPv6 header (how an IPv6 tunnel's ESP is fragmented)?
 */
static struct rte_ipv6_fragment_ext *
outer_fragment6(const struct dp_port *port, struct rte_mbuf *m, struct rte_ipv6_hdr **ipp)
{
	const struct rte_ether_hdr *eth = rte_pktmbuf_mtod(m, const struct rte_ether_hdr *);
	struct rte_ipv6_hdr *ip;
	struct rte_ipv6_fragment_ext *f;

	if (!port->has6 || rte_pktmbuf_data_len(m) < sizeof(*eth) + sizeof(*ip) + sizeof(*f) ||
	    eth->ether_type != rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV6))
		return NULL;
	ip = (struct rte_ipv6_hdr *)(eth + 1);
	f = rte_ipv6_frag_get_ipv6_fragment_header(ip);
	if (f == NULL || !dp_port_owns6(port, ip->dst_addr) ||
	    (rte_be_to_cpu_32(ip->vtc_flow) >> 28) != 6 ||
	    sizeof(*eth) + sizeof(*ip) + rte_be_to_cpu_16(ip->payload_len) >
	    rte_pktmbuf_data_len(m))
		return NULL;
	m->l2_len = sizeof(*eth);
	m->l3_len = sizeof(*ip) + sizeof(*f);
	*ipp = ip;
	return f;
}

/*
 * The reassembled chain as one segment (what the rest of the path wants);
 * NULL (chain freed, *why set) if no mbuf is free or the packet does not
 * fit one.
 */
static struct rte_mbuf *
flatten(struct rte_mbuf *chain, enum dpvpn_drop_reason *why)
{
	struct rte_mbuf *m;
	struct rte_ipv4_hdr *ip;
	const struct rte_ether_hdr *eth;
	uint8_t *d;

	if (chain->nb_segs == 1)
		m = chain;
	else {
		m = rte_pktmbuf_alloc(dp.pool);
		d = m == NULL ? NULL : (uint8_t *)rte_pktmbuf_append(m, rte_pktmbuf_pkt_len(chain));
		if (d == NULL) {
			*why = m == NULL ? DPVPN_DROP_NO_MBUF : DPVPN_DROP_TOO_BIG;
			rte_pktmbuf_free(m);
			rte_pktmbuf_free(chain);
			return NULL;
		}
		rte_pktmbuf_read(chain, 0, rte_pktmbuf_pkt_len(chain), d);
		m->port = chain->port;
		rte_pktmbuf_free(chain);
	}
	eth = rte_pktmbuf_mtod(m, const struct rte_ether_hdr *);
	if (eth->ether_type == rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV6))
		return m;
	/* the library leaves the IPv4 header checksum to be filled in */
	ip = rte_pktmbuf_mtod_offset(m, struct rte_ipv4_hdr *, sizeof(struct rte_ether_hdr));
	ip->hdr_checksum = 0;
	ip->hdr_checksum = rte_ipv4_cksum(ip);
	return m;
}

/* Free (and count) what the library gave up: after every burst that fed it,
 * since one burst's worth is all the death row has room for. */
static void
bury(struct dp_worker *w, struct dp_lstats *st)
{
	struct rte_ip_frag_death_row *dr = w->reass.dr;

	if (dr->cnt == 0)
		return;
	st->reass_dropped += dr->cnt;
	rte_ip_frag_free_death_row(dr, 0);
}

uint16_t
reass_burst(struct dp_worker *w, struct dp_lstats *st, const struct dp_port *port,
	    struct rte_mbuf **pkts, uint16_t n)
{
	uint64_t now = 0;
	uint16_t k = 0;

	for (uint16_t i = 0; i < n; i++) {
		struct rte_mbuf *m = pkts[i], *whole;
		struct rte_ipv4_hdr *ip = outer_fragment(port, m);
		struct rte_ipv6_fragment_ext *f6 = NULL;
		struct rte_ipv6_hdr *ip6 = NULL;
		enum dpvpn_drop_reason why;

		if (likely(ip == NULL) && likely((f6 = outer_fragment6(port, m, &ip6)) == NULL)) {
			pkts[k++] = m;
			continue;
		}
		if (now == 0)
			now = rte_get_timer_cycles();
		st->frag_in++;
		whole = ip != NULL ?
			rte_ipv4_frag_reassemble_packet(w->reass.tbl, w->reass.dr, m, now, ip) :
			rte_ipv6_frag_reassemble_packet(w->reass.tbl, w->reass.dr, m, now, ip6, f6);
		if (whole == NULL)
			continue;	/* held until the rest comes, or given up */
		st->reassembled++;	/* then a packet like any other: kept or dropped */
		whole = flatten(whole, &why);
		if (whole == NULL) {
			st->drops[why]++;
			continue;
		}
		pkts[k++] = whole;
	}
	if (now != 0)
		bury(w, st);
	return k;
}

void
reass_tick(struct dp_worker *w, struct dp_lstats *st)
{
	/* at most a death row's worth of expired entries per call */
	rte_ip_frag_table_del_expired_entries(w->reass.tbl, w->reass.dr, rte_get_timer_cycles());
	bury(w, st);
}
