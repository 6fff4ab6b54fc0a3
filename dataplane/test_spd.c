/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_spd.c - the SPD's two lookups answer alike: host policies in
 * spd_host.c's hash beside the wide ones' classifier, against every policy
 * in rte_acl (spd_force_acl: the classifier as it was before the hash).
 * 100 000 random IPv4 policies (host destinations, host sources, both,
 * wide; a few hosts with more policies than a bucket holds) and 100 000
 * packets, most of them inside some policy's selectors; then a tenth of the
 * policies removed by selectors and the policies of a few SAs by slot, and
 * again; then the same over IPv6.  And a policy switch in a batch (a rekey)
 * keeps the old policy selecting until the commit.  Priorities are distinct, so every packet
 * has exactly one right answer.
 */
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>

#include <cmocka.h>

#include <rte_eal.h>
#include <rte_ip.h>
#include <rte_malloc.h>
#include <rte_rcu_qsbr.h>

#include "crypto.h"
#include "dp.h"
#include "sa.h"
#include "spd.h"

struct dp_state dp;
struct dp_lstats dp_lstats[RTE_MAX_LCORE];

#define N_SA	64
#define N_POL	100000
#define N_PKT	100000
#define N_POL6	20000
#define N_PKT6	20000

static struct crypto_mgr *mb;
static struct dpvpn_policy *pol;
static uint8_t (*pkt)[40];		/* IPv4 or IPv6 headers */
static int32_t *with_hosts, *all_acl;
static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint32_t
rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (uint32_t)(rng >> 16);
}

static int
setup(void **state)
{
	char prefix[64];
	char *argv[] = { "test_spd", "--no-huge", "-m", "2048", "--no-pci", "-l", "0",
			 "--log-level", "lib.*:error", "--file-prefix", prefix };

	(void)state;
	snprintf(prefix, sizeof(prefix), "test_spd_%d", getpid());
	if (rte_eal_init((int)RTE_DIM(argv), argv) < 0)
		return -1;
	dp.rcu = rte_zmalloc(NULL, rte_rcu_qsbr_get_memsize(4), 64);
	rte_rcu_qsbr_init(dp.rcu, 4);
	mb = crypto_mgr_create();
	pol = calloc(N_POL, sizeof(*pol));
	pkt = calloc(N_PKT, sizeof(*pkt));
	with_hosts = calloc(N_PKT, sizeof(*with_hosts));
	all_acl = calloc(N_PKT, sizeof(*all_acl));
	if (mb == NULL || pol == NULL || pkt == NULL || with_hosts == NULL || all_acl == NULL ||
	    sa_init(1, 5 * N_SA + 8) || spd_init(N_POL + 16))
		return -1;
	return 0;
}

static void
out_sas(uint32_t base, bool v6)
{
	for (uint32_t i = 0; i < N_SA; i++) {
		struct dpvpn_sa_cfg c = { .dir = DPVPN_DIR_OUT, .alg = DPVPN_ALG_AES128_GCM,
					  .key_len = 16, .replay_window = 64 };
		char err[256];

		c.spi = rte_cpu_to_be_32(base + i);
		c.local.family = c.remote.family = c.local_ts.family = c.remote_ts.family =
			v6 ? DPVPN_AF_INET6 : DPVPN_AF_INET;
		if (v6) {
			c.local.v6[15] = 1;
			c.remote.v6[15] = 2;
		} else {
			c.local.v4 = RTE_BE32(0xc6130001);
			c.remote.v4 = RTE_BE32(0xc6130002);
		}
		snprintf(c.name, sizeof(c.name), "t%u", i);
		assert_int_equal(sa_add(&c, mb, err, sizeof(err)), 0);
	}
}

/* An address of net/len (len bits of net, the rest random); IPv4 in a[0..3]. */
static void
addr_in(uint8_t *a, const uint8_t *net, uint8_t len, bool v6)
{
	unsigned int bytes = v6 ? 16 : 4;

	for (unsigned int i = 0; i < bytes; i++) {
		unsigned int keep = len > i * 8 ? len - i * 8 : 0;
		uint8_t m = keep >= 8 ? 0xff : (uint8_t)(0xff << (8 - keep));

		a[i] = (uint8_t)((net[i] & m) | (rnd() & ~m));
	}
}

/*
 * A random address in a small space (so that policies overlap): IPv4
 * 10.0.0.0/14, IPv6 2001:db8::/112.
 */
static void
space_addr(uint8_t *a, bool v6)
{
	static const uint8_t net4[4] = { 10, 0, 0, 0 };
	static const uint8_t net6[16] = { 0x20, 0x01, 0x0d, 0xb8 };

	addr_in(a, v6 ? net6 : net4, v6 ? 112 : 14, v6);
}

static uint8_t *
pfx_bytes(struct dpvpn_prefix *p)
{
	return p->family == DPVPN_AF_INET6 ? p->v6 : (uint8_t *)&p->v4;
}

/* Policy i: host destination (6 in 10), host source (2), both (1), wide (1). */
static void
make_policy(struct dpvpn_policy *p, uint32_t i, const uint32_t *prio, bool v6, uint32_t spi0)
{
	uint8_t full = v6 ? 128 : 32, kind = (uint8_t)(rnd() % 10);
	uint8_t wide_min = v6 ? 96 : 8;

	memset(p, 0, sizeof(*p));
	p->src.family = p->dst.family = v6 ? DPVPN_AF_INET6 : DPVPN_AF_INET;
	p->priority = prio[i];
	p->spi = rte_cpu_to_be_32(spi0 + rnd() % N_SA);
	space_addr(pfx_bytes(&p->src), v6);
	space_addr(pfx_bytes(&p->dst), v6);
	p->dst.len = kind <= 5 || kind == 8 ? full :
		     (uint8_t)(wide_min + rnd() % (full - wide_min));
	p->src.len = kind == 6 || kind == 7 || kind == 8 ? full :
		     (uint8_t)((v6 ? 96 : 0) + rnd() % (full - (v6 ? 96 : 0)));
	if (i % 1000 == 999 && i >= 8) {	/* more policies to one host than a bucket holds */
		p->dst = pol[i - 1 - rnd() % 8].dst;
		p->dst.len = full;
	}
	if (i % 100 == 50) {		/* an earlier one's selectors again (another SA's) */
		const struct dpvpn_policy *q = &pol[i - 1 - rnd() % 40];

		p->src = q->src;
		p->dst = q->dst;
	}
}

static void
make_packet(uint8_t *h, const struct dpvpn_policy *p, bool v6)
{
	uint8_t *src, *dst;

	memset(h, 0, 40);
	if (v6) {
		struct rte_ipv6_hdr *ip = (struct rte_ipv6_hdr *)h;

		ip->vtc_flow = rte_cpu_to_be_32(6u << 28);
		src = ip->src_addr;
		dst = ip->dst_addr;
	} else {
		struct rte_ipv4_hdr *ip = (struct rte_ipv4_hdr *)h;

		ip->version_ihl = RTE_IPV4_VHL_DEF;
		src = (uint8_t *)&ip->src_addr;
		dst = (uint8_t *)&ip->dst_addr;
	}
	if (p == NULL) {
		space_addr(src, v6);
		space_addr(dst, v6);
		return;
	}
	addr_in(src, v6 ? p->src.v6 : (const uint8_t *)&p->src.v4, p->src.len, v6);
	addr_in(dst, v6 ? p->dst.v6 : (const uint8_t *)&p->dst.v4, p->dst.len, v6);
}

/* Every packet through spd_classify in bursts, and through a flow cache (IPv4). */
static void
classify_all(int32_t *out, uint32_t n)
{
	static struct spd_cache cache;
	int32_t cached[DP_BURST];

	for (uint32_t i = 0; i < n; i += DP_BURST) {
		const uint8_t *h[DP_BURST];
		uint32_t k = RTE_MIN((uint32_t)DP_BURST, n - i);

		for (uint32_t j = 0; j < k; j++)
			h[j] = pkt[i + j];
		spd_classify(spd_get(), h, out + i, k);
		spd_classify_flows(&cache, h, cached, k);
		for (uint32_t j = 0; j < k; j++)
			assert_int_equal(cached[j], out[i + j]);
	}
}

/* Both ways alike; returns how many packets some policy took. */
static uint32_t
compare(uint32_t n)
{
	char err[256];
	uint32_t matched = 0;

	classify_all(with_hosts, n);
	spd_force_acl(true);
	assert_int_equal(spd_commit(err, sizeof(err)), 0);
	classify_all(all_acl, n);
	spd_force_acl(false);
	assert_int_equal(spd_commit(err, sizeof(err)), 0);
	for (uint32_t i = 0; i < n; i++) {
		if (with_hosts[i] != all_acl[i])
			fail_msg("packet %u: %d with the host table, %d from rte_acl alone", i,
				 with_hosts[i], all_acl[i]);
		matched += with_hosts[i] >= 0;
	}
	return matched;
}

/* A policy's selectors, masked: equal keys, the same policy for POLICY_DEL. */
struct sel {
	uint8_t family, src_len, dst_len, pad;
	uint8_t src[16], dst[16];
};

static void
sel_of(const struct dpvpn_policy *p, struct sel *k)
{
	memset(k, 0, sizeof(*k));
	k->family = p->src.family;
	k->src_len = p->src.len;
	k->dst_len = p->dst.len;
	if (p->src.family == DPVPN_AF_INET6) {
		memcpy(k->src, p->src.v6, 16);
		memcpy(k->dst, p->dst.v6, 16);
		dp_mask6(k->src, p->src.len);
		dp_mask6(k->dst, p->dst.len);
	} else {
		uint32_t a = p->src.v4 & dp_mask(p->src.len), b = p->dst.v4 & dp_mask(p->dst.len);

		memcpy(k->src, &a, 4);
		memcpy(k->dst, &b, 4);
	}
}

static int
sel_cmp(const void *a, const void *b)
{
	return memcmp(a, b, sizeof(struct sel));
}

/*
 * After POLICY_DEL of every tenth policy: exactly the policies with those
 * selectors are gone (every SA's, as the old scan removed them), no other.
 */
static void
check_removed_by_selectors(uint32_t npol, unsigned int before)
{
	uint32_t nr = 0, gone = 0;
	struct sel *rk = malloc((npol / 10 + 1) * sizeof(*rk)), k;
	struct dpvpn_policy p;

	assert_non_null(rk);
	for (uint32_t i = 0; i < npol; i += 10)
		sel_of(&pol[i], &rk[nr++]);
	qsort(rk, nr, sizeof(*rk), sel_cmp);
	for (uint32_t i = 0; i < npol; i++) {
		sel_of(&pol[i], &k);
		gone += bsearch(&k, rk, nr, sizeof(*rk), sel_cmp) != NULL;
	}
	assert_int_equal(spd_count(), before + npol - gone);
	for (unsigned int i = 0; spd_info(i, &p); i++) {
		sel_of(&p, &k);
		if (bsearch(&k, rk, nr, sizeof(*rk), sel_cmp) != NULL)
			fail_msg("entry %u: its selectors were removed, it is still there", i);
	}
	free(rk);
}

static void
random_policies(bool v6, uint32_t npol, uint32_t npkt, uint32_t spi0)
{
	uint32_t *prio = malloc(npol * sizeof(*prio)), matched, before = spd_count();
	char err[256];

	assert_non_null(prio);
	out_sas(spi0, v6);
	for (uint32_t i = 0; i < npol; i++)	/* distinct priorities, in random order */
		prio[i] = i;
	for (uint32_t i = npol - 1; i > 0; i--) {
		uint32_t j = rnd() % (i + 1), t = prio[i];

		prio[i] = prio[j];
		prio[j] = t;
	}
	spd_begin();
	for (uint32_t i = 0; i < npol; i++) {
		make_policy(&pol[i], i, prio, v6, spi0);
		assert_int_equal(spd_add(&pol[i], err, sizeof(err)), 0);
	}
	assert_int_equal(spd_commit(err, sizeof(err)), 0);
	assert_int_equal(spd_count(), before + npol);
	for (uint32_t i = 0; i < npkt; i++)
		make_packet(pkt[i], rnd() % 10 < 7 ? &pol[rnd() % npol] : NULL, v6);
	matched = compare(npkt);
	print_message("IPv%c: %u policies, %u packets, %u taken by a policy: alike\n",
		      v6 ? '6' : '4', npol, npkt, matched);
	assert_true(matched > npkt / 2);

	/* a tenth removed by selectors, in a batch (host ones go at once,
	 * the classifier is built once at the commit) */
	spd_begin();
	for (uint32_t i = 0; i < npol; i += 10) {
		int rc = spd_del(&pol[i], err, sizeof(err));

		assert_true(rc == 0 || rc == -ENOENT);	/* gone already with a twin */
	}
	assert_int_equal(spd_commit(err, sizeof(err)), 0);
	check_removed_by_selectors(npol, before);
	/* and every policy of four SAs, by slot, as an SA removal does */
	for (uint32_t i = 0; i < 4; i++)
		assert_int_equal(spd_del_slot((uint32_t)sa_find(rte_cpu_to_be_32(spi0 + i),
								   DPVPN_DIR_OUT), err, sizeof(err)), 0);
	matched = compare(npkt);
	print_message("IPv%c: after removals, %u policies left, %u packets taken: alike\n",
		      v6 ? '6' : '4', spd_count() - before, matched);
	assert_true(matched > npkt / 4);
	for (uint32_t i = 0; i < N_SA; i++)	/* the rest, for the next family */
		assert_int_equal(spd_del_slot((uint32_t)sa_find(rte_cpu_to_be_32(spi0 + i),
								   DPVPN_DIR_OUT), err, sizeof(err)), 0);
	assert_int_equal(spd_count(), before);
	free(prio);
}

static void
test_random_ipv4(void **state)
{
	(void)state;
	random_policies(false, N_POL, N_PKT, 0x10000);
}

static void
test_random_ipv6(void **state)
{
	(void)state;
	random_policies(true, N_POL6, N_PKT6, 0x20000);
}

static int32_t
slot_of(uint32_t spi)
{
	return sa_find(rte_cpu_to_be_32(spi), DPVPN_DIR_OUT);
}

static int32_t
classify_one(const char *src, const char *dst)
{
	struct rte_ipv4_hdr ip = { .version_ihl = RTE_IPV4_VHL_DEF };
	const uint8_t *h = (const uint8_t *)&ip;
	int32_t slot;

	inet_pton(AF_INET, src, &ip.src_addr);
	inet_pton(AF_INET, dst, &ip.dst_addr);
	spd_classify(spd_get(), &h, &slot, 1);
	return slot;
}

/*
 * dpvpnd's policy switch (a rekey): the old policy removed and the same
 * selectors added for the new SA in one batch; the old one selects until
 * the commit, the new one after it; an SA removed inside the batch takes
 * its policies at once, deferred or not.
 */
static void
test_policy_switch_in_a_batch(void **state)
{
	struct dpvpn_policy p = { .src.len = 24, .dst.len = 32, .priority = 100 };
	char err[256];

	(void)state;
	out_sas(0x30000, false);
	p.src.family = p.dst.family = DPVPN_AF_INET;
	inet_pton(AF_INET, "10.1.0.0", &p.src.v4);
	inet_pton(AF_INET, "10.64.0.9", &p.dst.v4);
	p.spi = rte_cpu_to_be_32(0x30000);
	assert_int_equal(spd_add(&p, err, sizeof(err)), 0);
	assert_int_equal(classify_one("10.1.0.5", "10.64.0.9"), slot_of(0x30000));
	spd_begin();
	assert_int_equal(spd_del(&p, err, sizeof(err)), 0);
	p.spi = rte_cpu_to_be_32(0x30001);
	assert_int_equal(spd_add(&p, err, sizeof(err)), 0);
	assert_int_equal(classify_one("10.1.0.5", "10.64.0.9"), slot_of(0x30000));
	assert_int_equal(spd_commit(err, sizeof(err)), 0);
	assert_int_equal(classify_one("10.1.0.5", "10.64.0.9"), slot_of(0x30001));
	assert_int_equal(spd_count(), 1);
	/* again, and the old SA goes before the commit */
	spd_begin();
	assert_int_equal(spd_del(&p, err, sizeof(err)), 0);
	p.spi = rte_cpu_to_be_32(0x30002);
	assert_int_equal(spd_add(&p, err, sizeof(err)), 0);
	assert_int_equal(spd_del_slot((uint32_t)slot_of(0x30001), err, sizeof(err)), 0);
	assert_int_equal(classify_one("10.1.0.5", "10.64.0.9"), slot_of(0x30002));
	assert_int_equal(spd_commit(err, sizeof(err)), 0);
	assert_int_equal(classify_one("10.1.0.5", "10.64.0.9"), slot_of(0x30002));
	assert_int_equal(classify_one("10.1.1.5", "10.64.0.9"), -1);
	assert_int_equal(spd_del_slot((uint32_t)slot_of(0x30002), err, sizeof(err)), 0);
	assert_int_equal(classify_one("10.1.0.5", "10.64.0.9"), -1);
	assert_int_equal(spd_count(), 0);
}

/*
 * The classifier built in the background (issue 28): policies added and
 * removed in rounds, by one and in batches, by selectors and by SA, while
 * a base is being built, held done but not yet swapped in, swapped in, and
 * settled; at each of those moments every packet must get what a plain
 * reading of the live policies says (the matching policy of the lowest
 * priority value: priorities are distinct), through spd_classify and a flow
 * cache.  Packets are aimed at removed policies too, so answers from rules
 * marked dead in a base are checked.
 */
#define OFF_ROUNDS	8
#define OFF_PKT		1500

static bool *live;
static int32_t sa_slot_of[N_SA];

static bool
pol_match(const struct dpvpn_policy *p, const uint8_t *h, bool v6)
{
	if (v6) {
		const struct rte_ipv6_hdr *ip = (const struct rte_ipv6_hdr *)h;
		uint8_t s6[16], d6[16];

		memcpy(s6, p->src.v6, 16);
		memcpy(d6, p->dst.v6, 16);
		dp_mask6(s6, p->src.len);
		dp_mask6(d6, p->dst.len);
		return dp_in_prefix6(ip->src_addr, s6, p->src.len) &&
		       dp_in_prefix6(ip->dst_addr, d6, p->dst.len);
	}
	const struct rte_ipv4_hdr *ip = (const struct rte_ipv4_hdr *)h;

	return ((ip->src_addr ^ p->src.v4) & dp_mask(p->src.len)) == 0 &&
	       ((ip->dst_addr ^ p->dst.v4) & dp_mask(p->dst.len)) == 0;
}

/* What the live policies among the first n say for packet h. */
static int32_t
oracle(const uint8_t *h, uint32_t n, uint32_t spi0, bool v6)
{
	uint32_t best = UINT32_MAX;
	int32_t slot = -1;

	for (uint32_t i = 0; i < n; i++)
		if (live[i] && pol[i].priority < best && pol_match(&pol[i], h, v6)) {
			best = pol[i].priority;
			slot = sa_slot_of[rte_be_to_cpu_32(pol[i].spi) - spi0];
		}
	return slot;
}

static struct spd_build_stats seen;

/* Packets at the first n policies (live or not) and at random: as the oracle says. */
static void
check_against_oracle(uint32_t n, uint32_t spi0, bool v6, const char *when)
{
	static struct spd_cache cache;
	struct spd_build_stats st;

	spd_get_build_stats(&st);
	seen.delta = RTE_MAX(seen.delta, st.delta);
	seen.dead = RTE_MAX(seen.dead, st.dead);
	seen.in_flight |= st.in_flight && st.delta > 0 && st.dead > 0;
	for (uint32_t i = 0; i < OFF_PKT; i += DP_BURST) {
		const uint8_t *h[DP_BURST];
		int32_t got[DP_BURST], cached[DP_BURST];

		for (uint32_t j = 0; j < DP_BURST; j++) {
			uint32_t r = rnd() % 10, recent = RTE_MIN(n, 1000u);

			/* at any policy, at the recent ones (in a delta), or at random */
			make_packet(pkt[i + j], r < 4 ? &pol[rnd() % n] :
				    r < 8 ? &pol[n - 1 - rnd() % recent] : NULL, v6);
			h[j] = pkt[i + j];
		}
		spd_classify(spd_get(), h, got, DP_BURST);
		spd_classify_flows(&cache, h, cached, DP_BURST);
		for (uint32_t j = 0; j < DP_BURST; j++) {
			int32_t want = oracle(h[j], n, spi0, v6);

			if (got[j] != want || cached[j] != want)
				fail_msg("%s: packet %u: %d (cached %d), the policies say %d "
					 "(delta %u, dead %u, build in flight %d)", when, i + j,
					 got[j], cached[j], want, st.delta, st.dead, st.in_flight);
		}
	}
}

/* Every live policy among the first n with p's selectors is gone (POLICY_DEL). */
static void
oracle_del_sel(const struct dpvpn_policy *p, uint32_t n)
{
	struct sel a, b;

	sel_of(p, &a);
	for (uint32_t i = 0; i < n; i++) {
		sel_of(&pol[i], &b);
		if (live[i] && memcmp(&a, &b, sizeof(a)) == 0)
			live[i] = false;
	}
}

/* One round: adds (one by one or in a batch), removals by selectors and by SA. */
static void
off_path_round(uint32_t *n, uint32_t add, const uint32_t *prio, uint32_t spi0, bool v6,
	       bool batch)
{
	char err[256];

	if (batch)
		spd_begin();
	for (uint32_t k = 0; k < add; k++, (*n)++) {
		make_policy(&pol[*n], *n, prio, v6, spi0);
		assert_int_equal(spd_add(&pol[*n], err, sizeof(err)), 0);
		live[*n] = true;
	}
	if (batch)
		assert_int_equal(spd_commit(err, sizeof(err)), 0);
	for (uint32_t k = 0; k < add / 8; k++) {	/* some by selectors, half of them new */
		uint32_t j = k % 2 ? rnd() % *n : *n - 1 - rnd() % add;

		if (!live[j])
			continue;
		assert_int_equal(spd_del(&pol[j], err, sizeof(err)), 0);
		oracle_del_sel(&pol[j], *n);
	}
	uint32_t x = rnd() % N_SA;		/* and one SA's, as its removal does */

	assert_int_equal(spd_del_slot((uint32_t)sa_slot_of[x], err, sizeof(err)), 0);
	for (uint32_t i = 0; i < *n; i++)
		if (rte_be_to_cpu_32(pol[i].spi) - spi0 == x)
			live[i] = false;
}

/* The main lcore's loop until the build in flight has gone in (bounded: 10 s). */
static void
swapped_in(void)
{
	struct spd_build_stats a, b;

	spd_get_build_stats(&a);
	for (int i = 0; i < 10000 && a.in_flight; i++) {
		spd_poll();
		spd_get_build_stats(&b);
		if (b.adopted + b.failed != a.adopted + a.failed)
			return;
		usleep(1000);
	}
	assert_false(a.in_flight);
}

static void
off_path(bool v6, uint32_t npol, uint32_t spi0)
{
	uint32_t *prio = malloc(npol * sizeof(*prio)), n = 0, step = npol / OFF_ROUNDS;
	struct spd_build_stats st0, st;
	char err[256];

	assert_non_null(prio);
	live = calloc(npol, sizeof(*live));
	assert_non_null(live);
	memset(&seen, 0, sizeof(seen));
	spd_get_build_stats(&st0);
	out_sas(spi0, v6);
	for (uint32_t i = 0; i < N_SA; i++)
		sa_slot_of[i] = sa_find(rte_cpu_to_be_32(spi0 + i), DPVPN_DIR_OUT);
	for (uint32_t i = 0; i < npol; i++)
		prio[i] = i;
	for (uint32_t i = npol - 1; i > 0; i--) {
		uint32_t j = rnd() % (i + 1), t = prio[i];

		prio[i] = prio[j];
		prio[j] = t;
	}
	for (uint32_t r = 0; r < OFF_ROUNDS; r++) {
		/* a base in flight, done but held: changes made meanwhile are
		 * folded into it when it goes in */
		spd_hold_builds(true);
		off_path_round(&n, step / 2, prio, spi0, v6, r % 2 == 0);
		check_against_oracle(n, spi0, v6, "after changes");
		off_path_round(&n, step / 2 - step / 8, prio, spi0, v6, false);
		check_against_oracle(n, spi0, v6, "more changes, a build held");
		spd_hold_builds(false);
		swapped_in();
		check_against_oracle(n, spi0, v6, "the held build swapped in");
		off_path_round(&n, step / 8, prio, spi0, v6, true);
		check_against_oracle(n, spi0, v6, "a batch more");
		spd_settle();
		check_against_oracle(n, spi0, v6, "settled");
	}
	spd_get_build_stats(&st);
	print_message("IPv%c: %u policies in %u rounds: %" PRIu64 " builds in the background "
		      "(the last %u rules, %" PRIu64 " us), %" PRIu64 " on the main lcore; up to "
		      "%u rules in a delta and %u dead in a base: as the policies say\n",
		      v6 ? '6' : '4', n, OFF_ROUNDS, st.adopted - st0.adopted, st.last_rules,
		      st.last_build_us, st.sync_builds - st0.sync_builds, seen.delta, seen.dead);
	assert_true(st.adopted - st0.adopted >= OFF_ROUNDS);	/* the path under test ran */
	assert_true(seen.delta > 0 && seen.dead > 0 && seen.in_flight);
	assert_int_equal(st.failed, st0.failed);
	for (uint32_t i = 0; i < N_SA; i++)
		assert_int_equal(spd_del_slot((uint32_t)sa_slot_of[i], err, sizeof(err)), 0);
	spd_settle();
	assert_int_equal(spd_count(), 0);
	free(live);
	free(prio);
}

static void
test_off_path_ipv4(void **state)
{
	(void)state;
	off_path(false, 12000, 0x40000);
}

static void
test_off_path_ipv6(void **state)
{
	(void)state;
	off_path(true, 4000, 0x50000);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_random_ipv4),
		cmocka_unit_test(test_random_ipv6),
		cmocka_unit_test(test_policy_switch_in_a_batch),
		cmocka_unit_test(test_off_path_ipv4),
		cmocka_unit_test(test_off_path_ipv6),
	};

	return cmocka_run_group_tests(tests, setup, NULL);
}
