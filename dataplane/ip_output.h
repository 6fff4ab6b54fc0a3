/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ip_output.h - the output stage (ip_output.c): route, resolve and queue a
 * burst for transmission.
 */
#ifndef DPVPN_IP_OUTPUT_H
#define DPVPN_IP_OUTPUT_H

#include "dp.h"

/*
 * Route, resolve and queue IPv4 and IPv6 packets (data at their IP header)
 * for transmission; those routed into a tunnel go to transit (NULL:
 * dropped no-route).
 */
void route_tx(struct dp_worker *w, struct dp_lstats *st, struct rte_mbuf **pkts, uint16_t n,
	      struct dp_out *transit);
/* route_tx with nothing routed into a tunnel: those are dropped no-route. */
void worker_tx(struct dp_worker *w, struct dp_lstats *st, struct rte_mbuf **pkts, uint16_t n);
/* Packets held for next hops that are resolved now go out; the rest wait or time out. */
void send_resolved(struct dp_worker *w, struct dp_lstats *st);

#endif
