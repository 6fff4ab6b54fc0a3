/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ctl_base.h - `dpvpnctl clear`: baselines of every counter dpvpnd shows,
 * subtracted from what is shown afterwards.  The dataplane's counters, and
 * dpvpnd's metrics (raw, as Prometheus counters must be), are never reset.
 */
#ifndef DPVPN_CONTROL_CTL_BASE_H
#define DPVPN_CONTROL_CTL_BASE_H

#include "dp_client.h"

/* The counters, SAs, ports and lcores as they stand now become the baselines:
 * 0, or -1 with err naming what the dataplane refused (old baselines kept). */
int base_take(struct dp_client *dp, char *err, size_t err_len);
/* A new dataplane (it counts from 0): no baselines any more. */
void base_forget(void);
/* What was read from the dataplane, less its baseline (in place). */
void base_counters(struct dpvpn_counters *c);
void base_sa(struct dpvpn_sa_info *s);
void base_port(struct dpvpn_port_info *p);
void base_lcore(struct dpvpn_lcore_info *l);

#endif /* DPVPN_CONTROL_CTL_BASE_H */
