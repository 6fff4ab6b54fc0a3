/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ike_sa.c - the IKEv2 engine's top (see ike_sa.h): the dispatcher, the
 * manager and the owner's calls, above the exchanges.
 *
 * The dispatcher (ike_input) finds a message's SA, keeps the two
 * message-ID streams (RFC 7296 2.3) in step, each with a window of one (the
 * requests we send, one outstanding; the requests the peer sends, the last
 * one and its response kept, so that a retransmission gets the same bytes
 * back without being processed twice), opens the message and hands it to
 * its exchange.  Nothing is decided on a message before it is
 * authenticated, except in IKE_SA_INIT where there is nothing to
 * authenticate with yet; there the responder keeps no state for a message
 * it refuses (INVALID_KE_PAYLOAD, NO_PROPOSAL_CHOSEN, COOKIE).
 *
 * The manager decides which request of ours goes next, as strongSwan's task
 * manager does, not its tasks: an exchange's handler returns what it leaves
 * to do (struct ike_next), and next_run starts it as soon as the handler
 * returns; ike_next_request takes what was asked for while a request was
 * out (the timer asks it too).  The owner's calls (ike_new, ike_initiate,
 * ike_terminate, the rekeys, ike_conn_remove, the walks) start exchanges
 * the same way.
 *
 * Below, sharing ike_int.h (which lists them by layer): ike_transport.c
 * (reading and writing messages), ike_table.c (the SA table), ike_conn.c
 * (the connections), ike_prop.c (proposals and traffic selectors), and the
 * exchanges: ike_init.c (IKE_SA_INIT), ike_auth.c (IKE_AUTH), ike_child.c
 * (CHILD_SAs and their rekey), ike_rekey.c (the IKE SA rekey), ike_info.c
 * (INFORMATIONAL).  Beside it on top: ike_timer.c (time), ike_import.c (an
 * SA taken up from its record).
 */
#define _GNU_SOURCE		/* explicit_bzero */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ike_int.h"

/* ---- the manager: which request of ours goes next ------------------------ */

/* After an exchange of ours ends: what was asked for meanwhile. */
int
ike_next_request(struct ike_ctx *ctx, struct ike_sa *sa, uint64_t now)
{
	if (sa->want_del_ike) {
		sa->want_del_ike = false;
		return ike_info_send(ctx, sa, REQ_DEL_IKE, now);
	}
	if (sa->n_del_spis != 0)	/* of child connections gone */
		return ike_info_send(ctx, sa, REQ_DEL_SPIS, now);
	for (sa->ck = 0; sa->ck < sa->n_kids; sa->ck++) {	/* each CHILD_SA in turn */
		struct child_sa *k = KID(sa);

		if (k->want_del_child) {
			k->want_del_child = false;
			if (k->child.up)
				return ike_info_send(ctx, sa, REQ_DEL_CHILD, now);
		}
		if (k->want_del_dup) {
			k->want_del_dup = false;
			if (k->dup.up)
				return ike_info_send(ctx, sa, REQ_DEL_DUP, now);
		}
		if (k->want_rekey) {
			k->want_rekey = false;
			if (k->child.up && !k->old.up && !k->dup.up)
				return ike_child_rekey_send(ctx, sa, now);
		}
	}
	sa->ck = 0;
	if (sa->want_ike_rekey) {
		sa->want_ike_rekey = false;
		return ike_rekey_send(ctx, sa, now);
	}
	for (sa->ck = 0; sa->ck < sa->n_kids; sa->ck++)
		if (KID(sa)->want_create && sa->state == IKE_ST_ESTABLISHED)
			return ike_child_create_send(ctx, sa, now);
	sa->ck = 0;
	return 0;
}

/* The initiator's IKE_AUTH, once IKE_SA_INIT is answered. */
static int
auth_start(struct ike_ctx *ctx, struct ike_sa *sa, uint64_t now)
{
	int rc = ike_auth_send(ctx, sa, now);

	if (rc != 0)
		ike_sa_end(ctx, sa, "cannot send IKE_AUTH");
	return rc;
}

/*
 * The requests an exchange's handler left (nx), started in order as soon as
 * it returns, as its last calls started them when the exchanges did it
 * themselves: the result is the last step's (rc, the handler's, if none).
 */
static int
next_run(struct ike_ctx *ctx, const struct ike_next *nx, int rc, uint64_t now)
{
	for (unsigned i = 0; i < nx->n; i++) {
		struct ike_sa *sa = nx->step[i].sa;
		enum req_kind kind = nx->step[i].kind;

		if (kind == REQ_NONE)
			rc = ike_next_request(ctx, sa, now);
		else if (kind == REQ_AUTH)
			rc = auth_start(ctx, sa, now);
		else
			rc = ike_info_send(ctx, sa, kind, now);
	}
	return rc;
}

/* ---- dispatch ----------------------------------------------------------- */

static uint8_t
req_exchange(enum req_kind k)
{
	return k == REQ_INIT ? IKE_SA_INIT : k == REQ_AUTH ? IKE_AUTH :
	       k == REQ_REKEY || k == REQ_IKE_REKEY || k == REQ_CREATE ? IKE_CREATE_CHILD_SA :
	       IKE_INFORMATIONAL;
}

/*
 * The answer to our CREATE_CHILD_SA of a child connection removed while it
 * was out (kid_remove): a CHILD_SA it made goes at once.
 */
static int
orphan_answer(struct ike_sa *sa, const struct view *v, struct ike_next *nx)
{
	sa->req_orphan = false;
	ike_request_done(sa);
	if (ike_error_notify(v) == 0 && sa->n_del_spis < 3 * IKE_KIDS_MAX)
		sa->del_spis[sa->n_del_spis++] = sa->orphan_spi;
	return ike_then(nx, sa, REQ_NONE);
}

/* Our request's answer, opened, to the exchange that sent the request. */
static int
answer(struct ike_ctx *ctx, struct ike_sa *sa, const struct view *v, uint64_t now,
       struct ike_next *nx)
{
	sa->last_rx_ms = now;
	sa->ck = sa->req_kid < sa->n_kids ? sa->req_kid : 0;
	if (sa->req_orphan)
		return orphan_answer(sa, v, nx);
	switch (sa->req_kind) {
	case REQ_AUTH:
		return ike_auth_response(ctx, sa, v, now, nx);
	case REQ_REKEY:
		return ike_child_rekey_response(ctx, sa, v, now, nx);
	case REQ_CREATE:
		return ike_child_create_response(ctx, sa, v, now, nx);
	case REQ_IKE_REKEY:
		return ike_rekey_response(ctx, sa, v, now, nx);
	default:
		return ike_info_response(ctx, sa, nx);
	}
}

static int
on_response(struct ike_ctx *ctx, struct ike_sa *sa, const struct ike_hdr *h,
	    const uint8_t *msg, size_t len, uint64_t now)
{
	struct ike_next nx = { 0 };
	char err[ERR_LEN];
	struct view v;
	uint8_t *plain;
	size_t cap;
	int rc;

	if (sa->req_kind == REQ_NONE || h->msg_id != sa->req_id) {
		/* The answer to an earlier request of ours, already answered: our
		 * retransmission crossed the first answer (RFC 7296 2.1).  Ignored,
		 * as strongSwan ignores it, and no error: nothing is read from it. */
		if (h->msg_id < (sa->req_kind == REQ_NONE ? sa->next_req_id : sa->req_id)) {
			ctx->stats.late_responses++;
			return 0;
		}
		snprintf(err, sizeof(err), "ike.message_id: %u, no such request outstanding",
			 (unsigned)h->msg_id);
		return ike_drop(ctx, sa, IKE_REJ_BAD_MSGID, -EBADMSG, err);
	}
	if (h->exchange != req_exchange(sa->req_kind))
		return ike_drop(ctx, sa, IKE_REJ_BAD_EXCHANGE, -EBADMSG, "ike.exchange: not that "
			      "of our request");
	if (sa->req_kind == REQ_INIT) {
		rc = ike_init_response(ctx, sa, h, msg, len, now, &nx);
		return next_run(ctx, &nx, rc, now);
	}
	rc = ike_open_msg(ctx, sa, h, msg, len, now, &plain, &cap, &v);
	if (rc == 1)
		return 0;	/* a fragment: the rest are to come */
	if (rc == 0) {
		rc = answer(ctx, sa, &v, now, &nx);
		rc = next_run(ctx, &nx, rc, now);
	}
	ike_plain_free(plain, cap);
	return rc;
}

/* Whether the peer may send a request of this exchange in this state. */
static bool
request_allowed(const struct ike_sa *sa, uint8_t exchange)
{
	switch (exchange) {
	case IKE_AUTH:
		return sa->state == IKE_ST_HALF_OPEN;
	case IKE_INFORMATIONAL:
		/* A replaced IKE SA still hears its Delete (and a liveness check). */
		return sa->state == IKE_ST_ESTABLISHED || sa->state == IKE_ST_DELETING ||
		       sa->state == IKE_ST_REKEYED;
	case IKE_CREATE_CHILD_SA:
		return sa->state == IKE_ST_ESTABLISHED || sa->state == IKE_ST_DELETING;
	default:
		return false;
	}
}

/* The peer's request, opened, to the exchange that answers it. */
static int
request(struct ike_ctx *ctx, struct ike_sa *sa, const struct ike_hdr *h, const struct view *v,
	uint64_t now, struct ike_next *nx)
{
	if (h->exchange == IKE_AUTH)
		return ike_auth_request(ctx, sa, h, v, now);
	if (h->exchange == IKE_INFORMATIONAL)
		return ike_info_request(ctx, sa, h, v, now);
	if (ike_is_ike_rekey(v))	/* CREATE_CHILD_SA rekeying the IKE SA */
		return ike_rekey_request(ctx, sa, h, v, now);
	return ike_child_rekey_request(ctx, sa, h, v, now, nx);
}

static int
on_request(struct ike_ctx *ctx, struct ike_sa *sa, const struct ike_addr *local,
	   const struct ike_addr *remote, const struct ike_hdr *h, const uint8_t *msg,
	   size_t len, uint64_t now)
{
	struct ike_next nx = { 0 };
	struct view v;
	uint8_t *plain;
	size_t cap;
	int rc;

	if (sa->last_req != NULL && h->msg_id + 1 == sa->peer_next_id)
		return ike_respond_again(ctx, sa, local, remote, h, msg, len);
	if (h->msg_id != sa->peer_next_id)
		return ike_drop(ctx, sa, IKE_REJ_BAD_MSGID, -EBADMSG, "ike.message_id: outside "
			      "the window");
	if (!request_allowed(sa, h->exchange))
		return ike_drop(ctx, sa, IKE_REJ_BAD_EXCHANGE, -EBADMSG, "ike.exchange: not "
			      "expected in this state");
	rc = ike_open_msg(ctx, sa, h, msg, len, now, &plain, &cap, &v);
	if (rc == 1)
		return 0;	/* a fragment: the rest are to come */
	if (rc == 0)
		rc = ike_store(&sa->last_req, &sa->last_req_len, msg, len);
	if (rc == 0) {
		ike_request_from(ctx, sa, local, remote);
		sa->last_rx_ms = now;
		sa->peer_next_id++;
		rc = request(ctx, sa, h, &v, now, &nx);
		rc = next_run(ctx, &nx, rc, now);
	}
	ike_plain_free(plain, cap);
	return rc;
}

int
ike_input(struct ike_ctx *ctx, const struct ike_addr *local, const struct ike_addr *remote,
	  const uint8_t *msg, size_t len, uint64_t now_ms)
{
	enum ike_reject why;
	char err[ERR_LEN];
	struct ike_sa *sa;
	struct ike_hdr h;
	int rc;

	ctx->stats.rx++;
	rc = ike_hdr_parse(msg, len, &h, err, sizeof(err));
	if (rc != 0)
		return ike_drop(ctx, NULL, rc == -EPROTO ? IKE_REJ_UNSUPPORTED : IKE_REJ_MALFORMED,
			      rc, err);
	if (h.exchange == IKE_SA_INIT && !(h.flags & IKE_F_RESPONSE))
		return ike_init_request(ctx, local, remote, &h, msg, len, now_ms);
	sa = ike_sa_lookup(ctx, &h, &why);
	if (sa == NULL && why == IKE_REJ_BAD_SPI && ike_sa_ended_lately(ctx, &h)) {
		ctx->stats.after_end++;	/* e.g. the answer to a reload's Delete: no error */
		return 0;
	}
	if (sa == NULL)
		return ike_drop(ctx, NULL, why, -ENOENT, "ike.spi_i/spi_r: no such IKE SA here");
	sa->rx++;
	ike_keep_mark(ctx, sa);		/* what it changes is kept after this call */
	if (h.flags & IKE_F_RESPONSE)
		return on_response(ctx, sa, &h, msg, len, now_ms);
	return on_request(ctx, sa, local, remote, &h, msg, len, now_ms);
}

/* ---- the owner's calls -------------------------------------------------- */

/*
 * A child connection's CHILD_SA: by CREATE_CHILD_SA on its parent's IKE SA,
 * which is started first if there is none (the CHILD_SA waits for it).
 */
static int
kid_initiate(struct ike_ctx *ctx, struct conn *k, uint64_t now_ms)
{
	struct ike_sa *sa = ike_sa_of_conn(ctx, k->parent);
	int rc, i;

	if (sa == NULL) {
		rc = ike_initiate(ctx, k->parent->cfg.name, now_ms);
		sa = ike_sa_of_conn(ctx, k->parent);
		if (sa == NULL)
			return rc != 0 ? rc : -ENOENT;
	}
	if (sa->state == IKE_ST_DELETING || sa->want_del_ike)
		return -EAGAIN;
	if (ike_kid_find(sa, k) >= 0)
		return -EALREADY;
	i = ike_kid_add(sa, k);
	if (i < 0)
		return -ENOSPC;
	sa->ck = (unsigned)i;
	rc = ike_child_create_send(ctx, sa, now_ms);
	sa->ck = 0;
	return rc;
}

int
ike_conn_keep_older(struct ike_ctx *ctx, const char *name, bool on)
{
	struct conn *c = ike_conn_by_name(ctx, name);

	if (c == NULL)
		return -ENOENT;
	c->keep_older = on;
	return 0;
}

int
ike_initiate(struct ike_ctx *ctx, const char *name, uint64_t now_ms)
{
	struct conn *c = ike_conn_by_name(ctx, name), *k;

	if (c == NULL && (k = ike_kid_conn_by_name(ctx, name)) != NULL)
		return kid_initiate(ctx, k, now_ms);
	if (c == NULL)
		return -ENOENT;
	if (c->cfg.remote_any)
		return -EINVAL;		/* remote access waits for its clients */
	if (ike_sa_of_conn(ctx, c) != NULL)
		return -EALREADY;
	return ike_init_start(ctx, c, now_ms);
}

/*
 * The IKE SA of connection name and, in *kid, the index of name's CHILD_SA
 * in it (a child connection's, ike_sa set); NULL if none (or -1 in *kid:
 * the child connection has none in it).
 */
static struct ike_sa *
sa_of_name(struct ike_ctx *ctx, const char *name, int *kid)
{
	struct conn *c = ike_conn_by_name(ctx, name), *k = NULL;
	struct ike_sa *sa;

	if (c == NULL && (k = ike_kid_conn_by_name(ctx, name)) != NULL)
		c = k->parent;
	sa = c ? ike_sa_of_conn(ctx, c) : NULL;
	*kid = sa == NULL ? -1 : k == NULL ? 0 : ike_kid_find(sa, k);
	return sa;
}

int
ike_terminate(struct ike_ctx *ctx, const char *name, uint64_t now_ms)
{
	int kid;
	struct ike_sa *sa = sa_of_name(ctx, name, &kid);

	if (sa != NULL && ike_kid_conn_by_name(ctx, name) != NULL)
		return ike_child_close(ctx, name, now_ms);	/* a child: its CHILD_SA only */
	if (sa == NULL)
		return -ENOENT;
	if (sa->state == IKE_ST_DELETING || sa->want_del_ike)
		return -EALREADY;
	ike_why(sa, "deleted");
	if (sa->state != IKE_ST_ESTABLISHED) {
		/* Nothing authenticated to send a Delete over yet. */
		ike_sa_end(ctx, sa, "terminated before established");
		return 0;
	}
	return ike_info_send(ctx, sa, REQ_DEL_IKE, now_ms);
}

/*
 * The established IKE SA whose CHILD_SA kid has spi as its inbound or
 * outbound SPI: remote-access clients share their section's name, their
 * CHILD_SAs are known by SPI.  A scan: per operator command or lifetime event.
 */
static struct ike_sa *
sa_of_spi(struct ike_ctx *ctx, uint32_t spi, int *kid)
{
	for (struct ike_sa *sa = ctx->sas; spi != 0 && sa != NULL; sa = sa->next) {
		if (sa->state != IKE_ST_ESTABLISHED)
			continue;
		for (unsigned i = 0; i < sa->n_kids; i++) {
			const struct child *c = &ike_kid(sa, i)->child;

			if (c->up && (c->spi_in == spi || c->spi_out == spi)) {
				*kid = (int)i;
				return sa;
			}
		}
	}
	*kid = -1;
	return NULL;
}

int
ike_terminate_spi(struct ike_ctx *ctx, uint32_t spi, uint64_t now_ms)
{
	int kid;
	struct ike_sa *sa = sa_of_spi(ctx, spi, &kid);

	if (sa == NULL)
		return -ENOENT;
	if (sa->want_del_ike)
		return -EALREADY;
	ike_why(sa, "deleted");
	return ike_info_send(ctx, sa, REQ_DEL_IKE, now_ms);
}

static int kid_rekey(struct ike_ctx *ctx, struct ike_sa *sa, int kid, uint64_t now_ms);

int
ike_child_rekey_spi(struct ike_ctx *ctx, uint32_t spi, uint64_t now_ms)
{
	int kid;
	struct ike_sa *sa = sa_of_spi(ctx, spi, &kid);

	return kid_rekey(ctx, sa, kid, now_ms);
}

int
ike_child_rekey(struct ike_ctx *ctx, const char *name, uint64_t now_ms)
{
	int kid;
	struct ike_sa *sa = sa_of_name(ctx, name, &kid);

	return kid_rekey(ctx, sa, kid, now_ms);
}

static int
kid_rekey(struct ike_ctx *ctx, struct ike_sa *sa, int kid, uint64_t now_ms)
{
	if (sa == NULL || kid < 0)
		return -ENOENT;
	sa->ck = (unsigned)kid;
	if (sa->state != IKE_ST_ESTABLISHED || !KID(sa)->child.up)
		return -ENOENT;
	if (KID(sa)->old.up || KID(sa)->dup.up || sa->req_kind == REQ_REKEY ||
	    KID(sa)->want_rekey || sa->req_kind == REQ_IKE_REKEY || sa->want_ike_rekey)
		return -EBUSY;
	return ike_child_rekey_send(ctx, sa, now_ms);
}

static bool
kids_want_rekey(const struct ike_sa *sa)
{
	for (unsigned i = 0; i < sa->n_kids; i++)
		if (ike_kid(sa, i)->want_rekey)
			return true;
	return false;
}

int
ike_sa_rekey(struct ike_ctx *ctx, const char *name, uint64_t now_ms)
{
	int kid;
	struct ike_sa *sa = sa_of_name(ctx, name, &kid);	/* a child's: its parent's */

	if (sa == NULL || sa->state != IKE_ST_ESTABLISHED || sa->want_del_ike)
		return -ENOENT;
	if (sa->req_kind == REQ_IKE_REKEY || sa->want_ike_rekey ||
	    sa->req_kind == REQ_REKEY || kids_want_rekey(sa))
		return -EBUSY;
	return ike_rekey_send(ctx, sa, now_ms);
}

int
ike_child_close(struct ike_ctx *ctx, const char *name, uint64_t now_ms)
{
	int kid;
	struct ike_sa *sa = sa_of_name(ctx, name, &kid);

	if (sa == NULL || kid < 0)
		return -ENOENT;
	sa->ck = (unsigned)kid;
	KID(sa)->want_create = false;
	KID(sa)->create_retry_ms = 0;
	if (sa->state != IKE_ST_ESTABLISHED || !KID(sa)->child.up)
		return -ENOENT;
	return ike_info_send(ctx, sa, REQ_DEL_CHILD, now_ms);
}

/* A child connection goes: its CHILD_SA deleted (best effort), its slot freed. */
static int
kid_remove(struct ike_ctx *ctx, struct conn *k, uint64_t now_ms)
{
	struct ike_sa *sa = ike_sa_of_conn(ctx, k->parent);
	int i = sa ? ike_kid_find(sa, k) : -1;

	if (i >= 0) {
		struct child_sa *kd = ike_kid(sa, (unsigned)i);
		const struct child *ch[3] = { &kd->child, &kd->old, &kd->dup };

		sa->ck = (unsigned)i;
		/* its CHILD_SAs are deleted at the peer, now or after our request out */
		for (unsigned n = 0; n < 3; n++)
			if (ch[n]->up && sa->n_del_spis < IKE_KIDS_MAX * 3)
				sa->del_spis[sa->n_del_spis++] = ch[n]->spi_in;
		if (sa->req_kid == (unsigned)i &&
		    (sa->req_kind == REQ_CREATE || sa->req_kind == REQ_REKEY)) {
			sa->req_orphan = true;		/* its answer's new one, too */
			sa->orphan_spi = kd->rk_spi;
		}
		if (sa->state == IKE_ST_ESTABLISHED && sa->req_kind == REQ_NONE)
			(void)ike_info_send(ctx, sa, REQ_DEL_SPIS, now_ms);
		ike_child_gone(ctx, sa);
		ike_child_down(ctx, sa, &KID(sa)->old);
		ike_child_down(ctx, sa, &KID(sa)->dup);
		ike_dh_free(KID(sa)->rk_dh);
		*KID(sa) = (struct child_sa){ 0 };	/* a free slot */
		sa->ck = 0;
	}
	ike_kid_conn_drop(k);
	return 0;
}

int
ike_conn_remove(struct ike_ctx *ctx, const char *name, uint64_t now_ms)
{
	struct conn *c = ike_conn_by_name(ctx, name);
	struct ike_sa *sa, *next;

	if (c == NULL && ike_kid_conn_by_name(ctx, name) != NULL)
		return kid_remove(ctx, ike_kid_conn_by_name(ctx, name), now_ms);
	if (c == NULL)
		return -ENOENT;
	for (sa = ctx->sas; sa != NULL; sa = next) {
		next = sa->next;
		if (sa->conn != c)
			continue;
		if (sa->state == IKE_ST_ESTABLISHED && sa->req_kind == REQ_NONE)
			(void)ike_info_send(ctx, sa, REQ_DEL_IKE, now_ms);	/* best effort */
		ike_sa_end(ctx, sa, "connection removed");
	}
	ike_conn_drop(ctx, c);
	return 0;
}

void
ike_set_cookie_threshold(struct ike_ctx *ctx, unsigned max)
{
	ctx->cookie_threshold = max;
}

static void
ctx_free_tables(struct ike_ctx *ctx)
{
	free(ctx->by_spi);
	free(ctx->by_peer);
	free(ctx->conn_name);
	free(ctx->conn_addr);
	free(ctx->conn_id);
}

struct ike_ctx *
ike_new(const struct ike_ops *ops, void *opaque)
{
	struct ike_ctx *ctx = calloc(1, sizeof(*ctx));

	if (ctx == NULL)
		return NULL;
	ctx->ops = *ops;
	ctx->opaque = opaque;
	ctx->by_spi = calloc(IKE_SA_BUCKETS, sizeof(*ctx->by_spi));
	ctx->by_peer = calloc(IKE_SA_BUCKETS, sizeof(*ctx->by_peer));
	ctx->conn_name = calloc(IKE_CONN_BUCKETS, sizeof(*ctx->conn_name));
	ctx->conn_addr = calloc(IKE_CONN_BUCKETS, sizeof(*ctx->conn_addr));
	ctx->conn_id = calloc(IKE_CONN_BUCKETS, sizeof(*ctx->conn_id));
	if (ctx->by_spi == NULL || ctx->by_peer == NULL || ctx->conn_name == NULL ||
	    ctx->conn_addr == NULL ||
	    ctx->conn_id == NULL ||
	    ike_random(ctx->cookie_secret, sizeof(ctx->cookie_secret)) != 0 ||
	    ike_random((uint8_t *)&ctx->hash_key, sizeof(ctx->hash_key)) != 0) {
		ctx_free_tables(ctx);
		free(ctx);
		return NULL;
	}
	return ctx;
}

void
ike_free(struct ike_ctx *ctx)
{
	if (ctx == NULL)
		return;
	while (ctx->sas != NULL)
		ike_sa_end(ctx, ctx->sas, "shut down");
	while (ctx->conns != NULL)	/* no SA left: nothing to send, children freed too */
		(void)ike_conn_remove(ctx, ctx->conns->cfg.name, 0);
	ike_keep_free(ctx);
	ctx_free_tables(ctx);
	explicit_bzero(ctx, sizeof(*ctx));
	free(ctx);
}

/* One IKE SA's status to fn (ike_sa_walk, ike_sa_walk_conn). */
static void
walk_one(const struct ike_sa *sa, void (*fn)(void *arg, const struct ike_sa_status *st),
	 void *arg)
{
	struct ike_sa_status st = {
		.conn = sa->conn->cfg.name, .state = sa->state,
		.initiator = sa->initiator, .local = sa->local, .remote = sa->remote,
		.encr = sa->prop.encr, .encr_bits = sa->prop.encr_bits,
		.integ = sa->prop.integ, .prf = sa->prop.prf, .dh = sa->prop.dh,
		.nat_local = sa->nat_local, .nat_remote = sa->nat_remote,
		.child_up = sa->kid0.child.up, .child_spi_in = sa->kid0.child.spi_in,
		.child_spi_out = sa->kid0.child.spi_out, .child_dh = sa->kid0.child.prop.dh,
		.next_req_id = sa->next_req_id,
		.peer_next_id = sa->peer_next_id, .rx = sa->rx, .tx = sa->tx,
		.retransmits = sa->retransmits, .udp_encap = sa->encap,
		.ike_rekeys = sa->ike_rekeys,
		.rekey_collisions = sa->rekey_collisions, .rekey_won = sa->rekey_won,
		.rekey_lost = sa->rekey_lost,
		.has_vip = sa->has_vip, .vip = sa->vip, .peer_id = sa->peer_id,
	};

	memcpy(st.spi_i, sa->spi_i, IKE_SPI_LEN);
	memcpy(st.spi_r, sa->spi_r, IKE_SPI_LEN);
	st.child_rekeys = 0;
	for (unsigned i = 0; i < sa->n_kids; i++) {
		const struct child_sa *k = ike_kid(sa, i);
		struct ike_child_status *cs = &st.children[st.n_children];

		st.child_rekeys += k->child_rekeys;
		if (!k->child.up && !k->want_create && !k->creating &&
		    k->create_retry_ms == 0)
			continue;	/* a free slot */
		cs->conn = k->conn ? k->conn->cfg.name : sa->conn->cfg.name;
		cs->up = k->child.up;
		cs->spi_in = k->child.spi_in;
		cs->spi_out = k->child.spi_out;
		cs->dh = k->child.prop.dh;
		memcpy(cs->ts_local, k->child.tl.p, sizeof(cs->ts_local));
		memcpy(cs->ts_remote, k->child.tr.p, sizeof(cs->ts_remote));
		cs->n_ts_local = k->child.tl.n;
		cs->n_ts_remote = k->child.tr.n;
		cs->rekeys = k->child_rekeys;
		cs->up_ms = k->child.up_ms;
		cs->alg = (struct ike_alg_set){ .encr = k->child.prop.encr,
			.encr_bits = k->child.prop.encr_bits, .integ = k->child.prop.integ,
			.dh = k->child.prop.dh, .esn = k->child.prop.esn };
		st.n_children++;
	}
	fn(arg, &st);
}

void
ike_sa_walk(const struct ike_ctx *ctx, void (*fn)(void *arg, const struct ike_sa_status *st),
	    void *arg)
{
	for (const struct ike_sa *sa = ctx->sas; sa != NULL; sa = sa->next)
		walk_one(sa, fn, arg);
}

int
ike_sa_walk_conn(struct ike_ctx *ctx, const char *name,
		 void (*fn)(void *arg, const struct ike_sa_status *st), void *arg)
{
	const struct conn *c = ike_conn_by_name(ctx, name);

	if (c == NULL)
		return -ENOENT;
	for (const struct ike_sa *sa = c->sas; sa != NULL; sa = sa->conn_next)
		walk_one(sa, fn, arg);
	return 0;
}

const struct ike_stats *
ike_get_stats(const struct ike_ctx *ctx)
{
	return &ctx->stats;
}
