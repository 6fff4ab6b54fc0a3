/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef DPVPN_MONO_H
#define DPVPN_MONO_H

#include <stdint.h>
#include <time.h>

/* Milliseconds on CLOCK_MONOTONIC: deadlines and timers in control/. */
static inline uint64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

#endif
