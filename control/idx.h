/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * idx.h - a hash index over an array whose entries move by swap-remove:
 * fixed buckets, chained through a uint32_t link in each entry (an entry is
 * its array index + 1, 0: none).  The caller's next(i) gives entry i's
 * link.  dpvpnd's tables of connections and clients (ikd_conn.c) and the
 * HA journal (ha.c) use it: a lookup without a scan at 10 000+ tunnels.
 */
#ifndef DPVPN_CONTROL_IDX_H
#define DPVPN_CONTROL_IDX_H

#include <stddef.h>
#include <stdint.h>

#define IDX_BUCKETS	16384

struct idx {
	uint32_t head[IDX_BUCKETS];
};

/* FNV-1a, for keys that are ours (config names, pools, SPIs we installed). */
static inline uint32_t idx_fnv(uint32_t h, const void *p, size_t n)
{
	const uint8_t *b = p;

	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 16777619u;
	return h;
}

#define IDX_FNV_START	2166136261u

/* Entry i into bucket h. */
static inline void idx_add(struct idx *x, uint32_t h, size_t i, uint32_t *(*next)(size_t))
{
	*next(i) = x->head[h];
	x->head[h] = (uint32_t)i + 1;
}

/* The link to entry i (in bucket h) now says to; to 0: i unlinked. */
static inline void idx_relink(struct idx *x, uint32_t h, size_t i, uint32_t to,
			      uint32_t *(*next)(size_t))
{
	uint32_t *pp = &x->head[h];

	while (*pp != 0 && *pp != i + 1)
		pp = next(*pp - 1);
	if (*pp != 0)
		*pp = to != 0 ? to : *next(i);
}

#endif /* DPVPN_CONTROL_IDX_H */
