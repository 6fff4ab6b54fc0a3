/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ike_keep.c - an established IKE SA as bytes (ike_sa.h, "Keeping IKE
 * SAs"): what its owner stores beside the CHILD_SAs' keys so that a new
 * owner process goes on with the same IKE SA, SPIs, keys and message IDs,
 * and the peer sees no new exchange ([ops] issue 27).  ike_import.c takes
 * a record up again.  Below the transport (ike_xmit calls ike_keep_now):
 * it calls no other file of the engine.
 *
 * The owner gets an SA's record before each message the SA sends leaves
 * (ike_keep_now, from ike_xmit): whatever the peer may have seen, a record
 * says it.  What changes without a message out (an answer in, CHILD_SAs
 * handed over) marks the SA (ike_keep_mark), and ike_keep_take gives the
 * owner those records, and says which SAs it had records of went (ended,
 * replaced by a rekey, being deleted).
 *
 * A record is "settled" when no exchange is half done: no request of ours
 * out but a liveness check (kept with its bytes: retransmitted after the
 * import), no rekey, Delete or CHILD_SA being made.  Only a settled record
 * can be imported; an unsettled one says why, and the owner makes a new IKE
 * SA instead (make before break).  The GCM IV counter of SK payloads is
 * moved KEEP_IV_AHEAD on at import, past any IV the last owner may have used
 * after its last record: none is used twice under one key.
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ike_int.h"

/* ---- which SAs changed ---------------------------------------------------- */

void
ike_keep_mark(struct ike_ctx *ctx, struct ike_sa *sa)
{
	if (sa->keep_slot != 0 || !ctx->keep_on)
		return;
	if (ctx->n_dirty == ctx->cap_dirty) {
		size_t cap = ctx->cap_dirty ? 2 * ctx->cap_dirty : 64;
		struct ike_sa **d = realloc(ctx->dirty, cap * sizeof(*d));

		if (d == NULL) {
			ctx->keep_lost++;	/* this change is not kept: counted */
			return;
		}
		ctx->dirty = d;
		ctx->cap_dirty = cap;
	}
	ctx->dirty[ctx->n_dirty++] = sa;
	sa->keep_slot = (uint32_t)ctx->n_dirty;
}

/* sa goes: out of the marked ones; a record the owner has goes too. */
void
ike_keep_forget(struct ike_ctx *ctx, struct ike_sa *sa)
{
	if (sa->keep_slot != 0)
		ctx->dirty[sa->keep_slot - 1] = NULL;
	sa->keep_slot = 0;
	if (!sa->kept || !ctx->keep_on)
		return;
	if (ctx->n_gone == ctx->cap_gone) {
		size_t cap = ctx->cap_gone ? 2 * ctx->cap_gone : 64;
		uint8_t (*g)[2 * IKE_SPI_LEN] = realloc(ctx->gone, cap * sizeof(*g));

		if (g == NULL) {
			ctx->keep_lost++;
			return;
		}
		ctx->gone = g;
		ctx->cap_gone = cap;
	}
	memcpy(ctx->gone[ctx->n_gone], sa->spi_i, IKE_SPI_LEN);
	memcpy(ctx->gone[ctx->n_gone] + IKE_SPI_LEN, sa->spi_r, IKE_SPI_LEN);
	ctx->n_gone++;
}

/* ---- export --------------------------------------------------------------- */

/* Why sa cannot be taken up where it is, or NULL: nothing is half done. */
static const char *
unsettled(const struct ike_sa *sa)
{
	if (sa->req_kind != REQ_NONE && sa->req_kind != REQ_DPD)
		return "a request of ours was out";
	if (sa->req_kind == REQ_DPD && (sa->req_len > KEEP_MSG_MAX || sa->req_frag))
		return "a liveness check of ours was out";
	if (sa->want_del_ike || sa->want_ike_rekey || sa->ike_cross || sa->irk_dh ||
	    sa->n_del_spis || sa->req_orphan)
		return "an IKE SA rekey or Delete was under way";
	for (unsigned i = 0; i < sa->n_kids; i++) {
		const struct child_sa *k = ike_kid(sa, i);

		if (k->old.up || k->dup.up || k->creating || k->want_create || k->rk_dh ||
		    k->want_rekey || k->want_del_child || k->want_del_dup || k->cross_pending ||
		    k->old_del_ms || k->create_retry_ms)
			return "a CHILD_SA was being made, rekeyed or deleted";
	}
	return NULL;
}

static void
put_head(struct keep_rec *r, const struct ike_sa *sa)
{
	*r = (struct keep_rec){ .magic = KEEP_MAGIC, .version = KEEP_VERSION,
				.size = sizeof(*r), .n_kids = sa->n_kids };
	snprintf(r->conn, sizeof(r->conn), "%s", sa->conn->cfg.name);
	memcpy(r->spi_i, sa->spi_i, IKE_SPI_LEN);
	memcpy(r->spi_r, sa->spi_r, IKE_SPI_LEN);
	r->local = sa->local;
	r->remote = sa->remote;
	r->prop = sa->prop;
	r->keys = sa->keys;
	r->iv_ctr = sa->iv_ctr;
	r->next_req_id = sa->next_req_id;
	r->peer_next_id = sa->peer_next_id;
	r->initiator = sa->initiator;
	r->encap = sa->encap;
	r->nat_local = sa->nat_local;
	r->nat_remote = sa->nat_remote;
	r->frag_peer = sa->frag_peer;
	r->has_vip = sa->has_vip;
	r->vip = sa->vip;
	r->peer_id = sa->peer_id;
	r->peer_hashes = sa->peer_hashes;
	r->created_ms = sa->created_ms;
	r->last_rx_ms = sa->last_rx_ms;
	r->ike_rekey_retry_ms = sa->ike_rekey_retry_ms;
	r->ike_rekeys = sa->ike_rekeys;
	r->rx = sa->rx;
	r->tx = sa->tx;
	r->retransmits = sa->retransmits;
	r->rekey_collisions = sa->rekey_collisions;
	r->rekey_won = sa->rekey_won;
	r->rekey_lost = sa->rekey_lost;
}

/* The stored messages: our liveness check out, the peer's last request and our answer. */
static size_t
put_msgs(struct keep_rec *r, const struct ike_sa *sa, uint8_t *p, size_t room)
{
	size_t n = 0;

	if (sa->req_kind == REQ_DPD && sa->req_len <= room) {
		r->dpd_out = 1;
		r->req_id = sa->req_id;
		r->req_len = (uint16_t)sa->req_len;
		memcpy(p, sa->req, sa->req_len);
		n += sa->req_len;
	}
	if (sa->last_req != NULL && sa->last_resp != NULL && sa->last_req_len <= KEEP_MSG_MAX &&
	    sa->last_resp_len <= KEEP_MSG_MAX && sa->last_req_len + sa->last_resp_len <= room - n) {
		r->last_req_len = (uint16_t)sa->last_req_len;
		r->last_resp_len = (uint16_t)sa->last_resp_len;
		r->resp_frag = sa->resp_frag;
		memcpy(p + n, sa->last_req, sa->last_req_len);
		memcpy(p + n + sa->last_req_len, sa->last_resp, sa->last_resp_len);
		n += sa->last_req_len + sa->last_resp_len;
	}
	return n;
}

/* sa's record into out (IKE_KEEP_MAX bytes): its length, or 0 if it has none to keep. */
static size_t
export_sa(const struct ike_sa *sa, uint8_t *out)
{
	struct keep_rec r;
	struct keep_kid kk;
	const char *why;
	size_t n;

	if (sa->state != IKE_ST_ESTABLISHED || !sa->owner_knows)
		return 0;
	put_head(&r, sa);
	why = unsettled(sa);
	if (why != NULL)
		snprintf(r.unsettled, sizeof(r.unsettled), "%s", why);
	n = sizeof(r) + sa->n_kids * sizeof(kk);
	for (unsigned i = 0; i < sa->n_kids; i++) {
		const struct child_sa *k = ike_kid(sa, i);

		memset(&kk, 0, sizeof(kk));
		if (k->conn != NULL)
			snprintf(kk.conn, sizeof(kk.conn), "%s", k->conn->cfg.name);
		kk.child = k->child;
		kk.child_rekeys = k->child_rekeys;
		kk.rekey_retry_ms = k->rekey_retry_ms;
		memcpy(out + sizeof(r) + i * sizeof(kk), &kk, sizeof(kk));
	}
	n += put_msgs(&r, sa, out + n, IKE_KEEP_MAX - n);
	memcpy(out, &r, sizeof(r));
	explicit_bzero(&r, sizeof(r));
	return n;
}

void
ike_keep_start(struct ike_ctx *ctx, ike_keep_fn fn, void *arg)
{
	ctx->keep_on = true;
	ctx->keep_fn = fn;
	ctx->keep_arg = arg;
	for (struct ike_sa *sa = ctx->sas; sa != NULL; sa = sa->next)
		ike_keep_mark(ctx, sa);
}

void
ike_keep_free(struct ike_ctx *ctx)
{
	free(ctx->dirty);
	free(ctx->gone);
	ctx->dirty = NULL;
	ctx->gone = NULL;
	ctx->n_dirty = ctx->cap_dirty = ctx->n_gone = ctx->cap_gone = 0;
	ctx->keep_on = false;
}

/* sa's record to the owner now (or that it has none any more); sa unmarked. */
static void
keep_one(struct ike_ctx *ctx, struct ike_sa *sa)
{
	static uint8_t buf[IKE_KEEP_MAX];
	size_t n;

	if (sa->keep_slot != 0)
		ctx->dirty[sa->keep_slot - 1] = NULL;
	sa->keep_slot = 0;
	n = export_sa(sa, buf);
	if (n == 0 && !sa->kept)
		return;
	ctx->keep_fn(ctx->keep_arg, sa->conn->cfg.name, sa->spi_i, sa->spi_r, n ? buf : NULL, n);
	sa->kept = n != 0;
	explicit_bzero(buf, n);
}

void
ike_keep_now(struct ike_ctx *ctx, struct ike_sa *sa)
{
	if (ctx->keep_on)
		keep_one(ctx, sa);
}

unsigned
ike_keep_take(struct ike_ctx *ctx)
{
	unsigned calls = 0;

	if (!ctx->keep_on)
		return 0;
	for (size_t i = 0; i < ctx->n_gone; i++, calls++)
		ctx->keep_fn(ctx->keep_arg, NULL, ctx->gone[i], ctx->gone[i] + IKE_SPI_LEN, NULL, 0);
	ctx->n_gone = 0;
	for (size_t i = 0; i < ctx->n_dirty; i++) {
		if (ctx->dirty[i] == NULL)
			continue;	/* went after it was marked, or kept since */
		keep_one(ctx, ctx->dirty[i]);
		calls++;
	}
	ctx->n_dirty = 0;
	return calls;
}
