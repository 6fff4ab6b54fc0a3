/* SPDX-License-Identifier: BSD-3-Clause */
/* ip.h - IPv4 header checks shared by the stages. */
#ifndef IP_H
#define IP_H

#include <rte_ip.h>
#include <rte_mbuf.h>

#include "dpvpn_proto.h"

/*
 * Check the IPv4 header at the start of m's data and trim m to the packet's
 * total length (Ethernet pads short frames).  Returns DPVPN_DROP_MAX when the
 * header is sound, else the reason to drop.
 */
static inline enum dpvpn_drop_reason
ip4_check(struct rte_mbuf *m)
{
	const struct rte_ipv4_hdr *ip;
	uint16_t ihl, total;

	if (rte_pktmbuf_data_len(m) < sizeof(*ip))
		return DPVPN_DROP_BAD_IPV4;
	ip = rte_pktmbuf_mtod(m, const struct rte_ipv4_hdr *);
	ihl = (uint16_t)((ip->version_ihl & 0x0f) * 4);
	total = rte_be_to_cpu_16(ip->total_length);
	if ((ip->version_ihl >> 4) != 4 || ihl < sizeof(*ip) || total < ihl ||
	    total > rte_pktmbuf_data_len(m) || ihl > rte_pktmbuf_data_len(m))
		return DPVPN_DROP_BAD_IPV4;
	/* Summed with its checksum field, a sound header folds to 0xffff. */
	if (rte_raw_cksum(ip, ihl) != 0xffff)
		return DPVPN_DROP_BAD_IPV4;
	rte_pktmbuf_trim(m, (uint16_t)(rte_pktmbuf_data_len(m) - total));
	return DPVPN_DROP_MAX;
}

static inline bool
ip4_is_fragment(const struct rte_ipv4_hdr *ip)
{
	return (ip->fragment_offset &
		rte_cpu_to_be_16(RTE_IPV4_HDR_MF_FLAG | RTE_IPV4_HDR_OFFSET_MASK)) != 0;
}

#endif /* IP_H */
