/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fuzz_dp.c - the dataplane the fuzz targets run against (fuzz_dp.h).
 *
 *   port 0 inside   198.18.1.1/24  2001:db8:1::1/64   hosts .2 / ::2 (static)
 *   port 1 outside  198.19.0.1/24  2001:db8:ff::1/64  peers .2, .3 / ::2, ::3 (static)
 *   port 2 no role
 *   route 203.0.113.0/24 via 198.18.1.254, 2001:db8:99::/48 via 2001:db8:1::fe
 *
 * The worker runs on the main lcore, as in the unit tests.  Its TX buffers
 * are larger than any input can fill, so frames never reach the (missing)
 * devices: fuzz_dp_finish() checks and frees them.
 */
#include <arpa/inet.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <rte_eal.h>
#include <rte_ethdev.h>
#include <rte_ip.h>
#include <rte_ip_frag.h>
#include <rte_log.h>
#include <rte_malloc.h>
#include <rte_rcu_qsbr.h>
#include <rte_udp.h>

#include "crypto.h"
#include "ctl.h"
#include "ctl_steps.h"
#include "dpvpn_alg.h"
#include "fuzz_dp.h"
#include "ike_punt.h"
#include "ip.h"
#include "keep.h"
#include "reass.h"
#include "replay.h"
#include "route.h"
#include "spd.h"
#include "trace.h"
#include "tunif.h"

#define POOL_MBUFS	8191	/* reassembly can hold 2048, an input's output ~1100 */
#define TXB_SIZE	2048	/* more than one burst can send: never flushed */
#define MAX_SA		256

struct dp_state dp;
struct dp_lstats dp_lstats[RTE_MAX_LCORE];
struct dp_worker *fuzz_w;
struct dp_lstats *fuzz_st;
struct fuzz_tunnel fuzz_tunnels[FUZZ_TUNNELS];
void (*fuzz_tx_check)(uint16_t port, const struct rte_mbuf *m);

static bool sas_installed, debug, tracing;
static unsigned int pool_in_use, neigh_base;
static struct rte_mempool *trace_pool;
static char trace_dir[64], trace_file[128];
static struct dp_lstats before;		/* FUZZ_DEBUG: counters at the input's start */

static const char *const drop_names[] = {
#define X_NAME(e, name, desc) name,
	DPVPN_DROP_REASONS(X_NAME)
#undef X_NAME
};

static __attribute__((noreturn, format(printf, 1, 2))) void
die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fprintf(stderr, "fuzz: ");
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\n");
	va_end(ap);
	abort();
}

static uint32_t
v4(const char *s)
{
	uint32_t a;

	if (inet_pton(AF_INET, s, &a) != 1)
		die("bad address %s", s);
	return a;
}

static void
v6(const char *s, uint8_t *a)
{
	if (inet_pton(AF_INET6, s, a) != 1)
		die("bad address %s", s);
}

static void
eal_init(const char *prog)
{
	char prefix[64];
	char *argv[] = { (char *)prog, "--no-huge", "-m", "256", "--no-pci", "--no-shconf",
			 "--no-telemetry", "-l", "0", "--log-level", "*:error",
			 "--file-prefix", prefix };

	snprintf(prefix, sizeof(prefix), "%s_%d", prog, getpid());
	if (rte_eal_init((int)RTE_DIM(argv), argv) < 0)
		die("EAL: %s", rte_strerror(rte_errno));
	if (dp_meta_init() != 0)
		die("EAL: %s", rte_strerror(rte_errno));
	/* ethdev calls on ports without devices (the control target) log each time */
	rte_log_set_global_level(RTE_LOG_EMERG);
}

static void
port(uint16_t id, uint8_t role, const char *a4, const char *a6, uint8_t mac_last)
{
	struct dp_port *p = &dp.ports[id];
	char err[256];

	memset(p, 0, sizeof(*p));
	p->id = id;
	p->role = role;
	p->mtu = RTE_ETHER_MTU;
	p->csum_partial = 1;	/* as for a veth: checksums left to offload are finished */
	p->mac = (struct rte_ether_addr){ { 0x02, 0, 0, 0, 0x01, mac_last } };
	snprintf(p->name, sizeof(p->name), "fuzz%u", id);
	if (a4 == NULL)
		return;
	p->addr = v4(a4);
	p->prefix_len = 24;
	p->mask = dp_mask(24);
	p->has6 = 1;
	p->prefix6_len = 64;
	v6(a6, p->addr6);
	if (route_add(p->addr & p->mask, 24, id, 0, err, sizeof(err)) != 0 ||
	    route6_add(p->addr6, 64, id, NULL, err, sizeof(err)) != 0)
		die("port %u: %s", id, err);
}

static void
neighbour(uint16_t port_id, const char *addr, uint8_t mac_last)
{
	struct rte_ether_addr mac = { { 0x02, 0, 0, 0, 0x0a, mac_last } };
	uint8_t a[16];
	bool is6 = strchr(addr, ':') != NULL;

	if (is6)
		v6(addr, a);
	else
		memcpy(a, &(uint32_t){ v4(addr) }, 4);
	if (neigh_set(port_id, is6 ? DPVPN_AF_INET6 : DPVPN_AF_INET, a, &mac, true) != 0)
		die("neighbour %s", addr);
}

static void
routes(void)
{
	uint8_t net[16], gw[16];
	char err[256];

	v6("2001:db8:99::", net);
	v6("2001:db8:1::fe", gw);
	if (route_add(v4("203.0.113.0"), 24, FUZZ_INSIDE, v4("198.18.1.254"), err,
		      sizeof(err)) != 0 ||
	    route6_add(net, 48, FUZZ_INSIDE, gw, err, sizeof(err)) != 0)
		die("routes: %s", err);
}

static void
worker(void)
{
	struct dp_worker *w = &dp.workers[0];
	int sock = (int)rte_socket_id();

	w->lcore = rte_lcore_id();
	w->index = 0;
	w->main.punt = rte_ring_create("fuzz_punt", DP_PUNT_RING, sock, RING_F_SP_ENQ | RING_F_SC_DEQ);
	w->out.resolve = rte_ring_create_elem("fuzz_resolve", sizeof(struct dp_resolve_req),
					  DP_RESOLVE_RING, sock, RING_F_SP_ENQ | RING_F_SC_DEQ);
	w->spread.work = rte_ring_create("fuzz_work", DP_WORK_RING, sock, RING_F_SC_DEQ);
	w->main.txq_ring = rte_ring_create("fuzz_txq", DP_TXQ_RING, sock,
				      RING_F_SP_ENQ | RING_F_SC_DEQ);
	w->main.ike = rte_ring_create("fuzz_ike", DP_IKE_RING, sock, RING_F_SP_ENQ | RING_F_SC_DEQ);
	w->esp.mb = crypto_mgr_create();
	if (w->main.punt == NULL || w->out.resolve == NULL || w->spread.work == NULL ||
	    w->main.txq_ring == NULL || w->main.ike == NULL || w->esp.mb == NULL ||
	    reass_init(w) != 0)
		die("worker: out of memory");
	for (uint16_t p = 0; p < dp.n_ports; p++) {
		w->out.txb[p] = rte_zmalloc("fuzz_txb", RTE_ETH_TX_BUFFER_SIZE(TXB_SIZE), 0);
		if (w->out.txb[p] == NULL)
			die("worker: out of memory");
		rte_eth_tx_buffer_init(w->out.txb[p], TXB_SIZE);
		rte_eth_tx_buffer_set_err_callback(w->out.txb[p], worker_tx_unsent,
						   &dp_lstats[w->lcore]);
	}
	fuzz_w = w;
	fuzz_st = &dp_lstats[w->lcore];
}

void
fuzz_dp_init(const char *prog)
{
	size_t rcu_sz;

	eal_init(prog);
	dp.pool = rte_pktmbuf_pool_create("fuzz_mbufs", POOL_MBUFS, 0, 0,
					  RTE_MBUF_DEFAULT_BUF_SIZE, (int)rte_socket_id());
	rcu_sz = rte_rcu_qsbr_get_memsize(RTE_MAX_LCORE);
	dp.rcu = rte_zmalloc("fuzz_rcu", rcu_sz, RTE_CACHE_LINE_SIZE);
	if (dp.pool == NULL || dp.rcu == NULL || rte_rcu_qsbr_init(dp.rcu, RTE_MAX_LCORE) != 0)
		die("pool: out of memory");
	dp.start_tsc = rte_get_timer_cycles();
	dp.n_ports = FUZZ_PORTS;
	dp.n_workers = 1;
	dp.ike_rate = 1000000;	/* the limit is not what is fuzzed */
	dp.max_mtu = RTE_ETHER_MTU;
	/* sa_init with two workers: windows may be shared (fuzz_tunnel.shared) */
	if (sa_init(2, MAX_SA) != 0 || spd_init(MAX_SA) != 0 ||
	    route_init(ROUTE_MAX_DEFAULT) != 0 || ctl_routes_init(ROUTE_MAX_DEFAULT) != 0 ||
	    neigh_init() != 0 || trace_init() != 0 || keep_init(MAX_SA) != 0)
		die("tables: out of memory");
	port(FUZZ_INSIDE, DPVPN_ROLE_INSIDE, "198.18.1.1", "2001:db8:1::1", 0);
	port(FUZZ_OUTSIDE, DPVPN_ROLE_OUTSIDE, "198.19.0.1", "2001:db8:ff::1", 1);
	port(FUZZ_NONE, DPVPN_ROLE_NONE, NULL, NULL, 2);
	routes();
	neighbour(FUZZ_INSIDE, "198.18.1.2", 2);
	neighbour(FUZZ_INSIDE, "2001:db8:1::2", 3);
	neighbour(FUZZ_OUTSIDE, "198.19.0.2", 4);
	neighbour(FUZZ_OUTSIDE, "2001:db8:ff::2", 5);
	neighbour(FUZZ_OUTSIDE, "198.19.0.3", 6);
	neighbour(FUZZ_OUTSIDE, "2001:db8:ff::3", 7);
	neighbour(FUZZ_OUTSIDE, "198.19.0.4", 8);
	neigh_base = neigh_count();
	worker();
	debug = getenv("FUZZ_DEBUG") != NULL;
	trace_pool = rte_mempool_lookup("dpvpn_trace");
	if (trace_pool == NULL)
		die("no trace pool");
}

/* ---- the fixed SA set ---- */

struct tunnel_def {
	uint8_t alg;
	uint8_t outer6, esn, shared, df, frag_outer, spread_log2;
	uint8_t route;		/* a route-based tunnel's SAs (tunnel interface 0) */
	uint16_t udp;		/* our NAT-T port; 0: plain ESP */
	uint32_t window;
	const char *peer;	/* outer address of the peer */
	const char *lts, *rts;	/* inner selectors; the family follows */
	uint8_t lts_len, rts_len;
	uint16_t mtu, mss;
	uint64_t life_packets_hard, life_bytes_hard, seq_start, seq_limit;
};

/*
 * Every transform; IPv4 and IPv6 outer, 4in6 and 6in4; ESP and UDP (two
 * NAT-T ports); ESN; windows off, 64..4096, shared or not; lifetimes;
 * outer fragmentation; an outbound SA about to run out of numbers and one
 * with a sequence limit (SEQ_GRANT); a route-based tunnel (either inner
 * family, its IPv4 selectors narrowed to 198.18.9.0/24, reached by routes
 * to 198.18.9.0/24 and 2001:db8:9::/48, rpf loose).  (Next hops that are
 * not resolved: hosts on the inside, 198.18.1.254 and 2001:db8:1::fe.)
 */
static const struct tunnel_def defs[FUZZ_TUNNELS] = {
	{ .alg = DPVPN_ALG_AES128_GCM, .window = 64, .peer = "198.19.0.2",
	  .lts = "198.18.1.0", .lts_len = 24, .rts = "198.18.2.0", .rts_len = 24 },
	{ .alg = DPVPN_ALG_AES256_GCM, .udp = 4500, .esn = 1, .shared = 1, .window = 1024,
	  .spread_log2 = 1, .peer = "198.19.0.2",
	  .lts = "198.18.1.0", .lts_len = 24, .rts = "198.18.3.0", .rts_len = 24 },
	{ .alg = DPVPN_ALG_AES128_CBC_SHA1, .outer6 = 1, .window = 128, .peer = "2001:db8:ff::2",
	  .life_bytes_hard = 4000,
	  .lts = "2001:db8:1::", .lts_len = 64, .rts = "2001:db8:2::", .rts_len = 64 },
	{ .alg = DPVPN_ALG_AES256_CBC_SHA256, .udp = 4501, .window = 0, .mtu = 1000,
	  .spread_log2 = 2, .df = DPVPN_DF_CLEAR, .peer = "198.19.0.3",
	  .lts = "2001:db8:1::", .lts_len = 64, .rts = "2001:db8:3::", .rts_len = 64 },
	{ .alg = DPVPN_ALG_CHACHA20_POLY1305, .outer6 = 1, .udp = 4500, .esn = 1, .shared = 1,
	  .window = 4096, .peer = "2001:db8:ff::3",
	  .lts = "198.18.1.0", .lts_len = 24, .rts = "198.18.4.0", .rts_len = 24 },
	{ .alg = DPVPN_ALG_NULL_SHA256, .window = 64, .life_packets_hard = 4, .mss = 1000,
	  .frag_outer = 1, .mtu = 1900, .peer = "198.19.0.2",
	  .lts = "198.18.1.0", .lts_len = 24, .rts = "198.18.5.0", .rts_len = 24 },
	{ .alg = DPVPN_ALG_AES128_CBC_SHA256, .esn = 1, .shared = 1, .window = 64,
	  .df = DPVPN_DF_SET, .seq_limit = 3, .peer = "198.19.0.2",
	  .lts = "0.0.0.0", .lts_len = 0, .rts = "198.18.6.0", .rts_len = 24 },
	{ .alg = DPVPN_ALG_AES128_GCM, .window = 64, .mss = DPVPN_MSS_OFF,
	  .seq_start = 0xfffffffe, .life_bytes_hard = 3000, .peer = "198.19.0.2",
	  .lts = "198.18.1.0", .lts_len = 24, .rts = "198.18.7.0", .rts_len = 24 },
	{ .alg = DPVPN_ALG_AES128_GCM, .window = 64, .route = 1, .peer = "198.19.0.4",
	  .lts = "0.0.0.0", .lts_len = 0, .rts = "198.18.9.0", .rts_len = 24 },
};

static void
fill_addr(struct dpvpn_addr *a, const char *s)
{
	memset(a, 0, sizeof(*a));
	if (strchr(s, ':') != NULL) {
		a->family = DPVPN_AF_INET6;
		v6(s, a->v6);
	} else {
		a->family = DPVPN_AF_INET;
		a->v4 = v4(s);
	}
}

static void
fill_prefix(struct dpvpn_prefix *p, const char *s, uint8_t len)
{
	struct dpvpn_addr a;

	fill_addr(&a, s);
	memset(p, 0, sizeof(*p));
	p->family = a.family;
	p->len = len;
	memcpy(p->v6, a.v6, 16);
}

/* One direction of tunnel i; keys are made up from i (public, like the lab's). */
static void
sa_cfg(unsigned int i, uint8_t dir, struct dpvpn_sa_cfg *c)
{
	const struct tunnel_def *d = &defs[i];
	const struct dp_port *out = &dp.ports[FUZZ_OUTSIDE];
	bool in = dir == DPVPN_DIR_IN;

	memset(c, 0, sizeof(*c));
	c->spi = rte_cpu_to_be_32((in ? 0x2001 : 0x1001) + i);
	c->dir = dir;
	c->alg = d->alg;
	c->key_len = dpvpn_algs[d->alg].key_len;
	c->auth_key_len = dpvpn_algs[d->alg].auth_key_len;
	for (unsigned int k = 0; k < sizeof(c->key); k++)
		c->key[k] = (uint8_t)(i * 41 + k * 7 + (in ? 1 : 0x81));
	for (unsigned int k = 0; k < sizeof(c->auth_key); k++)
		c->auth_key[k] = (uint8_t)(i * 13 + k * 3 + (in ? 5 : 0x85));
	for (unsigned int k = 0; k < sizeof(c->salt); k++)
		c->salt[k] = (uint8_t)(0xc0 + i * 4 + k + (in ? 0 : 0x20));
	c->df = d->df;
	c->replay_window = in ? d->window : 0;
	if (d->outer6) {
		c->local.family = DPVPN_AF_INET6;
		memcpy(c->local.v6, out->addr6, 16);
	} else {
		c->local.family = DPVPN_AF_INET;
		c->local.v4 = out->addr;
	}
	fill_addr(&c->remote, d->peer);
	c->udp_local = d->udp;
	c->udp_remote = d->udp ? 4500 : 0;
	c->esn = d->esn;
	c->life_packets[1] = d->life_packets_hard;
	c->life_packets[0] = d->life_packets_hard / 2;
	c->life_bytes[1] = d->life_bytes_hard;
	c->seq_start = in ? 0 : d->seq_start;
	c->seq_limit = in ? 0 : d->seq_limit;
	c->mtu = d->mtu;
	c->mss = d->mss;
	c->frag_outer = d->frag_outer;
	c->udp_spread_log2 = in ? 0 : d->spread_log2;
	fill_prefix(&c->local_ts, d->lts, d->lts_len);
	fill_prefix(&c->remote_ts, d->rts, d->rts_len);
	c->flags = d->route ? DPVPN_SA_F_ROUTE : 0;
	snprintf(c->name, sizeof(c->name), "fuzz%u", i);
}

/*
 * Tunnel interface 0 on the route tunnel's outbound SA (rpf loose), routes
 * into it; interface 1 (rpf off, down) for fuzz_ip's mirror SAs, which
 * decrypt what any inside host sent.
 */
static void
route_tunnel(const struct fuzz_tunnel *t)
{
	struct dpvpn_tunif ti = { .id = 0, .rpf = DPVPN_RPF_LOOSE, .up = 1,
				  .out_spi = t->out.spi, .name = "fuzz-route" };
	struct dpvpn_tunif tm = { .id = 1, .rpf = DPVPN_RPF_OFF, .name = "fuzz-mirror" };
	struct dpvpn_prefix p4, p6;
	char err[256];

	fill_prefix(&p4, "198.18.9.0", 24);
	fill_prefix(&p6, "2001:db8:9::", 48);
	if (step_tunif_set(&ti, err, sizeof(err)) != 0 || step_tunif_set(&tm, err, sizeof(err)) != 0 ||
	    step_route_add_tunnel(&p4, (uint16_t[]){ 0 }, 1, err, sizeof(err)) != 0 ||
	    route_add_tunnel(&p6, (uint16_t[]){ 0 }, 1, err, sizeof(err)) != 0)
		die("route tunnel: %s", err);
}

void
fuzz_dp_install_sas(void)
{
	char err[256];

	for (unsigned int i = 0; i < FUZZ_TUNNELS; i++) {
		struct fuzz_tunnel *t = &fuzz_tunnels[i];
		struct dpvpn_policy p = { .spi = 0 };

		sa_cfg(i, DPVPN_DIR_IN, &t->in);
		sa_cfg(i, DPVPN_DIR_OUT, &t->out);
		t->shared = defs[i].shared;
		if (sa_add(&t->in, fuzz_w->esp.mb, err, sizeof(err)) != 0 ||
		    sa_add(&t->out, fuzz_w->esp.mb, err, sizeof(err)) != 0)
			die("tunnel %u: %s", i, err);
		if (defs[i].route) {	/* routed, not chosen by a policy */
			route_tunnel(t);
			continue;
		}
		p.src = t->out.local_ts;
		p.dst = t->out.remote_ts;
		p.spi = t->out.spi;
		p.priority = 100;
		if (spd_add(&p, err, sizeof(err)) != 0)
			die("tunnel %u: %s", i, err);
	}
	sas_installed = true;
}

void
fuzz_dp_reset(void)
{
	for (unsigned int i = 0; sas_installed && i < FUZZ_TUNNELS; i++) {
		const struct fuzz_tunnel *t = &fuzz_tunnels[i];
		struct sa *in = sa_lookup_in(t->in.spi);
		struct sa *out = sa_slot((uint32_t)sa_find(t->out.spi, DPVPN_DIR_OUT));

		replay_init(&in->replay, t->in.replay_window, t->shared);
		out->seq = t->out.seq_start;
		out->seq_limit = t->out.seq_limit;
		in->used_packets = in->used_bytes = out->used_packets = out->used_bytes = 0;
		in->life_state = out->life_state = DPVPN_LIFE_OK;
	}
	fuzz_w->esp.ip_id = 0;
	fuzz_w->icmp_rate = (struct dp_bucket){ 0 };
	fuzz_w->echo_rate = (struct dp_bucket){ 0 };
	pool_in_use = rte_mempool_in_use_count(dp.pool);
	if (debug)
		before = *fuzz_st;
}

/* FUZZ_DEBUG=1: what the input did, for writing seeds (fuzz/make_seeds.py). */
static void
report(void)
{
	const struct dp_lstats *a = &before, *b = fuzz_st;

	fprintf(stderr, "fuzz: rx %" PRIu64 " tx %" PRIu64 " encrypted %" PRIu64
		" decrypted %" PRIu64 " icmp %" PRIu64 " echo %" PRIu64 " fragments %" PRIu64
		" reassembled %" PRIu64 " mss %" PRIu64 " arp-in %" PRIu64 " arp-out %" PRIu64
		" held %" PRIu64, b->rx - a->rx,
		b->tx - a->tx, b->encrypted - a->encrypted, b->decrypted - a->decrypted,
		b->icmp_out - a->icmp_out, b->icmp_echo - a->icmp_echo,
		b->fragments - a->fragments, b->reassembled - a->reassembled,
		b->mss_clamped - a->mss_clamped, b->arp_in - a->arp_in, b->arp_out - a->arp_out,
		b->neigh_queued - a->neigh_queued);
	for (unsigned int d = 0; d < DPVPN_DROP_MAX; d++)
		if (b->drops[d] != a->drops[d])
			fprintf(stderr, " %s %" PRIu64, drop_names[d], b->drops[d] - a->drops[d]);
	fprintf(stderr, "\n");
}

/* ---- traces ---- */

static void
trace_cleanup(void)
{
	unlink(trace_file);
	rmdir(trace_dir);
}

void
fuzz_trace(uint8_t point)
{
	struct dpvpn_trace_req req = { .point = point, .count = 3 };
	char err[256];

	if (point == DPVPN_TRACE_OFF || tracing)
		return;
	if (trace_dir[0] == '\0') {	/* tmpfs where there is one: no disk writes */
		snprintf(trace_dir, sizeof(trace_dir), "%s/fuzz_trace.XXXXXX",
			 access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp");
		if (mkdtemp(trace_dir) == NULL)
			die("mkdtemp %s", trace_dir);
		snprintf(trace_file, sizeof(trace_file), "%s/trace.pcapng", trace_dir);
		atexit(trace_cleanup);
	}
	snprintf(req.path, sizeof(req.path), "%s", trace_file);
	if (trace_start(&req, err, sizeof(err)) != 0)
		die("trace: %s", err);
	tracing = true;
}

/* ---- frames in ---- */

static void
ext_free(void *addr, void *opaque)
{
	(void)addr;
	free(opaque);
}

struct rte_mbuf *
fuzz_mbuf(const uint8_t *data, size_t len, bool tight)
{
	struct rte_mbuf *m;
	struct rte_mbuf_ext_shared_info *sh;
	uint8_t *base;

	if (len > FUZZ_MAX_FRAME)
		return NULL;
	m = rte_pktmbuf_alloc(dp.pool);
	if (m == NULL)
		die("pool empty");
	if (tight) {
		/* shared info first, then the headroom, then exactly the frame */
		base = malloc(sizeof(*sh) + RTE_PKTMBUF_HEADROOM + len);
		if (base == NULL)
			die("out of memory");
		sh = (struct rte_mbuf_ext_shared_info *)base;
		memset(sh, 0, sizeof(*sh));
		sh->free_cb = ext_free;
		sh->fcb_opaque = base;
		rte_mbuf_ext_refcnt_set(sh, 1);
		rte_pktmbuf_attach_extbuf(m, base + sizeof(*sh), RTE_BAD_IOVA,
					  (uint16_t)(RTE_PKTMBUF_HEADROOM + len), sh);
	}
	if (rte_pktmbuf_append(m, (uint16_t)len) == NULL) {
		rte_pktmbuf_free(m);
		return NULL;
	}
	memcpy(rte_pktmbuf_mtod(m, uint8_t *), data, len);
	return m;
}

struct rte_mbuf *
fuzz_mbuf_chain(const uint8_t *data, size_t len)
{
	struct rte_mbuf *a, *b;

	if (len < 2)
		return NULL;
	a = fuzz_mbuf(data, len / 2, false);
	b = fuzz_mbuf(data + len / 2, len - len / 2, false);
	if (a == NULL || b == NULL || rte_pktmbuf_chain(a, b) != 0) {
		rte_pktmbuf_free(a);
		rte_pktmbuf_free(b);
		return NULL;
	}
	return a;
}

static uint16_t
sum_fix(const void *p, size_t len)
{
	return (uint16_t)~rte_raw_cksum(p, len);
}

void
fuzz_fix_ip(uint8_t *ip, size_t len)
{
	uint8_t proto;
	uint16_t l3;

	if (len >= sizeof(struct rte_ipv6_hdr) && ip[0] >> 4 == 6) {
		struct rte_ipv6_hdr *h = (struct rte_ipv6_hdr *)ip;

		h->payload_len = rte_cpu_to_be_16((uint16_t)(len - sizeof(*h)));
		proto = h->proto;
		l3 = sizeof(*h);
	} else if (len >= sizeof(struct rte_ipv4_hdr) && ip[0] >> 4 == 4) {
		struct rte_ipv4_hdr *h = (struct rte_ipv4_hdr *)ip;

		l3 = (uint16_t)((ip[0] & 0x0f) * 4);
		if (l3 < sizeof(*h) || l3 > len)
			return;
		h->total_length = rte_cpu_to_be_16((uint16_t)len);
		h->hdr_checksum = 0;
		h->hdr_checksum = sum_fix(h, l3);
		proto = ip4_is_fragment(h) ? 0 : h->next_proto_id;
	} else {
		return;
	}
	if (proto == IPPROTO_UDP && len >= l3 + sizeof(struct rte_udp_hdr))
		((struct rte_udp_hdr *)(ip + l3))->dgram_len = rte_cpu_to_be_16((uint16_t)(len - l3));
}

void
fuzz_rx(uint16_t port_id, struct rte_mbuf **pkts, uint16_t n)
{
	for (uint16_t i = 0; i < n; i++)
		pkts[i]->port = port_id;
	fuzz_st->rx += n;
	worker_rx(fuzz_w, fuzz_st, port_id, pkts, n);
}

/* ---- frames out ---- */

static bool
own_addr(const struct dp_port *p, const uint8_t *ip)
{
	if (ip[0] >> 4 == 6)
		return p->has6 && memcmp(((const struct rte_ipv6_hdr *)ip)->src_addr, p->addr6,
					 16) == 0;
	return ((const struct rte_ipv4_hdr *)ip)->src_addr == p->addr;
}

/* A frame a worker sends must be sound: the stages promise it. */
static void
check_frame(uint16_t port_id, const struct rte_mbuf *m)
{
	const struct dp_port *p = &dp.ports[port_id];
	const struct rte_ether_hdr *eth = rte_pktmbuf_mtod(m, const struct rte_ether_hdr *);
	const uint8_t *ip = (const uint8_t *)(eth + 1);
	uint32_t len = rte_pktmbuf_data_len(m);

	if (m->nb_segs != 1 || len < sizeof(*eth) + sizeof(struct rte_ipv4_hdr))
		die("port %u: frame of %u bytes, %u segments", port_id, len, m->nb_segs);
	if (!rte_is_same_ether_addr(&eth->src_addr, &p->mac))
		die("port %u: frame not from the port's MAC", port_id);
	len -= sizeof(*eth);
	if (eth->ether_type == rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV4)) {
		const struct rte_ipv4_hdr *h = (const struct rte_ipv4_hdr *)ip;
		uint32_t ihl = (ip[0] & 0x0f) * 4u;

		if (ip[0] >> 4 != 4 || ihl < sizeof(*h) || ihl > len ||
		    rte_be_to_cpu_16(h->total_length) != len || rte_raw_cksum(h, ihl) != 0xffff)
			die("port %u: IPv4 packet of %u bytes with a bad header", port_id, len);
	} else if (eth->ether_type == rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV6)) {
		const struct rte_ipv6_hdr *h = (const struct rte_ipv6_hdr *)ip;

		if (len < sizeof(*h) || ip[0] >> 4 != 6 ||
		    rte_be_to_cpu_16(h->payload_len) + sizeof(*h) != len)
			die("port %u: IPv6 packet of %u bytes with a bad header", port_id, len);
	} else {
		die("port %u: ethertype 0x%04x sent", port_id, rte_be_to_cpu_16(eth->ether_type));
	}
	/* what the gateway builds itself (ESP, its fragments) fits the port */
	if (p->role == DPVPN_ROLE_OUTSIDE && own_addr(p, ip) && len > p->mtu)
		die("port %u: own packet of %u bytes over the MTU %u", port_id, len, p->mtu);
}

static void
drain_txb(void)
{
	for (uint16_t p = 0; p < dp.n_ports; p++) {
		struct rte_eth_dev_tx_buffer *b = fuzz_w->out.txb[p];

		for (uint16_t i = 0; i < b->length; i++) {
			check_frame(p, b->pkts[i]);
			if (fuzz_tx_check != NULL)
				fuzz_tx_check(p, b->pkts[i]);
			rte_pktmbuf_free(b->pkts[i]);
		}
		b->length = 0;
	}
}

/* The IKE channel's far end (fuzz_dp_ike_channel), -1 if none. */
static int ike_peer = -1;

void
fuzz_dp_ike_channel(void)
{
	char err[256];
	int sv[2];

	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0 ||
	    ike_open(sv[0], err, sizeof(err)) != 0)
		die("IKE channel: %s", strerror(errno));
	ike_peer = sv[1];
}

/* What the main lcore pushed to the IKE channel: IKE_RX messages, well-formed. */
static void
ike_drain(void)
{
	static uint8_t buf[DPVPN_MSG_MAX];
	const struct dpvpn_msg_hdr *h = (const struct dpvpn_msg_hdr *)buf;
	const struct dpvpn_ike_pkt *p = (const struct dpvpn_ike_pkt *)(h + 1);
	ssize_t n;

	while (ike_peer >= 0 && (n = recv(ike_peer, buf, sizeof(buf), MSG_DONTWAIT)) >= 0) {
		if ((size_t)n < sizeof(*h) + sizeof(*p) || h->type != DPVPN_MSG_IKE_RX ||
		    h->flags != DPVPN_F_PUSH || h->len != (size_t)n - sizeof(*h) ||
		    p->len == 0 || p->len > DPVPN_IKE_MAX || p->len != h->len - sizeof(*p) ||
		    p->port >= dp.n_ports || p->local.family != p->remote.family ||
		    (p->local.family != DPVPN_AF_INET && p->local.family != DPVPN_AF_INET6) ||
		    (p->local_port != DPVPN_IKE_PORT && p->local_port != DPVPN_IKE_NATT_PORT &&
		     !sa_natt_port(p->local_port)))
			die("IKE_RX push: %zd bytes, type %u, len %u", n, h->type, h->len);
	}
}

/* Frames the main lcore built (ARP, Neighbour Discovery): Ethernet from our MAC. */
static void
drain_txq(void)
{
	struct rte_mbuf *m;

	while (rte_ring_dequeue(fuzz_w->main.txq_ring, (void **)&m) == 0) {
		const struct rte_ether_hdr *eth = rte_pktmbuf_mtod(m, const struct rte_ether_hdr *);

		if (dp_meta(m)->kind == DP_KIND_LOCAL_IP) {	/* IKE_TX: an IP packet */
			const uint8_t *ip = rte_pktmbuf_mtod(m, const uint8_t *);

			if (m->port >= dp.n_ports || rte_pktmbuf_data_len(m) < 28 ||
			    (ip[0] != 0x45 && ip[0] >> 4 != 6))
				die("IKE_TX packet: port %u, %u bytes", m->port,
				    rte_pktmbuf_data_len(m));
			rte_pktmbuf_free(m);
			continue;
		}

		if (m->port >= dp.n_ports || rte_pktmbuf_data_len(m) < sizeof(*eth) ||
		    !rte_is_same_ether_addr(&eth->src_addr, &dp.ports[m->port].mac))
			die("main lcore frame: port %u, %u bytes", m->port,
			    rte_pktmbuf_data_len(m));
		rte_pktmbuf_free(m);
	}
}

/* Forget neighbours learned or asked for by this input: the next starts afresh. */
static void
forget_neighbours(void)
{
	struct neigh n;

	for (unsigned int i = neigh_base; neigh_at(i, &n); i++)
		if (n.mac != 0 || n.asked_tsc != 0)
			neigh_forget(n.port, n.family, n.addr);
}

static void
flush_reassembly(void)
{
	struct rte_ip_frag_death_row *dr = fuzz_w->reass.dr;
	uint32_t n;

	do {
		rte_ip_frag_table_del_expired_entries(fuzz_w->reass.tbl, dr, UINT64_MAX);
		n = dr->cnt;
		rte_ip_frag_free_death_row(dr, 0);
	} while (n > 0);
}

/*
 * Packets held for next hops (neighq.h): those the input's ARP / ND
 * resolved are sent (and checked) as the worker's poll would; the rest are
 * dropped as when the worker stops, so the next input starts with none.
 */
static void
held_packets(void)
{
	struct rte_mbuf *out[NEIGHQ_MAX];
	struct dp_resolve_req asks[NEIGHQ_HOPS];
	uint16_t nasks, n;

	if (fuzz_w->out.nq.held == 0)
		return;
	n = neighq_poll(&fuzz_w->out.nq, fuzz_st, rte_get_timer_cycles(), out, asks, &nasks);
	for (uint16_t i = 0; i < n; i++) {
		fuzz_st->tx++;
		rte_eth_tx_buffer(out[i]->port, 0, fuzz_w->out.txb[out[i]->port], out[i]);
	}
	drain_txb();
	neighq_flush(&fuzz_w->out.nq, fuzz_st, DPVPN_DROP_NO_NEIGH);
}

void
fuzz_dp_finish(void)
{
	bool slow = false;
	unsigned int now;

	drain_txb();
	while (rte_ring_count(fuzz_w->main.punt) > 0 || rte_ring_count(fuzz_w->out.resolve) > 0) {
		slow = true;
		arp_poll();
	}
	held_packets();
	if (debug)
		report();
	ike_poll();
	ike_drain();
	drain_txq();
	if (slow)
		forget_neighbours();
	flush_reassembly();
	if (tracing) {		/* what was captured is written, the file closed */
		trace_stop();
		unlink(trace_file);
		tracing = false;
	}
	now = rte_mempool_in_use_count(dp.pool);
	if (now != pool_in_use)
		die("mbuf leak: %u in use after the input, %u before", now, pool_in_use);
	if (rte_mempool_in_use_count(trace_pool) != 0)
		die("trace mbuf leak: %u in use", rte_mempool_in_use_count(trace_pool));
}
