/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_vip.c - an HA pair's IPv6 virtual addresses on a port (port.c
 * port_set_vips, arp.c vip_announce_due, nd.c, dp.h dp_port_owns6): VIP_SET's
 * refusals; a held address is the port's (dp_owner6), announced at once by
 * an unsolicited Neighbour Advertisement (to ff02::1, R and O set, S clear,
 * from and for the address, our MAC in a TLLA option, checksum right), then
 * twice more a second apart and no more; a Solicitation for it is answered
 * (S set) while held, and counted as bad-nd once released.  The frames the
 * main lcore sends are taken off worker 0's TX ring; the pool's in-use count
 * comes back to 0.
 */
#include <errno.h>
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
#include <rte_mbuf.h>

#include "dp.h"
#include "port.h"
#include "route.h"

struct dp_state dp;
struct dp_lstats dp_lstats[RTE_MAX_LCORE];

static struct dp_lstats *st;
static const uint8_t own6[16] = { 0x20, 0x01, 0x0d, 0xb8, 0, 0x19, [15] = 0x03 };
static const uint8_t vip6[16] = { 0x20, 0x01, 0x0d, 0xb8, 0, 0x19, [15] = 0x10 };
static const uint8_t host6[16] = { 0x20, 0x01, 0x0d, 0xb8, 0, 0x19, [15] = 0x02 };
static const uint8_t host_mac[6] = { 0x02, 0, 0, 0, 0x0c, 0x02 };

/* NS / NA as on the wire (RFC 4861 4.3, 4.4) with one link-layer address option. */
struct nd_frame {
	struct rte_ether_hdr eth;
	struct rte_ipv6_hdr ip;
	uint8_t type, code;
	rte_be16_t cksum;
	uint8_t flags, reserved[3];
	uint8_t target[16];
	uint8_t opt_type, opt_len, lla[6];
} __rte_packed __rte_aligned(2);
_Static_assert(sizeof(struct nd_frame) == 14 + 40 + 24 + 8, "an NS or NA with one option");

static int
setup(void **state)
{
	char prefix[64];
	char *argv[] = { "test_vip", "--no-huge", "-m", "128", "--no-pci", "-l", "0",
			 "--log-level", "lib.*:error", "--file-prefix", prefix };

	(void)state;
	snprintf(prefix, sizeof(prefix), "test_vip_%d", getpid());
	if (rte_eal_init((int)RTE_DIM(argv), argv) < 0 || dp_meta_init() != 0 ||
	    neigh_init() != 0)
		return -1;
	dp.pool = rte_pktmbuf_pool_create("t", 255, 0, 0, RTE_MBUF_DEFAULT_BUF_SIZE, 0);
	dp.workers[0].main.txq_ring = rte_ring_create("txq", 64, 0, 0);
	st = &dp_lstats[rte_lcore_id()];
	dp.n_ports = 1;
	dp.n_workers = 1;
	dp.ports[0] = (struct dp_port){ .id = 0, .role = DPVPN_ROLE_OUTSIDE, .mtu = 1500,
					.has6 = 1, .prefix6_len = 64,
					.mac = { { 0x02, 0, 0, 0, 0, 0x01 } } };
	memcpy(dp.ports[0].addr6, own6, 16);
	return dp.pool == NULL || dp.workers[0].main.txq_ring == NULL ? -1 : 0;
}

static struct dpvpn_vip_set
vips(uint8_t held6)
{
	struct dpvpn_vip_set v = { .port_id = 0, .held6 = held6 };

	memcpy(v.vip6[0], vip6, 16);
	return v;
}

static int
set(struct dpvpn_vip_set v)
{
	char err[128];

	return port_set_vips(&v, err, sizeof(err));
}

/* The one frame the main lcore sent since the last call, or NULL if none. */
static struct rte_mbuf *
sent(void)
{
	struct rte_mbuf *m = NULL;

	if (rte_ring_dequeue(dp.workers[0].main.txq_ring, (void **)&m) != 0)
		return NULL;
	assert_true(rte_ring_empty(dp.workers[0].main.txq_ring));
	return m;
}

/* m is an NA for vip6 to dst (from vip6, our MAC in TLLA) with flags; freed. */
static void
assert_na(struct rte_mbuf *m, const uint8_t *dst, uint8_t flags)
{
	struct nd_frame *f;

	assert_non_null(m);
	assert_int_equal(rte_pktmbuf_data_len(m), sizeof(*f));
	f = rte_pktmbuf_mtod(m, struct nd_frame *);
	assert_memory_equal(&f->eth.src_addr, &dp.ports[0].mac, 6);
	assert_int_equal(f->ip.hop_limits, 255);
	assert_memory_equal(f->ip.src_addr, vip6, 16);
	assert_memory_equal(f->ip.dst_addr, dst, 16);
	assert_int_equal(f->type, 136);
	assert_int_equal(f->flags, flags);
	assert_memory_equal(f->target, vip6, 16);
	assert_int_equal(f->opt_type, 2);
	assert_memory_equal(f->lla, &dp.ports[0].mac, 6);
	assert_int_equal(rte_ipv6_udptcp_cksum_verify(&f->ip, &f->type), 0);
	rte_pktmbuf_free(m);
}

/* H's solicitation for target into nd_input, as a worker punts it. */
static void
solicit(const uint8_t *target)
{
	struct rte_mbuf *m = rte_pktmbuf_alloc(dp.pool);
	struct nd_frame *f;

	assert_non_null(m);
	f = (struct nd_frame *)rte_pktmbuf_append(m, sizeof(*f));
	memset(f, 0, sizeof(*f));
	f->eth.dst_addr = (struct rte_ether_addr){ { 0x33, 0x33, 0xff, 0, 0, target[15] } };
	memcpy(f->eth.src_addr.addr_bytes, host_mac, 6);
	f->eth.ether_type = RTE_BE16(RTE_ETHER_TYPE_IPV6);
	f->ip.vtc_flow = RTE_BE32(6u << 28);
	f->ip.payload_len = rte_cpu_to_be_16(sizeof(*f) - sizeof(f->eth) - sizeof(f->ip));
	f->ip.proto = IPPROTO_ICMPV6;
	f->ip.hop_limits = 255;
	memcpy(f->ip.src_addr, host6, 16);
	memcpy(f->ip.dst_addr, (uint8_t[16]){ 0xff, 0x02, [11] = 1, 0xff, 0, 0, target[15] }, 16);
	f->type = 135;
	memcpy(f->target, target, 16);
	f->opt_type = 1;
	f->opt_len = 1;
	memcpy(f->lla, host_mac, 6);
	f->cksum = rte_ipv6_udptcp_cksum(&f->ip, &f->type);
	m->port = 0;
	nd_input(m);
}

static void
test_refused(void **state)
{
	struct dpvpn_vip_set v;

	(void)state;
	v = vips(0x2);				/* a bit for no address */
	assert_int_equal(set(v), -EINVAL);
	v = vips(0x10);				/* a bit past vip6[] */
	assert_int_equal(set(v), -EINVAL);
	v = vips(0);
	memcpy(v.vip6[1], vip6, 16);		/* twice */
	assert_int_equal(set(v), -EINVAL);
	v = vips(0);
	memcpy(v.vip6[0], own6, 16);		/* the port's own */
	assert_int_equal(set(v), -EINVAL);
	v = vips(0);
	v.vip6[0][0] = 0xff;			/* multicast */
	assert_int_equal(set(v), -EINVAL);
	v = vips(0);
	memset(v.vip6[0], 0, 16);
	v.vip6[0][15] = 1;			/* ::1 */
	assert_int_equal(set(v), -EINVAL);
	v = vips(0);
	v.reserved[3] = 1;
	assert_int_equal(set(v), -EINVAL);
	assert_int_equal(dp.ports[0].vip6_held, 0);
	assert_null(sent());
}

static void
test_held_announced_answered_released(void **state)
{
	uint64_t hz = rte_get_timer_hz(), now, bad;
	struct rte_mbuf *m;
	static const uint8_t all_nodes[16] = { 0xff, 0x02, [15] = 1 };

	(void)state;
	/* known, not held: not ours, no announcement, no answer */
	assert_int_equal(set(vips(0)), 0);
	assert_false(dp_port_owns6(&dp.ports[0], vip6));
	assert_true(dp_port_vip6(&dp.ports[0], vip6, false));
	assert_null(sent());
	bad = st->drops[DPVPN_DROP_BAD_ND];
	solicit(vip6);
	assert_null(sent());
	assert_int_equal(st->drops[DPVPN_DROP_BAD_ND], bad + 1);

	/* held: ours, announced at once, then twice a second apart */
	assert_int_equal(set(vips(1)), 0);
	assert_true(dp_port_owns6(&dp.ports[0], vip6));
	assert_int_equal(dp_owner6(vip6, NULL), 0);
	assert_na(sent(), all_nodes, 0x80 | 0x20);		/* R, O */
	now = rte_get_timer_cycles();
	vip_announce_due(&dp.ports[0], now);
	assert_null(sent());					/* not a second yet */
	for (int i = 0; i < 2; i++) {
		now += hz + 1;
		vip_announce_due(&dp.ports[0], now);
		assert_na(sent(), all_nodes, 0x80 | 0x20);
	}
	vip_announce_due(&dp.ports[0], now + 5 * hz);
	assert_null(sent());					/* three in all */
	/* the same again: nothing new to announce */
	assert_int_equal(set(vips(1)), 0);
	assert_null(sent());

	solicit(vip6);
	assert_na(sent(), host6, 0x80 | 0x40 | 0x20);		/* R, S, O */
	solicit(own6);						/* the port's own, as before */
	m = sent();
	assert_non_null(m);
	rte_pktmbuf_free(m);

	/* released: not ours, no answer */
	assert_int_equal(set(vips(0)), 0);
	assert_false(dp_port_owns6(&dp.ports[0], vip6));
	assert_int_equal(dp_owner6(vip6, NULL), -1);
	bad = st->drops[DPVPN_DROP_BAD_ND];
	solicit(vip6);
	assert_null(sent());
	assert_int_equal(st->drops[DPVPN_DROP_BAD_ND], bad + 1);
	assert_int_equal(rte_mempool_in_use_count(dp.pool), 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_refused),
		cmocka_unit_test(test_held_announced_answered_released),
	};

	return cmocka_run_group_tests(tests, setup, NULL);
}
