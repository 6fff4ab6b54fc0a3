/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pmtu.h - packets too big for a tunnel, ICMP errors, and TCP MSS clamping:
 *
 *  - ICMP "fragmentation needed" (RFC 792/1191) for an IPv4 packet with DF
 *    set, ICMPv6 "packet too big" (RFC 4443/8201) for IPv6, carrying the
 *    tunnel MTU, sent from the inside port's address and rate-limited per
 *    worker (a token bucket: PMTU_ICMP_RATE a second, PMTU_ICMP_BURST at once);
 *  - ICMP / ICMPv6 Time Exceeded for packets whose TTL expires here, from
 *    the same builders and the same bucket;
 *  - IPv4 fragmentation into fresh mbufs, for a DF-clear inner packet before
 *    encryption (RFC 4459 pre-fragmentation) or for the outer packet;
 *  - the MSS option of TCP SYNs lowered to the tunnel's, checksum updated
 *    incrementally (RFC 1624), as OpenVPN's mssfix does.
 *
 * All of it is on the exception path of the worker: no lock, no system call,
 * mbufs from the packet pool.
 */
#ifndef PMTU_H
#define PMTU_H

#include <stdbool.h>
#include <stdint.h>

#include <rte_mbuf.h>

#include "dp.h"

#define PMTU_ICMP_RATE	100	/* ICMP errors per second per worker */
#define PMTU_ICMP_BURST	10
#define PMTU_MAX_FRAGS	32	/* fragments of one packet, at most */

_Static_assert(DP_OUT_MAX >= DP_BURST * PMTU_MAX_FRAGS,
	       "a stage's dp_out holds a burst cut into the most fragments");

/*
 * The error that tells the sender of m (an IPv4 or IPv6 packet at m's data)
 * that the tunnel takes at most mtu bytes, from port (where m came in); NULL
 * when none is to be sent.  The caller hands it to the poll loop (dp_out).
 * m is not freed.  An error that is built counts in icmp_out; one the pool
 * has no mbuf for counts there too, and as a no-mbuf drop.
 */
struct rte_mbuf *pmtu_icmp_too_big(struct dp_worker *w, struct dp_lstats *st,
				   const struct dp_port *port, const struct rte_mbuf *m,
				   uint16_t mtu);

/*
 * ICMP Time Exceeded (RFC 1812 5.3.1; ICMPv6, RFC 4443 3.3) for m, whose
 * TTL / hop limit expired here, from port's address, rate-limited and
 * counted as pmtu_icmp_too_big's; NULL when none is to be sent.  The caller
 * hands it to the poll loop, to send or to encrypt first (dp_out).  m is not
 * freed.
 */
struct rte_mbuf *pmtu_icmp_expired(struct dp_worker *w, struct dp_lstats *st,
				   const struct dp_port *port, const struct rte_mbuf *m);

/*
 * Split the IPv4 packet m into fragments of at most mtu bytes (fresh mbufs
 * in out[], m freed); 0 (m untouched) if it would take more than max
 * (*why = too-big) or the pool has too few mbufs (*why = no-mbuf): the
 * caller drops m under that reason.  An existing fragment is split further,
 * offsets kept.
 */
uint16_t pmtu_fragment4(struct rte_mbuf *m, uint16_t mtu, struct rte_mbuf **out, uint16_t max,
			enum dpvpn_drop_reason *why);

/* Lower the MSS of a TCP SYN in the IPv4/IPv6 packet ip (len bytes) to mss. */
bool pmtu_clamp_mss(uint8_t *ip, uint16_t len, uint16_t mss);

/* The fast path's test before a call to pmtu_clamp_mss: only TCP has an MSS. */
static inline bool
pmtu_is_tcp(const uint8_t *ip)
{
	return (ip[0] >> 4 == 6 ? ip[6] : ip[9]) == IPPROTO_TCP;	/* next header, protocol */
}

#endif /* PMTU_H */
