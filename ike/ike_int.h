/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ike_int.h - the functions one file of the IKE engine calls in another, and
 * nothing outside ike/ includes (each file's top comment says what it
 * holds); the types they share are in ike_types.h.  ike_sa.h is the API.
 *
 * In layers, as OpenBSD iked and strongSwan have them, listed from the
 * bottom: a file calls only files listed before it here, never one after
 * it, so that no file calls a file that calls it (tests/test_layers.py):
 *   ike_prop.c, ike_keep.c        proposals and selectors; records out
 *   ike_transport.c               reading and writing messages, below the
 *                                 exchanges (sending, SK, retransmission,
 *                                 fragments)
 *   ike_cp.c, ike_table.c, ike_conn.c   leases; the SA table; connections
 *   ike_child.c, ike_auth.c, ike_init.c, ike_rekey.c, ike_info.c
 *                                 the exchanges, which start no other exchange
 *   ike_import.c, ike_sa.c, ike_timer.c   records in; the dispatcher, the
 *                                 manager that starts the next exchange, and
 *                                 the owner's calls; time
 */
#ifndef DPVPN_IKE_INT_H
#define DPVPN_IKE_INT_H

#include "ike_types.h"

/* ---- ike_prop.c: proposals and traffic selectors (calls nothing here) ---- */

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

/* ---- ike_keep.c: records out (calls nothing here) ---- */

/* sa changed (a message in or out, CHILD_SAs handed over): its record is
 * due; sa goes: its record too */
void ike_keep_mark(struct ike_ctx *ctx, struct ike_sa *sa);
void ike_keep_now(struct ike_ctx *ctx, struct ike_sa *sa);	/* before a message leaves */
void ike_keep_forget(struct ike_ctx *ctx, struct ike_sa *sa);
void ike_keep_free(struct ike_ctx *ctx);

/* ---- ike_transport.c: below the exchanges ---- */

void ike_log(struct ike_ctx *ctx, const struct ike_sa *sa, const char *fmt, ...)
		__attribute__((format(printf, 3, 4)));
int ike_drop(struct ike_ctx *ctx, const struct ike_sa *sa, enum ike_reject r, int rc,
		const char *err);
/* sa->why, whatever its length (kept as it was if there is no memory). */
void ike_why(struct ike_sa *sa, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int ike_store(uint8_t **dst, size_t *dlen, const uint8_t *src, size_t len);
int ike_random_nonzero(uint8_t *p, size_t n);
const char *ike_notify_name(uint16_t type);
int ike_view_parse(uint8_t first, const uint8_t *p, size_t len, struct view *v, char *err,
		size_t elen);
const struct ike_pl *ike_find_pl(const struct view *v, uint8_t type);
bool ike_find_notify(const struct view *v, uint16_t type, unsigned *from, struct ike_notify *nt);
uint16_t ike_error_notify(const struct view *v);
void ike_put_notify(struct ike_buf *b, uint16_t type, const void *data, size_t len);
void ike_xmit(struct ike_ctx *ctx, struct ike_sa *sa, const uint8_t *m, size_t len);
/* A stored message (our request, our response) to local, remote: frag says it is fragments. */
void ike_xmit_stored(struct ike_ctx *ctx, struct ike_sa *sa, const struct ike_addr *local,
		const struct ike_addr *remote, const uint8_t *m, size_t len, bool frag);
void ike_encap_start(struct ike_ctx *ctx, struct ike_sa *sa);
/* An authenticated request from local, remote: on our port 4500, IKE follows it there. */
void ike_request_from(struct ike_ctx *ctx, struct ike_sa *sa, const struct ike_addr *local,
		const struct ike_addr *remote);
void ike_hdr_for(const struct ike_sa *sa, struct ike_hdr *h, uint8_t exchange, bool response,
		uint32_t id);
/* the SK payload's cipher (ike_seal_msg, ike_open_msg, and fragments) */
size_t ike_sk_iv_len(const struct ike_sa *sa);
size_t ike_sk_icv_len(const struct ike_sa *sa);
int ike_sk_iv(struct ike_sa *sa, uint8_t *iv);
int ike_sk_seal(const struct ike_sa *sa, const uint8_t *iv, const uint8_t *aad, size_t aad_len,
		uint8_t *pt, size_t plen);
int ike_sk_open(const struct ike_sa *sa, const uint8_t *aad, size_t aad_len, const uint8_t *data,
		size_t len, uint8_t *plain, size_t *plen);
int ike_seal_msg(struct ike_sa *sa, const struct ike_hdr *h, const struct ike_buf *in,
		uint8_t *out, size_t cap, size_t *len);
/* A message's SK payload (or its fragments) opened and parsed into v: 0, 1 (a fragment
 * kept, others to come) or a negative errno; *plain (*cap bytes) for ike_plain_free. */
int ike_open_msg(struct ike_ctx *ctx, struct ike_sa *sa, const struct ike_hdr *h,
		const uint8_t *msg, size_t len, uint64_t now, uint8_t **plain, size_t *cap,
		struct view *v);
void ike_plain_free(uint8_t *plain, size_t cap);
int ike_request_start(struct ike_ctx *ctx, struct ike_sa *sa, enum req_kind kind, uint32_t id,
		const uint8_t *m, size_t len, uint64_t now);
void ike_request_resend(struct ike_ctx *ctx, struct ike_sa *sa, uint64_t now);
void ike_request_done(struct ike_sa *sa);
int ike_respond(struct ike_ctx *ctx, struct ike_sa *sa, const struct ike_hdr *req,
		const struct ike_buf *in);
int ike_respond_again(struct ike_ctx *ctx, struct ike_sa *sa, const struct ike_addr *local,
		const struct ike_addr *remote, const struct ike_hdr *h, const uint8_t *msg,
		size_t len);

/*
 * ike_transport.c's fragments (RFC 7383).  A sealed message stored as
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

/* ---- ike_cp.c: remote access (RFC 7296 3.15) ---- */

int ike_cp_conn_init(struct conn *c, char *err, size_t elen);
void ike_cp_conn_free(struct conn *c);
uint16_t ike_cp_respond(struct ike_ctx *ctx, struct ike_sa *sa, const struct view *v,
			struct ike_buf *in);
void ike_cp_request_put(const struct ike_sa *sa, struct ike_buf *in);
void ike_cp_release(struct ike_sa *sa);
const struct ike_prefix *ike_cp_ts_remote(const struct ike_sa *sa);

/* ---- ike_table.c: the SA table and an SA's life ---- */

struct ike_sa *ike_sa_new(struct ike_ctx *ctx, struct conn *c, bool initiator, uint64_t now);
/* sa's connection is c (NULL: none yet): off its old one's list, on c's. */
void ike_sa_set_conn(struct ike_sa *sa, struct conn *c);
void ike_sa_hash(struct ike_ctx *ctx, struct ike_sa *sa);
struct ike_sa *ike_sa_bucket(const struct ike_ctx *ctx, const uint8_t *spi_i);
/* sa's peer_id is set (authenticated, taken up, or a rekey's): into ctx->by_peer, once. */
void ike_sa_peer_hash(struct ike_ctx *ctx, struct ike_sa *sa);
/* The chain (by_peer) of the SAs whose peer identity may be id. */
struct ike_sa *ike_sa_peer_bucket(const struct ike_ctx *ctx, const struct ike_ident *id);
/* The SA a message is for, or NULL with the reason: unknown SPIs, or our own role. */
struct ike_sa *ike_sa_lookup(struct ike_ctx *ctx, const struct ike_hdr *h, enum ike_reject *why);
/* Whether h is for one of the last IKE SAs that ended here. */
bool ike_sa_ended_lately(const struct ike_ctx *ctx, const struct ike_hdr *h);
uint64_t ike_rekey_retry_at(uint64_t now);
void ike_set_state(struct ike_ctx *ctx, struct ike_sa *sa, enum ike_state st);
void ike_child_down(struct ike_ctx *ctx, struct ike_sa *sa, struct child *c);
void ike_child_gone(struct ike_ctx *ctx, struct ike_sa *sa);
void ike_sa_end(struct ike_ctx *ctx, struct ike_sa *sa, const char *why);

/* ---- ike_conn.c: the connection table ---- */

struct conn *ike_conn_by_name(struct ike_ctx *ctx, const char *name);
/* A child connection (ike_sa set) by name, or NULL. */
struct conn *ike_kid_conn_by_name(struct ike_ctx *ctx, const char *name);
struct ike_sa *ike_sa_of_conn(struct ike_ctx *ctx, const struct conn *c);
struct conn *ike_conn_by_addr(struct ike_ctx *ctx, const struct ike_addr *local,
		const struct ike_addr *remote);
struct conn **ike_conn_id_bucket(const struct ike_ctx *ctx, uint8_t type, const uint8_t *data,
		size_t len);
/* Off the table and freed, once their SAs and CHILD_SAs are gone (ike_conn_remove). */
void ike_conn_drop(struct ike_ctx *ctx, struct conn *c);
void ike_kid_conn_drop(struct conn *k);

/* ---- the exchanges: ike_child.c ---- */

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
		uint64_t now, struct ike_next *nx);
int ike_child_rekey_response(struct ike_ctx *ctx, struct ike_sa *sa, const struct view *v,
		uint64_t now, struct ike_next *nx);
int ike_child_rekey_request(struct ike_ctx *ctx, struct ike_sa *sa, const struct ike_hdr *h,
		const struct view *v, uint64_t now, struct ike_next *nx);
/* Crossing rekeys (2.8): nonces compared as strongSwan does (ike_rekey.c too). */
int ike_nonce_cmp(const uint8_t *a, size_t alen, const uint8_t *b, size_t blen);

/* ---- ike_auth.c ---- */

int ike_auth_send(struct ike_ctx *ctx, struct ike_sa *sa, uint64_t now);
int ike_auth_request(struct ike_ctx *ctx, struct ike_sa *sa, const struct ike_hdr *h,
		const struct view *v, uint64_t now);
int ike_auth_response(struct ike_ctx *ctx, struct ike_sa *sa, const struct view *v, uint64_t now,
		struct ike_next *nx);
/* IKE_SA_INIT's part of certificates (RFC 7427 4, RFC 7296 3.7) */
void ike_pki_init_put(const struct ike_sa *sa, struct ike_buf *b, bool certreq);
void ike_pki_init_get(struct ike_sa *sa, const struct view *v);
void ike_pki_certreq_get(struct ike_sa *sa, const struct view *v);

/* ---- ike_init.c ---- */

int ike_init_response(struct ike_ctx *ctx, struct ike_sa *sa, const struct ike_hdr *h,
		const uint8_t *msg, size_t len, uint64_t now, struct ike_next *nx);
int ike_init_start(struct ike_ctx *ctx, struct conn *c, uint64_t now_ms);
int ike_init_request(struct ike_ctx *ctx, const struct ike_addr *local,
		const struct ike_addr *remote, const struct ike_hdr *h, const uint8_t *msg,
		size_t len, uint64_t now);

/* ---- ike_rekey.c ---- */

int ike_rekey_send(struct ike_ctx *ctx, struct ike_sa *sa, uint64_t now);
bool ike_rekey_due(const struct ike_sa *sa, uint64_t now);
int ike_rekey_response(struct ike_ctx *ctx, struct ike_sa *sa, const struct view *v, uint64_t now,
		struct ike_next *nx);
bool ike_is_ike_rekey(const struct view *v);
int ike_rekey_request(struct ike_ctx *ctx, struct ike_sa *sa, const struct ike_hdr *h,
		const struct view *v, uint64_t now);
void ike_rekey_cross_take(struct ike_ctx *ctx, struct ike_sa *sa, uint64_t now);

/* ---- ike_info.c ---- */

int ike_info_send(struct ike_ctx *ctx, struct ike_sa *sa, enum req_kind kind, uint64_t now);
int ike_info_response(struct ike_ctx *ctx, struct ike_sa *sa, struct ike_next *nx);
int ike_info_request(struct ike_ctx *ctx, struct ike_sa *sa, const struct ike_hdr *h,
		const struct view *v, uint64_t now);

/* ---- ike_sa.c: the manager (the timer asks it too) ---- */

/* After an exchange of ours ends: what was asked for meanwhile, if anything. */
int ike_next_request(struct ike_ctx *ctx, struct ike_sa *sa, uint64_t now);

#endif /* DPVPN_IKE_INT_H */
