/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * icvwatch.c - bad-icv drops of inbound SAs, said in the log (icvwatch.h).
 *
 * One entry per inbound SA that has failed a check, kept sorted by tunnel
 * name and SPI so that a tunnel's SAs (two during an IKE rekey) sit side by
 * side: its line sums them and its rate limit covers them all.  An entry
 * goes once its SA has left the dataplane with nothing left to say and its
 * tunnel's window has passed, so the table holds failing SAs only.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "icvwatch.h"

struct icvw_ent {
	char name[DPVPN_NAME_LEN];	/* the tunnel */
	uint32_t spi;		/* host order */
	uint32_t gen;		/* the last dump that had this SA */
	uint64_t seen;		/* its drop_icv in that dump */
	uint64_t pending;	/* failures not yet in a line */
	uint64_t last_ms;	/* the tunnel's last line, if said */
	bool said;
};

static int cmp_ent(const void *a, const void *b)
{
	const struct icvw_ent *x = a, *y = b;
	int c = strcmp(x->name, y->name);

	return c != 0 ? c : (x->spi > y->spi) - (x->spi < y->spi);
}

/* Entries [0, sorted) are in order; the ones added by this dump follow. */
static struct icvw_ent *find(struct icvw *w, size_t sorted, const struct icvw_ent *key)
{
	struct icvw_ent *e = sorted ? bsearch(key, w->ents, sorted, sizeof(*key), cmp_ent) : NULL;

	for (size_t i = sorted; e == NULL && i < w->n; i++)
		if (cmp_ent(&w->ents[i], key) == 0)
			e = &w->ents[i];
	return e;
}

static struct icvw_ent *add(struct icvw *w, const struct icvw_ent *key)
{
	if (w->n == w->cap) {
		size_t cap = w->cap ? 2 * w->cap : 16;
		struct icvw_ent *e = realloc(w->ents, cap * sizeof(*e));

		if (e == NULL)
			return NULL;
		w->ents = e;
		w->cap = cap;
	}
	w->ents[w->n] = *key;
	return &w->ents[w->n++];
}

/* Drop SAs the dump no longer has, once nothing of theirs is left to say. */
static void prune(struct icvw *w, uint64_t now)
{
	size_t k = 0;

	for (size_t i = 0; i < w->n; i++) {
		const struct icvw_ent *e = &w->ents[i];

		if (e->gen != w->gen && e->pending == 0 &&
		    (!e->said || now >= e->last_ms + ICVW_EVERY_MS))
			continue;
		w->ents[k++] = *e;
	}
	w->n = k;
}

int icvw_update(struct icvw *w, const struct dpvpn_sa_info *sas, uint32_t n, uint64_t now_ms,
		bool baseline)
{
	size_t sorted = w->n;
	int rc = 0;

	w->gen++;
	for (uint32_t i = 0; i < n; i++) {
		struct icvw_ent key = { .spi = ntohl(sas[i].spi), .gen = w->gen }, *e;

		if (sas[i].dir != DPVPN_DIR_IN || sas[i].drop_icv == 0)
			continue;
		snprintf(key.name, sizeof(key.name), "%.*s", DPVPN_NAME_LEN - 1, sas[i].name);
		e = find(w, sorted, &key);
		if (e == NULL && (e = add(w, &key)) == NULL) {
			rc = -1;	/* out of memory: this SA unwatched for now */
			continue;
		}
		if (sas[i].drop_icv < e->seen)	/* installed anew: counting from 0 */
			e->seen = 0;
		if (!baseline)
			e->pending += sas[i].drop_icv - e->seen;
		e->seen = sas[i].drop_icv;
		e->gen = w->gen;
	}
	if (w->n)	/* (ents may still be NULL) */
		qsort(w->ents, w->n, sizeof(*w->ents), cmp_ent);
	prune(w, now_ms);
	return rc;
}

/* One tunnel's line: its SA with the most failures named, the others counted. */
static void say(FILE *out, const struct icvw_ent *top, uint64_t n, size_t sas, bool said,
		uint64_t last_ms, uint64_t now_ms)
{
	char when[40] = "", others[40] = "";

	if (said)
		snprintf(when, sizeof(when), " in %" PRIu64 " s", (now_ms - last_ms) / 1000);
	if (sas > 1)
		snprintf(others, sizeof(others), " and %zu other%s", sas - 1, sas > 2 ? "s" : "");
	fprintf(out, "dpvpnd: tunnel %s: %" PRIu64 "%s inbound packet%s failed the integrity "
		"check (bad-icv)%s, SA 0x%08x%s: keys differ from the peer's? (at most one "
		"such line a minute per tunnel)\n", top->name, n, said ? " more" : "",
		n == 1 ? "" : "s", when, top->spi, others);
}

void icvw_report(struct icvw *w, uint64_t now_ms, FILE *out)
{
	size_t named = 0, unnamed = 0;
	uint64_t rest = 0;

	for (size_t i = 0, j; i < w->n; i = j) {
		uint64_t pending = 0, last = 0;
		size_t top = i, sas = 0;
		bool said = false;

		for (j = i; j < w->n && !strcmp(w->ents[j].name, w->ents[i].name); j++) {
			const struct icvw_ent *e = &w->ents[j];

			pending += e->pending;
			sas += e->pending != 0;
			top = e->pending > w->ents[top].pending ? j : top;
			if (e->said && (!said || e->last_ms > last))
				last = e->last_ms;
			said |= e->said;
		}
		if (pending == 0 || (said && now_ms < last + ICVW_EVERY_MS))
			continue;
		if (named++ < ICVW_LINES_MAX) {
			say(out, &w->ents[top], pending, sas, said, last, now_ms);
		} else {
			unnamed++;
			rest += pending;
		}
		for (size_t k = i; k < j; k++) {
			w->ents[k].pending = 0;
			w->ents[k].last_ms = now_ms;
			w->ents[k].said = true;
		}
	}
	if (unnamed)
		fprintf(out, "dpvpnd: and %zu more tunnels: %" PRIu64 " inbound packets failed the "
			"integrity check (bad-icv) (dpvpnctl show sa names them)\n", unnamed, rest);
}

void icvw_reset(struct icvw *w)
{
	for (size_t i = 0; i < w->n; i++)
		w->ents[i].seen = 0;	/* the tunnels' windows carry on */
	w->total = 0;
	w->primed = true;
}

void icvw_poll(struct icvw *w, struct dp_client *dp, uint64_t now_ms)
{
	struct dpvpn_counters c;
	struct dpvpn_sa_info *sas;
	uint32_t n;

	/* a dataplane that does not answer: whoever needs its answers says so */
	if (dp_call(dp, DPVPN_MSG_SHOW_COUNTERS, NULL, 0, &c, sizeof(c)) != 0 ||
	    c.n_reasons <= DPVPN_DROP_BAD_ICV)
		return;
	if (w->primed && c.drops[DPVPN_DROP_BAD_ICV] < w->total)
		icvw_reset(w);	/* a new dataplane dpvpnd did not see come */
	if (c.drops[DPVPN_DROP_BAD_ICV] > w->total) {
		if (dp_dump(dp, DPVPN_MSG_SHOW_SA, sizeof(*sas), (void **)&sas, &n) != 0)
			return;	/* again at the next poll */
		icvw_update(w, sas, n, now_ms, !w->primed);
		free(sas);
	}
	w->primed = true;
	w->total = c.drops[DPVPN_DROP_BAD_ICV];
	icvw_report(w, now_ms, stderr);
}

void icvw_free(struct icvw *w)
{
	free(w->ents);
	*w = (struct icvw){ 0 };
}
