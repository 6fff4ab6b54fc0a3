/* SPDX-License-Identifier: BSD-3-Clause */
#include <string.h>

#include "replay.h"

bool
replay_init(struct replay_window *w, uint32_t size)
{
	if (size != 0 && !replay_window_ok(size))
		return false;
	memset(w, 0, sizeof(*w));
	w->size = size;
	w->nblocks = size / 64 + 1;
	return true;
}

static inline uint32_t
block_of(const struct replay_window *w, uint64_t seq)
{
	return (uint32_t)((seq >> 6) % w->nblocks);
}

bool
replay_esn_infer(const struct replay_window *w, uint32_t seql, uint64_t *seq)
{
	uint32_t win = w->size ? w->size : 1024;
	uint32_t tl = (uint32_t)w->top, th = (uint32_t)(w->top >> 32);
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

bool
replay_check(const struct replay_window *w, uint64_t seq)
{
	if (w->size == 0)		/* anti-replay off */
		return true;
	if (seq == 0)			/* never sent: the first packet is 1 */
		return false;
	if (seq > w->top)
		return true;
	if (w->top - seq >= w->size)	/* left of the window */
		return false;
	return !(w->bits[block_of(w, seq)] & (1ull << (seq & 63)));
}

/* Slide the window right so that seq becomes its top. */
static void
advance(struct replay_window *w, uint64_t seq)
{
	uint64_t old = w->top >> 6, now = seq >> 6;
	uint64_t n = now - old;

	if (n > w->nblocks)
		n = w->nblocks;
	/* Blocks between the old top's block and seq's block hold numbers
	 * that have not been seen: clear them, and seq's own block. */
	for (uint64_t i = 1; i <= n; i++)
		w->bits[(old + i) % w->nblocks] = 0;
	w->top = seq;
}

bool
replay_update(struct replay_window *w, uint64_t seq)
{
	uint64_t bit;
	uint32_t b;

	if (!replay_check(w, seq))
		return false;
	if (w->size == 0) {
		if (seq > w->top)
			w->top = seq;
		return true;
	}
	if (seq > w->top)
		advance(w, seq);
	b = block_of(w, seq);
	bit = 1ull << (seq & 63);
	w->bits[b] |= bit;
	return true;
}
