/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_seqstate.c - the sequence reservation state (seqstate.h): limits
 * survive a reopen and only rise, a batch is written once at its end, a
 * reservation appends one record (the file is not rewritten) until records
 * outnumber SAs, a half-written last record is dropped, and 100 000
 * outbound SAs (an install of 100 000 tunnels) fit and stay quick.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "seqstate.h"

#define MANY	100000

static char dir[] = "/tmp/dpvpn-seqstate-XXXXXX";
static char path[256];

static struct seqstate *
reopen(struct seqstate *s)
{
	char err[512];

	seq_close(s);
	s = seq_open(path, err, sizeof(err));
	if (s == NULL)
		fail_msg("%s", err);
	return s;
}

static int
setup(void **state)
{
	(void)state;
	snprintf(path, sizeof(path), "%s/state", dir);
	unlink(path);
	return 0;
}

static void
test_limits_survive_and_only_rise(void **state)
{
	struct seqstate *s = reopen(NULL);

	(void)state;
	assert_int_equal(seq_get(s, "to-b", 0x1001), 0);
	assert_int_equal(seq_put(s, "to-b", 0x1001, 1000), 0);
	assert_int_equal(seq_put(s, "to-b", 0x1001, 500), 0);	/* never lowered */
	assert_int_equal(seq_put(s, "to-c", 0x1001, 7), 0);	/* same SPI, another tunnel */
	s = reopen(s);
	assert_int_equal(seq_get(s, "to-b", 0x1001), 1000);
	assert_int_equal(seq_get(s, "to-c", 0x1001), 7);
	assert_int_equal(seq_get(s, "to-b", 0x1002), 0);
	seq_close(s);
}

static void
test_batch_written_once_at_its_end(void **state)
{
	struct seqstate *s = reopen(NULL);
	struct stat before, after;

	(void)state;
	assert_int_equal(seq_put(s, "first", 1, 10), 0);	/* outside a batch: on disk */
	assert_int_equal(stat(path, &before), 0);
	seq_batch_begin(s);
	assert_int_equal(seq_put(s, "second", 2, 20), 0);
	assert_int_equal(seq_put(s, "third", 3, 30), 0);
	assert_int_equal(stat(path, &after), 0);
	assert_int_equal(after.st_ino, before.st_ino);		/* not written yet */
	assert_int_equal(after.st_size, before.st_size);
	assert_int_equal(seq_batch_end(s), 0);
	assert_int_equal(stat(path, &after), 0);
	assert_int_equal(after.st_ino, before.st_ino);		/* appended, */
	assert_int_equal(after.st_size, before.st_size + (off_t)strlen("second 00000002 20\n"
								   "third 00000003 30\n"));
	assert_int_equal(seq_batch_end(s), 0);			/* twice: no harm */
	s = reopen(s);
	assert_int_equal(seq_get(s, "second", 2), 20);
	assert_int_equal(seq_get(s, "third", 3), 30);
	seq_close(s);
}

static off_t
file_size(void)
{
	struct stat st;

	assert_int_equal(stat(path, &st), 0);
	return st.st_size;
}

/* One record a reservation, whatever the number of SAs; rewritten whole
 * (a new inode) once the records outnumber the SAs twice (and 1024). */
static void
test_a_record_per_put(void **state)
{
	struct seqstate *s = reopen(NULL);
	struct stat first, st;
	off_t size;

	(void)state;
	assert_int_equal(seq_put(s, "t1", 1, 100), 0);		/* creates the file */
	assert_int_equal(stat(path, &first), 0);
	assert_int_equal(seq_put(s, "t2", 2, 200), 0);
	assert_int_equal(file_size(), first.st_size + (off_t)strlen("t2 00000002 200\n"));
	size = file_size();
	assert_int_equal(seq_put(s, "t1", 1, 300), 0);		/* the same SA again */
	assert_int_equal(file_size(), size + (off_t)strlen("t1 00000001 300\n"));
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_ino, first.st_ino);
	s = reopen(s);
	assert_int_equal(seq_get(s, "t1", 1), 300);		/* the highest record */
	assert_int_equal(seq_get(s, "t2", 2), 200);
	for (uint64_t i = 1; i <= 1100; i++)			/* 2 SAs: past 2 * 2 + 1024 */
		assert_int_equal(seq_put(s, "t1", 1, 300 + i), 0);
	assert_int_equal(stat(path, &st), 0);
	assert_int_not_equal(st.st_ino, first.st_ino);		/* rewritten, */
	assert_true(st.st_size < 1100 * (off_t)strlen("t1 00000001 1400\n"));	/* shorter */
	s = reopen(s);
	assert_int_equal(seq_get(s, "t1", 1), 1400);
	assert_int_equal(seq_get(s, "t2", 2), 200);
	seq_close(s);
}

/* A record cut short (the machine stopped in its write) was never durable:
 * dropped, and the next reservation writes the file whole without it. */
static void
test_a_torn_last_record_is_dropped(void **state)
{
	struct seqstate *s;
	char err[512];
	FILE *f = fopen(path, "w");

	(void)state;
	assert_non_null(f);
	fputs("t1 00000001 100\nt2 00000002 200\nt1 00000001 9", f);
	fclose(f);
	s = reopen(NULL);
	assert_int_equal(seq_get(s, "t1", 1), 100);
	assert_int_equal(seq_put(s, "t3", 3, 300), 0);
	s = reopen(s);
	assert_int_equal(seq_get(s, "t1", 1), 100);
	assert_int_equal(seq_get(s, "t3", 3), 300);
	seq_close(s);
	/* one in the middle is damage, not a torn write: refused, naming the line */
	f = fopen(path, "w");
	fputs("t1 00000001 100\nt2 0000\nt1 00000001 200\n", f);
	fclose(f);
	s = seq_open(path, err, sizeof(err));
	assert_null(s);
	assert_non_null(strstr(err, ":2: expected 'NAME SPI LIMIT'"));
}

/* Before, each put rewrote and fsynced the whole file, the lookups scanned
 * it, and more than 65 536 SAs were refused: this took hours, or failed. */
static void
test_a_hundred_thousand_sas(void **state)
{
	struct seqstate *s = reopen(NULL);
	struct timespec t0, t1;
	char name[32];

	(void)state;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	seq_batch_begin(s);
	for (uint32_t i = 0; i < MANY; i++) {
		snprintf(name, sizeof(name), "t%u", i);
		assert_int_equal(seq_get(s, name, 0x100000 + i), 0);
		assert_int_equal(seq_put(s, name, 0x100000 + i, (uint64_t)i * 67108864 + 1), 0);
	}
	assert_int_equal(seq_batch_end(s), 0);
	s = reopen(s);
	for (uint32_t i = 0; i < MANY; i++) {
		snprintf(name, sizeof(name), "t%u", i);
		assert_int_equal(seq_get(s, name, 0x100000 + i), (uint64_t)i * 67108864 + 1);
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	/* linear: well under a second here; 20 s is far from any machine's noise */
	assert_true(t1.tv_sec - t0.tv_sec < 20);
	seq_close(s);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_limits_survive_and_only_rise, setup),
		cmocka_unit_test_setup(test_batch_written_once_at_its_end, setup),
		cmocka_unit_test_setup(test_a_record_per_put, setup),
		cmocka_unit_test_setup(test_a_torn_last_record_is_dropped, setup),
		cmocka_unit_test_setup(test_a_hundred_thousand_sas, setup),
	};
	int rc;

	if (mkdtemp(dir) == NULL)
		return 1;
	rc = cmocka_run_group_tests(tests, NULL, NULL);
	unlink(path);
	snprintf(path, sizeof(path), "%s/state.lock", dir);
	unlink(path);
	rmdir(dir);
	return rc;
}
