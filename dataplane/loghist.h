/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * loghist.h - log-linear histogram buckets (HdrHistogram's layout, in
 * miniature): values below 2^SB each have a bucket; above, every power of
 * two [2^m, 2^(m+1)) is cut into 2^SB equal sub-buckets, so a bucket is at
 * most 2^-SB of its lower edge wide (SB 4: 6.25 %, SB 2: 25 %).  Bucket
 * numbers grow with the value; a histogram of fewer buckets than
 * LOGHIST_BUCKETS(SB, 64) clamps larger values into its last one.
 *
 * Pure functions of a value and SB (the tester's per-direction and per-
 * stream latency histograms, tester.c; the unit test, test_loghist.c).
 */
#ifndef LOGHIST_H
#define LOGHIST_H

#include <stdint.h>

/* Buckets that hold every value below 2^bits (a constant expression). */
#define LOGHIST_BUCKETS(sb, bits)	((1u << (sb)) + ((bits) - (sb)) * (1u << (sb)))

/* The bucket of v: no loop, one count-leading-zeros. */
static inline unsigned int
loghist_bucket(uint64_t v, unsigned int sb)
{
	unsigned int msb, sub = 1u << sb;

	if (v < sub)
		return (unsigned int)v;
	msb = 63u - (unsigned int)__builtin_clzll(v);
	return sub + (msb - sb) * sub + (unsigned int)((v >> (msb - sb)) & (sub - 1));
}

/* The largest value bucket b holds (its upper edge). */
static inline uint64_t
loghist_top(unsigned int b, unsigned int sb)
{
	unsigned int sub = 1u << sb, k, msb;

	if (b < sub)
		return b;
	k = b - sub;
	msb = k / sub + sb;
	if (msb >= 63 && k % sub == sub - 1)
		return UINT64_MAX;
	return ((uint64_t)(sub + k % sub + 1) << (msb - sb)) - 1;
}

#endif /* LOGHIST_H */
