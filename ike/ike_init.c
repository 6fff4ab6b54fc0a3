/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ike_init.c - IKE_SA_INIT (RFC 7296 1.2) in both roles: the initiator's
 * request, its retries after COOKIE and INVALID_KE_PAYLOAD, the response
 * and the keys; the responder's choice, its stateless refusals, cookies
 * (2.6) and half-open SAs; NAT detection (2.23) and the move to port 4500.
 * An exchange (ike_int.h): IKE_AUTH after the answer is the manager's
 * (ike_sa.c), left to it in struct ike_next; the owner's ike_initiate (in
 * ike_sa.c) starts an SA here with ike_init_start.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <openssl/evp.h>

#include "ike_int.h"

/* ---- NAT detection (2.23) and cookies (2.6) ----------------------------- */

static void
natd_hash(const uint8_t *spi_i, const uint8_t *spi_r, const struct ike_addr *a,
	  uint8_t out[NATD_LEN])
{
	uint8_t buf[2 * IKE_SPI_LEN + 16 + 2];
	size_t alen = addr_len(a->family), n = 0;
	unsigned olen = NATD_LEN;

	memcpy(buf, spi_i, IKE_SPI_LEN);
	memcpy(buf + IKE_SPI_LEN, spi_r, IKE_SPI_LEN);
	n = 2 * IKE_SPI_LEN;
	memcpy(buf + n, a->ip, alen);
	n += alen;
	buf[n++] = (uint8_t)(a->port >> 8);
	buf[n++] = (uint8_t)a->port;
	/* A failure makes the hashes differ: "behind a NAT", the safe mistake. */
	if (EVP_Digest(buf, n, out, &olen, EVP_sha1(), NULL) != 1)
		memset(out, 0, NATD_LEN);
}

/*
 * Our NAT detection Notifies.  With force_encap the source hash is spoiled
 * on purpose: the peer then believes us behind a NAT and uses port 4500 and
 * ESP in UDP as well (what strongSwan does for encap=yes).
 */
static void
natd_put(struct ike_buf *b, const uint8_t *spi_i, const uint8_t *spi_r,
	 const struct ike_addr *src, const struct ike_addr *dst, bool fake_src)
{
	uint8_t h[NATD_LEN];

	natd_hash(spi_i, spi_r, src, h);
	if (fake_src)
		h[0] ^= 0xff;
	ike_put_notify(b, IKE_N_NAT_DETECTION_SOURCE_IP, h, NATD_LEN);
	natd_hash(spi_i, spi_r, dst, h);
	ike_put_notify(b, IKE_N_NAT_DETECTION_DESTINATION_IP, h, NATD_LEN);
}

/* Whether a Notify of type carries the hash of a; also true if there is none. */
static bool
natd_ok(const struct view *v, uint16_t type, const uint8_t *spi_i, const uint8_t *spi_r,
	const struct ike_addr *a)
{
	struct ike_notify nt;
	uint8_t h[NATD_LEN];
	unsigned from = 0;
	bool any = false;

	natd_hash(spi_i, spi_r, a, h);
	while (ike_find_notify(v, type, &from, &nt)) {
		any = true;
		if (nt.data_len == NATD_LEN && memcmp(nt.data, h, NATD_LEN) == 0)
			return true;
	}
	return !any;
}

/* Version byte 1, then prf(secret, Ni | IPi | SPIi): no state until it comes back. */
static int
cookie_make(const struct ike_ctx *ctx, const uint8_t *ni, size_t ni_len,
	    const struct ike_addr *remote, const uint8_t *spi_i, uint8_t out[COOKIE_LEN])
{
	struct ike_iov v[3] = {
		{ ni, ni_len }, { remote->ip, addr_len(remote->family) }, { spi_i, IKE_SPI_LEN },
	};
	size_t len = COOKIE_LEN - 1;

	out[0] = 1;
	return ike_prf(COOKIE_PRF, ctx->cookie_secret, sizeof(ctx->cookie_secret), v, 3, out + 1,
		       &len);
}

/* Derive the IKE SA's keys from the peer's KE; the DH key goes either way. */
static int
derive_keys(struct ike_sa *sa, const struct ike_ke *ke)
{
	uint8_t gir[IKE_DH_MAX_SECRET];
	size_t glen = sizeof(gir);
	int rc;

	rc = ike_dh_derive(sa->dh, ke->data, ke->len, gir, &glen);
	if (rc == 0)
		rc = ike_derive_sa_keys(sa->prop.prf, sa->prop.encr_bits / 8, sa->prop.integ,
					sa->ni, sa->ni_len, sa->nr, sa->nr_len, gir, glen,
					sa->spi_i, sa->spi_r, &sa->keys);
	explicit_bzero(gir, sizeof(gir));
	ike_dh_free(sa->dh);
	sa->dh = NULL;
	return rc;
}

/* ---- IKE_SA_INIT, initiator --------------------------------------------- */

static int
init_send(struct ike_ctx *ctx, struct ike_sa *sa, uint64_t now)
{
	const struct ike_conn_cfg *cfg = &sa->conn->cfg;
	struct ike_proposal props[IKE_CONN_PROPS_MAX];
	uint8_t pub[IKE_DH_MAX_PUB], out[MSG_MAX];
	static const uint8_t zero[IKE_SPI_LEN];
	size_t publen = sizeof(pub);
	struct ike_hdr h;
	struct ike_buf b;
	int rc;

	ike_dh_free(sa->dh);
	sa->dh = NULL;
	rc = ike_dh_new(sa->ke_group, &sa->dh, pub, &publen);
	if (rc != 0)
		return rc;
	for (unsigned i = 0; i < cfg->n_ike; i++)
		ike_prop_build(&cfg->ike[i], (uint8_t)(i + 1), &props[i]);
	ike_hdr_for(sa, &h, IKE_SA_INIT, false, 0);
	ike_buf_init(&b, out, sizeof(out));
	ike_build_hdr(&b, &h);
	/* A cookie goes first (2.6), so that the responder finds it cheaply. */
	if (sa->cookie_len != 0)
		ike_put_notify(&b, IKE_N_COOKIE, sa->cookie, sa->cookie_len);
	ike_build_sa(&b, props, cfg->n_ike);
	ike_build_ke(&b, sa->ke_group, pub, publen);
	ike_build_nonce(&b, sa->ni, sa->ni_len);
	natd_put(&b, sa->spi_i, zero, &sa->local, &sa->remote, cfg->force_encap);
	ike_pki_init_put(sa, &b, false);
	ike_frag_init_put(sa, &b);
	rc = ike_finish(&b);
	if (rc == 0)
		rc = ike_store(&sa->init_req, &sa->init_req_len, out, b.len);
	if (rc == 0)
		rc = ike_request_start(ctx, sa, REQ_INIT, 0, out, b.len, now);
	return rc;
}

/* Initiator: an IKE SA of connection c, its IKE_SA_INIT out (ended if that cannot go). */
int
ike_init_start(struct ike_ctx *ctx, struct conn *c, uint64_t now_ms)
{
	struct ike_sa *sa = ike_sa_new(ctx, c, true, now_ms);
	int rc;

	if (sa == NULL)
		return -ENOMEM;
	sa->owner_knows = true;
	sa->state = IKE_ST_INIT_SENT;
	sa->local = c->cfg.local;
	sa->remote = c->cfg.remote;
	sa->ke_group = c->cfg.ike[0].dh[0];	/* the first of the first proposal */
	sa->ni_len = NONCE_LEN;
	rc = ike_random_nonzero(sa->spi_i, IKE_SPI_LEN);
	if (rc == 0)
		ike_sa_hash(ctx, sa);
	if (rc == 0)
		rc = ike_random(sa->ni, sa->ni_len);
	if (rc == 0)
		rc = init_send(ctx, sa, now_ms);
	if (rc != 0)
		ike_sa_end(ctx, sa, "cannot start IKE_SA_INIT");
	return rc;
}

/* An error answer to our IKE_SA_INIT: retry (INVALID_KE_PAYLOAD, COOKIE) or give up. */
static int
init_refused(struct ike_ctx *ctx, struct ike_sa *sa, const struct view *v, uint64_t now)
{
	const struct ike_conn_cfg *cfg = &sa->conn->cfg;
	struct ike_notify nt;
	unsigned from = 0;
	char why[WHY_LEN];
	uint16_t type;

	if (ike_find_notify(v, IKE_N_COOKIE, &from, &nt)) {
		if (nt.data_len == 0 || nt.data_len > COOKIE_LEN ||
		    ++sa->cookie_tries > INIT_RETRIES)
			return ike_drop(ctx, sa, IKE_REJ_COOKIE, -EBADMSG, "notify.cookie");
		memcpy(sa->cookie, nt.data, nt.data_len);
		sa->cookie_len = nt.data_len;
		return init_send(ctx, sa, now);
	}
	from = 0;
	if (ike_find_notify(v, IKE_N_INVALID_KE_PAYLOAD, &from, &nt) && nt.data_len == 2) {
		uint16_t g = (uint16_t)(nt.data[0] << 8 | nt.data[1]);

		if (ike_cfg_has_group(cfg->ike, cfg->n_ike, g) && g != sa->ke_group &&
		    ++sa->ke_tries <= INIT_RETRIES) {
			ctx->stats.reject[IKE_REJ_INVALID_KE]++;
			sa->ke_group = g;
			return init_send(ctx, sa, now);
		}
	}
	type = ike_error_notify(v);
	ctx->stats.reject[IKE_REJ_PEER_ERROR]++;
	snprintf(why, sizeof(why), "peer: %s (%u) in IKE_SA_INIT", ike_notify_name(type), type);
	ike_sa_end(ctx, sa, why);
	return -ECONNREFUSED;
}

static int
init_pl_parse(const struct view *v, bool answer, struct init_pl *ip, char *err, size_t elen)
{
	const struct ike_pl *sa = ike_find_pl(v, IKE_PL_SA), *ke = ike_find_pl(v, IKE_PL_KE);
	const struct ike_pl *no = ike_find_pl(v, IKE_PL_NONCE);
	int rc;

	if (sa == NULL || ke == NULL || no == NULL) {
		snprintf(err, elen, "ike_sa_init: no %s payload",
			 sa == NULL ? "SA" : ke == NULL ? "KE" : "Nonce");
		return -EBADMSG;
	}
	/* An answer holds the one proposal taken, under the number it had (3.3.1). */
	ip->n_props = 1;
	rc = answer ? ike_sa_parse_answer(sa->body, sa->len, IKE_SA_INIT, ip->props, err, elen) :
		      ike_sa_parse(sa->body, sa->len, IKE_SA_INIT, ip->props, MAX_PROPS,
				   &ip->n_props, err, elen);
	if (rc == 0)
		rc = ike_ke_parse(ke->body, ke->len, &ip->ke, err, elen);
	if (rc == 0)
		rc = ike_nonce_parse(no->body, no->len, err, elen);
	ip->nonce = no->body;
	ip->nonce_len = no->len;
	return rc;
}

/* The responder's choice must be one of the proposals we made, unchanged. */
static int
init_check_choice(const struct ike_sa *sa, struct init_pl *ip, const struct ike_hdr *h,
		  char *err, size_t elen)
{
	const struct ike_conn_cfg *cfg = &sa->conn->cfg;
	unsigned num;

	if (ip->n_props != 1) {
		snprintf(err, elen, "sa: %u proposals in a response, expected 1", ip->n_props);
		return -EBADMSG;
	}
	num = ip->props[0].num;
	if (num < 1 || num > cfg->n_ike) {
		snprintf(err, elen, "sa.proposal[1].num: %u, we made %u", num, cfg->n_ike);
		return -EBADMSG;
	}
	if (!ike_prop_check_ike(&cfg->ike[num - 1], &ip->props[0], &ip->chosen) ||
	    ip->chosen.dh != sa->ke_group || ip->ke.group != sa->ke_group) {
		snprintf(err, elen, "sa.proposal[1]: not one of each kind from our proposal %u, "
			 "or not our KE group (KE group %u)", num, ip->ke.group);
		return -EBADMSG;
	}
	if (is_zero(h->spi_r, IKE_SPI_LEN)) {
		snprintf(err, elen, "ike.spi_r: zero in a successful IKE_SA_INIT response");
		return -EBADMSG;
	}
	return 0;
}

int
ike_init_response(struct ike_ctx *ctx, struct ike_sa *sa, const struct ike_hdr *h,
	      const uint8_t *msg, size_t len, uint64_t now, struct ike_next *nx)
{
	struct init_pl ip;
	char err[ERR_LEN];
	struct view v;
	int rc;

	rc = ike_view_parse(h->next, msg + IKE_HDR_LEN, len - IKE_HDR_LEN, &v, err, sizeof(err));
	if (rc != 0)
		return ike_drop(ctx, sa, rc == -ENOTSUP ? IKE_REJ_UNSUPPORTED : IKE_REJ_MALFORMED,
			      rc, err);
	if (ike_find_pl(&v, IKE_PL_SA) == NULL)
		return init_refused(ctx, sa, &v, now);
	rc = init_pl_parse(&v, true, &ip, err, sizeof(err));
	if (rc == 0)
		rc = init_check_choice(sa, &ip, h, err, sizeof(err));
	if (rc != 0)
		return ike_drop(ctx, sa, IKE_REJ_MALFORMED, rc, err);
	sa->prop = ip.chosen;
	memcpy(sa->spi_r, h->spi_r, IKE_SPI_LEN);
	memcpy(sa->nr, ip.nonce, ip.nonce_len);
	sa->nr_len = ip.nonce_len;
	rc = derive_keys(sa, &ip.ke);
	if (rc == 0)
		rc = ike_store(&sa->init_resp, &sa->init_resp_len, msg, len);
	if (rc != 0) {
		ike_sa_end(ctx, sa, "key derivation failed (peer's KE)");
		return rc;
	}
	/* The peer's view of us is its destination, and ours of it our source. */
	sa->nat_local = !natd_ok(&v, IKE_N_NAT_DETECTION_DESTINATION_IP, sa->spi_i, sa->spi_r,
				 &sa->local);
	sa->nat_remote = !natd_ok(&v, IKE_N_NAT_DETECTION_SOURCE_IP, sa->spi_i, sa->spi_r,
				  &sa->remote);
	ike_pki_init_get(sa, &v);
	ike_frag_init_get(sa, &v);
	if (sa->nat_local || sa->nat_remote || sa->conn->cfg.force_encap)
		ike_encap_start(ctx, sa);
	ike_request_done(sa);
	return ike_then(nx, sa, REQ_AUTH);	/* IKE_AUTH next */
}

/* ---- IKE_SA_INIT, responder --------------------------------------------- */

static int
raw_send(struct ike_ctx *ctx, const struct ike_addr *local, const struct ike_addr *remote,
	 struct ike_buf *b)
{
	int rc = ike_finish(b);

	if (rc != 0)
		return rc;
	ctx->stats.tx++;
	ctx->ops.send(ctx->opaque, local, remote, b->p, b->len);
	return 0;
}

/* A stateless IKE_SA_INIT answer of one Notify. */
static int
init_notify(struct ike_ctx *ctx, const struct ike_addr *local, const struct ike_addr *remote,
	    const struct ike_hdr *req, uint16_t type, const void *data, size_t dlen)
{
	uint8_t out[512];
	struct ike_hdr h;
	struct ike_buf b;

	memset(&h, 0, sizeof(h));
	memcpy(h.spi_i, req->spi_i, IKE_SPI_LEN);
	h.exchange = IKE_SA_INIT;
	h.flags = IKE_F_RESPONSE;
	ike_buf_init(&b, out, sizeof(out));
	ike_build_hdr(&b, &h);
	ike_put_notify(&b, type, data, dlen);
	return raw_send(ctx, local, remote, &b);
}

/* Above the threshold, a request must carry the cookie we would give it. */
static int
cookie_check(struct ike_ctx *ctx, const struct ike_addr *local, const struct ike_addr *remote,
	     const struct ike_hdr *h, const struct view *v, const struct init_pl *ip)
{
	uint8_t want[COOKIE_LEN];
	struct ike_notify nt;
	unsigned from = 0;
	int rc;

	if (ctx->cookie_threshold == 0 || ctx->half_open < ctx->cookie_threshold)
		return 0;
	rc = cookie_make(ctx, ip->nonce, ip->nonce_len, remote, h->spi_i, want);
	if (rc != 0)
		return rc;
	if (ike_find_notify(v, IKE_N_COOKIE, &from, &nt) && nt.data_len == COOKIE_LEN &&
	    ike_auth_equal(nt.data, want, COOKIE_LEN))
		return 0;
	ike_drop(ctx, NULL, IKE_REJ_COOKIE, 0, "notify.cookie: missing or wrong, half-open "
	       "SAs above the threshold");
	init_notify(ctx, local, remote, h, IKE_N_COOKIE, want, COOKIE_LEN);
	return -EAGAIN;
}

/* Choose, or answer NO_PROPOSAL_CHOSEN / INVALID_KE_PAYLOAD and keep nothing. */
static int
init_choose(struct ike_ctx *ctx, const struct conn *c, const struct ike_addr *local,
	    const struct ike_addr *remote, const struct ike_hdr *h, struct init_pl *ip)
{
	const struct ike_prop_ike *prop = &ip->chosen;
	uint8_t g[2];

	if (ike_pick_ike(&c->cfg, ip->props, ip->n_props, ip->ke.group, &ip->chosen,
			 &ip->num) != 0) {
		ike_drop(ctx, NULL, IKE_REJ_NO_PROPOSAL, 0, "sa: no IKE proposal acceptable");
		init_notify(ctx, local, remote, h, IKE_N_NO_PROPOSAL_CHOSEN, NULL, 0);
		return -ENOENT;
	}
	if (ip->ke.group != prop->dh) {
		g[0] = (uint8_t)(prop->dh >> 8);
		g[1] = (uint8_t)prop->dh;
		ike_drop(ctx, NULL, IKE_REJ_INVALID_KE, 0, "ke.group: not the chosen one");
		init_notify(ctx, local, remote, h, IKE_N_INVALID_KE_PAYLOAD, g, sizeof(g));
		return -EAGAIN;
	}
	return 0;
}

static int
init_reply(struct ike_ctx *ctx, struct ike_sa *sa, const struct init_pl *ip)
{
	uint8_t pub[IKE_DH_MAX_PUB], out[MSG_MAX];
	size_t publen = sizeof(pub);
	struct ike_proposal prop;
	struct ike_hdr h;
	struct ike_buf b;
	int rc;

	rc = ike_dh_new(sa->prop.dh, &sa->dh, pub, &publen);
	if (rc == 0)
		rc = derive_keys(sa, &ip->ke);
	if (rc != 0)
		return rc;
	ike_prop_chosen_build(&sa->prop, ip->num, &prop);
	ike_hdr_for(sa, &h, IKE_SA_INIT, true, 0);
	ike_buf_init(&b, out, sizeof(out));
	ike_build_hdr(&b, &h);
	ike_build_sa(&b, &prop, 1);
	ike_build_ke(&b, sa->prop.dh, pub, publen);
	ike_build_nonce(&b, sa->nr, sa->nr_len);
	natd_put(&b, sa->spi_i, sa->spi_r, &sa->local, &sa->remote,
		 sa->conn->cfg.force_encap);
	ike_pki_init_put(sa, &b, true);
	ike_frag_init_put(sa, &b);
	rc = ike_finish(&b);
	if (rc == 0)
		rc = ike_store(&sa->init_resp, &sa->init_resp_len, out, b.len);
	if (rc == 0)
		ike_xmit(ctx, sa, out, b.len);
	return rc;
}

/* A new half-open SA for an acceptable request. */
static int
init_accept(struct ike_ctx *ctx, struct conn *c, const struct ike_addr *local,
	    const struct ike_addr *remote, const struct ike_hdr *h, const uint8_t *msg,
	    size_t len, const struct view *v, const struct init_pl *ip, uint64_t now)
{
	static const uint8_t zero[IKE_SPI_LEN];
	struct ike_sa *sa = ike_sa_new(ctx, c, false, now);
	int rc;

	if (sa == NULL)
		return -ENOMEM;
	sa->state = IKE_ST_HALF_OPEN;
	ctx->half_open++;
	sa->local = *local;
	sa->remote = *remote;
	sa->prop = ip->chosen;
	memcpy(sa->spi_i, h->spi_i, IKE_SPI_LEN);
	ike_sa_hash(ctx, sa);
	memcpy(sa->ni, ip->nonce, ip->nonce_len);
	sa->ni_len = ip->nonce_len;
	sa->nr_len = NONCE_LEN;
	sa->peer_next_id = 1;
	sa->nat_remote = !natd_ok(v, IKE_N_NAT_DETECTION_SOURCE_IP, h->spi_i, zero, remote);
	sa->nat_local = !natd_ok(v, IKE_N_NAT_DETECTION_DESTINATION_IP, h->spi_i, zero, local);
	ike_pki_init_get(sa, v);
	ike_frag_init_get(sa, v);
	rc = ike_random_nonzero(sa->spi_r, IKE_SPI_LEN);
	if (rc == 0)
		rc = ike_random(sa->nr, sa->nr_len);
	if (rc == 0)
		rc = ike_store(&sa->init_req, &sa->init_req_len, msg, len);
	if (rc == 0)
		rc = init_reply(ctx, sa, ip);
	if (rc != 0) {
		ike_drop(ctx, sa, IKE_REJ_MALFORMED, rc, "ke.data: no shared secret");
		ike_sa_end(ctx, sa, "IKE_SA_INIT failed");
	}
	return rc;
}

static struct ike_sa *
half_open_find(struct ike_ctx *ctx, const uint8_t *spi_i, const struct ike_addr *remote)
{
	for (struct ike_sa *sa = ike_sa_bucket(ctx, spi_i); sa != NULL; sa = sa->by_spi) {
		ctx->probes++;
		if (!sa->initiator && memcmp(sa->spi_i, spi_i, IKE_SPI_LEN) == 0 &&
		    ip_equal(&sa->remote, remote))
			return sa;
	}
	return NULL;
}

int
ike_init_request(struct ike_ctx *ctx, const struct ike_addr *local, const struct ike_addr *remote,
	     const struct ike_hdr *h, const uint8_t *msg, size_t len, uint64_t now)
{
	struct ike_sa *sa;
	struct init_pl ip;
	char err[ERR_LEN];
	struct view v;
	struct conn *c;
	int rc;

	if (h->msg_id != 0)
		return ike_drop(ctx, NULL, IKE_REJ_BAD_MSGID, -EBADMSG, "ike.message_id: not 0 "
			      "in an IKE_SA_INIT request");
	if (!(h->flags & IKE_F_INITIATOR))
		return ike_drop(ctx, NULL, IKE_REJ_BAD_FLAGS, -EBADMSG, "ike.flags: no I bit in "
			      "an IKE_SA_INIT request");
	if (!is_zero(h->spi_r, IKE_SPI_LEN))
		return ike_drop(ctx, NULL, IKE_REJ_MALFORMED, -EBADMSG, "ike.spi_r: not zero in "
			      "an IKE_SA_INIT request");
	sa = half_open_find(ctx, h->spi_i, remote);
	if (sa != NULL) {
		/* A retransmission while half-open gets the same answer (2.1). */
		if (sa->state != IKE_ST_HALF_OPEN || len != sa->init_req_len ||
		    memcmp(msg, sa->init_req, len) != 0)
			return ike_drop(ctx, sa, IKE_REJ_BAD_MSGID, -EALREADY, "ike.spi_i: an "
				      "IKE_SA_INIT for an existing SA");
		ctx->stats.resent_responses++;
		ike_xmit(ctx, sa, sa->init_resp, sa->init_resp_len);
		return 0;
	}
	rc = ike_view_parse(h->next, msg + IKE_HDR_LEN, len - IKE_HDR_LEN, &v, err, sizeof(err));
	if (rc == 0)
		rc = init_pl_parse(&v, false, &ip, err, sizeof(err));
	if (rc != 0)
		return ike_drop(ctx, NULL, rc == -ENOTSUP ? IKE_REJ_UNSUPPORTED : IKE_REJ_MALFORMED,
			      rc, err);
	c = ike_conn_by_addr(ctx, local, remote);
	if (c == NULL)
		return ike_drop(ctx, NULL, IKE_REJ_NO_CONN, -ENOENT, "no connection for the "
			      "addresses");
	rc = cookie_check(ctx, local, remote, h, &v, &ip);
	if (rc == 0)
		rc = init_choose(ctx, c, local, remote, h, &ip);
	if (rc == 0)
		rc = init_accept(ctx, c, local, remote, h, msg, len, &v, &ip, now);
	return rc;
}
