/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ip_output.h - the output stage (ip_output.c): route, resolve and queue a
 * burst for transmission.
 */
#ifndef DPVPN_IP_OUTPUT_H
#define DPVPN_IP_OUTPUT_H

#include "dp.h"

/*
 * Decrypted packets being forwarded (route_tx's fwd): they take their one
 * TTL / hop-limit step here, once their route is known; those routed into
 * a tunnel go to transit (NULL: dropped no-route); a packet whose TTL
 * expires is dropped, and the ICMP Time Exceeded for its source goes to
 * tunnel, with m->port the inside port whose address it comes from (the
 * one the packet would have left by; routed into a tunnel: the first
 * inside port), for the poll loop to encrypt back into the tunnel.
 */
struct dp_fwd {
	struct dp_out *transit;
	struct dp_out *tunnel;
};

/*
 * Route, resolve and queue IPv4 and IPv6 packets (data at their IP header)
 * for transmission.  fwd: decrypted packets, forwarded (above); NULL: what
 * the gateway sends (ESP, its own packets: no step, and a route into a
 * tunnel is no-route).
 */
void route_tx(struct dp_worker *w, struct dp_lstats *st, struct rte_mbuf **pkts, uint16_t n,
	      const struct dp_fwd *fwd);
/* route_tx of what the gateway sends (fwd NULL). */
void worker_tx(struct dp_worker *w, struct dp_lstats *st, struct rte_mbuf **pkts, uint16_t n);
/* Packets held for next hops that are resolved now go out; the rest wait or time out. */
void send_resolved(struct dp_worker *w, struct dp_lstats *st);

#endif
