/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * route.h - IPv4 routes (rte_lpm, RCU-protected), IPv6 routes (rte_lpm6) and
 * the neighbour table (ARP and Neighbour Discovery, one hash for both).  The main lcore writes both; workers only look up.  A worker that
 * misses a neighbour drops the packet (counted) and asks the main lcore to
 * resolve the address through its resolve ring.
 */
#ifndef ROUTE_H
#define ROUTE_H

#include <stdbool.h>
#include <stdint.h>

#include <rte_ether.h>
#include <rte_lpm.h>
#include <rte_lpm6.h>

#define ROUTE_MAX	4096
#define ROUTE_MAX_NH	1024
#define NEIGH_MAX	4096

struct route_nh {
	uint16_t port;
	uint32_t gw;		/* network order, 0 = on-link */
};

struct route6_nh {
	uint16_t port;
	uint8_t on_link;	/* 1: the destination itself is the next hop */
	uint8_t gw[16];
};

struct neigh {
	uint64_t mac;		/* 48-bit MAC in the low bytes; 0 = unresolved */
	uint64_t asked_tsc;	/* last ARP request / NS sent (main lcore) */
	uint8_t addr[16];	/* IPv4 in the first 4 bytes */
	uint16_t port;
	uint8_t family;
	uint8_t is_static;
};

extern struct rte_lpm *route_lpm;
extern struct route_nh route_nhs[ROUTE_MAX_NH];
extern struct rte_lpm6 *route_lpm6;
extern struct route6_nh route6_nhs[ROUTE_MAX_NH];

int route_init(void);
int route_add(uint32_t prefix, uint8_t len, uint16_t port, uint32_t gw,
	      char *errbuf, size_t elen);
/* gw NULL: on-link.  IPv6 routes are only added (never changed under readers). */
int route6_add(const uint8_t *prefix, uint8_t len, uint16_t port, const uint8_t *gw,
	       char *errbuf, size_t elen);

/* Fast path: next hop for an IPv6 dst (next points into dst or the table). */
static inline bool
route6_lookup(const uint8_t *dst, uint16_t *port, const uint8_t **next)
{
	uint32_t idx;

	if (rte_lpm6_lookup(route_lpm6, dst, &idx) != 0)
		return false;
	*port = route6_nhs[idx].port;
	*next = route6_nhs[idx].on_link ? dst : route6_nhs[idx].gw;
	return true;
}

/* Fast path: next hop for dst; false if there is no route. */
static inline bool
route_lookup(uint32_t dst, uint16_t *port, uint32_t *next)
{
	uint32_t idx;

	if (rte_lpm_lookup(route_lpm, rte_be_to_cpu_32(dst), &idx) != 0)
		return false;
	*port = route_nhs[idx].port;
	*next = route_nhs[idx].gw != 0 ? route_nhs[idx].gw : dst;
	return true;
}

/* Remove a route (main lcore); -ENOENT if there is none for the prefix. */
int route_del(uint32_t prefix, uint8_t len);
int route6_del(const uint8_t *prefix, uint8_t len);

int neigh_init(void);
/* Forget a neighbour: unresolved again (entries are never freed, see route.c). */
int neigh_forget(uint16_t port, uint8_t family, const void *addr);
/* How many neighbour entries there are (main lcore). */
unsigned int neigh_count(void);
/* The idx-th neighbour entry; false past the end. */
bool neigh_at(unsigned int idx, struct neigh *out);
/*
 * addr: 4 bytes (family DPVPN_AF_INET) or 16 (DPVPN_AF_INET6), network order.
 * Main lcore: create or update; static entries are not overwritten by ARP/ND.
 */
int neigh_set(uint16_t port, uint8_t family, const void *addr,
	      const struct rte_ether_addr *mac, bool is_static);
/* Main lcore: entry to resolve, created unresolved if missing. */
struct neigh *neigh_get(uint16_t port, uint8_t family, const void *addr, bool create);
/* Fast path: the MAC of a resolved neighbour. */
bool neigh_lookup(uint16_t port, uint8_t family, const void *addr, struct rte_ether_addr *mac);

#endif /* ROUTE_H */
