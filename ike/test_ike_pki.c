/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_ike_pki.c - ike_pki.c against certificates made here with OpenSSL's
 * APIs: a root CA and an intermediate (P-256), end entities with RSA,
 * ECDSA P-256/P-384 and Ed25519 keys, and the peers the issue says are
 * refused: expired, not yet valid, from another CA, revoked (CRL), with
 * another identity, with a bad signature.  Times are relative to one T0
 * handed to the verifier, so nothing depends on the clock.
 * Signatures are checked both ways: ours by our verifier, and ours by plain
 * EVP calls (RSA-PSS, ECDSA r|s) and a PKCS#1 one made by EVP by ours.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>
#include <openssl/bio.h>
#include <openssl/ec.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rsa.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include "ike_msg.h"
#include "ike_pki.h"

#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))
#define DAY		(24 * 3600L)
#define ERRLEN		300

static time_t t0;

struct ent {
	EVP_PKEY *key;
	X509 *cert;
};

/* The fixture: made once, for all cases. */
static struct {
	struct ent root, mid, other_root;
	struct ent rsa, p256, p384, ed, direct;		/* valid end entities */
	struct ent expired, future, foreign, revoked;
	X509_CRL *crl;
} F;

static EVP_PKEY *
keygen(const char *kind)
{
	EVP_PKEY *k = strcmp(kind, "RSA") == 0 ?
		      EVP_PKEY_Q_keygen(NULL, NULL, "RSA", (size_t)2048) :
		      strcmp(kind, "RSA1024") == 0 ?
		      EVP_PKEY_Q_keygen(NULL, NULL, "RSA", (size_t)1024) :
		      strcmp(kind, "ED25519") == 0 ? EVP_PKEY_Q_keygen(NULL, NULL, "ED25519") :
		      EVP_PKEY_Q_keygen(NULL, NULL, "EC", kind);

	assert_non_null(k);
	return k;
}

static void
add_ext(X509 *x, X509 *issuer, int nid, const char *val)
{
	X509V3_CTX ctx;
	X509_EXTENSION *e;

	X509V3_set_ctx(&ctx, issuer != NULL ? issuer : x, x, NULL, NULL, 0);
	e = X509V3_EXT_conf_nid(NULL, &ctx, nid, val);
	assert_non_null(e);
	assert_int_equal(X509_add_ext(x, e, -1), 1);
	X509_EXTENSION_free(e);
}

/*
 * A certificate for "CN=cn, O=Example" valid from t0 + nb to t0 + na days,
 * issued by issuer (NULL: self-signed), a CA or with the subjectAltNames san.
 */
static struct ent
mkcert(const char *kind, const char *cn, const struct ent *issuer, long serial, long nb,
       long na, bool ca, const char *san)
{
	struct ent e = { keygen(kind), X509_new() };
	X509_NAME *n = X509_NAME_new();
	EVP_PKEY *ikey = issuer ? issuer->key : e.key;

	assert_non_null(e.cert);
	X509_set_version(e.cert, 2);
	ASN1_INTEGER_set(X509_get_serialNumber(e.cert), serial);
	X509_time_adj_ex(X509_getm_notBefore(e.cert), (int)nb, 0, &t0);
	X509_time_adj_ex(X509_getm_notAfter(e.cert), (int)na, 0, &t0);
	X509_NAME_add_entry_by_txt(n, "CN", MBSTRING_UTF8, (const unsigned char *)cn, -1, -1, 0);
	X509_NAME_add_entry_by_txt(n, "O", MBSTRING_UTF8, (const unsigned char *)"Example", -1,
				   -1, 0);
	X509_set_subject_name(e.cert, n);
	X509_set_issuer_name(e.cert, issuer ? X509_get_subject_name(issuer->cert) : n);
	X509_NAME_free(n);
	X509_set_pubkey(e.cert, e.key);
	if (ca) {
		add_ext(e.cert, NULL, NID_basic_constraints, "critical,CA:TRUE");
		add_ext(e.cert, NULL, NID_key_usage, "critical,keyCertSign,cRLSign");
	}
	if (san != NULL)
		add_ext(e.cert, NULL, NID_subject_alt_name, san);
	assert_true(X509_sign(e.cert, ikey,
			      EVP_PKEY_get_base_id(ikey) == EVP_PKEY_ED25519 ? NULL :
			      EVP_sha256()) > 0);
	return e;
}

static X509_CRL *
mkcrl(const struct ent *ca, long serial)
{
	X509_CRL *crl = X509_CRL_new();
	X509_REVOKED *r = X509_REVOKED_new();
	ASN1_INTEGER *s = ASN1_INTEGER_new();
	ASN1_TIME *now = X509_time_adj_ex(NULL, -1, 0, &t0);
	ASN1_TIME *next = X509_time_adj_ex(NULL, 30, 0, &t0);

	X509_CRL_set_version(crl, 1);
	X509_CRL_set_issuer_name(crl, X509_get_subject_name(ca->cert));
	X509_CRL_set1_lastUpdate(crl, now);
	X509_CRL_set1_nextUpdate(crl, next);
	ASN1_INTEGER_set(s, serial);
	X509_REVOKED_set_serialNumber(r, s);
	X509_REVOKED_set_revocationDate(r, now);
	X509_CRL_add0_revoked(crl, r);
	X509_CRL_sort(crl);
	assert_true(X509_CRL_sign(crl, ca->key, EVP_sha256()) > 0);
	ASN1_INTEGER_free(s);
	ASN1_TIME_free(now);
	ASN1_TIME_free(next);
	return crl;
}

/* DER of a certificate, CRL or key, or PEM of any number of them: malloc'd. */
struct blob {
	uint8_t *p;
	size_t len;
};

static struct blob
der(X509 *x)
{
	struct blob b = { NULL, 0 };
	int n = i2d_X509(x, &b.p);

	assert_true(n > 0);
	b.len = (size_t)n;
	return b;
}

static struct blob
bio_blob(BIO *bio)
{
	char *d;
	long n = BIO_get_mem_data(bio, &d);
	struct blob b = { malloc((size_t)n), (size_t)n };

	memcpy(b.p, d, (size_t)n);
	BIO_free(bio);
	return b;
}

static struct blob
pem_certs(X509 *a, X509 *b)
{
	BIO *bio = BIO_new(BIO_s_mem());

	PEM_write_bio_X509(bio, a);
	if (b != NULL)
		PEM_write_bio_X509(bio, b);
	return bio_blob(bio);
}

static struct blob
pem_key(EVP_PKEY *k)
{
	BIO *bio = BIO_new(BIO_s_mem());

	PEM_write_bio_PrivateKey(bio, k, NULL, NULL, 0, NULL, NULL);
	return bio_blob(bio);
}

static struct blob
der_key(EVP_PKEY *k)
{
	struct blob b = { NULL, 0 };
	int n = i2d_PrivateKey(k, &b.p);

	assert_true(n > 0);
	b.len = (size_t)n;
	return b;
}

static void
blob_free(struct blob *b)
{
	free(b->p);		/* (i2d buffers come from OPENSSL_malloc = malloc here) */
	b->p = NULL;
}

static int
setup(void **state)
{
	(void)state;
	t0 = time(NULL);
	F.root = mkcert("P-256", "Root CA", NULL, 1, -10, 3650, true, NULL);
	F.other_root = mkcert("P-256", "Root CA", NULL, 1, -10, 3650, true, NULL);
	F.mid = mkcert("P-256", "Intermediate CA", &F.root, 2, -10, 3650, true, NULL);
	F.rsa = mkcert("RSA", "rsa.example.org", &F.mid, 10, -1, 365, false,
		       "DNS:rsa.example.org,email:vpn@example.org,IP:192.0.2.1,IP:2001:db8::1");
	F.p256 = mkcert("P-256", "p256.example.org", &F.mid, 11, -1, 365, false,
			"DNS:p256.example.org");
	F.p384 = mkcert("P-384", "p384.example.org", &F.mid, 12, -1, 365, false,
			"DNS:p384.example.org");
	F.ed = mkcert("ED25519", "ed.example.org", &F.mid, 13, -1, 365, false,
		      "DNS:ed.example.org");
	F.direct = mkcert("P-256", "direct.example.org", &F.root, 14, -1, 365, false,
			  "DNS:direct.example.org");
	F.expired = mkcert("P-256", "expired.example.org", &F.mid, 20, -30, -1, false, NULL);
	F.future = mkcert("P-256", "future.example.org", &F.mid, 21, 1, 365, false, NULL);
	F.foreign = mkcert("P-256", "foreign.example.org", &F.other_root, 22, -1, 365, false,
			   NULL);
	F.revoked = mkcert("P-256", "revoked.example.org", &F.mid, 23, -1, 365, false, NULL);
	F.crl = mkcrl(&F.mid, 23);
	return 0;
}

static void
ent_free(struct ent *e)
{
	EVP_PKEY_free(e->key);
	X509_free(e->cert);
}

static int
teardown(void **state)
{
	struct ent *all[] = { &F.root, &F.mid, &F.other_root, &F.rsa, &F.p256, &F.p384, &F.ed,
			      &F.direct, &F.expired, &F.future, &F.foreign, &F.revoked };

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(all); i++)
		ent_free(all[i]);
	X509_CRL_free(F.crl);
	return 0;
}

/* Our credential for e (its certificate, then the intermediate) from PEM. */
static struct ike_pki_cred *
cred_of(const struct ent *e)
{
	struct blob c = pem_certs(e->cert, F.mid.cert), k = pem_key(e->key);
	struct ike_pki_cred *cr;
	char err[ERRLEN];

	assert_int_equal(ike_pki_cred_load(c.p, c.len, k.p, k.len, &cr, err, sizeof(err)), 0);
	explicit_bzero(k.p, k.len);
	blob_free(&c);
	blob_free(&k);
	return cr;
}

/* The trust anchors: the root, and the CRL when crl. */
static struct ike_pki_trust *
trust_of(const struct ent *root, bool crl)
{
	struct ike_pki_trust *t = ike_pki_trust_new();
	struct blob r = der(root->cert);
	char err[ERRLEN];

	assert_non_null(t);
	assert_int_equal(ike_pki_trust_add_ca(t, r.p, r.len, err, sizeof(err)), 0);
	blob_free(&r);
	if (crl) {
		BIO *bio = BIO_new(BIO_s_mem());
		struct blob c;

		PEM_write_bio_X509_CRL(bio, F.crl);
		c = bio_blob(bio);
		assert_int_equal(ike_pki_trust_add_crl(t, c.p, c.len, err, sizeof(err)), 0);
		blob_free(&c);
	}
	return t;
}

/* Verify e's chain (e, then the intermediate unless alone) at t. */
static int
verify(const struct ike_pki_trust *t, const struct ent *e, bool alone, time_t at,
       struct ike_pki_peer **p, enum ike_pki_fail *why, char *err)
{
	struct blob a = der(e->cert), b = der(F.mid.cert);
	struct ike_iov v[2] = { { a.p, a.len }, { b.p, b.len } };
	int rc = ike_pki_peer_verify(t, v, alone ? 1 : 2, at, p, why, err, ERRLEN);

	blob_free(&a);
	blob_free(&b);
	return rc;
}

static struct ike_pki_peer *
peer_of(const struct ent *e)
{
	struct ike_pki_trust *t = trust_of(&F.root, false);
	struct ike_pki_peer *p;
	enum ike_pki_fail why;
	char err[ERRLEN];

	assert_int_equal(verify(t, e, false, t0, &p, &why, err), 0);
	ike_pki_trust_free(t);
	return p;
}

/* ---- loading ------------------------------------------------------------ */

static void
test_cred_load(void **state)
{
	struct blob c = der(F.p384.cert), k = der_key(F.p384.key), wrong = pem_key(F.rsa.key);
	struct ike_pki_cred *cr;
	uint8_t subj[256];
	char err[ERRLEN];
	size_t n;

	(void)state;
	/* DER certificate and DER key. */
	assert_int_equal(ike_pki_cred_load(c.p, c.len, k.p, k.len, &cr, err, sizeof(err)), 0);
	assert_int_equal(ike_pki_cred_count(cr), 1);
	assert_int_equal(ike_pki_cred_subject(cr, subj, sizeof(subj), &n), 0);
	ike_pki_cred_describe(cr, err, sizeof(err));
	assert_non_null(strstr(err, "CN=p384.example.org"));
	assert_non_null(strstr(err, "serial 0C"));
	ike_pki_cred_free(cr);
	/* The key of another certificate. */
	assert_int_equal(ike_pki_cred_load(c.p, c.len, wrong.p, wrong.len, &cr, err, sizeof(err)),
			 -EACCES);
	assert_null(cr);
	assert_null(strstr(err, "PRIVATE"));
	/* Garbage, a truncated DER, an empty file. */
	assert_int_equal(ike_pki_cred_load((const uint8_t *)"junk", 4, k.p, k.len, &cr, err,
					   sizeof(err)), -EBADMSG);
	assert_int_equal(ike_pki_cred_load(c.p, c.len - 1, k.p, k.len, &cr, err, sizeof(err)),
			 -EBADMSG);
	assert_int_equal(ike_pki_cred_load(c.p, c.len, k.p, 0, &cr, err, sizeof(err)), -EBADMSG);
	blob_free(&c);
	blob_free(&k);
	blob_free(&wrong);
	/* PEM with the chain. */
	cr = cred_of(&F.rsa);
	assert_int_equal(ike_pki_cred_count(cr), 2);
	ike_pki_cred_free(cr);
}

static void
test_cred_refused_keys(void **state)
{
	struct ent weak = mkcert("RSA1024", "weak", &F.mid, 30, -1, 10, false, NULL);
	struct blob c = der(weak.cert), k = pem_key(weak.key), enc;
	struct ike_pki_cred *cr;
	char err[ERRLEN];
	BIO *bio;

	(void)state;
	assert_int_equal(ike_pki_cred_load(c.p, c.len, k.p, k.len, &cr, err, sizeof(err)),
			 -ENOTSUP);
	assert_non_null(strstr(err, "1024"));
	blob_free(&c);
	blob_free(&k);
	/* An encrypted key is refused, not prompted for. */
	bio = BIO_new(BIO_s_mem());
	PEM_write_bio_PrivateKey(bio, F.p256.key, EVP_aes_128_cbc(), (unsigned char *)"pw", 2,
				 NULL, NULL);
	enc = bio_blob(bio);
	c = der(F.p256.cert);
	assert_int_equal(ike_pki_cred_load(c.p, c.len, enc.p, enc.len, &cr, err, sizeof(err)),
			 -EBADMSG);
	assert_non_null(strstr(err, "encrypted"));
	blob_free(&c);
	blob_free(&enc);
	ent_free(&weak);
}

/* ---- chains ------------------------------------------------------------- */

static void
test_chain_ok(void **state)
{
	struct ike_pki_trust *t = trust_of(&F.root, true);
	const struct ent *good[] = { &F.rsa, &F.p256, &F.p384, &F.ed };
	struct ike_pki_peer *p;
	enum ike_pki_fail why;
	char err[ERRLEN];

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(good); i++) {
		assert_int_equal(verify(t, good[i], false, t0, &p, &why, err), 0);
		assert_int_equal(why, IKE_PKI_NONE);
		ike_pki_peer_free(p);
	}
	/* Issued by the root itself: no intermediate, no CRL of the root (not strict). */
	assert_int_equal(verify(t, &F.direct, true, t0, &p, &why, err), 0);
	ike_pki_peer_free(p);
	ike_pki_trust_free(t);
}

static void
expect_refusal(const struct ike_pki_trust *t, const struct ent *e, bool alone, time_t at,
	       enum ike_pki_fail want, const char *who)
{
	struct ike_pki_peer *p = (void *)1;
	enum ike_pki_fail why;
	char err[ERRLEN];

	assert_int_equal(verify(t, e, alone, at, &p, &why, err), -EACCES);
	assert_null(p);
	assert_int_equal(why, want);
	/* One line: the cause, the certificate by subject and serial. */
	assert_non_null(strstr(err, ike_pki_fail_name(want)));
	assert_non_null(strstr(err, who));
	assert_non_null(strstr(err, "serial"));
	assert_null(strchr(err, '\n'));
}

static void
test_chain_refusals(void **state)
{
	struct ike_pki_trust *t = trust_of(&F.root, true), *other = trust_of(&F.other_root, false);

	(void)state;
	expect_refusal(t, &F.expired, false, t0, IKE_PKI_EXPIRED, "CN=expired.example.org");
	expect_refusal(t, &F.future, false, t0, IKE_PKI_NOT_YET_VALID, "CN=future.example.org");
	expect_refusal(t, &F.foreign, true, t0, IKE_PKI_UNTRUSTED, "CN=foreign.example.org");
	expect_refusal(t, &F.revoked, false, t0, IKE_PKI_REVOKED, "CN=revoked.example.org");
	/* The intermediate missing: no path to the root. */
	expect_refusal(t, &F.p256, true, t0, IKE_PKI_UNTRUSTED, "CN=p256.example.org");
	/* A good chain, to anchors of another CA with the same name. */
	expect_refusal(other, &F.p256, false, t0, IKE_PKI_UNTRUSTED, "serial");
	/* A good certificate, two years on. */
	expect_refusal(t, &F.p256, false, t0 + 2 * 365 * DAY, IKE_PKI_EXPIRED,
		       "CN=p256.example.org");
	/* Without the CRL, the revoked one passes: the CRL did it. */
	{
		struct ike_pki_trust *nocrl = trust_of(&F.root, false);
		struct ike_pki_peer *p;
		enum ike_pki_fail why;
		char err[ERRLEN];

		assert_int_equal(verify(nocrl, &F.revoked, false, t0, &p, &why, err), 0);
		ike_pki_peer_free(p);
		ike_pki_trust_free(nocrl);
	}
	ike_pki_trust_free(t);
	ike_pki_trust_free(other);
}

static void
test_chain_malformed(void **state)
{
	struct ike_pki_trust *t = trust_of(&F.root, false);
	struct blob a = der(F.p256.cert);
	struct ike_iov v[IKE_PKI_CHAIN_MAX + 1];
	struct ike_pki_peer *p;
	enum ike_pki_fail why;
	char err[ERRLEN];

	(void)state;
	assert_int_equal(ike_pki_peer_verify(t, v, 0, t0, &p, &why, err, sizeof(err)), -EACCES);
	assert_int_equal(why, IKE_PKI_NO_CERT);
	v[0] = (struct ike_iov){ a.p, a.len - 1 };
	assert_int_equal(ike_pki_peer_verify(t, v, 1, t0, &p, &why, err, sizeof(err)), -EBADMSG);
	assert_int_equal(why, IKE_PKI_MALFORMED);
	v[0] = (struct ike_iov){ a.p, a.len };
	v[1] = (struct ike_iov){ "\x30\x00", 2 };
	assert_int_equal(ike_pki_peer_verify(t, v, 2, t0, &p, &why, err, sizeof(err)), -EBADMSG);
	for (unsigned i = 0; i < ARRAY_SIZE(v); i++)
		v[i] = (struct ike_iov){ a.p, a.len };
	assert_int_equal(ike_pki_peer_verify(t, v, ARRAY_SIZE(v), t0, &p, &why, err,
					     sizeof(err)), -EBADMSG);
	/* Every truncation of a good certificate is refused, none crashes. */
	for (size_t n = 0; n < a.len; n += 7) {
		v[0] = (struct ike_iov){ a.p, n };
		assert_int_equal(ike_pki_peer_verify(t, v, 1, t0, &p, &why, err, sizeof(err)),
				 -EBADMSG);
	}
	blob_free(&a);
	ike_pki_trust_free(t);
}

/* ---- signatures --------------------------------------------------------- */

static const char signed_a[] = "an IKE_SA_INIT message", signed_b[] = "a nonce, a mac";
static const struct ike_iov octets[] = {
	{ signed_a, sizeof(signed_a) - 1 }, { signed_b, sizeof(signed_b) - 1 },
};

/* Sign as chosen for the peer's hashes; verify; then a flipped byte fails. */
static void
sign_verify(const struct ent *e, uint32_t peer_hashes, uint8_t want_method, uint16_t want_hash)
{
	struct ike_pki_cred *c = cred_of(e);
	struct ike_pki_peer *p = peer_of(e);
	uint8_t auth[IKE_PKI_AUTH_MAX], method;
	size_t len = sizeof(auth);
	enum ike_pki_fail why;
	char err[ERRLEN];
	uint16_t hash;

	assert_int_equal(ike_pki_choose(c, peer_hashes, &method, &hash), 0);
	assert_int_equal(method, want_method);
	assert_int_equal(hash, want_hash);
	assert_int_equal(ike_pki_sign(c, method, hash, octets, 2, auth, &len, err, sizeof(err)),
			 0);
	assert_int_equal(ike_pki_verify(p, method, auth, len, IKE_HASHES_OURS, octets, 2, &why,
					err, sizeof(err)), 0);
	auth[len - 3] ^= 0x40;
	assert_int_equal(ike_pki_verify(p, method, auth, len, IKE_HASHES_OURS, octets, 2, &why,
					err, sizeof(err)), -EACCES);
	assert_true(why == IKE_PKI_SIGNATURE || why == IKE_PKI_MALFORMED);
	assert_non_null(strstr(err, "serial"));
	auth[len - 3] ^= 0x40;
	/* The right signature over other octets. */
	assert_int_equal(ike_pki_verify(p, method, auth, len, IKE_HASHES_OURS, octets, 1, &why,
					err, sizeof(err)), -EACCES);
	assert_int_equal(why, IKE_PKI_SIGNATURE);
	/* Too short for its method. */
	assert_int_equal(ike_pki_verify(p, method, auth, 1, IKE_HASHES_OURS, octets, 2, &why,
					err, sizeof(err)) < 0, 1);
	ike_pki_peer_free(p);
	ike_pki_cred_free(c);
}

static void
test_sign_verify(void **state)
{
	const uint32_t h256 = IKE_HASH_BIT(IKE_HASH_SHA2_256);
	const uint32_t h512 = IKE_HASH_BIT(IKE_HASH_SHA2_512);

	(void)state;
	sign_verify(&F.rsa, IKE_HASHES_OURS, IKE_AUTH_DIGITAL_SIG, IKE_HASH_SHA2_256);
	sign_verify(&F.rsa, h512, IKE_AUTH_DIGITAL_SIG, IKE_HASH_SHA2_512);
	sign_verify(&F.rsa, 0, IKE_AUTH_RSA_SIG, IKE_HASH_SHA1);
	sign_verify(&F.p256, IKE_HASHES_OURS, IKE_AUTH_DIGITAL_SIG, IKE_HASH_SHA2_256);
	sign_verify(&F.p256, 0, IKE_AUTH_ECDSA_256, IKE_HASH_SHA2_256);
	sign_verify(&F.p384, IKE_HASHES_OURS, IKE_AUTH_DIGITAL_SIG, IKE_HASH_SHA2_384);
	sign_verify(&F.p384, h256, IKE_AUTH_DIGITAL_SIG, IKE_HASH_SHA2_256);
	sign_verify(&F.p384, 0, IKE_AUTH_ECDSA_384, IKE_HASH_SHA2_384);
	sign_verify(&F.ed, IKE_HASHES_OURS, IKE_AUTH_DIGITAL_SIG, IKE_HASH_IDENTITY);
}

static void
test_sign_refusals(void **state)
{
	struct ike_pki_cred *ed = cred_of(&F.ed), *rsa = cred_of(&F.rsa);
	struct ike_pki_peer *p256 = peer_of(&F.p256), *prsa = peer_of(&F.rsa);
	uint8_t auth[IKE_PKI_AUTH_MAX], method;
	size_t len = sizeof(auth);
	enum ike_pki_fail why;
	char err[ERRLEN];
	uint16_t hash;

	(void)state;
	/* Ed25519 to a peer without RFC 7427, or without the identity "hash". */
	assert_int_equal(ike_pki_choose(ed, 0, &method, &hash), -ENOTSUP);
	assert_int_equal(ike_pki_choose(ed, IKE_HASH_BIT(IKE_HASH_SHA2_256), &method, &hash),
			 -ENOTSUP);
	/* A method that does not suit the key. */
	assert_int_equal(ike_pki_sign(rsa, IKE_AUTH_ECDSA_256, IKE_HASH_SHA2_256, octets, 2, auth,
				      &len, err, sizeof(err)), -ENOTSUP);
	len = sizeof(auth);
	assert_int_equal(ike_pki_sign(rsa, IKE_AUTH_DIGITAL_SIG, IKE_HASH_SHA2_256, octets, 2,
				      auth, &len, err, sizeof(err)), 0);
	/* An RSA AUTH checked against an ECDSA certificate. */
	assert_int_equal(ike_pki_verify(p256, IKE_AUTH_DIGITAL_SIG, auth, len, IKE_HASHES_OURS,
					octets, 2, &why, err, sizeof(err)), -EACCES);
	assert_int_equal(why, IKE_PKI_METHOD);
	assert_int_equal(ike_pki_verify(p256, IKE_AUTH_RSA_SIG, auth, len, IKE_HASHES_OURS,
					octets, 2, &why, err, sizeof(err)), -EACCES);
	assert_int_equal(why, IKE_PKI_METHOD);
	/* A hash we did not announce. */
	assert_int_equal(ike_pki_verify(prsa, IKE_AUTH_DIGITAL_SIG, auth, len,
					IKE_HASH_BIT(IKE_HASH_SHA2_512), octets, 2, &why, err,
					sizeof(err)), -EACCES);
	assert_int_equal(why, IKE_PKI_METHOD);
	/* The AlgorithmIdentifier's length past the data, or garbage in it. */
	auth[0] = 0xff;
	assert_int_equal(ike_pki_verify(prsa, IKE_AUTH_DIGITAL_SIG, auth, 60, IKE_HASHES_OURS,
					octets, 2, &why, err, sizeof(err)), -EBADMSG);
	auth[0] = 67;
	auth[5] ^= 0xff;
	assert_int_equal(ike_pki_verify(prsa, IKE_AUTH_DIGITAL_SIG, auth, len, IKE_HASHES_OURS,
					octets, 2, &why, err, sizeof(err)) < 0, 1);
	/* Shared-key MIC and unknown methods. */
	assert_int_equal(ike_pki_verify(prsa, 2, auth, len, IKE_HASHES_OURS, octets, 2, &why,
					err, sizeof(err)), -EACCES);
	assert_int_equal(why, IKE_PKI_METHOD);
	ike_pki_peer_free(p256);
	ike_pki_peer_free(prsa);
	ike_pki_cred_free(ed);
	ike_pki_cred_free(rsa);
}

/* Plain EVP verification of sig over the joined octets. */
static int
evp_verify(EVP_PKEY *k, const EVP_MD *md, bool pss, const uint8_t *sig, size_t slen)
{
	EVP_MD_CTX *m = EVP_MD_CTX_new();
	EVP_PKEY_CTX *pc;
	char msg[64];
	int rc;

	snprintf(msg, sizeof(msg), "%s%s", signed_a, signed_b);
	assert_int_equal(EVP_DigestVerifyInit(m, &pc, md, NULL, k), 1);
	if (pss) {
		EVP_PKEY_CTX_set_rsa_padding(pc, RSA_PKCS1_PSS_PADDING);
		EVP_PKEY_CTX_set_rsa_pss_saltlen(pc, EVP_MD_get_size(md));
	}
	rc = EVP_DigestVerify(m, sig, slen, (const uint8_t *)msg, strlen(msg));
	EVP_MD_CTX_free(m);
	return rc;
}

static void
test_signatures_independent(void **state)
{
	static const uint8_t rsa_sha256[] = { 0x30, 0x0d, 0x06, 0x09, 0x2a, 0x86, 0x48, 0x86,
					      0xf7, 0x0d, 0x01, 0x01, 0x0b, 0x05, 0x00 };
	struct ike_pki_cred *rsa = cred_of(&F.rsa), *p256 = cred_of(&F.p256);
	struct ike_pki_peer *prsa = peer_of(&F.rsa);
	uint8_t auth[IKE_PKI_AUTH_MAX], der[128];
	size_t len = sizeof(auth), slen;
	enum ike_pki_fail why;
	EVP_MD_CTX *m;
	char err[ERRLEN], msg[64];
	ECDSA_SIG *s;
	uint8_t *dp = der;
	int dl;

	(void)state;
	/* Our RSA-PSS (method 14): 1 + 67 bytes of AlgorithmIdentifier, then the signature. */
	assert_int_equal(ike_pki_sign(rsa, IKE_AUTH_DIGITAL_SIG, IKE_HASH_SHA2_256, octets, 2,
				      auth, &len, err, sizeof(err)), 0);
	assert_int_equal(auth[0], 67);
	assert_int_equal(len, 1 + 67 + 256);
	assert_int_equal(evp_verify(F.rsa.key, EVP_sha256(), true, auth + 68, 256), 1);
	/* Our ECDSA P-256 (method 9): r|s, 32 bytes each. */
	len = sizeof(auth);
	assert_int_equal(ike_pki_sign(p256, IKE_AUTH_ECDSA_256, IKE_HASH_SHA2_256, octets, 2, auth,
				      &len, err, sizeof(err)), 0);
	assert_int_equal(len, 64);
	s = ECDSA_SIG_new();
	ECDSA_SIG_set0(s, BN_bin2bn(auth, 32, NULL), BN_bin2bn(auth + 32, 32, NULL));
	dl = i2d_ECDSA_SIG(s, &dp);
	ECDSA_SIG_free(s);
	assert_int_equal(evp_verify(F.p256.key, EVP_sha256(), false, der, (size_t)dl), 1);
	/* strongSwan 5.9's RSA default (sha256WithRSAEncryption, PKCS#1), made by EVP. */
	auth[0] = sizeof(rsa_sha256);
	memcpy(auth + 1, rsa_sha256, sizeof(rsa_sha256));
	snprintf(msg, sizeof(msg), "%s%s", signed_a, signed_b);
	m = EVP_MD_CTX_new();
	slen = sizeof(auth) - 1 - sizeof(rsa_sha256);
	assert_int_equal(EVP_DigestSignInit(m, NULL, EVP_sha256(), NULL, F.rsa.key), 1);
	assert_int_equal(EVP_DigestSign(m, auth + 1 + sizeof(rsa_sha256), &slen,
					(const uint8_t *)msg, strlen(msg)), 1);
	EVP_MD_CTX_free(m);
	assert_int_equal(ike_pki_verify(prsa, IKE_AUTH_DIGITAL_SIG, auth,
					1 + sizeof(rsa_sha256) + slen, IKE_HASHES_OURS, octets, 2,
					&why, err, sizeof(err)), 0);
	ike_pki_peer_free(prsa);
	ike_pki_cred_free(rsa);
	ike_pki_cred_free(p256);
}

/* ---- identities --------------------------------------------------------- */

static void
test_peer_ids(void **state)
{
	static const uint8_t v4[] = { 192, 0, 2, 1 }, v4b[] = { 192, 0, 2, 2 };
	static const uint8_t v6[16] = { 0x20, 0x01, 0x0d, 0xb8, [15] = 1 };
	struct ike_pki_peer *p = peer_of(&F.rsa);
	const unsigned char *dn;
	char err[ERRLEN];
	uint8_t pat[256];
	size_t dlen, plen;

	(void)state;
#define HAS(t, s) ike_pki_peer_has_id(p, t, (const uint8_t *)(s), strlen(s), err, sizeof(err))
	assert_int_equal(HAS(IKE_ID_FQDN, "rsa.example.org"), 0);
	assert_int_equal(HAS(IKE_ID_FQDN, "RSA.Example.ORG"), 0);
	assert_int_equal(HAS(IKE_ID_RFC822_ADDR, "vpn@example.org"), 0);
	assert_int_equal(HAS(IKE_ID_FQDN, "p256.example.org"), -EACCES);
	assert_non_null(strstr(err, "cert-identity"));
	assert_non_null(strstr(err, "CN=rsa.example.org"));
	assert_int_equal(HAS(IKE_ID_FQDN, "vpn@example.org"), -EACCES);
	assert_int_equal(HAS(IKE_ID_KEY_ID, "rsa.example.org"), -EACCES);
#undef HAS
	assert_int_equal(ike_pki_peer_has_id(p, IKE_ID_IPV4_ADDR, v4, 4, err, sizeof(err)), 0);
	assert_int_equal(ike_pki_peer_has_id(p, IKE_ID_IPV4_ADDR, v4b, 4, err, sizeof(err)),
			 -EACCES);
	assert_int_equal(ike_pki_peer_has_id(p, IKE_ID_IPV6_ADDR, v6, 16, err, sizeof(err)), 0);
	/* The subject, as DER, and as strongSwan's text. */
	assert_true(X509_NAME_get0_der(X509_get_subject_name(F.rsa.cert), &dn, &dlen));
	assert_int_equal(ike_pki_peer_has_id(p, IKE_ID_DER_ASN1_DN, dn, dlen, err, sizeof(err)),
			 0);
	assert_int_equal(ike_pki_dn_parse("CN=rsa.example.org, O=Example", pat, sizeof(pat),
					  &plen, err, sizeof(err)), 0);
	assert_int_equal(ike_pki_peer_has_id(p, IKE_ID_DER_ASN1_DN, pat, plen, err, sizeof(err)),
			 0);
	assert_int_equal(ike_pki_dn_parse("O=Example, CN=rsa.example.org", pat, sizeof(pat),
					  &plen, err, sizeof(err)), 0);
	assert_int_equal(ike_pki_peer_has_id(p, IKE_ID_DER_ASN1_DN, pat, plen, err, sizeof(err)),
			 -EACCES);
	assert_int_equal(ike_pki_peer_has_id(p, IKE_ID_DER_ASN1_DN, dn, dlen - 1, err,
					     sizeof(err)), -EACCES);
	ike_pki_peer_free(p);
}

static bool
dn_matches(const char *pattern, const char *dn)
{
	uint8_t p[256], d[256];
	size_t pl, dl;
	char err[ERRLEN];

	assert_int_equal(ike_pki_dn_parse(pattern, p, sizeof(p), &pl, err, sizeof(err)), 0);
	assert_int_equal(ike_pki_dn_parse(dn, d, sizeof(d), &dl, err, sizeof(err)), 0);
	return ike_pki_id_match(IKE_ID_DER_ASN1_DN, p, pl, IKE_ID_DER_ASN1_DN, d, dl);
}

static bool
name_matches(uint8_t type, const char *pattern, const char *id)
{
	return ike_pki_id_match(type, (const uint8_t *)pattern, strlen(pattern), type,
				(const uint8_t *)id, strlen(id));
}

static void
test_patterns(void **state)
{
	const unsigned char *d;
	uint8_t dn[256];
	char err[ERRLEN], txt[200];
	size_t dl;

	(void)state;
	assert_true(dn_matches("CN=*, O=Example", "CN=gw.example.org, O=Example"));
	assert_true(dn_matches("CN=*, O=Example", "cn=anyone,o=EXAMPLE"));
	assert_true(dn_matches("C=CH, O=*, CN=gw", "C=CH/O=strongSwan/CN=gw"));
	assert_true(dn_matches("C=*, O=Example", "C=CH, O=Example"));
	assert_false(dn_matches("CN=*, O=Example", "CN=gw, O=Other"));
	assert_false(dn_matches("CN=*, O=Example", "CN=gw, O=Example, OU=x"));
	assert_false(dn_matches("CN=*, O=Example", "O=Example, CN=gw"));
	assert_true(name_matches(IKE_ID_FQDN, "*.example.org", "gw.example.org"));
	assert_true(name_matches(IKE_ID_FQDN, "*.example.org", "a.b.EXAMPLE.org"));
	assert_false(name_matches(IKE_ID_FQDN, "*.example.org", "example.org"));
	assert_false(name_matches(IKE_ID_FQDN, "*.example.org", "gwexample.org"));
	assert_false(name_matches(IKE_ID_FQDN, "*.example.org", ".example.org"));
	assert_true(name_matches(IKE_ID_FQDN, "*", "anything"));
	assert_true(name_matches(IKE_ID_FQDN, "gw.example.org", "GW.example.org"));
	assert_false(name_matches(IKE_ID_FQDN, "gw.example.org", "gw.example.org."));
	assert_true(name_matches(IKE_ID_RFC822_ADDR, "*@example.org", "vpn@example.org"));
	assert_false(name_matches(IKE_ID_RFC822_ADDR, "*@example.org", "vpn@example.net"));
	assert_false(ike_pki_id_match(IKE_ID_FQDN, (const uint8_t *)"*", 1, IKE_ID_RFC822_ADDR,
				      (const uint8_t *)"a@b", 3));
	/* Refused DN strings. */
	assert_int_equal(ike_pki_dn_parse("CN", dn, sizeof(dn), &dl, err, sizeof(err)), -EINVAL);
	assert_int_equal(ike_pki_dn_parse("XX=1", dn, sizeof(dn), &dl, err, sizeof(err)),
			 -EINVAL);
	assert_int_equal(ike_pki_dn_parse("CN=", dn, sizeof(dn), &dl, err, sizeof(err)),
			 -EINVAL);
	assert_int_equal(ike_pki_dn_parse(" , ", dn, sizeof(dn), &dl, err, sizeof(err)), -EINVAL);
	assert_int_equal(ike_pki_dn_parse("C=Switzerland", dn, sizeof(dn), &dl, err,
					  sizeof(err)), -EINVAL);
	assert_int_equal(ike_pki_dn_parse("CN=a", dn, 4, &dl, err, sizeof(err)), -EINVAL);
	/* Printed back. */
	assert_int_equal(ike_pki_dn_parse("C=CH, O=Example, CN=gw, E=a@b.c", dn, sizeof(dn), &dl,
					  err, sizeof(err)), 0);
	ike_pki_dn_print(dn, dl, txt, sizeof(txt));
	assert_string_equal(txt, "C=CH, O=Example, CN=gw, emailAddress=a@b.c");
	assert_true(X509_NAME_get0_der(X509_get_subject_name(F.rsa.cert), &d, &dl));
	ike_pki_dn_print(d, dl, txt, sizeof(txt));
	assert_string_equal(txt, "CN=rsa.example.org, O=Example");
}

/* ---- CERTREQ ------------------------------------------------------------ */

static void
test_certreq(void **state)
{
	struct ike_pki_trust *t = trust_of(&F.root, false);
	struct blob mid = pem_certs(F.mid.cert, F.other_root.cert);
	uint8_t req[100], spki_hash[20], *spki = NULL;
	char err[ERRLEN];
	int n;

	(void)state;
	assert_int_equal(ike_pki_trust_add_ca(t, mid.p, mid.len, err, sizeof(err)), 0);
	assert_int_equal(ike_pki_trust_count(t), 3);
	assert_int_equal(ike_pki_trust_certreq(t, req, sizeof(req)), 60);
	assert_int_equal(ike_pki_trust_certreq(t, req, 59), 40);
	n = i2d_X509_PUBKEY(X509_get_X509_PUBKEY(F.mid.cert), &spki);
	EVP_Digest(spki, (size_t)n, spki_hash, NULL, EVP_sha1(), NULL);
	OPENSSL_free(spki);
	assert_memory_equal(req + 20, spki_hash, 20);
	assert_true(ike_pki_trust_knows(t, spki_hash));
	{	/* a credential's intermediate has the key id a CERTREQ names */
		struct ike_pki_cred *c = cred_of(&F.rsa);
		uint8_t id[20];

		ike_pki_cred_keyid(c, 1, id);
		assert_memory_equal(id, spki_hash, 20);
		ike_pki_cred_free(c);
	}
	spki_hash[0] ^= 1;
	assert_false(ike_pki_trust_knows(t, spki_hash));
	assert_int_equal(ike_pki_trust_add_ca(t, (const uint8_t *)"x", 1, err, sizeof(err)),
			 -EBADMSG);
	assert_int_equal(ike_pki_trust_add_crl(t, (const uint8_t *)"x", 1, err, sizeof(err)),
			 -EBADMSG);
	blob_free(&mid);
	ike_pki_trust_free(t);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cred_load),
		cmocka_unit_test(test_cred_refused_keys),
		cmocka_unit_test(test_chain_ok),
		cmocka_unit_test(test_chain_refusals),
		cmocka_unit_test(test_chain_malformed),
		cmocka_unit_test(test_sign_verify),
		cmocka_unit_test(test_sign_refusals),
		cmocka_unit_test(test_signatures_independent),
		cmocka_unit_test(test_peer_ids),
		cmocka_unit_test(test_patterns),
		cmocka_unit_test(test_certreq),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
