/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * worker.c - the poll loop of a worker lcore: RX burst -> classify -> ESP
 * encap (inside ports) or decap (outside ports) -> route -> buffered TX, for
 * IPv4 and IPv6 alike (the output stage, route to TX, is ip_output.c).  The stages take a burst and hand bursts back (the
 * packets to forward, and in a dp_out what they made or kept aside: ICMP
 * errors, fragments, replies, packets for a tunnel); only this loop sends.  Nothing here allocates, locks, logs or makes a system
 * call per packet; ARP and Neighbour Discovery go to the main lcore over a ring,
 * and packets to a next hop not resolved yet wait for it (neighq.h).  Pings
 * to the gateway are answered (echo.h).
 */
#include <rte_cycles.h>
#include <rte_ethdev.h>
#include <rte_rcu_qsbr.h>

#include "echo.h"
#include "esp.h"
#include "host.h"
#include "ip.h"
#include "ip_output.h"
#include "pmtu.h"
#include "reass.h"
#include "route.h"
#include "tester.h"
#include "trace.h"
#include "tunif.h"

/* TX buffer callback: what the queue did not take is dropped and counted. */
void
worker_tx_unsent(struct rte_mbuf **pkts, uint16_t unsent, void *userdata)
{
	struct dp_lstats *st = userdata;

	st->tx -= unsent;
	st->drops[DPVPN_DROP_TX_FULL] += unsent;
	rte_pktmbuf_free_bulk(pkts, unsent);
}

static bool
mac_ok(const struct dp_port *port, const struct rte_ether_addr *dst)
{
	if (rte_is_broadcast_ether_addr(dst))
		return true;
	/* IPv6 multicast (33:33:...), for Neighbour Discovery */
	if (port->has6 && dst->addr_bytes[0] == 0x33 && dst->addr_bytes[1] == 0x33)
		return true;
	/* IPv4 multicast (01:00:5e:0..., RFC 1112) for the host's twin: VRRP,
	 * OSPF, IGMP (host_link_dst sends them there) */
	if (port->twin && dst->addr_bytes[0] == 0x01 && dst->addr_bytes[1] == 0x00 &&
	    dst->addr_bytes[2] == 0x5e && !(dst->addr_bytes[3] & 0x80))
		return true;
	return rte_is_same_ether_addr(dst, &port->mac);
}

static bool
punt(struct dp_worker *w, struct dp_lstats *st, const struct dp_port *port, struct rte_mbuf *m)
{
	m->port = port->id;
	if (rte_ring_enqueue(w->main.punt, m) != 0)
		dp_drop(st, m, DPVPN_DROP_PUNT_FULL);
	else
		dp_main_kick();
	return false;
}

/*
 * A host whose interface offloads transmit checksums (a veth or tap with
 * "tx" on) sends TCP and UDP packets whose checksum field holds only the
 * pseudo-header sum (Linux's CHECKSUM_PARTIAL): af_packet passes them on as
 * they are and the far host would drop them.  Only on ports whose driver
 * reads a Linux interface (port.c kernel_frames).  The checksum is finished here
 * where the field equals the pseudo-header sum, or where the PMD says the
 * data is sound but the checksum not filled in (RX_L4_CKSUM_NONE); a
 * packet that was right and matches by chance gets the same value again,
 * and is not counted (about one in 65 536 made test_checksum_offload_host_tcp
 * flaky).  One pseudo-header sum per TCP/UDP packet.  True if the field
 * changed.
 */
static bool
csum_finish(struct rte_mbuf *m, bool v6)
{
	uint8_t *ip = rte_pktmbuf_mtod(m, uint8_t *);
	uint64_t flags = m->ol_flags & RTE_MBUF_F_RX_L4_CKSUM_MASK;
	uint16_t off = v6 ? sizeof(struct rte_ipv6_hdr) : (uint16_t)((ip[0] & 0x0f) * 4);
	uint8_t proto = v6 ? ((struct rte_ipv6_hdr *)ip)->proto :
			     ((struct rte_ipv4_hdr *)ip)->next_proto_id;
	uint16_t at = proto == IPPROTO_TCP ? 16 : 6, *field, phdr, was;

	if ((proto != IPPROTO_TCP && proto != IPPROTO_UDP) ||
	    flags == RTE_MBUF_F_RX_L4_CKSUM_GOOD || flags == RTE_MBUF_F_RX_L4_CKSUM_BAD ||
	    (!v6 && ip4_is_fragment((const struct rte_ipv4_hdr *)ip)) ||
	    rte_pktmbuf_data_len(m) < off + at + 2)
		return false;
	field = (uint16_t *)(ip + off + at);
	if (proto == IPPROTO_UDP && *field == 0 && !v6)
		return false;	/* no checksum (IPv4 UDP) */
	phdr = v6 ? rte_ipv6_phdr_cksum((const struct rte_ipv6_hdr *)ip, 0) :
		    ip4_phdr_sum((const struct rte_ipv4_hdr *)ip);
	if (*field != phdr && flags != RTE_MBUF_F_RX_L4_CKSUM_NONE)
		return false;
	was = *field;
	*field = 0;
	*field = v6 ? rte_ipv6_udptcp_cksum((const struct rte_ipv6_hdr *)ip, ip + off) :
		      rte_ipv4_udptcp_cksum((const struct rte_ipv4_hdr *)ip, ip + off);
	return *field != was;	/* (a whole sum that equals the pseudo-header's: as it was) */
}

static inline void
inside_csum(struct dp_lstats *st, const struct dp_port *port, struct rte_mbuf *m, bool v6)
{
	if (port->role == DPVPN_ROLE_INSIDE && port->csum_partial && csum_finish(m, v6))
		st->csum_completed[port->id]++;
}

/*
 * An IPv6 packet (Ethernet header still on): Neighbour Solicitations and
 * Advertisements go to the main lcore; other multicast is not forwarded;
 * the rest is kept with its Ethernet header stripped (true).
 */
static bool
classify6(struct dp_worker *w, struct dp_lstats *st, const struct dp_port *port,
	  struct rte_mbuf *m)
{
	const struct rte_ipv6_hdr *ip;
	enum dpvpn_drop_reason why;

	rte_pktmbuf_adj(m, sizeof(struct rte_ether_hdr));
	why = ip6_check(m);
	if (why != DPVPN_DROP_MAX) {
		dp_drop(st, m, why);
		return false;
	}
	ip = rte_pktmbuf_mtod(m, const struct rte_ipv6_hdr *);
	if (ip->proto == IPPROTO_ICMPV6 && rte_pktmbuf_data_len(m) > sizeof(*ip)) {
		uint8_t type = *(const uint8_t *)(ip + 1);

		if (type == 135 || type == 136) {	/* NS, NA */
			rte_pktmbuf_prepend(m, sizeof(struct rte_ether_hdr));
			return punt(w, st, port, m);
		}
	}
	if (ip6_is_multicast(ip->dst_addr)) {
		if (port->twin)		/* MLD, router solicitations, ...: the host's */
			host_punt(w, st, port, m);
		else
			dp_drop(st, m, DPVPN_DROP_TO_SELF);
		return false;
	}
	inside_csum(st, port, m, true);
	return true;
}

/*
 * Keep IPv4 and IPv6 packets (Ethernet header stripped); punt ARP and ND; drop
 * the rest.  On an inside port, what is addressed to the gateway itself goes
 * to self[] (*nself of them) in the same pass: answered or dropped, never
 * tunnelled (echo_local).
 */
static uint16_t
classify(struct dp_worker *w, struct dp_lstats *st, const struct dp_port *port,
	 struct rte_mbuf **pkts, uint16_t n, struct rte_mbuf **self, uint16_t *nself)
{
	bool inside = port->role == DPVPN_ROLE_INSIDE;
	uint16_t k = 0;

	*nself = 0;
	for (uint16_t i = 0; i < n; i++) {
		struct rte_mbuf *m = pkts[i];
		const struct rte_ether_hdr *eth = rte_pktmbuf_mtod(m, struct rte_ether_hdr *);
		enum dpvpn_drop_reason why;

		if (m->nb_segs > 1) {
			dp_drop(st, m, DPVPN_DROP_MULTISEG);
			continue;
		}
		if (rte_pktmbuf_data_len(m) < sizeof(*eth)) {
			dp_drop(st, m, DPVPN_DROP_NOT_IP);
			continue;
		}
		if (!mac_ok(port, &eth->dst_addr)) {
			dp_drop(st, m, DPVPN_DROP_WRONG_MAC);
			continue;
		}
		if (eth->ether_type == rte_cpu_to_be_16(RTE_ETHER_TYPE_ARP)) {
			punt(w, st, port, m);
			continue;
		}
		if (eth->ether_type == rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV6)) {
			if (!classify6(w, st, port, m))
				continue;
		} else {
			if (eth->ether_type != rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV4)) {
				dp_drop(st, m, DPVPN_DROP_NOT_IP);
				continue;
			}
			rte_pktmbuf_adj(m, sizeof(*eth));
			why = ip4_check(m);
			if (why != DPVPN_DROP_MAX) {
				dp_drop(st, m, why);
				continue;
			}
			inside_csum(st, port, m, false);
		}
		if (inside && unlikely(dp_owner(rte_pktmbuf_mtod(m, const uint8_t *), NULL) >= 0 ||
				       (port->twin && host_link_dst(port, m))))
			self[(*nself)++] = m;
		else
			pkts[k++] = m;
	}
	return k;
}

/*
 * From an inside port, for the gateway itself: echo requests answered (the
 * replies, to out, may not leave by an outside port: dp_mark_answer_inside),
 * the rest dropped.  One whose address stopped being ours meanwhile is
 * forwarded after all (added to pkts).
 */
static void
answer_inside(struct dp_worker *w, struct dp_lstats *st, struct rte_mbuf **pkts, uint16_t *n,
	      struct rte_mbuf **self, uint16_t nself, struct dp_out *out)
{
	uint16_t first = out->n, nrep, k;

	k = echo_local(w, st, self, nself, out->pkts + first, &nrep, ECHO_HOPS);
	out->n += nrep;
	for (uint16_t i = first; i < out->n; i++)
		dp_mark_answer_inside(out->pkts[i]);
	for (uint16_t i = 0; i < k; i++)
		pkts[(*n)++] = self[i];
}

/*
 * Decrypted packets for the gateway itself: echo requests are answered
 * back into the tunnel (added to tunnel; encapsulation takes one off the
 * TTL / hop limit as for a forwarded packet, so they are built with one more
 * and leave with ECHO_HOPS), the rest is dropped as to-self.  Returns what
 * is forwarded.
 */
static void
tunnel_local(struct dp_worker *w, struct dp_lstats *st, struct rte_mbuf **pkts, uint16_t *n,
	     struct dp_out *self, struct dp_out *tunnel)
{
	uint16_t nrep, k;

	k = echo_local(w, st, self->pkts, self->n, tunnel->pkts + tunnel->n, &nrep,
		       ECHO_HOPS + 1);
	tunnel->n += nrep;
	for (uint16_t i = 0; i < k; i++)	/* no longer ours meanwhile: forwarded */
		pkts[(*n)++] = self->pkts[i];
}

/*
 * Packets of the gateway's own for its tunnels (echo replies, ICMP errors
 * about decrypted packets), each with m->port the inside port whose address
 * it comes from: encrypted a run of one port at a time (esp_encap_burst
 * finds the SA by their addresses), and what is to be sent added to out.
 */
static void
into_tunnel(struct dp_worker *w, struct dp_lstats *st, struct dp_out *tunnel,
	    struct dp_out *out)
{
	struct rte_mbuf **p = tunnel->pkts;

	for (uint16_t i = 0, run; i < tunnel->n; i += run) {
		uint16_t good;

		for (run = 1; i + run < tunnel->n && p[i + run]->port == p[i]->port; run++)
			;
		good = esp_encap_burst(w, st, &dp.ports[p[i]->port], p + i, run, out);
		for (uint16_t j = 0; j < good; j++)
			dp_out_add(out, p[i + j]);
	}
}

/*
 * One tunnel's ESP all hashes to one RX queue (same outer addresses), so a
 * worker that receives a burst on an outside port hands it, round robin, to
 * the next worker (itself included): decryption of a single SA then runs on
 * every worker, and the replay window (replay.h) is shared lock-free.  What
 * the other worker's ring cannot take is processed here: nothing is dropped
 * for it.  Returns how many packets stay with this worker (pkts[0..]).
 */
static uint16_t
hand_off(struct dp_worker *w, struct dp_lstats *st, uint16_t port, struct rte_mbuf **pkts,
	 uint16_t n)
{
	struct dp_worker *to = &dp.workers[w->spread.rr++ % dp.n_workers];
	unsigned int sent;

	if (to == w)
		return n;
	/* drain_work() reads the port from the mbuf: not every PMD writes it
	 * (net_ring, --tester-loop, passes the sender's mbuf through as it is) */
	for (uint16_t i = 0; i < n; i++)
		pkts[i]->port = port;
	sent = rte_ring_enqueue_burst(to->spread.work, (void **)pkts, n, NULL);
	st->handoff += sent;
	memmove(pkts, pkts + sent, (n - sent) * sizeof(pkts[0]));
	return (uint16_t)(n - sent);
}

/*
 * Decrypted packets whose route leads into a tunnel interface (a hub: spoke
 * to spoke, as Linux forwards between XFRM interfaces): encrypted again, by
 * a policy if one selects them, else by their route (select_sa).  Their one
 * TTL step was route_tx's, none in encapsulation (esp_encap_transit).  The
 * result joins out; an outer packet routed into a tunnel in turn
 * (recursion) is dropped no-route there.
 */
static void
forward_transit(struct dp_worker *w, struct dp_lstats *st, const struct dp_port *port,
	struct dp_out *t, struct dp_out *out)
{
	uint16_t k;

	k = esp_encap_transit(w, st, port, t->pkts, t->n, out);
	for (uint16_t i = 0; i < k; i++)
		dp_out_add(out, t->pkts[i]);
}

static void
poll_port(struct dp_worker *w, struct dp_lstats *st, const struct dp_port *port,
	  struct rte_mbuf **pkts, uint16_t n)
{
	struct dp_out out, tunnel, self, transit;	/* after the burst; to encrypt first;
							 * for us; into another tunnel */
	struct dp_fwd fwd = { .transit = NULL, .tunnel = &tunnel }, *f = NULL;
	STAGE_CLOCK(t);

	out.n = tunnel.n = self.n = transit.n = 0;
	if (unlikely(dp.tester) && port->role == DPVPN_ROLE_INSIDE) {
		n = tester_sink(w, pkts, n, sizeof(struct rte_ether_hdr));
		if (n == 0)
			return;
	}
	if (port->role == DPVPN_ROLE_INSIDE)
		trace_tap(DPVPN_TRACE_INSIDE_RX, pkts, n, port->id, true, false);
	n = classify(w, st, port, pkts, n, self.pkts, &self.n);
	if (port->role == DPVPN_ROLE_INSIDE) {
		if (unlikely(self.n > 0) && port->twin)
			for (uint16_t i = 0; i < self.n; i++)	/* the host's to answer */
				host_punt(w, st, port, self.pkts[i]);
		else if (unlikely(self.n > 0))
			answer_inside(w, st, pkts, &n, self.pkts, self.n, &out);
		STAGE(st, t, CLASSIFY);
		trace_tap(DPVPN_TRACE_PRE_ENCRYPT, pkts, n, port->id, false, false);
		n = esp_encap_burst(w, st, port, pkts, n, &out);
	} else if (port->role == DPVPN_ROLE_OUTSIDE) {
		if (!port->twin)	/* else the host answers (host_punt) */
			n = echo_outside(w, st, port, pkts, n, out.pkts, &out.n);
		STAGE(st, t, CLASSIFY);
		n = esp_decap_burst(w, st, port, pkts, n, &self);
		if (unlikely(dp.tester)) {	/* back to back: to our address */
			n = tester_sink(w, pkts, n, 0);
			self.n = tester_sink(w, self.pkts, self.n, 0);
		}
		trace_tap(DPVPN_TRACE_DECRYPTED, pkts, n, port->id, false, false);
		if (unlikely(self.n > 0)) {
			trace_tap(DPVPN_TRACE_DECRYPTED, self.pkts, self.n, port->id, false, false);
			tunnel_local(w, st, pkts, &n, &self, &tunnel);
		}
		if (unlikely(__atomic_load_n(&dp.n_tunifs, __ATOMIC_RELAXED) != 0))
			fwd.transit = &transit;
		f = &fwd;	/* decrypted: forwarded, with their TTL step */
	}
	else {
		for (uint16_t i = 0; i < n; i++)
			dp_drop(st, pkts[i], DPVPN_DROP_NO_ROLE);
		n = 0;
	}
	route_tx(w, st, pkts, n, f);
	if (unlikely(tunnel.n > 0))	/* echo replies, Time Exceeded: into their tunnel */
		into_tunnel(w, st, &tunnel, &out);
	if (unlikely(transit.n > 0))
		forward_transit(w, st, port, &transit, &out);
	if (unlikely(out.n > 0))
		worker_tx(w, st, out.pkts, out.n);
}

/*
 * Tester mode: the packets the current trial asks for now, cleartext routed
 * out (to the DUT's protected side), the rest encrypted into their tunnels.
 */
static unsigned int
tester_poll(struct dp_worker *w, struct dp_lstats *st)
{
	struct rte_mbuf *clear[DP_BURST], *esp[DP_BURST];
	uint16_t nclear, nesp, n = tester_gen(w, clear, &nclear, esp, &nesp);
	struct dp_out out;

	if (n == 0)
		return 0;
	if (nclear > 0)
		worker_tx(w, st, clear, nclear);
	if (nesp > 0) {
		out.n = 0;
		nesp = esp_encap_burst(w, st, &dp.ports[esp[0]->port], esp, nesp, &out);
		worker_tx(w, st, esp, nesp);
		if (out.n > 0)
			worker_tx(w, st, out.pkts, out.n);
	}
	return n;
}

/*
 * A frame the host sent through a twin (host.h): into its tunnel if a
 * policy selects it (true: taken), else it leaves as the kernel built it.
 */
static bool
host_frame(struct dp_worker *w, struct dp_lstats *st, struct rte_mbuf *m)
{
	enum dpvpn_drop_reason why;
	struct dp_out out;
	uint16_t k;

	if (!host_protected(m, &why)) {
		if (why == DPVPN_DROP_MAX)
			return false;
		dp_drop(st, m, why);
		return true;
	}
	out.n = 0;
	k = esp_encap_burst(w, st, &dp.ports[m->port], &m, 1, &out);
	worker_tx(w, st, &m, k);
	if (out.n > 0)
		worker_tx(w, st, out.pkts, out.n);
	return true;
}

/* Worker 0: a packet the host wrote into a tunnel twin, into its tunnel (host.h). */
static void
tun_frame(struct dp_worker *w, struct dp_lstats *st, struct rte_mbuf *m)
{
	enum dpvpn_drop_reason why;
	struct sa *sa = tunif_out_sa(dp_meta(m)->tunif, &why);
	struct dp_out out;
	uint16_t k;

	if (sa == NULL) {
		dp_drop(st, m, why);
		return;
	}
	out.n = 0;
	k = esp_encap_sa(w, st, m, sa, &out);
	worker_tx(w, st, &m, k);
	if (out.n > 0)
		worker_tx(w, st, out.pkts, out.n);
}

/* What the main lcore handed to worker 0 (dp_main_tx), by its kind (meta.h). */
static unsigned int
drain_main(struct dp_worker *w, struct dp_lstats *st)
{
	struct rte_mbuf *pkts[DP_BURST];
	unsigned int n = rte_ring_dequeue_burst(w->main.txq_ring, (void **)pkts, DP_BURST, NULL);

	for (unsigned int i = 0; i < n; i++) {
		struct rte_mbuf *m = pkts[i];

		switch (dp_meta(m)->kind) {
		case DP_KIND_LOCAL_IP:		/* IKE_TX: routed */
			worker_tx(w, st, &pkts[i], 1);
			continue;
		case DP_KIND_HOST:
			if (host_frame(w, st, m))
				continue;
			break;			/* not for a tunnel: leaves as the kernel built it */
		case DP_KIND_TUN:
			tun_frame(w, st, m);
			continue;
		default:
			break;
		}
		st->tx++;
		rte_eth_tx_buffer(m->port, w->txq, w->out.txb[m->port], m);
	}
	return n;
}

/* Outside frames other workers handed to this one: runs of one port each. */
static unsigned int
drain_work(struct dp_worker *w, struct dp_lstats *st)
{
	struct rte_mbuf *pkts[DP_BURST];
	unsigned int n = rte_ring_dequeue_burst(w->spread.work, (void **)pkts, DP_BURST, NULL);

	for (unsigned int i = 0; i < n;) {
		unsigned int run = 1;

		while (i + run < n && pkts[i + run]->port == pkts[i]->port)
			run++;
		poll_port(w, st, &dp.ports[pkts[i]->port], pkts + i, (uint16_t)run);
		i += run;
	}
	return n;
}

static void
idle(unsigned int *empty)
{
	if (dp.idle_sleep_us == 0 || ++*empty < DP_IDLE_POLLS)
		return;
	/* Share the CPU when there is nothing to do (labs, 2-vCPU machines). */
	rte_delay_us_sleep(dp.idle_sleep_us);
}

void
worker_rx(struct dp_worker *w, struct dp_lstats *st, uint16_t p, struct rte_mbuf **pkts,
	  uint16_t n)
{
	if (dp.ports[p].role == DPVPN_ROLE_OUTSIDE) {
		/* fragments are made whole here, before the burst moves on */
		n = reass_burst(w, st, &dp.ports[p], pkts, n);
		if (dp.spread && n > 0)
			n = hand_off(w, st, p, pkts, n);
	}
	if (n > 0)
		poll_port(w, st, &dp.ports[p], pkts, n);
}

static void
poll_once(struct dp_worker *w, struct dp_lstats *st, unsigned int *empty)
{
	struct rte_mbuf *pkts[DP_BURST];
	unsigned int got = 0;
	uint64_t t0 = rte_rdtsc();

	w->now_tsc = t0;
	if (unlikely(w->out.nq.held != 0))	/* before anything newer to the same next hops */
		send_resolved(w, st);
	for (uint16_t p = 0; p < dp.n_ports; p++) {
		STAGE_CLOCK(t);
		uint16_t n = rte_eth_rx_burst(p, w->rxq, pkts, DP_BURST);

		if (n == 0)
			continue;
		STAGE(st, t, RX);
		got += n;
		st->rx += n;
		worker_rx(w, st, p, pkts, n);
	}
	if (dp.spread)
		got += drain_work(w, st);
	if (unlikely(dp.tester))
		got += tester_poll(w, st);
	if ((++w->loops & 63) == 0)
		reass_tick(w, st);
	got += drain_main(w, st);
	STAGE_CLOCK(t);
	for (uint16_t p = 0; p < dp.n_ports; p++)
		rte_eth_tx_buffer_flush(p, w->txq, w->out.txb[p]);
	STAGE(st, t, TX);
	if (got == 0) {
		idle(empty);
		st->idle_cycles += rte_rdtsc() - t0;
	} else {
		*empty = 0;
		st->busy_cycles += rte_rdtsc() - t0;
	}
}

/*
 * net_af_packet (22.11) opens each queue's socket for every protocol, which
 * receives from every interface of the namespace, and binds it to its own
 * interface only after setting up the ring: what passed any interface in
 * between, either way, is in the ring, before what came since.  Forwarded,
 * such frames are copies of packets another port (or this one) receives too
 * (ESP seen twice: replay drops at a restarted gateway; cleartext encrypted
 * twice) or frames for other hosts.  So a worker's first poll after START
 * discards what its queues of such ports hold: frames from before the
 * dataplane forwarded, counted as before-start.
 */
static void
flush_stale(struct dp_worker *w, struct dp_lstats *st)
{
	struct rte_mbuf *pkts[DP_BURST];

	for (uint16_t p = 0; p < dp.n_ports; p++) {
		unsigned int n = 0, got;

		if (!dp.ports[p].flush_at_start)
			continue;
		do {	/* until the ring is empty: a few hundred frames */
			got = rte_eth_rx_burst(p, w->rxq, pkts, DP_BURST);
			st->rx += got;
			for (unsigned int i = 0; i < got; i++)
				dp_drop(st, pkts[i], DPVPN_DROP_BEFORE_START);
			n += got;
		} while (got > 0 && n < DP_FLUSH_MAX);
		/* not frames of the link since START: port.c leaves them out of rx_missed */
		__atomic_fetch_add(&dp.ports[p].flushed, n, __ATOMIC_RELAXED);
	}
}

int
worker_main(void *arg)
{
	struct dp_worker *w = arg;
	struct dp_lstats *st = &dp_lstats[w->lcore];
	unsigned int empty = 0;
	bool flushed = false;

	rte_rcu_qsbr_thread_register(dp.rcu, w->lcore);
	rte_rcu_qsbr_thread_online(dp.rcu, w->lcore);
	while (!__atomic_load_n(&dp.quit, __ATOMIC_RELAXED)) {
		rte_rcu_qsbr_quiescent(dp.rcu, w->lcore);
		if (!__atomic_load_n(&dp.started, __ATOMIC_ACQUIRE)) {
			rte_delay_us_sleep(1000);
			continue;
		}
		if (unlikely(!flushed)) {
			flush_stale(w, st);
			flushed = true;
		}
		poll_once(w, st, &empty);
	}
	neighq_flush(&w->out.nq, st, DPVPN_DROP_NO_NEIGH);	/* what waited for a MAC: counted */
	rte_rcu_qsbr_thread_offline(dp.rcu, w->lcore);
	rte_rcu_qsbr_thread_unregister(dp.rcu, w->lcore);
	return 0;
}
