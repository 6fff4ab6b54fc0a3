/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * config_route.c - the [neighbor NAME] (or [neighbour NAME]) and [route NAME]
 * sections: static neighbours and routes.  The port they name is resolved
 * once every [port] is known (config_check.c).
 */
#define _GNU_SOURCE
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
	{ "port", key_route_port, true },
	{ "via", key_route_via, false },
};

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
