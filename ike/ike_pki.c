/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ike_pki.c - certificates for IKEv2 (ike_pki.h): credentials, trust
 * anchors, chain validation, identities and AUTH signatures, on OpenSSL 3.
 *
 * Every function clears OpenSSL's error queue before it returns: a refusal
 * here is reported through err, and a stale queue entry would be blamed on
 * the next, unrelated, OpenSSL call of the process.
 */
#define _GNU_SOURCE		/* memmem */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/ec.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/objects.h>
#include <openssl/pem.h>
#include <openssl/rsa.h>
#include <openssl/x509.h>
#include <openssl/x509_vfy.h>
#include <openssl/x509v3.h>

#include "ike_msg.h"
#include "ike_pki.h"

#define RSA_MIN_BITS	2048
#define SIGNED_MAX	(64 * 1024)	/* signed octets: an IKE_SA_INIT message and more */

struct ike_pki_cred {
	EVP_PKEY *key;
	int type;			/* EVP_PKEY_RSA, EVP_PKEY_EC or EVP_PKEY_ED25519 */
	uint16_t curve_hash;		/* EC: the hash of its curve (P-256: SHA2_256) */
	unsigned n;
	X509 *cert[IKE_PKI_CHAIN_MAX];	/* [0] the end entity */
	uint8_t *der[IKE_PKI_CHAIN_MAX];
	size_t der_len[IKE_PKI_CHAIN_MAX];
	uint8_t keyid[IKE_PKI_CHAIN_MAX][IKE_PKI_KEYID_LEN];	/* SHA-1 of each SPKI */
};

struct ike_pki_trust {
	X509_STORE *store;
	unsigned n_ca, n_crl;
	uint8_t (*keyid)[IKE_PKI_KEYID_LEN];	/* n_ca of them, for CERTREQ */
};

struct ike_pki_peer {
	X509 *cert;
	EVP_PKEY *key;			/* the certificate's; not a reference of our own */
};

static const char *const fail_names[] = {
#define X(n, s) s,
	IKE_PKI_FAIL_LIST(X)
#undef X
};

const char *
ike_pki_fail_name(enum ike_pki_fail f)
{
	return f < IKE_PKI_FAIL_N ? fail_names[f] : "?";
}

/* err gets the message; OpenSSL's queue is emptied.  Returns rc. */
static int
fail(int rc, char *err, size_t elen, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static int
fail(int rc, char *err, size_t elen, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, elen, fmt, ap);
	va_end(ap);
	ERR_clear_error();
	return rc;
}

/* ---- reading certificates and keys -------------------------------------- */

static bool
is_pem(const uint8_t *buf, size_t len)
{
	static const char tag[] = "-----BEGIN ";

	return len >= sizeof(tag) - 1 && memmem(buf, len, tag, sizeof(tag) - 1) != NULL;
}

/*
 * Up to max certificates of buf (PEM, or one DER), into out[]; the count, or
 * -EBADMSG (none, trailing bytes after a DER one, or more than max).
 */
static int
read_certs(const uint8_t *buf, size_t len, X509 **out, unsigned max)
{
	const uint8_t *p = buf;
	unsigned n = 0;
	BIO *bio;
	X509 *x;

	if (len == 0 || len > INT32_MAX)
		return -EBADMSG;
	if (!is_pem(buf, len)) {
		x = d2i_X509(NULL, &p, (long)len);
		if (x == NULL || p != buf + len || max == 0) {
			X509_free(x);
			return -EBADMSG;
		}
		out[0] = x;
		return 1;
	}
	bio = BIO_new_mem_buf(buf, (int)len);
	if (bio == NULL)
		return -ENOMEM;
	while ((x = PEM_read_bio_X509(bio, NULL, NULL, NULL)) != NULL) {
		if (n == max) {
			X509_free(x);
			break;
		}
		out[n++] = x;
	}
	BIO_free(bio);
	ERR_clear_error();		/* the end of the PEM data reads as an error */
	if (n == 0 || x != NULL) {
		while (n > 0)
			X509_free(out[--n]);
		return -EBADMSG;
	}
	return (int)n;
}

/* Never ask for a passphrase (on a daemon's terminal): encrypted keys fail. */
static int
no_passphrase(char *buf, int size, int rwflag, void *u)
{
	(void)buf, (void)size, (void)rwflag, (void)u;
	return -1;
}

static EVP_PKEY *
read_key(const uint8_t *buf, size_t len)
{
	const uint8_t *p = buf;
	EVP_PKEY *k = NULL;
	BIO *bio;

	if (len == 0 || len > INT32_MAX)
		return NULL;
	if (!is_pem(buf, len)) {
		k = d2i_AutoPrivateKey(NULL, &p, (long)len);
		if (k != NULL && p != buf + len) {
			EVP_PKEY_free(k);
			k = NULL;
		}
		return k;
	}
	bio = BIO_new_mem_buf(buf, (int)len);
	if (bio != NULL)
		k = PEM_read_bio_PrivateKey(bio, NULL, no_passphrase, NULL);
	BIO_free(bio);
	return k;
}

/* "subject 'CN=gw, O=Example', serial 1F:03": for log lines, escaped. */
static void
describe(X509 *x, char *out, size_t len)
{
	unsigned long fl = XN_FLAG_SEP_CPLUS_SPC | ASN1_STRFLGS_ESC_CTRL | ASN1_STRFLGS_ESC_MSB |
			   ASN1_STRFLGS_ESC_2253 | ASN1_STRFLGS_UTF8_CONVERT;
	BIGNUM *bn = ASN1_INTEGER_to_BN(X509_get0_serialNumber(x), NULL);
	char *hex = bn != NULL ? BN_bn2hex(bn) : NULL;
	BIO *bio = BIO_new(BIO_s_mem());
	char *name = NULL;
	long n = 0;

	if (bio != NULL && X509_NAME_print_ex(bio, X509_get_subject_name(x), 0, fl) >= 0)
		n = BIO_get_mem_data(bio, &name);
	snprintf(out, len, "subject '%.*s', serial %s", (int)(n > 120 ? 120 : n),
		 name != NULL ? name : "", hex != NULL ? hex : "?");
	BIO_free(bio);
	OPENSSL_free(hex);
	BN_free(bn);
	ERR_clear_error();
}

/* ---- our credential ----------------------------------------------------- */

/* The key's type and, for EC, its curve's hash; -ENOTSUP with err. */
static int
key_kind(EVP_PKEY *k, struct ike_pki_cred *c, char *err, size_t elen)
{
	char group[64];

	c->type = EVP_PKEY_get_base_id(k);
	if (c->type == EVP_PKEY_RSA) {
		if (EVP_PKEY_get_bits(k) < RSA_MIN_BITS)
			return fail(-ENOTSUP, err, elen, "private key: RSA of %d bits, "
				    "at least %d needed", EVP_PKEY_get_bits(k), RSA_MIN_BITS);
		return 0;
	}
	if (c->type == EVP_PKEY_ED25519)
		return 0;
	if (c->type != EVP_PKEY_EC)
		return fail(-ENOTSUP, err, elen, "private key: type %s, not RSA, EC or Ed25519",
			    OBJ_nid2sn(c->type));
	if (!EVP_PKEY_get_group_name(k, group, sizeof(group), NULL))
		group[0] = '\0';
	if (strcmp(group, "prime256v1") == 0)
		c->curve_hash = IKE_HASH_SHA2_256;
	else if (strcmp(group, "secp384r1") == 0)
		c->curve_hash = IKE_HASH_SHA2_384;
	else if (strcmp(group, "secp521r1") == 0)
		c->curve_hash = IKE_HASH_SHA2_512;
	else
		return fail(-ENOTSUP, err, elen, "private key: EC curve '%s', not P-256, "
			    "P-384 or P-521", group);
	return 0;
}

static int spki_sha1(X509 *x, uint8_t out[IKE_PKI_KEYID_LEN]);

static int
cred_der(struct ike_pki_cred *c)
{
	for (unsigned i = 0; i < c->n; i++) {
		unsigned char *d = NULL;
		int n = i2d_X509(c->cert[i], &d);

		if (n <= 0 || spki_sha1(c->cert[i], c->keyid[i]) != 0) {
			OPENSSL_free(d);
			return -ENOMEM;
		}
		c->der[i] = d;
		c->der_len[i] = (size_t)n;
	}
	return 0;
}

int
ike_pki_cred_load(const uint8_t *cert, size_t cert_len, const uint8_t *key, size_t key_len,
		  struct ike_pki_cred **out, char *err, size_t elen)
{
	struct ike_pki_cred *c = OPENSSL_zalloc(sizeof(*c));
	int rc;

	*out = NULL;
	if (c == NULL)
		return fail(-ENOMEM, err, elen, "certificate: out of memory");
	rc = read_certs(cert, cert_len, c->cert, IKE_PKI_CHAIN_MAX);
	if (rc < 0) {
		rc = fail(rc, err, elen, "certificate: no PEM or DER certificate, or more "
			  "than %d", IKE_PKI_CHAIN_MAX);
		goto bad;
	}
	c->n = (unsigned)rc;
	c->key = read_key(key, key_len);
	if (c->key == NULL) {
		rc = fail(-EBADMSG, err, elen, "private key: no PEM or DER private key "
			  "(an encrypted one is not read)");
		goto bad;
	}
	if ((rc = key_kind(c->key, c, err, elen)) != 0)
		goto bad;
	if (X509_check_private_key(c->cert[0], c->key) != 1) {
		char d[IKE_PKI_DESC_MAX];

		describe(c->cert[0], d, sizeof(d));
		rc = fail(-EACCES, err, elen, "private key: not the key of the certificate "
			  "(%s)", d);
		goto bad;
	}
	if ((rc = cred_der(c)) != 0) {
		rc = fail(rc, err, elen, "certificate: out of memory");
		goto bad;
	}
	*out = c;
	return 0;
bad:
	ike_pki_cred_free(c);
	return rc;
}

void
ike_pki_cred_free(struct ike_pki_cred *c)
{
	if (c == NULL)
		return;
	EVP_PKEY_free(c->key);		/* frees the key's own storage cleansed */
	for (unsigned i = 0; i < c->n; i++) {
		X509_free(c->cert[i]);
		OPENSSL_free(c->der[i]);
	}
	OPENSSL_free(c);
}

unsigned
ike_pki_cred_count(const struct ike_pki_cred *c)
{
	return c->n;
}

void
ike_pki_cred_der(const struct ike_pki_cred *c, unsigned i, const uint8_t **der, size_t *len)
{
	*der = c->der[i];
	*len = c->der_len[i];
}

void
ike_pki_cred_keyid(const struct ike_pki_cred *c, unsigned i, uint8_t keyid[IKE_PKI_KEYID_LEN])
{
	memcpy(keyid, c->keyid[i], IKE_PKI_KEYID_LEN);
}

int
ike_pki_cred_subject(const struct ike_pki_cred *c, uint8_t *out, size_t cap, size_t *len)
{
	const unsigned char *d;
	size_t n;

	if (!X509_NAME_get0_der(X509_get_subject_name(c->cert[0]), &d, &n) || n > cap)
		return ERR_clear_error(), -ENOSPC;
	memcpy(out, d, n);
	*len = n;
	return 0;
}

void
ike_pki_cred_describe(const struct ike_pki_cred *c, char *out, size_t len)
{
	describe(c->cert[0], out, len);
}

/* ---- algorithms --------------------------------------------------------- */

static const EVP_MD *
hash_md(uint16_t hash)
{
	switch (hash) {
	case IKE_HASH_SHA1: return EVP_sha1();
	case IKE_HASH_SHA2_256: return EVP_sha256();
	case IKE_HASH_SHA2_384: return EVP_sha384();
	case IKE_HASH_SHA2_512: return EVP_sha512();
	default: return NULL;
	}
}

static uint16_t
md_hash(int nid)
{
	switch (nid) {
	case NID_sha1: return IKE_HASH_SHA1;
	case NID_sha256: return IKE_HASH_SHA2_256;
	case NID_sha384: return IKE_HASH_SHA2_384;
	case NID_sha512: return IKE_HASH_SHA2_512;
	default: return 0;
	}
}

/*
 * RFC 7427 AlgorithmIdentifiers we sign with (made with `openssl asn1parse
 * -genconf`; RSA-PSS: MGF1 with the same hash, salt as long as the hash, as
 * RFC 7427 A.4.3 and strongSwan have it).
 */
static const uint8_t algid_ecdsa[3][12] = {
	{ 0x30, 0x0a, 0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x04, 0x03, 0x02 },
	{ 0x30, 0x0a, 0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x04, 0x03, 0x03 },
	{ 0x30, 0x0a, 0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x04, 0x03, 0x04 },
};
static const uint8_t algid_ed25519[] = { 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70 };
#define PSS_ALGID(h, salt) { \
	0x30, 0x41, 0x06, 0x09, 0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, \
	0x0a, 0x30, 0x34, 0xa0, 0x0f, 0x30, 0x0d, 0x06, 0x09, 0x60, 0x86, 0x48, \
	0x01, 0x65, 0x03, 0x04, 0x02, h, 0x05, 0x00, 0xa1, 0x1c, 0x30, 0x1a, \
	0x06, 0x09, 0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x08, 0x30, \
	0x0d, 0x06, 0x09, 0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x02, h, \
	0x05, 0x00, 0xa2, 0x03, 0x02, 0x01, salt }
static const uint8_t algid_pss[3][67] = {
	PSS_ALGID(0x01, 32), PSS_ALGID(0x02, 48), PSS_ALGID(0x03, 64),
};

/* What a signature is made or checked with. */
struct sigalg {
	int key_type;		/* EVP_PKEY_RSA, EVP_PKEY_EC, EVP_PKEY_ED25519 */
	const EVP_MD *md;	/* NULL for Ed25519 */
	uint16_t hash;		/* IKE_HASH_* */
	bool pss;
	int salt;		/* RSA-PSS */
	unsigned raw_ec_len;	/* methods 9..11: r|s of this many bytes each; 0: DER */
};

int
ike_pki_choose(const struct ike_pki_cred *c, uint32_t peer_hashes, uint8_t *method,
	       uint16_t *hash)
{
	static const uint16_t pref[] = { IKE_HASH_SHA2_256, IKE_HASH_SHA2_384,
					 IKE_HASH_SHA2_512 };
	uint32_t ok = peer_hashes & IKE_HASHES_OURS;

	*method = IKE_AUTH_DIGITAL_SIG;
	if (c->type == EVP_PKEY_ED25519) {
		*hash = IKE_HASH_IDENTITY;
		return ok & IKE_HASH_BIT(IKE_HASH_IDENTITY) ? 0 : -ENOTSUP;
	}
	if (c->type == EVP_PKEY_EC && (ok & IKE_HASH_BIT(c->curve_hash))) {
		*hash = c->curve_hash;
		return 0;
	}
	for (unsigned i = 0; i < sizeof(pref) / sizeof(pref[0]); i++)
		if (ok & IKE_HASH_BIT(pref[i])) {
			*hash = pref[i];
			return 0;
		}
	/* A peer without RFC 7427: the key's own method of RFC 7296 / 4754. */
	*method = c->type == EVP_PKEY_RSA ? IKE_AUTH_RSA_SIG :
		  c->curve_hash == IKE_HASH_SHA2_256 ? IKE_AUTH_ECDSA_256 :
		  c->curve_hash == IKE_HASH_SHA2_384 ? IKE_AUTH_ECDSA_384 : IKE_AUTH_ECDSA_521;
	*hash = c->type == EVP_PKEY_RSA ? IKE_HASH_SHA1 : c->curve_hash;
	return 0;
}

/* The pieces in one buffer (Ed25519 signs in one go); NULL if too long. */
static uint8_t *
join(const struct ike_iov *v, unsigned n, size_t *len)
{
	size_t total = 0, off = 0;
	uint8_t *m;

	for (unsigned i = 0; i < n; i++) {
		if (v[i].len > SIGNED_MAX - total)
			return NULL;
		total += v[i].len;
	}
	m = OPENSSL_malloc(total ? total : 1);
	for (unsigned i = 0; m != NULL && i < n; i++) {
		memcpy(m + off, v[i].base, v[i].len);
		off += v[i].len;
	}
	*len = total;
	return m;
}

/* A digest-sign or -verify context for alg with key k. */
static EVP_MD_CTX *
sig_ctx(EVP_PKEY *k, const struct sigalg *a, bool sign)
{
	EVP_MD_CTX *m = EVP_MD_CTX_new();
	EVP_PKEY_CTX *pc = NULL;
	int ok;

	if (m == NULL)
		return NULL;
	ok = sign ? EVP_DigestSignInit(m, &pc, a->md, NULL, k) :
		    EVP_DigestVerifyInit(m, &pc, a->md, NULL, k);
	if (ok == 1 && a->pss)
		ok = EVP_PKEY_CTX_set_rsa_padding(pc, RSA_PKCS1_PSS_PADDING) == 1 &&
		     EVP_PKEY_CTX_set_rsa_mgf1_md(pc, a->md) == 1 &&
		     EVP_PKEY_CTX_set_rsa_pss_saltlen(pc, a->salt) == 1;
	if (ok != 1) {
		EVP_MD_CTX_free(m);
		return NULL;
	}
	return m;
}

/* An ECDSA signature from DER to r|s of len bytes each (RFC 4754 7). */
static int
ec_der_to_raw(const uint8_t *der, size_t dlen, unsigned len, uint8_t *out)
{
	const uint8_t *p = der;
	ECDSA_SIG *s = d2i_ECDSA_SIG(NULL, &p, (long)dlen);
	const BIGNUM *r, *ss;
	int rc = -EBADMSG;

	if (s != NULL) {
		ECDSA_SIG_get0(s, &r, &ss);
		if (BN_bn2binpad(r, out, (int)len) == (int)len &&
		    BN_bn2binpad(ss, out + len, (int)len) == (int)len)
			rc = 0;
	}
	ECDSA_SIG_free(s);
	return rc;
}

/* r|s (2 * len bytes) to DER into *der (OPENSSL_free it); its length or -1. */
static int
ec_raw_to_der(const uint8_t *raw, unsigned len, uint8_t **der)
{
	ECDSA_SIG *s = ECDSA_SIG_new();
	BIGNUM *r = BN_bin2bn(raw, (int)len, NULL), *ss = BN_bin2bn(raw + len, (int)len, NULL);
	int n = -1;

	*der = NULL;
	if (s != NULL && r != NULL && ss != NULL && ECDSA_SIG_set0(s, r, ss) == 1) {
		r = ss = NULL;		/* the signature's now */
		n = i2d_ECDSA_SIG(s, der);
	}
	BN_free(r);
	BN_free(ss);
	ECDSA_SIG_free(s);
	return n;
}

/* alg for our key, method and hash; the AlgorithmIdentifier for 14 in *id. */
static int
sign_alg(const struct ike_pki_cred *c, uint8_t method, uint16_t hash, struct sigalg *a,
	 const uint8_t **id, size_t *idlen)
{
	*a = (struct sigalg){ .key_type = c->type, .hash = hash, .md = hash_md(hash) };
	*id = NULL;
	*idlen = 0;
	if (method != IKE_AUTH_DIGITAL_SIG) {
		uint8_t want = c->type == EVP_PKEY_RSA ? IKE_AUTH_RSA_SIG :
			       c->type == EVP_PKEY_ED25519 ? 0 :
			       c->curve_hash == IKE_HASH_SHA2_256 ? IKE_AUTH_ECDSA_256 :
			       c->curve_hash == IKE_HASH_SHA2_384 ? IKE_AUTH_ECDSA_384 :
			       IKE_AUTH_ECDSA_521;

		if (method != want)
			return -ENOTSUP;
		a->md = c->type == EVP_PKEY_RSA ? EVP_sha1() : hash_md(c->curve_hash);
		a->raw_ec_len = c->type == EVP_PKEY_EC ?
				(unsigned)(EVP_PKEY_get_bits(c->key) + 7) / 8 : 0;
		return 0;
	}
	if (c->type == EVP_PKEY_ED25519) {
		*id = algid_ed25519, *idlen = sizeof(algid_ed25519);
		a->md = NULL;
		return hash == IKE_HASH_IDENTITY ? 0 : -ENOTSUP;
	}
	if (hash < IKE_HASH_SHA2_256 || hash > IKE_HASH_SHA2_512)
		return -ENOTSUP;
	if (c->type == EVP_PKEY_EC) {
		*id = algid_ecdsa[hash - IKE_HASH_SHA2_256], *idlen = sizeof(algid_ecdsa[0]);
		return 0;
	}
	a->pss = true;
	a->salt = EVP_MD_get_size(a->md);
	*id = algid_pss[hash - IKE_HASH_SHA2_256], *idlen = sizeof(algid_pss[0]);
	return 0;
}

int
ike_pki_sign(const struct ike_pki_cred *c, uint8_t method, uint16_t hash,
	     const struct ike_iov *v, unsigned n, uint8_t *out, size_t *len, char *err,
	     size_t elen)
{
	uint8_t sig[IKE_PKI_AUTH_MAX];
	size_t slen = sizeof(sig), mlen, idlen, off;
	const uint8_t *id;
	struct sigalg a;
	EVP_MD_CTX *m;
	uint8_t *msg;
	int rc;

	if (sign_alg(c, method, hash, &a, &id, &idlen) != 0)
		return fail(-ENOTSUP, err, elen, "auth: method %u hash %u does not suit our "
			    "%s key", method, hash, OBJ_nid2sn(c->type));
	msg = join(v, n, &mlen);
	m = msg != NULL ? sig_ctx(c->key, &a, true) : NULL;
	rc = m != NULL && EVP_DigestSign(m, sig, &slen, msg, mlen) == 1 ? 0 : -ENOMEM;
	EVP_MD_CTX_free(m);
	OPENSSL_clear_free(msg, mlen);
	if (rc == 0 && a.raw_ec_len) {
		uint8_t der[IKE_PKI_AUTH_MAX];

		memcpy(der, sig, slen);
		rc = ec_der_to_raw(der, slen, a.raw_ec_len, sig);
		slen = 2 * (size_t)a.raw_ec_len;
	}
	off = idlen ? 1 + idlen : 0;
	if (rc != 0 || off + slen > *len)
		return fail(rc ? rc : -ENOSPC, err, elen, "auth: cannot sign (method %u)",
			    method);
	if (idlen) {
		out[0] = (uint8_t)idlen;
		memcpy(out + 1, id, idlen);
	}
	memcpy(out + off, sig, slen);
	*len = off + slen;
	ERR_clear_error();
	return 0;
}

/* The hash of an AlgorithmIdentifier of a hash (absent: SHA-1, RFC 4055). */
static uint16_t
algor_hash(const X509_ALGOR *h)
{
	const ASN1_OBJECT *o;

	if (h == NULL)
		return IKE_HASH_SHA1;
	X509_ALGOR_get0(&o, NULL, NULL, h);
	return md_hash(OBJ_obj2nid(o));
}

/* RSASSA-PSS parameters: hash, MGF1 with the same hash, salt (RFC 4055 3.1). */
static int
pss_params(const ASN1_STRING *seq, struct sigalg *a)
{
	const unsigned char *p = ASN1_STRING_get0_data(seq);
	RSA_PSS_PARAMS *pss = d2i_RSA_PSS_PARAMS(NULL, &p, ASN1_STRING_length(seq));
	X509_ALGOR *mgfh = NULL;
	const ASN1_OBJECT *o;
	const void *pv = NULL;
	int rc = -EBADMSG, pt;
	long salt;

	if (pss == NULL)
		return -EBADMSG;
	a->hash = algor_hash(pss->hashAlgorithm);
	if (pss->maskGenAlgorithm != NULL) {
		X509_ALGOR_get0(&o, &pt, &pv, pss->maskGenAlgorithm);
		if (OBJ_obj2nid(o) == NID_mgf1 && pt == V_ASN1_SEQUENCE) {
			p = ASN1_STRING_get0_data(pv);
			mgfh = d2i_X509_ALGOR(NULL, &p, ASN1_STRING_length(pv));
		}
	}
	salt = pss->saltLength != NULL ? ASN1_INTEGER_get(pss->saltLength) : 20;
	if ((pss->maskGenAlgorithm == NULL ? IKE_HASH_SHA1 :
	     mgfh != NULL ? algor_hash(mgfh) : 0) == a->hash && a->hash != 0 &&
	    salt >= 0 && salt <= 1024 &&
	    (pss->trailerField == NULL || ASN1_INTEGER_get(pss->trailerField) == 1)) {
		a->pss = true;
		a->salt = (int)salt;
		a->md = hash_md(a->hash);
		rc = 0;
	}
	X509_ALGOR_free(mgfh);
	RSA_PSS_PARAMS_free(pss);
	return rc;
}

/* The signature algorithm an RFC 7427 AlgorithmIdentifier names. */
static int
algid_parse(const uint8_t *id, size_t len, struct sigalg *a)
{
	const uint8_t *p = id;
	X509_ALGOR *alg = d2i_X509_ALGOR(NULL, &p, (long)len);
	const ASN1_OBJECT *o;
	const void *pv;
	int rc = 0, nid, pt;

	if (alg == NULL || p != id + len) {
		X509_ALGOR_free(alg);
		return -EBADMSG;
	}
	X509_ALGOR_get0(&o, &pt, &pv, alg);
	*a = (struct sigalg){ 0 };
	switch ((nid = OBJ_obj2nid(o))) {
	case NID_ED25519:
		a->key_type = EVP_PKEY_ED25519, a->hash = IKE_HASH_IDENTITY;
		break;
	case NID_ecdsa_with_SHA256:
	case NID_ecdsa_with_SHA384:
	case NID_ecdsa_with_SHA512:
		a->key_type = EVP_PKEY_EC;
		a->hash = nid == NID_ecdsa_with_SHA256 ? IKE_HASH_SHA2_256 :
			  nid == NID_ecdsa_with_SHA384 ? IKE_HASH_SHA2_384 : IKE_HASH_SHA2_512;
		break;
	case NID_sha256WithRSAEncryption:	/* strongSwan 5.9's default for RSA keys */
	case NID_sha384WithRSAEncryption:
	case NID_sha512WithRSAEncryption:
		a->key_type = EVP_PKEY_RSA;
		a->hash = nid == NID_sha256WithRSAEncryption ? IKE_HASH_SHA2_256 :
			  nid == NID_sha384WithRSAEncryption ? IKE_HASH_SHA2_384 :
			  IKE_HASH_SHA2_512;
		break;
	case NID_rsassaPss:
		a->key_type = EVP_PKEY_RSA;
		rc = pt == V_ASN1_SEQUENCE ? pss_params(pv, a) : -EBADMSG;
		break;
	default:
		rc = -ENOTSUP;
	}
	if (rc == 0 && a->md == NULL && a->hash != IKE_HASH_IDENTITY)
		a->md = hash_md(a->hash);
	X509_ALGOR_free(alg);
	return rc;
}

/*
 * What the peer's AUTH asks for: alg, and the signature's bytes in *sig
 * (OPENSSL_free *owned after, set where they had to be converted).
 */
static int
verify_alg(const struct ike_pki_peer *pr, uint8_t method, const uint8_t *data, size_t len,
	   uint32_t hashes, struct sigalg *a, const uint8_t **sig, size_t *slen,
	   uint8_t **owned)
{
	int type = EVP_PKEY_get_base_id(pr->key), rc;
	unsigned bits = (unsigned)EVP_PKEY_get_bits(pr->key), raw = (bits + 7) / 8;
	uint8_t want;

	*owned = NULL;
	if (method == IKE_AUTH_DIGITAL_SIG) {
		if (len < 2 || data[0] == 0 || (size_t)data[0] + 1 >= len)
			return -EBADMSG;
		rc = algid_parse(data + 1, data[0], a);
		if (rc != 0)
			return rc;
		*sig = data + 1 + data[0], *slen = len - 1 - data[0];
		if (!(hashes & IKE_HASH_BIT(a->hash)))
			return -ENOTSUP;
		if (type == EVP_PKEY_RSA_PSS && a->pss)
			type = EVP_PKEY_RSA;
		return type == a->key_type ? 0 : -EPERM;
	}
	want = type == EVP_PKEY_RSA ? IKE_AUTH_RSA_SIG : type != EVP_PKEY_EC ? 0 :
	       bits == 256 ? IKE_AUTH_ECDSA_256 : bits == 384 ? IKE_AUTH_ECDSA_384 :
	       bits == 521 ? IKE_AUTH_ECDSA_521 : 0;
	if (method != want || want == 0)
		return -EPERM;
	*a = (struct sigalg){ .key_type = type };
	*sig = data, *slen = len;
	if (type == EVP_PKEY_RSA) {
		a->md = EVP_sha1(), a->hash = IKE_HASH_SHA1;
		return 0;
	}
	a->hash = bits == 256 ? IKE_HASH_SHA2_256 : bits == 384 ? IKE_HASH_SHA2_384 :
		  IKE_HASH_SHA2_512;
	a->md = hash_md(a->hash);
	if (len != 2 * (size_t)raw)
		return -EACCES;
	rc = ec_raw_to_der(data, raw, owned);
	if (rc < 0)
		return -ENOMEM;
	*sig = *owned, *slen = (size_t)rc;
	return 0;
}

int
ike_pki_verify(const struct ike_pki_peer *p, uint8_t method, const uint8_t *data,
	       size_t len, uint32_t hashes, const struct ike_iov *v, unsigned n,
	       enum ike_pki_fail *why, char *err, size_t elen)
{
	char d[IKE_PKI_DESC_MAX];
	const uint8_t *sig = NULL;
	uint8_t *owned, *msg = NULL;
	size_t slen = 0, mlen = 0;
	struct sigalg a;
	EVP_MD_CTX *m = NULL;
	int rc;

	rc = verify_alg(p, method, data, len, hashes, &a, &sig, &slen, &owned);
	*why = rc == -EBADMSG ? IKE_PKI_MALFORMED : rc == -EACCES || rc == 0 ?
	       IKE_PKI_SIGNATURE : IKE_PKI_METHOD;
	if (rc == 0) {
		msg = join(v, n, &mlen);
		m = msg != NULL ? sig_ctx(p->key, &a, false) : NULL;
		rc = m == NULL ? -ENOMEM :
		     EVP_DigestVerify(m, sig, slen, msg, mlen) == 1 ? 0 : -EACCES;
	}
	EVP_MD_CTX_free(m);
	OPENSSL_clear_free(msg, mlen);
	OPENSSL_free(owned);
	if (rc == 0) {
		*why = IKE_PKI_NONE;
		ERR_clear_error();
		return 0;
	}
	describe(p->cert, d, sizeof(d));
	if (rc == -EPERM || rc == -ENOTSUP)
		rc = -EACCES;
	return fail(rc, err, elen, "%s: AUTH method %u%s of %s", ike_pki_fail_name(*why),
		    method, *why == IKE_PKI_SIGNATURE ? " does not verify with the key" :
		    *why == IKE_PKI_METHOD ? " (or its algorithm) does not suit the key or "
		    "is not one we take" : " is malformed", d);
}

/* ---- trust anchors and CRLs --------------------------------------------- */

struct ike_pki_trust *
ike_pki_trust_new(void)
{
	struct ike_pki_trust *t = OPENSSL_zalloc(sizeof(*t));

	if (t != NULL && (t->store = X509_STORE_new()) == NULL) {
		OPENSSL_free(t);
		t = NULL;
	}
	return t;
}

void
ike_pki_trust_free(struct ike_pki_trust *t)
{
	if (t == NULL)
		return;
	X509_STORE_free(t->store);
	OPENSSL_free(t->keyid);
	OPENSSL_free(t);
}

/* SHA-1 of the certificate's SubjectPublicKeyInfo (RFC 7296 3.7). */
static int
spki_sha1(X509 *x, uint8_t out[IKE_PKI_KEYID_LEN])
{
	unsigned char *der = NULL;
	int n = i2d_X509_PUBKEY(X509_get_X509_PUBKEY(x), &der);
	int ok = n > 0 && EVP_Digest(der, (size_t)n, out, NULL, EVP_sha1(), NULL) == 1;

	OPENSSL_free(der);
	return ok ? 0 : -ENOMEM;
}

int
ike_pki_trust_add_ca(struct ike_pki_trust *t, const uint8_t *buf, size_t len, char *err,
		     size_t elen)
{
	X509 *x[64];
	int n = read_certs(buf, len, x, 64), rc = 0;
	void *ids;

	if (n < 0)
		return fail(n, err, elen, "ca: no PEM or DER certificate, or more than 64");
	ids = OPENSSL_realloc(t->keyid, (t->n_ca + (size_t)n) * IKE_PKI_KEYID_LEN);
	if (ids == NULL)
		rc = -ENOMEM;
	else
		t->keyid = ids;
	for (int i = 0; i < n; i++) {
		if (rc == 0 && (X509_STORE_add_cert(t->store, x[i]) != 1 ||
				spki_sha1(x[i], t->keyid[t->n_ca]) != 0))
			rc = -ENOMEM;
		else if (rc == 0)
			t->n_ca++;
		X509_free(x[i]);	/* the store holds its own reference */
	}
	if (rc != 0)
		return fail(rc, err, elen, "ca: cannot add (a duplicate or out of memory)");
	ERR_clear_error();
	return 0;
}

int
ike_pki_trust_add_crl(struct ike_pki_trust *t, const uint8_t *buf, size_t len, char *err,
		      size_t elen)
{
	const uint8_t *p = buf;
	unsigned added = 0;
	X509_CRL *crl;
	BIO *bio;

	if (len == 0 || len > INT32_MAX)
		return fail(-EBADMSG, err, elen, "crl: empty");
	if (!is_pem(buf, len)) {
		crl = d2i_X509_CRL(NULL, &p, (long)len);
		if (crl != NULL && p == buf + len && X509_STORE_add_crl(t->store, crl) == 1)
			added = 1;
		X509_CRL_free(crl);
	} else if ((bio = BIO_new_mem_buf(buf, (int)len)) != NULL) {
		while ((crl = PEM_read_bio_X509_CRL(bio, NULL, NULL, NULL)) != NULL) {
			added += X509_STORE_add_crl(t->store, crl) == 1;
			X509_CRL_free(crl);
		}
		BIO_free(bio);
	}
	if (added == 0)
		return fail(-EBADMSG, err, elen, "crl: no PEM or DER CRL");
	t->n_crl += added;
	ERR_clear_error();
	return 0;
}

unsigned
ike_pki_trust_count(const struct ike_pki_trust *t)
{
	return t->n_ca;
}

size_t
ike_pki_trust_certreq(const struct ike_pki_trust *t, uint8_t *out, size_t cap)
{
	size_t n = 0;

	for (unsigned i = 0; i < t->n_ca && n + IKE_PKI_KEYID_LEN <= cap; i++) {
		memcpy(out + n, t->keyid[i], IKE_PKI_KEYID_LEN);
		n += IKE_PKI_KEYID_LEN;
	}
	return n;
}

bool
ike_pki_trust_knows(const struct ike_pki_trust *t, const uint8_t *keyid)
{
	for (unsigned i = 0; i < t->n_ca; i++)
		if (memcmp(t->keyid[i], keyid, IKE_PKI_KEYID_LEN) == 0)
			return true;
	return false;
}

/* ---- the peer's chain --------------------------------------------------- */

/*
 * An issuer without a CRL, or whose CRL is past its next update, is not a
 * refusal: strongSwan's default (strictcrlpolicy = no).  A revoked
 * certificate on a stale CRL still is.
 */
static int
verify_cb(int ok, X509_STORE_CTX *ctx)
{
	int e = X509_STORE_CTX_get_error(ctx);

	if (!ok && (e == X509_V_ERR_UNABLE_TO_GET_CRL || e == X509_V_ERR_CRL_HAS_EXPIRED))
		return 1;
	return ok;
}

static enum ike_pki_fail
x509_fail(int e)
{
	switch (e) {
	case X509_V_ERR_CERT_HAS_EXPIRED: return IKE_PKI_EXPIRED;
	case X509_V_ERR_CERT_NOT_YET_VALID: return IKE_PKI_NOT_YET_VALID;
	case X509_V_ERR_CERT_REVOKED: return IKE_PKI_REVOKED;
	default: return IKE_PKI_UNTRUSTED;
	}
}

/* certs[] as X509s into chain[] (0: the end entity); 0 or -EBADMSG with *bad. */
static int
parse_chain(const struct ike_iov *certs, unsigned n, X509 **chain, unsigned *bad)
{
	for (unsigned i = 0; i < n; i++) {
		const uint8_t *p = certs[i].base;

		chain[i] = certs[i].len <= INT32_MAX ?
			   d2i_X509(NULL, &p, (long)certs[i].len) : NULL;
		if (chain[i] == NULL || p != (const uint8_t *)certs[i].base + certs[i].len) {
			X509_free(chain[i]);
			while (i > 0)
				X509_free(chain[--i]);
			*bad = i;
			return -EBADMSG;
		}
	}
	return 0;
}

/* X509_verify_cert of chain[0] with chain[1..n-1] as untrusted intermediates. */
static int
verify_chain(const struct ike_pki_trust *t, X509 **chain, unsigned n, time_t now,
	     enum ike_pki_fail *why, char *err, size_t elen)
{
	X509_STORE_CTX *ctx = X509_STORE_CTX_new();
	STACK_OF(X509) *mid = sk_X509_new_null();
	char d[IKE_PKI_DESC_MAX];
	int rc = -ENOMEM, e;
	X509 *at;

	for (unsigned i = 1; mid != NULL && i < n; i++)
		if (!sk_X509_push(mid, chain[i]))
			goto out;
	if (ctx == NULL || mid == NULL || X509_STORE_CTX_init(ctx, t->store, chain[0], mid) != 1)
		goto out;
	X509_VERIFY_PARAM_set_time(X509_STORE_CTX_get0_param(ctx), now);
	if (t->n_crl > 0)
		X509_STORE_CTX_set_flags(ctx, X509_V_FLAG_CRL_CHECK | X509_V_FLAG_CRL_CHECK_ALL);
	X509_STORE_CTX_set_verify_cb(ctx, verify_cb);
	if (X509_verify_cert(ctx) == 1) {
		rc = 0;
		goto out;
	}
	e = X509_STORE_CTX_get_error(ctx);
	at = X509_STORE_CTX_get_current_cert(ctx);
	describe(at != NULL ? at : chain[0], d, sizeof(d));
	*why = x509_fail(e);
	rc = fail(-EACCES, err, elen, "%s: %s%s: %s", ike_pki_fail_name(*why),
		  at != NULL && at != chain[0] ? "in the chain, " : "", d,
		  X509_verify_cert_error_string(e));
out:
	sk_X509_free(mid);		/* not the certificates: chain[] holds them */
	X509_STORE_CTX_free(ctx);
	ERR_clear_error();
	if (rc == -ENOMEM)
		snprintf(err, elen, "cert: out of memory");
	return rc;
}

int
ike_pki_peer_verify(const struct ike_pki_trust *t, const struct ike_iov *certs, unsigned n,
		    time_t now, struct ike_pki_peer **out, enum ike_pki_fail *why, char *err,
		    size_t elen)
{
	X509 *chain[IKE_PKI_CHAIN_MAX];
	unsigned bad = 0;
	int rc;

	*out = NULL;
	*why = IKE_PKI_MALFORMED;
	if (n == 0)
		return *why = IKE_PKI_NO_CERT,
		       fail(-EACCES, err, elen, "%s: no CERT payload", ike_pki_fail_name(*why));
	if (n > IKE_PKI_CHAIN_MAX)
		return fail(-EBADMSG, err, elen, "%s: %u certificates, at most %d",
			    ike_pki_fail_name(*why), n, IKE_PKI_CHAIN_MAX);
	if (parse_chain(certs, n, chain, &bad) != 0)
		return fail(-EBADMSG, err, elen, "%s: certificate %u does not parse as DER X.509",
			    ike_pki_fail_name(*why), bad);
	rc = verify_chain(t, chain, n, now, why, err, elen);
	for (unsigned i = 1; i < n; i++)
		X509_free(chain[i]);
	if (rc == 0 && (*out = OPENSSL_zalloc(sizeof(**out))) == NULL)
		rc = fail(-ENOMEM, err, elen, "cert: out of memory");
	if (rc != 0) {
		X509_free(chain[0]);
		return rc;
	}
	(*out)->cert = chain[0];
	(*out)->key = X509_get0_pubkey(chain[0]);
	*why = IKE_PKI_NONE;
	if ((*out)->key == NULL) {
		ike_pki_peer_free(*out);
		*out = NULL;
		*why = IKE_PKI_MALFORMED;
		return fail(-EBADMSG, err, elen, "%s: no usable public key",
			    ike_pki_fail_name(*why));
	}
	return 0;
}

void
ike_pki_peer_free(struct ike_pki_peer *p)
{
	if (p == NULL)
		return;
	X509_free(p->cert);
	OPENSSL_free(p);
}

void
ike_pki_peer_describe(const struct ike_pki_peer *p, char *out, size_t len)
{
	describe(p->cert, out, len);
}

/* ---- identities --------------------------------------------------------- */

static bool
same_nocase(const uint8_t *a, size_t alen, const uint8_t *b, size_t blen)
{
	if (alen != blen)
		return false;
	for (size_t i = 0; i < alen; i++)
		if (tolower(a[i]) != tolower(b[i]))
			return false;
	return true;
}

/* The X509_NAME of a DN's DER, all of it, or NULL. */
static X509_NAME *
dn_decode(const uint8_t *der, size_t len)
{
	const uint8_t *p = der;
	X509_NAME *n = len <= INT32_MAX ? d2i_X509_NAME(NULL, &p, (long)len) : NULL;

	if (n != NULL && p != der + len) {
		X509_NAME_free(n);
		n = NULL;
	}
	ERR_clear_error();
	return n;
}

/* Is (type, data) one of the certificate's subjectAltNames? */
static bool
san_has(X509 *x, uint8_t type, const uint8_t *data, size_t len)
{
	GENERAL_NAMES *gens = X509_get_ext_d2i(x, NID_subject_alt_name, NULL, NULL);
	int want = type == IKE_ID_FQDN ? GEN_DNS : type == IKE_ID_RFC822_ADDR ? GEN_EMAIL :
		   GEN_IPADD;
	bool found = false;

	for (int i = 0; !found && i < sk_GENERAL_NAME_num(gens); i++) {
		const GENERAL_NAME *g = sk_GENERAL_NAME_value(gens, i);
		const ASN1_STRING *s;
		int gtype;

		s = GENERAL_NAME_get0_value(g, &gtype);
		if (gtype != want)
			continue;
		found = want == GEN_IPADD ?
			(size_t)ASN1_STRING_length(s) == len &&
			memcmp(ASN1_STRING_get0_data(s), data, len) == 0 :
			same_nocase(ASN1_STRING_get0_data(s), (size_t)ASN1_STRING_length(s),
				    data, len);
	}
	GENERAL_NAMES_free(gens);
	ERR_clear_error();
	return found;
}

int
ike_pki_peer_has_id(const struct ike_pki_peer *p, uint8_t id_type, const uint8_t *data,
		    size_t len, char *err, size_t elen)
{
	char d[IKE_PKI_DESC_MAX];
	X509_NAME *n;
	bool ok;

	switch (id_type) {
	case IKE_ID_DER_ASN1_DN:
		n = dn_decode(data, len);
		ok = n != NULL && X509_NAME_cmp(n, X509_get_subject_name(p->cert)) == 0;
		X509_NAME_free(n);
		break;
	case IKE_ID_FQDN:
	case IKE_ID_RFC822_ADDR:
	case IKE_ID_IPV4_ADDR:
	case IKE_ID_IPV6_ADDR:
		ok = san_has(p->cert, id_type, data, len);
		break;
	default:
		ok = false;
	}
	if (ok)
		return 0;
	describe(p->cert, d, sizeof(d));
	return fail(-EACCES, err, elen, "%s: the ID (type %u) is not the %s of %s",
		    ike_pki_fail_name(IKE_PKI_IDENTITY), id_type,
		    id_type == IKE_ID_DER_ASN1_DN ? "subject" : "subjectAltName", d);
}

/* One RDN value (any string type) as UTF-8 equals another, or pattern "*". */
static bool
value_match(const ASN1_STRING *pat, const ASN1_STRING *v)
{
	unsigned char *a = NULL, *b = NULL;
	int al, bl;
	bool ok;

	if (ASN1_STRING_length(pat) == 1 && ASN1_STRING_get0_data(pat)[0] == '*')
		return true;
	al = ASN1_STRING_to_UTF8(&a, pat);
	bl = ASN1_STRING_to_UTF8(&b, v);
	ok = al >= 0 && bl >= 0 && same_nocase(a, (size_t)al, b, (size_t)bl);
	OPENSSL_free(a);
	OPENSSL_free(b);
	return ok;
}

static bool
dn_match(const uint8_t *pat, size_t plen, const uint8_t *id, size_t ilen)
{
	X509_NAME *p = dn_decode(pat, plen), *n = dn_decode(id, ilen);
	bool ok = p != NULL && n != NULL && X509_NAME_entry_count(p) == X509_NAME_entry_count(n);

	for (int i = 0; ok && i < X509_NAME_entry_count(p); i++) {
		const X509_NAME_ENTRY *a = X509_NAME_get_entry(p, i);
		const X509_NAME_ENTRY *b = X509_NAME_get_entry(n, i);

		ok = OBJ_cmp(X509_NAME_ENTRY_get_object(a), X509_NAME_ENTRY_get_object(b)) == 0 &&
		     value_match(X509_NAME_ENTRY_get_data(a), X509_NAME_ENTRY_get_data(b));
	}
	X509_NAME_free(p);
	X509_NAME_free(n);
	ERR_clear_error();
	return ok;
}

bool
ike_pki_id_match(uint8_t pat_type, const uint8_t *pat, size_t pat_len, uint8_t id_type,
		 const uint8_t *id, size_t id_len)
{
	if (pat_type != id_type)
		return false;
	switch (pat_type) {
	case IKE_ID_DER_ASN1_DN:
		return dn_match(pat, pat_len, id, id_len);
	case IKE_ID_FQDN:
	case IKE_ID_RFC822_ADDR:
		if (pat_len >= 1 && pat[0] == '*')
			return pat_len == 1 || (id_len > pat_len - 1 &&
			       same_nocase(id + id_len - (pat_len - 1), pat_len - 1,
					   pat + 1, pat_len - 1));
		return same_nocase(pat, pat_len, id, id_len);
	default:
		return pat_len == id_len && memcmp(pat, id, id_len) == 0;
	}
}

/* One "KEY=value" of a DN string into n; 0 or -EINVAL. */
static int
dn_add(X509_NAME *n, char *rdn, char *err, size_t elen)
{
	char *eq = strchr(rdn, '='), *k = rdn, *v, *e;
	int nid;

	if (eq == NULL)
		return fail(-EINVAL, err, elen, "dn: '%s' is not KEY=value", rdn);
	*eq = '\0';
	v = eq + 1;
	for (e = eq; e > k && isspace((unsigned char)e[-1]); )
		*--e = '\0';
	while (isspace((unsigned char)*v))
		v++;
	for (e = v + strlen(v); e > v && isspace((unsigned char)e[-1]); )
		*--e = '\0';
	nid = strcasecmp(k, "E") == 0 || strcasecmp(k, "email") == 0 ?
	      NID_pkcs9_emailAddress : OBJ_txt2nid(k);
	if (nid == NID_undef) {			/* "cn": short names in any case */
		for (e = k; *e != '\0'; e++)
			*e = (char)toupper((unsigned char)*e);
		nid = OBJ_txt2nid(k);
	}
	if (nid == NID_undef || *v == '\0')
		return fail(-EINVAL, err, elen, "dn: '%s': %s", k,
			    nid == NID_undef ? "unknown attribute" : "empty value");
	/* "*" is a pattern: kept as a UTF8String, past C='s two-letter rule. */
	if (X509_NAME_add_entry_by_NID(n, nid, strcmp(v, "*") ? MBSTRING_UTF8 : V_ASN1_UTF8STRING,
				       (unsigned char *)v, -1, -1, 0) != 1)
		return fail(-EINVAL, err, elen, "dn: '%s=%s': not a valid value", k, v);
	return 0;
}

int
ike_pki_dn_parse(const char *s, uint8_t *out, size_t cap, size_t *len, char *err, size_t elen)
{
	X509_NAME *n = X509_NAME_new();
	char *copy = OPENSSL_strdup(s), *save = NULL, *rdn;
	const unsigned char *d;
	size_t dl;
	int rc = n != NULL && copy != NULL ? 0 : -ENOMEM;

	for (rdn = copy ? strtok_r(copy, ",/", &save) : NULL; rc == 0 && rdn != NULL;
	     rdn = strtok_r(NULL, ",/", &save)) {
		while (isspace((unsigned char)*rdn))
			rdn++;
		if (*rdn != '\0')
			rc = dn_add(n, rdn, err, elen);
	}
	if (rc == 0 && X509_NAME_entry_count(n) == 0)
		rc = fail(-EINVAL, err, elen, "dn: no KEY=value in '%s'", s);
	if (rc == 0 && (!X509_NAME_get0_der(n, &d, &dl) || dl > cap))
		rc = fail(-EINVAL, err, elen, "dn: longer than %zu bytes", cap);
	if (rc == 0) {
		memcpy(out, d, dl);
		*len = dl;
	}
	if (rc == -ENOMEM)
		snprintf(err, elen, "dn: out of memory");
	OPENSSL_free(copy);
	X509_NAME_free(n);
	ERR_clear_error();
	return rc;
}

void
ike_pki_dn_print(const uint8_t *der, size_t der_len, char *out, size_t len)
{
	unsigned long fl = XN_FLAG_SEP_CPLUS_SPC | ASN1_STRFLGS_ESC_CTRL | ASN1_STRFLGS_ESC_MSB |
			   ASN1_STRFLGS_ESC_2253 | ASN1_STRFLGS_UTF8_CONVERT;
	X509_NAME *n = dn_decode(der, der_len);
	BIO *bio = BIO_new(BIO_s_mem());
	char *s = NULL;
	long sl = 0;

	if (n != NULL && bio != NULL && X509_NAME_print_ex(bio, n, 0, fl) >= 0)
		sl = BIO_get_mem_data(bio, &s);
	snprintf(out, len, "%.*s", (int)(sl > 0 ? sl : 0), s != NULL ? s : "");
	BIO_free(bio);
	X509_NAME_free(n);
	ERR_clear_error();
}

/* Printable bytes of data (others '?') into buf after prefix; never cut short of len. */
static size_t
printable(char *buf, size_t len, const char *prefix, const uint8_t *data, size_t dlen)
{
	size_t n = (size_t)snprintf(buf, len, "%s", prefix);

	for (size_t i = 0; i < dlen && n + 1 < len; i++)
		buf[n++] = data[i] >= 0x20 && data[i] < 0x7f ? (char)data[i] : '?';
	if (len > 0)
		buf[n < len ? n : len - 1] = '\0';
	return n;
}

size_t
ike_ident_text(char *buf, size_t len, uint8_t type, const uint8_t *data, size_t dlen)
{
	size_t n;

	if (type == IKE_ID_FQDN || type == IKE_ID_RFC822_ADDR)
		return printable(buf, len, type == IKE_ID_FQDN ? "fqdn:" : "email:", data, dlen);
	if ((type == IKE_ID_IPV4_ADDR && dlen == 4) || (type == IKE_ID_IPV6_ADDR && dlen == 16)) {
		char s[INET6_ADDRSTRLEN];

		inet_ntop(dlen == 4 ? AF_INET : AF_INET6, data, s, sizeof(s));
		return (size_t)snprintf(buf, len, "%s", s);
	}
	if (type == IKE_ID_DER_ASN1_DN) {
		const unsigned char *p = data;
		X509_NAME *dn = d2i_X509_NAME(NULL, &p, (long)dlen);
		char *s = dn != NULL ? X509_NAME_oneline(dn, NULL, 0) : NULL;

		X509_NAME_free(dn);
		if (s != NULL) {
			n = (size_t)snprintf(buf, len, "%s", s);
			OPENSSL_free(s);
			return n;
		}
	}
	n = (size_t)snprintf(buf, len, "%s", type == IKE_ID_KEY_ID ? "keyid:" : "id:");
	for (size_t i = 0; i < dlen && n + 3 <= len; i++)
		n += (size_t)snprintf(buf + n, len - n, "%02x", data[i]);
	return n;
}
