/* SPDX-License-Identifier: BSD-3-Clause */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <pthread.h>
#include <string.h>
#include <unistd.h>

#include <rte_acl.h>
#include <rte_byteorder.h>
#include <rte_cycles.h>
#include <rte_hash.h>
#include <rte_hash_crc.h>
#include <rte_ip.h>
#include <rte_lcore.h>
#include <rte_malloc.h>
#include <rte_rcu_qsbr.h>

#include "dp.h"
#include "sa.h"
#include "spd.h"
#include "spd_host.h"

/*
 * Fields, as rte_acl wants them: the first must be one byte (the protocol,
 * matched as "any"), then 4-byte words; offsets are into the IPv4 header.
 */
enum { F_PROTO, F_SRC, F_DST, F_NUM };

static const struct rte_acl_field_def fields[F_NUM] = {
	{ .type = RTE_ACL_FIELD_TYPE_BITMASK, .size = sizeof(uint8_t), .field_index = F_PROTO,
	  .input_index = 0, .offset = offsetof(struct rte_ipv4_hdr, next_proto_id) },
	{ .type = RTE_ACL_FIELD_TYPE_MASK, .size = sizeof(uint32_t), .field_index = F_SRC,
	  .input_index = 1, .offset = offsetof(struct rte_ipv4_hdr, src_addr) },
	{ .type = RTE_ACL_FIELD_TYPE_MASK, .size = sizeof(uint32_t), .field_index = F_DST,
	  .input_index = 2, .offset = offsetof(struct rte_ipv4_hdr, dst_addr) },
};

RTE_ACL_RULE_DEF(spd_acl_rule, F_NUM);

/* IPv6: the addresses as four 32-bit fields each, as rte_acl wants them. */
enum { F6_PROTO, F6_SRC, F6_DST = F6_SRC + 4, F6_NUM = F6_DST + 4 };

#define F6(i, base, off) { .type = RTE_ACL_FIELD_TYPE_MASK, .size = sizeof(uint32_t), \
	.field_index = (i), .input_index = (i), \
	.offset = offsetof(struct rte_ipv6_hdr, base) + (off) }

static const struct rte_acl_field_def fields6[F6_NUM] = {
	{ .type = RTE_ACL_FIELD_TYPE_BITMASK, .size = sizeof(uint8_t), .field_index = F6_PROTO,
	  .input_index = 0, .offset = offsetof(struct rte_ipv6_hdr, proto) },
	F6(F6_SRC, src_addr, 0), F6(F6_SRC + 1, src_addr, 4),
	F6(F6_SRC + 2, src_addr, 8), F6(F6_SRC + 3, src_addr, 12),
	F6(F6_DST, dst_addr, 0), F6(F6_DST + 1, dst_addr, 4),
	F6(F6_DST + 2, dst_addr, 8), F6(F6_DST + 3, dst_addr, 12),
};

RTE_ACL_RULE_DEF(spd_acl6_rule, F6_NUM);


/*
 * The wide policies (those spd_host.c does not hold) are looked up in two
 * sets: a base, built from every wide rule at one moment (its snapshot), and
 * a delta, the rules added since.  A base of many rules is an rte_acl build
 * of O(rules) (10 000: ~250 ms, 100 000: ~2.7 s here), so the main lcore
 * never waits for one: it copies the rule list and a control thread builds
 * the next base while lookups go on with the old one and the delta; the main
 * lcore swaps it in when it is done (spd_poll), under RCU, with the rules
 * added meanwhile as the new delta, and starts another if anything changed
 * meanwhile: one build for many changes.  A rule removed from a base is
 * marked dead in it from the version of the SPD that no longer has it
 * (died[]), so a version published earlier still answers as it did; a packet
 * whose best base match is dead is scanned for the next live one.  The delta
 * is small (what is added during one build) and in two parts: its last few
 * rules (a tail of at most SPD_SCAN_MAX, scanned, remade at each change) and
 * the others, built once when the tail is full or a new base goes in
 * (an rte_acl of O(delta), shared by the versions until then, its removed
 * rules marked dead in it as in a base).  With at most
 * SPD_SCAN_MAX wide rules, or for spd_force_acl, every change builds a new
 * base at once, as before.
 */

/* A few rules are matched faster by a scan than by rte_acl (whose per-burst
 * cost measured ~11 % of a worker at 64 B with one rule). */
#define SPD_SCAN_MAX	8

/* A wide rule as lookups see it; pos: its place in its base's snapshot. */
struct spd_rule4 {
	uint32_t src, src_mask, dst, dst_mask;	/* network order */
	uint32_t sa_slot;
	int32_t prio;
	uint32_t pos;
};

struct spd_rule6 {
	uint8_t src[16], dst[16];	/* host bits zero */
	uint8_t src_len, dst_len;
	uint32_t sa_slot;
	int32_t prio;
	uint32_t pos;
};

/* Rules of both families, each in precedence order (highest first), rte_acl over many. */
struct spd_set {
	struct rte_acl_ctx *acl, *acl6;	/* NULL: scanned */
	struct spd_rule4 *r4;		/* rte_acl's userdata: index + 1 */
	struct spd_rule6 *r6;
	uint32_t n4, n6;
	int32_t top[2];			/* highest precedence by family, INT32_MIN: none */
	uint64_t *died;			/* by rule pos: the first version without it, 0;
					 * NULL: none leaves (a tail, remade instead) */
};

/* Every wide rule at one moment; those removed since are marked in died. */
struct spd_base {
	struct spd_set set;
	uint64_t *died;		/* by snapshot position: the first version without it, 0 */
	uint64_t snap_seq;	/* the entries added before the snapshot are in it */
	unsigned int id;	/* its parity picks spd_entry.w[] */
	uint32_t n, n_died;	/* rules, and those marked (main lcore) */
};

/* What workers read: one version of the SPD. */
struct spd {
	const struct spd_base *base;
	uint64_t *died;		/* base->died */
	const struct spd_set *dacl;	/* the wide rules added since base's snapshot, */
	struct spd_set delta;		/* but the last few (the tail) */
	uint64_t version;
	int32_t wide_top[2];	/* highest precedence of a wide rule, by family
				 * (INT32_MIN: none): a host policy above it wins */
};

/*
 * The rules as installed, densely (a removal moves the last one into its
 * place): the source of every build and dump.  Each SA slot's rules are
 * linked, so an SA's removal finds its policies without a scan.
 */
struct spd_entry {
	struct dpvpn_policy cfg;
	uint32_t sa_slot;
	bool host;		/* in spd_host.c's table, not the classifier */
	uint32_t prev, next;	/* the slot's list: entry index + 1, 0 = none */
	uint32_t sprev, snext;	/* the same selectors' list (by_sel), as prev/next */
	uint64_t seq;		/* when it was added (next_seq) */
	uint32_t w[2];		/* its snapshot position in the base of that parity */
	uint32_t wpos, dpos;	/* in wide_ent, delta_ent: index + 1, 0 = not */
	uint32_t dacl_pos;	/* its rule pos in the delta's built part */
};

static struct spd_entry *entries;
static unsigned int n_entries, max_entries;
static uint32_t *by_slot;	/* an SA slot's first entry: index + 1, 0 = none */
static unsigned int n_slots;
static uint32_t *wide_ent, n_wide;	/* the entries not in the host table */
static uint32_t *delta_ent, n_delta;	/* those of them added since the base */
static uint64_t next_seq = 1;
static struct spd_set *dacl_cur;	/* the delta's built part: seq < dacl_seq */
static uint64_t dacl_seq;
static bool dacl_stale;			/* its positions are not the entries': built again */
static unsigned int acl_names;		/* rte_acl contexts are named: one each */

/* A base being built by a control thread. */
struct spd_job {
	pthread_t tid;
	struct spd_snap *snap;
	uint32_t n;
	struct spd_base *base;
	uint32_t *dead, n_dead;	/* snapshot positions removed meanwhile */
	unsigned int names;
	uint64_t cycles;	/* the build's */
	int rc;
	char err[128];
	int done;		/* atomic */
	int cancel;		/* atomic: not wanted, do not hold it */
};

struct spd_snap {
	struct dpvpn_policy cfg;
	uint32_t sa_slot, pos;
	int32_t prio;
};

static struct spd_job *job;
static struct spd_base *base_cur;	/* cur->base, writable here */
static int hold_builds;			/* tests: a build waits before it is done */
static struct spd_build_stats stats;


static void
slot_link(uint32_t i)
{
	struct spd_entry *e = &entries[i];

	e->prev = 0;
	e->next = by_slot[e->sa_slot];
	if (e->next != 0)
		entries[e->next - 1].prev = i + 1;
	by_slot[e->sa_slot] = i + 1;
}

/* Entry i's neighbours (and its slot's head) point at index + 1 = at. */
static void
slot_relink(uint32_t i, uint32_t at)
{
	const struct spd_entry *e = &entries[i];

	if (e->prev != 0)
		entries[e->prev - 1].next = at;
	else
		by_slot[e->sa_slot] = at;
	if (e->next != 0)
		entries[e->next - 1].prev = at;
}

/*
 * POLICY_DEL names selectors, not an SA: entries with the same (src, dst)
 * are listed from by_sel's entry for them (main lcore only; not the lookup's).
 */
struct sel_key {			/* 8-byte aligned and sized: rte_hash_crc's loads */
	uint8_t family, src_len, dst_len, pad;
	uint8_t src[16], dst[16];
	uint8_t pad2[4];
} __attribute__((aligned(8)));
static struct rte_hash *by_sel;

/* p's selectors as a key; false if no entry can have them (families, lengths). */
static bool
sel_key(const struct dpvpn_policy *p, struct sel_key *k)
{
	bool v6 = p->src.family == DPVPN_AF_INET6;
	unsigned int max = v6 ? 128 : 32;

	memset(k, 0, sizeof(*k));
	if ((!v6 && p->src.family != DPVPN_AF_INET) || p->dst.family != p->src.family ||
	    p->src.len > max || p->dst.len > max)
		return false;
	k->family = p->src.family;
	k->src_len = p->src.len;
	k->dst_len = p->dst.len;
	if (v6) {
		memcpy(k->src, p->src.v6, 16);
		memcpy(k->dst, p->dst.v6, 16);
		dp_mask6(k->src, p->src.len);
		dp_mask6(k->dst, p->dst.len);
	} else {
		uint32_t a = p->src.v4 & dp_mask(p->src.len), b = p->dst.v4 & dp_mask(p->dst.len);

		memcpy(k->src, &a, 4);
		memcpy(k->dst, &b, 4);
	}
	return true;
}

/* The first entry with k's selectors: index + 1, 0 = none. */
static uint32_t
sel_head(const struct sel_key *k)
{
	void *d;

	return rte_hash_lookup_data(by_sel, k, &d) < 0 ? 0 : (uint32_t)(uintptr_t)d;
}

static void
sel_set_head(const struct sel_key *k, uint32_t at)
{
	if (at != 0)
		rte_hash_add_key_data(by_sel, k, (void *)(uintptr_t)at);	/* sized: cannot fail */
	else
		rte_hash_del_key(by_sel, k);
}

static void
sel_link(uint32_t i)
{
	struct spd_entry *e = &entries[i];
	struct sel_key k;

	sel_key(&e->cfg, &k);
	e->sprev = 0;
	e->snext = sel_head(&k);
	if (e->snext != 0)
		entries[e->snext - 1].sprev = i + 1;
	sel_set_head(&k, i + 1);
}

/* Entry i's neighbours in its selectors' list (or their head) point at index + 1 = at. */
static void
sel_relink(uint32_t i, uint32_t at)
{
	const struct spd_entry *e = &entries[i];
	struct sel_key k;

	if (e->sprev != 0) {
		entries[e->sprev - 1].snext = at;
	} else {
		sel_key(&e->cfg, &k);
		sel_set_head(&k, at);
	}
	if (e->snext != 0)
		entries[e->snext - 1].sprev = at;
}

static void
sel_unlink(uint32_t i)
{
	const struct spd_entry *e = &entries[i];
	struct sel_key k;

	if (e->sprev != 0) {
		entries[e->sprev - 1].snext = e->snext;
	} else {
		sel_key(&e->cfg, &k);
		sel_set_head(&k, e->snext);
	}
	if (e->snext != 0)
		entries[e->snext - 1].sprev = e->sprev;
}

/* Entry i leaves: out of its lists, the last entry into its place. */

/* Entry i into a dense index list (wide_ent or delta_ent) with its back index. */
static void
idx_add(uint32_t *list, uint32_t *n, uint32_t *back, uint32_t i)
{
	list[*n] = i;
	*back = ++*n;
}

/* Out of the list by its back index; the last one takes its place. */
static void
idx_del(uint32_t *list, uint32_t *n, uint32_t *back, bool delta)
{
	uint32_t k = *back - 1, last = --*n;

	*back = 0;
	if (k == last)
		return;
	list[k] = list[last];
	if (delta)
		entries[list[k]].dpos = k + 1;
	else
		entries[list[k]].wpos = k + 1;
}

/* The entry now at index i was elsewhere: its lists' places point at i. */
static void
idx_moved(uint32_t i)
{
	if (entries[i].wpos != 0)
		wide_ent[entries[i].wpos - 1] = i;
	if (entries[i].dpos != 0)
		delta_ent[entries[i].dpos - 1] = i;
}

/* Entry i leaves: out of its lists, the last entry into its place. */
static void
entry_remove(uint32_t i)
{
	struct spd_entry *e = &entries[i];
	uint32_t last = --n_entries;

	if (e->prev != 0)
		entries[e->prev - 1].next = e->next;
	else
		by_slot[e->sa_slot] = e->next;
	if (e->next != 0)
		entries[e->next - 1].prev = e->prev;
	sel_unlink(i);
	if (e->wpos != 0)
		idx_del(wide_ent, &n_wide, &e->wpos, false);
	if (e->dpos != 0)
		idx_del(delta_ent, &n_delta, &e->dpos, true);
	if (i == last)
		return;
	entries[i] = entries[last];
	slot_relink(i, i + 1);
	sel_relink(i, i + 1);
	idx_moved(i);
}

/* The wide and delta lists again from the entries (spd_force_acl moved rules). */
static void
wide_reindex(void)
{
	n_wide = n_delta = 0;
	for (uint32_t i = 0; i < n_entries; i++) {
		entries[i].wpos = entries[i].dpos = 0;
		if (!entries[i].host)
			idx_add(wide_ent, &n_wide, &entries[i].wpos, i);
	}
}

/*
 * Bumped after every change (a classifier published, a host policy added or
 * removed): flow cache entries of an older one are stale.  Workers read it
 * before the classifier and the host table, so an answer they cache under
 * it is at least that new.  Never 0: an empty cache entry.
 */
static uint64_t spd_gen = 1;
static struct spd *cur;
static uint64_t version;	/* cur->version */
static bool batching, dirty, force_acl, force_changed;

static void
changed(void)
{
	__atomic_store_n(&spd_gen, spd_gen + 1, __ATOMIC_RELEASE);
}

/*
 * Versions and bases retired: freed once every worker passed a quiescent
 * point after they were unpublished (checked, not waited for).
 */
struct retired {
	uint64_t token;
	struct spd *t;
	struct spd_base *b;
	struct spd_set *dacl;
};

static struct retired *retired;
static unsigned int n_retired, retired_cap;

static void
set_free(struct spd_set *s)
{
	rte_acl_free(s->acl);
	rte_acl_free(s->acl6);
	rte_free(s->r4);
	rte_free(s->r6);
	memset(s, 0, sizeof(*s));
}

static void
base_free(struct spd_base *b)
{
	if (b == NULL)
		return;
	set_free(&b->set);
	rte_free(b->died);
	rte_free(b);
}

static void
free_retired(const struct retired *r)
{
	if (r->t != NULL)
		set_free(&r->t->delta);
	rte_free(r->t);
	base_free(r->b);
	if (r->dacl != NULL) {
		rte_free(r->dacl->died);
		set_free(r->dacl);
	}
	rte_free(r->dacl);
}

/* Free what every worker is done with; all of it if the caller waited a grace period. */
static void
reclaim(bool waited)
{
	unsigned int k = 0;

	for (unsigned int i = 0; i < n_retired; i++) {
		if (waited || rte_rcu_qsbr_check(dp.rcu, retired[i].token, false) == 1)
			free_retired(&retired[i]);
		else
			retired[k++] = retired[i];
	}
	n_retired = k;
}

static void
retire(struct spd *t, struct spd_base *b, struct spd_set *dacl)
{
	if (n_retired == retired_cap) {
		unsigned int cap = retired_cap ? 2 * retired_cap : 16;
		struct retired *a = realloc(retired, cap * sizeof(*a));

		if (a == NULL) {	/* no room: wait for the workers instead */
			rte_rcu_qsbr_synchronize(dp.rcu, RTE_QSBR_THRID_INVALID);
			reclaim(true);
			free_retired(&(struct retired){ 0, t, b, dacl });
			return;
		}
		retired = a;
		retired_cap = cap;
	}
	retired[n_retired++] = (struct retired){ rte_rcu_qsbr_start(dp.rcu), t, b, dacl };
	reclaim(false);
}

int
spd_init(unsigned int max_rules)
{
	max_entries = max_rules;
	n_slots = sa_max_slots();
	entries = rte_zmalloc("dpvpn_spd_rules", max_rules * sizeof(*entries), 0);
	by_slot = rte_zmalloc("dpvpn_spd_by_slot", n_slots * sizeof(*by_slot), 0);
	wide_ent = rte_malloc("dpvpn_spd_wide", (max_rules + 1) * sizeof(*wide_ent), 0);
	delta_ent = rte_malloc("dpvpn_spd_delta", (max_rules + 1) * sizeof(*delta_ent), 0);
	cur = rte_zmalloc("dpvpn_spd", sizeof(*cur), RTE_CACHE_LINE_SIZE);
	base_cur = rte_zmalloc("dpvpn_spd_base", sizeof(*base_cur), RTE_CACHE_LINE_SIZE);
	dacl_cur = rte_zmalloc("dpvpn_spd_dacl", sizeof(*dacl_cur), RTE_CACHE_LINE_SIZE);
	if (entries == NULL || by_slot == NULL || wide_ent == NULL || delta_ent == NULL ||
	    cur == NULL || base_cur == NULL || dacl_cur == NULL)
		return -ENOMEM;
	dacl_cur->top[0] = dacl_cur->top[1] = INT32_MIN;
	cur->dacl = dacl_cur;
	base_cur->set.top[0] = base_cur->set.top[1] = INT32_MIN;
	base_cur->snap_seq = next_seq;
	cur->base = base_cur;
	cur->wide_top[0] = cur->wide_top[1] = INT32_MIN;
	cur->delta.top[0] = cur->delta.top[1] = INT32_MIN;
	by_sel = rte_hash_create(&(struct rte_hash_parameters){
		.name = "dpvpn_spd_sel", .entries = RTE_MAX(max_rules, 8u),
		.key_len = sizeof(struct sel_key), .hash_func = rte_hash_crc,
		.socket_id = (int)rte_socket_id(),
		.extra_flag = RTE_HASH_EXTRA_FLAGS_EXT_TABLE });	/* never full */
	if (by_sel == NULL)
		return -ENOMEM;
	return spd_host_init(max_rules);
}

/* rte_acl: the highest priority wins.  Ours: lowest value, then most specific. */
static int32_t
acl_priority(const struct dpvpn_policy *p)
{
	if (p->src.family == DPVPN_AF_INET6)
		return (int32_t)(RTE_ACL_MAX_PRIORITY - p->priority * 257 -
				 (256 - p->src.len - p->dst.len));
	/* 65 steps per priority value: (64 - specificity) is 0..64, no overlap */
	return (int32_t)(RTE_ACL_MAX_PRIORITY - p->priority * 65 - (64 - p->src.len - p->dst.len));
}

static void
acl_rule(const struct spd_snap *s, uint32_t idx, struct spd_acl_rule *r)
{
	memset(r, 0, sizeof(*r));
	r->data.category_mask = 1;
	r->data.priority = s->prio;
	r->data.userdata = idx + 1;	/* 0 means "no match" */
	r->field[F_PROTO].value.u8 = 0;
	r->field[F_PROTO].mask_range.u8 = 0;
	r->field[F_SRC].value.u32 = rte_be_to_cpu_32(s->cfg.src.v4);
	r->field[F_SRC].mask_range.u32 = s->cfg.src.len;
	r->field[F_DST].value.u32 = rte_be_to_cpu_32(s->cfg.dst.v4);
	r->field[F_DST].mask_range.u32 = s->cfg.dst.len;
}

/* A 128-bit prefix as four 32-bit MASK fields starting at field f. */
static void
acl6_prefix(struct spd_acl6_rule *r, unsigned int f, const uint8_t *a, uint8_t len)
{
	for (unsigned int i = 0; i < 4; i++) {
		uint32_t w;

		memcpy(&w, a + 4 * i, 4);
		r->field[f + i].value.u32 = rte_be_to_cpu_32(w);
		r->field[f + i].mask_range.u32 = len > 32 * i ? RTE_MIN(32u, len - 32 * i) : 0;
	}
}

static void
acl6_rule(const struct spd_snap *s, uint32_t idx, struct spd_acl6_rule *r)
{
	memset(r, 0, sizeof(*r));
	r->data.category_mask = 1;
	r->data.priority = s->prio;
	r->data.userdata = idx + 1;
	acl6_prefix(r, F6_SRC, s->cfg.src.v6, s->cfg.src.len);
	acl6_prefix(r, F6_DST, s->cfg.dst.v6, s->cfg.dst.len);
}

/* n rules of one family (in precedence order) into rte_acl; userdata: index + 1. */
static struct rte_acl_ctx *
acl_build(const struct spd_snap *s, uint32_t n, bool v6, unsigned int id, char *eb,
	  size_t len)
{
	struct rte_acl_config bc = { .num_categories = 1, .num_fields = v6 ? F6_NUM : F_NUM };
	char name[RTE_ACL_NAMESIZE];
	struct rte_acl_param prm = {
		.name = name, .socket_id = (int)rte_socket_id(),
		.rule_size = v6 ? RTE_ACL_RULE_SZ(F6_NUM) : RTE_ACL_RULE_SZ(F_NUM),
		.max_rule_num = n,
	};
	struct rte_acl_ctx *ctx;
	int rc = 0;

	snprintf(name, sizeof(name), "dpvpn_spd%u_%c", id, v6 ? '6' : '4');
	ctx = rte_acl_create(&prm);
	if (ctx == NULL) {
		snprintf(eb, len, "policy: cannot create a classifier for %u rules", n);
		return NULL;
	}
	if (v6)
		memcpy(bc.defs, fields6, sizeof(fields6));
	else
		memcpy(bc.defs, fields, sizeof(fields));
	for (uint32_t i = 0; i < n && rc == 0; i++) {
		struct spd_acl_rule r;
		struct spd_acl6_rule r6;

		if (v6) {
			acl6_rule(&s[i], i, &r6);
			rc = rte_acl_add_rules(ctx, (const struct rte_acl_rule *)&r6, 1);
		} else {
			acl_rule(&s[i], i, &r);
			rc = rte_acl_add_rules(ctx, (const struct rte_acl_rule *)&r, 1);
		}
	}
	if (rc == 0)
		rc = rte_acl_build(ctx, &bc);
	if (rc != 0) {
		snprintf(eb, len, "policy: building the classifier failed (%s)", rte_strerror(-rc));
		rte_acl_free(ctx);
		return NULL;
	}
	return ctx;
}

/* IPv4 first, then highest precedence, then the earlier snapshot position. */
static int
by_precedence(const void *a, const void *b)
{
	const struct spd_snap *x = a, *y = b;
	bool x6 = x->cfg.src.family == DPVPN_AF_INET6, y6 = y->cfg.src.family == DPVPN_AF_INET6;

	if (x6 != y6)
		return x6 - y6;
	if (x->prio != y->prio)
		return x->prio > y->prio ? -1 : 1;
	return x->pos < y->pos ? -1 : x->pos > y->pos;
}

static void
rules_fill(struct spd_set *s, const struct spd_snap *sn)
{
	for (uint32_t i = 0; i < s->n4; i++) {
		struct spd_rule4 *r = &s->r4[i];

		r->src_mask = dp_mask(sn[i].cfg.src.len);
		r->src = sn[i].cfg.src.v4 & r->src_mask;
		r->dst_mask = dp_mask(sn[i].cfg.dst.len);
		r->dst = sn[i].cfg.dst.v4 & r->dst_mask;
		r->sa_slot = sn[i].sa_slot;
		r->prio = sn[i].prio;
		r->pos = sn[i].pos;
	}
	for (uint32_t i = 0; i < s->n6; i++) {
		const struct spd_snap *q = &sn[s->n4 + i];
		struct spd_rule6 *r = &s->r6[i];

		memcpy(r->src, q->cfg.src.v6, 16);
		memcpy(r->dst, q->cfg.dst.v6, 16);
		r->src_len = q->cfg.src.len;
		r->dst_len = q->cfg.dst.len;
		r->sa_slot = q->sa_slot;
		r->prio = q->prio;
		r->pos = q->pos;
	}
	s->top[0] = s->n4 ? s->r4[0].prio : INT32_MIN;
	s->top[1] = s->n6 ? s->r6[0].prio : INT32_MIN;
}

/*
 * A set from n snapshot rules (sorted here): rte_acl for a family of more
 * than SPD_SCAN_MAX rules (any, with acl), else a scan.  Any thread.
 */
static int
set_build(struct spd_set *s, struct spd_snap *sn, uint32_t n, bool acl, unsigned int id,
	  char *eb, size_t len)
{
	memset(s, 0, sizeof(*s));
	qsort(sn, n, sizeof(*sn), by_precedence);
	while (s->n4 < n && sn[s->n4].cfg.src.family != DPVPN_AF_INET6)
		s->n4++;
	s->n6 = n - s->n4;
	s->r4 = rte_malloc("dpvpn_spd_r4", (s->n4 + 1) * sizeof(*s->r4), 0);
	s->r6 = rte_malloc("dpvpn_spd_r6", (s->n6 + 1) * sizeof(*s->r6), 0);
	if (s->r4 == NULL || s->r6 == NULL) {
		snprintf(eb, len, "policy: out of memory");
		set_free(s);
		return -ENOMEM;
	}
	rules_fill(s, sn);
	if (s->n4 > 0 && (s->n4 > SPD_SCAN_MAX || acl) &&
	    (s->acl = acl_build(sn, s->n4, false, id, eb, len)) == NULL)
		goto fail;
	if (s->n6 > 0 && (s->n6 > SPD_SCAN_MAX || acl) &&
	    (s->acl6 = acl_build(sn + s->n4, s->n6, true, id, eb, len)) == NULL)
		goto fail;
	return 0;
fail:
	set_free(s);
	return -ENOMEM;
}

static struct spd_snap
snap_of(const struct spd_entry *e, uint32_t pos)
{
	return (struct spd_snap){ .cfg = e->cfg, .sa_slot = e->sa_slot, .pos = pos,
				  .prio = acl_priority(&e->cfg) };
}

/* Every wide rule, numbered in the snapshot for a base of that id. */
static struct spd_snap *
snapshot(unsigned int id, uint32_t *n)
{
	struct spd_snap *sn = malloc((n_wide + 1) * sizeof(*sn));

	if (sn == NULL)
		return NULL;
	for (uint32_t k = 0; k < n_wide; k++) {
		struct spd_entry *e = &entries[wide_ent[k]];

		e->w[id & 1] = k;
		sn[k] = snap_of(e, k);
	}
	*n = n_wide;
	return sn;
}

/* A base from the snapshot (any thread): its set, and no rule dead yet. */
static int
base_build(struct spd_base *b, struct spd_snap *sn, uint32_t n, bool acl, unsigned int names,
	   char *eb, size_t len)
{
	int rc = set_build(&b->set, sn, n, acl, names, eb, len);

	if (rc != 0)
		return rc;
	b->n = n;
	b->died = rte_zmalloc("dpvpn_spd_died", (n + 1) * sizeof(*b->died), 0);
	if (b->died == NULL) {
		snprintf(eb, len, "policy: out of memory");
		set_free(&b->set);
		return -ENOMEM;
	}
	return 0;
}

/*
 * spd_force_acl changed (tests): the host policies go into the host table
 * (before the classifier without them is published), or out of it (after
 * the one with them is).
 */
static void
host_migrate(bool to_hosts)
{
	for (unsigned int i = 0; i < n_entries; i++) {
		struct spd_entry *e = &entries[i];

		if (spd_host_side(&e->cfg) < 0)
			continue;
		if (!to_hosts)
			spd_host_del(&e->cfg, acl_priority(&e->cfg), e->sa_slot);
		else if (!e->host && spd_host_add(&e->cfg, acl_priority(&e->cfg), e->sa_slot) == 0)
			e->host = true;
	}
}

/*
 * The delta of base b (the rules added since its snapshot) into version t:
 * its built part kept, or built again into *nd (stale, a new base, or the
 * tail too long), and the tail of the rules added since that part was
 * built, scanned.  O(delta); an rte_acl build only when *nd is made.
 */
static int
delta_build(const struct spd_base *b, bool new_base, struct spd *t, struct spd_set **nd,
	    char *eb, size_t len)
{
	struct spd_snap *sn = malloc((n_delta + 1) * sizeof(*sn));
	uint32_t n = 0, tail = 0;
	bool all;
	int rc;

	*nd = NULL;
	if (sn == NULL) {
		snprintf(eb, len, "policy: out of memory");
		return -ENOMEM;
	}
	for (uint32_t k = 0; k < n_delta; k++)
		tail += entries[delta_ent[k]].seq >= RTE_MAX(b->snap_seq, dacl_seq);
	all = new_base || dacl_stale || tail > SPD_SCAN_MAX;
	for (uint32_t k = 0; k < n_delta; k++) {
		const struct spd_entry *e = &entries[delta_ent[k]];

		if (e->seq >= b->snap_seq && (all || e->seq >= dacl_seq)) {
			if (all)
				entries[delta_ent[k]].dacl_pos = n;
			sn[n] = snap_of(e, n);
			n++;
		}
	}
	if (all) {
		dacl_stale = true;	/* the positions are the new part's until it is in */
		*nd = rte_zmalloc("dpvpn_spd_dacl", sizeof(**nd), RTE_CACHE_LINE_SIZE);
		rc = *nd == NULL ? -ENOMEM : set_build(*nd, sn, n, false, acl_names++, eb, len);
		if (rc == 0 && ((*nd)->died = rte_zmalloc("dpvpn_spd_died",
							  (n + 1) * sizeof(uint64_t), 0)) == NULL)
			rc = -ENOMEM;
		if (rc == 0)
			rc = set_build(&t->delta, sn, 0, false, 0, eb, len);	/* no tail */
	} else {
		rc = set_build(&t->delta, sn, n, false, 0, eb, len);	/* scanned */
	}
	if (rc != 0) {
		snprintf(eb, len, "policy: out of memory");
		if (*nd != NULL) {
			rte_free((*nd)->died);
			set_free(*nd);
		}
		rte_free(*nd);
		*nd = NULL;
	}
	free(sn);
	return rc;
}

/*
 * Publish a version: base nb (NULL: the running one), the snapshot positions
 * dead marked dead in it from this version, and the rules added since its
 * snapshot as the delta.
 */
static int
install(struct spd_base *nb, const uint32_t *dead, uint32_t n_dead, char *eb, size_t len)
{
	struct spd_base *b = nb != NULL ? nb : base_cur, *old_base = base_cur;
	struct spd *t = rte_zmalloc("dpvpn_spd", sizeof(*t), RTE_CACHE_LINE_SIZE);
	struct spd_set *nd = NULL, *old_dacl = dacl_cur;
	struct spd *old = cur;
	int rc;

	if (t == NULL) {
		snprintf(eb, len, "policy: out of memory");
		return -ENOMEM;
	}
	if ((rc = delta_build(b, nb != NULL, t, &nd, eb, len)) != 0) {
		rte_free(t);
		return rc;
	}
	if (nd != NULL) {
		dacl_cur = nd;
		dacl_seq = next_seq;
		dacl_stale = false;
	}
	for (uint32_t k = 0; k < n_dead; k++)
		__atomic_store_n(&b->died[dead[k]], version + 1, __ATOMIC_RELAXED);
	b->n_died += n_dead;
	t->base = b;
	t->died = b->died;
	t->dacl = dacl_cur;
	t->version = version + 1;
	for (int f = 0; f < 2; f++) {
		int32_t top = RTE_MAX(b->set.top[f], dacl_cur->top[f]);

		t->wide_top[f] = RTE_MAX(top, t->delta.top[f]);
	}
	__atomic_store_n(&cur, t, __ATOMIC_RELEASE);
	version++;
	changed();
	base_cur = b;
	for (uint32_t k = n_delta; nb != NULL && k-- > 0;)	/* those in the new base */
		if (entries[delta_ent[k]].seq < b->snap_seq)
			idx_del(delta_ent, &n_delta, &entries[delta_ent[k]].dpos, true);
	retire(old, nb != NULL ? old_base : NULL, nd != NULL ? old_dacl : NULL);
	stats.delta = n_delta;
	dirty = false;
	return 0;
}

static void
job_free(struct spd_job *j, bool with_base)
{
	if (with_base)
		base_free(j->base);
	free(j->snap);
	free(j->dead);
	free(j);
}

/* The build in flight is not wanted: waited for and dropped. */
static void
job_cancel(void)
{
	if (job == NULL)
		return;
	__atomic_store_n(&job->cancel, 1, __ATOMIC_RELEASE);
	pthread_join(job->tid, NULL);
	job_free(job, true);
	job = NULL;
}

/* A new base from every wide rule, built here (few rules, or spd_force_acl). */
static int
publish_full(char *eb, size_t len)
{
	struct spd_base *b = rte_zmalloc("dpvpn_spd_base", sizeof(*b), RTE_CACHE_LINE_SIZE);
	struct spd_snap *sn = NULL;
	uint32_t n;
	int rc = -ENOMEM;

	job_cancel();
	if (b == NULL) {
		snprintf(eb, len, "policy: out of memory");
		return -ENOMEM;
	}
	if (force_changed && force_acl) {	/* out of the host table after the build */
		for (unsigned int i = 0; i < n_entries; i++)
			entries[i].host = false;
		wide_reindex();
	} else if (force_changed) {
		host_migrate(true);
		wide_reindex();
	}
	b->id = base_cur->id + 1;	/* the other parity: base_cur's positions stay */
	b->snap_seq = next_seq;
	if ((sn = snapshot(b->id, &n)) == NULL) {
		snprintf(eb, len, "policy: out of memory");
		goto fail;
	}
	if ((rc = base_build(b, sn, n, force_acl, acl_names++, eb, len)) != 0 ||
	    (rc = install(b, NULL, 0, eb, len)) != 0)
		goto fail;
	free(sn);
	stats.sync_builds++;
	if (force_changed && force_acl)
		host_migrate(false);
	force_changed = false;
	spd_host_reclaim();
	return 0;
fail:
	base_free(b);
	free(sn);
	return rc;
}

static void *
job_main(void *arg)
{
	struct spd_job *j = arg;
	uint64_t t0 = rte_get_timer_cycles();

	j->rc = base_build(j->base, j->snap, j->n, false, j->names, j->err, sizeof(j->err));
	j->cycles = rte_get_timer_cycles() - t0;
	while (__atomic_load_n(&hold_builds, __ATOMIC_ACQUIRE) &&
	       !__atomic_load_n(&j->cancel, __ATOMIC_ACQUIRE))
		usleep(1000);
	__atomic_store_n(&j->done, 1, __ATOMIC_RELEASE);
	dp_main_kick();		/* spd_poll: it goes in */
	return NULL;
}

/* A base from every wide rule, built by a control thread, if it would change anything. */
static void
job_start(void)
{
	struct spd_job *j;

	if (job != NULL || batching || force_acl || n_wide <= SPD_SCAN_MAX ||
	    (n_delta == 0 && base_cur->n_died == 0))
		return;
	j = calloc(1, sizeof(*j));
	if (j == NULL)
		return;
	j->base = rte_zmalloc("dpvpn_spd_base", sizeof(*j->base), RTE_CACHE_LINE_SIZE);
	if (j->base != NULL) {
		j->base->id = base_cur->id + 1;
		j->base->snap_seq = next_seq;
		j->snap = snapshot(j->base->id, &j->n);
		j->dead = malloc((j->n + 1) * sizeof(*j->dead));
	}
	j->names = acl_names++;
	if (j->base == NULL || j->snap == NULL || j->dead == NULL ||
	    rte_ctrl_thread_create(&j->tid, "dpvpn-spd", NULL, job_main, j) != 0) {
		job_free(j, true);	/* tried again at the next change */
		return;
	}
	job = j;
	stats.started++;
}

/* The build is done: its base published with what changed meanwhile. */
static void
adopt(void)
{
	struct spd_job *j = job;
	char eb[128];

	pthread_join(j->tid, NULL);
	job = NULL;
	if (j->rc == 0 && install(j->base, j->dead, j->n_dead, eb, sizeof(eb)) != 0)
		j->rc = -ENOMEM;
	else if (j->rc != 0)
		snprintf(eb, sizeof(eb), "%s", j->err);
	if (j->rc != 0) {	/* the delta stays; tried again at the next change */
		stats.failed++;
		fprintf(stderr, "dpvpn-dataplane: policy: the classifier of %u rules was not "
			"built in the background: %s\n", j->n, eb);
		job_free(j, true);
		return;
	}
	stats.adopted++;
	stats.last_rules = j->n;
	stats.last_build_us = j->cycles * 1000000 / rte_get_timer_hz();
	job_free(j, false);
	job_start();		/* what changed meanwhile, folded in the next */
}

/* After a change: few rules are rebuilt at once, else the delta published and a build started. */
static int
publish(char *eb, size_t len)
{
	int rc;

	/* few rules; or a delta of most of them (a big batch): one build either way */
	if (force_acl || force_changed || n_wide <= SPD_SCAN_MAX || 2 * n_delta > n_wide)
		return publish_full(eb, len);
	rc = install(NULL, NULL, 0, eb, len);
	if (rc == 0)
		job_start();
	return rc;
}

/* A wide entry leaves: dead from the next version in the bases that hold it. */
static void
wide_gone(const struct spd_entry *e)
{
	if (e->dpos != 0 && e->seq < dacl_seq && !dacl_stale)	/* in the delta's built part */
		__atomic_store_n(&dacl_cur->died[e->dacl_pos], version + 1, __ATOMIC_RELAXED);
	if (e->seq < base_cur->snap_seq) {
		__atomic_store_n(&base_cur->died[e->w[base_cur->id & 1]], version + 1,
				 __ATOMIC_RELAXED);
		base_cur->n_died++;
	}
	if (job != NULL && e->seq < job->base->snap_seq)
		job->dead[job->n_dead++] = e->w[job->base->id & 1];
}


static int
check(const struct dpvpn_policy *p, int slot, char *eb, size_t len)
{
	if ((p->src.family != DPVPN_AF_INET && p->src.family != DPVPN_AF_INET6) ||
	    p->dst.family != p->src.family) {
		snprintf(eb, len, "policy.src/dst: families %u and %u are not both 4 or both 6",
			 p->src.family, p->dst.family);
		return -EINVAL;
	}
	if (RTE_MAX(p->src.len, p->dst.len) > (p->src.family == DPVPN_AF_INET ? 32 : 128)) {
		snprintf(eb, len, "policy.src/dst: prefix length %u is too long for IPv%u",
			 RTE_MAX(p->src.len, p->dst.len), p->src.family);
		return -EINVAL;
	}
	if (slot >= 0 && sa_slot((uint32_t)slot)->inner6 != (p->src.family == DPVPN_AF_INET6)) {
		snprintf(eb, len, "policy.src/dst: IPv%u, but SA 0x%08x carries IPv%u",
			 p->src.family, rte_be_to_cpu_32(p->spi),
			 sa_slot((uint32_t)slot)->inner6 ? 6 : 4);
		return -EINVAL;
	}
	if (p->priority > (p->src.family == DPVPN_AF_INET6 ? SPD_MAX_PRIORITY6 : SPD_MAX_PRIORITY)) {
		snprintf(eb, len, "policy.priority: %u > %u", p->priority,
			 p->src.family == DPVPN_AF_INET6 ? SPD_MAX_PRIORITY6 : SPD_MAX_PRIORITY);
		return -EINVAL;
	}
	if (slot < 0) {
		snprintf(eb, len, "policy.spi: no outbound SA 0x%08x", rte_be_to_cpu_32(p->spi));
		return -ENOENT;
	}
	if (n_entries >= max_entries) {
		snprintf(eb, len, "policy: table full (%u)", max_entries);
		return -ENOSPC;
	}
	return 0;
}

int
spd_add(const struct dpvpn_policy *p, char *eb, size_t len)
{
	int slot = sa_find(p->spi, DPVPN_DIR_OUT);
	int rc = check(p, slot, eb, len);
	struct spd_entry *e;

	if (rc != 0)
		return rc;
	e = &entries[n_entries++];
	e->cfg = *p;
	if (p->src.family == DPVPN_AF_INET6) {
		dp_mask6(e->cfg.src.v6, p->src.len);
		dp_mask6(e->cfg.dst.v6, p->dst.len);
	} else {
		e->cfg.src.v4 &= dp_mask(p->src.len);
		e->cfg.dst.v4 &= dp_mask(p->dst.len);
	}
	e->sa_slot = (uint32_t)slot;
	e->host = false;
	e->seq = next_seq++;
	e->wpos = e->dpos = 0;
	slot_link(n_entries - 1);
	sel_link(n_entries - 1);
	/* a host policy: in the hash at once, batch or not, no build */
	if (!force_acl && spd_host_side(&e->cfg) >= 0 &&
	    spd_host_add(&e->cfg, acl_priority(&e->cfg), e->sa_slot) == 0) {
		e->host = true;
		changed();
		spd_host_reclaim();
		return 0;
	}
	idx_add(wide_ent, &n_wide, &e->wpos, n_entries - 1);
	idx_add(delta_ent, &n_delta, &e->dpos, n_entries - 1);
	dirty = true;
	if (batching)
		return 0;
	rc = publish(eb, len);
	if (rc != 0)
		entry_remove(n_entries - 1);	/* the running classifier is unchanged */
	return rc;
}

/*
 * Host policies removed inside a batch stay in the host table until its
 * commit, as a wide one stays in the running classifier: a policy switch
 * (removal and addition of the same selectors in one batch) keeps the old
 * one selecting until then, and no packet finds none in between.
 */
static struct spd_entry *late_del;
static unsigned int n_late_del, late_del_cap;

static bool
defer_host_del(const struct spd_entry *e)
{
	if (n_late_del == late_del_cap) {
		unsigned int cap = late_del_cap ? 2 * late_del_cap : 64;
		struct spd_entry *a = realloc(late_del, cap * sizeof(*a));

		if (a == NULL)
			return false;
		late_del = a;
		late_del_cap = cap;
	}
	late_del[n_late_del++] = *e;
	return true;
}

/* The deferred removals, those of SA slot only if slot >= 0; true if any. */
static bool
late_host_del(int64_t slot)
{
	unsigned int k = 0;
	bool any = false;

	for (unsigned int i = 0; i < n_late_del; i++) {
		const struct spd_entry *e = &late_del[i];

		if (slot >= 0 && e->sa_slot != (uint32_t)slot) {
			late_del[k++] = *e;
			continue;
		}
		spd_host_del(&e->cfg, acl_priority(&e->cfg), e->sa_slot);
		any = true;
	}
	n_late_del = k;
	return any;
}

/*
 * Entry i goes: out of the host table (at once, or at the batch's commit),
 * or (wide) dead in its base or out of the delta from the next version.
 * True if that needs a version published.
 */
static bool
drop_entry(const struct spd_entry *e, bool may_defer)
{
	if (!e->host) {
		wide_gone(e);
		return true;
	}
	if (!(may_defer && batching && defer_host_del(e)))
		spd_host_del(&e->cfg, acl_priority(&e->cfg), e->sa_slot);
	return false;
}

/* After removals: published, or the host table's change made visible; then a grace period. */
static int
removed(bool wide, bool now, char *eb, size_t len)
{
	int rc = 0;

	dirty |= wide;
	if (wide && (now || !batching))
		rc = publish(eb, len);
	else
		changed();
	if (now || !batching) {		/* in a batch: at its commit */
		rte_rcu_qsbr_synchronize(dp.rcu, RTE_QSBR_THRID_INVALID);
		reclaim(true);
		spd_host_reclaim();
	}
	return rc;
}

int
spd_del_slot(uint32_t slot, char *eb, size_t len)
{
	bool late = late_host_del(slot);	/* removed in this batch: gone now */
	bool wide = false;

	if (slot >= n_slots || (by_slot[slot] == 0 && !late))
		return 0;
	while (by_slot[slot] != 0) {		/* its list, no scan */
		uint32_t i = by_slot[slot] - 1;

		wide |= drop_entry(&entries[i], false);
		entry_remove(i);
	}
	/* published now even in a batch: the slot must not be reused before */
	return removed(wide, true, eb, len);
}

int
spd_del(const struct dpvpn_policy *p, char *eb, size_t len)
{
	unsigned int k = 0;
	bool wide = false;
	struct sel_key key;
	uint32_t at;

	/* its selectors' list, no scan: the head goes until none is left */
	while (sel_key(p, &key) && (at = sel_head(&key)) != 0) {
		wide |= drop_entry(&entries[at - 1], true);
		entry_remove(at - 1);
		k++;
	}
	if (k == 0) {
		snprintf(eb, len, "policy.src/dst: no such policy");
		return -ENOENT;
	}
	return removed(wide, false, eb, len);
}

void
spd_begin(void)
{
	batching = true;
}

int
spd_commit(char *eb, size_t len)
{
	int rc;

	batching = false;
	rc = dirty ? publish(eb, len) : 0;
	if (late_host_del(-1))		/* after the wide rules that may replace them */
		changed();
	spd_host_reclaim();		/* a grace period if anything waits for one */
	return rc;
}

void
spd_force_acl(bool on)
{
	force_changed |= force_acl != on;
	force_acl = on;
	dirty = true;	/* the next commit rebuilds */
}

bool
spd_in_batch(void)
{
	return batching;
}

const struct spd *
spd_get(void)
{
	return __atomic_load_n(&cur, __ATOMIC_ACQUIRE);
}

/* Rule pos of a base marked gone in version v or before (died NULL: a delta). */
static inline bool
gone(const uint64_t *died, uint32_t pos, uint64_t v)
{
	uint64_t d;

	if (died == NULL)
		return false;
	d = __atomic_load_n(&died[pos], __ATOMIC_RELAXED);
	return d != 0 && d <= v;
}

/* The first rule from index k on that hdr matches and that is not gone: its index, or -1. */
static int32_t
scan4(const struct spd_set *s, uint32_t k, const uint8_t *hdr, const uint64_t *died, uint64_t v)
{
	const struct rte_ipv4_hdr *ip = (const struct rte_ipv4_hdr *)hdr;

	for (; k < s->n4; k++) {
		const struct spd_rule4 *r = &s->r4[k];

		if ((ip->src_addr & r->src_mask) == r->src &&
		    (ip->dst_addr & r->dst_mask) == r->dst && !gone(died, r->pos, v))
			return (int32_t)k;
	}
	return -1;
}

static int32_t
scan6(const struct spd_set *s, uint32_t k, const uint8_t *hdr, const uint64_t *died, uint64_t v)
{
	const struct rte_ipv6_hdr *ip = (const struct rte_ipv6_hdr *)hdr;

	for (; k < s->n6; k++) {
		const struct spd_rule6 *r = &s->r6[k];

		if (dp_in_prefix6(ip->src_addr, r->src, r->src_len) &&
		    dp_in_prefix6(ip->dst_addr, r->dst, r->dst_len) && !gone(died, r->pos, v))
			return (int32_t)k;
	}
	return -1;
}

/*
 * n headers of one family through a set: slot and precedence.  rte_acl
 * gives the best rule; when that one is gone (removed since its base was
 * built) the rest are scanned for the next one that is not: no rule above
 * it matched.
 */
static void
set_family(const struct spd_set *s, const uint64_t *died, uint64_t v, bool v6,
	   const uint8_t **hdrs, int32_t *slots, int32_t *prios, uint32_t n)
{
	const struct rte_acl_ctx *acl = v6 ? s->acl6 : s->acl;
	uint32_t res[DP_BURST];

	if (acl != NULL)
		rte_acl_classify(acl, hdrs, res, n, 1);
	for (uint32_t i = 0; i < n; i++) {
		int32_t k;

		if (acl == NULL)
			k = v6 ? scan6(s, 0, hdrs[i], died, v) : scan4(s, 0, hdrs[i], died, v);
		else if (res[i] == 0)
			k = -1;
		else if (!gone(died, v6 ? s->r6[res[i] - 1].pos : s->r4[res[i] - 1].pos, v))
			k = (int32_t)res[i] - 1;
		else
			k = v6 ? scan6(s, res[i], hdrs[i], died, v) : scan4(s, res[i], hdrs[i], died, v);
		slots[i] = k < 0 ? -1 : (int32_t)(v6 ? s->r6[k].sa_slot : s->r4[k].sa_slot);
		prios[i] = k < 0 ? INT32_MIN : (v6 ? s->r6[k].prio : s->r4[k].prio);
	}
}

/* n headers of one family through the base and the delta's two parts: the highest wins. */
static void
wide_family(const struct spd *t, bool v6, const uint8_t **hdrs, int32_t *slots,
	    int32_t *prios, uint32_t n)
{
	int32_t ds[DP_BURST], dp_[DP_BURST];

	set_family(&t->base->set, t->died, t->version, v6, hdrs, slots, prios, n);
	for (int part = 0; part < 2; part++) {
		const struct spd_set *d = part == 0 ? t->dacl : &t->delta;

		if ((v6 ? d->n6 : d->n4) == 0)
			continue;
		set_family(d, d->died, t->version, v6, hdrs, ds, dp_, n);
		for (uint32_t i = 0; i < n; i++)
			if (dp_[i] > prios[i]) {
				slots[i] = ds[i];
				prios[i] = dp_[i];
			}
	}
}

/*
 * n headers of one family: the host policies first (one hash lookup by
 * destination, one by source), the wide rules only for the packets whose
 * host policy (if any) a wide rule could beat; the higher precedence wins.
 */
static void
classify_family(const struct spd *t, bool v6, const uint8_t **hdrs, int32_t *slots,
		uint32_t n)
{
	int32_t prio[DP_BURST], wslot[DP_BURST], wprio[DP_BURST];
	const uint8_t *need[DP_BURST];
	uint32_t at[DP_BURST], m = 0;

	if (!spd_host_any(v6)) {
		wide_family(t, v6, hdrs, slots, prio, n);
		return;
	}
	spd_host_lookup_burst(hdrs, n, v6, slots, prio);
	for (uint32_t i = 0; i < n; i++) {
		if (prio[i] <= t->wide_top[v6]) {
			at[m] = i;
			need[m++] = hdrs[i];
		}
	}
	if (m == 0)
		return;
	wide_family(t, v6, need, wslot, wprio, m);
	for (uint32_t j = 0; j < m; j++)
		if (wprio[j] >= prio[at[j]])
			slots[at[j]] = wslot[j];
}

void
spd_classify(const struct spd *t, const uint8_t **ip_hdrs, int32_t *slots, uint32_t n)
{
	const uint8_t *h6[DP_BURST];
	int32_t s6[DP_BURST];
	uint32_t idx6[DP_BURST], n6 = 0, n4 = 0;
	const uint8_t *h4[DP_BURST];
	int32_t s4[DP_BURST];
	uint32_t idx4[DP_BURST];

	/* Split the burst by family (usually it is all one), classify, merge. */
	for (uint32_t i = 0; i < n; i++) {
		if (ip_hdrs[i][0] >> 4 == 6) {
			idx6[n6] = i;
			h6[n6++] = ip_hdrs[i];
		} else {
			idx4[n4] = i;
			h4[n4++] = ip_hdrs[i];
		}
	}
	if (n6 == 0) {
		classify_family(t, false, ip_hdrs, slots, n);
		return;
	}
	if (n4 > 0)
		classify_family(t, false, h4, s4, n4);
	classify_family(t, true, h6, s6, n6);
	for (uint32_t i = 0; i < n4; i++)
		slots[idx4[i]] = s4[i];
	for (uint32_t i = 0; i < n6; i++)
		slots[idx6[i]] = s6[i];
}

/*
 * IPv4 flows through a worker's cache: a hit is one hash and one line; the
 * misses are classified together and fill their entries.  An entry holds
 * the SPD generation it was answered under (gen, read before t), so any
 * change of policies (or an SA's removal, which takes its policies) empties
 * the cache at once.
 */
static void
classify_cached(const struct spd *t, uint64_t gen, struct spd_cache *c, const uint8_t **hdrs,
		int32_t *slots, uint32_t n)
{
	const uint8_t *miss[DP_BURST];
	uint32_t at[DP_BURST], m = 0;
	int32_t res[DP_BURST];
	struct spd_cache_entry *e;

	for (uint32_t i = 0; i < n; i++) {
		const struct rte_ipv4_hdr *ip = (const struct rte_ipv4_hdr *)hdrs[i];
		uint64_t key = (uint64_t)ip->src_addr << 32 | ip->dst_addr;

		e = &c->e[rte_hash_crc_8byte(key, 0) & (SPD_CACHE_SIZE - 1)];
		if (e->gen == gen && e->key == key) {
			slots[i] = e->slot;
			continue;
		}
		at[m] = i;
		miss[m++] = hdrs[i];
	}
	if (m == 0)
		return;
	classify_family(t, false, miss, res, m);
	for (uint32_t j = 0; j < m; j++) {
		const struct rte_ipv4_hdr *ip = (const struct rte_ipv4_hdr *)miss[j];
		uint64_t key = (uint64_t)ip->src_addr << 32 | ip->dst_addr;

		slots[at[j]] = res[j];
		e = &c->e[rte_hash_crc_8byte(key, 0) & (SPD_CACHE_SIZE - 1)];
		e->key = key;
		e->slot = res[j];
		e->gen = gen;
	}
}


void
spd_classify_flows(struct spd_cache *c, const uint8_t **ip_hdrs, int32_t *slots, uint32_t n)
{
	uint64_t gen = __atomic_load_n(&spd_gen, __ATOMIC_ACQUIRE);	/* before t */
	const struct spd *t = spd_get();
	uint32_t i = 0;

	/* a few rules are scanned faster */
	if (c == NULL || (t->base->set.acl == NULL && t->dacl->acl == NULL &&
			  !spd_host_any(false))) {
		spd_classify(t, ip_hdrs, slots, n);
		return;
	}
	while (i < n && ip_hdrs[i][0] >> 4 == 4)
		i++;
	if (i < n) {	/* IPv6 in the burst: as it comes */
		spd_classify(t, ip_hdrs, slots, n);
		return;
	}
	classify_cached(t, gen, c, ip_hdrs, slots, n);
}

unsigned int
spd_count(void)
{
	return n_entries;
}

bool
spd_info(unsigned int idx, struct dpvpn_policy *out)
{
	if (idx >= n_entries)
		return false;
	*out = entries[idx].cfg;
	return true;
}

void
spd_poll(void)
{
	reclaim(false);
	if (job != NULL && !batching && __atomic_load_n(&job->done, __ATOMIC_ACQUIRE))
		adopt();
}

void
spd_settle(void)
{
	while (job != NULL && !batching)
		adopt();	/* waits for it; may start the next */
	reclaim(false);
}

void
spd_hold_builds(bool on)
{
	__atomic_store_n(&hold_builds, on, __ATOMIC_RELEASE);
}

void
spd_get_build_stats(struct spd_build_stats *s)
{
	*s = stats;
	s->delta = n_delta;
	s->in_flight = job != NULL;
	s->dead = base_cur->n_died;
}

void
spd_fini(void)
{
	job_cancel();
	rte_rcu_qsbr_synchronize(dp.rcu, RTE_QSBR_THRID_INVALID);
	reclaim(true);
}
