/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ike_auth.c - IKE_AUTH (RFC 7296 1.2, 2.15) in both roles: ID and PSK AUTH
 * payloads, the connection chosen by the peer's identity, and the IKE SA
 * established with its first CHILD_SA (made by ike_child.c).
 */
#define _GNU_SOURCE		/* explicit_bzero */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "ike_int.h"

/* ---- IKE_AUTH ----------------------------------------------------------- */

/* The ID payload's body as AUTH signs it: type, three reserved bytes, data. */
static size_t
id_body(const struct ike_ident *id, uint8_t out[4 + IKE_IDENT_MAX])
{
	out[0] = id->type;
	out[1] = out[2] = out[3] = 0;
	memcpy(out + 4, id->data, id->len);
	return 4 + (size_t)id->len;
}

/*
 * The AUTH of one side (2.15): prf(prf(PSK, pad), its IKE_SA_INIT message |
 * the other side's nonce | prf(its SK_p, its ID')).
 */
static int
auth_compute(const struct ike_sa *sa, bool of_initiator, const uint8_t *idb, size_t idlen,
	     uint8_t *out, size_t *olen)
{
	const struct ike_conn_cfg *cfg = &sa->conn->cfg;
	uint8_t mac[IKE_PRF_MAX_LEN];
	size_t mlen = sizeof(mac);
	struct ike_iov v[3];
	int rc;

	rc = ike_id_mac(sa->prop.prf, of_initiator ? sa->keys.sk_pi : sa->keys.sk_pr,
			sa->keys.prf_len, idb, idlen, mac, &mlen);
	if (rc == 0) {
		v[0] = of_initiator ? (struct ike_iov){ sa->init_req, sa->init_req_len } :
				      (struct ike_iov){ sa->init_resp, sa->init_resp_len };
		v[1] = of_initiator ? (struct ike_iov){ sa->nr, sa->nr_len } :
				      (struct ike_iov){ sa->ni, sa->ni_len };
		v[2] = (struct ike_iov){ mac, mlen };
		rc = ike_psk_auth(sa->prop.prf, cfg->psk, cfg->psk_len, v, 3, out, olen);
	}
	explicit_bzero(mac, sizeof(mac));
	return rc;
}

/* Our ID and AUTH payloads into in. */
static int
put_id_auth(const struct ike_sa *sa, struct ike_buf *in)
{
	const struct ike_ident *me = &sa->conn->cfg.local_id;
	uint8_t idb[4 + IKE_IDENT_MAX], auth[IKE_PRF_MAX_LEN];
	struct ike_id id = { .type = me->type, .data = me->data, .len = me->len };
	size_t alen = sizeof(auth);
	struct ike_auth a;
	int rc;

	rc = auth_compute(sa, sa->initiator, idb, id_body(me, idb), auth, &alen);
	if (rc == 0) {
		a = (struct ike_auth){ IKE_AUTH_SHARED_KEY_MIC, auth, alen };
		ike_build_id(in, sa->initiator ? IKE_PL_IDI : IKE_PL_IDR, &id);
		ike_build_auth(in, &a);
	}
	explicit_bzero(auth, sizeof(auth));
	return rc;
}

static bool
prop_in(const struct ike_conn_cfg *cfg, const struct ike_prop_ike *p)
{
	return ike_prop_offered(cfg->ike, cfg->n_ike, p);
}

/*
 * Responder: IKE_SA_INIT picked the first connection for the addresses (it
 * has no identity yet).  Where several share the addresses (a tester's many
 * tunnels to one gateway, one per identity), the IKE_AUTH request's IDi
 * picks among them (RFC 7296 2.15 lets the responder choose by it): the one
 * whose remote identity it is, if the IKE proposal taken suits it too.
 * Otherwise the first stays, and auth_verify refuses the identity.
 */
static void
conn_by_id(struct ike_ctx *ctx, struct ike_sa *sa, const struct view *v)
{
	const struct ike_pl *idp = ike_find_pl(v, IKE_PL_IDI);
	char err[ERR_LEN];
	struct ike_id id;

	if (sa->initiator || idp == NULL ||
	    ike_id_parse(idp->body, idp->len, &id, err, sizeof(err)) != 0)
		return;
	for (struct conn *c = ctx->conns; c != NULL; c = c->next) {
		const struct ike_ident *want = &c->cfg.remote_id;

		if (ip_equal(&c->cfg.local, &sa->local) && ip_equal(&c->cfg.remote, &sa->remote) &&
		    id.type == want->type && id.len == want->len &&
		    memcmp(id.data, want->data, id.len) == 0 && prop_in(&c->cfg, &sa->prop)) {
			sa->conn = c;
			return;
		}
	}
}

/* The peer's ID and AUTH: 0, -EBADMSG (malformed) or -EACCES, with err. */
static int
auth_verify(const struct ike_sa *sa, const struct view *v, char *err, size_t elen)
{
	const struct ike_pl *idp = ike_find_pl(v, sa->initiator ? IKE_PL_IDR : IKE_PL_IDI);
	const struct ike_pl *ap = ike_find_pl(v, IKE_PL_AUTH);
	const struct ike_ident *want = &sa->conn->cfg.remote_id;
	uint8_t exp[IKE_PRF_MAX_LEN];
	size_t xlen = sizeof(exp);
	struct ike_auth a;
	struct ike_id id;
	int rc;

	if (idp == NULL || ap == NULL) {
		snprintf(err, elen, "ike_auth: no %s payload", idp == NULL ? "ID" : "AUTH");
		return -EBADMSG;
	}
	rc = ike_id_parse(idp->body, idp->len, &id, err, elen);
	if (rc == 0)
		rc = ike_auth_parse(ap->body, ap->len, &a, err, elen);
	if (rc != 0)
		return rc;
	if (id.type != want->type || id.len != want->len || memcmp(id.data, want->data, id.len))
		return snprintf(err, elen, "id: type %u, %zu bytes, not the configured remote "
				"identity", id.type, id.len), -EACCES;
	if (a.method != IKE_AUTH_SHARED_KEY_MIC)
		return snprintf(err, elen, "auth.method: %u, expected 2 (shared key)",
				a.method), -EACCES;
	rc = auth_compute(sa, !sa->initiator, id.body, id.body_len, exp, &xlen);
	if (rc == 0 && (a.len != xlen || !ike_auth_equal(a.data, exp, xlen))) {
		snprintf(err, elen, "auth.data: does not verify (another PSK?)");
		rc = -EACCES;
	}
	explicit_bzero(exp, sizeof(exp));
	return rc;
}

int
ike_auth_send(struct ike_ctx *ctx, struct ike_sa *sa, uint64_t now)
{
	const struct ike_conn_cfg *cfg = &sa->conn->cfg;
	struct ike_proposal props[IKE_CONN_PROPS_MAX];
	uint8_t inner[MSG_MAX], out[MSG_MAX], spi[4];
	struct ike_ts tsi, tsr;
	struct ike_buf in;
	struct ike_hdr h;
	size_t len;
	int rc;

	rc = ike_random_nonzero(spi, sizeof(spi));
	sa->offered_spi = get32(spi);
	ike_buf_init(&in, inner, sizeof(inner));
	if (rc == 0)
		rc = put_id_auth(sa, &in);
	if (rc != 0)
		return rc;
	for (unsigned i = 0; i < cfg->n_esp; i++)
		ike_esp_prop_build(&cfg->esp[i], (uint8_t)(i + 1), sa->offered_spi, false,
				   &props[i]);
	ike_build_sa(&in, props, cfg->n_esp);
	ike_ts_from_prefix(&cfg->ts_local, &tsi);
	ike_ts_from_prefix(&cfg->ts_remote, &tsr);
	ike_build_ts(&in, IKE_PL_TSI, &tsi, 1);
	ike_build_ts(&in, IKE_PL_TSR, &tsr, 1);
	ike_hdr_for(sa, &h, IKE_AUTH, false, 1);
	rc = ike_seal_msg(sa, &h, &in, out, sizeof(out), &len);
	explicit_bzero(inner, sizeof(inner));
	if (rc == 0)
		rc = ike_request_start(ctx, sa, REQ_AUTH, 1, out, len, now);
	if (rc == 0)
		sa->state = IKE_ST_AUTH_SENT;
	return rc;
}

int
ike_auth_request(struct ike_ctx *ctx, struct ike_sa *sa, const struct ike_hdr *h,
	     const struct view *v, uint64_t now)
{
	uint8_t inner[MSG_MAX];
	char err[ERR_LEN];
	struct ike_buf in;
	uint16_t nerr;
	int rc;

	conn_by_id(ctx, sa, v);		/* before the owner hears of it */
	sa->owner_knows = true;
	ike_buf_init(&in, inner, sizeof(inner));
	rc = auth_verify(sa, v, err, sizeof(err));
	if (rc != 0) {
		bool bad = rc == -EBADMSG;

		ike_drop(ctx, sa, bad ? IKE_REJ_MALFORMED : IKE_REJ_AUTH_FAIL, rc, err);
		ike_put_notify(&in, bad ? IKE_N_INVALID_SYNTAX : IKE_N_AUTHENTICATION_FAILED,
			   NULL, 0);
		ike_respond(ctx, sa, h, &in);
		ike_sa_end(ctx, sa, bad ? "malformed IKE_AUTH request" :
			   "authentication of the peer failed");
		return rc;
	}
	ike_set_state(ctx, sa, IKE_ST_ESTABLISHED);
	rc = put_id_auth(sa, &in);
	if (rc != 0) {
		ike_sa_end(ctx, sa, "cannot compute AUTH");
		return rc;
	}
	nerr = ike_child_accept(ctx, sa, v, &in, now);
	if (nerr != 0)
		ike_put_notify(&in, nerr, NULL, 0);
	rc = ike_respond(ctx, sa, h, &in);
	explicit_bzero(inner, sizeof(inner));
	ike_log(ctx, sa, "IKE SA established (responder)%s", nerr ? ", no CHILD_SA" : "");
	return rc;
}

int
ike_auth_response(struct ike_ctx *ctx, struct ike_sa *sa, const struct view *v, uint64_t now)
{
	uint16_t nerr = ike_error_notify(v);
	char err[ERR_LEN], why[WHY_LEN];
	int rc;

	if (ike_find_pl(v, IKE_PL_AUTH) == NULL) {
		ctx->stats.reject[IKE_REJ_PEER_ERROR]++;
		snprintf(why, sizeof(why), "peer: %s (%u) in IKE_AUTH", ike_notify_name(nerr),
			 nerr);
		ike_sa_end(ctx, sa, why);
		return -ECONNREFUSED;
	}
	rc = auth_verify(sa, v, err, sizeof(err));
	if (rc != 0) {
		ike_drop(ctx, sa, rc == -EBADMSG ? IKE_REJ_MALFORMED : IKE_REJ_AUTH_FAIL, rc, err);
		ike_sa_end(ctx, sa, "authentication of the responder failed");
		return rc;
	}
	ike_request_done(sa);
	sa->state = IKE_ST_ESTABLISHED;
	if (nerr != 0) {
		ctx->stats.reject[IKE_REJ_PEER_ERROR]++;
		snprintf(sa->why, sizeof(sa->why), "peer: %s (%u), no CHILD_SA",
			 ike_notify_name(nerr), nerr);
	} else if ((rc = ike_child_finish(ctx, sa, v, err, sizeof(err), now)) != 0) {
		ike_drop(ctx, sa, IKE_REJ_MALFORMED, rc, err);
		snprintf(sa->why, sizeof(sa->why), "CHILD_SA refused: %.70s", err);
	}
	/* An IKE SA without its CHILD_SA carries nothing: delete it. */
	if (!sa->child.up)
		return ike_info_send(ctx, sa, REQ_DEL_IKE, now);
	ike_log(ctx, sa, "IKE SA established (initiator)");
	return ike_next_request(ctx, sa, now);
}
