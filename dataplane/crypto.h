/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * crypto.h - ESP transforms over intel-ipsec-mb.  This module knows jobs and
 * buffers, not SAs: an ESP stage describes each packet's work as a crypto_op
 * and hands the whole burst to crypto_run().  AES-GCM goes through the
 * library's direct API, one call per packet: it has no lanes to fill, and the
 * job API's bookkeeping cost about as much as the cipher itself at 64 B.  The
 * other transforms go through the burst API: every job is submitted before
 * completions are collected, so the library fills its lanes (one CBC+HMAC job
 * at a time is ~7x slower than 32).
 */
#ifndef CRYPTO_H
#define CRYPTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <intel-ipsec-mb.h>

#include "dpvpn_proto.h"

#define CRYPTO_NONCE_LEN	12	/* AEAD: salt (4) + explicit IV (8) */
#define CRYPTO_ICV_MAX		16
#define CRYPTO_CBC_IV_LEN	16
#define CRYPTO_RNG_POOL		4096	/* random bytes drawn from OpenSSL at a time */

enum crypto_dir { CRYPTO_ENCRYPT, CRYPTO_DECRYPT };

/*
 * Expanded key material; lives inside an SA, aligned for the library.
 * alg is an enum dpvpn_alg (sizes from dpvpn_alg.h).
 */
struct crypto_key {
	union {
		struct gcm_key_data gcm;
		struct {
			uint32_t enc[60] __attribute__((aligned(16)));
			uint32_t dec[60] __attribute__((aligned(16)));
		} aes;
		uint8_t raw[32];	/* ChaCha20: used as given */
	} c;
	uint8_t ipad[32] __attribute__((aligned(16)));	/* hash state after key ^ 0x36 */
	uint8_t opad[32] __attribute__((aligned(16)));	/* ... after key ^ 0x5c */
	uint32_t key_len;
	uint8_t alg;
	uint8_t icv_len;
	uint8_t aead;
	uint8_t cipher_mode, hash_alg;	/* IMB_CIPHER_*, IMB_AUTH_* */
} __attribute__((aligned(64)));

/*
 * One packet's work.  AEAD: data..data+len is ciphered in place, aad
 * authenticated with it, nonce is the full 12-byte nonce.  CBC/NULL+HMAC:
 * auth..auth+auth_len is hashed (ESP header, IV, ciphertext and, with ESN,
 * the high sequence half placed after it); the CBC IV is the 16 bytes just
 * before data.  tag: where the ICV goes (encrypt) or the received one (decrypt).
 */
struct crypto_op {
	const struct crypto_key *key;
	uint8_t *data;
	uint32_t len;
	uint8_t dir;		/* enum crypto_dir */
	uint8_t ok;		/* set by crypto_run */
	uint8_t mode;		/* enum crypto_mode: crypto_op_key, or 0 */
	uint8_t icv_len;	/* with mode set: the key's */
	const uint8_t *aad;
	uint32_t aad_len;
	uint8_t *auth;
	uint32_t auth_len;
	uint8_t *tag;
	uint8_t iv[CRYPTO_NONCE_LEN];	/* AEAD nonce */
	uint8_t aad_buf[12];	/* for an AAD that is not contiguous in the packet */
	uint8_t computed[CRYPTO_ICV_MAX];	/* decrypt: ICV to compare */
	uint8_t rx_icv[CRYPTO_ICV_MAX];	/* decrypt: received ICV, when moved aside */
};

/*
 * Byte offsets in a struct crypto_key of the two cache lines that hold the
 * AES-GCM hash-key powers H^4..H^1, which a short packet's GHASH reads: where
 * they sit depends on the code path ipsec-mb chose for this CPU (its
 * gcm_keys_*.asm: SSE/AVX and AVX2/AVX-512 keep H^8..H^1 right after the round
 * keys, the VAES path keeps H^48..H^1, H^1 last).  Set by the first
 * crypto_mgr_create; the fast path prefetches them for an SA not in cache.
 */
extern uint16_t crypto_hkey_off[2];

/*
 * How crypto_run takes an op, said by the caller from its own copy of the
 * transform (an SA's first line), so that it reads the key only where the
 * cipher does: the key's own fields sit on its last line, a cache miss per
 * packet when many tunnels take turns.  0: not said, read from the key.
 */
enum crypto_mode {
	CRYPTO_MODE_UNSAID = 0,
	CRYPTO_MODE_GCM128 = 16,	/* AES-GCM's direct API, by key length */
	CRYPTO_MODE_GCM256 = 32,
	CRYPTO_MODE_JOBS = 255,		/* the burst API */
};

/* op's key, with what crypto_run needs of it (alg: enum dpvpn_alg). */
static inline void
crypto_op_key(struct crypto_op *op, const struct crypto_key *k, uint8_t alg, uint8_t icv_len)
{
	op->key = k;
	op->mode = alg == DPVPN_ALG_AES128_GCM ? CRYPTO_MODE_GCM128 :
		   alg == DPVPN_ALG_AES256_GCM ? CRYPTO_MODE_GCM256 : CRYPTO_MODE_JOBS;
	op->icv_len = icv_len;
}

/* One per lcore, kept by the caller: an ipsec-mb manager and a random pool. */
struct crypto_mgr {
	IMB_MGR *mb;
	struct gcm_context_data gcm_ctx;	/* AES-GCM's direct API: state of one call */
	uint32_t rng_pos;	/* next unused byte of rng */
	uint8_t rng[CRYPTO_RNG_POOL];
};

/* NULL on failure. */
struct crypto_mgr *crypto_mgr_create(void);
void crypto_mgr_free(struct crypto_mgr *m);
const char *crypto_describe(void);
/* "sse", "avx2", "avx512", ... for an IMB_ARCH value. */
const char *crypto_arch_name(uint32_t arch);

/*
 * Expands the keys of transform alg (enum dpvpn_alg); false when alg is
 * unknown or a length does not match it.
 */
bool crypto_key_init(struct crypto_mgr *m, struct crypto_key *k, uint8_t alg,
		     const uint8_t *key, uint32_t key_len,
		     const uint8_t *auth_key, uint32_t auth_key_len);
void crypto_key_wipe(struct crypto_key *k);

/* Runs n ops; sets op->ok.  Decrypt ops get the ICV in op->computed. */
void crypto_run(struct crypto_mgr *m, struct crypto_op *ops, uint16_t n);

/*
 * n unpredictable bytes (CBC IVs, RFC 3602), from a pool that OpenSSL's
 * DRBG (seeded from the OS) refills CRYPTO_RNG_POOL bytes at a time: no
 * system call per packet.  false if the DRBG failed.
 */
static inline bool crypto_random(struct crypto_mgr *m, uint8_t *out, uint32_t n);

/* Constant-time comparison of len ICV bytes: true when equal (inline: per packet). */
static inline bool
crypto_icv_equal(const uint8_t *a, const uint8_t *b, uint32_t len)
{
	uint64_t x[2], y[2], diff;

	/* Constant time: every byte is compared, no early exit.  ICVs are 12
	 * or 16 bytes: two 64-bit words, the tail of a 12-byte one masked. */
	memcpy(x, a, 8);
	memcpy(y, b, 8);
	diff = x[0] ^ y[0];
	if (len == CRYPTO_ICV_MAX) {
		memcpy(&x[1], a + 8, 8);
		memcpy(&y[1], b + 8, 8);
		diff |= x[1] ^ y[1];
	} else {
		for (uint32_t i = 8; i < len; i++)
			diff |= (uint64_t)(a[i] ^ b[i]);
	}
	return diff == 0;
}

bool crypto_rng_refill(struct crypto_mgr *m);

static inline bool
crypto_random(struct crypto_mgr *m, uint8_t *out, uint32_t n)
{
	if (m->rng_pos + n > CRYPTO_RNG_POOL && !crypto_rng_refill(m))
		return false;
	for (uint32_t i = 0; i < n; i++)
		out[i] = m->rng[m->rng_pos + i];
	m->rng_pos += n;
	return true;
}

#endif /* CRYPTO_H */
