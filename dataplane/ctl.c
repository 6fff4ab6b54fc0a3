/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ctl.c - serves the protocol of include/dpvpn_proto.h on a UNIX
 * SOCK_SEQPACKET socket.  Every message is checked before it is read: the
 * peer's credentials at accept, then the datagram size against hdr.len, then
 * hdr.len against the exact size of the message type; the handlers then
 * check each field and name it in their error reply.
 */
#define _GNU_SOURCE	/* struct ucred, accept4 */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <rte_cycles.h>
#include <rte_ethdev.h>
#include <rte_hash.h>
#include <rte_hash_crc.h>
#include <rte_log.h>
#include <rte_malloc.h>
#include <rte_mempool.h>

#include "crypto.h"
#include "ctl.h"
#include "ctl_steps.h"
#include "dp.h"
#include "host.h"
#include "ike_punt.h"
#include "keep.h"
#include "ip.h"
#include "port.h"
#include "route.h"
#include "sa.h"
#include "spd.h"
#include "trace.h"
#include "tunif.h"
#include "dpvpn_alg.h"

#define CTL_MAX_CLIENTS	8
#define CTL_ERR_LEN	256

static int listen_fd = -1;
static int clients[CTL_MAX_CLIENTS];
static char sock_path[sizeof(((struct sockaddr_un *)0)->sun_path)];
static dev_t sock_dev;		/* the socket file this process bound */
static ino_t sock_ino;
static struct crypto_mgr *ctl_mb;
static uint8_t rxbuf[DPVPN_MSG_MAX + 1];
static uint8_t txbuf[DPVPN_MSG_MAX];
static int cur_fd = -1;		/* the connection whose request is being served */
static uint32_t cur_len;	/* its payload length (IKE_TX's varies) */

/* EAL --log-level dpvpn.ctl:debug logs every control message (never a key). */
RTE_LOG_REGISTER(ctl_logtype, dpvpn.ctl, NOTICE);

struct reply {
	uint8_t *payload;	/* room for DPVPN_MSG_MAX - header */
	uint32_t len;
	char err[CTL_ERR_LEN];
};

typedef int (*handler_fn)(const void *req, struct reply *r);

/* ---- handlers ---- */

static int
do_hello(const void *req, struct reply *r)
{
	struct dpvpn_status *s = (struct dpvpn_status *)r->payload;

	(void)req;
	memset(s, 0, sizeof(*s));
	s->proto_version = DPVPN_PROTO_VERSION;
	s->n_ports = dp.n_ports;
	s->n_workers = dp.n_workers;
	s->n_sa = sa_count();
	s->n_policies = spd_count();
	s->started = dp.started;
	s->uptime_s = (rte_get_timer_cycles() - dp.start_tsc) / rte_get_timer_hz();
	snprintf(s->crypto_lib, sizeof(s->crypto_lib), "%s", crypto_describe());
	r->len = sizeof(*s);
	return 0;
}

static int
check_port(uint16_t id, const char *field, struct reply *r)
{
	if (id < dp.n_ports)
		return 0;
	snprintf(r->err, sizeof(r->err), "%s: %u: no such port (have %u)", field, id, dp.n_ports);
	return -ENODEV;
}

static void remember_route(const struct dpvpn_route *c);

/* The connected routes of a port just set (kept for SHOW_ROUTES and ROUTE_DEL). */
static int
add_connected(const struct dp_port *p, uint16_t id, struct reply *r)
{
	int rc;

	if (p->addr != 0 && (rc = route_add(p->addr & p->mask, p->prefix_len, id, 0,
					    r->err, sizeof(r->err))) != 0)
		return rc;
	if (p->addr != 0)
		remember_route(&(struct dpvpn_route){ .dst = { .family = DPVPN_AF_INET,
			.len = p->prefix_len, .v4 = p->addr & p->mask }, .port_id = id });
	if (p->has6) {
		struct dpvpn_route cr = { .dst = { .family = DPVPN_AF_INET6,
						   .len = p->prefix6_len }, .port_id = id };

		/* listed (SHOW_ROUTES, ROUTE_DEL) only once it is in the table */
		rc = route6_add(p->addr6, p->prefix6_len, id, NULL, r->err, sizeof(r->err));
		if (rc != 0)
			return rc;
		memcpy(cr.dst.v6, p->addr6, 16);
		dp_mask6(cr.dst.v6, p->prefix6_len);
		remember_route(&cr);
	}
	return 0;
}

/* PORT_SET: the port's checks and state are port.c's; the routes and twin follow. */
static int
do_port_set(const void *req, struct reply *r)
{
	const struct dpvpn_port_cfg *c = req;
	int rc = check_port(c->port_id, "port.port_id", r);

	if (rc == 0)
		rc = port_check_cfg(c, r->err, sizeof(r->err));
	if (rc == 0)
		rc = port_set_mtu(c->port_id, c->mtu, r->err, sizeof(r->err));
	if (rc != 0)
		return rc;
	port_set_addrs(&dp.ports[c->port_id], c);
	rc = add_connected(&dp.ports[c->port_id], c->port_id, r);
	if (rc != 0)
		return rc;
	return host_twin_set(c->port_id, c->host_iface, r->err, sizeof(r->err));
}

static int
do_replay_floor(const void *req, struct reply *r)
{
	const struct dpvpn_replay_floor *f = req;

	return sa_replay_floor(f->spi, f->high, r->err, sizeof(r->err));
}

/*
 * VIP_SET: an HA pair's virtual addresses of a port (port.c).  They are
 * held only while the connection that set them lasts: a dpvpnd that dies
 * cannot say it is master no longer, and its keepalived gives the
 * addresses to the other node (doc/ha.md).
 */
static int vip_owner = -1;

static int
do_vip_set(const void *req, struct reply *r)
{
	const struct dpvpn_vip_set *v = req;
	int rc = check_port(v->port_id, "vip_set.port_id", r);

	if (rc == 0)
		rc = port_set_vips(v, r->err, sizeof(r->err));
	if (rc == 0)
		vip_owner = cur_fd;
	return rc;
}

/* The connection that set the virtual addresses closed: none held now. */
static void
vips_orphaned(int fd)
{
	bool held = false;

	if (fd != vip_owner)
		return;
	vip_owner = -1;
	for (uint16_t p = 0; p < dp.n_ports; p++) {
		held |= (dp.ports[p].vip_held | dp.ports[p].vip6_held) != 0;
		__atomic_store_n(&dp.ports[p].vip_held, 0, __ATOMIC_RELEASE);
		__atomic_store_n(&dp.ports[p].vip6_held, 0, __ATOMIC_RELEASE);
	}
	if (held)
		fprintf(stderr, "dpvpn-dataplane: the dpvpnd that held the virtual addresses "
			"went away: released\n");
}

static int
do_neigh_add(const void *req, struct reply *r)
{
	const struct dpvpn_neigh *c = req;
	struct rte_ether_addr mac;
	int rc = check_port(c->port_id, "neigh.port_id", r);

	if (rc != 0)
		return rc;
	memcpy(mac.addr_bytes, c->mac, sizeof(c->mac));
	if (!rte_is_valid_assigned_ether_addr(&mac)) {
		snprintf(r->err, sizeof(r->err), "neigh.mac: not a unicast address");
		return -EINVAL;
	}
	if (c->addr.family == DPVPN_AF_INET ? c->addr.v4 == 0 :
	    c->addr.family != DPVPN_AF_INET6 || ip6_is_multicast(c->addr.v6)) {
		snprintf(r->err, sizeof(r->err), "neigh.addr: not a unicast IPv4 or IPv6 address "
			 "(family %u)", c->addr.family);
		return -EINVAL;
	}
	if (neigh_set(c->port_id, c->addr.family, c->addr.family == DPVPN_AF_INET ?
		      (const void *)&c->addr.v4 : c->addr.v6, &mac, true) != 0) {
		snprintf(r->err, sizeof(r->err), "neigh: table full (%u)", NEIGH_MAX);
		return -ENOSPC;
	}
	return 0;
}

/*
 * The routes as installed (the LPM tables cannot be walked): for SHOW_ROUTES
 * and ROUTE_DEL, found by prefix through a hash (dpvpnd mirrors a BGP table
 * one route at a time: no scan per route).  Room for --max-routes of each
 * family (ctl_routes_init).
 */
static struct dpvpn_route *routes;
static unsigned int n_routes, routes_cap;
static struct rte_hash *route_idx;

struct route_key {
	uint8_t family, len, zero[2];
	uint8_t addr[16];	/* the prefix, host bits zero */
};

static struct route_key
route_key(const struct dpvpn_prefix *p)
{
	struct route_key k = { .family = p->family, .len = p->len };

	if (p->family == DPVPN_AF_INET6) {
		memcpy(k.addr, p->v6, 16);
		dp_mask6(k.addr, p->len);
	} else {
		uint32_t a = p->v4 & dp_mask(p->len);

		memcpy(k.addr, &a, 4);
	}
	return k;
}

int
ctl_routes_init(unsigned int max)
{
	struct rte_hash_parameters hp = {
		.name = "dpvpn_route_idx",
		.entries = 2 * max,
		.key_len = sizeof(struct route_key),
		.hash_func = rte_hash_crc,
		.socket_id = (int)rte_socket_id(),
	};

	routes_cap = 2 * max;
	routes = rte_zmalloc("dpvpn_route_list", routes_cap * sizeof(*routes), 0);
	route_idx = rte_hash_create(&hp);
	return routes == NULL || route_idx == NULL ? -ENOMEM : 0;
}

static void
remember_route(const struct dpvpn_route *c)
{
	struct route_key k = route_key(&c->dst);
	void *at;

	if (rte_hash_lookup_data(route_idx, &k, &at) >= 0) {
		routes[(uintptr_t)at] = *c;		/* replaced */
		return;
	}
	/* the LPM took it, so there is room: each family has max in both */
	if (n_routes < routes_cap &&
	    rte_hash_add_key_data(route_idx, &k, (void *)(uintptr_t)n_routes) == 0)
		routes[n_routes++] = *c;
}

static int
do_route_del(const void *req, struct reply *r)
{
	const struct dpvpn_route *c = req;
	struct route_key k;
	unsigned int i;
	void *at;
	int rc;

	/* (found by fuzz_ctl_dp: route_key's mask needs a length that fits) */
	if (c->dst.family == DPVPN_AF_INET6 ? c->dst.len > 128 :
	    c->dst.family != DPVPN_AF_INET || c->dst.len > 32) {
		snprintf(r->err, sizeof(r->err), "route.dst: family %u length %u is no prefix",
			 c->dst.family, c->dst.len);
		return -EINVAL;
	}
	k = route_key(&c->dst);
	if (rte_hash_lookup_data(route_idx, &k, &at) < 0) {
		snprintf(r->err, sizeof(r->err), "route.dst: no such route");
		return -ENOENT;
	}
	i = (unsigned int)(uintptr_t)at;
	rc = c->dst.family == DPVPN_AF_INET6 ? route6_del(c->dst.v6, c->dst.len) :
					       route_del(c->dst.v4, c->dst.len);
	if (rc != 0) {
		snprintf(r->err, sizeof(r->err), "route.dst: %s", rte_strerror(-rc));
		return rc;
	}
	rte_hash_del_key(route_idx, &k);
	routes[i] = routes[--n_routes];
	if (i < n_routes) {	/* the last one moved into i */
		struct route_key mk = route_key(&routes[i].dst);

		rte_hash_add_key_data(route_idx, &mk, (void *)(uintptr_t)i);
	}
	return 0;
}

static int
do_neigh_del(const void *req, struct reply *r)
{
	const struct dpvpn_neigh *c = req;
	int rc = check_port(c->port_id, "neigh.port_id", r);

	if (rc != 0)
		return rc;
	if (neigh_forget(c->port_id, c->addr.family, c->addr.family == DPVPN_AF_INET ?
			 (const void *)&c->addr.v4 : c->addr.v6) != 0) {
		snprintf(r->err, sizeof(r->err), "neigh.addr: no such neighbour on port %u",
			 c->port_id);
		return -ENOENT;
	}
	/* as Linux purges a deleted neighbour's queue: workers drop what they hold */
	__atomic_fetch_add(&dp.neigh_gen, 1, __ATOMIC_RELEASE);
	return 0;
}

static int
route_add_msg(const struct dpvpn_route *c, struct reply *r);

static int
do_route_add(const void *req, struct reply *r)
{
	int rc = route_add_msg(req, r);

	if (rc == 0)
		remember_route(req);
	return rc;
}

/* kind TUNNEL: into tunnel interfaces; port_id and gateway must be zero. */
static int
route_add_tunnel_msg(const struct dpvpn_route *c, struct reply *r)
{
	if (c->port_id != 0 || c->gateway.family != 0) {
		snprintf(r->err, sizeof(r->err), "route.port_id/gateway: must be 0 for kind "
			 "TUNNEL");
		return -EINVAL;
	}
	if (c->dst.family != DPVPN_AF_INET && c->dst.family != DPVPN_AF_INET6) {
		snprintf(r->err, sizeof(r->err), "route.dst: family %u is not 4 or 6",
			 c->dst.family);
		return -EINVAL;
	}
	for (unsigned int i = c->n_tunif; i < DPVPN_ECMP_MAX; i++)
		if (c->tunif[i] != 0) {
			snprintf(r->err, sizeof(r->err), "route.tunif[%u]: past n_tunif (%u), "
				 "must be 0", i, c->n_tunif);
			return -EINVAL;
		}
	return step_route_add_tunnel(&c->dst, c->tunif, c->n_tunif, r->err, sizeof(r->err));
}

static int
route_add_msg(const struct dpvpn_route *c, struct reply *r)
{
	if (c->kind > DPVPN_ROUTE_TUNNEL) {
		snprintf(r->err, sizeof(r->err), "route.kind: %u is not port (0) or tunnel (1)",
			 c->kind);
		return -EINVAL;
	}
	if (c->kind == DPVPN_ROUTE_TUNNEL)
		return route_add_tunnel_msg(c, r);
	if (c->n_tunif != 0 || memcmp(c->tunif, (uint16_t[DPVPN_ECMP_MAX]){ 0 },
				      sizeof(c->tunif)) != 0) {
		snprintf(r->err, sizeof(r->err), "route.n_tunif/tunif: must be 0 for kind PORT");
		return -EINVAL;
	}
	if (c->gateway.family != 0 && c->gateway.family != c->dst.family) {
		snprintf(r->err, sizeof(r->err), "route.gateway: family %u, not the family of "
			 "route.dst (%u)", c->gateway.family, c->dst.family);
		return -EINVAL;
	}
	if (c->dst.family == DPVPN_AF_INET6)
		return route6_add(c->dst.v6, c->dst.len, c->port_id,
				  c->gateway.family ? c->gateway.v6 : NULL, r->err, sizeof(r->err));
	if (c->dst.family != DPVPN_AF_INET) {
		snprintf(r->err, sizeof(r->err), "route.dst: family %u is not 4 or 6",
			 c->dst.family);
		return -EINVAL;
	}
	return route_add(c->dst.v4, c->dst.len, c->port_id,
			 c->gateway.family ? c->gateway.v4 : 0, r->err, sizeof(r->err));
}

static int dump(const void *req, struct reply *r, size_t esize, unsigned int total,
		bool (*get)(unsigned int idx, void *out));

static bool
get_lcore(unsigned int idx, void *out)
{
	struct dpvpn_lcore_info *o = out;
	unsigned int lc = idx == 0 ? rte_get_main_lcore() : dp.workers[idx - 1].lcore;
	const struct dp_lstats *s = &dp_lstats[lc];

	memset(o, 0, sizeof(*o));
	o->lcore = lc;
	o->worker = idx != 0;
	o->rx_packets = s->rx;
	o->tx_packets = s->tx;
	o->encrypted = s->encrypted;
	o->decrypted = s->decrypted;
	for (unsigned int d = 0; d < DPVPN_DROP_MAX; d++)
		o->drops += s->drops[d];
	o->busy_cycles = s->busy_cycles;
	o->idle_cycles = s->idle_cycles;
	o->hz = rte_get_tsc_hz();
	return true;
}

static int
do_show_lcores(const void *req, struct reply *r)
{
	return dump(req, r, sizeof(struct dpvpn_lcore_info), dp.n_workers + 1, get_lcore);
}

static bool
get_route(unsigned int idx, void *out)
{
	if (idx >= n_routes)
		return false;
	*(struct dpvpn_route *)out = routes[idx];
	return true;
}

static bool
get_neigh(unsigned int idx, void *out)
{
	struct dpvpn_neigh_info *o = out;
	struct neigh n;

	if (!neigh_at(idx, &n))
		return false;
	memset(o, 0, sizeof(*o));
	o->port_id = n.port;
	memcpy(o->mac, &n.mac, 6);
	o->addr.family = n.family;
	memcpy(o->addr.v6, n.addr, n.family == DPVPN_AF_INET6 ? 16 : 4);
	o->is_static = n.is_static;
	return true;
}

static int
do_tunif_set(const void *req, struct reply *r)
{
	return step_tunif_set(req, r->err, sizeof(r->err));
}

static int
do_tunif_del(const void *req, struct reply *r)
{
	const struct dpvpn_tunif *c = req;

	for (unsigned int i = 0; i < n_routes; i++)
		for (unsigned int k = 0; routes[i].kind == DPVPN_ROUTE_TUNNEL &&
					 k < routes[i].n_tunif; k++)
			if (routes[i].tunif[k] == c->id) {
				snprintf(r->err, sizeof(r->err), "tunif.id: %u: routes lead into "
					 "it (route_del them first)", c->id);
				return -EBUSY;
			}
	return step_tunif_del(c->id, r->err, sizeof(r->err));
}

static bool
get_tunif(unsigned int idx, void *out)
{
	return tunif_info(idx, out);
}

/* KEEP_SET: the record's length is the message's rest (its least size: the header). */
static int
do_keep_set(const void *req, struct reply *r)
{
	const struct dpvpn_keep *k = req;
	int rc;

	if (k->reserved != 0 || k->len == 0 || k->len > DPVPN_KEEP_MAX ||
	    k->len != cur_len - sizeof(*k)) {
		snprintf(r->err, sizeof(r->err), "keep.len: %u, the message carries %zu (1..%u)",
			 k->len, (size_t)cur_len - sizeof(*k), DPVPN_KEEP_MAX);
		return -EINVAL;
	}
	rc = keep_set(k->key, (const uint8_t *)(k + 1), k->len);
	if (rc == -ENOSPC)
		snprintf(r->err, sizeof(r->err), "keep: %u records held, room for no more "
			 "(--max-sa)", keep_count());
	else if (rc != 0)
		snprintf(r->err, sizeof(r->err), "keep: out of memory");
	return rc;
}

static int
do_keep_del(const void *req, struct reply *r)
{
	const struct dpvpn_keep *k = req;

	if (k->reserved != 0 || k->len != 0) {
		snprintf(r->err, sizeof(r->err), "keep.len: %u, must be 0", k->len);
		return -EINVAL;
	}
	if (keep_del(k->key) != 0) {
		snprintf(r->err, sizeof(r->err), "keep.key: no such record");
		return -ENOENT;
	}
	return 0;
}

/* KEEP_LIST: records from start, as many as fit; count says how many. */
static int
do_keep_list(const void *req, struct reply *r)
{
	const struct dpvpn_dump_req *d = req;
	struct dpvpn_dump_hdr *h = (struct dpvpn_dump_hdr *)r->payload;
	size_t room = DPVPN_MSG_MAX - sizeof(struct dpvpn_msg_hdr) - sizeof(*h), at = 0;
	uint8_t *out = (uint8_t *)(h + 1);

	h->total = keep_count();
	h->count = 0;
	for (unsigned int i = d->start; i < h->total; i++) {
		struct dpvpn_keep k = { .reserved = 0 };
		const uint8_t *key, *data;

		keep_get(i, &key, &data, &k.len);
		if (at + sizeof(k) + k.len > room)
			break;
		memcpy(k.key, key, sizeof(k.key));
		memcpy(out + at, &k, sizeof(k));
		memcpy(out + at + sizeof(k), data, k.len);
		at += sizeof(k) + k.len;
		h->count++;
	}
	r->len = (uint32_t)(sizeof(*h) + at);
	return 0;
}

static int
do_show_tunifs(const void *req, struct reply *r)
{
	unsigned int n = 0;
	struct dpvpn_tunif_info scratch;

	while (tunif_info(n, &scratch))
		n++;
	return dump(req, r, sizeof(struct dpvpn_tunif_info), n, get_tunif);
}

static int
do_show_routes(const void *req, struct reply *r)
{
	return dump(req, r, sizeof(struct dpvpn_route), n_routes, get_route);
}

static int
do_show_neighs(const void *req, struct reply *r)
{
	return dump(req, r, sizeof(struct dpvpn_neigh_info), neigh_count(), get_neigh);
}

static int
do_trace_start(const void *req, struct reply *r)
{
	return trace_start(req, r->err, sizeof(r->err));
}

static int
do_trace_status(const void *req, struct reply *r)
{
	(void)req;
	trace_status((struct dpvpn_trace_status *)r->payload);
	r->len = sizeof(struct dpvpn_trace_status);
	return 0;
}

static int
do_seq_grant(const void *req, struct reply *r)
{
	const struct dpvpn_seq_grant *g = req;

	return sa_seq_grant(g->spi, g->limit, r->err, sizeof(r->err));
}

static int
do_seq_set(const void *req, struct reply *r)
{
	const struct dpvpn_seq_set *g = req;

	return sa_seq_set(g->spi, g->used, g->limit, r->err, sizeof(r->err));
}

static int
do_sa_add(const void *req, struct reply *r)
{
	return sa_add(req, ctl_mb, r->err, sizeof(r->err));
}

static int
do_sa_del(const void *req, struct reply *r)
{
	const struct dpvpn_sa_id *c = req;

	return step_sa_del(c->spi, c->dir, r->err, sizeof(r->err));
}

static int
do_policy_add(const void *req, struct reply *r)
{
	return spd_add(req, r->err, sizeof(r->err));
}

static int
do_policy_del(const void *req, struct reply *r)
{
	return spd_del(req, r->err, sizeof(r->err));
}

static int
do_ike_open(const void *req, struct reply *r)
{
	(void)req;
	return ike_open(cur_fd, r->err, sizeof(r->err));
}

static int
do_ike_tx(const void *req, struct reply *r)
{
	return ike_tx(req, cur_len, r->err, sizeof(r->err));
}

static int
do_batch_begin(const void *req, struct reply *r)
{
	(void)req;
	(void)r;
	spd_begin();
	return 0;
}

static int
do_batch_commit(const void *req, struct reply *r)
{
	(void)req;
	return spd_commit(r->err, sizeof(r->err));
}

static int
do_events(const void *req, struct reply *r)
{
	struct dpvpn_dump_hdr *h = (struct dpvpn_dump_hdr *)r->payload;
	unsigned int room = (DPVPN_MSG_MAX - sizeof(struct dpvpn_msg_hdr) - sizeof(*h)) /
			    sizeof(struct dpvpn_event);

	(void)req;
	h->count = sa_events_take((struct dpvpn_event *)(h + 1), room);
	h->total = h->count;
	r->len = (uint32_t)(sizeof(*h) + h->count * sizeof(struct dpvpn_event));
	return 0;
}

static int
do_start(const void *req, struct reply *r)
{
	int rc;

	(void)req;
	rc = spd_in_batch() ? spd_commit(r->err, sizeof(r->err)) : 0;
	if (rc != 0 || dp.started)
		return rc;
	for (uint16_t p = 0; p < dp.n_ports; p++) {
		rc = rte_eth_dev_start(p);
		if (rc != 0) {
			snprintf(r->err, sizeof(r->err), "start: port %u: %s", p, rte_strerror(-rc));
			return rc;
		}
		port_baseline(p);
	}
	__atomic_store_n(&dp.started, 1, __ATOMIC_RELEASE);
	fprintf(stderr, "dpvpn-dataplane: forwarding on %u ports\n", dp.n_ports);
	return 0;
}

static void
port_info(uint16_t id, struct dpvpn_port_info *o)
{
	const struct dp_port *p = &dp.ports[id];
	struct rte_eth_stats s = { 0 };
	struct rte_eth_link link = { 0 };

	memset(o, 0, sizeof(*o));
	o->port_id = id;
	o->role = p->role;
	if (p->addr != 0)
		o->addr4 = (struct dpvpn_prefix){ .family = DPVPN_AF_INET, .len = p->prefix_len,
						  .v4 = p->addr };
	if (p->has6) {
		o->addr6 = (struct dpvpn_prefix){ .family = DPVPN_AF_INET6, .len = p->prefix6_len };
		memcpy(o->addr6.v6, p->addr6, 16);
	}
	if (p->extra_count != 0)	/* a prefix: a power of 2 from its first */
		o->extra4 = (struct dpvpn_prefix){ .family = DPVPN_AF_INET,
			.len = (uint8_t)(32 - __builtin_ctz(p->extra_count)),
			.v4 = rte_cpu_to_be_32(p->extra_first) };
	memcpy(o->mac, p->mac.addr_bytes, sizeof(o->mac));
	memcpy(o->name, p->name, sizeof(o->name));
	rte_eth_stats_get(id, &s);
	if (dp.started)
		rte_eth_link_get_nowait(id, &link);
	o->link_up = link.link_status;
	o->rx_packets = s.ipackets;
	o->rx_bytes = s.ibytes;
	o->tx_packets = s.opackets;
	o->tx_bytes = s.obytes;
	o->rx_missed = port_rx_missed(id, &s);
	o->rx_errors = s.ierrors;
	o->tx_errors = s.oerrors;
	memcpy(o->iface, p->iface, sizeof(o->iface));
	for (unsigned int l = 0; l < RTE_MAX_LCORE; l++)
		o->csum_completed += dp_lstats[l].csum_completed[id];
	if (dp_twins[id].created) {
		memcpy(o->host_iface, dp_twins[id].iface, sizeof(o->host_iface));
		o->host_link_up = dp_twins[id].up;
		o->host_in = dp_twins[id].in;
		o->host_out = dp_twins[id].out;
	}
}

/* Paged dump: fill as many entries from req->start as fit in one reply. */
static int
dump(const void *req, struct reply *r, size_t esize, unsigned int total,
     bool (*get)(unsigned int idx, void *out))
{
	const struct dpvpn_dump_req *q = req;
	struct dpvpn_dump_hdr *h = (struct dpvpn_dump_hdr *)r->payload;
	size_t room = (DPVPN_MSG_MAX - sizeof(struct dpvpn_msg_hdr) - sizeof(*h)) / esize;
	uint8_t *out = r->payload + sizeof(*h);

	h->total = total;
	h->count = 0;
	for (unsigned int i = q->start; i < total && h->count < room; i++) {
		if (!get(i, out + h->count * esize))
			break;
		h->count++;
	}
	r->len = (uint32_t)(sizeof(*h) + h->count * esize);
	return 0;
}

static bool
get_port(unsigned int idx, void *out)
{
	port_info((uint16_t)idx, out);
	return true;
}

static bool
get_sa(unsigned int idx, void *out)
{
	return sa_info(idx, out);
}

static bool
get_policy(unsigned int idx, void *out)
{
	return spd_info(idx, out);
}

static int
do_show_ports(const void *req, struct reply *r)
{
	return dump(req, r, sizeof(struct dpvpn_port_info), dp.n_ports, get_port);
}

static int
do_show_sa(const void *req, struct reply *r)
{
	return dump(req, r, sizeof(struct dpvpn_sa_info), sa_count(), get_sa);
}

static int
do_show_policies(const void *req, struct reply *r)
{
	return dump(req, r, sizeof(struct dpvpn_policy), spd_count(), get_policy);
}

static int
do_show_counters(const void *req, struct reply *r)
{
	struct dpvpn_counters *c = (struct dpvpn_counters *)r->payload;

	(void)req;
	memset(c, 0, sizeof(*c));
	c->n_reasons = DPVPN_DROP_MAX;
	for (unsigned int l = 0; l < RTE_MAX_LCORE; l++) {
		const struct dp_lstats *s = &dp_lstats[l];

		c->rx_packets += s->rx;
		c->tx_packets += s->tx;
		c->encrypted += s->encrypted;
		c->decrypted += s->decrypted;
		c->arp_in += s->arp_in;
		c->arp_out += s->arp_out;
		c->handoff += s->handoff;
		c->replay_late += s->replay_late;
		c->icmp_out += s->icmp_out;
		c->icmp_limited += s->icmp_limited;
		c->fragments += s->fragments;
		c->mss_clamped += s->mss_clamped;
		c->frag_in += s->frag_in;
		c->reassembled += s->reassembled;
		c->reass_dropped += s->reass_dropped;
		c->fragmented += s->fragmented;
		c->ike_in += s->ike_in;
		c->ike_out += s->ike_out;
		c->icmp_echo += s->icmp_echo;
		c->neigh_queued += s->neigh_queued;
		c->host_in += s->host_in;
		c->host_out += s->host_out;
		for (unsigned int d = 0; d < DPVPN_DROP_MAX; d++)
			c->drops[d] += s->drops[d];
	}
	for (unsigned int i = 0; i < dp.n_workers; i++)
		c->neigh_held += __atomic_load_n(&dp.workers[i].out.nq.held, __ATOMIC_RELAXED);
	c->mbufs_in_use = rte_mempool_in_use_count(dp.pool);
	c->mbufs_total = dp.pool->size;
	r->len = sizeof(*c);
	return 0;
}

/* The validation table: one row per type, consulted before dispatch. */
static const struct {
	const char *name;
	uint32_t size;		/* exact request payload size (IKE_TX: the least) */
	handler_fn fn;
} msgs[DPVPN_MSG_TYPE_MAX] = {
	[DPVPN_MSG_HELLO] = { "HELLO", 0, do_hello },
	[DPVPN_MSG_PORT_SET] = { "PORT_SET", sizeof(struct dpvpn_port_cfg), do_port_set },
	[DPVPN_MSG_NEIGH_ADD] = { "NEIGH_ADD", sizeof(struct dpvpn_neigh), do_neigh_add },
	[DPVPN_MSG_ROUTE_ADD] = { "ROUTE_ADD", sizeof(struct dpvpn_route), do_route_add },
	[DPVPN_MSG_SA_ADD] = { "SA_ADD", sizeof(struct dpvpn_sa_cfg), do_sa_add },
	[DPVPN_MSG_SA_DEL] = { "SA_DEL", sizeof(struct dpvpn_sa_id), do_sa_del },
	[DPVPN_MSG_POLICY_ADD] = { "POLICY_ADD", sizeof(struct dpvpn_policy), do_policy_add },
	[DPVPN_MSG_START] = { "START", 0, do_start },
	[DPVPN_MSG_SHOW_PORTS] = { "SHOW_PORTS", sizeof(struct dpvpn_dump_req), do_show_ports },
	[DPVPN_MSG_SHOW_SA] = { "SHOW_SA", sizeof(struct dpvpn_dump_req), do_show_sa },
	[DPVPN_MSG_SHOW_POLICIES] = { "SHOW_POLICIES", sizeof(struct dpvpn_dump_req),
				      do_show_policies },
	[DPVPN_MSG_SHOW_COUNTERS] = { "SHOW_COUNTERS", 0, do_show_counters },
	[DPVPN_MSG_BATCH_BEGIN] = { "BATCH_BEGIN", 0, do_batch_begin },
	[DPVPN_MSG_BATCH_COMMIT] = { "BATCH_COMMIT", 0, do_batch_commit },
	[DPVPN_MSG_EVENTS] = { "EVENTS", sizeof(struct dpvpn_dump_req), do_events },
	[DPVPN_MSG_SEQ_GRANT] = { "SEQ_GRANT", sizeof(struct dpvpn_seq_grant), do_seq_grant },
	[DPVPN_MSG_SEQ_SET] = { "SEQ_SET", sizeof(struct dpvpn_seq_set), do_seq_set },
	[DPVPN_MSG_VIP_SET] = { "VIP_SET", sizeof(struct dpvpn_vip_set), do_vip_set },
	[DPVPN_MSG_REPLAY_FLOOR] = { "REPLAY_FLOOR", sizeof(struct dpvpn_replay_floor),
				     do_replay_floor },
	[DPVPN_MSG_SHOW_LCORES] = { "SHOW_LCORES", sizeof(struct dpvpn_dump_req), do_show_lcores },
	[DPVPN_MSG_TRACE_START] = { "TRACE_START", sizeof(struct dpvpn_trace_req), do_trace_start },
	[DPVPN_MSG_TRACE_STATUS] = { "TRACE_STATUS", 0, do_trace_status },
	[DPVPN_MSG_ROUTE_DEL] = { "ROUTE_DEL", sizeof(struct dpvpn_route), do_route_del },
	[DPVPN_MSG_NEIGH_DEL] = { "NEIGH_DEL", sizeof(struct dpvpn_neigh), do_neigh_del },
	[DPVPN_MSG_SHOW_ROUTES] = { "SHOW_ROUTES", sizeof(struct dpvpn_dump_req), do_show_routes },
	[DPVPN_MSG_SHOW_NEIGHS] = { "SHOW_NEIGHS", sizeof(struct dpvpn_dump_req), do_show_neighs },
	[DPVPN_MSG_POLICY_DEL] = { "POLICY_DEL", sizeof(struct dpvpn_policy), do_policy_del },
	[DPVPN_MSG_IKE_OPEN] = { "IKE_OPEN", 0, do_ike_open },
	[DPVPN_MSG_IKE_TX] = { "IKE_TX", sizeof(struct dpvpn_ike_pkt), do_ike_tx },
	[DPVPN_MSG_TUNIF_SET] = { "TUNIF_SET", sizeof(struct dpvpn_tunif), do_tunif_set },
	[DPVPN_MSG_TUNIF_DEL] = { "TUNIF_DEL", sizeof(struct dpvpn_tunif), do_tunif_del },
	[DPVPN_MSG_SHOW_TUNIFS] = { "SHOW_TUNIFS", sizeof(struct dpvpn_dump_req),
				    do_show_tunifs },
	[DPVPN_MSG_KEEP_SET] = { "KEEP_SET", sizeof(struct dpvpn_keep), do_keep_set },
	[DPVPN_MSG_KEEP_DEL] = { "KEEP_DEL", sizeof(struct dpvpn_keep), do_keep_del },
	[DPVPN_MSG_KEEP_LIST] = { "KEEP_LIST", sizeof(struct dpvpn_dump_req), do_keep_list },
};

/* ---- transport ---- */

/* Types whose payload is their struct and then bytes it counts itself. */
static bool
varlen(uint16_t type)
{
	return type == DPVPN_MSG_IKE_TX || type == DPVPN_MSG_KEEP_SET;
}

static int
check_header(ssize_t got, const struct dpvpn_msg_hdr *h, struct reply *r)
{
	if (got > DPVPN_MSG_MAX) {
		snprintf(r->err, sizeof(r->err), "message: %zd bytes > %u", got, DPVPN_MSG_MAX);
		return -EMSGSIZE;
	}
	if ((size_t)got < sizeof(*h)) {
		snprintf(r->err, sizeof(r->err), "hdr: %zd bytes, need %zu", got, sizeof(*h));
		return -EBADMSG;
	}
	if (h->len != (size_t)got - sizeof(*h)) {
		snprintf(r->err, sizeof(r->err), "hdr.len: %u, datagram carries %zu",
			 h->len, (size_t)got - sizeof(*h));
		return -EBADMSG;
	}
	if (h->flags != 0 && !(h->flags == DPVPN_F_QUIET && (h->type == DPVPN_MSG_IKE_TX ||
							   h->type == DPVPN_MSG_KEEP_SET ||
							   h->type == DPVPN_MSG_KEEP_DEL))) {
		snprintf(r->err, sizeof(r->err), "hdr.flags: 0x%x, must be 0 (or DPVPN_F_QUIET "
			 "on IKE_TX, KEEP_SET, KEEP_DEL)", h->flags);
		return -EINVAL;
	}
	if (h->type == 0 || h->type >= DPVPN_MSG_TYPE_MAX || msgs[h->type].fn == NULL) {
		snprintf(r->err, sizeof(r->err), "hdr.type: %u is unknown", h->type);
		return -ENOTSUP;
	}
	if (varlen(h->type) ? h->len < msgs[h->type].size : h->len != msgs[h->type].size) {
		snprintf(r->err, sizeof(r->err), "hdr.len: %u, %s takes %u",
			 h->len, msgs[h->type].name, msgs[h->type].size);
		return -EBADMSG;
	}
	return 0;
}

/*
 * One debug line per control message: its type, seq and outcome; for SAs
 * the SPI, direction, cipher and tunnel name.  Never a field of the key,
 * salt or auth key.  EVENTS (five a second, dpvpnd's poll) only when it fails.
 */
static void
log_msg(ssize_t got, const struct dpvpn_msg_hdr *h, bool valid, int rc, const char *err)
{
	const void *req = h + 1;
	char sa[96] = "";

	if (!rte_log_can_log(ctl_logtype, RTE_LOG_DEBUG))
		return;
	if ((size_t)got < sizeof(*h) || h->type >= DPVPN_MSG_TYPE_MAX || !msgs[h->type].name) {
		rte_log(RTE_LOG_DEBUG, ctl_logtype, "dpvpn-dataplane: ctl: bad message: %s\n",
			err);
		return;
	}
	if (h->type == DPVPN_MSG_EVENTS && rc == 0)
		return;
	if (valid && h->type == DPVPN_MSG_SA_ADD) {
		const struct dpvpn_sa_cfg *c = req;
		const struct dpvpn_alg_info *a = dpvpn_alg_get(c->alg);

		snprintf(sa, sizeof(sa), " SA 0x%08x %s %s '%.*s'", rte_be_to_cpu_32(c->spi),
			 c->dir == DPVPN_DIR_IN ? "in" : "out", a ? a->name : "?",
			 DPVPN_NAME_LEN, c->name);
	} else if (valid && h->type == DPVPN_MSG_SA_DEL) {
		const struct dpvpn_sa_id *c = req;

		snprintf(sa, sizeof(sa), " SA 0x%08x %s", rte_be_to_cpu_32(c->spi),
			 c->dir == DPVPN_DIR_IN ? "in" : "out");
	}
	rte_log(RTE_LOG_DEBUG, ctl_logtype, "dpvpn-dataplane: ctl: %s seq %u%s: %s\n",
		msgs[h->type].name, h->seq, sa, rc ? err : "ok");
}

static uint64_t quiet_done;	/* quiet requests done, so not answered */

uint64_t
ctl_quiet_done(void)
{
	return quiet_done;
}

/*
 * A reply the client's socket would not take (its queue full: a client that
 * does not read): counted, and said for the first few and then every
 * thousandth, with what it was for.
 */
static void
reply_lost(int fd, const struct dpvpn_msg_hdr *o, int err)
{
	static uint64_t n;

	if (++n <= 8 || n % 1000 == 0)
		fprintf(stderr, "dpvpn-dataplane: control reply to fd %d (%s seq %u) not sent: "
			"%s (%" PRIu64 " so far)\n", fd,
			o->type < DPVPN_MSG_TYPE_MAX && msgs[o->type].name ? msgs[o->type].name :
			"?", o->seq, strerror(err), n);
}

static void
serve(int fd)
{
	struct dpvpn_msg_hdr *h = (struct dpvpn_msg_hdr *)rxbuf;
	struct dpvpn_msg_hdr *o = (struct dpvpn_msg_hdr *)txbuf;
	struct reply r = { .payload = txbuf + sizeof(*o) };
	ssize_t got = recv(fd, rxbuf, sizeof(rxbuf), MSG_TRUNC | MSG_DONTWAIT);
	bool valid, quiet;
	int rc;

	if (got <= 0) {
		if (got == 0 || (errno != EAGAIN && errno != EINTR)) {
			ike_closed(fd);
			vips_orphaned(fd);
			for (int i = 0; i < CTL_MAX_CLIENTS; i++)
				if (clients[i] == fd)
					clients[i] = -1;
			close(fd);
		}
		return;
	}
	o->type = (size_t)got >= sizeof(*h) ? h->type : 0;
	o->seq = (size_t)got >= sizeof(*h) ? h->seq : 0;
	rc = check_header(got, h, &r);
	valid = rc == 0;
	quiet = valid && h->flags == DPVPN_F_QUIET;	/* (checked: which types) */
	cur_fd = fd;
	cur_len = valid ? h->len : 0;
	if (valid)
		rc = msgs[h->type].fn(rxbuf + sizeof(*h), &r);
	log_msg(got, h, valid, rc, r.err);
	/* The request may have carried keys. */
	explicit_bzero(rxbuf, RTE_MIN((size_t)got, sizeof(rxbuf)));
	o->flags = DPVPN_F_REPLY;
	o->status = rc;
	if (rc != 0) {
		r.len = (uint32_t)strlen(r.err) + 1;
		memcpy(r.payload, r.err, r.len);
	}
	o->len = r.len;
	if (quiet && rc == 0) {
		quiet_done++;	/* done: nothing to say */
		return;
	}
	if (send(fd, txbuf, sizeof(*o) + r.len, MSG_NOSIGNAL | MSG_DONTWAIT) < 0)
		reply_lost(fd, o, errno);
	if (o->type == DPVPN_MSG_KEEP_LIST)	/* the records hold IKE keys */
		explicit_bzero(r.payload, r.len);
}

static bool
peer_allowed(int fd)
{
	struct ucred cred;
	socklen_t len = sizeof(cred);

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0)
		return false;
	return cred.uid == 0 || cred.uid == geteuid();
}

static void
accept_client(void)
{
	int fd = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC);

	if (fd < 0)
		return;
	if (!peer_allowed(fd)) {
		fprintf(stderr, "dpvpn-dataplane: control client refused (credentials)\n");
		close(fd);
		return;
	}
	for (int i = 0; i < CTL_MAX_CLIENTS; i++) {
		if (clients[i] < 0) {
			clients[i] = fd;
			return;
		}
	}
	fprintf(stderr, "dpvpn-dataplane: control client refused (%d connected)\n",
		CTL_MAX_CLIENTS);
	close(fd);
}

/*
 * Whether another process listens on path.  A socket file nobody listens on
 * (connect: ECONNREFUSED) is what a dataplane that died left: free.  One that
 * answers is another dataplane's, found by its SO_PEERCRED (the listener's
 * pid, given to any client that connects): never replaced, or it could no
 * longer be managed.
 */
int
ctl_check(const char *path, char *why, size_t len)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct ucred cr = { 0 };
	socklen_t cl = sizeof(cr);
	struct stat st;
	int fd, rc;

	if (strlen(path) >= sizeof(sa.sun_path)) {
		snprintf(why, len, "%s: path longer than %zu bytes", path, sizeof(sa.sun_path) - 1);
		return -ENAMETOOLONG;
	}
	if (lstat(path, &st) != 0) {
		int e = errno;	/* snprintf may change errno */

		snprintf(why, len, "%s: %s", path, strerror(e));
		return e == ENOENT ? 0 : -e;
	}
	if (!S_ISSOCK(st.st_mode)) {
		snprintf(why, len, "%s: exists and is not a socket: not replaced", path);
		return -ENOTSOCK;
	}
	memcpy(sa.sun_path, path, strlen(path));
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0) {
		snprintf(why, len, "socket: %s", strerror(errno));
		return -errno;
	}
	rc = connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0 ? 0 : -errno;
	if (rc == 0 && getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &cl) != 0)
		cr.pid = 0;
	close(fd);
	if (rc == -ECONNREFUSED || rc == -ENOENT)
		return 0;	/* stale (or gone meanwhile) */
	if (rc == 0 && cr.pid > 0) {
		snprintf(why, len, "%s: socket in use by pid %d (a dataplane serves it): not "
			 "starting", path, (int)cr.pid);
		return -EADDRINUSE;
	}
	if (rc == 0 || rc == -EAGAIN) {	/* EAGAIN: a listener with a full backlog */
		snprintf(why, len, "%s: socket in use by another process: not starting", path);
		return -EADDRINUSE;
	}
	snprintf(why, len, "%s: cannot tell whether a dataplane serves it (connect: %s): "
		 "not replaced", path, strerror(-rc));
	return rc;
}

/*
 * mkdir -p the socket's directory: what is missing is made 0700 (only root,
 * whom the socket admits anyway, looks inside); directories that exist are
 * left as they are.
 */
static int
make_parent(const char *path)
{
	char dir[sizeof(((struct sockaddr_un *)0)->sun_path)];

	snprintf(dir, sizeof(dir), "%s", path);
	for (char *s = dir + 1; (s = strchr(s, '/')) != NULL; s++) {
		*s = '\0';
		if (mkdir(dir, 0700) != 0 && errno != EEXIST)
			return -errno;
		*s = '/';
	}
	return 0;
}

/* Bind path; a stale socket file (ctl_check) is replaced, a live one never. */
static int
bind_path(const struct sockaddr_un *sa)
{
	char why[CTL_ERR_LEN];
	mode_t old = umask(077);	/* created 0600: only the owner may connect */
	int rc = bind(listen_fd, (const struct sockaddr *)sa, sizeof(*sa));

	if (rc != 0 && errno == EADDRINUSE) {
		if (ctl_check(sa->sun_path, why, sizeof(why)) == 0 &&
		    (unlink(sa->sun_path) == 0 || errno == ENOENT))
			rc = bind(listen_fd, (const struct sockaddr *)sa, sizeof(*sa));
		else
			errno = EADDRINUSE;
	}
	umask(old);
	return rc;
}

int
ctl_open(const char *path, struct crypto_mgr *mgr)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct stat st;
	int rc;

	if (strlen(path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	for (int i = 0; i < CTL_MAX_CLIENTS; i++)
		clients[i] = -1;
	ctl_mb = mgr;
	snprintf(sock_path, sizeof(sock_path), "%s", path);
	memcpy(sa.sun_path, path, strlen(path));
	rc = make_parent(path);
	if (rc != 0)
		return rc;
	listen_fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (listen_fd < 0)
		return -errno;
	if (bind_path(&sa) != 0 || chmod(path, 0600) != 0 || lstat(path, &st) != 0 ||
	    listen(listen_fd, CTL_MAX_CLIENTS) != 0) {
		rc = -errno;
		close(listen_fd);
		listen_fd = -1;
		return rc;
	}
	sock_dev = st.st_dev;
	sock_ino = st.st_ino;
	return 0;
}

static int wake_fd = -1;

void
ctl_set_wake_fd(int fd)
{
	wake_fd = fd;
}

void
ctl_poll(int timeout_ms)
{
	struct pollfd fds[CTL_MAX_CLIENTS + 2];
	int n = 0;
	uint64_t v;

	fds[n++] = (struct pollfd){ .fd = listen_fd, .events = POLLIN };
	fds[n++] = (struct pollfd){ .fd = wake_fd, .events = POLLIN };	/* -1: ignored */
	for (int i = 0; i < CTL_MAX_CLIENTS; i++)
		if (clients[i] >= 0)
			fds[n++] = (struct pollfd){ .fd = clients[i], .events = POLLIN };
	if (poll(fds, (nfds_t)n, timeout_ms) <= 0)
		return;
	if (fds[1].revents & POLLIN)
		(void)!read(wake_fd, &v, sizeof(v));	/* nonblocking eventfd: reset */
	for (int i = 2; i < n; i++)
		if (fds[i].revents != 0)
			serve(fds[i].fd);
	if (fds[0].revents & POLLIN)
		accept_client();
}

void
ctl_close(void)
{
	for (int i = 0; i < CTL_MAX_CLIENTS; i++)
		if (clients[i] >= 0) {
			ike_closed(clients[i]);
			close(clients[i]);
		}
	if (listen_fd >= 0) {
		struct stat st;

		close(listen_fd);
		/* only the socket this process made: never one that replaced it */
		if (lstat(sock_path, &st) == 0 && st.st_dev == sock_dev && st.st_ino == sock_ino)
			unlink(sock_path);
	}
	listen_fd = -1;
}
