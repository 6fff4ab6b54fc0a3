/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_neighq.c - the packets a worker holds while a next hop is resolved
 * (neighq.c), with real mbufs from a real mempool and the real neighbour
 * table (route.c) under EAL --no-huge: held and asked for once, asked again
 * while waiting, released in the order held once the table has the MAC
 * (by the poll, or taken by the worker that found it), the queue's and the
 * table's overflow counted as no-neighbour, a next hop that does not answer
 * in NEIGHQ_TRIES seconds counted as neigh-timeout, everything dropped and
 * counted when dp.neigh_gen moves or the worker stops.  After each case the
 * pool's in-use count is back where it was: no held mbuf leaks.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_mbuf.h>

#include "dp.h"
#include "neighq.h"
#include "route.h"

#define POOL	511

struct dp_state dp;
struct dp_lstats dp_lstats[RTE_MAX_LCORE];

static struct dp_lstats *st;
static struct neighq q;
static uint64_t hz, t0;
static unsigned int base;	/* the pool's in-use count before a case */

static const uint8_t GW_B[4] = { 198, 19, 0, 2 };
static const uint8_t GW_B6[16] = { 0x20, 0x01, 0x0d, 0xb8, 0, 0x19, [15] = 2 };
static const struct rte_ether_addr MAC_B = { { 0x02, 0, 0, 0, 0x0b, 0x01 } };

static int
setup(void **state)
{
	char prefix[64];
	char *argv[] = { "test_neighq", "--no-huge", "-m", "128", "--no-pci", "-l", "0",
			 "--log-level", "lib.*:error", "--file-prefix", prefix };

	(void)state;
	snprintf(prefix, sizeof(prefix), "test_neighq_%d", getpid());
	if (rte_eal_init((int)RTE_DIM(argv), argv) < 0)
		return -1;
	if (dp_meta_init() != 0)
		return -1;
	dp.pool = rte_pktmbuf_pool_create("t", POOL, 0, 0, RTE_MBUF_DEFAULT_BUF_SIZE, 0);
	st = &dp_lstats[rte_lcore_id()];
	hz = rte_get_timer_hz();
	t0 = rte_get_timer_cycles();
	return dp.pool == NULL || neigh_init() != 0 ? -1 : 0;
}

static int
before(void **state)
{
	(void)state;
	memset(&q, 0, sizeof(q));
	memset(st, 0, sizeof(*st));
	base = rte_mempool_in_use_count(dp.pool);
	return 0;
}

/* Every case ends with nothing held and the pool as it was. */
static int
after(void **state)
{
	(void)state;
	neighq_flush(&q, st, DPVPN_DROP_NO_NEIGH);
	assert_int_equal(q.held, 0);
	assert_int_equal(rte_mempool_in_use_count(dp.pool), base);
	return 0;
}

/* A frame as worker_tx holds it: Ethernet header (no destination yet), then i. */
static struct rte_mbuf *
frame(uint8_t i)
{
	struct rte_mbuf *m = rte_pktmbuf_alloc(dp.pool);
	uint8_t *d;

	assert_non_null(m);
	d = (uint8_t *)rte_pktmbuf_append(m, sizeof(struct rte_ether_hdr) + 20);
	memset(d, 0, sizeof(struct rte_ether_hdr) + 20);
	d[sizeof(struct rte_ether_hdr)] = i;
	return m;
}

static uint8_t
tag(const struct rte_mbuf *m)
{
	return rte_pktmbuf_mtod(m, const uint8_t *)[sizeof(struct rte_ether_hdr)];
}

static void
resolve(uint16_t port, uint8_t family, const void *addr)
{
	assert_int_equal(neigh_set(port, family, addr, &MAC_B, false), 0);
}

/* The frames out[0..n) are tags first.. in order, to MAC_B on port; then freed. */
static void
check_sent(struct rte_mbuf **out, uint16_t n, uint8_t first, uint16_t port)
{
	for (uint16_t i = 0; i < n; i++) {
		const struct rte_ether_hdr *eth = rte_pktmbuf_mtod(out[i], struct rte_ether_hdr *);

		assert_int_equal(tag(out[i]), first + i);
		assert_true(rte_is_same_ether_addr(&eth->dst_addr, &MAC_B));
		assert_int_equal(out[i]->port, port);
	}
	rte_pktmbuf_free_bulk(out, n);
}

static void
test_held_asked_released_in_order(void **state)
{
	static const uint8_t addr[4] = { 198, 19, 0, 12 };
	struct rte_mbuf *out[NEIGHQ_MAX];
	struct dp_resolve_req asks[NEIGHQ_HOPS];
	uint16_t nasks;

	(void)state;
	/* the first asks, the next ones wait with it */
	assert_true(neighq_hold(&q, st, frame(1), 1, DPVPN_AF_INET, addr, t0));
	assert_false(neighq_hold(&q, st, frame(2), 1, DPVPN_AF_INET, addr, t0));
	assert_false(neighq_hold(&q, st, frame(3), 1, DPVPN_AF_INET, addr, t0 + 1));
	assert_int_equal(q.held, 3);
	assert_int_equal(st->neigh_queued, 3);
	/* unresolved: nothing out; asked again a tenth of a second on, once */
	assert_int_equal(neighq_poll(&q, st, t0 + 1, out, asks, &nasks), 0);
	assert_int_equal(nasks, 0);
	assert_int_equal(neighq_poll(&q, st, t0 + hz / NEIGHQ_ASK_DIV, out, asks, &nasks), 0);
	assert_int_equal(nasks, 1);
	assert_int_equal(asks[0].port, 1);
	assert_int_equal(asks[0].family, DPVPN_AF_INET);
	assert_memory_equal(asks[0].addr, addr, 4);
	assert_int_equal(neighq_poll(&q, st, t0 + hz / NEIGHQ_ASK_DIV + 1, out, asks, &nasks), 0);
	assert_int_equal(nasks, 0);
	/* resolved: all three, in the order held, with the MAC */
	resolve(1, DPVPN_AF_INET, addr);
	assert_int_equal(neighq_poll(&q, st, t0 + hz, out, asks, &nasks), 3);
	check_sent(out, 3, 1, 1);
	assert_int_equal(q.held, 0);
	assert_int_equal(st->drops[DPVPN_DROP_NO_NEIGH] + st->drops[DPVPN_DROP_NEIGH_TIMEOUT], 0);
}

/* The worker found the MAC itself: it takes that next hop's packets, only those. */
static void
test_take_one_next_hop(void **state)
{
	static const uint8_t other[4] = { 198, 19, 0, 13 };
	struct rte_mbuf *out[NEIGHQ_PER_HOP];

	(void)state;
	assert_true(neighq_hold(&q, st, frame(10), 1, DPVPN_AF_INET6, GW_B6, t0));
	assert_true(neighq_hold(&q, st, frame(20), 1, DPVPN_AF_INET, other, t0));
	assert_false(neighq_hold(&q, st, frame(11), 1, DPVPN_AF_INET6, GW_B6, t0));
	/* same bytes, another family or port: other next hops */
	assert_int_equal(neighq_take(&q, 1, DPVPN_AF_INET, GW_B6, &MAC_B, out), 0);
	assert_int_equal(neighq_take(&q, 0, DPVPN_AF_INET6, GW_B6, &MAC_B, out), 0);
	assert_int_equal(neighq_take(&q, 1, DPVPN_AF_INET6, GW_B6, &MAC_B, out), 2);
	check_sent(out, 2, 10, 1);
	assert_int_equal(q.held, 1);
	assert_int_equal(neighq_take(&q, 1, DPVPN_AF_INET6, GW_B6, &MAC_B, out), 0);
}

/* Past NEIGHQ_PER_HOP for one next hop, or NEIGHQ_HOPS next hops: no-neighbour. */
static void
test_overflow_counted(void **state)
{
	uint8_t addr[4] = { 10, 0, 0, 0 };

	(void)state;
	for (uint8_t i = 0; i < NEIGHQ_PER_HOP + 2; i++)
		neighq_hold(&q, st, frame(i), 0, DPVPN_AF_INET, GW_B, t0);
	assert_int_equal(q.held, NEIGHQ_PER_HOP);
	assert_int_equal(st->drops[DPVPN_DROP_NO_NEIGH], 2);
	for (uint8_t h = 1; h < NEIGHQ_HOPS; h++) {
		addr[3] = h;
		assert_true(neighq_hold(&q, st, frame(h), 0, DPVPN_AF_INET, addr, t0));
	}
	assert_int_equal(q.held, NEIGHQ_PER_HOP + NEIGHQ_HOPS - 1);
	/* no slot left: dropped, and the caller still asks for it */
	addr[3] = 200;
	assert_true(neighq_hold(&q, st, frame(99), 0, DPVPN_AF_INET, addr, t0));
	assert_int_equal(st->drops[DPVPN_DROP_NO_NEIGH], 3);
	assert_int_equal(st->neigh_queued, NEIGHQ_PER_HOP + NEIGHQ_HOPS - 1);
}

/* No answer in NEIGHQ_TRIES seconds: neigh-timeout; another next hop still waits. */
static void
test_timeout_counted(void **state)
{
	static const uint8_t late[4] = { 198, 19, 0, 14 };
	struct rte_mbuf *out[NEIGHQ_MAX];
	struct dp_resolve_req asks[NEIGHQ_HOPS];
	uint16_t nasks;

	(void)state;
	neighq_hold(&q, st, frame(1), 1, DPVPN_AF_INET, GW_B, t0);
	neighq_hold(&q, st, frame(2), 1, DPVPN_AF_INET, GW_B, t0);
	neighq_hold(&q, st, frame(3), 1, DPVPN_AF_INET, late, t0 + hz);
	assert_int_equal(neighq_poll(&q, st, t0 + NEIGHQ_TRIES * hz - 1, out, asks, &nasks), 0);
	assert_int_equal(q.held, 3);
	assert_int_equal(neighq_poll(&q, st, t0 + NEIGHQ_TRIES * hz, out, asks, &nasks), 0);
	assert_int_equal(st->drops[DPVPN_DROP_NEIGH_TIMEOUT], 2);
	assert_int_equal(q.held, 1);
	/* the slot is free again: a new packet for it asks anew */
	assert_true(neighq_hold(&q, st, frame(4), 1, DPVPN_AF_INET, GW_B, t0 + 4 * hz));
}

/* A neighbour deleted or a port set (dp.neigh_gen moves): all dropped, counted. */
static void
test_table_change_drops_held(void **state)
{
	struct rte_mbuf *out[NEIGHQ_MAX];
	struct dp_resolve_req asks[NEIGHQ_HOPS];
	uint16_t nasks;

	(void)state;
	neighq_hold(&q, st, frame(1), 1, DPVPN_AF_INET, GW_B, t0);
	neighq_hold(&q, st, frame(2), 0, DPVPN_AF_INET6, GW_B6, t0);
	__atomic_fetch_add(&dp.neigh_gen, 1, __ATOMIC_RELEASE);
	assert_int_equal(neighq_poll(&q, st, t0, out, asks, &nasks), 0);
	assert_int_equal(st->drops[DPVPN_DROP_NO_NEIGH], 2);
	assert_int_equal(q.held, 0);
	/* held after the change: kept */
	neighq_hold(&q, st, frame(3), 1, DPVPN_AF_INET, GW_B, t0);
	assert_int_equal(neighq_poll(&q, st, t0, out, asks, &nasks), 0);
	assert_int_equal(q.held, 1);
}

/* The worker stops: what it holds is dropped under the reason given. */
static void
test_flush_counts_all(void **state)
{
	uint8_t addr[16] = { 0x20, 0x01 };

	(void)state;
	for (uint8_t i = 0; i < 3 * NEIGHQ_PER_HOP; i++) {
		addr[15] = (uint8_t)(i % 3);
		neighq_hold(&q, st, frame(i), 0, DPVPN_AF_INET6, addr, t0);
	}
	assert_int_equal(q.held, 3 * NEIGHQ_PER_HOP);
	neighq_flush(&q, st, DPVPN_DROP_NO_NEIGH);
	assert_int_equal(st->drops[DPVPN_DROP_NO_NEIGH], 3 * NEIGHQ_PER_HOP);
}

int
main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, before, after)
	const struct CMUnitTest tests[] = {
		T(test_held_asked_released_in_order),
		T(test_take_one_next_hop),
		T(test_overflow_counted),
		T(test_timeout_counted),
		T(test_table_change_drops_held),
		T(test_flush_counts_all),
	};
#undef T

	return cmocka_run_group_tests_name("neighq", tests, setup, NULL);
}
