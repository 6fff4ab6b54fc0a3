/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ike_rekey.c - CREATE_CHILD_SA rekeying the IKE SA (RFC 7296 1.3.2,
 * 2.18) in both roles: new SPIs and keys from the old SK_d, a successor SA
 * that takes the CHILD_SA over, and the old SA's end.  An exchange
 * (ike_int.h): our Delete of the old SA and what the new one had queued go
 * out by the manager (ike_sa.c), left to it in struct ike_next.
 */
#define _GNU_SOURCE		/* explicit_bzero */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ike_int.h"

/* ---- CREATE_CHILD_SA: rekeying the IKE SA (1.3.2, 2.18) ----------------- */

/*
 * What a rekey of the IKE SA agreed on.  The initiator of the rekeying
 * exchange is the new SA's initiator, whichever side began the old one:
 * its nonce and SPI come first in the keys (2.18) and it sets the I flag.
 */
struct ike_rekey {
	bool initiator;
	struct ike_prop_ike prop;
	uint8_t spi_i[IKE_SPI_LEN], spi_r[IKE_SPI_LEN];
	const uint8_t *ni, *nr;
	size_t ni_len, nr_len;
	uint8_t gir[IKE_DH_MAX_SECRET];
	size_t gir_len;
};

/* Our rekey's secrets go, answered or not. */
static void
irk_wipe(struct ike_sa *sa)
{
	ike_dh_free(sa->irk_dh);
	sa->irk_dh = NULL;
	explicit_bzero(sa->irk_spi, sizeof(sa->irk_spi));
	explicit_bzero(sa->irk_nonce, sizeof(sa->irk_nonce));
}

/*
 * The IKE SA that replaces old, with its keys from old's SK_d and the new
 * g^ir; no CHILD_SA yet and unknown to the owner (sa_hand_over does both),
 * so that a failure here ends it without a callback.  NULL on failure.
 */
static struct ike_sa *
sa_successor(struct ike_ctx *ctx, const struct ike_sa *old, const struct ike_rekey *rk,
	     uint64_t now)
{
	struct ike_sa *sa = ike_sa_new(ctx, old->conn, rk->initiator, now);

	if (sa == NULL)
		return NULL;
	sa->state = IKE_ST_ESTABLISHED;
	sa->prop = rk->prop;
	memcpy(sa->spi_i, rk->spi_i, IKE_SPI_LEN);
	memcpy(sa->spi_r, rk->spi_r, IKE_SPI_LEN);
	ike_sa_hash(ctx, sa);
	sa->local = old->local;
	sa->remote = old->remote;
	sa->nat_local = old->nat_local;
	sa->nat_remote = old->nat_remote;
	sa->encap = old->encap;
	sa->frag_peer = old->frag_peer;	/* RFC 7383 goes on, as strongSwan's inherit_post */
	if (ike_derive_rekey_keys(sa->prop.prf, old->prop.prf, sa->prop.encr_bits / 8,
				  sa->prop.integ, old->keys.sk_d, old->keys.prf_len, rk->ni,
				  rk->ni_len, rk->nr, rk->nr_len, rk->gir, rk->gir_len,
				  sa->spi_i, sa->spi_r, &sa->keys) != 0) {
		ike_sa_end(ctx, sa, "IKE SA rekey: key derivation failed");
		return NULL;
	}
	return sa;
}

/*
 * The CHILD_SAs (current and rekeyed) and what was asked for meanwhile move
 * to sa as they are: the dataplane sees nothing.  old keeps its keys for
 * its Delete only, and ends with no callback.
 */
static void
sa_hand_over(struct ike_ctx *ctx, struct ike_sa *old, struct ike_sa *sa, uint64_t now)
{
	sa->owner_knows = old->owner_knows;
	ike_keep_mark(ctx, sa);		/* the CHILD_SAs' IKE SA now: its record is due */
	/* every CHILD_SA with its rekey state; old keeps none */
	ike_dh_free(sa->kid0.rk_dh);
	sa->kid0 = old->kid0;
	memcpy(sa->more, old->more, sizeof(sa->more));
	sa->n_kids = old->n_kids;
	memset(&old->kid0, 0, sizeof(old->kid0));
	memset(old->more, 0, sizeof(old->more));
	old->n_kids = 1;
	memcpy(sa->del_spis, old->del_spis, sizeof(sa->del_spis));
	sa->n_del_spis = old->n_del_spis;
	old->n_del_spis = 0;
	old->ck = sa->ck = 0;
	sa->rekey_collisions = old->rekey_collisions;
	sa->rekey_won = old->rekey_won;
	sa->rekey_lost = old->rekey_lost;
	sa->ike_rekeys = old->ike_rekeys + 1;
	sa->want_del_ike = old->want_del_ike;
	free(sa->why);
	sa->why = old->why;		/* moves */
	old->why = NULL;
	sa->has_vip = old->has_vip;	/* remote access: the lease moves too */
	sa->vip = old->vip;
	sa->peer_id = old->peer_id;
	ike_sa_peer_hash(ctx, sa);
	old->has_vip = false;
	old->owner_knows = false;
	old->want_del_ike = false;
	old->state = IKE_ST_REKEYED;
	old->created_ms = now;		/* REKEYED_MS: the wait for the peer's Delete */
	ike_why(old, "rekeyed");
	ike_log(ctx, sa, "IKE SA rekeyed (%s), generation %llu",
	      sa->initiator ? "ours" : "the peer's", (unsigned long long)sa->ike_rekeys);
}

/* Our request (2.18): SA (our IKE proposal with the new SPIi), Ni, KEi of the group in use. */
int
ike_rekey_send(struct ike_ctx *ctx, struct ike_sa *sa, uint64_t now)
{
	uint8_t inner[MSG_MAX], out[MSG_MAX], pub[IKE_DH_MAX_PUB];
	size_t publen = sizeof(pub), len;
	struct ike_proposal prop;
	struct ike_buf in;
	struct ike_hdr h;
	int rc;

	if (sa->req_kind != REQ_NONE) {
		sa->want_ike_rekey = true;	/* window of one */
		return 0;
	}
	irk_wipe(sa);
	rc = ike_random_nonzero(sa->irk_spi, IKE_SPI_LEN);
	if (rc == 0)
		rc = ike_random(sa->irk_nonce, sizeof(sa->irk_nonce));
	if (rc == 0)
		rc = ike_dh_new(sa->prop.dh, &sa->irk_dh, pub, &publen);
	if (rc != 0)
		return irk_wipe(sa), rc;
	ike_prop_chosen_build(&sa->prop, 1, &prop);
	prop.spi_len = IKE_SPI_LEN;
	memcpy(prop.spi, sa->irk_spi, IKE_SPI_LEN);
	ike_buf_init(&in, inner, sizeof(inner));
	ike_build_sa(&in, &prop, 1);
	ike_build_nonce(&in, sa->irk_nonce, sizeof(sa->irk_nonce));
	ike_build_ke(&in, sa->prop.dh, pub, publen);
	ike_hdr_for(sa, &h, IKE_CREATE_CHILD_SA, false, sa->next_req_id);
	rc = ike_seal_msg(sa, &h, &in, out, sizeof(out), &len);
	explicit_bzero(inner, sizeof(inner));
	if (rc == 0)
		rc = ike_request_start(ctx, sa, REQ_IKE_REKEY, h.msg_id, out, len, now);
	if (rc != 0)
		irk_wipe(sa);
	return rc;
}

/* The initiator of the IKE SA rekeys it this old (so both ends never race). */
bool
ike_rekey_due(const struct ike_sa *sa, uint64_t now)
{
	uint32_t life = sa->conn->cfg.ike_rekey_ms;

	return sa->initiator && life != 0 && !sa->want_ike_rekey &&
	       now >= sa->created_ms + life && now >= sa->ike_rekey_retry_ms;
}

/* The answer to our rekey: our proposal with the new SPIr, Nr, KEr; into rk. */
static int
ike_rekey_answer(struct ike_sa *sa, const struct view *v, struct ike_rekey *rk, char *err,
		 size_t elen)
{
	const struct ike_pl *sp = ike_find_pl(v, IKE_PL_SA), *no = ike_find_pl(v, IKE_PL_NONCE);
	const struct ike_pl *kp = ike_find_pl(v, IKE_PL_KE);
	struct ike_proposal got, want;
	struct ike_ke ke;
	int rc;

	if (sp == NULL || no == NULL || kp == NULL)
		return snprintf(err, elen, "create_child_sa: no %s payload", sp == NULL ? "SA" :
				no == NULL ? "Nonce" : "KE"), -EBADMSG;
	rc = ike_sa_parse_answer(sp->body, sp->len, IKE_CREATE_CHILD_SA, &got, err, elen);
	if (rc == 0)
		rc = ike_nonce_parse(no->body, no->len, err, elen);
	if (rc == 0)
		rc = ike_ke_parse(kp->body, kp->len, &ke, err, elen);
	if (rc != 0)
		return rc;
	ike_prop_chosen_build(&sa->prop, 1, &want);
	if (got.num != 1 || !ike_prop_same(&got, &want) || got.spi_len != IKE_SPI_LEN ||
	    is_zero(got.spi, IKE_SPI_LEN) || ke.group != sa->prop.dh)
		return snprintf(err, elen, "sa.proposal[1]: not our IKE proposal with an SPI, or "
				"KE group %u", ke.group), -EBADMSG;
	rk->gir_len = sizeof(rk->gir);
	if (ike_dh_derive(sa->irk_dh, ke.data, ke.len, rk->gir, &rk->gir_len) != 0)
		return snprintf(err, elen, "ke.data: %zu bytes, no shared secret", ke.len),
		       -EBADMSG;
	memcpy(rk->spi_r, got.spi, IKE_SPI_LEN);
	rk->nr = no->body;
	rk->nr_len = no->len;
	return 0;
}

/* The peer's crossing rekey stands alone (ours refused, or its Delete of sa came first). */
void
ike_rekey_cross_take(struct ike_ctx *ctx, struct ike_sa *sa, uint64_t now)
{
	struct ike_sa *nsa = sa->ike_cross;

	sa->ike_cross = NULL;
	explicit_bzero(sa->irk_min, sizeof(sa->irk_min));
	nsa->state = IKE_ST_ESTABLISHED;
	sa_hand_over(ctx, sa, nsa, now);
}

/*
 * Both crossing IKE SA rekeys made (2.8.2): ours (nsa, its exchange's
 * lowest nonce ours_min) and the peer's (sa->ike_cross).  The one with the
 * lower nonce is redundant: if ours, we delete it and the peer deletes sa;
 * else the peer deletes its own, and we sa, as after a lone rekey (our
 * Delete: nx's first step).  The other takes the CHILD_SAs.  Returns the
 * survivor.
 */
static struct ike_sa *
ike_cross_resolve(struct ike_ctx *ctx, struct ike_sa *sa, struct ike_sa *nsa,
		  const uint8_t *ours_min, size_t ours_min_len, uint64_t now, struct ike_next *nx)
{
	struct ike_sa *peers = sa->ike_cross;
	bool lost = ike_nonce_cmp(ours_min, ours_min_len, sa->irk_min, sa->irk_min_len) < 0;
	struct ike_sa *win = lost ? peers : nsa, *lose = lost ? nsa : peers;

	sa->ike_cross = NULL;
	explicit_bzero(sa->irk_min, sizeof(sa->irk_min));
	win->state = IKE_ST_ESTABLISHED;
	sa_hand_over(ctx, sa, win, now);
	win->rekey_collisions++;
	win->rekey_won += !lost;
	win->rekey_lost += lost;
	lose->state = IKE_ST_REKEYED;	/* the redundant one: only its Delete is left */
	lose->created_ms = now;
	ike_log(ctx, win, "crossing IKE SA rekeys: %s (lowest nonce in %s exchange)",
	      lost ? "lost" : "won", lost ? "our" : "the peer's");
	ike_then(nx, lost ? lose : sa, REQ_DEL_IKE);
	return win;
}

/*
 * Made: the new IKE SA takes over, and our Delete of the old one goes out
 * on the old one.  Refused: the old one goes on, a lifetime rekey is tried
 * again later.  An answer we cannot use leaves the peer with a new IKE SA
 * we do not have: the old one is deleted, as for a CHILD_SA rekey.
 */
int
ike_rekey_response(struct ike_ctx *ctx, struct ike_sa *sa, const struct view *v, uint64_t now,
		   struct ike_next *nx)
{
	struct ike_rekey rk = { .initiator = true, .prop = sa->prop, .ni = sa->irk_nonce,
				.ni_len = sizeof(sa->irk_nonce) };
	uint16_t nerr = ike_error_notify(v);
	struct ike_sa *nsa = NULL;
	char err[ERR_LEN];
	int rc;

	ike_request_done(sa);
	if (nerr != 0) {
		ctx->stats.reject[IKE_REJ_PEER_ERROR]++;
		ike_log(ctx, sa, "IKE SA rekey refused: %s (%u)", ike_notify_name(nerr), nerr);
		sa->ike_rekey_retry_ms = ike_rekey_retry_at(now);
		irk_wipe(sa);
		if (sa->ike_cross != NULL) {
			nsa = sa->ike_cross;
			ike_rekey_cross_take(ctx, sa, now);
			return ike_then(nx, nsa, REQ_NONE);
		}
		return ike_then(nx, sa, REQ_NONE);
	}
	memcpy(rk.spi_i, sa->irk_spi, IKE_SPI_LEN);
	rc = ike_rekey_answer(sa, v, &rk, err, sizeof(err));
	if (rc != 0)
		ike_drop(ctx, sa, IKE_REJ_MALFORMED, rc, err);
	else if ((nsa = sa_successor(ctx, sa, &rk, now)) == NULL)
		rc = -ENOMEM;
	if (rc == 0 && sa->ike_cross != NULL) {
		bool i_low = ike_nonce_cmp(rk.ni, rk.ni_len, rk.nr, rk.nr_len) < 0;
		struct ike_sa *win;

		win = ike_cross_resolve(ctx, sa, nsa, i_low ? rk.ni : rk.nr,
					i_low ? rk.ni_len : rk.nr_len, now, nx);
		explicit_bzero(&rk, sizeof(rk));
		irk_wipe(sa);
		return ike_then(nx, win, REQ_NONE);
	}
	explicit_bzero(&rk, sizeof(rk));
	irk_wipe(sa);
	if (rc != 0) {
		ike_why(sa, "IKE SA rekey answer refused");
		return ike_then(nx, sa, REQ_DEL_IKE);
	}
	sa_hand_over(ctx, sa, nsa, now);
	ike_then(nx, sa, REQ_DEL_IKE);		/* the old one's Delete, */
	return ike_then(nx, nsa, REQ_NONE);	/* then what the new one has queued */
}

/*
 * Whether the peer may rekey the IKE SA now: not across a request of ours
 * that would be left hanging on the old SA (a CHILD_SA rekey, a Delete),
 * nor once ours made a successor (REKEYED, our Delete out).  One that
 * crosses our IKE SA rekey in flight is made (*cross), resolved when ours
 * is answered (2.8.2).
 */
static uint16_t
ike_rekey_admit(struct ike_ctx *ctx, struct ike_sa *sa, bool *cross)
{
	*cross = sa->state == IKE_ST_ESTABLISHED && sa->req_kind == REQ_IKE_REKEY &&
		 sa->ike_cross == NULL && !sa->want_del_ike;
	if (*cross || (sa->state == IKE_ST_ESTABLISHED && sa->req_kind == REQ_NONE &&
		       !sa->want_del_ike))
		return 0;
	ike_log(ctx, sa, "IKE SA rekey refused: %s", sa->req_kind == REQ_IKE_REKEY ?
	      "ours crossed it and was made" : "a request of ours is under way");
	return IKE_N_TEMPORARY_FAILURE;
}

/* The peer's SA, Ni and KEi: our choice into ip and its SPIi into rk; 0 or the error. */
static uint16_t
ike_rekey_parse(struct ike_ctx *ctx, struct ike_sa *sa, const struct view *v,
		struct init_pl *ip, struct ike_rekey *rk)
{
	const struct ike_pl *sp = ike_find_pl(v, IKE_PL_SA), *no = ike_find_pl(v, IKE_PL_NONCE);
	const struct ike_pl *kp = ike_find_pl(v, IKE_PL_KE);
	const struct ike_proposal *p = NULL;
	char err[ERR_LEN];
	int rc = -EBADMSG;

	snprintf(err, sizeof(err), "create_child_sa: no %s payload (IKE SA rekey)",
		 sp == NULL ? "SA" : no == NULL ? "Nonce" : "KE");
	if (sp != NULL && no != NULL && kp != NULL)
		rc = ike_sa_parse(sp->body, sp->len, IKE_CREATE_CHILD_SA, ip->props, MAX_PROPS,
				  &ip->n_props, err, sizeof(err));
	if (rc == 0)
		rc = ike_nonce_parse(no->body, no->len, err, sizeof(err));
	if (rc == 0)
		rc = ike_ke_parse(kp->body, kp->len, &ip->ke, err, sizeof(err));
	if (rc != 0)
		return ike_drop(ctx, sa, IKE_REJ_MALFORMED, 0, err), IKE_N_INVALID_SYNTAX;
	rk->ni = no->body;
	rk->ni_len = no->len;
	if (ike_pick_ike(&sa->conn->cfg, ip->props, ip->n_props, ip->ke.group, &ip->chosen,
		     &ip->num) != 0)
		return ike_drop(ctx, sa, IKE_REJ_NO_PROPOSAL, 0, "sa: no IKE proposal acceptable"),
		       IKE_N_NO_PROPOSAL_CHOSEN;
	for (unsigned i = 0; i < ip->n_props && p == NULL; i++)
		if (ip->props[i].num == ip->num && ip->props[i].proto == IKE_PROTO_IKE)
			p = &ip->props[i];
	if (p == NULL || p->spi_len != IKE_SPI_LEN || is_zero(p->spi, IKE_SPI_LEN))
		return ike_drop(ctx, sa, IKE_REJ_MALFORMED, 0, "sa.proposal.spi: not 8 bytes, or "
			      "zero"), IKE_N_INVALID_SYNTAX;
	memcpy(rk->spi_i, p->spi, IKE_SPI_LEN);
	if (ip->ke.group != ip->chosen.dh)
		return ike_drop(ctx, sa, IKE_REJ_INVALID_KE, 0, "ke.group: not the chosen one"),
		       IKE_N_INVALID_KE_PAYLOAD;
	return 0;
}

/*
 * Responder of an IKE SA rekey: the new SA (*out, handed over once the
 * answer is out) and our SA, Nr and KEr into in; 0, or the error Notify.
 */
static uint16_t
ike_rekey_accept(struct ike_ctx *ctx, struct ike_sa *sa, const struct view *v,
		 struct ike_buf *in, struct init_pl *ip, uint64_t now, struct ike_sa **out)
{
	struct ike_rekey rk = { .initiator = false };
	uint8_t pub[IKE_DH_MAX_PUB], nr[NONCE_LEN];
	size_t publen = sizeof(pub);
	struct ike_proposal resp;
	struct ike_dh *dh = NULL;
	bool cross;
	uint16_t nerr = ike_rekey_admit(ctx, sa, &cross);

	if (nerr == 0)
		nerr = ike_rekey_parse(ctx, sa, v, ip, &rk);
	if (nerr == 0 && (ike_random_nonzero(rk.spi_r, IKE_SPI_LEN) != 0 ||
			  ike_random(nr, sizeof(nr)) != 0 ||
			  ike_dh_new(ip->chosen.dh, &dh, pub, &publen) != 0))
		nerr = IKE_N_TEMPORARY_FAILURE;
	rk.gir_len = sizeof(rk.gir);
	if (nerr == 0 && ike_dh_derive(dh, ip->ke.data, ip->ke.len, rk.gir, &rk.gir_len) != 0) {
		ike_drop(ctx, sa, IKE_REJ_MALFORMED, 0, "ke.data: not a public value of the group");
		nerr = IKE_N_INVALID_SYNTAX;
	}
	if (nerr == 0) {
		rk.prop = ip->chosen;
		rk.nr = nr;
		rk.nr_len = sizeof(nr);
		*out = sa_successor(ctx, sa, &rk, now);
		nerr = *out == NULL ? IKE_N_TEMPORARY_FAILURE : 0;
	}
	if (nerr == 0 && cross) {
		bool i_low = ike_nonce_cmp(rk.ni, rk.ni_len, nr, sizeof(nr)) < 0;

		sa->ike_cross = *out;	/* waits for the answer to ours */
		(*out)->cross_target = true;
		sa->irk_min_len = i_low ? rk.ni_len : sizeof(nr);
		memcpy(sa->irk_min, i_low ? rk.ni : nr, sa->irk_min_len);
	}
	if (nerr == 0) {
		ike_prop_chosen_build(&ip->chosen, ip->num, &resp);
		resp.spi_len = IKE_SPI_LEN;
		memcpy(resp.spi, rk.spi_r, IKE_SPI_LEN);
		ike_build_sa(in, &resp, 1);
		ike_build_nonce(in, nr, sizeof(nr));
		ike_build_ke(in, ip->chosen.dh, pub, publen);
	}
	ike_dh_free(dh);
	explicit_bzero(&rk, sizeof(rk));
	explicit_bzero(nr, sizeof(nr));
	return nerr;
}

/* A CREATE_CHILD_SA without REKEY_SA or selectors: the peer rekeys the IKE SA. */
bool
ike_is_ike_rekey(const struct view *v)
{
	struct ike_notify nt;
	unsigned from = 0;

	return ike_find_pl(v, IKE_PL_TSI) == NULL && ike_find_pl(v, IKE_PL_TSR) == NULL &&
	       !ike_find_notify(v, IKE_N_REKEY_SA, &from, &nt);
}

int
ike_rekey_request(struct ike_ctx *ctx, struct ike_sa *sa, const struct ike_hdr *h,
		  const struct view *v, uint64_t now)
{
	uint8_t inner[MSG_MAX], g[2];
	struct ike_sa *nsa = NULL;
	struct init_pl ip;
	struct ike_buf in;
	uint16_t nerr;
	int rc;

	ike_buf_init(&in, inner, sizeof(inner));
	nerr = ike_rekey_accept(ctx, sa, v, &in, &ip, now, &nsa);
	if (nerr != 0) {
		bool ke = nerr == IKE_N_INVALID_KE_PAYLOAD;

		/* INVALID_KE_PAYLOAD names the group we want (1.3.2). */
		if (ke) {
			g[0] = (uint8_t)(ip.chosen.dh >> 8);
			g[1] = (uint8_t)ip.chosen.dh;
		}
		ike_buf_init(&in, inner, sizeof(inner));
		ike_put_notify(&in, nerr, ke ? g : NULL, ke ? sizeof(g) : 0);
	}
	rc = ike_respond(ctx, sa, h, &in);
	explicit_bzero(inner, sizeof(inner));
	if (nsa != NULL && rc != 0) {
		ike_sa_end(ctx, nsa, "IKE SA rekey: cannot answer");
	} else if (nsa != NULL && sa->ike_cross == nsa) {
		nsa->state = IKE_ST_REKEYED;	/* not in use until resolved */
		nsa->created_ms = now;
		ike_log(ctx, sa, "IKE SA rekey crosses ours: both made, resolved at our answer");
	} else if (nsa != NULL) {
		sa_hand_over(ctx, sa, nsa, now);
	}
	return rc;
}
