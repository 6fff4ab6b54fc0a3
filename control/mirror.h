/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mirror.h - the host's routes via tunnel twins into the dataplane
 * (deploy/NEXT-DESIGN.md C.2): nl.c's RIB with dpvpnd's dataplane client.
 *
 * Open while the config names a tunnel twin (host-interface on a route
 * tunnel); opened again after each install (start, reload, a dataplane
 * back), when the twins may be new interfaces and the dataplane may hold
 * none of the mirrored routes.  The kernel's routes (table main) whose every
 * next hop is a twin become ROUTE_ADD kind TUNNEL into those tunnels;
 * ROUTE_DEL when they go.  A prefix the config routes itself ([routes],
 * [route NAME], either kind) or dpvpnctl route added is theirs: the
 * kernel's route for it is not mirrored (static before BGP).  After the
 * dump, a route of the dataplane into twin tunnels only that none of them
 * has (the kernel dropped it while dpvpnd was away) is removed.
 */
#ifndef DPVPN_MIRROR_H
#define DPVPN_MIRROR_H

#include <stdbool.h>

#include "config.h"
#include "dp_client.h"

/* (Re)open for cfg (kept by pointer: dpvpnd's current config), dump and
 * install.  Closes it when cfg names no twin.  0, or -1 (logged). */
int mirror_open(struct dp_client *dp, const struct cfg *cfg, bool verbose);
void mirror_close(void);
/* The netlink event socket for poll(), -1 while closed. */
int mirror_fd(void);
/* POLLIN on mirror_fd(). */
void mirror_read(void);
/*
 * dpvpnctl route add|del of dst (either kind) done: while added, the
 * prefix is dpvpnctl's and the kernel's route for it is not mirrored; when
 * deleted, the kernel's (if any, via twins) is installed again.
 */
void mirror_ctl_route(const struct dpvpn_prefix *dst, int add);
/* A new dataplane holds none of dpvpnctl's routes. */
void mirror_forget_ctl(void);

#endif /* DPVPN_MIRROR_H */
