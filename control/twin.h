/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * twin.h - a port twin's host side over netlink (rtnetlink, libmnl): what the host side of a
 * port's twin gets (doc/host-path.md).
 */
#ifndef DPVPN_TWIN_H
#define DPVPN_TWIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"

/*
 * The twin iface (the dataplane made it) gets the port's addresses (IPv6
 * without duplicate address detection: the dataplane answers for it), MTU
 * (0: left) and link up; old4 / old6 (a reload; NULL: none), where they
 * differ, are taken off first.  0, or -1 with err saying which step failed.
 */
int twin_setup(const char *iface, const struct cfg_prefix *a4, const struct cfg_prefix *a6,
		  const struct cfg_prefix *old4, const struct cfg_prefix *old6, uint16_t mtu,
		  char *err, size_t elen);
/*
 * A tunnel twin (the dataplane made it, net_tun): its inside addresses
 * (family 0: none; with an IPv6 one, disable_ipv6 = 0 on it),
 * keep_addr_on_down, MTU (0: left) and link up or down
 * (up while the tunnel has an outbound SA).  0, or -1 with err.
 */
int twin_tun_setup(const char *iface, const struct cfg_prefix *a4, const struct cfg_prefix *a6,
		   uint16_t mtu, bool up, char *err, size_t elen);
/* Delete the interface (a twin the config no longer names: persist kept it). */
int twin_del(const char *iface, char *err, size_t elen);

#endif /* DPVPN_TWIN_H */
