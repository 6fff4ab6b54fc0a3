/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ike_auth.c - IKE_AUTH (RFC 7296 1.2, 2.15) in both roles: ID and AUTH
 * payloads, with a PSK or with certificates (CERT, CERTREQ, signatures of
 * RFC 7296 and RFC 7427 made and checked by ike_pki.c), the connection chosen
 * by the peer's identity, and the IKE SA established with its first
 * CHILD_SA (made by ike_child.c).  An exchange (ike_int.h): what goes next
 * (a Delete of an IKE SA without its CHILD_SA, or what was queued) is the
 * manager's (ike_sa.c), left to it in struct ike_next.
 */
#define _GNU_SOURCE		/* explicit_bzero */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

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
 * The octets one side's AUTH covers (2.15), a PSK's MAC or a signature alike:
 * its IKE_SA_INIT message | the other side's nonce | prf(its SK_p, its ID'),
 * the last computed into mac.
 */
static int
signed_octets(const struct ike_sa *sa, bool of_initiator, const uint8_t *idb, size_t idlen,
	      uint8_t mac[IKE_PRF_MAX_LEN], struct ike_iov v[3])
{
	size_t mlen = IKE_PRF_MAX_LEN;
	int rc;

	rc = ike_id_mac(sa->prop.prf, of_initiator ? sa->keys.sk_pi : sa->keys.sk_pr,
			sa->keys.prf_len, idb, idlen, mac, &mlen);
	v[0] = of_initiator ? (struct ike_iov){ sa->init_req, sa->init_req_len } :
			      (struct ike_iov){ sa->init_resp, sa->init_resp_len };
	v[1] = of_initiator ? (struct ike_iov){ sa->nr, sa->nr_len } :
			      (struct ike_iov){ sa->ni, sa->ni_len };
	v[2] = (struct ike_iov){ mac, mlen };
	return rc;
}

/* The PSK AUTH of one side (2.15): prf(prf(PSK, pad), its signed octets). */
static int
auth_compute(const struct ike_sa *sa, bool of_initiator, const uint8_t *idb, size_t idlen,
	     uint8_t *out, size_t *olen)
{
	const struct ike_conn_cfg *cfg = &sa->conn->cfg;
	uint8_t mac[IKE_PRF_MAX_LEN];
	struct ike_iov v[3];
	int rc;

	rc = signed_octets(sa, of_initiator, idb, idlen, mac, v);
	if (rc == 0)
		rc = ike_psk_auth(sa->prop.prf, cfg->psk, cfg->psk_len, v, 3, out, olen);
	explicit_bzero(mac, sizeof(mac));
	return rc;
}

/* ---- certificates ------------------------------------------------------- */

#define CERTREQ_MAX	16	/* CA key ids in one CERTREQ */

static void
put_certreq(const struct ike_conn_cfg *cfg, struct ike_buf *b)
{
	uint8_t ids[IKE_PKI_KEYID_LEN * CERTREQ_MAX];
	struct ike_cert c = { IKE_CERT_X509_SIG, ids, 0 };

	c.len = ike_pki_trust_certreq(cfg->trust, ids, sizeof(ids));
	if (c.len > 0)
		ike_build_cert(b, IKE_PL_CERTREQ, &c);
}

/*
 * IKE_SA_INIT of a connection with certificates: the hashes we verify
 * (RFC 7427 4) and, in the response, a CERTREQ for our CAs (3.7): a
 * strongSwan initiator sends its certificate only when asked.
 */
void
ike_pki_init_put(const struct ike_sa *sa, struct ike_buf *b, bool certreq)
{
	const struct ike_conn_cfg *cfg = &sa->conn->cfg;
	uint8_t hashes[2 * 8];

	if (cfg->cred == NULL)
		return;
	if (certreq)
		put_certreq(cfg, b);
	ike_put_notify(b, IKE_N_SIGNATURE_HASH_ALGORITHMS, hashes,
		       ike_sig_hashes_build(IKE_HASHES_OURS, hashes, sizeof(hashes)));
}

/* The CA key ids of the peer's X.509 CERTREQs (the first PEER_CAS_MAX). */
void
ike_pki_certreq_get(struct ike_sa *sa, const struct view *v)
{
	struct ike_cert c;
	char err[ERR_LEN];

	for (unsigned i = 0; i < v->n; i++) {
		if (v->pl[i].type != IKE_PL_CERTREQ ||
		    ike_certreq_parse(v->pl[i].body, v->pl[i].len, &c, err, sizeof(err)) != 0 ||
		    c.encoding != IKE_CERT_X509_SIG)
			continue;
		for (size_t o = 0; o < c.len && sa->n_peer_cas < PEER_CAS_MAX;
		     o += IKE_PKI_KEYID_LEN)
			memcpy(sa->peer_cas[sa->n_peer_cas++], c.data + o, IKE_PKI_KEYID_LEN);
	}
}

/* Does the peer hold the CA with this key id (its CERTREQ said so)? */
static bool
peer_has_ca(const struct ike_sa *sa, const uint8_t *keyid)
{
	for (unsigned i = 0; i < sa->n_peer_cas; i++)
		if (memcmp(sa->peer_cas[i], keyid, IKE_PKI_KEYID_LEN) == 0)
			return true;
	return false;
}

/* The peer's SIGNATURE_HASH_ALGORITHMS, 0 if none (or malformed: as none). */
void
ike_pki_init_get(struct ike_sa *sa, const struct view *v)
{
	struct ike_notify nt;
	unsigned from = 0;
	char err[ERR_LEN];
	uint32_t mask;

	sa->peer_hashes = 0;
	if (ike_find_notify(v, IKE_N_SIGNATURE_HASH_ALGORITHMS, &from, &nt) &&
	    ike_sig_hashes_parse(nt.data, nt.data_len, &mask, err, sizeof(err)) == 0)
		sa->peer_hashes = mask;
	ike_pki_certreq_get(sa, v);
}

/*
 * After our ID: our certificates, a CERTREQ (initiator: the responder's
 * strongSwan sends its certificate only when asked) and the signature.
 * Intermediates the peer's CERTREQ names are left out: it has them, and
 * without IKE fragmentation (RFC 7383, not done) every byte counts against
 * the path MTU (an RSA leaf and an intermediate pass 1500 bytes).
 */
static int
put_certs_sig(const struct ike_sa *sa, struct ike_buf *in, const uint8_t *idb, size_t idlen)
{
	const struct ike_conn_cfg *cfg = &sa->conn->cfg;
	uint8_t mac[IKE_PRF_MAX_LEN], sig[IKE_PKI_AUTH_MAX], method;
	size_t slen = sizeof(sig);
	struct ike_iov v[3];
	struct ike_cert c;
	char err[ERR_LEN];
	uint16_t hash;
	int rc;

	rc = ike_pki_choose(cfg->cred, sa->peer_hashes, &method, &hash);
	if (rc == 0)
		rc = signed_octets(sa, sa->initiator, idb, idlen, mac, v);
	if (rc == 0)
		rc = ike_pki_sign(cfg->cred, method, hash, v, 3, sig, &slen, err, sizeof(err));
	explicit_bzero(mac, sizeof(mac));
	if (rc != 0)
		return rc;
	for (unsigned i = 0; i < ike_pki_cred_count(cfg->cred); i++) {
		uint8_t keyid[IKE_PKI_KEYID_LEN];

		ike_pki_cred_keyid(cfg->cred, i, keyid);
		if (i > 0 && peer_has_ca(sa, keyid))
			continue;
		c.encoding = IKE_CERT_X509_SIG;
		ike_pki_cred_der(cfg->cred, i, &c.data, &c.len);
		ike_build_cert(in, IKE_PL_CERT, &c);
	}
	if (sa->initiator)
		put_certreq(cfg, in);
	ike_build_auth(in, &(struct ike_auth){ method, sig, slen });
	return 0;
}

/* The peer's CERT payloads of X.509 certificates, in order: 0 or -EACCES. */
static int
peer_certs(const struct view *v, struct ike_iov *certs, unsigned *n, enum ike_pki_fail *why,
	   char *err, size_t elen)
{
	struct ike_cert c;

	*n = 0;
	for (unsigned i = 0; i < v->n; i++) {
		if (v->pl[i].type != IKE_PL_CERT)
			continue;
		if (ike_cert_parse(v->pl[i].body, v->pl[i].len, &c, err, elen) != 0 ||
		    *n == IKE_PKI_CHAIN_MAX) {
			*why = IKE_PKI_MALFORMED;
			if (*n == IKE_PKI_CHAIN_MAX)
				snprintf(err, elen, "cert-malformed: more than %d CERT payloads",
					 IKE_PKI_CHAIN_MAX);
			return -EACCES;
		}
		if (c.encoding == IKE_CERT_X509_SIG)	/* others (CRLs, URLs): not used */
			certs[(*n)++] = (struct ike_iov){ c.data, c.len };
	}
	return 0;
}

/* Is id the configured remote-id, or does it match its pattern (none: any)? */
static bool
id_allowed(const struct ike_conn_cfg *cfg, const struct ike_id *id)
{
	const struct ike_ident *want = &cfg->remote_id;

	return want->type == 0 ||
	       ike_pki_id_match(want->type, want->data, want->len, id->type, id->data, id->len);
}

/*
 * The peer's certificates, identity and signature (2.15): its chain valid
 * now and leading to our CAs, its ID one of its certificate's and allowed
 * by remote-id, its AUTH a signature of its octets by the certificate's key.
 * Every refusal is -EACCES (AUTHENTICATION_FAILED) with *why.
 */
static int
verify_certs_sig(const struct ike_sa *sa, const struct view *v, const struct ike_id *id,
		 const struct ike_auth *a, enum ike_pki_fail *why, char *err, size_t elen)
{
	const struct ike_conn_cfg *cfg = &sa->conn->cfg;
	struct ike_iov certs[IKE_PKI_CHAIN_MAX], sv[3];
	uint8_t mac[IKE_PRF_MAX_LEN];
	struct ike_pki_peer *peer;
	char d[IKE_PKI_DESC_MAX];
	unsigned n;
	int rc;

	rc = peer_certs(v, certs, &n, why, err, elen);
	if (rc == 0)
		rc = ike_pki_peer_verify(cfg->trust, certs, n, time(NULL), &peer, why, err, elen);
	if (rc != 0)
		return -EACCES;
	rc = ike_pki_peer_has_id(peer, id->type, id->data, id->len, err, elen);
	if (rc == 0 && !id_allowed(cfg, id)) {
		char idt[IKE_IDENT_TEXT_MAX];

		ike_pki_peer_describe(peer, d, sizeof(d));
		ike_ident_text(idt, sizeof(idt), id->type, id->data, id->len);
		snprintf(err, elen, "%s: the ID %s is not the remote-id (or its pattern) of "
			 "this connection; %s", ike_pki_fail_name(IKE_PKI_IDENTITY), idt, d);
		rc = -EACCES;
	}
	*why = rc != 0 ? IKE_PKI_IDENTITY : IKE_PKI_NONE;
	if (rc == 0)
		rc = signed_octets(sa, !sa->initiator, id->body, id->body_len, mac, sv);
	if (rc == 0)
		rc = ike_pki_verify(peer, a->method, a->data, a->len, IKE_HASHES_OURS, sv, 3, why,
				    err, elen);
	explicit_bzero(mac, sizeof(mac));
	ike_pki_peer_free(peer);
	return rc != 0 ? -EACCES : 0;
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

	if (sa->conn->cfg.cred != NULL) {
		ike_build_id(in, sa->initiator ? IKE_PL_IDI : IKE_PL_IDR, &id);
		return put_certs_sig(sa, in, idb, id_body(me, idb));
	}
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
static bool
conn_fits(const struct conn *c, const struct ike_sa *sa, const struct ike_id *id)
{
	const struct ike_ident *want = &c->cfg.remote_id;
	bool same = c->cfg.cred != NULL ? id_allowed(&c->cfg, id) :
		    id->type == want->type && id->len == want->len &&
		    memcmp(id->data, want->data, id->len) == 0;

	return ip_equal(&c->cfg.local, &sa->local) &&
	       (c->cfg.remote_any ? c->cfg.local.family == sa->remote.family :
		ip_equal(&c->cfg.remote, &sa->remote)) &&
	       same && prop_in(&c->cfg, &sa->prop);
}

static void
conn_by_id(struct ike_ctx *ctx, struct ike_sa *sa, const struct view *v)
{
	const struct ike_pl *idp = ike_find_pl(v, IKE_PL_IDI);
	char err[ERR_LEN];
	struct ike_id id;
	struct conn *c;

	if (sa->initiator || idp == NULL ||
	    ike_id_parse(idp->body, idp->len, &id, err, sizeof(err)) != 0)
		return;
	/*
	 * Without certificates a connection takes exactly its remote-id: its
	 * bucket holds every candidate (newest first, as ctx->conns).  With
	 * some, patterns: the list, in order.
	 */
	c = ctx->n_cred == 0 ? *ike_conn_id_bucket(ctx, id.type, id.data, id.len) : ctx->conns;
	for (; c != NULL; c = ctx->n_cred == 0 ? c->by_id : c->next) {
		if (conn_fits(c, sa, &id)) {
			ike_sa_set_conn(sa, c);
			return;
		}
	}
}

/*
 * The peer's ID and AUTH: 0, -EBADMSG (malformed) or -EACCES, with err; with
 * certificates, *why says which check refused.
 */
static int
auth_verify(const struct ike_sa *sa, const struct view *v, enum ike_pki_fail *why, char *err,
	    size_t elen)
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
	*why = IKE_PKI_NONE;
	if (sa->conn->cfg.cred != NULL)
		return verify_certs_sig(sa, v, &id, &a, why, err, elen);
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

/*
 * INITIAL_CONTACT (RFC 7296 2.4, 3.10.1).  We send it in our IKE_AUTH
 * request when the connection has no other IKE SA: this one is then the
 * only one between the two identities (after a restart, the peer may still
 * hold those of before).  Received, in a request or a response that
 * authenticated, the other established IKE SAs of the same connection with
 * the same peer identity end at once, without a Delete (the peer has none
 * of them to answer it), their CHILD_SAs with them: traffic moves to the new
 * one now, not after a liveness check gives up.  A peer identity kept cut
 * (IKE_IDENT_MAX bytes or more) is never taken as the same.  The
 * connection's no_initial_contact: neither sent nor heeded.
 */
static void
note_peer_id(struct ike_sa *sa, const struct view *v)
{
	const struct ike_pl *idp = ike_find_pl(v, sa->initiator ? IKE_PL_IDR : IKE_PL_IDI);
	char err[ERR_LEN];
	struct ike_id id;

	if (sa->peer_hashed || idp == NULL ||
	    ike_id_parse(idp->body, idp->len, &id, err, sizeof(err)) != 0)
		return;		/* (auth_verify refused it already) */
	sa->peer_id.type = id.type;
	sa->peer_id.len = (uint8_t)(id.len < IKE_IDENT_MAX ? id.len : IKE_IDENT_MAX);
	memcpy(sa->peer_id.data, id.data, sa->peer_id.len);
}

static bool
same_peer(const struct ike_sa *a, const struct ike_sa *b)
{
	const struct ike_conn_cfg *cfg = &a->conn->cfg;

	if (a->conn != b->conn)
		return false;
	if (cfg->cred == NULL && !cfg->remote_any)
		return true;	/* its one remote identity, checked exactly by auth_verify */
	return a->peer_id.type == b->peer_id.type && a->peer_id.len == b->peer_id.len &&
	       a->peer_id.len < IKE_IDENT_MAX &&
	       memcmp(a->peer_id.data, b->peer_id.data, a->peer_id.len) == 0;
}

static void
end_older(struct ike_ctx *ctx, struct ike_sa *sa, struct ike_sa *o)
{
	if (o == sa || o->state < IKE_ST_ESTABLISHED || !same_peer(o, sa))
		return;
	ctx->stats.initial_contact++;
	ike_sa_end(ctx, o, "the peer started again (INITIAL_CONTACT)");
}

/*
 * A tunnel of one remote identity has a few IKE SAs on its list; a remote
 * access connection has every client's, so its own are found by identity
 * (ctx->by_peer), not by a walk of 100 000.
 */
static void
initial_contact(struct ike_ctx *ctx, struct ike_sa *sa, const struct view *v)
{
	const struct ike_conn_cfg *cfg = &sa->conn->cfg;
	struct ike_sa *o, *next;
	struct ike_notify nt;
	unsigned from = 0;

	note_peer_id(sa, v);
	ike_sa_peer_hash(ctx, sa);
	if (cfg->no_initial_contact || !ike_find_notify(v, IKE_N_INITIAL_CONTACT, &from, &nt))
		return;
	if (cfg->cred == NULL && !cfg->remote_any) {
		for (o = sa->conn->sas; o != NULL; o = next) {
			next = o->conn_next;
			end_older(ctx, sa, o);
		}
		return;
	}
	for (o = ike_sa_peer_bucket(ctx, &sa->peer_id); o != NULL; o = next) {
		next = o->by_peer;
		end_older(ctx, sa, o);
	}
}

/* No other IKE SA of sa's connection, in any state: ours is the only one. */
static bool
alone(const struct ike_sa *sa)
{
	return sa->conn->sas == sa && sa->conn_next == NULL;
}

/*
 * Why an IKE SA ends on a refused AUTH, for the owner's log (always shown,
 * unlike ike_log): with certificates, the cause and the certificate
 * (subject, serial) as ike_pki.c wrote them in err; one line.
 */
static const char *
auth_failed(char *out, size_t len, const char *who, enum ike_pki_fail why, const char *err)
{
	if (why == IKE_PKI_NONE)
		snprintf(out, len, "authentication of the %s failed", who);
	else
		snprintf(out, len, "authentication of the %s failed: %s", who, err);
	return out;
}

int
ike_auth_send(struct ike_ctx *ctx, struct ike_sa *sa, uint64_t now)
{
	const struct ike_conn_cfg *cfg = &sa->conn->cfg;
	struct ike_proposal props[IKE_CONN_PROPS_MAX];
	uint8_t inner[MSG_MAX], out[MSG_MAX], spi[4];
	struct ike_ts tsi[MAX_TS], tsr[MAX_TS];
	struct ts_set l, r;
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
	if (!cfg->no_initial_contact && !sa->conn->keep_older && alone(sa))
		ike_put_notify(&in, IKE_N_INITIAL_CONTACT, NULL, 0);
	for (unsigned i = 0; i < cfg->n_esp; i++)
		ike_esp_prop_build(&cfg->esp[i], (uint8_t)(i + 1), sa->offered_spi, false,
				   &props[i]);
	ike_cp_request_put(sa, &in);		/* want_vip: a CFG_REQUEST */
	ike_build_sa(&in, props, cfg->n_esp);
	ike_cfg_ts(cfg, true, &l);
	ike_cfg_ts(cfg, false, &r);
	ike_build_ts(&in, IKE_PL_TSI, tsi, ike_ts_from_set(&l, tsi));
	ike_build_ts(&in, IKE_PL_TSR, tsr, ike_ts_from_set(&r, tsr));
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
	enum ike_pki_fail why = IKE_PKI_NONE;
	char err[ERR_LEN], what[ERR_LEN + 48];
	uint8_t inner[MSG_MAX];
	struct ike_buf in;
	uint16_t nerr;
	int rc;

	conn_by_id(ctx, sa, v);		/* before the owner hears of it */
	sa->owner_knows = true;
	ike_pki_certreq_get(sa, v);
	ike_buf_init(&in, inner, sizeof(inner));
	rc = auth_verify(sa, v, &why, err, sizeof(err));
	if (rc != 0) {
		bool bad = rc == -EBADMSG;

		if (why != IKE_PKI_NONE)
			ctx->stats.pki_fail[why]++;

		ike_drop(ctx, sa, bad ? IKE_REJ_MALFORMED : IKE_REJ_AUTH_FAIL, rc, err);
		ike_put_notify(&in, bad ? IKE_N_INVALID_SYNTAX : IKE_N_AUTHENTICATION_FAILED,
			   NULL, 0);
		ike_respond(ctx, sa, h, &in);
		ike_sa_end(ctx, sa, bad ? "malformed IKE_AUTH request" :
			   auth_failed(what, sizeof(what), "peer", why, err));
		return rc;
	}
	ike_set_state(ctx, sa, IKE_ST_ESTABLISHED);
	initial_contact(ctx, sa, v);	/* before a lease or CHILD_SA: the old ones go first */
	rc = put_id_auth(sa, &in);
	if (rc != 0) {
		ike_sa_end(ctx, sa, "cannot compute AUTH");
		return rc;
	}
	nerr = ike_cp_respond(ctx, sa, v, &in);	/* remote access: a lease first */
	if (nerr == 0)
		nerr = ike_child_accept(ctx, sa, v, &in, now);
	if (nerr != 0)
		ike_put_notify(&in, nerr, NULL, 0);
	rc = ike_respond(ctx, sa, h, &in);
	explicit_bzero(inner, sizeof(inner));
	ike_log(ctx, sa, "IKE SA established (responder)%s", nerr ? ", no CHILD_SA" : "");
	return rc;
}

int
ike_auth_response(struct ike_ctx *ctx, struct ike_sa *sa, const struct view *v, uint64_t now,
		  struct ike_next *nx)
{
	uint16_t nerr = ike_error_notify(v);
	char err[ERR_LEN], why[WHY_LEN], what[ERR_LEN + 48];
	enum ike_pki_fail pf = IKE_PKI_NONE;
	int rc;

	if (ike_find_pl(v, IKE_PL_AUTH) == NULL) {
		ctx->stats.reject[IKE_REJ_PEER_ERROR]++;
		snprintf(why, sizeof(why), "peer: %s (%u) in IKE_AUTH", ike_notify_name(nerr),
			 nerr);
		ike_sa_end(ctx, sa, why);
		return -ECONNREFUSED;
	}
	rc = auth_verify(sa, v, &pf, err, sizeof(err));
	if (rc != 0) {
		if (pf != IKE_PKI_NONE)
			ctx->stats.pki_fail[pf]++;
		ike_drop(ctx, sa, rc == -EBADMSG ? IKE_REJ_MALFORMED : IKE_REJ_AUTH_FAIL, rc, err);
		ike_sa_end(ctx, sa, auth_failed(what, sizeof(what), "responder", pf, err));
		return rc;
	}
	ike_request_done(sa);
	sa->state = IKE_ST_ESTABLISHED;
	initial_contact(ctx, sa, v);
	if (nerr != 0) {
		ctx->stats.reject[IKE_REJ_PEER_ERROR]++;
		ike_why(sa, "peer: %s (%u), no CHILD_SA",
			 ike_notify_name(nerr), nerr);
	} else if ((rc = ike_child_finish(ctx, sa, v, err, sizeof(err), now)) != 0) {
		ike_drop(ctx, sa, IKE_REJ_MALFORMED, rc, err);
		ike_why(sa, "CHILD_SA refused: %s", err);
	}
	/* An IKE SA without its CHILD_SA carries nothing: delete it. */
	if (!KID(sa)->child.up)
		return ike_then(nx, sa, REQ_DEL_IKE);
	ike_log(ctx, sa, "IKE SA established (initiator)");
	return ike_then(nx, sa, REQ_NONE);
}
