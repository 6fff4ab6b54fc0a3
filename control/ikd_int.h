/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ikd_int.h - what the files of dpvpnd's IKE share, and nothing else
 * includes (ikd.h is the API dpvpnd calls): the connections and clients,
 * the one state of the process (ikd), and the functions one file calls in
 * another.  The files, each on a concern:
 *   ikd.c       the IKE channel to the dataplane: open, close, receive,
 *               send, timers; the engine's context and its callbacks' table
 *   ikd_conn.c  connections: the config's tunnels as the engine's, their
 *               and the clients' tables, reload
 *   ikd_child.c CHILD_SAs the engine negotiates, installed into the
 *               dataplane, rekeyed and removed
 *   ikd_keep.c  IKE SAs kept in the dataplane across a restart of dpvpnd,
 *               and the orphans left when one is not taken up again
 *   ikd_show.c  show ike, show tunnels' IKE part, initiate / terminate / rekey
 */
#ifndef DPVPN_CONTROL_IKD_INT_H
#define DPVPN_CONTROL_IKD_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "dp_client.h"
#include "idx.h"
#include "ike_sa.h"
#include "seqstate.h"

#define IKD_LATER_MAX		16

struct ikd_conn {
	struct cfg_tunnel tpl;		/* the config's tunnel, keys (and PSK) wiped */
	/* auth = pubkey: what ike_conn_cfg points to, freed after ike_conn_remove */
	struct ike_pki_cred *cred;
	struct ike_pki_trust *trust;
	uint64_t retry_at;		/* start = yes: when to initiate again; 0: not due */
	bool starting;			/* ikd_tick initiated it: in the start window until
					 * its CHILD_SA is up or its IKE SA ends */
	bool up;			/* a CHILD_SA installed */
	bool held;			/* terminated by the operator: not started again */
	uint32_t spi_in, spi_out;	/* the CHILD_SA the outbound policy points to */
	bool has_next;			/* a rekey's new CHILD_SA installed, not yet used */
	uint32_t next_in, next_out;
	/* crossing rekeys (RFC 7296 2.8.1): the other new one, until one goes */
	bool has_next2;
	uint32_t next2_in, next2_out;
	uint64_t rekeys;
	uint32_t by_name;		/* ikd.conns' index (idx): the next of its bucket */
	uint32_t by_parent;		/* ike-sa children by their parent's name: next */
	char *last_end;			/* why its last IKE SA ended (show tunnels); malloc'd */
	struct ike_alg_set esp, ike;	/* the installed CHILD_SA's algorithms, its IKE SA's */
	uint8_t digest[32];		/* its config (inst_tunnel_digest): kept with its IKE SA */
	struct cfg_prefix lts, rts;	/* the selectors as narrowed: the policy's */
	struct cfg_prefix more_lts[CFG_TS_MAX - 1], more_rts[CFG_TS_MAX - 1];	/* lists */
	uint8_t n_more_lts, n_more_rts;
	struct {			/* replaced inbound SAs, removed after a grace period */
		uint32_t spi;
		uint64_t at;
	} later[IKD_LATER_MAX];
};

/*
 * remote = %any: one per client's CHILD_SA, a tunnel of its own in the
 * dataplane named "CONN/VIP" (its outer address the client's, remote-ts its
 * lease), made at child_up and gone at its child_down (the IKE SA's end, the
 * connection's removal at reload).
 */
struct ikd_client {
	char conn[DPVPN_NAME_LEN];	/* the config's tunnel */
	struct ike_prefix vip;
	struct ike_addr remote;		/* the client's outer address and IKE port */
	struct ike_ident id;		/* its identity (IDi), from its child_up */
	uint64_t up_ms;			/* when its tunnel was installed (mono_ms) */
	uint32_t by_lease;		/* ikd.clients' index: the next of its bucket */
	struct ikd_conn c;		/* tpl: the tunnel's, with the name and remote above */
};

/*
 * ikd.conns by name and ikd.clients by (connection, lease): at 10 000 of them a
 * scan per IKE callback was what set-up cost (perf/ikebench.py).  Chained
 * through the entries' by_name / by_lease; an entry is its array index + 1
 * (0: none), and an entry moved by a swap-remove is relinked (idx.h).
 */

/* An SA of the dataplane by SPI (host order) and direction; an orphan by name too. */
struct ikd_sa_ref {
	uint32_t spi;
	uint8_t dir;
};

struct ikd_orphan {
	char name[DPVPN_NAME_LEN];
	struct ikd_sa_ref sa;
};

/* dpvpnd's IKE, one per process (ikd.c) */
struct ikd_state {
	struct ike_ctx *ctx;
	struct dp_client chan;		/* the IKE channel */
	struct dp_client *dp;		/* installs */
	struct seqstate *seq;
	bool verbose;
	struct cfg_port *ports;		/* copies, for the port of a local address */
	size_t n_ports;
	struct cfg_ha_vip vips[CFG_HA_VIP_MAX];	/* [ha] virtual addresses: theirs too */
	size_t n_vips;
	struct ikd_conn *conns;
	size_t n_conns, cap_conns;
	struct ikd_client *clients;	/* remote access */
	size_t n_clients, cap_clients;
	uint64_t tx_refused, tx_failed, rx_bad;
	char last_tx_error[160];
	struct idx conn_idx, client_idx;
	struct idx parent_idx;		/* conns with an ike-sa parent, by its name */
	bool batch;			/* inst_batch_begin'ed in this ikd_input pass */
	uint64_t next_tick;		/* ikd_tick's next walk (mono_ms) */
	size_t start_window;		/* initiations in flight at most (ikd.c); 0: any */
	bool start_waiting;		/* tunnels due wait for room in it */
	uint64_t next_start;		/* then looked at again at (mono_ms) */
	/* IKE SAs kept in the dataplane across restarts (ikd_keep.c) */
	bool closing;			/* ikd_close: the SAs stay in the dataplane */
	uint64_t keep_failed;
	struct ikd_sa_ref *claimed;	/* what IKE SAs taken up hold, sorted */
	size_t n_claimed, cap_claimed;
	struct ikd_orphan *orphans;	/* what none holds: forwards until replaced */
	size_t n_orphans;
	uint64_t orphans_until;
};

extern struct ikd_state ikd;

/* ikd.c */
int ikd_start(const char *dp_socket, const struct cfg *cfg);

/* ikd_conn.c */
struct ikd_conn *ikd_find_conn(const char *name);
/* ikd_keep.c: a quiet KEEP_SET or KEEP_DEL the dataplane refused */
void ikd_keep_refused(uint16_t type, int status, const char *err);
/* conn, then the ike-sa tunnels on its IKE SA: c NULL for the first, NULL past the end */
struct ikd_conn *ikd_conn_family(const char *conn, struct ikd_conn *c);
struct ikd_conn *ikd_client_by_name(const char *name);
struct ikd_conn *ikd_client_for(const struct ikd_conn *parent, const struct ike_child *ch);
struct ikd_client *ikd_client_of(struct ikd_conn *c);
void ikd_client_log(const struct ikd_client *cl, bool up);
void ikd_client_gone(struct ikd_conn *c);
int ikd_add_conns(const struct cfg *cfg);
void ikd_to_ike_addr(struct ike_addr *a, const struct cfg_addr *c, uint16_t port);
void ikd_negotiated(struct cfg_tunnel *t, const struct ikd_conn *c, const struct ike_child *ch);

/* ikd_child.c: the engine's callbacks (ike_ops) but send and log, and the batch */
void ikd_on_child_up(void *opaque, const char *conn, const struct ike_child *ch);
void ikd_on_child_down(void *opaque, const char *conn, uint32_t spi_in, uint32_t spi_out,
		       const struct ike_prefix *ts_remote);
struct ikd_conn *ikd_client_find(const char *conn, const struct ike_prefix *vip);
void ikd_on_ike_down(void *opaque, const char *conn, const char *why);
void ikd_on_child_kept(void *opaque, const char *conn, const struct ike_child *ch);
void ikd_batch_close(void);

/* ikd_keep.c */
void ikd_keep_take_up(void);
int ikd_keep_restore(size_t *ok, size_t *seen);
void ikd_keep_flush(void);
void ikd_claim(uint32_t spi, uint8_t dir);
bool ikd_orphans_replaced(struct ikd_conn *c, struct cfg_tunnel *t);
void ikd_orphans_expire(uint64_t now);

#endif /* DPVPN_CONTROL_IKD_INT_H */
