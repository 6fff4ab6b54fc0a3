/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * config_ra.c - a remote-access responder: [tunnel NAME] with keying = ike,
 * auth = pubkey and remote = %any accepts clients it does not know by
 * address, each leased a virtual IP from pool (RFC 7296 3.15, the CP
 * payload) and told the dns servers.  Its keys (pool, dns), remote = %any,
 * the client's side (virtual-ip = request), and the checks of the
 * combination at the section's end.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>

#include "config_parse.h"

/* remote = %any: the tunnel's remote address is whoever connects. */
int cfg_tun_remote_any(struct parser *p, const char *val)
{
	struct cfg_tunnel *t = CUR_TUN(p);

	if (strcmp(val, "%any") != 0)
		return 1;		/* not ours: an address */
	t->remote_line = p->line;
	memset(&t->remote, 0, sizeof(t->remote));
	t->ra.any = 1;
	return 0;
}

/* The next comma-separated item of *s, trimmed, or NULL at the end. */
static char *next_item(char **s)
{
	char *item = *s, *comma;

	if (item == NULL)
		return NULL;
	comma = strchr(item, ',');
	if (comma != NULL) {
		*comma = '\0';
		*s = comma + 1;
	} else {
		*s = NULL;
	}
	return cfg_trim(item + strspn(item, " \t"));
}

/* pool = PREFIX[, PREFIX]: at most one IPv4 and one IPv6 prefix. */
int cfg_key_tun_pool(struct parser *p, const char *val)
{
	struct cfg_ra *ra = &CUR_TUN(p)->ra;
	char buf[256], *rest = buf, *item;

	ra->pool_line = p->line;
	if (strlen(val) >= sizeof(buf))
		return cfg_kerr(p, "too long (one IPv4 and one IPv6 prefix at most)");
	strcpy(buf, val);
	while ((item = next_item(&rest)) != NULL) {
		struct cfg_prefix pfx;

		if (cfg_parse_net(p, item, &pfx))
			return -1;
		for (unsigned i = 0; i < ra->n_pools; i++)
			if (ra->pools[i].addr.family == pfx.addr.family)
				return cfg_kerr(p, "two %s prefixes; one of each family at most",
						cfg_family_name(pfx.addr.family));
		ra->pools[ra->n_pools++] = pfx;
	}
	return 0;
}

/* dns = ADDR[, ADDR...]: up to CFG_RA_DNS_MAX, either family. */
int cfg_key_tun_dns(struct parser *p, const char *val)
{
	struct cfg_ra *ra = &CUR_TUN(p)->ra;
	char buf[512], *rest = buf, *item;

	ra->dns_line = p->line;
	if (strlen(val) >= sizeof(buf))
		return cfg_kerr(p, "too long (%d addresses at most)", CFG_RA_DNS_MAX);
	strcpy(buf, val);
	while ((item = next_item(&rest)) != NULL) {
		struct cfg_addr a;

		if (cfg_parse_addr(item, &a) || cfg_addr_is_zero(&a))
			return cfg_kerr(p, "expected IPv4 or IPv6 addresses, got '%s'", item);
		if (ra->n_dns == CFG_RA_DNS_MAX)
			return cfg_kerr(p, "more than %d addresses", CFG_RA_DNS_MAX);
		ra->dns[ra->n_dns++] = a;
	}
	return 0;
}

/*
 * virtual-ip = request: this tunnel is a remote-access client; its IKE_AUTH
 * asks for an address (CFG_REQUEST, RFC 7296 3.15) of local-ts's family, and
 * its CHILD_SA's local selector is what the gateway leases (local-ts, e.g.
 * 0.0.0.0/0, is only what it proposes).  strongSwan's vips = 0.0.0.0.
 */
int cfg_key_tun_virtual_ip(struct parser *p, const char *val)
{
	struct cfg_ra *ra = &CUR_TUN(p)->ra;

	if (strcmp(val, "request") != 0)
		return cfg_kerr(p, "expected request (ask the gateway for an address), got '%s'",
				val);
	ra->want_vip = 1;
	ra->vip_line = p->line;
	return 0;
}

/* remote = %any with the rest of the section: the pool of local-ts's family
 * becomes remote-ts (each client's CHILD_SA is narrowed to its lease in it). */
static void finish_any(struct parser *p, struct cfg_tunnel *t)
{
	struct cfg_ra *ra = &t->ra;
	const struct cfg_prefix *pool = NULL;

	if (t->ike.auth != CFG_AUTH_PUBKEY)
		cfg_err_at(p, t->remote_line, "[tunnel %s] remote: %%any needs auth = pubkey "
			   "(one PSK cannot tell clients apart)", t->name);
	if (t->rts_line)
		cfg_err_at(p, t->rts_line, "[tunnel %s] remote-ts: not with remote = %%any "
			   "(each client's is its address from pool)", t->name);
	if (t->ike.start && cfg_key_line(p, "start"))
		cfg_err_at(p, cfg_key_line(p, "start"), "[tunnel %s] start: not with remote = %%any "
			   "(it waits for clients)", t->name);
	t->ike.start = 0;
	if (ra->n_pools == 0) {
		if (!ra->pool_line)	/* else refused at its line already */
			cfg_err_at(p, p->sect_line, "[tunnel %s] missing required key 'pool' "
				   "(remote = %%any)", t->name);
		return;
	}
	for (unsigned i = 0; i < ra->n_pools; i++)
		if (ra->pools[i].addr.family == t->local_ts.addr.family)
			pool = &ra->pools[i];
	if (pool == NULL && t->local_ts.addr.family) {
		cfg_err_at(p, ra->pool_line, "[tunnel %s] pool: no %s prefix, as local-ts is "
			   "(a client's CHILD_SA is of local-ts's family)", t->name,
			   cfg_family_name(t->local_ts.addr.family));
		return;
	}
	if (pool != NULL)
		t->remote_ts = *pool;
}

void cfg_finish_ra(struct parser *p, struct cfg_tunnel *t)
{
	struct cfg_ra *ra = &t->ra;

	if (!t->ike.on) {
		if (ra->any)
			cfg_err_at(p, t->remote_line, "[tunnel %s] remote: %%any only with "
				   "keying = ike (a remote-access responder)", t->name);
		memset(ra, 0, sizeof(*ra));
		return;
	}
	if (ra->any) {
		if (ra->want_vip)
			cfg_err_at(p, ra->vip_line, "[tunnel %s] virtual-ip: not with remote = "
				   "%%any (a client asks for one, the gateway leases from pool)",
				   t->name);
		finish_any(p, t);
		return;
	}
	if (ra->n_pools)
		cfg_err_at(p, ra->pool_line, "[tunnel %s] pool: only with remote = %%any "
			   "(a remote-access responder)", t->name);
	if (ra->n_dns)
		cfg_err_at(p, ra->dns_line, "[tunnel %s] dns: only with remote = %%any "
			   "(a remote-access responder)", t->name);
}
