/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ike_crypto.c - IKEv2 cryptography over OpenSSL 3 (EVP, EVP_MAC and
 * provider key import, BIGNUM for the RFC 3526 prime).  The DH groups,
 * PRFs and integrity algorithms are small tables.
 *
 * Key material lives in local arrays only as long as a function runs and
 * is wiped with explicit_bzero() on every path out; OpenSSL objects (MAC
 * and cipher contexts, keys) wipe themselves when freed.
 */
#define _GNU_SOURCE		/* explicit_bzero */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/dh.h>
#include <openssl/ec.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/obj_mac.h>
#include <openssl/param_build.h>
#include <openssl/rand.h>

#include "ike_crypto.h"

#define EC_POINT_UNCOMPRESSED	0x04	/* SEC1 2.3.3: 0x04 || x || y */
#define EC_POINT_LEN		(1 + IKE_DH_MAX_PUB)
#define KEY_PAD			"Key Pad for IKEv2"	/* 2.15: 17 bytes, no NUL */

/* ---- Diffie-Hellman ---------------------------------------------------- */

enum dh_kind { DH_EC, DH_X25519, DH_MODP };

struct dh_group {
	uint16_t id;
	enum dh_kind kind;
	const char *type;	/* OpenSSL key type */
	const char *name;	/* EC curve or FFC group name, NULL for X25519 */
	int nid;		/* EC curve, for ec_from_private() */
	size_t pub_len;
	size_t secret_len;
};

static const struct dh_group dh_groups[] = {
	{ IKE_DH_MODP2048, DH_MODP, "DH", "modp_2048", 0, 256, 256 },	/* RFC 3526 3 */
	{ IKE_DH_ECP256, DH_EC, "EC", "P-256", NID_X9_62_prime256v1, 64, 32 },
	{ IKE_DH_ECP384, DH_EC, "EC", "P-384", NID_secp384r1, 96, 48 },
	{ IKE_DH_CURVE25519, DH_X25519, "X25519", NULL, 0, 32, 32 },
};

_Static_assert(IKE_DH_MAX_PUB >= 256 && IKE_DH_MAX_SECRET >= 256,
	       "the largest group must fit IKE_DH_MAX_PUB and IKE_DH_MAX_SECRET");

struct ike_dh {
	const struct dh_group *g;
	EVP_PKEY *key;
};

static const struct dh_group *
dh_group_find(uint16_t id)
{
	for (size_t i = 0; i < sizeof(dh_groups) / sizeof(dh_groups[0]); i++)
		if (dh_groups[i].id == id)
			return &dh_groups[i];
	return NULL;
}

size_t
ike_dh_pub_len(uint16_t group)
{
	const struct dh_group *g = dh_group_find(group);

	return g ? g->pub_len : 0;
}

size_t
ike_dh_secret_len(uint16_t group)
{
	const struct dh_group *g = dh_group_find(group);

	return g ? g->secret_len : 0;
}

/*
 * A key of g from fromdata parameters: the group's name, the public value
 * (an octet string for EC, a BIGNUM for MODP) and, for a key pair, the
 * private key.  For EC the provider decodes the point and refuses one that
 * is not on the curve or has a coordinate not below p; the identity has no
 * uncompressed encoding, so it cannot come this way.
 */
static EVP_PKEY *
key_import(const struct dh_group *g, const BIGNUM *priv, const uint8_t *pt, size_t pt_len,
	   const BIGNUM *pub_bn)
{
	OSSL_PARAM_BLD *b = OSSL_PARAM_BLD_new();
	EVP_PKEY_CTX *c = EVP_PKEY_CTX_new_from_name(NULL, g->type, NULL);
	OSSL_PARAM *params = NULL;
	EVP_PKEY *key = NULL;
	int sel = priv ? EVP_PKEY_KEYPAIR : EVP_PKEY_PUBLIC_KEY;

	if (b == NULL || c == NULL ||
	    OSSL_PARAM_BLD_push_utf8_string(b, OSSL_PKEY_PARAM_GROUP_NAME, g->name, 0) != 1 ||
	    (pt != NULL &&
	     OSSL_PARAM_BLD_push_octet_string(b, OSSL_PKEY_PARAM_PUB_KEY, pt, pt_len) != 1) ||
	    (pub_bn != NULL && OSSL_PARAM_BLD_push_BN(b, OSSL_PKEY_PARAM_PUB_KEY, pub_bn) != 1) ||
	    (priv != NULL && OSSL_PARAM_BLD_push_BN(b, OSSL_PKEY_PARAM_PRIV_KEY, priv) != 1) ||
	    (params = OSSL_PARAM_BLD_to_param(b)) == NULL ||
	    EVP_PKEY_fromdata_init(c) != 1 || EVP_PKEY_fromdata(c, &key, sel, params) != 1) {
		EVP_PKEY_free(key);
		key = NULL;
	}
	/* A secure BIGNUM goes to the secure block, which this wipes. */
	OSSL_PARAM_free(params);
	OSSL_PARAM_BLD_free(b);
	EVP_PKEY_CTX_free(c);
	return key;
}

/*
 * An EC key pair from a known scalar.  OpenSSL 3.0 does not compute the
 * public point when importing a private key alone, so do it here.
 */
static EVP_PKEY *
ec_from_private(const struct dh_group *g, const uint8_t *priv, size_t len)
{
	EC_GROUP *grp = EC_GROUP_new_by_curve_name(g->nid);
	EC_POINT *p = grp ? EC_POINT_new(grp) : NULL;
	BIGNUM *bn = BN_secure_new();
	uint8_t pt[EC_POINT_LEN];
	size_t pt_len = 1 + g->pub_len;
	EVP_PKEY *key = NULL;

	if (p != NULL && bn != NULL && BN_bin2bn(priv, (int)len, bn) != NULL &&
	    !BN_is_zero(bn) && BN_cmp(bn, EC_GROUP_get0_order(grp)) < 0 &&
	    EC_POINT_mul(grp, p, bn, NULL, NULL, NULL) == 1 &&
	    EC_POINT_point2oct(grp, p, POINT_CONVERSION_UNCOMPRESSED, pt, pt_len,
			       NULL) == pt_len)
		key = key_import(g, bn, pt, pt_len, NULL);
	BN_clear_free(bn);
	EC_POINT_free(p);
	EC_GROUP_free(grp);
	return key;
}

/*
 * A MODP key pair from a known exponent x: y = g^x mod p, g = 2 for every
 * RFC 3526 group.
 */
static EVP_PKEY *
modp_from_private(const struct dh_group *g, const uint8_t *priv, size_t len)
{
	BIGNUM *x = BN_secure_new(), *p = BN_get_rfc3526_prime_2048(NULL);
	BIGNUM *two = BN_new(), *y = BN_new();
	BN_CTX *bc = BN_CTX_secure_new();
	EVP_PKEY *key = NULL;

	if (x != NULL && p != NULL && two != NULL && y != NULL && bc != NULL &&
	    BN_bin2bn(priv, (int)len, x) != NULL && !BN_is_zero(x) && BN_cmp(x, p) < 0 &&
	    BN_set_word(two, 2) == 1 && BN_mod_exp(y, two, x, p, bc) == 1)
		key = key_import(g, x, NULL, 0, y);
	BN_clear_free(x);
	BN_free(p);
	BN_free(two);
	BN_free(y);
	BN_CTX_free(bc);
	return key;
}

/* A fresh key of a MODP group (the provider's exponent length for it). */
static EVP_PKEY *
modp_keygen(const struct dh_group *g)
{
	EVP_PKEY_CTX *c = EVP_PKEY_CTX_new_from_name(NULL, g->type, NULL);
	OSSL_PARAM params[2];
	EVP_PKEY *key = NULL;

	params[0] = OSSL_PARAM_construct_utf8_string(OSSL_PKEY_PARAM_GROUP_NAME,
						     (char *)g->name, 0);
	params[1] = OSSL_PARAM_construct_end();
	if (c == NULL || EVP_PKEY_keygen_init(c) != 1 || EVP_PKEY_CTX_set_params(c, params) != 1 ||
	    EVP_PKEY_generate(c, &key) != 1) {
		EVP_PKEY_free(key);
		key = NULL;
	}
	EVP_PKEY_CTX_free(c);
	return key;
}

/*
 * The KE payload data of key: x || y (the SEC1 encoding less its 0x04) for
 * EC (RFC 5903 7), u for X25519, y left-padded with zeros to the length of
 * p for MODP (RFC 7296 3.4).
 */
static int
dh_export_pub(const struct dh_group *g, EVP_PKEY *key, uint8_t *pub, size_t *pub_len)
{
	uint8_t pt[EC_POINT_LEN];
	size_t len = g->pub_len;
	BIGNUM *y = NULL;
	int rc = 0;

	if (*pub_len < g->pub_len)
		return -ENOSPC;
	switch (g->kind) {
	case DH_X25519:
		if (EVP_PKEY_get_raw_public_key(key, pub, &len) != 1 || len != g->pub_len)
			rc = -EIO;
		break;
	case DH_EC:
		if (EVP_PKEY_get_octet_string_param(key, OSSL_PKEY_PARAM_PUB_KEY, pt, sizeof(pt),
						    &len) != 1 ||
		    len != 1 + g->pub_len || pt[0] != EC_POINT_UNCOMPRESSED)
			rc = -EIO;
		else
			memcpy(pub, pt + 1, g->pub_len);
		break;
	case DH_MODP:
		if (EVP_PKEY_get_bn_param(key, OSSL_PKEY_PARAM_PUB_KEY, &y) != 1 ||
		    BN_bn2binpad(y, pub, (int)g->pub_len) != (int)g->pub_len)
			rc = -EIO;
		BN_free(y);
		break;
	}
	if (rc == 0)
		*pub_len = g->pub_len;
	return rc;
}

/* Wraps key (consumed, freed on error) and exports its public value. */
static int
dh_wrap(const struct dh_group *g, EVP_PKEY *key, struct ike_dh **out, uint8_t *pub,
	size_t *pub_len)
{
	struct ike_dh *d = NULL;
	int rc;

	if (key == NULL) {
		ERR_clear_error();
		return -EIO;
	}
	rc = dh_export_pub(g, key, pub, pub_len);
	if (rc == 0 && (d = calloc(1, sizeof(*d))) == NULL)
		rc = -ENOMEM;
	if (rc < 0) {
		EVP_PKEY_free(key);
		return rc;
	}
	d->g = g;
	d->key = key;
	*out = d;
	return 0;
}

/*
 * An EC key pair from the curve's parameters made once per process:
 * EVP_PKEY_Q_keygen by name builds the curve (EC_GROUP_new_by_curve_name,
 * its Montgomery context) for every key, a third of a P-256 exchange's
 * cost.  The parameters are public; the cache is not locked (dpvpnd's IKE
 * runs on one thread) and lives until exit.  NULL: fall back to by-name.
 */
static EVP_PKEY *
ec_params(const struct dh_group *g)
{
	static EVP_PKEY *params[sizeof(dh_groups) / sizeof(dh_groups[0])];
	EVP_PKEY **p = &params[g - dh_groups];
	EVP_PKEY_CTX *c;

	if (*p == NULL) {
		c = EVP_PKEY_CTX_new_from_name(NULL, g->type, NULL);
		if (c == NULL || EVP_PKEY_paramgen_init(c) != 1 ||
		    EVP_PKEY_CTX_set_group_name(c, g->name) != 1 || EVP_PKEY_paramgen(c, p) != 1)
			*p = NULL;
		EVP_PKEY_CTX_free(c);
	}
	return *p;
}

static EVP_PKEY *
ec_keygen(const struct dh_group *g)
{
	EVP_PKEY *p = ec_params(g), *key = NULL;
	EVP_PKEY_CTX *c;

	if (p == NULL)
		return EVP_PKEY_Q_keygen(NULL, NULL, g->type, g->name);
	c = EVP_PKEY_CTX_new_from_pkey(NULL, p, NULL);
	if (c == NULL || EVP_PKEY_keygen_init(c) != 1 || EVP_PKEY_keygen(c, &key) != 1)
		key = NULL;
	EVP_PKEY_CTX_free(c);
	return key;
}

int
ike_dh_new(uint16_t group, struct ike_dh **out, uint8_t *pub, size_t *pub_len)
{
	const struct dh_group *g = dh_group_find(group);
	EVP_PKEY *key;

	if (g == NULL)
		return -EOPNOTSUPP;
	if (out == NULL || pub == NULL || pub_len == NULL)
		return -EINVAL;
	if (*pub_len < g->pub_len)
		return -ENOSPC;
	switch (g->kind) {
	case DH_EC:
		key = ec_keygen(g);
		break;
	case DH_X25519:
		key = EVP_PKEY_Q_keygen(NULL, NULL, g->type);
		break;
	default:
		key = modp_keygen(g);
		break;
	}
	return dh_wrap(g, key, out, pub, pub_len);
}

int
ike_dh_from_private(uint16_t group, const uint8_t *priv, size_t priv_len,
		    struct ike_dh **out, uint8_t *pub, size_t *pub_len)
{
	const struct dh_group *g = dh_group_find(group);
	EVP_PKEY *key;

	if (g == NULL)
		return -EOPNOTSUPP;
	if (priv == NULL || priv_len == 0 || priv_len > g->secret_len ||
	    (g->kind != DH_MODP && priv_len != g->secret_len) || out == NULL || pub == NULL ||
	    pub_len == NULL)
		return -EINVAL;
	if (*pub_len < g->pub_len)
		return -ENOSPC;
	if (g->kind == DH_EC)
		key = ec_from_private(g, priv, priv_len);
	else if (g->kind == DH_MODP)
		key = modp_from_private(g, priv, priv_len);
	else
		key = EVP_PKEY_new_raw_private_key_ex(NULL, g->type, NULL, priv, priv_len);
	if (key == NULL) {
		ERR_clear_error();
		return -EINVAL;		/* e.g. an EC scalar of 0 or not below the order */
	}
	return dh_wrap(g, key, out, pub, pub_len);
}

/*
 * The peer's MODP public value as a key, if 1 < y < p - 1: 0, 1 and p - 1
 * would force g^ir into {0, 1, p - 1} whatever our exponent (a small
 * subgroup attack, RFC 6989 2.1).  The provider checks the rest (y^q = 1).
 */
static EVP_PKEY *
modp_peer_key(const struct dh_group *g, const uint8_t *peer)
{
	BIGNUM *y = BN_bin2bn(peer, (int)g->pub_len, NULL);
	BIGNUM *p = BN_get_rfc3526_prime_2048(NULL);
	BIGNUM *pm1 = p ? BN_dup(p) : NULL;
	EVP_PKEY *key = NULL;

	if (y != NULL && pm1 != NULL && BN_sub_word(pm1, 1) == 1 &&
	    BN_cmp(y, BN_value_one()) > 0 && BN_cmp(y, pm1) < 0)
		key = key_import(g, NULL, NULL, 0, y);
	BN_free(y);
	BN_free(p);
	BN_free(pm1);
	return key;
}

/*
 * The peer's EC point on the cached curve (ec_params): the same checks as
 * key_import (EC_POINT_oct2point: coordinates below p, on the curve), the
 * curve not built again.
 */
static EVP_PKEY *
ec_peer_key(const struct dh_group *g, const uint8_t *pt, size_t pt_len)
{
	EVP_PKEY *p = ec_params(g), *key;

	if (p == NULL)
		return key_import(g, NULL, pt, pt_len, NULL);
	key = EVP_PKEY_new();
	if (key == NULL || EVP_PKEY_copy_parameters(key, p) != 1 ||
	    EVP_PKEY_set1_encoded_public_key(key, pt, pt_len) != 1) {
		EVP_PKEY_free(key);
		return NULL;
	}
	return key;
}

/* The peer's public value as a key; NULL if OpenSSL will not have it. */
static EVP_PKEY *
dh_peer_key(const struct dh_group *g, const uint8_t *peer)
{
	uint8_t pt[EC_POINT_LEN];

	switch (g->kind) {
	case DH_X25519:
		return EVP_PKEY_new_raw_public_key_ex(NULL, g->type, NULL, peer, g->pub_len);
	case DH_MODP:
		return modp_peer_key(g, peer);
	default:
		pt[0] = EC_POINT_UNCOMPRESSED;
		memcpy(pt + 1, peer, g->pub_len);
		return ec_peer_key(g, pt, 1 + g->pub_len);
	}
}

/*
 * g^ir with c set up: MODP secrets keep their leading zeros (RFC 7296
 * 2.14: g^ir is as long as p), which OpenSSL strips unless asked.
 */
static bool
dh_run(const struct dh_group *g, EVP_PKEY_CTX *c, EVP_PKEY *pk, uint8_t *secret)
{
	static const uint8_t zero[IKE_DH_MAX_SECRET];
	size_t len = g->secret_len;

	/*
	 * validate = 1 runs the provider's public key check once more (on the
	 * curve, not the identity; y^q = 1 for MODP).  X25519 derivation fails
	 * by itself on an all-zero result; the explicit check below keeps RFC
	 * 8031 2.3's rule from resting on that.
	 */
	return EVP_PKEY_derive_init(c) == 1 &&
	       (g->kind != DH_MODP || EVP_PKEY_CTX_set_dh_pad(c, 1) == 1) &&
	       EVP_PKEY_derive_set_peer_ex(c, pk, 1) == 1 &&
	       EVP_PKEY_derive(c, secret, &len) == 1 && len == g->secret_len &&
	       CRYPTO_memcmp(secret, zero, len) != 0;
}

int
ike_dh_derive(struct ike_dh *d, const uint8_t *peer, size_t peer_len, uint8_t *secret,
	      size_t *secret_len)
{
	EVP_PKEY_CTX *c = NULL;
	EVP_PKEY *pk;
	int rc = -EINVAL;

	if (d == NULL || peer == NULL || secret == NULL || secret_len == NULL ||
	    peer_len != d->g->pub_len)
		return -EINVAL;
	if (*secret_len < d->g->secret_len)
		return -ENOSPC;
	pk = dh_peer_key(d->g, peer);
	if (pk == NULL) {
		ERR_clear_error();
		return -EINVAL;
	}
	c = EVP_PKEY_CTX_new_from_pkey(NULL, d->key, NULL);
	if (c == NULL)
		rc = -ENOMEM;
	else if (dh_run(d->g, c, pk, secret))
		rc = 0;
	if (rc == 0) {
		*secret_len = d->g->secret_len;
	} else {
		explicit_bzero(secret, *secret_len);	/* all of it: no partial result */
		ERR_clear_error();	/* a bad peer value is not a library fault */
	}
	EVP_PKEY_CTX_free(c);
	EVP_PKEY_free(pk);
	return rc;
}

void
ike_dh_free(struct ike_dh *d)
{
	if (d == NULL)
		return;
	EVP_PKEY_free(d->key);
	free(d);
}

/* ---- PRF --------------------------------------------------------------- */

struct prf_alg {
	uint16_t id;
	const char *digest;	/* the HMAC's hash, OpenSSL name */
	size_t len;		/* output bytes */
};

static const struct prf_alg prf_algs[] = {
	{ IKE_PRF_HMAC_SHA2_256, "SHA2-256", 32 },
	{ IKE_PRF_HMAC_SHA2_384, "SHA2-384", 48 },
	{ IKE_PRF_HMAC_SHA2_512, "SHA2-512", 64 },
};

_Static_assert(IKE_PRF_MAX_LEN >= 64, "PRF output must fit IKE_PRF_MAX_LEN");

/*
 * The integrity algorithms: the HMAC of a hash, keyed with as many bytes
 * as the hash has, its output truncated to half (RFC 4868 2.1, 2.3).  The
 * PRF of the same hash computes it; only the truncation differs.
 */
struct integ_alg {
	uint16_t id;
	uint16_t prf;		/* the PRF with the same HMAC */
	size_t key_len;
	size_t icv_len;
};

static const struct integ_alg integ_algs[] = {
	{ IKE_INTEG_HMAC_SHA2_256_128, IKE_PRF_HMAC_SHA2_256, 32, 16 },
	{ IKE_INTEG_HMAC_SHA2_384_192, IKE_PRF_HMAC_SHA2_384, 48, 24 },
	{ IKE_INTEG_HMAC_SHA2_512_256, IKE_PRF_HMAC_SHA2_512, 64, 32 },
};

_Static_assert(IKE_ICV_MAX_LEN >= 32 && IKE_PRF_MAX_LEN >= 64,
	       "ICVs and integrity keys must fit IKE_ICV_MAX_LEN and struct ike_keys");

static const struct integ_alg *
integ_find(uint16_t id)
{
	for (size_t i = 0; i < sizeof(integ_algs) / sizeof(integ_algs[0]); i++)
		if (integ_algs[i].id == id)
			return &integ_algs[i];
	return NULL;
}

size_t
ike_integ_key_len(uint16_t integ)
{
	const struct integ_alg *a = integ_find(integ);

	return a ? a->key_len : 0;
}

size_t
ike_integ_icv_len(uint16_t integ)
{
	const struct integ_alg *a = integ_find(integ);

	return a ? a->icv_len : 0;
}

static const struct prf_alg *
prf_find(uint16_t id)
{
	for (size_t i = 0; i < sizeof(prf_algs) / sizeof(prf_algs[0]); i++)
		if (prf_algs[i].id == id)
			return &prf_algs[i];
	return NULL;
}

size_t
ike_prf_len(uint16_t prf_id)
{
	const struct prf_alg *a = prf_find(prf_id);

	return a ? a->len : 0;
}

static bool
iov_ok(const struct ike_iov *v, unsigned int n, unsigned int max)
{
	if (n > max || (n > 0 && v == NULL))
		return false;
	for (unsigned int i = 0; i < n; i++)
		if (v[i].base == NULL && v[i].len != 0)
			return false;
	return true;
}

/* prf(key, v[0] | ...) into out (a->len bytes); arguments already checked. */
static int
prf_run(const struct prf_alg *a, const uint8_t *key, size_t klen, const struct ike_iov *v,
	unsigned int n, uint8_t *out)
{
	EVP_MAC *mac = EVP_MAC_fetch(NULL, OSSL_MAC_NAME_HMAC, NULL);
	EVP_MAC_CTX *c = mac ? EVP_MAC_CTX_new(mac) : NULL;
	OSSL_PARAM params[2];
	size_t len = 0;
	int rc = -EIO;

	if (c == NULL) {
		rc = -ENOMEM;
		goto out;
	}
	params[0] = OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST,
						     (char *)a->digest, 0);
	params[1] = OSSL_PARAM_construct_end();
	if (EVP_MAC_init(c, key, klen, params) != 1)
		goto out;
	for (unsigned int i = 0; i < n; i++)
		if (v[i].len > 0 && EVP_MAC_update(c, v[i].base, v[i].len) != 1)
			goto out;
	if (EVP_MAC_final(c, out, &len, a->len) == 1 && len == a->len)
		rc = 0;
out:
	if (rc < 0)
		explicit_bzero(out, a->len);
	EVP_MAC_CTX_free(c);	/* wipes the HMAC state, which holds the key */
	EVP_MAC_free(mac);
	return rc;
}

int
ike_prf(uint16_t prf_id, const uint8_t *key, size_t klen, const struct ike_iov *v,
	unsigned int n, uint8_t *out, size_t *out_len)
{
	const struct prf_alg *a = prf_find(prf_id);
	int rc;

	if (a == NULL)
		return -EOPNOTSUPP;
	if (key == NULL || klen == 0 || !iov_ok(v, n, IKE_IOV_MAX) || out == NULL ||
	    out_len == NULL)
		return -EINVAL;
	if (*out_len < a->len)
		return -ENOSPC;
	rc = prf_run(a, key, klen, v, n, out);
	if (rc == 0)
		*out_len = a->len;
	return rc;
}

/* RFC 7296 2.13; arguments checked but for out_len. */
static int
prf_plus(const struct prf_alg *a, const uint8_t *key, size_t klen,
	 const struct ike_iov *seed, unsigned int n, uint8_t *out, size_t out_len)
{
	struct ike_iov v[IKE_IOV_MAX];
	uint8_t t[IKE_PRF_MAX_LEN];
	uint8_t ctr = 1;
	size_t done = 0;
	int rc = 0;

	if (out_len > IKE_PRF_PLUS_MAX_BLOCKS * a->len)
		return -EINVAL;
	/* v = Tk-1 | S | k, and T0 is empty. */
	v[0] = (struct ike_iov){ t, 0 };
	if (n > 0)
		memcpy(&v[1], seed, n * sizeof(*seed));
	v[n + 1] = (struct ike_iov){ &ctr, 1 };
	while (done < out_len) {
		size_t take = out_len - done < a->len ? out_len - done : a->len;

		rc = prf_run(a, key, klen, v, n + 2, t);
		if (rc < 0)
			break;
		memcpy(out + done, t, take);
		done += take;
		v[0].len = a->len;
		ctr++;		/* wraps only after block 255, the last there can be */
	}
	explicit_bzero(t, sizeof(t));
	if (rc < 0)
		explicit_bzero(out, out_len);
	return rc;
}

int
ike_prf_plus(uint16_t prf_id, const uint8_t *key, size_t klen, const struct ike_iov *v,
	     unsigned int n, uint8_t *out, size_t out_len)
{
	const struct prf_alg *a = prf_find(prf_id);

	if (a == NULL)
		return -EOPNOTSUPP;
	if (key == NULL || klen == 0 || !iov_ok(v, n, IKE_IOV_MAX - 2) ||
	    (out == NULL && out_len > 0))
		return -EINVAL;
	return prf_plus(a, key, klen, v, n, out, out_len);
}

/* ---- IKE SA keys ----------------------------------------------------------- */

/* The public inputs of an IKE SA's key derivation. */
struct sa_in {
	const uint8_t *ni, *nr, *gir, *spi_i, *spi_r;
	size_t ni_len, nr_len, gir_len;
};

static bool
nonces_ok(const uint8_t *ni, size_t ni_len, const uint8_t *nr, size_t nr_len)
{
	return ni != NULL && nr != NULL &&
	       ni_len >= IKE_NONCE_MIN && ni_len <= IKE_NONCE_MAX &&
	       nr_len >= IKE_NONCE_MIN && nr_len <= IKE_NONCE_MAX;
}

/* Checks the arguments and sets the key lengths in k. */
static int
sa_setup(const struct prf_alg *a, size_t enc_key_len, uint16_t integ, const struct sa_in *in,
	 struct ike_keys *k)
{
	const bool aead = integ == IKE_INTEG_NONE;

	if (a == NULL || (!aead && integ_find(integ) == NULL))
		return -EOPNOTSUPP;
	if (!nonces_ok(in->ni, in->ni_len, in->nr, in->nr_len) || in->gir == NULL ||
	    in->gir_len == 0 || in->spi_i == NULL || in->spi_r == NULL || k == NULL)
		return -EINVAL;
	if (enc_key_len != 16 && enc_key_len != 32)
		return -EOPNOTSUPP;
	k->prf_len = a->len;
	k->integ_len = aead ? 0 : integ_find(integ)->key_len;
	k->enc_len = enc_key_len + (aead ? IKE_GCM_SALT_LEN : 0);
	return 0;
}

/* {SK_d | SK_ai | SK_ar | SK_ei | SK_er | SK_pi | SK_pr} = prf+(SKEYSEED, ...). */
static int
sa_expand(const struct prf_alg *a, const uint8_t *skeyseed, size_t sk_len,
	  const struct sa_in *in, struct ike_keys *k)
{
	const struct ike_iov seed[] = {
		{ in->ni, in->ni_len }, { in->nr, in->nr_len },
		{ in->spi_i, IKE_SPI_LEN }, { in->spi_r, IKE_SPI_LEN },
	};
	const struct { uint8_t *dst; size_t len; } cut[] = {
		{ k->sk_d, k->prf_len }, { k->sk_ai, k->integ_len }, { k->sk_ar, k->integ_len },
		{ k->sk_ei, k->enc_len }, { k->sk_er, k->enc_len },
		{ k->sk_pi, k->prf_len }, { k->sk_pr, k->prf_len },
	};
	uint8_t km[5 * IKE_PRF_MAX_LEN + 2 * IKE_ENC_MAX_LEN];
	size_t total = 0, off = 0;
	unsigned int i;
	int rc;

	for (i = 0; i < sizeof(cut) / sizeof(cut[0]); i++)
		total += cut[i].len;
	rc = prf_plus(a, skeyseed, sk_len, seed, sizeof(seed) / sizeof(seed[0]), km, total);
	for (i = 0; rc == 0 && i < sizeof(cut) / sizeof(cut[0]); i++) {
		memcpy(cut[i].dst, km + off, cut[i].len);
		off += cut[i].len;
	}
	explicit_bzero(km, sizeof(km));
	return rc;
}

int
ike_derive_sa_keys(uint16_t prf_id, size_t enc_key_len, uint16_t integ,
		   const uint8_t *ni, size_t ni_len, const uint8_t *nr, size_t nr_len,
		   const uint8_t *gir, size_t gir_len,
		   const uint8_t spi_i[IKE_SPI_LEN], const uint8_t spi_r[IKE_SPI_LEN],
		   struct ike_keys *k)
{
	const struct prf_alg *a = prf_find(prf_id);
	const struct sa_in in = { .ni = ni, .ni_len = ni_len, .nr = nr, .nr_len = nr_len,
				  .gir = gir, .gir_len = gir_len, .spi_i = spi_i, .spi_r = spi_r };
	const struct ike_iov v = { gir, gir_len };
	uint8_t nonces[2 * IKE_NONCE_MAX];	/* public: they travel in clear */
	uint8_t skeyseed[IKE_PRF_MAX_LEN];
	int rc = sa_setup(a, enc_key_len, integ, &in, k);

	if (rc < 0)
		return rc;
	/* SKEYSEED = prf(Ni | Nr, g^ir), keyed with all of both nonces (2.14). */
	memcpy(nonces, ni, ni_len);
	memcpy(nonces + ni_len, nr, nr_len);
	rc = prf_run(a, nonces, ni_len + nr_len, &v, 1, skeyseed);
	if (rc == 0)
		rc = sa_expand(a, skeyseed, a->len, &in, k);
	explicit_bzero(skeyseed, sizeof(skeyseed));
	if (rc < 0)
		ike_keys_wipe(k);
	return rc;
}

int
ike_derive_rekey_keys(uint16_t prf_id, uint16_t old_prf_id, size_t enc_key_len,
		      uint16_t integ, const uint8_t *old_sk_d, size_t old_sk_d_len,
		      const uint8_t *ni, size_t ni_len, const uint8_t *nr, size_t nr_len,
		      const uint8_t *gir, size_t gir_len,
		      const uint8_t spi_i[IKE_SPI_LEN], const uint8_t spi_r[IKE_SPI_LEN],
		      struct ike_keys *k)
{
	const struct prf_alg *a = prf_find(prf_id), *old = prf_find(old_prf_id);
	const struct sa_in in = { .ni = ni, .ni_len = ni_len, .nr = nr, .nr_len = nr_len,
				  .gir = gir, .gir_len = gir_len, .spi_i = spi_i, .spi_r = spi_r };
	const struct ike_iov v[] = { { gir, gir_len }, { ni, ni_len }, { nr, nr_len } };
	uint8_t skeyseed[IKE_PRF_MAX_LEN];
	int rc = sa_setup(a, enc_key_len, integ, &in, k);

	if (rc == 0 && old == NULL)
		rc = -EOPNOTSUPP;
	if (rc == 0 && (old_sk_d == NULL || old_sk_d_len == 0))
		rc = -EINVAL;
	if (rc < 0)
		return rc;
	/* SKEYSEED = prf(SK_d (old), g^ir (new) | Ni | Nr) (2.18), the old SA's PRF. */
	rc = prf_run(old, old_sk_d, old_sk_d_len, v, sizeof(v) / sizeof(v[0]), skeyseed);
	if (rc == 0)
		rc = sa_expand(a, skeyseed, old->len, &in, k);
	explicit_bzero(skeyseed, sizeof(skeyseed));
	if (rc < 0)
		ike_keys_wipe(k);
	return rc;
}

void
ike_keys_wipe(struct ike_keys *k)
{
	if (k != NULL)
		explicit_bzero(k, sizeof(*k));
}

/* ---- Child SA keys -------------------------------------------------------- */

int
ike_child_keymat(uint16_t prf_id, const uint8_t *sk_d, size_t sk_d_len,
		 const uint8_t *gir, size_t gir_len,
		 const uint8_t *ni, size_t ni_len, const uint8_t *nr, size_t nr_len,
		 uint8_t *out, size_t len)
{
	const struct prf_alg *a = prf_find(prf_id);
	struct ike_iov v[3];
	unsigned int n = 0;

	if (a == NULL)
		return -EOPNOTSUPP;
	if (sk_d == NULL || sk_d_len == 0 || (gir != NULL && gir_len == 0) ||
	    !nonces_ok(ni, ni_len, nr, nr_len) || out == NULL || len == 0)
		return -EINVAL;
	/* KEYMAT = prf+(SK_d, [g^ir (new) |] Ni | Nr) (2.17). */
	if (gir != NULL)
		v[n++] = (struct ike_iov){ gir, gir_len };
	v[n++] = (struct ike_iov){ ni, ni_len };
	v[n++] = (struct ike_iov){ nr, nr_len };
	return prf_plus(a, sk_d, sk_d_len, v, n, out, len);
}

/* ---- SK payload, ENCR_AES_GCM_16 ------------------------------------------ */

static int
gcm_args(const uint8_t *key_salt, size_t key_len, const uint8_t *iv, const uint8_t *aad,
	 size_t aad_len, const uint8_t *in, size_t in_len, const uint8_t *out)
{
	if (key_salt == NULL || (key_len != 16 + IKE_GCM_SALT_LEN &&
				 key_len != 32 + IKE_GCM_SALT_LEN) ||
	    iv == NULL || (aad == NULL && aad_len > 0) || (in == NULL && in_len > 0) ||
	    out == NULL)
		return -EINVAL;
	if (aad_len > INT_MAX || in_len > INT_MAX - IKE_GCM_ICV_LEN)
		return -EMSGSIZE;
	return 0;
}

/* A cipher context for key_salt with nonce salt || iv (RFC 5282 4). */
static EVP_CIPHER_CTX *
gcm_start(int enc, const uint8_t *key_salt, size_t key_len, const uint8_t *iv)
{
	const size_t klen = key_len - IKE_GCM_SALT_LEN;
	const EVP_CIPHER *cipher = klen == 16 ? EVP_aes_128_gcm() : EVP_aes_256_gcm();
	EVP_CIPHER_CTX *c = EVP_CIPHER_CTX_new();
	uint8_t nonce[IKE_GCM_SALT_LEN + IKE_GCM_IV_LEN];

	memcpy(nonce, key_salt + klen, IKE_GCM_SALT_LEN);
	memcpy(nonce + IKE_GCM_SALT_LEN, iv, IKE_GCM_IV_LEN);
	/* The 12-byte nonce is GCM's default IV length: nothing to set. */
	if (c != NULL && EVP_CipherInit_ex2(c, cipher, key_salt, nonce, enc, NULL) != 1) {
		EVP_CIPHER_CTX_free(c);
		c = NULL;
	}
	explicit_bzero(nonce, sizeof(nonce));	/* the salt is part of SK_e */
	return c;
}

/* Feeds the AAD, then in to out; in and out may be the same. */
static int
gcm_update(EVP_CIPHER_CTX *c, const uint8_t *aad, size_t aad_len, const uint8_t *in,
	   size_t len, uint8_t *out)
{
	int outl;

	if (aad_len > 0 && EVP_CipherUpdate(c, NULL, &outl, aad, (int)aad_len) != 1)
		return -EIO;
	if (len > 0 && (EVP_CipherUpdate(c, out, &outl, in, (int)len) != 1 ||
			(size_t)outl != len))
		return -EIO;
	return 0;
}

int
ike_aead_seal(const uint8_t *key_salt, size_t key_len, const uint8_t iv[IKE_GCM_IV_LEN],
	      const uint8_t *aad, size_t aad_len, const uint8_t *plain, size_t plen,
	      uint8_t *out)
{
	EVP_CIPHER_CTX *c;
	int rc = gcm_args(key_salt, key_len, iv, aad, aad_len, plain, plen, out);
	int outl;

	if (rc < 0)
		return rc;
	c = gcm_start(1, key_salt, key_len, iv);
	if (c == NULL)
		return -EIO;
	rc = gcm_update(c, aad, aad_len, plain, plen, out);
	if (rc == 0 && (EVP_CipherFinal_ex(c, out + plen, &outl) != 1 ||
			EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_AEAD_GET_TAG, IKE_GCM_ICV_LEN,
					    out + plen) != 1))
		rc = -EIO;
	if (rc < 0)
		explicit_bzero(out, plen + IKE_GCM_ICV_LEN);
	EVP_CIPHER_CTX_free(c);	/* wipes the key schedule */
	return rc;
}

int
ike_aead_open(const uint8_t *key_salt, size_t key_len, const uint8_t iv[IKE_GCM_IV_LEN],
	      const uint8_t *aad, size_t aad_len, const uint8_t *in, size_t in_len,
	      uint8_t *out)
{
	uint8_t icv[IKE_GCM_ICV_LEN];
	EVP_CIPHER_CTX *c;
	size_t plen;
	int rc, outl;

	if (in == NULL)
		return -EINVAL;
	if (in_len < IKE_GCM_ICV_LEN)
		return -EBADMSG;
	plen = in_len - IKE_GCM_ICV_LEN;
	rc = gcm_args(key_salt, key_len, iv, aad, aad_len, in, plen, out);
	if (rc < 0)
		return rc;
	/* Copied first: decrypting in place must not be able to touch it. */
	memcpy(icv, in + plen, IKE_GCM_ICV_LEN);
	c = gcm_start(0, key_salt, key_len, iv);
	if (c == NULL)
		return -EIO;
	if (EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_AEAD_SET_TAG, IKE_GCM_ICV_LEN, icv) != 1)
		rc = -EIO;
	if (rc == 0)
		rc = gcm_update(c, aad, aad_len, in, plen, out);
	/* GCM decrypts before it verifies: the tag check is in Final. */
	if (rc == 0 && EVP_CipherFinal_ex(c, out + plen, &outl) != 1)
		rc = -EBADMSG;
	if (rc < 0)
		explicit_bzero(out, plen);
	EVP_CIPHER_CTX_free(c);
	return rc;
}

/* ---- SK payload, ENCR_AES_CBC + AUTH_HMAC_SHA2_* ---------------------------- */

static int
cbc_args(const uint8_t *ek, size_t ek_len, const struct integ_alg *ia, const uint8_t *ak,
	 size_t ak_len, const uint8_t *iv, const uint8_t *aad, size_t aad_len,
	 const uint8_t *in, size_t len, const uint8_t *out)
{
	if (ia == NULL)
		return -EOPNOTSUPP;
	if (ek == NULL || (ek_len != 16 && ek_len != 32) || ak == NULL ||
	    ak_len != ia->key_len || iv == NULL || (aad == NULL && aad_len > 0) ||
	    (in == NULL && len > 0) || out == NULL)
		return -EINVAL;
	if (aad_len > INT_MAX || len > INT_MAX)
		return -EMSGSIZE;
	return 0;
}

/* AES-CBC of len bytes (a multiple of 16), no padding; in and out may be the same. */
static int
cbc_run(int enc, const uint8_t *ek, size_t ek_len, const uint8_t *iv, const uint8_t *in,
	size_t len, uint8_t *out)
{
	const EVP_CIPHER *cipher = ek_len == 16 ? EVP_aes_128_cbc() : EVP_aes_256_cbc();
	EVP_CIPHER_CTX *c = EVP_CIPHER_CTX_new();
	int outl = 0, rc = -EIO;

	if (c == NULL)
		return -ENOMEM;
	if (EVP_CipherInit_ex2(c, cipher, ek, iv, enc, NULL) == 1 &&
	    EVP_CIPHER_CTX_set_padding(c, 0) == 1 &&
	    EVP_CipherUpdate(c, out, &outl, in, (int)len) == 1 && (size_t)outl == len)
		rc = 0;
	EVP_CIPHER_CTX_free(c);	/* wipes the key schedule */
	return rc;
}

/* The truncated HMAC of aad || iv || ct into icv (ia->icv_len bytes). */
static int
cbc_icv(const struct integ_alg *ia, const uint8_t *ak, const uint8_t *aad, size_t aad_len,
	const uint8_t *iv, const uint8_t *ct, size_t len, uint8_t *icv)
{
	const struct ike_iov v[] = { { aad, aad_len }, { iv, IKE_CBC_IV_LEN }, { ct, len } };
	uint8_t full[IKE_PRF_MAX_LEN];
	int rc = prf_run(prf_find(ia->prf), ak, ia->key_len, v, 3, full);

	if (rc == 0)
		memcpy(icv, full, ia->icv_len);
	explicit_bzero(full, sizeof(full));
	return rc;
}

int
ike_cbc_seal(const uint8_t *ek, size_t ek_len, uint16_t integ, const uint8_t *ak,
	     size_t ak_len, const uint8_t iv[IKE_CBC_IV_LEN], const uint8_t *aad,
	     size_t aad_len, const uint8_t *plain, size_t plen, uint8_t *out)
{
	const struct integ_alg *ia = integ_find(integ);
	int rc = cbc_args(ek, ek_len, ia, ak, ak_len, iv, aad, aad_len, plain, plen, out);

	if (rc < 0)
		return rc;
	if (plen == 0 || plen % IKE_CBC_IV_LEN != 0)
		return -EINVAL;
	rc = cbc_run(1, ek, ek_len, iv, plain, plen, out);
	if (rc == 0)
		rc = cbc_icv(ia, ak, aad, aad_len, iv, out, plen, out + plen);
	if (rc < 0)
		explicit_bzero(out, plen + ia->icv_len);
	return rc;
}

int
ike_cbc_open(const uint8_t *ek, size_t ek_len, uint16_t integ, const uint8_t *ak,
	     size_t ak_len, const uint8_t iv[IKE_CBC_IV_LEN], const uint8_t *aad,
	     size_t aad_len, const uint8_t *in, size_t in_len, uint8_t *out)
{
	const struct integ_alg *ia = integ_find(integ);
	uint8_t icv[IKE_ICV_MAX_LEN];
	size_t len;
	int rc = cbc_args(ek, ek_len, ia, ak, ak_len, iv, aad, aad_len, in, in_len, out);

	if (rc < 0)
		return rc;
	if (in_len <= ia->icv_len || (in_len - ia->icv_len) % IKE_CBC_IV_LEN != 0)
		return -EBADMSG;
	len = in_len - ia->icv_len;
	/* Encrypt-then-MAC: nothing is decrypted before the ICV verifies. */
	rc = cbc_icv(ia, ak, aad, aad_len, iv, in, len, icv);
	if (rc == 0 && CRYPTO_memcmp(icv, in + len, ia->icv_len) != 0)
		rc = -EBADMSG;
	if (rc == 0)
		rc = cbc_run(0, ek, ek_len, iv, in, len, out);
	if (rc < 0 && rc != -EBADMSG)
		explicit_bzero(out, len);
	return rc;
}

int
ike_sk_unpad(const uint8_t *plain, size_t plen, size_t *payload_len)
{
	size_t pad;

	if ((plain == NULL && plen > 0) || payload_len == NULL)
		return -EINVAL;
	if (plen == 0)
		return -EBADMSG;	/* not even the pad length byte */
	pad = plain[plen - 1];
	if (pad > plen - 1)
		return -EBADMSG;
	*payload_len = plen - 1 - pad;
	return 0;
}

/* ---- Authentication -------------------------------------------------------- */

int
ike_psk_auth(uint16_t prf_id, const uint8_t *psk, size_t psk_len,
	     const struct ike_iov *signed_octets, unsigned int n, uint8_t *out, size_t *out_len)
{
	const struct ike_iov pad = { KEY_PAD, sizeof(KEY_PAD) - 1 };
	uint8_t key[IKE_PRF_MAX_LEN];
	size_t klen = sizeof(key);
	int rc;

	/* The padded key, not the PSK itself, keys the AUTH computation (2.15). */
	rc = ike_prf(prf_id, psk, psk_len, &pad, 1, key, &klen);
	if (rc == 0)
		rc = ike_prf(prf_id, key, klen, signed_octets, n, out, out_len);
	explicit_bzero(key, sizeof(key));
	return rc;
}

int
ike_id_mac(uint16_t prf_id, const uint8_t *sk_p, size_t sk_p_len, const uint8_t *id_body,
	   size_t id_len, uint8_t *out, size_t *out_len)
{
	const struct ike_iov v = { id_body, id_len };

	return ike_prf(prf_id, sk_p, sk_p_len, &v, 1, out, out_len);
}

bool
ike_auth_equal(const void *a, const void *b, size_t len)
{
	return CRYPTO_memcmp(a, b, len) == 0;
}

/* ---- Randomness ------------------------------------------------------------ */

int
ike_random(uint8_t *buf, size_t len)
{
	if (buf == NULL && len > 0)
		return -EINVAL;
	if (len > INT_MAX)
		return -EMSGSIZE;
	if (len == 0)
		return 0;
	return RAND_bytes(buf, (int)len) == 1 ? 0 : -EIO;
}
