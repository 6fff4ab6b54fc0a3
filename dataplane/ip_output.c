/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ip_output.c - the output stage of a worker: route each IPv4 or IPv6
 * packet, find its next hop's MAC (a per-burst destination cache, then the
 * neighbour table), prepend the Ethernet header and queue the frame in the
 * port's TX buffer.  A frame whose next hop is not resolved yet waits for
 * it (neighq.h) and the main lcore is asked to resolve it; packets routed
 * into a tunnel go back to the caller (transit).  Called by the poll loop
 * (worker.c) with the bursts the stages hand back: only the loop sends.
 * Nothing here allocates, locks, logs or makes a system call per packet.
 */
#include <rte_cycles.h>
#include <rte_ethdev.h>

#include "ip.h"
#include "ip_output.h"
#include "pmtu.h"
#include "route.h"
#include "trace.h"

static void
ask_resolve(struct dp_worker *w, uint16_t port, uint8_t family, const void *addr)
{
	struct dp_resolve_req req = { .port = port, .family = family };

	memcpy(req.addr, addr, family == DPVPN_AF_INET6 ? 16 : 4);
	/* Best effort: if the ring is full the main lcore is busy resolving. */
	if (rte_ring_enqueue_elem(w->out.resolve, &req, sizeof(req)) == 0)
		dp_main_kick();
}

/*
 * Where the previous packet went: a burst mostly goes to one destination
 * (the peer gateway, one host), so most packets take neither the route
 * lookup nor the neighbour hash, and get the Ethernet header as one copy.
 * Valid for one call of worker_tx only: a changed route or MAC is seen at
 * the next burst.
 */
struct dst_cache {
	uint8_t family;		/* 0: empty */
	uint16_t port;
	uint8_t dst[16];	/* the packet's destination (IPv4: 4 bytes) */
	uint8_t next[16];	/* its next hop: many destinations share one */
	struct rte_ether_hdr eth;	/* the header those packets get */
};

static inline bool
dst_hit(const struct dst_cache *c, const uint8_t *ip, bool v6)
{
	uint64_t a[2], b[2];
	uint32_t x;

	if (!v6) {
		memcpy(&x, ip + offsetof(struct rte_ipv4_hdr, dst_addr), 4);
		return c->family == DPVPN_AF_INET && memcmp(c->dst, &x, 4) == 0;
	}
	memcpy(a, ip + offsetof(struct rte_ipv6_hdr, dst_addr), 16);
	memcpy(b, c->dst, 16);
	return c->family == DPVPN_AF_INET6 && ((a[0] ^ b[0]) | (a[1] ^ b[1])) == 0;
}

/* A frame ready to go (Ethernet header complete) into port's TX buffer. */
static inline void
send_frame(struct dp_worker *w, struct dp_lstats *st, struct rte_mbuf *m, uint16_t port)
{
	if (unlikely(trace_point == DPVPN_TRACE_OUTSIDE_TX) &&
	    dp.ports[port].role == DPVPN_ROLE_OUTSIDE)
		trace_tap_slow(&m, 1, port, true, true);
	st->tx++;
#ifdef DPVPN_STAGE_CYCLES
	if (w->out.txb[port]->length + 1 >= w->out.txb[port]->size) {	/* it flushes: the PMD's TX */
		uint64_t t = rte_rdtsc(), d;

		rte_eth_tx_buffer(port, w->txq, w->out.txb[port], m);
		d = rte_rdtsc() - t;
		st->stage_cycles[DP_STAGE_TX] += d;
		st->stage_cycles[DP_STAGE_ROUTE] -= d;	/* worker_tx charged it to route */
		return;
	}
#endif
	rte_eth_tx_buffer(port, w->txq, w->out.txb[port], m);
}

/* A next hop found resolved: what this worker held for it goes first. */
static void
send_held(struct dp_worker *w, struct dp_lstats *st, uint16_t port, uint8_t family,
	  const void *next, const struct rte_ether_addr *mac)
{
	struct rte_mbuf *held[NEIGHQ_PER_HOP];
	uint16_t n = neighq_take(&w->out.nq, port, family, next, mac, held);

	for (uint16_t i = 0; i < n; i++)
		send_frame(w, st, held[i], port);
}

/*
 * No MAC for the next hop yet: the frame waits for it (neighq.h), and the
 * main lcore is asked to resolve it when it is the first to wait.
 */
static void
hold(struct dp_worker *w, struct dp_lstats *st, struct rte_mbuf *m, uint16_t port,
     uint8_t family, const void *next)
{
	uint8_t addr[16];

	memcpy(addr, next, family == DPVPN_AF_INET6 ? 16 : 4);	/* next may be in m */
	if (neighq_hold(&w->out.nq, st, m, port, family, addr, rte_get_timer_cycles()))
		ask_resolve(w, port, family, addr);
}

/*
 * A forwarded packet's TTL / hop limit expired here (RFC 1812 5.3.1): m is
 * dropped, and ICMP Time Exceeded goes back to its source through the
 * tunnel it came by (fwd->tunnel), from the address of inside port p
 * (p >= dp.n_ports or not an inside port: no error, as for a packet routed
 * out of an outside port or nowhere).
 */
static void
fwd_expired(struct dp_worker *w, struct dp_lstats *st, const struct dp_fwd *fwd,
	struct rte_mbuf *m, uint16_t p)
{
	struct rte_mbuf *r = NULL;

	if (p < dp.n_ports && dp.ports[p].role == DPVPN_ROLE_INSIDE)
		r = pmtu_icmp_expired(w, st, &dp.ports[p], m);
	dp_drop(st, m, DPVPN_DROP_TTL_EXPIRED);
	if (r != NULL) {
		r->port = p;
		dp_out_add(fwd->tunnel, r);
	}
}

/* The first inside port: a transit packet's Time Exceeded comes from its address. */
static uint16_t
first_inside(void)
{
	uint16_t p;

	for (p = 0; p < dp.n_ports && dp.ports[p].role != DPVPN_ROLE_INSIDE; p++)
		;
	return p;
}

/*
 * Not routed to a port: into a tunnel (decrypted packets, fwd: their step,
 * then transit) or dropped no-route; false, m is gone.
 */
static bool
not_to_port(struct dp_worker *w, struct dp_lstats *st, struct rte_mbuf *m, uint8_t *ip, bool v6,
	    enum route_to to, const struct dp_fwd *fwd)
{
	if (fwd != NULL && to != ROUTE_TO_PORT && !ip_ttl_step(ip, v6)) {
		fwd_expired(w, st, fwd, m, to == ROUTE_TO_TUNNEL ? first_inside() : UINT16_MAX);
		return false;
	}
	if (to == ROUTE_TO_TUNNEL && fwd != NULL && fwd->transit != NULL)
		dp_out_add(fwd->transit, m);
	else
		dp_drop(st, m, DPVPN_DROP_NO_ROUTE);
	return false;
}

/*
 * The route and next hop of m (data at its IP header), into c; false when
 * m is gone: dropped (no route, an answer for an inside host routed out of
 * an outside port, a forwarded packet's TTL expired), held for its next
 * hop's MAC (neighq.h) or, routed into a tunnel, added to fwd->transit.
 * A forwarded packet (fwd) takes its TTL step here, before it is held.
 */
static __rte_noinline bool	/* the miss path: kept out of route_tx's loop, as before the move */
route_one(struct dp_worker *w, struct dp_lstats *st, struct dst_cache *c, struct rte_mbuf *m,
	  uint8_t *ip, bool v6, const struct dp_fwd *fwd)
{
	uint8_t family = v6 ? DPVPN_AF_INET6 : DPVPN_AF_INET;
	struct rte_ether_addr mac;
	const void *next;
	uint32_t next4;
	uint16_t port;
	enum route_to to;

	if (v6) {
		const uint8_t *next6;

		to = route6_lookup(((const struct rte_ipv6_hdr *)ip)->dst_addr, &port, &next6);
		next = next6;
	} else {
		to = route_lookup(((const struct rte_ipv4_hdr *)ip)->dst_addr, &port, &next4);
		next = &next4;
	}
	if (to != ROUTE_TO_PORT)
		return not_to_port(w, st, m, ip, v6, to, fwd);
	if (unlikely(dp_is_answer_inside(m)) &&
	    dp.ports[port].role == DPVPN_ROLE_OUTSIDE) {
		dp_drop(st, m, DPVPN_DROP_ANSWER_OUTSIDE);
		return false;
	}
	if (fwd != NULL && !ip_ttl_step(ip, v6)) {
		fwd_expired(w, st, fwd, m, port);
		return false;
	}
	if (c->family == family && c->port == port &&
	    memcmp(c->next, next, v6 ? 16 : 4) == 0) {	/* another host, the same next hop */
		mac = c->eth.dst_addr;
	} else if (!neigh_lookup(port, family, next, &mac)) {
		struct rte_ether_hdr *eth = (struct rte_ether_hdr *)
			rte_pktmbuf_prepend(m, sizeof(*eth));

		if (eth == NULL) {
			dp_drop(st, m, DPVPN_DROP_TOO_BIG);
			return false;
		}
		eth->src_addr = dp.ports[port].mac;
		eth->ether_type = rte_cpu_to_be_16(v6 ? RTE_ETHER_TYPE_IPV6 :
							 RTE_ETHER_TYPE_IPV4);
		hold(w, st, m, port, family, next);
		return false;
	} else if (unlikely(w->out.nq.held != 0)) {	/* what waited for this next hop goes first */
		send_held(w, st, port, family, next, &mac);
	}
	memcpy(c->next, next, v6 ? 16 : 4);
	c->family = family;
	c->port = port;
	memcpy(c->dst, v6 ? ((const struct rte_ipv6_hdr *)ip)->dst_addr :
			    (const uint8_t *)&((const struct rte_ipv4_hdr *)ip)->dst_addr, v6 ? 16 : 4);
	c->eth.dst_addr = mac;
	c->eth.src_addr = dp.ports[port].mac;
	c->eth.ether_type = rte_cpu_to_be_16(v6 ? RTE_ETHER_TYPE_IPV6 : RTE_ETHER_TYPE_IPV4);
	return true;
}

/*
 * Route, resolve and queue IPv4 and IPv6 packets for transmission;
 * forwarded ones (fwd) take their TTL step: in route_one when the route is
 * looked up, else here (ip_output.h).
 */
void
route_tx(struct dp_worker *w, struct dp_lstats *st, struct rte_mbuf **pkts, uint16_t n,
	 const struct dp_fwd *fwd)
{
	struct dst_cache c = { .family = 0 };
	const uint64_t answer_inside = dp_answer_inside;	/* one load, not one a packet */
	STAGE_CLOCK(t);

	for (uint16_t i = 0; i < n; i++) {
		struct rte_mbuf *m = pkts[i];
		uint8_t *ip = rte_pktmbuf_mtod(m, uint8_t *);
		bool v6 = ip[0] >> 4 == 6;
		void *eth;

		if (unlikely(!dst_hit(&c, ip, v6) || (m->ol_flags & answer_inside) != 0)) {
			if (!route_one(w, st, &c, m, ip, v6, fwd))
				continue;
			dp_clear_answer_inside(m);
		} else if (fwd != NULL && unlikely(!ip_ttl_step(ip, v6))) {
			fwd_expired(w, st, fwd, m, c.port);
			continue;
		}
		eth = rte_pktmbuf_prepend(m, sizeof(struct rte_ether_hdr));
		if (unlikely(eth == NULL)) {
			dp_drop(st, m, DPVPN_DROP_TOO_BIG);
			continue;
		}
		memcpy(eth, &c.eth, sizeof(struct rte_ether_hdr));
		send_frame(w, st, m, c.port);
	}
	STAGE(st, t, ROUTE);
}

void
worker_tx(struct dp_worker *w, struct dp_lstats *st, struct rte_mbuf **pkts, uint16_t n)
{
	route_tx(w, st, pkts, n, NULL);
}

/* Packets held for next hops that are resolved now go out; the rest wait or time out. */
void
send_resolved(struct dp_worker *w, struct dp_lstats *st)
{
	struct rte_mbuf *out[NEIGHQ_MAX];
	struct dp_resolve_req asks[NEIGHQ_HOPS];
	uint16_t nasks, n = neighq_poll(&w->out.nq, st, rte_get_timer_cycles(), out, asks, &nasks);

	for (uint16_t i = 0; i < n; i++)
		send_frame(w, st, out[i], out[i]->port);
	/* best effort, as ask_resolve: asked again a tenth of a second later */
	for (uint16_t i = 0; i < nasks; i++)
		(void)rte_ring_enqueue_elem(w->out.resolve, &asks[i], sizeof(asks[i]));
	if (nasks > 0)
		dp_main_kick();
}
