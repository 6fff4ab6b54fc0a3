/* SPDX-License-Identifier: BSD-3-Clause */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/rand.h>

#include "crypto.h"
#include "dpvpn_alg.h"

static char describe[48];
/* AVX2/AVX-512 without VAES: H^4 at 16*19, H^1 at 16*22 (lines 4 and 5) */
uint16_t crypto_hkey_off[2] = { 4 * 64, 5 * 64 };

/* Where this code path keeps H^4..H^1 (see crypto.h). */
static void
hkey_lines(const IMB_MGR *mb)
{
	const uint64_t t2 = IMB_FEATURE_VAES | IMB_FEATURE_VPCLMULQDQ;

	if (mb->used_arch == IMB_ARCH_AVX512 && (mb->features & t2) == t2) {
		crypto_hkey_off[0] = 14 * 64;	/* H^4 at 16*59, H^1 at 16*62 */
		crypto_hkey_off[1] = 15 * 64;
	} else if (mb->used_arch == IMB_ARCH_SSE || mb->used_arch == IMB_ARCH_AVX) {
		crypto_hkey_off[0] = 5 * 64;	/* H^1 at 16*22, its Karatsuba half */
		crypto_hkey_off[1] = 7 * 64;	/* at 16*30 */
	}
}

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

bool
crypto_rng_refill(struct crypto_mgr *m)
{
	if (RAND_bytes(m->rng, sizeof(m->rng)) != 1)
		return false;
	m->rng_pos = 0;
	return true;
}

struct crypto_mgr *
crypto_mgr_create(void)
{
	/* C11: the size a multiple of the alignment */
	struct crypto_mgr *m = aligned_alloc(64, (sizeof(*m) + 63) & ~(size_t)63);

	if (m == NULL)
		return NULL;
	m->mb = alloc_mb_mgr(0);
	if (m->mb == NULL)
		goto fail;
	/* The library picks its code path (SSE .. AVX-512) for this CPU.  On
	 * this project's machines AVX-512 beat SSE (SHA-NI) for CBC+HMAC too. */
	init_mb_mgr_auto(m->mb, NULL);
	if (imb_get_errno(m->mb) != 0 || !crypto_rng_refill(m))
		goto fail;
	if (describe[0] == '\0') {
		hkey_lines(m->mb);
		snprintf(describe, sizeof(describe), "intel-ipsec-mb %s %s",
			 imb_get_version_str(), crypto_arch_name(m->mb->used_arch));
	}
	return m;
fail:
	crypto_mgr_free(m);
	return NULL;
}

void
crypto_mgr_free(struct crypto_mgr *m)
{
	if (m == NULL)
		return;
	if (m->mb != NULL)
		free_mb_mgr(m->mb);
	explicit_bzero(m, sizeof(*m));
	free(m);
}

const char *
crypto_describe(void)
{
	return describe;
}

/*
 * ipsec-mb 1.3 has no imb_hmac_ipad_opad(): an HMAC job wants the hash state
 * after one block of (key ^ pad), which is what ONE_BLOCK returns.
 */
static void
hmac_pad(IMB_MGR *mb, int sha256, const uint8_t *key, uint32_t len, uint8_t pad,
	 uint8_t *state)
{
	uint8_t blk[64];

	memset(blk, pad, sizeof(blk));
	for (uint32_t i = 0; i < len; i++)
		blk[i] ^= key[i];
	if (sha256)
		IMB_SHA256_ONE_BLOCK(mb, blk, state);
	else
		IMB_SHA1_ONE_BLOCK(mb, blk, state);
	explicit_bzero(blk, sizeof(blk));
}

bool
crypto_key_init(struct crypto_mgr *m, struct crypto_key *k, uint8_t alg,
		const uint8_t *key, uint32_t key_len,
		const uint8_t *auth_key, uint32_t auth_key_len)
{
	const struct dpvpn_alg_info *a = dpvpn_alg_get(alg);
	IMB_MGR *mb = m->mb;

	if (a == NULL || key_len != a->key_len || auth_key_len != a->auth_key_len)
		return false;
	memset(k, 0, sizeof(*k));
	k->alg = alg;
	k->key_len = key_len;
	k->icv_len = a->icv_len;
	k->aead = a->aead;
	switch (alg) {
	case DPVPN_ALG_AES128_GCM:
		IMB_AES128_GCM_PRE(mb, key, &k->c.gcm);
		k->cipher_mode = IMB_CIPHER_GCM;
		k->hash_alg = IMB_AUTH_AES_GMAC;
		break;
	case DPVPN_ALG_AES256_GCM:
		IMB_AES256_GCM_PRE(mb, key, &k->c.gcm);
		k->cipher_mode = IMB_CIPHER_GCM;
		k->hash_alg = IMB_AUTH_AES_GMAC;
		break;
	case DPVPN_ALG_CHACHA20_POLY1305:
		memcpy(k->c.raw, key, 32);
		k->cipher_mode = IMB_CIPHER_CHACHA20_POLY1305;
		k->hash_alg = IMB_AUTH_CHACHA20_POLY1305;
		break;
	case DPVPN_ALG_NULL_SHA256:
		k->cipher_mode = IMB_CIPHER_NULL;
		k->hash_alg = IMB_AUTH_HMAC_SHA_256;
		break;
	default:	/* AES-CBC with HMAC-SHA1 or HMAC-SHA-256 */
		if (key_len == 16)
			IMB_AES_KEYEXP_128(mb, key, k->c.aes.enc, k->c.aes.dec);
		else
			IMB_AES_KEYEXP_256(mb, key, k->c.aes.enc, k->c.aes.dec);
		k->cipher_mode = IMB_CIPHER_CBC;
		k->hash_alg = a->auth_key_len == 20 ? IMB_AUTH_HMAC_SHA_1 : IMB_AUTH_HMAC_SHA_256;
		break;
	}
	if (!a->aead) {
		int sha256 = k->hash_alg == IMB_AUTH_HMAC_SHA_256;

		hmac_pad(mb, sha256, auth_key, auth_key_len, 0x36, k->ipad);
		hmac_pad(mb, sha256, auth_key, auth_key_len, 0x5c, k->opad);
	}
	return true;
}

void
crypto_key_wipe(struct crypto_key *k)
{
	explicit_bzero(k, sizeof(*k));
}

static void
fill_aead(IMB_JOB *job, struct crypto_op *op)
{
	const struct crypto_key *k = op->key;

	job->enc_keys = k->cipher_mode == IMB_CIPHER_GCM ? (const void *)&k->c.gcm : k->c.raw;
	job->dec_keys = job->enc_keys;
	job->src = op->data;
	job->dst = op->data;
	job->cipher_start_src_offset_in_bytes = 0;
	job->hash_start_src_offset_in_bytes = 0;
	job->msg_len_to_hash_in_bytes = op->len;
	job->iv = op->iv;
	job->iv_len_in_bytes = CRYPTO_NONCE_LEN;
	if (k->cipher_mode == IMB_CIPHER_GCM) {
		job->u.GCM.aad = op->aad;
		job->u.GCM.aad_len_in_bytes = op->aad_len;
	} else {
		job->u.CHACHA20_POLY1305.aad = op->aad;
		job->u.CHACHA20_POLY1305.aad_len_in_bytes = op->aad_len;
	}
}

static void
fill_hmac(IMB_JOB *job, struct crypto_op *op)
{
	const struct crypto_key *k = op->key;

	job->enc_keys = k->c.aes.enc;
	job->dec_keys = k->c.aes.dec;
	job->src = op->auth;
	job->dst = op->data;
	job->cipher_start_src_offset_in_bytes = (uint64_t)(op->data - op->auth);
	job->hash_start_src_offset_in_bytes = 0;
	job->msg_len_to_hash_in_bytes = op->auth_len;
	job->iv = op->data - CRYPTO_CBC_IV_LEN;	/* the IV as sent */
	job->iv_len_in_bytes = k->cipher_mode == IMB_CIPHER_CBC ? CRYPTO_CBC_IV_LEN : 0;
	job->u.HMAC._hashed_auth_key_xor_ipad = k->ipad;
	job->u.HMAC._hashed_auth_key_xor_opad = k->opad;
}

static void
fill_job(IMB_JOB *job, struct crypto_op *op)
{
	const struct crypto_key *k = op->key;
	bool enc = op->dir == CRYPTO_ENCRYPT;

	job->cipher_mode = k->cipher_mode;
	job->hash_alg = k->hash_alg;
	job->cipher_direction = enc ? IMB_DIR_ENCRYPT : IMB_DIR_DECRYPT;
	/* A receiver checks the ICV over the ciphertext, so it hashes first. */
	job->chain_order = enc ? IMB_ORDER_CIPHER_HASH : IMB_ORDER_HASH_CIPHER;
	job->key_len_in_bytes = k->key_len;
	job->msg_len_to_cipher_in_bytes = op->len;
	job->auth_tag_output = enc ? op->tag : op->computed;
	job->auth_tag_output_len_in_bytes = k->icv_len;
	job->user_data = op;
	if (k->aead)
		fill_aead(job, op);
	else
		fill_hmac(job, op);
}

/*
 * AES-GCM through the direct API, in place: the ciphertext and ICV (encrypt)
 * or the plaintext and the ICV to compare (decrypt, in op->computed).  The
 * call's state lives in the manager (one per lcore), overwritten each time.
 */
static void
gcm_direct(struct crypto_mgr *m, struct crypto_op *op, uint8_t key_len, uint8_t icv_len)
{
	const struct crypto_key *k = op->key;
	IMB_MGR *mb = m->mb;

	if (op->dir == CRYPTO_ENCRYPT) {
		if (key_len == 16)
			IMB_AES128_GCM_ENC(mb, &k->c.gcm, &m->gcm_ctx, op->data, op->data, op->len,
					   op->iv, op->aad, op->aad_len, op->tag, icv_len);
		else
			IMB_AES256_GCM_ENC(mb, &k->c.gcm, &m->gcm_ctx, op->data, op->data, op->len,
					   op->iv, op->aad, op->aad_len, op->tag, icv_len);
	} else {
		if (key_len == 16)
			IMB_AES128_GCM_DEC(mb, &k->c.gcm, &m->gcm_ctx, op->data, op->data, op->len,
					   op->iv, op->aad, op->aad_len, op->computed, icv_len);
		else
			IMB_AES256_GCM_DEC(mb, &k->c.gcm, &m->gcm_ctx, op->data, op->data, op->len,
					   op->iv, op->aad, op->aad_len, op->computed, icv_len);
	}
	op->ok = 1;
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
 * Through the burst API: every op is submitted before any completion is
 * collected, which lets the library work on many buffers at once.
 */
static void
run_jobs(IMB_MGR *mb, struct crypto_op **ops, uint16_t n)
{
	IMB_JOB *jobs[IMB_MAX_BURST_SIZE];
	uint32_t got, done;

	while (n > 0) {
		uint16_t chunk = n < IMB_MAX_BURST_SIZE ? n : IMB_MAX_BURST_SIZE;

		for (uint16_t i = 0; i < chunk; i++)
			ops[i]->ok = 0;
		got = IMB_GET_NEXT_BURST(mb, chunk, jobs);
		for (uint32_t i = 0; i < got; i++)
			fill_job(jobs[i], ops[i]);
		done = IMB_SUBMIT_BURST(mb, got, jobs);
		complete(jobs, done);
		while (done < got) {
			uint32_t f = IMB_FLUSH_BURST(mb, got - done, jobs);

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

/* AES-GCM now, one op after the other; the rest as one burst of jobs. */
void
crypto_run(struct crypto_mgr *m, struct crypto_op *ops, uint16_t n)
{
	struct crypto_op *queued[IMB_MAX_BURST_SIZE];
	uint16_t q = 0;

	for (uint16_t i = 0; i < n; i++) {
		uint8_t mode = ops[i].mode, icv_len = ops[i].icv_len;

		if (mode == CRYPTO_MODE_UNSAID) {	/* from the key itself */
			mode = ops[i].key->cipher_mode != IMB_CIPHER_GCM ? CRYPTO_MODE_JOBS :
			       (uint8_t)ops[i].key->key_len;
			icv_len = ops[i].key->icv_len;
		}
		if (mode != CRYPTO_MODE_JOBS) {
			gcm_direct(m, &ops[i], mode, icv_len);
			continue;
		}
		queued[q++] = &ops[i];
		if (q == IMB_MAX_BURST_SIZE) {
			run_jobs(m->mb, queued, q);
			q = 0;
		}
	}
	if (q > 0)
		run_jobs(m->mb, queued, q);
}
