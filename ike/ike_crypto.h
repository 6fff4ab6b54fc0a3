/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ike_crypto.h - the cryptography of IKEv2 (RFC 7296) for dpvpnd: Diffie-
 * Hellman, the PRF and prf+, IKE SA and Child SA key derivation, protection
 * of the Encrypted (SK) payload with AES-GCM (RFC 5282) and PSK
 * authentication.  No message parsing and no state here: callers pass the
 * bytes they took out of (or will put into) messages.
 *
 * Every function returns 0 or a negative errno:
 *   -EINVAL      a bad argument, or a peer value that is not acceptable
 *                (a DH public value of the wrong length or off the curve)
 *   -EOPNOTSUPP  a DH group, PRF or key length this module does not do
 *   -ENOSPC      an output buffer too small
 *   -EMSGSIZE    an input too long for the library (over INT_MAX bytes)
 *   -EBADMSG     an ICV that does not verify, or SK padding that does not fit
 *   -ENOMEM, -EIO  allocation or OpenSSL failure
 * Nothing here logs, and every buffer that held key material on the way
 * is wiped before the function returns; wiping what the caller gets back
 * (struct ike_keys, KEYMAT, DH secrets) is the caller's job.
 */
#ifndef DPVPN_IKE_CRYPTO_H
#define DPVPN_IKE_CRYPTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Transform IDs (IANA "IKEv2 Parameters"). */
#define IKE_DH_MODP2048		14	/* RFC 3526 3 */
#define IKE_DH_ECP256		19	/* RFC 5903 */
#define IKE_DH_ECP384		20	/* RFC 5903 */
#define IKE_DH_CURVE25519	31	/* RFC 8031 */
#define IKE_PRF_HMAC_SHA2_256	5	/* RFC 4868 */
#define IKE_PRF_HMAC_SHA2_384	6
#define IKE_PRF_HMAC_SHA2_512	7
#define IKE_INTEG_NONE		0	/* an AEAD cipher */
#define IKE_INTEG_HMAC_SHA2_256_128	12	/* RFC 4868 */
#define IKE_INTEG_HMAC_SHA2_384_192	13
#define IKE_INTEG_HMAC_SHA2_512_256	14

#define IKE_DH_MAX_PUB		256	/* MODP-2048: y, as long as p */
#define IKE_DH_MAX_SECRET	256
#define IKE_PRF_MAX_LEN		64	/* the longest PRF output (and SK_d, SK_a, SK_p) */
#define IKE_PRF_PLUS_MAX_BLOCKS	255	/* RFC 7296 2.13: the counter is one octet */
#define IKE_NONCE_MIN		16	/* RFC 7296 3.9 */
#define IKE_NONCE_MAX		256
#define IKE_SPI_LEN		8

/* ENCR_AES_GCM_16 in the SK payload (RFC 5282). */
#define IKE_GCM_SALT_LEN	4
#define IKE_GCM_IV_LEN		8
#define IKE_GCM_ICV_LEN		16
#define IKE_ENC_MAX_LEN		(32 + IKE_GCM_SALT_LEN)

/* ENCR_AES_CBC with an AUTH_HMAC_SHA2_* in the SK payload (RFC 7296 3.14). */
#define IKE_CBC_IV_LEN		16	/* also the block: the SK data is padded to it */
#define IKE_ICV_MAX_LEN		32	/* AUTH_HMAC_SHA2_512_256 */

/* One piece of a PRF input; IKE feeds the PRF concatenations such as
 * Ni | Nr | SPIi | SPIr, and this saves copying them together. */
struct ike_iov {
	const void *base;
	size_t len;
};

#define IKE_IOV_MAX		8	/* pieces per PRF call */

/* ---- Diffie-Hellman ---------------------------------------------------- */

struct ike_dh;

/*
 * Bytes of the KE payload's data for group; 0 if the group is not supported.
 * MODP-2048: 256 (y, zero-padded to the length of p); ECP-256/384: 64/96
 * (x || y, RFC 5903 7); Curve25519: 32.
 */
size_t ike_dh_pub_len(uint16_t group);
/* Bytes of g^ir for group; 0 if the group is not supported. */
size_t ike_dh_secret_len(uint16_t group);

/*
 * A fresh private key for group.  Its public value (the KE payload data:
 * y for MODP, x || y for ECP, the u-coordinate for Curve25519) is written to pub;
 * *pub_len is the size of pub on entry and the bytes written on return.
 */
int ike_dh_new(uint16_t group, struct ike_dh **out, uint8_t *pub, size_t *pub_len);

/*
 * As ike_dh_new(), with a given private key (big-endian scalar for ECP,
 * of the group's secret length; big-endian exponent for MODP, 1 to 256
 * bytes; the 32 raw bytes for Curve25519).  For known-answer tests only:
 * real exchanges must use ike_dh_new().
 */
int ike_dh_from_private(uint16_t group, const uint8_t *priv, size_t priv_len,
			struct ike_dh **out, uint8_t *pub, size_t *pub_len);

/*
 * g^ir from the peer's public value.  The value must have exactly
 * ike_dh_pub_len() bytes; for ECP it must be a point on the curve (not
 * the identity), for MODP 1 < y < p - 1 and in the prime-order subgroup,
 * and for Curve25519 the result must not be all zero (a low-order peer
 * value, RFC 8031 2.3); otherwise -EINVAL.  MODP secrets keep their
 * leading zero bytes (2.14: g^ir is as long as p).  *secret_len
 * is the size of secret on entry and ike_dh_secret_len() on return.
 */
int ike_dh_derive(struct ike_dh *d, const uint8_t *peer, size_t peer_len,
		  uint8_t *secret, size_t *secret_len);

/* Frees d; OpenSSL wipes the private key.  NULL is allowed. */
void ike_dh_free(struct ike_dh *d);

/* ---- PRF --------------------------------------------------------------- */

/* Output bytes of the PRF (also the length of SK_d and SK_p); 0 if unknown. */
size_t ike_prf_len(uint16_t prf_id);

/*
 * prf(key, v[0] | ... | v[n-1]).  *out_len is the size of out on entry and
 * ike_prf_len() on return.  n is at most IKE_IOV_MAX; key must not be empty.
 */
int ike_prf(uint16_t prf_id, const uint8_t *key, size_t klen,
	    const struct ike_iov *v, unsigned int n, uint8_t *out, size_t *out_len);

/*
 * prf+(key, seed) of RFC 7296 2.13: T1 | T2 | ..., Tk = prf(key, Tk-1 | S | k),
 * the first out_len bytes; out_len is at most 255 PRF outputs.  The seed
 * is v[0] | ... | v[n-1], n at most IKE_IOV_MAX - 2.
 */
int ike_prf_plus(uint16_t prf_id, const uint8_t *key, size_t klen,
		 const struct ike_iov *v, unsigned int n, uint8_t *out, size_t out_len);

/* ---- IKE SA keys (RFC 7296 2.14, 2.18) ---------------------------------- */

struct ike_keys {
	uint8_t sk_d[IKE_PRF_MAX_LEN];
	uint8_t sk_ai[IKE_PRF_MAX_LEN];
	uint8_t sk_ar[IKE_PRF_MAX_LEN];
	uint8_t sk_ei[IKE_ENC_MAX_LEN];
	uint8_t sk_er[IKE_ENC_MAX_LEN];
	uint8_t sk_pi[IKE_PRF_MAX_LEN];
	uint8_t sk_pr[IKE_PRF_MAX_LEN];
	size_t prf_len;		/* bytes of sk_d, sk_pi, sk_pr */
	size_t integ_len;	/* bytes of sk_ai, sk_ar; 0 with an AEAD */
	size_t enc_len;		/* bytes of sk_ei, sk_er; AES-GCM: key + 4-byte salt */
};

/*
 * The seven keys of a new IKE SA (IKE_SA_INIT):
 *   SKEYSEED = prf(Ni | Nr, g^ir)
 *   {SK_d | SK_ai | SK_ar | SK_ei | SK_er | SK_pi | SK_pr}
 *            = prf+(SKEYSEED, Ni | Nr | SPIi | SPIr)
 * The PRF key is the whole of Ni | Nr, as 2.14 asks for HMAC PRFs (a
 * fixed-key PRF such as AES-XCBC would take 64 bits of each; none yet).
 * enc_key_len is the AES key length, 16 or 32.  With integ IKE_INTEG_NONE
 * the cipher is ENCR_AES_GCM_16: each SK_e is the key followed by the
 * 4-byte salt and there are no SK_a.  Otherwise the cipher is AES-CBC (SK_e
 * is the key alone) and integ an AUTH_HMAC_SHA2_*, whose key is as long as
 * its hash (RFC 4868 2.1.1): 32, 48 or 64 bytes.  Nonces have 16..256 bytes.
 */
int ike_derive_sa_keys(uint16_t prf_id, size_t enc_key_len, uint16_t integ,
		       const uint8_t *ni, size_t ni_len, const uint8_t *nr, size_t nr_len,
		       const uint8_t *gir, size_t gir_len,
		       const uint8_t spi_i[IKE_SPI_LEN], const uint8_t spi_r[IKE_SPI_LEN],
		       struct ike_keys *k);

/*
 * The keys of the IKE SA that replaces an old one (CREATE_CHILD_SA, 2.18):
 *   SKEYSEED = prf(SK_d (old), g^ir (new) | Ni | Nr)
 * and the seven keys as above from the new SPIs.  Ni and SPIi are those of
 * the initiator of the rekeying exchange, which need not be the original
 * initiator; prf_id is the new SA's PRF, for prf+, and old_prf_id the old
 * SA's, which keys SKEYSEED with the old SK_d (what strongSwan does: the
 * two differ only when a rekey changes the PRF).
 */
int ike_derive_rekey_keys(uint16_t prf_id, uint16_t old_prf_id, size_t enc_key_len,
			  uint16_t integ,
			  const uint8_t *old_sk_d, size_t old_sk_d_len,
			  const uint8_t *ni, size_t ni_len, const uint8_t *nr, size_t nr_len,
			  const uint8_t *gir, size_t gir_len,
			  const uint8_t spi_i[IKE_SPI_LEN], const uint8_t spi_r[IKE_SPI_LEN],
			  struct ike_keys *k);

/* Wipes all of k. */
void ike_keys_wipe(struct ike_keys *k);

/* ---- Child SA keys (RFC 7296 2.17) -------------------------------------- */

/*
 * KEYMAT = prf+(SK_d, Ni | Nr), or prf+(SK_d, g^ir (new) | Ni | Nr) when
 * the CREATE_CHILD_SA exchange had a KE payload (gir non-NULL).  The caller
 * takes the keys out of KEYMAT in this order: encryption key of the SA
 * initiator -> responder, its integrity key, then encryption and
 * integrity keys of the SA responder -> initiator.  For AES-GCM ESP each
 * encryption key is followed by its 4-byte salt (RFC 4106 8.1) and there
 * is no integrity key.  len is at most 255 PRF outputs.
 */
int ike_child_keymat(uint16_t prf_id, const uint8_t *sk_d, size_t sk_d_len,
		     const uint8_t *gir, size_t gir_len,
		     const uint8_t *ni, size_t ni_len, const uint8_t *nr, size_t nr_len,
		     uint8_t *out, size_t len);

/* ---- The SK payload with ENCR_AES_GCM_16 (RFC 5282) -------------------- */

/*
 * key_salt is an SK_e: the AES key (16 or 32 bytes) followed by the 4-byte
 * salt, key_len 20 or 36.  The nonce is salt || iv, where iv is the 8-byte
 * IV carried in the payload; it must never repeat under one key (a counter
 * or ike_random()).  aad is the IKE header and everything after it up to
 * and including the SK payload's generic header.  Seal writes ciphertext ||
 * ICV (plen + 16 bytes) to out; out may be plain itself.
 */
int ike_aead_seal(const uint8_t *key_salt, size_t key_len, const uint8_t iv[IKE_GCM_IV_LEN],
		  const uint8_t *aad, size_t aad_len, const uint8_t *plain, size_t plen,
		  uint8_t *out);

/*
 * in is ciphertext || ICV (in_len >= 16); the plaintext (in_len - 16 bytes)
 * goes to out, which may be in itself.  -EBADMSG if the ICV does not
 * verify, and out is then wiped: no unauthenticated byte is handed back.
 */
int ike_aead_open(const uint8_t *key_salt, size_t key_len, const uint8_t iv[IKE_GCM_IV_LEN],
		  const uint8_t *aad, size_t aad_len, const uint8_t *in, size_t in_len,
		  uint8_t *out);

/* ---- The SK payload with ENCR_AES_CBC + AUTH_HMAC_SHA2_* ------------------- */

/* Key and ICV bytes of an AUTH_HMAC_SHA2_* (RFC 4868); 0 if not supported. */
size_t ike_integ_key_len(uint16_t integ);
size_t ike_integ_icv_len(uint16_t integ);

/*
 * The SK payload is IV || ciphertext || ICV (RFC 7296 3.14): AES-CBC of
 * plain (padded by the caller to a multiple of 16 bytes) under ek (16 or
 * 32 bytes), then the ICV, the truncated HMAC under ak of aad (the IKE
 * header and everything up to and including the SK payload's generic
 * header) || iv || ciphertext.  Seal writes ciphertext || ICV (plen +
 * ike_integ_icv_len() bytes) to out; out may be plain itself.  The IV must
 * be unpredictable (ike_random()), not a counter.
 */
int ike_cbc_seal(const uint8_t *ek, size_t ek_len, uint16_t integ, const uint8_t *ak,
		 size_t ak_len, const uint8_t iv[IKE_CBC_IV_LEN], const uint8_t *aad,
		 size_t aad_len, const uint8_t *plain, size_t plen, uint8_t *out);

/*
 * in is ciphertext || ICV; the ICV is checked first, in constant time, and
 * only then is the ciphertext (a positive multiple of 16 bytes) decrypted
 * to out, which may be in itself.  -EBADMSG for a bad ICV or length, and
 * nothing is written to out then.
 */
int ike_cbc_open(const uint8_t *ek, size_t ek_len, uint16_t integ, const uint8_t *ak,
		 size_t ak_len, const uint8_t iv[IKE_CBC_IV_LEN], const uint8_t *aad,
		 size_t aad_len, const uint8_t *in, size_t in_len, uint8_t *out);

/*
 * The decrypted SK data is payloads || padding || pad length (one byte,
 * RFC 7296 3.14); with GCM the padding may be empty (payloads || 0x00).
 * Sets *payload_len to the bytes of payloads; -EBADMSG if there is no pad
 * length byte or it claims more padding than there is.  The padding's
 * contents are not checked: RFC 7296 lets the sender choose them.
 */
int ike_sk_unpad(const uint8_t *plain, size_t plen, size_t *payload_len);

/* ---- Authentication (RFC 7296 2.15) ------------------------------------- */

/*
 * The AUTH data for shared-key authentication:
 *   prf(prf(PSK, "Key Pad for IKEv2"), <SignedOctets>)
 * where the signed octets are RealMessage | Nonce | prf(SK_px, IDx'),
 * passed as pieces (the last from ike_id_mac()).  *out_len as for ike_prf().
 */
int ike_psk_auth(uint16_t prf_id, const uint8_t *psk, size_t psk_len,
		 const struct ike_iov *signed_octets, unsigned int n,
		 uint8_t *out, size_t *out_len);

/*
 * prf(SK_px, IDx'), IDx' being the ID payload without its generic header
 * (ID type, three reserved bytes, identification data).  *out_len as for
 * ike_prf().
 */
int ike_id_mac(uint16_t prf_id, const uint8_t *sk_p, size_t sk_p_len,
	       const uint8_t *id_body, size_t id_len, uint8_t *out, size_t *out_len);

/* a and b equal, in time that depends on len only (AUTH values, ICVs). */
bool ike_auth_equal(const void *a, const void *b, size_t len);

/* ---- Randomness ---------------------------------------------------------- */

/* len bytes from the OpenSSL DRBG: SPIs, nonces, IVs. */
int ike_random(uint8_t *buf, size_t len);

#endif /* DPVPN_IKE_CRYPTO_H */
