/* SPDX-License-Identifier: BSD-3-Clause */
/* test_loghist.c - loghist.h's buckets: a table of known values, then every
 * bucket's edges and width for the layouts the tester uses (2 and 4
 * sub-bucket bits). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "loghist.h"

struct known {
	uint64_t v;
	unsigned int sb, bucket;
	uint64_t top;	/* the largest value in that bucket */
};

static void
test_known_values(void **state)
{
	static const struct known k[] = {
		{ 0, 2, 0, 0 }, { 3, 2, 3, 3 },		/* exact below 2^sb */
		{ 4, 2, 4, 4 }, { 7, 2, 7, 7 },		/* [4, 8): width 1 */
		{ 8, 2, 8, 9 }, { 9, 2, 8, 9 }, { 10, 2, 9, 11 }, { 15, 2, 11, 15 },
		{ 16, 2, 12, 19 }, { 100, 2, 22, 111 },	/* 100: [96, 112) */
		{ 15, 4, 15, 15 }, { 16, 4, 16, 16 }, { 32, 4, 32, 33 }, { 33, 4, 32, 33 },
		{ 1000, 4, 111, 1023 },			/* [960, 1024) */
		{ UINT64_MAX, 2, LOGHIST_BUCKETS(2, 64) - 1, UINT64_MAX },
		{ UINT64_MAX, 4, LOGHIST_BUCKETS(4, 64) - 1, UINT64_MAX },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(k) / sizeof(k[0]); i++) {
		unsigned int b = loghist_bucket(k[i].v, k[i].sb);

		if (b != k[i].bucket || loghist_top(b, k[i].sb) != k[i].top)
			fail_msg("v %llu sb %u: bucket %u top %llu, want %u %llu",
				 (unsigned long long)k[i].v, k[i].sb, b,
				 (unsigned long long)loghist_top(b, k[i].sb), k[i].bucket,
				 (unsigned long long)k[i].top);
	}
}

/* Every bucket b: top(b) is in b, top(b) + 1 in b + 1, and b is at most
 * 2^-sb of its lower edge wide (exact below 2^sb). */
static void
check_layout(unsigned int sb)
{
	uint64_t low = 0;

	for (unsigned int b = 0; b < LOGHIST_BUCKETS(sb, 64); b++) {
		uint64_t top = loghist_top(b, sb);

		assert_int_equal(loghist_bucket(low, sb), b);
		assert_int_equal(loghist_bucket(top, sb), b);
		assert_true(top >= low);
		if (low >= (1u << sb))
			assert_true((top - low + 1) <= (low >> sb));
		else
			assert_true(top == low);
		if (top == UINT64_MAX) {
			assert_int_equal(b, LOGHIST_BUCKETS(sb, 64) - 1);
			return;
		}
		assert_int_equal(loghist_bucket(top + 1, sb), b + 1);
		low = top + 1;
	}
	fail_msg("sb %u: the last bucket does not end at UINT64_MAX", sb);
}

static void
test_layout_2(void **state)
{
	(void)state;
	check_layout(2);
	/* the tester's per-stream histogram: every value below 2^25 in 96 buckets */
	assert_int_equal(LOGHIST_BUCKETS(2, 25), 96);
	assert_int_equal(loghist_bucket((1u << 25) - 1, 2), 95);
	assert_int_equal(loghist_bucket(1u << 25, 2), 96);
}

static void
test_layout_4(void **state)
{
	(void)state;
	check_layout(4);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_known_values),
		cmocka_unit_test(test_layout_2),
		cmocka_unit_test(test_layout_4),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
