/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ike_cp.c - remote access, the responder's side of the configuration
 * payload (RFC 7296 3.15): a client's CFG_REQUEST in IKE_AUTH gets an address
 * leased from its connection's pool (ike_pool.h) in a CFG_REPLY, with the DNS
 * servers it asked for; its CHILD_SA is narrowed to that address; the lease
 * is given back when the IKE SA ends (a rekey hands it to the new SA).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "ike_int.h"
#include "ike_pool.h"

static int
fam_idx(uint8_t family)
{
	return family == AF_INET6 ? 1 : 0;
}

int
ike_cp_conn_init(struct conn *c, char *err, size_t elen)
{
	for (unsigned i = 0; c->cfg.remote_any && i < c->cfg.n_pool; i++) {
		const struct ike_prefix *p = &c->cfg.pool[i];
		int k = fam_idx(p->family);

		if (c->pool[k] != NULL) {
			snprintf(err, elen, "%s: pool: two of one family", c->cfg.name);
			return -EINVAL;
		}
		c->pool[k] = ike_pool_new(p->family, p->addr, p->plen, err, elen);
		if (c->pool[k] == NULL)
			return -EINVAL;
	}
	return 0;
}

void
ike_cp_conn_free(struct conn *c)
{
	ike_pool_free(c->pool[0]);
	ike_pool_free(c->pool[1]);
	c->pool[0] = c->pool[1] = NULL;
}

void
ike_cp_release(struct ike_sa *sa)
{
	struct ike_pool *p;

	if (!sa->has_vip)
		return;
	p = sa->conn->pool[fam_idx(sa->vip.family)];
	if (p != NULL)
		(void)ike_pool_release(p, sa->vip.addr);
	sa->has_vip = false;
}

const struct ike_prefix *
ike_cp_ts_remote(const struct ike_sa *sa)
{
	return sa->has_vip ? &sa->vip : &sa->conn->cfg.ts_remote;
}

/* Initiator (a road warrior, tests): ask for an address of ts_local's family. */
void
ike_cp_request_put(const struct ike_sa *sa, struct ike_buf *in)
{
	const struct ike_conn_cfg *cfg = &sa->conn->cfg;
	bool v6 = cfg->ts_local.family == AF_INET6;
	struct ike_cp cp = { .cfg_type = IKE_CFG_REQUEST, .n = 2 };

	if (!cfg->want_vip)
		return;
	cp.attr[0] = (struct ike_cp_attr){ v6 ? IKE_CP_IP6_ADDRESS : IKE_CP_IP4_ADDRESS, 0, NULL };
	cp.attr[1] = (struct ike_cp_attr){ v6 ? IKE_CP_IP6_DNS : IKE_CP_IP4_DNS, 0, NULL };
	ike_build_cp(in, &cp);
}

/* Which attributes the request asks for: bit t for type t (below 16). */
static unsigned
asked(const struct ike_cp *cp)
{
	unsigned m = 0;

	for (unsigned i = 0; i < cp->n; i++)
		if (cp->attr[i].type < 16)
			m |= 1u << cp->attr[i].type;
	return m;
}

/* The lease's identity: IDi's type and data, as the client proved it. */
static int
lease(struct ike_pool *pool, const struct view *v, uint8_t *addr, struct ike_ident *who)
{
	const struct ike_pl *idp = ike_find_pl(v, IKE_PL_IDI);
	uint8_t key[1 + IKE_POOL_ID_MAX];
	char err[ERR_LEN];
	struct ike_id id;

	if (idp == NULL || ike_id_parse(idp->body, idp->len, &id, err, sizeof(err)) != 0 ||
	    id.len > IKE_POOL_ID_MAX)
		return -EINVAL;
	key[0] = id.type;
	who->type = id.type;
	who->len = (uint8_t)(id.len < IKE_IDENT_MAX ? id.len : IKE_IDENT_MAX);
	memcpy(who->data, id.data, who->len);
	memcpy(key + 1, id.data, id.len);
	return ike_pool_lease(pool, key, 1 + id.len, addr);
}

static void
reply(const struct ike_conn_cfg *cfg, const struct ike_sa *sa, unsigned want,
      struct ike_buf *in)
{
	static const uint8_t mask32[4] = { 255, 255, 255, 255 };
	bool v6 = sa->vip.family == AF_INET6;
	struct ike_cp cp = { .cfg_type = IKE_CFG_REPLY };
	uint8_t a6[17];

	if (v6) {
		memcpy(a6, sa->vip.addr, 16);
		a6[16] = 128;
		cp.attr[cp.n++] = (struct ike_cp_attr){ IKE_CP_IP6_ADDRESS, 17, a6 };
	} else {
		cp.attr[cp.n++] = (struct ike_cp_attr){ IKE_CP_IP4_ADDRESS, 4, sa->vip.addr };
		if (want & 1u << IKE_CP_IP4_NETMASK)
			cp.attr[cp.n++] = (struct ike_cp_attr){ IKE_CP_IP4_NETMASK, 4, mask32 };
	}
	for (unsigned i = 0; i < cfg->n_dns; i++) {
		bool d6 = cfg->dns[i].family == AF_INET6;
		uint16_t type = d6 ? IKE_CP_IP6_DNS : IKE_CP_IP4_DNS;

		if (want & 1u << type)
			cp.attr[cp.n++] = (struct ike_cp_attr){ type, d6 ? 16 : 4, cfg->dns[i].ip };
	}
	ike_build_cp(in, &cp);
}

/*
 * Responder, IKE_AUTH, the peer authenticated: 0 (nothing to do, or the
 * CFG_REPLY is in in), or the error Notify to send instead of a CHILD_SA.
 */
uint16_t
ike_cp_respond(struct ike_ctx *ctx, struct ike_sa *sa, const struct view *v, struct ike_buf *in)
{
	const struct ike_conn_cfg *cfg = &sa->conn->cfg;
	const struct ike_pl *cpp = ike_find_pl(v, IKE_PL_CP);
	uint8_t family = cfg->ts_local.family;
	struct ike_pool *pool = sa->conn->pool[fam_idx(family)];
	char err[ERR_LEN];
	struct ike_cp cp;
	unsigned want;
	int rc;

	if (!cfg->remote_any || sa->has_vip)
		return 0;
	if (cpp == NULL || ike_cp_parse(cpp->body, cpp->len, &cp, err, sizeof(err)) != 0 ||
	    cp.cfg_type != IKE_CFG_REQUEST || pool == NULL ||
	    !(asked(&cp) & 1u << (family == AF_INET6 ? IKE_CP_IP6_ADDRESS : IKE_CP_IP4_ADDRESS))) {
		ctx->stats.cp_missing++;
		ike_log(ctx, sa, "no CP request for an %s address: no CHILD_SA",
			family == AF_INET6 ? "IPv6" : "IPv4");
		return IKE_N_FAILED_CP_REQUIRED;
	}
	want = asked(&cp);
	memset(&sa->vip, 0, sizeof(sa->vip));
	rc = lease(pool, v, sa->vip.addr, &sa->peer_id);
	if (rc != 0) {
		if (rc == -ENOSPC)
			ctx->stats.pool_exhausted++;
		ike_log(ctx, sa, "no address to lease (%s): no CHILD_SA",
			rc == -ENOSPC ? "pool exhausted" : strerror(-rc));
		return IKE_N_INTERNAL_ADDRESS_FAILURE;
	}
	sa->vip.family = family;
	sa->vip.plen = family == AF_INET6 ? 128 : 32;
	sa->has_vip = true;
	reply(cfg, sa, want, in);
	return 0;
}
