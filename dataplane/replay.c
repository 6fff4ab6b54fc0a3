/* SPDX-License-Identifier: BSD-3-Clause */
#include <string.h>

#include <rte_atomic.h>

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

static inline uint64_t
load_top(const struct replay_window *w)
{
	return __atomic_load_n(&w->top, __ATOMIC_ACQUIRE);
}

bool
replay_esn_infer(const struct replay_window *w, uint32_t seql, uint64_t *seq)
{
	uint64_t top = load_top(w);
	uint32_t win = w->size ? w->size : 1024;
	uint32_t tl = (uint32_t)top, th = (uint32_t)(top >> 32);
	uint32_t bottom = tl - win + 1;		/* modulo 2^32, as the RFC says */
	uint32_t sh;

	if (tl >= win - 1) {			/* case A: the window is in one half */
		sh = seql >= bottom ? th : th + 1;
	} else if (seql >= bottom) {		/* case B, seql below the wrap */
		if (th == 0)
			return false;
		sh = th - 1;
	} else {
		sh = th;
	}
	*seq = (uint64_t)sh << 32 | seql;
	return true;
}

/* Left of the window as it stands now? */
static inline bool
too_old(const struct replay_window *w, uint64_t seq)
{
	uint64_t top = load_top(w);

	return seq <= top && top - seq >= w->size;
}

bool
replay_check(const struct replay_window *w, uint64_t seq)
{
	const struct replay_block *b;

	if (w->size == 0)		/* anti-replay off */
		return true;
	if (seq == 0 || too_old(w, seq))	/* the first packet is 1 */
		return false;
	/* A hint only (the two words may be read apart): update decides. */
	b = &w->blk[(seq >> 6) & w->mask];
	return !(__atomic_load_n(&b->idx, __ATOMIC_RELAXED) == seq >> 6 &&
		 (__atomic_load_n(&b->bits, __ATOMIC_RELAXED) & (1ull << (seq & 63))));
}

/* top = max(top, seq), atomically. */
static void
raise_top(struct replay_window *w, uint64_t seq)
{
	uint64_t top = load_top(w);

	if (!w->shared) {
		if (seq > top)
			__atomic_store_n(&w->top, seq, __ATOMIC_RELEASE);	/* readers: show sa */
		return;
	}
	while (seq > top && !__atomic_compare_exchange_n(&w->top, &top, seq, true,
							 __ATOMIC_RELEASE, __ATOMIC_ACQUIRE))
		;
}

bool
replay_update(struct replay_window *w, uint64_t seq)
{
	uint64_t idx = seq >> 6, bit = 1ull << (seq & 63);
	struct replay_block *b;
	rte_int128_t old, new;

	if (w->size == 0) {
		raise_top(w, seq);
		return true;
	}
	if (seq == 0)
		return false;
	b = &w->blk[idx & w->mask];
	old.val[0] = b->bits;
	old.val[1] = b->idx;
	if (!w->shared) {	/* one writer: the same steps, plain stores */
		if (old.val[1] > idx || too_old(w, seq) ||
		    (old.val[1] == idx && (old.val[0] & bit)))
			return false;
		b->bits = (old.val[1] == idx ? old.val[0] : 0) | bit;
		b->idx = idx;
		raise_top(w, seq);
		return true;
	}
	do {
		/* A newer block took the slot, or the window moved past seq. */
		if (old.val[1] > idx || too_old(w, seq))
			return false;
		if (old.val[1] == idx && (old.val[0] & bit))
			return false;	/* seen */
		new.val[0] = (old.val[1] == idx ? old.val[0] : 0) | bit;
		new.val[1] = idx;
	} while (!rte_atomic128_cmp_exchange((rte_int128_t *)b, &old, &new, 0,
					     __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE));
	raise_top(w, seq);
	return true;
}
