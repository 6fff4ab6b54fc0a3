/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fuzz_config.c - dpvpnd's config parser (control/config*.c): the input is
 * the text of a config file, written to a private directory and loaded with
 * cfg_load() as dpvpnd -c does: inih's reader and ours (sections, secret
 * lines, comments, BOM, long lines), every key's value parser, key files
 * (relative to the config: the directory holds a good one, one with group
 * access, one of two lines, one too big), and the whole-file checks.
 *
 * Checked: a load fails exactly when it reports an error, and every error is
 * "FILE:LINE: message" with a line number within the file (or "FILE: message"
 * about the whole file), in line order.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config.h"

static char dir[64], path[128];
static int conf_fd = -1;

static __attribute__((noreturn)) void
die(const char *what, const char *detail)
{
	fprintf(stderr, "fuzz_config: %s: %s\n", what, detail);
	abort();
}

static void
put(const char *name, const char *text, mode_t mode)
{
	char p[128];
	FILE *f;

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	f = fopen(p, "w");
	if (f == NULL || fputs(text, f) < 0 || fclose(f) != 0 || chmod(p, mode) != 0)
		die("cannot write", p);
}

static void
cleanup(void)
{
	static const char *const names[] = { "dpvpn.conf", "a.key", "b.key", "auth.key",
					      "open.key", "two.key", "big.key" };
	char p[128];

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		snprintf(p, sizeof(p), "%s/%s", dir, names[i]);
		unlink(p);
	}
	rmdir(dir);
}

/* Lines of the file: errors may name line 0 (the file) up to one past the last. */
static int
lines(const uint8_t *data, size_t size)
{
	int n = 1;

	for (size_t i = 0; i < size; i++)
		n += data[i] == '\n';
	return n;
}

static void
check_errors(const struct cfg *c, int rc, const uint8_t *data, size_t size)
{
	size_t plen = strlen(path);
	int last = 0, max = lines(data, size);

	if (rc != 0 && c->n_errors == 0)
		die("load failed", "no error reported");
	if (rc == 0 && c->n_errors != 0)
		die("load succeeded", c->errors[0]);
	for (size_t i = 0; i < c->n_errors; i++) {
		const char *e = c->errors[i];
		char *end;
		long line;

		if (strncmp(e, path, plen) != 0 || e[plen] != ':')
			die("error does not name the file", e);
		if (e[plen + 1] == ' ') {	/* about the whole file: "FILE: message" */
			line = 0;
		} else {
			line = strtol(e + plen + 1, &end, 10);
			if (end == e + plen + 1 || strncmp(end, ": ", 2) != 0 || line < 1 ||
			    line > max)
				die("error without a sound line number", e);
		}
		if (line < last)
			die("errors not in line order", e);
		last = (int)line;
	}
}

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	char big[400];

	(void)argc;
	(void)argv;
	/* tmpfs where there is one: ext4 flushes a truncated file at close */
	snprintf(dir, sizeof(dir), "%s/fuzz_config.XXXXXX",
		 access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp");
	if (mkdtemp(dir) == NULL)
		die("mkdtemp", dir);
	snprintf(path, sizeof(path), "%s/dpvpn.conf", dir);
	atexit(cleanup);
	conf_fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (conf_fd < 0)
		die("cannot create", path);
	put("a.key", "0x0123456789abcdef0123456789abcdef01020304\n", 0600);
	put("b.key", "  00112233445566778899aabbccddeeff0011223344556677889900aabbccddee\n", 0600);
	put("auth.key", "0x000102030405060708090a0b0c0d0e0f10111213\n", 0400);
	put("open.key", "0x0123456789abcdef0123456789abcdef01020304\n", 0644);
	put("two.key", "0x0123456789abcdef\n0x0123456789abcdef\n", 0600);
	memset(big, 'a', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	put("big.key", big, 0600);
	return 0;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct cfg c;
	int rc;

	/* the file stays open here: rewritten in place, two system calls */
	if (pwrite(conf_fd, data, size, 0) != (ssize_t)size || ftruncate(conf_fd, (off_t)size) != 0)
		die("cannot write", path);
	rc = cfg_load(&c, path);
	if (getenv("FUZZ_DEBUG") != NULL)	/* for writing seeds */
		cfg_print_errors(&c, stderr);
	check_errors(&c, rc, data, size);
	cfg_free(&c);
	return 0;
}
