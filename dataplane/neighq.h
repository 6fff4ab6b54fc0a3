/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * neighq.h - packets a worker holds for a next hop while ARP or Neighbour
 * Discovery resolves it, as Linux keeps them on the neighbour entry
 * (unres_qlen) instead of dropping the first packets to every new next hop.
 *
 * One queue per worker, written by that worker only: no lock, no
 * allocation.  A worker that misses a neighbour holds the frame (Ethernet
 * header built but for the destination MAC), up to NEIGHQ_PER_HOP of them
 * per next hop and NEIGHQ_HOPS next hops; past that it drops them as
 * no-neighbour, as it did before.  It asks the main lcore to resolve the
 * next hop (again every tenth of a second: the main lcore sends one request
 * a second), and sends what it holds, oldest first, as soon as the
 * neighbour table has the MAC: before any later packet to that next hop.
 * After NEIGHQ_TRIES seconds without an answer the packets are dropped as
 * neigh-timeout (Linux: 3 solicitations a second apart, then failed).
 * When a neighbour is deleted or a port set again (dp.neigh_gen moves),
 * and when the worker stops, what it holds is dropped as no-neighbour: every
 * held mbuf is freed and counted.  The main lcore reads only `held`.
 */
#ifndef NEIGHQ_H
#define NEIGHQ_H

#include <stdbool.h>
#include <stdint.h>

#include <rte_ether.h>
#include <rte_mbuf.h>

#include "dpvpn_proto.h"

#define NEIGHQ_PER_HOP	4	/* packets held per next hop (Linux's unres_qlen: 3) */
#define NEIGHQ_HOPS	16	/* next hops one worker waits for at once */
#define NEIGHQ_MAX	(NEIGHQ_PER_HOP * NEIGHQ_HOPS)	/* mbufs a worker holds, at most */
#define NEIGHQ_TRIES	3	/* seconds (a request each) before the packets are dropped */
#define NEIGHQ_ASK_DIV	10	/* the worker asks again every 1/10 s while it waits */

_Static_assert(NEIGHQ_PER_HOP <= UINT8_MAX, "neighq_hop.n is 8 bits");

struct dp_lstats;
struct dp_resolve_req;

/* The packets held for one next hop; family 0: a free slot. */
struct neighq_hop {
	uint64_t since;		/* timer cycles when the first was held */
	uint64_t asked;		/* ... when resolution was last asked for */
	uint16_t port;
	uint8_t family;		/* DPVPN_AF_INET or DPVPN_AF_INET6; 0: free */
	uint8_t n;		/* packets held, oldest first */
	uint8_t addr[16];	/* IPv4 in the first 4 bytes */
	struct rte_mbuf *pkts[NEIGHQ_PER_HOP];
};

struct neighq {
	uint32_t held;		/* packets in all hops (relaxed: the main lcore reads it) */
	uint32_t gen;		/* dp.neigh_gen when the oldest was held */
	struct neighq_hop hops[NEIGHQ_HOPS];
};

/*
 * Hold m, a frame for port whose destination MAC is still to be filled in,
 * for the next hop addr (4 or 16 bytes, by family); or drop it, counted
 * as no-neighbour, if there is no room.  now: rte_get_timer_cycles().
 * True if the caller should ask the main lcore to resolve addr: the first
 * packet for it, or one there was no slot for.
 */
bool neighq_hold(struct neighq *q, struct dp_lstats *st, struct rte_mbuf *m, uint16_t port,
		 uint8_t family, const void *addr, uint64_t now);

/*
 * The next hop was found resolved, mac its address: what is held for it,
 * oldest first, with mac as destination, into out[] (NEIGHQ_PER_HOP at
 * most); returns how many.  The caller sends them before anything newer.
 */
uint16_t neighq_take(struct neighq *q, uint16_t port, uint8_t family, const void *addr,
		     const struct rte_ether_addr *mac, struct rte_mbuf **out);

/*
 * A worker's poll while something is held: packets of next hops that were
 * resolved into out[] (NEIGHQ_MAX at most, each for its m->port, oldest
 * first per next hop; returns how many), the held ones of next hops that
 * did not answer in NEIGHQ_TRIES seconds dropped (neigh-timeout), and the
 * next hops to ask about again into asks[] (NEIGHQ_HOPS at most, *nasks).
 * If dp.neigh_gen moved since they were held, all are dropped (no-neighbour).
 */
uint16_t neighq_poll(struct neighq *q, struct dp_lstats *st, uint64_t now,
		     struct rte_mbuf **out, struct dp_resolve_req *asks, uint16_t *nasks);

/* Drop everything held, counted under why (the worker stops; the table changed). */
void neighq_flush(struct neighq *q, struct dp_lstats *st, enum dpvpn_drop_reason why);

#endif /* NEIGHQ_H */
