/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ctl_steps.h - the control messages that change more than one table, in
 * their order.  Each table (sa.c, spd.c, tunif.c, route.c, host.c's twins)
 * knows only itself, as VPP's SAs know no policies: what refers to an entry
 * of another table is changed here, by the message that needs it (ctl.c,
 * the unit tests and the fuzz targets call these).  Main lcore only.
 */
#ifndef DPVPN_CTL_STEPS_H
#define DPVPN_CTL_STEPS_H

#include <stddef.h>
#include <stdint.h>

#include "dpvpn_proto.h"

/* SA_DEL: an outbound SA's policies, then the interfaces on it, then the SA. */
int step_sa_del(uint32_t spi, uint8_t dir, char *errbuf, size_t len);
/* TUNIF_SET: checked, its outbound SA found, its twin opened, then the interface set. */
int step_tunif_set(const struct dpvpn_tunif *c, char *errbuf, size_t len);
/* TUNIF_DEL (no route may lead into it: ctl.c checks): the interface, then its twin. */
int step_tunif_del(uint16_t id, char *errbuf, size_t len);
/* ROUTE_ADD of kind tunnel: checked, the interfaces exist, then the route. */
int step_route_add_tunnel(const struct dpvpn_prefix *dst, const uint16_t *tunif, uint8_t n,
			  char *errbuf, size_t len);
/* Every SA removed with what refers to it (the fuzz harness's reset). */
void step_sa_flush(void);
/* Every tunnel interface and its twin removed (tests, the fuzz harness's reset). */
void step_tunif_flush(void);

#endif
