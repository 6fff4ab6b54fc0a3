/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ikd.h - dpvpnd's IKE: the keying = ike tunnels of the config as IKEv2
 * connections (ike_sa.c), spoken over the dataplane's IKE channel (a second
 * control connection that sent IKE_OPEN: IKE_RX pushes in, IKE_TX out), and
 * the CHILD_SAs they negotiate installed as the tunnel's SA pair and policy
 * (install.c), removed when they end.
 *
 * The PSKs are read from the config file when the channel opens (the copy
 * dpvpnd installed from has had its keys wiped) and kept only inside the IKE
 * context, wiped when it is freed.  Tunnels with start = yes are initiated
 * at once and again 5 s after their IKE SA ends.  A reload ends the IKE
 * tunnels that left the config or changed in it (their IKE SA deleted, the
 * peer told) and adds the new and changed ones; unchanged ones go on as they
 * are.
 */
#ifndef DPVPN_CONTROL_IKD_H
#define DPVPN_CONTROL_IKD_H

#include <jansson.h>
#include <stdbool.h>

#include "config.h"
#include "ctl_show.h"
#include "dp_client.h"
#include "seqstate.h"

/*
 * Open the IKE channel on the dataplane socket and start the IKE tunnels of
 * config_path; dp is the main control connection (installs go there).
 * 0, or -1 after printing why.  Nothing to do (no IKE tunnel): 0, no channel.
 */
int ikd_open(const char *config_path, const char *dp_socket, struct dp_client *dp,
	     struct seqstate *seq, bool verbose);
/* The channel's descriptor for poll(), -1 if none. */
int ikd_fd(void);
/* The channel is readable: take what it holds.  -1 if it closed. */
int ikd_input(void);
/* Timers (call at least every 100 ms). */
void ikd_tick(void);
/*
 * Stop: the IKE SAs end here (keys wiped, channel closed) but not in the
 * dataplane: their CHILD_SAs forward on and their records stay there for the
 * next dpvpnd, whose ikd_open takes them up again (doc/ike.md "Restarts").
 */
void ikd_close(void);

/*
 * A reload, in steps around inst_reload (which leaves IKE tunnels here):
 * ikd_reload_check first, with next's PSKs still there: the new and changed
 * IKE tunnels checked and kept aside; 0, or -1 with msg saying which and why
 * (nothing changed).  ikd_reload_drop just before inst_reload: the tunnels
 * gone from next or changed in it end (so a static tunnel of the same name
 * finds its selectors free).  ikd_reload_add once inst_reload is done: the
 * new and changed ones are added (the channel opened if these are the
 * first), what was done appended to msg; 0 or -1.  ikd_reload_cancel: the
 * reload went no further (what check kept is wiped).
 */
int ikd_reload_check(struct cfg *next, char *msg, size_t len);
void ikd_reload_drop(const struct cfg *next);
int ikd_reload_add(const struct cfg *next, char *msg, size_t len);
void ikd_reload_cancel(void);

/* A soft lifetime event of the dataplane: 1 if an IKE tunnel's (rekeyed). */
int ikd_soft_lifetime(const char *name, uint32_t spi);
/*
 * Every CHILD_SA that is up of the tunnels which(name) says rekeyed now (an
 * HA takeover whose sync state may be stale, a split brain: doc/ha.md); how
 * many rekeys were asked for.
 */
size_t ikd_rekey_all(bool (*which)(const char *tunnel));
/* The tunnel an IKE SA record (as ha.c syncs it) is of: name, or NULL if none. */
const char *ikd_keep_tunnel(const void *rec, uint32_t len, char name[DPVPN_NAME_LEN]);
/* Operator requests: show ike (a new object), initiate / terminate / rekey NAME. */
enum { IKD_TERMINATE, IKD_INITIATE, IKD_REKEY, IKD_REKEY_IKE };
json_t *ikd_show(char *err, size_t err_len);
int ikd_command(const char *name, int op, char *msg, size_t len);
/*
 * show tunnels: keying = ike tunnel name's IKE as enum ctl_ike (ctl_show.h):
 * its IKE SA's state ("none": none now) and, unless up, why in words.
 */
int ikd_tunnel(const char *name, char *state, size_t state_len, char *detail,
	       size_t detail_len);
/*
 * show tunnels: the tunnels of connection conn's remote-access clients
 * ("CONN/VIP"), each to fn; what IKE negotiated for tunnel name (a
 * connection's or a client's), {"ike":ALGS,"esp":ALGS,"clients":[..]|null}
 * or {"ike","esp","client":CLIENT}, as ctl_proto.h has them; NULL: not IKE's.
 */
void ikd_client_tunnels(const char *conn, ctl_tunnel_fn fn, void *arg);
json_t *ikd_tunnel_json(const char *name);

#endif /* DPVPN_CONTROL_IKD_H */
