/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * icvwatch.h - a log line when a tunnel's inbound ESP fails the integrity
 * check (bad-icv): the usual sign that the two gateways were given different
 * keys (or one has them swapped), which otherwise shows only as a counter.
 *
 *   dpvpnd: tunnel to-b: 3 inbound packets failed the integrity check
 *   (bad-icv), SA 0x00002001: keys differ from the peer's? (...)
 *
 * At most one line per tunnel every ICVW_EVERY_MS (as the kernel's and
 * strongSwan's rate limits, a flood of bad packets costs a line a minute, not
 * one a packet), each saying how many failed since the tunnel's last line;
 * at most ICVW_LINES_MAX tunnels a pass, the others summed up in one line.
 * Never key material: the SA dump it reads carries none.
 *
 * Cost: every ICVW_POLL_MS one SHOW_COUNTERS (the dataplane's bad-icv
 * total); the SA table is dumped only when that total has risen.  The first
 * poll against a dataplane that was already forwarding takes its counts as
 * they are (old failures are not news); after icvw_reset (a new dataplane)
 * every failure is new.
 */
#ifndef DPVPN_CONTROL_ICVWATCH_H
#define DPVPN_CONTROL_ICVWATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "dp_client.h"
#include "dpvpn_proto.h"

#define ICVW_POLL_MS	1000
#define ICVW_EVERY_MS	60000	/* a tunnel's lines: at most one a minute */
#define ICVW_LINES_MAX	16	/* tunnels named in one pass; the rest summed */

struct icvw_ent;

struct icvw {
	bool primed;		/* total read at least once */
	uint64_t total;		/* the dataplane's bad-icv drops at the last poll */
	struct icvw_ent *ents;	/* inbound SAs that failed, sorted by (name, spi) */
	size_t n, cap;
	uint32_t gen;		/* SA dumps read */
};

/* dpvpnd's run loop, every ICVW_POLL_MS: read, then report to stderr. */
void icvw_poll(struct icvw *w, struct dp_client *dp, uint64_t now_ms);
/* A new dataplane (counters from 0): everything it counts is new. */
void icvw_reset(struct icvw *w);
void icvw_free(struct icvw *w);

/*
 * The parts icvw_poll is made of (unit-tested): fold an SA dump in
 * (baseline: take the counts as already reported), then write the lines due.
 */
int icvw_update(struct icvw *w, const struct dpvpn_sa_info *sas, uint32_t n, uint64_t now_ms,
		bool baseline);
void icvw_report(struct icvw *w, uint64_t now_ms, FILE *out);

#endif /* DPVPN_CONTROL_ICVWATCH_H */
