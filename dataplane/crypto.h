/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * crypto.h - AEAD batching over intel-ipsec-mb.  This module knows jobs and
 * buffers, not SAs: an ESP stage describes each packet's work as a crypto_op,
 * hands the whole burst to crypto_run(), which submits every job before it
 * collects completions, so the library can fill its lanes.
 */
#ifndef CRYPTO_H
#define CRYPTO_H

#include <stdbool.h>
#include <stdint.h>

#include <intel-ipsec-mb.h>

#define CRYPTO_IV_LEN	12	/* salt (4) + explicit IV (8), RFC 4106 */
#define CRYPTO_TAG_LEN	16

enum crypto_dir { CRYPTO_ENCRYPT, CRYPTO_DECRYPT };

/* Expanded key material; lives inside an SA, aligned for the library. */
struct crypto_key {
	struct gcm_key_data gcm;
	uint32_t key_len;	/* 16 or 32 */
} __attribute__((aligned(64)));

struct crypto_op {
	const struct crypto_key *key;
	uint8_t *data;		/* in-place payload */
	uint32_t len;
	uint8_t dir;		/* enum crypto_dir */
	uint8_t ok;		/* set by crypto_run */
	const uint8_t *aad;
	uint32_t aad_len;
	uint8_t *tag;		/* encrypt: written into the packet */
	uint8_t iv[CRYPTO_IV_LEN];
	uint8_t aad_buf[12];	/* for an AAD that is not contiguous in the packet */
	uint8_t computed[CRYPTO_TAG_LEN];	/* decrypt: tag to compare */
};

/* One manager per lcore; the caller keeps it.  NULL on failure. */
IMB_MGR *crypto_mgr_create(void);
void crypto_mgr_free(IMB_MGR *mgr);
const char *crypto_describe(void);
/* "sse", "avx2", "avx512", ... for an IMB_ARCH value. */
const char *crypto_arch_name(uint32_t arch);

/* Expands key (16 or 32 bytes); false for another length. */
bool crypto_key_init(IMB_MGR *mgr, struct crypto_key *k, const uint8_t *key, uint32_t len);
void crypto_key_wipe(struct crypto_key *k);

/* Runs n ops; sets op->ok.  Decrypt ops get the tag in op->computed. */
void crypto_run(IMB_MGR *mgr, struct crypto_op *ops, uint16_t n);

/* Constant-time tag comparison: true when equal. */
bool crypto_tag_equal(const uint8_t *a, const uint8_t *b);

#endif /* CRYPTO_H */
