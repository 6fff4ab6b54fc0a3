/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_cbc_kat.c - known answers for the CBC+HMAC transforms through the
 * crypto layer (testdata/cbc_hmac_kat.json: RFC 3602 and SP 800-38A AES-CBC,
 * RFC 2202 HMAC-SHA-1), laid out as ESP lays out a packet: the hashed span
 * starts before the IV, the cipher span follows it.  HMAC-SHA-256-128 with
 * the 32-byte keys ESP uses (RFC 4231 has none of that size) is checked
 * against OpenSSL's HMAC, as are the ICVs of the CBC cases.
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
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "crypto.h"
#include "dpvpn_alg.h"

#ifndef TESTDATA
#define TESTDATA "."
#endif
#define KAT_FILE	TESTDATA "/cbc_hmac_kat.json"
#define HDR		8	/* SPI + sequence number before the IV */

static struct crypto_mgr *mgr;
static json_t *root;
static struct crypto_key key __attribute__((aligned(64)));

static size_t
hex(json_t *t, const char *name, uint8_t *out, size_t cap)
{
	const char *s = json_string_value(json_object_get(t, name));
	size_t n;

	assert_non_null(s);
	n = strlen(s) / 2;
	assert_true(n <= cap);
	for (size_t i = 0; i < n; i++)
		assert_int_equal(sscanf(s + 2 * i, "%2hhx", &out[i]), 1);
	return n;
}

static json_t *
group(const char *name)
{
	json_t *t = json_object_get(json_object_get(root, name), "tests");

	assert_true(json_array_size(t) > 0);
	return t;
}

/* One CBC+HMAC op over buf: [hash-only prefix of pre bytes][IV 16][payload len]. */
static void
run_op(uint8_t *buf, uint32_t pre, uint32_t len, uint8_t dir, uint8_t *icv_out)
{
	struct crypto_op op = {
		.key = &key, .dir = dir, .data = buf + pre + CRYPTO_CBC_IV_LEN, .len = len,
		.auth = buf, .auth_len = pre + CRYPTO_CBC_IV_LEN + len, .tag = icv_out,
	};

	crypto_run(mgr, &op, 1);
	assert_true(op.ok);
	if (dir == CRYPTO_DECRYPT)
		memcpy(icv_out, op.computed, key.icv_len);
}

static void
test_aes_cbc(void **state)
{
	json_t *tests = group("aes_cbc"), *t;
	uint8_t auth_key[20] = "an HMAC key for CBC", k[32], iv[16], msg[256], ct[256];
	uint8_t buf[HDR + 16 + 256], icv[16], icv2[16], want[EVP_MAX_MD_SIZE];
	size_t i;

	(void)state;
	json_array_foreach(tests, i, t) {
		size_t klen = hex(t, "key", k, sizeof(k)), len = hex(t, "msg", msg, sizeof(msg));
		unsigned int wlen;

		assert_int_equal(hex(t, "iv", iv, sizeof(iv)), 16);
		assert_int_equal(hex(t, "ct", ct, sizeof(ct)), len);
		assert_true(crypto_key_init(mgr, &key, klen == 16 ? DPVPN_ALG_AES128_CBC_SHA1 :
					    DPVPN_ALG_AES256_CBC_SHA1, k, (uint32_t)klen,
					    auth_key, sizeof(auth_key)));
		memset(buf, 0x5a, HDR);
		memcpy(buf + HDR, iv, 16);
		memcpy(buf + HDR + 16, msg, len);
		run_op(buf, HDR, (uint32_t)len, CRYPTO_ENCRYPT, icv);
		if (memcmp(buf + HDR + 16, ct, len) != 0)
			fail_msg("aes_cbc tcId %d: ciphertext differs",
				 (int)json_integer_value(json_object_get(t, "tcId")));
		/* ICV: HMAC-SHA1-96 over header, IV and ciphertext */
		HMAC(EVP_sha1(), auth_key, sizeof(auth_key), buf, HDR + 16 + len, want, &wlen);
		assert_memory_equal(icv, want, 12);
		run_op(buf, HDR, (uint32_t)len, CRYPTO_DECRYPT, icv2);
		assert_memory_equal(buf + HDR + 16, msg, len);
		assert_memory_equal(icv2, want, 12);
	}
}

/* RFC 2202 cases with a 20-byte key (the size ESP's HMAC-SHA1-96 uses). */
static void
test_hmac_sha1(void **state)
{
	json_t *tests = group("hmac_sha1"), *t;
	uint8_t aes[16] = { 0 }, k[256], msg[256], mac[12], buf[256 + 32], icv[16];
	size_t i, used = 0;

	(void)state;
	json_array_foreach(tests, i, t) {
		size_t klen = hex(t, "key", k, sizeof(k)), len = hex(t, "msg", msg, sizeof(msg));

		if (klen != 20)
			continue;
		assert_int_equal(hex(t, "mac_esp", mac, sizeof(mac)), 12);
		assert_true(crypto_key_init(mgr, &key, DPVPN_ALG_AES128_CBC_SHA1, aes, 16, k, 20));
		/* hash span = the message alone: IV and one block follow it unhashed */
		memcpy(buf, msg, len);
		memset(buf + len, 0, 32);
		struct crypto_op op = { .key = &key, .dir = CRYPTO_ENCRYPT, .data = buf + len + 16,
					.len = 16, .auth = buf, .auth_len = (uint32_t)len,
					.tag = icv };

		crypto_run(mgr, &op, 1);
		assert_true(op.ok);
		assert_memory_equal(icv, mac, 12);
		used++;
	}
	assert_int_equal(used, 3);	/* cases 1, 3 and 5 */
}

/* HMAC-SHA-256-128 with 32-byte keys against OpenSSL, many lengths, NULL cipher. */
static void
test_hmac_sha256_vs_openssl(void **state)
{
	uint8_t k[32], buf[2048], want[EVP_MAX_MD_SIZE], icv[16];
	unsigned int wlen;

	(void)state;
	for (int i = 0; i < 32; i++)
		k[i] = (uint8_t)(i * 37 + 1);
	for (uint32_t i = 0; i < sizeof(buf); i++)
		buf[i] = (uint8_t)(i * 11 + 3);
	assert_true(crypto_key_init(mgr, &key, DPVPN_ALG_NULL_SHA256, NULL, 0, k, 32));
	for (uint32_t len = 4; len <= 1500; len += 4) {
		struct crypto_op op = { .key = &key, .dir = CRYPTO_ENCRYPT, .data = buf + HDR,
					.len = len, .auth = buf, .auth_len = HDR + len,
					.tag = icv };

		crypto_run(mgr, &op, 1);
		assert_true(op.ok);
		HMAC(EVP_sha256(), k, 32, buf, HDR + len, want, &wlen);
		assert_memory_equal(icv, want, 16);
	}
}

static int
setup(void **state)
{
	json_error_t err;

	(void)state;
	mgr = crypto_mgr_create();
	root = json_load_file(KAT_FILE, 0, &err);
	if (root == NULL)
		fprintf(stderr, "%s:%d: %s\n", KAT_FILE, err.line, err.text);
	return mgr != NULL && root != NULL ? 0 : -1;
}

static int
teardown(void **state)
{
	(void)state;
	crypto_key_wipe(&key);
	json_decref(root);
	crypto_mgr_free(mgr);
	return 0;
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_aes_cbc),
		cmocka_unit_test(test_hmac_sha1),
		cmocka_unit_test(test_hmac_sha256_vs_openssl),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
