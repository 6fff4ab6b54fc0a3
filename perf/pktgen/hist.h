/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * hist.h - a fixed-size log-linear latency histogram (the HdrHistogram
 * layout): values below HIST_SUB are exact, above that every power of two is
 * split into HIST_SUB equal steps, so any value is recorded within 1/HIST_SUB
 * (3 %) of itself.  Adding a sample is a shift, a count-leading-zeros and an
 * increment: no allocation and no floating point on the fast path.
 */
#ifndef PG_HIST_H
#define PG_HIST_H

#include <stdint.h>

#define HIST_SUB_BITS	5
#define HIST_SUB	(1u << HIST_SUB_BITS)	/* steps per power of two */
#define HIST_TOP_BIT	30			/* 2^31 ns (2.1 s) and up share the last bucket */
#define HIST_BUCKETS	((HIST_TOP_BIT - HIST_SUB_BITS + 2) * HIST_SUB)

_Static_assert(HIST_BUCKETS * sizeof(uint64_t) <= 8192, "the histogram stays small");

struct hist {
	uint64_t count[HIST_BUCKETS];
	uint64_t samples;
	uint64_t min, max;	/* exact, in ns */
	double sum;		/* for the mean */
};

void hist_init(struct hist *h);
void hist_add(struct hist *h, uint64_t ns);
/* The value at quantile q (0 < q <= 1), clamped to [min, max]; 0 if empty. */
uint64_t hist_quantile(const struct hist *h, double q);
/* The values bucket i holds: [*lo, *hi), in ns (the last bucket: and above). */
void hist_bucket_range(unsigned int i, uint64_t *lo, uint64_t *hi);

#endif /* PG_HIST_H */
