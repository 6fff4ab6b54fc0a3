/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dp.h - state shared by the dataplane's modules: ports, workers, per-lcore
 * counters and the RCU variable that lets the main lcore retire table entries.
 */
#ifndef DP_H
#define DP_H

#include <net/if.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include <rte_common.h>
#include <rte_cycles.h>
#include <rte_ether.h>
#include <rte_ip.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>
#include <rte_ring.h>

#include "dpvpn_proto.h"
#include "meta.h"
#include "neighq.h"

struct crypto_mgr;
struct spd_cache;
struct rte_ip_frag_tbl;
struct rte_ip_frag_death_row;

#define DP_MAX_PORTS		8
#define DP_MAX_WORKERS		16
#define DP_BURST		32	/* packets taken per RX call */
#define DP_RX_DESC		1024
#define DP_TX_DESC		1024
#define DP_PUNT_RING		1024	/* worker -> main: ARP frames */
#define DP_RESOLVE_RING		256	/* worker -> main: next hops to resolve */
#define DP_TXQ_RING		1024	/* main -> worker: frames to send */
#define DP_WORK_RING		2048	/* worker -> worker: outside frames to decap */
#define DP_IKE_RING		256	/* worker -> main: IKE messages for the IKE channel */
#define DP_IKE_BURST		16	/* IKE token bucket depth, per worker, at least */
#define DP_IKE_BURST_MS		1	/* and as deep as this much of --ike-rate */
#define DP_IDLE_POLLS		1024	/* empty polls before an idle sleep */
#define DP_FLUSH_MAX		8192	/* frames discarded per queue at START, at most */

_Static_assert((DP_PUNT_RING & (DP_PUNT_RING - 1)) == 0, "ring sizes are powers of 2");
_Static_assert(DP_BURST <= DP_TXQ_RING / 4, "a burst must fit a TX ring many times");

/* A port as the control plane configured it. */
struct dp_port {
	uint16_t id;
	uint8_t role;		/* enum dpvpn_port_role */
	uint8_t prefix_len;
	uint32_t addr;		/* network order, 0 = none */
	uint32_t mask;		/* network order */
	/* extra-addresses (outside ports): extra_count addresses from
	 * extra_first on are the port's too (host order; a zeroed port: none) */
	uint32_t extra_first, extra_count;
	uint16_t mtu;		/* the device's MTU (IP packet bytes) */
	uint8_t has6;		/* addr6 is set */
	uint8_t prefix6_len;
	uint8_t addr6[16];
	struct rte_ether_addr mac;
	char name[DPVPN_NAME_LEN];
	uint8_t flush_at_start;	/* discard what its queues hold at START (worker.c) */
	uint8_t csum_partial;	/* Linux's own frames arrive here: finish checksums */
	/* port.c: the Linux interface, and rx_missed from its counters */
	uint8_t link_missed;	/* net_af_packet: rx_missed from the link */
	uint8_t has_base;	/* base_* taken at START */
	char iface[IF_NAMESIZE];	/* "": none */
	unsigned int if_index;
	uint64_t base_link_rx, base_ipackets;
	uint64_t flushed;	/* frames flush_stale() discarded (workers, atomic) */
	uint8_t twin;		/* has a host twin (host.h): what is ours goes there */
	/* an HA pair's virtual addresses (VIP_SET, port.c): vip4[i] (vip6[i]) is
	 * the port's too while bit i of vip_held (vip6_held) is set (main lcore
	 * writes, workers read) */
	uint8_t vip_held;
	uint8_t vip6_held;
	uint32_t vip4[DPVPN_VIP_MAX];	/* network order, 0 = none */
	uint8_t vip6[DPVPN_VIP6_MAX][16];	/* all zero = none */
	/* main lcore: gratuitous ARPs (unsolicited Neighbour Advertisements)
	 * still to send for each, and when the next */
	uint8_t vip_announce[DPVPN_VIP_MAX];
	uint8_t vip6_announce[DPVPN_VIP6_MAX];
	uint64_t vip_announce_tsc;
};

/* Gratuitous ARPs for a virtual address newly held, one every second (a
 * neighbour that refreshed its entry less than its locktime ago, Linux's 1 s,
 * ignores the first: RFC 5227's ANNOUNCE_NUM is 2).  As many unsolicited
 * Neighbour Advertisements for an IPv6 one (RFC 4861 7.2.6: MAX_NEIGHBOR_
 * ADVERTISEMENT, 3), as far apart. */
#define DP_VIP_ANNOUNCE		3

/* Is dst one of p's virtual addresses (held only, or configured at all)? */
static inline bool
dp_port_vip4(const struct dp_port *p, uint32_t dst, bool held_only)
{
	uint8_t held = __atomic_load_n(&p->vip_held, __ATOMIC_ACQUIRE);

	for (unsigned i = 0; i < DPVPN_VIP_MAX; i++)
		if (p->vip4[i] == dst && dst != 0 && (!held_only || (held >> i & 1)))
			return true;
	return false;
}

/*
 * Is dst one of p's IPv6 virtual addresses (held only, or configured at all)?
 * A held bit is never set for an all-zero address (port_set_vips).
 */
static inline bool
dp_port_vip6(const struct dp_port *p, const uint8_t *dst, bool held_only)
{
	static const uint8_t none[16];
	uint8_t held = __atomic_load_n(&p->vip6_held, __ATOMIC_ACQUIRE);

	for (unsigned i = 0; i < DPVPN_VIP6_MAX; i++)
		if ((held_only ? (held >> i & 1) : memcmp(p->vip6[i], none, 16) != 0) &&
		    memcmp(p->vip6[i], dst, 16) == 0)
			return true;
	return false;
}

/*
 * What a stage hands back to the poll loop besides the burst it returns:
 * packets it made or kept aside (ICMP errors, fragments, replies), which
 * worker.c routes and sends after the burst, in this order; or, for packets
 * that go into a tunnel (dp_out of esp_decap_burst), encrypts first.  Stages
 * never transmit: only the poll loop does.  Room for every packet of a burst
 * cut into the most fragments one packet may become (pmtu.h).
 */
#define DP_OUT_MAX	(DP_BURST * 32)

struct dp_out {
	uint16_t n;
	struct rte_mbuf *pkts[DP_OUT_MAX];
};

static inline void
dp_out_add(struct dp_out *o, struct rte_mbuf *m)
{
	o->pkts[o->n++] = m;	/* the room is there: see DP_OUT_MAX */
}

/* A next hop to resolve (worker -> main lcore): ARP or Neighbour Discovery. */
struct dp_resolve_req {
	uint16_t port;
	uint8_t family;		/* DPVPN_AF_INET or DPVPN_AF_INET6 */
	uint8_t reserved;
	uint8_t addr[16];	/* IPv4 in the first 4 bytes */
};

/*
 * The fast path's stages, whose TSC cycles a -Dstage_cycles=true build counts
 * per worker (perf/stages.py reads them over telemetry: /dpvpn/stages,ID).
 * Cycles are taken at burst granularity, where a stage is a pass of its own;
 * what no stage claims (calls, the loop) is the busy cycles' remainder.
 */
#define DP_STAGES(X) \
	X(RX,		"rx")		/* rte_eth_rx_burst: the PMD (net_pcap: its copy) */ \
	X(CLASSIFY,	"classify")	/* Ethernet and IP checks, addresses of the gateway */ \
	X(SPD,		"spd")		/* policy lookup for the burst */ \
	X(SA,		"sa")		/* SA lookup, lifetimes, MTU and MSS */ \
	X(SEQ,		"seq-replay")	/* sequence numbers, replay window */ \
	X(HDR,		"header")	/* ESP headers built or checked, inner checks */ \
	X(CRYPTO,	"crypto")	/* intel-ipsec-mb */ \
	X(COUNT,	"counters")	/* per-SA counters */ \
	X(ROUTE,	"route")	/* route, neighbour, Ethernet header, TX enqueue */ \
	X(TX,		"tx")		/* rte_eth_tx_burst: the PMD */

enum dp_stage {
#define DP_STAGE_ENUM(e, name) DP_STAGE_##e,
	DP_STAGES(DP_STAGE_ENUM)
#undef DP_STAGE_ENUM
	DP_STAGE_NUM
};

/*
 * STAGE_CLOCK(t) starts a function's stage clock; STAGE(st, t, s) charges
 * the cycles since t to stage s and restarts t.  Nothing without the option.
 */
#ifdef DPVPN_STAGE_CYCLES
#define STAGE_CLOCK(t)		uint64_t t = rte_rdtsc()
#define STAGE(st, t, s)		do { uint64_t now_ = rte_rdtsc(); \
		(st)->stage_cycles[DP_STAGE_##s] += now_ - (t); (t) = now_; } while (0)
#else
#define STAGE_CLOCK(t)		do { } while (0)
#define STAGE(st, t, s)		do { } while (0)
#endif

/* Counters one lcore writes and anyone may read (relaxed, summed on read). */
struct dp_lstats {
	uint64_t rx, tx, encrypted, decrypted, arp_in, arp_out, handoff;
	uint64_t icmp_out, icmp_limited, fragments, mss_clamped;
	uint64_t icmp_echo, neigh_queued;	/* echo replies sent; packets held (neighq) */
	uint64_t frag_in, reassembled, reass_dropped, fragmented;
	uint64_t ike_in, ike_out;		/* main lcore: pushed, built */
	uint64_t host_in, host_out;		/* to the host twins, and from them (host.c) */
	uint64_t replay_late;			/* replay drops left of the window */
	uint64_t busy_cycles, idle_cycles;	/* polls that found work, and empty ones */
	uint64_t drops[DPVPN_DROP_SLOTS];
	uint64_t csum_completed[DP_MAX_PORTS];	/* inside RX: L4 checksums finished */
	uint64_t stage_cycles[DP_STAGE_NUM];	/* -Dstage_cycles=true builds only */
} __rte_cache_aligned;

/* What a worker needs; owned and written by that worker only. */
/* A token bucket (dp_bucket_take): its last refill (0: never), the tokens left. */
struct dp_bucket {
	uint64_t tsc;
	uint32_t tokens;
};

/* A worker's rings to and from the main lcore, and the punt rate limits. */
struct dp_w_main {
	struct rte_ring *punt;		/* ARP frames to the main lcore */
	struct rte_ring *txq_ring;	/* frames the main lcore wants sent */
	struct rte_ring *ike;		/* IKE messages to the main lcore (ike_punt.c) */
	struct dp_bucket ike_rate;	/* --ike-rate */
	struct rte_ring *host;		/* frames for the host twins (host.c) */
	struct dp_bucket host_rate, hostc_rate;	/* other and control class */
};

/* Outside bursts handed round the workers (worker.c hand_off). */
struct dp_w_spread {
	struct rte_ring *work;		/* outside-port frames other workers hand over */
	uint32_t rr;			/* next worker to hand an outside burst to */
};

/* The ESP stages' per-lcore state (esp_encap.c, esp_decap.c, crypto.c, spd.c). */
struct dp_w_esp {
	struct crypto_mgr *mb;		/* this lcore's ipsec-mb manager and IV pool */
	struct spd_cache *spd_cache;	/* flows and their SAs (spd.h), NULL: none */
	uint32_t ip_id;			/* outer IPv4 identification */
};

/* Outer fragments being reassembled (reass.c). */
struct dp_w_reass {
	struct rte_ip_frag_tbl *tbl;
	struct rte_ip_frag_death_row *dr;
};

/* The output stage's (ip_output.c): TX buffers and frames waiting for a MAC. */
struct dp_w_output {
	struct rte_eth_dev_tx_buffer *txb[DP_MAX_PORTS];
	struct rte_ring *resolve;	/* struct dp_resolve_req: next hops to resolve */
	struct neighq nq;		/* packets waiting for their next hop's MAC */
};

/* A worker lcore: what its loop uses, then each stage's state in its own struct. */
struct dp_worker {
	unsigned int lcore;
	unsigned int index;		/* 0..n_workers-1 */
	uint16_t rxq, txq;		/* queue ids on every port */
	uint32_t loops;
	uint64_t now_tsc;		/* this poll's start: SAs' last packet (sa_stamp) */
	/* what every burst reads, the TX buffers from the second cache line on */
	struct dp_w_spread spread;
	struct dp_w_esp esp;
	struct dp_w_output out;
	/* the exception paths' */
	struct dp_w_main main;
	struct dp_w_reass reass;
	struct dp_bucket icmp_rate;	/* ICMP errors (pmtu.c) */
	struct dp_bucket echo_rate;	/* echo replies (echo.c) */
} __rte_cache_aligned;

struct dp_state {
	uint16_t n_ports;
	unsigned int n_workers;
	struct dp_port ports[DP_MAX_PORTS];
	struct dp_worker workers[DP_MAX_WORKERS];
	struct rte_mempool *pool;
	struct rte_rcu_qsbr *rcu;
	uint64_t start_tsc;
	unsigned int idle_sleep_us;	/* 0 = never sleep (benchmarks) */
	bool spread;			/* hand outside bursts round the workers */
	bool tester;			/* tester mode (tester.h) */
	uint16_t max_mtu;		/* largest port MTU the mbufs hold in one segment */
	volatile int started;		/* ports up, workers forwarding */
	volatile int ike_open;		/* an IKE channel is open: punt IKE (ike_punt.c) */
	uint32_t ike_rate;		/* IKE messages a second, each worker (--ike-rate) */
	uint32_t host_rate, host_rate_control;	/* to the host twins, each worker (host.h) */
	struct rte_mempool *host_pool;	/* the twins' RX mbufs: a host flood stays there */
	uint32_t n_tunifs;		/* tunnel interfaces (tunif.h): 0, and inner
					 * packets no policy takes are not routed */
	uint32_t neigh_gen;		/* moves when a neighbour is deleted or a port set:
					 * workers drop what they hold (neighq.h) */
	int main_wake_fd;		/* eventfd in the main lcore's poll(); -1: none */
	int main_asleep;		/* atomic: it sleeps in poll() for want of work */
	volatile int quit;
};

extern struct dp_state dp;
extern struct dp_lstats dp_lstats[RTE_MAX_LCORE];

/*
 * After a worker (or the classifier's build thread) put something in a ring
 * the main lcore drains: if it sleeps in poll() for want of work (main.c,
 * main_sleep_ms), wake it: one write by whoever sees it asleep first.  Only
 * on the slow path (punts, IKE), never per ESP packet; with the fence on
 * both sides either the main lcore sees the ring's entry before it sleeps
 * or this sees it asleep.
 */
static inline void
dp_main_kick(void)
{
	uint64_t one = 1;

	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (__atomic_load_n(&dp.main_asleep, __ATOMIC_RELAXED) &&
	    __atomic_exchange_n(&dp.main_asleep, 0, __ATOMIC_ACQ_REL))
		(void)!write(dp.main_wake_fd, &one, sizeof(one));	/* cannot block: it woke */
}

static inline void
dp_drop(struct dp_lstats *st, struct rte_mbuf *m, enum dpvpn_drop_reason why)
{
	st->drops[why]++;
	rte_pktmbuf_free(m);
}

/*
 * Is dst (network order) one of p's IPv4 addresses: its address, one of
 * its extra-addresses, or a virtual address it holds?  One compare more
 * than the address alone, and only when that one fails: no loop, whatever
 * the prefix's size; the virtual addresses' loop (4 at most) only on a
 * port that holds one (an HA master's).
 */
static inline bool
dp_port_owns4(const struct dp_port *p, uint32_t dst)
{
	return p->addr != 0 &&
	       (dst == p->addr || rte_be_to_cpu_32(dst) - p->extra_first < p->extra_count ||
		(p->vip_held != 0 && dp_port_vip4(p, dst, true)));
}

/*
 * Is dst one of p's IPv6 addresses: its address, or a virtual address it
 * holds?  As dp_port_owns4: the virtual addresses' loop (4 at most) only on
 * a port that holds one.
 */
static inline bool
dp_port_owns6(const struct dp_port *p, const uint8_t *dst)
{
	return p->has6 && (memcmp(dst, p->addr6, 16) == 0 ||
			   (p->vip6_held != 0 && dp_port_vip6(p, dst, true)));
}

/* The port whose IPv4 address dst is (only: that port alone), or -1. */
static inline int
dp_owner4(uint32_t dst, const struct dp_port *only)
{
	if (only != NULL)
		return dp_port_owns4(only, dst) ? only->id : -1;
	for (uint16_t p = 0; p < dp.n_ports; p++)
		if (dp_port_owns4(&dp.ports[p], dst))
			return p;
	return -1;
}

static inline int
dp_owner6(const uint8_t *dst, const struct dp_port *only)
{
	if (only != NULL)
		return dp_port_owns6(only, dst) ? only->id : -1;
	for (uint16_t p = 0; p < dp.n_ports; p++)
		if (dp_port_owns6(&dp.ports[p], dst))
			return p;
	return -1;
}

/* The port whose address ip's destination is (only: that port alone), or -1. */
static inline int
dp_owner(const uint8_t *ip, const struct dp_port *only)
{
	if (ip[0] >> 4 == 6)
		return dp_owner6(((const struct rte_ipv6_hdr *)ip)->dst_addr, only);
	return dp_owner4(((const struct rte_ipv4_hdr *)ip)->dst_addr, only);
}

/*
 * A per-lcore token bucket: rate tokens a second, at most burst saved up;
 * true if one was taken (ICMP errors in pmtu.c, IKE punts in ike_punt.c,
 * echo replies in echo.c).
 * dp_bucket_take_at: the same with now read and per (cycles a token) worked
 * out by the caller (the host path's buckets in host.c, per packet).
 */
static inline bool
dp_bucket_take_at(uint64_t now, struct dp_bucket *b, uint64_t per, uint32_t burst)
{
	if (b->tokens > 0 && now - b->tsc < per) {	/* the common case either way */
		b->tokens--;
		return true;
	}
	if (b->tsc == 0 || now - b->tsc >= per * burst) {
		b->tokens = burst;
		b->tsc = now;
	} else if (now - b->tsc >= per) {
		uint64_t add = (now - b->tsc) / per;

		b->tokens = (uint32_t)RTE_MIN((uint64_t)burst, b->tokens + add);
		b->tsc += add * per;
	}
	if (b->tokens == 0)
		return false;
	b->tokens--;
	return true;
}

static inline bool
dp_bucket_take(struct dp_bucket *b, uint32_t rate, uint32_t burst)
{
	return dp_bucket_take_at(rte_get_timer_cycles(), b, rte_get_timer_hz() / rate, burst);
}

static inline bool
dp_in_prefix(uint32_t addr, uint32_t prefix, uint32_t mask)
{
	return (addr & mask) == prefix;
}

static inline uint32_t
dp_mask(uint8_t len)	/* network order */
{
	return len == 0 ? 0 : rte_cpu_to_be_32(~0u << (32 - len));
}

/* Is the IPv6 address a within net/len (net's host bits zero)? */
static inline bool
dp_in_prefix6(const uint8_t *a, const uint8_t *net, uint8_t len)
{
	uint8_t full = len / 8, rest = len % 8;

	if (memcmp(a, net, full) != 0)
		return false;
	return rest == 0 || ((a[full] ^ net[full]) & (uint8_t)(0xff << (8 - rest))) == 0;
}

/* Zero the host bits of an IPv6 prefix. */
static inline void
dp_mask6(uint8_t *a, uint8_t len)
{
	for (unsigned int i = 0; i < 16; i++) {
		unsigned int bits = len > i * 8 ? len - i * 8 : 0;

		a[i] &= bits >= 8 ? 0xff : (uint8_t)(0xff << (8 - bits));
	}
}

/* Worker loop (worker.c) and the main lcore's slow path (arp.c). */
int worker_main(void *arg);
/*
 * A burst of n frames (n <= DP_BURST) received on port p: outer reassembly
 * and hand-off (outside ports), classification, encap or decap, routing and
 * buffered TX; what the poll loop does with each RX burst (fuzz/ calls it too).
 */
void worker_rx(struct dp_worker *w, struct dp_lstats *st, uint16_t p, struct rte_mbuf **pkts,
	       uint16_t n);
void worker_tx_unsent(struct rte_mbuf **pkts, uint16_t unsent, void *userdata);
void arp_poll(void);
void arp_input(struct rte_mbuf *m);
/* Main lcore: p's virtual addresses' gratuitous ARPs and unsolicited Neighbour
 * Advertisements that are due (port.c: VIP_SET). */
void vip_announce_due(struct dp_port *p, uint64_t now);
/* Main lcore: send a frame it built through worker 0 (dp_main_tx; arp_out). */
void dp_send_frame(struct rte_mbuf *m, uint16_t port);
/* Main lcore: a frame it could not build, the pool being empty (arp_out, no-mbuf). */
void dp_frame_nombuf(void);
static inline struct dp_lstats *
main_stats(void)
{
	return &dp_lstats[rte_lcore_id()];
}
/* Neighbour Discovery (nd.c), on the main lcore: m starts at Ethernet. */
void nd_input(struct rte_mbuf *m);
void nd_solicit(const struct dp_port *p, const uint8_t *target);
/* An unsolicited Neighbour Advertisement (Override) of target, p's, to all-nodes. */
void nd_announce(const struct dp_port *p, const uint8_t *target);

#endif /* DP_H */
