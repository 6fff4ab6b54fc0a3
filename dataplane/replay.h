/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * replay.h - ESP anti-replay window (RFC 4303 3.4.3) over a 64-bit sequence
 * space, kept as a ring of 64-bit blocks in the style of RFC 6479: a check or
 * an update touches one block, so both are O(1) per packet whatever the
 * window size, and safe for several workers at once (see struct replay_window).
 *
 * The window holds the sequence numbers (top - size, top]; the ring has at
 * least one block more than the window needs, so it slides without losing
 * the oldest bits still inside the window.
 * A window of size 0 is anti-replay turned off (RFC 4303 3.4.3 allows the
 * receiver that): every number is accepted and only the top is tracked.
 */
#ifndef REPLAY_H
#define REPLAY_H

#include <stdbool.h>
#include <stdint.h>

#include <rte_atomic.h>
#include <rte_prefetch.h>

#define REPLAY_WIN_MIN		64
#define REPLAY_WIN_MAX		4096
#define REPLAY_BLOCKS_MAX	128	/* a power of 2 >= REPLAY_WIN_MAX / 64 + 1 */

/*
 * A block holds 64 sequence numbers and says which ones: idx is its number
 * (seq >> 6), so a slot of the ring still holding an older block reads as
 * empty, and nothing ever has to be cleared.  Both words change together
 * with one 128-bit compare-and-swap.
 */
struct replay_block {
	uint64_t bits;
	uint64_t idx;
} __attribute__((aligned(16)));

/*
 * Workers share a window without a lock: a packet's bit is set with one
 * 128-bit CAS on its block (retried if another worker got there first) and
 * the top moves with an atomic maximum, so packets of one SA may be
 * decrypted on several cores, in any order, without false replays.
 */
struct replay_window {
	uint64_t top;		/* highest sequence number accepted, 0 = none */
	uint32_t size;		/* window size in packets, power of 2 */
	uint16_t mask;		/* blocks in the ring - 1 */
	uint16_t shared;	/* several threads update it: atomic operations */
	struct replay_block blk[REPLAY_BLOCKS_MAX];
};

static inline bool
replay_window_ok(uint32_t size)
{
	return size >= REPLAY_WIN_MIN && size <= REPLAY_WIN_MAX && !(size & (size - 1));
}

/*
 * Returns false if size is neither 0 (off) nor a power of two in [MIN, MAX].
 * shared: more than one thread will update the window (several workers);
 * a window only one thread updates skips the atomic instructions.
 */
/* Fast path, many tunnels: fetch the block that number's check will read
 * (any 32 low bits of it will do: the ring is at most 128 blocks). */
static inline void
replay_prefetch(const struct replay_window *w, uint32_t seq)
{
	rte_prefetch0(&w->blk[(seq >> 6) & w->mask]);
}

bool replay_init(struct replay_window *w, uint32_t size, bool shared);
/* Every number up to high seen (raised only; no worker updating it meanwhile). */
void replay_floor(struct replay_window *w, uint64_t high);

/* Inline: once per packet on the inbound fast path. */

static inline uint64_t
replay_load_top(const struct replay_window *w)
{
	return __atomic_load_n(&w->top, __ATOMIC_ACQUIRE);
}

/*
 * Extended sequence numbers (RFC 4303 appendix A2.2): the 64-bit number a
 * received low half most likely stands for, given the window.  False when it
 * can only be from before the first packet.  A window that is off infers
 * with the default size.
 */
static inline bool
replay_esn_infer(const struct replay_window *w, uint32_t seql, uint64_t *seq)
{
	uint64_t top = replay_load_top(w);
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
replay_too_old(const struct replay_window *w, uint64_t seq)
{
	uint64_t top = replay_load_top(w);

	return seq <= top && top - seq >= w->size;
}

/*
 * A number refused as a replay: was it late (left of the window) rather
 * than repeated?  With several workers the window's top is raised just
 * after a newer block takes a slot, so a newer block in seq's slot says
 * late too, before the top shows it.
 */
static inline bool
replay_late(const struct replay_window *w, uint64_t seq)
{
	return seq == 0 || replay_too_old(w, seq) ||
	       __atomic_load_n(&w->blk[(seq >> 6) & w->mask].idx, __ATOMIC_RELAXED) > seq >> 6;
}

/* May seq be accepted?  Called before the ICV check: changes nothing. */
static inline bool
replay_check(const struct replay_window *w, uint64_t seq)
{
	const struct replay_block *b;

	if (w->size == 0)		/* anti-replay off */
		return true;
	if (seq == 0 || replay_too_old(w, seq))	/* the first packet is 1 */
		return false;
	/* A hint only (the two words may be read apart): update decides. */
	b = &w->blk[(seq >> 6) & w->mask];
	return !(__atomic_load_n(&b->idx, __ATOMIC_RELAXED) == seq >> 6 &&
		 (__atomic_load_n(&b->bits, __ATOMIC_RELAXED) & (1ull << (seq & 63))));
}

/* top = max(top, seq), atomically. */
static inline void
replay_raise_top(struct replay_window *w, uint64_t seq)
{
	uint64_t top = replay_load_top(w);

	if (!w->shared) {
		if (seq > top)
			__atomic_store_n(&w->top, seq, __ATOMIC_RELEASE);	/* readers: show sa */
		return;
	}
	while (seq > top && !__atomic_compare_exchange_n(&w->top, &top, seq, true,
							 __ATOMIC_RELEASE, __ATOMIC_ACQUIRE))
		;
}

/* Record seq after its ICV checked out; false if it is a replay after all. */
static inline bool
replay_update(struct replay_window *w, uint64_t seq)
{
	uint64_t idx = seq >> 6, bit = 1ull << (seq & 63);
	struct replay_block *b;
	rte_int128_t old, new;

	if (w->size == 0) {
		replay_raise_top(w, seq);
		return true;
	}
	if (seq == 0)
		return false;
	b = &w->blk[idx & w->mask];
	old.val[0] = b->bits;
	old.val[1] = b->idx;
	if (!w->shared) {	/* one writer: the same steps, plain stores */
		if (old.val[1] > idx || replay_too_old(w, seq) ||
		    (old.val[1] == idx && (old.val[0] & bit)))
			return false;
		b->bits = (old.val[1] == idx ? old.val[0] : 0) | bit;
		b->idx = idx;
		replay_raise_top(w, seq);
		return true;
	}
	do {
		/* A newer block took the slot, or the window moved past seq. */
		if (old.val[1] > idx || replay_too_old(w, seq))
			return false;
		if (old.val[1] == idx && (old.val[0] & bit))
			return false;	/* seen */
		new.val[0] = (old.val[1] == idx ? old.val[0] : 0) | bit;
		new.val[1] = idx;
	} while (!rte_atomic128_cmp_exchange((rte_int128_t *)b, &old, &new, 0,
					     __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE));
	replay_raise_top(w, seq);
	return true;
}

#endif /* REPLAY_H */
