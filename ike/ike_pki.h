/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ike_pki.h - certificates for IKEv2 (the [ikepki] issue, requirement 1):
 * our credential (certificate, chain and private key), the trust anchors and
 * CRLs, the peer's chain validated with OpenSSL (RFC 5280 through
 * X509_verify_cert), identities checked against the certificate and against
 * remote-id patterns, and the AUTH signatures of RFC 7296 2.15 (methods 1,
 * 9, 10, 11) and RFC 7427 (method 14: RSA-PSS, RSA PKCS#1 v1.5, ECDSA,
 * Ed25519).
 *
 * No files and no state machine here: callers hand in the bytes of files they
 * opened and checked (control/ checks the private key's file like any key
 * file) and of CERT payloads, and get back a reason for every refusal.  The
 * OpenSSL types stay inside ike_pki.c: the structs are opaque.
 *
 * Functions return 0 or a negative errno with a message in err:
 *   -EBADMSG   bytes that do not parse (a file, a payload, an AUTH blob)
 *   -EACCES    parsed but refused: *why (where there is one) says which check
 *   -ENOTSUP   a key type, curve, method or hash we do not do
 *   -ENOMEM
 * Messages name the certificate by subject and serial, never key material.
 */
#ifndef DPVPN_IKE_PKI_H
#define DPVPN_IKE_PKI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "ike_crypto.h"		/* struct ike_iov: the signed octets, in pieces */
#include "ike_msg.h"

/* AUTH methods (RFC 7296 3.8, RFC 4754, RFC 7427). */
#define IKE_AUTH_RSA_SIG		1	/* PKCS#1 v1.5 with SHA-1 */
#define IKE_AUTH_ECDSA_256		9	/* SHA-256 on P-256, r|s */
#define IKE_AUTH_ECDSA_384		10	/* SHA-384 on P-384 */
#define IKE_AUTH_ECDSA_521		11	/* SHA-512 on P-521 */
#define IKE_AUTH_DIGITAL_SIG		14	/* RFC 7427: AlgorithmIdentifier | signature */

/* Hash algorithms of SIGNATURE_HASH_ALGORITHMS (RFC 7427 7, RFC 8420). */
#define IKE_HASH_SHA1			1
#define IKE_HASH_SHA2_256		2
#define IKE_HASH_SHA2_384		3
#define IKE_HASH_SHA2_512		4
#define IKE_HASH_IDENTITY		5	/* Ed25519, Ed448 */
#define IKE_HASH_BIT(h)			(1u << (h))	/* a set of hashes, as a mask */
/* What we offer and take: SHA-1 is not in it (RFC 8247 says MUST NOT for 14). */
#define IKE_HASHES_OURS	(IKE_HASH_BIT(IKE_HASH_SHA2_256) | IKE_HASH_BIT(IKE_HASH_SHA2_384) | \
			 IKE_HASH_BIT(IKE_HASH_SHA2_512) | IKE_HASH_BIT(IKE_HASH_IDENTITY))

#define IKE_PKI_CHAIN_MAX		8	/* certificates in a chain, ours or a peer's */
#define IKE_PKI_AUTH_MAX		1100	/* an AUTH's data: 8192-bit RSA and an AlgId */
#define IKE_PKI_KEYID_LEN		IKE_CERTREQ_HASH_LEN	/* SHA-1 of a CA's public key */
#define IKE_PKI_DESC_MAX		200	/* "subject '...', serial ..." */

/*
 * Why a peer's certificate or AUTH was refused: one list for the enum, the
 * counter names (ike_pki_fail_name) and the log lines.
 */
#define IKE_PKI_FAIL_LIST(X) \
	X(NONE, "ok") \
	X(MALFORMED, "cert-malformed") \
	X(NO_CERT, "cert-missing") \
	X(EXPIRED, "cert-expired") \
	X(NOT_YET_VALID, "cert-not-yet-valid") \
	X(UNTRUSTED, "cert-untrusted") \
	X(REVOKED, "cert-revoked") \
	X(IDENTITY, "cert-identity") \
	X(SIGNATURE, "bad-signature") \
	X(METHOD, "auth-method")

enum ike_pki_fail {
#define X(n, s) IKE_PKI_##n,
	IKE_PKI_FAIL_LIST(X)
#undef X
	IKE_PKI_FAIL_N
};

const char *ike_pki_fail_name(enum ike_pki_fail f);
/*
 * An IKE identity as text, the way an operator writes it: "fqdn:NAME",
 * "email:ADDR", an address, a DN "/C=../CN=..", else "keyid:HEX" or
 * "id:HEX".  NUL-ended in buf; the length it wanted (>= len: cut).
 */
#define IKE_IDENT_TEXT_MAX	(2 * 255 + 8)	/* "keyid:" and 255 bytes in hex */
size_t ike_ident_text(char *buf, size_t len, uint8_t type, const uint8_t *data, size_t dlen);

/* ---- our credential ----------------------------------------------------- */

struct ike_pki_cred;

/*
 * Load a certificate file (PEM: the certificate then any intermediates; or
 * one DER certificate) and its private key (PEM or DER, PKCS#8 or the
 * traditional forms; RSA of 2048 bits or more, EC P-256/P-384/P-521,
 * Ed25519), checked to belong to the certificate.  The key's bytes are the
 * caller's to wipe; the credential frees (and so wipes) its own copy.
 */
int ike_pki_cred_load(const uint8_t *cert, size_t cert_len, const uint8_t *key, size_t key_len,
		      struct ike_pki_cred **out, char *err, size_t elen);
void ike_pki_cred_free(struct ike_pki_cred *c);

/* The i-th certificate of ours (0: the end entity) as DER, for CERT payloads. */
unsigned ike_pki_cred_count(const struct ike_pki_cred *c);
void ike_pki_cred_der(const struct ike_pki_cred *c, unsigned i, const uint8_t **der,
		      size_t *len);
/* The SHA-1 of the i-th certificate's public key (what a CERTREQ names). */
void ike_pki_cred_keyid(const struct ike_pki_cred *c, unsigned i,
			uint8_t keyid[IKE_PKI_KEYID_LEN]);
/* The subject's DER (an ID_DER_ASN1_DN identity); 0 or -ENOSPC. */
int ike_pki_cred_subject(const struct ike_pki_cred *c, uint8_t *out, size_t cap, size_t *len);
/* "subject 'CN=..', serial 0A:.." of our end entity certificate. */
void ike_pki_cred_describe(const struct ike_pki_cred *c, char *out, size_t len);

/*
 * The AUTH method and hash to sign with, given the hashes the peer announced
 * in SIGNATURE_HASH_ALGORITHMS (a mask of IKE_HASH_BIT; 0 if it sent none):
 * method 14 when the peer takes a hash that suits the key (Ed25519 needs
 * IDENTITY; ECDSA prefers its curve's hash; RSA SHA-256), else the key's
 * own method (1, 9, 10, 11); -ENOTSUP where there is none (Ed25519 to a peer
 * without RFC 7427).
 */
int ike_pki_choose(const struct ike_pki_cred *c, uint32_t peer_hashes, uint8_t *method,
		   uint16_t *hash);

/*
 * The AUTH data for method (and, for 14, hash) over the signed octets
 * v[0] | ... | v[n-1] (RFC 7296 2.15: the IKE_SA_INIT message, the peer's
 * nonce, prf(SK_px, IDx')).  With 14 the data starts with the length and the
 * AlgorithmIdentifier (RFC 7427 3); RSA with 14 signs RSA-PSS (salt as long
 * as the hash).  *len: cap on entry, the length on return.
 */
int ike_pki_sign(const struct ike_pki_cred *c, uint8_t method, uint16_t hash,
		 const struct ike_iov *v, unsigned n, uint8_t *out, size_t *len, char *err,
		 size_t elen);

/* ---- trust anchors and CRLs --------------------------------------------- */

struct ike_pki_trust;

struct ike_pki_trust *ike_pki_trust_new(void);
void ike_pki_trust_free(struct ike_pki_trust *t);
/* CA certificates: PEM (one or more) or one DER certificate. */
int ike_pki_trust_add_ca(struct ike_pki_trust *t, const uint8_t *buf, size_t len, char *err,
			 size_t elen);
/*
 * CRLs: PEM (one or more) or one DER CRL.  Once any is loaded, every
 * certificate of a peer's chain whose issuer has one is checked against it;
 * an issuer without a CRL is not a refusal (strongSwan's default).
 */
int ike_pki_trust_add_crl(struct ike_pki_trust *t, const uint8_t *buf, size_t len, char *err,
			  size_t elen);
unsigned ike_pki_trust_count(const struct ike_pki_trust *t);
/*
 * A CERTREQ's data (3.7): the SHA-1 of each CA's SubjectPublicKeyInfo, 20
 * bytes each, at most cap bytes.  Returns the length.
 */
size_t ike_pki_trust_certreq(const struct ike_pki_trust *t, uint8_t *out, size_t cap);
/* Is keyid (20 bytes) the hash of one of our CAs' public keys? */
bool ike_pki_trust_knows(const struct ike_pki_trust *t, const uint8_t *keyid);

/* ---- the peer ----------------------------------------------------------- */

struct ike_pki_peer;

/*
 * Validate a peer's certificates (certs[0] its end entity, the others
 * intermediates in any order, each DER as a CERT payload carries it) at time
 * now against the trust anchors and CRLs.  On 0, *out holds the end entity
 * for ike_pki_peer_*; on -EACCES or -EBADMSG, *why says why and err names
 * the cause and the certificate (subject, serial).
 */
int ike_pki_peer_verify(const struct ike_pki_trust *t, const struct ike_iov *certs, unsigned n,
			time_t now, struct ike_pki_peer **out, enum ike_pki_fail *why, char *err,
			size_t elen);
void ike_pki_peer_free(struct ike_pki_peer *p);
void ike_pki_peer_describe(const struct ike_pki_peer *p, char *out, size_t len);

/*
 * Is the peer's ID payload (type and data) an identity of its certificate?
 * DER_ASN1_DN: the subject; FQDN, RFC822_ADDR, IPV4_ADDR, IPV6_ADDR: a
 * subjectAltName of that kind (names without regard to case).  0 or -EACCES.
 */
int ike_pki_peer_has_id(const struct ike_pki_peer *p, uint8_t id_type, const uint8_t *data,
			size_t len, char *err, size_t elen);

/*
 * Verify the peer's AUTH (method and data as the payload carries them) over
 * the signed octets: 0, -EACCES (does not verify: IKE_PKI_SIGNATURE; or a
 * method that does not suit the key: IKE_PKI_METHOD), -EBADMSG.  hashes is
 * the mask of hashes we accept for method 14.
 */
int ike_pki_verify(const struct ike_pki_peer *p, uint8_t method, const uint8_t *data,
		   size_t len, uint32_t hashes, const struct ike_iov *v, unsigned n,
		   enum ike_pki_fail *why, char *err, size_t elen);

/* ---- identity patterns (remote-id) ------------------------------------- */

/*
 * A distinguished name in strongSwan's notation ("C=CH, O=Example, CN=gw",
 * also with '/' or ',' between RDNs) as DER, at most cap bytes; a value of
 * "*" is kept as it is, to match any value (ike_pki_id_match).
 */
int ike_pki_dn_parse(const char *s, uint8_t *out, size_t cap, size_t *len, char *err,
		     size_t elen);
/* The DN in DER as text ("CN=gw, O=Example"), cut to len. */
void ike_pki_dn_print(const uint8_t *der, size_t der_len, char *out, size_t len);

/*
 * Does an identity (type, data) match a configured pattern (type, data)?
 * The types must be the same.  DER_ASN1_DN: the same attributes in the same
 * order, each value equal (without regard to case) or "*" in the pattern.
 * FQDN and RFC822_ADDR: equal without regard to case, or a pattern "*..."
 * that the identity ends with after at least one character ("*.example.org",
 * "*@example.org"; "*" alone matches any).  Others: the same bytes.
 */
bool ike_pki_id_match(uint8_t pat_type, const uint8_t *pat, size_t pat_len, uint8_t id_type,
		      const uint8_t *id, size_t id_len);

#endif /* DPVPN_IKE_PKI_H */
