/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ike_child.c - CHILD_SAs: the proposal, selectors and KEYMAT of the one
 * IKE_AUTH makes, and CREATE_CHILD_SA rekeying it (RFC 7296 1.3.3, 2.8),
 * make before break, in both roles, with PFS where the ESP proposals have
 * a DH group: a KE payload each way, KEYMAT from g^ir (new) (2.17), and
 * the INVALID_KE_PAYLOAD retry (1.3.3).  An exchange (ike_int.h): a Delete
 * or a request queued meanwhile, after an answer, is the manager's
 * (ike_sa.c), left to it in struct ike_next.
 */
#define _GNU_SOURCE		/* explicit_bzero */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ike_int.h"

/* ---- a new CHILD_SA (IKE_AUTH, CREATE_CHILD_SA) ------------------------- */

/* A CHILD_SA as negotiated, before its keys. */
struct child_new {
	struct ike_prop_esp prop;
	uint32_t spi_in, spi_out;
	struct ts_set tl, tr;
	/* The exchange that made it: its initiator's keys come first (2.17). */
	bool initiator;
	const uint8_t *ni, *nr;
	size_t ni_len, nr_len;
	const uint8_t *gir;		/* g^ir (new) with PFS, else NULL */
	size_t gir_len;
};

/* Key bytes of an ESP cipher (with GCM's and ChaCha20's 4-byte salt, RFC 4106, 7634). */
static size_t
esp_enc_key_len(const struct ike_prop_esp *p)
{
	if (p->encr == IKE_ENCR_CHACHA20_POLY1305)
		return 32 + 4;
	return p->encr_bits / 8u + (p->encr == IKE_ENCR_AES_GCM_16 ? 4 : 0);
}

/* Key bytes of an ESP integrity algorithm: the HMAC's hash length (RFC 2404, 4868). */
static size_t
esp_integ_key_len(uint16_t integ)
{
	return integ == IKE_INTEG_HMAC_SHA1_96 ? 20 : integ != 0 ? 32 : 0;
}

void
ike_child_ts(struct ike_child *c, const struct ts_set *tl, const struct ts_set *tr)
{
	c->ts_local = tl->p[0];
	c->ts_remote = tr->p[0];
	c->n_ts_local_more = tl->n - 1;
	c->n_ts_remote_more = tr->n - 1;
	memcpy(c->ts_local_more, tl->p + 1, (tl->n - 1) * sizeof(tl->p[0]));
	memcpy(c->ts_remote_more, tr->p + 1, (tr->n - 1) * sizeof(tr->p[0]));
}

/* KEYMAT (2.17) into a CHILD_SA, which becomes KID(sa)->child, and the owner installs it. */
static int
child_install(struct ike_ctx *ctx, struct ike_sa *sa, const struct child_new *cn, uint64_t now)
{
	uint8_t km[2 * (IKE_CHILD_ENC_MAX + IKE_CHILD_INTEG_MAX)];
	const struct ike_prop_esp *p = &cn->prop;
	struct ike_child c;
	size_t ek, ik;
	int rc;

	memset(&c, 0, sizeof(c));
	c.encr = p->encr;
	c.encr_bits = p->encr_bits;
	c.integ = p->integ;
	c.dh = cn->gir != NULL ? p->dh : 0;
	c.esn = p->esn;
	ek = c.enc_key_len = esp_enc_key_len(p);
	ik = c.integ_key_len = esp_integ_key_len(p->integ);
	rc = ike_child_keymat(sa->prop.prf, sa->keys.sk_d, sa->keys.prf_len, cn->gir,
			      cn->gir_len, cn->ni,
			      cn->ni_len, cn->nr, cn->nr_len, km, 2 * (ek + ik));
	if (rc == 0) {
		/* KEYMAT: the exchange initiator's outbound keys first, then the responder's. */
		const uint8_t *ei = km, *ai = km + ek, *er = km + ek + ik, *ar = er + ek;

		memcpy(c.enc_out, cn->initiator ? ei : er, ek);
		memcpy(c.enc_in, cn->initiator ? er : ei, ek);
		memcpy(c.integ_out, cn->initiator ? ai : ar, ik);
		memcpy(c.integ_in, cn->initiator ? ar : ai, ik);
		c.spi_in = cn->spi_in;
		c.spi_out = cn->spi_out;
		ike_child_ts(&c, &cn->tl, &cn->tr);
		c.local = sa->local;
		c.remote = sa->remote;
		c.peer_id = sa->has_vip ? &sa->peer_id : NULL;
		c.ike_alg = (struct ike_alg_set){ .encr = sa->prop.encr,
			.encr_bits = sa->prop.encr_bits, .integ = sa->prop.integ,
			.prf = sa->prop.prf, .dh = sa->prop.dh };
		c.udp_encap = sa->encap;
		c.udp_local = sa->encap ? sa->local.port : 0;
		c.udp_remote = sa->encap ? sa->remote.port : 0;
		KID(sa)->child = (struct child){ .up = true, .prop = *p, .spi_in = cn->spi_in,
					    .spi_out = cn->spi_out, .tl = cn->tl, .tr = cn->tr,
					    .up_ms = now };
		ctx->ops.child_up(ctx->opaque, KCFG(sa)->name, &c);
	}
	explicit_bzero(km, sizeof(km));
	explicit_bzero(&c, sizeof(c));
	return rc;
}

/* SA, TSi and TSr of an IKE_AUTH message (the CHILD_SA's). */
struct child_pl {
	struct ike_proposal props[MAX_PROPS];
	unsigned n_props, n_tsi, n_tsr;
	struct ike_ts tsi[MAX_TS], tsr[MAX_TS];
};

static int
child_pl_parse(const struct view *v, uint8_t exchange, bool answer, struct child_pl *cp,
	       char *err, size_t elen)
{
	const struct ike_pl *sa = ike_find_pl(v, IKE_PL_SA), *tsi = ike_find_pl(v, IKE_PL_TSI);
	const struct ike_pl *tsr = ike_find_pl(v, IKE_PL_TSR);
	int rc;

	if (sa == NULL || tsi == NULL || tsr == NULL) {
		snprintf(err, elen, "%s: no %s payload",
			 exchange == IKE_AUTH ? "ike_auth" : "create_child_sa",
			 sa == NULL ? "SA" : tsi == NULL ? "TSi" : "TSr");
		return -EBADMSG;
	}
	cp->n_props = 1;
	rc = answer ? ike_sa_parse_answer(sa->body, sa->len, exchange, cp->props, err, elen) :
		      ike_sa_parse(sa->body, sa->len, exchange, cp->props, MAX_PROPS,
				   &cp->n_props, err, elen);
	if (rc == 0)
		rc = ike_ts_parse(tsi->body, tsi->len, cp->tsi, MAX_TS, &cp->n_tsi, err, elen);
	if (rc == 0)
		rc = ike_ts_parse(tsr->body, tsr->len, cp->tsr, MAX_TS, &cp->n_tsr, err, elen);
	return rc;
}

/* ---- several CHILD_SAs per IKE SA ---------------------------------------- */

static const struct conn *
kid_conn(const struct ike_sa *sa, const struct child_sa *k)
{
	return k->conn != NULL ? k->conn : sa->conn;
}

/* Nothing of a CHILD_SA in it, none asked for: a slot to use again. */
static bool
kid_free(const struct child_sa *k)
{
	return !k->child.up && !k->old.up && !k->dup.up && !k->want_create && !k->creating &&
	       k->create_retry_ms == 0 && k->rk_dh == NULL;
}

int
ike_kid_find(const struct ike_sa *sa, const struct conn *c)
{
	if (c == NULL)
		c = sa->conn;
	for (unsigned i = 0; i < sa->n_kids; i++) {
		const struct child_sa *k = ike_kid(sa, i);

		if (kid_conn(sa, k) == c && (i == 0 || !kid_free(k)))
			return (int)i;
	}
	return -1;
}

int
ike_kid_add(struct ike_sa *sa, struct conn *c)
{
	unsigned i;

	/* kid0 is IKE_AUTH's: the IKE SA's own connection's, or what the
	 * responder picked there; others take the rest */
	if ((c == NULL || c == sa->conn) && kid_free(&sa->kid0) && sa->state == IKE_ST_ESTABLISHED)
		i = 0;
	else
		for (i = 1; i < sa->n_kids; i++)
			if (kid_free(ike_kid(sa, i)))
				break;
	if (i == sa->n_kids) {
		if (i == IKE_KIDS_MAX)
			return -1;
		sa->more[i - 1] = calloc(1, sizeof(struct child_sa));
		if (sa->more[i - 1] == NULL)
			return -1;
		sa->n_kids++;
	}
	*ike_kid(sa, i) = (struct child_sa){ .conn = c == sa->conn ? NULL : c };
	return (int)i;
}

/*
 * Responder: which of the IKE SA's connection and its children a proposed
 * CHILD_SA is for.  Each is narrowed to the proposal (TSi is the peer's
 * side: our remote one); the first that takes the proposal whole (it covers
 * the peer's first selectors, 2.9) wins, else the first that narrows at
 * all, in config order, as strongSwan's select_child_cfg ranks by match.
 * skip_up: not one that has a CHILD_SA in sa already (a new one, not IKE_AUTH's).
 */
/* Connection c's remote prefixes in sa: a remote-access client's lease, else c's. */
static void
remote_set(const struct ike_sa *sa, const struct conn *c, struct ts_set *out)
{
	if (c == sa->conn && sa->has_vip) {
		out->p[0] = sa->vip;
		out->n = 1;
	} else {
		ike_cfg_ts(&c->cfg, false, out);
	}
}

/* Is the first proposed selector of ts (n of them) one of set, whole? */
static bool
first_in(const struct ike_ts *ts, unsigned n, const struct ts_set *set)
{
	struct ike_prefix p;

	if (n == 0 || !ike_ts_to_prefix(&ts[0], &p))
		return false;
	for (unsigned i = 0; i < set->n; i++)
		if (!memcmp(&set->p[i], &p, sizeof(p)))
			return true;
	return false;
}

static struct conn *
select_conn(const struct ike_sa *sa, const struct child_pl *cp, bool skip_up,
	    struct ts_set *tl, struct ts_set *tr)
{
	struct conn *best = NULL;
	bool best_whole = false;

	for (struct conn *c = sa->conn; c != NULL; c = c == sa->conn ? sa->conn->kids : c->sib) {
		struct ts_set ol, orm, l, r;
		bool whole;
		int i = ike_kid_find(sa, c);

		if (skip_up && i >= 0 && ike_kid(sa, (unsigned)i)->child.up)
			continue;
		remote_set(sa, c, &orm);
		ike_cfg_ts(&c->cfg, true, &ol);
		if (!ike_ts_narrow_set(cp->tsi, cp->n_tsi, &orm, &r) ||
		    !ike_ts_narrow_set(cp->tsr, cp->n_tsr, &ol, &l))
			continue;
		whole = first_in(cp->tsi, cp->n_tsi, &r) && first_in(cp->tsr, cp->n_tsr, &l);
		if (best == NULL || (whole && !best_whole)) {
			best = c;
			best_whole = whole;
			*tl = l;
			*tr = r;
		}
		if (best_whole)
			break;
	}
	return best;
}

/* Responder: the CHILD_SA of an IKE_AUTH request; 0, or the error Notify to send. */
uint16_t
ike_child_accept(struct ike_ctx *ctx, struct ike_sa *sa, const struct view *v, struct ike_buf *in,
	     uint64_t now)
{
	const struct ike_conn_cfg *cfg;
	struct ts_set tl, tr;
	struct ike_proposal resp;
	struct ike_prop_esp prop;
	struct ike_ts tsi[MAX_TS], tsr[MAX_TS];
	uint32_t spi_in, spi_out;
	char err[ERR_LEN];
	struct child_pl cp;
	uint8_t num, spi[4];
	struct conn *c;

	if (child_pl_parse(v, IKE_AUTH, false, &cp, err, sizeof(err)) != 0)
		return ike_drop(ctx, sa, IKE_REJ_MALFORMED, 0, err), IKE_N_INVALID_SYNTAX;
	/* TSi is the initiator's side: our remote one; the connection's or a child's. */
	c = select_conn(sa, &cp, false, &tl, &tr);
	if (c == NULL)
		return ike_drop(ctx, sa, IKE_REJ_TS_UNACCEPTABLE, 0, "tsi/tsr: nothing within "
			      "the configured selectors"), IKE_N_TS_UNACCEPTABLE;
	sa->ck = 0;
	sa->kid0.conn = c == sa->conn ? NULL : c;
	cfg = KCFG(sa);
	if (ike_pick_esp(cfg, cp.props, cp.n_props, false, 0, &prop, &spi_out, &num) != 0)
		return ike_drop(ctx, sa, IKE_REJ_NO_PROPOSAL, 0, "sa: no ESP proposal acceptable"),
		       IKE_N_NO_PROPOSAL_CHOSEN;
	if (ike_random_nonzero(spi, sizeof(spi)) != 0 || spi_out == 0)
		return IKE_N_NO_PROPOSAL_CHOSEN;
	spi_in = get32(spi);
	if (child_install(ctx, sa, &(struct child_new){ prop, spi_in, spi_out, tl, tr, false,
			  sa->ni, sa->nr, sa->ni_len, sa->nr_len }, now) != 0)
		return IKE_N_NO_PROPOSAL_CHOSEN;
	ike_esp_chosen_build(&prop, num, spi_in, &resp);
	ike_build_sa(in, &resp, 1);
	ike_build_ts(in, IKE_PL_TSI, tsi, ike_ts_from_set(&tr, tsi));
	ike_build_ts(in, IKE_PL_TSR, tsr, ike_ts_from_set(&tl, tsr));
	return 0;
}

/*
 * Initiator of an exchange that makes a CHILD_SA: the responder's must be
 * one we proposed, within our selectors; into cn (prop, spi_out, tl, tr).
 */
static int
child_answer(const struct ike_sa *sa, const struct view *v, uint8_t exchange,
	     struct child_new *cn, char *err, size_t elen)
{
	const struct ike_conn_cfg *cfg = KCFG(sa);
	struct ts_set ours_l, ours_r;
	struct child_pl cp;
	unsigned num;
	int rc;

	rc = child_pl_parse(v, exchange, true, &cp, err, elen);
	if (rc != 0)
		return rc;
	num = cp.props[0].num;
	if (cp.n_props != 1 || num < 1 || num > cfg->n_esp)
		return snprintf(err, elen, "sa: %u proposals, the first numbered %u; expected "
				"one of our %u", cp.n_props, num, cfg->n_esp), -EBADMSG;
	cn->spi_out = get32(cp.props[0].spi);
	if (!ike_prop_check_esp(&cfg->esp[num - 1], &cp.props[0], exchange == IKE_CREATE_CHILD_SA,
				&cn->prop) ||
	    cn->spi_out == 0)
		return snprintf(err, elen, "sa.proposal[1]: not one of each kind from our ESP "
				"proposal %u, or SPI 0", num), -EBADMSG;
	cn->tl.n = cp.n_tsi;
	cn->tr.n = cp.n_tsr;
	for (unsigned i = 0; i < cp.n_tsi + cp.n_tsr; i++)
		if (!ike_ts_to_prefix(i < cp.n_tsi ? &cp.tsi[i] : &cp.tsr[i - cp.n_tsi],
				      i < cp.n_tsi ? &cn->tl.p[i] : &cn->tr.p[i - cp.n_tsi]))
			cn->tl.n = 0;
	ike_cfg_ts(cfg, true, &ours_l);
	ike_cfg_ts(cfg, false, &ours_r);
	/* narrowed by the responder, never widened (RFC 7296 2.9) */
	if (!ike_set_within(&cn->tl, &ours_l) || !ike_set_within(&cn->tr, &ours_r))
		return snprintf(err, elen, "tsi/tsr: not prefixes each within ours"), -EBADMSG;
	return 0;
}

/* Initiator: the CHILD_SA of the IKE_AUTH response. */
int
ike_child_finish(struct ike_ctx *ctx, struct ike_sa *sa, const struct view *v, char *err,
	     size_t elen, uint64_t now)
{
	struct child_new cn = { .spi_in = sa->offered_spi, .initiator = true, .ni = sa->ni,
				.nr = sa->nr, .ni_len = sa->ni_len, .nr_len = sa->nr_len };
	int rc = child_answer(sa, v, IKE_AUTH, &cn, err, elen);

	if (rc == 0)
		rc = child_install(ctx, sa, &cn, now);
	return rc;
}

/* ---- CREATE_CHILD_SA: rekeying the CHILD_SA (1.3.3, 2.8) ---------------- */

static uint32_t
grace_ms(const struct ike_conn_cfg *cfg)
{
	return cfg->rekey_grace_ms != 0 ? cfg->rekey_grace_ms : REKEY_GRACE_MS;
}

/*
 * Make before break: the new CHILD_SA up (the owner installs it and moves
 * the outbound policy to it) while the one it replaces stays installed as
 * KID(sa)->old, until the rekey's initiator deletes it after the grace period.
 */
static int
rekey_switch(struct ike_ctx *ctx, struct ike_sa *sa, const struct child_new *cn, uint64_t now,
	     bool ours)
{
	struct child prev = KID(sa)->child;
	int rc = child_install(ctx, sa, cn, now);

	if (rc != 0)
		return rc;
	/* none: rekeys wait for the last one's Delete */
	ike_child_down(ctx, sa, &KID(sa)->old);
	KID(sa)->old = prev;
	KID(sa)->old_del_ms = ours && prev.up ? now + grace_ms(KCFG(sa)) : 0;
	KID(sa)->child_rekeys++;
	KID(sa)->want_rekey = false;
	KID(sa)->rk_min_len = 0;
	ike_log(ctx, sa, "CHILD_SA rekeyed (%s): SPIs %08x/%08x", ours ? "ours" : "the peer's",
	      cn->spi_in, cn->spi_out);
	return 0;
}

/* ---- crossing rekeys (2.8.1) --------------------------------------------- */

/* Nonces compared as strongSwan does: bytes up to the shorter, then the length. */
int
ike_nonce_cmp(const uint8_t *a, size_t alen, const uint8_t *b, size_t blen)
{
	int c = memcmp(a, b, alen < blen ? alen : blen);

	return c != 0 ? c : (alen > blen) - (alen < blen);
}

/* The lower of the nonces of the exchange that made cn, and its length. */
static const uint8_t *
lower_nonce(const struct child_new *cn, size_t *len)
{
	bool i_low = ike_nonce_cmp(cn->ni, cn->ni_len, cn->nr, cn->nr_len) < 0;

	*len = i_low ? cn->ni_len : cn->nr_len;
	return i_low ? cn->ni : cn->nr;
}

/* Kept until a crossing rekey of the peer's comes, or cannot come any more. */
static void
keep_min(struct ike_sa *sa, const struct child_new *cn)
{
	const uint8_t *m = lower_nonce(cn, &KID(sa)->rk_min_len);

	memcpy(KID(sa)->rk_min, m, KID(sa)->rk_min_len);
}

/*
 * Both crossing rekeys made: ours (its exchange's lowest nonce ours_min) and
 * the peer's.  The one whose exchange has the lower nonce is redundant and
 * its initiator deletes it; the winner's initiator deletes the old CHILD_SA
 * (strongSwan's child_rekey.c does the same).  Until then both new pairs are
 * installed, neither carries traffic: the policy moves at the old one's Delete.
 */
static void
cross_resolve(struct ike_ctx *ctx, struct ike_sa *sa, const struct child *ours,
	      const struct child *theirs, const uint8_t *ours_min, size_t ours_min_len,
	      const uint8_t *theirs_min, size_t theirs_min_len, uint64_t now)
{
	bool lost = ike_nonce_cmp(ours_min, ours_min_len, theirs_min, theirs_min_len) < 0;

	sa->rekey_collisions++;
	KID(sa)->child = lost ? *theirs : *ours;
	KID(sa)->dup = lost ? *ours : *theirs;
	KID(sa)->dup_ours = lost;
	KID(sa)->old_del_ms = !lost && KID(sa)->old.up ? now + grace_ms(KCFG(sa)) : 0;
	KID(sa)->want_del_dup = lost;
	KID(sa)->rk_min_len = 0;
	KID(sa)->cross_pending = false;
	explicit_bzero(KID(sa)->rk_min, sizeof(KID(sa)->rk_min));
	if (lost)
		sa->rekey_lost++;
	else
		sa->rekey_won++;
	ike_log(ctx, sa, "crossing CHILD_SA rekeys: %s (lowest nonce in %s exchange); "
	      "keeping %08x/%08x, %s %08x/%08x", lost ? "lost" : "won", lost ? "our" : "the peer's",
	      KID(sa)->child.spi_in, KID(sa)->child.spi_out, lost ? "deleting" : "the peer deletes",
	      KID(sa)->dup.spi_in, KID(sa)->dup.spi_out);
}

/*
 * The PFS group of our rekey: the one the peer asked for (INVALID_KE_PAYLOAD),
 * else the one in use, else the first of our ESP proposals'; 0: no PFS.
 */
static uint16_t
rekey_group(const struct ike_sa *sa)
{
	const struct ike_conn_cfg *cfg = KCFG(sa);

	if (KID(sa)->rk_group != 0)
		return KID(sa)->rk_group;
	if (KID(sa)->child.prop.dh != 0 &&
	    ike_cfg_has_group(cfg->esp, cfg->n_esp, KID(sa)->child.prop.dh))
		return KID(sa)->child.prop.dh;
	for (unsigned i = 0; i < cfg->n_esp; i++)
		if (cfg->esp[i].n_dh != 0)
			return cfg->esp[i].dh[0];
	return 0;
}

/* Our rekey's DH key goes, answered or not. */
static void
rk_dh_end(struct ike_sa *sa)
{
	ike_dh_free(KID(sa)->rk_dh);
	KID(sa)->rk_dh = NULL;
	KID(sa)->rk_group = 0;
	KID(sa)->rk_ke_tries = 0;
}

/* A fresh DH key for our rekey into pub (PFS); 0 without PFS (*publen 0). */
static int
rekey_ke(struct ike_sa *sa, uint8_t *pub, size_t *publen)
{
	uint16_t g = rekey_group(sa);

	ike_dh_free(KID(sa)->rk_dh);
	KID(sa)->rk_dh = NULL;
	KID(sa)->rk_group = g;
	if (g == 0) {
		*publen = 0;
		return 0;
	}
	return ike_dh_new(g, &KID(sa)->rk_dh, pub, publen);
}

/* Our request: N(REKEY_SA) naming the old SA by our inbound SPI, SA, Ni, [KEi,] TSi, TSr. */
int
ike_child_rekey_send(struct ike_ctx *ctx, struct ike_sa *sa, uint64_t now)
{
	const struct ike_conn_cfg *cfg = KCFG(sa);
	struct ike_proposal props[IKE_CONN_PROPS_MAX];
	uint8_t inner[MSG_MAX], out[MSG_MAX], spi[4], old[4], pub[IKE_DH_MAX_PUB];
	size_t publen = sizeof(pub);
	struct ike_notify nt = { .proto = IKE_PROTO_ESP, .spi_len = 4,
				 .type = IKE_N_REKEY_SA, .spi = old };
	struct ike_ts tsi[MAX_TS], tsr[MAX_TS];
	struct ike_buf in;
	struct ike_hdr h;
	size_t len;
	int rc;

	if (sa->req_kind != REQ_NONE) {
		KID(sa)->want_rekey = true;	/* window of one */
		return 0;
	}
	rc = ike_random_nonzero(spi, sizeof(spi));
	if (rc == 0)
		rc = ike_random(KID(sa)->rk_nonce, sizeof(KID(sa)->rk_nonce));
	if (rc == 0)
		rc = rekey_ke(sa, pub, &publen);
	if (rc != 0)
		return rc;
	KID(sa)->rk_spi = get32(spi);
	put32(old, KID(sa)->child.spi_in);
	ike_buf_init(&in, inner, sizeof(inner));
	ike_build_notify(&in, &nt);
	for (unsigned i = 0; i < cfg->n_esp; i++)
		ike_esp_prop_build(&cfg->esp[i], (uint8_t)(i + 1), KID(sa)->rk_spi, true,
				   &props[i]);
	ike_build_sa(&in, props, cfg->n_esp);
	ike_build_nonce(&in, KID(sa)->rk_nonce, sizeof(KID(sa)->rk_nonce));
	if (publen != 0)
		ike_build_ke(&in, KID(sa)->rk_group, pub, publen);
	ike_build_ts(&in, IKE_PL_TSI, tsi, ike_ts_from_set(&KID(sa)->child.tl, tsi));
	ike_build_ts(&in, IKE_PL_TSR, tsr, ike_ts_from_set(&KID(sa)->child.tr, tsr));
	ike_hdr_for(sa, &h, IKE_CREATE_CHILD_SA, false, sa->next_req_id);
	rc = ike_seal_msg(sa, &h, &in, out, sizeof(out), &len);
	explicit_bzero(inner, sizeof(inner));
	if (rc == 0)
		rc = ike_request_start(ctx, sa, REQ_REKEY, h.msg_id, out, len, now);
	return rc;
}

/* ---- CREATE_CHILD_SA for another CHILD_SA (1.3.1) ----------------------- */

static bool rekey_ke_retry(struct ike_ctx *ctx, struct ike_sa *sa, const struct view *v,
			   uint64_t now);
static int rekey_answer_ke(const struct ike_sa *sa, const struct view *v, struct child_new *cn,
			   uint8_t *gir, size_t *gir_len, char *err, size_t elen);

/*
 * Our request for KID(sa) (a child connection's, or the IKE SA's own again):
 * SA (its ESP proposals, with their DH groups), Ni, [KEi,] TSi, TSr.  With
 * a request out, or the IKE SA not up yet, it waits (want_create).
 */
int
ike_child_create_send(struct ike_ctx *ctx, struct ike_sa *sa, uint64_t now)
{
	const struct ike_conn_cfg *cfg = KCFG(sa);
	struct ike_proposal props[IKE_CONN_PROPS_MAX];
	uint8_t inner[MSG_MAX], out[MSG_MAX], spi[4], pub[IKE_DH_MAX_PUB];
	struct child_sa *k = KID(sa);
	size_t publen = sizeof(pub), len;
	struct ike_ts tsi[MAX_TS], tsr[MAX_TS];
	struct ts_set l, r;
	struct ike_buf in;
	struct ike_hdr h;
	int rc;

	if (sa->req_kind != REQ_NONE || sa->state != IKE_ST_ESTABLISHED) {
		k->want_create = true;	/* window of one; or after IKE_AUTH */
		return 0;
	}
	k->want_create = false;
	k->create_retry_ms = 0;
	k->creating = true;		/* the slot is taken until the answer */
	rc = ike_random_nonzero(spi, sizeof(spi));
	if (rc == 0)
		rc = ike_random(k->rk_nonce, sizeof(k->rk_nonce));
	if (rc == 0)
		rc = rekey_ke(sa, pub, &publen);
	if (rc != 0)
		return rc;
	k->rk_spi = get32(spi);
	ike_buf_init(&in, inner, sizeof(inner));
	for (unsigned i = 0; i < cfg->n_esp; i++)
		ike_esp_prop_build(&cfg->esp[i], (uint8_t)(i + 1), k->rk_spi, true, &props[i]);
	ike_build_sa(&in, props, cfg->n_esp);
	ike_build_nonce(&in, k->rk_nonce, sizeof(k->rk_nonce));
	if (publen != 0)
		ike_build_ke(&in, k->rk_group, pub, publen);
	ike_cfg_ts(cfg, true, &l);
	ike_cfg_ts(cfg, false, &r);
	ike_build_ts(&in, IKE_PL_TSI, tsi, ike_ts_from_set(&l, tsi));
	ike_build_ts(&in, IKE_PL_TSR, tsr, ike_ts_from_set(&r, tsr));
	ike_hdr_for(sa, &h, IKE_CREATE_CHILD_SA, false, sa->next_req_id);
	rc = ike_seal_msg(sa, &h, &in, out, sizeof(out), &len);
	explicit_bzero(inner, sizeof(inner));
	if (rc == 0)
		rc = ike_request_start(ctx, sa, REQ_CREATE, h.msg_id, out, len, now);
	if (rc == 0)
		ike_log(ctx, sa, "CHILD_SA %s: CREATE_CHILD_SA sent", cfg->name);
	return rc;
}

/*
 * A CREATE_CHILD_SA answer of ours (a new CHILD_SA or a rekey) read into cn:
 * its Nonce (cn->nr), SA and TS, and with PFS its KE into gir; 0 or an error
 * in err (ERR_LEN bytes).
 */
static int
create_answer(struct ike_sa *sa, const struct view *v, const struct ike_pl *no,
	      struct child_new *cn, uint8_t *gir, size_t *gir_len, char *err)
{
	int rc = no == NULL ? (snprintf(err, ERR_LEN, "create_child_sa: no Nonce payload"),
			       -EBADMSG) : ike_nonce_parse(no->body, no->len, err, ERR_LEN);

	if (rc == 0)
		rc = child_answer(sa, v, IKE_CREATE_CHILD_SA, cn, err, ERR_LEN);
	if (rc == 0)
		rc = rekey_answer_ke(sa, v, cn, gir, gir_len, err, ERR_LEN);
	if (rc == 0) {
		cn->nr = no->body;
		cn->nr_len = no->len;
	}
	return rc;
}

/*
 * The answer to our CREATE_CHILD_SA.  Refused: asked again later (a wrong
 * PFS group at once, with the one the peer names).  An answer we cannot use
 * (selectors not within ours, RFC 7296 2.9; not a proposal of ours): the
 * CHILD_SA the peer made is deleted again, named by our SPI.
 */
int
ike_child_create_response(struct ike_ctx *ctx, struct ike_sa *sa, const struct view *v,
			  uint64_t now, struct ike_next *nx)
{
	struct child_sa *k = KID(sa);
	struct child_new cn = { .spi_in = k->rk_spi, .initiator = true, .ni = k->rk_nonce,
				.ni_len = sizeof(k->rk_nonce) };
	const struct ike_pl *no = ike_find_pl(v, IKE_PL_NONCE);
	uint16_t nerr = ike_error_notify(v);
	uint8_t gir[IKE_DH_MAX_SECRET];
	size_t gir_len = sizeof(gir);
	char err[ERR_LEN];
	bool del = false;
	int rc = 0;

	ike_request_done(sa);
	if (!k->creating)	/* its connection went meanwhile (a reload): nothing to make */
		return ike_then(nx, sa, REQ_NONE);
	k->creating = false;
	if (nerr == IKE_N_INVALID_KE_PAYLOAD && rekey_ke_retry(ctx, sa, v, now))
		return 0;
	if (nerr != 0) {
		ctx->stats.reject[IKE_REJ_PEER_ERROR]++;
		ike_log(ctx, sa, "CHILD_SA %s refused: %s (%u)", KCFG(sa)->name,
			ike_notify_name(nerr), nerr);
		k->create_retry_ms = ike_rekey_retry_at(now);
	} else {
		rc = create_answer(sa, v, no, &cn, gir, &gir_len, err);
		if (rc == 0)
			rc = child_install(ctx, sa, &cn, now);
		if (rc != 0) {
			ike_drop(ctx, sa, IKE_REJ_MALFORMED, rc, err);
			k->create_retry_ms = ike_rekey_retry_at(now);
			/* the peer's CHILD_SA goes: our Delete names it by our SPI */
			k->child = (struct child){ .spi_in = k->rk_spi };
			del = true;
		} else {
			ike_log(ctx, sa, "CHILD_SA %s made: SPIs %08x/%08x", KCFG(sa)->name,
				cn.spi_in, cn.spi_out);
		}
	}
	explicit_bzero(gir, sizeof(gir));
	rk_dh_end(sa);
	explicit_bzero(k->rk_nonce, sizeof(k->rk_nonce));
	return ike_then(nx, sa, del ? REQ_DEL_CHILD : REQ_NONE);
}

/*
 * The answer to our rekey.  Made: the new CHILD_SA up (the owner moves its
 * traffic there), the old one kept for the grace period, then our Delete
 * (ike_tick).  Refused: the old one stays, a lifetime rekey is tried again
 * later.  An answer we cannot use leaves the peer with a CHILD_SA we do not
 * have: the IKE SA is deleted, as when IKE_AUTH's is refused.
 */
/*
 * The peer wants another PFS group (1.3.3): the same rekey again with a KE
 * of it, if it is one of ours and not the one just refused; a few times.
 */
static bool
rekey_ke_retry(struct ike_ctx *ctx, struct ike_sa *sa, const struct view *v, uint64_t now)
{
	const struct ike_conn_cfg *cfg = KCFG(sa);
	struct ike_notify nt;
	unsigned from = 0;
	uint16_t g;

	if (!ike_find_notify(v, IKE_N_INVALID_KE_PAYLOAD, &from, &nt) || nt.data_len != 2)
		return false;
	g = (uint16_t)(nt.data[0] << 8 | nt.data[1]);
	if (!ike_cfg_has_group(cfg->esp, cfg->n_esp, g) || g == KID(sa)->rk_group ||
	    ++KID(sa)->rk_ke_tries > INIT_RETRIES)
		return false;
	ctx->stats.reject[IKE_REJ_INVALID_KE]++;
	ike_log(ctx, sa, "CHILD_SA %s: the peer wants DH group %u",
		KID(sa)->child.up ? "rekey" : "creation", g);
	KID(sa)->rk_group = g;
	explicit_bzero(KID(sa)->rk_nonce, sizeof(KID(sa)->rk_nonce));
	return (KID(sa)->child.up ? ike_child_rekey_send(ctx, sa, now) :
		ike_child_create_send(ctx, sa, now)) == 0;
}

/* g^ir (new) of our rekey's answer, if the chosen proposal has a group (PFS). */
static int
rekey_answer_ke(const struct ike_sa *sa, const struct view *v, struct child_new *cn,
		uint8_t *gir, size_t *gir_len, char *err, size_t elen)
{
	const struct ike_pl *kp = ike_find_pl(v, IKE_PL_KE);
	struct ike_ke ke;

	if (cn->prop.dh == 0)
		return 0;	/* a proposal without PFS taken: no KEr (our KEi ignored) */
	if (KID(sa)->rk_dh == NULL)
		return snprintf(err, elen, "sa: a PFS group we sent no KE of"), -EBADMSG;
	if (kp == NULL || ike_ke_parse(kp->body, kp->len, &ke, err, elen) != 0 ||
	    ke.group != cn->prop.dh || ke.group != KID(sa)->rk_group)
		return snprintf(err, elen, "ke: missing, or not of group %u", KID(sa)->rk_group),
		       -EBADMSG;
	if (ike_dh_derive(KID(sa)->rk_dh, ke.data, ke.len, gir, gir_len) != 0)
		return snprintf(err, elen, "ke.data: %zu bytes, not a public value of group "
				"%u", ke.len, ke.group), -EBADMSG;
	cn->gir = gir;
	cn->gir_len = *gir_len;
	return 0;
}

/*
 * Our rekey answered after we answered the peer's crossing one (which is
 * KID(sa)->child now, the old CHILD_SA in KID(sa)->old): ours installed, then resolved.
 */
static int
rekey_cross_ours(struct ike_ctx *ctx, struct ike_sa *sa, const struct child_new *cn,
		 uint64_t now)
{
	struct child theirs = KID(sa)->child, ours;
	const uint8_t *m;
	size_t mlen;
	int rc = child_install(ctx, sa, cn, now);

	if (rc != 0) {
		KID(sa)->child = theirs;
		return rc;
	}
	KID(sa)->child_rekeys++;
	ours = KID(sa)->child;
	m = lower_nonce(cn, &mlen);
	cross_resolve(ctx, sa, &ours, &theirs, m, mlen, KID(sa)->rk_min, KID(sa)->rk_min_len, now);
	return 0;
}

int
ike_child_rekey_response(struct ike_ctx *ctx, struct ike_sa *sa, const struct view *v, uint64_t now,
			 struct ike_next *nx)
{
	struct child_new cn = { .spi_in = KID(sa)->rk_spi, .initiator = true,
				.ni = KID(sa)->rk_nonce, .ni_len = sizeof(KID(sa)->rk_nonce) };
	const struct ike_pl *no = ike_find_pl(v, IKE_PL_NONCE);
	uint16_t nerr = ike_error_notify(v);
	uint8_t gir[IKE_DH_MAX_SECRET];
	size_t gir_len = sizeof(gir);
	char err[ERR_LEN];
	int rc;

	ike_request_done(sa);
	if (KID(sa)->rk_spi == 0)	/* its connection went meanwhile: slot zeroed */
		return ike_then(nx, sa, REQ_NONE);
	if (nerr == IKE_N_INVALID_KE_PAYLOAD && rekey_ke_retry(ctx, sa, v, now))
		return 0;
	if (nerr != 0) {
		ctx->stats.reject[IKE_REJ_PEER_ERROR]++;
		ike_log(ctx, sa, "CHILD_SA rekey refused: %s (%u)", ike_notify_name(nerr), nerr);
		KID(sa)->cross_pending = false;	/* the peer's crossing one stands alone */
		KID(sa)->rk_min_len = 0;
		KID(sa)->rekey_retry_ms = ike_rekey_retry_at(now);
		rc = 0;
	} else {
		rc = create_answer(sa, v, no, &cn, gir, &gir_len, err);
		if (rc != 0) {
			ike_drop(ctx, sa, IKE_REJ_MALFORMED, rc, err);
			ike_why(sa, "CHILD_SA rekey answer refused");
			explicit_bzero(KID(sa)->rk_nonce, sizeof(KID(sa)->rk_nonce));
			explicit_bzero(gir, sizeof(gir));
			rk_dh_end(sa);
			return ike_then(nx, sa, REQ_DEL_IKE);
		}
		if (KID(sa)->cross_pending) {
			rc = rekey_cross_ours(ctx, sa, &cn, now);
		} else {
			rc = rekey_switch(ctx, sa, &cn, now, true);
			if (rc == 0)
				keep_min(sa, &cn);
		}
	}
	explicit_bzero(gir, sizeof(gir));
	rk_dh_end(sa);
	explicit_bzero(KID(sa)->rk_nonce, sizeof(KID(sa)->rk_nonce));
	return rc == 0 ? ike_then(nx, sa, REQ_NONE) : rc;
}

/* A rekey of the peer's that crosses ours (2.8.1): which of ours it meets. */
enum cross { CROSS_NONE, CROSS_IN_FLIGHT, CROSS_ANSWERED };

/*
 * Whether the peer's rekey names our CHILD_SA and may go ahead: 0, or the
 * error Notify; *cross says whether it crosses a rekey of ours, in flight
 * (it names KID(sa)->child) or answered (it names the CHILD_SA ours replaced,
 * which we have not deleted yet): both are made, then resolved.
 */
static uint16_t
rekey_admit(struct ike_ctx *ctx, struct ike_sa *sa, const struct view *v, enum cross *cross)
{
	struct ike_notify nt;
	unsigned from = 0;
	uint32_t spi;
	bool mine;

	*cross = CROSS_NONE;
	if (!ike_find_notify(v, IKE_N_REKEY_SA, &from, &nt))
		return IKE_N_NO_ADDITIONAL_SAS;		/* not a rekey: the caller's */
	/* The peer names it by its inbound SPI, our outbound one: which of ours. */
	spi = nt.spi_len == 4 ? get32(nt.spi) : 0;
	sa->ck = 0;
	for (unsigned i = 0; i < sa->n_kids && spi != 0; i++) {
		const struct child_sa *k = ike_kid(sa, i);

		if ((k->child.up && k->child.spi_out == spi) ||
		    (k->old.up && k->old.spi_out == spi))
			sa->ck = i;
	}
	if (KID(sa)->old.up && KID(sa)->old_del_ms != 0 && KID(sa)->rk_min_len != 0 &&
	    !KID(sa)->dup.up &&
	    spi == KID(sa)->old.spi_out && sa->state == IKE_ST_ESTABLISHED &&
	    !(sa->req_kind == REQ_DEL_OLD && sa->req_kid == sa->ck))
		*cross = CROSS_ANSWERED;
	else if (nt.proto != IKE_PROTO_ESP || nt.spi_len != 4 || !KID(sa)->child.up ||
		 spi != KID(sa)->child.spi_out)
		return ike_drop(ctx, sa, IKE_REJ_BAD_SPI, 0, "notify.rekey_sa.spi: no such "
			      "CHILD_SA"), IKE_N_CHILD_SA_NOT_FOUND;
	else if (sa->req_kind == REQ_REKEY && sa->req_kid == sa->ck && !KID(sa)->old.up &&
		 !KID(sa)->dup.up)
		*cross = CROSS_IN_FLIGHT;
	if (*cross != CROSS_NONE && nt.proto == IKE_PROTO_ESP && !KID(sa)->want_del_child &&
	    !sa->want_del_ike)
		return 0;
	/*
	 * A rekey or Delete of ours of the IKE SA (it would move the CHILD_SA
	 * under us) or of the CHILD_SA, or the previous rekey's old CHILD_SA
	 * not deleted yet: refused, the peer tries again later.
	 */
	mine = sa->req_kid == sa->ck;	/* another CHILD_SA's rekey or Delete: not this */

	if (sa->state != IKE_ST_ESTABLISHED || (sa->req_kind == REQ_REKEY && mine) ||
	    sa->req_kind == REQ_IKE_REKEY || (sa->req_kind == REQ_DEL_CHILD && mine) ||
	    KID(sa)->want_del_child || sa->want_del_ike ||
	    KID(sa)->old.up || KID(sa)->dup.up) {
		ike_log(ctx, sa, "CHILD_SA rekey refused: %s", KID(sa)->old.up ? "the last one's "
		      "old CHILD_SA is still there" : "a rekey or delete of ours is under way");
		return IKE_N_TEMPORARY_FAILURE;
	}
	return 0;
}

/*
 * Responder: the peer's rekey made (cn).  Alone, it replaces KID(sa)->child
 * (make before break); crossing ours, both stay until resolved: now if ours
 * was answered, else when it is (the peer's is KID(sa)->child meanwhile).
 */
static int
rekey_peer(struct ike_ctx *ctx, struct ike_sa *sa, const struct child_new *cn, enum cross cross,
	   uint64_t now)
{
	struct child ours = KID(sa)->child, theirs;
	uint8_t mine[IKE_NONCE_MAX];
	size_t mlen = KID(sa)->rk_min_len;
	const uint8_t *m;
	int rc;

	if (cross == CROSS_NONE || cross == CROSS_IN_FLIGHT) {
		rc = rekey_switch(ctx, sa, cn, now, false);
		if (rc == 0 && cross == CROSS_IN_FLIGHT) {
			keep_min(sa, cn);
			KID(sa)->cross_pending = true;
		}
		return rc;
	}
	memcpy(mine, KID(sa)->rk_min, mlen);
	rc = child_install(ctx, sa, cn, now);
	if (rc != 0) {
		KID(sa)->child = ours;
		return rc;
	}
	KID(sa)->child_rekeys++;
	theirs = KID(sa)->child;
	m = lower_nonce(cn, &KID(sa)->rk_min_len);
	memcpy(KID(sa)->rk_min, m, KID(sa)->rk_min_len);
	cross_resolve(ctx, sa, &ours, &theirs, mine, mlen, KID(sa)->rk_min, KID(sa)->rk_min_len,
		      now);
	return 0;
}

/*
 * Responder, PFS: the peer's KE must be of the chosen proposal's group
 * (else INVALID_KE_PAYLOAD naming it, *want); our KEr into pub and g^ir
 * (new) into gir.  0 without a group; or the error Notify.
 */
static uint16_t
rekey_pfs(struct ike_ctx *ctx, struct ike_sa *sa, const struct ike_ke *ke, uint16_t group,
	  uint16_t *want, uint8_t *pub, size_t *publen, uint8_t *gir, size_t *gir_len)
{
	struct ike_dh *dh = NULL;
	uint16_t nerr = 0;

	*publen = 0;
	*gir_len = 0;
	if (group == 0)
		return 0;
	if (ke->len == 0 || ke->group != group) {
		*want = group;
		return ike_drop(ctx, sa, IKE_REJ_INVALID_KE, 0, "ke.group: not the chosen "
			      "proposal's PFS group"), IKE_N_INVALID_KE_PAYLOAD;
	}
	*publen = IKE_DH_MAX_PUB;
	*gir_len = IKE_DH_MAX_SECRET;
	if (ike_dh_new(group, &dh, pub, publen) != 0)
		nerr = IKE_N_TEMPORARY_FAILURE;
	else if (ike_dh_derive(dh, ke->data, ke->len, gir, gir_len) != 0)
		nerr = (uint16_t)(ike_drop(ctx, sa, IKE_REJ_MALFORMED, 0, "ke.data: not a public "
				  "value of the group"), IKE_N_INVALID_SYNTAX);
	ike_dh_free(dh);
	return nerr;
}

/* The KE payload of a CREATE_CHILD_SA request, if any (ke->len 0 if none). */
static int
request_ke(const struct view *v, struct ike_ke *ke, char *err, size_t elen)
{
	const struct ike_pl *kp = ike_find_pl(v, IKE_PL_KE);

	memset(ke, 0, sizeof(*ke));
	return kp == NULL ? 0 : ike_ke_parse(kp->body, kp->len, ke, err, elen);
}

/* Responder: the answer's SA (chosen proposal num), Nr, [KEr,] TSi, TSr of cn. */
static void
answer_build(struct ike_buf *in, const struct child_new *cn, uint8_t num, const uint8_t *nr,
	     size_t nr_len, const uint8_t *pub, size_t publen)
{
	struct ike_proposal resp;
	struct ike_ts tsi[MAX_TS], tsr[MAX_TS];

	ike_esp_chosen_build(&cn->prop, num, cn->spi_in, &resp);
	ike_build_sa(in, &resp, 1);
	ike_build_nonce(in, nr, nr_len);
	if (publen != 0)
		ike_build_ke(in, cn->prop.dh, pub, publen);
	ike_build_ts(in, IKE_PL_TSI, tsi, ike_ts_from_set(&cn->tr, tsi));
	ike_build_ts(in, IKE_PL_TSR, tsr, ike_ts_from_set(&cn->tl, tsr));
}

/* Responder of a rekey: the new CHILD_SA up and its payloads into in; 0, or the error. */
static uint16_t
rekey_accept(struct ike_ctx *ctx, struct ike_sa *sa, const struct view *v, struct ike_buf *in,
	     uint16_t *want, uint64_t now)
{
	const struct ike_pl *no = ike_find_pl(v, IKE_PL_NONCE);
	const struct ike_conn_cfg *cfg;
	struct ts_set ours_l, ours_r;
	struct child_new cn = { .initiator = false };
	uint8_t num, spi[4], nr[NONCE_LEN], pub[IKE_DH_MAX_PUB], gir[IKE_DH_MAX_SECRET];
	size_t publen, gir_len;
	struct ike_prop_esp prop;
	struct ike_ke ke;
	char err[ERR_LEN];
	struct child_pl cp;
	enum cross cross;
	uint16_t nerr = rekey_admit(ctx, sa, v, &cross);

	if (nerr != 0)
		return nerr;
	cfg = KCFG(sa);		/* the CHILD_SA REKEY_SA names (rekey_admit) */
	if (no == NULL || ike_nonce_parse(no->body, no->len, err, sizeof(err)) != 0 ||
	    child_pl_parse(v, IKE_CREATE_CHILD_SA, false, &cp, err, sizeof(err)) != 0 ||
	    request_ke(v, &ke, err, sizeof(err)) != 0)
		return ike_drop(ctx, sa, IKE_REJ_MALFORMED, 0, no ? err : "create_child_sa: no "
			      "Nonce payload"), IKE_N_INVALID_SYNTAX;
	if (ike_pick_esp(cfg, cp.props, cp.n_props, true, ke.group, &prop, &cn.spi_out,
			 &num) != 0 || cn.spi_out == 0)
		return ike_drop(ctx, sa, IKE_REJ_NO_PROPOSAL, 0, "sa: no ESP proposal acceptable"),
		       IKE_N_NO_PROPOSAL_CHOSEN;
	remote_set(sa, kid_conn(sa, KID(sa)), &ours_r);
	ike_cfg_ts(cfg, true, &ours_l);
	if (!ike_ts_narrow_set(cp.tsi, cp.n_tsi, &ours_r, &cn.tr) ||
	    !ike_ts_narrow_set(cp.tsr, cp.n_tsr, &ours_l, &cn.tl))
		return ike_drop(ctx, sa, IKE_REJ_TS_UNACCEPTABLE, 0, "tsi/tsr: nothing within "
			      "the configured selectors"), IKE_N_TS_UNACCEPTABLE;
	nerr = rekey_pfs(ctx, sa, &ke, prop.dh, want, pub, &publen, gir, &gir_len);
	if (nerr == 0 && (ike_random_nonzero(spi, sizeof(spi)) != 0 ||
			  ike_random(nr, sizeof(nr)) != 0))
		nerr = IKE_N_TEMPORARY_FAILURE;
	if (nerr == 0) {
		cn = (struct child_new){ prop, get32(spi), cn.spi_out, cn.tl, cn.tr, false,
					 no->body, nr, no->len, sizeof(nr),
					 gir_len != 0 ? gir : NULL, gir_len };
		nerr = rekey_peer(ctx, sa, &cn, cross, now) != 0 ? IKE_N_TEMPORARY_FAILURE : 0;
	}
	if (nerr == 0)
		answer_build(in, &cn, num, nr, sizeof(nr), pub, publen);
	explicit_bzero(nr, sizeof(nr));
	explicit_bzero(gir, sizeof(gir));
	return nerr;
}

/*
 * Responder: a CREATE_CHILD_SA without REKEY_SA, another CHILD_SA on this
 * IKE SA: for the connection or child connection its selectors pick
 * (select_conn), with that one's ESP proposals and PFS group.
 */
static uint16_t
create_accept(struct ike_ctx *ctx, struct ike_sa *sa, const struct view *v, struct ike_buf *in,
	      uint16_t *want, uint64_t now)
{
	const struct ike_pl *no = ike_find_pl(v, IKE_PL_NONCE);
	struct child_new cn = { .initiator = false };
	uint8_t num, spi[4], nr[NONCE_LEN], pub[IKE_DH_MAX_PUB], gir[IKE_DH_MAX_SECRET];
	size_t publen = 0, gir_len = 0;
	struct ike_prop_esp prop;
	struct ike_ke ke;
	char err[ERR_LEN];
	struct child_pl cp;
	struct conn *c;
	uint16_t nerr;
	int i;

	if (sa->state != IKE_ST_ESTABLISHED || sa->req_kind == REQ_IKE_REKEY || sa->want_del_ike)
		return IKE_N_TEMPORARY_FAILURE;
	if (no == NULL || ike_nonce_parse(no->body, no->len, err, sizeof(err)) != 0 ||
	    child_pl_parse(v, IKE_CREATE_CHILD_SA, false, &cp, err, sizeof(err)) != 0 ||
	    request_ke(v, &ke, err, sizeof(err)) != 0)
		return ike_drop(ctx, sa, IKE_REJ_MALFORMED, 0, no ? err : "create_child_sa: no "
			      "Nonce payload"), IKE_N_INVALID_SYNTAX;
	c = select_conn(sa, &cp, true, &cn.tl, &cn.tr);
	if (c == NULL)
		return ike_drop(ctx, sa, IKE_REJ_TS_UNACCEPTABLE, 0, "tsi/tsr: nothing within "
			      "the selectors of a CHILD_SA not made yet"), IKE_N_TS_UNACCEPTABLE;
	i = ike_kid_add(sa, c);
	if (i < 0) {
		ike_log(ctx, sa, "CREATE_CHILD_SA for another CHILD_SA: %d at most", IKE_KIDS_MAX);
		return IKE_N_NO_ADDITIONAL_SAS;
	}
	sa->ck = (unsigned)i;
	nerr = ike_pick_esp(KCFG(sa), cp.props, cp.n_props, true, ke.group, &prop, &cn.spi_out,
			    &num) != 0 || cn.spi_out == 0 ?
	       (uint16_t)(ike_drop(ctx, sa, IKE_REJ_NO_PROPOSAL, 0, "sa: no ESP proposal "
				   "acceptable"), IKE_N_NO_PROPOSAL_CHOSEN) :
	       rekey_pfs(ctx, sa, &ke, prop.dh, want, pub, &publen, gir, &gir_len);
	if (nerr == 0 && (ike_random_nonzero(spi, sizeof(spi)) != 0 ||
			  ike_random(nr, sizeof(nr)) != 0))
		nerr = IKE_N_TEMPORARY_FAILURE;
	if (nerr == 0) {
		cn = (struct child_new){ prop, get32(spi), cn.spi_out, cn.tl, cn.tr, false,
					 no->body, nr, no->len, sizeof(nr),
					 gir_len != 0 ? gir : NULL, gir_len };
		nerr = child_install(ctx, sa, &cn, now) != 0 ? IKE_N_TEMPORARY_FAILURE : 0;
	}
	if (nerr == 0) {
		answer_build(in, &cn, num, nr, sizeof(nr), pub, publen);
		ike_log(ctx, sa, "CHILD_SA %s made (the peer's): SPIs %08x/%08x", KCFG(sa)->name,
			cn.spi_in, cn.spi_out);
	} else {
		*KID(sa) = (struct child_sa){ 0 };	/* the slot is free again */
	}
	explicit_bzero(nr, sizeof(nr));
	explicit_bzero(gir, sizeof(gir));
	return nerr;
}

/*
 * The peer's CREATE_CHILD_SA about a CHILD_SA: its rekey (REKEY_SA), or
 * another one.  One that rekeys the IKE SA is ike_rekey.c's: the
 * dispatcher (ike_sa.c on_request) tells them apart.
 */
int
ike_child_rekey_request(struct ike_ctx *ctx, struct ike_sa *sa, const struct ike_hdr *h,
	      const struct view *v, uint64_t now, struct ike_next *nx)
{
	uint8_t inner[MSG_MAX], g[2];
	uint16_t nerr, want = 0;
	struct ike_buf in;
	int rc;

	ike_buf_init(&in, inner, sizeof(inner));
	nerr = rekey_accept(ctx, sa, v, &in, &want, now);
	if (nerr == IKE_N_NO_ADDITIONAL_SAS)	/* no REKEY_SA: another CHILD_SA */
		nerr = create_accept(ctx, sa, v, &in, &want, now);
	if (nerr != 0) {
		g[0] = (uint8_t)(want >> 8);
		g[1] = (uint8_t)want;
		ike_buf_init(&in, inner, sizeof(inner));
		ike_put_notify(&in, nerr, nerr == IKE_N_INVALID_KE_PAYLOAD ? g : NULL,
			       nerr == IKE_N_INVALID_KE_PAYLOAD ? sizeof(g) : 0);
	}
	rc = ike_respond(ctx, sa, h, &in);
	explicit_bzero(inner, sizeof(inner));
	if (rc == 0 && KID(sa)->want_del_dup && sa->req_kind == REQ_NONE)
		ike_then(nx, sa, REQ_NONE);	/* we lost a crossing: our Delete */
	return rc;
}
