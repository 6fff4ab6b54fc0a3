/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * config_port.c - the [port NAME] sections: a DPDK port's id, its role
 * (inside or outside), addresses, MTU, an outside port's extra addresses
 * and the port's Linux twin (host-interface).
 * Ids and extra addresses are checked across sections at the end
 * (config_check.c).
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "config_parse.h"

static int key_port_id(struct parser *p, const char *val)
{
	uint64_t v;

	if (cfg_parse_uint(val, false, CFG_PORT_ID_MAX, &v))
		return cfg_kerr(p, "expected a DPDK port id 0..%d, got '%s'", CFG_PORT_ID_MAX,
				val);
	CUR(p, ports)->id = (uint16_t)v;
	CUR(p, ports)->id_line = p->line;
	return 0;
}

static int key_port_role(struct parser *p, const char *val)
{
	if (!strcmp(val, "inside"))
		CUR(p, ports)->role = DPVPN_ROLE_INSIDE;
	else if (!strcmp(val, "outside"))
		CUR(p, ports)->role = DPVPN_ROLE_OUTSIDE;
	else
		return cfg_kerr(p, "expected 'inside' or 'outside', got '%s'", val);
	return 0;
}

static int key_port_mtu(struct parser *p, const char *val)
{
	uint64_t v;

	if (cfg_parse_uint(val, false, DPVPN_PORT_MTU_MAX, &v) || v < DPVPN_MTU_MIN)
		return cfg_kerr(p, "expected an MTU of %d..%d bytes, got '%s'", DPVPN_MTU_MIN,
				DPVPN_PORT_MTU_MAX, val);
	CUR(p, ports)->mtu = (uint16_t)v;
	return 0;
}

/*
 * "198.18.1.1/24, 2001:db8:1::1/64": an IPv4 and/or an IPv6 address with
 * its prefix length, at most one of each family.
 */
static int key_port_address(struct parser *p, const char *val)
{
	struct cfg_port *port = CUR(p, ports);
	char *list = strdup(val), *item, *next;
	char b1[INET6_ADDRSTRLEN], b2[INET6_ADDRSTRLEN];
	int rc = 0;

	if (!list)
		return cfg_kerr(p, "out of memory");
	for (item = list; item; item = next) {
		struct cfg_prefix pfx, *slot;

		next = strchr(item, ',');
		if (next)
			*next++ = '\0';
		item = cfg_trim(item);
		if (cfg_parse_cidr(item, &pfx) || pfx.len == 0 || cfg_addr_is_zero(&pfx.addr)) {
			rc = cfg_kerr(p, "expected an IPv4 address with prefix length 1..32 "
				      "(198.18.1.1/24) or an IPv6 address with prefix length "
				      "1..128 (2001:db8:1::1/64), got '%s'", item);
			continue;
		}
		slot = pfx.addr.family == DPVPN_AF_INET ? &port->addr4 : &port->addr6;
		if (slot->addr.family) {
			rc = cfg_kerr(p, "two %s addresses, %s/%u and %s/%u: give at most one "
				      "per family", cfg_family_name(pfx.addr.family),
				      cfg_fmt_addr(&slot->addr, b1), slot->len,
				      cfg_fmt_addr(&pfx.addr, b2), pfx.len);
			continue;
		}
		*slot = pfx;
	}
	free(list);
	if (rc != 0)
		p->port_addr_bad = true;	/* tunnels' local is not checked against it */
	return rc;
}

/*
 * More IPv4 addresses of an outside port, as one prefix: a gateway with a
 * block of public addresses (or a tester that is many peers).  Checked
 * against role and address at the end (check_extra), when both are known.
 */
static int key_port_extra(struct parser *p, const char *val)
{
	struct cfg_port *port = CUR(p, ports);
	struct cfg_prefix pfx;
	int rc;

	port->extra_line = p->line;
	if ((rc = cfg_parse_net(p, val, &pfx)) != 0)
		return rc;
	if (pfx.addr.family != DPVPN_AF_INET || pfx.len == 0)
		return cfg_kerr(p, "expected an IPv4 prefix of length 1..32 (198.19.128.0/17), "
				"got '%s' (IPv6 extra addresses are not supported)", val);
	port->extra4 = pfx;
	return 0;
}

/*
 * The port's Linux twin (doc/host-path.md): a Linux interface name as
 * dev_valid_name() takes it, without ',' or '=' (DPDK's device arguments
 * carry it).  Unique across ports: checked at the end (check_host).
 */
static int key_port_host(struct parser *p, const char *val)
{
	struct cfg_port *port = CUR(p, ports);

	_Static_assert(sizeof(port->host_iface) == 16, "cfg_valid_ifname's limit");
	if (!cfg_valid_ifname(val))
		return cfg_kerr(p, "expected a Linux interface name (1..15 bytes, not '.' or "
				"'..', none of / : , = or blanks), got '%s'", val);
	strcpy(port->host_iface, val);
	port->host_line = p->line;
	return 0;
}

int cfg_open_array(struct parser *p, void **arr, size_t *n, size_t size)
{
	char *a = realloc(*arr, (*n + 1) * size);

	if (!a)
		return -1;
	memset(a + *n * size, 0, size);
	*arr = a;
	p->idx = (*n)++;
	return 0;
}

static int open_port(struct parser *p)
{
	struct cfg *c = p->cfg;

	if (cfg_open_array(p, (void **)&c->ports, &c->n_ports, sizeof(*c->ports)))
		return -1;
	strcpy(CUR(p, ports)->name, p->sect_name);
	CUR(p, ports)->line = p->sect_line;
	return 0;
}

static const struct key_def port_keys[] = {
	{ "id", key_port_id, true },
	{ "role", key_port_role, true },
	{ "address", key_port_address, true },
	{ "mtu", key_port_mtu, false },
	{ "extra-addresses", key_port_extra, false },
	{ "host-interface", key_port_host, false },
};

const struct sect_def cfg_sect_port = {
	"port", SECT_PORT, true, KEYS(port_keys), open_port, NULL
};
