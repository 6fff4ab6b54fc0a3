/* SPDX-License-Identifier: BSD-3-Clause */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "crypto.h"

static char describe[48];

const char *
crypto_arch_name(uint32_t arch)
{
	static const char *const names[] = {
		[IMB_ARCH_NONE] = "none", [IMB_ARCH_NOAESNI] = "no-aesni",
		[IMB_ARCH_SSE] = "sse", [IMB_ARCH_AVX] = "avx",
		[IMB_ARCH_AVX2] = "avx2", [IMB_ARCH_AVX512] = "avx512",
	};

	return arch < IMB_ARCH_NUM ? names[arch] : "?";
}

IMB_MGR *
crypto_mgr_create(void)
{
	IMB_MGR *mgr = alloc_mb_mgr(0);

	if (mgr == NULL)
		return NULL;
	/* The library picks its code path (SSE .. AVX-512) for this CPU. */
	init_mb_mgr_auto(mgr, NULL);
	if (imb_get_errno(mgr) != 0) {
		free_mb_mgr(mgr);
		return NULL;
	}
	if (describe[0] == '\0')
		snprintf(describe, sizeof(describe), "intel-ipsec-mb %s %s",
			 imb_get_version_str(), crypto_arch_name(mgr->used_arch));
	return mgr;
}

void
crypto_mgr_free(IMB_MGR *mgr)
{
	if (mgr != NULL)
		free_mb_mgr(mgr);
}

const char *
crypto_describe(void)
{
	return describe;
}

bool
crypto_key_init(IMB_MGR *mgr, struct crypto_key *k, const uint8_t *key, uint32_t len)
{
	if (len == 16)
		IMB_AES128_GCM_PRE(mgr, key, &k->gcm);
	else if (len == 32)
		IMB_AES256_GCM_PRE(mgr, key, &k->gcm);
	else
		return false;
	k->key_len = len;
	return true;
}

void
crypto_key_wipe(struct crypto_key *k)
{
	explicit_bzero(k, sizeof(*k));
}

static void
fill_job(IMB_JOB *job, struct crypto_op *op)
{
	bool enc = op->dir == CRYPTO_ENCRYPT;

	job->cipher_mode = IMB_CIPHER_GCM;
	job->hash_alg = IMB_AUTH_AES_GMAC;
	job->cipher_direction = enc ? IMB_DIR_ENCRYPT : IMB_DIR_DECRYPT;
	job->chain_order = enc ? IMB_ORDER_CIPHER_HASH : IMB_ORDER_HASH_CIPHER;
	job->enc_keys = &op->key->gcm;
	job->dec_keys = &op->key->gcm;
	job->key_len_in_bytes = op->key->key_len;
	job->src = op->data;
	job->dst = op->data;
	job->cipher_start_src_offset_in_bytes = 0;
	job->msg_len_to_cipher_in_bytes = op->len;
	job->hash_start_src_offset_in_bytes = 0;
	job->msg_len_to_hash_in_bytes = op->len;
	job->iv = op->iv;
	job->iv_len_in_bytes = CRYPTO_IV_LEN;
	job->u.GCM.aad = op->aad;
	job->u.GCM.aad_len_in_bytes = op->aad_len;
	job->auth_tag_output = enc ? op->tag : op->computed;
	job->auth_tag_output_len_in_bytes = CRYPTO_TAG_LEN;
	job->user_data = op;
}

static void
complete(IMB_JOB *const *jobs, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++) {
		struct crypto_op *op = jobs[i]->user_data;

		op->ok = jobs[i]->status == IMB_STATUS_COMPLETED;
	}
}

/*
 * Every op of the burst is submitted before any completion is collected:
 * that is what lets the library work on many buffers at once.
 */
void
crypto_run(IMB_MGR *mgr, struct crypto_op *ops, uint16_t n)
{
	IMB_JOB *jobs[IMB_MAX_BURST_SIZE];
	uint32_t got, done;

	while (n > 0) {
		uint16_t chunk = n < IMB_MAX_BURST_SIZE ? n : IMB_MAX_BURST_SIZE;

		for (uint16_t i = 0; i < chunk; i++)
			ops[i].ok = 0;
		got = IMB_GET_NEXT_BURST(mgr, chunk, jobs);
		for (uint32_t i = 0; i < got; i++)
			fill_job(jobs[i], &ops[i]);
		done = IMB_SUBMIT_BURST(mgr, got, jobs);
		complete(jobs, done);
		while (done < got) {
			uint32_t f = IMB_FLUSH_BURST(mgr, got - done, jobs);

			if (f == 0)
				break;	/* library error: the rest stay !ok */
			complete(jobs, f);
			done += f;
		}
		if (got == 0)
			break;
		ops += got;
		n -= got;
	}
}

bool
crypto_tag_equal(const uint8_t *a, const uint8_t *b)
{
	uint8_t diff = 0;

	/* Constant time: no early exit on the first differing byte. */
	for (int i = 0; i < CRYPTO_TAG_LEN; i++)
		diff |= a[i] ^ b[i];
	return diff == 0;
}
