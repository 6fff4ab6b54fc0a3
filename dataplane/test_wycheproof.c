/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_wycheproof.c - Wycheproof AES-GCM and ChaCha20-Poly1305 known answers
 * through the crypto layer, the subset ESP can use (RFC 4106: 128/256-bit
 * key, RFC 7634: 256-bit key; both a 12-byte nonce and a 16-byte ICV).  Each case runs on its own, then the whole set again in
 * bursts of KAT_BURST ops so that crypto_run's batching is exercised
 * with a different key and length in every lane.  A "valid" case must
 * encrypt to ct||tag and decrypt back with a matching tag; an "invalid" one
 * must compute a tag that differs from the given one, i.e. be dropped.
 *
 * The vectors come from testdata/wycheproof_aes_gcm_esp.json; the
 * WYCHEPROOF_JSON environment variable points the test at another file
 * (testdata/wycheproof_chacha20_poly1305_esp.json, or a corrupted copy to
 * check that a bad vector makes it fail).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "crypto.h"
#include "dpvpn_alg.h"

#ifndef TESTDATA
#define TESTDATA "."
#endif
#define VECTORS_FILE	TESTDATA "/wycheproof_aes_gcm_esp.json"
#define KAT_BURST	32	/* a full rx burst's worth of ops */

struct tcase {
	int id;
	bool valid;
	uint32_t key_len, aad_len, len;
	uint8_t key[32];
	uint8_t alg;			/* enum dpvpn_alg */
	uint8_t iv[CRYPTO_NONCE_LEN];
	uint8_t tag[CRYPTO_ICV_MAX];
	uint8_t *aad, *msg, *ct;	/* len + 1 bytes each, never NULL */
	uint8_t *buf;			/* in-place work area */
	uint8_t out_tag[CRYPTO_ICV_MAX];
};

static struct crypto_mgr *mgr;
static bool chacha;	/* the file's "algorithm" is CHACHA20-POLY1305, else AES-GCM */
static struct tcase *cases;
static struct crypto_key *keys;	/* keys[i] belongs to cases[i] */
static size_t ncases, nvalid;

static int
nibble(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Decodes hex into out (max bytes); returns the length or -1. */
static long
unhex(const char *s, uint8_t *out, size_t max)
{
	size_t n = strlen(s);

	if (n % 2 != 0 || n / 2 > max)
		return -1;
	for (size_t i = 0; i < n / 2; i++) {
		int hi = nibble(s[2 * i]), lo = nibble(s[2 * i + 1]);

		if (hi < 0 || lo < 0)
			return -1;
		out[i] = (uint8_t)(hi << 4 | lo);
	}
	return (long)(n / 2);
}

/* A hex field of any length, into a fresh buffer with one spare byte. */
static uint8_t *
field(json_t *t, const char *name, uint32_t *len)
{
	const char *s = json_string_value(json_object_get(t, name));
	size_t max;
	uint8_t *p;
	long n;

	if (s == NULL)
		fail_msg("tcId %d: no field %s", (int)json_integer_value(json_object_get(t, "tcId")),
			 name);
	max = strlen(s) / 2 + 1;
	p = calloc(1, max);
	assert_non_null(p);
	n = unhex(s, p, max);
	if (n < 0)
		fail_msg("field %s: bad hex", name);
	*len = (uint32_t)n;
	return p;
}

/* A hex field that must be exactly want bytes long. */
static void
fixed(json_t *t, const char *name, uint8_t *out, size_t want)
{
	const char *s = json_string_value(json_object_get(t, name));

	assert_non_null(s);
	assert_int_equal(unhex(s, out, want), want);
}

static void
load_case(struct tcase *c, json_t *t)
{
	const char *result = json_string_value(json_object_get(t, "result"));
	const char *key = json_string_value(json_object_get(t, "key"));
	uint32_t ct_len;
	long n;

	assert_non_null(result);
	assert_non_null(key);
	c->id = (int)json_integer_value(json_object_get(t, "tcId"));
	c->valid = strcmp(result, "valid") == 0;
	if (!c->valid && strcmp(result, "invalid") != 0)
		fail_msg("tcId %d: result \"%s\" is neither valid nor invalid", c->id, result);
	n = unhex(key, c->key, sizeof(c->key));
	assert_true(n == 32 || (!chacha && n == 16));
	c->key_len = (uint32_t)n;
	c->alg = chacha ? DPVPN_ALG_CHACHA20_POLY1305 :
		 n == 16 ? DPVPN_ALG_AES128_GCM : DPVPN_ALG_AES256_GCM;
	fixed(t, "iv", c->iv, sizeof(c->iv));
	fixed(t, "tag", c->tag, sizeof(c->tag));
	c->aad = field(t, "aad", &c->aad_len);
	c->msg = field(t, "msg", &c->len);
	c->ct = field(t, "ct", &ct_len);
	assert_int_equal(ct_len, c->len);
	c->buf = calloc(1, c->len + 1);
	assert_non_null(c->buf);
}

static int
setup(void **state)
{
	const char *path = getenv("WYCHEPROOF_JSON");
	json_error_t err;
	json_t *root, *tests;
	const char *alg_name;

	(void)state;
	if (path == NULL || path[0] == '\0')
		path = VECTORS_FILE;
	mgr = crypto_mgr_create();
	if (mgr == NULL)
		return -1;
	root = json_load_file(path, 0, &err);
	if (root == NULL) {
		fprintf(stderr, "%s:%d: %s\n", path, err.line, err.text);
		return -1;
	}
	alg_name = json_string_value(json_object_get(root, "algorithm"));
	if (alg_name == NULL || (strcmp(alg_name, "AES-GCM") != 0 &&
				 strcmp(alg_name, "CHACHA20-POLY1305") != 0)) {
		fprintf(stderr, "%s: algorithm is not AES-GCM or CHACHA20-POLY1305\n", path);
		return -1;
	}
	chacha = strcmp(alg_name, "CHACHA20-POLY1305") == 0;
	tests = json_object_get(root, "tests");
	ncases = json_array_size(tests);
	if (ncases == 0)
		return -1;
	cases = calloc(ncases, sizeof(*cases));
	/* sizeof is a multiple of 64, so every element stays aligned. */
	keys = aligned_alloc(64, ncases * sizeof(*keys));
	if (cases == NULL || keys == NULL)
		return -1;
	for (size_t i = 0; i < ncases; i++) {
		load_case(&cases[i], json_array_get(tests, i));
		nvalid += cases[i].valid;
		if (!crypto_key_init(mgr, &keys[i], cases[i].alg, cases[i].key, cases[i].key_len,
				     NULL, 0))
			return -1;
	}
	json_decref(root);
	return 0;
}

static int
teardown(void **state)
{
	(void)state;
	for (size_t i = 0; i < ncases; i++) {
		free(cases[i].aad);
		free(cases[i].msg);
		free(cases[i].ct);
		free(cases[i].buf);
		crypto_key_wipe(&keys[i]);
	}
	free(cases);
	free(keys);
	crypto_mgr_free(mgr);
	return 0;
}

/* Prepares op for case i; the payload is copied into the case's buffer. */
static void
prepare(struct crypto_op *op, size_t i, enum crypto_dir dir)
{
	struct tcase *c = &cases[i];

	memset(op, 0, sizeof(*op));
	op->key = &keys[i];
	op->dir = (uint8_t)dir;
	op->data = c->buf;
	op->len = c->len;
	op->aad = c->aad;
	op->aad_len = c->aad_len;
	op->tag = c->out_tag;
	memcpy(op->iv, c->iv, sizeof(op->iv));
	memcpy(c->buf, dir == CRYPTO_ENCRYPT ? c->msg : c->ct, c->len);
	memset(c->out_tag, 0, sizeof(c->out_tag));
}

/* Checks a finished op against case i; returns false (and says why) on a mismatch. */
static bool
check(const struct crypto_op *op, size_t i)
{
	const struct tcase *c = &cases[i];

	if (!op->ok) {
		print_error("tcId %d: crypto_run did not complete the op\n", c->id);
		return false;
	}
	if (op->dir == CRYPTO_ENCRYPT) {
		if (memcmp(c->buf, c->ct, c->len) != 0 || memcmp(c->out_tag, c->tag, 16) != 0) {
			print_error("tcId %d: encryption differs from ct||tag\n", c->id);
			return false;
		}
		return true;
	}
	if (c->valid && (memcmp(c->buf, c->msg, c->len) != 0 ||
			 !crypto_icv_equal(op->computed, c->tag, 16))) {
		print_error("tcId %d: valid case does not decrypt and verify\n", c->id);
		return false;
	}
	if (!c->valid && crypto_icv_equal(op->computed, c->tag, 16)) {
		print_error("tcId %d: invalid case would be accepted\n", c->id);
		return false;
	}
	return true;
}

/* One op per crypto_run call. */
static void
test_one_at_a_time(void **state)
{
	struct crypto_op op;
	size_t bad = 0;

	(void)state;
	for (size_t i = 0; i < ncases; i++) {
		if (cases[i].valid) {
			prepare(&op, i, CRYPTO_ENCRYPT);
			crypto_run(mgr, &op, 1);
			bad += !check(&op, i);
		}
		prepare(&op, i, CRYPTO_DECRYPT);
		crypto_run(mgr, &op, 1);
		bad += !check(&op, i);
	}
	assert_int_equal(bad, 0);
}

/* Runs ops[0..n) (cases idx[0..n)) in one crypto_run call; returns mismatches. */
static size_t
run_burst(struct crypto_op *ops, const size_t *idx, uint16_t n)
{
	size_t bad = 0;

	crypto_run(mgr, ops, n);
	for (uint16_t j = 0; j < n; j++)
		bad += !check(&ops[j], idx[j]);
	return bad;
}

/*
 * Every case in bursts of KAT_BURST: first decryption of all cases, then
 * encryption of the valid ones, each lane with its own key, length and AAD.
 */
static void
test_bursts(void **state)
{
	struct crypto_op ops[KAT_BURST];
	size_t idx[KAT_BURST];
	size_t bad = 0, bursts = 0;

	(void)state;
	for (int pass = 0; pass < 2; pass++) {
		enum crypto_dir dir = pass == 0 ? CRYPTO_DECRYPT : CRYPTO_ENCRYPT;
		uint16_t n = 0;

		for (size_t i = 0; i < ncases; i++) {
			if (dir == CRYPTO_ENCRYPT && !cases[i].valid)
				continue;
			idx[n] = i;
			prepare(&ops[n], i, dir);
			if (++n == KAT_BURST) {
				bad += run_burst(ops, idx, n);
				bursts++;
				n = 0;
			}
		}
		if (n > 0) {
			bad += run_burst(ops, idx, n);
			bursts++;
		}
	}
	assert_int_equal(bad, 0);
	print_message("wycheproof %s: %zu cases (%zu valid, %zu invalid) on %s, "
		      "singly and in %zu bursts of up to %d\n",
		      chacha ? "chacha20-poly1305" : "aes-gcm",
		      ncases, nvalid, ncases - nvalid, crypto_describe(), bursts,
		      KAT_BURST);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_one_at_a_time),
		cmocka_unit_test(test_bursts),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
