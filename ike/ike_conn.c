/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ike_conn.c - the connection table: a connection's configuration checked,
 * added, found by name or by its addresses, and dropped.  A table and
 * nothing more: removing a connection with its SAs (ike_conn_remove: their
 * Deletes, their end) is the owner's call in ike_sa.c, which drops it here.
 */
#define _GNU_SOURCE		/* explicit_bzero */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "ike_int.h"

/* ---- connections -------------------------------------------------------- */

/*
 * Three indexes besides ctx->conns (ike_int.h): by name (the owner's calls),
 * by remote address (IKE_SA_INIT) and by remote identity (IKE_AUTH's IDi).
 * Each chain is newest first, as ctx->conns is, so the first match in a
 * chain is the first in the list: what the scans found before.
 */
static struct conn **
name_bucket(const struct ike_ctx *ctx, const char *name)
{
	return &ctx->conn_name[ike_hash(ctx->hash_key, name, strlen(name)) % IKE_CONN_BUCKETS];
}

static struct conn **
addr_bucket(const struct ike_ctx *ctx, const struct ike_addr *a)
{
	return &ctx->conn_addr[ike_hash(ctx->hash_key, a->ip, addr_len(a->family)) %
			       IKE_CONN_BUCKETS];
}

struct conn **
ike_conn_id_bucket(const struct ike_ctx *ctx, uint8_t type, const uint8_t *data, size_t len)
{
	uint32_t h = ike_hash(ctx->hash_key ^ type, data, len);

	return &ctx->conn_id[h % IKE_CONN_BUCKETS];
}

static void
conn_index(struct ike_ctx *ctx, struct conn *c)
{
	struct conn **b = name_bucket(ctx, c->cfg.name);

	c->seq = ++ctx->conn_seq;
	c->by_name = *b;
	*b = c;
	if (c->cfg.remote_any) {
		ctx->n_any++;
	} else {
		b = addr_bucket(ctx, &c->cfg.remote);
		c->by_addr = *b;
		*b = c;
	}
	if (c->cfg.cred != NULL) {
		ctx->n_cred++;
	} else {
		b = ike_conn_id_bucket(ctx, c->cfg.remote_id.type, c->cfg.remote_id.data,
				       c->cfg.remote_id.len);
		c->by_id = *b;
		*b = c;
	}
}

static void
conn_unindex(struct ike_ctx *ctx, struct conn *c)
{
	struct conn **pp;

	for (pp = name_bucket(ctx, c->cfg.name); *pp != c; pp = &(*pp)->by_name)
		;
	*pp = c->by_name;
	if (c->cfg.remote_any) {
		ctx->n_any--;
	} else {
		for (pp = addr_bucket(ctx, &c->cfg.remote); *pp != c; pp = &(*pp)->by_addr)
			;
		*pp = c->by_addr;
	}
	if (c->cfg.cred != NULL) {
		ctx->n_cred--;
	} else {
		for (pp = ike_conn_id_bucket(ctx, c->cfg.remote_id.type, c->cfg.remote_id.data,
					     c->cfg.remote_id.len); *pp != c; pp = &(*pp)->by_id)
			;
		*pp = c->by_id;
	}
}

struct conn *
ike_conn_by_name(struct ike_ctx *ctx, const char *name)
{
	for (struct conn *c = *name_bucket(ctx, name); c != NULL; c = c->by_name)
		if (strcmp(c->cfg.name, name) == 0)
			return c;
	return NULL;
}

struct conn *
ike_kid_conn_by_name(struct ike_ctx *ctx, const char *name)
{
	for (struct conn *c = ctx->conns; c != NULL; c = c->next)
		for (struct conn *k = c->kids; k != NULL; k = k->sib)
			if (strcmp(k->cfg.name, name) == 0)
				return k;
	return NULL;
}

struct ike_sa *
ike_sa_of_conn(struct ike_ctx *ctx, const struct conn *c)
{
	(void)ctx;
	for (struct ike_sa *sa = c->sas; sa != NULL; sa = sa->conn_next)
		if (sa->state != IKE_ST_HALF_OPEN &&
		    sa->state != IKE_ST_REKEYED)
			return sa;
	return NULL;
}

struct conn *
ike_conn_by_addr(struct ike_ctx *ctx, const struct ike_addr *local, const struct ike_addr *remote)
{
	for (struct conn *c = *addr_bucket(ctx, remote); c != NULL; c = c->by_addr)
		if (!c->cfg.remote_any && ip_equal(&c->cfg.local, local) &&
		    ip_equal(&c->cfg.remote, remote))
			return c;
	/* remote access: any peer address (ike_cp.c) */
	for (struct conn *c = ctx->n_any ? ctx->conns : NULL; c != NULL; c = c->next)
		if (c->cfg.remote_any && ip_equal(&c->cfg.local, local) &&
		    c->cfg.local.family == remote->family)
			return c;
	return NULL;
}

static int
bad_cfg(char *err, size_t elen, const char *name, const char *what)
{
	snprintf(err, elen, "%s: %s", name, what);
	return -EINVAL;
}

static bool
prefix_ok(const struct ike_prefix *p)
{
	return (p->family == AF_INET && p->plen <= 32) ||
	       (p->family == AF_INET6 && p->plen <= 128);
}

static bool
encr_ok(const struct ike_encr *e, bool esp)
{
	if (e->id == IKE_ENCR_CHACHA20_POLY1305)
		return esp && e->bits == 256;	/* no Key Length attribute: 256 implied */
	return (e->id == IKE_ENCR_AES_GCM_16 || e->id == IKE_ENCR_AES_CBC) &&
	       (e->bits == 128 || e->bits == 256);
}

static bool
integ_ok(uint16_t id, bool esp)
{
	if (esp)
		return id == IKE_INTEG_HMAC_SHA1_96 || id == IKE_INTEG_HMAC_SHA2_256_128;
	return ike_integ_key_len(id) != 0;
}

static bool
counts_ok(const struct ike_prop_cfg *e, bool esp)
{
	return e->n_encr >= 1 && e->n_encr <= IKE_PROP_ALGS_MAX &&
	       e->n_integ <= IKE_PROP_ALGS_MAX && e->n_dh <= IKE_PROP_ALGS_MAX &&
	       (esp ? e->n_prf == 0 : e->n_prf >= 1 && e->n_prf <= IKE_PROP_ALGS_MAX) &&
	       (esp || e->n_dh >= 1);
}

/* One configured proposal: known algorithms, AEAD or not throughout (3.3.3). */
static const char *
prop_problem(const struct ike_prop_cfg *e, bool esp)
{
	unsigned aead = 0;

	if (!counts_ok(e, esp))
		return esp ? "1 to 4 ciphers, up to 4 of integrity and DH groups, no PRF" :
			     "1 to 4 ciphers, PRFs and DH groups, up to 4 of integrity";
	for (unsigned i = 0; i < e->n_encr; i++) {
		if (!encr_ok(&e->encr[i], esp))
			return esp ? "ciphers AES-GCM-16 or AES-CBC of 128 or 256 bits, or "
				     "ChaCha20-Poly1305" : "ciphers AES-GCM-16 or AES-CBC of 128 "
				     "or 256 bits";
		aead += e->encr[i].id != IKE_ENCR_AES_CBC;
	}
	if ((aead != 0 && aead != e->n_encr) || (aead != 0) != (e->n_integ == 0))
		return "AEAD ciphers without integrity, or AES-CBC with it: not mixed";
	for (unsigned i = 0; i < e->n_integ; i++)
		if (!integ_ok(e->integ[i], esp))
			return esp ? "integrity HMAC-SHA1-96 or HMAC-SHA2-256-128" :
				     "integrity HMAC-SHA2-256-128, -384-192 or -512-256";
	for (unsigned i = 0; i < e->n_prf; i++)
		if (ike_prf_len(e->prf[i]) == 0)
			return "PRF HMAC-SHA2-256, -384 or -512";
	for (unsigned i = 0; i < e->n_dh; i++)
		if (ike_dh_pub_len(e->dh[i]) == 0)
			return "DH groups 14, 19, 20 or 31";
	return NULL;
}

static int
check_props(const struct ike_conn_cfg *cfg, char *err, size_t elen)
{
	char what[128];

	if (cfg->n_ike < 1 || cfg->n_ike > IKE_CONN_PROPS_MAX)
		return bad_cfg(err, elen, cfg->name, "ike: 1 to 4 proposals");
	if (cfg->n_esp < 1 || cfg->n_esp > IKE_CONN_PROPS_MAX)
		return bad_cfg(err, elen, cfg->name, "esp: 1 to 4 proposals");
	for (unsigned i = 0; i < cfg->n_ike + cfg->n_esp; i++) {
		bool esp = i >= cfg->n_ike;
		const char *why = esp ? prop_problem(&cfg->esp[i - cfg->n_ike], true) :
				  prop_problem(&cfg->ike[i], false);

		if (why != NULL) {
			snprintf(what, sizeof(what), "%s[%u]: %s", esp ? "esp" : "ike",
				 esp ? i - cfg->n_ike : i, why);
			return bad_cfg(err, elen, cfg->name, what);
		}
	}
	return 0;
}

/* An identity of type 0 is the address. */
static void
ident_default(struct ike_ident *id, const struct ike_addr *a)
{
	if (id->type != 0)
		return;
	id->type = a->family == AF_INET ? IKE_ID_IPV4_ADDR : IKE_ID_IPV6_ADDR;
	id->len = (uint8_t)addr_len(a->family);
	memcpy(id->data, a->ip, id->len);
}

static int
check_cfg(const struct ike_conn_cfg *cfg, char *err, size_t elen)
{
	if (cfg->name[0] == '\0' || memchr(cfg->name, '\0', sizeof(cfg->name)) == NULL)
		return bad_cfg(err, elen, "?", "name: empty or not terminated");
	if ((cfg->local.family != AF_INET && cfg->local.family != AF_INET6) ||
	    (!cfg->remote_any && cfg->remote.family != cfg->local.family))
		return bad_cfg(err, elen, cfg->name, "local/remote: one address family");
	if (cfg->remote_any && (cfg->cred == NULL || cfg->n_pool == 0 || cfg->n_pool > 2 ||
				cfg->n_dns > IKE_DNS_MAX))
		return bad_cfg(err, elen, cfg->name, "remote_any: certificates, 1 or 2 pools, "
			       "up to 4 DNS servers");
	if ((cfg->cred == NULL) != (cfg->trust == NULL))
		return bad_cfg(err, elen, cfg->name, "cred/trust: both or neither");
	if (cfg->cred == NULL && (cfg->psk_len == 0 || cfg->psk_len > IKE_PSK_MAX))
		return bad_cfg(err, elen, cfg->name, "psk: 1 to 128 bytes");
	_Static_assert(IKE_IDENT_MAX == UINT8_MAX, "ike_ident.len holds any length");
	if ((cfg->local_id.type != 0 && cfg->local_id.len == 0) ||
	    (cfg->remote_id.type != 0 && cfg->remote_id.len == 0))
		return bad_cfg(err, elen, cfg->name, "local_id/remote_id: 1 to 255 bytes");
	if (!prefix_ok(&cfg->ts_local) || !prefix_ok(&cfg->ts_remote) ||
	    cfg->n_ts_local_more >= IKE_TS_MAX || cfg->n_ts_remote_more >= IKE_TS_MAX)
		return bad_cfg(err, elen, cfg->name, "ts_local/ts_remote: bad prefix");
	for (unsigned i = 0; i < cfg->n_ts_local_more + cfg->n_ts_remote_more; i++) {
		const struct ike_prefix *p = i < cfg->n_ts_local_more ? &cfg->ts_local_more[i] :
					     &cfg->ts_remote_more[i - cfg->n_ts_local_more];

		const struct ike_prefix *first = i < cfg->n_ts_local_more ? &cfg->ts_local :
						 &cfg->ts_remote;

		/* one family, but for a route-based tunnel's 0.0.0.0/0 and ::/0 */
		if (!prefix_ok(p) || (p->family != first->family &&
				      (p->plen != 0 || first->plen != 0)))
			return bad_cfg(err, elen, cfg->name, "ts_local_more/ts_remote_more: a bad "
				       "prefix, or of another family than the first (but "
				       "for 0.0.0.0/0 with ::/0)");
	}
	if (cfg->retrans_ms == 0 || cfg->retrans_tries == 0 || cfg->retrans_tries > 20)
		return bad_cfg(err, elen, cfg->name, "retrans: a timeout and 1 to 20 tries");
	if (cfg->fragment_size != 0 && cfg->fragment_size < IKE_FRAG_SIZE_MIN)
		return bad_cfg(err, elen, cfg->name, "fragment_size: 0 (1280) or 256 and more");
	return check_props(cfg, err, elen);
}

/* A child connection: onto its parent's list, in order. */
static int
kid_add(struct ike_ctx *ctx, const struct ike_conn_cfg *cfg, char *err, size_t elen)
{
	struct conn *p = ike_conn_by_name(ctx, cfg->ike_sa), **pp, *c;
	unsigned n = 1;

	if (p == NULL || p->cfg.remote_any || memchr(cfg->ike_sa, '\0', sizeof(cfg->ike_sa)) ==
	    NULL)
		return bad_cfg(err, elen, cfg->name, "ike_sa: no such connection (added first), "
			       "or a remote-access one");
	for (pp = &p->kids; *pp != NULL; pp = &(*pp)->sib)
		n++;
	if (n >= IKE_CHILDREN_MAX)
		return bad_cfg(err, elen, cfg->name, "ike_sa: 16 CHILD_SAs per IKE SA at most");
	c = calloc(1, sizeof(*c));
	if (c == NULL)
		return -ENOMEM;
	c->cfg = *cfg;
	explicit_bzero(c->cfg.psk, sizeof(c->cfg.psk));	/* the parent's is used */
	c->cfg.cred = NULL;
	c->cfg.trust = NULL;
	c->parent = p;
	*pp = c;
	return 0;
}

int
ike_conn_add(struct ike_ctx *ctx, const struct ike_conn_cfg *cfg, char *err, size_t elen)
{
	struct conn *c;
	int rc = check_cfg(cfg, err, elen);

	if (rc != 0)
		return rc;
	if (ike_conn_by_name(ctx, cfg->name) != NULL || ike_kid_conn_by_name(ctx, cfg->name))
		return bad_cfg(err, elen, cfg->name, "name: in use"), -EEXIST;
	if (cfg->ike_sa[0])
		return kid_add(ctx, cfg, err, elen);
	c = calloc(1, sizeof(*c));
	if (c == NULL)
		return -ENOMEM;
	c->cfg = *cfg;
	rc = ike_cp_conn_init(c, err, elen);
	if (rc != 0) {
		ike_cp_conn_free(c);
		free(c);
		return rc;
	}
	ident_default(&c->cfg.local_id, &cfg->local);
	/* with certificates none is any identity the peer's certificate proves
	 * (strongSwan's remote id %any): the CAs vouch for it */
	if (cfg->cred == NULL)
		ident_default(&c->cfg.remote_id, &cfg->remote);
	c->next = ctx->conns;
	ctx->conns = c;
	conn_index(ctx, c);
	return 0;
}

int
ike_conn_check(const struct ike_conn_cfg *cfg, char *err, size_t elen)
{
	return check_cfg(cfg, err, elen);
}

/* A child connection off its parent's list and freed (its CHILD_SAs are gone). */
void
ike_kid_conn_drop(struct conn *k)
{
	struct conn **pp;

	for (pp = &k->parent->kids; *pp != NULL; pp = &(*pp)->sib)
		if (*pp == k) {
			*pp = k->sib;
			break;
		}
	explicit_bzero(k, sizeof(*k));
	free(k);
}

/* A connection off the table and freed, its children too (its SAs are gone). */
void
ike_conn_drop(struct ike_ctx *ctx, struct conn *c)
{
	struct conn **pp;

	for (pp = &ctx->conns; *pp != NULL; pp = &(*pp)->next) {
		if (*pp == c) {
			*pp = c->next;
			break;
		}
	}
	while (c->kids != NULL) {	/* its SAs are gone: no CHILD_SA points at them */
		struct conn *k = c->kids;

		c->kids = k->sib;
		explicit_bzero(k, sizeof(*k));
		free(k);
	}
	conn_unindex(ctx, c);
	ike_cp_conn_free(c);
	explicit_bzero(c, sizeof(*c));	/* the PSK */
	free(c);
}
