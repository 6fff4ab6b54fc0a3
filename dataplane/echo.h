/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * echo.h - packets addressed to the gateway itself: it answers ping and
 * nothing else (no local stack).
 *
 * An ICMP echo request (RFC 792, type 8) or ICMPv6 echo request (RFC 4443
 * 4.1, type 128) to one of the gateway's addresses becomes the echo reply in
 * the same mbuf: addresses swapped, type 0 / 129, the ICMP checksum updated
 * for the type alone (RFC 1624; an ICMPv6 pseudo-header sum does not change
 * when source and destination swap), identifier, sequence number and data
 * as they came, TTL / hop limit 64, TOS / traffic class kept (as Linux),
 * IPv4 options not echoed (RFC 1122 3.2.2.6 lets a host leave them out).
 * A request from a source no reply may go to (unspecified, loopback,
 * multicast, broadcast, one of the gateway's own addresses) or in a fragment
 * is not answered (to-self).
 *
 * Which addresses, where (Linux answers on any local address, the "weak
 * host" model, RFC 1122 3.3.4.2; a VPN gateway keeps its inside addresses
 * off the outside link):
 *  - from an inside port, and decrypted from a tunnel: any address of any
 *    port.  Anything else to the gateway is dropped as to-self.  A reply to
 *    a decrypted request goes back into the tunnel (the SPD finds the SA by
 *    its addresses), so the far side pings the inside address as Linux with
 *    xfrm would answer it;
 *  - in cleartext on an outside port: that port's own addresses (what the
 *    peer and the provider monitor).  Everything else goes on to ESP
 *    decapsulation as before (ESP, NAT-T, IKE; not-esp, not-local).
 *
 * Replies are rate-limited per worker by a token bucket (dp_bucket_take):
 * ECHO_RATE a second, ECHO_BURST at once, as Linux limits the ICMP it
 * sends (net.ipv4.icmp_msgs_per_sec = 1000, icmp_msgs_burst = 50); a
 * request over it is dropped as echo-limit.  Replies count in icmp_echo.
 * The work is done in the worker, in place, per burst: no copy, no ring to
 * the main lcore, and the tunnel's replies need the worker's crypto.
 */
#ifndef ECHO_H
#define ECHO_H

#include <stdint.h>
#include <string.h>

#include <rte_ip.h>

#include <rte_mbuf.h>

#include "dp.h"

#define ECHO_RATE	1000	/* echo replies a second, each worker */
#define ECHO_BURST	50	/* ... at once */
#define ECHO_HOPS	64	/* TTL / hop limit of a reply (Linux's default) */

/*
 * Packets (data at the IP header) addressed to any of the gateway's
 * addresses are taken out of pkts[]: echo requests become replies with TTL /
 * hop limit hops, moved to rep[] (*nrep of them, room for n), the rest is
 * dropped and counted (to-self, echo-limit).  Returns how many packets stay
 * in pkts[], in order.  Each reply's m->port is the port that holds the
 * address it comes from.
 */
uint16_t echo_local(struct dp_worker *w, struct dp_lstats *st, struct rte_mbuf **pkts,
		    uint16_t n, struct rte_mbuf **rep, uint16_t *nrep, uint8_t hops);

/*
 * Cleartext on the outside port port: only echo requests to port's own
 * addresses are taken (answered into rep[], or dropped over the limit);
 * everything else stays in pkts[] for ESP decapsulation.
 */
uint16_t echo_outside(struct dp_worker *w, struct dp_lstats *st, const struct dp_port *port,
		      struct rte_mbuf **pkts, uint16_t n, struct rte_mbuf **rep, uint16_t *nrep);

#endif /* ECHO_H */
