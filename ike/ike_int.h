/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ike_int.h - what the files of the IKE SA state machine share, and nothing
 * else includes: the SA and context structures, the constants, and the
 * functions one file calls in another (each file's top comment says what
 * it holds).  ike_sa.h is the API.
 */
#ifndef DPVPN_IKE_INT_H
#define DPVPN_IKE_INT_H

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
				 * fragments with their framing (ike_frag.c) */
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
 * A message in reassembly (RFC 7383 2.6, ike_frag.c): one request and one
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
	/* IKE fragmentation (RFC 7383, ike_frag.c) */
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
	 * Hashes (ike_conn.c, ike_sa.c): at 10 000 SAs and connections a scan of
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

/* ike_sa.c */
/* sa->why, whatever its length (kept as it was if there is no memory). */
void ike_why(struct ike_sa *sa, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void ike_log(struct ike_ctx *ctx, const struct ike_sa *sa, const char *fmt, ...)
		__attribute__((format(printf, 3, 4)));
int ike_drop(struct ike_ctx *ctx, const struct ike_sa *sa, enum ike_reject r, int rc,
		const char *err);
int ike_store(uint8_t **dst, size_t *dlen, const uint8_t *src, size_t len);
int ike_random_nonzero(uint8_t *p, size_t n);
const char *ike_notify_name(uint16_t type);
int ike_view_parse(uint8_t first, const uint8_t *p, size_t len, struct view *v, char *err,
		size_t elen);
const struct ike_pl *ike_find_pl(const struct view *v, uint8_t type);
bool ike_find_notify(const struct view *v, uint16_t type, unsigned *from, struct ike_notify *nt);
/* ike_auth.c: IKE_SA_INIT's part of certificates (RFC 7427 4, RFC 7296 3.7) */
void ike_pki_init_put(const struct ike_sa *sa, struct ike_buf *b, bool certreq);
void ike_pki_init_get(struct ike_sa *sa, const struct view *v);
void ike_pki_certreq_get(struct ike_sa *sa, const struct view *v);
uint16_t ike_error_notify(const struct view *v);
void ike_put_notify(struct ike_buf *b, uint16_t type, const void *data, size_t len);
void ike_xmit(struct ike_ctx *ctx, struct ike_sa *sa, const uint8_t *m, size_t len);
void ike_encap_start(struct ike_ctx *ctx, struct ike_sa *sa);
void ike_hdr_for(const struct ike_sa *sa, struct ike_hdr *h, uint8_t exchange, bool response,
		uint32_t id);
int ike_seal_msg(struct ike_sa *sa, const struct ike_hdr *h, const struct ike_buf *in,
		uint8_t *out, size_t cap, size_t *len);
int ike_request_start(struct ike_ctx *ctx, struct ike_sa *sa, enum req_kind kind, uint32_t id,
		const uint8_t *m, size_t len, uint64_t now);
void ike_request_done(struct ike_sa *sa);
int ike_respond(struct ike_ctx *ctx, struct ike_sa *sa, const struct ike_hdr *req,
		const struct ike_buf *in);
uint64_t ike_rekey_retry_at(uint64_t now);
struct ike_sa *ike_sa_new(struct ike_ctx *ctx, struct conn *c, bool initiator, uint64_t now);
void ike_set_state(struct ike_ctx *ctx, struct ike_sa *sa, enum ike_state st);
void ike_child_down(struct ike_ctx *ctx, struct ike_sa *sa, struct child *c);
void ike_child_gone(struct ike_ctx *ctx, struct ike_sa *sa);
void ike_sa_end(struct ike_ctx *ctx, struct ike_sa *sa, const char *why);
/* sa's peer_id is set (authenticated, taken up, or a rekey's): into ctx->by_peer, once. */
void ike_sa_peer_hash(struct ike_ctx *ctx, struct ike_sa *sa);
/* The chain (by_peer) of the SAs whose peer identity may be id. */
struct ike_sa *ike_sa_peer_bucket(const struct ike_ctx *ctx, const struct ike_ident *id);
void ike_sa_hash(struct ike_ctx *ctx, struct ike_sa *sa);
struct ike_sa *ike_sa_bucket(const struct ike_ctx *ctx, const uint8_t *spi_i);
int ike_derive_keys(struct ike_sa *sa, const struct ike_ke *ke);

/* ike_sa.c: the SK payload's cipher, shared with ike_frag.c */
size_t ike_sk_iv_len(const struct ike_sa *sa);
size_t ike_sk_icv_len(const struct ike_sa *sa);
int ike_sk_iv(struct ike_sa *sa, uint8_t *iv);
int ike_sk_seal(const struct ike_sa *sa, const uint8_t *iv, const uint8_t *aad, size_t aad_len,
		uint8_t *pt, size_t plen);
int ike_sk_open(const struct ike_sa *sa, const uint8_t *aad, size_t aad_len, const uint8_t *data,
		size_t len, uint8_t *plain, size_t *plen);
void ike_xmit_stored(struct ike_ctx *ctx, struct ike_sa *sa, const struct ike_addr *local,
		const struct ike_addr *remote, const uint8_t *m, size_t len, bool frag);

/*
 * ike_frag.c: IKE fragmentation (RFC 7383).  A sealed message stored as
 * fragments is their datagrams, each after its length (2 bytes, network
 * order); ike_xmit_stored sends them all.
 */
void ike_frag_init_put(const struct ike_sa *sa, struct ike_buf *b);
void ike_frag_init_get(struct ike_sa *sa, const struct view *v);
bool ike_frag_wanted(const struct ike_sa *sa, const struct ike_hdr *h, size_t len);
int ike_frag_seal(struct ike_sa *sa, const struct ike_hdr *h, const struct ike_buf *in,
		uint8_t *out, size_t cap, size_t *len);
void ike_frag_send(struct ike_ctx *ctx, struct ike_sa *sa, const struct ike_addr *local,
		const struct ike_addr *remote, const uint8_t *m, size_t len);
int ike_frag_input(struct ike_ctx *ctx, struct ike_sa *sa, const struct ike_hdr *h,
		const uint8_t *msg, const struct ike_pl *skf, uint64_t now, uint8_t **plain,
		size_t *plen, uint8_t *first);
int ike_frag_resent(struct ike_ctx *ctx, struct ike_sa *sa, const struct ike_hdr *h,
		const uint8_t *msg, size_t len, uint16_t *number);
void ike_frag_reset(struct ike_sa *sa);
void ike_frag_expire(struct ike_ctx *ctx, struct ike_sa *sa, uint64_t now);

/* ike_conn.c */
struct conn *ike_conn_by_name(struct ike_ctx *ctx, const char *name);
/* A child connection (ike_sa set) by name, or NULL. */
struct conn *ike_kid_conn_by_name(struct ike_ctx *ctx, const char *name);
struct ike_sa *ike_sa_of_conn(struct ike_ctx *ctx, const struct conn *c);
/* sa's connection is c (NULL: none yet): off its old one's list, on c's. */
void ike_sa_set_conn(struct ike_sa *sa, struct conn *c);
struct conn *ike_conn_by_addr(struct ike_ctx *ctx, const struct ike_addr *local,
		const struct ike_addr *remote);
struct conn **ike_conn_id_bucket(const struct ike_ctx *ctx, uint8_t type, const uint8_t *data,
		size_t len);

/* ike_prop.c */
void ike_prop_build(const struct ike_prop_cfg *e, uint8_t num, struct ike_proposal *p);
void ike_prop_chosen_build(const struct ike_prop_ike *c, uint8_t num, struct ike_proposal *p);
void ike_esp_prop_build(const struct ike_prop_cfg *e, uint8_t num, uint32_t spi, bool pfs,
		struct ike_proposal *p);
void ike_esp_chosen_build(const struct ike_prop_esp *c, uint8_t num, uint32_t spi,
		struct ike_proposal *p);
bool ike_prop_same(const struct ike_proposal *got, const struct ike_proposal *want);
int ike_pick_ike(const struct ike_conn_cfg *cfg, const struct ike_proposal *p, unsigned n,
		uint16_t ke_group, struct ike_prop_ike *out, uint8_t *num);
bool ike_prop_check_ike(const struct ike_prop_cfg *e, const struct ike_proposal *got,
		struct ike_prop_ike *out);
int ike_pick_esp(const struct ike_conn_cfg *cfg, const struct ike_proposal *p, unsigned n,
		bool pfs, uint16_t ke_group, struct ike_prop_esp *out, uint32_t *spi_out,
		uint8_t *num);
bool ike_cfg_has_group(const struct ike_prop_cfg *e, unsigned n, uint16_t group);
bool ike_prop_offered(const struct ike_prop_cfg *e, unsigned n, const struct ike_prop_ike *c);
bool ike_prop_check_esp(const struct ike_prop_cfg *e, const struct ike_proposal *got, bool pfs,
		struct ike_prop_esp *out);
void ike_ts_from_prefix(const struct ike_prefix *p, struct ike_ts *ts);
bool ike_ts_to_prefix(const struct ike_ts *ts, struct ike_prefix *out);
bool ike_prefix_within(const struct ike_prefix *inner, const struct ike_prefix *outer);
/* A connection's prefixes of one side (ts_local and the rest). */
void ike_cfg_ts(const struct ike_conn_cfg *c, bool local, struct ts_set *out);
/* The responder's narrowing of a TS payload to every prefix of ours (2.9):
 * all of each proposed selector within ours, de-duplicated; false if none. */
bool ike_ts_narrow_set(const struct ike_ts *ts, unsigned n, const struct ts_set *ours,
		       struct ts_set *out);
/* set as TS payload entries; every prefix of a within one of b. */
unsigned ike_ts_from_set(const struct ts_set *set, struct ike_ts *ts);
bool ike_set_within(const struct ts_set *a, const struct ts_set *b);
bool ike_ts_narrow(const struct ike_ts *ts, unsigned n, const struct ike_prefix *ours,
		struct ike_prefix *out);

/* ike_init.c */
int ike_init_response(struct ike_ctx *ctx, struct ike_sa *sa, const struct ike_hdr *h,
		const uint8_t *msg, size_t len, uint64_t now);
int ike_init_request(struct ike_ctx *ctx, const struct ike_addr *local,
		const struct ike_addr *remote, const struct ike_hdr *h, const uint8_t *msg,
		size_t len, uint64_t now);

/* ike_auth.c */
int ike_auth_send(struct ike_ctx *ctx, struct ike_sa *sa, uint64_t now);
int ike_auth_request(struct ike_ctx *ctx, struct ike_sa *sa, const struct ike_hdr *h,
		const struct view *v, uint64_t now);
int ike_auth_response(struct ike_ctx *ctx, struct ike_sa *sa, const struct view *v, uint64_t now);

/* ike_child.c */
/* The owner's view of a CHILD_SA's selectors (tl, tr: one prefix at least each). */
void ike_child_ts(struct ike_child *c, const struct ts_set *tl, const struct ts_set *tr);
uint16_t ike_child_accept(struct ike_ctx *ctx, struct ike_sa *sa, const struct view *v,
		struct ike_buf *in, uint64_t now);
int ike_child_finish(struct ike_ctx *ctx, struct ike_sa *sa, const struct view *v, char *err,
		size_t elen, uint64_t now);
int ike_child_rekey_send(struct ike_ctx *ctx, struct ike_sa *sa, uint64_t now);
/* Several CHILD_SAs: c's index in sa (NULL c or sa->conn: 0), or -1; a slot
 * for c (a free one again, or a new one), or -1 when all are taken. */
int ike_kid_find(const struct ike_sa *sa, const struct conn *c);
int ike_kid_add(struct ike_sa *sa, struct conn *c);
/* Initiator: CREATE_CHILD_SA for KID(sa) (queued behind a request out). */
int ike_child_create_send(struct ike_ctx *ctx, struct ike_sa *sa, uint64_t now);
int ike_child_create_response(struct ike_ctx *ctx, struct ike_sa *sa, const struct view *v,
			      uint64_t now);
int ike_child_rekey_response(struct ike_ctx *ctx, struct ike_sa *sa, const struct view *v,
		uint64_t now);
int ike_child_rekey_request(struct ike_ctx *ctx, struct ike_sa *sa, const struct ike_hdr *h,
		const struct view *v, uint64_t now);

/* ike_rekey.c */
int ike_rekey_send(struct ike_ctx *ctx, struct ike_sa *sa, uint64_t now);
bool ike_rekey_due(const struct ike_sa *sa, uint64_t now);
int ike_rekey_response(struct ike_ctx *ctx, struct ike_sa *sa, const struct view *v, uint64_t now);
bool ike_is_ike_rekey(const struct view *v);
int ike_rekey_request(struct ike_ctx *ctx, struct ike_sa *sa, const struct ike_hdr *h,
		const struct view *v, uint64_t now);
void ike_rekey_cross_take(struct ike_ctx *ctx, struct ike_sa *sa, uint64_t now);
int ike_nonce_cmp(const uint8_t *a, size_t alen, const uint8_t *b, size_t blen);

/* ike_info.c */
int ike_info_send(struct ike_ctx *ctx, struct ike_sa *sa, enum req_kind kind, uint64_t now);
int ike_info_response(struct ike_ctx *ctx, struct ike_sa *sa, uint64_t now);
int ike_info_request(struct ike_ctx *ctx, struct ike_sa *sa, const struct ike_hdr *h,
		const struct view *v, uint64_t now);

/* ike_timer.c */
int ike_next_request(struct ike_ctx *ctx, struct ike_sa *sa, uint64_t now);

/* ike_keep.c: sa changed (a message in or out, CHILD_SAs handed over): its
 * record is due; sa goes: its record too */
void ike_keep_mark(struct ike_ctx *ctx, struct ike_sa *sa);
void ike_keep_now(struct ike_ctx *ctx, struct ike_sa *sa);	/* before a message leaves */
void ike_keep_forget(struct ike_ctx *ctx, struct ike_sa *sa);
void ike_keep_free(struct ike_ctx *ctx);

/* ike_cp.c: remote access (RFC 7296 3.15). */
int ike_cp_conn_init(struct conn *c, char *err, size_t elen);
void ike_cp_conn_free(struct conn *c);
uint16_t ike_cp_respond(struct ike_ctx *ctx, struct ike_sa *sa, const struct view *v,
			struct ike_buf *in);
void ike_cp_request_put(const struct ike_sa *sa, struct ike_buf *in);
void ike_cp_release(struct ike_sa *sa);
const struct ike_prefix *ike_cp_ts_remote(const struct ike_sa *sa);

#endif /* DPVPN_IKE_INT_H */
