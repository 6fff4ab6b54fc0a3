/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ctl_tunnels.c - `show tunnels`: every tunnel of the config, up or down and
 * why, with its peer, cipher and selectors, joined by name with the
 * dataplane's SAs for what they carried and when each direction last carried
 * a packet: what `wg show` and `swanctl --list-conns` tell, in one place.
 *
 * Why a tunnel is down (ctl_proto.h, "tunnels"): operator (dpvpnctl tunnel
 * NAME down; terminate, for an IKE one), refused (named by a config file a
 * reload refused: remembered here until a config loads), ike (not
 * established: ikd_show.c says how far it got), no-sa (a static tunnel whose SAs
 * are not in the dataplane: sa del), expired (an SA at its hard lifetime).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "ctl_base.h"
#include "ctl_proto.h"
#include "ctl_show.h"

#define ERR_TEXT	400	/* one config error, "FILE:LINE: message" */
#define DETAIL_TEXT	2048	/* an IKE SA's end: a certificate's subject, an identity */

/* ---- what a refused config named ---- */

struct refused_tunnel {
	struct cfg_tunnel t;		/* keys wiped */
	char error[ERR_TEXT];		/* its own error, "" if none */
};

static struct {
	struct refused_tunnel *v;
	size_t n;
	size_t n_errors;		/* 0: no config refused since one loaded */
	char first[ERR_TEXT];
} refused;

void ctl_tunnel_copy(struct cfg_tunnel *dst, const struct cfg_tunnel *src)
{
	*dst = *src;
	explicit_bzero(dst->out.keymat, sizeof(dst->out.keymat));
	explicit_bzero(dst->in.keymat, sizeof(dst->in.keymat));
	explicit_bzero(dst->out.authmat, sizeof(dst->out.authmat));
	explicit_bzero(dst->in.authmat, sizeof(dst->in.authmat));
	explicit_bzero(dst->ike.psk, sizeof(dst->ike.psk));
	dst->ike.psk_len = 0;
}

/* The error about tunnel name: "[tunnel NAME] key: ..." or "tunnel NAME: ...". */
static const char *own_error(const struct cfg *file, const char *why, const char *name)
{
	char sect[DPVPN_NAME_LEN + 16], said[DPVPN_NAME_LEN + 16];

	snprintf(sect, sizeof(sect), "[tunnel %s]", name);
	snprintf(said, sizeof(said), "tunnel %s:", name);
	for (size_t i = 0; i < file->n_errors; i++)
		if (strstr(file->errors[i], sect))
			return file->errors[i];
	if (why && (strstr(why, sect) || strstr(why, said)))
		return why;
	return NULL;
}

void ctl_tunnels_refused(const struct cfg *file, const char *why)
{
	if (refused.v)
		explicit_bzero(refused.v, refused.n * sizeof(*refused.v));
	free(refused.v);
	memset(&refused, 0, sizeof(refused));
	if (file == NULL)
		return;
	refused.n_errors = file->n_errors ? file->n_errors : 1;
	snprintf(refused.first, sizeof(refused.first), "%s",
		 file->n_errors ? file->errors[0] : why ? why : "refused");
	refused.v = calloc(file->n_tunnels ? file->n_tunnels : 1, sizeof(*refused.v));
	if (refused.v == NULL)
		return;		/* the tunnels go unnamed; the refusal is still said */
	for (size_t i = 0; i < file->n_tunnels; i++) {
		const char *e = own_error(file, why, file->tunnels[i]->name);

		ctl_tunnel_copy(&refused.v[i].t, file->tunnels[i]);
		snprintf(refused.v[i].error, sizeof(refused.v[i].error), "%s", e ? e : "");
	}
	refused.n = file->n_tunnels;
}

static const struct refused_tunnel *refused_named(const char *name)
{
	for (size_t i = 0; i < refused.n; i++)
		if (!strcmp(refused.v[i].t.name, name))
			return &refused.v[i];
	return NULL;
}

/* ---- the list: what dpvpnd runs or took down, then what was refused ---- */

struct entry {
	struct ctl_tunnel t;
	const char *refused;	/* not running: the config naming it was refused, why */
};

struct list {
	struct entry *v;
	size_t n, cap;
	bool oom;
};

static void add(struct list *l, const struct ctl_tunnel *t, const char *why)
{
	if (l->n == l->cap) {
		size_t cap = l->cap ? 2 * l->cap : 16;
		struct entry *v = realloc(l->v, cap * sizeof(*v));

		if (v == NULL) {
			l->oom = true;
			return;
		}
		l->v = v;
		l->cap = cap;
	}
	l->v[l->n++] = (struct entry){ .t = *t, .refused = why };
}

static void collect(void *arg, const struct ctl_tunnel *t)
{
	add(arg, t, NULL);
}

static bool listed(const struct list *l, const char *name)
{
	for (size_t i = 0; i < l->n; i++)
		if (!strcmp(l->v[i].t.name, name))
			return true;
	return false;
}

static void add_refused(struct list *l)
{
	for (size_t i = 0; i < refused.n; i++) {
		const struct refused_tunnel *r = &refused.v[i];
		struct ctl_tunnel t = { .name = r->t.name, .cfg = &r->t };

		if (!listed(l, t.name))
			add(l, &t, r->error[0] ? r->error : refused.first);
	}
}

/* ---- the dataplane's SAs, by name ---- */

static int by_name(const void *a, const void *b)
{
	const struct dpvpn_sa_info *x = *(const struct dpvpn_sa_info *const *)a;
	const struct dpvpn_sa_info *y = *(const struct dpvpn_sa_info *const *)b;

	return strncmp(x->name, y->name, DPVPN_NAME_LEN);
}

/* The first of sorted[0..n) named name (n if none); how many are, in *count. */
static size_t named(const struct dpvpn_sa_info *const *sorted, size_t n, const char *name,
		    size_t *count)
{
	size_t lo = 0, hi = n, k;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (strncmp(sorted[mid]->name, name, DPVPN_NAME_LEN) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (k = lo; k < n && !strncmp(sorted[k]->name, name, DPVPN_NAME_LEN); k++)
		;
	*count = k - lo;
	return lo;
}

/* ---- one tunnel ---- */

struct verdict {
	const char *reason;		/* NULL: up */
	char detail[DETAIL_TEXT];
	char ike_state[32];		/* "": not an IKE tunnel */
};

static const struct dpvpn_sa_info *find(const struct dpvpn_sa_info *const *sas, size_t n,
					uint8_t dir, uint32_t spi_host, bool any)
{
	for (size_t i = 0; i < n; i++)
		if (sas[i]->dir == dir && (any || ntohl(sas[i]->spi) == spi_host))
			return sas[i];
	return NULL;
}

/* Both SAs there and carrying, or why not. */
static void judge_sas(const struct ctl_tunnel *t, const struct dpvpn_sa_info *const *sas,
		      size_t n, bool ike, struct verdict *v)
{
	const struct cfg_tunnel *c = t->cfg;
	const struct dpvpn_sa_info *out = find(sas, n, DPVPN_DIR_OUT, c->out.spi, ike);
	const struct dpvpn_sa_info *in = find(sas, n, DPVPN_DIR_IN, c->in.spi, ike);
	const struct dpvpn_sa_info *hard = out && out->life_state == DPVPN_LIFE_HARD ? out :
					   in && in->life_state == DPVPN_LIFE_HARD ? in : NULL;

	if (out == NULL || in == NULL) {
		v->reason = "no-sa";
		snprintf(v->detail, sizeof(v->detail), "its %s SA%s is not in the dataplane "
			 "(dpvpnctl sa del?): tunnel %s down, then up, installs it again",
			 out == NULL ? "outbound" : "inbound", ike ? "" : " of the config",
			 t->name);
	} else if (hard != NULL) {
		v->reason = "expired";
		snprintf(v->detail, sizeof(v->detail), "%s SA 0x%08x reached its hard lifetime "
			 "and carries nothing", hard->dir == DPVPN_DIR_OUT ? "outbound" : "inbound",
			 ntohl(hard->spi));
	}
}

static void judge(struct ctl_ctx *ctx, const struct entry *e,
		  const struct dpvpn_sa_info *const *sas, size_t n, struct verdict *v)
{
	const struct ctl_tunnel *t = &e->t;
	int ike;

	memset(v, 0, sizeof(*v));
	if (t->cfg != NULL && t->cfg->ike.on)
		snprintf(v->ike_state, sizeof(v->ike_state), "none");
	if (t->operator_down) {
		v->reason = "operator";
		snprintf(v->detail, sizeof(v->detail), "taken down with dpvpnctl tunnel %s down "
			 "(tunnel %s up installs it again)", t->name, t->name);
	} else if (e->refused != NULL) {
		v->reason = "refused";
		snprintf(v->detail, sizeof(v->detail), "the config naming it was refused at the "
			 "last reload: %s", e->refused);
	} else if (t->cfg == NULL) {
		v->reason = "no-sa";
		snprintf(v->detail, sizeof(v->detail), "not in the running config");
	} else if (!t->cfg->ike.on) {
		judge_sas(t, sas, n, false, v);
	} else {
		ike = ctx->ike_tunnel ? ctx->ike_tunnel(t->name, v->ike_state,
							sizeof(v->ike_state), v->detail,
							sizeof(v->detail)) : CTL_IKE_UNKNOWN;
		if (ike == CTL_IKE_UP)
			judge_sas(t, sas, n, true, v);
		else if (ike != CTL_IKE_RA)	/* remote access: up, its clients listed */
			v->reason = ike == CTL_IKE_HELD ? "operator" : "ike";
		if (ike == CTL_IKE_UNKNOWN)
			snprintf(v->detail, sizeof(v->detail), "IKE is not running for it");
	}
}

static json_t *u64j(uint64_t v)
{
	return json_integer((json_int_t)v);
}

/* Text for the client: as it is if it is UTF-8, else with '?' for bytes above ASCII. */
static json_t *text_json(const char *s)
{
	json_t *j = json_string(s);
	char buf[DETAIL_TEXT];
	size_t i;

	if (j != NULL)
		return j;
	for (i = 0; s[i] && i + 1 < sizeof(buf); i++)
		buf[i] = (unsigned char)s[i] < 0x80 ? s[i] : '?';
	buf[i] = '\0';
	return json_string(buf);
}

static json_t *cfg_addr_json(const struct cfg_addr *a)
{
	char buf[INET6_ADDRSTRLEN];
	uint32_t v4 = htonl(a->v4);

	if (a->family == DPVPN_AF_INET)
		return json_string(inet_ntop(AF_INET, &v4, buf, sizeof(buf)));
	if (a->family == DPVPN_AF_INET6)
		return json_string(inet_ntop(AF_INET6, a->v6, buf, sizeof(buf)));
	return json_null();
}

static json_t *cfg_prefix_json(const struct cfg_prefix *p)
{
	json_t *a = cfg_addr_json(&p->addr), *j;

	if (!json_is_string(a))
		return a;
	j = json_sprintf("%s/%u", json_string_value(a), p->len);
	json_decref(a);
	return j;
}

/* All of a tunnel's local (or remote) prefixes, the first one first. */
static json_t *cfg_ts_list_json(const struct cfg_tunnel *t, bool local)
{
	json_t *l = json_array();

	for (unsigned i = 0; i < cfg_tunnel_n_ts(t, local); i++)
		json_array_append_new(l, cfg_prefix_json(cfg_tunnel_ts(t, local, i)));
	return l;
}

/* What one direction carried since the clear, and its newest packet. */
static json_t *way_json(const struct dpvpn_sa_info *const *sas, size_t n, uint8_t dir)
{
	uint64_t packets = 0, bytes = 0, idle = UINT64_MAX;

	for (size_t i = 0; i < n; i++) {
		struct dpvpn_sa_info s = *sas[i];

		if (s.dir != dir)
			continue;
		base_sa(&s);
		packets += s.packets;
		bytes += s.bytes;
		idle = s.idle_ms < idle ? s.idle_ms : idle;
	}
	return json_pack("{s:o,s:o,s:o}", "packets", u64j(packets), "bytes", u64j(bytes),
			 "last_packet_ms", ctl_idle_json(idle));
}

static json_t *sas_json(const struct dpvpn_sa_info *const *sas, size_t n)
{
	json_t *a = json_array();

	for (size_t i = 0; a && i < n; i++)
		json_array_append_new(a, json_pack("{s:o,s:s}",
			"spi", json_sprintf("0x%08x", ntohl(sas[i]->spi)),
			"dir", sas[i]->dir == DPVPN_DIR_IN ? "in" : "out"));
	return a;
}

/* This request's SHOW_TUNIFS (route tunnels' interfaces), by ctl_show_tunnels. */
static const struct dpvpn_tunif_info *req_tunif;
static uint32_t req_n_tunif;

/* A route tunnel's interface: up, what it carried, its twin; null for others. */
static json_t *interface_json(const struct cfg_tunnel *c, const char *name)
{
	const struct dpvpn_tunif_info *f = NULL;

	if (c == NULL || !c->route)
		return json_null();
	for (uint32_t i = 0; i < req_n_tunif && f == NULL; i++)
		if (!strncmp(req_tunif[i].name, name, DPVPN_NAME_LEN))
			f = &req_tunif[i];
	return json_pack("{s:b,s:o,s:o,s:o,s:o}",
		"up", f != NULL && f->up,
		"packets_out", f ? u64j(f->tx) : json_null(),
		"packets_in", f ? u64j(f->rx) : json_null(),
		"down_drops", f ? u64j(f->down_drops) : json_null(),
		"host_interface", c->host_iface[0] ? text_json(c->host_iface) : json_null());
}

/* The cipher an IKE tunnel's outbound SA has (the dataplane's name); NULL: none. */
static const char *negotiated_cipher(const struct dpvpn_sa_info *const *sas, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (sas[i]->dir == DPVPN_DIR_OUT)
			return cfg_alg_name(sas[i]->alg);
	return NULL;
}

/* keying = ike: what was negotiated (ikd_tunnel_json), the cipher as the SAs have it. */
static void add_ike(struct ctl_ctx *ctx, json_t *o, const struct entry *e,
		    const struct dpvpn_sa_info *const *sas, size_t n)
{
	const char *cipher = negotiated_cipher(sas, n);
	json_t *extra;

	if (e->t.cfg == NULL || !e->t.cfg->ike.on || e->t.operator_down || e->refused ||
	    ctx->ike_tunnel_json == NULL)
		return;
	extra = ctx->ike_tunnel_json(e->t.name);
	if (json_is_object(extra))
		json_object_update(o, extra);
	json_decref(extra);
	if (cipher != NULL)
		json_object_set_new(o, "cipher", json_string(cipher));
}

static json_t *tunnel_json(struct ctl_ctx *ctx, const struct entry *e,
			   const struct dpvpn_sa_info *const *sorted, size_t n_sorted)
{
	const struct cfg_tunnel *c = e->t.cfg;
	const struct refused_tunnel *r = refused_named(e->t.name);
	const struct dpvpn_sa_info *const *sas;
	struct verdict v;
	size_t n = 0;

	static const char *const rpf[] = { "off", "loose", "strict" };
	json_t *o;

	sas = sorted + named(sorted, n_sorted, e->t.name, &n);
	judge(ctx, e, sas, n, &v);
	o = json_pack("{s:o,s:s,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,"
			 "s:o,s:o,s:b,s:o}",
		"name", text_json(e->t.name),
		"state", v.reason ? "down" : "up",
		"reason", v.reason ? json_string(v.reason) : json_null(),
		"detail", v.reason ? text_json(v.detail) : json_null(),
		"keying", c ? json_string(c->ike.on ? "ike" : "static") : json_null(),
		"mode", c ? json_string(c->route ? "route" : "policy") : json_null(),
		"rpf", c && c->route && c->rpf < 3 ? json_string(rpf[c->rpf]) : json_null(),
		"local", c ? cfg_addr_json(&c->local) : json_null(),
		"remote", c ? cfg_addr_json(&c->remote) : json_null(),
		/* keying = ike without cipher: esp-proposals decide */
		"cipher", c && (c->alg || !c->ike.on) ? json_string(cfg_alg_name(c->alg)) :
			  c ? json_string("negotiated") : json_null(),
		"local_ts", c ? cfg_prefix_json(&c->local_ts) : json_null(),
		"remote_ts", c ? cfg_prefix_json(&c->remote_ts) : json_null(),
		"local_ts_list", c ? cfg_ts_list_json(c, true) : json_null(),
		"remote_ts_list", c ? cfg_ts_list_json(c, false) : json_null(),
		"ike_state", v.ike_state[0] ? text_json(v.ike_state) : json_null(),
		"config_error", r && r->error[0] && !e->refused ? text_json(r->error) : json_null(),
		"sas", sas_json(sas, n),
		"in", way_json(sas, n, DPVPN_DIR_IN),
		"out", way_json(sas, n, DPVPN_DIR_OUT),
		"host_access", c != NULL && c->host_access,
		"interface", interface_json(c, e->t.name));
	if (o != NULL)
		add_ike(ctx, o, e, sas, n);
	return o;
}

/* ---- the request ---- */

static json_t *page_json(struct ctl_ctx *ctx, const struct list *l,
			 const struct dpvpn_sa_info *const *sorted, size_t n_sorted)
{
	size_t first = ctx->first, end = l->n;
	json_t *arr = json_array();

	if (first < end && end - first > CTL_PAGE)
		end = first + CTL_PAGE;
	for (size_t i = first; arr && i < end; i++) {
		json_t *t = tunnel_json(ctx, &l->v[i], sorted, n_sorted);

		if (t == NULL || json_array_append_new(arr, t)) {
			json_decref(arr);
			arr = NULL;
		}
	}
	return arr;
}

static json_t *refusal_json(void)
{
	if (refused.n_errors == 0)
		return json_null();
	return json_pack("{s:o,s:o}", "errors", u64j(refused.n_errors), "first",
			 text_json(refused.first));
}

json_t *ctl_show_tunnels(struct ctl_ctx *ctx, char *err, size_t err_len)
{
	struct list l = { 0 };
	struct dpvpn_sa_info *sa = NULL;
	struct dpvpn_tunif_info *tunif = NULL;
	const struct dpvpn_sa_info **sorted = NULL;
	json_t *arr = NULL;
	uint32_t n = 0, n_tunif = 0;

	if (dp_dump(ctx->dp, DPVPN_MSG_SHOW_SA, sizeof(*sa), (void **)&sa, &n)) {
		snprintf(err, err_len, "dataplane tunnels: %s", ctx->dp->err);
		return NULL;
	}
	if (dp_dump(ctx->dp, DPVPN_MSG_SHOW_TUNIFS, sizeof(*tunif), (void **)&tunif, &n_tunif)) {
		snprintf(err, err_len, "dataplane tunnel interfaces: %s", ctx->dp->err);
		free(sa);
		return NULL;
	}
	req_tunif = tunif;
	req_n_tunif = n_tunif;
	if (ctx->tunnels)
		ctx->tunnels(collect, &l);
	add_refused(&l);
	sorted = calloc(n ? n : 1, sizeof(*sorted));
	if (sorted != NULL && !l.oom) {
		for (uint32_t i = 0; i < n; i++)
			sorted[i] = &sa[i];
		if (n > 0)
			qsort(sorted, n, sizeof(*sorted), by_name);
		arr = page_json(ctx, &l, sorted, n);
	}
	free(sorted);
	free(sa);
	free(tunif);
	req_tunif = NULL;
	req_n_tunif = 0;
	free(l.v);
	if (arr == NULL) {
		snprintf(err, err_len, "out of memory building tunnels");
		return NULL;
	}
	return json_pack("{s:o,s:I,s:I,s:o}", "tunnels", arr, "first", (json_int_t)ctx->first,
			 "total", (json_int_t)l.n, "config_refused", refusal_json());
}
