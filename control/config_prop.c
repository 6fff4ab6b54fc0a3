/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * config_prop.c - ike-proposals and esp-proposals in strongSwan's syntax
 * (swanctl.conf's proposals and esp_proposals): proposals separated by
 * commas, each a list of algorithm keywords separated by dashes, several
 * of a kind in order of preference.  The keywords are strongSwan's for
 * the algorithms dpvpn implements; the checks are strongSwan's too (an
 * IKE proposal needs a PRF, given or taken from the integrity algorithms,
 * and a DH group; AEAD and classic ciphers do not mix in one proposal).
 * Also the defaults, strongSwan 5.9's restricted to these algorithms.
 */
#define _GNU_SOURCE
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config_parse.h"

/* Transform IDs (IANA IKEv2 parameters), as ike/ike_msg.h has them. */
enum {
	ENCR_AES_CBC = 12, ENCR_AES_GCM_16 = 20, ENCR_CHACHA20_POLY1305 = 28,
	PRF_SHA256 = 5, PRF_SHA384 = 6, PRF_SHA512 = 7,
	INTEG_SHA1_96 = 2, INTEG_SHA256_128 = 12, INTEG_SHA384_192 = 13, INTEG_SHA512_256 = 14,
	DH_MODP2048 = 14, DH_ECP256 = 19, DH_ECP384 = 20, DH_X25519 = 31,
};

enum kind { K_ENCR, K_INTEG, K_PRF, K_DH, K_ESN };

struct keyword {
	const char *name;
	enum kind kind;
	uint16_t id, bits;	/* bits: ENCR key length */
	uint8_t where;		/* 1: IKE, 2: ESP, 3: both */
};

static const struct keyword keywords[] = {
	{ "aes128", K_ENCR, ENCR_AES_CBC, 128, 3 },
	{ "aes256", K_ENCR, ENCR_AES_CBC, 256, 3 },
	{ "aes128gcm16", K_ENCR, ENCR_AES_GCM_16, 128, 3 },
	{ "aes256gcm16", K_ENCR, ENCR_AES_GCM_16, 256, 3 },
	{ "aes128gcm128", K_ENCR, ENCR_AES_GCM_16, 128, 3 },	/* strongSwan's aliases */
	{ "aes256gcm128", K_ENCR, ENCR_AES_GCM_16, 256, 3 },
	{ "chacha20poly1305", K_ENCR, ENCR_CHACHA20_POLY1305, 256, 2 },
	{ "sha1", K_INTEG, INTEG_SHA1_96, 0, 2 },
	{ "sha256", K_INTEG, INTEG_SHA256_128, 0, 3 },
	{ "sha2_256", K_INTEG, INTEG_SHA256_128, 0, 3 },
	{ "sha384", K_INTEG, INTEG_SHA384_192, 0, 1 },
	{ "sha2_384", K_INTEG, INTEG_SHA384_192, 0, 1 },
	{ "sha512", K_INTEG, INTEG_SHA512_256, 0, 1 },
	{ "sha2_512", K_INTEG, INTEG_SHA512_256, 0, 1 },
	{ "prfsha256", K_PRF, PRF_SHA256, 0, 1 },
	{ "prfsha384", K_PRF, PRF_SHA384, 0, 1 },
	{ "prfsha512", K_PRF, PRF_SHA512, 0, 1 },
	{ "modp2048", K_DH, DH_MODP2048, 0, 3 },
	{ "ecp256", K_DH, DH_ECP256, 0, 3 },
	{ "ecp384", K_DH, DH_ECP384, 0, 3 },
	{ "curve25519", K_DH, DH_X25519, 0, 3 },
	{ "x25519", K_DH, DH_X25519, 0, 3 },
	{ "noesn", K_ESN, 1, 0, 2 },
	{ "esn", K_ESN, 2, 0, 2 },
};

static const struct keyword *
keyword_find(const char *s)
{
	for (size_t i = 0; i < sizeof(keywords) / sizeof(keywords[0]); i++)
		if (!strcmp(keywords[i].name, s))
			return &keywords[i];
	return NULL;
}

/* Appends id to a list of n, once; false if the list is full. */
static bool
list_add(uint16_t *list, uint8_t *n, uint16_t id)
{
	for (unsigned i = 0; i < *n; i++)
		if (list[i] == id)
			return true;
	if (*n >= CFG_PROP_ALGS_MAX)
		return false;
	list[(*n)++] = id;
	return true;
}

static bool
encr_add(struct cfg_prop *pr, uint16_t id, uint16_t bits)
{
	for (unsigned i = 0; i < pr->n_encr; i++)
		if (pr->encr[i] == id && pr->encr_bits[i] == bits)
			return true;
	if (pr->n_encr >= CFG_PROP_ALGS_MAX)
		return false;
	pr->encr[pr->n_encr] = id;
	pr->encr_bits[pr->n_encr++] = bits;
	return true;
}

/* One keyword into pr; an error naming it, or 0. */
static int
prop_word(struct parser *p, const char *w, bool esp, struct cfg_prop *pr)
{
	const struct keyword *k = keyword_find(w);
	bool ok = true;

	if (k == NULL || !(k->where & (esp ? 2 : 1)))
		return cfg_kerr(p, "'%s': not an %s algorithm dpvpn negotiates (%s)", w,
				esp ? "ESP" : "IKE", esp ?
				"aes128, aes256, aes128gcm16, aes256gcm16, chacha20poly1305, "
				"sha1, sha256, modp2048, ecp256, ecp384, curve25519, esn, noesn" :
				"aes128, aes256, aes128gcm16, aes256gcm16, sha256, sha384, sha512, "
				"prfsha256, prfsha384, prfsha512, modp2048, ecp256, ecp384, "
				"curve25519");
	switch (k->kind) {
	case K_ENCR: ok = encr_add(pr, k->id, k->bits); break;
	case K_INTEG: ok = list_add(pr->integ, &pr->n_integ, k->id); break;
	case K_PRF: ok = list_add(pr->prf, &pr->n_prf, k->id); break;
	case K_DH: ok = list_add(pr->dh, &pr->n_dh, k->id); break;
	case K_ESN: pr->esn |= (uint8_t)k->id; break;
	}
	if (!ok)
		return cfg_kerr(p, "'%s': more than %d algorithms of its kind in one proposal", w,
				CFG_PROP_ALGS_MAX);
	return 0;
}

/* The PRF of an HMAC integrity algorithm (strongSwan derives it so). */
static uint16_t
prf_of(uint16_t integ)
{
	return integ == INTEG_SHA256_128 ? PRF_SHA256 : integ == INTEG_SHA384_192 ? PRF_SHA384 :
	       PRF_SHA512;
}

/* The whole proposal's checks; text names the proposal. */
static int
prop_check(struct parser *p, const char *text, bool esp, struct cfg_prop *pr)
{
	unsigned aead = 0;

	for (unsigned i = 0; i < pr->n_encr; i++)
		aead += pr->encr[i] != ENCR_AES_CBC;
	if (pr->n_encr == 0)
		return cfg_kerr(p, "'%s': no encryption algorithm", text);
	if (aead != 0 && aead != pr->n_encr)
		return cfg_kerr(p, "'%s': AEAD and classic ciphers in one proposal; make two",
				text);
	if (aead != 0 && pr->n_integ != 0)
		return cfg_kerr(p, "'%s': an integrity algorithm with an AEAD cipher", text);
	if (aead == 0 && pr->n_integ == 0)
		return cfg_kerr(p, "'%s': no integrity algorithm for the CBC cipher", text);
	if (esp)
		return 0;
	for (unsigned i = 0; pr->n_prf == 0 && i < pr->n_integ; i++)
		list_add(pr->prf, &pr->n_prf, prf_of(pr->integ[i]));
	if (pr->n_prf == 0)
		return cfg_kerr(p, "'%s': no PRF (an AEAD proposal names one: prfsha256...)",
				text);
	if (pr->n_dh == 0)
		return cfg_kerr(p, "'%s': no DH group", text);
	return 0;
}

/* "ALG-ALG-...", one proposal, into pr. */
static int
prop_parse(struct parser *p, char *text, bool esp, struct cfg_prop *pr)
{
	char *copy = strdup(text), *w, *save = NULL;
	int rc = 0;

	if (copy == NULL)
		return cfg_kerr(p, "out of memory");
	memset(pr, 0, sizeof(*pr));
	for (w = strtok_r(copy, "-", &save); w != NULL && rc == 0; w = strtok_r(NULL, "-", &save))
		rc = prop_word(p, cfg_trim(w), esp, pr);
	free(copy);
	return rc != 0 ? rc : prop_check(p, text, esp, pr);
}

int
cfg_parse_props(struct parser *p, const char *val, bool esp, struct cfg_prop *out,
		unsigned *n)
{
	char *list = strdup(val), *item, *next;
	int rc = 0;

	if (list == NULL)
		return cfg_kerr(p, "out of memory");
	*n = 0;
	for (item = list; item != NULL && rc == 0; item = next) {
		next = strchr(item, ',');
		if (next != NULL)
			*next++ = '\0';
		item = cfg_trim(item);
		if (*n >= CFG_IKE_PROPS_MAX)
			rc = cfg_kerr(p, "more than %d proposals", CFG_IKE_PROPS_MAX);
		else if (*item == '\0')
			rc = cfg_kerr(p, "an empty proposal");
		else if (!strcmp(item, "default"))
			rc = cfg_kerr(p, "'default': leave the key out for the defaults");
		else
			rc = prop_parse(p, item, esp, &out[*n]);
		for (unsigned i = 0; rc == 0 && i < *n; i++)
			if (!memcmp(&out[i], &out[*n], sizeof(out[i])))
				rc = cfg_kerr(p, "'%s' is listed twice", item);
		if (rc == 0)
			(*n)++;
	}
	free(list);
	if (rc != 0)
		*n = 0;
	return rc;
}

/*
 * strongSwan 5.9's "default" IKE proposals as dpvpn can make them, in
 * charon 5.9.8's order (its log of "configured proposals" for `proposals =
 * default`): the classic proposal (AES-CBC, HMAC-SHA2 integrity, their
 * PRFs) and then the AEAD one (AES-GCM-16), groups Curve25519, ECP-256,
 * ECP-384, MODP-2048; what dpvpn lacks (AES-192, AES-CTR, Camellia, 3DES,
 * AES-XCBC/CMAC, SHA-1, AES-CCM, ChaCha20 for IKE, Curve448, ECP-521,
 * Brainpool, MODP-3072 and up) left out.
 */
void
cfg_default_ike_props(struct cfg_prop *out, unsigned *n)
{
	static const struct cfg_prop defaults[] = {
		{ .encr = { ENCR_AES_CBC, ENCR_AES_CBC }, .encr_bits = { 128, 256 }, .n_encr = 2,
		  .integ = { INTEG_SHA256_128, INTEG_SHA384_192, INTEG_SHA512_256 }, .n_integ = 3,
		  .prf = { PRF_SHA256, PRF_SHA384, PRF_SHA512 }, .n_prf = 3,
		  .dh = { DH_X25519, DH_ECP256, DH_ECP384, DH_MODP2048 }, .n_dh = 4 },
		{ .encr = { ENCR_AES_GCM_16, ENCR_AES_GCM_16 }, .encr_bits = { 128, 256 },
		  .n_encr = 2, .prf = { PRF_SHA256, PRF_SHA384, PRF_SHA512 }, .n_prf = 3,
		  .dh = { DH_X25519, DH_ECP256, DH_ECP384, DH_MODP2048 }, .n_dh = 4 },
	};

	memcpy(out, defaults, sizeof(defaults));
	*n = sizeof(defaults) / sizeof(defaults[0]);
}

/*
 * strongSwan 5.9's default ESP proposals as the dataplane can take them, in
 * charon 5.9.8's order: AES-CBC with HMAC-SHA2-256-128 and HMAC-SHA1-96
 * first (the dataplane has no SHA-384/512 for ESP), then AES-GCM-16; no PFS.
 */
void
cfg_default_esp_props(struct cfg_prop *out, unsigned *n)
{
	static const struct cfg_prop defaults[] = {
		{ .encr = { ENCR_AES_CBC, ENCR_AES_CBC }, .encr_bits = { 128, 256 }, .n_encr = 2,
		  .integ = { INTEG_SHA256_128, INTEG_SHA1_96 }, .n_integ = 2 },
		{ .encr = { ENCR_AES_GCM_16, ENCR_AES_GCM_16 }, .encr_bits = { 128, 256 },
		  .n_encr = 2 },
	};

	memcpy(out, defaults, sizeof(defaults));
	*n = sizeof(defaults) / sizeof(defaults[0]);
}
