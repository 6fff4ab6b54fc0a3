/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * host.c - the host exception path (host.h): twins, the worker's hand-off to
 * them behind two token buckets, and the main lcore's pass between twins
 * and the wire.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <rte_dev.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_ip.h>
#include <rte_mbuf.h>
#include <rte_ring.h>

#include "host.h"
#include "ip.h"
#include "port.h"
#include "spd.h"

#define LINK_POLL_HZ	50	/* twins' link states read this often (host-down until then) */

struct dp_twin dp_twins[DP_MAX_PORTS];
struct dp_twin dp_tun_twins[DPVPN_TUNIF_MAX];
unsigned int host_mbufs = HOST_MBUFS_DEFAULT;
bool host_twins_enabled;

/*
 * The buckets' TSC cycles a token and depths, fixed once the rates are known
 * (host_ring_init): a flood at the host is mostly dropped here, and at
 * 300 000 packets a second dp_bucket_take's timer read and 64-bit division
 * a packet halved the tunnel's throughput beside it (iperf3 through the
 * tunnel, the same flood at a non-local address for comparison).
 */
static uint64_t per_other, per_control;
static unsigned int n_tun_twins;	/* dp_tun_twins created */
static uint32_t depth_other, depth_control;

/* The bucket's depth: DP_HOST_DEPTH, or DP_HOST_BURST_MS of the rate. */
static inline uint32_t
bucket_depth(uint32_t rate)
{
	uint32_t ms = rate / 1000 * DP_HOST_BURST_MS;

	return ms > DP_HOST_DEPTH ? ms : DP_HOST_DEPTH;
}

/*
 * The control class (A.5 of deploy/NEXT-DESIGN.md): what keeps routing and
 * addressing alive: BGP (TCP 179 either side), OSPF (89), VRRP (112), BFD
 * (UDP 3784, 3785, 4784), DHCP (UDP 67, 68), ICMPv6 RS / RA.  Only the
 * header right after IP's is read (an IPv6 extension header: other class).
 */
static bool
control_class(const uint8_t *ip, uint16_t len)
{
	uint16_t hl, sport, dport;
	uint8_t proto;

	if (ip[0] >> 4 == 6) {
		hl = sizeof(struct rte_ipv6_hdr);
		proto = ((const struct rte_ipv6_hdr *)ip)->proto;
	} else {
		const struct rte_ipv4_hdr *h = (const struct rte_ipv4_hdr *)ip;

		hl = (uint16_t)((h->version_ihl & 0x0f) * 4);
		proto = h->next_proto_id;
		if ((rte_be_to_cpu_16(h->fragment_offset) & RTE_IPV4_HDR_OFFSET_MASK) != 0)
			return proto == 89 || proto == 112;	/* no ports in it */
	}
	if (proto == 89 || proto == 112)
		return true;
	if (len < hl + 4)
		return false;
	if (proto == IPPROTO_ICMPV6)
		return ip[hl] == 133 || ip[hl] == 134;
	sport = (uint16_t)(ip[hl] << 8 | ip[hl + 1]);
	dport = (uint16_t)(ip[hl + 2] << 8 | ip[hl + 3]);
	if (proto == IPPROTO_TCP)
		return sport == 179 || dport == 179;
	if (proto != IPPROTO_UDP)
		return false;
	return sport == 67 || sport == 68 || dport == 67 || dport == 68 ||
	       dport == 3784 || dport == 3785 || dport == 4784;
}

/*
 * The Ethernet header back in front of an IP packet: to the port's MAC, or
 * the multicast / broadcast MAC of its destination; the source is what the
 * headroom holds (the sender's, where classify() stepped over it).
 */
static bool
put_ether(const struct dp_port *port, struct rte_mbuf *m)
{
	const uint8_t *ip = rte_pktmbuf_mtod(m, const uint8_t *);
	struct rte_ether_addr dst = port->mac;
	struct rte_ether_hdr *eth;
	uint16_t type;

	if (ip[0] >> 4 == 6) {
		const uint8_t *d = ((const struct rte_ipv6_hdr *)ip)->dst_addr;

		type = RTE_ETHER_TYPE_IPV6;
		if (d[0] == 0xff)	/* RFC 2464 7 */
			dst = (struct rte_ether_addr){ { 0x33, 0x33, d[12], d[13], d[14], d[15] } };
	} else {
		uint32_t a = ((const struct rte_ipv4_hdr *)ip)->dst_addr, h = rte_be_to_cpu_32(a);

		type = RTE_ETHER_TYPE_IPV4;
		if (h >> 28 == 0xe)	/* RFC 1112 6.4 */
			dst = (struct rte_ether_addr){ { 0x01, 0x00, 0x5e, (h >> 16) & 0x7f,
							(h >> 8) & 0xff, h & 0xff } };
		else if (h == UINT32_MAX || (port->addr != 0 && a == (port->addr | ~port->mask)))
			memset(&dst, 0xff, sizeof(dst));
	}
	eth = (struct rte_ether_hdr *)rte_pktmbuf_prepend(m, sizeof(*eth));
	if (eth == NULL)
		return false;
	eth->dst_addr = dst;
	eth->ether_type = rte_cpu_to_be_16(type);
	return true;
}

/* The buckets of host_punt and host_punt_tun, for a packet of either class. */
static inline bool
bucket_ok(struct dp_worker *w, const struct rte_mbuf *m)
{
	if (control_class(rte_pktmbuf_mtod(m, const uint8_t *), rte_pktmbuf_data_len(m)))
		return dp_bucket_take_at(w->now_tsc, &w->main.hostc_rate, per_control,
					 depth_control);
	return dp_bucket_take_at(w->now_tsc, &w->main.host_rate, per_other, depth_other);
}

void
host_punt(struct dp_worker *w, struct dp_lstats *st, const struct dp_port *port,
	  struct rte_mbuf *m)
{
	if (!__atomic_load_n(&dp_twins[port->id].up, __ATOMIC_RELAXED)) {
		dp_drop(st, m, DPVPN_DROP_HOST_DOWN);
		return;
	}
	if (!bucket_ok(w, m)) {
		dp_drop(st, m, DPVPN_DROP_HOST_LIMIT);
		return;
	}
	m->port = port->id;
	dp_meta(m)->kind = DP_KIND_FRAME;
	if (!put_ether(port, m) || rte_ring_enqueue(w->main.host, m) != 0)
		dp_drop(st, m, DPVPN_DROP_HOST_FULL);
	/* host_in is counted when the main lcore has written it (to_twin) */
}

void
host_punt_tun(struct dp_worker *w, struct dp_lstats *st, uint16_t id, struct rte_mbuf *m)
{
	if (!__atomic_load_n(&dp_tun_twins[id].up, __ATOMIC_RELAXED)) {
		dp_drop(st, m, DPVPN_DROP_HOST_DOWN);
		return;
	}
	if (!bucket_ok(w, m)) {
		dp_drop(st, m, DPVPN_DROP_HOST_LIMIT);
		return;
	}
	dp_meta(m)->kind = DP_KIND_TUN;	/* raw IP: no Ethernet header */
	dp_meta(m)->tunif = id;
	if (rte_ring_enqueue(w->main.host, m) != 0)
		dp_drop(st, m, DPVPN_DROP_HOST_FULL);
}

/*
 * Main lcore: one frame into its port's (or tunnel's) twin; counted in
 * host_in unless it is a copy (an ARP / ND reply, consumed already: arp_in).
 */
static void
to_twin(struct dp_lstats *st, struct rte_mbuf *m, struct dp_twin *t, bool copy)
{
	if (!t->created) {	/* closed since the worker queued it */
		dp_drop(st, m, DPVPN_DROP_HOST_DOWN);
		return;
	}
	if (rte_eth_tx_burst(t->eth, 0, &m, 1) == 0) {
		dp_drop(st, m, DPVPN_DROP_HOST_FULL);
		return;
	}
	t->in++;
	if (!copy)
		st->host_in++;
}

void
host_copy(struct rte_mbuf *m)
{
	if (m->port >= DP_MAX_PORTS || !dp_twins[m->port].up) {
		rte_pktmbuf_free(m);	/* consumed (arp_in), as without a twin */
		return;
	}
	to_twin(main_stats(), m, &dp_twins[m->port], true);
}

static inline bool
is_ip(const struct rte_mbuf *m)
{
	const struct rte_ether_hdr *eth = rte_pktmbuf_mtod(m, const struct rte_ether_hdr *);

	return rte_pktmbuf_data_len(m) >= sizeof(*eth) &&
	       (eth->ether_type == rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV4) ||
		eth->ether_type == rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV6));
}

bool
host_protected(struct rte_mbuf *m, enum dpvpn_drop_reason *why)
{
	bool v6 = rte_pktmbuf_mtod(m, const struct rte_ether_hdr *)->ether_type ==
		  rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV6);
	const uint8_t *ip;
	int32_t slot;

	rte_pktmbuf_adj(m, sizeof(struct rte_ether_hdr));
	*why = v6 ? ip6_check(m) : ip4_check(m);
	if (*why != DPVPN_DROP_MAX)
		return false;
	ip = rte_pktmbuf_mtod(m, const uint8_t *);
	spd_classify(spd_get(), &ip, &slot, 1);
	if (slot >= 0)
		return true;
	rte_pktmbuf_prepend(m, sizeof(struct rte_ether_hdr));	/* as the kernel built it */
	return false;
}

/* What the host sent through twin p leaves by port p, through worker 0. */
static void
from_twin(struct dp_lstats *st, uint16_t p, struct dp_twin *t)
{
	struct rte_mbuf *pkts[DP_HOST_BURST];
	uint16_t n = rte_eth_rx_burst(t->eth, 0, pkts, DP_HOST_BURST);

	for (uint16_t i = 0; i < n; i++) {
		struct rte_mbuf *m = pkts[i];

		st->host_out++;
		t->out++;
		if (m->nb_segs > 1) {
			dp_drop(st, m, DPVPN_DROP_MULTISEG);
			continue;
		}
		m->port = p;
		if (!dp_main_tx(m, is_ip(m) ? DP_KIND_HOST : DP_KIND_FRAME, 0))
			dp_drop(st, m, DPVPN_DROP_PUNT_FULL);
	}
}

/* What the host wrote into tunnel twin id: into the tunnel, through worker 0. */
static void
from_tun_twin(struct dp_lstats *st, uint16_t id, struct dp_twin *t)
{
	struct rte_mbuf *pkts[DP_HOST_BURST];
	uint16_t n = rte_eth_rx_burst(t->eth, 0, pkts, DP_HOST_BURST);

	for (uint16_t i = 0; i < n; i++) {
		struct rte_mbuf *m = pkts[i];
		enum dpvpn_drop_reason why;

		st->host_out++;
		t->out++;
		if (m->nb_segs > 1) {
			dp_drop(st, m, DPVPN_DROP_MULTISEG);
			continue;
		}
		why = rte_pktmbuf_data_len(m) > 0 &&
		      rte_pktmbuf_mtod(m, const uint8_t *)[0] >> 4 == 6 ? ip6_check(m) :
		      ip4_check(m);
		if (why != DPVPN_DROP_MAX) {
			dp_drop(st, m, why);
			continue;
		}
		if (!dp_main_tx(m, DP_KIND_TUN, id))
			dp_drop(st, m, DPVPN_DROP_PUNT_FULL);
	}
}

/* Twin t's Linux link state, for the workers (an ioctl). */
static void
link_read(struct dp_twin *t)
{
	struct rte_eth_link link = { 0 };

	rte_eth_link_get_nowait(t->eth, &link);
	__atomic_store_n(&t->up, link.link_status == RTE_ETH_LINK_UP, __ATOMIC_RELAXED);
}

/*
 * A port's link, followed by its twin's: down when the port's goes down, up
 * when it comes back, so that what watches the twin sees the cable
 * (keepalived's track_interface: an HA master whose outside link is cut
 * goes to FAULT, doc/ha.md).  Changes only: a twin an operator set down
 * stays down while its port's link does not change.
 */
static void
port_link_follow(uint16_t p, struct dp_twin *t)
{
	uint8_t down;

	if (!__atomic_load_n(&dp.started, __ATOMIC_ACQUIRE))
		return;
	down = !port_link_up(p);
	if (down == t->port_down)
		return;
	t->port_down = down;
	if (down ? rte_eth_dev_set_link_down(t->eth) : rte_eth_dev_set_link_up(t->eth))
		return;
	fprintf(stderr, "dpvpn-dataplane: port %u: link %s: host interface %s %s too\n", p,
		down ? "down" : "up", t->iface, down ? "down" : "up");
}

void
host_poll(void)
{
	static uint64_t next_link;
	struct dp_lstats *st = main_stats();
	struct rte_mbuf *pkts[DP_HOST_BURST];
	uint64_t now;

	for (unsigned int i = 0; i < dp.n_workers; i++) {
		/* a ring's worth at most: the lcore also serves the socket and IKE */
		for (unsigned int b = 0; b < DP_HOST_RING / DP_HOST_BURST; b++) {
			unsigned int n = rte_ring_dequeue_burst(dp.workers[i].main.host, (void **)pkts,
								DP_HOST_BURST, NULL);

			for (unsigned int k = 0; k < n; k++) {
				const struct dp_meta *meta = dp_meta(pkts[k]);

				to_twin(st, pkts[k], meta->kind == DP_KIND_TUN ?
					&dp_tun_twins[meta->tunif] : &dp_twins[pkts[k]->port], false);
			}
			if (n < DP_HOST_BURST)
				break;
		}
	}
	for (uint16_t p = 0; p < dp.n_ports; p++)
		if (dp_twins[p].created)
			from_twin(st, p, &dp_twins[p]);
	if (n_tun_twins != 0)
		for (uint16_t id = 0; id < DPVPN_TUNIF_MAX; id++)
			if (dp_tun_twins[id].created)
				from_tun_twin(st, id, &dp_tun_twins[id]);
	now = rte_get_timer_cycles();
	if (now < next_link)
		return;
	next_link = now + rte_get_timer_hz() / LINK_POLL_HZ;
	for (uint16_t p = 0; p < dp.n_ports; p++) {
		if (!dp_twins[p].created)
			continue;
		port_link_follow(p, &dp_twins[p]);
		link_read(&dp_twins[p]);
	}
	for (uint16_t id = 0; n_tun_twins != 0 && id < DPVPN_TUNIF_MAX; id++)
		if (dp_tun_twins[id].created)
			link_read(&dp_tun_twins[id]);
}

bool
host_twins_any(void)
{
	for (uint16_t p = 0; p < dp.n_ports; p++)
		if (dp_twins[p].created)
			return true;
	return n_tun_twins != 0;
}

bool
host_name_ok(const char *name, size_t size)
{
	size_t len = strnlen(name, size);

	if (len == size || len >= 16 || (len > 0 && (!strcmp(name, ".") || !strcmp(name, ".."))))
		return false;
	/* Linux's dev_valid_name, and no ',' or '=' that would end a devargs value */
	for (size_t i = 0; i < len; i++)
		if (name[i] <= ' ' || name[i] >= 0x7f || strchr("/:,=", name[i]) != NULL)
			return false;
	return true;
}

static int
pool_init(char *err, size_t elen)
{
	if (dp.host_pool != NULL)
		return 0;
	dp.host_pool = rte_pktmbuf_pool_create("dpvpn_host", host_mbufs, 32, 0,
					       rte_pktmbuf_data_room_size(dp.pool),
					       (int)rte_socket_id());
	if (dp.host_pool != NULL)
		return 0;
	snprintf(err, elen, "port.host_iface: the twins' mbuf pool (%u, --host-mbufs): %s",
		 host_mbufs, rte_strerror(rte_errno));
	return -ENOMEM;
}

static void
twin_close(uint16_t port)
{
	struct dp_twin *t = &dp_twins[port];

	__atomic_store_n(&dp.ports[port].twin, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&t->up, 0, __ATOMIC_RELAXED);
	rte_eth_dev_stop(t->eth);
	/* the PMD's remove closes the ethdev; "persist" keeps the interface */
	rte_eal_hotplug_remove("vdev", t->dev);
	memset(t, 0, sizeof(*t));
}

static int
twin_start(uint16_t eth)
{
	struct rte_eth_conf conf = { 0 };
	int rc = rte_eth_dev_configure(eth, 1, 1, &conf);

	if (rc == 0)
		rc = rte_eth_rx_queue_setup(eth, 0, DP_HOST_DESC, (unsigned int)rte_socket_id(),
					    NULL, dp.host_pool);
	if (rc == 0)
		rc = rte_eth_tx_queue_setup(eth, 0, DP_HOST_DESC, (unsigned int)rte_socket_id(),
					    NULL);
	return rc == 0 ? rte_eth_dev_start(eth) : rc;
}

int
host_twin_set(uint16_t port, const char *iface, char *err, size_t elen)
{
	struct dp_twin *t = &dp_twins[port];
	char args[128];
	int rc;

	if (t->created && strcmp(t->iface, iface) == 0)
		return 0;
	if (t->created)
		twin_close(port);
	if (iface[0] == '\0')
		return 0;
	if (!host_twins_enabled) {
		snprintf(err, elen, "port.host_iface: %s: this process makes no twins (not the "
			 "dataplane: a fuzz target or a test)", iface);
		return -ENOTSUP;
	}
	if ((rc = pool_init(err, elen)) != 0)
		return rc;
	snprintf(t->dev, sizeof(t->dev), "net_tap_dpvpn%u", port);
	/* persist: the interface, its addresses and sockets outlive the dataplane,
	 * and the next one re-attaches to it by name */
	snprintf(args, sizeof(args), "%s,iface=%s,mac=" RTE_ETHER_ADDR_PRT_FMT ",persist",
		 t->dev, iface, RTE_ETHER_ADDR_BYTES(&dp.ports[port].mac));
	rc = rte_dev_probe(args);
	if (rc == 0 && (rc = rte_eth_dev_get_port_by_name(t->dev, &t->eth)) == 0 &&
	    (rc = twin_start(t->eth)) != 0)
		rte_eal_hotplug_remove("vdev", t->dev);
	if (rc != 0) {
		snprintf(err, elen, "port.host_iface: %s: net_tap could not create it or attach "
			 "to it (%s; an interface of that name that is not a TAP?)", iface,
			 rte_strerror(rc < 0 ? -rc : rc));
		memset(t, 0, sizeof(*t));
		return rc < 0 ? rc : -rc;
	}
	snprintf(t->iface, sizeof(t->iface), "%s", iface);
	t->created = 1;
	__atomic_store_n(&dp.ports[port].twin, 1, __ATOMIC_RELAXED);
	/* link multicast for the host (VRRP, OSPF): a NIC's filter passes it only
	 * so (a PMD without the switch, net_af_packet, passes it anyway) */
	(void)rte_eth_allmulticast_enable(port);
	fprintf(stderr, "dpvpn-dataplane: port %u: host interface %s (DPDK port %u)\n", port,
		iface, t->eth);
	return 0;
}

static void
tun_close(uint16_t id)
{
	struct dp_twin *t = &dp_tun_twins[id];

	__atomic_store_n(&t->up, 0, __ATOMIC_RELAXED);
	rte_eth_dev_stop(t->eth);
	rte_eal_hotplug_remove("vdev", t->dev);	/* net_tun: the interface goes too */
	memset(t, 0, sizeof(*t));
	n_tun_twins--;
}

int
host_tun_set(uint16_t id, const char *iface, char *err, size_t elen)
{
	struct dp_twin *t = &dp_tun_twins[id];
	char args[96];
	int rc;

	if (t->created && strcmp(t->iface, iface) == 0)
		return 0;
	if (t->created)
		tun_close(id);
	if (iface[0] == '\0')
		return 0;
	if (!host_twins_enabled) {
		snprintf(err, elen, "tunif.host_iface: %s: this process makes no twins (not the "
			 "dataplane: a fuzz target or a test)", iface);
		return -ENOTSUP;
	}
	if ((rc = pool_init(err, elen)) != 0)
		return rc;
	snprintf(t->dev, sizeof(t->dev), "net_tun_dpvpnt%u", id);
	snprintf(args, sizeof(args), "%s,iface=%s", t->dev, iface);
	rc = rte_dev_probe(args);
	if (rc == 0 && (rc = rte_eth_dev_get_port_by_name(t->dev, &t->eth)) == 0 &&
	    (rc = twin_start(t->eth)) != 0)
		rte_eal_hotplug_remove("vdev", t->dev);
	if (rc != 0) {
		snprintf(err, elen, "tunif.host_iface: %s: net_tun could not create it (%s; an "
			 "interface of that name already?)", iface,
			 rte_strerror(rc < 0 ? -rc : rc));
		memset(t, 0, sizeof(*t));
		return rc < 0 ? rc : -rc;
	}
	snprintf(t->iface, sizeof(t->iface), "%s", iface);
	t->created = 1;
	n_tun_twins++;
	fprintf(stderr, "dpvpn-dataplane: tunnel interface %u: host interface %s (DPDK port "
		"%u)\n", id, iface, t->eth);
	return 0;
}

int
host_ring_init(struct dp_worker *w, int sock)
{
	char name[RTE_RING_NAMESIZE];

	per_other = rte_get_tsc_hz() / RTE_MAX(dp.host_rate, 1u);
	per_control = rte_get_tsc_hz() / RTE_MAX(dp.host_rate_control, 1u);
	depth_other = bucket_depth(dp.host_rate);
	depth_control = bucket_depth(dp.host_rate_control);
	snprintf(name, sizeof(name), "host%u", w->index);
	w->main.host = rte_ring_create(name, DP_HOST_RING, sock, RING_F_SP_ENQ | RING_F_SC_DEQ);
	return w->main.host == NULL ? -ENOMEM : 0;
}

void
host_teardown(void)
{
	struct rte_mbuf *m;

	for (unsigned int i = 0; i < dp.n_workers; i++)
		while (dp.workers[i].main.host != NULL && rte_ring_dequeue(dp.workers[i].main.host,
								       (void **)&m) == 0)
			rte_pktmbuf_free(m);
	for (uint16_t p = 0; p < dp.n_ports; p++)
		if (dp_twins[p].created)
			twin_close(p);
	for (uint16_t id = 0; n_tun_twins != 0 && id < DPVPN_TUNIF_MAX; id++)
		if (dp_tun_twins[id].created)
			tun_close(id);
}
