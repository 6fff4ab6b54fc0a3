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
 * precedence of the two.  Workers read an immutable version, published by
 * pointer under RCU; the main lcore writes.  An rte_acl build costs
 * O(rules) (~250 ms at 10 000 here), so with many wide rules none is built
 * on the main lcore: a change publishes at once a version made of the last
 * built base (rules removed since marked dead in it) and a small delta (the
 * rules added since), and a control thread builds the next base from a copy
 * of the rules; spd_poll() swaps it in when it is done, with whatever
 * changed meanwhile as the next delta (one build for many changes).  Changes
 * can also be batched: between spd_begin() and spd_commit() they are
 * collected and published at the commit (a rekey's policy switch is seen
 * whole or not at all).
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

/* Main lcore, every loop: a base built in the background is published. */
void spd_poll(void);
/* Wait for the background builds until none is left to do (tests, shutdown). */
void spd_settle(void);
/* Tests: a background build, once built, waits until this is off again. */
void spd_hold_builds(bool on);
/* At exit: the build in flight waited for, every retired version freed. */
void spd_fini(void);

struct spd_build_stats {
	uint64_t started, adopted, failed;	/* background builds */
	uint64_t sync_builds;			/* built on the main lcore (few rules, tests) */
	uint32_t last_rules;			/* the last adopted base: its rules */
	uint64_t last_build_us;			/* and how long the control thread took */
	uint32_t delta;				/* rules added since the running base */
	uint32_t dead;				/* rules removed since it was built */
	bool in_flight;
};

void spd_get_build_stats(struct spd_build_stats *s);

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
