/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * spd_host.h - the policies whose destination (or else source) selector is
 * one host address (/32, /128: a remote-access client's virtual IP, the
 * tester's /32 tunnels), kept apart from the classifier in a lock-free hash
 * keyed by that address: adding or removing one costs O(1) whatever the
 * number of policies, and never rebuilds the classifier (spd.c).
 *
 * A hash entry (a bucket) holds the policies of one host address, highest
 * precedence first, with their other selector; a bucket is never changed in
 * place: a change installs a copy and the old one is freed after every
 * worker passed a quiescent point (spd_host_reclaim).  The main lcore
 * writes, workers read.
 */
#ifndef SPD_HOST_H
#define SPD_HOST_H

#include <stdbool.h>
#include <stdint.h>

#include "dpvpn_proto.h"

#define SPD_HOST_CANDS	4	/* policies of one host address; more go to the classifier */

int spd_host_init(unsigned int max_rules);
/* Which selector of p is one host address: 0 its destination, 1 its source, -1 neither. */
int spd_host_side(const struct dpvpn_policy *p);
/*
 * Add policy p (selectors masked, of side spd_host_side(p) >= 0) with rte_acl
 * precedence prio (higher wins) for SA slot; -ENOSPC: its host has
 * SPD_HOST_CANDS already (the caller puts it in the classifier), -ENOMEM.
 */
int spd_host_add(const struct dpvpn_policy *p, int32_t prio, uint32_t slot);
/* Remove one policy added so (same selectors, precedence and slot). */
void spd_host_del(const struct dpvpn_policy *p, int32_t prio, uint32_t slot);
/* After adds and removals: one grace period, then the replaced buckets are freed. */
void spd_host_reclaim(void);
/* Policies of family v6 in the table (relaxed: the SPD's generation orders it). */
bool spd_host_any(bool v6);

/*
 * Fast path, a burst (n <= DP_BURST) of one family's IP headers: for each,
 * the SA slot of the best host policy matching it and its precedence, or
 * -1 and INT32_MIN.
 */
void spd_host_lookup_burst(const uint8_t **ip_hdrs, uint32_t n, bool v6, int32_t *slots,
			   int32_t *prio);

#endif /* SPD_HOST_H */
