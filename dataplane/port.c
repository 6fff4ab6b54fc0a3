/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * port.c - a port's configuration (PORT_SET: the checks, the device's MTU,
 * the role and addresses) and what its device does not report itself, read
 * on the main lcore when the port is shown (never by workers, never per
 * packet).
 *
 * The Linux interface: the device's if_index (net_af_packet, net_af_xdp and
 * net_tap set it), else the vdev's iface= argument.
 *
 * rx_missed: DPDK 22.11's net_af_packet reports no imissed, yet its socket's
 * ring overflows when a worker falls behind (the kernel counts those in the
 * socket's PACKET_STATISTICS, which only the PMD can reach).  So for that
 * driver rx_missed is what the Linux link received since START but the
 * dataplane never got:
 *
 *   (rx_packets + rx_dropped of /sys/class/net/IFACE/statistics, since START)
 *   - (frames the PMD delivered since START - frames from before START that
 *      the workers discarded, flush_stale() in worker.c)
 *
 * rx_dropped is in: on a veth it counts what the receive backlog had no room
 * for, frames that reached the link but not the socket.  The difference is
 * exact once traffic pauses; while frames wait in the socket ring it reads
 * high by at most the ring's size, and it never goes below 0.  Frames the
 * host's own stack sends on the interface also reach the socket and would
 * hide as many losses: such an interface carries no addresses (lab.py).
 */
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rte_bus_vdev.h>
#include <rte_dev.h>
#include <rte_devargs.h>

#include "dp.h"
#include "host.h"
#include "ip.h"
#include "port.h"

_Static_assert(sizeof(((struct dpvpn_port_info *)0)->iface) == IF_NAMESIZE,
	       "the shown interface name holds any Linux one");

/* One number from /sys/class/net/IFACE/NAME. */
static bool
sys_u64(const char *iface, const char *name, uint64_t *v)
{
	char path[96], buf[32], *end;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/sys/class/net/%s/%s", iface, name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = '\0';
	*v = strtoull(buf, &end, 10);
	return end != buf;
}

/* Frames the link received, dropped ones included; false if unreadable
 * (or if /sys shows another network namespace than the dataplane's). */
static bool
link_rx(const struct dp_port *p, uint64_t *rx)
{
	uint64_t idx, pkts, drops;

	if (!sys_u64(p->iface, "ifindex", &idx) || idx != p->if_index ||
	    !sys_u64(p->iface, "statistics/rx_packets", &pkts) ||
	    !sys_u64(p->iface, "statistics/rx_dropped", &drops))
		return false;
	*rx = pkts + drops;
	return true;
}

/* The iface= argument of the vdev's arguments, if any. */
static void
iface_devarg(const struct rte_device *dev, char *out, size_t len)
{
	const struct rte_devargs *da = dev != NULL ? rte_dev_devargs(dev) : NULL;
	const char *a = da != NULL ? da->args : NULL, *v;
	size_t n;

	for (v = a; v != NULL; v = strchr(v, ',')) {
		v += *v == ',';
		if (strncmp(v, "iface=", 6) == 0) {
			v += 6;
			n = strcspn(v, ",");
			if (n > 0 && n < len) {
				memcpy(out, v, n);
				out[n] = '\0';
			}
			return;
		}
	}
}

/*
 * A driver that reads the frames of a Linux interface (a veth, a tap): a
 * host beside it with transmit checksum offload hands them over with TCP
 * and UDP checksums left to the hardware (CHECKSUM_PARTIAL), which the
 * inside port then finishes (worker.c csum_finish).  Frames from a NIC's
 * wire, a capture or another DPDK process carry whole checksums: no test.
 */
static bool
kernel_frames(const char *driver)
{
	static const char *const drivers[] = {
		"net_af_packet", "net_af_xdp", "net_tap", "net_virtio_user",
	};

	for (size_t i = 0; i < RTE_DIM(drivers); i++)
		if (strcmp(driver, drivers[i]) == 0)
			return true;
	return false;
}

void
port_ident(uint16_t id)
{
	struct dp_port *p = &dp.ports[id];
	struct rte_eth_dev_info info;

	p->iface[0] = '\0';
	if (rte_eth_dev_info_get(id, &info) != 0)
		return;
	p->if_index = info.if_index;
	if (p->if_index == 0 || if_indextoname(p->if_index, p->iface) == NULL) {
		iface_devarg(info.device, p->iface, sizeof(p->iface));
		p->if_index = p->iface[0] ? if_nametoindex(p->iface) : 0;
	}
	p->link_missed = p->if_index != 0 && info.driver_name != NULL &&
			 strcmp(info.driver_name, "net_af_packet") == 0;
	p->csum_partial = info.driver_name != NULL && kernel_frames(info.driver_name);
}

void
port_baseline(uint16_t id)
{
	struct dp_port *p = &dp.ports[id];
	struct rte_eth_stats s;

	p->has_base = p->link_missed && link_rx(p, &p->base_link_rx) &&
		      rte_eth_stats_get(id, &s) == 0;
	if (p->has_base)
		p->base_ipackets = s.ipackets;
}

uint64_t
port_rx_missed(uint16_t id, const struct rte_eth_stats *s)
{
	const struct dp_port *p = &dp.ports[id];
	uint64_t rx, got, delivered;

	if (s->imissed != 0 || !p->has_base || !link_rx(p, &rx))
		return s->imissed;
	got = rx - p->base_link_rx;
	delivered = s->ipackets - p->base_ipackets -
		    __atomic_load_n(&p->flushed, __ATOMIC_RELAXED);
	return got > delivered ? got - delivered : 0;
}

/*
 * PORT_SET's checks of a port's configuration, before anything changes
 * (as sa.c's check_cfg for an SA): 0, or an error naming the field in eb.
 */
int
port_check_cfg(const struct dpvpn_port_cfg *c, char *eb, size_t len)
{
	if (c->role > DPVPN_ROLE_OUTSIDE) {
		snprintf(eb, len, "port.role: %u is not 0, 1 or 2", c->role);
		return -EINVAL;
	}
	if ((c->addr4.family != 0 && c->addr4.family != DPVPN_AF_INET) ||
	    (c->addr4.family != 0 && (c->addr4.len == 0 || c->addr4.len > 32 || c->addr4.v4 == 0))) {
		snprintf(eb, len, "port.addr4: family %u, length %u: not an IPv4 "
			 "address with a length of 1..32", c->addr4.family, c->addr4.len);
		return -EINVAL;
	}
	if ((c->addr6.family != 0 && c->addr6.family != DPVPN_AF_INET6) ||
	    (c->addr6.family != 0 && (c->addr6.len == 0 || c->addr6.len > 128 ||
				      ip6_is_multicast(c->addr6.v6)))) {
		snprintf(eb, len, "port.addr6: family %u, length %u: not an IPv6 "
			 "unicast address with a length of 1..128", c->addr6.family, c->addr6.len);
		return -EINVAL;
	}
	if (c->extra4.family != 0 && (c->extra4.family != DPVPN_AF_INET || c->extra4.len == 0 ||
				      c->extra4.len > 32 || c->addr4.family == 0 ||
				      c->role != DPVPN_ROLE_OUTSIDE ||
				      (c->extra4.v4 & ~dp_mask(c->extra4.len)) != 0)) {
		snprintf(eb, len, "port.extra4: family %u, length %u: not an IPv4 "
			 "prefix (host bits zero, length 1..32) of an outside port with an IPv4 "
			 "address", c->extra4.family, c->extra4.len);
		return -EINVAL;
	}
	if (!host_name_ok(c->host_iface, sizeof(c->host_iface))) {
		snprintf(eb, len, "port.host_iface: not a Linux interface name "
			 "(1..15 bytes, NUL-terminated, none of / : , = or blanks)");
		return -EINVAL;
	}
	if (c->host_iface[0] != '\0' && !host_twins_enabled) {
		snprintf(eb, len, "port.host_iface: this process makes no twins "
			 "(not the dataplane: a fuzz target or a test)");
		return -ENOTSUP;
	}
	if (c->mtu != 0 && (c->mtu < DPVPN_MTU_MIN || c->mtu > dp.max_mtu)) {
		snprintf(eb, len, "port.mtu: %u is not %u..%u%s", c->mtu,
			 DPVPN_MTU_MIN, dp.max_mtu,
			 dp.max_mtu < DPVPN_PORT_MTU_MAX ? " (jumbo frames need --jumbo)" : "");
		return -EINVAL;
	}
	return 0;
}

/* The device's MTU, when mtu is not 0 and not the port's already. */
int
port_set_mtu(uint16_t id, uint16_t mtu, char *eb, size_t len)
{
	struct rte_eth_dev_info info = { 0 };
	int rc;

	if (mtu == 0 || mtu == dp.ports[id].mtu)
		return 0;
	rte_eth_dev_info_get(id, &info);
	rc = rte_eth_dev_set_mtu(id, mtu);
	/*
	 * net_af_packet (22.11) says 1518-byte frames in its device info,
	 * so ethdev refuses it any larger MTU, yet it carries whatever its
	 * ring slots (framesz) and the kernel interface's MTU allow: there
	 * the operator sets the MTU with `ip link`, and this is its value.
	 */
	if (rc == -EINVAL && info.driver_name != NULL &&
	    strcmp(info.driver_name, "net_af_packet") == 0) {
		fprintf(stderr, "dpvpn-dataplane: port %u (net_af_packet): MTU %u taken "
			"as the kernel interface's (set with ip link; framesz must fit)\n",
			id, mtu);
		rc = 0;
	}
	/* rings (--tester-loop) carry any frame an mbuf holds: no MTU to set */
	if (rc == -ENOTSUP && info.driver_name != NULL &&
	    strcmp(info.driver_name, "net_ring") == 0)
		rc = 0;
	if (rc != 0) {
		snprintf(eb, len, "port.mtu: the device refuses %u (%s; "
			 "its max MTU %u, max frame %u)", mtu, rte_strerror(-rc),
			 info.max_mtu, info.max_rx_pktlen);
		return rc;
	}
	dp.ports[id].mtu = mtu;
	return 0;
}

/* VIP_SET's IPv4 addresses: each unicast, not the port's own, none twice. */
static int
check_vips4(const struct dp_port *p, const struct dpvpn_vip_set *v, char *eb, size_t len)
{
	for (unsigned i = 0; i < DPVPN_VIP_MAX; i++) {
		uint32_t h = rte_be_to_cpu_32(v->vip[i]);

		if (v->vip[i] == 0 && (v->held >> i & 1)) {
			snprintf(eb, len, "vip_set.held: bit %u for no address", i);
			return -EINVAL;
		}
		if (v->vip[i] != 0 && (h >> 28 >= 0xe || h >> 24 == 0 || h >> 24 == 127 ||
				       v->vip[i] == p->addr)) {
			snprintf(eb, len, "vip_set.vip[%u]: not a unicast address other than the "
				 "port's", i);
			return -EINVAL;
		}
		for (unsigned k = 0; k < i; k++)
			if (v->vip[i] != 0 && v->vip[k] == v->vip[i]) {
				snprintf(eb, len, "vip_set.vip[%u]: twice", i);
				return -EINVAL;
			}
	}
	return 0;
}

/* VIP_SET's IPv6 addresses: the same, and not :: or ::1 either. */
static int
check_vips6(const struct dp_port *p, const struct dpvpn_vip_set *v, char *eb, size_t len)
{
	static const uint8_t none[16], loopback[16] = { [15] = 1 };

	for (unsigned i = 0; i < DPVPN_VIP6_MAX; i++) {
		const uint8_t *a = v->vip6[i];
		bool set = memcmp(a, none, 16) != 0;

		if (!set && (v->held6 >> i & 1)) {
			snprintf(eb, len, "vip_set.held6: bit %u for no address", i);
			return -EINVAL;
		}
		if (set && (ip6_is_multicast(a) || memcmp(a, loopback, 16) == 0 ||
			    (p->has6 && memcmp(a, p->addr6, 16) == 0))) {
			snprintf(eb, len, "vip_set.vip6[%u]: not a unicast address other than the "
				 "port's", i);
			return -EINVAL;
		}
		for (unsigned k = 0; k < i; k++)
			if (set && memcmp(v->vip6[k], a, 16) == 0) {
				snprintf(eb, len, "vip_set.vip6[%u]: twice", i);
				return -EINVAL;
			}
	}
	return 0;
}

/*
 * Publish what VIP_SET says, for workers that read the addresses and the
 * bits without a lock: the bits of what is released first, then each
 * changed address with its bit clear, then the held ones; an address is
 * never compared under a bit that was set for another.
 */
static void
publish_vips(struct dp_port *p, const struct dpvpn_vip_set *v)
{
	__atomic_store_n(&p->vip_held, p->vip_held & v->held, __ATOMIC_RELEASE);
	__atomic_store_n(&p->vip6_held, p->vip6_held & v->held6, __ATOMIC_RELEASE);
	for (unsigned i = 0; i < DPVPN_VIP_MAX; i++)
		if (p->vip4[i] != v->vip[i]) {
			__atomic_store_n(&p->vip_held, p->vip_held & ~(1u << i), __ATOMIC_RELEASE);
			p->vip4[i] = v->vip[i];
		}
	for (unsigned i = 0; i < DPVPN_VIP6_MAX; i++)
		if (memcmp(p->vip6[i], v->vip6[i], 16) != 0) {
			__atomic_store_n(&p->vip6_held, p->vip6_held & ~(1u << i),
					 __ATOMIC_RELEASE);
			memcpy(p->vip6[i], v->vip6[i], 16);
		}
	__atomic_store_n(&p->vip_held, v->held, __ATOMIC_RELEASE);
	__atomic_store_n(&p->vip6_held, v->held6, __ATOMIC_RELEASE);
}

/*
 * An HA pair's virtual addresses (doc/ha.md): each a unicast address, not
 * the port's own, none twice; held ones are the port's (dp_port_owns4,
 * dp_port_owns6) once their bit is published, after the address (workers
 * read both).  Each newly held is announced (vip_announce_due): the first
 * at once, the others a second apart.
 */
int
port_set_vips(const struct dpvpn_vip_set *v, char *eb, size_t len)
{
	struct dp_port *p = &dp.ports[v->port_id];
	uint8_t was = p->vip_held, was6 = p->vip6_held;
	int rc;

	if (v->reserved[0] || v->reserved[1] || v->reserved[2] || v->reserved[3] ||
	    (v->held >> DPVPN_VIP_MAX) != 0 || (v->held6 >> DPVPN_VIP6_MAX) != 0) {
		snprintf(eb, len, "vip_set.reserved/held/held6: bits or bytes set that mean "
			 "nothing");
		return -EINVAL;
	}
	if ((rc = check_vips4(p, v, eb, len)) != 0 || (rc = check_vips6(p, v, eb, len)) != 0)
		return rc;
	publish_vips(p, v);
	for (unsigned i = 0; i < DPVPN_VIP_MAX; i++)
		p->vip_announce[i] = (v->held >> i & 1) && !(was >> i & 1) ? DP_VIP_ANNOUNCE : 0;
	for (unsigned i = 0; i < DPVPN_VIP6_MAX; i++)
		p->vip6_announce[i] = (v->held6 >> i & 1) && !(was6 >> i & 1) ?
				      DP_VIP_ANNOUNCE : 0;
	p->vip_announce_tsc = 0;	/* the first at once (arp_poll) */
	vip_announce_due(p, rte_get_timer_cycles());
	return 0;
}

/*
 * Is the port's link up?  A port on a Linux interface (net_af_packet, whose
 * PMD says up from START on whatever the cable does) by the interface's
 * carrier; any other by its PMD.  Main lcore (a file read or an ethdev call).
 */
bool
port_link_up(uint16_t id)
{
	const struct dp_port *p = &dp.ports[id];
	struct rte_eth_link link = { 0 };
	uint64_t carrier;

	if (p->iface[0] != '\0') {
		if (!sys_u64(p->iface, "carrier", &carrier))
			return false;	/* (EINVAL: the interface itself is down) */
		return carrier != 0;
	}
	rte_eth_link_get_nowait(id, &link);
	return link.link_status == RTE_ETH_LINK_UP;
}

/* A checked configuration's addresses and role into the port. */
void
port_set_addrs(struct dp_port *p, const struct dpvpn_port_cfg *c)
{
	/* what workers hold for a next hop may no longer fit the port: dropped */
	__atomic_fetch_add(&dp.neigh_gen, 1, __ATOMIC_RELEASE);
	p->role = c->role;
	p->prefix_len = c->addr4.family ? c->addr4.len : 0;
	p->mask = dp_mask(p->prefix_len);
	p->addr = c->addr4.family ? c->addr4.v4 : 0;
	p->extra_count = 0;	/* (a reload may take them away) */
	p->extra_first = c->extra4.family ? rte_be_to_cpu_32(c->extra4.v4) : 0;
	p->extra_count = c->extra4.family ? (uint32_t)(1ull << (32 - c->extra4.len)) : 0;
	p->has6 = c->addr6.family != 0;	/* (a reload may take it away) */
	if (p->has6) {
		memcpy(p->addr6, c->addr6.v6, 16);
		p->prefix6_len = c->addr6.len;
	}
}
