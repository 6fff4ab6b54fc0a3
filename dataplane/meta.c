/* SPDX-License-Identifier: BSD-3-Clause */
/* meta.c - the mbuf's dpvpn metadata (meta.h): registration, the hand-off to worker 0. */
#include <errno.h>

#include <rte_errno.h>
#include <rte_ring.h>

#include "dp.h"
#include "meta.h"

int dp_meta_offset = -1;
uint64_t dp_answer_inside;

int
dp_meta_init(void)
{
	static const struct rte_mbuf_dynfield field = {
		.name = "dpvpn_meta",
		.size = sizeof(struct dp_meta),
		.align = __alignof__(struct dp_meta),
	};
	static const struct rte_mbuf_dynflag flag = { .name = "dpvpn_answer_inside" };
	int bit;

	dp_meta_offset = rte_mbuf_dynfield_register(&field);
	bit = rte_mbuf_dynflag_register(&flag);
	if (dp_meta_offset < 0 || bit < 0)
		return -rte_errno;
	dp_answer_inside = 1ull << bit;
	return 0;
}

bool
dp_main_tx(struct rte_mbuf *m, enum dp_kind kind, uint16_t tunif)
{
	struct dp_meta *meta = dp_meta(m);

	meta->kind = (uint8_t)kind;
	meta->tunif = tunif;
	return rte_ring_enqueue(dp.workers[0].main.txq_ring, m) == 0;
}
