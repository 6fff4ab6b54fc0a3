/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * config_route.c - the [neighbor NAME] (or [neighbour NAME]) and [route NAME]
 * sections: static neighbours and routes; and [routes], whose repeatable
 * `route = PREFIX via tunnel NAME` / `route = PREFIX via GW port NAME` lines
 * are routes too (the same prefix into several tunnels: ECMP).  The port
 * they name is resolved once every [port] is known (config_check.c), the
 * tunnels once every [tunnel] is (cfg_check_route_tunnels).
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>

#include "config_parse.h"

static int set_port_ref(struct parser *p, char *ref, int *ref_line, const char *val)
{
	if (!*val || strlen(val) > CFG_NAME_MAX)
		return cfg_kerr(p, "expected a port name or id, got '%s'", val);
	strcpy(ref, val);
	*ref_line = p->line;
	return 0;
}

static int key_neigh_port(struct parser *p, const char *val)
{
	return set_port_ref(p, CUR(p, neighs)->port_ref, &CUR(p, neighs)->port_line, val);
}

static int key_neigh_address(struct parser *p, const char *val)
{
	struct cfg_addr a;

	if (cfg_parse_addr(val, &a) || cfg_addr_is_zero(&a))
		return cfg_kerr(p, "expected an IPv4 or IPv6 address, got '%s'", val);
	CUR(p, neighs)->addr = a;
	return 0;
}

static int key_neigh_mac(struct parser *p, const char *val)
{
	uint8_t *mac = CUR(p, neighs)->mac;
	static const uint8_t zero[6];

	if (cfg_parse_mac(val, mac))
		return cfg_kerr(p, "expected a MAC address aa:bb:cc:dd:ee:ff, got '%s'", val);
	if ((mac[0] & 1) || !memcmp(mac, zero, 6))
		return cfg_kerr(p, "%s is not a unicast MAC address", val);
	return 0;
}

static int open_neigh(struct parser *p)
{
	struct cfg *c = p->cfg;

	if (cfg_open_array(p, (void **)&c->neighs, &c->n_neighs, sizeof(*c->neighs)))
		return -1;
	strcpy(CUR(p, neighs)->name, p->sect_name);
	CUR(p, neighs)->section = p->def->type;
	CUR(p, neighs)->line = p->sect_line;
	return 0;
}

static int key_route_dst(struct parser *p, const char *val)
{
	return cfg_parse_net(p, val, &CUR(p, routes)->dst);
}

static int key_route_port(struct parser *p, const char *val)
{
	return set_port_ref(p, CUR(p, routes)->port_ref, &CUR(p, routes)->port_line, val);
}

static int key_route_via(struct parser *p, const char *val)
{
	struct cfg_addr a;

	CUR(p, routes)->via_line = p->line;
	if (cfg_parse_addr(val, &a) || cfg_addr_is_zero(&a))
		return cfg_kerr(p, "expected an IPv4 or IPv6 gateway address, got '%s'", val);
	CUR(p, routes)->via = a;
	return 0;
}

/* One more tunnel for route r (ECMP: at most DPVPN_ECMP_MAX, each once). */
static int add_tunnel(struct parser *p, struct cfg_route *r, const char *name)
{
	if (!*name || strlen(name) > CFG_NAME_MAX || !cfg_valid_name(name))
		return cfg_kerr(p, "expected a tunnel name, got '%s'", name);
	for (unsigned i = 0; i < r->n_tunnels; i++)
		if (!strcmp(r->tunnels[i], name))
			return cfg_kerr(p, "tunnel %s named twice for one prefix", name);
	if (r->n_tunnels == DPVPN_ECMP_MAX)
		return cfg_kerr(p, "more than %d tunnels for one prefix (ECMP)", DPVPN_ECMP_MAX);
	r->tunnel_lines[r->n_tunnels] = p->line;
	strcpy(r->tunnels[r->n_tunnels++], name);
	if (!r->tunnel_line)
		r->tunnel_line = p->line;
	return 0;
}

/* [route NAME] tunnel = T1[, T2 ...]: names split at commas and blanks. */
static int key_route_tunnel(struct parser *p, const char *val)
{
	char buf[512], *save = NULL, *tok;

	if (strlen(val) >= sizeof(buf))
		return cfg_kerr(p, "too long");
	strcpy(buf, val);
	for (tok = strtok_r(buf, ", \t", &save); tok; tok = strtok_r(NULL, ", \t", &save))
		if (add_tunnel(p, CUR(p, routes), tok))
			return -1;
	if (CUR(p, routes)->n_tunnels == 0)
		return cfg_kerr(p, "expected one or more tunnel names");
	return 0;
}

static int open_route(struct parser *p)
{
	struct cfg *c = p->cfg;

	if (cfg_open_array(p, (void **)&c->routes, &c->n_routes, sizeof(*c->routes)))
		return -1;
	strcpy(CUR(p, routes)->name, p->sect_name);
	CUR(p, routes)->line = p->sect_line;
	return 0;
}

static void finish_route(struct parser *p)
{
	const struct cfg_route *r = CUR(p, routes);

	if (r->tunnel_line && (r->port_line || r->via_line))
		cfg_err_at(p, r->tunnel_line, "[route %s] tunnel: a route goes into tunnels or "
			   "out a port (port, via), not both", r->name);
	else if (!r->tunnel_line && !r->port_line)
		cfg_err_at(p, r->line, "[route %s] missing required key 'port' (or tunnel)",
			   r->name);

	cfg_check_family(p, "route", r->name, r->via_line, "via", &r->via, -1, "dst", &r->dst.addr,
			 r->dst.len, "address", "the gateway must be of the destination's family");
}

static const struct key_def neigh_keys[] = {
	{ "port", key_neigh_port, true },
	{ "address", key_neigh_address, true },
	{ "mac", key_neigh_mac, true },
};

static const struct key_def route_keys[] = {
	{ "dst", key_route_dst, true },
	{ "port", key_route_port, false },	/* or tunnel: finish_route */
	{ "via", key_route_via, false },
	{ "tunnel", key_route_tunnel, false },
};

/* ---- [routes] ---- */

static int open_routes(struct parser *p)
{
	return p->seen_routes++ ? -1 : 0;
}

/* The [routes] route of dst made so far, or NULL. */
static struct cfg_route *routes_entry(struct cfg *c, const struct cfg_prefix *dst)
{
	for (size_t i = 0; i < c->n_routes; i++)
		if (c->routes[i].in_routes && c->routes[i].dst.len == dst->len &&
		    cfg_addr_equal(&c->routes[i].dst.addr, &dst->addr))
			return &c->routes[i];
	return NULL;
}

/* "PREFIX via tunnel NAME" or "PREFIX via GW port NAME". */
static int key_routes_route(struct parser *p, const char *val)
{
	char buf[256], *w[6], *save = NULL;
	struct cfg_prefix dst;
	struct cfg_route *r;
	int n = 0;

	if (strlen(val) >= sizeof(buf))
		return cfg_kerr(p, "too long");
	strcpy(buf, val);
	for (char *t = strtok_r(buf, " \t", &save); t && n < 6; t = strtok_r(NULL, " \t", &save))
		w[n++] = t;
	if (!(n == 4 && !strcmp(w[1], "via") && !strcmp(w[2], "tunnel")) &&
	    !(n == 5 && !strcmp(w[1], "via") && !strcmp(w[3], "port")))
		return cfg_kerr(p, "expected 'PREFIX via tunnel NAME' or 'PREFIX via GATEWAY "
				"port NAME', got '%s'", val);
	if (cfg_parse_net(p, w[0], &dst))
		return -1;
	r = routes_entry(p->cfg, &dst);
	if (r != NULL && (n == 5 || r->port_line))
		return cfg_kerr(p, "%s: already routed at line %d (only tunnels can share a "
				"prefix, ECMP)", w[0],
				r->tunnel_line ? r->tunnel_line : r->port_line);
	if (r == NULL) {
		if (cfg_open_array(p, (void **)&p->cfg->routes, &p->cfg->n_routes,
				   sizeof(*p->cfg->routes)))
			return cfg_kerr(p, "out of memory");
		r = CUR(p, routes);
		r->in_routes = 1;
		r->line = p->line;
		memcpy(&r->dst, &dst, sizeof(dst));	/* padding too (memcmp) */
	}
	if (n == 4)
		return add_tunnel(p, r, w[3]);
	if (cfg_parse_addr(w[2], &r->via) || cfg_addr_is_zero(&r->via))
		return cfg_kerr(p, "expected an IPv4 or IPv6 gateway address, got '%s'", w[2]);
	if (r->via.family != dst.addr.family)
		return cfg_kerr(p, "gateway %s is not of %s's family", w[2], w[0]);
	r->via_line = p->line;
	return set_port_ref(p, r->port_ref, &r->port_line, w[4]);
}

static const struct key_def routes_keys[] = {
	{ "route", key_routes_route, false, KEYING_ANY, true },
};

const struct sect_def cfg_sect_routes = {
	"routes", SECT_ROUTES, false, KEYS(routes_keys), open_routes, NULL
};

/* After the whole file: the tunnels routes name are route-based tunnels. */
void cfg_check_route_tunnels(struct parser *p)
{
	const struct cfg *c = p->cfg;

	for (size_t n = 0; n < c->n_routes; n++) {
		const struct cfg_route *r = &c->routes[n];
		char where[DPVPN_NAME_LEN + 32];

		if (r->in_routes)
			snprintf(where, sizeof(where), "[routes] route");
		else
			snprintf(where, sizeof(where), "[route %s] tunnel", r->name);
		for (unsigned k = 0; k < r->n_tunnels; k++) {
			const struct cfg_tunnel *t = NULL;

			for (size_t i = 0; i < c->n_tunnels && !t; i++)
				if (!strcmp(c->tunnels[i]->name, r->tunnels[k]))
					t = c->tunnels[i];
			if (t == NULL)
				cfg_err_at(p, r->tunnel_lines[k], "%s: no [tunnel %s]", where,
					   r->tunnels[k]);
			else if (!t->route)
				cfg_err_at(p, r->tunnel_lines[k], "%s: tunnel %s is not a "
					   "route-based tunnel (mode = route): a policy tunnel's "
					   "traffic is chosen by its local-ts and remote-ts",
					   where, r->tunnels[k]);
		}
	}
}

const struct sect_def cfg_sect_neighbor = {
	"neighbor", SECT_NEIGH, true, KEYS(neigh_keys), open_neigh, NULL
};

/* British spelling, as dpvpnctl's "neighbour" commands: the same section
 * (one name space: [neighbor x] and [neighbour x] are duplicates) */
const struct sect_def cfg_sect_neighbour = {
	"neighbour", SECT_NEIGH, true, KEYS(neigh_keys), open_neigh, NULL
};

const struct sect_def cfg_sect_route = {
	"route", SECT_ROUTE, true, KEYS(route_keys), open_route, finish_route
};
