/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * metrics.h - a Prometheus text endpoint ([control] metrics = ADDR:PORT, a
 * loopback address): each scrape asks the dataplane for its counters, SAs,
 * ports and lcores and answers one HTTP/1.0 response, exposition format
 * 0.0.4.  Served from dpvpnd's poll loop; one scrape at a time.
 */
#ifndef DPVPN_METRICS_H
#define DPVPN_METRICS_H

#include "dp_client.h"

/* A listening socket for "ADDR:PORT" ("[::1]:PORT" for IPv6); -1 with a message. */
int metrics_listen(const char *spec);
/* Accept one scraper on lfd and answer it. */
void metrics_serve(int lfd, struct dp_client *dp);

#endif /* DPVPN_METRICS_H */
