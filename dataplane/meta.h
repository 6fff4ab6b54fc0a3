/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * meta.h - what dpvpn says about a packet beside its bytes: one typed area
 * in each mbuf (a DPDK dynamic field, struct dp_meta, as VPP's vnet_buffer
 * and WireGuard's PACKET_CB), and one dynamic flag.
 *
 * struct dp_meta is written by whoever hands a frame over between the main
 * lcore and a worker (dp_main_tx, host_punt, host_punt_tun) and read by the
 * one that takes it (drain_main in worker.c, host.c's to_twin): only on
 * those slow paths, never per ESP packet.  The PMDs do not clear a dynamic
 * field at RX, so it is meaningful only on a frame whose producer wrote it.
 *
 * DP_F_ANSWER_INSIDE is a flag in ol_flags instead, which every RX and
 * every mbuf allocation clears: it is read for every packet the output
 * stage routes (ip_output.c), in the mbuf's first cache line.
 */
#ifndef DPVPN_META_H
#define DPVPN_META_H

#include <stdbool.h>
#include <stdint.h>

#include <rte_branch_prediction.h>
#include <rte_debug.h>
#include <rte_mbuf.h>
#include <rte_mbuf_dyn.h>

/* What a frame handed to worker 0 (dp_main_tx) or to the main lcore is. */
enum dp_kind {
	DP_KIND_FRAME = 0,	/* an Ethernet frame, sent as is on m->port (ARP, ND) */
	DP_KIND_LOCAL_IP,	/* the main lcore's own IP packet (IKE_TX): routed */
	DP_KIND_HOST,		/* the host's IP frame from port m->port's twin (host.h) */
	DP_KIND_TUN,		/* a packet for or from tunnel twin meta.tunif (raw IP) */
};

struct dp_meta {
	uint8_t kind;		/* enum dp_kind */
	uint16_t tunif;		/* DP_KIND_TUN: the tunnel interface's id (tunif.h) */
};

extern int dp_meta_offset;		/* the dynamic field's; -1: not registered */
extern uint64_t dp_answer_inside;	/* DP_F_ANSWER_INSIDE's ol_flags bit */

/* After rte_eal_init, before any packet: registers the field and the flag. */
int dp_meta_init(void);

static inline struct dp_meta *
dp_meta(struct rte_mbuf *m)
{
	if (unlikely(dp_meta_offset < 0))
		rte_panic("dp_meta: dp_meta_init() was not called\n");
	return RTE_MBUF_DYNFIELD(m, dp_meta_offset, struct dp_meta *);
}

/*
 * What the gateway answers to a packet from an inside port (echo replies,
 * ICMP errors) is marked so: it may go back through an inside port or a
 * tunnel, never in clear out of an outside port (an inside host with a
 * source address that routes outside would have the gateway carry its
 * words there, past the policies): dropped as answer-outside (ip_output.c).
 */
static inline void
dp_mark_answer_inside(struct rte_mbuf *m)
{
	if (unlikely(dp_answer_inside == 0))
		rte_panic("dp_mark_answer_inside: dp_meta_init() was not called\n");
	m->ol_flags |= dp_answer_inside;
}

static inline bool
dp_is_answer_inside(const struct rte_mbuf *m)
{
	return (m->ol_flags & dp_answer_inside) != 0;
}

static inline void
dp_clear_answer_inside(struct rte_mbuf *m)
{
	m->ol_flags &= ~dp_answer_inside;
}

/*
 * Main lcore: hand m to worker 0, which sends or routes it by its kind
 * (drain_main); tunif for DP_KIND_TUN.  False: its ring is full, m is the
 * caller's to drop.
 */
bool dp_main_tx(struct rte_mbuf *m, enum dp_kind kind, uint16_t tunif);

#endif
