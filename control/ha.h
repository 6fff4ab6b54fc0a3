/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ha.h - a pair of gateways, one set of tunnels (doc/ha.md, [ha] issue 30).
 *
 * keepalived's VRRP says which node is master (its notify scripts run
 * `dpvpnctl ha master|backup|fault`); this module keeps the other node's
 * dataplane holding what this one's holds for its IKE tunnels, over the
 * sync channel (ha_chan.c: TLS 1.3 with a pre-shared key; frames of
 * ha_wire.c):
 *
 *   master                                  backup
 *   IKE SA record changed (ikd_keep.c)  --> KEEP_SET / KEEP_DEL in its dataplane
 *   SA or policy of an IKE tunnel       --> the same message to its dataplane
 *     (install.c's tap)                     (outbound SAs silent: limit = start)
 *   a block of sequence numbers         --> on its disk (seqstate), then ACK;
 *     reserved (seqstate)                   the master grants the block only
 *                                           then, or once the backup is gone
 *
 * A backup runs no IKE: its dpvpnd opens the IKE engine when it becomes
 * master, and the engine takes the IKE SAs up from the records in its own
 * dataplane as after a restart of dpvpnd (ikd_keep.c), with no exchange.
 * Before that, every outbound SA continues above the highest block the
 * old master reserved (SEQ_SET).  A backup that (re)connects gets the whole
 * state first (SNAP_BEGIN .. SNAP_END), then the changes.
 *
 * One thread (dpvpnd's loop).  Without an [ha] section everything here is a
 * no-op and ha_master() is true.
 */
#ifndef DPVPN_CONTROL_HA_H
#define DPVPN_CONTROL_HA_H

#include <poll.h>
#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#include "config.h"
#include "dp_client.h"
#include "seqstate.h"

/* What dpvpnd does when this node's role changes. */
struct ha_ops {
	int (*take_over)(void);	/* became master: open IKE (takes the records up) */
	void (*release)(void);	/* became backup: close IKE, SAs left in place */
};

/* From cfg's [ha] (none: 0, nothing to do); -1 with a message on stderr. */
int ha_open(const struct cfg *cfg, struct dp_client *dp, struct seqstate *seq,
	    const struct ha_ops *ops, bool verbose);
void ha_close(void);
bool ha_configured(void);
/* This node may run IKE and send: master of a group, or no [ha]. */
bool ha_master(void);
/* This node carries the tunnel (its group's master, or no [ha]): IKE runs it here. */
bool ha_owns(const char *tunnel);
/*
 * Taking the tunnel over with a sync state that may be stale: its IKE SA is
 * not taken up, a new one replaces it (ikd_keep.c).
 */
bool ha_fresh(const char *tunnel);
/* The config's tunnels, each in its group (ha_open, and after each reload). */
void ha_tunnels(const struct cfg *cfg);

/* poll(): up to 2 descriptors; how long the loop may sleep. */
int ha_pollfds(struct pollfd *pfd, int max);
int ha_timeout_ms(void);
/* After poll: the channel, messages applied, acknowledgements, timers. */
void ha_run(void);

/* ikd_keep.c: an IKE SA's record as kept in the dataplane (rec NULL: gone). */
void ha_keep(const char *conn, const uint8_t *key, const void *rec, uint32_t len);
/*
 * dpvpnd's grant: true if the block waits for the backup (ha.c grants it),
 * or is refused (the SA's group is the peer's: continue_above raises it at
 * a takeover).
 */
bool ha_seq_hold(const char *name, uint32_t spi, uint64_t limit);

/* The dataplane went away: a master becomes fault (it holds nothing now). */
void ha_dataplane_lost(void);
/* A new dataplane was given the config: the virtual addresses as the role says. */
void ha_dataplane_back(void);
/*
 * dpvpnctl ha master|backup|fault [GROUP] (keepalived's notify; no group:
 * every group): 0, or -1 and why.
 */
int ha_role_command(const char *role, const char *group, char *msg, size_t len);
/* dpvpnctl show ha. */
json_t *ha_show(char *err, size_t len);

#endif /* DPVPN_CONTROL_HA_H */
