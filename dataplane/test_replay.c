/* SPDX-License-Identifier: BSD-3-Clause */
/* test_replay.c - the anti-replay window as a table of cases, plus a
 * randomized comparison against a naive model. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <pthread.h>

#include "replay.h"

struct step {
	uint64_t seq;
	bool accept;	/* replay_update's answer (replay_check agrees) */
};

static void
run_steps(uint32_t size, const struct step *s, size_t n)
{
	struct replay_window w;

	assert_true(replay_init(&w, size, false));
	for (size_t i = 0; i < n; i++) {
		bool chk = replay_check(&w, s[i].seq);
		bool upd = replay_update(&w, s[i].seq);

		if (chk != s[i].accept || upd != s[i].accept)
			fail_msg("window %u step %zu seq %llu: check %d update %d, want %d",
				 size, i, (unsigned long long)s[i].seq, chk, upd, s[i].accept);
	}
}

static void
test_window_64(void **state)
{
	static const struct step s[] = {
		{ 0, false },		/* sequence numbers start at 1 */
		{ 1, true }, { 1, false },	/* duplicate */
		{ 2, true },
		{ 100, true },		/* jump right */
		{ 37, true },		/* 100 - 63: last slot inside */
		{ 36, false },		/* 100 - 64: left of the window */
		{ 37, false },		/* duplicate inside */
		{ 99, true }, { 64, true }, { 63, true }, { 64, false },
		{ 164, true },		/* slides by exactly 64 */
		{ 100, false }, { 101, true }, { 163, true },
		{ 1000000, true }, { 999937, true }, { 999936, false },
		{ UINT32_MAX, true },	/* 32-bit top */
		{ (uint64_t)UINT32_MAX + 5, true },	/* the 64-bit space goes on */
		{ (uint64_t)UINT32_MAX + 1, true },
		{ UINT32_MAX, false },	/* duplicate across 2^32 */
		{ (uint64_t)UINT32_MAX - 58, true }, /* top - 63: still inside */
		{ (uint64_t)UINT32_MAX - 59, false },
	};

	(void)state;
	run_steps(64, s, sizeof(s) / sizeof(s[0]));
}

/*
 * replay_late: left of the window, or its slot already taken by a newer
 * block while the top does not show it yet (several workers: the top is
 * raised just after the block), is late; a repeat inside the window is not.
 */
static void
test_late_or_repeated(void **state)
{
	struct replay_window w;
	struct replay_block *b;

	(void)state;
	assert_true(replay_init(&w, 64, true));
	assert_true(replay_update(&w, 100));
	assert_true(replay_update(&w, 90));
	assert_false(replay_update(&w, 90));
	assert_false(replay_late(&w, 90));		/* repeated */
	assert_true(replay_late(&w, 36));		/* left of the window */
	assert_true(replay_late(&w, 0));
	/* another worker's newer block in 90's slot, the top not raised yet */
	b = &w.blk[(90 >> 6) & w.mask];
	b->idx = (90 >> 6) + w.mask + 1;
	b->bits = 1;
	assert_false(replay_too_old(&w, 90));
	assert_false(replay_update(&w, 90));
	assert_true(replay_late(&w, 90));
}

static void
test_window_1024_reverse(void **state)
{
	struct replay_window w;

	(void)state;
	assert_true(replay_init(&w, 1024, false));
	assert_true(replay_update(&w, 1024));
	for (uint64_t s = 1023; s >= 1; s--)	/* fully reordered burst */
		assert_true(replay_update(&w, s));
	for (uint64_t s = 1; s <= 1024; s++)
		assert_false(replay_check(&w, s));
	assert_true(replay_update(&w, 2048));	/* 1024 becomes the oldest */
	assert_false(replay_check(&w, 1024));	/* 2048 - 1024: left edge */
	assert_true(replay_update(&w, 1025));
	assert_true(replay_update(&w, 2048 + 1024 * 10));	/* far jump clears all */
	for (uint64_t s = 2048 + 1024 * 9 + 1; s < 2048 + 1024 * 10; s++)
		assert_true(replay_check(&w, s));
}

static void
test_init_sizes(void **state)
{
	struct replay_window w;

	(void)state;
	assert_false(replay_init(&w, 32, false));
	assert_false(replay_init(&w, 1000, false));
	assert_false(replay_init(&w, 8192, false));
	assert_true(replay_init(&w, 64, false));
	assert_true(replay_init(&w, 4096, false));
}

static void
test_window_off(void **state)
{
	struct replay_window w;

	(void)state;
	assert_true(replay_init(&w, 0, false));	/* anti-replay off */
	assert_true(replay_update(&w, 5));
	assert_true(replay_update(&w, 5));	/* duplicates pass */
	assert_true(replay_update(&w, 1));
	assert_true(replay_check(&w, 0));
	assert_int_equal(w.top, 5);
}

/* RFC 4303 A2.2 as a table: window top, received low half -> 64-bit number. */
static void
test_esn_infer(void **state)
{
	static const struct {
		uint64_t top;
		uint32_t seql;
		bool ok;
		uint64_t want;
	} cases[] = {
		{ 0, 1, true, 1 },			/* the first packet */
		{ 0, 0xffffffff, false, 0 },		/* "before" the first: impossible */
		{ 0x100000005ull, 0xfffffff0, true, 0xfffffff0ull },	/* just below the wrap */
		{ 0x100000005ull, 3, true, 0x100000003ull },
		{ 0x100000005ull, 900, true, 0x100000384ull },	/* ahead */
		{ 0xfffffff0ull, 0xfffffff5, true, 0xfffffff5ull },	/* case A */
		{ 0xfffffff0ull, 2, true, 0x100000002ull },	/* across 2^32 */
		{ 0xfffffff0ull, 0xffffffb1, true, 0xffffffb1ull },	/* window bottom */
		{ 0xfffffff0ull, 0xffffffb0, true, 0x1ffffffb0ull },	/* below it: next half */
		/* below the window in case A: taken as the next half, as the RFC does */
		{ 0x7fffffff00000100ull, 0x50, true, 0x8000000000000050ull },
	};
	struct replay_window w;

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		uint64_t seq = 0;
		bool ok;

		replay_init(&w, 64, false);
		w.top = cases[i].top;	/* as after accepting that number */
		ok = replay_esn_infer(&w, cases[i].seql, &seq);
		if (ok != cases[i].ok || (ok && seq != cases[i].want))
			fail_msg("case %zu: ok %d seq %#llx, want %d %#llx", i, ok,
				 (unsigned long long)seq, cases[i].ok,
				 (unsigned long long)cases[i].want);
	}
}

/* Naive model: a set of seen numbers and the top. */
static bool
model_accept(const uint8_t *seen, uint64_t top, uint32_t size, uint64_t seq)
{
	if (seq == 0)
		return false;
	if (seq > top)
		return true;
	if (top - seq >= size)
		return false;
	return !seen[seq];
}

static void
test_random_against_model(void **state)
{
	enum { SPAN = 200000, OPS = 400000 };
	static const uint32_t sizes[] = { 64, 128, 1024, 4096 };
	uint8_t *seen = calloc(SPAN + 8192, 1);

	(void)state;
	assert_non_null(seen);
	srand(42);
	for (size_t z = 0; z < sizeof(sizes) / sizeof(sizes[0]); z++) {
		struct replay_window w;
		uint64_t top = 0, base = 1;

		memset(seen, 0, SPAN + 8192);
		replay_init(&w, sizes[z], (z & 1) != 0);	/* both modes against the model */
		for (int i = 0; i < OPS && base < SPAN; i++) {
			/* mostly near the top, sometimes far behind or ahead */
			uint64_t seq = base + (uint64_t)(rand() % (int)(sizes[z] * 2));
			bool want = model_accept(seen, top, sizes[z], seq);

			if (replay_update(&w, seq) != want)
				fail_msg("size %u op %d seq %llu: want %d", sizes[z], i,
					 (unsigned long long)seq, want);
			if (want) {
				seen[seq] = 1;
				if (seq > top)
					top = seq;
			}
			if (rand() % 4 == 0)
				base++;
		}
	}
	free(seen);
}

/*
 * Several threads share one window, as workers do when bursts of one SA are
 * spread over them: every thread offers every sequence number, each in its
 * own order (shuffled within blocks of 256, well inside the window of 1024),
 * so the same number arrives on several threads at once and out of order.
 * Each number must be accepted exactly once: never twice (a replay let
 * through), never zero times (a false drop from reordering).
 */
#define MT_THREADS	4
#define MT_N		(1u << 18)
#define MT_SHUFFLE	256

static struct replay_window mt_win;
static uint8_t mt_hits[MT_N + 1];

struct mt_arg {
	unsigned int seed;
};

static void *
mt_worker(void *p)
{
	struct mt_arg *a = p;
	uint32_t order[MT_SHUFFLE];

	for (uint32_t base = 1; base <= MT_N; base += MT_SHUFFLE) {
		for (uint32_t i = 0; i < MT_SHUFFLE; i++)
			order[i] = base + i;
		for (uint32_t i = MT_SHUFFLE - 1; i > 0; i--) {
			uint32_t j = (uint32_t)rand_r(&a->seed) % (i + 1), t = order[i];

			order[i] = order[j];
			order[j] = t;
		}
		for (uint32_t i = 0; i < MT_SHUFFLE; i++) {
			uint32_t seq = order[i];

			if (seq > MT_N)
				continue;
			if (replay_check(&mt_win, seq) && replay_update(&mt_win, seq))
				__atomic_add_fetch(&mt_hits[seq], 1, __ATOMIC_RELAXED);
		}
	}
	return NULL;
}

static void
test_shared_by_threads(void **state)
{
	pthread_t t[MT_THREADS];
	struct mt_arg args[MT_THREADS];
	uint32_t twice = 0, never = 0;

	(void)state;
	assert_true(replay_init(&mt_win, 1024, true));
	for (int i = 0; i < MT_THREADS; i++) {
		args[i].seed = 1234u + (unsigned int)i;
		assert_int_equal(pthread_create(&t[i], NULL, mt_worker, &args[i]), 0);
	}
	for (int i = 0; i < MT_THREADS; i++)
		pthread_join(t[i], NULL);
	for (uint32_t s = 1; s <= MT_N; s++) {
		twice += mt_hits[s] > 1;
		never += mt_hits[s] == 0;
	}
	if (twice || never)
		fail_msg("%u numbers accepted twice, %u never (of %u)", twice, never, MT_N);
	assert_int_equal(mt_win.top, MT_N);
}

/* replay_floor: every number up to high refused, those above taken once. */
static void
test_floor(void **state)
{
	static const uint32_t sizes[] = { 64, 1024, 4096 };
	static const uint64_t highs[] = { 1, 63, 64, 65, 1000, 5000, 1ull << 33 };

	(void)state;
	for (unsigned s = 0; s < 3; s++)
		for (unsigned h = 0; h < 7; h++) {
			struct replay_window w;
			uint64_t high = highs[h];

			assert_true(replay_init(&w, sizes[s], s == 1));
			assert_true(replay_update(&w, 1));
			replay_floor(&w, high);
			assert_int_equal(replay_load_top(&w), high > 1 ? high : 1);
			for (uint64_t q = high > 5000 ? high - 5000 : 1; q <= high; q++)
				assert_false(replay_check(&w, q) && replay_update(&w, q));
			for (uint64_t q = high + 1; q <= high + 130; q++)
				assert_true(replay_check(&w, q) && replay_update(&w, q));
			assert_false(replay_update(&w, high + 7));
			replay_floor(&w, 2);	/* raised only */
			assert_int_equal(replay_load_top(&w), high + 130);
		}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_window_64),
		cmocka_unit_test(test_late_or_repeated),
		cmocka_unit_test(test_window_1024_reverse),
		cmocka_unit_test(test_init_sizes),
		cmocka_unit_test(test_window_off),
		cmocka_unit_test(test_esn_infer),
		cmocka_unit_test(test_random_against_model),
		cmocka_unit_test(test_shared_by_threads),
		cmocka_unit_test(test_floor),
	};

	return cmocka_run_group_tests_name("replay", tests, NULL, NULL);
}
