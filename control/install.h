/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * install.h - push a parsed configuration into the dataplane.
 */
#ifndef DPVPN_CONTROL_INSTALL_H
#define DPVPN_CONTROL_INSTALL_H

#include <stdbool.h>

#include "config.h"
#include "dp_client.h"

/*
 * PORT_SET, NEIGH_ADD, ROUTE_ADD, per tunnel SA_ADD in + out and POLICY_ADD,
 * then START, into a dataplane not started yet (SAs it holds, left by an
 * install that was interrupted, are deleted first).  On failure prints
 * "dpvpnd: WHAT: ERROR" and returns -1.  Key material in cfg is wiped either
 * way.  verbose (here, in reconcile and in reload): "dpvpnd: WHAT: done" for
 * each message that succeeded, naming the tunnel, SA direction, port, route
 * or neighbour: never a key.
 */
struct seqstate;
/* seq: where outbound sequence reservations are kept (NULL: no limits). */
int inst_all(struct dp_client *dp, struct cfg *cfg, bool verbose, struct seqstate *seq);
/*
 * dpvpnd (re)started against a dataplane already forwarding: keep what matches
 * the config (names, SPIs, cipher), install what is missing, remove the rest.
 */
int inst_reconcile(struct dp_client *dp, struct cfg *cfg, struct seqstate *seq, bool verbose,
		   char *msg, size_t len);
/* Remember cfg's key digests (before its keys are wiped): reload compares them. */
void inst_fingerprint(struct cfg *cfg);
/*
 * Live reload: apply what differs between the running cur and next (tunnels
 * added, removed or changed; unchanged ones are not touched).  Other
 * sections must be the same.  next's keys are wiped; msg says what was done
 * or why not.  On success the caller replaces cur by next.
 */
int inst_reload(struct dp_client *dp, struct cfg *cur, struct cfg *next, struct seqstate *seq,
		bool verbose, char *msg, size_t len);

#endif /* DPVPN_CONTROL_INSTALL_H */
