/* SPDX-License-Identifier: BSD-3-Clause */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <rte_byteorder.h>
#include <rte_errno.h>
#include <rte_hash.h>
#include <rte_hash_crc.h>
#include <rte_rcu_qsbr.h>

#include "dp.h"
#include "route.h"

struct rte_lpm *route_lpm;
struct route_nh route_nhs[ROUTE_MAX_NH];
static unsigned int n_nh;
struct rte_lpm6 *route_lpm6;
struct route6_nh route6_nhs[ROUTE_MAX_NH];
static unsigned int n_nh6;
struct route_grp route_grps[ROUTE_MAX_GRP];
static unsigned int route_max;	/* --max-routes */
static unsigned int n_grp;

int
route_init(unsigned int max)
{
	/* 1 KiB per tbl8: what a default of 4096 gave before, more for more */
	struct rte_lpm_config c = { .max_rules = max, .number_tbl8s = RTE_MAX(256u, max / 16) };
	struct rte_lpm6_config c6 = { .max_rules = max, .number_tbl8s = RTE_MAX(1024u, max / 4) };
	struct rte_lpm_rcu_config rc = { .v = dp.rcu, .mode = RTE_LPM_QSBR_MODE_SYNC };

	route_max = max;
	route_lpm = rte_lpm_create("dpvpn_routes", (int)rte_socket_id(), &c);
	route_lpm6 = rte_lpm6_create("dpvpn_routes6", (int)rte_socket_id(), &c6);
	if (route_lpm == NULL || route_lpm6 == NULL)
		return -ENOMEM;
	return rte_lpm_rcu_qsbr_add(route_lpm, &rc);
}

static int
nh6_index(uint16_t port, const uint8_t *gw)
{
	for (unsigned int i = 0; i < n_nh6; i++)
		if (route6_nhs[i].kind == ROUTE_NH_PORT && route6_nhs[i].port == port &&
		    route6_nhs[i].on_link == (gw == NULL) &&
		    (gw == NULL || memcmp(route6_nhs[i].gw, gw, 16) == 0))
			return (int)i;
	if (n_nh6 == ROUTE_MAX_NH)
		return -1;
	route6_nhs[n_nh6] = (struct route6_nh){ .port = port, .on_link = gw == NULL };
	if (gw != NULL)
		memcpy(route6_nhs[n_nh6].gw, gw, 16);
	rte_smp_wmb();
	return (int)n_nh6++;
}

int
route6_add(const uint8_t *prefix, uint8_t len, uint16_t port, const uint8_t *gw,
	   char *eb, size_t elen)
{
	uint8_t net[16];
	int nh, rc;

	if (len > 128) {
		snprintf(eb, elen, "route.dst.len: %u > 128", len);
		return -EINVAL;
	}
	if (port >= dp.n_ports) {
		snprintf(eb, elen, "route.port_id: %u: no such port", port);
		return -ENODEV;
	}
	nh = nh6_index(port, gw);
	if (nh < 0) {
		snprintf(eb, elen, "route.gateway: next-hop table full (%u)", ROUTE_MAX_NH);
		return -ENOSPC;
	}
	memcpy(net, prefix, 16);
	dp_mask6(net, len);
	rc = rte_lpm6_add(route_lpm6, net, len, (uint32_t)nh);
	if (rc < 0) {
		snprintf(eb, elen, "route: IPv6 table full (--max-routes %u a family): %s",
			 route_max, rte_strerror(-rc));
		return rc;
	}
	return 0;
}

static int
nh_index(uint16_t port, uint32_t gw)
{
	for (unsigned int i = 0; i < n_nh; i++)
		if (route_nhs[i].kind == ROUTE_NH_PORT && route_nhs[i].port == port &&
		    route_nhs[i].gw == gw)
			return (int)i;
	if (n_nh == ROUTE_MAX_NH)
		return -1;
	/* Written before the LPM entry that points at it is published. */
	route_nhs[n_nh] = (struct route_nh){ .port = port, .gw = gw };
	rte_smp_wmb();
	return (int)n_nh++;
}

int
route_add(uint32_t prefix, uint8_t len, uint16_t port, uint32_t gw, char *eb, size_t elen)
{
	int nh, rc;

	if (len > 32) {
		snprintf(eb, elen, "route.prefix_len: %u > 32", len);
		return -EINVAL;
	}
	if (port >= dp.n_ports) {
		snprintf(eb, elen, "route.port_id: %u: no such port", port);
		return -ENODEV;
	}
	nh = nh_index(port, gw);
	if (nh < 0) {
		snprintf(eb, elen, "route.gateway: next-hop table full (%u)", ROUTE_MAX_NH);
		return -ENOSPC;
	}
	rc = rte_lpm_add(route_lpm, rte_be_to_cpu_32(prefix), len, (uint32_t)nh);
	if (rc < 0) {
		snprintf(eb, elen, "route: table full (--max-routes %u a family): %s", route_max,
			 rte_strerror(-rc));
		return rc;
	}
	return 0;
}

/* ---- next hops into tunnels ---- */

/* The group of these members (in this order: it decides each flow's member). */
static int
grp_index(const uint16_t *tunif, uint8_t n)
{
	struct route_grp g = { .n = n };

	for (uint8_t i = 0; i < n; i++)
		g.tunif[i] = (uint8_t)tunif[i];
	for (unsigned int i = 0; i < n_grp; i++)
		if (memcmp(&route_grps[i], &g, sizeof(g)) == 0)
			return (int)i;
	if (n_grp == ROUTE_MAX_GRP)
		return -1;
	route_grps[n_grp] = g;
	rte_smp_wmb();
	return (int)n_grp++;
}

/* The next hop entry (either family's table) of kind with index idx. */
static int
tunnel_nh(bool v6, uint8_t kind, uint16_t idx)
{
	unsigned int *n = v6 ? &n_nh6 : &n_nh;

	for (unsigned int i = 0; i < *n; i++)
		if (v6 ? route6_nhs[i].kind == kind && route6_nhs[i].port == idx :
			 route_nhs[i].kind == kind && route_nhs[i].port == idx)
			return (int)i;
	if (*n == ROUTE_MAX_NH)
		return -1;
	if (v6)
		route6_nhs[*n] = (struct route6_nh){ .port = idx, .kind = kind };
	else
		route_nhs[*n] = (struct route_nh){ .port = idx, .kind = kind };
	rte_smp_wmb();
	return (int)(*n)++;
}

int
route_check_tunnel(const struct dpvpn_prefix *dst, uint8_t n, char *eb, size_t elen)
{
	bool v6 = dst->family == DPVPN_AF_INET6;

	if (n == 0 || n > DPVPN_ECMP_MAX) {
		snprintf(eb, elen, "route.n_tunif: %u is not 1..%u", n, DPVPN_ECMP_MAX);
		return -EINVAL;
	}
	if (dst->len > (v6 ? 128 : 32)) {
		snprintf(eb, elen, "route.dst.len: %u > %u", dst->len, v6 ? 128 : 32);
		return -EINVAL;
	}
	return 0;
}

int
route_add_tunnel(const struct dpvpn_prefix *dst, const uint16_t *tunif, uint8_t n,
		 char *eb, size_t elen)
{
	bool v6 = dst->family == DPVPN_AF_INET6;
	uint8_t net[16];
	int nh, g = -1, rc;

	if (n > 1 && (g = grp_index(tunif, n)) < 0) {
		snprintf(eb, elen, "route.tunif: ECMP group table full (%u)", ROUTE_MAX_GRP);
		return -ENOSPC;
	}
	nh = n > 1 ? tunnel_nh(v6, ROUTE_NH_GROUP, (uint16_t)g) :
		     tunnel_nh(v6, ROUTE_NH_TUNIF, tunif[0]);
	if (nh < 0) {
		snprintf(eb, elen, "route.tunif: next-hop table full (%u)", ROUTE_MAX_NH);
		return -ENOSPC;
	}
	if (!v6) {
		rc = rte_lpm_add(route_lpm, rte_be_to_cpu_32(dst->v4 & dp_mask(dst->len)),
				 dst->len, (uint32_t)nh);
	} else {
		memcpy(net, dst->v6, 16);
		dp_mask6(net, dst->len);
		rc = rte_lpm6_add(route_lpm6, net, dst->len, (uint32_t)nh);
	}
	if (rc < 0)
		snprintf(eb, elen, "route: table full (--max-routes %u a family): %s", route_max,
			 rte_strerror(-rc));
	return rc < 0 ? rc : 0;
}

bool
route_nh_holds(uint8_t kind, uint16_t idx, uint16_t tunif)
{
	if (kind == ROUTE_NH_TUNIF)
		return idx == tunif;
	if (kind != ROUTE_NH_GROUP)
		return false;
	for (uint8_t i = 0; i < route_grps[idx].n; i++)
		if (route_grps[idx].tunif[i] == tunif)
			return true;
	return false;
}

/* ---- neighbours ---- */

static struct rte_hash *neigh_hash;
static struct neigh neighs[NEIGH_MAX];
static unsigned int n_neigh;

struct neigh_key {
	uint16_t port;
	uint8_t family;
	uint8_t zero;
	uint8_t addr[16];
};

static struct neigh_key
neigh_key(uint16_t port, uint8_t family, const void *addr)
{
	struct neigh_key k = { .port = port, .family = family };

	memcpy(k.addr, addr, family == DPVPN_AF_INET6 ? 16 : 4);
	return k;
}

int
neigh_init(void)
{
	struct rte_hash_parameters p = {
		.name = "dpvpn_neigh",
		.entries = NEIGH_MAX,
		.key_len = sizeof(struct neigh_key),
		.hash_func = rte_hash_crc,	/* one crc32 instruction */
		.socket_id = (int)rte_socket_id(),
		.extra_flag = RTE_HASH_EXTRA_FLAGS_RW_CONCURRENCY_LF,
	};

	neigh_hash = rte_hash_create(&p);
	return neigh_hash == NULL ? -ENOMEM : 0;
}

struct neigh *
neigh_get(uint16_t port, uint8_t family, const void *addr, bool create)
{
	struct neigh_key key = neigh_key(port, family, addr);
	struct neigh *n;

	if (rte_hash_lookup_data(neigh_hash, &key, (void **)&n) >= 0)
		return n;
	if (!create || n_neigh == NEIGH_MAX)
		return NULL;
	/* Entries are never freed, so a worker can never see a stale one. */
	n = &neighs[n_neigh];
	memcpy(n->addr, key.addr, sizeof(n->addr));
	n->family = family;
	n->port = port;
	if (rte_hash_add_key_data(neigh_hash, &key, n) < 0)
		return NULL;
	n_neigh++;
	return n;
}

static uint64_t
mac_to_u64(const struct rte_ether_addr *mac)
{
	uint64_t v = 0;

	memcpy(&v, mac->addr_bytes, RTE_ETHER_ADDR_LEN);
	return v;
}

int
neigh_set(uint16_t port, uint8_t family, const void *addr, const struct rte_ether_addr *mac,
	  bool is_static)
{
	struct neigh *n = neigh_get(port, family, addr, true);

	if (n == NULL)
		return -ENOSPC;
	if (n->is_static && !is_static)
		return 0;
	n->is_static |= is_static;
	/* One 64-bit store: a worker sees the old or the new MAC, never half. */
	__atomic_store_n(&n->mac, mac_to_u64(mac), __ATOMIC_RELEASE);
	return 0;
}

bool
neigh_lookup(uint16_t port, uint8_t family, const void *addr, struct rte_ether_addr *mac)
{
	struct neigh_key key = neigh_key(port, family, addr);
	uint64_t v;
	struct neigh *n;

	if (rte_hash_lookup_data(neigh_hash, &key, (void **)&n) < 0)
		return false;
	v = __atomic_load_n(&n->mac, __ATOMIC_ACQUIRE);
	if (v == 0)
		return false;
	memcpy(mac->addr_bytes, &v, RTE_ETHER_ADDR_LEN);
	return true;
}

int
route_del(uint32_t prefix, uint8_t len)
{
	return rte_lpm_delete(route_lpm, rte_be_to_cpu_32(prefix) & (len ? ~0u << (32 - len) : 0),
			      len);
}

/* rte_lpm6 has no RCU: readers may see the old next hop for a moment (never freed memory). */
int
route6_del(const uint8_t *prefix, uint8_t len)
{
	uint8_t net[16];

	memcpy(net, prefix, 16);
	dp_mask6(net, len);
	return rte_lpm6_delete(route_lpm6, net, len);
}

int
neigh_forget(uint16_t port, uint8_t family, const void *addr)
{
	struct neigh *n = neigh_get(port, family, addr, false);

	if (n == NULL)
		return -ENOENT;
	n->is_static = 0;
	n->asked_tsc = 0;
	__atomic_store_n(&n->mac, 0, __ATOMIC_RELEASE);
	return 0;
}

unsigned int
neigh_count(void)
{
	return n_neigh;
}

bool
neigh_at(unsigned int idx, struct neigh *out)
{
	if (idx >= n_neigh)
		return false;
	*out = neighs[idx];
	out->mac = __atomic_load_n(&neighs[idx].mac, __ATOMIC_ACQUIRE);
	return true;
}
