/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ikd_child.c - the CHILD_SAs the engine negotiates, into the dataplane
 * (install.c): a new one installed as its tunnel's SA pair and policy (a
 * remote-access client's as a tunnel of its own), a rekey's pair installed
 * and switched to at the old one's Delete (make before break), one that
 * ends removed; an IKE SA's end, and the rekey of a soft lifetime.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "ha.h"
#include "ike_sa.h"
#include "ikd.h"
#include "ikd_int.h"
#include "install.h"
#include "mono.h"

#define IKD_RETRY_MS		5000	/* start = yes: initiate again this long after an end */
#define IKD_OLD_IN_GRACE_MS	2000	/* a replaced inbound SA lives on this long */

/* IKE's dataplane installs of this ikd_input pass: one batch (install.c) */
static void batch_open(void)
{
	if (!ikd.batch && inst_batch_begin(ikd.dp, ikd.seq, ikd.verbose) == 0)
		ikd.batch = true;
}

void ikd_batch_close(void)
{
	if (ikd.batch && inst_batch_commit(ikd.dp, ikd.seq, ikd.verbose) != 0)
		fprintf(stderr, "dpvpnd: IKE: the batch of CHILD_SA installs: %s\n", ikd.dp->err);
	ikd.batch = false;
}

/* ---- callbacks of the state machine ---- */

static void child_up(struct ikd_conn *c, const char *conn, const struct ike_child *ch);

/* What a CHILD_SA negotiated, for show tunnels and show ike. */
static struct ike_alg_set child_algs(const struct ike_child *ch)
{
	return (struct ike_alg_set){ .encr = ch->encr, .encr_bits = ch->encr_bits,
				     .integ = ch->integ, .dh = ch->dh, .esn = ch->esn };
}

void ikd_on_child_up(void *opaque, const char *conn, const struct ike_child *ch)
{
	struct ikd_conn *c = ikd_find_conn(conn);

	(void)opaque;
	if (c == NULL)
		return;
	if (c->tpl.ra.any) {
		c = ikd_client_for(c, ch);
		if (c == NULL) {
			fprintf(stderr, "dpvpnd: tunnel %s: client: out of memory\n", conn);
			return;
		}
		bool was_up = c->up;

		child_up(c, c->tpl.name, ch);
		if (!c->up) {		/* not installed */
			ikd_client_gone(c);
		} else if (!was_up) {
			ikd_client_of(c)->up_ms = mono_ms();
			ikd_client_log(ikd_client_of(c), true);
		}
		return;
	}
	child_up(c, conn, ch);
}

/* c is up on ch's SAs, as negotiated into t. */
static void set_up(struct ikd_conn *c, const struct cfg_tunnel *t, const struct ike_child *ch)
{
	c->up = true;
	c->spi_in = ch->spi_in;
	c->spi_out = ch->spi_out;
	c->lts = t->local_ts;
	c->rts = t->remote_ts;
	memcpy(c->more_lts, t->more_lts, sizeof(c->more_lts));
	memcpy(c->more_rts, t->more_rts, sizeof(c->more_rts));
	c->n_more_lts = t->n_more_lts;
	c->n_more_rts = t->n_more_rts;
	c->esp = child_algs(ch);
	c->ike = ch->ike_alg;
}

static void child_up(struct ikd_conn *c, const char *conn, const struct ike_child *ch)
{
	struct cfg_tunnel t;

	ikd_negotiated(&t, c, ch);
	if (!c->up && ikd_orphans_replaced(c, &t)) {
		set_up(c, &t, ch);
		explicit_bzero(&t, sizeof(t));
		return;
	}
	if (!c->up)
		batch_open();	/* a new tunnel: committed at the pass's end */
	else
		ikd_batch_close();	/* a rekey: as before, on its own */
	if (!c->up && inst_tunnel_up(ikd.dp, &t, ikd.verbose, ikd.seq) == 0) {
		set_up(c, &t, ch);
		fprintf(stderr, "dpvpnd: tunnel %s: IKE CHILD_SA up, SPIs 0x%08x in, 0x%08x out\n",
			conn, ch->spi_in, ch->spi_out);
	} else if (c->up && !c->has_next2 &&
		   inst_tunnel_sas(ikd.dp, &t, ikd.verbose, ikd.seq) == 0) {
		/*
		 * A rekey: the new SAs wait, the policy stays, until the old one's
		 * Delete.  Crossing rekeys make two; the redundant one goes first.
		 */
		*(c->has_next ? &c->next2_in : &c->next_in) = ch->spi_in;
		*(c->has_next ? &c->next2_out : &c->next_out) = ch->spi_out;
		*(c->has_next ? &c->has_next2 : &c->has_next) = true;
		c->esp = child_algs(ch);	/* (the new pair's, as it will be) */
		c->ike = ch->ike_alg;
		fprintf(stderr, "dpvpnd: tunnel %s: IKE CHILD_SA rekeyed, new SPIs 0x%08x in, "
			"0x%08x out\n", conn, ch->spi_in, ch->spi_out);
	}
	explicit_bzero(&t, sizeof(t));
}

/* The pending pair went (used or removed): the other one of crossing rekeys, if any, is. */
static void next2_up(struct ikd_conn *c)
{
	c->has_next = c->has_next2;
	c->next_in = c->next2_in;
	c->next_out = c->next2_out;
	c->has_next2 = false;
}

/*
 * The old CHILD_SA of a rekey is deleted: traffic moves to the new one in one
 * policy change, the old outbound SA goes, the old inbound one a grace period
 * later (the peer may have sent on it until it saw the Delete).  Both ends
 * had the new inbound SA before either sends on it: each installed the pair
 * at the exchange, and moves only at the Delete that follows it.
 */
static void replaced(struct ikd_conn *c, struct cfg_tunnel *t)
{
	uint32_t old_in = c->spi_in, old_out = c->spi_out;

	t->local_ts = c->lts;
	t->remote_ts = c->rts;
	memcpy(t->more_lts, c->more_lts, sizeof(c->more_lts));
	memcpy(t->more_rts, c->more_rts, sizeof(c->more_rts));
	t->n_more_lts = c->n_more_lts;
	t->n_more_rts = c->n_more_rts;
	t->out.spi = c->next_out;
	if (inst_policy_switch(ikd.dp, t, ikd.verbose) != 0)
		fprintf(stderr, "dpvpnd: tunnel %s: rekey: policy not moved\n", t->name);
	inst_sa_del(ikd.dp, t, old_out, DPVPN_DIR_OUT, ikd.verbose);
	c->spi_in = c->next_in;
	c->spi_out = c->next_out;
	next2_up(c);
	c->rekeys++;
	for (int i = 0; i < IKD_LATER_MAX; i++) {
		if (c->later[i].spi == 0) {
			c->later[i].spi = old_in;
			c->later[i].at = mono_ms() + IKD_OLD_IN_GRACE_MS;
			return;
		}
	}
	inst_sa_del(ikd.dp, t, old_in, DPVPN_DIR_IN, ikd.verbose);	/* no room: now */
}

static void child_down(struct ikd_conn *c, const char *conn, uint32_t spi_in, uint32_t spi_out);

void ikd_on_child_down(void *opaque, const char *conn, uint32_t spi_in, uint32_t spi_out,
		       const struct ike_prefix *ts_remote)
{
	struct ikd_conn *c = ikd_find_conn(conn), *cc;

	(void)opaque;
	if (ikd.closing)
		return;		/* ikd_close: the SAs stay, the next dpvpnd takes them up */
	ikd_batch_close();		/* removals publish at once: what was added first */
	if (c == NULL)
		return;
	if (!c->tpl.ra.any) {
		child_down(c, conn, spi_in, spi_out);
		return;
	}
	/* the client by its lease (the CHILD_SA's remote selector), no scan */
	cc = ts_remote != NULL ? ikd_client_find(conn, ts_remote) : NULL;
	if (cc == NULL || (spi_in != cc->spi_in && !(cc->has_next && spi_in == cc->next_in) &&
			   !(cc->has_next2 && spi_in == cc->next2_in)))
		return;
	child_down(cc, cc->tpl.name, spi_in, spi_out);
	if (!cc->up)
		ikd_client_gone(cc);
}

static void child_down(struct ikd_conn *c, const char *conn, uint32_t spi_in, uint32_t spi_out)
{
	struct cfg_tunnel t;

	t = c->tpl;
	if (c->up && c->has_next && spi_in == c->spi_in) {
		replaced(c, &t);
		return;
	}
	t.in.spi = spi_in;
	t.out.spi = spi_out;
	inst_tunnel_down(ikd.dp, &t, ikd.verbose);
	if (c->has_next2 && spi_in == c->next2_in) {
		c->has_next2 = false;
	} else if (c->has_next && spi_in == c->next_in) {
		next2_up(c);
	} else if (c->spi_in == spi_in) {
		c->up = false;
		for (int i = 0; i < 2 && c->has_next; i++) {	/* rekeys' pairs go too */
			t.in.spi = c->next_in;
			t.out.spi = c->next_out;
			inst_tunnel_down(ikd.dp, &t, ikd.verbose);
			next2_up(c);
		}
	}
	fprintf(stderr, "dpvpnd: tunnel %s: IKE CHILD_SA 0x%08x/0x%08x removed\n", conn, spi_in,
		spi_out);
}

void ikd_on_ike_down(void *opaque, const char *conn, const char *why)
{
	struct ikd_conn *c = NULL;

	(void)opaque;
	if (ikd.closing)
		return;
	fprintf(stderr, "dpvpnd: tunnel %s: IKE SA ended: %s\n", conn, why);
	while ((c = ikd_conn_family(conn, c)) != NULL) {	/* it and its ike-sa tunnels */
		c->starting = false;	/* out of the start window */
		free(c->last_end);
		c->last_end = strdup(why);	/* NULL (no memory): said as not known */
		if (c->tpl.ike.start && !c->held && ha_owns(c->tpl.name))
			c->retry_at = mono_ms() + IKD_RETRY_MS;
	}
}

/*
 * ike_sa_import brought an IKE SA back with this CHILD_SA: its SAs are in the
 * dataplane as the last dpvpnd installed them; the tunnel (a client's, for
 * remote = %any) is up on them, as after child_up.
 */
void ikd_on_child_kept(void *opaque, const char *conn, const struct ike_child *ch)
{
	struct ikd_conn *conf = ikd_find_conn(conn), *c = conf;
	struct cfg_tunnel t;

	(void)opaque;
	if (c != NULL && c->tpl.ra.any)
		c = ikd_client_for(c, ch);
	if (c == NULL)
		return;
	if (c != conf) {		/* a client: said as at its start */
		ikd_client_of(c)->up_ms = mono_ms();
		ikd_client_log(ikd_client_of(c), true);
	}
	ikd_negotiated(&t, c, ch);		/* (no keys in ch) */
	set_up(c, &t, ch);
	explicit_bzero(&t, sizeof(t));
	c->retry_at = 0;		/* start = yes: up already */
	ikd_claim(ch->spi_in, DPVPN_DIR_IN);
	ikd_claim(ch->spi_out, DPVPN_DIR_OUT);
	fprintf(stderr, "dpvpnd: tunnel %s: IKE CHILD_SA taken up again, SPIs 0x%08x in, "
		"0x%08x out\n", c->tpl.name, ch->spi_in, ch->spi_out);
}

/*
 * The dataplane says an SA of tunnel name reached a soft lifetime (bytes,
 * packets or seconds): for a keying = ike tunnel's current CHILD_SA, a
 * rekey.  1 if it was one of ours (rekeying, or already), 0 if not IKE's.
 */
int ikd_soft_lifetime(const char *name, uint32_t spi)
{
	struct ikd_conn *c = ikd.ctx ? ikd_find_conn(name) : NULL, *cl = NULL;
	int rc;

	if (c == NULL)
		c = cl = ikd_client_by_name(name);	/* its section's name is every client's */
	if (c == NULL || !c->up || (spi != c->spi_in && spi != c->spi_out))
		return c != NULL;
	rc = cl ? ike_child_rekey_spi(ikd.ctx, c->spi_in, mono_ms()) :
		  ike_child_rekey(ikd.ctx, name, mono_ms());
	fprintf(stderr, "dpvpnd: tunnel %s: SA 0x%08x soft lifetime: %s\n", name, spi,
		rc == 0 ? "rekeying" : rc == -EBUSY ? "a rekey is under way" : strerror(-rc));
	return 1;
}

size_t ikd_rekey_all(bool (*which)(const char *tunnel))
{
	uint64_t now = mono_ms();
	size_t n = 0;

	for (size_t i = 0; ikd.ctx != NULL && i < ikd.n_conns; i++)
		if (ikd.conns[i].up && !ikd.conns[i].tpl.ra.any && which(ikd.conns[i].tpl.name) &&
		    ike_child_rekey(ikd.ctx, ikd.conns[i].tpl.name, now) == 0)
			n++;
	for (size_t i = 0; ikd.ctx != NULL && i < ikd.n_clients; i++)
		if (ikd.clients[i].c.up && which(ikd.clients[i].c.tpl.name) &&
		    ike_child_rekey_spi(ikd.ctx, ikd.clients[i].c.spi_in, now) == 0)
			n++;
	return n;
}
