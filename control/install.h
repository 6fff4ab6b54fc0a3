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
 * dpvpnd (re)started against a dataplane already forwarding: keep what is as
 * configured (name, SPIs, cipher, addresses, selectors, options: keys cannot
 * be read back), remove the SAs the config does not have, install what is
 * missing: whole tunnels, or the SA or policy a tunnel lost.
 */
int inst_reconcile(struct dp_client *dp, struct cfg *cfg, struct seqstate *seq, bool verbose,
		   char *msg, size_t len);
/*
 * One tunnel's SA pair and outbound policy, and their removal: for tunnels
 * whose SPIs and keys IKE negotiated (t a copy of the config's tunnel with
 * them filled in; its keys are the caller's to wipe).  0 or -1 (printed).
 */
int inst_tunnel_up(struct dp_client *dp, const struct cfg_tunnel *t, bool verbose,
		   struct seqstate *seq);
int inst_tunnel_down(struct dp_client *dp, const struct cfg_tunnel *t, bool verbose);
/* For rekeys: the SA pair alone; the policy moved to t->out.spi atomically; one SA. */
int inst_tunnel_sas(struct dp_client *dp, const struct cfg_tunnel *t, bool verbose,
		    struct seqstate *seq);
/* IKE's installs of one pass in one dataplane batch (nothing done: no call) */
int inst_batch_begin(struct dp_client *dp, struct seqstate *seq, bool verbose);
int inst_batch_commit(struct dp_client *dp, struct seqstate *seq, bool verbose);
int inst_policy_switch(struct dp_client *dp, const struct cfg_tunnel *t, bool verbose);
/*
 * HA (control/ha.c): called after the dataplane took a change made for
 * tunnel t -- SA_ADD (keys included: the callee wipes its copies), SA_DEL,
 * POLICY_ADD, POLICY_DEL -- so that a standby gets the same; and asked,
 * after an outbound SA's block of sequence numbers is on disk, whether the
 * SA must wait for it (true: installed silent, granted once the standby has
 * the block).  NULL (the default): nothing.
 */
struct inst_tap {
	void (*sent)(const struct cfg_tunnel *t, uint16_t type, const void *msg, uint32_t len);
	bool (*hold)(const char *name, uint32_t spi, uint64_t limit);
};
void inst_set_tap(const struct inst_tap *tap);

int inst_sa_del(struct dp_client *dp, const struct cfg_tunnel *t, uint32_t spi, uint8_t dir,
		bool verbose);
/* Remember cfg's key digests (before its keys are wiped): reload compares them. */
void inst_fingerprint(struct cfg *cfg);
/* Route-based tunnel NAME's tunnel interface id (created: the lowest free
 * one), or -1; and the name of interface id, or NULL. */
int inst_tunif_id(const char *name, bool create);
const char *inst_tunif_name(uint16_t id);
/* cfg's tunnel called name, or NULL. */
struct cfg_tunnel *inst_find_tunnel(const struct cfg *cfg, const char *name);
/* a and b the same tunnel but for line numbers (keys and PSK by their digests). */
int inst_tunnel_same(const struct cfg_tunnel *a, const struct cfg_tunnel *b);
/* A digest of t as configured, keys and PSK left out: the same across processes
 * (ikd_keep.c keeps it with an IKE SA's record, to tell a tunnel changed meanwhile). */
void inst_tunnel_digest(const struct cfg_tunnel *t, uint8_t out[32]);
/* Whether the dataplane's SA called sa_name is keying = ike tunnel t's (or,
 * remote = %any, one of its clients'). */
bool inst_ike_owns(const struct cfg_tunnel *t, const char *sa_name);
/* Whether a reload from cur to next can be applied (inst_reload's first check):
 * 0, or -1 with why in msg. */
int inst_reload_check(const struct cfg *cur, const struct cfg *next, char *msg, size_t len);
/* What a reload did to each tunnel of the old and the new config, by name. */
enum inst_fate {
	INST_ADDED,	/* new in the config, or brought up */
	INST_REMOVED,	/* gone from the config, or taken down */
	INST_CHANGED,	/* changed in the config: installed anew */
	INST_REPAIRED,	/* unchanged, but the dataplane had lost (part of) it */
	INST_UNCHANGED,	/* unchanged and whole in the dataplane: not touched */
	INST_FATES
};
extern const char *const inst_fate_names[INST_FATES];	/* "added", ... */
struct inst_report {
	size_t count[INST_FATES];
	size_t n, cap;		/* named in name[i] with fate[i] (enum inst_fate) */
	char (*name)[DPVPN_NAME_LEN];
	uint8_t *fate;
};
void inst_report_clear(struct inst_report *r);	/* freed and zeroed */

/*
 * Live reload: apply what differs between the running cur and next (tunnels
 * added, removed or changed; unchanged ones are not touched), and repair
 * what the dataplane lost behind dpvpnd's back: an unchanged static tunnel
 * whose SA or policy is missing there, or differs, gets that part installed
 * again (outbound sequence numbers continue above the reservations, as after
 * a restart).  Other sections must be the same.  next's keys are wiped; msg
 * says what was done or why not; rep (cleared by the caller) gets every
 * tunnel's fate.  On success the caller replaces cur by next.
 */
int inst_reload(struct dp_client *dp, struct cfg *cur, struct cfg *next, struct seqstate *seq,
		bool verbose, char *msg, size_t len, struct inst_report *rep);

#endif /* DPVPN_CONTROL_INSTALL_H */
