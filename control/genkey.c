/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * genkey.c - dpvpnctl genkey: a key file for a tunnel of a given cipher.
 *
 *   dpvpnctl genkey [-f] [--auth] CIPHER FILE|-   out-key-file / in-key-file
 *                                                 (--auth: *-auth-key-file)
 *   dpvpnctl genkey [-f] psk FILE|-               psk-file (keying = ike)
 *
 * The sizes are include/dpvpn_alg.h's, the table dpvpnd's config check and
 * the dataplane take theirs from; the text is what config_tunnel.c's key files
 * hold: "0x" and the bytes in hex, one line (a PSK: 64 hex digits, the text
 * itself being the key, as a peer's config quotes it).  The bytes come from
 * getrandom(2).  A FILE is created mode 0600 and never followed if it is a
 * symbolic link; an existing one is left alone unless -f, which writes a new
 * file beside it and renames it over (a reader sees the old key or the new,
 * never half of one, and no mode or owner carries over).  "-": stdout.
 * Both copies of the key in memory are wiped.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config.h"
#include "dpvpn_alg.h"
#include "genkey.h"

#define PSK_LEN		32	/* bytes drawn; 64 hex digits, within CFG_PSK_MIN..MAX */
#define KEY_MAX		64	/* bytes of the largest key (DPVPN_* maxima below) */

_Static_assert(DPVPN_KEY_MAX + DPVPN_SALT_LEN <= KEY_MAX && DPVPN_AUTH_KEY_MAX <= KEY_MAX &&
	       PSK_LEN <= KEY_MAX, "grow KEY_MAX");
_Static_assert(2 * PSK_LEN >= CFG_PSK_MIN && 2 * PSK_LEN <= CFG_PSK_MAX, "a PSK dpvpnd takes");

static void usage(FILE *out)
{
	fprintf(out, "usage: dpvpnctl genkey [-f] [--auth] CIPHER FILE|-\n"
		"       dpvpnctl genkey [-f] psk FILE|-\n"
		"  a new random key, as out-key-file / in-key-file of a tunnel of CIPHER take\n"
		"  it (--auth: its HMAC key, for *-auth-key-file; psk: a psk-file), written\n"
		"  to a new FILE of mode 0600 (-: stdout)\n"
		"  -f, --force  replace FILE if it exists\n"
		"  -a, --auth   the HMAC key of a CBC or NULL cipher\n");
}

/* The names genkey knows, for an error message. */
static void list_names(FILE *out)
{
	for (unsigned int i = 0; i < DPVPN_ALG_MAX; i++)
		if (dpvpn_alg_get(i) != NULL)
			fprintf(out, "%s, ", dpvpn_algs[i].name);
	fprintf(out, "or psk");
}

/* Bytes of key to draw for CIPHER (and --auth); 0 with a message if none. */
static size_t key_size(const char *cipher, bool auth)
{
	const struct dpvpn_alg_info *a = NULL;
	size_t len;

	if (!strcmp(cipher, "psk")) {
		if (auth)
			fprintf(stderr, "dpvpnctl genkey: --auth: not with psk\n");
		return auth ? 0 : PSK_LEN;
	}
	for (unsigned int i = 0; i < DPVPN_ALG_MAX && a == NULL; i++)
		if (dpvpn_alg_get(i) != NULL && !strcmp(dpvpn_algs[i].name, cipher))
			a = &dpvpn_algs[i];
	if (a == NULL) {
		fprintf(stderr, "dpvpnctl genkey: unknown cipher '%s' (expected ", cipher);
		list_names(stderr);
		fprintf(stderr, ")\n");
		return 0;
	}
	len = auth ? a->auth_key_len : (size_t)a->key_len + a->salt_len;
	if (len == 0 && auth)
		fprintf(stderr, "dpvpnctl genkey: %s has no separate HMAC key (its tag is the "
			"cipher's): dpvpnctl genkey %s FILE\n", cipher, cipher);
	else if (len == 0)
		fprintf(stderr, "dpvpnctl genkey: %s has no encryption key, only an HMAC key: "
			"dpvpnctl genkey --auth %s FILE\n", cipher, cipher);
	return len;
}

static int fill_random(uint8_t *buf, size_t len)
{
	size_t got = 0;

	while (got < len) {
		ssize_t n = getrandom(buf + got, len - got, 0);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -1;
		got += (size_t)n;
	}
	return 0;
}

static int write_all(int fd, const char *s, size_t len)
{
	while (len > 0) {
		ssize_t n = write(fd, s, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -1;
		s += n;
		len -= (size_t)n;
	}
	return 0;
}

/* text into the new file fd: exactly 0600 (whatever the umask), on disk. */
static int fill_file(int fd, const char *text)
{
	if (fchmod(fd, 0600) != 0 || write_all(fd, text, strlen(text)) != 0 || fsync(fd) != 0) {
		int e = errno;

		close(fd);
		errno = e;
		return -1;
	}
	return close(fd);
}

/* -f: a new file beside path, renamed over it (a symbolic link is replaced). */
static int replace_file(const char *path, const char *text)
{
	char tmp[4096];
	int fd, e;

	if (snprintf(tmp, sizeof(tmp), "%s.XXXXXX", path) >= (int)sizeof(tmp)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0)
		return -1;
	if (fill_file(fd, text) == 0 && rename(tmp, path) == 0)
		return 0;
	e = errno;
	unlink(tmp);
	errno = e;
	return -1;
}

static int write_key(const char *path, const char *text, bool force)
{
	int fd, e;

	if (!strcmp(path, "-"))
		return write_all(STDOUT_FILENO, text, strlen(text));
	if (force)
		return replace_file(path, text);
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return -1;
	if (fill_file(fd, text) == 0)
		return 0;
	e = errno;
	unlink(path);
	errno = e;
	return -1;
}

/* "0x" and hex (a key file), or the bare hex (a PSK: the text is the key). */
static void to_text(const uint8_t *key, size_t len, bool prefix, char *out)
{
	static const char digits[] = "0123456789abcdef";
	char *p = out;

	if (prefix) {
		*p++ = '0';
		*p++ = 'x';
	}
	for (size_t i = 0; i < len; i++) {
		*p++ = digits[key[i] >> 4];
		*p++ = digits[key[i] & 15];
	}
	*p++ = '\n';
	*p = '\0';
}

int genkey_main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "auth", no_argument, NULL, 'a' },
		{ "force", no_argument, NULL, 'f' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	uint8_t key[KEY_MAX];
	char text[2 * KEY_MAX + 4];
	bool force = false, auth = false;
	size_t len;
	int c, rc = 0;

	optind = 1;
	while ((c = getopt_long(argc, argv, "afh", longopts, NULL)) != -1) {
		switch (c) {
		case 'a': auth = true; break;
		case 'f': force = true; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (argc - optind != 2) {
		usage(stderr);
		return 2;
	}
	len = key_size(argv[optind], auth);
	if (len == 0)
		return 2;
	if (fill_random(key, len) != 0) {
		fprintf(stderr, "dpvpnctl genkey: getrandom: %s\n", strerror(errno));
		return 1;
	}
	to_text(key, len, strcmp(argv[optind], "psk") != 0, text);
	if (write_key(argv[optind + 1], text, force) != 0) {
		fprintf(stderr, "dpvpnctl genkey: %s: %s%s\n", argv[optind + 1], strerror(errno),
			errno == EEXIST ? " (not replaced: -f replaces it)" :
			errno == ELOOP ? " (a symbolic link: not followed)" : "");
		rc = 1;
	}
	explicit_bzero(key, sizeof(key));
	explicit_bzero(text, sizeof(text));
	return rc;
}
