/* SPDX-License-Identifier: BSD-3-Clause */
/* ikd.c - dpvpnd's IKE: connections, the IKE channel, CHILD_SA installs (ikd.h). */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <openssl/x509.h>

#include "config.h"
#include "ctl_show.h"
#include "dpvpn_alg.h"
#include "ike_msg.h"
#include "ike_sa.h"
#include "ikd.h"
#include "install.h"
#include "mono.h"

#define IKD_RETRY_MS		5000	/* start = yes: initiate again this long after an end */
#define IKD_RETRANS_MS		500
#define IKD_RETRANS_TRIES	6
#define IKD_OLD_IN_GRACE_MS	2000	/* a replaced inbound SA lives on this long */
#define IKD_LATER_MAX		16
#define IKD_TICK_MS		100	/* timers walked at most this often: dpvpnd's IKE_TICK_MS */
#define IKD_COOKIE_THRESHOLD	32	/* half-open SAs before cookies are asked for */
#define IKD_BUF			(sizeof(struct dpvpn_msg_hdr) + sizeof(struct dpvpn_ike_pkt) + \
				 DPVPN_IKE_MAX)

struct ikd_conn {
	struct cfg_tunnel tpl;		/* the config's tunnel, keys (and PSK) wiped */
	/* auth = pubkey: what ike_conn_cfg points to, freed after ike_conn_remove */
	struct ike_pki_cred *cred;
	struct ike_pki_trust *trust;
	uint64_t retry_at;		/* start = yes: when to initiate again; 0: not due */
	bool up;			/* a CHILD_SA installed */
	bool held;			/* terminated by the operator: not started again */
	uint32_t spi_in, spi_out;	/* the CHILD_SA the outbound policy points to */
	bool has_next;			/* a rekey's new CHILD_SA installed, not yet used */
	uint32_t next_in, next_out;
	/* crossing rekeys (RFC 7296 2.8.1): the other new one, until one goes */
	bool has_next2;
	uint32_t next2_in, next2_out;
	uint64_t rekeys;
	uint32_t by_name;		/* k.conns' index (idx): the next of its bucket */
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
	uint32_t by_lease;		/* k.clients' index: the next of its bucket */
	struct ikd_conn c;		/* tpl: the tunnel's, with the name and remote above */
};

/*
 * k.conns by name and k.clients by (connection, lease): at 10 000 of them a
 * scan per IKE callback was what set-up cost (perf/ikebench.py).  Chained
 * through the entries' by_name / by_lease; an entry is its array index + 1
 * (0: none), and an entry moved by a swap-remove is relinked (idx_move).
 */
#define IKD_BUCKETS		16384

struct idx {
	uint32_t head[IKD_BUCKETS];
};

static uint32_t *conn_next(size_t i);
static uint32_t *client_next(size_t i);

/* An SA of the dataplane by SPI (host order) and direction; an orphan by name too. */
struct ikd_sa_ref {
	uint32_t spi;
	uint8_t dir;
};

struct ikd_orphan {
	char name[DPVPN_NAME_LEN];
	struct ikd_sa_ref sa;
};

static struct {
	struct ike_ctx *ctx;
	struct dp_client chan;		/* the IKE channel */
	struct dp_client *dp;		/* installs */
	struct seqstate *seq;
	bool verbose;
	struct cfg_port *ports;		/* copies, for the port of a local address */
	size_t n_ports;
	struct ikd_conn *conns;
	size_t n_conns, cap_conns;
	struct ikd_client *clients;	/* remote access */
	size_t n_clients, cap_clients;
	uint64_t tx_refused, tx_failed, rx_bad;
	char last_tx_error[160];
	struct idx conn_idx, client_idx;
	bool batch;			/* inst_batch_begin'ed in this ikd_input pass */
	uint64_t next_tick;		/* ikd_tick's next walk (mono_ms) */
	/* IKE SAs kept in the dataplane across restarts (ikd_keep_*, below) */
	bool closing;			/* ikd_close: the SAs stay in the dataplane */
	uint64_t keep_failed;
	struct ikd_sa_ref *claimed;	/* what IKE SAs taken up hold, sorted */
	size_t n_claimed, cap_claimed;
	struct ikd_orphan *orphans;	/* what none holds: forwards until replaced */
	size_t n_orphans;
	uint64_t orphans_until;
} k = { .chan = { .fd = -1 } };

/* FNV-1a: names and leases are ours (config, pool), not a peer's choice */
static uint32_t fnv(uint32_t h, const void *p, size_t n)
{
	const uint8_t *b = p;

	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 16777619u;
	return h;
}

static uint32_t name_hash(const char *name)
{
	return fnv(2166136261u, name, strlen(name)) % IKD_BUCKETS;
}

static uint32_t lease_hash(const char *conn, const struct ike_prefix *vip)
{
	return fnv(fnv(2166136261u, conn, strlen(conn)), vip, sizeof(*vip)) % IKD_BUCKETS;
}

static void idx_add(struct idx *x, uint32_t h, size_t i, uint32_t *(*next)(size_t))
{
	*next(i) = x->head[h];
	x->head[h] = (uint32_t)i + 1;
}

/* The link to entry i (in bucket h) now says to; to 0: i unlinked. */
static void idx_relink(struct idx *x, uint32_t h, size_t i, uint32_t to,
		       uint32_t *(*next)(size_t))
{
	uint32_t *pp = &x->head[h];

	while (*pp != 0 && *pp != i + 1)
		pp = next(*pp - 1);
	if (*pp != 0)
		*pp = to != 0 ? to : *next(i);
}

static uint32_t *conn_next(size_t i)
{
	return &k.conns[i].by_name;
}

static uint32_t *client_next(size_t i)
{
	return &k.clients[i].by_lease;
}

static struct ikd_conn *find_conn(const char *name)
{
	for (uint32_t e = k.conn_idx.head[name_hash(name)]; e != 0; e = k.conns[e - 1].by_name)
		if (!strcmp(k.conns[e - 1].tpl.name, name))
			return &k.conns[e - 1];
	return NULL;
}

/* k.conns[i] goes: the last takes its place (and its links). */
static void conn_remove(size_t i)
{
	size_t last = k.n_conns - 1;

	idx_relink(&k.conn_idx, name_hash(k.conns[i].tpl.name), i, 0, conn_next);
	free(k.conns[i].last_end);
	if (i != last) {
		idx_relink(&k.conn_idx, name_hash(k.conns[last].tpl.name), last,
			   (uint32_t)i + 1, conn_next);
		k.conns[i] = k.conns[last];
	}
	k.n_conns--;
	explicit_bzero(&k.conns[last], sizeof(k.conns[last]));
}

/* IKE's dataplane installs of this ikd_input pass: one batch (install.c) */
static void batch_open(void)
{
	if (!k.batch && inst_batch_begin(k.dp, k.seq, k.verbose) == 0)
		k.batch = true;
}

static void batch_close(void)
{
	if (k.batch && inst_batch_commit(k.dp, k.seq, k.verbose) != 0)
		fprintf(stderr, "dpvpnd: IKE: the batch of CHILD_SA installs: %s\n", k.dp->err);
	k.batch = false;
}

/* ---- between the config's forms and IKE's ---- */

static void to_ike_addr(struct ike_addr *a, const struct cfg_addr *c, uint16_t port)
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

	to_ike_addr(&a, &c->addr, 0);
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
	to_ike_addr(&c->local, &t->local, DPVPN_IKE_PORT);
	to_ike_addr(&c->remote, &t->remote, DPVPN_IKE_PORT);
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
		to_ike_addr(&c->dns[c->n_dns++], &t->ra.dns[i], 0);
	c->retrans_ms = IKD_RETRANS_MS;
	c->retrans_tries = IKD_RETRANS_TRIES;
	if (getenv("DPVPND_IKE_RETRANS_MS") != NULL)	/* labs: a vanished peer found fast */
		c->retrans_ms = (uint32_t)strtoul(getenv("DPVPND_IKE_RETRANS_MS"), NULL, 10);
	if (getenv("DPVPND_IKE_RETRANS_TRIES") != NULL)
		c->retrans_tries = (unsigned)strtoul(getenv("DPVPND_IKE_RETRANS_TRIES"), NULL, 10);
	c->dpd_ms = t->ike.dpd_seconds * 1000u;
	c->no_fragmentation = t->ike.no_frag;
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

/* ---- callbacks of the state machine ---- */

/* Is a (IPv4) within p's extra-addresses? */
static bool in_extra(const struct cfg_port *p, const struct ike_addr *a)
{
	uint32_t v4, mask = p->extra4.len ? ~0u << (32 - p->extra4.len) : 0;

	if (a->family != AF_INET || p->extra4.addr.family != DPVPN_AF_INET)
		return false;
	memcpy(&v4, a->ip, 4);
	return (ntohl(v4) & mask) == p->extra4.addr.v4;
}

/* The outside port whose address a is, or holds a among its extra-addresses
 * (IKE_TX's source), or -1. */
static int port_of(const struct ike_addr *a)
{
	for (size_t i = 0; i < k.n_ports; i++) {
		const struct cfg_port *p = &k.ports[i];
		struct ike_addr pa;

		if (p->role != DPVPN_ROLE_OUTSIDE)
			continue;
		to_ike_addr(&pa, a->family == AF_INET6 ? &p->addr6.addr : &p->addr4.addr, 0);
		if ((a->family == AF_INET6 ? p->addr6.addr.family : p->addr4.addr.family) != 0 &&
		    (!memcmp(pa.ip, a->ip, a->family == AF_INET6 ? 16 : 4) || in_extra(p, a)))
			return (int)p->id;
	}
	return -1;
}

static void to_dp_addr(struct dpvpn_addr *d, const struct ike_addr *a)
{
	memset(d, 0, sizeof(*d));
	d->family = a->family == AF_INET6 ? DPVPN_AF_INET6 : DPVPN_AF_INET;
	memcpy(a->family == AF_INET6 ? (void *)d->v6 : (void *)&d->v4, a->ip,
	       a->family == AF_INET6 ? 16 : 4);
}

static void from_dp_addr(struct ike_addr *a, const struct dpvpn_addr *d, uint16_t port)
{
	bool v6 = d->family == DPVPN_AF_INET6;

	memset(a, 0, sizeof(*a));
	a->family = v6 ? AF_INET6 : AF_INET;
	memcpy(a->ip, v6 ? (const void *)d->v6 : (const void *)&d->v4, v6 ? 16 : 4);
	a->port = port;
}

static void on_send(void *opaque, const struct ike_addr *local, const struct ike_addr *remote,
		    const uint8_t *msg, size_t len)
{
	static uint8_t buf[IKD_BUF];
	struct dpvpn_msg_hdr *h = (struct dpvpn_msg_hdr *)buf;
	struct dpvpn_ike_pkt *p = (struct dpvpn_ike_pkt *)(h + 1);
	int port = port_of(local);

	(void)opaque;
	if (k.chan.fd < 0 || port < 0 || len == 0 || len > DPVPN_IKE_MAX) {
		k.tx_failed++;
		return;
	}
	memset(p, 0, sizeof(*p));
	p->port = (uint16_t)port;
	p->local_port = local->port;
	p->remote_port = remote->port;
	to_dp_addr(&p->local, local);
	to_dp_addr(&p->remote, remote);
	p->len = (uint32_t)len;
	memcpy(p + 1, msg, len);
	*h = (struct dpvpn_msg_hdr){ .type = DPVPN_MSG_IKE_TX, .seq = ++k.chan.seq,
				     .len = (uint32_t)(sizeof(*p) + len) };
	if (send(k.chan.fd, buf, sizeof(*h) + h->len, MSG_DONTWAIT | MSG_NOSIGNAL) < 0)
		k.tx_failed++;
}

/* The config's tunnel with what IKE negotiated: SPIs, keys, selectors. */
static void negotiated(struct cfg_tunnel *t, const struct ikd_conn *c, const struct ike_child *ch)
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

static void child_up(struct ikd_conn *c, const char *conn, const struct ike_child *ch);

/* What a CHILD_SA negotiated, for show tunnels and show ike. */
static struct ike_alg_set child_algs(const struct ike_child *ch)
{
	return (struct ike_alg_set){ .encr = ch->encr, .encr_bits = ch->encr_bits,
				     .integ = ch->integ, .dh = ch->dh, .esn = ch->esn };
}

/* A remote-access client's entry for ch (its lease), made if new; NULL: no memory. */
static struct ikd_conn *client_for(const struct ikd_conn *parent, const struct ike_child *ch)
{
	struct ikd_client *cl;
	char vip[INET6_ADDRSTRLEN];

	uint32_t h = lease_hash(parent->tpl.name, &ch->ts_remote);

	for (uint32_t e = k.client_idx.head[h]; e != 0; e = k.clients[e - 1].by_lease)
		if (!strcmp(k.clients[e - 1].conn, parent->tpl.name) &&
		    !memcmp(&k.clients[e - 1].vip, &ch->ts_remote, sizeof(ch->ts_remote)))
			return &k.clients[e - 1].c;
	if (k.n_clients == k.cap_clients) {
		size_t cap = k.cap_clients ? 2 * k.cap_clients : 4;

		cl = realloc(k.clients, cap * sizeof(*cl));
		if (cl == NULL)
			return NULL;
		k.clients = cl;
		k.cap_clients = cap;
	}
	cl = &k.clients[k.n_clients++];
	memset(cl, 0, sizeof(*cl));
	snprintf(cl->conn, sizeof(cl->conn), "%s", parent->tpl.name);
	cl->vip = ch->ts_remote;
	idx_add(&k.client_idx, h, k.n_clients - 1, client_next);
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
static struct ikd_client *client_of(struct ikd_conn *c)
{
	return (struct ikd_client *)((char *)c - offsetof(struct ikd_client, c));
}

/*
 * One line per client up or down, with what "who held 10.77.0.1 at 14:02?"
 * needs: its identity, its outer address and port, its lease.
 */
static void client_log(const struct ikd_client *cl, bool up)
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
static void client_gone(struct ikd_conn *c)
{
	size_t i = (size_t)(client_of(c) - k.clients);

	size_t last = k.n_clients - 1;

	if (k.clients[i].up_ms != 0)	/* its tunnel was installed: said up */
		client_log(&k.clients[i], false);

	for (int l = 0; l < IKD_LATER_MAX; l++)
		if (c->later[l].spi != 0)
			inst_sa_del(k.dp, &c->tpl, c->later[l].spi, DPVPN_DIR_IN, k.verbose);
	idx_relink(&k.client_idx, lease_hash(k.clients[i].conn, &k.clients[i].vip), i, 0,
		   client_next);
	if (i != last) {
		idx_relink(&k.client_idx, lease_hash(k.clients[last].conn, &k.clients[last].vip),
			   last, (uint32_t)i + 1, client_next);
		k.clients[i] = k.clients[last];
	}
	k.n_clients--;
	explicit_bzero(&k.clients[last], sizeof(k.clients[last]));
}

static void on_child_up(void *opaque, const char *conn, const struct ike_child *ch)
{
	struct ikd_conn *c = find_conn(conn);

	(void)opaque;
	if (c == NULL)
		return;
	if (c->tpl.ra.any) {
		c = client_for(c, ch);
		if (c == NULL) {
			fprintf(stderr, "dpvpnd: tunnel %s: client: out of memory\n", conn);
			return;
		}
		bool was_up = c->up;

		child_up(c, c->tpl.name, ch);
		if (!c->up) {		/* not installed */
			client_gone(c);
		} else if (!was_up) {
			client_of(c)->up_ms = mono_ms();
			client_log(client_of(c), true);
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

static bool orphans_replaced(struct ikd_conn *c, struct cfg_tunnel *t);

static void child_up(struct ikd_conn *c, const char *conn, const struct ike_child *ch)
{
	struct cfg_tunnel t;

	negotiated(&t, c, ch);
	if (!c->up && orphans_replaced(c, &t)) {
		set_up(c, &t, ch);
		explicit_bzero(&t, sizeof(t));
		return;
	}
	if (!c->up)
		batch_open();	/* a new tunnel: committed at the pass's end */
	else
		batch_close();	/* a rekey: as before, on its own */
	if (!c->up && inst_tunnel_up(k.dp, &t, k.verbose, k.seq) == 0) {
		set_up(c, &t, ch);
		fprintf(stderr, "dpvpnd: tunnel %s: IKE CHILD_SA up, SPIs 0x%08x in, 0x%08x out\n",
			conn, ch->spi_in, ch->spi_out);
	} else if (c->up && !c->has_next2 && inst_tunnel_sas(k.dp, &t, k.verbose, k.seq) == 0) {
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
	if (inst_policy_switch(k.dp, t, k.verbose) != 0)
		fprintf(stderr, "dpvpnd: tunnel %s: rekey: policy not moved\n", t->name);
	inst_sa_del(k.dp, t, old_out, DPVPN_DIR_OUT, k.verbose);
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
	inst_sa_del(k.dp, t, old_in, DPVPN_DIR_IN, k.verbose);	/* no room: now */
}

static void child_down(struct ikd_conn *c, const char *conn, uint32_t spi_in, uint32_t spi_out);

static void on_child_down(void *opaque, const char *conn, uint32_t spi_in, uint32_t spi_out)
{
	struct ikd_conn *c = find_conn(conn);

	(void)opaque;
	if (k.closing)
		return;		/* ikd_close: the SAs stay, the next dpvpnd takes them up */
	batch_close();		/* removals publish at once: what was added first */
	if (c == NULL)
		return;
	if (!c->tpl.ra.any) {
		child_down(c, conn, spi_in, spi_out);
		return;
	}
	for (size_t i = 0; i < k.n_clients; i++) {
		struct ikd_conn *cc = &k.clients[i].c;

		/* (a scan: the callback has no lease; SPIs first, they rarely match) */
		if ((spi_in != cc->spi_in && !(cc->has_next && spi_in == cc->next_in)) ||
		    strcmp(k.clients[i].conn, conn))
			continue;
		child_down(cc, cc->tpl.name, spi_in, spi_out);
		if (!cc->up)
			client_gone(cc);
		return;
	}
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
	inst_tunnel_down(k.dp, &t, k.verbose);
	if (c->has_next2 && spi_in == c->next2_in) {
		c->has_next2 = false;
	} else if (c->has_next && spi_in == c->next_in) {
		next2_up(c);
	} else if (c->spi_in == spi_in) {
		c->up = false;
		for (int i = 0; i < 2 && c->has_next; i++) {	/* rekeys' pairs go too */
			t.in.spi = c->next_in;
			t.out.spi = c->next_out;
			inst_tunnel_down(k.dp, &t, k.verbose);
			next2_up(c);
		}
	}
	fprintf(stderr, "dpvpnd: tunnel %s: IKE CHILD_SA 0x%08x/0x%08x removed\n", conn, spi_in,
		spi_out);
}

static void on_ike_down(void *opaque, const char *conn, const char *why)
{
	struct ikd_conn *c = find_conn(conn);

	(void)opaque;
	if (k.closing)
		return;
	fprintf(stderr, "dpvpnd: tunnel %s: IKE SA ended: %s\n", conn, why);
	for (size_t i = 0; i < k.n_conns; i++) {	/* it and its ike-sa tunnels */
		c = &k.conns[i];
		if (strcmp(c->tpl.name, conn) && strcmp(c->tpl.ike.parent, conn))
			continue;
		free(c->last_end);
		c->last_end = strdup(why);	/* NULL (no memory): said as not known */
		if (c->tpl.ike.start && !c->held)
			c->retry_at = mono_ms() + IKD_RETRY_MS;
	}
}

static void on_log(void *opaque, const char *conn, const char *msg)
{
	(void)opaque;
	if (k.verbose)
		fprintf(stderr, "dpvpnd: ike %s: %s\n", conn ? conn : "-", msg);
}

/* SA (spi, dir) is held by an IKE SA taken up again (ikd_keep_restore). */
static void claim(uint32_t spi, uint8_t dir)
{
	if (k.n_claimed == k.cap_claimed) {
		size_t cap = k.cap_claimed ? 2 * k.cap_claimed : 64;
		struct ikd_sa_ref *r = realloc(k.claimed, cap * sizeof(*r));

		if (r == NULL)
			return;		/* unclaimed: replaced as an orphan, not lost */
		k.claimed = r;
		k.cap_claimed = cap;
	}
	k.claimed[k.n_claimed++] = (struct ikd_sa_ref){ .spi = spi, .dir = dir };
}

/*
 * ike_sa_import brought an IKE SA back with this CHILD_SA: its SAs are in the
 * dataplane as the last dpvpnd installed them; the tunnel (a client's, for
 * remote = %any) is up on them, as after child_up.
 */
static void on_child_kept(void *opaque, const char *conn, const struct ike_child *ch)
{
	struct ikd_conn *conf = find_conn(conn), *c = conf;
	struct cfg_tunnel t;

	(void)opaque;
	if (c != NULL && c->tpl.ra.any)
		c = client_for(c, ch);
	if (c == NULL)
		return;
	if (c != conf) {		/* a client: said as at its start */
		client_of(c)->up_ms = mono_ms();
		client_log(client_of(c), true);
	}
	negotiated(&t, c, ch);		/* (no keys in ch) */
	set_up(c, &t, ch);
	explicit_bzero(&t, sizeof(t));
	c->retry_at = 0;		/* start = yes: up already */
	claim(ch->spi_in, DPVPN_DIR_IN);
	claim(ch->spi_out, DPVPN_DIR_OUT);
	fprintf(stderr, "dpvpnd: tunnel %s: IKE CHILD_SA taken up again, SPIs 0x%08x in, "
		"0x%08x out\n", c->tpl.name, ch->spi_in, ch->spi_out);
}

static const struct ike_ops ops = {
	.send = on_send, .child_up = on_child_up, .child_down = on_child_down,
	.ike_down = on_ike_down, .log = on_log, .child_kept = on_child_kept,
};

/* ---- the channel ---- */

/* Connection t (its IKE settings cc, PSK included) into the context and k.conns. */
static int add_conn(const struct cfg_tunnel *t, const struct ike_conn_cfg *cc)
{
	struct ikd_conn *c;
	char err[256];
	int rc;

	if (k.n_conns == k.cap_conns) {
		size_t cap = k.cap_conns ? 2 * k.cap_conns : 4;

		c = realloc(k.conns, cap * sizeof(*c));
		if (c == NULL) {
			fprintf(stderr, "dpvpnd: tunnel %s: IKE: out of memory\n", t->name);
			return -1;
		}
		k.conns = c;
		k.cap_conns = cap;
	}
	rc = ike_conn_add(k.ctx, cc, err, sizeof(err));
	if (rc != 0) {
		fprintf(stderr, "dpvpnd: tunnel %s: IKE: %s\n", t->name,
			rc == -EINVAL ? err : strerror(-rc));
		return -1;
	}
	c = &k.conns[k.n_conns++];
	memset(c, 0, sizeof(*c));
	idx_add(&k.conn_idx, name_hash(t->name), k.n_conns - 1, conn_next);
	c->cred = (struct ike_pki_cred *)cc->cred;	/* the connection's now */
	c->trust = (struct ike_pki_trust *)cc->trust;
	c->tpl = *t;
	explicit_bzero(&c->tpl.ike.psk, sizeof(c->tpl.ike.psk));
	c->tpl.ike.psk_len = 0;
	inst_tunnel_digest(t, c->digest);
	c->retry_at = t->ike.start ? 1 : 0;	/* due at once */
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
static int add_conns(const struct cfg *cfg)
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

static int open_channel(const char *dp_socket)
{
	if (dp_connect(&k.chan, dp_socket, 5) != 0)
		return -1;
	if (dp_call(&k.chan, DPVPN_MSG_IKE_OPEN, NULL, 0, NULL, 0) != 0) {
		fprintf(stderr, "dpvpnd: IKE channel: %s\n", k.chan.err);
		dp_close(&k.chan);
		return -1;
	}
	return 0;
}

/* The context and the channel; cfg's ports (their addresses) copied. */
static int ikd_start(const char *dp_socket, const struct cfg *cfg)
{
	k.ports = calloc(cfg->n_ports ? cfg->n_ports : 1, sizeof(*k.ports));
	k.ctx = ike_new(&ops, NULL);
	if (k.ports == NULL || k.ctx == NULL) {
		fprintf(stderr, "dpvpnd: IKE: out of memory\n");
		return -1;
	}
	memcpy(k.ports, cfg->ports, cfg->n_ports * sizeof(*k.ports));
	k.n_ports = cfg->n_ports;
	/* above this many half-open responder SAs, IKE_SA_INIT needs a cookie (2.6) */
	ike_set_cookie_threshold(k.ctx, getenv("DPVPND_IKE_COOKIE_THRESHOLD") ?
			(unsigned)strtoul(getenv("DPVPND_IKE_COOKIE_THRESHOLD"), NULL, 10) :
			IKD_COOKIE_THRESHOLD);
	return open_channel(dp_socket);
}

/* ---- IKE SAs kept across a restart of dpvpnd ([ops] issue 27) ---- */

/*
 * Every change of an IKE SA (a message in or out, a rekey) goes to the
 * dataplane as a record (KEEP_SET: this header, then the engine's record of
 * ike_keep_take), where the CHILD_SAs' keys already are: hugepage memory of
 * the process that forwards, never on disk, gone with it and with them.  A
 * dpvpnd started against that dataplane (after kill -9, a crash, systemd's
 * Restart=, a stop and start) takes each IKE SA up again (ike_sa_import)
 * with its CHILD_SAs as installed: no exchange, no packet lost, DPD and
 * rekeys go on.  One it cannot take up (an exchange was half done, the
 * tunnel's config changed meanwhile) leaves its SAs forwarding until the
 * tunnel's new CHILD_SA replaces them, as a rekey does (make before break),
 * at most IKD_ORPHAN_MS.
 */
#define IKD_KEEP_MAGIC		0x4b707664u	/* "dvpK" */
#define IKD_KEEP_VERSION	1
#define IKD_ORPHAN_MS		120000

struct ikd_keep_hdr {
	uint32_t magic, version;
	char tunnel[DPVPN_NAME_LEN];	/* the IKE SA's connection (a %any one for a client) */
	uint8_t digest[32];		/* its config then (inst_tunnel_digest) */
};

#define IKD_KEEP_BUF	(sizeof(struct dpvpn_keep) + sizeof(struct ikd_keep_hdr) + IKE_KEEP_MAX)
_Static_assert(sizeof(struct ikd_keep_hdr) + IKE_KEEP_MAX <= DPVPN_KEEP_MAX,
	       "a record fits the dataplane's");

/* ike_keep_take's callback: the record to the dataplane, or its removal. */
static void keep_one(void *arg, const char *conn, const uint8_t *spi_i, const uint8_t *spi_r,
		     const uint8_t *rec, size_t len)
{
	static uint8_t buf[IKD_KEEP_BUF];
	struct dpvpn_keep *m = (struct dpvpn_keep *)buf;
	struct ikd_keep_hdr *h = (struct ikd_keep_hdr *)(m + 1);
	const struct ikd_conn *c = conn ? find_conn(conn) : NULL;
	int rc;

	(void)arg;
	if (k.dp == NULL || k.dp->lost || k.closing)
		return;
	memset(m, 0, sizeof(*m));
	memcpy(m->key, spi_i, 8);
	memcpy(m->key + 8, spi_r, 8);
	if (rec == NULL || c == NULL) {
		rc = dp_call(k.dp, DPVPN_MSG_KEEP_DEL, m, sizeof(*m), NULL, 0);
		if (rc != 0 && k.dp->status == -ENOENT)
			rc = 0;
	} else {
		*h = (struct ikd_keep_hdr){ .magic = IKD_KEEP_MAGIC, .version = IKD_KEEP_VERSION };
		snprintf(h->tunnel, sizeof(h->tunnel), "%s", conn);
		memcpy(h->digest, c->digest, sizeof(h->digest));
		memcpy(h + 1, rec, len);
		m->len = (uint32_t)(sizeof(*h) + len);
		rc = dp_call(k.dp, DPVPN_MSG_KEEP_SET, buf, (uint32_t)(sizeof(*m) + m->len), NULL, 0);
		explicit_bzero(buf, sizeof(*m) + m->len);
	}
	if (rc != 0 && k.keep_failed++ % 1000 == 0)	/* (said once per 1000) */
		fprintf(stderr, "dpvpnd: IKE SA state not kept in the dataplane (%s): a restart "
			"of dpvpnd would negotiate such a tunnel again\n", k.dp->err);
}

static void keep_flush(void)
{
	if (k.ctx != NULL)
		ike_keep_take(k.ctx);
}

/* One record of the last dpvpnd: its IKE SA taken up (true), or why not. */
static bool keep_restore_one(const struct dpvpn_keep *r)
{
	const struct ikd_keep_hdr *h = (const struct ikd_keep_hdr *)(r + 1);
	const struct ikd_conn *c = NULL;
	char err[160] = "", name[DPVPN_NAME_LEN] = "?";
	int rc = -EINVAL;

	bool ours = r->len >= sizeof(*h) && h->magic == IKD_KEEP_MAGIC &&
		    h->version == IKD_KEEP_VERSION;

	if (ours) {
		snprintf(name, sizeof(name), "%.*s", DPVPN_NAME_LEN - 1, h->tunnel);
		c = k.ctx ? find_conn(name) : NULL;
	}
	if (!ours)
		snprintf(err, sizeof(err), "not a record of this dpvpnd's version");
	else if (c == NULL)
		snprintf(err, sizeof(err), "the tunnel is no longer in the config");
	else if (memcmp(c->digest, h->digest, sizeof(c->digest)) != 0)
		snprintf(err, sizeof(err), "the tunnel's config changed while dpvpnd was away");
	else
		rc = ike_sa_import(k.ctx, (const uint8_t *)(h + 1), r->len - sizeof(*h), mono_ms(),
				   err, sizeof(err));
	if (rc != 0)
		fprintf(stderr, "dpvpnd: tunnel %s: IKE SA not taken up (%s)%s\n", name, err,
			c ? ": its SAs forward until a new IKE SA's replace them" : "");
	return rc == 0;
}

/*
 * Every record the dataplane keeps, page by page: its IKE SA taken up, or
 * the record removed once all are read (a removal moves records about).
 */
static int keep_restore(size_t *ok, size_t *seen)
{
	static uint8_t reply[DPVPN_MSG_MAX];
	uint8_t (*gone)[DPVPN_KEEP_KEY_LEN] = NULL;
	uint32_t start = 0, total = 0;
	int rc = 0;

	do {
		struct dpvpn_dump_req req = { .start = start };
		const struct dpvpn_dump_hdr *h = (const struct dpvpn_dump_hdr *)reply;
		size_t at = sizeof(*h);
		uint32_t got;

		if (dp_call_var(k.dp, DPVPN_MSG_KEEP_LIST, &req, sizeof(req), reply, sizeof(reply),
				&got) != 0 || got < sizeof(*h)) {
			rc = -1;
			break;
		}
		if (gone == NULL)
			gone = calloc(h->total + 1, sizeof(*gone));
		total = h->total;
		for (uint32_t i = 0; i < h->count && gone != NULL && *seen < total; i++) {
			const struct dpvpn_keep *r = (const struct dpvpn_keep *)(reply + at);

			if (at + sizeof(*r) > got || r->len > got - at - sizeof(*r))
				break;
			if (keep_restore_one(r))
				(*ok)++;
			else
				memcpy(gone[*seen - *ok], r->key, sizeof(r->key));
			at += sizeof(*r) + r->len;
			(*seen)++;
		}
		explicit_bzero(reply, got);
		start += h->count;
		if (h->count == 0 || gone == NULL)
			break;
	} while (start < total);
	for (size_t i = 0; gone != NULL && i < *seen - *ok; i++) {
		struct dpvpn_keep del = { .len = 0 };

		memcpy(del.key, gone[i], sizeof(del.key));
		if (dp_call(k.dp, DPVPN_MSG_KEEP_DEL, &del, sizeof(del), NULL, 0) != 0)
			fprintf(stderr, "dpvpnd: IKE record removal: %s\n", k.dp->err);
	}
	free(gone);
	return rc;
}

static int ref_order(const void *a, const void *b)
{
	const struct ikd_sa_ref *x = a, *y = b;

	return x->spi != y->spi ? (x->spi < y->spi ? -1 : 1) : (int)x->dir - (int)y->dir;
}

/* The IKE tunnel of k.conns that dataplane SA name is of (a hash, but for clients'). */
static const struct ikd_conn *ike_owner(const char *name)
{
	const struct ikd_conn *c = find_conn(name);

	for (size_t i = 0; c == NULL && strchr(name, '/') && i < k.n_conns; i++)
		if (k.conns[i].tpl.ra.any && inst_ike_owns(&k.conns[i].tpl, name))
			c = &k.conns[i];
	return c;
}

/* The IKE tunnels' SAs no IKE SA taken up holds: orphans, replaced or gone by a deadline. */
static int keep_sweep(void)
{
	struct dpvpn_sa_info *sas;
	uint32_t n;

	if (dp_dump(k.dp, DPVPN_MSG_SHOW_SA, sizeof(*sas), (void **)&sas, &n) != 0)
		return -1;
	if (k.n_claimed)
		qsort(k.claimed, k.n_claimed, sizeof(*k.claimed), ref_order);
	free(k.orphans);
	k.orphans = calloc(n ? n : 1, sizeof(*k.orphans));
	k.n_orphans = 0;
	for (uint32_t i = 0; k.orphans != NULL && i < n; i++) {
		struct ikd_sa_ref ref = { .spi = ntohl(sas[i].spi), .dir = sas[i].dir };
		struct ikd_orphan *o = &k.orphans[k.n_orphans];

		snprintf(o->name, sizeof(o->name), "%.*s", DPVPN_NAME_LEN - 1, sas[i].name);
		if (ike_owner(o->name) == NULL ||
		    (k.n_claimed && bsearch(&ref, k.claimed, k.n_claimed, sizeof(ref), ref_order)))
			continue;
		o->sa = ref;
		k.n_orphans++;
	}
	free(sas);
	k.orphans_until = mono_ms() + IKD_ORPHAN_MS;
	return k.orphans == NULL ? -1 : 0;
}

/* Orphan SA i goes now. */
static void orphan_del(size_t i)
{
	struct cfg_tunnel t = { .ike.on = 1 };

	snprintf(t.name, sizeof(t.name), "%s", k.orphans[i].name);
	inst_sa_del(k.dp, &t, k.orphans[i].sa.spi, k.orphans[i].sa.dir, k.verbose);
	k.orphans[i] = k.orphans[--k.n_orphans];
}

/*
 * c's first CHILD_SA since the restart, and the last dpvpnd left SAs of it
 * that no IKE SA holds: the new ones in, the policy moved to them in one
 * change, the old outbound SAs out.  The old inbound ones stay until the
 * orphans' deadline: the peer sends on them until its old IKE SA ends
 * (its liveness check finds no one there, as no IKE SA here has those SPIs;
 * strongSwan at once, for the same identity).  false: none of c's.
 */
static bool orphans_replaced(struct ikd_conn *c, struct cfg_tunnel *t)
{
	size_t n = 0;

	for (size_t i = 0; i < k.n_orphans; i++)
		n += !strcmp(k.orphans[i].name, c->tpl.name);
	if (n == 0)
		return false;
	batch_close();
	if (inst_tunnel_sas(k.dp, t, k.verbose, k.seq) != 0 ||
	    inst_policy_switch(k.dp, t, k.verbose) != 0)
		fprintf(stderr, "dpvpnd: tunnel %s: the new CHILD_SA did not replace the old "
			"SAs: %s\n", c->tpl.name, k.dp->err);
	for (size_t i = k.n_orphans; i-- > 0;)
		if (!strcmp(k.orphans[i].name, c->tpl.name) &&
		    k.orphans[i].sa.dir == DPVPN_DIR_OUT)
			orphan_del(i);
	fprintf(stderr, "dpvpnd: tunnel %s: IKE CHILD_SA up, SPIs 0x%08x in, 0x%08x out: it "
		"replaces the %zu SAs the last dpvpnd left (make before break)\n", c->tpl.name,
		t->in.spi, t->out.spi, n);
	return true;
}

/* Orphans no new CHILD_SA replaced by their deadline go. */
static void orphans_expire(uint64_t now)
{
	if (k.n_orphans == 0 || now < k.orphans_until)
		return;
	fprintf(stderr, "dpvpnd: IKE: %zu SAs the last dpvpnd left were not replaced in %d s: "
		"removed\n", k.n_orphans, IKD_ORPHAN_MS / 1000);
	for (int pass = 0; pass < 2; pass++)	/* outbound first: their policies go with them */
		for (size_t i = k.n_orphans; i-- > 0;)
			if ((k.orphans[i].sa.dir == DPVPN_DIR_OUT) == (pass == 0))
				orphan_del(i);
}

/* At ikd_open: the last dpvpnd's IKE SAs taken up, what none holds an orphan. */
static void keep_take_up(void)
{
	size_t ok = 0, seen = 0;

	ike_keep_start(k.ctx, keep_one, NULL);
	k.n_claimed = 0;
	if (keep_restore(&ok, &seen) != 0 || keep_sweep() != 0) {
		fprintf(stderr, "dpvpnd: IKE: the dataplane's records: %s\n", k.dp->err);
		return;
	}
	if (seen || k.n_orphans)
		fprintf(stderr, "dpvpnd: IKE: %zu of %zu IKE SAs taken up again; %zu SAs of IKE "
			"tunnels left to be replaced (at most %d s)\n", ok, seen, k.n_orphans,
			IKD_ORPHAN_MS / 1000);
	free(k.claimed);
	k.claimed = NULL;
	k.n_claimed = k.cap_claimed = 0;
}

int ikd_open(const char *config_path, const char *dp_socket, struct dp_client *dp,
	     struct seqstate *seq, bool verbose)
{
	struct cfg cfg;
	size_t n = 0;
	int rc = -1;

	k.dp = dp;		/* also for a reload that brings the first IKE tunnel */
	k.seq = seq;
	k.verbose = verbose;
	if (cfg_load(&cfg, config_path)) {	/* the PSKs: the installed copy has none */
		cfg_print_errors(&cfg, stderr);
		return -1;
	}
	for (size_t i = 0; i < cfg.n_tunnels; i++)
		n += cfg.tunnels[i]->ike.on;
	if (n == 0) {
		size_t ok = 0, seen = 0;

		cfg_free(&cfg);
		(void)keep_restore(&ok, &seen);	/* a last dpvpnd's records: removed */
		return 0;
	}
	inst_fingerprint(&cfg);		/* what a reload compares to */
	if (ikd_start(dp_socket, &cfg) || add_conns(&cfg))
		goto out;
	keep_take_up();
	fprintf(stderr, "dpvpnd: IKE: %zu tunnel(s), channel open\n", k.n_conns);
	rc = 0;
out:
	cfg_free(&cfg);
	if (rc != 0)
		ikd_close();
	return rc;
}

int ikd_fd(void)
{
	return k.chan.fd;
}

static void take(const uint8_t *buf, ssize_t n)
{
	const struct dpvpn_msg_hdr *h = (const struct dpvpn_msg_hdr *)buf;
	const struct dpvpn_ike_pkt *p = (const struct dpvpn_ike_pkt *)(h + 1);
	struct ike_addr local, remote;

	if (n < (ssize_t)sizeof(*h) || h->len != (size_t)n - sizeof(*h)) {
		k.rx_bad++;
		return;
	}
	if (h->flags == DPVPN_F_REPLY) {	/* to an IKE_TX */
		if (h->status < 0) {
			k.tx_refused++;
			snprintf(k.last_tx_error, sizeof(k.last_tx_error), "%.*s",
				 (int)(h->len < 150 ? h->len : 150), (const char *)(h + 1));
			if (k.verbose)
				fprintf(stderr, "dpvpnd: IKE_TX: %s\n", k.last_tx_error);
		}
		return;
	}
	if (h->flags != DPVPN_F_PUSH || h->type != DPVPN_MSG_IKE_RX || h->len < sizeof(*p) ||
	    p->len != h->len - sizeof(*p) ||
	    (p->local.family != DPVPN_AF_INET && p->local.family != DPVPN_AF_INET6)) {
		k.rx_bad++;
		return;
	}
	from_dp_addr(&local, &p->local, p->local_port);
	from_dp_addr(&remote, &p->remote, p->remote_port);
	ike_input(k.ctx, &local, &remote, (const uint8_t *)(p + 1), p->len, mono_ms());
}

int ikd_input(void)
{
	static uint8_t buf[IKD_BUF + 64];

	for (int i = 0; i < 256 && k.chan.fd >= 0; i++) {
		ssize_t n = recv(k.chan.fd, buf, sizeof(buf), MSG_DONTWAIT | MSG_TRUNC);

		if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
			fprintf(stderr, "dpvpnd: IKE channel closed\n");
			dp_close(&k.chan);
			k.chan.fd = -1;
			return -1;
		}
		if (n < 0)
			break;
		take(buf, n > (ssize_t)sizeof(buf) ? -1 : n);
	}
	batch_close();
	return 0;
}

void ikd_tick(void)
{
	uint64_t now = mono_ms();

	/*
	 * dpvpnd's loop calls this after every wake (each pass over IKE
	 * messages, each operator request); a tick walks every SA, client and
	 * connection: with 10 000 of them, at most every IKD_TICK_MS, or each
	 * message would cost a walk of them all.
	 */
	keep_flush();		/* what the messages just read changed */
	if (k.ctx == NULL || now < k.next_tick)
		return;
	k.next_tick = now + IKD_TICK_MS;
	ike_tick(k.ctx, now);
	orphans_expire(now);
	for (size_t i = 0; i < k.n_clients; i++) {
		struct ikd_conn *c = &k.clients[i].c;

		for (int l = 0; l < IKD_LATER_MAX; l++) {
			if (c->later[l].spi != 0 && now >= c->later[l].at) {
				inst_sa_del(k.dp, &c->tpl, c->later[l].spi, DPVPN_DIR_IN,
					    k.verbose);
				c->later[l].spi = 0;
			}
		}
	}
	for (size_t i = 0; i < k.n_conns; i++) {
		struct ikd_conn *c = &k.conns[i];

		for (int l = 0; l < IKD_LATER_MAX; l++) {
			if (c->later[l].spi != 0 && now >= c->later[l].at) {
				inst_sa_del(k.dp, &c->tpl, c->later[l].spi, DPVPN_DIR_IN,
					    k.verbose);
				c->later[l].spi = 0;
			}
		}

		if (c->retry_at == 0 || now < c->retry_at)
			continue;
		c->retry_at = 0;
		if (ike_initiate(k.ctx, c->tpl.name, now) != 0 && k.verbose)
			fprintf(stderr, "dpvpnd: tunnel %s: IKE already negotiating\n", c->tpl.name);
	}
	keep_flush();		/* what the timers changed */
}

static void count_sa(void *arg, const struct ike_sa_status *st)
{
	*(size_t *)arg += st->state == IKE_ST_ESTABLISHED;
}

void ikd_close(void)
{
	size_t n = 0;

	if (k.ctx != NULL) {
		keep_flush();
		ike_sa_walk(k.ctx, count_sa, &n);
		if (n > 0)
			fprintf(stderr, "dpvpnd: IKE: %zu IKE SAs and their CHILD_SAs stay in the "
				"dataplane: the next dpvpnd takes them up\n", n);
		k.closing = true;	/* nothing removed, no record dropped */
		ike_free(k.ctx);
		k.closing = false;
	}
	for (size_t i = 0; i < k.n_conns; i++)	/* and the replaced ones still kept */
		for (int l = 0; l < IKD_LATER_MAX; l++)
			if (k.conns[i].later[l].spi != 0)
				inst_sa_del(k.dp, &k.conns[i].tpl, k.conns[i].later[l].spi,
					    DPVPN_DIR_IN, k.verbose);
	k.ctx = NULL;
	for (size_t i = 0; i < k.n_conns; i++) {	/* the context is gone: theirs too */
		free(k.conns[i].last_end);
		ike_pki_cred_free(k.conns[i].cred);
		ike_pki_trust_free(k.conns[i].trust);
	}
	dp_close(&k.chan);
	k.chan.fd = -1;
	while (k.n_clients > 0)		/* (ike_free's child_down removed them) */
		client_gone(&k.clients[k.n_clients - 1].c);
	free(k.clients);
	k.clients = NULL;
	k.cap_clients = 0;
	free(k.conns);
	free(k.ports);
	k.conns = NULL;
	k.ports = NULL;
	k.n_conns = k.cap_conns = k.n_ports = 0;
	k.next_tick = 0;
	memset(&k.conn_idx, 0, sizeof(k.conn_idx));
	memset(&k.client_idx, 0, sizeof(k.client_idx));
	free(k.orphans);
	k.orphans = NULL;
	k.n_orphans = 0;
	ikd_reload_cancel();
}

/*
 * The dataplane says an SA of tunnel name reached a soft lifetime (bytes,
 * packets or seconds): for a keying = ike tunnel's current CHILD_SA, a
 * rekey.  1 if it was one of ours (rekeying, or already), 0 if not IKE's.
 */
/* A remote-access client's tunnel by its name (CONN/VIP); a scan, per command or event. */
static struct ikd_conn *client_by_name(const char *name)
{
	for (size_t i = 0; k.ctx != NULL && i < k.n_clients; i++)
		if (!strcmp(k.clients[i].c.tpl.name, name))
			return &k.clients[i].c;
	return NULL;
}

int ikd_soft_lifetime(const char *name, uint32_t spi)
{
	struct ikd_conn *c = k.ctx ? find_conn(name) : NULL, *cl = NULL;
	int rc;

	if (c == NULL)
		c = cl = client_by_name(name);	/* its section's name is every client's */
	if (c == NULL || !c->up || (spi != c->spi_in && spi != c->spi_out))
		return c != NULL;
	rc = cl ? ike_child_rekey_spi(k.ctx, c->spi_in, mono_ms()) :
		  ike_child_rekey(k.ctx, name, mono_ms());
	fprintf(stderr, "dpvpnd: tunnel %s: SA 0x%08x soft lifetime: %s\n", name, spi,
		rc == 0 ? "rekeying" : rc == -EBUSY ? "a rekey is under way" : strerror(-rc));
	return 1;
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
	const struct ikd_conn *p = parent[0] ? find_conn(parent) : NULL;
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
		struct ikd_conn *c = t->ike.on && k.ctx != NULL ? find_conn(t->name) : NULL;

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
	ike_conn_remove(k.ctx, c->tpl.name, now);	/* on_child_down: out of the dataplane */
	for (int l = 0; l < IKD_LATER_MAX; l++)
		if (c->later[l].spi != 0)
			inst_sa_del(k.dp, &c->tpl, c->later[l].spi, DPVPN_DIR_IN, k.verbose);
	fprintf(stderr, "dpvpnd: tunnel %s: IKE connection removed (reload)\n", c->tpl.name);
	ike_pki_cred_free(c->cred);	/* nothing of the context points to them now */
	ike_pki_trust_free(c->trust);
	c->cred = NULL;
	c->trust = NULL;
}

void ikd_reload_drop(const struct cfg *next)
{
	uint64_t now = mono_ms();

	for (size_t i = 0; k.ctx != NULL && i < k.n_conns;) {
		struct ikd_conn *c = &k.conns[i];
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

	if (k.ctx == NULL && pending.n == 0) {
		ikd_reload_cancel();
		return 0;			/* no IKE before, none now */
	}
	if (k.ctx == NULL && ikd_start(next->dp_socket, next) != 0) {
		snprintf(msg, len, "; keying = ike: IKE could not start (see dpvpnd's log): "
			 "those tunnels stay down");
		ikd_close();
		return -1;
	}
	if (k.n_ports == next->n_ports)		/* addresses may have moved */
		memcpy(k.ports, next->ports, next->n_ports * sizeof(*k.ports));
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
	if (k.n_clients > 0 && dp_dump(k.dp, DPVPN_MSG_SHOW_SA, sizeof(**sas), (void **)sas,
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
	for (size_t i = 0; i < k.n_clients; i++)
		if (conn == NULL || !strcmp(k.clients[i].conn, conn))
			json_array_append_new(a, client_json(&k.clients[i], sas, n_sas));
	free(sas);
	return a;
}

json_t *ikd_show(char *err, size_t err_len)
{
	const struct ike_stats *s;
	json_t *sas, *rej, *pki, *fdrop, *res;

	if (k.ctx == NULL) {
		snprintf(err, err_len, "no IKE: no tunnel has keying = ike");
		return NULL;
	}
	s = ike_get_stats(k.ctx);
	sas = json_array();
	rej = json_object();
	ike_sa_walk(k.ctx, walk_one, sas);
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
			 "channel", "open", k.chan.fd >= 0, "tx_refused", (json_int_t)k.tx_refused,
			 "tx_failed", (json_int_t)k.tx_failed, "rx_bad", (json_int_t)k.rx_bad);
	/* remote access: clients refused an address (pool exhausted, no CP request) */
	json_object_set_new(json_object_get(res, "stats"), "pool_exhausted",
			    json_integer((json_int_t)s->pool_exhausted));
	json_object_set_new(json_object_get(res, "stats"), "cp_missing",
			    json_integer((json_int_t)s->cp_missing));
	json_object_set_new(json_object_get(res, "stats"), "after_end",
			    json_integer((json_int_t)s->after_end));
	return res;
}

/*
 * rekey / terminate of a remote-access client's tunnel (CONN/VIP): its
 * CHILD_SA rekeyed, or its IKE SA ended, found by SPI; the client initiates
 * and rekeys its IKE SA itself.
 */
static int client_command(const struct ikd_conn *c, int op, char *msg, size_t len)
{
	int rc = op == IKD_REKEY ? ike_child_rekey_spi(k.ctx, c->spi_in, mono_ms()) :
		 op == IKD_TERMINATE ? ike_terminate_spi(k.ctx, c->spi_in, mono_ms()) : -EPERM;

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

	if (k.ctx != NULL && find_conn(name) == NULL && client_by_name(name) != NULL)
		return client_command(client_by_name(name), op, msg, len);
	if (k.ctx == NULL || find_conn(name) == NULL) {
		snprintf(msg, len, "no IKE tunnel \"%.64s\"", name);
		return -1;
	}
	rc = op == IKD_INITIATE ? ike_initiate(k.ctx, name, now) :
	     op == IKD_REKEY ? ike_child_rekey(k.ctx, name, now) :
	     op == IKD_REKEY_IKE ? ike_sa_rekey(k.ctx, name, now) : ike_terminate(k.ctx, name, now);
	if (rc != 0) {
		snprintf(msg, len, "tunnel %s: %s", name, rc == -EALREADY ? "already negotiating or up"
			 : rc == -ENOENT ? "no IKE SA" : rc == -EBUSY ? "a rekey is under way"
			 : strerror(-rc));
		return -1;
	}
	if (op == IKD_INITIATE || op == IKD_TERMINATE) {
		find_conn(name)->held = op == IKD_TERMINATE;	/* on purpose: not again */
		find_conn(name)->retry_at = 0;
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

	for (size_t i = 0; i < k.n_clients; i++)
		n += !strcmp(k.clients[i].conn, conn);
	return n;
}

int ikd_tunnel(const char *name, char *state, size_t state_len, char *detail,
	       size_t detail_len)
{
	struct ikd_conn *c = k.ctx != NULL ? find_conn(name) : NULL;
	struct newest n = { .conn = name };

	if (c == NULL && k.ctx != NULL && (c = client_by_name(name)) != NULL) {
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
	ike_sa_walk(k.ctx, newest_one, &n);
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
	for (size_t i = 0; k.ctx != NULL && i < k.n_clients; i++)
		if (!strcmp(k.clients[i].conn, conn))
			fn(arg, &(struct ctl_tunnel){ .name = k.clients[i].c.tpl.name,
						      .cfg = &k.clients[i].c.tpl });
}

json_t *ikd_tunnel_json(const char *name)
{
	struct ikd_conn *c = k.ctx != NULL ? find_conn(name) : NULL;
	const struct ike_alg_set none = { 0 };

	if (c == NULL && k.ctx != NULL && (c = client_by_name(name)) != NULL)
		return json_pack("{s:o,s:o,s:o,s:o,s:[o],s:I}", "ike", algs_json(&c->ike),
				 "esp", algs_json(&c->esp),
				 "client", client_json(client_of(c), NULL, 0),
				 "remote_ts", ike_prefix_json(&client_of(c)->vip),	/* its lease */
				 "remote_ts_list", ike_prefix_json(&client_of(c)->vip),
				 "rekeys", (json_int_t)c->rekeys);
	if (c == NULL)
		return NULL;
	return json_pack("{s:o,s:o,s:o,s:o,s:I}", "ike", algs_json(c->up ? &c->ike : &none),
			 "esp", algs_json(c->up ? &c->esp : &none),
			 "clients", c->tpl.ra.any ? clients_json(name) : json_null(),
			 "last_ike_end", c->last_end ? json_string(c->last_end) : json_null(),
			 "rekeys", (json_int_t)c->rekeys);
}
