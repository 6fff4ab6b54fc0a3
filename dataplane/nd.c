/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * nd.c - IPv6 Neighbour Discovery (RFC 4861) on the main lcore, what ARP is
 * for IPv4: answers Neighbour Solicitations for the ports' IPv6 addresses and
 * the HA virtual addresses they hold (as a router: R flag set), announces a
 * virtual address newly held with unsolicited Advertisements (7.2.6), learns
 * neighbours from Solicitations and Advertisements, and solicits the next
 * hops workers ask for (to the target's solicited-node multicast group).
 * Frames go out through worker 0's ring.  Every received ND packet is
 * checked as RFC 4861 7.1.1/7.1.2 ask (hop limit 255, code 0, checksum,
 * length, option lengths); others are counted as bad-nd.
 */
#include <string.h>

#include <rte_ethdev.h>
#include <rte_ip.h>

#include "dp.h"
#include "host.h"
#include "ip.h"
#include "route.h"

#define ND_NS		135
#define ND_NA		136
#define ND_OPT_SLLA	1	/* source link-layer address */
#define ND_OPT_TLLA	2	/* target link-layer address */
#define NA_F_ROUTER	0x80
#define NA_F_SOLICITED	0x40
#define NA_F_OVERRIDE	0x20
#define ND_HOPS		255

/* NS and NA share this layout (RFC 4861 4.3, 4.4); options follow. */
struct nd_msg {
	uint8_t type, code;
	rte_be16_t cksum;
	uint8_t flags;		/* NA: R S O; NS: reserved */
	uint8_t reserved[3];
	uint8_t target[16];
} __rte_packed;

struct nd_lla_opt {
	uint8_t type, len;	/* len in units of 8 bytes: 1 */
	uint8_t mac[RTE_ETHER_ADDR_LEN];
} __rte_packed;

#define ND_LEN	(sizeof(struct rte_ipv6_hdr) + sizeof(struct nd_msg) + sizeof(struct nd_lla_opt))

/* ff02::1:ffXX:XXXX for a (RFC 4291 2.7.1). */
static void
solicited_node(const uint8_t *a, uint8_t *group)
{
	static const uint8_t pfx[13] = { 0xff, 0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0xff };

	memcpy(group, pfx, sizeof(pfx));
	memcpy(group + 13, a + 13, 3);
}

/* 33:33 + the low 32 bits of a multicast group (RFC 2464 7). */
static void
multicast_mac(const uint8_t *group, struct rte_ether_addr *mac)
{
	mac->addr_bytes[0] = 0x33;
	mac->addr_bytes[1] = 0x33;
	memcpy(&mac->addr_bytes[2], group + 12, 4);
}

/* The link-layer address option of type want into *mac; *found says if there was one. */
static enum dpvpn_drop_reason
find_lla(const uint8_t *opt, uint32_t len, uint8_t want, struct rte_ether_addr *mac,
	 bool *found)
{
	*found = false;
	while (len > 0) {
		uint32_t olen;

		if (len < 2 || opt[1] == 0)
			return DPVPN_DROP_BAD_ND;	/* 7.1.1: no zero-length option */
		olen = opt[1] * 8u;
		if (olen > len)
			return DPVPN_DROP_BAD_ND;
		if (opt[0] == want && olen >= sizeof(struct nd_lla_opt)) {
			memcpy(mac->addr_bytes, ((const struct nd_lla_opt *)opt)->mac,
			       RTE_ETHER_ADDR_LEN);
			*found = true;
		}
		opt += olen;
		len -= olen;
	}
	return DPVPN_DROP_MAX;
}

/*
 * Build an NS or NA in a fresh mbuf, from src (the port's address, or the
 * virtual address an NA is for); NULL if none is free.
 */
static struct rte_mbuf *
nd_build(const struct dp_port *p, uint8_t type, uint8_t flags, const uint8_t *src,
	 const uint8_t *dst, const struct rte_ether_addr *dst_mac, const uint8_t *target)
{
	struct rte_mbuf *m = rte_pktmbuf_alloc(dp.pool);
	struct rte_ether_hdr *eth;
	struct rte_ipv6_hdr *ip;
	struct nd_msg *nd;
	struct nd_lla_opt *o;

	if (m == NULL)
		return NULL;
	eth = (struct rte_ether_hdr *)rte_pktmbuf_append(m, sizeof(*eth) + ND_LEN);
	ip = (struct rte_ipv6_hdr *)(eth + 1);
	nd = (struct nd_msg *)(ip + 1);
	o = (struct nd_lla_opt *)(nd + 1);
	eth->dst_addr = *dst_mac;
	eth->src_addr = p->mac;
	eth->ether_type = rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV6);
	ip->vtc_flow = rte_cpu_to_be_32(6u << 28);
	ip->payload_len = rte_cpu_to_be_16(sizeof(*nd) + sizeof(*o));
	ip->proto = IPPROTO_ICMPV6;
	ip->hop_limits = ND_HOPS;
	memcpy(ip->src_addr, src, 16);
	memcpy(ip->dst_addr, dst, 16);
	memset(nd, 0, sizeof(*nd));
	nd->type = type;
	nd->flags = flags;
	memcpy(nd->target, target, 16);
	o->type = type == ND_NS ? ND_OPT_SLLA : ND_OPT_TLLA;
	o->len = 1;
	memcpy(o->mac, p->mac.addr_bytes, RTE_ETHER_ADDR_LEN);
	nd->cksum = rte_ipv6_udptcp_cksum(ip, nd);
	return m;
}

void
nd_solicit(const struct dp_port *p, const uint8_t *target)
{
	uint8_t group[16];
	struct rte_ether_addr mac;
	struct rte_mbuf *m;

	solicited_node(target, group);
	multicast_mac(group, &mac);
	m = nd_build(p, ND_NS, 0, p->addr6, group, &mac, target);
	if (m != NULL)
		dp_send_frame(m, p->id);
	else
		dp_frame_nombuf();
}

static const uint8_t all_nodes[16] = { 0xff, 0x02, [15] = 1 };

/*
 * An unsolicited Advertisement for target, one of p's addresses (an HA
 * virtual address it took over), to all-nodes (RFC 4861 7.2.6): Override
 * set, Solicited clear, our link-layer address in a TLLA option, so that
 * every neighbour's entry for target moves to this port's MAC at once.
 */
void
nd_announce(const struct dp_port *p, const uint8_t *target)
{
	struct rte_ether_addr mac;
	struct rte_mbuf *m;

	multicast_mac(all_nodes, &mac);
	m = nd_build(p, ND_NA, NA_F_ROUTER | NA_F_OVERRIDE, target, all_nodes, &mac, target);
	if (m != NULL)
		dp_send_frame(m, p->id);
	else
		dp_frame_nombuf();
}

static enum dpvpn_drop_reason
nd_check(struct rte_mbuf *m, const struct dp_port *p, struct rte_ipv6_hdr **ipp,
	 struct nd_msg **ndp)
{
	struct rte_ipv6_hdr *ip;
	struct nd_msg *nd;
	uint16_t plen;

	rte_pktmbuf_adj(m, sizeof(struct rte_ether_hdr));
	if (!p->has6 || ip6_check(m) != DPVPN_DROP_MAX)
		return DPVPN_DROP_BAD_ND;
	ip = rte_pktmbuf_mtod(m, struct rte_ipv6_hdr *);
	nd = (struct nd_msg *)(ip + 1);
	plen = rte_be_to_cpu_16(ip->payload_len);
	if (ip->proto != IPPROTO_ICMPV6 || ip->hop_limits != ND_HOPS || plen < sizeof(*nd) ||
	    nd->code != 0 || (nd->type != ND_NS && nd->type != ND_NA) ||
	    rte_ipv6_udptcp_cksum_verify(ip, nd) != 0 || ip6_is_multicast(nd->target))
		return DPVPN_DROP_BAD_ND;
	*ipp = ip;
	*ndp = nd;
	return DPVPN_DROP_MAX;
}

/*
 * A solicitation for target, one of p's addresses (its own, or a virtual
 * address it holds): answered from target.  m is freed or counted.
 */
static void
nd_answer(struct rte_mbuf *m, const struct dp_port *p, const uint8_t *src,
	  const uint8_t *target, const struct rte_ether_addr *lla, bool has_lla)
{
	struct rte_mbuf *r;

	if (memcmp(src, (const uint8_t[16]){ 0 }, 16) == 0) {
		/* duplicate address detection (7.2.4): answer to all-nodes */
		struct rte_ether_addr mac;

		multicast_mac(all_nodes, &mac);
		r = nd_build(p, ND_NA, NA_F_ROUTER | NA_F_OVERRIDE, target, all_nodes, &mac,
			     target);
	} else {
		if (!has_lla) {	/* 7.1.1: a unicast-source NS to us carries SLLA */
			dp_drop(main_stats(), m, DPVPN_DROP_BAD_ND);
			return;
		}
		neigh_set(p->id, DPVPN_AF_INET6, src, lla, false);
		r = nd_build(p, ND_NA, NA_F_ROUTER | NA_F_SOLICITED | NA_F_OVERRIDE, target, src,
			     lla, target);
	}
	rte_pktmbuf_free(m);
	if (r != NULL)
		dp_send_frame(r, p->id);
	else
		dp_frame_nombuf();
}

void
nd_input(struct rte_mbuf *m)
{
	const struct dp_port *p = &dp.ports[m->port];
	struct rte_ether_addr lla;
	bool has_lla;
	struct rte_ipv6_hdr *ip;
	struct nd_msg *nd;
	uint8_t src[16], target[16];
	uint32_t opt_len;

	if (nd_check(m, p, &ip, &nd) != DPVPN_DROP_MAX) {
		dp_drop(main_stats(), m, DPVPN_DROP_BAD_ND);
		return;
	}
	opt_len = rte_be_to_cpu_16(ip->payload_len) - (uint32_t)sizeof(*nd);
	if (find_lla((const uint8_t *)(nd + 1), opt_len,
		     nd->type == ND_NS ? ND_OPT_SLLA : ND_OPT_TLLA, &lla, &has_lla) !=
	    DPVPN_DROP_MAX) {
		dp_drop(main_stats(), m, DPVPN_DROP_BAD_ND);
		return;
	}
	main_stats()->arp_in++;
	memcpy(src, ip->src_addr, 16);
	memcpy(target, nd->target, 16);
	if (nd->type == ND_NA) {
		/* 7.2.5: an advertisement updates the target's entry; not for an
		 * address of ours (the other node of an HA pair announcing a
		 * virtual address: no neighbour entry for it, held or not) */
		if (has_lla && dp_in_prefix6(target, p->addr6, p->prefix6_len) &&
		    !dp_port_owns6(p, target) && !dp_port_vip6(p, target, false))
			neigh_set(p->id, DPVPN_AF_INET6, target, &lla, false);
		/* the host's ND asked for it too (or freed: no twin); as it came */
		rte_pktmbuf_prepend(m, sizeof(struct rte_ether_hdr));
		host_copy(m);
		return;
	}
	/* A solicitation: for one of our addresses, or not ours to answer (a
	 * virtual address this port does not hold: the master answers). */
	if (dp_port_owns6(p, target)) {
		nd_answer(m, p, src, target, &lla, has_lla);
	} else if (p->twin) {	/* the host's, maybe (its link-local address) */
		rte_pktmbuf_prepend(m, sizeof(struct rte_ether_hdr));
		host_copy(m);
	} else {
		dp_drop(main_stats(), m, DPVPN_DROP_BAD_ND);
	}
}
