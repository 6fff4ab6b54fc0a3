/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dpvpn_alg.h - the ESP transforms, one table for both processes: config
 * names, key sizes (what dpvpnd checks and what the dataplane accepts) and
 * the ESP layout each one gives a packet (IV, ICV, padding block).
 */
#ifndef DPVPN_ALG_H
#define DPVPN_ALG_H

#include <stddef.h>
#include <stdint.h>

#include "dpvpn_proto.h"

struct dpvpn_alg_info {
	const char *name;	/* as in the config and in `show sa` */
	uint8_t key_len;	/* cipher key bytes; 0: NULL encryption */
	uint8_t salt_len;	/* nonce salt after the key (RFC 4106, RFC 7634) */
	uint8_t auth_key_len;	/* HMAC key bytes; 0 for AEAD transforms */
	uint8_t iv_len;		/* explicit IV on the wire */
	uint8_t icv_len;	/* ICV on the wire (truncated HMAC or AEAD tag) */
	uint8_t block;		/* ciphertext is padded to a multiple of this */
	uint8_t aead;		/* combined mode: AAD carries the ESP header */
	uint8_t encrypts;	/* 0: NULL (RFC 2410), payload in clear */
};

static const struct dpvpn_alg_info dpvpn_algs[DPVPN_ALG_MAX] = {
	[DPVPN_ALG_AES128_GCM] = { "aes128-gcm", 16, 4, 0, 8, 16, 4, 1, 1 },
	[DPVPN_ALG_AES256_GCM] = { "aes256-gcm", 32, 4, 0, 8, 16, 4, 1, 1 },
	/* RFC 3602 + RFC 2404: random 16-byte IV, HMAC-SHA1-96 */
	[DPVPN_ALG_AES128_CBC_SHA1] = { "aes128-cbc-sha1", 16, 0, 20, 16, 12, 16, 0, 1 },
	[DPVPN_ALG_AES256_CBC_SHA1] = { "aes256-cbc-sha1", 32, 0, 20, 16, 12, 16, 0, 1 },
	/* RFC 3602 + RFC 4868: HMAC-SHA-256-128 */
	[DPVPN_ALG_AES128_CBC_SHA256] = { "aes128-cbc-sha256", 16, 0, 32, 16, 16, 16, 0, 1 },
	[DPVPN_ALG_AES256_CBC_SHA256] = { "aes256-cbc-sha256", 32, 0, 32, 16, 16, 16, 0, 1 },
	/* RFC 7634: 4-byte salt, 8-byte IV (the sequence number), 16-byte tag */
	[DPVPN_ALG_CHACHA20_POLY1305] = { "chacha20-poly1305", 32, 4, 0, 8, 16, 4, 1, 1 },
	/* RFC 2410 NULL encryption + RFC 4868 HMAC-SHA-256-128: NOT ENCRYPTED */
	[DPVPN_ALG_NULL_SHA256] = { "null-sha256", 0, 0, 32, 0, 16, 4, 0, 0 },
};

/* The transform, or NULL for an unknown number. */
static inline const struct dpvpn_alg_info *
dpvpn_alg_get(unsigned int alg)
{
	return alg < DPVPN_ALG_MAX && dpvpn_algs[alg].name != NULL ? &dpvpn_algs[alg] : NULL;
}

#endif /* DPVPN_ALG_H */
