/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * tester.c - tester mode's generator, sink and telemetry (see tester.h).
 *
 * A trial (rates per direction, a TX window, frame sizes) is published by
 * the telemetry thread: parameters first, then the trial id with release
 * order.  Each worker adopts it at its next poll: it clears its own
 * counters and histograms (one writer per counter: the worker) and makes
 * its share of the packets, paced by the TSC: the tunnels i with
 * i % workers == its index, round robin, the rate divided among the
 * workers that have tunnels.  The sink counts what it receives per stream
 * (tunnel and direction): received, duplicated (a sequence seen again
 * within 64), reordered (older than the newest seen), latency (TSC now minus
 * the stamp) into a log-linear histogram per direction (fine) and one per
 * stream (coarse: 384 bytes, for 200 000 streams a worker), min / mean / max
 * per stream, and the longest wait between two of a stream's packets (the
 * gap a stall or a rekey makes); packets of an earlier trial are counted as
 * late, never mixed in.  Readers add the workers' counters up.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <rte_cycles.h>
#include <rte_errno.h>
#include <rte_eth_ring.h>
#include <rte_malloc.h>
#include <rte_telemetry.h>
#include <rte_udp.h>

#include "ip.h"
#include "loghist.h"
#include "tester.h"

/* Per direction: every TSC tick count, buckets <= 6.25 % wide. */
#define SUB_BITS	4
#define HIST_BUCKETS	LOGHIST_BUCKETS(SUB_BITS, 64)
/*
 * Per stream (200 000 of them per worker at 100 000 tunnels): 96 u32
 * buckets, 384 bytes, <= 25 % wide, over units of 2^T.unit_shift ticks
 * (32..64 ns), values up to 2^25 units (>= 1 s); beyond, the last bucket.
 */
#define S_SUB_BITS	2
#define S_BITS		25
#define S_BUCKETS	LOGHIST_BUCKETS(S_SUB_BITS, S_BITS)
#define S_UNIT_NS	32	/* the smallest unit; the TSC's rate picks the power of 2 */
#define MAX_DEBT_S	0.010	/* at most this much TX caught up after a stall */
#define OPEN_S		0.010	/* a trial's TX window opens this long after its start, */
#define CLEAR_PER_S	2000000	/* and one more second per this many streams x workers:
				 * each worker clears its counters and histograms (480
				 * bytes a stream) before it sends; 0.96 GB/s in all, half
				 * what memset did on a busy 2-vCPU lab machine */
#define SEQ_MASK	((UINT64_C(1) << TESTER_SEQ_BITS) - 1)
#define UDP_SPORT	10000
#define UDP_DPORT	20000
#define PAYLOAD_OFF	(sizeof(struct rte_ipv4_hdr) + sizeof(struct rte_udp_hdr))
#define TUNNELS_PAGE	16	/* /dpvpn/tester/tunnels: the reply fits 16 KiB */
#define TUNNEL_KEYS	13	/* per direction, in /dpvpn/tester/tunnels */

_Static_assert(S_BUCKETS == 96, "384 bytes of u32 per stream");
/* the longest reply: per field "key" (the longest, d_lat_p999_ns, 13), ':', 20 digits
 * and ','; per tunnel "N":{...}, and the command's name around it all */
_Static_assert(TUNNELS_PAGE * (2 * TUNNEL_KEYS * (13 + 2 + 1 + 20 + 1) + 16) + 64 < 16384,
	       "a page of /dpvpn/tester/tunnels fits DPDK telemetry's 16 KiB");

_Static_assert(sizeof(struct rte_ether_hdr) + PAYLOAD_OFF + sizeof(struct tester_payload) ==
	       TESTER_MIN_SIZE, "a 64-byte frame carries the payload");

struct trial {
	uint32_t id;			/* 0: none yet */
	uint64_t start, end;		/* TX window, TSC */
	double pps[TESTER_DIRS];	/* in all; < 0: as fast as the worker can */
	uint16_t sizes[TESTER_MAX_SIZES];
	unsigned int n_sizes;
	uint32_t clear;			/* the inside port's address, network order */
	uint16_t port;			/* the inside port */
};

struct stream_rx {
	uint64_t rx, dup, reorder;
	uint64_t max_seq, window;	/* newest sequence, and the 64 before it */
	uint64_t lat_min, lat_max, lat_sum;	/* TSC ticks */
	uint64_t first;			/* TSC of the first received (tunnel set-up) */
	uint64_t last, gap_max;		/* TSC of the newest received; the longest wait */
};

typedef uint32_t shist_t[S_BUCKETS];	/* a stream's latency, units of 2^unit_shift ticks */

struct tworker {
	uint32_t trial;			/* the trial this worker's counters are for */
	struct trial t;
	double per_tsc[TESTER_DIRS];	/* this worker's packets per TSC tick */
	uint64_t made[TESTER_DIRS];	/* packets built: sent */
	uint64_t skipped[TESTER_DIRS];	/* due in a stall, never made (behind) */
	uint32_t cursor[TESTER_DIRS];	/* next tunnel */
	unsigned int size_i[TESTER_DIRS];	/* each direction cycles the sizes alone */
	uint64_t sent_bytes[TESTER_DIRS];
	uint64_t rx[TESTER_DIRS], rx_bytes[TESTER_DIRS];
	uint64_t dup[TESTER_DIRS], reorder[TESTER_DIRS];
	uint64_t late, foreign, no_mbuf, behind;
	uint64_t corrupt[TESTER_DIRS];	/* lengths or padding not as sent */
	uint64_t lat_min[TESTER_DIRS], lat_max[TESTER_DIRS];
	uint64_t gap_max[TESTER_DIRS];	/* the longest inter-arrival gap of any stream */
	uint64_t hist[TESTER_DIRS][HIST_BUCKETS];
	uint64_t *sent;			/* [stream] */
	struct stream_rx *srx;		/* [stream] */
	shist_t *shist;			/* [stream] */
} __rte_cache_aligned;

static struct {
	unsigned int tunnels, streams, gen_workers;
	unsigned int unit_shift;	/* per-stream histograms: a unit is 2^this ticks */
	uint32_t inner;			/* tunnel 0's tester-side host, host order */
	uint32_t gen;			/* the newest trial id (release) */
	struct trial next;		/* its parameters */
	struct tworker *w[DP_MAX_WORKERS];
} T;

int
tester_init(unsigned int tunnels, uint32_t inner_host)
{
	T.tunnels = tunnels;
	T.streams = 2 * tunnels;
	T.inner = inner_host;
	T.gen_workers = RTE_MIN(dp.n_workers, tunnels);
	while (((uint64_t)1 << T.unit_shift) * 1000000000 < S_UNIT_NS * rte_get_tsc_hz())
		T.unit_shift++;
	for (unsigned int i = 0; i < dp.n_workers; i++) {
		struct tworker *tw = rte_zmalloc("tester", sizeof(*tw), RTE_CACHE_LINE_SIZE);

		if (tw == NULL)
			return -ENOMEM;
		tw->sent = rte_zmalloc("tester_sent", T.streams * sizeof(uint64_t), 0);
		tw->srx = rte_zmalloc("tester_rx", T.streams * sizeof(struct stream_rx),
				      RTE_CACHE_LINE_SIZE);
		tw->shist = rte_zmalloc("tester_hist", T.streams * sizeof(shist_t),
					RTE_CACHE_LINE_SIZE);
		if (tw->sent == NULL || tw->srx == NULL || tw->shist == NULL)
			return -ENOMEM;
		T.w[i] = tw;
	}
	dp.tester = true;
	return 0;
}

/*
 * --tester-loop: ports B and C made of rings, crossed (what B sends C
 * receives and the other way), one ring pair per queue, for the back-to-back
 * calibration with no kernel link: the tester's own capacity.
 */
int
tester_loop_ports(unsigned int queues)
{
	struct rte_ring *bc[DP_MAX_WORKERS], *cb[DP_MAX_WORKERS];
	int socket = (int)rte_socket_id();
	char name[RTE_RING_NAMESIZE];

	if (queues == 0 || queues > DP_MAX_WORKERS)
		return -EINVAL;
	for (unsigned int q = 0; q < queues; q++) {
		snprintf(name, sizeof(name), "tloop_bc%u", q);
		bc[q] = rte_ring_create(name, 4096, socket, RING_F_SP_ENQ | RING_F_SC_DEQ);
		snprintf(name, sizeof(name), "tloop_cb%u", q);
		cb[q] = rte_ring_create(name, 4096, socket, RING_F_SP_ENQ | RING_F_SC_DEQ);
		if (bc[q] == NULL || cb[q] == NULL)
			return -rte_errno;
	}
	if (rte_eth_from_rings("tester_b", cb, queues, bc, queues, (unsigned int)socket) < 0 ||
	    rte_eth_from_rings("tester_c", bc, queues, cb, queues, (unsigned int)socket) < 0)
		return -rte_errno;
	return 0;
}

/* ---- the workers' side ---- */

static void
adopt(struct tworker *tw, const struct dp_worker *w, uint32_t id)
{
	double hz = (double)rte_get_tsc_hz();

	memset(tw, 0, offsetof(struct tworker, sent));
	memset(tw->sent, 0, T.streams * sizeof(*tw->sent));
	memset(tw->srx, 0, T.streams * sizeof(*tw->srx));
	memset(tw->shist, 0, T.streams * sizeof(*tw->shist));
	tw->t = T.next;
	for (int d = 0; d < TESTER_DIRS; d++) {
		tw->per_tsc[d] = w->index >= T.gen_workers ? 0 :
				 tw->t.pps[d] < 0 ? -1 : tw->t.pps[d] / T.gen_workers / hz;
		tw->cursor[d] = w->index;
		tw->lat_min[d] = UINT64_MAX;
	}
	__atomic_store_n(&tw->trial, id, __ATOMIC_RELEASE);
}

/* How many packets of direction d are due now (at most DP_BURST). */
static uint16_t
due(struct tworker *tw, int d, uint64_t now)
{
	uint64_t want;

	if (tw->per_tsc[d] == 0 || now < tw->t.start || now >= tw->t.end)
		return 0;
	if (tw->per_tsc[d] < 0)
		return DP_BURST;
	want = (uint64_t)((double)(now - tw->t.start) * tw->per_tsc[d]) - tw->skipped[d];
	if (want <= tw->made[d])
		return 0;
	if ((double)(want - tw->made[d]) > MAX_DEBT_S * rte_get_tsc_hz() * tw->per_tsc[d] +
	    DP_BURST) {
		/* a stall: the rest of that time is not made up (nor counted as sent) */
		tw->behind++;
		tw->skipped[d] += want - tw->made[d] - DP_BURST;
		want = tw->made[d] + DP_BURST;
	}
	return (uint16_t)RTE_MIN(want - tw->made[d], (uint64_t)DP_BURST);
}

static void
build(struct tworker *tw, struct rte_mbuf *m, int d, uint32_t tunnel, uint64_t tsc)
{
	uint16_t size = tw->t.sizes[tw->size_i[d]], len = size - sizeof(struct rte_ether_hdr);
	struct rte_ipv4_hdr *ip = rte_pktmbuf_mtod(m, struct rte_ipv4_hdr *);
	struct rte_udp_hdr *udp = (struct rte_udp_hdr *)(ip + 1);
	uint32_t stream = tunnel * 2 + (uint32_t)d;
	uint32_t host = rte_cpu_to_be_32(T.inner + tunnel), clear = tw->t.clear;
	struct tester_payload pl = {
		.magic = TESTER_MAGIC, .stream = stream, .tsc = tsc,
		.seq = (uint64_t)(tw->trial & 0xffff) << TESTER_SEQ_BITS | tw->sent[stream]++,
	};
	uint16_t sum;

	if (++tw->size_i[d] == tw->t.n_sizes)
		tw->size_i[d] = 0;
	m->data_len = m->pkt_len = len;
	m->port = tw->t.port;
	*ip = (struct rte_ipv4_hdr){
		.version_ihl = 0x45, .total_length = rte_cpu_to_be_16(len),
		.fragment_offset = rte_cpu_to_be_16(RTE_IPV4_HDR_DF_FLAG),
		.time_to_live = 64, .next_proto_id = IPPROTO_UDP,
		.src_addr = d == TESTER_DUT_ENCAP ? clear : host,
		.dst_addr = d == TESTER_DUT_ENCAP ? host : clear,
	};
	sum = ip4_sum20(ip);
	ip->hdr_checksum = sum == 0xffff ? sum : (uint16_t)~sum;
	*udp = (struct rte_udp_hdr){
		.src_port = rte_cpu_to_be_16(UDP_SPORT + (tunnel & 0xfff)),
		.dst_port = rte_cpu_to_be_16(UDP_DPORT),
		.dgram_len = rte_cpu_to_be_16(len - sizeof(*ip)),
	};
	memcpy(udp + 1, &pl, sizeof(pl));
	memset((uint8_t *)ip + PAYLOAD_OFF + sizeof(pl), 0, len - PAYLOAD_OFF - sizeof(pl));
	tw->sent_bytes[d] += size;
}

static uint16_t
make(struct tworker *tw, int d, uint64_t now, struct rte_mbuf **pkts)
{
	uint16_t n = due(tw, d, now);

	if (n == 0)
		return 0;
	if (rte_pktmbuf_alloc_bulk(dp.pool, pkts, n) != 0) {
		tw->no_mbuf++;	/* offered again at the next poll */
		return 0;
	}
	for (uint16_t i = 0; i < n; i++) {
		build(tw, pkts[i], d, tw->cursor[d], now);
		tw->cursor[d] += T.gen_workers;
		if (tw->cursor[d] >= T.tunnels)
			tw->cursor[d] -= T.tunnels;
	}
	tw->made[d] += n;
	return n;
}

uint16_t
tester_gen(struct dp_worker *w, struct rte_mbuf **clear, uint16_t *nclear,
	   struct rte_mbuf **esp, uint16_t *nesp)
{
	struct tworker *tw = T.w[w->index];
	uint32_t id = __atomic_load_n(&T.gen, __ATOMIC_ACQUIRE);
	uint64_t now;

	*nclear = *nesp = 0;
	if (unlikely(id != tw->trial))
		adopt(tw, w, id);
	if (id == 0)
		return 0;
	now = rte_rdtsc();
	*nclear = make(tw, TESTER_DUT_ENCAP, now, clear);
	*nesp = make(tw, TESTER_DUT_DECAP, now, esp);
	return *nclear + *nesp;
}

/*
 * The sequence check of one packet of stream r: false for a duplicate
 * (counted here), true for a packet to count, a reordered one counted.
 */
static inline bool
seq_new(struct tworker *tw, struct stream_rx *r, uint64_t seq, int d)
{
	if (seq > r->max_seq) {
		r->window = seq - r->max_seq >= 64 ? 1 : r->window << (seq - r->max_seq) | 1;
		r->max_seq = seq;
		return true;
	}
	if (r->max_seq - seq < 64 && (r->window >> (r->max_seq - seq) & 1)) {
		r->dup++;
		tw->dup[d]++;
		return false;
	}
	if (r->max_seq - seq < 64)
		r->window |= UINT64_C(1) << (r->max_seq - seq);
	r->reorder++;
	tw->reorder[d]++;
	return true;
}

/* Latency and arrival time of a packet counted in stream s (its r). */
static inline void
timing(struct tworker *tw, struct stream_rx *r, uint32_t s, uint64_t lat, uint64_t now)
{
	int d = (int)(s & 1);
	uint64_t gap = now - r->last;	/* the first packet's: r->last is now */

	r->last = now;
	r->gap_max = RTE_MAX(r->gap_max, gap);
	tw->gap_max[d] = RTE_MAX(tw->gap_max[d], gap);
	r->lat_sum += lat;
	r->lat_min = RTE_MIN(r->lat_min, lat);
	r->lat_max = RTE_MAX(r->lat_max, lat);
	tw->lat_min[d] = RTE_MIN(tw->lat_min[d], lat);
	tw->lat_max[d] = RTE_MAX(tw->lat_max[d], lat);
	tw->hist[d][loghist_bucket(lat, SUB_BITS)]++;
	tw->shist[s][RTE_MIN(loghist_bucket(lat >> T.unit_shift, S_SUB_BITS), S_BUCKETS - 1)]++;
}

/* One of our packets, its payload at pl and its frame size: counted. */
static void
account(struct tworker *tw, const struct tester_payload *pl, uint16_t size, uint64_t now)
{
	uint64_t seq = pl->seq & SEQ_MASK, lat = now > pl->tsc ? now - pl->tsc : 0;
	int d = (int)(pl->stream & 1);
	struct stream_rx *r;

	if (pl->stream >= T.streams) {
		tw->foreign++;
		return;
	}
	if (pl->seq >> TESTER_SEQ_BITS != (tw->trial & 0xffff)) {
		tw->late++;	/* an earlier trial's */
		return;
	}
	r = &tw->srx[pl->stream];
	if (r->rx == 0) {
		r->max_seq = seq;
		r->window = 1;
		r->lat_min = lat;
		r->first = r->last = now;
	} else if (!seq_new(tw, r, seq, d)) {
		return;
	}
	r->rx++;
	tw->rx[d]++;
	tw->rx_bytes[d] += size;
	timing(tw, r, pl->stream, lat, now);
}

static inline const struct tester_payload *
ours(struct rte_mbuf *m, uint16_t l2)
{
	const uint8_t *p = rte_pktmbuf_mtod(m, const uint8_t *);
	const struct tester_payload *pl;

	if (rte_pktmbuf_data_len(m) < l2 + TESTER_MIN_SIZE - sizeof(struct rte_ether_hdr))
		return NULL;
	if (l2 != 0 && ((const struct rte_ether_hdr *)p)->ether_type !=
		       RTE_BE16(RTE_ETHER_TYPE_IPV4))
		return NULL;
	p += l2;
	pl = (const struct tester_payload *)(p + PAYLOAD_OFF);
	return p[0] == 0x45 && p[9] == IPPROTO_UDP && pl->magic == TESTER_MAGIC ? pl : NULL;
}

/*
 * Byte for byte as built: the IP and UDP lengths those of the frame, the
 * padding after the payload all zero (the payload itself is checked by
 * account(): magic, stream, trial, sequence).
 */
static bool
intact(const uint8_t *ip, uint16_t len)
{
	static const uint8_t zero[TESTER_MAX_SIZE];
	const struct rte_ipv4_hdr *h = (const struct rte_ipv4_hdr *)ip;
	const struct rte_udp_hdr *u = (const struct rte_udp_hdr *)(h + 1);
	uint16_t pad = (uint16_t)(len - PAYLOAD_OFF - sizeof(struct tester_payload));

	return rte_be_to_cpu_16(h->total_length) == len &&
	       rte_be_to_cpu_16(u->dgram_len) == len - sizeof(*h) &&
	       memcmp(ip + len - pad, zero, pad) == 0;
}

uint16_t
tester_sink(struct dp_worker *w, struct rte_mbuf **pkts, uint16_t n, uint16_t l2)
{
	struct tworker *tw = T.w[w->index];
	struct rte_mbuf *done[DP_BURST];
	uint16_t keep = 0, ndone = 0;
	uint64_t now = rte_rdtsc();

	for (uint16_t i = 0; i < n; i++) {
		struct rte_mbuf *m = pkts[i];
		const struct tester_payload *pl = ours(m, l2);
		struct tester_payload copy;
		uint16_t len;

		if (pl == NULL || ndone == DP_BURST) {
			pkts[keep++] = m;
			continue;
		}
		memcpy(&copy, pl, sizeof(copy));
		len = (uint16_t)(rte_pktmbuf_data_len(m) - l2);
		if (unlikely(len > TESTER_MAX_SIZE - sizeof(struct rte_ether_hdr) ||
			     !intact(rte_pktmbuf_mtod_offset(m, const uint8_t *, l2), len)))
			tw->corrupt[copy.stream & 1]++;
		else
			account(tw, &copy, (uint16_t)(len + sizeof(struct rte_ether_hdr)), now);
		done[ndone++] = m;
	}
	rte_pktmbuf_free_bulk(done, ndone);
	return keep;
}

/* ---- telemetry: trials started and read ---- */

static int
parse_rate(const char *s, double *pps)
{
	char *end;

	if (strcmp(s, "max") == 0) {
		*pps = -1;
		return 0;
	}
	errno = 0;
	*pps = strtod(s, &end);
	return errno != 0 || *end != '\0' || !(*pps >= 0 && *pps <= 1e9) ? -1 : 0;
}

static uint64_t
ticks_ns(uint64_t ticks)
{
	return (uint64_t)((double)ticks * 1e9 / (double)rte_get_tsc_hz());
}

static uint64_t
open_ticks(void)
{
	double clear = (double)T.streams * dp.n_workers / CLEAR_PER_S;

	return (uint64_t)((OPEN_S + clear) * (double)rte_get_tsc_hz());
}

static int
parse_start(const char *params, struct trial *t, const char **why)
{
	char buf[256], *save = NULL, *tok;
	unsigned long ms, v;
	char *end;

	*why = "parameters: ENCAP_PPS,DECAP_PPS,MS,SIZE[,SIZE...] (pps a number or max)";
	if (params == NULL || strlen(params) >= sizeof(buf))
		return -1;
	strcpy(buf, params);
	tok = strtok_r(buf, ",", &save);
	if (tok == NULL || parse_rate(tok, &t->pps[TESTER_DUT_ENCAP]) != 0)
		return -1;
	tok = strtok_r(NULL, ",", &save);
	if (tok == NULL || parse_rate(tok, &t->pps[TESTER_DUT_DECAP]) != 0)
		return -1;
	tok = strtok_r(NULL, ",", &save);
	errno = 0;
	ms = tok == NULL ? 0 : strtoul(tok, &end, 10);
	if (tok == NULL || errno != 0 || *end != '\0' || ms == 0 || ms > 3600 * 1000)
		return -1;
	t->n_sizes = 0;
	while ((tok = strtok_r(NULL, ",", &save)) != NULL) {
		errno = 0;
		v = strtoul(tok, &end, 10);
		if (errno != 0 || *end != '\0' || v < TESTER_MIN_SIZE || v > TESTER_MAX_SIZE ||
		    t->n_sizes == TESTER_MAX_SIZES) {
			*why = "a size is 64..1514 (L2 frame without FCS), at most 16 of them";
			return -1;
		}
		t->sizes[t->n_sizes++] = (uint16_t)v;
	}
	if (t->n_sizes == 0)
		return -1;
	t->start = rte_rdtsc() + open_ticks();	/* every worker adopts it first */
	t->end = t->start + (uint64_t)((double)ms / 1e3 * (double)rte_get_tsc_hz());
	return 0;
}

static bool
all_adopted(void)
{
	for (unsigned int i = 0; i < dp.n_workers; i++)
		if (__atomic_load_n(&T.w[i]->trial, __ATOMIC_ACQUIRE) != T.gen)
			return false;
	return true;
}

static int
cmd_start(const char *cmd, const char *params, struct rte_tel_data *d)
{
	struct trial t = { 0 };
	const char *why;

	(void)cmd;
	rte_tel_data_start_dict(d);
	if (!dp.tester) {
		rte_tel_data_add_dict_string(d, "error", "not in tester mode (--tester N)");
		return 0;
	}
	if (!__atomic_load_n(&dp.started, __ATOMIC_ACQUIRE) || !all_adopted()) {
		rte_tel_data_add_dict_string(d, "error", "busy: not started, or a trial not "
					     "taken up by every worker yet");
		return 0;
	}
	if (parse_start(params, &t, &why) != 0) {
		rte_tel_data_add_dict_string(d, "error", why);
		return 0;
	}
	for (uint16_t p = 0; p < dp.n_ports && t.clear == 0; p++)
		if (dp.ports[p].role == DPVPN_ROLE_INSIDE && dp.ports[p].addr != 0) {
			t.clear = dp.ports[p].addr;
			t.port = p;
		}
	if (t.clear == 0) {
		rte_tel_data_add_dict_string(d, "error", "no inside port with an IPv4 address");
		return 0;
	}
	t.id = T.gen + 1 == 0 ? 1 : T.gen + 1;
	T.next = t;
	__atomic_store_n(&T.gen, t.id, __ATOMIC_RELEASE);
	rte_tel_data_add_dict_u64(d, "trial", t.id);
	rte_tel_data_add_dict_u64(d, "tunnels", T.tunnels);
	rte_tel_data_add_dict_u64(d, "opens_in_ns", ticks_ns(open_ticks()));
	return 0;
}

/* The upper edge of the bucket (of sb sub-bucket bits) holding the q-quantile. */
static uint64_t
quantile(const uint64_t *h, unsigned int buckets, unsigned int sb, uint64_t total, double q)
{
	uint64_t need = (uint64_t)ceil(q * (double)total), seen = 0;

	for (unsigned int b = 0; b < buckets; b++) {
		seen += h[b];
		if (seen >= need && seen > 0)
			return loghist_top(b, sb);
	}
	return 0;
}

static const struct { const char *name; double q; } pcts[] = {
	{ "lat_p50_ns", 0.5 }, { "lat_p90_ns", 0.9 }, { "lat_p99_ns", 0.99 },
	{ "lat_p999_ns", 0.999 },
};

static void
dir_stats(struct rte_tel_data *c, int dir)
{
	uint64_t h[HIST_BUCKETS] = { 0 };	/* telemetry: a thread per client */
	uint64_t sent = 0, sbytes = 0, rx = 0, rbytes = 0, dup = 0, reorder = 0, corrupt = 0;
	uint64_t lmin = UINT64_MAX, lmax = 0, gap = 0, unsent = 0;

	for (unsigned int i = 0; i < dp.n_workers; i++) {
		const struct tworker *tw = T.w[i];

		sent += tw->made[dir];
		unsent += tw->skipped[dir];
		sbytes += tw->sent_bytes[dir];
		rx += tw->rx[dir];
		rbytes += tw->rx_bytes[dir];
		dup += tw->dup[dir];
		reorder += tw->reorder[dir];
		corrupt += tw->corrupt[dir];
		lmin = RTE_MIN(lmin, tw->lat_min[dir]);
		lmax = RTE_MAX(lmax, tw->lat_max[dir]);
		gap = RTE_MAX(gap, tw->gap_max[dir]);
		for (unsigned int b = 0; b < HIST_BUCKETS; b++)
			h[b] += tw->hist[dir][b];
	}
	rte_tel_data_start_dict(c);
	rte_tel_data_add_dict_u64(c, "sent", sent);
	rte_tel_data_add_dict_u64(c, "sent_bytes", sbytes);
	rte_tel_data_add_dict_u64(c, "received", rx);
	rte_tel_data_add_dict_u64(c, "received_bytes", rbytes);
	rte_tel_data_add_dict_u64(c, "lost", sent > rx ? sent - rx : 0);
	rte_tel_data_add_dict_u64(c, "unsent", unsent);	/* due, never made: behind */
	rte_tel_data_add_dict_u64(c, "duplicated", dup);
	rte_tel_data_add_dict_u64(c, "reordered", reorder);
	rte_tel_data_add_dict_u64(c, "corrupt", corrupt);
	rte_tel_data_add_dict_u64(c, "lat_min_ns", rx ? ticks_ns(lmin) : 0);
	for (unsigned int q = 0; q < RTE_DIM(pcts); q++)	/* a bucket's edge, at most the max */
		rte_tel_data_add_dict_u64(c, pcts[q].name, ticks_ns(RTE_MIN(
			quantile(h, HIST_BUCKETS, SUB_BITS, rx, pcts[q].q), lmax)));
	rte_tel_data_add_dict_u64(c, "lat_max_ns", ticks_ns(lmax));
	rte_tel_data_add_dict_u64(c, "gap_max_ns", ticks_ns(gap));
}

static int
cmd_stats(const char *cmd, const char *params, struct rte_tel_data *d)
{
	uint64_t late = 0, foreign = 0, no_mbuf = 0, behind = 0, now = rte_rdtsc();
	static const char *const names[TESTER_DIRS] = { "dut_encap", "dut_decap" };
	const struct trial *t = &T.next;

	(void)cmd;
	(void)params;
	rte_tel_data_start_dict(d);
	if (!dp.tester) {
		rte_tel_data_add_dict_string(d, "error", "not in tester mode (--tester N)");
		return 0;
	}
	rte_tel_data_add_dict_u64(d, "trial", T.gen);
	rte_tel_data_add_dict_u64(d, "tunnels", T.tunnels);
	rte_tel_data_add_dict_int(d, "adopted", all_adopted());
	rte_tel_data_add_dict_int(d, "running", T.gen != 0 && now < t->end);
	rte_tel_data_add_dict_u64(d, "window_ns", T.gen ? ticks_ns(t->end - t->start) : 0);
	for (int dir = 0; dir < TESTER_DIRS; dir++) {
		struct rte_tel_data *c = rte_tel_data_alloc();

		if (c == NULL)
			return -ENOMEM;
		dir_stats(c, dir);
		rte_tel_data_add_dict_container(d, names[dir], c, 0);
	}
	for (unsigned int i = 0; i < dp.n_workers; i++) {
		late += T.w[i]->late;
		foreign += T.w[i]->foreign;
		no_mbuf += T.w[i]->no_mbuf;
		behind += T.w[i]->behind;
	}
	rte_tel_data_add_dict_u64(d, "late", late);
	rte_tel_data_add_dict_u64(d, "foreign", foreign);
	rte_tel_data_add_dict_u64(d, "no_mbuf", no_mbuf);
	rte_tel_data_add_dict_u64(d, "behind", behind);
	return 0;
}

/* One stream's counters, added up over the workers. */
struct stream_sum {
	uint64_t sent, rx, dup, reorder, lat_min, lat_sum, lat_max, first, last, gap_max;
	uint64_t h[S_BUCKETS];
};

static void
stream_sum(struct stream_sum *v, unsigned int s)
{
	memset(v, 0, sizeof(*v));
	v->lat_min = v->first = UINT64_MAX;
	for (unsigned int i = 0; i < dp.n_workers; i++) {
		const struct stream_rx *r = &T.w[i]->srx[s];

		v->sent += T.w[i]->sent[s];
		if (r->rx == 0)
			continue;
		v->rx += r->rx;
		v->dup += r->dup;
		v->reorder += r->reorder;
		v->lat_sum += r->lat_sum;
		v->lat_min = RTE_MIN(v->lat_min, r->lat_min);
		v->lat_max = RTE_MAX(v->lat_max, r->lat_max);
		v->first = RTE_MIN(v->first, r->first);
		v->last = RTE_MAX(v->last, r->last);
		/* one sink worker per stream assumed, as for duplicates */
		v->gap_max = RTE_MAX(v->gap_max, r->gap_max);
		for (unsigned int b = 0; b < S_BUCKETS; b++)
			v->h[b] += T.w[i]->shist[s][b];
	}
}

/* A stream's percentile: its bucket's upper edge in ticks, at most its max. */
static uint64_t
stream_pct(const struct stream_sum *v, double q)
{
	uint64_t units = quantile(v->h, S_BUCKETS, S_SUB_BITS, v->rx, q);

	return RTE_MIN(((units + 1) << T.unit_shift) - 1, v->lat_max);
}

static void
tunnel_stats(struct rte_tel_data *c, unsigned int tunnel)
{
	static const char *const keys[TUNNEL_KEYS] = {
		"sent", "received", "duplicated", "reordered", "lat_min_ns", "lat_avg_ns",
		"lat_p50_ns", "lat_p99_ns", "lat_p999_ns", "lat_max_ns", "first_ns", "gap_max_ns",
		"last_ns",
	};

	rte_tel_data_start_dict(c);
	for (int dir = 0; dir < TESTER_DIRS; dir++) {
		struct stream_sum v;
		uint64_t out[TUNNEL_KEYS];

		stream_sum(&v, tunnel * 2 + (unsigned int)dir);
		out[0] = v.sent;
		out[1] = v.rx;
		out[2] = v.dup;
		out[3] = v.reorder;
		out[4] = v.rx ? ticks_ns(v.lat_min) : 0;
		out[5] = v.rx ? ticks_ns(v.lat_sum / v.rx) : 0;
		out[6] = v.rx ? ticks_ns(stream_pct(&v, 0.5)) : 0;
		out[7] = v.rx ? ticks_ns(stream_pct(&v, 0.99)) : 0;
		out[8] = v.rx ? ticks_ns(stream_pct(&v, 0.999)) : 0;
		out[9] = ticks_ns(v.lat_max);
		/* first: since the TX window opened, of the first packet received */
		out[10] = v.rx && v.first > T.next.start ? ticks_ns(v.first - T.next.start) : 0;
		out[11] = ticks_ns(v.gap_max);
		/* last: of the newest received, from the same opening (a restart's
		 * end: a stream whose last came before it is not back) */
		out[12] = v.rx && v.last > T.next.start ? ticks_ns(v.last - T.next.start) : 0;
		for (int k = 0; k < TUNNEL_KEYS; k++) {
			char key[32];

			snprintf(key, sizeof(key), "%c_%s", dir == TESTER_DUT_ENCAP ? 'e' : 'd',
				 keys[k]);
			rte_tel_data_add_dict_u64(c, key, out[k]);
		}
	}
}

static int
cmd_tunnels(const char *cmd, const char *params, struct rte_tel_data *d)
{
	unsigned long first = 0, count = TUNNELS_PAGE;
	char *end = NULL;

	(void)cmd;
	if (params != NULL && *params) {
		first = strtoul(params, &end, 10);
		if (*end == ',')
			count = strtoul(end + 1, &end, 10);
		if (*end != '\0')
			return -EINVAL;
	}
	rte_tel_data_start_dict(d);
	if (!dp.tester)
		return 0;
	count = RTE_MIN(count, (unsigned long)TUNNELS_PAGE);
	for (unsigned long i = first; i < T.tunnels && i < first + count; i++) {
		struct rte_tel_data *c = rte_tel_data_alloc();
		char name[16];

		if (c == NULL)
			return -ENOMEM;
		tunnel_stats(c, (unsigned int)i);
		snprintf(name, sizeof(name), "%lu", i);
		rte_tel_data_add_dict_container(d, name, c, 0);
	}
	return 0;
}

void
tester_telem_init(void)
{
	rte_telemetry_register_cmd("/dpvpn/tester/start", cmd_start,
		"Start a trial. Parameters: ENCAP_PPS,DECAP_PPS,MS,SIZE[,SIZE...]");
	rte_telemetry_register_cmd("/dpvpn/tester/stats", cmd_stats,
		"The current trial's counters and latency, by direction");
	rte_telemetry_register_cmd("/dpvpn/tester/tunnels", cmd_tunnels,
		"Per-tunnel counters. Parameters: FIRST[,COUNT] (at most 16)");
}
