/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * install.c - turn struct cfg into dataplane messages, in dependency order:
 * ports first (they add the connected routes), neighbours and routes, then
 * the SAs before the policies that name them (inside one batch), START last.
 *
 * An SA_ADD message holds a key: it is built on the stack, sent straight from
 * there (dp_call does not copy it) and wiped right after.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <net/if.h>
#include <stdlib.h>

#include <openssl/evp.h>
#include <openssl/rand.h>
#include <stdio.h>
#include <string.h>

#include "dpvpn_alg.h"
#include "install.h"
#include "twin.h"
#include "seqstate.h"

#define INST_POLICY_PRIORITY	100	/* one policy per tunnel; room for others */

static const struct inst_tap *tap;

void inst_set_tap(const struct inst_tap *t)
{
	tap = t;
}

/* The dataplane took msg for t: HA's standby gets it too (inst_set_tap). */
static void tapped(const struct cfg_tunnel *t, uint16_t type, const void *msg, uint32_t len)
{
	if (tap != NULL && tap->sent != NULL)
		tap->sent(t, type, msg, len);
}

static int call(struct dp_client *dp, bool verbose, const char *what, uint16_t type,
		const void *msg, uint32_t len)
{
	if (dp_call(dp, type, msg, len, NULL, 0)) {
		fprintf(stderr, "dpvpnd: %s: %s\n", what, dp->err);
		return -1;
	}
	if (verbose)
		fprintf(stderr, "dpvpnd: %s: done\n", what);
	return 0;
}

/* Config addresses (IPv4 in host order) to the protocol's, family and all;
 * family 0 stays 0 (none). */
static struct dpvpn_addr net_addr(const struct cfg_addr *a)
{
	struct dpvpn_addr n = { .family = a->family };

	if (a->family == DPVPN_AF_INET)
		n.v4 = htonl(a->v4);
	else if (a->family == DPVPN_AF_INET6)
		memcpy(n.v6, a->v6, sizeof(n.v6));
	return n;
}

static struct dpvpn_prefix net_prefix(const struct cfg_prefix *p)
{
	struct dpvpn_addr a = net_addr(&p->addr);
	struct dpvpn_prefix n = { .family = a.family, .len = a.family ? p->len : 0 };

	memcpy(n.v6, a.v6, sizeof(n.v6));	/* the union, IPv4 or IPv6 */
	return n;
}

/*
 * PORT_SET; then, for a port with a host-interface, the twin the dataplane
 * made gets the port's addresses, MTU and link up (twin.c).  o: the port as it
 * was (a reload; NULL: none): a twin it named and p does not is deleted
 * (the dataplane closed it, persist kept the interface), and on the same
 * twin its addresses that p no longer has are taken off.
 */
static int port_set(struct dp_client *dp, const struct cfg_port *p, const struct cfg_port *o,
		    bool verbose)
{
	bool same = o != NULL && strcmp(o->host_iface, p->host_iface) == 0;
	struct dpvpn_port_cfg m = {
		.port_id = p->id, .role = p->role, .addr4 = net_prefix(&p->addr4),
		.addr6 = net_prefix(&p->addr6), .mtu = p->mtu, .extra4 = net_prefix(&p->extra4),
	};
	char what[64], err[160];

	snprintf(m.host_iface, sizeof(m.host_iface), "%s", p->host_iface);
	snprintf(what, sizeof(what), "port %s", p->name);
	if (call(dp, verbose, what, DPVPN_MSG_PORT_SET, &m, sizeof(m)))
		return -1;
	if (o != NULL && o->host_iface[0] && !same && twin_del(o->host_iface, err, sizeof(err))) {
		fprintf(stderr, "dpvpnd: port %s: %s\n", p->name, err);
		return -1;
	}
	if (p->host_iface[0] == '\0')
		return 0;
	if (twin_setup(p->host_iface, &p->addr4, &p->addr6, same ? &o->addr4 : NULL,
			  same ? &o->addr6 : NULL, p->mtu, err, sizeof(err))) {
		fprintf(stderr, "dpvpnd: port %s: %s\n", p->name, err);
		return -1;
	}
	if (verbose)
		fprintf(stderr, "dpvpnd: port %s: host-interface %s up\n", p->name, p->host_iface);
	return 0;
}

/* ---- tunnel interfaces (route-based tunnels) ---- */

/*
 * The dataplane's tunnel interface ids, by tunnel name: given out here, the
 * lowest free one to a route-based tunnel first installed, taken back when
 * it leaves the config.  A dpvpnd started against a forwarding dataplane
 * reads them back (SHOW_TUNIFS, inst_reconcile), so routes keep theirs.
 */
static char tunif_names[DPVPN_TUNIF_MAX][DPVPN_NAME_LEN];

int inst_tunif_id(const char *name, bool create)
{
	int free_id = -1;

	for (int i = 0; i < DPVPN_TUNIF_MAX; i++) {
		if (!strncmp(tunif_names[i], name, DPVPN_NAME_LEN) && tunif_names[i][0])
			return i;
		if (free_id < 0 && !tunif_names[i][0])
			free_id = i;
	}
	if (create && free_id >= 0)
		snprintf(tunif_names[free_id], DPVPN_NAME_LEN, "%s", name);
	return create ? free_id : -1;
}

const char *inst_tunif_name(uint16_t id)
{
	return id < DPVPN_TUNIF_MAX && tunif_names[id][0] ? tunif_names[id] : NULL;
}

/*
 * Tunnel t's twin (host-interface; the dataplane makes it at TUNIF_SET and
 * a new dataplane makes it again): its inside addresses, MTU, and link up
 * while the tunnel has an outbound SA.  The MTU: the tunnel's mtu, else
 * TUN_TWIN_MTU, which an ESP tunnel over a 1500-byte port fits in either
 * outer family with UDP encapsulation.
 */
#define TUN_TWIN_MTU	1400
static int tun_twin_link(const struct cfg_tunnel *t, bool up)
{
	char err[160];

	if (!t->host_iface[0])
		return 0;
	if (twin_tun_setup(t->host_iface, &t->inside4, &t->inside6,
			   t->mtu ? t->mtu : TUN_TWIN_MTU, up, err, sizeof(err))) {
		fprintf(stderr, "dpvpnd: tunnel %s: %s\n", t->name, err);
		return -1;
	}
	return 0;
}

/* TUNIF_SET: tunnel t's interface up on its outbound SA, or down. */
static int tunif_msg(struct dp_client *dp, const struct cfg_tunnel *t, bool up, bool verbose)
{
	int id = inst_tunif_id(t->name, true);
	struct dpvpn_tunif m = { .rpf = t->rpf, .up = up, .out_spi = up ? htonl(t->out.spi) : 0 };
	char what[80];

	if (id < 0) {
		fprintf(stderr, "dpvpnd: tunnel %s: no tunnel interface left (%d)\n", t->name,
			DPVPN_TUNIF_MAX);
		return -1;
	}
	m.id = (uint16_t)id;
	snprintf(m.name, sizeof(m.name), "%s", t->name);
	snprintf(m.host_iface, sizeof(m.host_iface), "%s", t->host_iface);
	if (t->inside4.addr.family)
		m.inside4 = htonl(t->inside4.addr.v4);
	if (t->inside6.addr.family)
		memcpy(m.inside6, t->inside6.addr.v6, sizeof(m.inside6));
	snprintf(what, sizeof(what), "tunnel %s interface %d %s", t->name, id, up ? "up" : "down");
	if (call(dp, verbose, what, DPVPN_MSG_TUNIF_SET, &m, sizeof(m)))
		return -1;
	return tun_twin_link(t, up);
}

/* Every route-based tunnel of cfg has its interface before routes name it. */
static int ensure_tunifs(struct dp_client *dp, const struct cfg *cfg, bool verbose)
{
	for (size_t i = 0; i < cfg->n_tunnels; i++)
		if (cfg->tunnels[i]->route && inst_tunif_id(cfg->tunnels[i]->name, false) < 0 &&
		    tunif_msg(dp, cfg->tunnels[i], false, verbose))
			return -1;
	return 0;
}

/* Does a route of cfg lead into tunnel name (one taken down keeps its routes)? */
static bool routed_into(const struct cfg *cfg, const char *name)
{
	for (size_t i = 0; i < cfg->n_routes; i++)
		for (unsigned k = 0; k < cfg->routes[i].n_tunnels; k++)
			if (!strncmp(cfg->routes[i].tunnels[k], name, DPVPN_NAME_LEN))
				return true;
	return false;
}

/*
 * The interfaces of tunnels that are no longer route-based tunnels of cfg, and
 * that none of its routes names, go.  One a dpvpnctl route still leads into
 * stays (-EBUSY) until that route is deleted and the next reload.
 */
static void drop_tunifs(struct dp_client *dp, const struct cfg *cfg, bool verbose)
{
	for (uint16_t id = 0; id < DPVPN_TUNIF_MAX; id++) {
		const struct cfg_tunnel *t = tunif_names[id][0] ?
					     inst_find_tunnel(cfg, tunif_names[id]) : NULL;
		struct dpvpn_tunif m = { .id = id };

		if (!tunif_names[id][0] || (t != NULL && t->route) ||
		    routed_into(cfg, tunif_names[id]))
			continue;
		if (dp_call(dp, DPVPN_MSG_TUNIF_DEL, &m, sizeof(m), NULL, 0) == 0 ||
		    dp->status == -ENOENT)
			tunif_names[id][0] = '\0';
		else if (dp->status != -EBUSY)
			fprintf(stderr, "dpvpnd: tunnel %.32s interface removal: %s\n",
				tunif_names[id], dp->err);
		if (verbose && tunif_names[id][0] == '\0')
			fprintf(stderr, "dpvpnd: tunnel interface %u removal: done\n", id);
	}
}

/* A route as the dataplane takes it: out a port, or into tunnels by id. */
static int route_to_msg(const struct cfg_route *r, struct dpvpn_route *m)
{
	*m = (struct dpvpn_route){ .dst = net_prefix(&r->dst) };
	if (r->n_tunnels == 0) {
		m->port_id = r->port_id;
		m->gateway = net_addr(&r->via);	/* family 0: on-link */
		return 0;
	}
	m->kind = DPVPN_ROUTE_TUNNEL;
	m->n_tunif = r->n_tunnels;
	for (unsigned k = 0; k < r->n_tunnels; k++) {
		int id = inst_tunif_id(r->tunnels[k], false);

		if (id < 0) {
			fprintf(stderr, "dpvpnd: route to tunnel %s: it has no interface\n",
				r->tunnels[k]);
			return -1;
		}
		m->tunif[k] = (uint16_t)id;
	}
	return 0;
}

static void route_what(const struct cfg_route *r, char *what, size_t len, const char *tail)
{
	struct dpvpn_prefix d = net_prefix(&r->dst);
	char a[INET6_ADDRSTRLEN] = "?";

	if (r->in_routes) {
		inet_ntop(d.family == DPVPN_AF_INET6 ? AF_INET6 : AF_INET, d.v6, a, sizeof(a));
		snprintf(what, len, "route %s/%u%s", a, d.len, tail);
	} else {
		snprintf(what, len, "route %s%s", r->name, tail);
	}
}

static int install_ports(struct dp_client *dp, const struct cfg *cfg, bool verbose)
{
	for (size_t i = 0; i < cfg->n_ports; i++)
		if (port_set(dp, &cfg->ports[i], NULL, verbose))
			return -1;
	return 0;
}

static int install_neighs(struct dp_client *dp, const struct cfg *cfg, bool verbose)
{
	char what[64];

	for (size_t i = 0; i < cfg->n_neighs; i++) {
		const struct cfg_neigh *n = &cfg->neighs[i];
		struct dpvpn_neigh m = { .port_id = n->port_id, .addr = net_addr(&n->addr) };

		memcpy(m.mac, n->mac, sizeof(m.mac));
		snprintf(what, sizeof(what), "neighbor %s", n->name);
		if (call(dp, verbose, what, DPVPN_MSG_NEIGH_ADD, &m, sizeof(m)))
			return -1;
	}
	return 0;
}

static int install_routes(struct dp_client *dp, const struct cfg *cfg, bool verbose)
{
	char what[96];

	if (ensure_tunifs(dp, cfg, verbose))
		return -1;
	for (size_t i = 0; i < cfg->n_routes; i++) {
		const struct cfg_route *r = &cfg->routes[i];
		struct dpvpn_route m;

		route_what(r, what, sizeof(what), "");
		if (route_to_msg(r, &m) || call(dp, verbose, what, DPVPN_MSG_ROUTE_ADD, &m,
						sizeof(m)))
			return -1;
	}
	return 0;
}

/*
 * An outbound SA continues above every number reserved before (seqstate.h):
 * the new block is on disk before the SA may use it.
 */
static int reserve(struct seqstate *seq, const struct cfg_tunnel *t, uint32_t spi,
		   struct dpvpn_sa_cfg *m)
{
	uint64_t cap = t->esn ? UINT64_MAX - 1 : UINT32_MAX;
	uint64_t base = seq_get(seq, t->name, spi);

	if (base < t->out_seq_start)
		base = t->out_seq_start;
	if (base >= cap) {
		fprintf(stderr, "dpvpnd: tunnel %s outbound SA 0x%08x: its sequence numbers "
			"are used up (state file): it will send nothing; give it a new SPI "
			"and key\n", t->name, spi);
		m->seq_start = cap;
		return 0;
	}
	m->seq_start = base;
	m->seq_limit = cap - base > seq_block(seq) ? base + seq_block(seq) : cap;
	if (seq_put(seq, t->name, spi, m->seq_limit)) {
		fprintf(stderr, "dpvpnd: tunnel %s: cannot save the sequence reservation: %s\n",
			t->name, strerror(errno));
		return -1;
	}
	/* HA: silent (limit = start, never 0: no limit) until the standby has it */
	if (tap != NULL && tap->hold != NULL && tap->hold(t->name, spi, m->seq_limit))
		m->seq_limit = m->seq_start = m->seq_start ? m->seq_start : 1;
	return 0;
}

/* An SA's selectors: the tunnel's first pair; a route-based tunnel's 0.0.0.0/0
 * (the dataplane takes the other family's as ::/0). */
static struct dpvpn_prefix sa_ts(const struct cfg_tunnel *t, bool local)
{
	if (t->route && !t->local_ts.addr.family)	/* static keys: no selectors */
		return (struct dpvpn_prefix){ .family = DPVPN_AF_INET };
	return net_prefix(local ? &t->local_ts : &t->remote_ts);
}

/*
 * An SA's selector lists: the tunnel's; for a route tunnel keyed by IKE the
 * negotiated ones of the first pair's family (the dataplane takes one family
 * per list and leaves the other 0/0: IKE's 0.0.0.0/0 + ::/0 is 0.0.0.0/0,
 * a peer that narrowed the IPv4 side is held to it).
 */
static unsigned sa_more(const struct cfg_tunnel *t, bool local, struct dpvpn_prefix *out)
{
	const struct cfg_prefix *first = local ? &t->local_ts : &t->remote_ts;
	const struct cfg_prefix *more = local ? t->more_lts : t->more_rts;
	unsigned n = local ? t->n_more_lts : t->n_more_rts, k = 0;

	for (unsigned i = 0; i < n && i < CFG_TS_MAX - 1; i++)
		if (!t->route || more[i].addr.family == first->addr.family)
			out[k++] = net_prefix(&more[i]);
	return k;
}

static int install_sa(struct dp_client *dp, const struct cfg_tunnel *t,
		      const struct cfg_sa_key *k, uint8_t dir, bool verbose,
		      struct seqstate *seq)
{
	const struct dpvpn_alg_info *a = dpvpn_alg_get(t->alg);
	size_t klen = a->key_len;	/* the config check made sure a exists */
	struct dpvpn_sa_cfg m = {
		.spi = htonl(k->spi),
		.dir = dir,
		.alg = t->alg,
		.key_len = (uint8_t)klen,
		.auth_key_len = a->auth_key_len,
		.df = dir == DPVPN_DIR_OUT ? t->df : DPVPN_DF_COPY,
		.udp_local = t->udp ? t->udp_local : 0,
		.udp_remote = t->udp ? t->udp_remote : 0,
		.esn = t->esn,
		.seq_start = dir == DPVPN_DIR_OUT ? t->out_seq_start : 0,
		.mtu = t->mtu,
		.mss = t->mss,
		.frag_outer = t->frag_outer,
		.udp_spread_log2 = dir == DPVPN_DIR_OUT && t->udp ? t->udp_spread_log2 : 0,
		.life_bytes = { t->life_bytes[0], t->life_bytes[1] },
		.life_packets = { t->life_packets[0], t->life_packets[1] },
		.life_seconds = { t->life_seconds[0], t->life_seconds[1] },
		.replay_window = t->replay_window,
		.local = net_addr(&t->local),
		.remote = net_addr(&t->remote),
		.local_ts = sa_ts(t, true),
		.remote_ts = sa_ts(t, false),
	};
	char what[80];
	int rc;

	if (t->route) {
		int id = inst_tunif_id(t->name, true);

		if (id < 0)
			return -1;
		m.flags = DPVPN_SA_F_ROUTE;
		m.tunif = (uint8_t)id;
	}
	if (t->host_access && dir == DPVPN_DIR_IN)
		m.flags |= DPVPN_SA_F_HOST;
	m.n_more_lts = (uint8_t)sa_more(t, true, m.more_lts);
	m.n_more_rts = (uint8_t)sa_more(t, false, m.more_rts);
	snprintf(m.name, sizeof(m.name), "%s", t->name);
	if (dir == DPVPN_DIR_OUT && seq != NULL && reserve(seq, t, k->spi, &m))
		return -1;
	memcpy(m.key, k->keymat, klen);
	memcpy(m.salt, k->keymat + klen, a->salt_len);
	memcpy(m.auth_key, k->authmat, a->auth_key_len);
	snprintf(what, sizeof(what), "tunnel %s %s SA", t->name,
		 dir == DPVPN_DIR_IN ? "inbound" : "outbound");
	rc = call(dp, verbose, what, DPVPN_MSG_SA_ADD, &m, sizeof(m));
	if (rc == 0)
		tapped(t, DPVPN_MSG_SA_ADD, &m, sizeof(m));
	explicit_bzero(&m, sizeof(m));
	return rc;
}

/*
 * The tunnel's outbound policies: one per pair of its local and remote
 * prefixes (n_local x n_remote, at most CFG_TS_MAX^2), pair k = local
 * k / n_remote with remote k % n_remote, all to its outbound SA.
 */
static unsigned n_policies(const struct cfg_tunnel *t)
{
	if (t->route)		/* its traffic is routed: TUNIF_SET instead */
		return 0;
	return cfg_tunnel_n_ts(t, true) * cfg_tunnel_n_ts(t, false);
}

static struct dpvpn_policy tunnel_policy(const struct cfg_tunnel *t, unsigned k)
{
	unsigned nr = cfg_tunnel_n_ts(t, false);

	return (struct dpvpn_policy){
		.src = net_prefix(cfg_tunnel_ts(t, true, k / nr)),
		.dst = net_prefix(cfg_tunnel_ts(t, false, k % nr)),
		.spi = htonl(t->out.spi),
		.priority = INST_POLICY_PRIORITY,
	};
}

int inst_tunnel_sas(struct dp_client *dp, const struct cfg_tunnel *t, bool verbose,
		    struct seqstate *seq)
{
	return install_sa(dp, t, &t->in, DPVPN_DIR_IN, verbose, seq) ||
	       install_sa(dp, t, &t->out, DPVPN_DIR_OUT, verbose, seq) ? -1 : 0;
}

/* ---- what the dataplane holds of a tunnel ---- */

/*
 * The dataplane's SAs and policies, dumped once (a reload, a reconcile) and
 * sorted, so that finding a tunnel's takes a binary search: 100k tunnels
 * are 200k SAs and 100k policies.
 */
struct held {
	struct dpvpn_sa_info *sa;	/* by SPI, then direction */
	uint8_t *gone;			/* sa[k] removed since the dump */
	uint32_t n_sa;
	struct dpvpn_policy *pol;	/* host bits cleared; by selectors */
	uint32_t n_pol;
	struct dpvpn_tunif_info *tunif;	/* tunnel interfaces, by index */
	uint32_t n_tunif;
};

static void held_free(struct held *h)
{
	free(h->sa);
	free(h->gone);
	free(h->pol);
	free(h->tunif);
	*h = (struct held){ 0 };
}

static int sa_order(const void *a, const void *b)
{
	const struct dpvpn_sa_info *x = a, *y = b;
	uint32_t s = ntohl(x->spi), t = ntohl(y->spi);

	return s != t ? (s < t ? -1 : 1) : (int)x->dir - (int)y->dir;
}

/* A prefix as the dataplane keeps a policy's: host bits and reserved bytes 0. */
static struct dpvpn_prefix masked(const struct dpvpn_prefix *p)
{
	struct dpvpn_prefix m = { .family = p->family, .len = p->len };
	unsigned bits = p->len > 128 ? 128 : p->len, full = bits / 8, rest = bits % 8;

	memcpy(m.v6, p->v6, full);
	if (rest)
		m.v6[full] = p->v6[full] & (uint8_t)(0xff00 >> rest);
	return m;
}

static int selector_order(const void *a, const void *b)
{
	const struct dpvpn_policy *x = a, *y = b;
	int c = memcmp(&x->src, &y->src, sizeof(x->src));

	return c ? c : memcmp(&x->dst, &y->dst, sizeof(x->dst));
}

static int held_load(struct dp_client *dp, struct held *h)
{
	*h = (struct held){ 0 };
	if (dp_dump(dp, DPVPN_MSG_SHOW_SA, sizeof(*h->sa), (void **)&h->sa, &h->n_sa) != 0 ||
	    dp_dump(dp, DPVPN_MSG_SHOW_POLICIES, sizeof(*h->pol), (void **)&h->pol,
		    &h->n_pol) != 0 ||
	    dp_dump(dp, DPVPN_MSG_SHOW_TUNIFS, sizeof(*h->tunif), (void **)&h->tunif,
		    &h->n_tunif) != 0) {
		held_free(h);
		return -1;
	}
	h->gone = calloc(h->n_sa + 1, 1);
	if (h->gone == NULL) {
		snprintf(dp->err, sizeof(dp->err), "out of memory");
		held_free(h);
		return -1;
	}
	for (uint32_t k = 0; k < h->n_pol; k++) {
		h->pol[k].src = masked(&h->pol[k].src);
		h->pol[k].dst = masked(&h->pol[k].dst);
	}
	if (h->n_sa)
		qsort(h->sa, h->n_sa, sizeof(*h->sa), sa_order);
	if (h->n_pol)
		qsort(h->pol, h->n_pol, sizeof(*h->pol), selector_order);
	return 0;
}

/* The SA (SPI in host order, direction) among h's, or -1 (none, or removed). */
static long held_sa(const struct held *h, uint32_t spi, uint8_t dir)
{
	struct dpvpn_sa_info key = { .spi = htonl(spi), .dir = dir };
	const struct dpvpn_sa_info *s = h->n_sa ? bsearch(&key, h->sa, h->n_sa, sizeof(key),
							  sa_order) : NULL;
	long k = s ? s - h->sa : -1;

	return k >= 0 && !h->gone[k] ? k : -1;
}

/* One family, one length, the same first len bits. */
static bool same_prefix(const struct dpvpn_prefix *a, const struct dpvpn_prefix *b)
{
	struct dpvpn_prefix x = masked(a), y = masked(b);

	return memcmp(&x, &y, sizeof(x)) == 0;
}

/*
 * Whether the dataplane's SA s is tunnel t's SA in direction dir as this
 * config installs it: all that can be read back (keys cannot, nor what the
 * dataplane derives: MTU, MSS).
 */
static bool sa_as_configured(const struct dpvpn_sa_info *s, const struct cfg_tunnel *t,
			     uint8_t dir)
{
	struct dpvpn_addr local = net_addr(&t->local), remote = net_addr(&t->remote);
	struct dpvpn_prefix lts = sa_ts(t, true), rts = sa_ts(t, false);

	return strncmp(s->name, t->name, DPVPN_NAME_LEN) == 0 && s->alg == t->alg &&
	       s->flags == ((t->route ? DPVPN_SA_F_ROUTE : 0) |
			    (t->host_access && dir == DPVPN_DIR_IN ? DPVPN_SA_F_HOST : 0)) &&
	       s->dir == dir && ntohl(s->spi) == (dir == DPVPN_DIR_OUT ? t->out.spi : t->in.spi) &&
	       memcmp(&s->local, &local, sizeof(local)) == 0 &&
	       memcmp(&s->remote, &remote, sizeof(remote)) == 0 &&
	       same_prefix(&s->local_ts, &lts) && same_prefix(&s->remote_ts, &rts) &&
	       s->udp_local == (t->udp ? t->udp_local : 0) &&
	       s->udp_remote == (t->udp ? t->udp_remote : 0) && s->esn == t->esn &&
	       s->df == (dir == DPVPN_DIR_OUT ? t->df : DPVPN_DF_COPY) &&
	       s->replay_window == t->replay_window &&
	       memcmp(s->life_bytes, t->life_bytes, sizeof(t->life_bytes)) == 0 &&
	       memcmp(s->life_packets, t->life_packets, sizeof(t->life_packets)) == 0 &&
	       memcmp(s->life_seconds, t->life_seconds, sizeof(t->life_seconds)) == 0;
}

enum { GAP_IN = 1, GAP_OUT = 2, GAP_POLICY = 4, GAP_ALL = 7 };

/* Route-based tunnel t's interface is up on its outbound SA with its rpf. */
static bool tunif_as_configured(const struct held *h, const struct cfg_tunnel *t)
{
	int id = inst_tunif_id(t->name, false);

	for (uint32_t k = 0; id >= 0 && k < h->n_tunif; k++)
		if (h->tunif[k].id == id)
			return h->tunif[k].up && h->tunif[k].rpf == t->rpf &&
			       ntohl(h->tunif[k].out_spi) == t->out.spi &&
			       !strncmp(h->tunif[k].name, t->name, DPVPN_NAME_LEN);
	return false;
}

static int del_sa(struct dp_client *dp, const struct cfg_tunnel *t, uint32_t spi, uint8_t dir,
		  bool verbose);

/* A policy in the tunnel's place (pair k) that is not its own goes (by its selectors). */
static int del_policy(struct dp_client *dp, const struct cfg_tunnel *t, unsigned k, bool verbose)
{
	struct dpvpn_policy pol = tunnel_policy(t, k);

	if (dp_call(dp, DPVPN_MSG_POLICY_DEL, &pol, sizeof(pol), NULL, 0) == 0 ||
	    dp->status == -ENOENT) {
		tapped(t, DPVPN_MSG_POLICY_DEL, &pol, sizeof(pol));
		if (verbose)
			fprintf(stderr, "dpvpnd: tunnel %s foreign policy removal: done\n", t->name);
		return 0;
	}
	fprintf(stderr, "dpvpnd: tunnel %s foreign policy removal: %s\n", t->name, dp->err);
	return -1;
}

/* The tunnel's policy k among h's: 1 its own (SPI and priority too), -1 another
 * one on its selectors, 0 none. */
static int policy_state(const struct held *h, const struct cfg_tunnel *t, unsigned k)
{
	struct dpvpn_policy want = tunnel_policy(t, k);
	const struct dpvpn_policy *p;
	int own = 0;

	want.src = masked(&want.src);
	want.dst = masked(&want.dst);
	p = h->n_pol ? bsearch(&want, h->pol, h->n_pol, sizeof(want), selector_order) : NULL;
	if (p == NULL)
		return 0;
	while (p > h->pol && selector_order(p - 1, &want) == 0)	/* the first of them */
		p--;
	for (; p < h->pol + h->n_pol && selector_order(p, &want) == 0; p++) {
		if (p->spi != want.spi || p->priority != want.priority)
			return -1;
		own = 1;
	}
	return own;
}

/*
 * What static tunnel t lacks in the dataplane, as h shows it (GAP_*): an SA
 * missing or not as configured, its policy missing or another in its place.
 * What is there otherwise is removed here (the outbound SA first: its
 * policies go with it) and marked gone in h; fill_gaps installs the rest.
 */
static int tunnel_gaps(struct dp_client *dp, const struct cfg_tunnel *t, struct held *h,
		       bool verbose, unsigned *gaps)
{
	long out = held_sa(h, t->out.spi, DPVPN_DIR_OUT), in = held_sa(h, t->in.spi, DPVPN_DIR_IN);
	unsigned n_pol = n_policies(t);
	int pol = 1, st[CFG_TS_MAX * CFG_TS_MAX];

	for (unsigned k = 0; k < n_pol; k++) {
		st[k] = policy_state(h, t, k);
		pol = st[k] < 0 ? -1 : pol == 1 ? st[k] : pol;
	}
	*gaps = 0;
	if (out < 0 || !sa_as_configured(&h->sa[out], t, DPVPN_DIR_OUT))
		*gaps |= GAP_OUT | GAP_POLICY;	/* a new outbound SA: a new policy */
	if (in < 0 || !sa_as_configured(&h->sa[in], t, DPVPN_DIR_IN))
		*gaps |= GAP_IN;
	if (pol != 1 || (t->route && !tunif_as_configured(h, t)))
		*gaps |= GAP_POLICY;	/* route-based: its interface (TUNIF_SET) */
	if ((*gaps & GAP_OUT) && out >= 0) {
		if (del_sa(dp, t, t->out.spi, DPVPN_DIR_OUT, verbose))
			return -1;
		h->gone[out] = 1;
	}
	if ((*gaps & GAP_IN) && in >= 0) {
		if (del_sa(dp, t, t->in.spi, DPVPN_DIR_IN, verbose))
			return -1;
		h->gone[in] = 1;
	}
	/* Foreign ones go; with lists, own ones too when some pair lacks its
	 * policy and the outbound SA (which takes them along) stays: fill_gaps
	 * adds them all again. */
	for (unsigned k = 0; k < n_pol; k++)
		if ((st[k] < 0 || (st[k] > 0 && (*gaps & GAP_POLICY) && !(*gaps & GAP_OUT))) &&
		    del_policy(dp, t, k, verbose))
			return -1;
	return 0;
}

/* Install what tunnel t lacks (GAP_*), inbound SA first: nothing is sent
 * before the peer's answers can be taken. */
static int fill_gaps(struct dp_client *dp, const struct cfg_tunnel *t, unsigned gaps,
		     bool verbose, struct seqstate *seq)
{
	char what[80];

	if ((gaps & GAP_IN) && install_sa(dp, t, &t->in, DPVPN_DIR_IN, verbose, seq))
		return -1;
	if ((gaps & GAP_OUT) && install_sa(dp, t, &t->out, DPVPN_DIR_OUT, verbose, seq))
		return -1;
	if (!(gaps & GAP_POLICY))
		return 0;
	if (t->route)		/* its interface on the new SA: one store */
		return tunif_msg(dp, t, true, verbose);
	snprintf(what, sizeof(what), "tunnel %s policy", t->name);
	for (unsigned k = 0; k < n_policies(t); k++) {
		struct dpvpn_policy pol = tunnel_policy(t, k);

		if (call(dp, verbose, what, DPVPN_MSG_POLICY_ADD, &pol, sizeof(pol)))
			return -1;
		tapped(t, DPVPN_MSG_POLICY_ADD, &pol, sizeof(pol));
	}
	return 0;
}

/* What a tunnel the config did not change had lost in the dataplane. */
static void log_repair(const struct cfg_tunnel *t, unsigned gaps)
{
	bool in = gaps & GAP_IN, out = gaps & GAP_OUT, pol = (gaps & GAP_POLICY) && !out;

	fprintf(stderr, "dpvpnd: tunnel %s: repaired: the dataplane lacked%s%s%s (or held it "
		"otherwise): installed again%s\n", t->name, in ? " its inbound SA" : "",
		out ? (in ? ", its outbound SA" : " its outbound SA") : "",
		pol ? (in ? ", its policy" : " its policy") : "",
		out ? " (its sequence numbers continue above those reserved)" : "");
}

static int install_tunnel(struct dp_client *dp, const struct cfg_tunnel *t, bool verbose,
			  struct seqstate *seq)
{
	if (!dpvpn_alg_get(t->alg)->encrypts)
		fprintf(stderr, "dpvpnd: WARNING: tunnel %s uses %s: its traffic is NOT "
			"encrypted (integrity only, RFC 2410)\n", t->name, cfg_alg_name(t->alg));
	return fill_gaps(dp, t, GAP_ALL, verbose, seq);
}

/*
 * A batch of changes to the dataplane: its policies go live at BATCH_COMMIT,
 * only once the sequence numbers reserved in it are on disk (seqstate.h):
 * one write and fsync for a whole install instead of one per tunnel (which
 * made 100 000 tunnels take hours).  commit_batch ends seq's batch whatever
 * happened in between; with ok false or the state not saved, nothing is
 * committed.
 */
static int begin_batch(struct dp_client *dp, struct seqstate *seq, bool verbose)
{
	if (seq != NULL)
		seq_batch_begin(seq);
	return call(dp, verbose, "batch", DPVPN_MSG_BATCH_BEGIN, NULL, 0);
}

static int commit_batch(struct dp_client *dp, struct seqstate *seq, bool verbose, bool ok)
{
	if (seq != NULL && seq_batch_end(seq) != 0) {
		snprintf(dp->err, sizeof(dp->err), "cannot save the sequence reservations: %s",
			 strerror(errno));
		fprintf(stderr, "dpvpnd: %s\n", dp->err);
		return -1;
	}
	return ok ? call(dp, verbose, "policies", DPVPN_MSG_BATCH_COMMIT, NULL, 0) : -1;
}

/* keying = ike tunnels are installed by dpvpnd's IKE (ikd_child.c) once negotiated. */
static int install_tunnels(struct dp_client *dp, const struct cfg *cfg, bool verbose,
			   struct seqstate *seq)
{
	for (size_t i = 0; i < cfg->n_tunnels; i++)
		if (!cfg->tunnels[i]->ike.on && install_tunnel(dp, cfg->tunnels[i], verbose, seq))
			return -1;
	return 0;
}

int inst_tunnel_up(struct dp_client *dp, const struct cfg_tunnel *t, bool verbose,
		   struct seqstate *seq)
{
	return install_tunnel(dp, t, verbose, seq);
}

/*
 * IKE's installs of one pass over its messages (ikd_child.c) in one batch: the
 * dataplane builds its policy classifier once for them all, not once per
 * client (an rte_acl build is O(rules): 10 000 clients one by one were
 * quadratic).  New tunnels only: ikd commits before any removal or rekey,
 * whose SA removals publish the classifier at once (spd_del_slot), so that
 * no policy goes live before its SA's sequence reservation is on disk.
 */
static bool in_outer_batch;

int inst_batch_begin(struct dp_client *dp, struct seqstate *seq, bool verbose)
{
	if (in_outer_batch)
		return 0;
	if (begin_batch(dp, seq, verbose) != 0) {
		if (seq != NULL)
			seq_batch_end(seq);
		return -1;
	}
	in_outer_batch = true;
	return 0;
}

int inst_batch_commit(struct dp_client *dp, struct seqstate *seq, bool verbose)
{
	if (!in_outer_batch)
		return 0;
	in_outer_batch = false;
	return commit_batch(dp, seq, verbose, true);
}

/*
 * The tunnel's outbound policy to t->out.spi in one published change: the
 * old policy's removal and the new one's addition in a batch, so no packet
 * finds no policy in between (make-before-break rekeys).
 */
int inst_policy_switch(struct dp_client *dp, const struct cfg_tunnel *t, bool verbose)
{
	char what[80];

	if (t->route)		/* a route tunnel's rekey: one store, no ACL rebuild */
		return tunif_msg(dp, t, true, verbose);
	snprintf(what, sizeof(what), "tunnel %s policy switch", t->name);
	if (call(dp, verbose, "batch", DPVPN_MSG_BATCH_BEGIN, NULL, 0))
		return -1;
	for (unsigned k = 0; k < n_policies(t); k++) {
		struct dpvpn_policy pol = tunnel_policy(t, k);

		if (dp_call(dp, DPVPN_MSG_POLICY_DEL, &pol, sizeof(pol), NULL, 0) != 0 &&
		    dp->status != -ENOENT)
			fprintf(stderr, "dpvpnd: %s: %s\n", what, dp->err);
		if (call(dp, verbose, what, DPVPN_MSG_POLICY_ADD, &pol, sizeof(pol))) {
			call(dp, verbose, "policies", DPVPN_MSG_BATCH_COMMIT, NULL, 0);
			return -1;
		}
		tapped(t, DPVPN_MSG_POLICY_ADD, &pol, sizeof(pol));	/* (replaces by selectors) */
	}
	return call(dp, verbose, "policies", DPVPN_MSG_BATCH_COMMIT, NULL, 0);
}

/*
 * A dataplane not started yet may hold what a dpvpnd killed in the middle of
 * its install left there: those SAs go first (an outbound one takes its
 * policies with it), or SA_ADD would find them and fail, on every restart.
 * Nothing was sent with them: the ports stay stopped until START, and the
 * outbound SAs installed again start above their reservations.  Ports,
 * neighbours and routes are simply set again.
 */
static int clear_unstarted(struct dp_client *dp, bool verbose)
{
	struct dpvpn_sa_info *sa;
	uint32_t n;
	int rc = 0;

	if (dp_dump(dp, DPVPN_MSG_SHOW_SA, sizeof(*sa), (void **)&sa, &n)) {
		fprintf(stderr, "dpvpnd: SAs of the dataplane: %s\n", dp->err);
		return -1;
	}
	if (n > 0)
		fprintf(stderr, "dpvpnd: dataplane not started but holding %u SAs (an install "
			"was interrupted): removing them first\n", n);
	for (uint32_t k = 0; k < n && rc == 0; k++) {
		struct dpvpn_sa_id id = { .spi = sa[k].spi, .dir = sa[k].dir };

		rc = call(dp, verbose, "SA of an interrupted install removal", DPVPN_MSG_SA_DEL,
			  &id, sizeof(id));
	}
	free(sa);
	return rc;
}

int inst_all(struct dp_client *dp, struct cfg *cfg, bool verbose, struct seqstate *seq)
{
	int rc = -1;

	/* a fresh dataplane (the first, or a new one after a crash) has no
	 * tunnel interfaces: ids an earlier one held are given out anew, else
	 * ensure_tunifs would skip them and routes name ids it lacks */
	memset(tunif_names, 0, sizeof(tunif_names));
	/* One batch: the dataplane builds its policy classifier once, at the
	 * commit, however many tunnels there are. */
	if (!clear_unstarted(dp, verbose) &&
	    !install_ports(dp, cfg, verbose) && !install_neighs(dp, cfg, verbose) &&
	    !install_routes(dp, cfg, verbose) &&
	    !commit_batch(dp, seq, verbose, !begin_batch(dp, seq, verbose) &&
					    !install_tunnels(dp, cfg, verbose, seq)))
		rc = call(dp, verbose, "start", DPVPN_MSG_START, NULL, 0);
	inst_fingerprint(cfg);
	cfg_wipe_keys(cfg);
	return rc;
}

/* ---- live reload ---- */

/*
 * A tunnel's keys, remembered only as a digest keyed with a secret of this
 * process (so the digest says nothing about the keys to anyone else): what a
 * reload compares to tell a changed key from an unchanged one.
 */
static void fingerprint(struct cfg_tunnel *t)
{
	static uint8_t secret[32];
	static int have_secret;
	unsigned int len = 0;
	EVP_MD_CTX *c;

	if (!have_secret)
		have_secret = RAND_bytes(secret, sizeof(secret)) == 1;
	c = EVP_MD_CTX_new();
	if (c == NULL || EVP_DigestInit_ex(c, EVP_sha256(), NULL) != 1 ||
	    EVP_DigestUpdate(c, secret, sizeof(secret)) != 1 ||
	    EVP_DigestUpdate(c, t->out.keymat, sizeof(t->out.keymat)) != 1 ||
	    EVP_DigestUpdate(c, t->out.authmat, sizeof(t->out.authmat)) != 1 ||
	    EVP_DigestUpdate(c, t->in.keymat, sizeof(t->in.keymat)) != 1 ||
	    EVP_DigestUpdate(c, t->in.authmat, sizeof(t->in.authmat)) != 1 ||
	    EVP_DigestUpdate(c, &t->ike.psk_len, sizeof(t->ike.psk_len)) != 1 ||
	    EVP_DigestUpdate(c, t->ike.psk, sizeof(t->ike.psk)) != 1 ||
	    EVP_DigestFinal_ex(c, t->fp, &len) != 1)
		RAND_bytes(t->fp, sizeof(t->fp));	/* unknown: counts as changed */
	EVP_MD_CTX_free(c);
}

void inst_fingerprint(struct cfg *cfg)
{
	for (size_t i = 0; i < cfg->n_tunnels; i++)
		fingerprint(cfg->tunnels[i]);
}

/* t without line numbers and key text (the digest fp stands for the keys and the PSK). */
static void tunnel_normalize(struct cfg_tunnel *t)
{
	t->line = t->local_line = t->remote_line = t->lts_line = t->rts_line = 0;
	t->port_line = t->frag_line = t->seq_line = 0;
	for (struct cfg_sa_key *k = &t->out; k; k = k == &t->out ? &t->in : NULL) {
		k->spi_line = k->key_line = k->key_is_file = 0;
		k->auth_line = k->auth_is_file = 0;
		explicit_bzero(k->keymat, sizeof(k->keymat));
		explicit_bzero(k->authmat, sizeof(k->authmat));
	}
	t->ike.line = t->ike.psk_line = 0;
	t->ike.pki.auth_line = t->ike.pki.cert_line = t->ike.pki.key_line = 0;
	t->ike.pki.ca_line = t->ike.pki.crl_line = 0;	/* pki.digest stands for the files */
	t->ike.psk_len = 0;
	explicit_bzero(t->ike.psk, sizeof(t->ike.psk));
	t->mode_line = t->rpf_line = t->host_line = t->inside_line = 0;
	t->host_access_line = 0;
}

/* Equal but for line numbers and key text (the digest stands for the keys and the PSK). */
int inst_tunnel_same(const struct cfg_tunnel *a, const struct cfg_tunnel *b)
{
	struct cfg_tunnel x = *a, y = *b;
	int same;

	tunnel_normalize(&x);
	tunnel_normalize(&y);
	same = memcmp(&x, &y, sizeof(x)) == 0;
	explicit_bzero(&x, sizeof(x));
	explicit_bzero(&y, sizeof(y));
	return same;
}

void inst_tunnel_digest(const struct cfg_tunnel *t, uint8_t out[32])
{
	struct cfg_tunnel x = *t;
	unsigned int len = 32;

	tunnel_normalize(&x);
	memset(x.fp, 0, sizeof(x.fp));		/* digests under this process's secret: */
	memset(x.ike.pki.digest, 0, sizeof(x.ike.pki.digest));	/* new files keep SAs */
	if (EVP_Digest(&x, sizeof(x), out, &len, EVP_sha256(), NULL) != 1)
		RAND_bytes(out, 32);		/* unknown: counts as changed */
	explicit_bzero(&x, sizeof(x));
}

static void port_lines(struct cfg_port *p)
{
	p->line = p->id_line = p->extra_line = p->host_line = 0;
}
static void neigh_lines(struct cfg_neigh *n)
{
	n->line = n->port_line = 0;
	n->section = NULL;	/* [neighbor x] respelled [neighbour x]: the same entry */
}
static void route_lines(struct cfg_route *r)
{
	r->line = r->port_line = r->via_line = r->tunnel_line = 0;
	memset(r->tunnel_lines, 0, sizeof(r->tunnel_lines));
}

struct cfg_tunnel *inst_find_tunnel(const struct cfg *c, const char *name)
{
	for (size_t i = 0; i < c->n_tunnels; i++)
		if (!strcmp(c->tunnels[i]->name, name))
			return c->tunnels[i];
	return NULL;
}

static int del_sa(struct dp_client *dp, const struct cfg_tunnel *t, uint32_t spi, uint8_t dir,
		  bool verbose)
{
	struct dpvpn_sa_id id = { .spi = htonl(spi), .dir = dir };
	char what[80];

	snprintf(what, sizeof(what), "tunnel %s %s SA removal", t->name,
		 dir == DPVPN_DIR_IN ? "inbound" : "outbound");
	if (dp_call(dp, DPVPN_MSG_SA_DEL, &id, sizeof(id), NULL, 0) == 0 || dp->status == -ENOENT) {
		tapped(t, DPVPN_MSG_SA_DEL, &id, sizeof(id));
		if (verbose)
			fprintf(stderr, "dpvpnd: %s: done\n", what);
		/* the interface went down with its outbound SA (tunif_sa_gone): the twin too */
		if (t->route && dir == DPVPN_DIR_OUT && spi == t->out.spi && t->host_iface[0] &&
		    if_nametoindex(t->host_iface) != 0)
			tun_twin_link(t, false);
		return 0;	/* (one an operator deleted already is gone as wanted) */
	}
	fprintf(stderr, "dpvpnd: %s: %s\n", what, dp->err);
	return -1;
}

int inst_sa_del(struct dp_client *dp, const struct cfg_tunnel *t, uint32_t spi, uint8_t dir,
		bool verbose)
{
	return del_sa(dp, t, spi, dir, verbose);
}

int inst_tunnel_down(struct dp_client *dp, const struct cfg_tunnel *t, bool verbose)
{
	/* the outbound SA first: its policy goes with it (no packet meets a gap) */
	int rc = del_sa(dp, t, t->out.spi, DPVPN_DIR_OUT, verbose);

	return del_sa(dp, t, t->in.spi, DPVPN_DIR_IN, verbose) || rc ? -1 : 0;
}

#define SAME_ITEM(type, a, b, zero) ({ type x_ = *(a), y_ = *(b); zero(&x_); zero(&y_); \
					     memcmp(&x_, &y_, sizeof(x_)) == 0; })
/* Whether item is one of arr[0..n) (compared as SAME_ITEM compares). */
#define IN_LIST(type, item, arr, n, zero) ({ bool in_ = false; \
		for (size_t j_ = 0; j_ < (n) && !in_; j_++) \
			in_ = SAME_ITEM(type, item, &(arr)[j_], zero); \
		in_; })


/* The connected route of an address that goes away. */
static int del_connected(struct dp_client *dp, const struct cfg_prefix *old,
			 const struct cfg_prefix *now, bool verbose)
{
	struct dpvpn_route m = { .dst = net_prefix(old) };

	if (old->addr.family == 0 || memcmp(old, now, sizeof(*old)) == 0)
		return 0;
	return call(dp, verbose, "connected route removal", DPVPN_MSG_ROUTE_DEL, &m, sizeof(m));
}

static int neigh_msg(struct dp_client *dp, const struct cfg_neigh *n, uint16_t type,
		     bool verbose)
{
	struct dpvpn_neigh m = { .port_id = n->port_id, .addr = net_addr(&n->addr) };
	char what[64];

	memcpy(m.mac, n->mac, sizeof(m.mac));
	snprintf(what, sizeof(what), "neighbor %s%s", n->name,
		 type == DPVPN_MSG_NEIGH_DEL ? " removal" : "");
	return call(dp, verbose, what, type, &m, sizeof(m));
}

static int route_msg(struct dp_client *dp, const struct cfg_route *r, uint16_t type,
		     bool verbose)
{
	struct dpvpn_route m = { .dst = net_prefix(&r->dst) };	/* ROUTE_DEL: by dst */
	char what[96];

	route_what(r, what, sizeof(what), type == DPVPN_MSG_ROUTE_DEL ? " removal" : "");
	if (type == DPVPN_MSG_ROUTE_ADD && route_to_msg(r, &m))
		return -1;
	return call(dp, verbose, what, type, &m, sizeof(m));
}

/* Ports (same ids, changed roles or addresses), neighbours and routes: the difference. */
static int reload_tables(struct dp_client *dp, const struct cfg *cur, const struct cfg *next,
			 size_t *changes, bool v)
{
	for (size_t i = 0; i < cur->n_ports; i++) {
		const struct cfg_port *o = &cur->ports[i], *p = &next->ports[i];

		if (SAME_ITEM(struct cfg_port, o, p, port_lines))
			continue;
		if (del_connected(dp, &o->addr4, &p->addr4, v) ||
		    del_connected(dp, &o->addr6, &p->addr6, v) || port_set(dp, p, o, v))
			return -1;
		(*changes)++;
	}
	for (size_t i = 0; i < cur->n_neighs; i++)
		if (!IN_LIST(struct cfg_neigh, &cur->neighs[i], next->neighs, next->n_neighs,
			     neigh_lines) &&
		    neigh_msg(dp, &cur->neighs[i], DPVPN_MSG_NEIGH_DEL, v) == 0)
			(*changes)++;	/* (an entry the dataplane forgot already is fine) */
	for (size_t k = 0; k < next->n_neighs; k++)
		if (!IN_LIST(struct cfg_neigh, &next->neighs[k], cur->neighs, cur->n_neighs,
			     neigh_lines) &&
		    (neigh_msg(dp, &next->neighs[k], DPVPN_MSG_NEIGH_ADD, v) || !++*changes))
			return -1;
	for (size_t i = 0; i < cur->n_routes; i++)
		if (!IN_LIST(struct cfg_route, &cur->routes[i], next->routes, next->n_routes,
			     route_lines) &&
		    (route_msg(dp, &cur->routes[i], DPVPN_MSG_ROUTE_DEL, v) || !++*changes))
			return -1;
	for (size_t k = 0; k < next->n_routes; k++)
		if (!IN_LIST(struct cfg_route, &next->routes[k], cur->routes, cur->n_routes,
			     route_lines) &&
		    (route_msg(dp, &next->routes[k], DPVPN_MSG_ROUTE_ADD, v) || !++*changes))
			return -1;
	return 0;
}

int inst_reload_check(const struct cfg *cur, const struct cfg *next, char *msg, size_t len)
{
	bool same_ports = cur->n_ports == next->n_ports;

	for (size_t i = 0; same_ports && i < cur->n_ports; i++)
		same_ports = cur->ports[i].id == next->ports[i].id;
	if (strcmp(cur->dp_socket, next->dp_socket) || strcmp(cur->ctl_socket, next->ctl_socket) ||
	    strcmp(cur->state, next->state) || strcmp(cur->group, next->group) ||
	    strcmp(cur->metrics, next->metrics) || !same_ports) {
		snprintf(msg, len, "the set of ports or [dataplane]/[control] changed: that needs "
			 "a restart (reload applies tunnels, port roles and addresses, neighbours "
			 "and routes); nothing changed");
		return -1;
	}
	return 0;
}

/* ---- what a reload did, tunnel by tunnel ---- */

const char *const inst_fate_names[INST_FATES] = {
	[INST_ADDED] = "added", [INST_REMOVED] = "removed", [INST_CHANGED] = "changed",
	[INST_REPAIRED] = "repaired", [INST_UNCHANGED] = "unchanged",
};

void inst_report_clear(struct inst_report *r)
{
	free(r->name);
	free(r->fate);
	*r = (struct inst_report){ 0 };
}

/* Counted always; named unless memory ran out (the list is then short). */
static void report(struct inst_report *r, const char *name, enum inst_fate f)
{
	r->count[f]++;
	if (r->n == r->cap) {
		size_t cap = r->cap ? 2 * r->cap : 16;
		char (*n)[DPVPN_NAME_LEN] = realloc(r->name, cap * sizeof(*n));
		uint8_t *fate = n ? realloc(r->fate, cap) : NULL;

		if (n != NULL)
			r->name = n;
		if (fate == NULL)
			return;
		r->fate = fate;
		r->cap = cap;
	}
	snprintf(r->name[r->n], sizeof(r->name[r->n]), "%s", name);
	r->fate[r->n++] = (uint8_t)f;
}

/* ---- live reload: remove, repair, install ---- */

/* Removed and changed tunnels go first (deleting an outbound SA removes its
 * policy in the dataplane); then what unchanged ones lost is found. */
static int reload_remove(struct dp_client *dp, const struct cfg *cur, const struct cfg *next,
			 struct held *h, unsigned *gaps, bool verbose, struct inst_report *rep)
{
	for (size_t i = 0; i < cur->n_tunnels; i++) {
		const struct cfg_tunnel *t = cur->tunnels[i], *n = inst_find_tunnel(next, t->name);

		if (n && inst_tunnel_same(t, n))
			continue;
		report(rep, t->name, n ? INST_CHANGED : INST_REMOVED);
		if (t->ike.on)	/* IKE's: ikd_conn.c */
			continue;
		if (del_sa(dp, t, t->out.spi, DPVPN_DIR_OUT, verbose) ||
		    del_sa(dp, t, t->in.spi, DPVPN_DIR_IN, verbose))
			return -1;
	}
	for (size_t i = 0; i < next->n_tunnels; i++) {
		const struct cfg_tunnel *n = next->tunnels[i], *t = inst_find_tunnel(cur, n->name);

		if (t && inst_tunnel_same(t, n) && !n->ike.on &&
		    tunnel_gaps(dp, n, h, verbose, &gaps[i]))
			return -1;
	}
	return 0;
}

/* New and changed tunnels, and what unchanged ones lost (in the caller's batch). */
static int reload_install(struct dp_client *dp, const struct cfg *cur, const struct cfg *next,
			  const unsigned *gaps, bool verbose, struct seqstate *seq,
			  struct inst_report *rep)
{
	for (size_t i = 0; i < next->n_tunnels; i++) {
		const struct cfg_tunnel *n = next->tunnels[i], *t = inst_find_tunnel(cur, n->name);

		if (t && inst_tunnel_same(t, n)) {
			if (gaps[i] == 0) {
				report(rep, n->name, INST_UNCHANGED);
				continue;
			}
			log_repair(n, gaps[i]);
			if (fill_gaps(dp, n, gaps[i], verbose, seq))
				return -1;
			report(rep, n->name, INST_REPAIRED);
			continue;
		}
		if (t == NULL)
			report(rep, n->name, INST_ADDED);
		if (!n->ike.on && install_tunnel(dp, n, verbose, seq))
			return -1;
	}
	return 0;
}

int inst_reload(struct dp_client *dp, struct cfg *cur, struct cfg *next, struct seqstate *seq,
		bool verbose, char *msg, size_t len, struct inst_report *rep)
{
	unsigned *gaps = calloc(next->n_tunnels + 1, sizeof(*gaps));
	struct held h = { 0 };
	size_t tables = 0;
	const size_t *c = rep->count;

	if (inst_reload_check(cur, next, msg, len) != 0)
		goto refused;
	inst_fingerprint(next);
	if (gaps == NULL || held_load(dp, &h) != 0) {
		snprintf(msg, len, "reload refused, nothing changed: the dataplane's SAs and "
			 "policies could not be read (%s)", gaps ? dp->err : "out of memory");
		goto refused;
	}
	if (reload_remove(dp, cur, next, &h, gaps, verbose, rep) ||
	    ensure_tunifs(dp, next, verbose) ||	/* before routes name them */
	    reload_tables(dp, cur, next, &tables, verbose) ||
	    commit_batch(dp, seq, verbose, !begin_batch(dp, seq, verbose) &&
				 !reload_install(dp, cur, next, gaps, verbose, seq, rep)))
		goto failed;
	drop_tunifs(dp, next, verbose);		/* after the routes into them */
	snprintf(msg, len, "reloaded: %zu tunnels added, %zu removed, %zu changed, %zu unchanged, "
		 "%zu repaired; %zu port, neighbour and route changes", c[INST_ADDED],
		 c[INST_REMOVED], c[INST_CHANGED], c[INST_UNCHANGED], c[INST_REPAIRED], tables);
	cfg_wipe_keys(next);
	held_free(&h);
	free(gaps);
	return 0;
failed:
	snprintf(msg, len, "reload failed half-way (%s): the dataplane has part of the new "
		 "config; fix it and reload again", dp->err);
refused:
	cfg_wipe_keys(next);
	held_free(&h);
	free(gaps);
	return -1;
}

bool inst_ike_owns(const struct cfg_tunnel *t, const char *sa_name)
{
	size_t n = strnlen(t->name, 15);	/* a client's tunnel: "%.15s/%.15s" (ikd_conn.c) */

	if (!t->ike.on)
		return false;
	if (!strncmp(sa_name, t->name, DPVPN_NAME_LEN))
		return true;
	return t->ra.any && !strncmp(sa_name, t->name, n) && sa_name[n] == '/';
}

static int tunnel_name_order(const void *a, const void *b)
{
	return strcmp((*(const struct cfg_tunnel *const *)a)->name,
		      (*(const struct cfg_tunnel *const *)b)->name);
}

/*
 * Whether SA name is of one of the keying = ike tunnels ike[n] (sorted by
 * name), or of a client of one of the remote = %any ones, ra[n_ra].
 */
static bool ike_owned(const struct cfg_tunnel **ike, size_t n, const struct cfg_tunnel **ra,
		      size_t n_ra, const char *name)
{
	struct cfg_tunnel key;
	const struct cfg_tunnel *kp = &key;

	snprintf(key.name, sizeof(key.name), "%s", name);
	if (n && bsearch(&kp, ike, n, sizeof(*ike), tunnel_name_order))
		return true;
	for (size_t i = 0; strchr(name, '/') && i < n_ra; i++)
		if (inst_ike_owns(ra[i], name))
			return true;
	return false;
}

/*
 * Mark in keep the SAs of cfg's static tunnels that are as configured, and
 * those of its keying = ike tunnels, left to ikd_open: it takes up the IKE
 * SAs whose records the dataplane holds, with their SAs, and replaces the
 * rest make before break ([ops] issue 27).  *ike: how many.
 */
static void mark_wanted(const struct cfg *cfg, const struct held *h, bool *keep, size_t *ike)
{
	const struct cfg_tunnel **it = calloc(2 * cfg->n_tunnels + 1, sizeof(*it)), **ra;
	size_t n = 0, n_ra = 0;

	*ike = 0;
	ra = it ? it + cfg->n_tunnels : NULL;
	for (size_t i = 0; it != NULL && i < cfg->n_tunnels; i++) {
		if (cfg->tunnels[i]->ike.on)
			it[n++] = cfg->tunnels[i];
		if (cfg->tunnels[i]->ike.on && cfg->tunnels[i]->ra.any)
			ra[n_ra++] = cfg->tunnels[i];
	}
	if (n)
		qsort(it, n, sizeof(*it), tunnel_name_order);
	for (uint32_t k = 0; k < h->n_sa; k++) {
		char name[DPVPN_NAME_LEN];

		snprintf(name, sizeof(name), "%.*s", DPVPN_NAME_LEN - 1, h->sa[k].name);
		if (ike_owned(it, n, ra, n_ra, name)) {
			keep[k] = true;
			(*ike)++;
		}
	}
	free(it);
	for (size_t i = 0; i < cfg->n_tunnels; i++) {
		const struct cfg_tunnel *t = cfg->tunnels[i];
		long out = held_sa(h, t->out.spi, DPVPN_DIR_OUT);
		long in = held_sa(h, t->in.spi, DPVPN_DIR_IN);

		if (t->ike.on)
			continue;
		if (out >= 0 && sa_as_configured(&h->sa[out], t, DPVPN_DIR_OUT))
			keep[out] = true;
		if (in >= 0 && sa_as_configured(&h->sa[in], t, DPVPN_DIR_IN))
			keep[in] = true;
	}
}

/*
 * dpvpnd started against a dataplane that is already forwarding: keep every
 * SA and policy that is as configured (all that can be read back: keys
 * cannot), remove the SAs the config does not have (or has otherwise),
 * install what is missing: whole tunnels, or the part a tunnel lost (an
 * outbound SA installed again continues above its reservations).
 */
int inst_reconcile(struct dp_client *dp, struct cfg *cfg, struct seqstate *seq, bool verbose,
		   char *msg, size_t len)
{
	unsigned *gaps = calloc(cfg->n_tunnels + 1, sizeof(*gaps));
	size_t kept = 0, added = 0, repaired = 0, removed = 0, ike = 0;
	struct held h = { 0 };
	bool *keep = NULL;

	if (gaps == NULL || held_load(dp, &h)) {
		snprintf(msg, len, "reconcile: %s", gaps ? dp->err : "out of memory");
		free(gaps);
		cfg_wipe_keys(cfg);
		return -1;
	}
	/* the interfaces an earlier dpvpnd gave out keep their ids; those the
	 * dataplane lacks (a new one) are given out anew */
	memset(tunif_names, 0, sizeof(tunif_names));
	for (uint32_t k = 0; k < h.n_tunif; k++)
		if (h.tunif[k].id < DPVPN_TUNIF_MAX)
			snprintf(tunif_names[h.tunif[k].id], DPVPN_NAME_LEN, "%.*s",
				 DPVPN_NAME_LEN - 1, h.tunif[k].name);
	keep = calloc(h.n_sa + 1, sizeof(*keep));
	if (keep == NULL) {
		snprintf(dp->err, sizeof(dp->err), "out of memory");
		goto failed;
	}
	/* what the config does not have (or has otherwise) goes first */
	mark_wanted(cfg, &h, keep, &ike);
	for (uint32_t k = 0; k < h.n_sa; k++) {
		struct dpvpn_sa_id id = { .spi = h.sa[k].spi, .dir = h.sa[k].dir };

		if (keep[k])
			continue;
		if (call(dp, verbose, "stale SA removal", DPVPN_MSG_SA_DEL, &id, sizeof(id)))
			goto failed;
		h.gone[k] = 1;
		removed++;
	}
	if (ensure_tunifs(dp, cfg, verbose))
		goto failed;
	for (size_t i = 0; i < cfg->n_tunnels; i++)
		if (!cfg->tunnels[i]->ike.on &&	/* IKE's: negotiated anew */
		    tunnel_gaps(dp, cfg->tunnels[i], &h, verbose, &gaps[i]))
			goto failed;
	if (begin_batch(dp, seq, verbose))
		goto failed;
	for (size_t i = 0; i < cfg->n_tunnels; i++) {
		const struct cfg_tunnel *t = cfg->tunnels[i];

		if (t->ike.on)
			continue;
		if (gaps[i] == 0) {
			kept++;
			continue;
		}
		if (gaps[i] != GAP_ALL)
			log_repair(t, gaps[i]);
		if (gaps[i] == GAP_ALL ? install_tunnel(dp, t, verbose, seq) :
		    fill_gaps(dp, t, gaps[i], verbose, seq))
			goto failed;
		gaps[i] == GAP_ALL ? added++ : repaired++;
	}
	if (commit_batch(dp, seq, verbose, true))
		goto failed;
	snprintf(msg, len, "dataplane already forwarding: %zu tunnels kept, %zu installed, "
		 "%zu stale SAs removed, %zu SAs of IKE tunnels left to IKE", kept, added,
		 removed, ike);
	if (repaired)	/* (each named in its own line above) */
		snprintf(msg + strlen(msg), len - strlen(msg), ", %zu repaired", repaired);
	free(keep);
	free(gaps);
	held_free(&h);
	inst_fingerprint(cfg);
	cfg_wipe_keys(cfg);
	return 0;
failed:
	snprintf(msg, len, "reconcile failed: %s", dp->err);
	if (seq != NULL)
		seq_batch_end(seq);	/* what was reserved stays reserved */
	free(keep);
	free(gaps);
	held_free(&h);
	cfg_wipe_keys(cfg);
	return -1;
}
