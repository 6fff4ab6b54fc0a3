/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * trace.h - capture packets at a named point of the path into a pcapng file
 * (dpvpnctl trace; root only: it can hold cleartext).  Workers copy what
 * passes the chosen point (rte_pcapng_copy, a pool of its own) into a ring
 * while the count lasts; the main lcore writes the file and closes it.  When
 * no trace runs the cost is one compare per burst.  Points without an
 * Ethernet header (before encryption, after decryption) get a made-up one,
 * so the file is plain Ethernet for tshark and scapy.
 */
#ifndef TRACE_H
#define TRACE_H

#include <stdbool.h>
#include <stdint.h>

#include <rte_mbuf.h>

#include "dpvpn_proto.h"

extern volatile uint8_t trace_point;	/* enum dpvpn_trace_point, 0 = none */

int trace_init(void);
/* Main lcore. */
int trace_start(const struct dpvpn_trace_req *req, char *err, size_t len);
void trace_status(struct dpvpn_trace_status *st);
void trace_poll(void);
/* Main lcore: a capture is being written (its ring is polled). */
bool trace_on(void);
void trace_stop(void);

/* Workers: pkts passing point p on port (with an Ethernet header or not). */
void trace_tap_slow(struct rte_mbuf *const *pkts, uint16_t n, uint16_t port, bool eth,
		    bool out);

static inline void
trace_tap(uint8_t p, struct rte_mbuf *const *pkts, uint16_t n, uint16_t port, bool eth, bool out)
{
	if (unlikely(trace_point == p) && n > 0)
		trace_tap_slow(pkts, n, port, eth, out);
}

#endif /* TRACE_H */
