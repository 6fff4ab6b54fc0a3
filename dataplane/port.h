/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * port.h - what a port's device does not report itself: the Linux interface
 * behind it and, for net_af_packet, the frames its socket ring dropped.
 * Main lcore only (reads sysfs: never on the fast path).
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

#endif /* PORT_H */
