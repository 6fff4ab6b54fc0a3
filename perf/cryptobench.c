/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cryptobench.c - the per-core crypto ceiling that dataplane figures are
 * compared against.  For every ESP transform, payload size and direction it
 * times three engines on one core:
 *
 *   ipsec-mb-burst   32 jobs in flight over 32 buffers, the way the
 *                    dataplane's crypto batching calls intel-ipsec-mb;
 *   ipsec-mb-single  one job in flight (get, fill, submit, flush);
 *   openssl          EVP, one message at a time, contexts keyed once and
 *                    only the IV re-initialised per message.
 *
 * Buffers are laid out as ESP lays out a packet, so the CBC transforms
 * authenticate what ESP authenticates:
 *
 *   | pad | ESP header (8) | IV (0, 8 or 16) | payload ... | ICV |
 *                                            ^ PAY_OFF (24)
 *
 * Before an engine is timed for a transform and size, one pass through it
 * must match one-shot OpenSSL byte for byte (ciphertext and ICV), decrypt
 * back to the plaintext, and reject a corrupted packet; otherwise the
 * figures would describe code that does not do the job.
 */
#include <getopt.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <x86intrin.h>

#include <intel-ipsec-mb.h>
#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/params.h>

#include "crypto.h"

#define NBUF		32	/* buffers per pass = jobs in flight for a burst */
#define ESP_HDR_LEN	8	/* SPI + sequence number; also the AEAD AAD */
#define CBC_IV_LEN	16
#define PAY_OFF		(ESP_HDR_LEN + CBC_IV_LEN)	/* room for the widest IV */
#define SALT_LEN	4	/* RFC 4106 / 7634: nonce = salt || IV */
#define NONCE_LEN	12
#define MAX_ICV		16
#define MAX_SIZE	9000
#define MAX_CLEN	((MAX_SIZE + 15) & ~15)
#define BUF_LEN		((PAY_OFF + MAX_CLEN + MAX_ICV + 63) & ~63)
#define MAX_SIZES	32
#define MAX_REPS	101
#define BENCH_SPI	0xc0de0001u

_Static_assert(NBUF <= IMB_MAX_BURST_SIZE, "burst larger than ipsec-mb accepts");
_Static_assert(BUF_LEN % 64 == 0, "buffers must stay cache-line aligned");
_Static_assert(SALT_LEN + ESP_HDR_LEN == NONCE_LEN, "nonce = salt || 8-byte IV");

enum kind { K_GCM, K_CHACHA, K_CBC_HMAC, K_NULL_HMAC };
enum dir { DIR_ENCRYPT, DIR_DECRYPT, DIR_NUM };
enum engine { ENG_DIRECT, ENG_BURST, ENG_SINGLE, ENG_OPENSSL, ENG_NUM };

static const char *const dir_names[DIR_NUM] = { "encrypt", "decrypt" };
static const char *const engine_names[ENG_NUM] = {
	"ipsec-mb-direct", "ipsec-mb-burst", "ipsec-mb-single", "openssl",
};

struct alg {
	const char *name;
	enum kind kind;
	uint8_t key_len;	/* cipher key bytes; 0 for NULL */
	uint8_t iv_wire;	/* IV bytes carried in the packet */
	uint8_t icv_len;
	uint8_t auth_key_len;	/* HMAC key bytes; 0 for the AEADs */
	const char *md;		/* HMAC digest, as OpenSSL names it */
	IMB_CIPHER_MODE mb_cipher;
	IMB_HASH_ALG mb_hash;
};

/* HMAC key lengths are the digest sizes: RFC 2404 and RFC 4868. */
static const struct alg algs[] = {
	{ "aes128-gcm", K_GCM, 16, 8, 16, 0, NULL,
	  IMB_CIPHER_GCM, IMB_AUTH_AES_GMAC },
	{ "aes256-gcm", K_GCM, 32, 8, 16, 0, NULL,
	  IMB_CIPHER_GCM, IMB_AUTH_AES_GMAC },
	{ "aes128-cbc-sha1", K_CBC_HMAC, 16, 16, 12, 20, "SHA1",
	  IMB_CIPHER_CBC, IMB_AUTH_HMAC_SHA_1 },
	{ "aes256-cbc-sha1", K_CBC_HMAC, 32, 16, 12, 20, "SHA1",
	  IMB_CIPHER_CBC, IMB_AUTH_HMAC_SHA_1 },
	{ "aes128-cbc-sha256", K_CBC_HMAC, 16, 16, 16, 32, "SHA256",
	  IMB_CIPHER_CBC, IMB_AUTH_HMAC_SHA_256 },
	{ "aes256-cbc-sha256", K_CBC_HMAC, 32, 16, 16, 32, "SHA256",
	  IMB_CIPHER_CBC, IMB_AUTH_HMAC_SHA_256 },
	{ "chacha20-poly1305", K_CHACHA, 32, 8, 16, 0, NULL,
	  IMB_CIPHER_CHACHA20_POLY1305, IMB_AUTH_CHACHA20_POLY1305 },
	{ "null-sha256", K_NULL_HMAC, 0, 0, 16, 32, "SHA256",
	  IMB_CIPHER_NULL, IMB_AUTH_HMAC_SHA_256 },
};
#define NALG	(sizeof(algs) / sizeof(algs[0]))

static const uint32_t default_sizes[] = { 64, 128, 256, 512, 1024, 1420, 1518, 9000 };
static const uint8_t salt[SALT_LEN] = { 0xca, 0xfe, 0xba, 0xbe };

/* Expanded ipsec-mb key material; the library wants it 16-byte aligned. */
struct mb_keys {
	struct gcm_key_data gcm;
	_Alignas(16) uint32_t enc[60];	/* AES-256: 15 round keys */
	_Alignas(16) uint32_t dec[60];
	_Alignas(16) uint8_t ipad[32];	/* hash state after (key ^ 0x36) */
	_Alignas(16) uint8_t opad[32];	/* hash state after (key ^ 0x5c) */
};

struct bench {
	const struct alg *alg;
	enum engine eng;
	enum dir dir;
	uint32_t size;		/* payload bytes: what the figures count */
	uint32_t clen;		/* bytes ciphered: size, rounded up to 16 for CBC */
	char label[96];		/* names the case in error messages */
	IMB_MGR *mgr;
	struct mb_keys *mk;
	uint8_t key[32];
	uint8_t auth_key[32];
	uint8_t *pkt[NBUF];	/* header, IV, payload, ICV */
	uint8_t *out[NBUF];	/* decrypt destination */
	uint8_t *scratch;	/* the reference computation's buffer */
	uint8_t nonce[NBUF][NONCE_LEN];
	uint8_t computed[NBUF][MAX_ICV];	/* receiver's ICV before compare */
	uint8_t md[EVP_MAX_MD_SIZE];
	EVP_CIPHER_CTX *cctx;
	EVP_MAC_CTX *mctx;
	uint64_t bad;		/* ICV compares that failed */
	uint64_t failed;	/* jobs or calls that did not complete */
};

struct opts {
	unsigned algs, dirs, engines;	/* bit masks over the tables above */
	uint32_t sizes[MAX_SIZES];
	unsigned nsizes;
	const char *arch;
	unsigned ms, reps;
	bool json;
};

struct row {
	const char *alg, *dir, *engine, *arch;
	uint32_t size, clen;
	unsigned reps;
	double gbps, gbps_min, gbps_max, mpps, cpb;
};

struct sample {
	double gbps, mpps, cpb;
};

static void die(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));

static void
die(const char *fmt, ...)
{
	va_list ap;

	fputs("dpvpn-cryptobench: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

static uint64_t
now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Constant time, as a receiver must: no early exit on the first difference. */
static bool
ct_equal(const uint8_t *a, const uint8_t *b, unsigned n)
{
	uint8_t diff = 0;

	for (unsigned i = 0; i < n; i++)
		diff |= a[i] ^ b[i];
	return diff == 0;
}

static bool
is_aead(const struct alg *a)
{
	return a->kind == K_GCM || a->kind == K_CHACHA;
}

static uint32_t
hdr_off(const struct alg *a)
{
	return PAY_OFF - ESP_HDR_LEN - a->iv_wire;
}

/* What ESP authenticates for the HMAC transforms: header, IV, ciphertext. */
static uint32_t
hash_len(const struct bench *b)
{
	return ESP_HDR_LEN + b->alg->iv_wire + b->clen;
}

static uint8_t *
icv_of(const struct bench *b, unsigned i)
{
	return b->pkt[i] + PAY_OFF + b->clen;
}

/* NULL ciphers nothing, so ipsec-mb copies nothing: its "plaintext" stays put. */
static uint8_t *
plain_buf(const struct bench *b, unsigned i)
{
	if (b->dir == DIR_ENCRYPT || b->alg->kind == K_NULL_HMAC)
		return b->pkt[i];
	return b->out[i];
}

static void
put_be32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

/* Deterministic plaintext packet i: header, IV and payload differ per buffer. */
static void
fill_plain(const struct bench *b, uint8_t *buf, unsigned i)
{
	uint8_t *h = buf + hdr_off(b->alg);

	memset(buf, 0, PAY_OFF + b->clen + MAX_ICV);
	put_be32(h, BENCH_SPI);
	put_be32(h + 4, i + 1);
	for (unsigned k = 0; k < b->alg->iv_wire; k++)
		h[ESP_HDR_LEN + k] = (uint8_t)(0xa0 ^ (k * 13 + i));
	for (uint32_t k = 0; k < b->clen; k++)
		buf[PAY_OFF + k] = (uint8_t)(k * 7 + i);
}

static void
make_nonce(const struct bench *b, const uint8_t *buf, uint8_t *nonce)
{
	memcpy(nonce, salt, SALT_LEN);
	memcpy(nonce + SALT_LEN, buf + hdr_off(b->alg) + ESP_HDR_LEN, 8);
}

static void
fill_all(struct bench *b)
{
	for (unsigned i = 0; i < NBUF; i++) {
		fill_plain(b, b->pkt[i], i);
		make_nonce(b, b->pkt[i], b->nonce[i]);
		memset(b->out[i], 0, BUF_LEN);
	}
}

/* ---- intel-ipsec-mb ------------------------------------------------------ */

/* avx512 is only called when asked: on some CPUs it faults instead of failing. */
static IMB_MGR *
mgr_create(const char *arch)
{
	IMB_MGR *mgr = alloc_mb_mgr(0);

	if (mgr == NULL)
		die("alloc_mb_mgr failed");
	if (strcmp(arch, "sse") == 0)
		init_mb_mgr_sse(mgr);
	else if (strcmp(arch, "avx2") == 0)
		init_mb_mgr_avx2(mgr);
	else if (strcmp(arch, "avx512") == 0)
		init_mb_mgr_avx512(mgr);
	else
		init_mb_mgr_auto(mgr, NULL);
	if (imb_get_errno(mgr) != 0)
		die("ipsec-mb manager for arch %s: %s", arch,
		    imb_get_strerror(imb_get_errno(mgr)));
	return mgr;
}

/*
 * ipsec-mb 1.3 has no imb_hmac_ipad_opad(): the job wants the hash state
 * after one block of (key ^ pad), which is what ONE_BLOCK returns.
 */
static void
hmac_pad(IMB_MGR *mgr, const struct alg *a, const uint8_t *key, uint8_t pad,
	 uint8_t *state)
{
	uint8_t blk[64];

	memset(blk, pad, sizeof(blk));
	for (unsigned k = 0; k < a->auth_key_len; k++)
		blk[k] ^= key[k];
	if (a->mb_hash == IMB_AUTH_HMAC_SHA_1)
		IMB_SHA1_ONE_BLOCK(mgr, blk, state);
	else
		IMB_SHA256_ONE_BLOCK(mgr, blk, state);
}

/* Keys are expanded once per transform, as at SA install. */
static void
mb_keys_init(struct bench *b)
{
	const struct alg *a = b->alg;

	if (a->kind == K_GCM && a->key_len == 16)
		IMB_AES128_GCM_PRE(b->mgr, b->key, &b->mk->gcm);
	else if (a->kind == K_GCM)
		IMB_AES256_GCM_PRE(b->mgr, b->key, &b->mk->gcm);
	else if (a->kind == K_CBC_HMAC && a->key_len == 16)
		IMB_AES_KEYEXP_128(b->mgr, b->key, b->mk->enc, b->mk->dec);
	else if (a->kind == K_CBC_HMAC)
		IMB_AES_KEYEXP_256(b->mgr, b->key, b->mk->enc, b->mk->dec);
	if (a->auth_key_len != 0) {
		hmac_pad(b->mgr, a, b->auth_key, 0x36, b->mk->ipad);
		hmac_pad(b->mgr, a, b->auth_key, 0x5c, b->mk->opad);
	}
}

static void
mb_fill_aead(const struct bench *b, IMB_JOB *job, unsigned i)
{
	const uint8_t *aad = b->pkt[i] + hdr_off(b->alg);

	/* ChaCha20-Poly1305 takes the raw key: there is nothing to expand. */
	job->enc_keys = b->alg->kind == K_GCM ? (const void *)&b->mk->gcm : b->key;
	job->dec_keys = job->enc_keys;
	job->hash_start_src_offset_in_bytes = PAY_OFF;
	job->msg_len_to_hash_in_bytes = b->size;
	job->iv = b->nonce[i];
	job->iv_len_in_bytes = NONCE_LEN;
	if (b->alg->kind == K_GCM) {
		job->u.GCM.aad = aad;
		job->u.GCM.aad_len_in_bytes = ESP_HDR_LEN;
	} else {
		job->u.CHACHA20_POLY1305.aad = aad;
		job->u.CHACHA20_POLY1305.aad_len_in_bytes = ESP_HDR_LEN;
	}
}

static void
mb_fill_hmac(const struct bench *b, IMB_JOB *job, unsigned i)
{
	uint32_t h = hdr_off(b->alg);

	job->enc_keys = b->mk->enc;
	job->dec_keys = b->mk->dec;
	job->iv = b->pkt[i] + h + ESP_HDR_LEN;	/* the IV as sent */
	job->iv_len_in_bytes = b->alg->iv_wire;
	job->hash_start_src_offset_in_bytes = h;
	job->msg_len_to_hash_in_bytes = hash_len(b);
	job->u.HMAC._hashed_auth_key_xor_ipad = b->mk->ipad;
	job->u.HMAC._hashed_auth_key_xor_opad = b->mk->opad;
}

static void
mb_fill(struct bench *b, IMB_JOB *job, unsigned i)
{
	bool enc = b->dir == DIR_ENCRYPT;

	job->cipher_mode = b->alg->mb_cipher;
	job->hash_alg = b->alg->mb_hash;
	job->cipher_direction = enc ? IMB_DIR_ENCRYPT : IMB_DIR_DECRYPT;
	/* A receiver checks the ICV over the ciphertext, so it hashes first. */
	job->chain_order = enc ? IMB_ORDER_CIPHER_HASH : IMB_ORDER_HASH_CIPHER;
	job->key_len_in_bytes = b->alg->key_len;
	job->src = b->pkt[i];
	job->dst = plain_buf(b, i) + PAY_OFF;
	job->cipher_start_src_offset_in_bytes = PAY_OFF;
	job->msg_len_to_cipher_in_bytes = b->clen;
	job->auth_tag_output = enc ? icv_of(b, i) : b->computed[i];
	job->auth_tag_output_len_in_bytes = b->alg->icv_len;
	job->user_data = (void *)(uintptr_t)i;
	if (is_aead(b->alg))
		mb_fill_aead(b, job, i);
	else
		mb_fill_hmac(b, job, i);
}

/* The ICV compare is part of a receiver's work, so it is inside the timing. */
static void
mb_complete(struct bench *b, IMB_JOB *const *jobs, uint32_t n)
{
	for (uint32_t k = 0; k < n; k++) {
		unsigned i = (unsigned)(uintptr_t)jobs[k]->user_data;

		if (jobs[k]->status != IMB_STATUS_COMPLETED)
			b->failed++;
		else if (b->dir == DIR_DECRYPT)
			b->bad += !ct_equal(b->computed[i], icv_of(b, i), b->alg->icv_len);
	}
}

/* Every job is submitted before any is collected, as dataplane/crypto.c does. */
static void
mb_burst_pass(struct bench *b)
{
	IMB_JOB *jobs[NBUF];
	uint32_t got, done, n;

	got = IMB_GET_NEXT_BURST(b->mgr, NBUF, jobs);
	if (got != NBUF)
		die("%s: IMB_GET_NEXT_BURST gave %u of %u jobs", b->label, got, NBUF);
	for (uint32_t k = 0; k < got; k++)
		mb_fill(b, jobs[k], k);
	done = IMB_SUBMIT_BURST(b->mgr, got, jobs);
	if (done == 0 && imb_get_errno(b->mgr) != 0)
		die("%s: IMB_SUBMIT_BURST: %s", b->label,
		    imb_get_strerror(imb_get_errno(b->mgr)));
	mb_complete(b, jobs, done);
	while (done < got) {
		n = IMB_FLUSH_BURST(b->mgr, got - done, jobs);
		if (n == 0)
			die("%s: IMB_FLUSH_BURST returned nothing", b->label);
		mb_complete(b, jobs, n);
		done += n;
	}
}

/* One job in flight: what a caller without batching gets. */
static void
mb_single_pass(struct bench *b)
{
	IMB_JOB *job;

	for (unsigned i = 0; i < NBUF; i++) {
		job = IMB_GET_NEXT_JOB(b->mgr);
		mb_fill(b, job, i);
		job = IMB_SUBMIT_JOB(b->mgr);
		if (job == NULL)
			job = IMB_FLUSH_JOB(b->mgr);
		if (job == NULL)
			die("%s: IMB_FLUSH_JOB returned nothing", b->label);
		mb_complete(b, &job, 1);
	}
}

/* ---- intel-ipsec-mb direct API ------------------------------------------- */

/*
 * The AEADs without the job manager: no job to get, fill, submit and
 * collect, a context on the stack per packet, the keys expanded once
 * (mb_keys_init), as a dataplane calling these functions per packet would.
 * CBC+HMAC has no direct path that beats a burst (its multi-buffer lanes
 * fill only with many jobs in flight), so it has no direct engine.
 */
static bool
engine_applies(const struct alg *a, enum engine e)
{
	return e != ENG_DIRECT || is_aead(a);
}

static void
direct_gcm(struct bench *b, unsigned i, uint8_t *dst, uint8_t *tag)
{
	struct gcm_context_data ctx;
	const struct gcm_key_data *k = &b->mk->gcm;
	const uint8_t *src = b->pkt[i] + PAY_OFF, *aad = b->pkt[i] + hdr_off(b->alg);
	uint64_t icv = b->alg->icv_len;

	if (b->dir == DIR_ENCRYPT && b->alg->key_len == 16)
		IMB_AES128_GCM_ENC(b->mgr, k, &ctx, dst, src, b->size, b->nonce[i], aad,
				   ESP_HDR_LEN, tag, icv);
	else if (b->dir == DIR_ENCRYPT)
		IMB_AES256_GCM_ENC(b->mgr, k, &ctx, dst, src, b->size, b->nonce[i], aad,
				   ESP_HDR_LEN, tag, icv);
	else if (b->alg->key_len == 16)
		IMB_AES128_GCM_DEC(b->mgr, k, &ctx, dst, src, b->size, b->nonce[i], aad,
				   ESP_HDR_LEN, tag, icv);
	else
		IMB_AES256_GCM_DEC(b->mgr, k, &ctx, dst, src, b->size, b->nonce[i], aad,
				   ESP_HDR_LEN, tag, icv);
}

/* ChaCha20-Poly1305 takes the raw key; init, one update, finalize. */
static void
direct_chacha(struct bench *b, unsigned i, uint8_t *dst, uint8_t *tag)
{
	struct chacha20_poly1305_context_data ctx;
	const uint8_t *src = b->pkt[i] + PAY_OFF, *aad = b->pkt[i] + hdr_off(b->alg);

	IMB_CHACHA20_POLY1305_INIT(b->mgr, b->key, &ctx, b->nonce[i], aad, ESP_HDR_LEN);
	if (b->dir == DIR_ENCRYPT) {
		IMB_CHACHA20_POLY1305_ENC_UPDATE(b->mgr, b->key, &ctx, dst, src, b->size);
		IMB_CHACHA20_POLY1305_ENC_FINALIZE(b->mgr, &ctx, tag, b->alg->icv_len);
	} else {
		IMB_CHACHA20_POLY1305_DEC_UPDATE(b->mgr, b->key, &ctx, dst, src, b->size);
		IMB_CHACHA20_POLY1305_DEC_FINALIZE(b->mgr, &ctx, tag, b->alg->icv_len);
	}
}

/* Decrypt computes the ICV and compares it in constant time, as ESP must. */
static void
mb_direct_pass(struct bench *b)
{
	bool enc = b->dir == DIR_ENCRYPT;

	for (unsigned i = 0; i < NBUF; i++) {
		uint8_t *dst = plain_buf(b, i) + PAY_OFF;
		uint8_t *tag = enc ? icv_of(b, i) : b->computed[i];

		if (b->alg->kind == K_GCM)
			direct_gcm(b, i, dst, tag);
		else
			direct_chacha(b, i, dst, tag);
		if (!enc)
			b->bad += !ct_equal(b->computed[i], icv_of(b, i), b->alg->icv_len);
	}
}

/* ---- OpenSSL ------------------------------------------------------------- */

static const EVP_CIPHER *
ossl_cipher(const struct alg *a)
{
	switch (a->kind) {
	case K_GCM:
		return a->key_len == 16 ? EVP_aes_128_gcm() : EVP_aes_256_gcm();
	case K_CHACHA:
		return EVP_chacha20_poly1305();
	case K_CBC_HMAC:
		return a->key_len == 16 ? EVP_aes_128_cbc() : EVP_aes_256_cbc();
	default:
		return NULL;
	}
}

static EVP_MAC_CTX *
ossl_mac_new(const struct alg *a, const uint8_t *key)
{
	OSSL_PARAM params[] = {
		OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, (char *)a->md, 0),
		OSSL_PARAM_construct_end(),
	};
	EVP_MAC *mac = EVP_MAC_fetch(NULL, "HMAC", NULL);
	EVP_MAC_CTX *ctx = mac != NULL ? EVP_MAC_CTX_new(mac) : NULL;

	EVP_MAC_free(mac);	/* the context keeps its own reference */
	if (ctx != NULL && EVP_MAC_init(ctx, key, a->auth_key_len, params) != 1) {
		EVP_MAC_CTX_free(ctx);
		ctx = NULL;
	}
	return ctx;
}

static void
ossl_close(struct bench *b)
{
	EVP_CIPHER_CTX_free(b->cctx);
	EVP_MAC_CTX_free(b->mctx);
	b->cctx = NULL;
	b->mctx = NULL;
}

/*
 * Contexts are keyed once per direction (an AES decryption key schedule is
 * not the encryption one); messages then only re-initialise the IV.
 */
static void
ossl_open(struct bench *b)
{
	const struct alg *a = b->alg;
	int enc = b->dir == DIR_ENCRYPT;

	if (ossl_cipher(a) != NULL) {
		b->cctx = EVP_CIPHER_CTX_new();
		if (b->cctx == NULL ||
		    EVP_CipherInit_ex(b->cctx, ossl_cipher(a), NULL, b->key, NULL, enc) != 1)
			die("%s: cannot key the OpenSSL cipher", b->label);
		/* ESP pads to the block itself (RFC 4303 trailer). */
		if (a->kind == K_CBC_HMAC)
			EVP_CIPHER_CTX_set_padding(b->cctx, 0);
	}
	if (a->auth_key_len != 0 && (b->mctx = ossl_mac_new(a, b->auth_key)) == NULL)
		die("%s: cannot key OpenSSL HMAC-%s", b->label, a->md);
}

static bool
aead_seal(struct bench *b, unsigned i)
{
	EVP_CIPHER_CTX *c = b->cctx;
	uint8_t *p = b->pkt[i] + PAY_OFF;
	int l, fl;

	return EVP_CipherInit_ex(c, NULL, NULL, NULL, b->nonce[i], -1) == 1 &&
	       EVP_CipherUpdate(c, NULL, &l, b->pkt[i] + hdr_off(b->alg), ESP_HDR_LEN) == 1 &&
	       EVP_CipherUpdate(c, p, &l, p, (int)b->size) == 1 &&
	       EVP_CipherFinal_ex(c, p + l, &fl) == 1 &&
	       EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_AEAD_GET_TAG, MAX_ICV, icv_of(b, i)) == 1;
}

/* OpenSSL compares the ICV itself, in constant time, inside Final. */
static bool
aead_open(struct bench *b, unsigned i)
{
	EVP_CIPHER_CTX *c = b->cctx;
	const uint8_t *in = b->pkt[i] + PAY_OFF;
	uint8_t *out = b->out[i] + PAY_OFF;
	int l, fl;

	return EVP_CipherInit_ex(c, NULL, NULL, NULL, b->nonce[i], -1) == 1 &&
	       EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_AEAD_SET_TAG, MAX_ICV, icv_of(b, i)) == 1 &&
	       EVP_CipherUpdate(c, NULL, &l, b->pkt[i] + hdr_off(b->alg), ESP_HDR_LEN) == 1 &&
	       EVP_CipherUpdate(c, out, &l, in, (int)b->size) == 1 &&
	       EVP_CipherFinal_ex(c, out + l, &fl) == 1;
}

/* Full digest into b->md; ESP keeps the first icv_len bytes. */
static bool
hmac_run(struct bench *b, const uint8_t *pkt)
{
	size_t n;

	/* No key: restart with the key already set, without re-deriving pads. */
	return EVP_MAC_init(b->mctx, NULL, 0, NULL) == 1 &&
	       EVP_MAC_update(b->mctx, pkt + hdr_off(b->alg), hash_len(b)) == 1 &&
	       EVP_MAC_final(b->mctx, b->md, &n, sizeof(b->md)) == 1;
}

static bool
cbc_run(struct bench *b, const uint8_t *pkt, uint8_t *out)
{
	const uint8_t *iv = pkt + hdr_off(b->alg) + ESP_HDR_LEN;
	int l, fl;

	if (b->cctx == NULL)
		return true;	/* NULL cipher */
	return EVP_CipherInit_ex(b->cctx, NULL, NULL, NULL, iv, -1) == 1 &&
	       EVP_CipherUpdate(b->cctx, out, &l, pkt + PAY_OFF, (int)b->clen) == 1 &&
	       EVP_CipherFinal_ex(b->cctx, out + l, &fl) == 1;
}

static bool
etm_seal(struct bench *b, unsigned i)
{
	if (!cbc_run(b, b->pkt[i], b->pkt[i] + PAY_OFF) || !hmac_run(b, b->pkt[i]))
		return false;
	memcpy(icv_of(b, i), b->md, b->alg->icv_len);
	return true;
}

/* Verify, then decrypt, as a receiver does: 0 good, 1 bad ICV, -1 error. */
static int
etm_open(struct bench *b, unsigned i)
{
	if (!hmac_run(b, b->pkt[i]))
		return -1;
	if (!ct_equal(b->md, icv_of(b, i), b->alg->icv_len))
		return 1;
	return cbc_run(b, b->pkt[i], plain_buf(b, i) + PAY_OFF) ? 0 : -1;
}

static void
ossl_pass(struct bench *b)
{
	bool aead = is_aead(b->alg);
	int r;

	for (unsigned i = 0; i < NBUF; i++) {
		if (b->dir == DIR_ENCRYPT) {
			b->failed += !(aead ? aead_seal(b, i) : etm_seal(b, i));
		} else if (aead) {
			b->bad += !aead_open(b, i);	/* Final fails on a bad ICV */
		} else {
			r = etm_open(b, i);
			b->bad += r == 1;
			b->failed += r < 0;
		}
	}
}

/* ---- checks against one-shot OpenSSL ------------------------------------ */

/* Fresh contexts per call, so no engine's reuse of state is taken on trust. */
static bool
ref_aead(const struct bench *b, uint8_t *buf, const uint8_t *nonce)
{
	EVP_CIPHER_CTX *c = EVP_CIPHER_CTX_new();
	uint8_t *p = buf + PAY_OFF;
	int l, fl;
	bool ok;

	ok = c != NULL &&
	     EVP_EncryptInit_ex(c, ossl_cipher(b->alg), NULL, b->key, nonce) == 1 &&
	     EVP_EncryptUpdate(c, NULL, &l, buf + hdr_off(b->alg), ESP_HDR_LEN) == 1 &&
	     EVP_EncryptUpdate(c, p, &l, p, (int)b->size) == 1 &&
	     EVP_EncryptFinal_ex(c, p + l, &fl) == 1 &&
	     EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_AEAD_GET_TAG, MAX_ICV, p + b->clen) == 1;
	EVP_CIPHER_CTX_free(c);
	return ok;
}

static bool
ref_etm(const struct bench *b, uint8_t *buf)
{
	const struct alg *a = b->alg;
	uint8_t md[EVP_MAX_MD_SIZE], *p = buf + PAY_OFF;
	EVP_CIPHER_CTX *c;
	size_t n;
	int l, fl;
	bool ok = true;

	if (a->kind == K_CBC_HMAC) {
		c = EVP_CIPHER_CTX_new();
		ok = c != NULL &&
		     EVP_EncryptInit_ex(c, ossl_cipher(a), NULL, b->key, p - CBC_IV_LEN) == 1 &&
		     EVP_CIPHER_CTX_set_padding(c, 0) == 1 &&
		     EVP_EncryptUpdate(c, p, &l, p, (int)b->clen) == 1 &&
		     EVP_EncryptFinal_ex(c, p + l, &fl) == 1;
		EVP_CIPHER_CTX_free(c);
	}
	ok = ok && EVP_Q_mac(NULL, "HMAC", NULL, a->md, NULL, b->auth_key, a->auth_key_len,
			     buf + hdr_off(a), hash_len(b), md, sizeof(md), &n) != NULL;
	if (ok)
		memcpy(p + b->clen, md, a->icv_len);
	return ok;
}

static void (*const engine_pass[ENG_NUM])(struct bench *) = {
	[ENG_DIRECT] = mb_direct_pass,
	[ENG_BURST] = mb_burst_pass,
	[ENG_SINGLE] = mb_single_pass,
	[ENG_OPENSSL] = ossl_pass,
};

static void
set_dir(struct bench *b, enum dir d)
{
	b->dir = d;
	ossl_close(b);
	if (b->eng == ENG_OPENSSL)
		ossl_open(b);
}

static void
run_pass(struct bench *b)
{
	b->bad = 0;
	b->failed = 0;
	engine_pass[b->eng](b);
	if (b->failed != 0)
		die("%s %s: %llu of %u messages did not complete", b->label,
		    dir_names[b->dir], (unsigned long long)b->failed, NBUF);
}

static void
check_encrypt(struct bench *b)
{
	uint8_t nonce[NONCE_LEN];
	bool ok;

	set_dir(b, DIR_ENCRYPT);
	fill_all(b);
	run_pass(b);
	for (unsigned i = 0; i < NBUF; i++) {
		fill_plain(b, b->scratch, i);
		make_nonce(b, b->scratch, nonce);
		ok = is_aead(b->alg) ? ref_aead(b, b->scratch, nonce) : ref_etm(b, b->scratch);
		if (!ok)
			die("%s: OpenSSL reference failed", b->label);
		if (memcmp(b->scratch + PAY_OFF, b->pkt[i] + PAY_OFF, b->clen) != 0)
			die("%s: buffer %u: ciphertext differs from OpenSSL", b->label, i);
		if (memcmp(b->scratch + PAY_OFF + b->clen, icv_of(b, i), b->alg->icv_len) != 0)
			die("%s: buffer %u: ICV differs from OpenSSL", b->label, i);
	}
}

/*
 * Every ICV must pass (the receiver's compare matched the reference ICV) and
 * give back the plaintext; a flipped bit must be caught, or the decrypt
 * figures would time a receiver that checks nothing.
 */
static void
check_decrypt(struct bench *b)
{
	set_dir(b, DIR_DECRYPT);
	run_pass(b);
	if (b->bad != 0)
		die("%s: decrypt rejected %llu good packets", b->label,
		    (unsigned long long)b->bad);
	for (unsigned i = 0; i < NBUF; i++) {
		fill_plain(b, b->scratch, i);
		if (memcmp(b->scratch + PAY_OFF, plain_buf(b, i) + PAY_OFF, b->clen) != 0)
			die("%s: buffer %u: decrypt does not give the plaintext", b->label, i);
	}
	b->pkt[NBUF / 2][PAY_OFF] ^= 1;
	run_pass(b);
	b->pkt[NBUF / 2][PAY_OFF] ^= 1;
	if (b->bad != 1)
		die("%s: a corrupted packet was not rejected", b->label);
}

static void
set_label(struct bench *b)
{
	snprintf(b->label, sizeof(b->label), "%s %u B %s", b->alg->name, b->size,
		 engine_names[b->eng]);
}

/* ---- timing -------------------------------------------------------------- */

static double
tsc_hz_measure(void)
{
	struct timespec nap = { .tv_sec = 0, .tv_nsec = 100000000 };
	uint64_t t0 = now_ns(), c0 = __rdtsc(), t1, c1;

	nanosleep(&nap, NULL);
	c1 = __rdtsc();
	t1 = now_ns();
	return (double)(c1 - c0) * 1e9 / (double)(t1 - t0);
}

static struct sample
measure(struct bench *b, uint64_t ns)
{
	void (*pass)(struct bench *) = engine_pass[b->eng];
	uint64_t passes = 0, t0, t1, c0, c1;
	double bytes, sec;

	t0 = now_ns();
	c0 = __rdtsc();
	do {
		pass(b);
		passes++;
	} while (now_ns() - t0 < ns);
	c1 = __rdtsc();
	t1 = now_ns();
	bytes = (double)passes * NBUF * b->size;
	sec = (double)(t1 - t0) / 1e9;
	return (struct sample){
		.gbps = bytes * 8 / sec / 1e9,
		.mpps = (double)passes * NBUF / sec / 1e6,
		.cpb = (double)(c1 - c0) / bytes,
	};
}

static int
cmp_double(const void *x, const void *y)
{
	double a = *(const double *)x, b = *(const double *)y;

	return (a > b) - (a < b);
}

/* Sorts v in place. */
static double
median(double *v, unsigned n)
{
	qsort(v, n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* Decrypt is timed on ciphertext this engine made (and check_* verified). */
static void
prepare_data(struct bench *b, enum dir d)
{
	set_dir(b, DIR_ENCRYPT);
	fill_all(b);
	if (d == DIR_DECRYPT) {
		run_pass(b);
		set_dir(b, DIR_DECRYPT);
	}
	b->bad = 0;
	b->failed = 0;
}

static void
time_case(struct bench *b, enum dir d, const struct opts *o, struct row *r)
{
	double gbps[MAX_REPS], mpps[MAX_REPS], cpb[MAX_REPS];
	uint64_t ns = (uint64_t)o->ms * 1000000u;
	struct sample s;

	prepare_data(b, d);
	measure(b, ns / 4);	/* warm-up: caches, branch predictors, clocks */
	for (unsigned k = 0; k < o->reps; k++) {
		s = measure(b, ns);
		gbps[k] = s.gbps;
		mpps[k] = s.mpps;
		cpb[k] = s.cpb;
	}
	if (b->bad != 0 || b->failed != 0)
		die("%s %s: %llu bad ICVs, %llu failures while timing", b->label,
		    dir_names[d], (unsigned long long)b->bad, (unsigned long long)b->failed);
	*r = (struct row){
		.alg = b->alg->name, .dir = dir_names[d], .engine = engine_names[b->eng],
		.arch = b->eng == ENG_OPENSSL ? "n/a" : crypto_arch_name(b->mgr->used_arch),
		.size = b->size, .clen = b->clen, .reps = o->reps,
		.mpps = median(mpps, o->reps), .cpb = median(cpb, o->reps),
	};
	r->gbps = median(gbps, o->reps);	/* sorts gbps: min and max at the ends */
	r->gbps_min = gbps[0];
	r->gbps_max = gbps[o->reps - 1];
}

/* ---- command line -------------------------------------------------------- */

static void
usage(void)
{
	fputs("usage: dpvpn-cryptobench [--alg LIST] [--size LIST] [--dir LIST]\n"
	      "         [--engine LIST] [--arch auto|sse|avx2|avx512] [--ms N] [--reps R]\n"
	      "         [--quick] [--json]\n"
	      "  --alg     aes128-gcm,aes256-gcm,aes128-cbc-sha1,aes256-cbc-sha1,\n"
	      "            aes128-cbc-sha256,aes256-cbc-sha256,chacha20-poly1305,\n"
	      "            null-sha256 (default: all)\n"
	      "  --size    payload bytes, 1..9000 (default: 64,128,256,512,1024,1420,1518,9000)\n"
	      "  --dir     encrypt,decrypt (default: both)\n"
	      "  --engine  ipsec-mb-direct,ipsec-mb-burst,ipsec-mb-single,openssl\n"
	      "            (default: all; direct: the AEADs only)\n"
	      "  --arch    ipsec-mb code path (default: auto)\n"
	      "  --ms      timed milliseconds per repetition (default: 200)\n"
	      "  --reps    repetitions per case, median reported (default: 3)\n"
	      "  --quick   --ms 30 --reps 1 unless given\n"
	      "  --json    one JSON document on stdout\n", stderr);
	exit(2);
}

static int
name_index(const char *s, const char *(*name_at)(unsigned), unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		if (strcmp(s, name_at(i)) == 0)
			return (int)i;
	return -1;
}

static const char *
alg_name_at(unsigned i)
{
	return algs[i].name;
}

static const char *
dir_name_at(unsigned i)
{
	return dir_names[i];
}

static const char *
engine_name_at(unsigned i)
{
	return engine_names[i];
}

/* Comma list of names into a bit mask; false on an unknown name. */
static bool
parse_names(char *arg, const char *(*name_at)(unsigned), unsigned n, unsigned *mask)
{
	char *save = NULL;
	int i;

	*mask = 0;
	for (char *t = strtok_r(arg, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		i = name_index(t, name_at, n);
		if (i < 0) {
			fprintf(stderr, "dpvpn-cryptobench: unknown name '%s'\n", t);
			return false;
		}
		*mask |= 1u << i;
	}
	return *mask != 0;
}

static bool
parse_uint(const char *s, unsigned lo, unsigned hi, unsigned *v)
{
	char *end;
	unsigned long x = strtoul(s, &end, 10);

	if (*s < '0' || *s > '9' || *end != '\0' || x < lo || x > hi)
		return false;
	*v = (unsigned)x;
	return true;
}

static bool
parse_sizes(char *arg, struct opts *o)
{
	char *save = NULL;
	unsigned v;

	o->nsizes = 0;
	for (char *t = strtok_r(arg, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		if (o->nsizes == MAX_SIZES || !parse_uint(t, 1, MAX_SIZE, &v)) {
			fprintf(stderr, "dpvpn-cryptobench: bad size '%s'\n", t);
			return false;
		}
		o->sizes[o->nsizes++] = v;
	}
	return o->nsizes != 0;
}

static bool
parse_arch(const char *s)
{
	return strcmp(s, "auto") == 0 || strcmp(s, "sse") == 0 ||
	       strcmp(s, "avx2") == 0 || strcmp(s, "avx512") == 0;
}

static void
opts_default(struct opts *o)
{
	*o = (struct opts){
		.algs = (1u << NALG) - 1, .dirs = (1u << DIR_NUM) - 1,
		.engines = (1u << ENG_NUM) - 1, .arch = "auto", .ms = 200, .reps = 3,
	};
	o->nsizes = sizeof(default_sizes) / sizeof(default_sizes[0]);
	memcpy(o->sizes, default_sizes, sizeof(default_sizes));
}

static void
parse_opts(int argc, char **argv, struct opts *o)
{
	static const struct option lopts[] = {
		{ "alg", required_argument, NULL, 'a' },
		{ "size", required_argument, NULL, 's' },
		{ "dir", required_argument, NULL, 'd' },
		{ "engine", required_argument, NULL, 'e' },
		{ "arch", required_argument, NULL, 'A' },
		{ "ms", required_argument, NULL, 'm' },
		{ "reps", required_argument, NULL, 'r' },
		{ "quick", no_argument, NULL, 'q' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	bool ok = true, quick = false, ms_set = false, reps_set = false;
	int c;

	opts_default(o);
	while (ok && (c = getopt_long(argc, argv, "", lopts, NULL)) != -1) {
		switch (c) {
		case 'a': ok = parse_names(optarg, alg_name_at, NALG, &o->algs); break;
		case 's': ok = parse_sizes(optarg, o); break;
		case 'd': ok = parse_names(optarg, dir_name_at, DIR_NUM, &o->dirs); break;
		case 'e': ok = parse_names(optarg, engine_name_at, ENG_NUM, &o->engines); break;
		case 'A': ok = parse_arch(optarg); o->arch = optarg; break;
		case 'm': ok = ms_set = parse_uint(optarg, 1, 600000, &o->ms); break;
		case 'r': ok = reps_set = parse_uint(optarg, 1, MAX_REPS, &o->reps); break;
		case 'q': quick = true; break;
		case 'j': o->json = true; break;
		default: ok = false; break;
		}
	}
	if (!ok || optind != argc)
		usage();
	if (quick && !ms_set)
		o->ms = 30;
	if (quick && !reps_set)
		o->reps = 1;
}

/* ---- output -------------------------------------------------------------- */

struct env {
	const char *arch;
	const char *ossl;
	double tsc_hz;
	char cpu[128];
};

static void
read_cpu_model(char *out, size_t len)
{
	char line[256], *v;
	FILE *f = fopen("/proc/cpuinfo", "r");

	snprintf(out, len, "unknown");
	if (f == NULL)
		return;
	while (fgets(line, sizeof(line), f) != NULL) {
		if (strncmp(line, "model name", 10) != 0 || (v = strchr(line, ':')) == NULL)
			continue;
		v += strspn(v + 1, " \t") + 1;
		v[strcspn(v, "\n")] = '\0';
		snprintf(out, len, "%s", v);
		break;
	}
	fclose(f);
}

static void
table_header(const struct env *e)
{
	printf("# dpvpn-cryptobench: intel-ipsec-mb %s (%s), %s\n", imb_get_version_str(),
	       e->arch, e->ossl);
	printf("# cpu: %s, TSC %.3f GHz; %u buffers per pass\n", e->cpu, e->tsc_hz / 1e9, NBUF);
	printf("%-18s %5s %5s %-7s %-15s %-6s %8s %8s %8s %7s %7s\n", "alg", "size", "clen",
	       "dir", "engine", "arch", "Gbit/s", "min", "max", "Mpps", "cyc/B");
}

static void
table_row(const struct row *r)
{
	printf("%-18s %5u %5u %-7s %-15s %-6s %8.2f %8.2f %8.2f %7.3f %7.2f\n", r->alg,
	       r->size, r->clen, r->dir, r->engine, r->arch, r->gbps, r->gbps_min,
	       r->gbps_max, r->mpps, r->cpb);
	fflush(stdout);
}

static void
json_str(const char *s)
{
	putchar('"');
	for (; *s != '\0'; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			printf("\\%c", c);
		else if (c < 0x20)
			printf("\\u%04x", c);
		else
			putchar(c);
	}
	putchar('"');
}

static void
json_row(const struct row *r)
{
	printf("{\"alg\":\"%s\",\"size\":%u,\"cipher_len\":%u,\"dir\":\"%s\","
	       "\"engine\":\"%s\",\"arch\":\"%s\",", r->alg, r->size, r->clen, r->dir,
	       r->engine, r->arch);
	printf("\"gbps\":%.4f,\"gbps_min\":%.4f,\"gbps_max\":%.4f,\"mpps\":%.4f,"
	       "\"cycles_per_byte\":%.4f,\"reps\":%u}", r->gbps, r->gbps_min, r->gbps_max,
	       r->mpps, r->cpb, r->reps);
}

static void
json_doc(const struct env *e, const struct row *rows, unsigned n)
{
	printf("{\"tool\":\"dpvpn-cryptobench\",\"ipsec_mb\":");
	json_str(imb_get_version_str());
	printf(",\"openssl\":");
	json_str(e->ossl);
	printf(",\"arch\":");
	json_str(e->arch);
	printf(",\"tsc_hz\":%.0f,\"cpu\":", e->tsc_hz);
	json_str(e->cpu);
	printf(",\"buffers_per_pass\":%u,\"rows\":[", NBUF);
	for (unsigned i = 0; i < n; i++) {
		printf(i ? ",\n" : "\n");
		json_row(&rows[i]);
	}
	printf("\n]}\n");
}

/* ---- main ---------------------------------------------------------------- */

static void
bench_init(struct bench *b, const char *arch)
{
	uint8_t *mem;

	*b = (struct bench){ .mgr = mgr_create(arch) };
	if (posix_memalign((void **)&mem, 64, (2 * NBUF + 1) * BUF_LEN) != 0 ||
	    posix_memalign((void **)&b->mk, 64, sizeof(*b->mk)) != 0)
		die("out of memory");
	for (unsigned i = 0; i < NBUF; i++) {
		b->pkt[i] = mem + i * BUF_LEN;
		b->out[i] = mem + (NBUF + i) * BUF_LEN;
	}
	b->scratch = mem + 2 * NBUF * BUF_LEN;
	/* Fixed public patterns: these keys protect nothing, so none is wiped. */
	for (unsigned k = 0; k < sizeof(b->key); k++) {
		b->key[k] = (uint8_t)(0x10 + k);
		b->auth_key[k] = (uint8_t)(0x80 + k);
	}
}

static void
bench_free(struct bench *b)
{
	ossl_close(b);
	free(b->pkt[0]);
	free(b->mk);
	free_mb_mgr(b->mgr);
}

static void
set_size(struct bench *b, uint32_t size)
{
	b->size = size;
	/* CBC ciphers whole blocks; the figures still count the payload only. */
	b->clen = b->alg->kind == K_CBC_HMAC ? (size + 15) & ~15u : size;
}

/* All engines are checked for a size before any is timed at it. */
static unsigned
run_size(struct bench *b, const struct opts *o, struct row *rows)
{
	unsigned n = 0;

	for (unsigned e = 0; e < ENG_NUM; e++) {
		if (!(o->engines & (1u << e)) || !engine_applies(b->alg, e))
			continue;
		b->eng = e;
		set_label(b);
		check_encrypt(b);
		check_decrypt(b);
	}
	for (unsigned d = 0; d < DIR_NUM; d++) {
		for (unsigned e = 0; e < ENG_NUM; e++) {
			if (!(o->dirs & (1u << d)) || !(o->engines & (1u << e)) ||
			    !engine_applies(b->alg, e))
				continue;
			b->eng = e;
			set_label(b);
			time_case(b, d, o, &rows[n]);
			if (!o->json)
				table_row(&rows[n]);
			n++;
		}
	}
	return n;
}

int
main(int argc, char **argv)
{
	struct opts o;
	struct bench b;
	struct env env = { .ossl = OpenSSL_version(OPENSSL_VERSION) };
	struct row *rows;
	unsigned n = 0;

	parse_opts(argc, argv, &o);
	bench_init(&b, o.arch);
	rows = calloc(NALG * MAX_SIZES * DIR_NUM * ENG_NUM, sizeof(*rows));
	if (rows == NULL)
		die("out of memory");
	env.arch = crypto_arch_name(b.mgr->used_arch);
	env.tsc_hz = tsc_hz_measure();
	read_cpu_model(env.cpu, sizeof(env.cpu));
	if (!o.json)
		table_header(&env);
	for (unsigned a = 0; a < NALG; a++) {
		if (!(o.algs & (1u << a)))
			continue;
		b.alg = &algs[a];
		mb_keys_init(&b);
		for (unsigned s = 0; s < o.nsizes; s++) {
			set_size(&b, o.sizes[s]);
			n += run_size(&b, &o, rows + n);
		}
	}
	if (o.json)
		json_doc(&env, rows, n);
	free(rows);
	bench_free(&b);
	return 0;
}
