/* SPDX-License-Identifier: BSD-3-Clause */
/* echo.c - the gateway answers ping (see echo.h). */
#include <string.h>

#include <rte_icmp.h>
#include <rte_ip.h>

#include "echo.h"
#include "ip.h"

#define ICMP6_ECHO_REQUEST	128
#define ICMP6_ECHO_REPLY	129

enum verdict { NOT_ECHO, ANSWERED, LIMITED };

/* An IPv4 echo request, whole (no fragment), from a source a reply may go to. */
static bool
request4(const struct rte_mbuf *m)
{
	const struct rte_ipv4_hdr *ip = rte_pktmbuf_mtod(m, const struct rte_ipv4_hdr *);
	uint16_t ihl = (uint16_t)((ip->version_ihl & 0x0f) * 4);
	uint32_t src = rte_be_to_cpu_32(ip->src_addr);

	if (ip->next_proto_id != IPPROTO_ICMP || ip4_is_fragment(ip) ||
	    rte_pktmbuf_data_len(m) < ihl + sizeof(struct rte_icmp_hdr))
		return false;
	/* not 0/8, loopback, multicast, class E or broadcast, nor one of ours
	 * (a martian, as Linux says: the reply would only come back to us) */
	if ((src >> 24) == 0 || (src >> 24) == 127 || (src >> 28) >= 0xe ||
	    dp_owner4(ip->src_addr, NULL) >= 0)
		return false;
	return rte_pktmbuf_mtod_offset(m, const struct rte_icmp_hdr *, ihl)->icmp_type ==
	       RTE_IP_ICMP_ECHO_REQUEST;
}

/* An ICMPv6 echo request right after the IPv6 header, from a unicast source not ours. */
static bool
request6(const struct rte_mbuf *m)
{
	static const uint8_t unspecified[16], loopback[16] = { [15] = 1 };
	const struct rte_ipv6_hdr *ip = rte_pktmbuf_mtod(m, const struct rte_ipv6_hdr *);

	if (ip->proto != IPPROTO_ICMPV6 || rte_pktmbuf_data_len(m) < sizeof(*ip) + 8 ||
	    ip6_is_multicast(ip->src_addr) || memcmp(ip->src_addr, unspecified, 16) == 0 ||
	    memcmp(ip->src_addr, loopback, 16) == 0 || dp_owner6(ip->src_addr, NULL) >= 0)
		return false;
	return *(const uint8_t *)(ip + 1) == ICMP6_ECHO_REQUEST;
}

/* The first word of an ICMP header (type, code) becomes type t; the checksum follows. */
static void
set_type(uint8_t *icmp, uint8_t t)
{
	rte_be16_t old, new, sum;

	memcpy(&old, icmp, 2);
	icmp[0] = t;
	memcpy(&new, icmp, 2);
	memcpy(&sum, icmp + 2, 2);
	sum = ip_cksum_update(sum, old, new);
	memcpy(icmp + 2, &sum, 2);
}

static void
reply4(struct rte_mbuf *m, uint8_t hops)
{
	struct rte_ipv4_hdr *ip = rte_pktmbuf_mtod(m, struct rte_ipv4_hdr *);
	uint16_t ihl = (uint16_t)((ip->version_ihl & 0x0f) * 4);
	uint32_t a;

	if (ihl > sizeof(*ip)) {	/* options are not echoed: the header moves up */
		memmove((uint8_t *)ip + ihl - sizeof(*ip), ip, sizeof(*ip));
		ip = (struct rte_ipv4_hdr *)rte_pktmbuf_adj(m, (uint16_t)(ihl - sizeof(*ip)));
		ip->version_ihl = RTE_IPV4_VHL_DEF;
		ip->total_length = rte_cpu_to_be_16(rte_pktmbuf_data_len(m));
	}
	a = ip->src_addr;
	ip->src_addr = ip->dst_addr;
	ip->dst_addr = a;
	ip->time_to_live = hops;
	ip->fragment_offset = 0;
	ip->hdr_checksum = 0;
	ip->hdr_checksum = rte_ipv4_cksum(ip);
	set_type((uint8_t *)(ip + 1), RTE_IP_ICMP_ECHO_REPLY);
}

/* The pseudo-header sum does not change when the addresses swap: only the type does. */
static void
reply6(struct rte_mbuf *m, uint8_t hops)
{
	struct rte_ipv6_hdr *ip = rte_pktmbuf_mtod(m, struct rte_ipv6_hdr *);
	uint8_t a[16];

	memcpy(a, ip->src_addr, 16);
	memcpy(ip->src_addr, ip->dst_addr, 16);
	memcpy(ip->dst_addr, a, 16);
	ip->hop_limits = hops;
	/* traffic class kept, flow label not reflected (Linux's default) */
	ip->vtc_flow = rte_cpu_to_be_32(rte_be_to_cpu_32(ip->vtc_flow) & 0xfff00000u);
	set_type((uint8_t *)(ip + 1), ICMP6_ECHO_REPLY);
}

/* m, to the gateway: an echo request answered in place, or over the limit. */
static enum verdict
answer(struct dp_worker *w, struct dp_lstats *st, struct rte_mbuf *m, uint8_t hops)
{
	bool v6 = rte_pktmbuf_mtod(m, const uint8_t *)[0] >> 4 == 6;

	if (!(v6 ? request6(m) : request4(m)))
		return NOT_ECHO;
	if (!dp_bucket_take(&w->echo_rate, ECHO_RATE, ECHO_BURST))
		return LIMITED;
	if (v6)
		reply6(m, hops);
	else
		reply4(m, hops);
	st->icmp_echo++;
	return ANSWERED;
}

uint16_t
echo_local(struct dp_worker *w, struct dp_lstats *st, struct rte_mbuf **pkts, uint16_t n,
	   struct rte_mbuf **rep, uint16_t *nrep, uint8_t hops)
{
	uint16_t k = 0;

	*nrep = 0;
	for (uint16_t i = 0; i < n; i++) {
		struct rte_mbuf *m = pkts[i];
		int p = dp_owner(rte_pktmbuf_mtod(m, const uint8_t *), NULL);

		if (likely(p < 0)) {
			pkts[k++] = m;
			continue;
		}
		switch (answer(w, st, m, hops)) {
		case ANSWERED:
			m->port = (uint16_t)p;
			rep[(*nrep)++] = m;
			break;
		case LIMITED:
			dp_drop(st, m, DPVPN_DROP_ECHO_LIMIT);
			break;
		default:	/* no local stack: nothing else is answered */
			dp_drop(st, m, DPVPN_DROP_TO_SELF);
		}
	}
	return k;
}

static inline bool
is_icmp(const uint8_t *ip)
{
	return ip[0] >> 4 == 6 ? ((const struct rte_ipv6_hdr *)ip)->proto == IPPROTO_ICMPV6 :
				 ((const struct rte_ipv4_hdr *)ip)->next_proto_id == IPPROTO_ICMP;
}

uint16_t
echo_outside(struct dp_worker *w, struct dp_lstats *st, const struct dp_port *port,
	     struct rte_mbuf **pkts, uint16_t n, struct rte_mbuf **rep, uint16_t *nrep)
{
	uint16_t k = 0;

	*nrep = 0;
	for (uint16_t i = 0; i < n; i++) {
		struct rte_mbuf *m = pkts[i];
		const uint8_t *ip = rte_pktmbuf_mtod(m, const uint8_t *);
		enum verdict v = NOT_ECHO;

		/* ESP and UDP, the common case, are past after one compare */
		if (unlikely(is_icmp(ip)) && dp_owner(ip, port) >= 0)
			v = answer(w, st, m, ECHO_HOPS);
		if (likely(v == NOT_ECHO)) {
			pkts[k++] = m;
		} else if (v == ANSWERED) {
			m->port = port->id;
			rep[(*nrep)++] = m;
		} else {
			dp_drop(st, m, DPVPN_DROP_ECHO_LIMIT);
		}
	}
	return k;
}
