/* SPDX-License-Identifier: BSD-3-Clause */
/* ip.h - IPv4 and IPv6 header checks shared by the stages. */
#ifndef IP_H
#define IP_H

#include <stdbool.h>
#include <string.h>

#include <rte_hash_crc.h>
#include <rte_ip.h>
#include <rte_mbuf.h>

#include "dpvpn_proto.h"

/* A 64-bit one's-complement accumulator folded to 16 bits. */
static inline uint16_t
ip_fold64(uint64_t sum)
{
	sum = (sum & 0xffffffff) + (sum >> 32);
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)((sum & 0xffff) + (sum >> 16));
}

/*
 * The one's-complement sum of a 20-byte IPv4 header (no options), folded to
 * 16 bits as rte_raw_cksum folds it: five 32-bit words added in 64 bits, a
 * handful of instructions instead of a loop over ten 16-bit words.
 */
static inline uint16_t
ip4_sum20(const void *hdr)
{
	uint32_t w[5];
	uint64_t sum;

	memcpy(w, hdr, sizeof(w));
	sum = (uint64_t)w[0] + w[1] + w[2] + w[3] + w[4];
	return ip_fold64(sum);
}

/*
 * The TCP/UDP pseudo-header sum of an IPv4 packet (addresses, protocol,
 * L4 length), folded as rte_ipv4_phdr_cksum returns it, without building
 * the pseudo header: the words are added where they lie.
 */
static inline uint16_t
ip4_phdr_sum(const struct rte_ipv4_hdr *ip)
{
	uint16_t l4 = (uint16_t)(rte_be_to_cpu_16(ip->total_length) -
				 (ip->version_ihl & 0x0f) * 4);

	return ip_fold64((uint64_t)ip->src_addr + ip->dst_addr +
			 rte_cpu_to_be_16((uint16_t)ip->next_proto_id) + rte_cpu_to_be_16(l4));
}

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
	if ((ihl == sizeof(*ip) ? ip4_sum20(ip) : rte_raw_cksum(ip, ihl)) != 0xffff)
		return DPVPN_DROP_BAD_IPV4;
	rte_pktmbuf_trim(m, (uint16_t)(rte_pktmbuf_data_len(m) - total));
	return DPVPN_DROP_MAX;
}

/*
 * The IPv6 header at the start of m's data: version, and a payload length
 * that the frame holds (m is trimmed to it).  DPVPN_DROP_MAX when sound.
 */
static inline enum dpvpn_drop_reason
ip6_check(struct rte_mbuf *m)
{
	const struct rte_ipv6_hdr *ip;
	uint32_t total;

	if (rte_pktmbuf_data_len(m) < sizeof(*ip))
		return DPVPN_DROP_BAD_IPV6;
	ip = rte_pktmbuf_mtod(m, const struct rte_ipv6_hdr *);
	total = sizeof(*ip) + rte_be_to_cpu_16(ip->payload_len);
	if ((rte_be_to_cpu_32(ip->vtc_flow) >> 28) != 6 || total > rte_pktmbuf_data_len(m))
		return DPVPN_DROP_BAD_IPV6;
	rte_pktmbuf_trim(m, (uint16_t)(rte_pktmbuf_data_len(m) - total));
	return DPVPN_DROP_MAX;
}

/* The IPv6 traffic class (DSCP and ECN), and setting it. */
static inline uint8_t
ip6_tc(const struct rte_ipv6_hdr *ip)
{
	return (uint8_t)(rte_be_to_cpu_32(ip->vtc_flow) >> 20);
}

static inline void
ip6_set_tc(struct rte_ipv6_hdr *ip, uint8_t tc)
{
	uint32_t v = rte_be_to_cpu_32(ip->vtc_flow);

	ip->vtc_flow = rte_cpu_to_be_32((v & 0xf00fffff) | (uint32_t)tc << 20);
}

/* Is the IPv6 address multicast (ff00::/8)? */
static inline bool
ip6_is_multicast(const uint8_t *a)
{
	return a[0] == 0xff;
}

static inline bool
ip4_is_fragment(const struct rte_ipv4_hdr *ip)
{
	return (ip->fragment_offset &
		rte_cpu_to_be_16(RTE_IPV4_HDR_MF_FLAG | RTE_IPV4_HDR_OFFSET_MASK)) != 0;
}

/*
 * A forwarded packet's TTL goes down by one, its checksum updated in place
 * (RFC 1624, as Linux's ip_decrease_ttl).  False if the TTL would expire.
 */
static inline bool
ip4_dec_ttl(struct rte_ipv4_hdr *ip)
{
	uint32_t check = ip->hdr_checksum;

	if (ip->time_to_live <= 1)
		return false;
	ip->time_to_live--;
	check += rte_cpu_to_be_16(0x0100);
	ip->hdr_checksum = (rte_be16_t)(check + (check >= 0xffff));
	return true;
}

/*
 * The step of a forwarded IPv4 or IPv6 packet (ip: its header): TTL or hop
 * limit one less; false, and the packet unchanged, if it would expire.
 */
static inline bool
ip_ttl_step(uint8_t *ip, bool v6)
{
	struct rte_ipv6_hdr *ip6 = (struct rte_ipv6_hdr *)ip;

	if (!v6)
		return ip4_dec_ttl((struct rte_ipv4_hdr *)ip);
	if (ip6->hop_limits <= 1)
		return false;
	ip6->hop_limits--;
	return true;
}

/*
 * RFC 1624 eqn. 3: an Internet checksum after one 16-bit word of what it
 * covers changed from old to new (words as they are in the packet).
 */
static inline rte_be16_t
ip_cksum_update(rte_be16_t sum, rte_be16_t old, rte_be16_t new)
{
	uint32_t s = (uint16_t)~sum + (uint16_t)~old + (uint32_t)new;

	s = (s & 0xffff) + (s >> 16);
	s = (s & 0xffff) + (s >> 16);
	return (rte_be16_t)~s;
}

enum { ECN_NOT_ECT = 0, ECN_ECT1 = 1, ECN_ECT0 = 2, ECN_CE = 3 };

/*
 * RFC 6040 decapsulation (section 4.2, the full table in three lines): the
 * inner ECN field after decapsulation, or -1 to drop (outer CE on a packet
 * whose sender did not ask for ECN).
 */
static inline int
ip4_ecn_decap(uint8_t inner, uint8_t outer)
{
	if (outer == ECN_CE)
		return inner == ECN_NOT_ECT ? -1 : ECN_CE;
	if (outer == ECN_ECT1 && inner == ECN_ECT0)
		return ECN_ECT1;
	return inner;
}

/*
 * A hash of the inner flow (addresses, and TCP/UDP ports when present), to
 * pick one of an SA's UDP source ports or one of an ECMP route's tunnels:
 * one flow keeps one of them.
 */
static inline uint32_t
ip_flow_hash(const uint8_t *inner)
{
	uint32_t h, ports = 0;
	uint8_t proto;
	const uint8_t *l4;

	if (inner[0] >> 4 == 6) {
		const struct rte_ipv6_hdr *ip = (const struct rte_ipv6_hdr *)inner;
		uint64_t addrs[4];

		/* rte_hash_crc loads 8 bytes at a time: from an aligned copy
		 * (the header is only 2-byte aligned in the mbuf) */
		memcpy(addrs, ip->src_addr, sizeof(addrs));
		h = rte_hash_crc(addrs, sizeof(addrs), 0);
		proto = ip->proto;
		l4 = inner + sizeof(*ip);
	} else {
		const struct rte_ipv4_hdr *ip = (const struct rte_ipv4_hdr *)inner;

		h = rte_hash_crc_8byte((uint64_t)ip->src_addr << 32 | ip->dst_addr, 0);
		proto = ip4_is_fragment(ip) ? 0 : ip->next_proto_id;
		l4 = inner + (ip->version_ihl & 0x0f) * 4;
	}
	if (proto == IPPROTO_TCP || proto == IPPROTO_UDP)
		memcpy(&ports, l4, 4);
	return rte_hash_crc_4byte(ports, h);
}


#endif /* IP_H */
