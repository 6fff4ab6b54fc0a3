/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * hist.c - the latency histogram described in hist.h.
 */
#include <string.h>

#include "hist.h"

/* Bucket of v: v itself below 2 * HIST_SUB, then HIST_SUB buckets per octave. */
static unsigned int
bucket_of(uint64_t v)
{
	unsigned int top, shift;

	if (v >= (UINT64_C(2) << HIST_TOP_BIT))
		return HIST_BUCKETS - 1;
	if (v < 2 * HIST_SUB)
		return (unsigned int)v;
	top = 63u - (unsigned int)__builtin_clzll(v);
	shift = top - HIST_SUB_BITS;
	return shift * HIST_SUB + (unsigned int)(v >> shift);
}

void
hist_bucket_range(unsigned int i, uint64_t *lo, uint64_t *hi)
{
	unsigned int shift;

	if (i < 2 * HIST_SUB) {
		*lo = i;
		*hi = i + 1;
		return;
	}
	shift = i / HIST_SUB - 1;
	*lo = (uint64_t)(i - shift * HIST_SUB) << shift;
	*hi = *lo + (UINT64_C(1) << shift);
}

/* The middle of bucket i, the value a quantile in it is reported as. */
static uint64_t
bucket_mid(unsigned int i)
{
	uint64_t lo, hi;

	hist_bucket_range(i, &lo, &hi);
	return lo + (hi - lo) / 2;
}

void
hist_init(struct hist *h)
{
	memset(h, 0, sizeof(*h));
	h->min = UINT64_MAX;
}

void
hist_add(struct hist *h, uint64_t ns)
{
	h->count[bucket_of(ns)]++;
	h->samples++;
	h->sum += (double)ns;
	if (ns < h->min)
		h->min = ns;
	if (ns > h->max)
		h->max = ns;
}

uint64_t
hist_quantile(const struct hist *h, double q)
{
	double want = q * (double)h->samples;
	uint64_t rank = (uint64_t)want, seen = 0, v;
	unsigned int i;

	if (h->samples == 0)
		return 0;
	if ((double)rank < want || rank == 0)
		rank++;		/* the nearest-rank definition: ceil(q * n) */
	for (i = 0; i < HIST_BUCKETS - 1; i++) {
		seen += h->count[i];
		if (seen >= rank)
			break;
	}
	v = bucket_mid(i);
	if (v < h->min)
		v = h->min;
	return v > h->max ? h->max : v;
}
