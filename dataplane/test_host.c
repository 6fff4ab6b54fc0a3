/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_host.c - the host path's accounting (host.c) with a net_ring port as
 * the twin (no kernel): the worker's two buckets (the other class runs dry,
 * the control class still passes), host-down, the Ethernet header put back
 * (unicast, broadcast, multicast), the main lcore's pass into the twin
 * (host_in; a full twin: host-full) and out of it (host_out, worker 0's TX
 * ring, IP marked DP_KIND_HOST).  Every packet is counted once and freed:
 * the pool's in-use count comes back to 0.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include <rte_eal.h>
#include <rte_eth_ring.h>
#include <rte_ethdev.h>
#include <rte_ip.h>
#include <rte_mbuf.h>
#include <rte_tcp.h>
#include <rte_udp.h>

#include "dp.h"
#include "host.h"

#define IP4(a, b, c, d) \
	RTE_BE32((uint32_t)(a) << 24 | (uint32_t)(b) << 16 | (uint32_t)(c) << 8 | (uint32_t)(d))
#define RATE		1000	/* --host-rate: a bucket of DP_HOST_DEPTH */
#define RATE_CONTROL	100
#define TWIN_ROOM	128	/* the host side's ring: what the twin takes at most */

struct dp_state dp;
struct dp_lstats dp_lstats[RTE_MAX_LCORE];

static struct dp_worker *wk = &dp.workers[0];
static struct dp_lstats *st;
static struct rte_ring *to_host, *from_host;	/* the twin's TX and RX sides */

static int
setup(void **state)
{
	char prefix[64];
	char *argv[] = { "test_host", "--no-huge", "-m", "128", "--no-pci", "-l", "0",
			 "--log-level", "lib.*:error", "--file-prefix", prefix };
	struct rte_eth_conf conf = { 0 };
	int eth;

	(void)state;
	snprintf(prefix, sizeof(prefix), "test_host_%d", getpid());
	if (rte_eal_init((int)RTE_DIM(argv), argv) < 0)
		return -1;
	if (dp_meta_init() != 0)
		return -1;
	dp.pool = rte_pktmbuf_pool_create("t", 1023, 0, 0, RTE_MBUF_DEFAULT_BUF_SIZE, 0);
	st = &dp_lstats[rte_lcore_id()];
	dp.n_ports = 2;
	dp.n_workers = 1;
	dp.host_rate = RATE;
	dp.host_rate_control = RATE_CONTROL;
	dp.ports[1] = (struct dp_port){ .id = 1, .role = DPVPN_ROLE_OUTSIDE, .mtu = 1500,
					.addr = IP4(198, 19, 0, 1), .prefix_len = 24,
					.mask = RTE_BE32(0xffffff00), .twin = 1,
					.mac = { { 0x02, 0, 0, 0, 0, 0x01 } } };
	wk->main.txq_ring = rte_ring_create("txq", 1024, 0, 0);
	to_host = rte_ring_create("to_host", TWIN_ROOM, 0, RING_F_SP_ENQ | RING_F_SC_DEQ);
	from_host = rte_ring_create("from_host", 64, 0, RING_F_SP_ENQ | RING_F_SC_DEQ);
	if (wk->main.txq_ring == NULL || to_host == NULL || from_host == NULL ||
	    host_ring_init(wk, 0) != 0)
		return -1;
	eth = rte_eth_from_rings("twin", &from_host, 1, &to_host, 1, 0);
	if (eth < 0 || rte_eth_dev_configure((uint16_t)eth, 1, 1, &conf) != 0 ||
	    rte_eth_rx_queue_setup((uint16_t)eth, 0, 64, 0, NULL, dp.pool) != 0 ||
	    rte_eth_tx_queue_setup((uint16_t)eth, 0, 64, 0, NULL) != 0 ||
	    rte_eth_dev_start((uint16_t)eth) != 0)
		return -1;
	dp_twins[1] = (struct dp_twin){ .eth = (uint16_t)eth, .created = 1, .up = 1 };
	return 0;
}

/* An IPv4 packet (no Ethernet header, as workers hold it) from 198.19.0.2. */
static struct rte_mbuf *
ip_packet(uint32_t dst, uint8_t proto, uint16_t dport)
{
	struct rte_mbuf *m = rte_pktmbuf_alloc(dp.pool);
	struct rte_ipv4_hdr *ip;
	struct rte_udp_hdr *l4;

	assert_non_null(m);
	if (rte_pktmbuf_append(m, sizeof(*ip) + sizeof(*l4)) == NULL)
		fail();
	ip = rte_pktmbuf_mtod(m, struct rte_ipv4_hdr *);
	memset(ip, 0, sizeof(*ip) + sizeof(*l4));
	ip->version_ihl = 0x45;
	ip->total_length = rte_cpu_to_be_16(sizeof(*ip) + sizeof(*l4));
	ip->time_to_live = 64;
	ip->next_proto_id = proto;
	ip->src_addr = IP4(198, 19, 0, 2);
	ip->dst_addr = dst;
	ip->hdr_checksum = rte_ipv4_cksum(ip);
	l4 = (struct rte_udp_hdr *)(ip + 1);
	l4->src_port = RTE_BE16(40000);
	l4->dst_port = rte_cpu_to_be_16(dport);
	return m;
}

static uint64_t
drops(void)
{
	uint64_t n = 0;

	for (unsigned int r = 0; r < DPVPN_DROP_MAX; r++)
		n += st->drops[r];
	return n;
}

/* What the twin was given, freed; returns how many, their dst MACs in macs. */
static unsigned int
host_got(struct rte_ether_addr *macs, unsigned int room)
{
	struct rte_mbuf *m;
	unsigned int n = 0;

	while (rte_ring_dequeue(to_host, (void **)&m) == 0) {
		if (n < room)
			macs[n] = rte_pktmbuf_mtod(m, struct rte_ether_hdr *)->dst_addr;
		n++;
		rte_pktmbuf_free(m);
	}
	return n;
}

static void
test_buckets_and_classes(void **state)
{
	struct rte_ether_addr macs[TWIN_ROOM];
	uint64_t in0 = st->host_in, d0 = drops();
	unsigned int n;

	(void)state;
	wk->now_tsc = rte_rdtsc();	/* one instant: no refill meanwhile */
	for (unsigned int i = 0; i < 100; i++)
		host_punt(wk, st, &dp.ports[1], ip_packet(IP4(198, 19, 0, 1), IPPROTO_UDP, 9));
	assert_int_equal(st->drops[DPVPN_DROP_HOST_LIMIT], 100 - DP_HOST_DEPTH);
	/* the other class is dry; BGP has a bucket of its own */
	host_punt(wk, st, &dp.ports[1], ip_packet(IP4(198, 19, 0, 1), IPPROTO_TCP, 179));
	host_punt(wk, st, &dp.ports[1], ip_packet(IP4(198, 19, 0, 1), IPPROTO_UDP, 3784));
	assert_int_equal(st->drops[DPVPN_DROP_HOST_LIMIT], 100 - DP_HOST_DEPTH);
	host_poll();
	n = host_got(macs, RTE_DIM(macs));
	assert_int_equal(n, DP_HOST_DEPTH + 2);
	assert_int_equal(st->host_in - in0, n);
	assert_memory_equal(&macs[0], &dp.ports[1].mac, sizeof(macs[0]));
	assert_int_equal(drops() - d0, 100 - DP_HOST_DEPTH);
	assert_int_equal(rte_mempool_in_use_count(dp.pool), 0);
}

static void
test_link_macs_and_down(void **state)
{
	static const struct rte_ether_addr bcast = { { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff } };
	static const struct rte_ether_addr ospf = { { 0x01, 0x00, 0x5e, 0x00, 0x00, 0x05 } };
	struct rte_ether_addr macs[4];

	(void)state;
	wk->now_tsc = rte_rdtsc() + rte_get_tsc_hz();	/* a second on: buckets full */
	host_punt(wk, st, &dp.ports[1], ip_packet(IP4(198, 19, 0, 255), IPPROTO_UDP, 67));
	host_punt(wk, st, &dp.ports[1], ip_packet(IP4(224, 0, 0, 5), 89, 0));
	host_poll();
	assert_int_equal(host_got(macs, 4), 2);
	assert_memory_equal(&macs[0], &bcast, sizeof(bcast));
	assert_memory_equal(&macs[1], &ospf, sizeof(ospf));
	dp_twins[1].up = 0;
	host_punt(wk, st, &dp.ports[1], ip_packet(IP4(198, 19, 0, 1), IPPROTO_UDP, 9));
	assert_int_equal(st->drops[DPVPN_DROP_HOST_DOWN], 1);
	dp_twins[1].up = 1;
}

static void
test_twin_full(void **state)
{
	uint64_t full0 = st->drops[DPVPN_DROP_HOST_FULL], in0 = st->host_in;
	unsigned int sent = 0;

	(void)state;
	/* more than the host side's ring takes, over a few seconds' buckets */
	for (unsigned int s = 2; sent < TWIN_ROOM + 40; s++) {
		wk->now_tsc = rte_rdtsc() + s * rte_get_tsc_hz();
		for (unsigned int i = 0; i < DP_HOST_DEPTH && sent < TWIN_ROOM + 40; i++, sent++)
			host_punt(wk, st, &dp.ports[1],
				  ip_packet(IP4(198, 19, 0, 1), IPPROTO_UDP, 9));
	}
	host_poll();
	/* the ring's size less one: what net_ring could hand the host side */
	assert_int_equal(st->host_in - in0, TWIN_ROOM - 1);
	assert_int_equal(st->drops[DPVPN_DROP_HOST_FULL] - full0, sent - (TWIN_ROOM - 1));
	assert_int_equal(host_got(NULL, 0), TWIN_ROOM - 1);
}

static void
test_from_host(void **state)
{
	struct rte_mbuf *m = ip_packet(IP4(198, 19, 0, 2), IPPROTO_UDP, 9), *a, *got = NULL;
	uint64_t out0 = st->host_out;

	(void)state;
	rte_pktmbuf_prepend(m, sizeof(struct rte_ether_hdr));
	rte_pktmbuf_mtod(m, struct rte_ether_hdr *)->ether_type =
		RTE_BE16(RTE_ETHER_TYPE_IPV4);
	a = rte_pktmbuf_alloc(dp.pool);	/* an ARP frame, say: not IP */
	if (a == NULL || rte_pktmbuf_append(a, 60) == NULL)
		fail();
	memset(rte_pktmbuf_mtod(a, void *), 0, 60);
	rte_pktmbuf_mtod(a, struct rte_ether_hdr *)->ether_type = RTE_BE16(RTE_ETHER_TYPE_ARP);
	assert_int_equal(rte_ring_enqueue(from_host, m), 0);
	assert_int_equal(rte_ring_enqueue(from_host, a), 0);
	host_poll();
	assert_int_equal(st->host_out - out0, 2);
	assert_int_equal(rte_ring_dequeue(wk->main.txq_ring, (void **)&got), 0);
	assert_ptr_equal(got, m);
	assert_int_equal(got->port, 1);
	assert_int_equal(dp_meta(got)->kind, DP_KIND_HOST);
	assert_int_equal(rte_ring_dequeue(wk->main.txq_ring, (void **)&got), 0);
	assert_ptr_equal(got, a);
	assert_int_equal(dp_meta(got)->kind, DP_KIND_FRAME);
	rte_pktmbuf_free(m);
	rte_pktmbuf_free(a);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_buckets_and_classes),
		cmocka_unit_test(test_link_macs_and_down),
		cmocka_unit_test(test_twin_full),
		cmocka_unit_test(test_from_host),
	};

	return cmocka_run_group_tests(tests, setup, NULL);
}
