/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rx.c - the sink: recognises own packets by the payload's magic, tracks
 * each flow's highest sequence number and a 64-packet window behind it
 * (reordering and duplicates), and records TSC-to-TSC latency.  Anything
 * else that arrives is counted as foreign and freed; nothing is trusted
 * beyond what rte_pktmbuf_read() can prove is there.
 */
#include <stdio.h>

#include <rte_cycles.h>
#include <rte_ethdev.h>
#include <rte_malloc.h>

#include "pktgen.h"

/* Per flow: one more than the highest seq seen (0: none yet), and which of
 * the PG_DUP_WINDOW seqs up to that one have arrived (bit 0 = highest). */
struct flow_state {
	uint64_t top;
	uint64_t seen;
};

struct pg_rx {
	struct pg_rx_stats st;		/* first line: read by the main lcore */
	uint16_t port;
	uint64_t limit;			/* own packets (RX-only --count), or UINT64_MAX */
	uint64_t duration_cycles;	/* RX-only: how long to listen */
	uint64_t drain_cycles;		/* after this process's TX stopped */
	uint64_t end_tsc;
	const struct pg_tx *tx;		/* this process's generator, or NULL */
	double ns_per_cycle;
	struct hist lat;
	struct flow_state flow[PG_MAX_FLOWS];
};

struct pg_rx *
rx_create(const struct pg_config *cfg, const struct pg_tx *tx)
{
	double hz = (double)rte_get_tsc_hz();
	struct pg_rx *r;

	r = rte_zmalloc_socket("pg_rx", sizeof(*r), RTE_CACHE_LINE_SIZE,
			       rte_eth_dev_socket_id(cfg->rx_port));
	if (r == NULL) {
		fprintf(stderr, "rx: out of memory\n");
		return NULL;
	}
	r->port = cfg->rx_port;
	r->tx = tx;
	r->limit = tx == NULL && cfg->count ? cfg->count : UINT64_MAX;
	r->duration_cycles = (uint64_t)(cfg->duration_s * hz);
	r->drain_cycles = (uint64_t)(cfg->drain_ms * hz / 1e3);
	r->ns_per_cycle = 1e9 / hz;
	hist_init(&r->lat);
	return r;
}

/* The payload if m is one of ours (any generator's), else NULL. */
static const struct pg_payload *
own_payload(const struct rte_mbuf *m, struct pg_payload *copy)
{
	uint8_t buf[RTE_ETHER_HDR_LEN + sizeof(struct rte_ipv4_hdr)];
	const struct rte_ether_hdr *eth = rte_pktmbuf_read(m, 0, sizeof(buf), buf);
	const struct rte_ipv4_hdr *ip = (const struct rte_ipv4_hdr *)(eth + 1);
	const struct pg_payload *pl;
	uint32_t off;

	if (eth == NULL || eth->ether_type != rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV4))
		return NULL;
	if ((ip->version_ihl >> 4) != 4 || ip->next_proto_id != IPPROTO_UDP ||
	    (ip->fragment_offset & rte_cpu_to_be_16(RTE_IPV4_HDR_OFFSET_MASK)) != 0)
		return NULL;
	off = RTE_ETHER_HDR_LEN + rte_ipv4_hdr_len(ip) + sizeof(struct rte_udp_hdr);
	pl = rte_pktmbuf_read(m, off, sizeof(*pl), copy);
	return pl != NULL && pl->magic == PG_MAGIC ? pl : NULL;
}

enum seq_kind { SEQ_IN_ORDER, SEQ_REORDERED, SEQ_DUPLICATE };

/* Reordered: below the flow's highest seq so far and not seen before. */
static enum seq_kind
track_seq(struct flow_state *f, uint64_t seq)
{
	uint64_t back, bit;

	if (seq >= f->top) {
		back = seq + 1 - f->top;
		f->seen = back >= PG_DUP_WINDOW ? 0 : f->seen << back;
		f->seen |= 1;
		f->top = seq + 1;
		return SEQ_IN_ORDER;
	}
	back = f->top - 1 - seq;
	if (back >= PG_DUP_WINDOW)
		return SEQ_REORDERED;	/* too far back to tell a copy from a late one */
	bit = UINT64_C(1) << back;
	if (f->seen & bit)
		return SEQ_DUPLICATE;
	f->seen |= bit;
	return SEQ_REORDERED;
}

static void
latency(struct pg_rx *r, uint64_t tx_tsc, uint64_t now)
{
	if (tx_tsc > now) {
		r->st.no_latency++;	/* stamped by another machine's TSC */
		return;
	}
	hist_add(&r->lat, (uint64_t)((double)(now - tx_tsc) * r->ns_per_cycle));
}

/* Counters for one burst, published once. */
struct burst_count {
	uint64_t packets, bytes, foreign, foreign_bytes, reordered, duplicates;
};

static void
account(struct pg_rx *r, struct rte_mbuf *m, uint64_t now, struct burst_count *c)
{
	struct pg_payload copy;
	const struct pg_payload *pl = own_payload(m, &copy);

	if (pl == NULL) {
		c->foreign++;
		c->foreign_bytes += rte_pktmbuf_pkt_len(m);
		return;
	}
	c->packets++;
	c->bytes += rte_pktmbuf_pkt_len(m);
	switch (track_seq(&r->flow[pl->flow], pl->seq)) {
	case SEQ_DUPLICATE:
		c->duplicates++;
		return;		/* its latency was taken when the first copy came */
	case SEQ_REORDERED:
		c->reordered++;
		break;
	case SEQ_IN_ORDER:
		break;
	}
	latency(r, pl->tsc, now);
}

static void
publish(struct pg_rx *r, const struct burst_count *c)
{
	pg_stat_add(&r->st.packets, c->packets);
	pg_stat_add(&r->st.bytes, c->bytes);
	pg_stat_add(&r->st.foreign, c->foreign);
	pg_stat_add(&r->st.foreign_bytes, c->foreign_bytes);
	pg_stat_add(&r->st.reordered, c->reordered);
	pg_stat_add(&r->st.duplicates, c->duplicates);
}

/* With a generator here: stop once it has stopped and everything it sent is
 * back, or the drain time is up.  Alone: --duration, --count, or a signal. */
static bool
done(struct pg_rx *r, uint64_t now)
{
	int quit = __atomic_load_n(&pg_quit, __ATOMIC_RELAXED);
	const struct pg_tx_stats *ts;
	uint64_t tx_end;

	if (quit == PG_STOP_ALL)
		return true;
	if (r->tx == NULL)
		return quit != PG_RUN || now >= r->end_tsc || r->st.packets >= r->limit;
	ts = tx_stats(r->tx);
	tx_end = __atomic_load_n(&ts->end_tsc, __ATOMIC_ACQUIRE);
	if (tx_end == 0)
		return false;
	return now >= tx_end + r->drain_cycles ||
	       r->st.packets - r->st.duplicates >= pg_stat_get(&ts->packets);
}

bool
rx_step(struct pg_rx *r)
{
	struct rte_mbuf *pkts[PG_BURST];
	struct burst_count c = { 0 };
	uint64_t now = rte_rdtsc();
	uint16_t n;

	if (r->end_tsc == 0) {
		__atomic_store_n(&r->st.start_tsc, now, __ATOMIC_RELAXED);
		r->end_tsc = now + r->duration_cycles;
	}
	n = rte_eth_rx_burst(r->port, 0, pkts, PG_BURST);
	/* Read the clock again: another lcore may have stamped these after the
	 * first read, and latency must never come out negative. */
	if (n != 0)
		now = rte_rdtsc();
	for (uint16_t i = 0; i < n; i++)
		account(r, pkts[i], now, &c);
	rte_pktmbuf_free_bulk(pkts, n);
	if (n != 0)
		publish(r, &c);
	if (!done(r, now))
		return true;
	__atomic_store_n(&r->st.end_tsc, now, __ATOMIC_RELEASE);
	return false;
}

const struct pg_rx_stats *
rx_stats(const struct pg_rx *r)
{
	return &r->st;
}

const struct hist *
rx_latency(const struct pg_rx *r)
{
	return &r->lat;
}

void
rx_free(struct pg_rx *r)
{
	rte_free(r);
}
