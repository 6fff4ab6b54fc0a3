/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * host.h - the host exception path: a Linux twin (net_tap) per port that
 * has a host-interface, and what passes between it and the wire.
 *
 * Workers hand what is addressed to the gateway and not theirs to consume
 * (not ESP, IKE or the ARP / ND the dataplane answers) to their own ring
 * w->main.host, behind two token buckets per worker (the control class: BGP,
 * OSPF, BFD, VRRP, DHCP, RA / RS; the other class: the rest).  The main lcore
 * alone touches the twins: it writes those rings' frames into the twins and
 * reads what the host sends, which leaves through the port on worker 0's
 * TX ring, as the main lcore's ARP frames do.  Twins are hot-plugged
 * (rte_dev_probe) after EAL init: their ethdev ids come after dp.n_ports, so
 * workers never poll them.  See doc/host-path.md.
 */
#ifndef DP_HOST_H
#define DP_HOST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "dp.h"

#define DP_HOST_RING		1024	/* worker -> main: frames for a twin */
#define DP_HOST_DESC		512	/* twin RX / TX descriptors */
#define DP_HOST_BURST		32	/* frames a twin gives a pass */
#define DP_HOST_DEPTH		64	/* bucket depth at least (a TCP window's burst) */
#define DP_HOST_BURST_MS	10	/* and as deep as this much of the rate */
#define HOST_RATE_DEFAULT	10000	/* --host-rate: packets a second, each worker */
#define HOST_RATE_CONTROL_DEFAULT 2000	/* --host-rate-control */
#define HOST_RATE_MAX		10000000
#define HOST_MBUFS_DEFAULT	4096	/* --host-mbufs: the twins' own pool */
#define HOST_MBUFS_MIN		(2 * DP_HOST_DESC)

_Static_assert((DP_HOST_RING & (DP_HOST_RING - 1)) == 0, "ring sizes are powers of 2");

/* A port's twin; the table is indexed by the port's id.  Main lcore's. */
struct dp_twin {
	uint16_t eth;		/* its ethdev id (>= dp.n_ports) */
	uint8_t created;
	uint8_t up;		/* created and the Linux link up: workers read it */
	uint8_t port_down;	/* its port's link was down at the last look (port twins) */
	char iface[16];		/* the Linux interface */
	char dev[32];		/* the DPDK device name */
	uint64_t in, out;	/* frames written to it / read from it (main lcore) */
};

extern struct dp_twin dp_twins[DP_MAX_PORTS];
/*
 * Tunnel twins (net_tun: raw IP, no MAC), indexed by tunnel interface id
 * (tunif.h).  net_tun ignores persist: the interface dies with the
 * dataplane, and dpvpnd makes and addresses it again after a reconnect.
 * A frame on a worker's host ring bound for one is DP_KIND_TUN with the
 * id in its dp_meta (meta.h); what the host writes into one goes to worker
 * 0 the same way (dp_main_tx), to be encrypted into the tunnel's outbound
 * SA.
 */
extern struct dp_twin dp_tun_twins[DPVPN_TUNIF_MAX];

/*
 * Is m (IP header first) for the link rather than an address: IPv4
 * multicast or broadcast (the subnet's or 255.255.255.255), an IPv6
 * link-local or multicast destination?  Such packets go to a twin too.
 */
static inline bool
host_link_dst(const struct dp_port *port, const struct rte_mbuf *m)
{
	const uint8_t *ip = rte_pktmbuf_mtod(m, const uint8_t *);
	uint32_t a, h;

	if (ip[0] >> 4 == 6) {
		const uint8_t *d = ((const struct rte_ipv6_hdr *)ip)->dst_addr;

		return d[0] == 0xff || (d[0] == 0xfe && (d[1] & 0xc0) == 0x80);
	}
	a = ((const struct rte_ipv4_hdr *)ip)->dst_addr;
	h = rte_be_to_cpu_32(a);
	return h >> 28 == 0xe || h == UINT32_MAX ||
	       (port->addr != 0 && a == (port->addr | ~port->mask));
}

/* Worker: m (IP header first) to port's twin, or dropped under a reason. */
void host_punt(struct dp_worker *w, struct dp_lstats *st, const struct dp_port *port,
	       struct rte_mbuf *m);
/*
 * Main lcore: an ARP / ND frame (m->port's, Ethernet header on) that the
 * dataplane took (arp_in: a reply it learnt from, a solicitation for another
 * address of the link) to the twin; freed if the port has no twin up.  Not
 * counted in host_in (arp_in did); a twin that refuses it: host-full.
 */
void host_copy(struct rte_mbuf *m);
/*
 * The host's IP frames (from a twin) go to worker 0 as DP_KIND_HOST: that
 * worker gives them to host_protected() before it sends them.
 */
/*
 * Worker 0, a frame from a twin: an IP packet that an outbound policy selects
 * is the host's own traffic into a tunnel, and is encrypted as Linux's XFRM
 * encrypts a host's packets, never sent in clear: true, its Ethernet header
 * stripped (the caller encrypts it).  Else false, and the frame is as the
 * kernel built it, to send as it is, unless *why names a reason to drop it
 * (a malformed IP header; DPVPN_DROP_MAX: none).
 */
bool host_protected(struct rte_mbuf *m, enum dpvpn_drop_reason *why);
/* Worker: m (decrypted, IP header first) to tunnel interface id's twin, or dropped. */
void host_punt_tun(struct dp_worker *w, struct dp_lstats *st, uint16_t id, struct rte_mbuf *m);
/*
 * TUNIF_SET: tunnel interface id's twin is iface ("" none): created, left
 * as it is, or closed.  0 or -errno (err says; err NULL when closing).
 */
int host_tun_set(uint16_t id, const char *iface, char *err, size_t elen);
/* Main lcore: rings to twins, twins to the wire, link states. */
void host_poll(void);
/* Main lcore: a twin exists (its frames and link are polled, not waited for). */
bool host_twins_any(void);
/*
 * PORT_SET: the port's twin is iface ("" none): created (or re-attached if
 * the interface persisted), left as it is, or closed.  0 or -errno (err says).
 */
int host_twin_set(uint16_t port, const char *iface, char *err, size_t elen);
/* Is name a Linux interface name the dataplane takes for a twin? */
bool host_name_ok(const char *name, size_t size);
int host_ring_init(struct dp_worker *w, int sock);
void host_teardown(void);
extern unsigned int host_mbufs;
/* Set by the dataplane's main(): fuzz targets and unit tests make no Linux interfaces. */
extern bool host_twins_enabled;

#endif /* DP_HOST_H */
