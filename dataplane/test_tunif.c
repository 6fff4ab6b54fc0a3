/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_tunif.c - route-based tunnels on real mbufs, the real SA table, SPD,
 * routes and ipsec-mb: inner packets no policy takes routed into a tunnel
 * interface's SA (IPv4 and IPv6 through one SA pair) and decrypted again,
 * the reverse path check, tunnel-down / no-route / no-policy, ECMP member
 * choice by flow and failover to the member that is up, and the policy
 * winning over a route.
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
#include <rte_ip.h>
#include <rte_malloc.h>
#include <rte_mbuf.h>
#include <rte_rcu_qsbr.h>

#include "crypto.h"
#include "ctl_steps.h"
#include "dp.h"
#include "esp.h"
#include "route.h"
#include "sa.h"
#include "spd.h"
#include "tunif.h"

#define IP4(a, b, c, d) ((uint32_t)(a) << 24 | (uint32_t)(b) << 16 | (uint32_t)(c) << 8 | (uint32_t)(d))

struct dp_state dp;
struct dp_lstats dp_lstats[RTE_MAX_LCORE];

static struct dp_worker wk;
static struct dp_lstats *st;
static struct dp_out out_buf, self_buf;

static struct dp_out *
out(void)
{
	out_buf.n = 0;
	return &out_buf;
}

static struct dp_out *
self(void)
{
	self_buf.n = 0;
	return &self_buf;
}

static const struct dp_port in_port = { .addr = RTE_BE32(IP4(10, 1, 0, 1)) };
static const struct dp_port peer_port = { .addr = RTE_BE32(IP4(198, 19, 0, 2)) };

static const uint8_t key128[16] = "0123456789abcdef";
#define SPI_T1		RTE_BE32(0x2001)	/* tunnel t1, tunif 0 */
#define SPI_T2		RTE_BE32(0x2002)	/* tunnel t2, tunif 1 */
#define SPI_POL		RTE_BE32(0x3001)	/* a policy tunnel */

#define V4ADDR(a)	((struct dpvpn_addr){ .family = DPVPN_AF_INET, .v4 = RTE_BE32(a) })
#define V4PFX(a, l)	((struct dpvpn_prefix){ .family = DPVPN_AF_INET, .len = (l), \
					.v4 = RTE_BE32(a) })

static const uint8_t net6_b[16] = { 0x20, 0x01, 0x0d, 0xb8, 0, 9 };	/* 2001:db8:9::/48 */
static const uint8_t net6_a[16] = { 0x20, 0x01, 0x0d, 0xb8, 0, 1 };	/* 2001:db8:1::/48 */

static int
add_sa(uint32_t spi, uint8_t dir, uint8_t flags, uint8_t tunif, uint32_t remote,
       struct dpvpn_prefix lts, struct dpvpn_prefix rts)
{
	struct dpvpn_sa_cfg c = {
		.spi = spi, .dir = dir, .alg = DPVPN_ALG_AES128_GCM, .key_len = 16,
		.replay_window = 64, .flags = flags, .tunif = tunif,
		.local_ts = lts, .remote_ts = rts,
	};
	char err[256];
	int rc;

	memcpy(c.key, key128, 16);
	/* the outbound SA is gateway A's; the inbound one gateway B's view */
	c.local = V4ADDR(dir == DPVPN_DIR_OUT ? IP4(198, 19, 0, 1) : IP4(198, 19, 0, 2));
	c.remote = V4ADDR(dir == DPVPN_DIR_OUT ? remote : IP4(198, 19, 0, 1));
	snprintf(c.name, sizeof(c.name), "t%x", rte_be_to_cpu_32(spi));
	rc = sa_add(&c, wk.esp.mb, err, sizeof(err));
	if (rc != 0)
		fprintf(stderr, "sa_add: %s\n", err);
	return rc;
}

static int
set_tunif(uint16_t id, bool up, uint32_t spi, uint8_t rpf)
{
	struct dpvpn_tunif t = { .id = id, .up = up, .out_spi = up ? spi : 0, .rpf = rpf };
	char err[256];

	snprintf(t.name, sizeof(t.name), "t%u", id + 1);
	return step_tunif_set(&t, err, sizeof(err));
}

static int
route_to(struct dpvpn_prefix dst, const uint16_t *ids, uint8_t n)
{
	char err[256];
	int rc = step_route_add_tunnel(&dst, ids, n, err, sizeof(err));

	if (rc != 0)
		fprintf(stderr, "route_add_tunnel: %s\n", err);
	return rc;
}

static int
setup(void **state)
{
	char prefix[64];
	char *argv[] = { "test_tunif", "--no-huge", "-m", "256", "--no-pci", "-l", "0",
			 "--log-level", "lib.*:error", "--file-prefix", prefix };
	struct dpvpn_prefix any = V4PFX(0, 0), v6b = { .family = DPVPN_AF_INET6, .len = 48 };
	struct dpvpn_prefix v6a = v6b;
	struct dpvpn_policy p = { .src = V4PFX(IP4(10, 1, 0, 0), 16),
				  .dst = V4PFX(IP4(10, 9, 1, 0), 24), .spi = SPI_POL };
	char err[256];

	(void)state;
	memcpy(v6b.v6, net6_b, 16);
	memcpy(v6a.v6, net6_a, 16);
	snprintf(prefix, sizeof(prefix), "test_tunif_%d", getpid());
	if (rte_eal_init((int)RTE_DIM(argv), argv) < 0)
		return -1;
	if (dp_meta_init() != 0)
		return -1;
	dp.pool = rte_pktmbuf_pool_create("t", 1023, 0, 0, RTE_MBUF_DEFAULT_BUF_SIZE, 0);
	dp.rcu = rte_zmalloc(NULL, rte_rcu_qsbr_get_memsize(4), 64);
	rte_rcu_qsbr_init(dp.rcu, 4);
	wk.esp.mb = crypto_mgr_create();
	st = &dp_lstats[0];
	dp.n_ports = 1;
	dp.ports[0] = (struct dp_port){ .role = DPVPN_ROLE_OUTSIDE, .mtu = 9000,
					.addr = RTE_BE32(IP4(198, 19, 0, 1)) };
	if (dp.pool == NULL || wk.esp.mb == NULL || sa_init(1, 64) || spd_init(64) ||
	    route_init(ROUTE_MAX_DEFAULT))
		return -1;
	/* t1 both ways (SPIs mirrored: B's inbound SA opens A's packets), t2 out */
	if (add_sa(SPI_T1, DPVPN_DIR_OUT, DPVPN_SA_F_ROUTE, 0, IP4(198, 19, 0, 2), any, any) ||
	    add_sa(SPI_T1, DPVPN_DIR_IN, DPVPN_SA_F_ROUTE, 0, 0, any, any) ||
	    add_sa(SPI_T2, DPVPN_DIR_OUT, DPVPN_SA_F_ROUTE, 1, IP4(198, 19, 0, 3), any, any) ||
	    add_sa(SPI_POL, DPVPN_DIR_OUT, 0, 0, IP4(198, 19, 0, 2),
		   V4PFX(IP4(10, 1, 0, 0), 16), V4PFX(IP4(10, 9, 1, 0), 24)) ||
	    spd_add(&p, err, sizeof(err)) ||
	    set_tunif(0, true, SPI_T1, DPVPN_RPF_LOOSE) ||
	    set_tunif(1, true, SPI_T2, DPVPN_RPF_LOOSE))
		return -1;
	/* B's routes back to A are in the same table: loose and strict pass */
	return route_to(V4PFX(IP4(10, 9, 0, 0), 16), (uint16_t[]){ 0 }, 1) ||
	       route_to(V4PFX(IP4(10, 1, 0, 0), 16), (uint16_t[]){ 0 }, 1) ||
	       route_to(v6b, (uint16_t[]){ 0 }, 1) || route_to(v6a, (uint16_t[]){ 0 }, 1) ||
	       route_to(V4PFX(IP4(10, 8, 0, 0), 16), (uint16_t[]){ 0, 1 }, 2) ||
	       route_add(RTE_BE32(IP4(10, 7, 0, 0)), 16, 0, 0, err, sizeof(err));
}

/* len bytes appended to a new mbuf (out of line: gcc 12 takes the data for a
 * zero-length object through rte_pktmbuf_append's arithmetic and warns) */
__attribute__((noinline)) static uint8_t *
new_packet(struct rte_mbuf **m, uint16_t len)
{
	uint8_t *d;

	*m = rte_pktmbuf_alloc(dp.pool);
	d = *m == NULL ? NULL : (uint8_t *)rte_pktmbuf_append(*m, len);
	if (d == NULL)
		fail();
	return d;
}

/* An inner IPv4/UDP packet, ports sport -> 4000. */
static struct rte_mbuf *
pkt4(uint32_t src, uint32_t dst, uint16_t sport)
{
	struct rte_mbuf *m;
	uint8_t *d = new_packet(&m, 100);
	struct rte_ipv4_hdr *ip = (struct rte_ipv4_hdr *)d;

	memset(d, 0x5a, 100);
	memset(ip, 0, sizeof(*ip));
	ip->version_ihl = RTE_IPV4_VHL_DEF;
	ip->total_length = rte_cpu_to_be_16(100);
	ip->time_to_live = 63;
	ip->next_proto_id = IPPROTO_UDP;
	ip->src_addr = rte_cpu_to_be_32(src);
	ip->dst_addr = rte_cpu_to_be_32(dst);
	ip->hdr_checksum = rte_ipv4_cksum(ip);
	d[20] = (uint8_t)(sport >> 8);
	d[21] = (uint8_t)sport;
	d[22] = 4000 >> 8;
	d[23] = 4000 & 0xff;
	return m;
}

/* An inner IPv6/UDP packet from net6_a::2 to net6_b::2. */
static struct rte_mbuf *
pkt6(void)
{
	struct rte_mbuf *m;
	uint8_t *d = new_packet(&m, 100);
	struct rte_ipv6_hdr *ip = (struct rte_ipv6_hdr *)d;

	memset(d, 0x6b, 100);
	ip->vtc_flow = rte_cpu_to_be_32(6u << 28);
	ip->payload_len = rte_cpu_to_be_16(60);
	ip->proto = IPPROTO_UDP;
	ip->hop_limits = 63;
	memcpy(ip->src_addr, net6_a, 16);
	ip->src_addr[15] = 2;
	memcpy(ip->dst_addr, net6_b, 16);
	ip->dst_addr[15] = 2;
	return m;
}

static uint64_t
drops(enum dpvpn_drop_reason r)
{
	return st->drops[r];
}

/* The SPI of the ESP packet m became (outer IPv4). */
static uint32_t
spi_of(const struct rte_mbuf *m)
{
	uint32_t spi;

	memcpy(&spi, rte_pktmbuf_mtod_offset(m, const uint8_t *, 20), 4);
	return spi;
}

static struct dpvpn_tunif_info
info(uint16_t id)
{
	struct dpvpn_tunif_info o = { 0 };

	for (unsigned int i = 0; tunif_info(i, &o); i++)
		if (o.id == id)
			return o;
	fail();
	return o;
}

/* A (encap) and B (decap): one packet through; true if B kept it. */
static bool
through(struct rte_mbuf *m, uint32_t want_spi)
{
	assert_int_equal(esp_encap_burst(&wk, st, &in_port, &m, 1, out()), 1);
	assert_int_equal(spi_of(m), want_spi);
	if (esp_decap_burst(&wk, st, &peer_port, &m, 1, self()) == 0)
		return false;
	rte_pktmbuf_free(m);
	return true;
}

static void
test_route_sa_both_families(void **state)
{
	struct dpvpn_tunif_info before = info(0), after;
	struct rte_mbuf *m = pkt4(IP4(10, 1, 0, 2), IP4(10, 9, 0, 2), 1000);

	(void)state;
	assert_true(through(m, SPI_T1));
	m = pkt6();
	assert_int_equal(esp_encap_burst(&wk, st, &in_port, &m, 1, out()), 1);
	assert_int_equal(spi_of(m), SPI_T1);
	assert_int_equal(esp_decap_burst(&wk, st, &peer_port, &m, 1, self()), 1);
	assert_int_equal(rte_pktmbuf_mtod(m, uint8_t *)[0] >> 4, 6);	/* IPv6 came out */
	assert_int_equal(rte_pktmbuf_data_len(m), 100);
	rte_pktmbuf_free(m);
	after = info(0);
	assert_int_equal(after.tx, before.tx + 2);
	assert_int_equal(after.rx, before.rx + 2);
	/* the policy still comes first: 10.9.1.0/24 is the policy tunnel's */
	m = pkt4(IP4(10, 1, 0, 2), IP4(10, 9, 1, 2), 1000);
	assert_int_equal(esp_encap_burst(&wk, st, &in_port, &m, 1, out()), 1);
	assert_int_equal(spi_of(m), SPI_POL);
	rte_pktmbuf_free(m);
}

static void
test_rpf(void **state)
{
	uint64_t before = drops(DPVPN_DROP_RPF);

	(void)state;
	/* loose: a source with no route at all fails, one routed out a port passes */
	assert_false(through(pkt4(IP4(10, 6, 0, 2), IP4(10, 9, 0, 2), 1), SPI_T1));
	assert_int_equal(drops(DPVPN_DROP_RPF), before + 1);
	assert_true(through(pkt4(IP4(10, 7, 0, 2), IP4(10, 9, 0, 2), 1), SPI_T1));
	/* strict: the source's route must be this tunnel (or an ECMP route with it) */
	assert_int_equal(set_tunif(0, true, SPI_T1, DPVPN_RPF_STRICT), 0);
	assert_false(through(pkt4(IP4(10, 7, 0, 2), IP4(10, 9, 0, 2), 1), SPI_T1));
	assert_int_equal(drops(DPVPN_DROP_RPF), before + 2);
	assert_true(through(pkt4(IP4(10, 1, 0, 2), IP4(10, 9, 0, 2), 1), SPI_T1));
	assert_true(through(pkt4(IP4(10, 8, 0, 2), IP4(10, 9, 0, 2), 1), SPI_T1));
	/* off: anything */
	assert_int_equal(set_tunif(0, true, SPI_T1, DPVPN_RPF_OFF), 0);
	assert_true(through(pkt4(IP4(10, 6, 0, 2), IP4(10, 9, 0, 2), 1), SPI_T1));
	assert_int_equal(drops(DPVPN_DROP_RPF), before + 2);
	assert_int_equal(set_tunif(0, true, SPI_T1, DPVPN_RPF_LOOSE), 0);
}

static void
expect_encap_drop(uint32_t dst, enum dpvpn_drop_reason why)
{
	struct rte_mbuf *m = pkt4(IP4(10, 1, 0, 2), dst, 1);
	uint64_t before = drops(why);

	assert_int_equal(esp_encap_burst(&wk, st, &in_port, &m, 1, out()), 0);
	assert_int_equal(drops(why), before + 1);
}

static void
test_tunnel_down(void **state)
{
	uint64_t down = info(0).down_drops;

	(void)state;
	expect_encap_drop(IP4(10, 5, 0, 2), DPVPN_DROP_NO_ROUTE);	/* no route */
	expect_encap_drop(IP4(10, 7, 0, 2), DPVPN_DROP_NO_POLICY);	/* out a port */
	assert_int_equal(set_tunif(0, false, 0, DPVPN_RPF_LOOSE), 0);
	expect_encap_drop(IP4(10, 9, 0, 2), DPVPN_DROP_TUNNEL_DOWN);
	assert_int_equal(info(0).down_drops, down + 1);
	assert_int_equal(info(0).up, 0);
	assert_int_equal(set_tunif(0, true, SPI_T1, DPVPN_RPF_LOOSE), 0);
	assert_true(through(pkt4(IP4(10, 1, 0, 2), IP4(10, 9, 0, 2), 1), SPI_T1));
}

/* Which SA each of n flows to 10.8.0.2 leaves by. */
static void
flows(uint32_t *spis, unsigned int n)
{
	for (unsigned int f = 0; f < n; f++) {
		struct rte_mbuf *m = pkt4(IP4(10, 1, 0, 2), IP4(10, 8, 0, 2),
					  (uint16_t)(1000 + f));

		assert_int_equal(esp_encap_burst(&wk, st, &in_port, &m, 1, out()), 1);
		spis[f] = spi_of(m);
		rte_pktmbuf_free(m);
	}
}

static void
test_ecmp(void **state)
{
	enum { N = 32 };
	uint32_t first[N], again[N], failed[N], back[N];
	unsigned int on_t1 = 0;
	uint64_t down = drops(DPVPN_DROP_TUNNEL_DOWN);

	(void)state;
	flows(first, N);
	flows(again, N);
	assert_memory_equal(first, again, sizeof(first));	/* a flow keeps its member */
	for (unsigned int f = 0; f < N; f++)
		on_t1 += first[f] == SPI_T1;
	assert_true(on_t1 > 0 && on_t1 < N);			/* both members carry */
	/* t1 down: every flow on t2, none dropped; t2's flows did not move */
	assert_int_equal(set_tunif(0, false, 0, DPVPN_RPF_LOOSE), 0);
	flows(failed, N);
	for (unsigned int f = 0; f < N; f++)
		assert_int_equal(failed[f], SPI_T2);
	assert_int_equal(drops(DPVPN_DROP_TUNNEL_DOWN), down);
	/* back up: each flow on its member again */
	assert_int_equal(set_tunif(0, true, SPI_T1, DPVPN_RPF_LOOSE), 0);
	flows(back, N);
	assert_memory_equal(first, back, sizeof(first));
	/* both down: tunnel-down, once per packet */
	assert_int_equal(set_tunif(0, false, 0, DPVPN_RPF_LOOSE), 0);
	assert_int_equal(set_tunif(1, false, 0, DPVPN_RPF_LOOSE), 0);
	expect_encap_drop(IP4(10, 8, 0, 2), DPVPN_DROP_TUNNEL_DOWN);
	assert_int_equal(set_tunif(0, true, SPI_T1, DPVPN_RPF_LOOSE), 0);
	assert_int_equal(set_tunif(1, true, SPI_T2, DPVPN_RPF_LOOSE), 0);
}

static void
test_sa_del_takes_tunif_down(void **state)
{
	char err[256];

	(void)state;
	assert_int_equal(step_sa_del(SPI_T2, DPVPN_DIR_OUT, err, sizeof(err)), 0);
	assert_int_equal(info(1).up, 0);
	assert_int_equal(info(1).out_spi, 0);
	/* t1 alone now: t2 taken down */
	assert_int_equal(set_tunif(0, false, 0, DPVPN_RPF_LOOSE), 0);
	expect_encap_drop(IP4(10, 8, 0, 2), DPVPN_DROP_TUNNEL_DOWN);
}

static void
test_refused(void **state)
{
	struct dpvpn_tunif t = { .id = 5, .up = 1, .out_spi = SPI_POL };
	char err[256];

	(void)state;
	snprintf(t.name, sizeof(t.name), "x");
	assert_int_equal(step_tunif_set(&t, err, sizeof(err)), -EINVAL);	/* a policy SA */
	assert_non_null(strstr(err, "tunif.out_spi"));
	t.out_spi = RTE_BE32(0x9999);
	assert_int_equal(step_tunif_set(&t, err, sizeof(err)), -ENOENT);
	t.id = DPVPN_TUNIF_MAX;
	assert_int_equal(step_tunif_set(&t, err, sizeof(err)), -EINVAL);
	assert_false(tunif_exists(5));
	assert_int_not_equal(step_route_add_tunnel(&(struct dpvpn_prefix)V4PFX(IP4(10, 4, 0, 0), 16),
					      (uint16_t[]){ 5 }, 1, err, sizeof(err)), 0);
	assert_int_not_equal(add_sa(RTE_BE32(0x4001), DPVPN_DIR_IN, 0, 3, 0, V4PFX(0, 0),
				    V4PFX(0, 0)), 0);	/* a tunif without the flag */
	/* host-access: an inbound SA of a policy tunnel only */
	assert_int_not_equal(add_sa(RTE_BE32(0x4002), DPVPN_DIR_IN,
				    DPVPN_SA_F_HOST | DPVPN_SA_F_ROUTE, 3, 0, V4PFX(0, 0),
				    V4PFX(0, 0)), 0);
	assert_int_not_equal(add_sa(RTE_BE32(0x4003), DPVPN_DIR_OUT, DPVPN_SA_F_HOST, 0,
				    IP4(198, 19, 0, 2), V4PFX(0, 0), V4PFX(0, 0)), 0);
	assert_int_not_equal(add_sa(RTE_BE32(0x4004), DPVPN_DIR_IN, 0x4, 0, 0, V4PFX(0, 0),
				    V4PFX(0, 0)), 0);	/* a flag nobody defined */
	assert_int_equal(add_sa(RTE_BE32(0x4005), DPVPN_DIR_IN, DPVPN_SA_F_HOST, 0, 0,
				V4PFX(0, 0), V4PFX(0, 0)), 0);
	assert_int_equal(step_sa_del(RTE_BE32(0x4005), DPVPN_DIR_IN, err, sizeof(err)), 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_route_sa_both_families),
		cmocka_unit_test(test_rpf),
		cmocka_unit_test(test_tunnel_down),
		cmocka_unit_test(test_ecmp),
		cmocka_unit_test(test_refused),
		cmocka_unit_test(test_sa_del_takes_tunif_down),
	};

	return cmocka_run_group_tests_name("tunif", tests, setup, NULL);
}
