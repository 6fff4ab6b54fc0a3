/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ike_punt.h - the IKE punt path: IKE messages that reach an outside port's
 * address (UDP 500, or UDP 4500 behind the non-ESP marker, RFC 3948) go from
 * the worker that received them, within a per-worker rate limit, through a
 * ring to the main lcore, which pushes each to the IKE channel (a control
 * connection that sent IKE_OPEN: dpvpnd) as an IKE_RX message; IKE_TX from
 * that channel is built into a UDP packet here and routed out by worker 0
 * like any packet the gateway sends.  Every step counts: ike_in, ike_out, and
 * the drops ike (no channel), ike-limit, punt-full, short, too-big.  Ports:
 * 500, 4500, and any NAT-T port an SA listens on (the marker on all but 500).
 */
#ifndef IKE_PUNT_H
#define IKE_PUNT_H

#include <stddef.h>
#include <stdint.h>

#include "dp.h"

/* Worker: m (outer IP header first, trimmed to the UDP datagram) is IKE. */
void ike_punt(struct dp_worker *w, struct dp_lstats *st, struct rte_mbuf *m);

/* Main lcore: the channel is fd (IKE_OPEN), or none (-1: it closed). */
int ike_open(int fd, char *err, size_t elen);
void ike_closed(int fd);
/* Main lcore: push what the workers punted. */
void ike_poll(void);
/* Main lcore: IKE_TX, the request's payload of len bytes. */
int ike_tx(const void *payload, uint32_t len, char *err, size_t elen);

#endif /* IKE_PUNT_H */
