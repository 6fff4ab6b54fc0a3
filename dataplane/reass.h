/* SPDX-License-Identifier: BSD-3-Clause */
/* reass.h - outer IPv4 fragment reassembly on the receiving worker (reass.c). */
#ifndef REASS_H
#define REASS_H

#include <stdint.h>

#include <rte_malloc.h>
#include <rte_mbuf.h>

#include "dp.h"

#define REASS_BUCKETS		64
#define REASS_BUCKET_ENTRIES	4
#define REASS_MAX_ENTRIES	(REASS_BUCKETS * REASS_BUCKET_ENTRIES)	/* packets */
#define REASS_TIMEOUT_MS	500
/* mbufs a worker's table can hold, at most */
#define REASS_MAX_MBUFS		(REASS_MAX_ENTRIES * RTE_LIBRTE_IP_FRAG_MAX_FRAG)

int reass_init(struct dp_worker *w);
void reass_free(struct dp_worker *w);
/*
 * Frames from an outside port (Ethernet on): IPv4 fragments addressed to it
 * are taken, and each packet they complete comes back in their place as
 * one segment.  Returns how many frames pkts[] holds now.
 */
uint16_t reass_burst(struct dp_worker *w, struct dp_lstats *st, const struct dp_port *port,
		     struct rte_mbuf **pkts, uint16_t n);
/* Now and then: expire old entries, free (and count) what was given up. */
void reass_tick(struct dp_worker *w, struct dp_lstats *st);

#endif /* REASS_H */
