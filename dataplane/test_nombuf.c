/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_nombuf.c - every place the dataplane allocates a packet buffer, with
 * the pool empty: the ICMP "fragmentation needed" / "packet too big" errors,
 * fragmentation (directly and through the encap path), flattening a
 * reassembled packet, ARP requests and Neighbour Advertisements of the main
 * lcore.  Each failure is a drop counted as no-mbuf (no packet, or frame,
 * vanishes uncounted), what was in hand is freed (the pool's in-use count
 * comes back to where it was), and the counters balance (a frame the main
 * lcore made counts in arp_out even when it is dropped).  Also the TX
 * buffer's unsent callback: tx-full, freed.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include <rte_arp.h>
#include <rte_eal.h>
#include <rte_ip.h>
#include <rte_malloc.h>
#include <rte_mbuf.h>
#include <rte_rcu_qsbr.h>

#include "crypto.h"
#include "dp.h"
#include "esp.h"
#include "pmtu.h"
#include "reass.h"
#include "route.h"
#include "sa.h"
#include "spd.h"

#define IP4(a, b, c, d) \
	((uint32_t)(a) << 24 | (uint32_t)(b) << 16 | (uint32_t)(c) << 8 | (uint32_t)(d))
#define POOL		255
#define HOST_A		RTE_BE32(IP4(198, 18, 1, 2))
#define HOST_B		RTE_BE32(IP4(198, 18, 2, 2))
#define GW_A		RTE_BE32(IP4(198, 19, 0, 1))
#define GW_B		RTE_BE32(IP4(198, 19, 0, 2))

struct dp_state dp;
struct dp_lstats dp_lstats[RTE_MAX_LCORE];

static struct dp_worker *wk = &dp.workers[0];
static struct dp_lstats *st;	/* worker and main lcore alike: this test's lcore */
static struct rte_mbuf *hoard[POOL];
static unsigned int hoarded;

static const uint8_t addr6[16] = { 0x20, 0x01, 0x0d, 0xb8, [15] = 1 };

/* Take every free mbuf out of the pool (the pool has no per-lcore cache). */
static void
drain(void)
{
	while (hoarded < POOL && (hoard[hoarded] = rte_pktmbuf_alloc(dp.pool)) != NULL)
		hoarded++;
	assert_int_equal(rte_mempool_avail_count(dp.pool), 0);
}

static void
refill(void)
{
	rte_pktmbuf_free_bulk(hoard, hoarded);
	hoarded = 0;
}

static uint64_t
total_drops(void)
{
	uint64_t n = 0;

	for (unsigned int r = 0; r < DPVPN_DROP_MAX; r++)
		n += st->drops[r];
	return n;
}

static int
setup(void **state)
{
	char prefix[64];
	char *argv[] = { "test_nombuf", "--no-huge", "-m", "128", "--no-pci", "-l", "0",
			 "--log-level", "lib.*:error", "--file-prefix", prefix };
	struct dpvpn_sa_cfg c = {
		.spi = RTE_BE32(0x1001), .dir = DPVPN_DIR_OUT, .alg = DPVPN_ALG_AES128_GCM,
		.key_len = 16, .mtu = 600, .replay_window = 64,
		.local = { .family = DPVPN_AF_INET, .v4 = GW_A },
		.remote = { .family = DPVPN_AF_INET, .v4 = GW_B },
		.local_ts = { .family = DPVPN_AF_INET, .len = 24,
			      .v4 = RTE_BE32(IP4(198, 18, 1, 0)) },
		.remote_ts = { .family = DPVPN_AF_INET, .len = 24,
			       .v4 = RTE_BE32(IP4(198, 18, 2, 0)) },
	};
	struct dpvpn_policy p = { .src = c.local_ts, .dst = c.remote_ts, .spi = c.spi };
	char err[256];

	(void)state;
	snprintf(prefix, sizeof(prefix), "test_nombuf_%d", getpid());
	if (rte_eal_init((int)RTE_DIM(argv), argv) < 0)
		return -1;
	if (dp_meta_init() != 0)
		return -1;
	dp.pool = rte_pktmbuf_pool_create("t", POOL, 0, 0, RTE_MBUF_DEFAULT_BUF_SIZE, 0);
	dp.rcu = rte_zmalloc(NULL, rte_rcu_qsbr_get_memsize(4), 64);
	rte_rcu_qsbr_init(dp.rcu, 4);
	st = &dp_lstats[rte_lcore_id()];
	/* port 0: inside (IPv4 and IPv6); port 1: gateway A's outside */
	dp.n_ports = 2;
	dp.n_workers = 1;
	dp.ports[0] = (struct dp_port){ .id = 0, .role = DPVPN_ROLE_INSIDE, .mtu = 1500,
					.addr = RTE_BE32(IP4(198, 18, 1, 1)), .prefix_len = 24,
					.mask = RTE_BE32(0xffffff00), .has6 = 1,
					.prefix6_len = 64 };
	memcpy(dp.ports[0].addr6, addr6, 16);
	dp.ports[1] = (struct dp_port){ .id = 1, .role = DPVPN_ROLE_OUTSIDE, .mtu = 1500,
					.addr = GW_A, .prefix_len = 24,
					.mask = RTE_BE32(0xffffff00) };
	wk->esp.mb = crypto_mgr_create();
	wk->main.punt = rte_ring_create("punt", 64, 0, 0);
	wk->out.resolve = rte_ring_create_elem("resolve", sizeof(struct dp_resolve_req), 64, 0, 0);
	wk->main.txq_ring = rte_ring_create("txq", 64, 0, 0);
	if (dp.pool == NULL || wk->esp.mb == NULL || wk->main.punt == NULL || wk->out.resolve == NULL ||
	    wk->main.txq_ring == NULL || reass_init(wk) != 0 ||
	    neigh_init() != 0 || sa_init(1, 64) != 0 || spd_init(64) != 0)
		return -1;
	memcpy(c.key, "0123456789abcdef", 16);
	snprintf(c.name, sizeof(c.name), "test");
	return sa_add(&c, wk->esp.mb, err, sizeof(err)) || spd_add(&p, err, sizeof(err));
}

/* An IPv4/UDP packet of len bytes, DF as asked. */
static struct rte_mbuf *
ip4_packet(uint16_t len, bool df)
{
	struct rte_mbuf *m = rte_pktmbuf_alloc(dp.pool);
	uint8_t *d = (uint8_t *)rte_pktmbuf_append(m, len);
	struct rte_ipv4_hdr *ip = (struct rte_ipv4_hdr *)d;

	for (uint16_t i = 0; i < len; i++)
		d[i] = (uint8_t)(i * 7);
	*ip = (struct rte_ipv4_hdr){ 0 };
	ip->version_ihl = RTE_IPV4_VHL_DEF;
	ip->total_length = rte_cpu_to_be_16(len);
	ip->fragment_offset = df ? rte_cpu_to_be_16(RTE_IPV4_HDR_DF_FLAG) : 0;
	ip->time_to_live = 64;
	ip->next_proto_id = IPPROTO_UDP;
	ip->src_addr = HOST_A;
	ip->dst_addr = HOST_B;
	ip->hdr_checksum = rte_ipv4_cksum(ip);
	return m;
}

static void
test_fragment_without_mbufs(void **state)
{
	unsigned int base = rte_mempool_in_use_count(dp.pool);
	struct rte_mbuf *m = ip4_packet(1400, false), *out[PMTU_MAX_FRAGS];
	enum dpvpn_drop_reason why = DPVPN_DROP_MAX;

	(void)state;
	drain();
	assert_int_equal(pmtu_fragment4(m, 576, out, PMTU_MAX_FRAGS, &why), 0);
	assert_int_equal(why, DPVPN_DROP_NO_MBUF);
	refill();
	/* m untouched: with buffers it splits, and m is consumed */
	assert_int_equal(pmtu_fragment4(m, 576, out, PMTU_MAX_FRAGS, &why), 3);
	rte_pktmbuf_free_bulk(out, 3);
	/* too many fragments is another reason */
	m = ip4_packet(1400, false);
	assert_int_equal(pmtu_fragment4(m, 576, out, 2, &why), 0);
	assert_int_equal(why, DPVPN_DROP_TOO_BIG);
	rte_pktmbuf_free(m);
	assert_int_equal(rte_mempool_in_use_count(dp.pool), base);
}

/* Through the encap path: a DF-clear packet over the tunnel's 600 bytes. */
static void
test_encap_fragments_without_mbufs(void **state)
{
	unsigned int base = rte_mempool_in_use_count(dp.pool);
	uint64_t before = st->drops[DPVPN_DROP_NO_MBUF], drops = total_drops();
	struct rte_mbuf *m = ip4_packet(1000, false);

	(void)state;
	drain();
	static struct dp_out out;

	out.n = 0;
	assert_int_equal(esp_encap_burst(wk, st, &dp.ports[0], &m, 1, &out), 0);
	assert_int_equal(out.n, 0);
	refill();
	assert_int_equal(st->drops[DPVPN_DROP_NO_MBUF], before + 1);
	assert_int_equal(total_drops(), drops + 1);
	assert_int_equal(st->fragments, 0);
	assert_int_equal(rte_mempool_in_use_count(dp.pool), base);
}

static void
test_icmp_without_mbufs(void **state)
{
	unsigned int base = rte_mempool_in_use_count(dp.pool);
	uint64_t before = st->drops[DPVPN_DROP_NO_MBUF], icmp = st->icmp_out;
	struct rte_mbuf *m = ip4_packet(1400, true);
	struct rte_ipv6_hdr *ip6;
	struct rte_mbuf *m6;

	(void)state;
	m6 = rte_pktmbuf_alloc(dp.pool);
	ip6 = (struct rte_ipv6_hdr *)rte_pktmbuf_append(m6, 1400);
	memset(ip6, 0, 1400);
	ip6->vtc_flow = rte_cpu_to_be_32(6u << 28);
	ip6->payload_len = rte_cpu_to_be_16(1400 - sizeof(*ip6));
	ip6->proto = IPPROTO_UDP;
	ip6->hop_limits = 64;
	ip6->src_addr[0] = 0x20;
	ip6->src_addr[15] = 2;
	drain();
	assert_null(pmtu_icmp_too_big(wk, st, &dp.ports[0], m, 1300));
	assert_null(pmtu_icmp_too_big(wk, st, &dp.ports[0], m6, 1300));
	refill();
	/* built (icmp_out), then dropped for want of a buffer: counted both ways */
	assert_int_equal(st->icmp_out, icmp + 2);
	assert_int_equal(st->drops[DPVPN_DROP_NO_MBUF], before + 2);
	rte_pktmbuf_free(m);
	rte_pktmbuf_free(m6);
	assert_int_equal(rte_mempool_in_use_count(dp.pool), base);
}

/* An outer IPv4 fragment of ESP to gateway A, in an Ethernet frame. */
static struct rte_mbuf *
outer_fragment(uint16_t id, uint16_t off8, uint16_t len, bool more)
{
	struct rte_mbuf *m = rte_pktmbuf_alloc(dp.pool);
	struct rte_ether_hdr *eth;
	struct rte_ipv4_hdr *ip;

	assert_non_null(m);
	eth = (struct rte_ether_hdr *)rte_pktmbuf_append(m, sizeof(*eth) + sizeof(*ip) + len);
	memset(eth, 0x33, sizeof(*eth) + sizeof(*ip) + len);
	eth->ether_type = rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV4);
	ip = (struct rte_ipv4_hdr *)(eth + 1);
	memset(ip, 0, sizeof(*ip));
	ip->version_ihl = RTE_IPV4_VHL_DEF;
	ip->total_length = rte_cpu_to_be_16(sizeof(*ip) + len);
	ip->packet_id = rte_cpu_to_be_16(id);
	ip->fragment_offset = rte_cpu_to_be_16(off8 | (more ? RTE_IPV4_HDR_MF_FLAG : 0));
	ip->time_to_live = 64;
	ip->next_proto_id = IPPROTO_ESP;
	ip->src_addr = GW_B;
	ip->dst_addr = GW_A;
	ip->hdr_checksum = rte_ipv4_cksum(ip);
	m->port = 1;
	return m;
}

static void
test_reassembled_without_mbufs(void **state)
{
	unsigned int base = rte_mempool_in_use_count(dp.pool);
	uint64_t before = st->drops[DPVPN_DROP_NO_MBUF], whole = st->reassembled;
	struct rte_mbuf *pkts[2];

	(void)state;
	pkts[0] = outer_fragment(77, 0, 512, true);
	pkts[1] = outer_fragment(77, 64, 200, false);
	drain();
	/* the chain of two is complete, and there is no mbuf to make it one */
	assert_int_equal(reass_burst(wk, st, &dp.ports[1], pkts, 2), 0);
	refill();
	assert_int_equal(st->frag_in, 2);
	assert_int_equal(st->reassembled, whole + 1);
	assert_int_equal(st->drops[DPVPN_DROP_NO_MBUF], before + 1);
	assert_int_equal(st->reass_dropped, 0);
	assert_int_equal(rte_mempool_in_use_count(dp.pool), base);
}

static void
test_arp_request_without_mbufs(void **state)
{
	unsigned int base = rte_mempool_in_use_count(dp.pool);
	uint64_t before = st->drops[DPVPN_DROP_NO_MBUF], out = st->arp_out;
	struct dp_resolve_req req = { .port = 1, .family = DPVPN_AF_INET };
	uint32_t gw = GW_B;

	(void)state;
	memcpy(req.addr, &gw, 4);
	drain();
	assert_int_equal(rte_ring_enqueue_elem(wk->out.resolve, &req, sizeof(req)), 0);
	arp_poll();
	refill();
	assert_int_equal(st->arp_out, out + 1);
	assert_int_equal(st->drops[DPVPN_DROP_NO_MBUF], before + 1);
	assert_int_equal(rte_ring_count(wk->main.txq_ring), 0);
	assert_int_equal(rte_mempool_in_use_count(dp.pool), base);
}

/* A Neighbour Solicitation for the inside port's address, from a host. */
static struct rte_mbuf *
solicitation(void)
{
	struct rte_mbuf *m = rte_pktmbuf_alloc(dp.pool);
	struct rte_ether_hdr *eth;
	struct rte_ipv6_hdr *ip;
	uint8_t *ns;

	assert_non_null(m);
	eth = (struct rte_ether_hdr *)rte_pktmbuf_append(m, sizeof(*eth) + sizeof(*ip) + 32);
	memset(eth, 0, sizeof(*eth) + sizeof(*ip) + 32);
	eth->ether_type = rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV6);
	ip = (struct rte_ipv6_hdr *)(eth + 1);
	ip->vtc_flow = rte_cpu_to_be_32(6u << 28);
	ip->payload_len = rte_cpu_to_be_16(32);
	ip->proto = IPPROTO_ICMPV6;
	ip->hop_limits = 255;
	memcpy(ip->src_addr, addr6, 16);
	ip->src_addr[15] = 2;
	memcpy(ip->dst_addr, addr6, 16);
	ns = (uint8_t *)(ip + 1);
	ns[0] = 135;			/* NS, code 0 */
	memcpy(ns + 8, addr6, 16);	/* target: ours */
	ns[24] = 1;			/* source link-layer address option */
	ns[25] = 1;
	ns[26] = 0x02;
	*(rte_be16_t *)(ns + 2) = rte_ipv6_udptcp_cksum(ip, ns);
	m->port = 0;
	return m;
}

static void
test_nd_advert_without_mbufs(void **state)
{
	unsigned int base = rte_mempool_in_use_count(dp.pool);
	uint64_t before = st->drops[DPVPN_DROP_NO_MBUF], out = st->arp_out, in = st->arp_in;
	uint64_t bad = st->drops[DPVPN_DROP_BAD_ND];
	struct rte_mbuf *m = solicitation();

	(void)state;
	drain();
	assert_int_equal(rte_ring_enqueue(wk->main.punt, m), 0);
	arp_poll();
	refill();
	assert_int_equal(st->drops[DPVPN_DROP_BAD_ND], bad);	/* the NS was sound ... */
	assert_int_equal(st->arp_in, in + 1);
	assert_int_equal(st->arp_out, out + 1);		/* ... the answer had no buffer */
	assert_int_equal(st->drops[DPVPN_DROP_NO_MBUF], before + 1);
	assert_int_equal(rte_mempool_in_use_count(dp.pool), base);
	/* with buffers, the same NS is answered */
	assert_int_equal(rte_ring_enqueue(wk->main.punt, solicitation()), 0);
	arp_poll();
	assert_int_equal(st->arp_out, out + 2);
	assert_int_equal(rte_ring_count(wk->main.txq_ring), 1);
	assert_int_equal(rte_ring_dequeue(wk->main.txq_ring, (void **)&m), 0);
	rte_pktmbuf_free(m);
	assert_int_equal(rte_mempool_in_use_count(dp.pool), base);
}

/* A frame the main lcore built but worker 0's ring could not take: made and dropped. */
static void
test_frame_dropped_ring_full(void **state)
{
	unsigned int base = rte_mempool_in_use_count(dp.pool);
	uint64_t full = st->drops[DPVPN_DROP_PUNT_FULL], out = st->arp_out;
	struct dp_resolve_req req = { .port = 1, .family = DPVPN_AF_INET };
	uint32_t next = RTE_BE32(IP4(198, 19, 0, 3));
	struct rte_mbuf *m[64];
	unsigned int n = rte_ring_free_count(wk->main.txq_ring);

	(void)state;
	assert_int_equal(rte_pktmbuf_alloc_bulk(dp.pool, m, n), 0);
	assert_int_equal(rte_ring_enqueue_bulk(wk->main.txq_ring, (void **)m, n, NULL), n);
	memcpy(req.addr, &next, 4);
	assert_int_equal(rte_ring_enqueue_elem(wk->out.resolve, &req, sizeof(req)), 0);
	arp_poll();
	assert_int_equal(st->arp_out, out + 1);
	assert_int_equal(st->drops[DPVPN_DROP_PUNT_FULL], full + 1);
	assert_int_equal(rte_ring_dequeue_bulk(wk->main.txq_ring, (void **)m, n, NULL), n);
	rte_pktmbuf_free_bulk(m, n);
	assert_int_equal(rte_mempool_in_use_count(dp.pool), base);
}

static void
test_tx_unsent_counted_and_freed(void **state)
{
	unsigned int base = rte_mempool_in_use_count(dp.pool);
	uint64_t full = st->drops[DPVPN_DROP_TX_FULL], tx = st->tx;
	struct rte_mbuf *m[3];

	(void)state;
	assert_int_equal(rte_pktmbuf_alloc_bulk(dp.pool, m, 3), 0);
	st->tx += 3;		/* as worker_tx counts them, before the queue refuses */
	worker_tx_unsent(m, 3, st);
	assert_int_equal(st->drops[DPVPN_DROP_TX_FULL], full + 3);
	assert_int_equal(st->tx, tx);
	assert_int_equal(rte_mempool_in_use_count(dp.pool), base);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fragment_without_mbufs),
		cmocka_unit_test(test_encap_fragments_without_mbufs),
		cmocka_unit_test(test_icmp_without_mbufs),
		cmocka_unit_test(test_reassembled_without_mbufs),
		cmocka_unit_test(test_arp_request_without_mbufs),
		cmocka_unit_test(test_nd_advert_without_mbufs),
		cmocka_unit_test(test_frame_dropped_ring_full),
		cmocka_unit_test(test_tx_unsent_counted_and_freed),
	};

	return cmocka_run_group_tests_name("nombuf", tests, setup, NULL);
}
