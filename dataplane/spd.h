/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * spd.h - outbound security policies: inner source and destination prefixes
 * select the SA a cleartext packet is encrypted with.
 *
 * The table is an immutable, sorted snapshot that the main lcore rebuilds on
 * every change and publishes by pointer; the old one is freed once every
 * worker has passed a quiescent point.  Lookup is a linear scan, first match
 * wins: fine for tens of tunnels; the interface stays if a later issue swaps
 * in rte_acl for large tables.
 */
#ifndef SPD_H
#define SPD_H

#include <stdint.h>

#include "dpvpn_proto.h"

#define SPD_MAX		4096

struct spd_rule {
	uint32_t src, src_mask, dst, dst_mask;	/* network order */
	uint16_t sa_slot;
	struct dpvpn_policy cfg;
};

struct spd {
	uint32_t n;
	struct spd_rule rules[];
};

int spd_init(void);
int spd_add(const struct dpvpn_policy *p, char *errbuf, size_t len);
/* Fast path (worker, inside an RCU read section). */
const struct spd *spd_get(void);
static inline int
spd_match(const struct spd *t, uint32_t src, uint32_t dst)
{
	for (uint32_t i = 0; i < t->n; i++) {
		const struct spd_rule *r = &t->rules[i];

		if ((src & r->src_mask) == r->src && (dst & r->dst_mask) == r->dst)
			return r->sa_slot;
	}
	return -1;
}
unsigned int spd_count(void);
bool spd_info(unsigned int idx, struct dpvpn_policy *out);

#endif /* SPD_H */
