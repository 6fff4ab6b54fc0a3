/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * nl.h - the host's routes that point at tunnel twins, mirrored (netlink,
 * libmnl), and a small RIB that chooses, per prefix, what the dataplane gets
 * (deploy/NEXT-DESIGN.md C.2).
 *
 * Sources, best first (admin distance, as FRR's static 1 beats BGP's 20):
 *   NL_SRC_CONFIG  routes of dpvpn.conf        (nl_rib_set)
 *   NL_SRC_CTL     routes added by dpvpnctl    (nl_rib_set)
 *   NL_SRC_KERNEL  the kernel's routes of one table (main unless told), read
 *                  from netlink: type RTN_UNICAST whose every next hop
 *                  (RTA_OIF, or each RTA_MULTIPATH rtnexthop not marked dead)
 *                  is a registered twin; up to NL_MAX_NH next hops (ECMP).
 *                  A route mixing twin and non-twin next hops is logged once
 *                  and not mirrored; routes via other interfaces only are not
 *                  looked at; link-local and multicast IPv6 prefixes neither.
 *                  Routes of one prefix with different metrics: the lowest
 *                  metric counts (the one the kernel forwards with), among
 *                  those with a twin next hop.
 *
 * Routes from nexthop objects (RTA_NH_ID: FRR's zebra uses them) are read
 * through the attributes the kernel adds while net.ipv4.nexthop_compat_mode
 * is 1 (the default); nl_open warns if it reads 0.
 *
 * Output: ops->install(prefix, names, n) when a prefix's best entry appears or
 * changes (names: the tunnels, sorted), ops->remove(prefix) when it goes; an
 * unchanged best calls nothing.  nl_resync reads the whole table again (at
 * start, after the dataplane reconnects, after ENOBUFS, after a twin's link
 * goes up or down or away, after nl_twin_add/del) and calls only for what
 * differs from what is installed.  An install that fails (< 0) is tried again
 * at the next resync.  The callbacks must not call nl_* functions (they run
 * while the RIB is being walked).
 *
 * Also the twins' own set-up: addresses (IPv6 with IFA_F_NODAD: the twin is
 * a point-to-point tunnel, nothing to detect), MTU, link up or down.
 *
 * Memory: about 1 KiB per prefix in the RIB (prefixes with a route via a
 * twin, or from the config or dpvpnctl), none for the kernel's other routes.
 *
 * One thread; nothing blocks but the request socket's replies, each bounded
 * by NL_REQ_TIMEOUT_MS.  Errors: -1 with errno set and a line on stderr.
 */
#ifndef DPVPN_CONTROL_NL_H
#define DPVPN_CONTROL_NL_H

#include <stdbool.h>
#include <stdint.h>

#define NL_MAX_NH		8	/* next hops of one route (ECMP) */
#define NL_NAME_LEN		32	/* tunnel names, NUL-terminated (DPVPN_NAME_LEN) */
#define NL_RCVBUF		(4 << 20)	/* event socket; ENOBUFS past it: resync */
#define NL_REQ_TIMEOUT_MS	5000
#define NL_TABLE_MAIN		254	/* RT_TABLE_MAIN */

struct nl_prefix {
	uint8_t family;		/* AF_INET or AF_INET6 */
	uint8_t len;
	uint8_t addr[16];	/* network order; the RIB clears the host bits */
};

enum nl_source { NL_SRC_CONFIG, NL_SRC_CTL, NL_SRC_KERNEL, NL_SRC_N };

struct nl_ops {
	int (*install)(void *arg, const struct nl_prefix *p, const char *const names[],
		       unsigned n);
	int (*remove)(void *arg, const struct nl_prefix *p);
	void *arg;
};

struct nl;

/* Open the event socket (links and routes, both families) and the request
 * socket.  table: the kernel table mirrored (NL_TABLE_MAIN).  No dump yet:
 * register twins, then nl_resync. */
struct nl *nl_open(uint32_t table, const struct nl_ops *ops);
void nl_close(struct nl *nl);
/* The event socket, for poll() (POLLIN: call nl_read). */
int nl_fd(const struct nl *nl);

/* Twins: the kernel interfaces whose routes are mirrored, and the tunnel
 * each stands for.  Take effect at the next nl_resync (or nl_read). */
int nl_twin_add(struct nl *nl, uint32_t ifindex, const char *name);
int nl_twin_del(struct nl *nl, uint32_t ifindex);

/* Read the pending events without blocking, and resync if one asked for it
 * (ENOBUFS, a twin's link change, a twin added).  0 or -1. */
int nl_read(struct nl *nl);
/* Dump the table (both families) and the links, and fix the difference. */
int nl_resync(struct nl *nl);

/* Config and dpvpnctl routes (src NL_SRC_CONFIG or NL_SRC_CTL): set or clear
 * a prefix's entry of that source; the callbacks run at once if the best
 * changes.  n = 0 in nl_rib_set is nl_rib_clear. */
int nl_rib_set(struct nl *nl, const struct nl_prefix *p, enum nl_source src,
	       const char *const names[], unsigned n);
int nl_rib_clear(struct nl *nl, const struct nl_prefix *p, enum nl_source src);
/* The installed entry of a prefix: its next hop count (0: none), names
 * copied to names[NL_MAX_NH] when not NULL. */
unsigned nl_rib_installed(const struct nl *nl, const struct nl_prefix *p,
			  char names[][NL_NAME_LEN]);

/* "10.1.0.0/16", "2001:db8::1/64" (host bits kept, for addresses); 0 or -1. */
int nl_prefix_parse(const char *s, struct nl_prefix *p);
/* Into buf (at least 48 bytes), which it returns. */
const char *nl_prefix_str(const struct nl_prefix *p, char *buf, unsigned size);

/* Twin set-up through the request socket.  up: 1 up, 0 down, -1 leave;
 * mtu: 0 leave.  nl_link_set_name looks the link up by name. */
int nl_link_set(struct nl *nl, uint32_t ifindex, int up, uint32_t mtu);
int nl_link_set_name(struct nl *nl, const char *ifname, int up, uint32_t mtu);
/* addr: the interface's address and prefix length (10.9.0.1/30). */
int nl_addr_add(struct nl *nl, uint32_t ifindex, const struct nl_prefix *addr);
int nl_addr_del(struct nl *nl, uint32_t ifindex, const struct nl_prefix *addr);

#endif /* DPVPN_CONTROL_NL_H */
