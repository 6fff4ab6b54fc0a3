/* SPDX-License-Identifier: BSD-3-Clause */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <rte_byteorder.h>
#include <rte_hash.h>
#include <rte_hash_crc.h>
#include <rte_rcu_qsbr.h>

#include "dp.h"
#include "route.h"

struct rte_lpm *route_lpm;
struct route_nh route_nhs[ROUTE_MAX_NH];
static unsigned int n_nh;

int
route_init(void)
{
	struct rte_lpm_config c = { .max_rules = ROUTE_MAX, .number_tbl8s = 256 };
	struct rte_lpm_rcu_config rc = { .v = dp.rcu, .mode = RTE_LPM_QSBR_MODE_SYNC };

	route_lpm = rte_lpm_create("dpvpn_routes", (int)rte_socket_id(), &c);
	if (route_lpm == NULL)
		return -ENOMEM;
	return rte_lpm_rcu_qsbr_add(route_lpm, &rc);
}

static int
nh_index(uint16_t port, uint32_t gw)
{
	for (unsigned int i = 0; i < n_nh; i++)
		if (route_nhs[i].port == port && route_nhs[i].gw == gw)
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
		snprintf(eb, elen, "route: table full (%d)", rc);
		return rc;
	}
	return 0;
}

/* ---- neighbours ---- */

static struct rte_hash *neigh_hash;
static struct neigh neighs[NEIGH_MAX];
static unsigned int n_neigh;

static uint64_t
neigh_key(uint16_t port, uint32_t addr)
{
	return (uint64_t)port << 32 | addr;
}

int
neigh_init(void)
{
	struct rte_hash_parameters p = {
		.name = "dpvpn_neigh",
		.entries = NEIGH_MAX,
		.key_len = sizeof(uint64_t),
		.hash_func = rte_hash_crc,	/* one crc32 instruction */
		.socket_id = (int)rte_socket_id(),
		.extra_flag = RTE_HASH_EXTRA_FLAGS_RW_CONCURRENCY_LF,
	};

	neigh_hash = rte_hash_create(&p);
	return neigh_hash == NULL ? -ENOMEM : 0;
}

struct neigh *
neigh_get(uint16_t port, uint32_t addr, bool create)
{
	uint64_t key = neigh_key(port, addr);
	struct neigh *n;

	if (rte_hash_lookup_data(neigh_hash, &key, (void **)&n) >= 0)
		return n;
	if (!create || n_neigh == NEIGH_MAX)
		return NULL;
	/* Entries are never freed, so a worker can never see a stale one. */
	n = &neighs[n_neigh];
	n->addr = addr;
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
neigh_set(uint16_t port, uint32_t addr, const struct rte_ether_addr *mac, bool is_static)
{
	struct neigh *n = neigh_get(port, addr, true);

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
neigh_lookup(uint16_t port, uint32_t addr, struct rte_ether_addr *mac)
{
	uint64_t key = neigh_key(port, addr), v;
	struct neigh *n;

	if (rte_hash_lookup_data(neigh_hash, &key, (void **)&n) < 0)
		return false;
	v = __atomic_load_n(&n->mac, __ATOMIC_ACQUIRE);
	if (v == 0)
		return false;
	memcpy(mac->addr_bytes, &v, RTE_ETHER_ADDR_LEN);
	return true;
}
