/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * config_check.c - checks across sections, run once the whole file is read
 * (cfg_check_all): port ids and references, extra addresses, [ha]'s virtual
 * addresses (config_ha.c), tunnels' local addresses (a virtual address on an
 * outside port counts), UDP and fragmentation options, lifetimes and in-SPIs;
 * and cfg_check_family, the one-family check that [route] and [tunnel] run at
 * their section's end.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config_parse.h"

/* "B: x is an IPv6 address, A y is IPv4: ..." at B's line, when both were given
 * and their families differ. */
void cfg_check_family(struct parser *p, const char *sect, const char *name, int line,
		      const char *key_b, const struct cfg_addr *b, int len_b,
		      const char *key_a, const struct cfg_addr *a, int len_a,
		      const char *what, const char *rule)
{
	char ba[INET6_ADDRSTRLEN], bb[INET6_ADDRSTRLEN], sa[12] = "", sb[12] = "";

	if (!a->family || !b->family || a->family == b->family)
		return;
	if (len_a >= 0)
		snprintf(sa, sizeof(sa), "/%d", len_a);
	if (len_b >= 0)
		snprintf(sb, sizeof(sb), "/%d", len_b);
	cfg_err_at(p, line, "[%s %s] %s: %s%s is an %s %s, %s %s%s is %s: %s", sect, name, key_b,
		   cfg_fmt_addr(b, bb), sb, cfg_family_name(b->family), what, key_a,
		   cfg_fmt_addr(a, ba), sa, cfg_family_name(a->family), rule);
}

static int find_port(const struct cfg *c, const char *ref)
{
	uint64_t id;
	bool numeric = cfg_parse_uint(ref, false, CFG_PORT_ID_MAX, &id) == 0;

	for (size_t i = 0; i < c->n_ports; i++)
		if (!strcmp(c->ports[i].name, ref) || (numeric && c->ports[i].id == id))
			return (int)i;
	return -1;
}

static void resolve_ports(struct parser *p)
{
	struct cfg *c = p->cfg;
	int i = -1;

	for (size_t n = 0; n < c->n_neighs; n++) {
		struct cfg_neigh *e = &c->neighs[n];

		if (e->port_line && (i = find_port(c, e->port_ref)) < 0)
			cfg_err_at(p, e->port_line, "[%s %s] port: no [port] named or numbered "
				   "'%s'", e->section, e->name, e->port_ref);
		else if (e->port_line)
			e->port_id = c->ports[i].id;
	}
	for (size_t n = 0; n < c->n_routes; n++) {
		struct cfg_route *e = &c->routes[n];

		if (!e->port_line)
			continue;
		if ((i = find_port(c, e->port_ref)) >= 0)
			e->port_id = c->ports[i].id;
		else if (e->in_routes)
			cfg_err_at(p, e->port_line, "[routes] route: no [port] named or "
				   "numbered '%s'", e->port_ref);
		else
			cfg_err_at(p, e->port_line, "[route %s] port: no [port] named or "
				   "numbered '%s'", e->name, e->port_ref);
	}
}

static void check_port_ids(struct parser *p)
{
	const struct cfg *c = p->cfg;

	for (size_t i = 0; i < c->n_ports; i++)
		for (size_t j = 0; j < i; j++)
			if (c->ports[i].id_line && c->ports[j].id_line &&
			    c->ports[i].id == c->ports[j].id) {
				cfg_err_at(p, c->ports[i].id_line, "[port %s] id: %u is already "
					   "the id of [port %s]", c->ports[i].name, c->ports[i].id,
					   c->ports[j].name);
				break;
			}
}

/* extra-addresses: an outside port's, beside its IPv4 address. */
static void check_extra(struct parser *p)
{
	char buf[INET6_ADDRSTRLEN];

	for (size_t i = 0; i < p->cfg->n_ports; i++) {
		const struct cfg_port *port = &p->cfg->ports[i];

		if (!port->extra4.addr.family)
			continue;
		if (port->role != DPVPN_ROLE_OUTSIDE)
			cfg_err_at(p, port->extra_line, "[port %s] extra-addresses: only an "
				   "outside port takes them (role = outside)", port->name);
		else if (!port->addr4.addr.family)
			cfg_err_at(p, port->extra_line, "[port %s] extra-addresses: %s/%u needs "
				   "the port's own IPv4 address (address =) too", port->name,
				   cfg_fmt_addr(&port->extra4.addr, buf), port->extra4.len);
	}
}

/* host-interface: one port's or tunnel's each, and not beside extra-addresses (yet). */
static void check_host(struct parser *p)
{
	const struct cfg *c = p->cfg;

	for (size_t i = 0; i < c->n_tunnels; i++) {
		const struct cfg_tunnel *t = c->tunnels[i];
		bool dup = false, twin = false;

		for (size_t j = 0; j < c->n_ports; j++)
			twin |= c->ports[j].host_iface[0] != '\0';
		if (t->host_access && t->route)
			cfg_err_at(p, t->host_access_line, "[tunnel %s] host-access: not with "
				   "mode = route (what is for the host arrives through the "
				   "tunnel's own twin: host-interface)", t->name);
		else if (t->host_access && !twin)
			cfg_err_at(p, t->host_access_line, "[tunnel %s] host-access: no [port] "
				   "has a host-interface to give it to", t->name);
		if (!t->host_iface[0])
			continue;
		for (size_t j = 0; j < c->n_ports && !dup; j++)
			if (!strcmp(t->host_iface, c->ports[j].host_iface)) {
				cfg_err_at(p, t->host_line, "[tunnel %s] host-interface: %s is "
					   "already the host interface of [port %s]", t->name,
					   t->host_iface, c->ports[j].name);
				dup = true;
			}
		for (size_t j = 0; j < i && !dup; j++)
			if (!strcmp(t->host_iface, c->tunnels[j]->host_iface)) {
				cfg_err_at(p, t->host_line, "[tunnel %s] host-interface: %s is "
					   "already the host interface of [tunnel %s]", t->name,
					   t->host_iface, c->tunnels[j]->name);
				dup = true;
			}
	}

	for (size_t i = 0; i < c->n_ports; i++) {
		const struct cfg_port *port = &c->ports[i];

		if (!port->host_iface[0])
			continue;
		if (port->extra4.addr.family)
			cfg_err_at(p, port->host_line, "[port %s] host-interface: not with "
				   "extra-addresses (the twin would need every address of the "
				   "block)", port->name);
		for (size_t j = 0; j < i; j++)
			if (!strcmp(port->host_iface, c->ports[j].host_iface)) {
				cfg_err_at(p, port->host_line, "[port %s] host-interface: %s is "
					   "already the host interface of [port %s]", port->name,
					   port->host_iface, c->ports[j].name);
				break;
			}
	}
}

/* Is a within p (IPv4, host order)? */
static bool in_prefix4(const struct cfg_prefix *p, const struct cfg_addr *a)
{
	return p->addr.family == DPVPN_AF_INET && a->family == DPVPN_AF_INET &&
	       (a->v4 & cfg_prefix_mask(p->len)) == p->addr.v4;
}

/* An [ha] virtual address on port (the node that is master has it). */
static bool is_port_vip(const struct cfg *c, const struct cfg_port *port,
			const struct cfg_addr *addr)
{
	for (size_t i = 0; i < c->ha.n_vips; i++)
		if (!strcmp(c->ha.vips[i].port, port->name) &&
		    cfg_addr_equal(&c->ha.vips[i].addr.addr, addr))
			return true;
	return false;
}

/* An outside port's address, one of its extra-addresses, or a virtual address on it. */
bool cfg_is_outside_addr(const struct cfg *c, const struct cfg_addr *addr, uint16_t *port_id)
{
	for (size_t i = 0; i < c->n_ports; i++) {
		const struct cfg_port *port = &c->ports[i];
		const struct cfg_prefix *a = addr->family == DPVPN_AF_INET6 ? &port->addr6 :
									     &port->addr4;

		if (port->role != DPVPN_ROLE_OUTSIDE)
			continue;
		if ((a->addr.family && (cfg_addr_equal(&a->addr, addr) ||
					in_prefix4(&port->extra4, addr))) ||
		    is_port_vip(c, port, addr)) {
			if (port_id != NULL)
				*port_id = port->id;
			return true;
		}
	}
	return false;
}

static bool any_extra(const struct cfg *c)
{
	for (size_t i = 0; i < c->n_ports; i++)
		if (c->ports[i].extra4.addr.family)
			return true;
	return false;
}

static bool is_outside_addr(const struct cfg *c, const struct cfg_addr *addr)
{
	return cfg_is_outside_addr(c, addr, NULL);
}

struct spi_ref {
	uint32_t spi;
	size_t idx;
};

static int spi_ref_cmp(const void *a, const void *b)
{
	const struct spi_ref *x = a, *y = b;

	if (x->spi != y->spi)
		return x->spi < y->spi ? -1 : 1;
	return x->idx < y->idx ? -1 : x->idx > y->idx;
}

/* Each in-spi once: sorted, so that many tunnels check in O(n log n). */
static void check_in_spis(struct parser *p)
{
	const struct cfg *c = p->cfg;
	struct spi_ref *refs = calloc(c->n_tunnels + 1, sizeof(*refs));
	size_t n = 0, first = 0;

	if (refs == NULL)
		return;
	for (size_t i = 0; i < c->n_tunnels; i++)
		if (c->tunnels[i]->in.spi && !c->tunnels[i]->ike.on)	/* IKE picks its own */
			refs[n++] = (struct spi_ref){ c->tunnels[i]->in.spi, i };
	qsort(refs, n, sizeof(*refs), spi_ref_cmp);
	for (size_t i = 1; i < n; i++) {
		const struct cfg_tunnel *t = c->tunnels[refs[i].idx];

		if (refs[i].spi != refs[i - 1].spi) {
			first = i;
			continue;
		}
		cfg_err_at(p, t->in.spi_line, "[tunnel %s] in-spi: 0x%08x is already "
			   "the in-spi of [tunnel %s]", t->name, t->in.spi,
			   c->tunnels[refs[first].idx]->name);
	}
	free(refs);
}

/* A soft limit must come before its hard one. */
static void check_life(struct parser *p, const struct cfg_tunnel *t)
{
	static const char *const what[] = { "bytes", "packets", "seconds" };
	uint64_t soft[3] = { t->life_bytes[0], t->life_packets[0], t->life_seconds[0] };
	uint64_t hard[3] = { t->life_bytes[1], t->life_packets[1], t->life_seconds[1] };

	for (int i = 0; i < 3; i++)
		if (hard[i] && soft[i] > hard[i])
			cfg_err_at(p, t->line, "[tunnel %s] soft-%s %llu is above hard-%s %llu",
				   t->name, what[i], (unsigned long long)soft[i], what[i],
				   (unsigned long long)hard[i]);
}

static void check_tunnels(struct parser *p)
{
	const struct cfg *c = p->cfg;
	char buf[INET6_ADDRSTRLEN];

	for (size_t i = 0; i < c->n_tunnels; i++) {
		const struct cfg_tunnel *t = c->tunnels[i];

		if (t->local.family && !p->port_addr_bad && !is_outside_addr(c, &t->local))
			cfg_err_at(p, t->local_line, "[tunnel %s] local: %s is not the address of "
				   "an outside port%s%s", t->name, cfg_fmt_addr(&t->local, buf),
				   any_extra(c) && t->local.family == DPVPN_AF_INET ?
				   " (nor in its extra-addresses)" : "",
				   c->ha.n_vips ? " (nor an [ha] virtual-address on one)" : "");
		if (t->port_line && !t->udp)
			cfg_err_at(p, t->port_line, "[tunnel %s] local-port/remote-port/"
				   "local-ports need encap = udp", t->name);
		if (t->frag_outer && t->local.family == DPVPN_AF_INET6)
			cfg_err_at(p, t->frag_line, "[tunnel %s] fragment: outer fragmentation "
				   "needs an IPv4 outer header (local/remote)", t->name);
		check_life(p, t);
	}
	check_in_spis(p);
}

void cfg_check_all(struct parser *p)
{
	if (!p->cfg->n_ports)
		cfg_err_at(p, p->line ? p->line : 1, "no [port NAME] section: at least one is "
			   "needed");
	check_port_ids(p);
	check_extra(p);
	check_host(p);
	resolve_ports(p);
	cfg_check_ike_sa(p);	/* first: children get their parent's addresses */
	cfg_check_ha(p);
	check_tunnels(p);
	cfg_check_route_tunnels(p);
}
