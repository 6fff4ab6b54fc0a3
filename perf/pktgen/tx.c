/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * tx.c - the generator: builds UDP/IPv4 frames from one header template per
 * size, stamps each with its flow, per-flow sequence number and the TSC, and
 * paces bursts by the TSC.  What the driver does not take is offered again
 * next time (back-pressure, not loss), so tx.packets is exactly what left.
 */
#include <stdio.h>
#include <string.h>

#include <rte_cycles.h>
#include <rte_ethdev.h>
#include <rte_malloc.h>

#include "pktgen.h"

/* Headers for one frame size; the IPv4 sum leaves out the source address. */
struct tmpl {
	uint8_t hdr[PG_HDR_LEN];
	uint32_t sum;		/* raw one's-complement sum, folded */
	uint16_t len;
};

struct pg_tx {
	struct pg_tx_stats st;		/* first line: read by the main lcore */
	uint16_t port;
	bool by_bits;			/* --rate in bits/s, else packets/s */
	enum pg_vary vary;
	uint32_t flows, flow;		/* the next packet's flow */
	uint32_t src_ip;		/* host order */
	uint16_t sport;
	unsigned int n_sizes, size_idx;	/* the next packet's size */
	uint64_t built, limit;		/* packets built; --count or UINT64_MAX */
	uint64_t end_tsc;		/* --duration's end, set on the first step */
	double units_per_cycle;		/* rate; 0 = as fast as the driver takes */
	double spent, max_debt;		/* rate units used (or forgiven) so far */
	uint64_t duration_cycles;
	struct rte_mempool *pool;
	uint16_t n_pend, pend_off;	/* built, not yet taken by the driver */
	uint16_t pend_len[PG_BURST];
	struct rte_mbuf *pend[PG_BURST];
	uint64_t *seq;			/* next sequence number per flow */
	struct tmpl tmpl[PG_MAX_SIZES];
};

static void
tmpl_init(struct tmpl *tp, const struct pg_config *cfg, const struct rte_ether_addr *src_mac,
	  uint16_t size)
{
	struct rte_ether_hdr *eth = (struct rte_ether_hdr *)tp->hdr;
	struct rte_ipv4_hdr *ip = (struct rte_ipv4_hdr *)(eth + 1);
	struct rte_udp_hdr *udp = (struct rte_udp_hdr *)(ip + 1);

	memset(tp, 0, sizeof(*tp));
	tp->len = size;
	eth->dst_addr = cfg->dst_mac;
	eth->src_addr = *src_mac;
	eth->ether_type = rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV4);
	ip->version_ihl = RTE_IPV4_VHL_DEF;
	ip->total_length = rte_cpu_to_be_16(size - RTE_ETHER_HDR_LEN);
	ip->fragment_offset = rte_cpu_to_be_16(RTE_IPV4_HDR_DF_FLAG);
	ip->time_to_live = 64;
	ip->next_proto_id = IPPROTO_UDP;
	ip->dst_addr = rte_cpu_to_be_32(cfg->dst_ip);
	tp->sum = rte_raw_cksum(ip, sizeof(*ip));	/* src and checksum still 0 */
	udp->src_port = rte_cpu_to_be_16(cfg->sport);
	udp->dst_port = rte_cpu_to_be_16(cfg->dport);
	udp->dgram_len = rte_cpu_to_be_16(size - RTE_ETHER_HDR_LEN - sizeof(*ip));
	udp->dgram_cksum = 0;	/* none: IPv4 allows it, and the payload changes per packet */
}

/* Finish the IPv4 checksum from the template's sum plus the source address. */
static uint16_t
ip_cksum(uint32_t sum, rte_be32_t src)
{
	sum += (src & 0xffff) + (src >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	return sum == 0xffff ? (uint16_t)sum : (uint16_t)~sum;
}

static void
rate_init(struct pg_tx *t, const struct pg_config *cfg)
{
	double hz = (double)rte_get_tsc_hz();

	t->by_bits = cfg->rate_unit == PG_RATE_BPS;
	if (cfg->rate_unit == PG_RATE_MAX)
		return;
	t->units_per_cycle = cfg->rate / hz;
	t->max_debt = RTE_MAX(cfg->rate * PG_MAX_DEBT_S,
			      (double)PG_BURST * (t->by_bits ? 8.0 * PG_MAX_SIZE : 1.0));
}

struct pg_tx *
tx_create(const struct pg_config *cfg, struct rte_mempool *pool)
{
	struct rte_ether_addr mac = cfg->src_mac;
	int sock = rte_eth_dev_socket_id(cfg->tx_port);
	struct pg_tx *t;

	if (!cfg->src_mac_set && rte_eth_macaddr_get(cfg->tx_port, &mac) != 0)
		memset(&mac, 0, sizeof(mac));
	t = rte_zmalloc_socket("pg_tx", sizeof(*t), RTE_CACHE_LINE_SIZE, sock);
	if (t != NULL)
		t->seq = rte_zmalloc_socket("pg_seq", cfg->flows * sizeof(uint64_t), 0, sock);
	if (t == NULL || t->seq == NULL) {
		fprintf(stderr, "tx: out of memory for %u flows\n", cfg->flows);
		tx_free(t);
		return NULL;
	}
	t->port = cfg->tx_port;
	t->pool = pool;
	t->vary = cfg->vary;
	t->flows = cfg->flows;
	t->src_ip = cfg->src_ip;
	t->sport = cfg->sport;
	t->n_sizes = cfg->n_sizes;
	t->limit = cfg->count ? cfg->count : UINT64_MAX;
	t->duration_cycles = (uint64_t)(cfg->duration_s * (double)rte_get_tsc_hz());
	for (unsigned int i = 0; i < cfg->n_sizes; i++)
		tmpl_init(&t->tmpl[i], cfg, &mac, cfg->sizes[i]);
	rate_init(t, cfg);
	return t;
}

static inline double
cost(const struct pg_tx *t, unsigned int size_idx)
{
	return t->by_bits ? 8.0 * t->tmpl[size_idx].len : 1.0;
}

/* How many packets the rate allows now (a whole burst at --rate max). */
static unsigned int
due(struct pg_tx *t, uint64_t now)
{
	unsigned int n = 0, i = t->size_idx;
	double credit;

	if (t->units_per_cycle == 0)
		return PG_BURST;
	credit = (double)(now - t->st.start_tsc) * t->units_per_cycle - t->spent;
	if (credit > t->max_debt) {
		/* Preempted for long, or --rate is above what the port takes:
		 * skip ahead rather than send one long line-rate burst. */
		t->spent += credit - t->max_debt;
		credit = t->max_debt;
		pg_stat_add(&t->st.behind, 1);
	}
	while (n < PG_BURST && credit >= cost(t, i)) {
		credit -= cost(t, i);
		n++;
		i = i + 1 == t->n_sizes ? 0 : i + 1;
	}
	return n;
}

static void
build(struct pg_tx *t, struct rte_mbuf *m, uint64_t tsc)
{
	const struct tmpl *tp = &t->tmpl[t->size_idx];
	uint8_t *d = rte_pktmbuf_mtod(m, uint8_t *);
	struct rte_ipv4_hdr *ip = (struct rte_ipv4_hdr *)(d + RTE_ETHER_HDR_LEN);
	struct rte_udp_hdr *udp = (struct rte_udp_hdr *)(ip + 1);
	struct pg_payload *pl = (struct pg_payload *)(udp + 1);
	uint32_t f = t->flow;

	rte_memcpy(d, tp->hdr, PG_HDR_LEN);
	if (t->vary == PG_VARY_SPORT) {
		udp->src_port = rte_cpu_to_be_16((uint16_t)(t->sport + f));
		ip->src_addr = rte_cpu_to_be_32(t->src_ip);
	} else {
		ip->src_addr = rte_cpu_to_be_32(t->src_ip + f);
	}
	ip->hdr_checksum = ip_cksum(tp->sum, ip->src_addr);
	pl->magic = PG_MAGIC;
	pl->flow = (uint16_t)f;
	pl->seq = t->seq[f]++;
	pl->tsc = tsc;
	m->data_len = tp->len;
	m->pkt_len = tp->len;
	t->flow = f + 1 == t->flows ? 0 : f + 1;
	t->size_idx = t->size_idx + 1 == t->n_sizes ? 0 : t->size_idx + 1;
}

/* Build up to n packets into the (empty) pending array. */
static void
fill(struct pg_tx *t, unsigned int n, uint64_t now)
{
	n = (unsigned int)RTE_MIN((uint64_t)n, t->limit - t->built);
	if (n == 0 || rte_pktmbuf_alloc_bulk(t->pool, t->pend, n) != 0)
		return;		/* pool empty: the sink holds them, try again */
	for (unsigned int i = 0; i < n; i++) {
		t->spent += cost(t, t->size_idx);
		t->pend_len[i] = t->tmpl[t->size_idx].len;
		build(t, t->pend[i], now);
	}
	t->built += n;
	t->n_pend = (uint16_t)n;
	t->pend_off = 0;
}

static void
push(struct pg_tx *t)
{
	uint16_t off = t->pend_off;
	uint16_t sent = rte_eth_tx_burst(t->port, 0, &t->pend[off], t->n_pend);
	uint64_t bytes = 0;

	for (uint16_t i = 0; i < sent; i++)
		bytes += t->pend_len[off + i];
	t->pend_off = (uint16_t)(off + sent);
	t->n_pend = (uint16_t)(t->n_pend - sent);
	pg_stat_add(&t->st.packets, sent);
	pg_stat_add(&t->st.bytes, bytes);
}

static void
finish(struct pg_tx *t, uint64_t now)
{
	/* Built but never taken: not sent, so not counted either. */
	rte_pktmbuf_free_bulk(&t->pend[t->pend_off], t->n_pend);
	t->n_pend = 0;
	__atomic_store_n(&t->st.end_tsc, now, __ATOMIC_RELEASE);
}

bool
tx_step(struct pg_tx *t)
{
	uint64_t now = rte_rdtsc();

	if (t->end_tsc == 0) {
		__atomic_store_n(&t->st.start_tsc, now, __ATOMIC_RELAXED);
		t->end_tsc = now + t->duration_cycles;
	}
	if (__atomic_load_n(&pg_quit, __ATOMIC_RELAXED) != PG_RUN || now >= t->end_tsc ||
	    (t->built >= t->limit && t->n_pend == 0)) {
		finish(t, now);
		return false;
	}
	if (t->n_pend == 0)
		fill(t, due(t, now), now);
	if (t->n_pend != 0)
		push(t);
	return true;
}

const struct pg_tx_stats *
tx_stats(const struct pg_tx *t)
{
	return &t->st;
}

void
tx_free(struct pg_tx *t)
{
	if (t == NULL)
		return;
	rte_free(t->seq);
	rte_free(t);
}
