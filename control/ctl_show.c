/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ctl_show.c - answers to "status" and "show": one dataplane query each,
 * turned into the JSON shapes documented in ctl_proto.h.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dpvpn_alg.h"
#include "config.h"
#include "ctl_base.h"
#include "ctl_proto.h"
#include "ctl_show.h"

#ifndef DPVPN_VERSION
#define DPVPN_VERSION "unknown"
#endif

static const char *const drop_names[] = {
#define DPVPN_X_NAME(e, name, desc) name,
	DPVPN_DROP_REASONS(DPVPN_X_NAME)
#undef DPVPN_X_NAME
};

_Static_assert(sizeof(drop_names) / sizeof(drop_names[0]) == DPVPN_DROP_MAX,
	       "one name per drop reason");

static json_t *dp_failed(struct ctl_ctx *ctx, char *err, size_t err_len, const char *what)
{
	snprintf(err, err_len, "dataplane %s: %s", what, ctx->dp->err);
	return NULL;
}

/* Text of an IPv4 or IPv6 address (network order); NULL for another family. */
static const char *addr_text(uint8_t family, const void *addr, char buf[INET6_ADDRSTRLEN])
{
	if (family == DPVPN_AF_INET)
		return inet_ntop(AF_INET, addr, buf, INET6_ADDRSTRLEN);
	if (family == DPVPN_AF_INET6)
		return inet_ntop(AF_INET6, addr, buf, INET6_ADDRSTRLEN);
	return NULL;
}

/* "192.0.2.1" or "2001:db8::1"; null when there is none (family 0). */
static json_t *addr_json(const struct dpvpn_addr *a)
{
	char buf[INET6_ADDRSTRLEN];
	const char *s = addr_text(a->family, a->v6, buf);

	return s ? json_string(s) : a->family ? json_sprintf("?family-%u", a->family) :
		   json_null();
}

/* "192.0.2.0/24" or "2001:db8::/32"; null when there is none (family 0). */
static json_t *prefix_json(const struct dpvpn_prefix *p)
{
	char buf[INET6_ADDRSTRLEN];
	const char *s = addr_text(p->family, p->v6, buf);

	return s ? json_sprintf("%s/%u", s, p->len) : p->family ?
		   json_sprintf("?family-%u", p->family) : json_null();
}

static json_t *spi(uint32_t net)
{
	return json_sprintf("0x%08x", ntohl(net));
}

/* A fixed-size name from the dataplane: bounded, and valid UTF-8 or "?". */
static json_t *name(const char *s, size_t cap)
{
	json_t *j = json_stringn(s, strnlen(s, cap));

	return j ? j : json_string("?");
}

static json_t *u64(uint64_t v)
{
	return json_integer((json_int_t)v);
}

json_t *ctl_show_status(struct ctl_ctx *ctx, char *err, size_t err_len)
{
	struct dpvpn_status st;

	if (dp_call(ctx->dp, DPVPN_MSG_HELLO, NULL, 0, &st, sizeof(st)))
		return dp_failed(ctx, err, err_len, "status");
	return json_pack("{s:{s:s,s:s,s:I},s:{s:I,s:I,s:I,s:I,s:I,s:b,s:o,s:o}}",
		"dpvpnd",
			"version", DPVPN_VERSION,
			"config", ctx->config_path,
			"pid", (json_int_t)getpid(),
		"dataplane",
			"proto_version", (json_int_t)st.proto_version,
			"ports", (json_int_t)st.n_ports,
			"workers", (json_int_t)st.n_workers,
			"sas", (json_int_t)st.n_sa,
			"policies", (json_int_t)st.n_policies,
			"started", st.started != 0,
			"uptime_s", u64(st.uptime_s),
			"crypto", name(st.crypto_lib, sizeof(st.crypto_lib)));
}

static json_t *encap_json(const struct dpvpn_sa_info *s)
{
	if (s->udp_local == 0)
		return json_string("esp");
	return json_sprintf("udp %u->%u", s->udp_local, s->udp_remote);
}

/* What is left before a limit, per kind; null where there is none. */
static json_t *left_json(const struct dpvpn_sa_info *s, int which)
{
	uint64_t lb = s->life_bytes[which], lp = s->life_packets[which];
	uint64_t ls = s->life_seconds[which];

	return json_pack("{s:o,s:o,s:o}",
		"bytes", lb ? u64(lb > s->bytes ? lb - s->bytes : 0) : json_null(),
		"packets", lp ? u64(lp > s->packets ? lp - s->packets : 0) : json_null(),
		"seconds", ls ? u64(ls > s->age_s ? ls - s->age_s : 0) : json_null());
}

static json_t *life_json(const struct dpvpn_sa_info *s)
{
	static const char *const states[] = { "ok", "soft", "hard" };

	return json_pack("{s:s,s:o,s:o,s:o}",
		"state", s->life_state <= DPVPN_LIFE_HARD ? states[s->life_state] : "?",
		"age_s", u64(s->age_s),
		"soft_left", left_json(s, 0),
		"hard_left", left_json(s, 1));
}

/* Milliseconds since the last packet; null: none yet. */
json_t *ctl_idle_json(uint64_t idle_ms)
{
	return idle_ms == UINT64_MAX ? json_null() : u64(idle_ms);
}

/* Counters since the last clear; lifetimes by what the SA really carried (raw). */
static json_t *sa_json(const struct dpvpn_sa_info *raw)
{
	const struct dpvpn_alg_info *a = dpvpn_alg_get(raw->alg);
	struct dpvpn_sa_info c = *raw, *s = &c;

	base_sa(&c);
	return json_pack("{s:o,s:o,s:s,s:s,s:b,s:o,s:o,s:o,s:b,s:o,s:o,s:o,s:I,s:s,s:o,s:o,s:o,"
			 "s:{s:o,s:o,s:o,s:o,s:o},s:o}",
		"name", name(s->name, sizeof(s->name)),
		"spi", spi(s->spi),
		"dir", s->dir == DPVPN_DIR_IN ? "in" : s->dir == DPVPN_DIR_OUT ? "out" : "?",
		"cipher", cfg_alg_name(s->alg),
		"encrypted", a != NULL && a->encrypts,
		"local", addr_json(&s->local),
		"remote", addr_json(&s->remote),
		"encap", encap_json(s),
		"esn", (int)s->esn,
		"life", life_json(raw),
		"local_ts", prefix_json(&s->local_ts),
		"remote_ts", prefix_json(&s->remote_ts),
		"replay_window", (json_int_t)s->replay_window,
		"df", s->df == DPVPN_DF_SET ? "set" : s->df == DPVPN_DF_CLEAR ? "clear" : "copy",
		"seq", u64(s->seq),
		"packets", u64(s->packets),
		"bytes", u64(s->bytes),
		"drops",
			"replay", u64(s->drop_replay),
			"bad-icv", u64(s->drop_icv),
			"policy-mismatch", u64(s->drop_policy),
			"seq-exhausted", u64(s->drop_seq),
			"other", u64(s->drop_other),
		"last_packet_ms", ctl_idle_json(s->idle_ms));
}

/* sa_json plus the tunnel MTU, MSS clamp and fragmentation mode. */
static json_t *sa_json_full(const struct dpvpn_sa_info *s)
{
	json_t *o = sa_json(s);

	if (o == NULL)
		return NULL;
	json_object_set_new(o, "mtu", json_integer(s->mtu));
	json_object_set_new(o, "mss", s->mss == DPVPN_MSS_OFF ? json_null() : json_integer(s->mss));
	json_object_set_new(o, "fragment", json_string(s->frag_outer ? "outer" : "inner"));
	return o;
}

static const char *role_name(uint8_t role)
{
	switch (role) {
	case DPVPN_ROLE_INSIDE:
		return "inside";
	case DPVPN_ROLE_OUTSIDE:
		return "outside";
	default:
		return "none";
	}
}

static json_t *port_json(const struct dpvpn_port_info *raw)
{
	struct dpvpn_port_info c = *raw, *p = &c;
	const uint8_t *m = p->mac;

	base_port(&c);
	return json_pack("{s:I,s:o,s:o,s:s,s:o,s:o,s:o,s:o,s:s,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,"
			 "s:o,s:o,s:o,s:o}",
		"id", (json_int_t)p->port_id,
		"name", name(p->name, sizeof(p->name)),
		"iface", p->iface[0] ? name(p->iface, sizeof(p->iface)) : json_null(),
		"role", role_name(p->role),
		"address", prefix_json(&p->addr4),
		"address6", prefix_json(&p->addr6),
		"extra_addresses", prefix_json(&p->extra4),
		"mac", json_sprintf("%02x:%02x:%02x:%02x:%02x:%02x", m[0], m[1], m[2], m[3],
				    m[4], m[5]),
		"link", p->link_up ? "up" : "down",
		"rx_packets", u64(p->rx_packets),
		"rx_bytes", u64(p->rx_bytes),
		"tx_packets", u64(p->tx_packets),
		"tx_bytes", u64(p->tx_bytes),
		"rx_missed", u64(p->rx_missed),
		"rx_errors", u64(p->rx_errors),
		"tx_errors", u64(p->tx_errors),
		"csum_completed", u64(p->csum_completed),
		"host_interface", p->host_iface[0] ? name(p->host_iface, sizeof(p->host_iface)) :
			json_null(),
		"host_link", p->host_iface[0] ? json_string(p->host_link_up ? "up" : "down") :
			json_null(),
		"host_in", u64(p->host_in),
		"host_out", u64(p->host_out));
}

static json_t *policy_json(const struct dpvpn_policy *p)
{
	return json_pack("{s:o,s:o,s:o,s:I}",
		"src", prefix_json(&p->src),
		"dst", prefix_json(&p->dst),
		"spi", spi(p->spi),
		"priority", (json_int_t)p->priority);
}

typedef json_t *(*entry_fn)(const void *entry);

/* Page ctx->first of table TYPE: {"KEY":[entry_fn(e)...],"first":N,"total":N}. */
static json_t *show_table(struct ctl_ctx *ctx, uint16_t type, size_t esize, entry_fn fn,
			  const char *key, char *err, size_t err_len)
{
	json_t *arr, *e;
	uint8_t *entries;
	uint32_t n, total;

	/* this page only: 200 000 SAs listed a page at a time had dumped them all per page */
	if (dp_dump_range(ctx->dp, type, esize, (uint32_t)ctx->first, CTL_PAGE, (void **)&entries,
			  &n, &total))
		return dp_failed(ctx, err, err_len, key);
	arr = json_array();
	for (uint32_t i = 0; arr && i < n; i++) {
		e = fn(entries + (size_t)i * esize);
		if (!e || json_array_append_new(arr, e)) {
			json_decref(arr);
			arr = NULL;
		}
	}
	free(entries);
	if (!arr)
		snprintf(err, err_len, "out of memory building %s", key);
	return arr ? json_pack("{s:o,s:I,s:I}", key, arr, "first", (json_int_t)ctx->first,
			       "total", (json_int_t)total) : NULL;
}

static json_t *sa_entry(const void *e)
{
	return sa_json_full(e);
}

static json_t *port_entry(const void *e)
{
	return port_json(e);
}

static json_t *policy_entry(const void *e)
{
	return policy_json(e);
}

json_t *ctl_show_sa(struct ctl_ctx *ctx, char *err, size_t err_len)
{
	return show_table(ctx, DPVPN_MSG_SHOW_SA, sizeof(struct dpvpn_sa_info), sa_entry, "sas",
			  err, err_len);
}

/* The dataplane knows devices, dpvpnd the config: "config" joins them by id. */
json_t *ctl_show_ports(struct ctl_ctx *ctx, char *err, size_t err_len)
{
	json_t *r = show_table(ctx, DPVPN_MSG_SHOW_PORTS, sizeof(struct dpvpn_port_info),
			       port_entry, "ports", err, err_len), *p;
	const char *cfg;
	size_t i;

	json_array_foreach(json_object_get(r, "ports"), i, p) {
		cfg = ctx->port_name ? ctx->port_name(
			(uint16_t)json_integer_value(json_object_get(p, "id"))) : NULL;
		json_object_set_new(p, "config", cfg ? json_string(cfg) : json_null());
	}
	return r;
}

json_t *ctl_show_policies(struct ctl_ctx *ctx, char *err, size_t err_len)
{
	return show_table(ctx, DPVPN_MSG_SHOW_POLICIES, sizeof(struct dpvpn_policy),
			  policy_entry, "policies", err, err_len);
}

static json_t *drops_json(const struct dpvpn_counters *c)
{
	uint32_t n = c->n_reasons < DPVPN_DROP_SLOTS ? c->n_reasons : DPVPN_DROP_SLOTS;
	json_t *d = json_object();
	char other[32];

	for (uint32_t i = 0; d && i < n; i++) {
		const char *key = other;

		if (i < DPVPN_DROP_MAX)
			key = drop_names[i];
		else
			snprintf(other, sizeof(other), "reason-%u", i);
		json_object_set_new(d, key, u64(c->drops[i]));
	}
	return d;
}

/* Every counter shown from now on starts from 0 (ctl_base.c). */
json_t *ctl_clear_counters(struct ctl_ctx *ctx, char *err, size_t err_len)
{
	if (base_take(ctx->dp, err, err_len))
		return NULL;
	return json_pack("{s:s}", "message", "counters cleared: show counters, sa, ports, lcores "
			 "and tunnels count from 0 (metrics stay raw)");
}

json_t *ctl_show_counters(struct ctl_ctx *ctx, char *err, size_t err_len)
{
	struct dpvpn_counters c;

	if (dp_call(ctx->dp, DPVPN_MSG_SHOW_COUNTERS, NULL, 0, &c, sizeof(c)))
		return dp_failed(ctx, err, err_len, "counters");
	base_counters(&c);
	return json_pack("{s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,"
			 "s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o}",
		"rx_packets", u64(c.rx_packets),
		"tx_packets", u64(c.tx_packets),
		"encrypted", u64(c.encrypted),
		"decrypted", u64(c.decrypted),
		"arp_in", u64(c.arp_in),
		"arp_out", u64(c.arp_out),
		"handoff", u64(c.handoff),
		"replay_late", u64(c.replay_late),
		"icmp_out", u64(c.icmp_out),
		"icmp_limited", u64(c.icmp_limited),
		"fragments", u64(c.fragments),
		"fragmented", u64(c.fragmented),
		"mss_clamped", u64(c.mss_clamped),
		"frag_in", u64(c.frag_in),
		"reassembled", u64(c.reassembled),
		"reass_dropped", u64(c.reass_dropped),
		"ike_in", u64(c.ike_in),
		"ike_out", u64(c.ike_out),
		"icmp_echo", u64(c.icmp_echo),
		"neigh_queued", u64(c.neigh_queued),
		"neigh_held", u64(c.neigh_held),
		"host_in", u64(c.host_in),
		"host_out", u64(c.host_out),
		"mbufs_in_use", u64(c.mbufs_in_use),
		"mbufs_total", u64(c.mbufs_total),
		"drops", drops_json(&c));
}

static const char *const trace_points[DPVPN_TRACE_MAX] = {
	[DPVPN_TRACE_OFF] = "off", [DPVPN_TRACE_INSIDE_RX] = "inside-rx",
	[DPVPN_TRACE_PRE_ENCRYPT] = "pre-encrypt", [DPVPN_TRACE_DECRYPTED] = "decrypted",
	[DPVPN_TRACE_OUTSIDE_TX] = "outside-tx",
};

json_t *ctl_show_trace(struct ctl_ctx *ctx, char *err, size_t err_len)
{
	struct dpvpn_trace_status t;

	if (dp_call(ctx->dp, DPVPN_MSG_TRACE_STATUS, NULL, 0, &t, sizeof(t)))
		return dp_failed(ctx, err, err_len, "trace");
	return json_pack("{s:b,s:s,s:o,s:o,s:o,s:o,s:o}",
		"active", t.active,
		"point", t.point < DPVPN_TRACE_MAX ? trace_points[t.point] : "?",
		"last_point", t.last_point == DPVPN_TRACE_OFF ? json_null() :
			json_string(t.last_point < DPVPN_TRACE_MAX ? trace_points[t.last_point] :
				    "?"),
		"wanted", u64(t.wanted), "captured", u64(t.captured),
		"written", u64(t.written), "lost", u64(t.lost));
}

json_t *ctl_trace(struct ctl_ctx *ctx, const char *point, json_int_t count, const char *file,
		  char *err, size_t err_len)
{
	struct dpvpn_trace_req r = { .count = (uint32_t)count };

	for (r.point = 0; r.point < DPVPN_TRACE_MAX; r.point++)
		if (!strcmp(trace_points[r.point], point))
			break;
	if (r.point == DPVPN_TRACE_MAX) {
		snprintf(err, err_len, "\"point\": expected off, inside-rx, pre-encrypt, decrypted "
			 "or outside-tx");
		return NULL;
	}
	if (r.point != DPVPN_TRACE_OFF &&
	    (file == NULL || count < 1 || count > 100000 ||
	     snprintf(r.path, sizeof(r.path), "%s", file) >= (int)sizeof(r.path))) {
		snprintf(err, err_len, "\"count\" 1..100000 and \"file\" (an absolute path of at "
			 "most 255 bytes) are needed");
		return NULL;
	}
	if (dp_call(ctx->dp, DPVPN_MSG_TRACE_START, &r, sizeof(r), NULL, 0))
		return dp_failed(ctx, err, err_len, "trace");
	return json_pack("{s:s}", "message", r.point ? "tracing" : "trace stopped");
}

/* ---- routes and neighbours: show, add, delete ---- */

/* The dataplane's tunnel interfaces (their names are the tunnels'). */
static int tunifs(struct ctl_ctx *ctx, struct dpvpn_tunif_info **t, uint32_t *n)
{
	return dp_dump(ctx->dp, DPVPN_MSG_SHOW_TUNIFS, sizeof(**t), (void **)t, n);
}

/* A route's tunnels by name ("#ID" for an interface the dataplane lacks). */
static json_t *route_tunnels_json(const struct dpvpn_route *r,
				  const struct dpvpn_tunif_info *t, uint32_t nt)
{
	json_t *a;

	if (r->kind != DPVPN_ROUTE_TUNNEL)
		return json_null();
	a = json_array();
	for (unsigned k = 0; a && k < r->n_tunif && k < DPVPN_ECMP_MAX; k++) {
		json_t *name = NULL;

		for (uint32_t i = 0; i < nt && name == NULL; i++)
			if (t[i].id == r->tunif[k])
				name = json_sprintf("%.*s", DPVPN_NAME_LEN, t[i].name);
		json_array_append_new(a, name ? name : json_sprintf("#%u", r->tunif[k]));
	}
	return a;
}

json_t *ctl_show_routes(struct ctl_ctx *ctx, char *err, size_t err_len)
{
	struct dpvpn_tunif_info *t = NULL;
	struct dpvpn_route *r;
	uint32_t n, nt = 0, end;
	json_t *a;

	if (dp_dump(ctx->dp, DPVPN_MSG_SHOW_ROUTES, sizeof(*r), (void **)&r, &n))
		return dp_failed(ctx, err, err_len, "routes");
	if (tunifs(ctx, &t, &nt)) {
		free(r);
		return dp_failed(ctx, err, err_len, "tunnel interfaces");
	}
	/* a page of CTL_PAGE routes from ctx->first (a mirrored BGP table outgrows a reply) */
	end = ctx->first >= n ? ctx->first : n - ctx->first > CTL_PAGE ? ctx->first + CTL_PAGE : n;
	a = json_array();
	for (uint32_t i = ctx->first; a && i < end; i++) {
		bool port = r[i].kind != DPVPN_ROUTE_TUNNEL;

		json_t *p = port ? json_integer(r[i].port_id) : json_null();

		json_array_append_new(a, json_pack("{s:o,s:o,s:o,s:o}", "dst",
						   prefix_json(&r[i].dst), "port", p,
						   "via", r[i].gateway.family ?
						   addr_json(&r[i].gateway) : json_null(),
						   "tunnels", route_tunnels_json(&r[i], t, nt)));
	}
	free(r);
	free(t);
	return json_pack("{s:o,s:I,s:I}", "routes", a, "first", (json_int_t)ctx->first, "total",
			 (json_int_t)n);
}

/* "tunnels": [NAME, ...] of route add: the interfaces' ids, by name. */
static int tunnel_ids(struct ctl_ctx *ctx, json_t *names, struct dpvpn_route *r, char *err,
		      size_t err_len)
{
	struct dpvpn_tunif_info *t = NULL;
	uint32_t nt = 0;
	size_t k;
	json_t *v;

	if (!json_is_array(names) || json_array_size(names) == 0 ||
	    json_array_size(names) > DPVPN_ECMP_MAX) {
		snprintf(err, err_len, "\"tunnels\": expected 1..%d tunnel names", DPVPN_ECMP_MAX);
		return -1;
	}
	if (tunifs(ctx, &t, &nt)) {
		dp_failed(ctx, err, err_len, "tunnel interfaces");
		return -1;
	}
	r->kind = DPVPN_ROUTE_TUNNEL;
	r->n_tunif = (uint8_t)json_array_size(names);
	json_array_foreach(names, k, v) {
		const char *name = json_string_value(v);
		uint32_t i;

		for (i = 0; name && i < nt && strncmp(t[i].name, name, DPVPN_NAME_LEN); i++)
			;
		if (name == NULL || i == nt) {
			snprintf(err, err_len, "\"tunnels\": %.64s is not a route-based tunnel "
				 "(mode = route) of the running config",
				 name ? name : "(not a string)");
			free(t);
			return -1;
		}
		r->tunif[k] = t[i].id;
	}
	free(t);
	return 0;
}

json_t *ctl_show_neighs(struct ctl_ctx *ctx, char *err, size_t err_len)
{
	struct dpvpn_neigh_info *e;
	uint32_t n;
	json_t *a;

	if (dp_dump(ctx->dp, DPVPN_MSG_SHOW_NEIGHS, sizeof(*e), (void **)&e, &n))
		return dp_failed(ctx, err, err_len, "neighbours");
	a = json_array();
	for (uint32_t i = 0; a && i < n; i++) {
		const uint8_t *m = e[i].mac;
		int resolved = m[0] | m[1] | m[2] | m[3] | m[4] | m[5];

		json_array_append_new(a, json_pack("{s:I,s:o,s:o,s:b}", "port",
			(json_int_t)e[i].port_id, "address", addr_json(&e[i].addr),
			"mac", resolved ? json_sprintf("%02x:%02x:%02x:%02x:%02x:%02x", m[0], m[1],
						      m[2], m[3], m[4], m[5]) : json_null(),
			"static", e[i].is_static));
	}
	free(e);
	return json_pack("{s:o}", "neighbours", a);
}

static int parse_ip(const char *s, struct dpvpn_addr *a)
{
	memset(a, 0, sizeof(*a));
	if (inet_pton(AF_INET, s, &a->v4) == 1) {
		a->family = DPVPN_AF_INET;
		return 0;
	}
	if (inet_pton(AF_INET6, s, a->v6) == 1) {
		a->family = DPVPN_AF_INET6;
		return 0;
	}
	return -1;
}

json_t *ctl_route(struct ctl_ctx *ctx, int add, const char *dst, json_int_t port,
		  const char *via, json_t *tunnels, char *err, size_t err_len)
{
	struct dpvpn_route r = { .port_id = (uint16_t)port };
	char buf[64];
	const char *slash = dst ? strchr(dst, '/') : NULL;
	struct dpvpn_addr a;
	char *end;
	unsigned long len;

	if (slash == NULL || (size_t)(slash - dst) >= sizeof(buf)) {
		snprintf(err, err_len, "\"dst\": expected a prefix ADDRESS/LEN");
		return NULL;
	}
	memcpy(buf, dst, (size_t)(slash - dst));
	buf[slash - dst] = '\0';
	len = strtoul(slash + 1, &end, 10);
	if (parse_ip(buf, &a) || *end != '\0' || slash[1] == '\0' ||
	    len > (a.family == DPVPN_AF_INET ? 32u : 128u)) {
		snprintf(err, err_len, "\"dst\": expected a prefix ADDRESS/LEN, got '%.64s'", dst);
		return NULL;
	}
	r.dst.family = a.family;
	r.dst.len = (uint8_t)len;
	memcpy(r.dst.v6, a.v6, 16);
	if (add && tunnels != NULL) {
		if (port >= 0 || via != NULL) {
			snprintf(err, err_len, "\"tunnels\": a route goes into tunnels or out a "
				 "port (port, via), not both");
			return NULL;
		}
		r.port_id = 0;
		if (tunnel_ids(ctx, tunnels, &r, err, err_len))
			return NULL;
	} else if (add && (port < 0 || port > 1023)) {
		snprintf(err, err_len, "\"port\": expected a DPDK port id");
		return NULL;
	}
	if (add && via && parse_ip(via, &r.gateway)) {
		snprintf(err, err_len, "\"via\": expected an IP address, got '%.64s'", via);
		return NULL;
	}
	if (dp_call(ctx->dp, add ? DPVPN_MSG_ROUTE_ADD : DPVPN_MSG_ROUTE_DEL, &r, sizeof(r),
		    NULL, 0))
		return dp_failed(ctx, err, err_len, "route");
	if (ctx->route_changed != NULL)
		ctx->route_changed(&r.dst, add);
	return json_pack("{s:s}", "message", add ? "route added" : "route deleted");
}

json_t *ctl_neigh(struct ctl_ctx *ctx, int add, json_int_t port, const char *addr,
		  const char *mac, char *err, size_t err_len)
{
	struct dpvpn_neigh n = { .port_id = (uint16_t)port };

	if (port < 0 || port > 1023 || addr == NULL || parse_ip(addr, &n.addr)) {
		snprintf(err, err_len, "\"port\" and \"address\": a DPDK port id and an IP address");
		return NULL;
	}
	if (add && (mac == NULL || sscanf(mac, "%2hhx:%2hhx:%2hhx:%2hhx:%2hhx:%2hhx", &n.mac[0],
					  &n.mac[1], &n.mac[2], &n.mac[3], &n.mac[4],
					  &n.mac[5]) != 6)) {
		snprintf(err, err_len, "\"mac\": expected aa:bb:cc:dd:ee:ff");
		return NULL;
	}
	if (dp_call(ctx->dp, add ? DPVPN_MSG_NEIGH_ADD : DPVPN_MSG_NEIGH_DEL, &n, sizeof(n),
		    NULL, 0))
		return dp_failed(ctx, err, err_len, "neighbour");
	return json_pack("{s:s}", "message", add ? "neighbour added" : "neighbour deleted");
}

static int parse_prefix(const char *s, struct dpvpn_prefix *p)
{
	char buf[64];
	const char *slash = s ? strchr(s, '/') : NULL;
	struct dpvpn_addr a;
	unsigned long len;
	char *end;

	if (slash == NULL || (size_t)(slash - s) >= sizeof(buf) || slash[1] == '\0')
		return -1;
	memcpy(buf, s, (size_t)(slash - s));
	buf[slash - s] = '\0';
	len = strtoul(slash + 1, &end, 10);
	if (parse_ip(buf, &a) || *end != '\0' || len > (a.family == DPVPN_AF_INET ? 32u : 128u))
		return -1;
	memset(p, 0, sizeof(*p));
	p->family = a.family;
	p->len = (uint8_t)len;
	memcpy(p->v6, a.v6, 16);
	return 0;
}

static int parse_spi(const char *s, uint32_t *spi)
{
	char *end;
	unsigned long v;

	if (s == NULL)
		return -1;
	v = strtoul(s, &end, 0);
	if (*end != '\0' || v < 256 || v > 0xffffffffUL)
		return -1;
	*spi = htonl((uint32_t)v);
	return 0;
}

json_t *ctl_policy(struct ctl_ctx *ctx, int add, const char *src, const char *dst,
		   const char *spi, json_int_t priority, char *err, size_t err_len)
{
	struct dpvpn_policy p = { .priority = (uint32_t)(priority > 0 ? priority : 100) };

	if (parse_prefix(src, &p.src) || parse_prefix(dst, &p.dst)) {
		snprintf(err, err_len, "\"src\", \"dst\": expected prefixes ADDRESS/LEN");
		return NULL;
	}
	if (add && parse_spi(spi, &p.spi)) {
		snprintf(err, err_len, "\"spi\": expected an outbound SA's SPI (0x100..)");
		return NULL;
	}
	if (dp_call(ctx->dp, add ? DPVPN_MSG_POLICY_ADD : DPVPN_MSG_POLICY_DEL, &p, sizeof(p),
		    NULL, 0))
		return dp_failed(ctx, err, err_len, "policy");
	return json_pack("{s:s}", "message", add ? "policy added" : "policy deleted");
}

json_t *ctl_sa_del(struct ctl_ctx *ctx, const char *spi, const char *dir, char *err,
		   size_t err_len)
{
	struct dpvpn_sa_id id = { .dir = dir && !strcmp(dir, "in") ? DPVPN_DIR_IN :
				  dir && !strcmp(dir, "out") ? DPVPN_DIR_OUT : 0 };

	if (parse_spi(spi, &id.spi) || id.dir == 0) {
		snprintf(err, err_len, "\"spi\" and \"dir\" (in or out) are needed");
		return NULL;
	}
	if (dp_call(ctx->dp, DPVPN_MSG_SA_DEL, &id, sizeof(id), NULL, 0))
		return dp_failed(ctx, err, err_len, "sa");
	return json_pack("{s:s}", "message", "SA deleted (and, outbound, its policies)");
}

json_t *ctl_show_lcores(struct ctl_ctx *ctx, char *err, size_t err_len)
{
	struct dpvpn_lcore_info *l;
	uint32_t n;
	json_t *a;

	if (dp_dump(ctx->dp, DPVPN_MSG_SHOW_LCORES, sizeof(*l), (void **)&l, &n))
		return dp_failed(ctx, err, err_len, "lcores");
	a = json_array();
	for (uint32_t i = 0; a && i < n; i++) {
		uint64_t all;

		base_lcore(&l[i]);	/* busy: the share since the clear, if one was done */
		all = l[i].busy_cycles + l[i].idle_cycles;

		json_array_append_new(a, json_pack("{s:I,s:s,s:o,s:o,s:o,s:o,s:o,s:f}",
			"lcore", (json_int_t)l[i].lcore, "role", l[i].worker ? "worker" : "main",
			"rx_packets", u64(l[i].rx_packets), "tx_packets", u64(l[i].tx_packets),
			"encrypted", u64(l[i].encrypted), "decrypted", u64(l[i].decrypted),
			"drops", u64(l[i].drops),
			"busy", all ? (double)l[i].busy_cycles / (double)all : 0.0));
	}
	free(l);
	return json_pack("{s:o}", "lcores", a);
}

json_t *ctl_show_ha(struct ctl_ctx *ctx, char *err, size_t err_len)
{
	if (ctx->show_ha == NULL) {
		snprintf(err, err_len, "no [ha] in this dpvpnd");
		return NULL;
	}
	return ctx->show_ha(err, err_len);
}

json_t *ctl_show_ike(struct ctl_ctx *ctx, char *err, size_t err_len)
{
	if (ctx->show_ike == NULL) {
		snprintf(err, err_len, "no IKE in this dpvpnd");
		return NULL;
	}
	return ctx->show_ike(err, err_len);
}
