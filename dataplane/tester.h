/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * tester.h - tester mode (--tester N): the dataplane as the traffic
 * generator and analyser that measures another gateway, the device under
 * test (DUT).  The inside port (A) faces the DUT's protected side, the
 * outside port (B) its unprotected side as the remote peer of every tunnel.
 *
 *   DUT-encap stream: cleartext built here, routed out of A; the DUT
 *   encrypts it; B receives the ESP, esp_decap_burst decrypts it (the
 *   dataplane's own code) and the sink counts it.
 *   DUT-decap stream: cleartext built here, encrypted by esp_encap_burst
 *   into tunnel i and sent out of B; the DUT decrypts it and forwards it to
 *   A's address; the sink counts the frame A receives.
 *
 * Tunnel i's tester-side host is --tester-inner + i; the cleartext end is
 * the inside port's own address (so the DUT finds it by ARP).  Every packet
 * is Ethernet + IPv4 + UDP + struct tester_payload (+ zero padding), the
 * frame sizes as a clear L2 frame without FCS, 64 bytes and up.
 *
 * The generator and the sink run on the workers, in their poll loop (no
 * kernel link, no second process); trials are started and read over DPDK
 * telemetry: /dpvpn/tester/start, /dpvpn/tester/stats, /dpvpn/tester/tunnels
 * (tester.c).  Nothing here allocates, locks, logs or makes a system call
 * per packet.
 */
#ifndef TESTER_H
#define TESTER_H

#include <stdint.h>

#include <rte_mbuf.h>

#include "dp.h"

#define TESTER_MAX_TUNNELS	200000
#define TESTER_MAGIC		0x5444u		/* "DT" in memory on x86 */
#define TESTER_MAX_SIZES	16
#define TESTER_MIN_SIZE		64		/* Ethernet + IPv4 + UDP + payload */
#define TESTER_MAX_SIZE		1514		/* 1518 with the FCS */
#define TESTER_SEQ_BITS		48		/* the rest of seq: the trial id */

enum tester_dir { TESTER_DUT_ENCAP, TESTER_DUT_DECAP, TESTER_DIRS };

/* After the UDP header, host byte order (the sink is this process). */
struct tester_payload {
	uint16_t magic;
	uint32_t stream;	/* tunnel * 2 + enum tester_dir */
	uint64_t seq;		/* trial id << 48 | sequence in the stream, from 0 */
	uint64_t tsc;		/* the worker's TSC when the burst was built */
} __rte_packed;

/* --tester N --tester-inner ADDR (main.c); 0 on success. */
int tester_init(unsigned int tunnels, uint32_t inner_host);
void tester_telem_init(void);
/* --tester-loop: two ports of crossed rings (after EAL, before the ports' set-up). */
int tester_loop_ports(unsigned int queues);

/*
 * A poll's worth of packets the current trial asks of this worker: clear[]
 * for the poll loop to route out (DUT-encap streams), esp[] for it to
 * encrypt and send (DUT-decap streams), each at most DP_BURST.  Returns
 * how many were made.
 */
uint16_t tester_gen(struct dp_worker *w, struct rte_mbuf **clear, uint16_t *nclear,
		    struct rte_mbuf **esp, uint16_t *nesp);

/*
 * The tester's own packets among pkts[] (IPv4 at offset l2) are counted
 * and freed; the rest are returned at the front of pkts[].
 */
uint16_t tester_sink(struct dp_worker *w, struct rte_mbuf **pkts, uint16_t n, uint16_t l2);

#endif /* TESTER_H */
