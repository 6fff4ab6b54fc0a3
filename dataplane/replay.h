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
bool replay_init(struct replay_window *w, uint32_t size, bool shared);
/* May seq be accepted?  Called before the ICV check: changes nothing. */
bool replay_check(const struct replay_window *w, uint64_t seq);
/* Record seq after its ICV checked out; false if it is a replay after all. */
bool replay_update(struct replay_window *w, uint64_t seq);

/*
 * Extended sequence numbers (RFC 4303 appendix A2.2): the 64-bit number a
 * received low half most likely stands for, given the window.  False when it
 * can only be from before the first packet.  A window that is off infers
 * with the default size.
 */
bool replay_esn_infer(const struct replay_window *w, uint32_t seql, uint64_t *seq);

#endif /* REPLAY_H */
