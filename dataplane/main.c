/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * main.c - dpvpn-dataplane: EAL and port set-up, worker launch, and the main
 * lcore's loop (control socket, ARP slow path).  The dataplane reads no
 * config file: dpvpnd installs everything over the control socket and then
 * sends START, which starts the ports.
 *
 *   dpvpn-dataplane [EAL args] -- --socket PATH [--idle-sleep-us N] [--max-sa N]
 *                                  [--no-spread] [--jumbo] [--mbufs N] [--desc N]
 *                                  [--ike-rate N] [--host-rate N] [--host-rate-control N]
 *                                  [--host-mbufs N] [--max-routes N]
 *   dpvpn-dataplane --version | --help      (answered before EAL starts)
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>

#include <rte_cycles.h>
#include <rte_dev.h>
#include <rte_devargs.h>
#include <rte_eal.h>
#include <rte_ethdev.h>
#include <rte_malloc.h>
#include <rte_mbuf.h>
#include <rte_rcu_qsbr.h>

#include "crypto.h"
#include "ctl.h"
#include "dpvpn_git.h"
#include "dp.h"
#include "host.h"
#include "ike_punt.h"
#include "keep.h"
#include "pmtu.h"
#include "port.h"
#include "reass.h"
#include "route.h"
#include "sa.h"
#include "spd.h"
#include "telem.h"
#include "tester.h"
#include "trace.h"

#define MBUF_CACHE	256
/* room for a 9600-byte IP packet, its Ethernet header, ESP growth (the outer
 * header goes in the headroom) */
#define JUMBO_BUF_SIZE	(RTE_PKTMBUF_HEADROOM + 10240)
#define IDLE_SLEEP_US	50	/* default back-off once idle */
#define MAX_SA_LIMIT	(1u << 22)	/* SAs, both directions: 4 M */
#define MBUFS_LIMIT	(1u << 24)	/* --mbufs: 16 M */
#define DESC_MIN	32		/* --desc */
#define DESC_MAX	4096
#define IKE_RATE_DEFAULT	1000	/* IKE messages a second, each worker */
#define IKE_RATE_MAX	1000000
/* what rte_mempool lets one lcore's cache hold before it flushes (1.5 x) */
#define MBUF_CACHE_HELD	(MBUF_CACHE * 3 / 2)

struct dp_state dp;
struct dp_lstats dp_lstats[RTE_MAX_LCORE];

static const char *socket_path;
static unsigned int max_sa = SA_MAX_DEFAULT;
static unsigned int max_routes = ROUTE_MAX_DEFAULT;
static bool no_spread, jumbo;
static unsigned int tester_tunnels;	/* --tester N: tester mode */
static bool tester_loop;		/* --tester-loop */
static uint32_t tester_inner = (100u << 24) | (64u << 16);	/* --tester-inner */
static unsigned int n_mbufs;	/* --mbufs; 0: room for every ring and queue at once */
static uint16_t n_desc = DP_RX_DESC;	/* --desc: RX and TX descriptors per queue */
_Static_assert(DP_RX_DESC == DP_TX_DESC, "--desc sets both: one default");
/* descriptors per queue, as the devices took them (port_configure) */
static uint16_t port_rxd[DP_MAX_PORTS], port_txd[DP_MAX_PORTS];

static void
on_signal(int sig)
{
	(void)sig;
	dp.quit = 1;
}

static void
usage(FILE *out, const char *prog)
{
	fprintf(out,
		"usage: %s [EAL options] -- --socket PATH [--idle-sleep-us N] [--max-sa N]\n"
		"                        [--no-spread] [--jumbo] [--mbufs N] [--desc N]\n"
		"                        [--ike-rate N] [--host-rate N] [--host-rate-control N]\n"
		"                        [--host-mbufs N] [--max-routes N]\n"
		"                        [--tester N [--tester-inner ADDR] [--tester-loop]]\n"
		"       %s --version | --help\n"
		"EAL options: DPDK's; '%s -h' lists them\n"
		"  --socket PATH        control socket for dpvpnd (created 0600)\n"
		"  --idle-sleep-us N    sleep N us per empty poll once idle (default %u,\n"
		"                       0 = busy-poll always, for benchmarks)\n"
		"  --max-sa N           room for N SAs (both directions) and N policies\n"
		"                       (default %u)\n"
		"  --jumbo              mbufs for jumbo frames (port mtu up to %u)\n"
		"  --no-spread          decrypt each outside burst on the worker that received\n"
		"                       it (default with 2+ workers: hand bursts round the\n"
		"                       workers, so one tunnel's ESP uses every core)\n"
		"  --mbufs N            packet buffers in the pool (default: room for every\n"
		"                       ring and queue at once); at least what the ports'\n"
		"                       descriptors, the lcores' caches and one burst per\n"
		"                       worker hold (too few: the error says how many)\n"
		"  --desc N             RX and TX descriptors per queue (default %u, %u..%u)\n"
		"  --ike-rate N         IKE messages a second each worker passes to the IKE\n"
		"                       channel (default %u, 1..%u), in bursts of 16 or\n"
		"                       N/1000 if more; more are dropped and counted\n"
		"                       (ike-limit)\n"
		"  --host-rate N        packets a second each worker passes to a port's host\n"
		"                       interface (default %u, 1..%u); more: host-limit\n"
		"  --host-rate-control N  the same for the control class (BGP, OSPF, BFD,\n"
		"                       VRRP, DHCP, RA/RS), a bucket of its own (default %u)\n"
		"  --host-mbufs N       packet buffers of the host interfaces' own pool\n"
		"                       (default %u, at least %u)\n"
		"  --max-routes N       room for N routes of each family (default %u,\n"
		"                       %u..%u; about 650 bytes of memory each, see\n"
		"                       dpvpn-dataplane(8))\n"
		"  --tester N           tester mode: generate and count traffic through a device\n"
		"                       under test over N tunnels (doc/tester.md), 1..%u\n"
		"  --tester-inner ADDR  tunnel 0's tester-side host (default 100.64.0.0);\n"
		"                       tunnel i's is ADDR + i\n"
		"  --tester-loop        two more ports, made of crossed rings, for the tester's\n"
		"                       back-to-back calibration (no device under test)\n",
		prog, prog, prog, IDLE_SLEEP_US, SA_MAX_DEFAULT, DPVPN_PORT_MTU_MAX, DP_RX_DESC, DESC_MIN,
		DESC_MAX, IKE_RATE_DEFAULT, IKE_RATE_MAX, HOST_RATE_DEFAULT, HOST_RATE_MAX,
		HOST_RATE_CONTROL_DEFAULT, HOST_MBUFS_DEFAULT, HOST_MBUFS_MIN, ROUTE_MAX_DEFAULT,
		ROUTE_MAX_MIN, ROUTE_MAX_LIMIT, TESTER_MAX_TUNNELS);
}

/* A numeric option: its bounds and the variable it sets (4 or 2 bytes). */
struct num_opt {
	int c;
	const char *name;
	unsigned long min, max;
	void *to;
	size_t size;
};

#define NUM_OPT(c, name, min, max, var) { c, name, min, max, &(var), sizeof(var) }

static const struct num_opt num_opts[] = {
	NUM_OPT('i', "--idle-sleep-us", 0, 100000, dp.idle_sleep_us),
	NUM_OPT('m', "--max-sa", 2, MAX_SA_LIMIT, max_sa),
	NUM_OPT('M', "--max-routes", ROUTE_MAX_MIN, ROUTE_MAX_LIMIT, max_routes),
	/* --mbufs: the floor depends on the ports, checked in setup() */
	NUM_OPT('b', "--mbufs", 1, MBUFS_LIMIT, n_mbufs),
	NUM_OPT('d', "--desc", DESC_MIN, DESC_MAX, n_desc),
	NUM_OPT('k', "--ike-rate", 1, IKE_RATE_MAX, dp.ike_rate),
	NUM_OPT('r', "--host-rate", 1, HOST_RATE_MAX, dp.host_rate),
	NUM_OPT('R', "--host-rate-control", 1, HOST_RATE_MAX, dp.host_rate_control),
	NUM_OPT('B', "--host-mbufs", HOST_MBUFS_MIN, MBUFS_LIMIT, host_mbufs),
	NUM_OPT('t', "--tester", 1, TESTER_MAX_TUNNELS, tester_tunnels),
};

/* Option c's argument when c is a numeric option: 1 taken, 0 not one, -1 refused. */
static int
num_arg(int c, const char *arg)
{
	const struct num_opt *o = NULL;
	unsigned long v;
	char *end;

	for (size_t i = 0; i < RTE_DIM(num_opts); i++)
		if (num_opts[i].c == c)
			o = &num_opts[i];
	if (o == NULL)
		return 0;
	errno = 0;
	v = strtoul(arg, &end, 10);
	if (errno != 0 || *end != '\0' || *arg == '\0' || v < o->min || v > o->max) {
		fprintf(stderr, "%s: '%s' is not %lu..%lu\n", o->name, arg, o->min, o->max);
		return -1;
	}
	if (o->size == sizeof(uint16_t))
		*(uint16_t *)o->to = (uint16_t)v;
	else
		*(uint32_t *)o->to = (uint32_t)v;
	return 1;
}

/* What the options say together, once all are read. */
static int
check_args(void)
{
	if (tester_loop && tester_tunnels == 0) {
		fprintf(stderr, "--tester-loop: only with --tester N\n");
		return -1;
	}
	if (tester_tunnels != 0 && tester_inner + (uint64_t)tester_tunnels - 1 > UINT32_MAX) {
		fprintf(stderr, "--tester-inner: %u tunnels from there pass 255.255.255.255\n",
			tester_tunnels);
		return -1;
	}
	if (socket_path == NULL) {
		fprintf(stderr, "--socket: required\n");
		return -1;
	}
	return 0;
}

static int
parse_args(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "socket", required_argument, NULL, 's' },
		{ "idle-sleep-us", required_argument, NULL, 'i' },
		{ "max-sa", required_argument, NULL, 'm' },
		{ "no-spread", no_argument, NULL, 'S' },
		{ "jumbo", no_argument, NULL, 'J' },
		{ "mbufs", required_argument, NULL, 'b' },
		{ "desc", required_argument, NULL, 'd' },
		{ "ike-rate", required_argument, NULL, 'k' },
		{ "host-rate", required_argument, NULL, 'r' },
		{ "host-rate-control", required_argument, NULL, 'R' },
		{ "host-mbufs", required_argument, NULL, 'B' },
		{ "max-routes", required_argument, NULL, 'M' },
		{ "tester", required_argument, NULL, 't' },
		{ "tester-inner", required_argument, NULL, 'T' },
		{ "tester-loop", no_argument, NULL, 'L' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct in_addr a;
	int c, rc;

	dp.idle_sleep_us = IDLE_SLEEP_US;
	dp.ike_rate = IKE_RATE_DEFAULT;
	dp.host_rate = HOST_RATE_DEFAULT;
	host_twins_enabled = true;
	dp.host_rate_control = HOST_RATE_CONTROL_DEFAULT;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		if (optarg != NULL && (rc = num_arg(c, optarg)) != 0) {
			if (rc < 0)
				return -1;
			continue;
		}
		if (c == 's') {
			socket_path = optarg;
		} else if (c == 'S') {
			no_spread = true;
		} else if (c == 'J') {
			jumbo = true;
		} else if (c == 'L') {
			tester_loop = true;
		} else if (c == 'T' && inet_pton(AF_INET, optarg, &a) == 1) {
			tester_inner = ntohl(a.s_addr);
		} else if (c == 'T') {
			fprintf(stderr, "--tester-inner: '%s' is not an IPv4 address\n", optarg);
			return -1;
		} else {
			return -1;
		}
	}
	return check_args();
}

/* Queues and descriptor counts (before the pool: its size depends on them). */
static int
port_configure(uint16_t id)
{
	struct rte_eth_conf conf = { 0 };
	struct rte_eth_dev_info info;
	uint16_t nq = (uint16_t)dp.n_workers, rxd = n_desc, txd = n_desc;
	int rc;

	rc = rte_eth_dev_info_get(id, &info);
	if (rc != 0)
		return rc;
	if (info.max_rx_queues < nq || info.max_tx_queues < nq) {
		fprintf(stderr, "port %u: %u workers need %u queues, device has %u/%u\n",
			id, dp.n_workers, nq, info.max_rx_queues, info.max_tx_queues);
		return -ENOTSUP;
	}
	/*
	 * Several queues: RSS where the device has it, on addresses and TCP/UDP
	 * ports (inside: the inner 5-tuple spreads flows over workers; outside:
	 * outer addresses and NAT-T ports).  One tunnel's ESP still lands on one
	 * queue: the receiving worker hands its bursts round (worker.c).
	 * Devices without RSS (net_af_packet: kernel fanout; net_pcap: one file
	 * per queue) spread in their own way.
	 */
	if (nq > 1 && (info.flow_type_rss_offloads & RTE_ETH_RSS_IP) != 0) {
		conf.rxmode.mq_mode = RTE_ETH_MQ_RX_RSS;
		conf.rx_adv_conf.rss_conf.rss_hf = info.flow_type_rss_offloads &
			(RTE_ETH_RSS_IP | RTE_ETH_RSS_TCP | RTE_ETH_RSS_UDP);
	}
	rc = rte_eth_dev_configure(id, nq, nq, &conf);
	if (rc == 0)
		rc = rte_eth_dev_adjust_nb_rx_tx_desc(id, &rxd, &txd);
	port_rxd[id] = rxd;
	port_txd[id] = txd;
	return rc;
}

/* The queues, on the pool; the port's name, MAC and MTU. */
static int
port_init(uint16_t id)
{
	struct dp_port *p = &dp.ports[id];
	struct rte_eth_dev_info info;
	int rc = 0;

	for (uint16_t q = 0; rc == 0 && q < dp.n_workers; q++) {
		rc = rte_eth_rx_queue_setup(id, q, port_rxd[id], rte_eth_dev_socket_id(id), NULL,
					    dp.pool);
		if (rc == 0)
			rc = rte_eth_tx_queue_setup(id, q, port_txd[id], rte_eth_dev_socket_id(id),
						    NULL);
	}
	if (rc != 0)
		return rc;
	p->id = id;
	if (rte_eth_dev_info_get(id, &info) == 0 && info.driver_name != NULL &&
	    strcmp(info.driver_name, "net_af_packet") == 0)
		p->flush_at_start = 1;	/* see flush_stale() in worker.c */
	rte_eth_macaddr_get(id, &p->mac);
	if (rte_is_zero_ether_addr(&p->mac))	/* rings (--tester-loop): ARP needs one */
		rte_eth_random_addr(p->mac.addr_bytes);
	if (rte_eth_dev_get_mtu(id, &p->mtu) != 0 || p->mtu < DPVPN_MTU_MIN)
		p->mtu = RTE_ETHER_MTU;
	rte_eth_dev_get_name_by_port(id, p->name);
	port_ident(id);
	return 0;
}

static int
worker_init(struct dp_worker *w, unsigned int lcore, unsigned int index)
{
	char name[RTE_RING_NAMESIZE];
	int sock = (int)rte_lcore_to_socket_id(lcore);

	w->lcore = lcore;
	w->index = index;
	w->rxq = w->txq = (uint16_t)index;
	snprintf(name, sizeof(name), "punt%u", index);
	w->main.punt = rte_ring_create(name, DP_PUNT_RING, sock, RING_F_SP_ENQ | RING_F_SC_DEQ);
	snprintf(name, sizeof(name), "resolve%u", index);
	w->out.resolve = rte_ring_create_elem(name, sizeof(struct dp_resolve_req), DP_RESOLVE_RING, sock,
					  RING_F_SP_ENQ | RING_F_SC_DEQ);
	snprintf(name, sizeof(name), "work%u", index);
	w->spread.work = rte_ring_create(name, DP_WORK_RING, sock, RING_F_SC_DEQ);
	snprintf(name, sizeof(name), "txq%u", index);
	w->main.txq_ring = rte_ring_create(name, DP_TXQ_RING, sock, RING_F_SP_ENQ | RING_F_SC_DEQ);
	snprintf(name, sizeof(name), "ike%u", index);
	w->main.ike = rte_ring_create(name, DP_IKE_RING, sock, RING_F_SP_ENQ | RING_F_SC_DEQ);
	w->esp.mb = crypto_mgr_create();
	w->esp.spd_cache = rte_zmalloc_socket("spd_cache", sizeof(*w->esp.spd_cache),
					      RTE_CACHE_LINE_SIZE, sock);
	if (w->main.punt == NULL || w->out.resolve == NULL || w->main.txq_ring == NULL ||
	    w->spread.work == NULL || w->main.ike == NULL || w->esp.spd_cache == NULL ||
	    w->esp.mb == NULL || reass_init(w) != 0 || host_ring_init(w, sock) != 0)
		return -ENOMEM;
	for (uint16_t p = 0; p < dp.n_ports; p++) {
		w->out.txb[p] = rte_zmalloc_socket("txb", RTE_ETH_TX_BUFFER_SIZE(DP_BURST), 0, sock);
		if (w->out.txb[p] == NULL)
			return -ENOMEM;
		rte_eth_tx_buffer_init(w->out.txb[p], DP_BURST);
		rte_eth_tx_buffer_set_err_callback(w->out.txb[p], worker_tx_unsent, &dp_lstats[lcore]);
	}
	return 0;
}

static int
rcu_init(void)
{
	size_t sz = rte_rcu_qsbr_get_memsize(RTE_MAX_LCORE);

	dp.rcu = rte_zmalloc("dpvpn_rcu", sz, RTE_CACHE_LINE_SIZE);
	if (dp.rcu == NULL)
		return -ENOMEM;
	return rte_rcu_qsbr_init(dp.rcu, RTE_MAX_LCORE);
}

/*
 * The fewest mbufs the dataplane runs on without starving itself for good:
 * what the devices may hold (every RX descriptor filled; every TX descriptor
 * not yet reclaimed, since a PMD frees sent mbufs only in a later transmit
 * call), what may sit in each lcore's cache out of the others' reach, and
 * what one poll of each worker has in hand (a burst received per port, a TX
 * buffer per port, the fragments of one packet, an ICMP error).  The rings,
 * the reassembly tables and the packets held for next hops (neighq.h) are
 * left out: they drain without allocating, so while they hold the rest of
 * the pool, packets are dropped and counted (no-mbuf, or by the device as
 * missed) and then it passes.
 */
static unsigned int
mbufs_floor(void)
{
	unsigned int n = (dp.n_workers + 1) * MBUF_CACHE_HELD +
			 dp.n_workers * (2u * dp.n_ports * DP_BURST + PMTU_MAX_FRAGS + 1);

	for (uint16_t p = 0; p < dp.n_ports; p++)
		n += dp.n_workers * ((unsigned int)port_rxd[p] + port_txd[p]);
	return n;
}

/* --mbufs, checked against the floor; by default room for every ring full too. */
static int
mbufs_count(unsigned int *count)
{
	unsigned int floor = mbufs_floor();

	if (n_mbufs == 0) {
		*count = floor + dp.n_workers * (DP_PUNT_RING + DP_TXQ_RING + DP_WORK_RING + DP_IKE_RING +
						 REASS_MAX_MBUFS + NEIGHQ_MAX);
		return 0;
	}
	if (n_mbufs < floor) {
		fprintf(stderr, "--mbufs: %u is below the minimum %u for %u ports x %u queues "
			"(their RX and TX descriptors), %u lcore caches and a burst per worker\n",
			n_mbufs, floor, dp.n_ports, dp.n_workers, dp.n_workers + 1);
		return -EINVAL;
	}
	*count = n_mbufs;
	return 0;
}

static int
setup(void)
{
	unsigned int lcore, nmbufs;
	int rc = 0;

	dp.n_workers = rte_lcore_count() - 1;
	dp.spread = !no_spread && dp.n_workers > 1;
	dp.n_ports = rte_eth_dev_count_avail();
	if (dp.n_workers == 0 || dp.n_workers > DP_MAX_WORKERS) {
		fprintf(stderr, "need 1..%u worker lcores besides the main one (EAL -l/--lcores)\n",
			DP_MAX_WORKERS);
		return -EINVAL;
	}
	if (dp.n_ports == 0 || dp.n_ports > DP_MAX_PORTS) {
		fprintf(stderr, "need 1..%u ports (e.g. --vdev net_af_packet0,iface=IF), have %u\n",
			DP_MAX_PORTS, dp.n_ports);
		return -EINVAL;
	}
	for (uint16_t p = 0; rc == 0 && p < dp.n_ports; p++) {
		rc = port_configure(p);
		if (rc != 0)
			fprintf(stderr, "port %u: %s\n", p, rte_strerror(-rc));
	}
	if (rc == 0)
		rc = mbufs_count(&nmbufs);
	if (rc != 0)
		return rc;
	/* Every packet in one segment: with --jumbo, mbufs for 9600-byte IP
	 * packets plus Ethernet and ESP growth; else the usual 2 KiB ones. */
	dp.pool = rte_pktmbuf_pool_create("dpvpn_mbufs", nmbufs, MBUF_CACHE, 0,
					  jumbo ? JUMBO_BUF_SIZE : RTE_MBUF_DEFAULT_BUF_SIZE,
					  (int)rte_socket_id());
	dp.max_mtu = jumbo ? DPVPN_PORT_MTU_MAX : RTE_ETHER_MTU;
	if (dp.pool == NULL) {
		fprintf(stderr, "mbuf pool (%u): %s\n", nmbufs, rte_strerror(rte_errno));
		return -ENOMEM;
	}
	rc = rcu_init();
	if (rc == 0)
		rc = sa_init(dp.n_workers, max_sa);
	if (rc == 0)
		rc = spd_init(max_sa);
	if (rc == 0)
		rc = keep_init(max_sa);
	if (rc == 0)
		rc = route_init(max_routes);
	if (rc == 0)
		rc = ctl_routes_init(max_routes);
	if (rc == 0)
		rc = neigh_init();
	for (uint16_t p = 0; rc == 0 && p < dp.n_ports; p++) {
		rc = port_init(p);
		if (rc != 0)
			fprintf(stderr, "port %u: %s\n", p, rte_strerror(-rc));
	}
	unsigned int i = 0;

	RTE_LCORE_FOREACH_WORKER(lcore) {
		if (rc == 0)
			rc = worker_init(&dp.workers[i], lcore, i);
		i++;
	}
	return rc;
}

/* A worker's ring for the main lcore holds something. */
static bool
rings_pending(void)
{
	for (unsigned int i = 0; i < dp.n_workers; i++) {
		struct dp_worker *w = &dp.workers[i];

		if (!rte_ring_empty(w->main.punt) || !rte_ring_empty(w->out.resolve) ||
		    (w->main.ike != NULL && !rte_ring_empty(w->main.ike)) ||
		    (w->main.host != NULL && !rte_ring_empty(w->main.host)))
			return true;
	}
	return false;
}

/*
 * How long the main lcore may sleep in poll(): 1 ms with host twins, a
 * trace or in tester mode (their frames are polled, not waited for); else
 * until the next tick (a tenth of a second at most), unless a worker's ring
 * holds work already.  A worker that fills one while it sleeps wakes it
 * (dp_main_kick), as do the control sockets and the classifier's build: a
 * worker that shares its CPU is disturbed ten times a second, not a
 * thousand ([scale] issue 28: two workers on two CPUs).
 */
static int
main_sleep_ms(uint64_t next_tick)
{
	uint64_t now = rte_get_timer_cycles();

	if (dp.main_wake_fd < 0 || dp.tester || host_twins_any() || trace_on())
		return 1;
	__atomic_store_n(&dp.main_asleep, 1, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);	/* the flag before the rings' reads */
	if (now >= next_tick || rings_pending()) {
		__atomic_store_n(&dp.main_asleep, 0, __ATOMIC_RELAXED);
		return 0;
	}
	return (int)RTE_MIN(100u, (next_tick - now) * 1000 / rte_get_timer_hz() + 1);
}

static void
teardown(struct crypto_mgr *mb)
{
	rte_eal_mp_wait_lcore();
	trace_stop();
	spd_fini();	/* the background build, if any, before EAL goes */
	sa_flush();	/* wipes every SA's keys */
	keep_flush();	/* and dpvpnd's IKE records */
	host_teardown();	/* before the ports: twins' frames come from their pool */
	for (uint16_t p = 0; p < dp.n_ports; p++) {
		if (dp.started)
			rte_eth_dev_stop(p);
		rte_eth_dev_close(p);	/* net_pcap flushes its files here */
	}
	for (unsigned int i = 0; i < dp.n_workers; i++) {
		crypto_mgr_free(dp.workers[i].esp.mb);
		reass_free(&dp.workers[i]);
	}
	crypto_mgr_free(mb);
	ctl_close();
	if (dp.main_wake_fd >= 0)
		close(dp.main_wake_fd);
}

/*
 * --version and --help, anywhere on the line (before or after --): answered
 * before EAL starts, so they need no hugepages, devices or root.  1: done.
 */
static int
early_option(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--version")) {
			printf("dpvpn-dataplane %s\n", DPVPN_VERSION_LONG);
			return 1;
		}
		if (!strcmp(argv[i], "--help")) {
			usage(stdout, "dpvpn-dataplane");
			return 1;
		}
	}
	return 0;
}

/*
 * Our options are those after "--" (EAL's come before it): checked, and the
 * socket with them, before EAL probes any device, so that a dataplane that
 * is refused touches no port another one may be driving.
 */
static int
early_args(int argc, char **argv)
{
	char why[256];
	int sep = 1;

	while (sep < argc && strcmp(argv[sep], "--") != 0)
		sep++;
	if (parse_args(argc - sep, argv + sep) != 0) {	/* argv[sep] stands for argv[0] */
		usage(stderr, "dpvpn-dataplane");
		return 2;
	}
	optind = 1;	/* getopt again, for EAL */
	if (ctl_check(socket_path, why, sizeof(why)) != 0) {
		fprintf(stderr, "dpvpn-dataplane: %s\n", why);
		return 1;
	}
	return 0;
}

/*
 * Every device given (--vdev, -a) must have become a port: a driver that
 * refuses one (an af_packet iface that does not exist, say) only logs it,
 * and EAL goes on with the others, their port ids shifted, so that dpvpnd's
 * config would meet the wrong ports.  Named here, and the dataplane stops.
 */
static int
check_devices(void)
{
	const struct rte_devargs *da;
	int missing = 0;

	RTE_EAL_DEVARGS_FOREACH(NULL, da) {
		struct rte_eth_dev_info info;
		bool found = false;
		uint16_t p;

		if (da->type == RTE_DEVTYPE_BLOCKED)
			continue;
		RTE_ETH_FOREACH_DEV(p)
			found |= rte_eth_dev_info_get(p, &info) == 0 && info.device != NULL &&
				 (rte_dev_devargs(info.device) == da ||
				  strcmp(rte_dev_name(info.device), da->name) == 0);
		if (found)
			continue;
		fprintf(stderr, "dpvpn-dataplane: device %s (%s %s%s%s) did not become a port: "
			"its driver refused it (see above), or it is no network device\n",
			da->name, da->type == RTE_DEVTYPE_VIRTUAL ? "--vdev" : "-a", da->name,
			da->args != NULL && da->args[0] ? "," : "", da->args ? da->args : "");
		missing++;
	}
	return missing ? -ENODEV : 0;
}

int
main(int argc, char **argv)
{
	struct crypto_mgr *mb;
	int rc, n;

	if (early_option(argc, argv))
		return 0;
	rc = early_args(argc, argv);
	if (rc != 0)
		return rc;
	n = rte_eal_init(argc, argv);
	if (n < 0) {
		fprintf(stderr, "dpvpn-dataplane: EAL: %s\n", rte_strerror(rte_errno));
		return 1;
	}
	if (check_devices() != 0) {
		rte_eal_cleanup();
		return 1;
	}
	rc = dp_meta_init();
	if (rc != 0) {
		fprintf(stderr, "dpvpn-dataplane: mbuf metadata: %s\n", rte_strerror(-rc));
		rte_eal_cleanup();
		return 1;
	}
	rc = tester_loop ? tester_loop_ports(rte_lcore_count() - 1) : 0;
	if (rc != 0) {
		fprintf(stderr, "dpvpn-dataplane: --tester-loop: %s\n", rte_strerror(-rc));
		rte_eal_cleanup();
		return 1;
	}
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	dp.start_tsc = rte_get_timer_cycles();
	mb = crypto_mgr_create();
	rc = mb == NULL ? -ENOMEM : setup();
	if (rc == 0 && tester_tunnels != 0) {
		rc = tester_init(tester_tunnels, tester_inner);
		if (rc != 0)
			fprintf(stderr, "--tester %u: %s\n", tester_tunnels, strerror(-rc));
	}
	if (rc == 0) {
		telem_init();
		tester_telem_init();
		rc = trace_init();
		if (rc == 0)
			rc = ctl_open(socket_path, mb);
		if (rc != 0)
			fprintf(stderr, "%s: %s\n", socket_path, strerror(-rc));
	}
	if (rc != 0) {
		/* what setup() made before it failed (the rest is EAL memory) */
		for (unsigned int i = 0; i < dp.n_workers && i < DP_MAX_WORKERS; i++) {
			crypto_mgr_free(dp.workers[i].esp.mb);
			reass_free(&dp.workers[i]);
		}
		crypto_mgr_free(mb);
		rte_eal_cleanup();
		return 1;
	}
	dp.main_wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);	/* -1: poll each ms */
	ctl_set_wake_fd(dp.main_wake_fd);
	for (unsigned int i = 0; i < dp.n_workers; i++)
		rte_eal_remote_launch(worker_main, &dp.workers[i], dp.workers[i].lcore);
	fprintf(stderr, "dpvpn-dataplane: ready: %u ports, %u workers, %s, socket %s\n",
		dp.n_ports, dp.n_workers, crypto_describe(), socket_path);
	uint64_t next_tick = 0, tick = rte_get_timer_hz() / 10;

	while (!dp.quit) {
		ctl_poll(main_sleep_ms(next_tick));
		__atomic_store_n(&dp.main_asleep, 0, __ATOMIC_RELAXED);
		spd_poll();	/* a classifier built in the background goes in */
		arp_poll();
		host_poll();
		ike_poll();
		trace_poll();
		if (rte_get_timer_cycles() >= next_tick) {	/* lifetimes, 10 times a second */
			sa_lifetimes_tick(rte_get_timer_cycles());
			next_tick = rte_get_timer_cycles() + tick;
		}
	}
	fprintf(stderr, "dpvpn-dataplane: stopping\n");
	teardown(mb);
	rte_eal_cleanup();
	return 0;
}
