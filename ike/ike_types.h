/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ike_types.h - the IKE engine's internal types: the constants, the SA and
 * context structures, and the small inline helpers every file of ike/ uses.
 * Types only: the functions one file calls in another are in ike_int.h,
 * which includes this; ike_sa.h is the owner's API.
 */
#ifndef DPVPN_IKE_TYPES_H
#define DPVPN_IKE_TYPES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>

#include "ike_crypto.h"
#include "ike_msg.h"
#include "ike_sa.h"

#define COOKIE_PRF	IKE_PRF_HMAC_SHA2_256	/* our cookies' MAC, whatever SAs negotiate */
#define MSG_MAX		8192	/* what we build: an IKE_AUTH with an RSA chain, or its
				 * fragments with their framing (ike_transport.c) */
#define NONCE_LEN	32
#define MAX_PL		24	/* payloads per chain */
#define MAX_PROPS	16	/* proposals per SA payload */
#define MAX_TS		8	/* selectors per TS payload */
#define HALF_OPEN_MS	30000	/* a responder SA that saw no IKE_AUTH by then goes */
#define COOKIE_LEN	33	/* version byte + HMAC-SHA-256 */
#define INIT_RETRIES	3	/* cookie and INVALID_KE_PAYLOAD retries, each */
#define NATD_LEN	20	/* SHA-1 */
#define NATT_PORT	4500	/* IKE and ESP in UDP once a NAT is seen (RFC 3948) */
#define PEER_CAS_MAX	16	/* CA key ids kept from a peer's CERTREQs */
#define ERR_LEN		1024	/* a certificate's subject and serial and an identity fit */
#define WHY_LEN		96
#define IKE_N_NO_ADDITIONAL_SAS	35	/* not in ike_msg.h */
#define IKE_N_ERROR_MAX		16383	/* notify types up to this are errors */
#define REKEY_GRACE_MS	2000	/* default: the old CHILD_SA outlives its rekey this long */
#define REKEY_RETRY_MS	10000	/* a refused lifetime rekey is tried again after this, */
#define REKEY_JITTER_MS	5000	/* plus up to this, drawn each time (two peers that
				 * refused each other's rekey do not retry in step) */
#define REKEYED_MS	30000	/* an IKE SA we replaced waits this long for the peer's Delete */

enum req_kind {
	REQ_NONE, REQ_INIT, REQ_AUTH, REQ_DPD, REQ_DEL_CHILD, REQ_DEL_IKE,
	REQ_REKEY,		/* CREATE_CHILD_SA rekeying the CHILD_SA */
	REQ_DEL_OLD,		/* Delete of the CHILD_SA a rekey replaced */
	REQ_IKE_REKEY,		/* CREATE_CHILD_SA rekeying the IKE SA */
	REQ_DEL_DUP,		/* Delete of our redundant CHILD_SA of crossing rekeys */
	REQ_CREATE,		/* CREATE_CHILD_SA for another CHILD_SA */
	REQ_DEL_SPIS,		/* Delete of CHILD_SAs whose connection went (del_spis) */
};

struct ike_pool;

struct conn {
	struct conn *next;
	/* ike_conn.c's indexes: same name, same remote address, same remote identity */
	struct conn *by_name, *by_addr, *by_id;
	uint64_t seq;			/* when added: the newest comes first (ctx->conns) */
	struct ike_conn_cfg cfg;
	struct ike_pool *pool[2];	/* remote_any: [0] IPv4, [1] IPv6 (ike_cp.c) */
	/*
	 * Several CHILD_SAs per IKE SA: a connection with cfg.ike_sa set is a
	 * child of parent, never in ctx->conns (no lookup by address or ID
	 * finds it) but on parent's kids list, in the order added.
	 */
	struct conn *parent;
	struct conn *kids;		/* a parent's children; sib links them */
	struct conn *sib;
	struct ike_sa *sas;		/* the IKE SAs with this conn (ike_sa_set_conn) */
	/*
	 * The owner still forwards on the SAs of an IKE SA it did not take up
	 * (a restart's make before break): our next IKE_AUTH says no
	 * INITIAL_CONTACT, so the peer keeps those SAs until its liveness check
	 * ends the old IKE SA (ike_conn_keep_older).
	 */
	bool keep_older;
};

/* Prefixes of one side of a CHILD_SA, one family (ike_prop.c). */
struct ts_set {
	struct ike_prefix p[IKE_TS_MAX];
	unsigned n;
};

struct child {
	bool up;
	struct ike_prop_esp prop;
	uint32_t spi_in, spi_out;
	struct ts_set tl, tr;		/* narrowed: what a rekey proposes again */
	uint64_t up_ms;			/* for the lifetime rekey */
};

/*
 * One CHILD_SA of an IKE SA with its rekey state (ike_child.c).  conn: the
 * connection whose selectors and ESP proposals it has (NULL: the IKE SA's).
 */
#define IKE_KIDS_MAX	IKE_CHILDREN_MAX

struct child_sa {
	struct conn *conn;
	bool want_create;		/* initiator: CREATE_CHILD_SA asked for */
	bool creating;			/* ... and sent, not answered yet */
	uint64_t create_retry_ms;	/* refused: asked again then; 0: not */
	struct child child;
	bool want_del_child;
	/*
	 * Rekeying (make before break): the CHILD_SA a rekey replaced stays
	 * installed until deleted, by us at old_del_ms if we started the
	 * rekey (0: not ours to delete), else when the peer's Delete comes.
	 */
	struct child old;
	uint64_t old_del_ms;
	uint8_t rk_nonce[NONCE_LEN];	/* our rekey request's nonce and SPI */
	uint32_t rk_spi;
	/* PFS (esp-proposals with a group): our rekey request's KE, until the answer */
	struct ike_dh *rk_dh;
	uint16_t rk_group;
	unsigned rk_ke_tries;		/* INVALID_KE_PAYLOAD retries of this rekey */
	bool want_rekey;		/* asked for while another request was out */
	uint64_t rekey_retry_ms;	/* lifetime rekey: not before this */
	uint64_t child_rekeys;
	/*
	 * Crossing CHILD_SA rekeys (2.8.1): both are made, and the one whose
	 * exchange has the lowest of the four nonces is redundant (dup), deleted
	 * by the side that initiated it (dup_ours; else the peer's Delete, or
	 * ours of the old CHILD_SA takes it along).  rk_min: the lowest nonce
	 * of the last rekey exchange, while a crossing one may still come: ours
	 * answered and its old CHILD_SA not yet deleted (rk_min_len != 0), or
	 * the peer's answered while ours is in flight (cross_pending).
	 */
	struct child dup;
	bool dup_ours, want_del_dup, cross_pending;
	uint8_t rk_min[IKE_NONCE_MAX];
	size_t rk_min_len;
};

/*
 * A message in reassembly (RFC 7383 2.6, ike_transport.c): one request and one
 * response per SA at a time, as strongSwan keeps one per direction.
 */
struct frag_rx {
	uint8_t *part[IKE_FRAG_MAX];	/* fragment n at [n - 1]: decrypted, unpadded */
	uint16_t part_len[IKE_FRAG_MAX];
	bool active;
	uint32_t msg_id;
	uint8_t first;			/* fragment 1's Next Payload: the inner chain's */
	uint16_t total, have;
	size_t bytes;
	uint64_t start_ms;
};

struct ike_sa {
	struct ike_sa *next, *prev;	/* ctx->sas, newest first */
	struct ike_sa *by_spi;		/* its bucket of ctx->by_spi, once spi_i is known */
	struct ike_sa *by_peer;		/* its bucket of ctx->by_peer, once authenticated */
	bool peer_hashed;
	bool hashed;
	bool cross_target;		/* a crossing rekey's successor: some ike_cross may
					 * point to it (ike_sa_end looks only then) */
	struct conn *conn;		/* set by ike_sa_set_conn only */
	struct ike_sa *conn_next, *conn_prev;	/* conn->sas: its SAs, no scan */
	bool has_vip;			/* remote access: vip leased from conn's pool */
	struct ike_prefix vip;		/* /32 or /128: the client's CHILD_SA selector */
	struct ike_ident peer_id;	/* remote access: the lease's IDi (show ike); data
					 * cut at IKE_IDENT_MAX */
	enum ike_state state;
	bool initiator;
	bool owner_knows;		/* ike_down is due when it ends */
	uint8_t spi_i[IKE_SPI_LEN], spi_r[IKE_SPI_LEN];
	struct ike_addr local, remote;
	struct ike_prop_ike prop;	/* negotiated */
	uint16_t ke_group;		/* initiator: the group of its KE payload */
	struct ike_dh *dh;		/* until the keys are derived */
	uint8_t ni[IKE_NONCE_MAX], nr[IKE_NONCE_MAX];
	size_t ni_len, nr_len;
	struct ike_keys keys;
	uint64_t iv_ctr;		/* SK IVs: one key per direction, so never repeats */
	/* The IKE_SA_INIT messages as sent: AUTH signs them, retransmissions compare. */
	uint8_t *init_req, *init_resp;
	size_t init_req_len, init_resp_len;
	uint8_t cookie[COOKIE_LEN];
	size_t cookie_len;
	unsigned cookie_tries, ke_tries;
	/* Our outstanding request. */
	enum req_kind req_kind;
	uint8_t *req;
	size_t req_len;
	uint32_t req_id, next_req_id;
	unsigned tries;
	uint64_t timeout_ms, next_tx_ms;
	bool want_del_ike;
	/* The peer's last request and our response. */
	uint32_t peer_next_id;
	uint8_t *last_req, *last_resp;
	size_t last_req_len, last_resp_len;
	/* CHILD_SAs: kid0 first (IKE_AUTH's), more[] allocated as made;
	 * ck: the one being worked on (KID()), req_kid: our request's. */
	struct child_sa kid0;
	struct child_sa *more[IKE_KIDS_MAX - 1];
	unsigned n_kids, ck, req_kid;
	/* A child connection removed (reload) while its CHILD_SAs were up or
	 * being made: our inbound SPIs of them, deleted at the next chance;
	 * req_orphan: our request out was about it (its answer's CHILD_SA,
	 * our SPI orphan_spi, goes too). */
	uint32_t del_spis[3 * IKE_KIDS_MAX];
	unsigned n_del_spis;
	bool req_orphan;
	uint32_t orphan_spi;
	uint32_t offered_spi;		/* initiator: the SPI in its ESP proposals */
	uint32_t peer_hashes;		/* its SIGNATURE_HASH_ALGORITHMS (IKE_HASH_BIT) */
	/* the CAs its CERTREQs name (key ids): intermediates it has are not sent */
	uint8_t peer_cas[PEER_CAS_MAX][IKE_PKI_KEYID_LEN];
	unsigned n_peer_cas;
	uint64_t rekey_collisions, rekey_won, rekey_lost;
	/*
	 * Rekeying the IKE SA (2.18): our request's new SPIi, nonce and DH
	 * key, until the answer; the generation for `show ike`.
	 */
	uint8_t irk_spi[IKE_SPI_LEN];
	uint8_t irk_nonce[NONCE_LEN];
	struct ike_dh *irk_dh;
	bool want_ike_rekey;		/* asked for while another request was out */
	/*
	 * Crossing IKE SA rekeys (2.8.2): the peer's, answered while ours is
	 * in flight, waits here (state REKEYED) with its exchange's lowest
	 * nonce until ours is answered; then the one whose exchange has the
	 * lowest of the four nonces is redundant, deleted by its initiator,
	 * and the other takes the CHILD_SAs.
	 */
	struct ike_sa *ike_cross;
	uint8_t irk_min[IKE_NONCE_MAX];
	size_t irk_min_len;
	uint64_t ike_rekey_retry_ms;	/* lifetime rekey: not before this */
	uint64_t ike_rekeys;
	bool nat_local, nat_remote;
	bool encap;			/* IKE on NATT_PORT, the CHILD_SA ESP in UDP */
	uint64_t created_ms, last_rx_ms;
	uint64_t rx, tx, retransmits;
	char *why;			/* for ike_down after our own Delete (ike_why;
					 * malloc'd, whole; NULL: none) */
	/* IKE fragmentation (RFC 7383, ike_transport.c) */
	bool frag_peer;			/* its IKE_SA_INIT said FRAGMENTATION_SUPPORTED */
	bool sealed_frag;		/* ike_seal_msg's last message is fragments */
	bool req_frag, resp_frag;	/* req, last_resp hold fragments (ike_frag_send) */
	struct frag_rx frx[2];		/* [0] the peer's request, [1] the answer to ours */
	/* ike_keep.c: its place + 1 in ctx->dirty (0: not marked since the last
	 * ike_keep_take); kept: the owner was given a record of it */
	uint32_t keep_slot;
	bool kept;
};

/* CHILD_SA i of sa (i < n_kids, or 0). */
static inline struct child_sa *
ike_kid(const struct ike_sa *sa, unsigned i)
{
	return i == 0 ? (struct child_sa *)&sa->kid0 : sa->more[i - 1];
}

#define KID(sa)		ike_kid((sa), (sa)->ck)
/* The configuration of the CHILD_SA being worked on. */
#define KCFG(sa)	(KID(sa)->conn ? &KID(sa)->conn->cfg : &(sa)->conn->cfg)

/*
 * The last IKE SAs that ended here, by SPIs: what the peer still sends them
 * (the answer to the Delete a reload sent, a retransmission) is late, not
 * a message for an SA it never had (bad-spi).
 */
#define IKE_ENDED_MAX		32

struct ike_ended {
	uint8_t spi_i[IKE_SPI_LEN], spi_r[IKE_SPI_LEN];
};

struct ike_ctx {
	struct ike_ops ops;
	void *opaque;
	struct conn *conns;
	struct ike_sa *sas;
	/*
	 * Hashes (ike_conn.c, ike_table.c): at 10 000 SAs and connections a scan of
	 * the lists per message was the cost of a message.  Chained, fixed
	 * sizes, keyed with a random hash_key (a peer picks its SPIi).
	 */
	struct ike_sa **by_spi;		/* IKE_SA_BUCKETS */
	/* SAs by the peer's identity (peer_id), IKE_SA_BUCKETS: INITIAL_CONTACT
	 * finds a remote-access client's older IKE SAs without a walk of all */
	struct ike_sa **by_peer;
	struct conn **conn_name, **conn_addr, **conn_id;	/* IKE_CONN_BUCKETS */
	uint64_t hash_key, conn_seq;
	unsigned n_any, n_cred;		/* connections with remote_any, with certificates */
	uint64_t probes;		/* SAs compared by sa_lookup, half_open_find (tests) */
	unsigned cookie_threshold, half_open;
	uint8_t cookie_secret[32];
	struct ike_stats stats;
	/* ike_keep.c: SAs changed since the last ike_keep_take (NULL: gone since),
	 * and the SPIs of those with a record that went */
	bool keep_on;
	ike_keep_fn keep_fn;
	void *keep_arg;
	struct ike_sa **dirty;
	size_t n_dirty, cap_dirty;
	uint8_t (*gone)[2 * IKE_SPI_LEN];
	size_t n_gone, cap_gone;
	uint64_t keep_lost;		/* changes not tracked: out of memory */
	struct ike_ended ended[IKE_ENDED_MAX];	/* a ring: ended_next the oldest */
	unsigned ended_next;
};

#define IKE_SA_BUCKETS		16384	/* SAs by SPIi: <= 1 a bucket at 10 000 */
#define IKE_CONN_BUCKETS	4096

/*
 * An established IKE SA's record, as its owner keeps it (ike_keep.c writes
 * it, ike_import.c reads it back): this head, n_kids struct keep_kid, then
 * the stored messages (req_len, last_req_len, last_resp_len bytes).
 */
#define KEEP_MAGIC	0x6b454b49u	/* "IKEk" */
#define KEEP_VERSION	1
#define KEEP_MSG_MAX	1024		/* a stored message longer than this is not kept */
#define KEEP_IV_AHEAD	(1ull << 20)	/* > messages sent between two takes */

struct keep_kid {
	char conn[IKE_CONN_NAME_MAX];	/* "": the IKE SA's connection */
	struct child child;
	uint64_t child_rekeys;
	uint64_t rekey_retry_ms;
};

struct keep_rec {
	uint32_t magic, version, size;	/* size: of this struct */
	uint32_t n_kids;
	char conn[IKE_CONN_NAME_MAX];
	char unsettled[WHY_LEN];	/* "": settled */
	uint8_t spi_i[IKE_SPI_LEN], spi_r[IKE_SPI_LEN];
	struct ike_addr local, remote;
	struct ike_prop_ike prop;
	struct ike_keys keys;
	uint64_t iv_ctr;
	uint32_t next_req_id, peer_next_id;
	uint8_t initiator, encap, nat_local, nat_remote, frag_peer, has_vip;
	uint8_t dpd_out, req_frag, resp_frag;
	struct ike_prefix vip;
	struct ike_ident peer_id;
	uint32_t peer_hashes;
	uint64_t created_ms, last_rx_ms, ike_rekey_retry_ms;
	uint64_t ike_rekeys, rx, tx, retransmits;
	uint64_t rekey_collisions, rekey_won, rekey_lost;
	uint32_t req_id;
	uint16_t req_len, last_req_len, last_resp_len;	/* bytes after the kids */
};

_Static_assert(sizeof(struct keep_rec) + IKE_KIDS_MAX * sizeof(struct keep_kid) +
	       3 * KEEP_MSG_MAX <= IKE_KEEP_MAX, "a record fits IKE_KEEP_MAX");

/*
 * What an exchange's handler leaves to the manager (ike_sa.c): the requests
 * of ours that go next, in order, once it returns.  An exchange starts no
 * other exchange itself: as in strongSwan, the task manager decides the
 * next exchange, not the task.  A step's kind is the request (REQ_AUTH,
 * REQ_DEL_IKE, REQ_DEL_CHILD of KID(sa)), or REQ_NONE: whatever sa had
 * asked for meanwhile (ike_next_request).
 */
#define IKE_NEXT_MAX	2	/* a handler leaves two at most (ike_rekey_response) */

struct ike_next {
	unsigned n;
	struct ike_next_step {
		struct ike_sa *sa;
		enum req_kind kind;
	} step[IKE_NEXT_MAX];
};

/* One more step for the manager; 0, what a handler that ends with it returns. */
static inline int
ike_then(struct ike_next *nx, struct ike_sa *sa, enum req_kind kind)
{
	if (nx->n < IKE_NEXT_MAX)
		nx->step[nx->n++] = (struct ike_next_step){ sa, kind };
	return 0;
}

/* A parsed payload chain. */
struct view {
	struct ike_pl pl[MAX_PL];
	unsigned n;
};

/* SA, KE and Nonce of an IKE_SA_INIT message. */
struct init_pl {
	struct ike_proposal props[MAX_PROPS];
	unsigned n_props;
	struct ike_ke ke;
	const uint8_t *nonce;
	size_t nonce_len;
	struct ike_prop_ike chosen;	/* responder: the proposal it took, and its number */
	uint8_t num;
};

/* Small helpers, inline in every file. */

static inline size_t
addr_len(uint8_t family)
{
	return family == AF_INET ? 4 : 16;
}

/* A keyed hash of n bytes (FNV-1a, then a 64-bit mixer): the tables' buckets. */
static inline uint32_t
ike_hash(uint64_t key, const void *p, size_t n)
{
	const uint8_t *b = p;
	uint64_t h = 0xcbf29ce484222325ULL ^ key;

	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 0x100000001b3ULL;
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdULL;
	h ^= h >> 33;
	return (uint32_t)h;
}

static inline bool
ip_equal(const struct ike_addr *a, const struct ike_addr *b)
{
	return a->family == b->family && memcmp(a->ip, b->ip, addr_len(a->family)) == 0;
}

static inline bool
is_zero(const uint8_t *p, size_t n)
{
	uint8_t acc = 0;

	for (size_t i = 0; i < n; i++)
		acc |= p[i];
	return acc == 0;
}

static inline uint32_t
get32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static inline void
put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

#endif /* DPVPN_IKE_TYPES_H */
