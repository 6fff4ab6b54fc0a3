/* SPDX-License-Identifier: BSD-3-Clause */
#include <string.h>

#include "replay.h"

bool
replay_init(struct replay_window *w, uint32_t size, bool shared)
{
	uint32_t n = 2;

	if (size != 0 && !replay_window_ok(size))
		return false;
	while (n < size / 64 + 1)
		n *= 2;
	memset(w, 0, sizeof(*w));
	w->size = size;
	w->mask = (uint16_t)(n - 1);
	w->shared = shared;
	return true;
}

/*
 * Every number up to high counts as seen: the window's top is high and the
 * blocks of (high - size, high] are full up to it.  Raised only; the main
 * lcore's, while no worker updates the window (an HA takeover before the
 * virtual addresses are held, doc/ha.md).
 */
void
replay_floor(struct replay_window *w, uint64_t high)
{
	uint64_t lo;

	if (high <= replay_load_top(w))
		return;
	if (w->size != 0) {
		lo = high >= w->size ? (high - w->size + 1) >> 6 : 0;
		for (uint64_t idx = lo; idx <= high >> 6; idx++) {
			struct replay_block *b = &w->blk[idx & w->mask];

			b->bits = idx < high >> 6 ? ~0ull : ~0ull >> (63 - (high & 63));
			b->idx = idx;
		}
	}
	__atomic_store_n(&w->top, high, __ATOMIC_RELEASE);
}
