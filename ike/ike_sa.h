/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ike_sa.h - the IKEv2 SA state machine (RFC 7296) of dpvpnd, as a library
 * with no sockets and no globals.  The owner feeds it every datagram of the
 * IKE channel (ike_input) and the time (ike_tick), and it answers through
 * callbacks: datagrams to send, CHILD_SAs to install or remove, IKE SAs
 * that ended.  Times are milliseconds on any monotonic scale the owner
 * chooses, passed in, never read here; the one wall-clock read is a
 * certificate's validity (ike_auth.c, time(NULL)).
 *
 * What it speaks, in outline (each exchange's file says the rest): PSK and
 * certificates (ike_auth.c, ike_pki.c), several CHILD_SAs per IKE SA and
 * PFS (ike_child.c), configuration payloads and address pools for remote
 * access (ike_cp.c, ike_pool.c), fragmentation (ike_transport.c, RFC 7383),
 * INITIAL_CONTACT; the first CHILD_SA:
 *   IKE_SA_INIT  proposal selection (2.7), INVALID_KE_PAYLOAD and the retry
 *                with the group asked for, COOKIE (2.6) above a threshold of
 *                half-open SAs, NAT detection (2.23): with a NAT on either
 *                side (or force_encap) the initiator moves to port 4500 for
 *                IKE_AUTH on, a request on 4500 moves the other side, and
 *                the CHILD_SA is ESP in UDP (RFC 3948)
 *   IKE_AUTH     SHARED_KEY_MIC over the SK payload (AES-GCM-16), ESP
 *                proposal selection, traffic selector narrowing (2.9)
 *   CREATE_CHILD_SA  rekey of the CHILD_SA (1.3.3, no PFS), make before
 *                break: the new one up on both sides, then the initiator of
 *                the rekey deletes the old one after a grace period; rekey
 *                of the IKE SA (1.3.2, 2.18, new DH): the CHILD_SA moves to
 *                the new IKE SA untouched, then the initiator of the rekey
 *                deletes the old IKE SA
 *   INFORMATIONAL  Delete of the CHILD_SA and of the IKE SA, liveness checks
 * Message IDs follow 2.3 with a window of one: a retransmitted request gets
 * the cached response byte for byte, anything else out of order is dropped
 * and counted; our requests are retransmitted with exponential backoff.
 *
 * Algorithm, identity and notify numbers are those of ike_msg.h.
 *
 * Callbacks run from inside ike_input, ike_tick, ike_initiate and the other
 * calls taking a context; they must not call back into the same context.
 */
#ifndef DPVPN_IKE_SA_H
#define DPVPN_IKE_SA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ike_pki.h"

#define IKE_CONN_NAME_MAX	32	/* with the NUL */
#define IKE_PSK_MAX		128
#define IKE_IDENT_MAX		255	/* ike_ident.len is a uint8_t */
#define IKE_CONN_PROPS_MAX	4	/* IKE and ESP proposals per connection */
#define IKE_PROP_ALGS_MAX	4	/* algorithms of one kind in a configured proposal */
#define IKE_CHILD_ENC_MAX	36	/* AES-256 key + GCM salt */
#define IKE_CHILD_INTEG_MAX	32	/* HMAC-SHA2-256 key */
#define IKE_TS_MAX		8	/* prefixes per side of a connection or CHILD_SA */

/* An address and UDP port; family is AF_INET (ip[0..3]) or AF_INET6. */
struct ike_addr {
	uint8_t family;
	uint8_t ip[16];		/* network order */
	uint16_t port;		/* host order */
};

/* An identity; type 0 means "the address" (ID_IPV4_ADDR or ID_IPV6_ADDR). */
struct ike_ident {
	uint8_t type;		/* enum ike_id_type */
	uint8_t len;
	uint8_t data[IKE_IDENT_MAX];
};

/* A traffic selector: every protocol and port of one prefix. */
struct ike_prefix {
	uint8_t family;		/* AF_INET or AF_INET6 */
	uint8_t plen;
	uint8_t addr[16];	/* network order, IPv4 in the first 4 bytes */
};

/* An encryption algorithm and its key length in bits. */
struct ike_encr {
	uint16_t id;		/* IKE_ENCR_AES_GCM_16, IKE_ENCR_AES_CBC, ... */
	uint16_t bits;		/* 128 or 256 */
};

/*
 * A proposal as configured, strongSwan's "aes128-aes256-sha256-ecp256-x25519":
 * the algorithms of each kind in order of preference, offered as one
 * proposal with a transform each (RFC 7296 3.3).  Either every encryption
 * algorithm is an AEAD and there is no integrity algorithm, or none is and
 * there is at least one.  IKE: encr, prf, dh (and integ) each at least one.
 * ESP: encr (and integ); dh is the PFS group for CREATE_CHILD_SA (n_dh 0:
 * no PFS), never offered in IKE_AUTH; no prf.
 */
struct ike_prop_cfg {
	struct ike_encr encr[IKE_PROP_ALGS_MAX];
	uint16_t integ[IKE_PROP_ALGS_MAX];
	uint16_t prf[IKE_PROP_ALGS_MAX];
	uint16_t dh[IKE_PROP_ALGS_MAX];
	uint8_t n_encr, n_integ, n_prf, n_dh;
	uint8_t esn;		/* ESP: IKE_PROP_ESN_* offered/accepted; 0 = no ESN only */
};

#define IKE_PROP_ESN_NO		1
#define IKE_PROP_ESN_YES	2

/* The IKE SA's algorithms as negotiated: one of each. */
struct ike_prop_ike {
	uint16_t encr;		/* IKE_ENCR_AES_GCM_16 or IKE_ENCR_AES_CBC */
	uint16_t encr_bits;	/* 128 or 256 */
	uint16_t integ;		/* 0 with GCM; IKE_INTEG_HMAC_SHA2_* with CBC */
	uint16_t prf;		/* IKE_PRF_HMAC_SHA2_256/384/512 */
	uint16_t dh;		/* IKE_DH_MODP2048, _ECP256, _ECP384, _CURVE25519 */
};

/* A CHILD_SA's algorithms as negotiated. */
struct ike_prop_esp {
	uint16_t encr;		/* IKE_ENCR_AES_GCM_16 or IKE_ENCR_AES_CBC */
	uint16_t encr_bits;	/* 128 or 256 */
	uint16_t integ;		/* 0 with GCM; IKE_INTEG_HMAC_SHA2_256_128 with CBC */
	uint16_t dh;		/* the PFS group of the exchange that made it; 0: none */
	uint8_t esn;		/* 1: extended sequence numbers (RFC 4303 2.2.1) */
};

#define IKE_DNS_MAX		4

struct ike_conn_cfg {
	char name[IKE_CONN_NAME_MAX];
	struct ike_addr local, remote;	/* the responder matches on the IPs, then the IDi */
	uint8_t psk[IKE_PSK_MAX];	/* copied by ike_conn_add: wipe yours after */
	size_t psk_len;
	/*
	 * Certificates (RFC 7296 2.15 signatures, RFC 7427) instead of the PSK
	 * when both are set: our credential and the trust anchors the peer's
	 * chain must lead to.  Not copied: the owner keeps them until the
	 * connection is removed.  remote_id may then be a pattern
	 * (ike_pki_id_match).
	 */
	const struct ike_pki_cred *cred;
	const struct ike_pki_trust *trust;
	struct ike_ident local_id, remote_id;
	struct ike_prop_cfg ike[IKE_CONN_PROPS_MAX];	/* in order of preference */
	unsigned n_ike;
	struct ike_prop_cfg esp[IKE_CONN_PROPS_MAX];
	unsigned n_esp;
	struct ike_prefix ts_local, ts_remote;
	/*
	 * Not "": this connection is a CHILD_SA of connection ike_sa's IKE SA
	 * (added after it): its own ts_*, esp, child_rekey_ms; the rest of its
	 * configuration is not used.  The initiator makes it with
	 * CREATE_CHILD_SA (ike_initiate on its name); a responder picks it for
	 * a peer's CHILD_SA by the traffic selectors.
	 */
	char ike_sa[IKE_CONN_NAME_MAX];
	/* More prefixes on either side after ts_local / ts_remote (lists of
	 * subnets, one family): proposed as several TS each, narrowed each */
	struct ike_prefix ts_local_more[IKE_TS_MAX - 1], ts_remote_more[IKE_TS_MAX - 1];
	uint8_t n_ts_local_more, n_ts_remote_more;
	uint32_t retrans_ms;		/* first retransmission timeout, doubled each time */
	unsigned retrans_tries;		/* transmissions of a request before giving up */
	uint32_t dpd_ms;		/* liveness check after this long unheard; 0: off */
	/*
	 * UDP encapsulation (RFC 3948) even without a NAT: our NAT detection
	 * hash of the source is made not to match, so that the peer believes
	 * us behind one and floats to port 4500 with us (what strongSwan's
	 * encap=yes does; needed with kernel-libipsec peers).
	 */
	bool force_encap;
	/*
	 * Our port once IKE is in UDP (0: 4500): an initiator then talks from
	 * it to the peer's 4500, as from behind a NAT, and its CHILD_SA's ESP
	 * in UDP comes from it too (a tester that looks like a peer per port).
	 */
	uint16_t natt_port;
	uint32_t child_rekey_ms;	/* initiator rekeys a CHILD_SA this old; 0: never */
	uint32_t rekey_grace_ms;	/* old CHILD_SA kept after a rekey; 0: 2000 */
	uint32_t ike_rekey_ms;		/* initiator rekeys the IKE SA this old; 0: never */
	/*
	 * IKE fragmentation (RFC 7383): offered in IKE_SA_INIT unless
	 * no_fragmentation; when both offered it, an encrypted message whose
	 * IP datagram would exceed fragment_size (0: 1280, as strongSwan's
	 * charon.fragment_size) goes as Encrypted Fragment payloads.
	 */
	bool no_fragmentation;
	uint16_t fragment_size;
	/*
	 * INITIAL_CONTACT (RFC 7296 2.4, ike_auth.c): sent in our IKE_AUTH
	 * request when the connection has no other IKE SA; the peer's ends its
	 * older IKE SAs with the same identity.  no_initial_contact: neither.
	 */
	bool no_initial_contact;
	/*
	 * Remote access (ike_cp.c, RFC 7296 3.15): a responder for peers at any
	 * address (remote is not used), certificates only; each client leases
	 * an address from the pool of ts_local's family (one IPv4, one IPv6)
	 * through the CP payload and its CHILD_SA is narrowed to it; dns goes
	 * to clients that ask.  Such a connection never initiates.
	 */
	bool remote_any;
	struct ike_prefix pool[2];
	unsigned n_pool;
	struct ike_addr dns[IKE_DNS_MAX];	/* family and ip */
	unsigned n_dns;
	bool want_vip;			/* initiator: ask for an address (CFG_REQUEST) */
};

/* A CHILD_SA (ESP, tunnel mode) as negotiated, for the owner to install. */
/*
 * Negotiated algorithms by IANA number (0: none), shown as strongSwan's
 * proposal syntax ("aes128gcm16-prfsha256-x25519", "aes256-sha256-esn") by
 * ike_proposal_text: what show ike and show tunnels print.
 */
struct ike_alg_set {
	uint16_t encr, encr_bits, integ, prf, dh;
	bool esn;
};

enum ike_alg_kind { IKE_ALG_ENCR, IKE_ALG_INTEG, IKE_ALG_PRF, IKE_ALG_DH };

/* The text into buf (cut at len, NUL-ended); its length as snprintf counts it. */
size_t ike_proposal_text(char *buf, size_t len, const struct ike_alg_set *a);
/* One algorithm's keyword ("aes128gcm16", "prfsha256", "x25519"); NULL: not one of ours. */
const char *ike_alg_word(enum ike_alg_kind kind, uint16_t id, uint16_t bits);

struct ike_child {
	uint16_t encr;			/* IKE_ENCR_AES_GCM_16 or IKE_ENCR_AES_CBC */
	uint16_t encr_bits;
	uint16_t integ;			/* IKE_INTEG_HMAC_SHA2_256_128, or 0 with GCM */
	uint16_t dh;			/* PFS: the group of the exchange's KE; 0 none */
	bool esn;			/* 64-bit sequence numbers negotiated */
	size_t enc_key_len;		/* bytes of enc_*: the AES key, + 4 salt with GCM */
	size_t integ_key_len;		/* bytes of integ_*: 32, or 0 with GCM */
	uint32_t spi_in, spi_out;	/* host order */
	uint8_t enc_in[IKE_CHILD_ENC_MAX], enc_out[IKE_CHILD_ENC_MAX];
	uint8_t integ_in[IKE_CHILD_INTEG_MAX], integ_out[IKE_CHILD_INTEG_MAX];
	struct ike_prefix ts_local, ts_remote;	/* narrowed; the first of each side */
	struct ike_prefix ts_local_more[IKE_TS_MAX - 1], ts_remote_more[IKE_TS_MAX - 1];
	unsigned n_ts_local_more, n_ts_remote_more;	/* the rest, if any */
	struct ike_addr local, remote;		/* the tunnel's outer addresses */
	/* remote access: the client's IDi (its IKE SA's, valid in the callback); else NULL */
	const struct ike_ident *peer_id;
	struct ike_alg_set ike_alg;		/* its IKE SA's algorithms (show tunnels) */
	/*
	 * ESP in UDP (RFC 3948), when a NAT was detected or force_encap asked
	 * for it: from port udp_local (4500) to udp_remote (the peer's port as
	 * seen here, a NAT's mapping of its 4500).  The IKE channel is on the
	 * same ports (local.port and remote.port).
	 */
	bool udp_encap;
	uint16_t udp_local, udp_remote;		/* host order; 0 without encapsulation */
};

/*
 * The owner's side.  child_up's keys are wiped when it returns: copy what
 * is needed.  ike_down is called once for every IKE SA that ends after
 * ike_initiate, or after the responder has seen an IKE_AUTH request;
 * a child that was up gets child_down first.  An IKE SA replaced by a
 * rekey (ike_sa_rekey) is not one that ends: its successor carries on.
 */
struct ike_ops {
	void (*send)(void *opaque, const struct ike_addr *local, const struct ike_addr *remote,
		     const uint8_t *msg, size_t len);
	void (*child_up)(void *opaque, const char *conn, const struct ike_child *c);
	/* ts_remote: the CHILD_SA's first remote selector, as child_up had it (a
	 * remote-access client's lease: its owner finds it without a scan) */
	void (*child_down)(void *opaque, const char *conn, uint32_t spi_in, uint32_t spi_out,
			   const struct ike_prefix *ts_remote);
	void (*ike_down)(void *opaque, const char *conn, const char *why);
	/* Optional: why a message was dropped, naming the field (never a key). */
	void (*log)(void *opaque, const char *conn, const char *msg);
	/*
	 * Optional: ike_sa_import brought back an IKE SA with this CHILD_SA up,
	 * as child_up describes it but without keys (they are where the last
	 * owner installed them).
	 */
	void (*child_kept)(void *opaque, const char *conn, const struct ike_child *c);
};

/* Why a received message was dropped or refused: one counter each. */
#define IKE_REJECT_LIST(X) \
	X(MALFORMED, "malformed") \
	X(UNSUPPORTED, "unsupported") \
	X(BAD_SPI, "bad-spi") \
	X(BAD_FLAGS, "bad-flags") \
	X(BAD_MSGID, "bad-msgid") \
	X(BAD_EXCHANGE, "bad-exchange") \
	X(ICV_FAIL, "icv-fail") \
	X(AUTH_FAIL, "auth-fail") \
	X(NO_PROPOSAL, "no-proposal") \
	X(INVALID_KE, "invalid-ke") \
	X(TS_UNACCEPTABLE, "ts-unacceptable") \
	X(NO_CONN, "no-conn") \
	X(COOKIE, "cookie") \
	X(PEER_ERROR, "peer-error")

enum ike_reject {
#define IKE_REJ_ENUM(e, s) IKE_REJ_##e,
	IKE_REJECT_LIST(IKE_REJ_ENUM)
#undef IKE_REJ_ENUM
	IKE_REJ_COUNT
};

/*
 * Why a received IKE fragment (RFC 7383) was dropped: counted apart from the
 * rejects (a fragment that fails is also a reject only where it says so).
 */
#define IKE_FRAG_DROP_LIST(X) \
	X(NOT_NEGOTIATED, "not-negotiated")	/* an SKF where no one offered fragmentation */ \
	X(MALFORMED, "malformed")		/* number or total out of range, or short */ \
	X(ICV_FAIL, "icv-fail")			/* does not authenticate: not kept */ \
	X(TOTAL_CHANGED, "total-changed")	/* another total than the message's first */ \
	X(DUPLICATE, "duplicate")		/* that number is in already */ \
	X(TOO_BIG, "too-big")			/* the message would pass IKE_FRAG_BYTES_MAX */ \
	X(SUPERSEDED, "superseded")		/* a newer message's fragments came: its own went */ \
	X(TIMEOUT, "timeout")			/* incomplete after IKE_FRAG_TIMEOUT_MS */ \
	X(LATE, "late")				/* of a message already reassembled */

enum ike_frag_drop {
#define IKE_FRAG_ENUM(e, s) IKE_FRAG_##e,
	IKE_FRAG_DROP_LIST(IKE_FRAG_ENUM)
#undef IKE_FRAG_ENUM
	IKE_FRAG_DROP_N
};

#define IKE_FRAG_MAX		32	/* fragments of one message we reassemble */
#define IKE_FRAG_BYTES_MAX	65536	/* their decrypted bytes together */
#define IKE_FRAG_TIMEOUT_MS	10000	/* an incomplete message is let go after this */
#define IKE_FRAG_SIZE_MIN	256	/* ike_conn_cfg.fragment_size: headers and data fit */

struct ike_stats {
	uint64_t rx, tx;		/* datagrams */
	uint64_t retransmits;		/* our requests sent again */
	uint64_t resent_responses;	/* cached responses to retransmitted requests */
	uint64_t late_responses;	/* answers to our requests that were answered already */
	uint64_t after_end;		/* messages for an IKE SA that ended here lately */
	uint64_t half_open_expired;
	uint64_t reject[IKE_REJ_COUNT];
	uint64_t pki_fail[IKE_PKI_FAIL_N];	/* why auth-fail, with certificates */
	uint64_t frag_tx, frag_rx;	/* IKE fragments (datagrams) sent, authenticated in */
	uint64_t frag_reassembled;	/* messages put together from fragments */
	uint64_t frag_drop[IKE_FRAG_DROP_N];
	uint64_t pool_exhausted;	/* remote access: INTERNAL_ADDRESS_FAILURE sent */
	uint64_t cp_missing;		/* remote access: FAILED_CP_REQUIRED sent */
	uint64_t initial_contact;	/* IKE SAs ended by the peer's INITIAL_CONTACT */
};

enum ike_state {
	IKE_ST_INIT_SENT,	/* initiator: IKE_SA_INIT request out */
	IKE_ST_HALF_OPEN,	/* responder: IKE_SA_INIT answered */
	IKE_ST_AUTH_SENT,	/* initiator: IKE_AUTH request out */
	IKE_ST_ESTABLISHED,
	IKE_ST_DELETING,	/* our Delete of the IKE SA is out */
	IKE_ST_REKEYED,		/* replaced by a rekey: only its Delete is left */
};

/* What `show ike` prints about one IKE SA. */
#define IKE_CHILDREN_MAX	16	/* CHILD_SAs per IKE SA */

/* One CHILD_SA of an IKE SA (ike_sa_status.children). */
struct ike_child_status {
	const char *conn;		/* the connection it is of (a child's or the IKE SA's) */
	bool up;			/* false: being made */
	uint32_t spi_in, spi_out;
	uint16_t dh;			/* the PFS group of the exchange that made it */
	struct ike_prefix ts_local[IKE_TS_MAX], ts_remote[IKE_TS_MAX];	/* narrowed */
	unsigned n_ts_local, n_ts_remote;
	uint64_t rekeys;
	uint64_t up_ms;			/* when made (or last rekeyed) */
	struct ike_alg_set alg;		/* its ESP algorithms (prf 0; dh: PFS) */
};

struct ike_sa_status {
	const char *conn;
	enum ike_state state;
	bool initiator;
	uint8_t spi_i[8], spi_r[8];
	struct ike_addr local, remote;
	uint16_t encr, encr_bits, integ, prf, dh;
	bool nat_local, nat_remote;	/* this side, the peer behind a NAT */
	bool child_up;
	uint32_t child_spi_in, child_spi_out;
	uint16_t child_dh;		/* the PFS group of the exchange that made it; 0 none */
	uint32_t next_req_id;		/* our next request */
	uint32_t peer_next_id;		/* the peer's next request expected */
	uint64_t rx, tx, retransmits;
	bool udp_encap;			/* IKE on port 4500, ESP in UDP */
	uint64_t child_rekeys;		/* CHILD_SA rekeys completed, either side's, all */
	uint64_t ike_rekeys;		/* IKE SA rekeys before this one: its generation */
	/* CHILD_SA and IKE SA rekeys that crossed the peer's (2.8.1, 2.8.2), and how */
	uint64_t rekey_collisions, rekey_won, rekey_lost;
	bool has_vip;			/* remote access: the client's leased address */
	struct ike_prefix vip;		/* /32 or /128 */
	struct ike_ident peer_id;	/* with has_vip: the client's IDi (cut at IKE_IDENT_MAX) */
	/* every CHILD_SA (the child_* above are the first one's); child_rekeys:
	 * theirs added up */
	struct ike_child_status children[IKE_CHILDREN_MAX];
	unsigned n_children;
};

struct ike_ctx;

/* A context; NULL on allocation failure.  opaque is passed to every callback. */
struct ike_ctx *ike_new(const struct ike_ops *ops, void *opaque);
/* Ends every SA (callbacks run, nothing sent) and wipes every key and PSK. */
void ike_free(struct ike_ctx *ctx);

/*
 * Add a connection (copied): 0, -EEXIST for a name in use, -EINVAL with a
 * message naming the field in err for a configuration it cannot use.
 */
int ike_conn_add(struct ike_ctx *ctx, const struct ike_conn_cfg *cfg, char *err, size_t elen);
/* Whether ike_conn_add could use cfg: 0, or -EINVAL with the field in err. */
int ike_conn_check(const struct ike_conn_cfg *cfg, char *err, size_t elen);
/*
 * Remove connection name (a reload dropped or changed it): its IKE SAs end at
 * once, callbacks run (child_down, ike_down), and an established one that has
 * no request in flight first sends the peer its Delete, once (nothing waits
 * for the answer, which finds no SA); its PSK is wiped.  0 or -ENOENT.
 */
int ike_conn_remove(struct ike_ctx *ctx, const char *name, uint64_t now_ms);

/* Above max half-open responder SAs, IKE_SA_INIT needs a cookie; 0: never. */
void ike_set_cookie_threshold(struct ike_ctx *ctx, unsigned max);

/*
 * Connection name's next IKE SA of ours says INITIAL_CONTACT (on: not):
 * the owner still forwards on the SAs of an older IKE SA with the peer,
 * which INITIAL_CONTACT would make the peer end before the new CHILD_SA is
 * up at both ends.  0 or -ENOENT.
 */
int ike_conn_keep_older(struct ike_ctx *ctx, const char *name, bool on);

/* Start the IKE SA (and its CHILD_SA) of connection name: 0, -ENOENT, -EALREADY. */
int ike_initiate(struct ike_ctx *ctx, const char *name, uint64_t now_ms);
/* Delete the IKE SA of name (INFORMATIONAL Delete; ike_down on the answer). */
int ike_terminate(struct ike_ctx *ctx, const char *name, uint64_t now_ms);
/* Delete the CHILD_SA of name and keep the IKE SA. */
int ike_child_close(struct ike_ctx *ctx, const char *name, uint64_t now_ms);
/*
 * Rekey the CHILD_SA of name (CREATE_CHILD_SA, no PFS), make before break:
 * child_up for the new one on both sides (install it and move the outbound
 * policy to it, the old one still installed), then after rekey_grace_ms our
 * Delete of the old one, with child_down for it on both sides.  0, -ENOENT
 * (no CHILD_SA up), -EBUSY (a rekey under way or its old CHILD_SA not yet
 * deleted).  The peer's rekey is answered the same way; one that crosses
 * ours is made too (2.8.1): once both are, the one whose exchange has the
 * lowest nonce is redundant and deleted by its initiator (child_down for it
 * on both sides, it never carries traffic), the winner's initiator deletes
 * the old one as above.
 */
int ike_child_rekey(struct ike_ctx *ctx, const char *name, uint64_t now_ms);
/*
 * The same for the CHILD_SA with inbound or outbound SPI spi (a remote-access
 * client's: its section's name is every client's); and the IKE SA that
 * carries it ended (Delete).  -ENOENT if no established IKE SA has it.
 */
int ike_child_rekey_spi(struct ike_ctx *ctx, uint32_t spi, uint64_t now_ms);
int ike_terminate_spi(struct ike_ctx *ctx, uint32_t spi, uint64_t now_ms);

/*
 * Rekey the IKE SA of name (CREATE_CHILD_SA with a new DH of the same group,
 * 2.18).  The new IKE SA takes over the CHILD_SAs as they are (no child_up,
 * no child_down: nothing changes in the dataplane), its message IDs start at
 * 0, and the initiator of the rekey deletes the old IKE SA, which goes with
 * no ike_down.  After the rekey, the side that asked for it is the new IKE
 * SA's initiator (2.18).  0 (sent, or queued behind our request in flight),
 * -ENOENT (no established IKE SA), -EBUSY (an IKE SA or CHILD_SA rekey under
 * way or queued).  One IKE SA rekey or CHILD_SA rekey at a time: while ours
 * is in flight, ike_child_rekey says -EBUSY, and the peer's CHILD_SA rekey
 * is refused (TEMPORARY_FAILURE), as is the peer's IKE SA rekey while any
 * other request of ours is outstanding: try again later.  The peer's IKE SA
 * rekey crossing ours is made too (2.8.2): once ours is answered, the
 * exchange with the lowest nonce is redundant and deleted by its initiator,
 * the other new IKE SA takes the CHILD_SAs, the old one goes as above.
 */
int ike_sa_rekey(struct ike_ctx *ctx, const char *name, uint64_t now_ms);

/*
 * A datagram of the IKE channel, local and remote as the dataplane saw them.
 * 0 if it was used, else a negative errno; either way the counters tell.
 */
int ike_input(struct ike_ctx *ctx, const struct ike_addr *local, const struct ike_addr *remote,
	      const uint8_t *msg, size_t len, uint64_t now_ms);
/* Timers: retransmissions, liveness checks, half-open expiry, CHILD_SA and IKE SA rekeys. */
void ike_tick(struct ike_ctx *ctx, uint64_t now_ms);

/*
 * Keeping IKE SAs across a restart of their owner (ike_keep.c).  After
 * ike_keep_start, fn gets the record of an established IKE SA (rec, len
 * bytes, at most IKE_KEEP_MAX; conn: its connection) before each message it
 * sends leaves (from inside the calls that send: it must not call into the
 * context), and from ike_keep_take for those that changed otherwise since
 * the last call; the owner keeps it by the SA's SPIs in place of the one
 * before.  rec NULL (len 0; conn NULL for one that ended) says the SA has
 * none any more (it ended, was replaced by a rekey or is being deleted): its
 * record goes.  Records hold the SA's keys: store them as safely as the
 * CHILD_SAs' keys, and wipe them when they go.  ike_keep_take returns the
 * calls it made.
 *
 * ike_sa_import makes an IKE SA again from a record in a context that has its
 * connection (added first): 0, and child_kept for every CHILD_SA up in it;
 * it then goes on as before (same SPIs, keys, message IDs, lease, rekey
 * times).  Else nothing is made and err says why: -EINVAL (not a record of
 * this version), -EAGAIN (an exchange was half done when it was taken: make
 * a new IKE SA), -ESTALE (its connection is gone, or changed: addresses,
 * proposals, children, the client's address), -EEXIST, -ENOMEM.
 */
#define IKE_KEEP_MAX		12288
typedef void (*ike_keep_fn)(void *arg, const char *conn, const uint8_t *spi_i,
			    const uint8_t *spi_r, const uint8_t *rec, size_t len);
void ike_keep_start(struct ike_ctx *ctx, ike_keep_fn fn, void *arg);
unsigned ike_keep_take(struct ike_ctx *ctx);
int ike_sa_import(struct ike_ctx *ctx, const uint8_t *rec, size_t len, uint64_t now_ms,
		  char *err, size_t elen);

/* Calls fn for each IKE SA, in no particular order; fn must not change ctx. */
void ike_sa_walk(const struct ike_ctx *ctx, void (*fn)(void *arg, const struct ike_sa_status *st),
		 void *arg);
/*
 * The same for the IKE SAs of connection name only (its list: no walk of
 * them all, which show tunnels did once per tunnel): 0, or -ENOENT.
 */
int ike_sa_walk_conn(struct ike_ctx *ctx, const char *name,
		     void (*fn)(void *arg, const struct ike_sa_status *st), void *arg);
const struct ike_stats *ike_get_stats(const struct ike_ctx *ctx);
const char *ike_reject_name(enum ike_reject r);
const char *ike_frag_drop_name(enum ike_frag_drop d);
const char *ike_state_name(enum ike_state s);

#endif /* DPVPN_IKE_SA_H */
