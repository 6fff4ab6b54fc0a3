/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * spd.h - outbound security policies: inner source and destination prefixes
 * select the SA a cleartext packet is encrypted with.  Lower priority value
 * wins; among equal priorities the more specific rule (longer prefixes) wins.
 *
 * Policies whose destination (or else source) is one host address (/32,
 * /128) are kept in a hash by that address (spd_host.h): adding or removing
 * one is O(1) and builds nothing.  The other ("wide") policies are
 * classified for a whole burst with rte_acl (or, for a handful of rules,
 * scanned in precedence order: cheaper); a packet's answer is the higher
 * precedence of the two.  The classifier is immutable:
 * the main lcore builds a new one from its rule list and publishes it by
 * pointer, and frees the old one after every worker passed a quiescent point.
 * A build costs O(rules), so changes can be batched: between spd_begin() and
 * spd_commit() adds only collect rules, and the commit builds once (dpvpnd
 * brackets a whole install that way; tens of thousands of policies then cost
 * one build, not one each).
 */
#ifndef SPD_H
#define SPD_H

#include <stdbool.h>
#include <stdint.h>

#include "dpvpn_proto.h"

#define SPD_MAX_PRIORITY	8000000	/* fits rte_acl's priority range */
#define SPD_MAX_PRIORITY6	2000000	/* IPv6: longer prefixes need a wider scale */

struct spd;

int spd_init(unsigned int max_rules);
int spd_add(const struct dpvpn_policy *p, char *errbuf, size_t len);
/*
 * Remove every policy that selects SA slot (its SA is going away): the
 * classifier without them is published before the slot can be reused.
 */
int spd_del_slot(uint32_t slot, char *errbuf, size_t len);
/* Remove the policies with these src and dst prefixes; -ENOENT if none. */
int spd_del(const struct dpvpn_policy *p, char *errbuf, size_t len);
/* Defer rebuilds until spd_commit(); nesting is not supported. */
void spd_begin(void);
int spd_commit(char *errbuf, size_t len);
bool spd_in_batch(void);
/* Tests: classify with rte_acl even when few rules would be scanned. */
void spd_force_acl(bool on);

/* Fast path (worker, inside an RCU read section). */
const struct spd *spd_get(void);
/* For each of n IPv4 or IPv6 headers, the SA slot of the first matching policy, or -1. */
void spd_classify(const struct spd *t, const uint8_t **ip_hdrs, int32_t *slots, uint32_t n);

/*
 * A worker's cache of IPv4 flows (source and destination: what policies
 * select on) and the SA slot rte_acl gave them, for many policies, where
 * rte_acl costs tens of cycles a packet.  96 KiB.
 */
#define SPD_CACHE_SIZE	4096	/* entries, a power of 2 */

struct spd_cache_entry {
	uint64_t key;		/* source << 32 | destination, as in the header */
	uint64_t gen;		/* the classifier's generation (never wraps); 0: empty */
	int32_t slot;		/* what spd_classify said: an SA slot or -1 */
};

struct spd_cache {
	struct spd_cache_entry e[SPD_CACHE_SIZE];
};

/* spd_classify with spd_get()'s table, through the worker's cache c (NULL: none). */
void spd_classify_flows(struct spd_cache *c, const uint8_t **ip_hdrs, int32_t *slots,
			uint32_t n);

unsigned int spd_count(void);
bool spd_info(unsigned int idx, struct dpvpn_policy *out);

#endif /* SPD_H */
