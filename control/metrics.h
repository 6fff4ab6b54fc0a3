/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * metrics.h - a Prometheus text endpoint ([control] metrics = ADDR:PORT, a
 * loopback address): each scrape asks the dataplane for its counters, SAs,
 * ports and lcores and answers one HTTP/1.0 response, exposition format
 * 0.0.4.  Served from dpvpnd's poll loop without blocking it: up to 16
 * connections at once (a 17th closes the oldest), non-blocking reads and
 * writes, 5 s for each whole exchange.
 */
#ifndef DPVPN_METRICS_H
#define DPVPN_METRICS_H

#include "dp_client.h"

struct metrics;

/* Listen on "ADDR:PORT" ("[::1]:PORT" for IPv6); NULL with a message. */
struct metrics *metrics_open(const char *spec);
/* The descriptor dpvpnd's loop polls (readable when a scraper needs serving). */
int metrics_fd(const struct metrics *m);
/* Accept, read, answer and write what is ready; close what ran out of time.
 * Call when metrics_fd() is readable and at least every few hundred ms. */
void metrics_poll(struct metrics *m, struct dp_client *dp);
void metrics_close(struct metrics *m);

#endif /* DPVPN_METRICS_H */
