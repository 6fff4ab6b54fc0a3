/* SPDX-License-Identifier: BSD-3-Clause */
/* mirror.c - kernel routes via tunnel twins into the dataplane (mirror.h). */
#include <arpa/inet.h>
#include <errno.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "install.h"
#include "mirror.h"
#include "nl.h"

static struct nl *nl;
static struct dp_client *mdp;
static const struct cfg *mcfg;
static bool mverbose;
#define CTL_MAX		4096	/* dpvpnctl's prefixes remembered (ROUTE_MAX a family) */
static struct dpvpn_prefix ctl_routes[CTL_MAX];
static unsigned n_ctl;

static struct dpvpn_prefix to_dp(const struct nl_prefix *p)
{
	struct dpvpn_prefix d = { .family = p->family == AF_INET ? DPVPN_AF_INET : DPVPN_AF_INET6,
				  .len = p->len };

	memcpy(d.v6, p->addr, p->family == AF_INET ? 4 : 16);	/* the union */
	return d;
}

static bool same(const struct dpvpn_prefix *a, const struct dpvpn_prefix *b)
{
	return a->family == b->family && a->len == b->len &&
	       !memcmp(a->v6, b->v6, a->family == DPVPN_AF_INET ? 4 : 16);
}

static int ctl_find(const struct dpvpn_prefix *d)
{
	for (unsigned i = 0; i < n_ctl; i++)
		if (same(&ctl_routes[i], d))
			return (int)i;
	return -1;
}

/* Does the config (or dpvpnctl) route prefix p itself (they win over the kernel)? */
static bool config_routes(const struct nl_prefix *p)
{
	struct dpvpn_prefix d = to_dp(p);

	if (ctl_find(&d) >= 0)
		return true;
	for (size_t i = 0; i < mcfg->n_routes; i++) {
		const struct cfg_prefix *c = &mcfg->routes[i].dst;

		if (c->len != p->len)
			continue;
		if (p->family == AF_INET && c->addr.family == DPVPN_AF_INET) {
			uint32_t a;

			memcpy(&a, p->addr, 4);
			if (ntohl(a) == c->addr.v4)
				return true;
		} else if (p->family == AF_INET6 && c->addr.family == DPVPN_AF_INET6 &&
			   !memcmp(p->addr, c->addr.v6, 16)) {
			return true;
		}
	}
	return false;
}

static int on_install(void *arg, const struct nl_prefix *p, const char *const names[],
		      unsigned n)
{
	struct dpvpn_route m = { .dst = to_dp(p), .kind = DPVPN_ROUTE_TUNNEL };
	char buf[48];

	(void)arg;
	if (config_routes(p) || mdp->lost)
		return mdp->lost ? -1 : 0;
	for (unsigned k = 0; k < n && k < DPVPN_ECMP_MAX; k++) {
		int id = inst_tunif_id(names[k], false);

		if (id < 0)
			return -1;
		m.tunif[m.n_tunif++] = (uint16_t)id;
	}
	if (dp_call(mdp, DPVPN_MSG_ROUTE_ADD, &m, sizeof(m), NULL, 0)) {
		fprintf(stderr, "dpvpnd: kernel route %s: %s\n",
			nl_prefix_str(p, buf, sizeof(buf)), mdp->err);
		return -1;
	}
	if (mverbose)
		fprintf(stderr, "dpvpnd: kernel route %s via tunnel %s%s: installed\n",
			nl_prefix_str(p, buf, sizeof(buf)), names[0], n > 1 ? " (ECMP)" : "");
	return 0;
}

static int on_remove(void *arg, const struct nl_prefix *p)
{
	struct dpvpn_route m = { .dst = to_dp(p) };
	char buf[48];

	(void)arg;
	if (config_routes(p))
		return 0;
	if (mdp->lost)
		return -1;
	if (dp_call(mdp, DPVPN_MSG_ROUTE_DEL, &m, sizeof(m), NULL, 0) && mdp->status != -ENOENT) {
		fprintf(stderr, "dpvpnd: kernel route %s removal: %s\n",
			nl_prefix_str(p, buf, sizeof(buf)), mdp->err);
		return -1;
	}
	if (mverbose)
		fprintf(stderr, "dpvpnd: kernel route %s: removed\n",
			nl_prefix_str(p, buf, sizeof(buf)));
	return 0;
}

/* Is tunnel interface id a route tunnel with a twin (the mirror's to fill)? */
static bool twin_tunif(uint16_t id)
{
	const char *name = inst_tunif_name(id);

	for (size_t i = 0; name != NULL && i < mcfg->n_tunnels; i++)
		if (!strcmp(mcfg->tunnels[i]->name, name))
			return mcfg->tunnels[i]->route && mcfg->tunnels[i]->host_iface[0];
	return false;
}

/*
 * After the dump: a route of the dataplane into twin tunnels only that neither
 * the config, this dpvpnd's dpvpnctl nor the kernel has is one the kernel took
 * back while dpvpnd was away (the dataplane went on forwarding on it): the
 * kernel is the source of truth, it goes (as zebra drops its stale routes at
 * start).  Only what a dpvpnd restart leaves: after a dataplane restart the
 * dataplane holds no routes of ours, after a reload nothing is unknown.
 */
static void prune(void)
{
	struct dpvpn_route *r;
	uint32_t n;
	char buf[48];

	if (dp_dump(mdp, DPVPN_MSG_SHOW_ROUTES, sizeof(*r), (void **)&r, &n)) {
		fprintf(stderr, "dpvpnd: routes of the dataplane: %s\n", mdp->err);
		return;
	}
	for (uint32_t i = 0; i < n; i++) {
		struct nl_prefix p = { .family = r[i].dst.family == DPVPN_AF_INET ?
					AF_INET : AF_INET6, .len = r[i].dst.len };
		bool twins = r[i].kind == DPVPN_ROUTE_TUNNEL && r[i].n_tunif > 0;
		struct dpvpn_route del = { .dst = r[i].dst };

		for (unsigned k = 0; twins && k < r[i].n_tunif && k < DPVPN_ECMP_MAX; k++)
			twins = twin_tunif(r[i].tunif[k]);
		memcpy(p.addr, r[i].dst.v6, p.family == AF_INET ? 4 : 16);
		if (!twins || config_routes(&p) || nl_rib_installed(nl, &p, NULL) > 0)
			continue;
		if (dp_call(mdp, DPVPN_MSG_ROUTE_DEL, &del, sizeof(del), NULL, 0) &&
		    mdp->status != -ENOENT) {
			fprintf(stderr, "dpvpnd: stale route %s removal: %s\n",
				nl_prefix_str(&p, buf, sizeof(buf)), mdp->err);
			break;
		}
		fprintf(stderr, "dpvpnd: route %s via tunnel %s: not in the kernel's table "
			"(removed while dpvpnd was away): removed\n",
			nl_prefix_str(&p, buf, sizeof(buf)), inst_tunif_name(r[i].tunif[0]));
	}
	free(r);
}

void mirror_close(void)
{
	if (nl != NULL)
		nl_close(nl);
	nl = NULL;
}

int mirror_open(struct dp_client *dp, const struct cfg *cfg, bool verbose)
{
	static const struct nl_ops ops = { .install = on_install, .remove = on_remove };
	unsigned twins = 0;

	mirror_close();
	mdp = dp;
	mcfg = cfg;
	mverbose = verbose;
	for (size_t i = 0; i < cfg->n_tunnels; i++)
		twins += cfg->tunnels[i]->route && cfg->tunnels[i]->host_iface[0];
	if (twins == 0)
		return 0;
	if ((nl = nl_open(NL_TABLE_MAIN, &ops)) == NULL)
		return -1;
	for (size_t i = 0; i < cfg->n_tunnels; i++) {
		const struct cfg_tunnel *t = cfg->tunnels[i];
		unsigned idx;

		if (!t->route || !t->host_iface[0])
			continue;
		if ((idx = if_nametoindex(t->host_iface)) == 0 || nl_twin_add(nl, idx, t->name)) {
			fprintf(stderr, "dpvpnd: tunnel %s: host-interface %s: not found for route "
				"mirroring\n", t->name, t->host_iface);
			continue;
		}
	}
	if (nl_resync(nl))
		return -1;
	prune();
	return 0;
}

int mirror_fd(void)
{
	return nl != NULL ? nl_fd(nl) : -1;
}

void mirror_read(void)
{
	if (nl != NULL)
		nl_read(nl);
}

void mirror_ctl_route(const struct dpvpn_prefix *dst, int add)
{
	char names[NL_MAX_NH][NL_NAME_LEN];
	const char *ptr[NL_MAX_NH];
	struct nl_prefix p = { .family = dst->family == DPVPN_AF_INET ? AF_INET : AF_INET6,
			       .len = dst->len };
	int at = ctl_find(dst);
	unsigned n;

	if (add) {
		if (at < 0 && n_ctl < CTL_MAX)
			ctl_routes[n_ctl++] = *dst;
		return;
	}
	if (at < 0)
		return;
	ctl_routes[at] = ctl_routes[--n_ctl];
	/* the kernel's route for it, if the RIB holds one, back into the dataplane */
	memcpy(p.addr, dst->v6, p.family == AF_INET ? 4 : 16);
	if (nl == NULL || (n = nl_rib_installed(nl, &p, names)) == 0)
		return;
	for (unsigned k = 0; k < n; k++)
		ptr[k] = names[k];
	on_install(NULL, &p, ptr, n);
}

void mirror_forget_ctl(void)
{
	n_ctl = 0;
}
