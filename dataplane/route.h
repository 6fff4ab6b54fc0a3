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

#define ROUTE_MAX_DEFAULT	4096	/* --max-routes: prefixes a family */
#define ROUTE_MAX_MIN	16
#define ROUTE_MAX_LIMIT	(1u << 20)
#define ROUTE_MAX_NH	1024
#define ROUTE_MAX_GRP	256	/* ECMP groups of tunnel interfaces */
#define NEIGH_MAX	4096

#include "dpvpn_proto.h"

/* What a next hop is: a port (and gateway), a tunnel interface, an ECMP group. */
enum route_nh_kind {
	ROUTE_NH_PORT = 0,
	ROUTE_NH_TUNIF,
	ROUTE_NH_GROUP,
};

struct route_nh {
	uint16_t port;		/* kind PORT: port; TUNIF: tunif id; GROUP: group */
	uint8_t kind;		/* enum route_nh_kind (in what was padding) */
	uint32_t gw;		/* network order, 0 = on-link */
};

_Static_assert(sizeof(struct route_nh) == 8, "a next hop stays 8 bytes");

struct route6_nh {
	uint16_t port;		/* as route_nh's */
	uint8_t on_link;	/* 1: the destination itself is the next hop */
	uint8_t kind;
	uint8_t gw[16];
};

/* An ECMP group: up to DPVPN_ECMP_MAX tunnel interfaces, found by content. */
struct route_grp {
	uint8_t n;
	uint8_t tunif[DPVPN_ECMP_MAX];
};

_Static_assert(DPVPN_TUNIF_MAX <= 256, "a group member is one byte");

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
extern struct route_grp route_grps[ROUTE_MAX_GRP];

/*
 * max: prefixes a family (--max-routes).  rte_lpm's and rte_lpm6's second-
 * level tables are sized from it too (routes longer than /24, and IPv6).
 */
int route_init(unsigned int max);
int route_add(uint32_t prefix, uint8_t len, uint16_t port, uint32_t gw,
	      char *errbuf, size_t elen);
/* gw NULL: on-link.  IPv6 routes are only added (never changed under readers). */
int route6_add(const uint8_t *prefix, uint8_t len, uint16_t port, const uint8_t *gw,
	       char *errbuf, size_t elen);

/*
 * Main lcore: a route into tunnel interfaces (n = 1) or an ECMP group of them
 * (n <= DPVPN_ECMP_MAX), either family; replaces dst's route if it has one.
 * route_check_tunnel first (n and dst's length; errbuf names the field); that
 * the interfaces exist is the caller's to check (ctl_steps.c).
 */
int route_check_tunnel(const struct dpvpn_prefix *dst, uint8_t n, char *errbuf, size_t elen);
int route_add_tunnel(const struct dpvpn_prefix *dst, const uint16_t *tunif, uint8_t n,
		     char *errbuf, size_t elen);
/* Does a route (or group) lead into tunnel interface id?  (TUNIF_DEL) */
bool route_nh_holds(uint8_t kind, uint16_t idx, uint16_t tunif);

/* Fast path: the next hop of any kind for dst (idx: route_nhs' / route6_nhs'). */
static inline bool
route_lookup_nh(uint32_t dst, uint32_t *idx)
{
	return rte_lpm_lookup(route_lpm, rte_be_to_cpu_32(dst), idx) == 0;
}

static inline bool
route6_lookup_nh(const uint8_t *dst, uint32_t *idx)
{
	return rte_lpm6_lookup(route_lpm6, dst, idx) == 0;
}

/* What a destination's route leads to (route_lookup, route6_lookup). */
enum route_to {
	ROUTE_TO_NONE = 0,	/* no route */
	ROUTE_TO_PORT,		/* out a port: *port and *next are set */
	ROUTE_TO_TUNNEL,	/* into a tunnel interface or an ECMP group of them */
};

/* Fast path: the route of an IPv6 dst (next points into dst or the table). */
static inline enum route_to
route6_lookup(const uint8_t *dst, uint16_t *port, const uint8_t **next)
{
	uint32_t idx;

	if (rte_lpm6_lookup(route_lpm6, dst, &idx) != 0)
		return ROUTE_TO_NONE;
	if (route6_nhs[idx].kind != ROUTE_NH_PORT)
		return ROUTE_TO_TUNNEL;
	*port = route6_nhs[idx].port;
	*next = route6_nhs[idx].on_link ? dst : route6_nhs[idx].gw;
	return ROUTE_TO_PORT;
}

/* Fast path: the route of dst (network order). */
static inline enum route_to
route_lookup(uint32_t dst, uint16_t *port, uint32_t *next)
{
	uint32_t idx;

	if (rte_lpm_lookup(route_lpm, rte_be_to_cpu_32(dst), &idx) != 0)
		return ROUTE_TO_NONE;
	if (route_nhs[idx].kind != ROUTE_NH_PORT)
		return ROUTE_TO_TUNNEL;
	*port = route_nhs[idx].port;
	*next = route_nhs[idx].gw != 0 ? route_nhs[idx].gw : dst;
	return ROUTE_TO_PORT;
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
