/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_icvwatch.c - the bad-icv log lines (icvwatch.h): SA dumps as the
 * dataplane gives them, at chosen times, and the lines that come out.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "icvwatch.h"

#define T0	1000000		/* ms: any time will do */
#define MIN	ICVW_EVERY_MS

static struct dpvpn_sa_info sa(const char *name, uint32_t spi, uint8_t dir, uint64_t icv)
{
	struct dpvpn_sa_info s = { .spi = htonl(spi), .dir = dir, .drop_icv = icv };

	strncpy(s.name, name, sizeof(s.name));
	return s;
}

/* Fold the dump in at now, then the lines icvw_report writes. */
static char *step(struct icvw *w, const struct dpvpn_sa_info *sas, uint32_t n, uint64_t now,
		  bool baseline)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	assert_non_null(f);
	if (sas != NULL)
		assert_int_equal(icvw_update(w, sas, n, now, baseline), 0);
	icvw_report(w, now, f);
	fclose(f);
	return text;
}

static int lines(const char *s)
{
	int n = 0;

	for (; *s; s++)
		n += *s == '\n';
	return n;
}

static void expect(struct icvw *w, const struct dpvpn_sa_info *sas, uint32_t n, uint64_t now,
		   const char *want)
{
	char *got = step(w, sas, n, now, false);

	if (want == NULL)
		assert_string_equal(got, "");
	else
		assert_non_null(strstr(got, want));
	if (want != NULL)
		assert_int_equal(lines(got), 1);
	free(got);
}

static void test_once_a_window(void **state)
{
	struct icvw w = { .primed = true };
	struct dpvpn_sa_info s;

	(void)state;
	s = sa("to-b", 0x2001, DPVPN_DIR_IN, 3);
	expect(&w, &s, 1, T0, "dpvpnd: tunnel to-b: 3 inbound packets failed the integrity "
	       "check (bad-icv), SA 0x00002001: keys differ from the peer's?");
	for (int i = 1; i <= 59; i++) {		/* one more a second: silence */
		s.drop_icv = 3 + (uint64_t)i * 100;
		expect(&w, &s, 1, T0 + (uint64_t)i * 1000, NULL);
	}
	s.drop_icv += 1;
	expect(&w, &s, 1, T0 + MIN, "tunnel to-b: 5901 more inbound packets failed the integrity "
	       "check (bad-icv) in 60 s, SA 0x00002001:");
	expect(&w, &s, 1, T0 + MIN + 1000, NULL);	/* nothing new */
	icvw_free(&w);
}

static void test_said_when_the_window_ends(void **state)
{
	struct icvw w = { .primed = true };
	struct dpvpn_sa_info s = sa("t", 0x2001, DPVPN_DIR_IN, 1);

	(void)state;
	expect(&w, &s, 1, T0, "tunnel t: 1 inbound packet failed");
	s.drop_icv = 8;
	expect(&w, &s, 1, T0 + 5000, NULL);
	/* no dump since (the total did not move): the 7 are still said */
	expect(&w, NULL, 0, T0 + MIN - 1, NULL);
	expect(&w, NULL, 0, T0 + MIN, "tunnel t: 7 more inbound packets failed");
	expect(&w, NULL, 0, T0 + 2 * MIN, NULL);
	icvw_free(&w);
}

static void test_baseline_and_others_ignored(void **state)
{
	struct icvw w = { 0 };
	struct dpvpn_sa_info s[3] = {
		sa("old", 0x3001, DPVPN_DIR_IN, 500),		/* before dpvpnd started */
		sa("out", 0x1001, DPVPN_DIR_OUT, 9),		/* outbound: never checked */
		sa("fine", 0x2001, DPVPN_DIR_IN, 0),
	};
	char *got = step(&w, s, 3, T0, true);

	(void)state;
	assert_string_equal(got, "");
	free(got);
	assert_int_equal(w.n, 1);
	expect(&w, s, 3, T0 + 1000, NULL);
	s[0].drop_icv = 502;
	expect(&w, s, 3, T0 + 2000, "tunnel old: 2 inbound packets failed");
	assert_int_equal(w.n, 1);
	icvw_free(&w);
}

static void test_rekey_one_line_per_tunnel(void **state)
{
	struct icvw w = { .primed = true };
	struct dpvpn_sa_info s[3] = {
		sa("ike", 0xc0000001, DPVPN_DIR_IN, 2),		/* the old CHILD_SA */
		sa("ike", 0xc0000002, DPVPN_DIR_IN, 5),		/* the new one */
		sa("other", 0x2001, DPVPN_DIR_IN, 1),
	};
	char *got = step(&w, s, 3, T0, false);

	(void)state;
	assert_int_equal(lines(got), 2);
	assert_non_null(strstr(got, "tunnel ike: 7 inbound packets failed the integrity check "
				    "(bad-icv), SA 0xc0000002 and 1 other:"));
	assert_non_null(strstr(got, "tunnel other: 1 inbound packet failed"));
	free(got);
	/* the old SA goes, the new one fails on: the tunnel's window holds */
	s[1].drop_icv = 9;
	expect(&w, &s[1], 1, T0 + 1000, NULL);
	expect(&w, NULL, 0, T0 + MIN, "tunnel ike: 4 more inbound packets failed");
	icvw_free(&w);
}

static void test_counts_start_again(void **state)
{
	struct icvw w = { .primed = true };
	struct dpvpn_sa_info s = sa("t", 0x2001, DPVPN_DIR_IN, 10);

	(void)state;
	expect(&w, &s, 1, T0, "tunnel t: 10 inbound packets");
	s.drop_icv = 4;				/* the SA installed anew (tunnel down, up) */
	expect(&w, &s, 1, T0 + 1000, NULL);
	expect(&w, NULL, 0, T0 + MIN, "tunnel t: 4 more inbound packets");
	icvw_reset(&w);				/* a new dataplane: from 0 again */
	s.drop_icv = 6;
	expect(&w, &s, 1, T0 + MIN + 1000, NULL);	/* within the window still */
	expect(&w, NULL, 0, T0 + 2 * MIN, "tunnel t: 6 more inbound packets");
	icvw_free(&w);
}

static void test_gone_sa_said_then_forgotten(void **state)
{
	struct icvw w = { .primed = true };
	struct dpvpn_sa_info s = sa("t", 0x2001, DPVPN_DIR_IN, 1);

	(void)state;
	expect(&w, &s, 1, T0, "tunnel t: 1 inbound packet");
	s.drop_icv = 3;
	expect(&w, &s, 1, T0 + 1000, NULL);
	expect(&w, &s, 0, T0 + 2000, NULL);		/* the tunnel went down */
	assert_int_equal(w.n, 1);
	expect(&w, &s, 0, T0 + MIN, "tunnel t: 2 more inbound packets");
	expect(&w, &s, 0, T0 + 2 * MIN + 1, NULL);
	assert_int_equal(w.n, 0);
	icvw_free(&w);
}

static void test_many_tunnels_summed(void **state)
{
	enum { N = ICVW_LINES_MAX + 5 };
	struct icvw w = { .primed = true };
	struct dpvpn_sa_info s[N];
	char name[DPVPN_NAME_LEN], *got;

	(void)state;
	for (int i = 0; i < N; i++) {
		snprintf(name, sizeof(name), "t%03d", i);
		s[i] = sa(name, 0x2000 + (uint32_t)i, DPVPN_DIR_IN, 2);
	}
	got = step(&w, s, N, T0, false);
	assert_int_equal(lines(got), ICVW_LINES_MAX + 1);
	assert_non_null(strstr(got, "tunnel t000: 2 inbound packets"));
	assert_non_null(strstr(got, "dpvpnd: and 5 more tunnels: 10 inbound packets failed"));
	free(got);
	for (int i = 0; i < N; i++)
		s[i].drop_icv = 3;
	got = step(&w, s, N, T0 + 1000, false);	/* every tunnel within its window */
	assert_string_equal(got, "");
	free(got);
	icvw_free(&w);
}

int main(void)
{
	static const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_once_a_window),
		cmocka_unit_test(test_said_when_the_window_ends),
		cmocka_unit_test(test_baseline_and_others_ignored),
		cmocka_unit_test(test_rekey_one_line_per_tunnel),
		cmocka_unit_test(test_counts_start_again),
		cmocka_unit_test(test_gone_sa_said_then_forgotten),
		cmocka_unit_test(test_many_tunnels_summed),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
