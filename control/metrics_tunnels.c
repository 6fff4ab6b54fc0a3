/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * metrics_tunnels.c - the metrics' per-tunnel series: labels an operator can
 * alert on (tunnel, direction), the same across rekeys, where the per-SA
 * series (metrics.c) change their spi label at each one.
 *
 * Whether a tunnel is up and why not, its IKE SA's state and its clients
 * come from what `show tunnels` answers (ctl_tunnels.c, all pages); what it
 * carried from the dataplane's SAs, raw (a clear does not reset them).  A
 * tunnel's counters are its SAs' added up plus what the SAs it had before
 * carried (retired: as last seen at a scrape), so they only grow through a
 * rekey; what an SA carried between the last scrape and its removal is not
 * counted (doc/operations.md "Metrics").
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl_proto.h"
#include "ctl_show.h"
#include "metrics.h"

enum { W_PACKETS, W_BYTES, W_DROPS, W_N };

/* One SA as a scrape saw it, and a tunnel direction's retired total. */
struct seen {
	char name[DPVPN_NAME_LEN];
	uint8_t dir;
	uint32_t spi;
	uint64_t v[W_N];
};

struct metrics_tunnels {
	struct seen *prev;		/* the last scrape's SAs, sorted (seen_cmp) */
	size_t n_prev;
	struct seen *retired;		/* per (name, dir), spi 0, sorted */
	size_t n_retired, cap_retired;
};

static int seen_cmp(const void *a, const void *b)
{
	const struct seen *x = a, *y = b;
	int c = strncmp(x->name, y->name, DPVPN_NAME_LEN);

	if (c != 0)
		return c;
	if (x->dir != y->dir)
		return x->dir < y->dir ? -1 : 1;
	return x->spi < y->spi ? -1 : x->spi > y->spi;
}

static struct seen seen_of(const struct dpvpn_sa_info *s)
{
	struct seen e = { .dir = s->dir, .spi = ntohl(s->spi) };

	memcpy(e.name, s->name, DPVPN_NAME_LEN);
	e.v[W_PACKETS] = s->packets;
	e.v[W_BYTES] = s->bytes;
	e.v[W_DROPS] = s->drop_replay + s->drop_icv + s->drop_policy + s->drop_seq +
		       s->drop_other;
	return e;
}

/* The retired total of (name, dir), made if new; NULL: no memory. */
static struct seen *retired_of(struct metrics_tunnels *m, const struct seen *sa)
{
	struct seen key = *sa, *at;
	size_t lo = 0, hi = m->n_retired;

	key.spi = 0;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = seen_cmp(&m->retired[mid], &key);

		if (c == 0)
			return &m->retired[mid];
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (m->n_retired == m->cap_retired) {
		size_t cap = m->cap_retired ? 2 * m->cap_retired : 64;

		at = realloc(m->retired, cap * sizeof(*at));
		if (at == NULL)
			return NULL;
		m->retired = at;
		m->cap_retired = cap;
	}
	at = &m->retired[lo];
	memmove(at + 1, at, (m->n_retired - lo) * sizeof(*at));
	m->n_retired++;
	*at = key;
	memset(at->v, 0, sizeof(at->v));
	return at;
}

/* SAs of the last scrape that are gone now: what they carried is retired. */
static void retire_gone(struct metrics_tunnels *m, const struct seen *cur, size_t n)
{
	for (size_t i = 0; i < m->n_prev; i++) {
		struct seen *r;

		if (n > 0 && bsearch(&m->prev[i], cur, n, sizeof(*cur), seen_cmp) != NULL)
			continue;
		r = retired_of(m, &m->prev[i]);
		for (int w = 0; r != NULL && w < W_N; w++)
			r->v[w] += m->prev[i].v[w];
	}
}

/* This scrape's SAs, sorted, kept as prev for the next: 0, or -1. */
static int scrape_sas(struct metrics_tunnels *m, struct dp_client *dp)
{
	struct dpvpn_sa_info *s = NULL;
	struct seen *cur;
	uint32_t ns = 0;

	if (dp_dump(dp, DPVPN_MSG_SHOW_SA, sizeof(*s), (void **)&s, &ns) != 0)
		return -1;
	cur = malloc((ns ? ns : 1) * sizeof(*cur));
	if (cur == NULL) {
		free(s);
		return -1;
	}
	for (uint32_t i = 0; i < ns; i++)
		cur[i] = seen_of(&s[i]);
	free(s);
	qsort(cur, ns, sizeof(*cur), seen_cmp);
	retire_gone(m, cur, ns);
	free(m->prev);
	m->prev = cur;
	m->n_prev = ns;
	return 0;
}

/* A label value: " and \ escaped, as the exposition format wants. */
static void label(FILE *f, const char *s)
{
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			fputc('\\', f);
		fputc(*s == '\n' ? ' ' : *s, f);
	}
}

static const char *str(json_t *o, const char *key)
{
	const char *s = json_string_value(json_object_get(o, key));

	return s ? s : "";
}

/* The first of sorted v[0..n) not below key. */
static size_t lower_bound(const struct seen *v, size_t n, const struct seen *key)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (seen_cmp(&v[mid], key) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* (name, dir)'s counter w: its current SAs' plus its retired ones'. */
static uint64_t way_total(const struct metrics_tunnels *m, const struct seen *key, int w)
{
	const struct seen *r;
	uint64_t v = 0;

	for (size_t i = lower_bound(m->prev, m->n_prev, key); i < m->n_prev &&
	     m->prev[i].dir == key->dir && !strncmp(m->prev[i].name, key->name, DPVPN_NAME_LEN);
	     i++)
		v += m->prev[i].v[w];
	r = m->n_retired ? bsearch(key, m->retired, m->n_retired, sizeof(*key), seen_cmp) : NULL;
	return v + (r ? r->v[w] : 0);
}

/* The tunnel's counter w, one line per direction. */
static void way_lines(FILE *f, const struct metrics_tunnels *m, const char *name, int w,
		      const char *family)
{
	static const uint8_t dirs[] = { DPVPN_DIR_IN, DPVPN_DIR_OUT };

	for (int d = 0; d < 2; d++) {
		struct seen key = { .dir = dirs[d], .spi = 0 };
		uint64_t v;

		memcpy(key.name, name, strnlen(name, sizeof(key.name)));	/* as the SAs' */
		v = way_total(m, &key, w);
		fprintf(f, "%s{tunnel=\"", family);
		label(f, name);
		fprintf(f, "\",direction=\"%s\"} %" PRIu64 "\n", d ? "out" : "in", v);
	}
}

/* Each tunnel of show tunnels, in the page order. */
typedef void (*tunnel_fn)(FILE *f, json_t *t, const struct metrics_tunnels *m);

static void each_tunnel(FILE *f, json_t *all, const struct metrics_tunnels *m, tunnel_fn fn)
{
	size_t i;
	json_t *t;

	json_array_foreach(all, i, t)
		fn(f, t, m);
}

static void head(FILE *f, const char *name, const char *type, const char *help)
{
	fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void tunnel_open(FILE *f, const char *family, json_t *t)
{
	fprintf(f, "%s{tunnel=\"", family);
	label(f, str(t, "name"));
	fputc('"', f);
}

static void up_line(FILE *f, json_t *t, const struct metrics_tunnels *m)
{
	(void)m;
	tunnel_open(f, "dpvpn_tunnel_up", t);
	fprintf(f, "} %d\n", !strcmp(str(t, "state"), "up"));
}

static void state_line(FILE *f, json_t *t, const struct metrics_tunnels *m)
{
	(void)m;
	tunnel_open(f, "dpvpn_tunnel_state", t);
	fprintf(f, ",state=\"%s\",reason=\"", str(t, "state"));
	label(f, json_is_string(json_object_get(t, "reason")) ? str(t, "reason") : "");
	fprintf(f, "\"} 1\n");
}

static void ike_line(FILE *f, json_t *t, const struct metrics_tunnels *m)
{
	(void)m;
	if (!json_is_string(json_object_get(t, "ike_state")))
		return;
	tunnel_open(f, "dpvpn_tunnel_ike_established", t);
	fprintf(f, "} %d\n", !strcmp(str(t, "ike_state"), "established"));
}

static void ike_state_line(FILE *f, json_t *t, const struct metrics_tunnels *m)
{
	(void)m;
	if (!json_is_string(json_object_get(t, "ike_state")))
		return;
	tunnel_open(f, "dpvpn_tunnel_ike_state", t);
	fprintf(f, ",state=\"");
	label(f, str(t, "ike_state"));
	fprintf(f, "\"} 1\n");
}

static void clients_line(FILE *f, json_t *t, const struct metrics_tunnels *m)
{
	(void)m;
	if (!json_is_array(json_object_get(t, "clients")))
		return;
	tunnel_open(f, "dpvpn_tunnel_clients", t);
	fprintf(f, "} %zu\n", json_array_size(json_object_get(t, "clients")));
}

static void rekeys_line(FILE *f, json_t *t, const struct metrics_tunnels *m)
{
	json_t *c = json_object_get(t, "clients"), *cl;
	json_int_t n = json_integer_value(json_object_get(t, "rekeys"));
	size_t i;

	(void)m;
	if (!json_is_integer(json_object_get(t, "rekeys")))
		return;
	json_array_foreach(c, i, cl)		/* remote access: its clients' */
		n += json_integer_value(json_object_get(cl, "rekeys"));
	tunnel_open(f, "dpvpn_tunnel_rekeys_total", t);
	fprintf(f, "} %" JSON_INTEGER_FORMAT "\n", n);
}

static void packets_lines(FILE *f, json_t *t, const struct metrics_tunnels *m)
{
	way_lines(f, m, str(t, "name"), W_PACKETS, "dpvpn_tunnel_packets_total");
}

static void bytes_lines(FILE *f, json_t *t, const struct metrics_tunnels *m)
{
	way_lines(f, m, str(t, "name"), W_BYTES, "dpvpn_tunnel_bytes_total");
}

static void drops_lines(FILE *f, json_t *t, const struct metrics_tunnels *m)
{
	way_lines(f, m, str(t, "name"), W_DROPS, "dpvpn_tunnel_drops_total");
}

static void idle_lines(FILE *f, json_t *t, const struct metrics_tunnels *m)
{
	static const char *const ways[] = { "in", "out" };

	(void)m;
	for (int d = 0; d < 2; d++) {
		json_t *ms = json_object_get(json_object_get(t, ways[d]), "last_packet_ms");

		if (!json_is_integer(ms))
			continue;	/* none yet: no sample (absent() alerts on it) */
		tunnel_open(f, "dpvpn_tunnel_last_packet_age_seconds", t);
		fprintf(f, ",direction=\"%s\"} %.3f\n", ways[d],
			(double)json_integer_value(ms) / 1000.0);
	}
}

static const struct {
	const char *name, *type, *help;
	tunnel_fn fn;
} families[] = {
	{ "dpvpn_tunnel_up", "gauge", "1 if the tunnel is up (show tunnels), else 0.", up_line },
	{ "dpvpn_tunnel_state", "gauge", "1, labelled with the tunnel's state and why it is "
	  "down (reason: operator, refused, ike, no-sa, expired; empty when up).", state_line },
	{ "dpvpn_tunnel_ike_established", "gauge", "keying = ike: 1 if its IKE SA is "
	  "established.", ike_line },
	{ "dpvpn_tunnel_ike_state", "gauge", "keying = ike: 1, labelled with its IKE SA's "
	  "state (none, init-sent, half-open, auth-sent, established, deleting).",
	  ike_state_line },
	{ "dpvpn_tunnel_clients", "gauge", "remote = %any: clients connected now.",
	  clients_line },
	{ "dpvpn_tunnel_rekeys_total", "counter", "keying = ike: CHILD_SA rekeys done.",
	  rekeys_line },
	{ "dpvpn_tunnel_packets_total", "counter", "Inner packets the tunnel carried, by "
	  "direction, through rekeys.", packets_lines },
	{ "dpvpn_tunnel_bytes_total", "counter", "Inner bytes the tunnel carried, by "
	  "direction, through rekeys.", bytes_lines },
	{ "dpvpn_tunnel_drops_total", "counter", "Packets the tunnel's SAs dropped (replay, "
	  "bad-icv, policy-mismatch, seq-exhausted, other), by direction.", drops_lines },
	{ "dpvpn_tunnel_last_packet_age_seconds", "gauge", "Seconds since the tunnel last "
	  "carried a packet, by direction; absent: none yet.", idle_lines },
};

/* Every page of show tunnels, joined; NULL if it failed. */
static json_t *all_tunnels(struct ctl_ctx *ctx)
{
	json_t *all = json_array(), *page;
	char err[256];
	uint32_t first = ctx->first;
	size_t got;

	ctx->first = 0;
	do {
		page = ctl_show_tunnels(ctx, err, sizeof(err));
		got = json_array_size(json_object_get(page, "tunnels"));
		json_array_extend(all, json_object_get(page, "tunnels"));
		ctx->first += (uint32_t)got;
		json_decref(page);
	} while (page != NULL && got == CTL_PAGE);
	ctx->first = first;
	if (page == NULL) {
		json_decref(all);
		return NULL;
	}
	return all;
}

struct metrics_tunnels *metrics_tunnels_new(void)
{
	return calloc(1, sizeof(struct metrics_tunnels));
}

void metrics_tunnels_free(struct metrics_tunnels *m)
{
	if (m == NULL)
		return;
	free(m->prev);
	free(m->retired);
	free(m);
}

char *metrics_tunnels_text(struct metrics_tunnels *m, struct ctl_ctx *ctx, size_t *len)
{
	char *text = NULL;
	json_t *all;
	FILE *f;

	*len = 0;
	if (scrape_sas(m, ctx->dp) != 0)
		return NULL;
	all = all_tunnels(ctx);
	if (all == NULL)
		return NULL;
	f = open_memstream(&text, len);
	for (size_t i = 0; f != NULL && i < sizeof(families) / sizeof(families[0]); i++) {
		head(f, families[i].name, families[i].type, families[i].help);
		each_tunnel(f, all, m, families[i].fn);
	}
	if (f != NULL && fclose(f) != 0) {
		free(text);
		text = NULL;
		*len = 0;
	}
	json_decref(all);
	return text;
}
