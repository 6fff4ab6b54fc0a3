/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_ike_pool.c - virtual IP pools (ike_pool.h): every address of a /24
 * leased once and in order, exhaustion refused and counted, release and
 * reuse by identity (strongSwan's offline leases), the oldest offline lease
 * taken over, /31 /32 /128 and IPv6 /120 and /64, bad prefixes.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include <cmocka.h>

#include "ike_pool.h"

static struct ike_pool *
pool(int family, const char *prefix, unsigned plen)
{
	uint8_t a[16];
	char err[128];
	struct ike_pool *p;

	assert_int_equal(inet_pton(family, prefix, a), 1);
	p = ike_pool_new(family, a, plen, err, sizeof(err));
	assert_non_null(p);
	return p;
}

static const char *
ntop(int family, const uint8_t *a)
{
	static char s[INET6_ADDRSTRLEN];

	return inet_ntop(family, a, s, sizeof(s));
}

static void
lease_id(struct ike_pool *p, const char *id, uint8_t *a)
{
	assert_int_equal(ike_pool_lease(p, id, strlen(id), a), 0);
}

static void
expect_lease(struct ike_pool *p, int family, const char *id, const char *want)
{
	uint8_t a[16];

	lease_id(p, id, a);
	assert_string_equal(ntop(family, a), want);
}

static void
test_v4_24_all_then_exhausted(void **state)
{
	struct ike_pool *p = pool(AF_INET, "10.10.0.0", 24);
	struct ike_pool_stats st;
	uint8_t a[4], seen[256] = { 0 };
	char id[32];

	(void)state;
	ike_pool_stats(p, &st);
	assert_int_equal(st.size, 254);		/* .0 and .255 left out */
	for (unsigned i = 0; i < 254; i++) {
		snprintf(id, sizeof(id), "client-%u", i);
		lease_id(p, id, a);
		assert_int_equal(a[0], 10);
		assert_int_equal(a[2], 0);
		assert_int_equal(a[3], i + 1);	/* in order, from .1 */
		assert_int_equal(seen[a[3]]++, 0);
	}
	assert_int_equal(ike_pool_lease(p, "one-more", 8, a), -ENOSPC);
	assert_int_equal(ike_pool_lease(p, "client-3", 8, a), -ENOSPC);	/* online: no second */
	ike_pool_stats(p, &st);
	assert_int_equal(st.leased, 254);
	assert_int_equal(st.exhausted, 2);
	/* one back: the next client gets it (the owner's offline lease is taken) */
	inet_pton(AF_INET, "10.10.0.8", a);
	assert_int_equal(ike_pool_release(p, a), 0);
	assert_int_equal(ike_pool_release(p, a), -ENOENT);	/* not online any more */
	expect_lease(p, AF_INET, "newcomer", "10.10.0.8");
	ike_pool_stats(p, &st);
	assert_int_equal(st.leased, 254);
	assert_int_equal(st.offline, 0);
	assert_int_equal(st.exhausted, 2);
	ike_pool_free(p);
}

static void
test_reuse_by_identity(void **state)
{
	struct ike_pool *p = pool(AF_INET, "10.10.0.0", 29);	/* .1 .. .6 */
	struct ike_pool_stats st;
	uint8_t a[4], b[4];

	(void)state;
	lease_id(p, "alice", a);
	lease_id(p, "bob", b);
	assert_string_equal(ntop(AF_INET, a), "10.10.0.1");
	assert_int_equal(ike_pool_release(p, a), 0);
	assert_int_equal(ike_pool_release(p, b), 0);
	/* never-used addresses go to newcomers while alice's and bob's wait for them */
	expect_lease(p, AF_INET, "carol", "10.10.0.3");
	expect_lease(p, AF_INET, "bob", "10.10.0.2");
	expect_lease(p, AF_INET, "alice", "10.10.0.1");
	/* alice online twice (same certificate, two devices): a second address */
	expect_lease(p, AF_INET, "alice", "10.10.0.4");
	expect_lease(p, AF_INET, "dave", "10.10.0.5");
	expect_lease(p, AF_INET, "erin", "10.10.0.6");
	ike_pool_stats(p, &st);
	assert_int_equal(st.leased, 6);
	/* full: releases make offline leases, the oldest is taken first by strangers */
	inet_pton(AF_INET, "10.10.0.5", a);
	assert_int_equal(ike_pool_release(p, a), 0);	/* dave, oldest */
	inet_pton(AF_INET, "10.10.0.2", a);
	assert_int_equal(ike_pool_release(p, a), 0);	/* bob */
	expect_lease(p, AF_INET, "frank", "10.10.0.5");	/* dave's, the oldest */
	expect_lease(p, AF_INET, "dave", "10.10.0.2");	/* dave's gone: bob's */
	assert_int_equal(ike_pool_lease(p, "bob", 3, a), -ENOSPC);
	/* addresses outside the pool, or never leased, are not released */
	inet_pton(AF_INET, "10.10.0.7", a);		/* broadcast */
	assert_int_equal(ike_pool_release(p, a), -ENOENT);
	inet_pton(AF_INET, "10.10.0.0", a);
	assert_int_equal(ike_pool_release(p, a), -ENOENT);
	inet_pton(AF_INET, "10.11.0.1", a);
	assert_int_equal(ike_pool_release(p, a), -ENOENT);
	assert_true(ike_pool_contains(p, (const uint8_t *)"\x0a\x0a\x00\x07"));
	assert_false(ike_pool_contains(p, (const uint8_t *)"\x0a\x0a\x00\x08"));
	ike_pool_free(p);
}

static void
test_edges(void **state)
{
	struct ike_pool *p;
	struct ike_pool_stats st;
	uint8_t a[16];

	(void)state;
	p = pool(AF_INET, "192.0.2.7", 32);		/* one address, itself */
	expect_lease(p, AF_INET, "x", "192.0.2.7");
	assert_int_equal(ike_pool_lease(p, "y", 1, a), -ENOSPC);
	ike_pool_free(p);
	p = pool(AF_INET, "192.0.2.6", 31);		/* both, no network/broadcast */
	expect_lease(p, AF_INET, "x", "192.0.2.6");
	expect_lease(p, AF_INET, "y", "192.0.2.7");
	assert_int_equal(ike_pool_lease(p, "z", 1, a), -ENOSPC);
	ike_pool_free(p);
	p = pool(AF_INET6, "2001:db8::5", 128);
	expect_lease(p, AF_INET6, "x", "2001:db8::5");
	assert_int_equal(ike_pool_lease(p, "y", 1, a), -ENOSPC);
	inet_pton(AF_INET6, "2001:db8::5", a);
	assert_int_equal(ike_pool_release(p, a), 0);
	expect_lease(p, AF_INET6, "y", "2001:db8::5");
	ike_pool_free(p);
	p = pool(AF_INET6, "fd00:10::100", 120);	/* ::101 .. ::1fe */
	ike_pool_stats(p, &st);
	assert_int_equal(st.size, 254);
	expect_lease(p, AF_INET6, "a", "fd00:10::101");
	for (unsigned i = 1; i < 253; i++) {
		char id[16];

		snprintf(id, sizeof(id), "c%u", i);
		lease_id(p, id, a);
	}
	expect_lease(p, AF_INET6, "last", "fd00:10::1fe");
	assert_int_equal(ike_pool_lease(p, "z", 1, a), -ENOSPC);
	ike_pool_free(p);
	/* a /64 is capped at IKE_POOL_MAX addresses from ::1 */
	p = pool(AF_INET6, "2001:db8:1:2::", 64);
	ike_pool_stats(p, &st);
	assert_int_equal(st.size, IKE_POOL_MAX);
	expect_lease(p, AF_INET6, "a", "2001:db8:1:2::1");
	inet_pton(AF_INET6, "2001:db8:1:2::1:1", a);	/* offset 65536: past the cap */
	assert_int_equal(ike_pool_release(p, a), -ENOENT);
	assert_true(ike_pool_contains(p, a));
	ike_pool_free(p);
	/* identities too long to remember are refused, an empty one is fine */
	p = pool(AF_INET, "10.0.0.0", 30);
	{
		static uint8_t big[IKE_POOL_ID_MAX + 1];

		assert_int_equal(ike_pool_lease(p, big, sizeof(big), a), -EINVAL);
		assert_int_equal(ike_pool_lease(p, big, sizeof(big) - 1, a), 0);
		assert_int_equal(ike_pool_lease(p, "", 0, a), 0);
		assert_string_equal(ntop(AF_INET, a), "10.0.0.2");
	}
	ike_pool_free(p);
}

static void
test_bad_prefix(void **state)
{
	uint8_t a[16];
	char err[128];

	(void)state;
	inet_pton(AF_INET, "10.10.0.1", a);
	assert_null(ike_pool_new(AF_INET, a, 24, err, sizeof(err)));
	assert_string_equal(err, "pool: host bits set beyond /24");
	assert_null(ike_pool_new(AF_INET, a, 33, err, sizeof(err)));
	assert_string_equal(err, "pool: prefix length 33, at most 32");
	assert_null(ike_pool_new(AF_UNIX, a, 8, err, sizeof(err)));
	ike_pool_free(NULL);
}

/* ike_pool_lease_at: an IKE SA taken up again after a restart keeps its address. */
static void
test_lease_at(void **state)
{
	struct ike_pool *p = pool(AF_INET, "10.9.0.0", 29);	/* .1 .. .6 */
	struct ike_pool_stats st;
	uint8_t a[4];

	(void)state;
	assert_int_equal(inet_pton(AF_INET, "10.9.0.3", a), 1);
	assert_int_equal(ike_pool_lease_at(p, "carol", 5, a), 0);
	assert_int_equal(ike_pool_lease_at(p, "dave", 4, a), -EBUSY);	/* online */
	/* new leases go round it: .1, .2, then .4 */
	expect_lease(p, AF_INET, "x", "10.9.0.1");
	expect_lease(p, AF_INET, "y", "10.9.0.2");
	expect_lease(p, AF_INET, "z", "10.9.0.4");
	/* released, carol gets .3 back as from any lease */
	assert_int_equal(ike_pool_release(p, a), 0);
	expect_lease(p, AF_INET, "carol", "10.9.0.3");
	assert_int_equal(ike_pool_release(p, a), 0);
	/* an offline lease of another identity is taken by lease_at */
	assert_int_equal(ike_pool_lease_at(p, "dave", 4, a), 0);
	expect_lease(p, AF_INET, "carol", "10.9.0.5");		/* .3 is dave's now */
	ike_pool_stats(p, &st);
	assert_int_equal(st.leased, 5);
	assert_int_equal(st.offline, 0);
	assert_int_equal(inet_pton(AF_INET, "10.9.0.7", a), 1);	/* broadcast: not one */
	assert_int_equal(ike_pool_lease_at(p, "e", 1, a), -EINVAL);
	ike_pool_free(p);
}

int main(void)
{
	static const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_v4_24_all_then_exhausted),
		cmocka_unit_test(test_reuse_by_identity),
		cmocka_unit_test(test_edges),
		cmocka_unit_test(test_bad_prefix),
		cmocka_unit_test(test_lease_at),
	};

	return cmocka_run_group_tests_name("ike-pool", tests, NULL, NULL);
}
