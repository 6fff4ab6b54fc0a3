/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ikd_conn.c - dpvpnd's IKE connections: each keying = ike tunnel of the
 * config as a connection of the engine (its settings, PSK or certificates),
 * what the engine negotiated as the config's tunnel again, the tables of
 * connections and remote-access clients (by name, by lease), and a reload's
 * steps (ikd_reload_*).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "ha.h"
#include "dpvpn_alg.h"
#include "ike_msg.h"
#include "ike_sa.h"
#include "ikd.h"
#include "ikd_int.h"
#include "install.h"
#include "mono.h"

#define IKD_RETRANS_MS		500
#define IKD_RETRANS_TRIES	6

/* ---- the tables: connections by name, clients by lease (ikd_int.h) ---- */

static uint32_t *conn_next(size_t i);
static uint32_t *parent_next(size_t i);
static uint32_t *client_next(size_t i);

/* (FNV-1a: names and leases are ours, config and pool, not a peer's choice) */
static uint32_t name_hash(const char *name)
{
	return idx_fnv(IDX_FNV_START, name, strlen(name)) % IDX_BUCKETS;
}

static uint32_t lease_hash(const char *conn, const struct ike_prefix *vip)
{
	return idx_fnv(idx_fnv(IDX_FNV_START, conn, strlen(conn)), vip, sizeof(*vip)) %
	       IDX_BUCKETS;
}

static uint32_t *conn_next(size_t i)
{
	return &ikd.conns[i].by_name;
}

static uint32_t *parent_next(size_t i)
{
	return &ikd.conns[i].by_parent;
}

static uint32_t *client_next(size_t i)
{
	return &ikd.clients[i].by_lease;
}

struct ikd_conn *ikd_find_conn(const char *name)
{
	for (uint32_t e = ikd.conn_idx.head[name_hash(name)]; e != 0; e = ikd.conns[e - 1].by_name)
		if (!strcmp(ikd.conns[e - 1].tpl.name, name))
			return &ikd.conns[e - 1];
	return NULL;
}

/*
 * Connection conn and the ike-sa tunnels riding its IKE SA (their parent):
 * the first (c NULL), then the next after c; NULL at the end.  No scan.
 */
struct ikd_conn *ikd_conn_family(const char *conn, struct ikd_conn *c)
{
	uint32_t e;

	if (c == NULL && (c = ikd_find_conn(conn)) != NULL)
		return c;				/* first, itself */
	if (c == NULL || strcmp(c->tpl.ike.parent, conn) != 0)
		e = ikd.parent_idx.head[name_hash(conn)];	/* then its children */
	else
		e = c->by_parent;			/* after a child, the next */
	for (; e != 0; e = ikd.conns[e - 1].by_parent)
		if (!strcmp(ikd.conns[e - 1].tpl.ike.parent, conn))
			return &ikd.conns[e - 1];
	return NULL;
}

/* ikd.conns[i] goes: the last takes its place (and its links). */
static void conn_remove(size_t i)
{
	size_t last = ikd.n_conns - 1;
	const char *parent = ikd.conns[i].tpl.ike.parent;

	idx_relink(&ikd.conn_idx, name_hash(ikd.conns[i].tpl.name), i, 0, conn_next);
	if (parent[0])
		idx_relink(&ikd.parent_idx, name_hash(parent), i, 0, parent_next);
	free(ikd.conns[i].last_end);
	if (i != last) {
		parent = ikd.conns[last].tpl.ike.parent;
		idx_relink(&ikd.conn_idx, name_hash(ikd.conns[last].tpl.name), last,
			   (uint32_t)i + 1, conn_next);
		if (parent[0])
			idx_relink(&ikd.parent_idx, name_hash(parent), last, (uint32_t)i + 1,
				   parent_next);
		ikd.conns[i] = ikd.conns[last];
	}
	ikd.n_conns--;
	explicit_bzero(&ikd.conns[last], sizeof(ikd.conns[last]));
}

/* ---- between the config's forms and IKE's ---- */

void ikd_to_ike_addr(struct ike_addr *a, const struct cfg_addr *c, uint16_t port)
{
	memset(a, 0, sizeof(*a));
	a->port = port;
	if (c->family == DPVPN_AF_INET6) {
		a->family = AF_INET6;
		memcpy(a->ip, c->v6, 16);
	} else {
		uint32_t v4 = htonl(c->v4);

		a->family = AF_INET;
		memcpy(a->ip, &v4, 4);
	}
}

static void to_ike_prefix(struct ike_prefix *p, const struct cfg_prefix *c)
{
	struct ike_addr a;

	ikd_to_ike_addr(&a, &c->addr, 0);
	memset(p, 0, sizeof(*p));
	p->family = a.family;
	p->plen = c->len;
	memcpy(p->addr, a.ip, 16);
}

static void from_ike_prefix(struct cfg_prefix *c, const struct ike_prefix *p)
{
	memset(c, 0, sizeof(*c));
	c->len = p->plen;
	if (p->family == AF_INET6) {
		c->addr.family = DPVPN_AF_INET6;
		memcpy(c->addr.v6, p->addr, 16);
	} else {
		uint32_t v4;

		memcpy(&v4, p->addr, 4);
		c->addr.family = DPVPN_AF_INET;
		c->addr.v4 = ntohl(v4);
	}
}

static void to_ike_ident(struct ike_ident *id, uint8_t type, const uint8_t *data, uint8_t len)
{
	memset(id, 0, sizeof(*id));
	id->type = type;
	id->len = type ? len : 0;
	if (type)
		memcpy(id->data, data, len);
}

/* A proposal from the config (the same algorithm lists, other types). */
static void prop_from_cfg(struct ike_prop_cfg *e, const struct cfg_prop *c)
{
	memset(e, 0, sizeof(*e));
	_Static_assert(CFG_PROP_ALGS_MAX == IKE_PROP_ALGS_MAX, "one limit for both");
	for (unsigned i = 0; i < c->n_encr; i++)
		e->encr[i] = (struct ike_encr){ c->encr[i], c->encr_bits[i] };
	memcpy(e->integ, c->integ, sizeof(e->integ));
	memcpy(e->prf, c->prf, sizeof(e->prf));
	memcpy(e->dh, c->dh, sizeof(e->dh));
	e->n_encr = c->n_encr;
	e->n_integ = c->n_integ;
	e->n_prf = c->n_prf;
	e->n_dh = c->n_dh;
	e->esn = c->esn;
}

/* The tunnel's cipher as the one ESP proposal it makes or accepts (no esp-proposals). */
static int esp_prop(struct ike_prop_cfg *e, uint8_t alg)
{
	memset(e, 0, sizeof(*e));
	e->n_encr = 1;
	switch (alg) {
	case DPVPN_ALG_AES128_GCM:
	case DPVPN_ALG_AES256_GCM:
		e->encr[0] = (struct ike_encr){ IKE_ENCR_AES_GCM_16,
						alg == DPVPN_ALG_AES256_GCM ? 256 : 128 };
		break;
	case DPVPN_ALG_AES128_CBC_SHA256:
	case DPVPN_ALG_AES256_CBC_SHA256:
		e->encr[0] = (struct ike_encr){ IKE_ENCR_AES_CBC,
						alg == DPVPN_ALG_AES256_CBC_SHA256 ? 256 : 128 };
		e->integ[0] = IKE_INTEG_HMAC_SHA2_256_128;
		e->n_integ = 1;
		break;
	default:
		return -1;
	}
	return 0;
}

/* The dataplane's transform for a negotiated CHILD_SA (ike_conn_add took no other). */
static int child_alg(const struct ike_child *c)
{
	bool b256 = c->encr_bits == 256, sha1 = c->integ == IKE_INTEG_HMAC_SHA1_96;

	if (c->encr == IKE_ENCR_CHACHA20_POLY1305)
		return DPVPN_ALG_CHACHA20_POLY1305;
	if (c->encr == IKE_ENCR_AES_GCM_16)
		return b256 ? DPVPN_ALG_AES256_GCM : DPVPN_ALG_AES128_GCM;
	if (sha1)
		return b256 ? DPVPN_ALG_AES256_CBC_SHA1 : DPVPN_ALG_AES128_CBC_SHA1;
	return b256 ? DPVPN_ALG_AES256_CBC_SHA256 : DPVPN_ALG_AES128_CBC_SHA256;
}

static int conn_cfg(struct ike_conn_cfg *c, const struct cfg_tunnel *t)
{
	memset(c, 0, sizeof(*c));
	snprintf(c->name, sizeof(c->name), "%s", t->name);
	ikd_to_ike_addr(&c->local, &t->local, DPVPN_IKE_PORT);
	ikd_to_ike_addr(&c->remote, &t->remote, DPVPN_IKE_PORT);
	if (t->ike.psk_len > sizeof(c->psk))
		return -1;
	memcpy(c->psk, t->ike.psk, t->ike.psk_len);
	c->psk_len = t->ike.psk_len;
	to_ike_ident(&c->local_id, t->ike.local_id_type, t->ike.local_id, t->ike.local_id_len);
	to_ike_ident(&c->remote_id, t->ike.remote_id_type, t->ike.remote_id,
		     t->ike.remote_id_len);
	for (unsigned i = 0; i < t->ike.n_props && i < IKE_CONN_PROPS_MAX; i++)
		prop_from_cfg(&c->ike[c->n_ike++], &t->ike.props[i]);
	for (unsigned i = 0; i < t->ike.n_esp && i < IKE_CONN_PROPS_MAX; i++)
		prop_from_cfg(&c->esp[c->n_esp++], &t->ike.esp[i]);
	if (c->n_esp == 0) {
		if (esp_prop(&c->esp[0], t->alg))
			return -1;
		c->esp[0].esn = t->esn ? IKE_PROP_ESN_YES : IKE_PROP_ESN_NO;
		c->n_esp = 1;
	}
	to_ike_prefix(&c->ts_local, &t->local_ts);
	to_ike_prefix(&c->ts_remote, &t->remote_ts);
	if (t->route) {		/* mode = route: 0.0.0.0/0 and ::/0 on each side */
		c->ts_local = c->ts_remote = (struct ike_prefix){ .family = AF_INET };
		c->ts_local_more[0] = c->ts_remote_more[0] =
			(struct ike_prefix){ .family = AF_INET6 };
		c->n_ts_local_more = c->n_ts_remote_more = 1;
		goto ts_done;
	}
	_Static_assert(CFG_TS_MAX == IKE_TS_MAX, "one limit for both");
	for (unsigned i = 0; i < t->n_more_lts; i++)
		to_ike_prefix(&c->ts_local_more[i], &t->more_lts[i]);
	for (unsigned i = 0; i < t->n_more_rts; i++)
		to_ike_prefix(&c->ts_remote_more[i], &t->more_rts[i]);
	c->n_ts_local_more = t->n_more_lts;
	c->n_ts_remote_more = t->n_more_rts;
ts_done:
	snprintf(c->ike_sa, sizeof(c->ike_sa), "%s", t->ike.parent);	/* ike-sa = Y */
	c->remote_any = t->ra.any;
	for (unsigned i = 0; i < t->ra.n_pools && i < 2; i++)
		to_ike_prefix(&c->pool[c->n_pool++], &t->ra.pools[i]);
	for (unsigned i = 0; i < t->ra.n_dns && i < IKE_DNS_MAX; i++)
		ikd_to_ike_addr(&c->dns[c->n_dns++], &t->ra.dns[i], 0);
	c->retrans_ms = IKD_RETRANS_MS;
	c->retrans_tries = IKD_RETRANS_TRIES;
	if (getenv("DPVPND_IKE_RETRANS_MS") != NULL)	/* labs: a vanished peer found fast */
		c->retrans_ms = (uint32_t)strtoul(getenv("DPVPND_IKE_RETRANS_MS"), NULL, 10);
	if (getenv("DPVPND_IKE_RETRANS_TRIES") != NULL)
		c->retrans_tries = (unsigned)strtoul(getenv("DPVPND_IKE_RETRANS_TRIES"), NULL, 10);
	c->dpd_ms = t->ike.dpd_seconds * 1000u;
	c->no_fragmentation = t->ike.no_frag;
	c->no_initial_contact = t->ike.no_initial_contact;
	c->want_vip = t->ra.want_vip;
	c->fragment_size = t->ike.frag_size;
	c->force_encap = t->udp;	/* encap = udp: ESP in UDP 4500, as behind a NAT */
	c->natt_port = t->udp ? t->udp_local : 0;	/* local-port: IKE and ESP from it */
	c->child_rekey_ms = t->life_seconds[0] * 1000u;	/* the soft lifetime: rekey */
	c->ike_rekey_ms = t->ike.ike_lifetime * 1000u;
	if (getenv("DPVPND_REKEY_GRACE_MS") != NULL)	/* labs: many rekeys in a test */
		c->rekey_grace_ms = (uint32_t)strtoul(getenv("DPVPND_REKEY_GRACE_MS"), NULL, 10);
	return 0;
}

/*
 * auth = pubkey: the certificate, key and CAs read again (config_pki.c, the
 * key file checked as at load) into cc; -1 with err.  ikd owns them: they
 * go to the ikd_conn with the connection (add_conn), or cc_free_pki.
 */
static int conn_pki(struct ike_conn_cfg *c, const struct cfg_tunnel *t, char *err,
		    size_t elen)
{
	struct ike_pki_trust *trust;
	struct ike_pki_cred *cred;
	uint8_t digest[32];
	int line;

	if (cfg_ike_pki_load(&t->ike, &cred, &trust, digest, &line, err, elen) != 0)
		return -1;
	c->cred = cred;
	c->trust = trust;
	return 0;
}

/* What conn_pki made, if add_conn did not take it. */
static void cc_free_pki(struct ike_conn_cfg *c)
{
	ike_pki_cred_free((struct ike_pki_cred *)c->cred);	/* ours: conn_pki made it */
	ike_pki_trust_free((struct ike_pki_trust *)c->trust);
	c->cred = NULL;
	c->trust = NULL;
}

/* The config's tunnel with what IKE negotiated: SPIs, keys, selectors. */
void ikd_negotiated(struct cfg_tunnel *t, const struct ikd_conn *c, const struct ike_child *ch)
{
	*t = c->tpl;
	t->alg = (uint8_t)child_alg(ch);
	t->esn = ch->esn;	/* as negotiated, whatever esn = says */
	t->out.spi = ch->spi_out;
	t->in.spi = ch->spi_in;
	memcpy(t->out.keymat, ch->enc_out, ch->enc_key_len);
	memcpy(t->in.keymat, ch->enc_in, ch->enc_key_len);
	t->out.keymat_len = t->in.keymat_len = ch->enc_key_len;
	memcpy(t->out.authmat, ch->integ_out, ch->integ_key_len);
	memcpy(t->in.authmat, ch->integ_in, ch->integ_key_len);
	t->out.authmat_len = t->in.authmat_len = ch->integ_key_len;
	from_ike_prefix(&t->local_ts, &ch->ts_local);
	from_ike_prefix(&t->remote_ts, &ch->ts_remote);
	t->n_more_lts = (uint8_t)(ch->n_ts_local_more < CFG_TS_MAX ? ch->n_ts_local_more : 0);
	t->n_more_rts = (uint8_t)(ch->n_ts_remote_more < CFG_TS_MAX ? ch->n_ts_remote_more : 0);
	for (unsigned i = 0; i < t->n_more_lts; i++)
		from_ike_prefix(&t->more_lts[i], &ch->ts_local_more[i]);
	for (unsigned i = 0; i < t->n_more_rts; i++)
		from_ike_prefix(&t->more_rts[i], &ch->ts_remote_more[i]);
	t->udp = ch->udp_encap;
	if (ch->udp_encap) {
		t->udp_local = ch->udp_local;
		t->udp_remote = ch->udp_remote;
	}
}

/* ---- remote-access clients ---- */

/* Connection conn's remote-access client with lease vip, NULL if none. */
struct ikd_conn *ikd_client_find(const char *conn, const struct ike_prefix *vip)
{
	uint32_t h = lease_hash(conn, vip);

	for (uint32_t e = ikd.client_idx.head[h]; e != 0; e = ikd.clients[e - 1].by_lease)
		if (!strcmp(ikd.clients[e - 1].conn, conn) &&
		    !memcmp(&ikd.clients[e - 1].vip, vip, sizeof(*vip)))
			return &ikd.clients[e - 1].c;
	return NULL;
}

/* A remote-access client's entry for ch (its lease), made if new; NULL: no memory. */
struct ikd_conn *ikd_client_for(const struct ikd_conn *parent, const struct ike_child *ch)
{
	struct ikd_conn *found = ikd_client_find(parent->tpl.name, &ch->ts_remote);
	struct ikd_client *cl;
	char vip[INET6_ADDRSTRLEN];
	uint32_t h = lease_hash(parent->tpl.name, &ch->ts_remote);

	if (found != NULL)
		return found;
	if (ikd.n_clients == ikd.cap_clients) {
		size_t cap = ikd.cap_clients ? 2 * ikd.cap_clients : 4;

		cl = realloc(ikd.clients, cap * sizeof(*cl));
		if (cl == NULL)
			return NULL;
		ikd.clients = cl;
		ikd.cap_clients = cap;
	}
	cl = &ikd.clients[ikd.n_clients++];
	memset(cl, 0, sizeof(*cl));
	snprintf(cl->conn, sizeof(cl->conn), "%s", parent->tpl.name);
	cl->vip = ch->ts_remote;
	idx_add(&ikd.client_idx, h, ikd.n_clients - 1, client_next);
	cl->remote = ch->remote;
	if (ch->peer_id != NULL)
		cl->id = *ch->peer_id;
	cl->c.tpl = parent->tpl;
	inet_ntop(ch->ts_remote.family == AF_INET6 ? AF_INET6 : AF_INET, ch->ts_remote.addr, vip,
		  sizeof(vip));
	snprintf(cl->c.tpl.name, sizeof(cl->c.tpl.name), "%.15s/%.15s", parent->tpl.name, vip);
	memset(&cl->c.tpl.remote, 0, sizeof(cl->c.tpl.remote));
	if (ch->remote.family == AF_INET6) {
		cl->c.tpl.remote.family = DPVPN_AF_INET6;
		memcpy(cl->c.tpl.remote.v6, ch->remote.ip, 16);
	} else {
		uint32_t v4;

		memcpy(&v4, ch->remote.ip, 4);
		cl->c.tpl.remote.family = DPVPN_AF_INET;
		cl->c.tpl.remote.v4 = ntohl(v4);
	}
	return &cl->c;
}

/* The entry of a client's tunnel c. */
struct ikd_client *ikd_client_of(struct ikd_conn *c)
{
	return (struct ikd_client *)((char *)c - offsetof(struct ikd_client, c));
}

/*
 * One line per client up or down, with what "who held 10.77.0.1 at 14:02?"
 * needs: its identity, its outer address and port, its lease.
 */
void ikd_client_log(const struct ikd_client *cl, bool up)
{
	char id[IKE_IDENT_TEXT_MAX], outer[INET6_ADDRSTRLEN], vip[INET6_ADDRSTRLEN];
	uint64_t now = mono_ms();

	if (cl->id.type != 0)
		ike_ident_text(id, sizeof(id), cl->id.type, cl->id.data, cl->id.len);
	else
		snprintf(id, sizeof(id), "(identity not known)");
	inet_ntop(cl->remote.family == AF_INET6 ? AF_INET6 : AF_INET, cl->remote.ip, outer,
		  sizeof(outer));
	inet_ntop(cl->vip.family == AF_INET6 ? AF_INET6 : AF_INET, cl->vip.addr, vip,
		  sizeof(vip));
	if (up)
		fprintf(stderr, "dpvpnd: tunnel %s: client %s at %s%s%s:%u up, lease %s/%u "
			"(tunnel %s)\n", cl->conn, id, cl->remote.family == AF_INET6 ? "[" : "",
			outer, cl->remote.family == AF_INET6 ? "]" : "", cl->remote.port, vip,
			cl->vip.plen, cl->c.tpl.name);
	else
		fprintf(stderr, "dpvpnd: tunnel %s: client %s at %s%s%s:%u down, lease %s/%u "
			"released (tunnel %s, up %llu s)\n", cl->conn, id,
			cl->remote.family == AF_INET6 ? "[" : "", outer,
			cl->remote.family == AF_INET6 ? "]" : "", cl->remote.port, vip,
			cl->vip.plen, cl->c.tpl.name,
			(unsigned long long)(now > cl->up_ms ? (now - cl->up_ms) / 1000 : 0));
}

/* Client entry c's tunnel is down: its grace-period SAs go now, the entry too. */
void ikd_client_gone(struct ikd_conn *c)
{
	size_t i = (size_t)(ikd_client_of(c) - ikd.clients);

	size_t last = ikd.n_clients - 1;

	if (ikd.clients[i].up_ms != 0)	/* its tunnel was installed: said up */
		ikd_client_log(&ikd.clients[i], false);

	for (int l = 0; l < IKD_LATER_MAX; l++)
		if (c->later[l].spi != 0)
			inst_sa_del(ikd.dp, &c->tpl, c->later[l].spi, DPVPN_DIR_IN, ikd.verbose);
	idx_relink(&ikd.client_idx, lease_hash(ikd.clients[i].conn, &ikd.clients[i].vip), i, 0,
		   client_next);
	if (i != last) {
		idx_relink(&ikd.client_idx,
			   lease_hash(ikd.clients[last].conn, &ikd.clients[last].vip),
			   last, (uint32_t)i + 1, client_next);
		ikd.clients[i] = ikd.clients[last];
	}
	ikd.n_clients--;
	explicit_bzero(&ikd.clients[last], sizeof(ikd.clients[last]));
}

/* A remote-access client's tunnel by its name (CONN/VIP); a scan, per command or event. */
struct ikd_conn *ikd_client_by_name(const char *name)
{
	for (size_t i = 0; ikd.ctx != NULL && i < ikd.n_clients; i++)
		if (!strcmp(ikd.clients[i].c.tpl.name, name))
			return &ikd.clients[i].c;
	return NULL;
}

/* ---- connections into the engine ---- */

/* Connection t (its IKE settings cc, PSK included) into the context and ikd.conns. */
static int add_conn(const struct cfg_tunnel *t, const struct ike_conn_cfg *cc)
{
	struct ikd_conn *c;
	char err[256];
	int rc;

	if (ikd.n_conns == ikd.cap_conns) {
		size_t cap = ikd.cap_conns ? 2 * ikd.cap_conns : 4;

		c = realloc(ikd.conns, cap * sizeof(*c));
		if (c == NULL) {
			fprintf(stderr, "dpvpnd: tunnel %s: IKE: out of memory\n", t->name);
			return -1;
		}
		ikd.conns = c;
		ikd.cap_conns = cap;
	}
	rc = ike_conn_add(ikd.ctx, cc, err, sizeof(err));
	if (rc != 0) {
		fprintf(stderr, "dpvpnd: tunnel %s: IKE: %s\n", t->name,
			rc == -EINVAL ? err : strerror(-rc));
		return -1;
	}
	c = &ikd.conns[ikd.n_conns++];
	memset(c, 0, sizeof(*c));
	idx_add(&ikd.conn_idx, name_hash(t->name), ikd.n_conns - 1, conn_next);
	c->cred = (struct ike_pki_cred *)cc->cred;	/* the connection's now */
	c->trust = (struct ike_pki_trust *)cc->trust;
	c->tpl = *t;
	if (t->ike.parent[0])
		idx_add(&ikd.parent_idx, name_hash(t->ike.parent), ikd.n_conns - 1, parent_next);
	explicit_bzero(&c->tpl.ike.psk, sizeof(c->tpl.ike.psk));
	c->tpl.ike.psk_len = 0;
	inst_tunnel_digest(t, c->digest);
	c->retry_at = t->ike.start && ha_owns(t->name) ? 1 : 0;	/* due at once; an HA
									 * group's: by its master */
	return 0;
}

/* t's IKE settings into cc: 0, or -1 with why in err (nothing kept in cc). */
static int check_conn(struct ike_conn_cfg *cc, const struct cfg_tunnel *t, char *err, size_t elen)
{
	int rc;

	if (conn_cfg(cc, t) != 0) {
		snprintf(err, elen, "cipher: no ESP proposal for it, or psk-file too long");
		rc = -1;
	} else if (t->ike.auth == CFG_AUTH_PUBKEY && conn_pki(cc, t, err, elen) != 0) {
		rc = -1;
	} else {
		rc = ike_conn_check(cc, err, elen);
	}
	if (rc != 0) {
		cc_free_pki(cc);
		explicit_bzero(cc, sizeof(*cc));
	}
	return rc != 0 ? -1 : 0;
}

/* Tunnels that own an IKE SA first (pass 0), then the ike-sa ones (pass 1). */
int ikd_add_conns(const struct cfg *cfg)
{
	char err[256];

	for (size_t j = 0; j < 2 * cfg->n_tunnels; j++) {
		const struct cfg_tunnel *t = cfg->tunnels[j % cfg->n_tunnels];
		struct ike_conn_cfg cc;
		int rc;

		if (!t->ike.on || (t->ike.parent[0] != 0) != (j >= cfg->n_tunnels))
			continue;
		if (check_conn(&cc, t, err, sizeof(err)) != 0) {
			fprintf(stderr, "dpvpnd: tunnel %s: IKE: %s\n", t->name, err);
			return -1;
		}
		rc = add_conn(t, &cc);
		if (rc != 0)
			cc_free_pki(&cc);
		explicit_bzero(&cc, sizeof(cc));
		if (rc != 0)
			return -1;
	}
	return 0;
}

/* ---- reload ---- */

/* A reload's IKE tunnels to add (new or changed), checked, PSKs in cc. */
static struct {
	struct ike_conn_cfg *cc;
	const struct cfg_tunnel **t;
	size_t n;
	size_t removed, changed;	/* by ikd_reload_drop */
} pending;

void ikd_reload_cancel(void)
{
	for (size_t i = 0; pending.cc != NULL && i < pending.n; i++)
		cc_free_pki(&pending.cc[i]);	/* those add_conn took are NULL */
	if (pending.cc != NULL)
		explicit_bzero(pending.cc, pending.n * sizeof(*pending.cc));
	free(pending.cc);
	free(pending.t);
	memset(&pending, 0, sizeof(pending));
}

/*
 * An ike-sa tunnel goes with its IKE SA: when the tunnel it names is
 * removed or changed (its connection removed takes the children's along),
 * it is dropped and added again after it, changed or not.
 */
static bool parent_changes(const struct cfg *next, const char *parent)
{
	const struct ikd_conn *p = parent[0] ? ikd_find_conn(parent) : NULL;
	const struct cfg_tunnel *t = parent[0] ? inst_find_tunnel(next, parent) : NULL;

	return parent[0] && (p == NULL || t == NULL || !inst_tunnel_same(&p->tpl, t));
}

int ikd_reload_check(struct cfg *next, char *msg, size_t len)
{
	size_t n = next->n_tunnels ? next->n_tunnels : 1;
	char err[256];

	ikd_reload_cancel();
	inst_fingerprint(next);
	pending.cc = calloc(n, sizeof(*pending.cc));
	pending.t = calloc(n, sizeof(*pending.t));
	if (pending.cc == NULL || pending.t == NULL) {
		snprintf(msg, len, "refused, running config kept: out of memory");
		ikd_reload_cancel();
		return -1;
	}
	for (size_t i = 0; i < next->n_tunnels; i++) {
		const struct cfg_tunnel *t = next->tunnels[i];
		struct ikd_conn *c = t->ike.on && ikd.ctx != NULL ? ikd_find_conn(t->name) : NULL;

		if (!t->ike.on || (c != NULL && inst_tunnel_same(&c->tpl, t) &&
				   !parent_changes(next, t->ike.parent)))
			continue;
		if (check_conn(&pending.cc[pending.n], t, err, sizeof(err)) != 0) {
			snprintf(msg, len, "refused, running config kept: tunnel %s: IKE: %s",
				 t->name, err);
			ikd_reload_cancel();
			return -1;
		}
		pending.t[pending.n++] = t;
	}
	return 0;
}

/* Connection c ends (gone from the config or changed): its SAs, its grace-period ones. */
static void drop_conn(struct ikd_conn *c, uint64_t now)
{
	/* ikd_on_child_down: out of the dataplane */
	ike_conn_remove(ikd.ctx, c->tpl.name, now);
	for (int l = 0; l < IKD_LATER_MAX; l++)
		if (c->later[l].spi != 0)
			inst_sa_del(ikd.dp, &c->tpl, c->later[l].spi, DPVPN_DIR_IN, ikd.verbose);
	fprintf(stderr, "dpvpnd: tunnel %s: IKE connection removed (reload)\n", c->tpl.name);
	ike_pki_cred_free(c->cred);	/* nothing of the context points to them now */
	ike_pki_trust_free(c->trust);
	c->cred = NULL;
	c->trust = NULL;
}

void ikd_reload_drop(const struct cfg *next)
{
	uint64_t now = mono_ms();

	for (size_t i = 0; ikd.ctx != NULL && i < ikd.n_conns;) {
		struct ikd_conn *c = &ikd.conns[i];
		const struct cfg_tunnel *t = inst_find_tunnel(next, c->tpl.name);

		if (t != NULL && inst_tunnel_same(&c->tpl, t) &&
		    !parent_changes(next, c->tpl.ike.parent)) {
			i++;
			continue;
		}
		drop_conn(c, now);
		t != NULL && t->ike.on ? pending.changed++ : pending.removed++;
		conn_remove(i);
	}
}

int ikd_reload_add(const struct cfg *next, char *msg, size_t len)
{
	size_t failed = 0;

	if (ikd.ctx == NULL && pending.n == 0) {
		ikd_reload_cancel();
		return 0;			/* no IKE before, none now */
	}
	if (ikd.ctx == NULL && ikd_start(next->dp_socket, next) != 0) {
		snprintf(msg, len, "; keying = ike: IKE could not start (see dpvpnd's log): "
			 "those tunnels stay down");
		ikd_close();
		return -1;
	}
	if (ikd.n_ports == next->n_ports)		/* addresses may have moved */
		memcpy(ikd.ports, next->ports, next->n_ports * sizeof(*ikd.ports));
	for (size_t i = 0; i < 2 * pending.n; i++) {	/* IKE SA owners first, as at start */
		size_t j = i % pending.n;

		if ((pending.t[j]->ike.parent[0] != 0) != (i >= pending.n))
			continue;
		if (add_conn(pending.t[j], &pending.cc[j]) != 0) {
			failed++;
			continue;
		}
		pending.cc[j].cred = NULL;	/* the connection's now */
		pending.cc[j].trust = NULL;
	}
	snprintf(msg, len, "; keying = ike: %zu added, %zu removed, %zu changed (negotiated "
		 "anew)%s", pending.n - pending.changed, pending.removed, pending.changed,
		 failed ? "; some not added: see dpvpnd's log" : "");
	ikd_reload_cancel();
	return failed ? -1 : 0;
}
