/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ike_keep.c - an established IKE SA as bytes and back (ike_sa.h, "Keeping
 * IKE SAs"): what its owner stores beside the CHILD_SAs' keys so that a new
 * owner process goes on with the same IKE SA, SPIs, keys and message IDs,
 * and the peer sees no new exchange ([ops] issue 27).
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
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ike_int.h"
#include "ike_pool.h"

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

_Static_assert(sizeof(struct keep_rec) + IKE_KIDS_MAX * sizeof(struct keep_kid) +
	       3 * KEEP_MSG_MAX <= IKE_KEEP_MAX, "a record fits IKE_KEEP_MAX");

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

/* ---- import --------------------------------------------------------------- */

/* The record's head checked against the context's connection: 0, or why not in err. */
static int
check_head(struct ike_ctx *ctx, const struct keep_rec *r, size_t len, struct conn **c,
	   char *err, size_t elen)
{
	if (len < sizeof(*r) || r->magic != KEEP_MAGIC || r->version != KEEP_VERSION ||
	    r->size != sizeof(*r)) {
		snprintf(err, elen, "record: not one of this dpvpnd's (version or size differs)");
		return -EINVAL;
	}
	if (r->n_kids == 0 || r->n_kids > IKE_KIDS_MAX ||
	    len != sizeof(*r) + r->n_kids * sizeof(struct keep_kid) + (r->dpd_out ? r->req_len : 0) +
		   r->last_req_len + r->last_resp_len ||
	    memchr(r->conn, 0, sizeof(r->conn)) == NULL) {
		snprintf(err, elen, "record: %zu bytes do not add up", len);
		return -EINVAL;
	}
	if (r->keys.prf_len > IKE_PRF_MAX_LEN || r->keys.integ_len > IKE_PRF_MAX_LEN ||
	    r->keys.enc_len > IKE_ENC_MAX_LEN || r->local.family != r->remote.family ||
	    (r->local.family != AF_INET && r->local.family != AF_INET6) ||
	    (r->has_vip && r->vip.family != AF_INET && r->vip.family != AF_INET6) ||
	    memchr(r->unsettled, 0, sizeof(r->unsettled)) == NULL) {
		snprintf(err, elen, "record: a field out of range");
		return -EINVAL;
	}
	if (r->unsettled[0] != 0) {
		snprintf(err, elen, "an exchange was half done (%.*s)", (int)sizeof(r->unsettled),
			 r->unsettled);
		return -EAGAIN;
	}
	*c = ike_conn_by_name(ctx, r->conn);
	if (*c == NULL || (*c)->parent != NULL) {
		snprintf(err, elen, "connection %s: no longer in the config", r->conn);
		return -ESTALE;
	}
	if (!(*c)->cfg.remote_any && (!ip_equal(&r->remote, &(*c)->cfg.remote) ||
				      !ip_equal(&r->local, &(*c)->cfg.local))) {
		snprintf(err, elen, "connection %s: its addresses changed", r->conn);
		return -ESTALE;
	}
	if (!ike_prop_offered((*c)->cfg.ike, (*c)->cfg.n_ike, &r->prop)) {
		snprintf(err, elen, "connection %s: its IKE proposals no longer have the SA's",
			 r->conn);
		return -ESTALE;
	}
	for (struct ike_sa *o = ike_sa_bucket(ctx, r->spi_i); o != NULL; o = o->by_spi)
		if (!memcmp(o->spi_i, r->spi_i, IKE_SPI_LEN) &&
		    !memcmp(o->spi_r, r->spi_r, IKE_SPI_LEN)) {
			snprintf(err, elen, "an IKE SA with these SPIs is here already");
			return -EEXIST;
		}
	return 0;
}

static void
get_head(struct ike_sa *sa, const struct keep_rec *r)
{
	memcpy(sa->spi_i, r->spi_i, IKE_SPI_LEN);
	memcpy(sa->spi_r, r->spi_r, IKE_SPI_LEN);
	sa->local = r->local;
	sa->remote = r->remote;
	sa->prop = r->prop;
	sa->keys = r->keys;
	sa->iv_ctr = r->iv_ctr + KEEP_IV_AHEAD;
	sa->next_req_id = r->next_req_id;
	sa->peer_next_id = r->peer_next_id;
	sa->encap = r->encap;
	sa->nat_local = r->nat_local;
	sa->nat_remote = r->nat_remote;
	sa->frag_peer = r->frag_peer;
	sa->peer_hashes = r->peer_hashes;
	sa->created_ms = r->created_ms;
	sa->last_rx_ms = r->last_rx_ms;
	sa->ike_rekey_retry_ms = r->ike_rekey_retry_ms;
	sa->ike_rekeys = r->ike_rekeys;
	sa->rx = r->rx;
	sa->tx = r->tx;
	sa->retransmits = r->retransmits;
	sa->rekey_collisions = r->rekey_collisions;
	sa->rekey_won = r->rekey_won;
	sa->rekey_lost = r->rekey_lost;
}

/* The CHILD_SAs: kid i of the record into sa (kid0 is there already). */
static int
get_kids(struct ike_ctx *ctx, struct ike_sa *sa, const uint8_t *p, unsigned n, char *err,
	 size_t elen)
{
	for (unsigned i = 0; i < n; i++) {
		struct keep_kid kk;
		struct child_sa *k;
		struct conn *kc = NULL;

		memcpy(&kk, p + i * sizeof(kk), sizeof(kk));
		if (p[i * sizeof(kk) + offsetof(struct keep_kid, child) +
		      offsetof(struct child, up)] > 1) {	/* a bool: 0 or 1 */
			snprintf(err, elen, "record: CHILD_SA %u's state out of range", i);
			explicit_bzero(&kk, sizeof(kk));
			return -EINVAL;
		}
		if (kk.child.tl.n > IKE_TS_MAX || kk.child.tr.n > IKE_TS_MAX ||
		    (kk.child.up && (kk.child.tl.n == 0 || kk.child.tr.n == 0))) {
			snprintf(err, elen, "record: CHILD_SA %u's selectors out of range", i);
			explicit_bzero(&kk, sizeof(kk));
			return -EINVAL;
		}
		if (memchr(kk.conn, 0, sizeof(kk.conn)) == NULL ||
		    (kk.conn[0] && ((kc = ike_kid_conn_by_name(ctx, kk.conn)) == NULL ||
				    kc->parent != sa->conn))) {
			snprintf(err, elen, "CHILD_SA of %.*s: no longer in the config",
				 (int)sizeof(kk.conn) - 1, kk.conn);
			explicit_bzero(&kk, sizeof(kk));
			return -ESTALE;
		}
		if (i > 0) {
			sa->more[i - 1] = calloc(1, sizeof(struct child_sa));
			if (sa->more[i - 1] == NULL)
				return -ENOMEM;
			sa->n_kids = i + 1;
		}
		k = ike_kid(sa, i);
		k->conn = kc;
		k->child = kk.child;
		k->child_rekeys = kk.child_rekeys;
		k->rekey_retry_ms = kk.rekey_retry_ms;
		explicit_bzero(&kk, sizeof(kk));
	}
	return 0;
}

/* The stored messages back: our liveness check (sent again at once), the last exchange. */
static int
get_msgs(struct ike_sa *sa, const struct keep_rec *r, const uint8_t *p, uint64_t now)
{
	int rc = 0;

	if (r->dpd_out) {
		rc = ike_store(&sa->req, &sa->req_len, p, r->req_len);
		sa->req_kind = REQ_DPD;
		sa->req_id = r->req_id;
		sa->tries = 1;
		sa->timeout_ms = sa->conn->cfg.retrans_ms;
		sa->next_tx_ms = now;
		p += r->req_len;
	}
	if (rc == 0 && r->last_req_len && r->last_resp_len) {
		rc = ike_store(&sa->last_req, &sa->last_req_len, p, r->last_req_len);
		if (rc == 0)
			rc = ike_store(&sa->last_resp, &sa->last_resp_len, p + r->last_req_len,
				       r->last_resp_len);
		sa->resp_frag = r->resp_frag;
	}
	return rc;
}

/* The client's address again, from its connection's pool (remote access). */
static int
get_lease(struct ike_sa *sa, const struct keep_rec *r, char *err, size_t elen)
{
	uint8_t key[1 + IKE_IDENT_MAX];
	struct ike_pool *pool;
	int rc;

	if (!r->has_vip)
		return 0;
	pool = sa->conn->pool[r->vip.family == AF_INET6 ? 1 : 0];
	key[0] = r->peer_id.type;
	memcpy(key + 1, r->peer_id.data, r->peer_id.len);
	rc = pool ? ike_pool_lease_at(pool, key, 1u + r->peer_id.len, r->vip.addr) : -ENOENT;
	if (rc != 0) {
		snprintf(err, elen, "the client's address is %s", rc == -EBUSY ?
			 "leased to another" : "no longer in the pool");
		return -ESTALE;
	}
	sa->has_vip = true;
	sa->vip = r->vip;
	sa->peer_id = r->peer_id;
	return 0;
}

/* Tell the owner which CHILD_SAs are up, as at child_up but with no keys. */
static void
tell_kept(struct ike_ctx *ctx, struct ike_sa *sa)
{
	if (ctx->ops.child_kept == NULL)
		return;
	for (sa->ck = 0; sa->ck < sa->n_kids; sa->ck++) {
		const struct child *c = &KID(sa)->child;
		struct ike_child ch = {
			.encr = c->prop.encr, .encr_bits = c->prop.encr_bits,
			.integ = c->prop.integ, .dh = c->prop.dh, .esn = c->prop.esn,
			.spi_in = c->spi_in, .spi_out = c->spi_out,
			.local = sa->local, .remote = sa->remote, .udp_encap = sa->encap,
			.peer_id = sa->has_vip ? &sa->peer_id : NULL,
			.ike_alg = { .encr = sa->prop.encr, .encr_bits = sa->prop.encr_bits,
				     .integ = sa->prop.integ, .prf = sa->prop.prf,
				     .dh = sa->prop.dh },
			.udp_local = sa->encap ? sa->local.port : 0,
			.udp_remote = sa->encap ? sa->remote.port : 0,
		};

		if (!c->up || c->tl.n == 0 || c->tr.n == 0)
			continue;
		ike_child_ts(&ch, &c->tl, &c->tr);
		ctx->ops.child_kept(ctx->opaque, KCFG(sa)->name, &ch);
	}
	sa->ck = 0;
}

int
ike_sa_import(struct ike_ctx *ctx, const uint8_t *rec, size_t len, uint64_t now_ms, char *err,
	      size_t elen)
{
	struct keep_rec r;
	struct ike_sa *sa;
	struct conn *c;
	int rc;

	memset(&r, 0, sizeof(r));
	memcpy(&r, rec, len < sizeof(r) ? len : sizeof(r));
	rc = check_head(ctx, &r, len, &c, err, elen);
	if (rc != 0)
		goto out;
	sa = ike_sa_new(ctx, c, r.initiator, now_ms);
	if (sa == NULL) {
		rc = -ENOMEM;
		goto out;
	}
	get_head(sa, &r);
	sa->state = IKE_ST_ESTABLISHED;
	sa->owner_knows = true;
	ike_sa_hash(ctx, sa);
	rc = get_kids(ctx, sa, rec + sizeof(r), r.n_kids, err, elen);
	if (rc == 0)
		rc = get_msgs(sa, &r, rec + sizeof(r) + r.n_kids * sizeof(struct keep_kid), now_ms);
	if (rc == 0)
		rc = get_lease(sa, &r, err, elen);
	if (rc != 0) {
		if (rc == -ENOMEM)
			snprintf(err, elen, "out of memory");
		sa->owner_knows = false;	/* nothing was told: nothing to take back */
		for (unsigned i = 0; i < sa->n_kids; i++)
			ike_kid(sa, i)->child.up = false;
		ike_sa_end(ctx, sa, "not taken up");
		goto out;
	}
	sa->peer_id = r.peer_id;	/* (an older dpvpnd kept none: not hashed) */
	ike_sa_peer_hash(ctx, sa);
	sa->kept = true;		/* the owner has its record */
	ike_log(ctx, sa, "IKE SA taken up again: message IDs %u (ours) and %u (the peer's)",
		sa->next_req_id, sa->peer_next_id);
	tell_kept(ctx, sa);
out:
	explicit_bzero(&r, sizeof(r));
	return rc;
}
