/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ikd_show.c - dpvpnd's IKE for the operator (ctl_show.h, ctl_proto.h):
 * show ike (IKE SAs, clients, counters), initiate / terminate / rekey NAME,
 * and what show tunnels says of a keying = ike tunnel.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "ctl_show.h"
#include "ha.h"
#include "ike_sa.h"
#include "ikd.h"
#include "ikd_int.h"
#include "mono.h"

/* ---- operator ---- */

static json_t *addr_json(const struct ike_addr *a)
{
	char s[INET6_ADDRSTRLEN];

	inet_ntop(a->family == AF_INET6 ? AF_INET6 : AF_INET, a->ip, s, sizeof(s));
	return json_sprintf("%s:%u", s, a->port);
}

static json_t *spi_json(const uint8_t *spi)
{
	return json_sprintf("%02x%02x%02x%02x%02x%02x%02x%02x", spi[0], spi[1], spi[2], spi[3],
			    spi[4], spi[5], spi[6], spi[7]);
}

static json_t *ike_prefix_json(const struct ike_prefix *p)
{
	char s[INET6_ADDRSTRLEN];

	inet_ntop(p->family == AF_INET6 ? AF_INET6 : AF_INET, p->addr, s, sizeof(s));
	return json_sprintf("%s/%u", s, p->plen);
}

static json_t *prefixes_json(const struct ike_prefix *p, unsigned n)
{
	json_t *a = json_array();

	for (unsigned i = 0; i < n; i++)
		json_array_append_new(a, ike_prefix_json(&p[i]));
	return a;
}

/* Algorithms as strongSwan's proposal text ("aes128gcm16-prfsha256-x25519"). */
static json_t *proposal_json(const struct ike_alg_set *a)
{
	char s[128];

	if (a->encr == 0)
		return json_null();
	ike_proposal_text(s, sizeof(s), a);
	return json_string(s);
}

static json_t *word_json(enum ike_alg_kind kind, uint16_t id, uint16_t bits)
{
	const char *w = id ? ike_alg_word(kind, id, bits) : NULL;

	return w ? json_string(w) : json_null();
}

/* {"proposal":TEXT,"encr":{"id":N,"name":..},...}: the names with the IANA numbers. */
static json_t *algs_json(const struct ike_alg_set *a)
{
	return json_pack("{s:o,s:{s:i,s:i,s:o},s:{s:i,s:o},s:{s:i,s:o},s:{s:i,s:o},s:b}",
		"proposal", proposal_json(a),
		"encr", "id", a->encr, "bits", a->encr_bits,
			"name", word_json(IKE_ALG_ENCR, a->encr, a->encr_bits),
		"integ", "id", a->integ, "name", word_json(IKE_ALG_INTEG, a->integ, 0),
		"prf", "id", a->prf, "name", word_json(IKE_ALG_PRF, a->prf, 0),
		"dh", "id", a->dh, "name", word_json(IKE_ALG_DH, a->dh, 0),
		"esn", a->esn);
}

static struct ike_alg_set ike_algs(const struct ike_sa_status *st)
{
	return (struct ike_alg_set){ .encr = st->encr, .encr_bits = st->encr_bits,
				     .integ = st->integ, .prf = st->prf, .dh = st->dh };
}

/* Every CHILD_SA of an IKE SA (ctl_proto.h show ike "children"). */
static json_t *children_json(const struct ike_sa_status *st)
{
	uint64_t now = mono_ms();
	json_t *a = json_array();

	for (unsigned i = 0; i < st->n_children; i++) {
		const struct ike_child_status *c = &st->children[i];

		json_array_append_new(a, c->up ? json_pack(
			"{s:s,s:b,s:o,s:o,s:i,s:o,s:o,s:I,s:I,s:o}", "name", c->conn, "up", 1,
			"spi_in", json_sprintf("0x%08x", c->spi_in),
			"spi_out", json_sprintf("0x%08x", c->spi_out), "dh", c->dh,
			"local_ts", prefixes_json(c->ts_local, c->n_ts_local),
			"remote_ts", prefixes_json(c->ts_remote, c->n_ts_remote),
			"rekeys", (json_int_t)c->rekeys,
			"age_s", (json_int_t)(now > c->up_ms ? (now - c->up_ms) / 1000 : 0),
			"proposal", proposal_json(&c->alg)) :
			json_pack("{s:s,s:b}", "name", c->conn, "up", 0));
	}
	return a;
}

static void walk_one(void *arg, const struct ike_sa_status *st)
{
	json_t *child = st->child_up ?
		json_pack("{s:o,s:o,s:i}", "spi_in", json_sprintf("0x%08x", st->child_spi_in),
			  "spi_out", json_sprintf("0x%08x", st->child_spi_out),
			  "dh", st->child_dh) : json_null();

	json_array_append_new(arg, json_pack(
		"{s:s,s:s,s:s,s:o,s:o,s:o,s:o,s:i,s:i,s:b,s:b,s:o,s:I,s:I,s:I}",
		"name", st->conn, "state", ike_state_name(st->state),
		"role", st->initiator ? "initiator" : "responder",
		"spi_i", spi_json(st->spi_i), "spi_r", spi_json(st->spi_r),
		"local", addr_json(&st->local), "remote", addr_json(&st->remote),
		"encr_bits", st->encr_bits, "dh", st->dh,
		"nat_local", st->nat_local, "nat_remote", st->nat_remote, "child", child,
		"rx", (json_int_t)st->rx, "tx", (json_int_t)st->tx,
		"retransmits", (json_int_t)st->retransmits));
	json_object_set_new(json_array_get(arg, json_array_size(arg) - 1), "child_rekeys",
			    json_integer((json_int_t)st->child_rekeys));
	json_object_set_new(json_array_get(arg, json_array_size(arg) - 1), "udp_encap",
			    json_boolean(st->udp_encap));
	json_object_set_new(json_array_get(arg, json_array_size(arg) - 1), "encr",
			    json_integer(st->encr));
	json_object_set_new(json_array_get(arg, json_array_size(arg) - 1), "integ",
			    json_integer(st->integ));
	json_object_set_new(json_array_get(arg, json_array_size(arg) - 1), "prf",
			    json_integer(st->prf));
	json_object_set_new(json_array_get(arg, json_array_size(arg) - 1), "ike_rekeys",
			    json_integer((json_int_t)st->ike_rekeys));
	json_object_set_new(json_array_get(arg, json_array_size(arg) - 1), "rekey_collisions",
			    json_pack("{s:I,s:I,s:I}", "total", (json_int_t)st->rekey_collisions,
				      "won", (json_int_t)st->rekey_won,
				      "lost", (json_int_t)st->rekey_lost));
	json_object_set_new(json_array_get(arg, json_array_size(arg) - 1), "children",
			    children_json(st));
	struct ike_alg_set algs = ike_algs(st);

	json_object_set_new(json_array_get(arg, json_array_size(arg) - 1), "proposal",
			    proposal_json(&algs));
	json_object_set_new(json_array_get(arg, json_array_size(arg) - 1), "algorithms",
			    algs_json(&algs));
}

/* An IKE identity as text: "fqdn:NAME", "email:ADDR", an address, a DN, "keyid:HEX". */
static json_t *ident_json(const struct ike_ident *id)
{
	char s[IKE_IDENT_TEXT_MAX];

	ike_ident_text(s, sizeof(s), id->type, id->data, id->len);
	return json_string(s);
}

static int sa_info_cmp(const void *a, const void *b)
{
	const struct dpvpn_sa_info *x = a, *y = b;
	uint32_t sx = ntohl(x->spi), sy = ntohl(y->spi);

	if (x->dir != y->dir)
		return x->dir < y->dir ? -1 : 1;
	return sx < sy ? -1 : sx > sy;
}

/* The bytes of the dataplane's SAs (sorted) with this direction and SPI. */
static uint64_t sa_bytes(const struct dpvpn_sa_info *sas, uint32_t n, uint8_t dir, uint32_t spi)
{
	struct dpvpn_sa_info key = { .dir = dir, .spi = htonl(spi) };
	const struct dpvpn_sa_info *at = n ? bsearch(&key, sas, n, sizeof(*sas), sa_info_cmp) :
				       NULL;

	return at != NULL ? at->bytes : 0;
}

/*
 * One client (show ike "clients", show tunnels "clients"); sas: the
 * dataplane's, sorted, for its bytes (NULL: without bytes).
 */
static json_t *client_json(const struct ikd_client *cl, const struct dpvpn_sa_info *sas,
			   uint32_t n_sas)
{
	char vip[INET6_ADDRSTRLEN];
	uint64_t now = mono_ms();
	json_t *o;

	inet_ntop(cl->vip.family == AF_INET6 ? AF_INET6 : AF_INET, cl->vip.addr, vip, sizeof(vip));
	o = json_pack("{s:s,s:s,s:o,s:o,s:o,s:o,s:I,s:I,s:I}", "name", cl->c.tpl.name,
		"conn", cl->conn, "outer", addr_json(&cl->remote),
		"vip", json_sprintf("%s/%u", vip, cl->vip.plen),
		"spi_in", json_sprintf("0x%08x", cl->c.spi_in),
		"spi_out", json_sprintf("0x%08x", cl->c.spi_out),
		"rekeys", (json_int_t)cl->c.rekeys,
		"bytes_in", (json_int_t)sa_bytes(sas, n_sas, DPVPN_DIR_IN, cl->c.spi_in),
		"bytes_out", (json_int_t)sa_bytes(sas, n_sas, DPVPN_DIR_OUT, cl->c.spi_out));
	if (sas == NULL) {	/* show tunnels' client tunnel: its in and out say it */
		json_object_del(o, "bytes_in");
		json_object_del(o, "bytes_out");
	}
	json_object_set_new(o, "identity", cl->id.type ? ident_json(&cl->id) : json_null());
	json_object_set_new(o, "proposal", proposal_json(&cl->c.esp));
	json_object_set_new(o, "since_s", json_integer((json_int_t)(now > cl->up_ms ?
					  (now - cl->up_ms) / 1000 : 0)));
	return o;
}

/* The dataplane's SAs sorted for sa_bytes (none: *n 0); free *sas. */
static void sorted_sas(struct dpvpn_sa_info **sas, uint32_t *n)
{
	*sas = NULL;
	*n = 0;
	if (ikd.n_clients > 0 && dp_dump(ikd.dp, DPVPN_MSG_SHOW_SA, sizeof(**sas), (void **)sas,
				       n) != 0)
		*n = 0;
	if (*n > 0)
		qsort(*sas, *n, sizeof(**sas), sa_info_cmp);
}

/* remote = %any: the clients' tunnels (ctl_proto.h show ike "clients"); conn NULL: all. */
static json_t *clients_json(const char *conn)
{
	struct dpvpn_sa_info *sas;
	uint32_t n_sas;
	json_t *a = json_array();

	/* bytes: the dataplane's counters (raw, as the SA's own since its install) */
	sorted_sas(&sas, &n_sas);
	for (size_t i = 0; i < ikd.n_clients; i++)
		if (conn == NULL || !strcmp(ikd.clients[i].conn, conn))
			json_array_append_new(a, client_json(&ikd.clients[i], sas, n_sas));
	free(sas);
	return a;
}

json_t *ikd_show(char *err, size_t err_len)
{
	const struct ike_stats *s;
	json_t *sas, *rej, *pki, *fdrop, *res;

	if (ikd.ctx == NULL) {
		snprintf(err, err_len, "%s", ha_configured() && !ha_master() ?
			 "no IKE: this node is an HA backup (its master runs IKE: show ha)" :
			 "no IKE: no tunnel has keying = ike");
		return NULL;
	}
	s = ike_get_stats(ikd.ctx);
	sas = json_array();
	rej = json_object();
	ike_sa_walk(ikd.ctx, walk_one, sas);
	for (int r = 0; r < IKE_REJ_COUNT; r++)
		json_object_set_new(rej, ike_reject_name((enum ike_reject)r),
				    json_integer((json_int_t)s->reject[r]));
	/* why auth-fail, with certificates (a breakdown: not more rejects) */
	pki = json_object();
	for (int f = IKE_PKI_NONE + 1; f < IKE_PKI_FAIL_N; f++)
		json_object_set_new(pki, ike_pki_fail_name((enum ike_pki_fail)f),
				    json_integer((json_int_t)s->pki_fail[f]));
	fdrop = json_object();
	for (int d = 0; d < IKE_FRAG_DROP_N; d++)
		json_object_set_new(fdrop, ike_frag_drop_name((enum ike_frag_drop)d),
				    json_integer((json_int_t)s->frag_drop[d]));
	res = json_pack("{s:o,s:o,s:{s:I,s:I,s:I,s:I,s:I,s:I,s:o,s:o,s:{s:I,s:I,s:I,s:o}},"
			 "s:{s:b,s:I,s:I,s:I}}",
			 "sas", sas, "clients", clients_json(NULL),
			 "stats", "rx", (json_int_t)s->rx, "tx", (json_int_t)s->tx,
			 "retransmits", (json_int_t)s->retransmits,
			 "resent_responses", (json_int_t)s->resent_responses,
			 "late_responses", (json_int_t)s->late_responses,
			 "half_open_expired", (json_int_t)s->half_open_expired, "rejected", rej,
			 "auth_fail_cert", pki,
			 "fragments", "tx", (json_int_t)s->frag_tx, "rx", (json_int_t)s->frag_rx,
			 "reassembled", (json_int_t)s->frag_reassembled, "dropped", fdrop,
			 "channel", "open", ikd.chan.fd >= 0,
			 "tx_refused", (json_int_t)ikd.tx_refused,
			 "tx_failed", (json_int_t)ikd.tx_failed, "rx_bad", (json_int_t)ikd.rx_bad);
	/* remote access: clients refused an address (pool exhausted, no CP request) */
	json_object_set_new(json_object_get(res, "stats"), "pool_exhausted",
			    json_integer((json_int_t)s->pool_exhausted));
	json_object_set_new(json_object_get(res, "stats"), "cp_missing",
			    json_integer((json_int_t)s->cp_missing));
	json_object_set_new(json_object_get(res, "stats"), "after_end",
			    json_integer((json_int_t)s->after_end));
	json_object_set_new(json_object_get(res, "stats"), "initial_contact",
			    json_integer((json_int_t)s->initial_contact));
	return res;
}

/*
 * rekey / terminate of a remote-access client's tunnel (CONN/VIP): its
 * CHILD_SA rekeyed, or its IKE SA ended, found by SPI; the client initiates
 * and rekeys its IKE SA itself.
 */
static int client_command(const struct ikd_conn *c, int op, char *msg, size_t len)
{
	int rc = op == IKD_REKEY ? ike_child_rekey_spi(ikd.ctx, c->spi_in, mono_ms()) :
		 op == IKD_TERMINATE ? ike_terminate_spi(ikd.ctx, c->spi_in, mono_ms()) : -EPERM;

	if (rc != 0) {
		snprintf(msg, len, "tunnel %s: %s", c->tpl.name, rc == -EPERM ?
			 "a remote-access client's: it initiates and rekeys its IKE SA itself "
			 "(rekey and terminate are ours)" : rc == -ENOENT ? "no IKE SA" :
			 rc == -EBUSY ? "a rekey is under way" : rc == -EALREADY ?
			 "being deleted" : strerror(-rc));
		return -1;
	}
	snprintf(msg, len, "tunnel %s: %s", c->tpl.name, op == IKD_REKEY ? "rekeying" :
		 "terminating");
	return 0;
}

int ikd_command(const char *name, int op, char *msg, size_t len)
{
	static const char *const done[] = { "terminating", "initiating", "rekeying",
					    "rekeying the IKE SA" };
	uint64_t now = mono_ms();
	int rc;

	if (ikd.ctx != NULL && ikd_find_conn(name) == NULL && ikd_client_by_name(name) != NULL)
		return client_command(ikd_client_by_name(name), op, msg, len);
	if (ikd.ctx == NULL || ikd_find_conn(name) == NULL) {
		snprintf(msg, len, "no IKE tunnel \"%.64s\"", name);
		return -1;
	}
	rc = op == IKD_INITIATE ? ike_initiate(ikd.ctx, name, now) :
	     op == IKD_REKEY ? ike_child_rekey(ikd.ctx, name, now) :
	     op == IKD_REKEY_IKE ? ike_sa_rekey(ikd.ctx, name, now) :
	     ike_terminate(ikd.ctx, name, now);
	if (rc != 0) {
		snprintf(msg, len, "tunnel %s: %s", name, rc == -EALREADY ? "already negotiating or up"
			 : rc == -ENOENT ? "no IKE SA" : rc == -EBUSY ? "a rekey is under way"
			 : strerror(-rc));
		return -1;
	}
	if (op == IKD_INITIATE || op == IKD_TERMINATE) {
		ikd_find_conn(name)->held = op == IKD_TERMINATE;	/* on purpose: not again */
		ikd_find_conn(name)->retry_at = 0;
	}
	snprintf(msg, len, "tunnel %s: %s", name, done[op]);
	return 0;
}

/* ---- show tunnels ---- */

/* The IKE SA of a connection that tells most: established, else the newest. */
struct newest {
	const char *conn;
	bool found;
	struct ike_sa_status st;
};

static void newest_one(void *arg, const struct ike_sa_status *st)
{
	struct newest *n = arg;

	if (strcmp(st->conn, n->conn) || st->state == IKE_ST_REKEYED)
		return;
	if (n->found && n->st.state == IKE_ST_ESTABLISHED)
		return;
	n->st = *st;
	n->found = true;
}

/* Where an IKE SA that has not brought the tunnel up stands, in words. */
static void ike_progress(const struct ike_sa_status *st, char *detail, size_t len)
{
	char peer[INET6_ADDRSTRLEN];

	inet_ntop(st->remote.family == AF_INET6 ? AF_INET6 : AF_INET, st->remote.ip, peer,
		  sizeof(peer));
	switch (st->state) {
	case IKE_ST_INIT_SENT:
	case IKE_ST_AUTH_SENT:
		snprintf(detail, len, "IKE not established: %s sent to %s, no answer yet (%llu "
			 "retransmits)", st->state == IKE_ST_INIT_SENT ? "IKE_SA_INIT" : "IKE_AUTH",
			 peer, (unsigned long long)st->retransmits);
		break;
	case IKE_ST_HALF_OPEN:
		snprintf(detail, len, "IKE not established: %s's IKE_SA_INIT answered, its "
			 "IKE_AUTH not yet", peer);
		break;
	case IKE_ST_ESTABLISHED:
		snprintf(detail, len, "IKE SA with %s established, its CHILD_SA not installed",
			 peer);
		break;
	default:
		snprintf(detail, len, "IKE SA with %s being deleted", peer);
		break;
	}
}

/* No IKE SA: what comes next, and how the last one ended. */
static void ike_idle(const struct ikd_conn *c, char *detail, size_t len)
{
	uint64_t now = mono_ms();
	unsigned long long in_s = c->retry_at > now ? (c->retry_at - now + 999) / 1000 : 0;
	const char *last = c->last_end;

	if (c->retry_at != 0)
		snprintf(detail, len, "IKE not established: %s%s; next attempt in %llu s",
			 last ? "the last attempt ended: " : "not started yet", last ? last : "",
			 in_s);
	else if (!c->tpl.ike.start)
		snprintf(detail, len, "IKE not established: waiting for the peer to initiate "
			 "(start = no)%s%s", last ? "; the last IKE SA ended: " : "",
			 last ? last : "");
	else
		snprintf(detail, len, "IKE not established%s%s", last ? ": the last IKE SA "
			 "ended: " : "", last ? last : "");
}

/* How many clients connection conn has now. */
static size_t n_clients_of(const char *conn)
{
	size_t n = 0;

	for (size_t i = 0; i < ikd.n_clients; i++)
		n += !strcmp(ikd.clients[i].conn, conn);
	return n;
}

int ikd_tunnel(const char *name, char *state, size_t state_len, char *detail,
	       size_t detail_len)
{
	struct ikd_conn *c = ikd.ctx != NULL ? ikd_find_conn(name) : NULL;
	struct newest n = { .conn = name };

	if (c == NULL && ikd.ctx != NULL && (c = ikd_client_by_name(name)) != NULL) {
		snprintf(state, state_len, "established");	/* its tunnel is its CHILD_SA */
		return c->up ? CTL_IKE_UP : CTL_IKE_DOWN;
	}
	if (c == NULL)
		return CTL_IKE_UNKNOWN;
	if (c->tpl.ra.any) {		/* its clients' tunnels are theirs */
		snprintf(state, state_len, "%s", n_clients_of(name) ? "established" : "none");
		return CTL_IKE_RA;
	}
	if (c->tpl.ike.parent[0])
		n.conn = c->tpl.ike.parent;	/* ike-sa: it rides that one's IKE SA */
	ike_sa_walk_conn(ikd.ctx, n.conn, newest_one, &n);	/* its IKE SAs only */
	snprintf(state, state_len, "%s", n.found ? ike_state_name(n.st.state) : "none");
	if (c->up)
		return CTL_IKE_UP;
	if (c->held) {
		snprintf(detail, detail_len, "IKE terminated with dpvpnctl terminate %s "
			 "(dpvpnctl initiate %s starts it)", name, name);
		return CTL_IKE_HELD;
	}
	if (n.found)
		ike_progress(&n.st, detail, detail_len);
	else
		ike_idle(c, detail, detail_len);
	return CTL_IKE_DOWN;
}

void ikd_client_tunnels(const char *conn, ctl_tunnel_fn fn, void *arg)
{
	for (size_t i = 0; ikd.ctx != NULL && i < ikd.n_clients; i++)
		if (!strcmp(ikd.clients[i].conn, conn))
			fn(arg, &(struct ctl_tunnel){ .name = ikd.clients[i].c.tpl.name,
						      .cfg = &ikd.clients[i].c.tpl });
}

json_t *ikd_tunnel_json(const char *name)
{
	struct ikd_conn *c = ikd.ctx != NULL ? ikd_find_conn(name) : NULL;
	const struct ike_alg_set none = { 0 };

	if (c == NULL && ikd.ctx != NULL && (c = ikd_client_by_name(name)) != NULL)
		return json_pack("{s:o,s:o,s:o,s:o,s:[o],s:I}", "ike", algs_json(&c->ike),
				 "esp", algs_json(&c->esp),
				 "client", client_json(ikd_client_of(c), NULL, 0),
				 "remote_ts", ike_prefix_json(&ikd_client_of(c)->vip),	/* its lease */
				 "remote_ts_list", ike_prefix_json(&ikd_client_of(c)->vip),
				 "rekeys", (json_int_t)c->rekeys);
	if (c == NULL)
		return NULL;
	return json_pack("{s:o,s:o,s:o,s:o,s:I}", "ike", algs_json(c->up ? &c->ike : &none),
			 "esp", algs_json(c->up ? &c->esp : &none),
			 "clients", c->tpl.ra.any ? clients_json(name) : json_null(),
			 "last_ike_end", c->last_end ? json_string(c->last_end) : json_null(),
			 "rekeys", (json_int_t)c->rekeys);
}
