/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ctl_base.c - `dpvpnctl clear` (ctl_base.h): what every shown counter read
 * at the clear, kept in dpvpnd and subtracted from what is shown afterwards
 * (show counters, sa, ports, lcores, tunnels).  The dataplane's counters run
 * on: resetting them would mean writing under the workers.
 *
 * A baseline belongs to one thing: an SA by its serial (a tunnel taken down
 * and up again gets new SAs of the same SPIs, which count from 0), a port and
 * an lcore by id.  A new dataplane counts from 0: dpvpnd forgets every
 * baseline when it connects to one, and a thing whose monotonic counter
 * (packets, cycles) is found below its baseline loses its baseline too.
 * Other fields are subtracted down to 0 at most (rx_missed is computed when
 * asked and may read lower than it did).
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl_base.h"

static struct {
	bool counters_on;
	struct dpvpn_counters counters;
	struct dpvpn_sa_info *sas;	/* sorted by serial */
	uint32_t n_sas;
	struct dpvpn_port_info *ports;
	uint32_t n_ports;
	struct dpvpn_lcore_info *lcores;
	uint32_t n_lcores;
} base;

#define F(type, m)	offsetof(struct type, m)
#define N(a)		(sizeof(a) / sizeof(a[0]))

static const size_t sa_fields[] = {
	F(dpvpn_sa_info, packets), F(dpvpn_sa_info, bytes), F(dpvpn_sa_info, drop_replay),
	F(dpvpn_sa_info, drop_icv), F(dpvpn_sa_info, drop_policy), F(dpvpn_sa_info, drop_other),
	F(dpvpn_sa_info, drop_seq),
};
static const size_t port_fields[] = {
	F(dpvpn_port_info, rx_packets), F(dpvpn_port_info, rx_bytes),
	F(dpvpn_port_info, tx_packets), F(dpvpn_port_info, tx_bytes),
	F(dpvpn_port_info, rx_missed), F(dpvpn_port_info, rx_errors),
	F(dpvpn_port_info, tx_errors), F(dpvpn_port_info, csum_completed),
	F(dpvpn_port_info, host_in), F(dpvpn_port_info, host_out),
};
static const size_t lcore_fields[] = {
	F(dpvpn_lcore_info, rx_packets), F(dpvpn_lcore_info, tx_packets),
	F(dpvpn_lcore_info, encrypted), F(dpvpn_lcore_info, decrypted),
	F(dpvpn_lcore_info, drops), F(dpvpn_lcore_info, busy_cycles),
	F(dpvpn_lcore_info, idle_cycles),
};

static uint64_t *u64_at(void *s, size_t off)
{
	return (uint64_t *)((char *)s + off);
}

/* The fields at off[0..n) of now, less those of was, never below 0. */
static void subtract(void *now, const void *was, const size_t *off, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		uint64_t *v = u64_at(now, off[i]), b = *u64_at((void *)was, off[i]);

		*v = *v > b ? *v - b : 0;
	}
}

static int by_serial(const void *a, const void *b)
{
	uint64_t x = ((const struct dpvpn_sa_info *)a)->serial;
	uint64_t y = ((const struct dpvpn_sa_info *)b)->serial;

	return x < y ? -1 : x > y;
}

void base_forget(void)
{
	free(base.sas);
	free(base.ports);
	free(base.lcores);
	memset(&base, 0, sizeof(base));
}

int base_take(struct dp_client *dp, char *err, size_t err_len)
{
	struct dpvpn_counters c;
	void *sas = NULL, *ports = NULL, *lcores = NULL;
	uint32_t n_sas, n_ports, n_lcores;

	if (dp_call(dp, DPVPN_MSG_SHOW_COUNTERS, NULL, 0, &c, sizeof(c)) ||
	    dp_dump(dp, DPVPN_MSG_SHOW_SA, sizeof(struct dpvpn_sa_info), &sas, &n_sas) ||
	    dp_dump(dp, DPVPN_MSG_SHOW_PORTS, sizeof(struct dpvpn_port_info), &ports, &n_ports) ||
	    dp_dump(dp, DPVPN_MSG_SHOW_LCORES, sizeof(struct dpvpn_lcore_info), &lcores,
		    &n_lcores)) {
		snprintf(err, err_len, "dataplane: %s", dp->err);
		free(sas);
		free(ports);
		free(lcores);
		return -1;
	}
	base_forget();
	if (n_sas > 0)
		qsort(sas, n_sas, sizeof(struct dpvpn_sa_info), by_serial);
	base.counters_on = true;
	base.counters = c;
	base.sas = sas;
	base.n_sas = n_sas;
	base.ports = ports;
	base.n_ports = n_ports;
	base.lcores = lcores;
	base.n_lcores = n_lcores;
	return 0;
}

void base_counters(struct dpvpn_counters *c)
{
	uint64_t *now = &c->rx_packets, *was = &base.counters.rx_packets;
	size_t n = (size_t)(&c->mbufs_in_use - &c->rx_packets);	/* not the pool gauges */

	if (!base.counters_on)
		return;
	if (c->rx_packets < base.counters.rx_packets) {	/* a dataplane since restarted */
		base.counters_on = false;
		return;
	}
	for (size_t i = 0; i < n; i++)
		now[i] = now[i] > was[i] ? now[i] - was[i] : 0;
	for (size_t i = 0; i < DPVPN_DROP_SLOTS; i++)
		c->drops[i] = c->drops[i] > base.counters.drops[i] ?
			      c->drops[i] - base.counters.drops[i] : 0;
	/* the totals after drops[] (neigh_held is a gauge: left as it is) */
	c->icmp_echo = c->icmp_echo > base.counters.icmp_echo ?
		       c->icmp_echo - base.counters.icmp_echo : 0;
	c->neigh_queued = c->neigh_queued > base.counters.neigh_queued ?
			  c->neigh_queued - base.counters.neigh_queued : 0;
	c->host_in = c->host_in > base.counters.host_in ? c->host_in - base.counters.host_in : 0;
	c->host_out = c->host_out > base.counters.host_out ?
		      c->host_out - base.counters.host_out : 0;
	c->replay_late = c->replay_late > base.counters.replay_late ?
			 c->replay_late - base.counters.replay_late : 0;
}

void base_sa(struct dpvpn_sa_info *s)
{
	struct dpvpn_sa_info key = { .serial = s->serial };
	struct dpvpn_sa_info *b = base.n_sas ? bsearch(&key, base.sas, base.n_sas, sizeof(key),
						       by_serial) : NULL;

	if (b == NULL || b->spi != s->spi || b->dir != s->dir)
		return;		/* installed since the clear: counts from 0 anyway */
	if (s->packets < b->packets) {	/* restarted: the baseline goes */
		b->dir = 0;	/* (the order by serial stays) */
		return;
	}
	subtract(s, b, sa_fields, N(sa_fields));
}

void base_port(struct dpvpn_port_info *p)
{
	for (uint32_t i = 0; i < base.n_ports; i++) {
		struct dpvpn_port_info *b = &base.ports[i];

		if (b->port_id != p->port_id)
			continue;
		if (p->rx_packets < b->rx_packets || p->tx_packets < b->tx_packets)
			b->port_id = UINT16_MAX;	/* restarted: no baseline */
		else
			subtract(p, b, port_fields, N(port_fields));
		return;
	}
}

void base_lcore(struct dpvpn_lcore_info *l)
{
	for (uint32_t i = 0; i < base.n_lcores; i++) {
		struct dpvpn_lcore_info *b = &base.lcores[i];

		if (b->lcore != l->lcore)
			continue;
		if (l->busy_cycles + l->idle_cycles < b->busy_cycles + b->idle_cycles)
			b->lcore = UINT32_MAX;
		else
			subtract(l, b, lcore_fields, N(lcore_fields));
		return;
	}
}
