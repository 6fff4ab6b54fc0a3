/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * arp.c - the main lcore's slow path: answers ARP for the ports' addresses,
 * learns neighbours, and resolves the next hops workers ask for (IPv6 ones
 * through nd.c).  Frames it
 * sends go through worker 0's TX ring, so every port needs only the workers'
 * TX queues.
 */
#include <string.h>

#include <rte_arp.h>
#include <rte_cycles.h>
#include <rte_ethdev.h>

#include "dp.h"
#include "host.h"
#include "route.h"


/*
 * Every frame the main lcore builds counts in arp_out, sent or not; one
 * that is not sent is a drop under its reason too (here punt-full, later
 * tx-full), so that received + built = sent + dropped + consumed.
 */
void
dp_send_frame(struct rte_mbuf *m, uint16_t port)
{
	main_stats()->arp_out++;
	m->port = port;
	if (!dp_main_tx(m, DP_KIND_FRAME, 0))
		dp_drop(main_stats(), m, DPVPN_DROP_PUNT_FULL);
}

void
dp_frame_nombuf(void)
{
	main_stats()->arp_out++;
	main_stats()->drops[DPVPN_DROP_NO_MBUF]++;
}

/* sip: the address the frame speaks for (the port's, or one of its extra-addresses) */
static void
fill_arp(struct rte_arp_hdr *a, uint16_t op, const struct dp_port *p, uint32_t sip,
	 const struct rte_ether_addr *tha, uint32_t tip)
{
	a->arp_hardware = rte_cpu_to_be_16(RTE_ARP_HRD_ETHER);
	a->arp_protocol = rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV4);
	a->arp_hlen = RTE_ETHER_ADDR_LEN;
	a->arp_plen = sizeof(uint32_t);
	a->arp_opcode = rte_cpu_to_be_16(op);
	a->arp_data.arp_sha = p->mac;
	a->arp_data.arp_sip = sip;
	a->arp_data.arp_tha = *tha;
	a->arp_data.arp_tip = tip;
}

static bool
arp_sound(const struct rte_mbuf *m, const struct rte_arp_hdr *a)
{
	return rte_pktmbuf_data_len(m) >= sizeof(struct rte_ether_hdr) + sizeof(*a) &&
	       a->arp_hardware == rte_cpu_to_be_16(RTE_ARP_HRD_ETHER) &&
	       a->arp_protocol == rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV4) &&
	       a->arp_hlen == RTE_ETHER_ADDR_LEN && a->arp_plen == sizeof(uint32_t);
}

/*
 * A neighbour announcing its address (sender = target, not ours: an HA
 * pair's new master, RFC 5227 2.3): an entry already known takes the new
 * MAC (RFC 826: the sender's pair is merged whatever the target); none is
 * made for it.  true: it was one, counted.
 */
static bool
gratuitous(const struct dp_port *p, const struct rte_arp_hdr *a)
{
	uint32_t sip = a->arp_data.arp_sip;

	if (sip == 0 || sip != a->arp_data.arp_tip || dp_port_owns4(p, sip) ||
	    !dp_in_prefix(sip, p->addr & p->mask, p->mask))
		return false;
	main_stats()->arp_in++;
	if (neigh_lookup(p->id, DPVPN_AF_INET, &sip, &(struct rte_ether_addr){ 0 }))
		neigh_set(p->id, DPVPN_AF_INET, &sip, &a->arp_data.arp_sha, false);
	return true;
}

void
arp_input(struct rte_mbuf *m)
{
	struct rte_ether_hdr *eth = rte_pktmbuf_mtod(m, struct rte_ether_hdr *);
	struct rte_arp_hdr *a = (struct rte_arp_hdr *)(eth + 1);
	const struct dp_port *p = &dp.ports[m->port];
	uint32_t sip, tip;

	if (arp_sound(m, a) && gratuitous(p, a)) {
		host_copy(m);	/* the host's cache follows too (or freed: no twin) */
		return;
	}
	/* for the port's address or one of its extra-addresses (a whole prefix
	 * answered: what a gateway with a block of public addresses does) */
	if (!arp_sound(m, a) || !dp_port_owns4(p, a->arp_data.arp_tip)) {
		dp_drop(main_stats(), m, DPVPN_DROP_BAD_ARP);
		return;
	}
	main_stats()->arp_in++;
	sip = a->arp_data.arp_sip;
	if (sip != 0 && dp_in_prefix(sip, p->addr & p->mask, p->mask))
		neigh_set(p->id, DPVPN_AF_INET, &sip, &a->arp_data.arp_sha, false);
	if (a->arp_opcode != rte_cpu_to_be_16(RTE_ARP_OP_REQUEST)) {
		host_copy(m);	/* the host's ARP asked for it too (or freed: no twin) */
		return;
	}
	/* Answer in place. */
	struct rte_ether_addr sha = a->arp_data.arp_sha;

	tip = a->arp_data.arp_tip;

	rte_pktmbuf_trim(m, (uint16_t)(rte_pktmbuf_data_len(m) - sizeof(*eth) - sizeof(*a)));
	eth->dst_addr = sha;
	eth->src_addr = p->mac;
	fill_arp(a, RTE_ARP_OP_REPLY, p, tip, &sha, sip);
	dp_send_frame(m, p->id);
}

/*
 * A request for tip from sip, broadcast: sip the port's own address (a
 * next hop resolved), or sip = tip = a virtual address just taken (a
 * gratuitous ARP, RFC 5227 2.3: the link's hosts move it to this MAC).
 */
static void
arp_request(const struct dp_port *p, uint32_t sip, uint32_t tip)
{
	static const struct rte_ether_addr zero;
	struct rte_mbuf *m = rte_pktmbuf_alloc(dp.pool);
	struct rte_ether_hdr *eth;

	if (m == NULL) {	/* asked again when a packet needs it after a second */
		dp_frame_nombuf();
		return;
	}
	eth = (struct rte_ether_hdr *)rte_pktmbuf_append(m, sizeof(*eth) +
							  sizeof(struct rte_arp_hdr));
	memset(&eth->dst_addr, 0xff, sizeof(eth->dst_addr));
	eth->src_addr = p->mac;
	eth->ether_type = rte_cpu_to_be_16(RTE_ETHER_TYPE_ARP);
	fill_arp((struct rte_arp_hdr *)(eth + 1), RTE_ARP_OP_REQUEST, p, sip, &zero, tip);
	dp_send_frame(m, p->id);
}

static void
resolve(const struct dp_resolve_req *req)
{
	uint64_t now = rte_get_timer_cycles();
	bool v6 = req->family == DPVPN_AF_INET6;
	const struct dp_port *p;
	struct neigh *n;
	uint32_t addr;

	if (req->port >= dp.n_ports)
		return;
	p = &dp.ports[req->port];
	if (v6 ? !p->has6 : p->addr == 0)
		return;
	n = neigh_get(req->port, req->family, req->addr, true);
	/* At most one request per second per neighbour. */
	if (n == NULL || n->mac != 0 || (n->asked_tsc != 0 && now - n->asked_tsc < rte_get_timer_hz()))
		return;
	n->asked_tsc = now;
	if (v6) {
		nd_solicit(p, req->addr);
		return;
	}
	memcpy(&addr, req->addr, sizeof(addr));
	arp_request(p, p->addr, addr);
}

/* A frame a worker punted: ARP, or ICMPv6 Neighbour Discovery. */
static void
punt_input(struct rte_mbuf *m)
{
	const struct rte_ether_hdr *eth = rte_pktmbuf_mtod(m, const struct rte_ether_hdr *);

	if (eth->ether_type == rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV6))
		nd_input(m);
	else
		arp_input(m);
}

/*
 * Count down one address's announcements: sent if it is still held (true),
 * else none left (released meanwhile).
 */
static bool
announce_one(uint8_t *left, bool held)
{
	if (*left == 0)
		return false;
	if (!held) {
		*left = 0;
		return false;
	}
	(*left)--;
	return true;
}

/*
 * p's virtual addresses' gratuitous ARPs (IPv4) and unsolicited Neighbour
 * Advertisements (IPv6) that are due (VIP_SET set them): one round a second.
 */
void
vip_announce_due(struct dp_port *p, uint64_t now)
{
	uint8_t held = p->vip_held, held6 = p->vip6_held;
	bool sent = false;

	if (now < p->vip_announce_tsc)
		return;
	for (unsigned i = 0; i < DPVPN_VIP_MAX; i++)
		if (announce_one(&p->vip_announce[i], held >> i & 1)) {
			arp_request(p, p->vip4[i], p->vip4[i]);
			sent = true;
		}
	for (unsigned i = 0; i < DPVPN_VIP6_MAX; i++)
		if (announce_one(&p->vip6_announce[i], (held6 >> i & 1) && p->has6)) {
			nd_announce(p, p->vip6[i]);
			sent = true;
		}
	if (sent)
		p->vip_announce_tsc = now + rte_get_timer_hz();
}

void
arp_poll(void)
{
	uint64_t now = rte_get_timer_cycles();

	for (uint16_t p = 0; p < dp.n_ports; p++)
		if ((dp.ports[p].vip_held | dp.ports[p].vip6_held) != 0)
			vip_announce_due(&dp.ports[p], now);
	for (unsigned int i = 0; i < dp.n_workers; i++) {
		struct dp_worker *w = &dp.workers[i];
		struct rte_mbuf *pkts[DP_BURST];
		struct dp_resolve_req reqs[DP_BURST];
		unsigned int n;

		n = rte_ring_dequeue_burst(w->main.punt, (void **)pkts, DP_BURST, NULL);
		for (unsigned int k = 0; k < n; k++)
			punt_input(pkts[k]);
		n = rte_ring_dequeue_burst_elem(w->out.resolve, reqs, sizeof(reqs[0]), DP_BURST, NULL);
		for (unsigned int k = 0; k < n; k++)
			resolve(&reqs[k]);
	}
}
