/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pktgen.h - what dpvpn-pktgen's modules share: the options, the payload
 * every generated packet carries, and the generator (tx.c) and sink (rx.c)
 * contexts whose first cache line holds the counters the main lcore reads.
 */
#ifndef PG_PKTGEN_H
#define PG_PKTGEN_H

#include <stdbool.h>
#include <stdint.h>

#include <rte_common.h>
#include <rte_ether.h>
#include <rte_ip.h>
#include <rte_mbuf.h>
#include <rte_udp.h>

#include "hist.h"

#define PG_BURST	32		/* packets per rte_eth_{rx,tx}_burst */
#define PG_MAX_SIZES	32		/* entries in a --size list */
#define PG_MAX_FLOWS	65536		/* the flow id is 16 bits on the wire */
#define PG_MAX_SIZE	9000		/* largest --size (a jumbo frame) */
#define PG_NO_PORT	UINT16_MAX	/* --tx-port / --rx-port not given */
#define PG_MAGIC	0x4e475044u	/* "DPGN" in memory on x86 */
#define PG_DUP_WINDOW	64		/* duplicates are found this far back */
/*
 * After a stall (a vCPU loses its physical CPU for a millisecond or more
 * quite often) TX catches up at most this much sending: the average rate
 * stays right, and a longer stall does not turn into a long line-rate burst.
 */
#define PG_MAX_DEBT_S	0.010

/*
 * What follows the UDP header, in host byte order (the sink runs on the same
 * machine: the TSC is only comparable there anyway).  Packed, because the
 * whole of it has to fit the 22 bytes a 64-byte frame leaves after the
 * headers.  seq counts per flow, from 0.
 */
struct pg_payload {
	uint32_t magic;
	uint16_t flow;
	uint64_t seq;
	uint64_t tsc;		/* TX lcore's TSC when the burst was built */
} __rte_packed;

#define PG_HDR_LEN	(sizeof(struct rte_ether_hdr) + sizeof(struct rte_ipv4_hdr) + \
			 sizeof(struct rte_udp_hdr))
#define PG_MIN_SIZE	(PG_HDR_LEN + sizeof(struct pg_payload))

_Static_assert(PG_MIN_SIZE == 64, "a 64-byte frame (without FCS) carries the payload");
_Static_assert(PG_MAX_FLOWS - 1 == UINT16_MAX, "flow ids fit pg_payload.flow");
_Static_assert(PG_DUP_WINDOW == 64, "the duplicate window is one uint64_t");

enum pg_rate_unit { PG_RATE_MAX, PG_RATE_PPS, PG_RATE_BPS };
enum pg_vary { PG_VARY_SPORT, PG_VARY_SRC };

struct pg_config {
	uint16_t tx_port, rx_port;	/* PG_NO_PORT when not given */
	uint32_t flows;
	enum pg_vary vary;		/* which field the flow id is added to */
	uint32_t src_ip, dst_ip;	/* host order */
	uint16_t sport, dport;
	bool src_mac_set;		/* else the TX port's own MAC */
	struct rte_ether_addr src_mac, dst_mac;
	uint16_t sizes[PG_MAX_SIZES];	/* L2 frame sizes without FCS, cycled */
	unsigned int n_sizes;
	const char *size_arg;
	enum pg_rate_unit rate_unit;
	double rate;			/* packets or L2 bits per second */
	const char *rate_arg;
	double duration_s;
	uint64_t count;			/* 0: no packet limit */
	unsigned int drain_ms;
	unsigned int link_wait_ms;	/* 0: send at once */
	bool json, progress;
	bool hist;			/* --json also carries the latency histogram */
};

/* options.c */
int opt_parse(struct pg_config *cfg, int argc, char **argv);
void opt_usage(const char *prog);

/*
 * Stop requests: the first SIGINT/SIGTERM stops TX (the sink still drains),
 * a second one stops everything.
 */
enum { PG_RUN, PG_STOP_TX, PG_STOP_ALL };
extern int pg_quit;

/* One writer, one reader (the main lcore): relaxed stores are enough. */
static inline void
pg_stat_add(uint64_t *c, uint64_t n)
{
	__atomic_store_n(c, *c + n, __ATOMIC_RELAXED);
}

static inline uint64_t
pg_stat_get(const uint64_t *c)
{
	return __atomic_load_n(c, __ATOMIC_RELAXED);
}

struct pg_tx_stats {
	uint64_t packets, bytes;	/* taken by the driver */
	uint64_t behind;		/* times TX fell PG_MAX_DEBT_S behind --rate */
	uint64_t start_tsc;
	uint64_t end_tsc;		/* 0 until TX has stopped for good */
} __rte_cache_aligned;

struct pg_rx_stats {
	uint64_t packets, bytes;	/* own packets (magic matched) */
	uint64_t foreign, foreign_bytes;
	uint64_t reordered, duplicates;
	uint64_t no_latency;		/* TX TSC ahead of ours: not comparable */
	uint64_t start_tsc, end_tsc;
} __rte_cache_aligned;

/* tx.c: the generator.  tx_step() returns false once TX is done. */
struct pg_tx;
struct pg_tx *tx_create(const struct pg_config *cfg, struct rte_mempool *pool);
bool tx_step(struct pg_tx *t);
const struct pg_tx_stats *tx_stats(const struct pg_tx *t);
void tx_free(struct pg_tx *t);

/* rx.c: the sink.  tx is the generator of this process, or NULL. */
struct pg_rx;
struct pg_rx *rx_create(const struct pg_config *cfg, const struct pg_tx *tx);
bool rx_step(struct pg_rx *r);
const struct pg_rx_stats *rx_stats(const struct pg_rx *r);
const struct hist *rx_latency(const struct pg_rx *r);
void rx_free(struct pg_rx *r);

/* port.c */
struct rte_mempool *port_pool(const struct pg_config *cfg, bool tx);
int port_setup(uint16_t port, struct rte_mempool *pool, const struct pg_config *cfg);
int port_wait_link(uint16_t port, unsigned int ms);
void port_close(uint16_t port);

/* report.c */
void report_progress(const struct pg_tx *tx, const struct pg_rx *rx, double t_s);
void report_final(const struct pg_config *cfg, const struct pg_tx *tx, const struct pg_rx *rx);

#endif /* PG_PKTGEN_H */
