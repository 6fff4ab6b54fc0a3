/* SPDX-License-Identifier: BSD-3-Clause */
/* ctl_steps.c - control messages across tables, each step in its order (ctl_steps.h). */
#include <errno.h>
#include <stdio.h>

#include <rte_byteorder.h>

#include "ctl_steps.h"
#include "host.h"
#include "route.h"
#include "sa.h"
#include "spd.h"
#include "tunif.h"

int
step_sa_del(uint32_t spi, uint8_t dir, char *eb, size_t len)
{
	int slot = sa_find(spi, dir);

	if (slot >= 0 && dir == DPVPN_DIR_OUT) {
		/* its policies go first: a reused slot must never be reached by them */
		if (spd_del_slot((uint32_t)slot, eb, len) != 0)
			return -ENOMEM;
		if (sa_slot((uint32_t)slot)->route)
			tunif_sa_gone((uint32_t)slot);	/* down before the slot empties */
	}
	return sa_del(spi, dir, eb, len);
}

/* The outbound SA TUNIF_SET names: installed, a route-based tunnel's. */
static int
out_slot(const struct dpvpn_tunif *c, uint32_t *slot, char *eb, size_t len)
{
	int s = sa_find(c->out_spi, DPVPN_DIR_OUT);

	if (s < 0) {
		snprintf(eb, len, "tunif.out_spi: 0x%08x is not an installed outbound SA",
			 rte_be_to_cpu_32(c->out_spi));
		return -ENOENT;
	}
	if (!sa_slot((uint32_t)s)->route) {
		snprintf(eb, len, "tunif.out_spi: SA 0x%08x is not a route-based tunnel's "
			 "(sa.flags lacks DPVPN_SA_F_ROUTE)", rte_be_to_cpu_32(c->out_spi));
		return -EINVAL;
	}
	*slot = (uint32_t)s;
	return 0;
}

int
step_tunif_set(const struct dpvpn_tunif *c, char *eb, size_t len)
{
	uint32_t slot = TUNIF_DOWN_SLOT;
	int rc;

	if ((rc = tunif_check(c, eb, len)) != 0)
		return rc;
	if (c->up && (rc = out_slot(c, &slot, eb, len)) != 0)
		return rc;
	/* the twin first: a TUNIF_SET it fails changes nothing else */
	if ((rc = host_tun_set(c->id, c->host_iface, eb, len)) != 0)
		return rc;
	tunif_set(c, slot);
	return 0;
}

int
step_tunif_del(uint16_t id, char *eb, size_t len)
{
	int rc = tunif_del(id, eb, len);

	if (rc == 0)
		host_tun_set(id, "", NULL, 0);	/* closing cannot fail */
	return rc;
}

int
step_route_add_tunnel(const struct dpvpn_prefix *dst, const uint16_t *tunif, uint8_t n,
		      char *eb, size_t len)
{
	int rc = route_check_tunnel(dst, n, eb, len);

	if (rc != 0)
		return rc;
	for (uint8_t i = 0; i < n; i++)
		if (!tunif_exists(tunif[i])) {
			snprintf(eb, len, "route.tunif[%u]: %u: no such tunnel interface", i,
				 tunif[i]);
			return -ENODEV;
		}
	return route_add_tunnel(dst, tunif, n, eb, len);
}

void
step_tunif_flush(void)
{
	for (uint16_t id = 0; id < DPVPN_TUNIF_MAX; id++)
		if (tunif_exists(id))
			step_tunif_del(id, NULL, 0);
}

void
step_sa_flush(void)
{
	struct dpvpn_sa_info i;

	while (sa_count() > 0 && sa_info(sa_count() - 1, &i))
		if (step_sa_del(i.spi, i.dir, NULL, 0) != 0)
			sa_del(i.spi, i.dir, NULL, 0);	/* its policies could not go: it still does */
}
