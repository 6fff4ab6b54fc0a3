/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ike_msg.h - the IKEv2 message codec (RFC 7296 section 3): the fixed header,
 * the generic payload chain and the payloads dpvpnd speaks, read and written.
 * No cryptography and no state: the caller decrypts an SK payload's body and
 * parses it as another chain, and decides what a well-formed message means.
 *
 * Parsing never copies and never reads outside the bytes it is given: the
 * structs it fills point into the message, so they live as long as it does.
 * Every parser returns 0 or a negative errno and, on error, a message in err
 * that names the field ("ike.length: 40, datagram 36"):
 *   -EBADMSG   malformed: drop it (or answer INVALID_SYNTAX once authenticated)
 *   -EPROTO    ike_hdr_parse only: a major version above 2 (INVALID_MAJOR_VERSION)
 *   -ENOTSUP   ike_chain_parse only: an unknown payload with the critical bit
 *              (UNSUPPORTED_CRITICAL_PAYLOAD, its data the payload type)
 * Integers in the structs are in host order.
 *
 * Building writes into a caller's buffer (struct ike_buf) and never fails
 * half-way: running out of room (or a count or length too large for its field,
 * or a selector type it has no layout for) sets overflow, later writes are
 * dropped and ike_finish() says -ENOSPC.
 * What the builders write, the parsers read back field for field.
 */
#ifndef DPVPN_IKE_MSG_H
#define DPVPN_IKE_MSG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define IKE_HDR_LEN		28	/* SPIs, next, version, exchange, flags, id, length */
#define IKE_GEN_HDR_LEN		4	/* next payload, critical + reserved, length */
#define IKE_VERSION		0x20	/* major 2, minor 0 */
#define IKE_SPI_LEN		8	/* an IKE SA's SPI */
#define IKE_MAX_TRANSFORMS	64	/* per proposal; more is refused as malformed (strongSwan's
					 * default IKE proposal has about 40) */

/* Exchange types (section 3.1). */
enum ike_exchange {
	IKE_SA_INIT = 34,
	IKE_AUTH = 35,
	IKE_CREATE_CHILD_SA = 36,
	IKE_INFORMATIONAL = 37,
};

/* Header flags; the others are reserved, ignored on receipt, zero when sent. */
#define IKE_F_INITIATOR		0x08	/* sent by the original initiator of the IKE SA */
#define IKE_F_VERSION		0x10	/* "could speak a higher version": never set, ignored */
#define IKE_F_RESPONSE		0x20

/* Payload types (section 3.2).  (Not "enum ike_pl": that tag is the struct's.) */
enum ike_pl_type {
	IKE_PL_NONE = 0,
	IKE_PL_SA = 33,
	IKE_PL_KE = 34,
	IKE_PL_IDI = 35,
	IKE_PL_IDR = 36,
	IKE_PL_CERT = 37,
	IKE_PL_CERTREQ = 38,
	IKE_PL_AUTH = 39,
	IKE_PL_NONCE = 40,
	IKE_PL_NOTIFY = 41,
	IKE_PL_DELETE = 42,
	IKE_PL_VENDOR = 43,
	IKE_PL_TSI = 44,
	IKE_PL_TSR = 45,
	IKE_PL_SK = 46,
	IKE_PL_CP = 47,
	IKE_PL_EAP = 48,
	IKE_PL_SKF = 53,	/* RFC 7383 */
};

/* Protocol ids (proposals, notifies, deletes). */
enum ike_proto {
	IKE_PROTO_IKE = 1,
	IKE_PROTO_AH = 2,
	IKE_PROTO_ESP = 3,
};

/* Transform types and the ids dpvpnd uses (IANA "IKEv2 Parameters"). */
enum ike_tr_type {
	IKE_TR_ENCR = 1,
	IKE_TR_PRF = 2,
	IKE_TR_INTEG = 3,
	IKE_TR_DH = 4,
	IKE_TR_ESN = 5,
};
#define IKE_ENCR_AES_CBC		12
#define IKE_ENCR_AES_GCM_16		20
#define IKE_ENCR_CHACHA20_POLY1305	28
#define IKE_PRF_HMAC_SHA2_256		5
#define IKE_PRF_HMAC_SHA2_384		6
#define IKE_PRF_HMAC_SHA2_512		7
#define IKE_INTEG_HMAC_SHA1_96		2
#define IKE_INTEG_HMAC_SHA2_256_128	12	/* IANA: AUTH_HMAC_SHA2_256_128 */
#define IKE_INTEG_HMAC_SHA2_384_192	13
#define IKE_INTEG_HMAC_SHA2_512_256	14
#define IKE_DH_MODP2048			14
#define IKE_DH_ECP256			19
#define IKE_DH_ECP384			20
#define IKE_DH_CURVE25519		31
#define IKE_ESN_NO			0
#define IKE_ESN_YES			1

/* Transform attributes: only Key Length, always in the fixed (TV) format. */
#define IKE_ATTR_AF			0x8000	/* TV: the low 16 bits are the value */
#define IKE_ATTR_KEY_LENGTH		14
#define IKE_KEY_LEN_NONE		(-1)	/* no Key Length attribute */
#define IKE_KEY_LEN_UNUSABLE		(-2)	/* an attribute we do not know: skip it */

/* Notify message types (section 3.10.1); below 16384 they are errors. */
enum ike_notify_type {
	IKE_N_UNSUPPORTED_CRITICAL_PAYLOAD = 1,
	IKE_N_INVALID_MAJOR_VERSION = 5,
	IKE_N_INVALID_SYNTAX = 7,
	IKE_N_INVALID_SPI = 11,
	IKE_N_NO_PROPOSAL_CHOSEN = 14,
	IKE_N_INVALID_KE_PAYLOAD = 17,
	IKE_N_AUTHENTICATION_FAILED = 24,
	IKE_N_INTERNAL_ADDRESS_FAILURE = 36,	/* no address to lease (section 3.15.4) */
	IKE_N_FAILED_CP_REQUIRED = 37,
	IKE_N_TS_UNACCEPTABLE = 38,
	IKE_N_TEMPORARY_FAILURE = 43,
	IKE_N_CHILD_SA_NOT_FOUND = 44,
	IKE_N_INITIAL_CONTACT = 16384,
	IKE_N_NAT_DETECTION_SOURCE_IP = 16388,
	IKE_N_NAT_DETECTION_DESTINATION_IP = 16389,
	IKE_N_COOKIE = 16390,
	IKE_N_USE_TRANSPORT_MODE = 16391,
	IKE_N_REKEY_SA = 16393,
	IKE_N_ESP_TFC_PADDING_NOT_SUPPORTED = 16394,
	IKE_N_NON_FIRST_FRAGMENTS_ALSO = 16395,
	IKE_N_FRAGMENTATION_SUPPORTED = 16430,		/* RFC 7383 */
	IKE_N_SIGNATURE_HASH_ALGORITHMS = 16431,	/* RFC 7427 */
};

/* Identification types (section 3.5). */
enum ike_id_type {
	IKE_ID_IPV4_ADDR = 1,
	IKE_ID_FQDN = 2,
	IKE_ID_RFC822_ADDR = 3,
	IKE_ID_IPV6_ADDR = 5,
	IKE_ID_DER_ASN1_DN = 9,
	IKE_ID_KEY_ID = 11,
};

#define IKE_AUTH_SHARED_KEY_MIC		2	/* AUTH method: a PSK's prf (section 2.15) */

/* Traffic selector types (section 3.13.1). */
#define IKE_TS_IPV4_ADDR_RANGE		7
#define IKE_TS_IPV6_ADDR_RANGE		8

#define IKE_NONCE_MIN			16
#define IKE_NONCE_MAX			256

/* The fixed header. */
struct ike_hdr {
	uint8_t spi_i[IKE_SPI_LEN], spi_r[IKE_SPI_LEN];
	uint8_t next;		/* the first payload's type */
	uint8_t version;	/* as received; IKE_VERSION when built */
	uint8_t exchange;
	uint8_t flags;		/* the defined IKE_F_* bits only */
	uint32_t msg_id, length;
};

/*
 * Read the header of a datagram of len bytes: its length must be len, the
 * major version 2 and the initiator's SPI non-zero.  The minor version and
 * the reserved flag bits are ignored (section 3.1).  On -EPROTO (a higher
 * major version) h is filled, so that the caller can answer.
 */
int ike_hdr_parse(const uint8_t *msg, size_t len, struct ike_hdr *h, char *err, size_t elen);

/* One payload of a chain. */
struct ike_pl {
	uint8_t type;
	bool critical;
	uint8_t inner_first;	/* SK and SKF: the type of the first encrypted payload */
	const uint8_t *body;	/* after the generic header */
	uint16_t len;		/* of the body */
};

/*
 * Walk the payload chain that starts with type first over exactly len bytes
 * (after the header: msg + IKE_HDR_LEN, or a decrypted SK body), into out[]
 * (at most max payloads, *n of them).  The chain must end exactly at len; an
 * SK or SKF payload ends it and must be the last bytes.  Unknown payloads are
 * kept with their type for the caller to skip, unless critical: -ENOTSUP, the
 * payload being out[*n - 1].
 */
int ike_chain_parse(uint8_t first, const uint8_t *p, size_t len, struct ike_pl *out,
		    unsigned max, unsigned *n, char *err, size_t elen);

/* SA payload (section 3.3). */
struct ike_transform {
	uint8_t type;
	uint16_t id;
	int16_t key_len;	/* bits; IKE_KEY_LEN_NONE or IKE_KEY_LEN_UNUSABLE */
};

struct ike_proposal {
	uint8_t num, proto, spi_len;
	uint8_t spi[IKE_SPI_LEN];
	unsigned n_tr;
	struct ike_transform tr[IKE_MAX_TRANSFORMS];
};

/*
 * Read the proposals of an SA payload received in exchange (which decides
 * the SPI size an IKE proposal must have: 0 in IKE_SA_INIT, 8 later; AH and
 * ESP have 4).  Proposals of other protocols are kept for the caller to skip.
 */
int ike_sa_parse(const uint8_t *body, size_t len, uint8_t exchange, struct ike_proposal *out,
		 unsigned max, unsigned *n, char *err, size_t elen);
/*
 * The SA payload of an answer (IKE_SA_INIT, IKE_AUTH or CREATE_CHILD_SA
 * response): exactly one proposal, which keeps the number it had in the
 * request (section 3.3.1), so any number but 0; otherwise as ike_sa_parse.
 */
int ike_sa_parse_answer(const uint8_t *body, size_t len, uint8_t exchange,
			struct ike_proposal *out, char *err, size_t elen);

/* KE payload (section 3.4). */
struct ike_ke {
	uint16_t group;
	const uint8_t *data;
	size_t len;
};
int ike_ke_parse(const uint8_t *body, size_t len, struct ike_ke *ke, char *err, size_t elen);

/* Nonce payload (section 3.9): the body is the nonce, 16..256 bytes. */
int ike_nonce_parse(const uint8_t *body, size_t len, char *err, size_t elen);

/* Notify payload (section 3.10). */
struct ike_notify {
	uint8_t proto;		/* 0 without an SPI */
	uint8_t spi_len;
	uint16_t type;
	const uint8_t *spi;
	const uint8_t *data;
	size_t data_len;
};
int ike_notify_parse(const uint8_t *body, size_t len, struct ike_notify *nt, char *err,
		     size_t elen);

/* Identification payload (section 3.5). */
struct ike_id {
	uint8_t type;
	const uint8_t *data;	/* the identity: 4 bytes for IPv4, 16 for IPv6 */
	size_t len;
	const uint8_t *body;	/* type, reserved and data: the IDx' that AUTH signs */
	size_t body_len;
};
int ike_id_parse(const uint8_t *body, size_t len, struct ike_id *id, char *err, size_t elen);

/* Authentication payload (section 3.8). */
struct ike_auth {
	uint8_t method;
	const uint8_t *data;
	size_t len;
};
int ike_auth_parse(const uint8_t *body, size_t len, struct ike_auth *a, char *err,
		   size_t elen);

/*
 * Certificate (section 3.6) and Certificate Request (3.7) payloads: an
 * encoding byte and its data.  ike_cert_parse wants data (a DER certificate
 * with IKE_CERT_X509_SIG, not looked into here).  ike_certreq_parse takes an
 * empty request (some peers send one to ask for any certificate); with
 * IKE_CERT_X509_SIG its data must be whole SHA-1 hashes of public keys.
 * Other encodings are kept for the caller to skip.
 */
#define IKE_CERT_X509_SIG		4
#define IKE_CERTREQ_HASH_LEN		20	/* SHA-1 of a CA's SubjectPublicKeyInfo */

struct ike_cert {
	uint8_t encoding;
	const uint8_t *data;
	size_t len;
};
int ike_cert_parse(const uint8_t *body, size_t len, struct ike_cert *c, char *err, size_t elen);
int ike_certreq_parse(const uint8_t *body, size_t len, struct ike_cert *c, char *err,
		      size_t elen);

/*
 * SIGNATURE_HASH_ALGORITHMS notify data (RFC 7427 4): 16-bit hash ids, at
 * least one.  Parsed into a mask (bit h for id h; ids of 32 and up, which
 * nobody has assigned, are skipped); built from one, ids in ascending order.
 */
int ike_sig_hashes_parse(const uint8_t *data, size_t len, uint32_t *mask, char *err,
			 size_t elen);
/* The notify data for mask into out (2 bytes an id): its length, 0 if cap is short. */
size_t ike_sig_hashes_build(uint32_t mask, uint8_t *out, size_t cap);

/* Delete payload (section 3.11): IKE has no SPI here; AH and ESP 4-byte ones. */
struct ike_delete {
	uint8_t proto, spi_len;
	uint16_t count;
	const uint8_t *spis;	/* count * spi_len bytes */
};
int ike_delete_parse(const uint8_t *body, size_t len, struct ike_delete *d, char *err,
		     size_t elen);

/* The i-th SPI of an AH or ESP Delete, host order. */
static inline uint32_t
ike_delete_spi(const struct ike_delete *d, unsigned i)
{
	const uint8_t *s = d->spis + (size_t)i * 4;

	return (uint32_t)s[0] << 24 | (uint32_t)s[1] << 16 | (uint32_t)s[2] << 8 | s[3];
}

/*
 * Traffic selector payload (section 3.13).  Addresses are in network order,
 * IPv4 ones in the first 4 bytes.  Selectors of unknown types are kept with
 * their type, the rest zero, for the caller to skip.  Ports 65535..0 are
 * OPAQUE (section 3.13.1), not an empty range.
 */
struct ike_ts {
	uint8_t type, ip_proto;
	uint16_t start_port, end_port;
	uint8_t start[16], end[16];
};
int ike_ts_parse(const uint8_t *body, size_t len, struct ike_ts *out, unsigned max,
		 unsigned *n, char *err, size_t elen);

/*
 * Configuration payload (section 3.15): a CFG type and attributes, each a
 * 15-bit type (the top bit is reserved: ignored on receipt, zero when sent),
 * a length and a value.  The attributes dpvpnd knows must be empty (a
 * request for one) or of their RFC length (IPv6 address: 16 bytes and a
 * prefix length); others are kept with their value for the caller to skip.
 * More than IKE_CP_MAX_ATTRS attributes is refused as malformed (a
 * strongSwan client asks for 2 to 6).  A CFG type outside 1..4 is kept for
 * the caller, which ignores such a payload.
 */
enum ike_cfg_type {
	IKE_CFG_REQUEST = 1,
	IKE_CFG_REPLY = 2,
	IKE_CFG_SET = 3,
	IKE_CFG_ACK = 4,
};

enum ike_cp_attr_type {
	IKE_CP_IP4_ADDRESS = 1,		/* INTERNAL_IP4_ADDRESS: 0 or 4 bytes */
	IKE_CP_IP4_NETMASK = 2,		/* 0 or 4 */
	IKE_CP_IP4_DNS = 3,		/* 0 or 4 */
	IKE_CP_IP6_ADDRESS = 8,		/* 0 or 17: address and prefix length */
	IKE_CP_IP6_DNS = 10,		/* 0 or 16 */
};

#define IKE_CP_MAX_ATTRS	32

struct ike_cp_attr {
	uint16_t type;		/* without the reserved bit */
	uint16_t len;
	const uint8_t *value;
};

struct ike_cp {
	uint8_t cfg_type;
	unsigned n;
	struct ike_cp_attr attr[IKE_CP_MAX_ATTRS];
};
int ike_cp_parse(const uint8_t *body, size_t len, struct ike_cp *cp, char *err, size_t elen);

/* Building. */
#define IKE_NO_NEXT	SIZE_MAX	/* ike_buf.last_next: nothing to patch yet */
#define IKE_NO_MORE	(SIZE_MAX - 1)	/* after SK: another payload is an overflow */

struct ike_buf {
	uint8_t *p;
	size_t len, cap;
	bool overflow;		/* something did not fit: ike_finish() fails */
	size_t last_next;	/* offset of the next-payload byte the next payload sets */
	uint8_t first;		/* type of the first payload begun (an SK's inner_first) */
};

void ike_buf_init(struct ike_buf *b, uint8_t *mem, size_t cap);
void ike_put8(struct ike_buf *b, uint8_t v);
void ike_put16(struct ike_buf *b, uint16_t v);
void ike_put32(struct ike_buf *b, uint32_t v);
void ike_put_bytes(struct ike_buf *b, const void *p, size_t n);
/* Room for n bytes the caller writes (ciphertext in place), or NULL. */
uint8_t *ike_reserve(struct ike_buf *b, size_t n);

/* The header, with h->next and h->length set later; h->version is ignored. */
void ike_build_hdr(struct ike_buf *b, const struct ike_hdr *h);
/* A payload: begin returns its offset, end sets its length once the body is in. */
size_t ike_pl_begin(struct ike_buf *b, uint8_t type, bool critical);
void ike_pl_end(struct ike_buf *b, size_t start);
/*
 * The SK (or SKF) payload, last in its message: inner_first is the first
 * inner payload's type (ike_buf.first of the buffer the plaintext chain was
 * built in).  The caller appends IV, ciphertext and ICV (ike_reserve), calls
 * ike_pl_end() and ike_finish(), then encrypts: the header and the SK
 * generic header, the associated data, are final by then.  Beginning another
 * payload after it sets overflow.
 */
size_t ike_sk_begin(struct ike_buf *b, uint8_t type, uint8_t inner_first);

void ike_build_sa(struct ike_buf *b, const struct ike_proposal *prop, unsigned n);
void ike_build_ke(struct ike_buf *b, uint16_t group, const uint8_t *data, size_t len);
void ike_build_nonce(struct ike_buf *b, const uint8_t *nonce, size_t len);
void ike_build_notify(struct ike_buf *b, const struct ike_notify *nt);
/* type IKE_PL_IDI or IKE_PL_IDR; id->body is not used. */
void ike_build_id(struct ike_buf *b, uint8_t type, const struct ike_id *id);
void ike_build_auth(struct ike_buf *b, const struct ike_auth *a);
/* type IKE_PL_TSI or IKE_PL_TSR. */
void ike_build_ts(struct ike_buf *b, uint8_t type, const struct ike_ts *ts, unsigned n);
void ike_build_delete(struct ike_buf *b, const struct ike_delete *d);
/* type IKE_PL_CERT or IKE_PL_CERTREQ. */
void ike_build_cert(struct ike_buf *b, uint8_t type, const struct ike_cert *c);

/*
 * The Encrypted Fragment payload (RFC 7383 2.5): Fragment Number and Total
 * Fragments ahead of IV, ciphertext and ICV.  Parsed from pl (an IKE_PL_SKF
 * payload of ike_chain_parse): number 1..total, total 1..max; data points at
 * the IV, len what follows the two fields.  -EBADMSG with the field in err.
 */
#define IKE_SKF_HDR_LEN		4	/* Fragment Number, Total Fragments */
struct ike_skf {
	uint16_t number, total;
	const uint8_t *data;	/* IV, ciphertext, ICV */
	size_t len;
};
int ike_skf_parse(const struct ike_pl *pl, unsigned max, struct ike_skf *out, char *err,
		  size_t elen);
/* A CP payload: cp->n attributes, each with its len bytes of value. */
void ike_build_cp(struct ike_buf *b, const struct ike_cp *cp);

/* Write the total length into the header: 0, or -ENOSPC if anything overflowed. */
int ike_finish(struct ike_buf *b);

#endif /* DPVPN_IKE_MSG_H */
