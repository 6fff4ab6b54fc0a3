/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * port.h - a port's configuration (PORT_SET's checks, MTU, addresses) and
 * what its device does not report itself: the Linux interface behind it
 * and, for net_af_packet, the frames its socket ring dropped.  Main lcore
 * only (reads sysfs: never on the fast path).
 */
#ifndef PORT_H
#define PORT_H

#include <stdint.h>

#include <rte_ethdev.h>

/* At set-up: the port's Linux interface (dp.ports[id].iface) and whether
 * its rx_missed comes from the link's counters. */
void port_ident(uint16_t id);

/* At START, once the device runs and before the workers poll it. */
void port_baseline(uint16_t id);

/* The port's rx_missed now: the device's own imissed where it reports
 * one, else (net_af_packet) what the Linux link received since START but
 * the dataplane never got. */
uint64_t port_rx_missed(uint16_t id, const struct rte_eth_stats *s);

struct dp_port;
struct dpvpn_port_cfg;

/* PORT_SET's checks of a port's configuration, before anything changes:
 * 0, or a negative errno and eb naming the field. */
int port_check_cfg(const struct dpvpn_port_cfg *c, char *eb, size_t len);

/* The device's MTU (mtu 0 or the port's already: nothing to do). */
int port_set_mtu(uint16_t id, uint16_t mtu, char *eb, size_t len);

/* A checked configuration's role and addresses into the port; what the
 * workers hold for next hops is dropped (dp.neigh_gen). */
void port_set_addrs(struct dp_port *p, const struct dpvpn_port_cfg *c);
/* VIP_SET: the port's virtual addresses and which it holds; each newly held
 * is announced (a gratuitous ARP).  0 or -EINVAL with the field named. */
int port_set_vips(const struct dpvpn_vip_set *v, char *eb, size_t len);
/* Is the port's link up (its Linux interface's carrier, or its PMD's word)? */
bool port_link_up(uint16_t id);

#endif /* PORT_H */
