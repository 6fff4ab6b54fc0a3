/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ike_import.c - an IKE SA taken up again from the record ike_keep.c gave
 * the owner (ike_sa_import; ike_sa.h, "Keeping IKE SAs"): the record checked
 * against the context's connections, the SA made with its SPIs, keys and
 * message IDs, its CHILD_SAs, stored messages and remote-access lease, and
 * the owner told which CHILD_SAs are up (child_kept).  Only a settled
 * record is taken up; the GCM IV counter of SK payloads moves KEEP_IV_AHEAD
 * on, past any IV the last owner may have used after its last record.
 */
#define _GNU_SOURCE		/* explicit_bzero */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ike_int.h"
#include "ike_pool.h"

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
