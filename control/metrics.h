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

/*
 * The per-tunnel series (metrics_tunnels.c), from show tunnels and the
 * dataplane's SAs; a state kept from scrape to scrape makes the counters
 * grow through rekeys.  metrics_set_ctl: dpvpnd's operator context, whose
 * show tunnels the endpoint then adds (NULL: the per-SA series only).
 */
struct ctl_ctx;
struct metrics_tunnels;

struct metrics_tunnels *metrics_tunnels_new(void);
void metrics_tunnels_free(struct metrics_tunnels *m);
/* The series' text (malloc'd, *len bytes), or NULL. */
char *metrics_tunnels_text(struct metrics_tunnels *m, struct ctl_ctx *ctx, size_t *len);
void metrics_set_ctl(struct metrics *m, struct ctl_ctx *ctx);

#endif /* DPVPN_METRICS_H */
