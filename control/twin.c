/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * twin.c - rtnetlink requests for the port twins' host side, with libmnl: one
 * request, one acknowledgement, on a socket opened for the call (reloads
 * and starts only: nothing per packet).  libmnl rather than libnl-route-3:
 * the requests are three fixed messages, libmnl builds them as the kernel
 * documents them (no object cache to fill and keep in step), and it is the
 * library iproute2's relatives and the later route mirroring (design C.2)
 * read with the same callbacks.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <net/if.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <libmnl/libmnl.h>
#include <linux/if_addr.h>
#include <linux/rtnetlink.h>

#include "twin.h"

/* Send the request in buf and wait for its acknowledgement: 0 or -errno. */
static int nl_request(struct mnl_socket *nl, struct nlmsghdr *nlh)
{
	char buf[MNL_SOCKET_BUFFER_SIZE];
	unsigned int portid = mnl_socket_get_portid(nl);
	ssize_t n;
	int rc;

	nlh->nlmsg_flags |= NLM_F_REQUEST | NLM_F_ACK;
	nlh->nlmsg_seq = (uint32_t)time(NULL);
	if (mnl_socket_sendto(nl, nlh, nlh->nlmsg_len) < 0)
		return -errno;
	n = mnl_socket_recvfrom(nl, buf, sizeof(buf));
	if (n < 0)
		return -errno;
	rc = mnl_cb_run(buf, (size_t)n, nlh->nlmsg_seq, portid, NULL, NULL);
	return rc < 0 ? -errno : 0;
}

static int link_set(struct mnl_socket *nl, unsigned int index, uint16_t mtu, bool up)
{
	char buf[MNL_SOCKET_BUFFER_SIZE];
	struct nlmsghdr *nlh = mnl_nlmsg_put_header(buf);
	struct ifinfomsg *ifi;

	nlh->nlmsg_type = RTM_NEWLINK;
	ifi = mnl_nlmsg_put_extra_header(nlh, sizeof(*ifi));
	ifi->ifi_family = AF_UNSPEC;
	ifi->ifi_index = (int)index;
	ifi->ifi_change = IFF_UP;
	ifi->ifi_flags = up ? IFF_UP : 0;
	if (mtu != 0)
		mnl_attr_put_u32(nlh, IFLA_MTU, mtu);
	return nl_request(nl, nlh);
}

/* RTM_NEWADDR (add: true) or RTM_DELADDR of p on the interface. */
static int addr_set(struct mnl_socket *nl, unsigned int index, const struct cfg_prefix *p,
		    bool add)
{
	char buf[MNL_SOCKET_BUFFER_SIZE];
	struct nlmsghdr *nlh = mnl_nlmsg_put_header(buf);
	struct ifaddrmsg *ifa;

	nlh->nlmsg_type = add ? RTM_NEWADDR : RTM_DELADDR;
	nlh->nlmsg_flags = add ? NLM_F_CREATE | NLM_F_REPLACE : 0;
	ifa = mnl_nlmsg_put_extra_header(nlh, sizeof(*ifa));
	ifa->ifa_prefixlen = p->len;
	ifa->ifa_scope = RT_SCOPE_UNIVERSE;
	ifa->ifa_index = index;
	if (p->addr.family == DPVPN_AF_INET) {
		uint32_t a = htonl(p->addr.v4);
		uint32_t brd = p->len >= 31 ? 0 : htonl(p->addr.v4 | (UINT32_MAX >> p->len));

		ifa->ifa_family = AF_INET;
		mnl_attr_put_u32(nlh, IFA_LOCAL, a);
		mnl_attr_put_u32(nlh, IFA_ADDRESS, a);
		if (brd != 0)
			mnl_attr_put_u32(nlh, IFA_BROADCAST, brd);
	} else {
		ifa->ifa_family = AF_INET6;
		ifa->ifa_flags = IFA_F_NODAD;
		mnl_attr_put(nlh, IFA_LOCAL, 16, p->addr.v6);
		mnl_attr_put(nlh, IFA_ADDRESS, 16, p->addr.v6);
		mnl_attr_put_u32(nlh, IFA_FLAGS, IFA_F_NODAD);
	}
	return nl_request(nl, nlh);
}

static struct mnl_socket *nl_open(const char *iface, char *err, size_t elen)
{
	struct mnl_socket *nl = mnl_socket_open(NETLINK_ROUTE);

	if (nl != NULL && mnl_socket_bind(nl, 0, MNL_SOCKET_AUTOPID) == 0)
		return nl;
	snprintf(err, elen, "host-interface %s: netlink socket: %s", iface, strerror(errno));
	if (nl != NULL)
		mnl_socket_close(nl);
	return NULL;
}

static bool same_prefix(const struct cfg_prefix *a, const struct cfg_prefix *b)
{
	return a->addr.family == b->addr.family && a->len == b->len &&
	       (a->addr.family == DPVPN_AF_INET ? a->addr.v4 == b->addr.v4 :
		memcmp(a->addr.v6, b->addr.v6, sizeof(a->addr.v6)) == 0);
}

/* An old address the port no longer has, taken off (gone already: fine). */
static int addr_drop(struct mnl_socket *nl, unsigned int index, const struct cfg_prefix *old,
		     const struct cfg_prefix *now)
{
	int rc;

	if (old == NULL || !old->addr.family || same_prefix(old, now))
		return 0;
	rc = addr_set(nl, index, old, false);
	return rc == -EADDRNOTAVAIL || rc == -ENOENT ? 0 : rc;
}

int twin_setup(const char *iface, const struct cfg_prefix *a4, const struct cfg_prefix *a6,
		  const struct cfg_prefix *old4, const struct cfg_prefix *old6, uint16_t mtu,
		  char *err, size_t elen)
{
	unsigned int index = if_nametoindex(iface);
	struct mnl_socket *nl;
	const char *step = "link up";
	int rc;

	if (index == 0) {
		snprintf(err, elen, "host-interface %s: %s", iface, strerror(errno));
		return -1;
	}
	if ((nl = nl_open(iface, err, elen)) == NULL)
		return -1;
	step = "old address";
	rc = addr_drop(nl, index, old4, a4);
	if (rc == 0)
		rc = addr_drop(nl, index, old6, a6);
	/* addresses first: the link comes up with them (no window without) */
	if (rc == 0 && a4->addr.family)
		rc = (step = "IPv4 address", addr_set(nl, index, a4, true));
	if (rc == 0 && a6->addr.family)
		rc = (step = "IPv6 address", addr_set(nl, index, a6, true));
	if (rc == 0)
		rc = (step = "MTU and link up", link_set(nl, index, mtu, true));
	mnl_socket_close(nl);
	if (rc != 0) {
		snprintf(err, elen, "host-interface %s: %s: %s", iface, step, strerror(-rc));
		return -1;
	}
	return 0;
}

int twin_del(const char *iface, char *err, size_t elen)
{
	unsigned int index = if_nametoindex(iface);
	char buf[MNL_SOCKET_BUFFER_SIZE];
	struct nlmsghdr *nlh = mnl_nlmsg_put_header(buf);
	struct ifinfomsg *ifi;
	struct mnl_socket *nl;
	int rc;

	if (index == 0)		/* gone already */
		return 0;
	if ((nl = nl_open(iface, err, elen)) == NULL)
		return -1;
	nlh->nlmsg_type = RTM_DELLINK;
	ifi = mnl_nlmsg_put_extra_header(nlh, sizeof(*ifi));
	ifi->ifi_family = AF_UNSPEC;
	ifi->ifi_index = (int)index;
	rc = nl_request(nl, nlh);
	mnl_socket_close(nl);
	if (rc != 0 && rc != -ENODEV) {
		snprintf(err, elen, "host-interface %s: delete: %s", iface, strerror(-rc));
		return -1;
	}
	return 0;
}

/* net.ipv6.conf.IFACE.KEY = 1 or 0; absent (no IPv6 on this host): nothing to do. */
static void ipv6_conf(const char *iface, const char *key, int on)
{
	char path[112];
	FILE *f;

	snprintf(path, sizeof(path), "/proc/sys/net/ipv6/conf/%s/%s", iface, key);
	if ((f = fopen(path, "w")) == NULL)
		return;
	fputs(on ? "1\n" : "0\n", f);
	fclose(f);
}

int twin_tun_setup(const char *iface, const struct cfg_prefix *a4, const struct cfg_prefix *a6,
		   uint16_t mtu, bool up, char *err, size_t elen)
{
	unsigned int index = if_nametoindex(iface);
	struct mnl_socket *nl;
	const char *step = "IPv4 address";
	int rc = 0;

	if (index == 0) {
		snprintf(err, elen, "host-interface %s: %s", iface, strerror(errno));
		return -1;
	}
	/* IPv6 addresses stay on a link that goes down (a tunnel with no SA);
	 * one asked for is allowed where the host's default turns IPv6 off
	 * (as systemd-networkd does for a link it gives an IPv6 address) */
	ipv6_conf(iface, "keep_addr_on_down", 1);
	if (a6->addr.family)
		ipv6_conf(iface, "disable_ipv6", 0);
	if ((nl = nl_open(iface, err, elen)) == NULL)
		return -1;
	/*
	 * The link's state first, then the addresses.  An IPv6 address added
	 * (NODAD) and the link taken down before the kernel's deferred DAD
	 * work ran never got its local route back (kernel 6.18, `ip monitor`:
	 * the down cleared the address's route, the work then completed with
	 * none, and the next up's restoring of permanent addresses re-made the
	 * route but left its insertion to a DAD that had already run): the
	 * address listed, no "local ADDR" in table local, what arrived for it
	 * counted Ip6InAddrErrors.  dpvpnd sets a new twin up down first (no
	 * SA yet), then up: that order lost the route in about one start in
	 * four (tests/test_tun_twin.py).  Added after the link change, no
	 * link change follows it here.
	 */
	rc = (step = up ? "MTU and link up" : "MTU and link down", link_set(nl, index, mtu, up));
	if (rc == 0 && a4->addr.family)
		rc = (step = "IPv4 address", addr_set(nl, index, a4, true));
	if (rc == 0 && a6->addr.family)
		rc = (step = "IPv6 address", addr_set(nl, index, a6, true));
	mnl_socket_close(nl);
	if (rc != 0) {
		snprintf(err, elen, "host-interface %s: %s: %s", iface, step, strerror(-rc));
		return -1;
	}
	return 0;
}
