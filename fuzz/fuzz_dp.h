/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fuzz_dp.h - the dataplane the packet and control-socket fuzz targets run
 * against (fuzz_dp.c): DPDK's EAL without hugepages, the packet pool, one
 * worker on the main lcore, ports without devices, their connected routes and
 * static neighbours, and a fixed set of SAs and policies.
 *
 * Every target checks after each input that the pool holds as many mbufs as
 * before it (fuzz_dp_finish): LeakSanitizer cannot see mempool objects.
 */
#ifndef FUZZ_DP_H
#define FUZZ_DP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <rte_mbuf.h>

#include "dp.h"
#include "sa.h"

#define FUZZ_INSIDE	0	/* port ids */
#define FUZZ_OUTSIDE	1
#define FUZZ_NONE	2	/* a port with no role */
#define FUZZ_PORTS	3
#define FUZZ_MAX_FRAME	2048	/* what one RX mbuf of the dataplane holds */
#define FUZZ_MAX_FRAMES	256	/* frames one input may deliver */

/* One tunnel of the fixed set: its two SAs as installed. */
struct fuzz_tunnel {
	struct dpvpn_sa_cfg in, out;
	bool shared;		/* inbound window updated with atomics (several workers) */
};

#define FUZZ_TUNNELS	9	/* the last a route-based tunnel (tunnel interface 0) */
extern struct fuzz_tunnel fuzz_tunnels[FUZZ_TUNNELS];

extern struct dp_worker *fuzz_w;
extern struct dp_lstats *fuzz_st;

/* EAL and everything but SAs; prog names the file prefix. abort()s on failure. */
void fuzz_dp_init(const char *prog);
/* The fixed SA set and its policies (fuzz_tunnels). */
void fuzz_dp_install_sas(void);
/* Start of an input: every SA's window, sequence numbers and lifetimes as installed. */
void fuzz_dp_reset(void);
/*
 * End of an input: what the main lcore would do with punted frames and
 * resolve requests (arp_poll), then every frame left in a TX buffer or ring
 * checked (abort on a malformed one) and freed, outer fragments still held
 * for reassembly freed, learned neighbours forgotten, and the pool checked
 * to be back at its size before the input (abort otherwise).
 */
void fuzz_dp_finish(void);
/* Open the IKE channel on a socket pair: IKE is punted, pushed and checked. */
void fuzz_dp_ike_channel(void);

/*
 * A received frame of len bytes in an mbuf.  tight: the data is the very end
 * of a buffer of its own (malloc'd, attached as an external buffer), so that
 * AddressSanitizer sees any read past the frame; else a pool mbuf with its
 * usual tailroom (what encapsulation needs).  NULL if it does not fit.
 */
struct rte_mbuf *fuzz_mbuf(const uint8_t *data, size_t len, bool tight);
/* The same frame in two chained segments (a scattered RX), or NULL. */
struct rte_mbuf *fuzz_mbuf_chain(const uint8_t *data, size_t len);

/*
 * Start a capture at point (enum dpvpn_trace_point; 0: none) for the rest of
 * the input, into a file of the target's own (written and removed by
 * fuzz_dp_finish).  One per input: later calls do nothing.
 */
void fuzz_trace(uint8_t point);

/*
 * A target's own check of each frame sent on a port, after the common ones
 * (fuzz_dp_finish), before the frame is freed; NULL: none.
 */
extern void (*fuzz_tx_check)(uint16_t port, const struct rte_mbuf *m);

/* Deliver n frames on port as one RX burst (n <= DP_BURST). */
void fuzz_rx(uint16_t port, struct rte_mbuf **pkts, uint16_t n);

/* Fix what a fuzzer finds hard to get right in a raw IP packet: lengths and checksums. */
void fuzz_fix_ip(uint8_t *ip, size_t len);

/* Little input reader. */
struct fuzz_in {
	const uint8_t *p;
	size_t n;
};

static inline uint8_t
fuzz_u8(struct fuzz_in *in)
{
	uint8_t v = 0;

	if (in->n > 0) {
		v = in->p[0];
		in->p++;
		in->n--;
	}
	return v;
}

static inline uint32_t
fuzz_u32(struct fuzz_in *in)
{
	uint32_t v = 0;

	for (int i = 0; i < 4; i++)
		v = v << 8 | fuzz_u8(in);
	return v;
}

/* Up to want bytes from the input; *got says how many. */
static inline const uint8_t *
fuzz_bytes(struct fuzz_in *in, size_t want, size_t *got)
{
	const uint8_t *p = in->p;

	*got = want < in->n ? want : in->n;
	in->p += *got;
	in->n -= *got;
	return p;
}

#endif /* FUZZ_DP_H */
