/* SPDX-License-Identifier: BSD-3-Clause */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_acl.h>
#include <rte_byteorder.h>
#include <rte_hash.h>
#include <rte_hash_crc.h>
#include <rte_ip.h>
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
 * A few rules are matched faster by a scan than by rte_acl (whose per-burst
 * cost measured ~11 % of a worker at 64 B with one rule): up to
 * SPD_SCAN_MAX rules are kept sorted by precedence and scanned.
 */
#define SPD_SCAN_MAX	8

struct spd_scan_rule {
	uint32_t src, src_mask, dst, dst_mask;	/* network order */
	uint32_t sa_slot;
	int32_t prio;
};

struct spd_scan6_rule {
	uint8_t src[16], dst[16];	/* host bits zero */
	uint8_t src_len, dst_len;
	uint32_t sa_slot;
	int32_t prio;
};

/* What an rte_acl match's userdata (its index + 1) stands for. */
struct spd_wide {
	uint32_t sa_slot;
	int32_t prio;
};

/*
 * The wide policies (those spd_host.c does not hold): one classifier per
 * family, rte_acl for many rules, else a scan.
 */
struct spd {
	struct rte_acl_ctx *acl;	/* many IPv4 rules; NULL otherwise */
	struct rte_acl_ctx *acl6;	/* many IPv6 rules; NULL otherwise */
	struct spd_wide *wide;		/* rte_acl's answers */
	int32_t wide_top[2];		/* highest precedence of a wide rule, by family
					 * (INT32_MIN: none): a host policy above it wins */
	uint32_t n_scan, n_scan6;	/* few rules: scanned in order */
	struct spd_scan_rule scan[SPD_SCAN_MAX];
	struct spd_scan6_rule scan6[SPD_SCAN_MAX];
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
};

static struct spd_entry *entries;
static unsigned int n_entries, max_entries, generation;
static uint32_t *by_slot;	/* an SA slot's first entry: index + 1, 0 = none */
static unsigned int n_slots;

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
static void
entry_remove(uint32_t i)
{
	const struct spd_entry *e = &entries[i];
	uint32_t last = --n_entries;

	if (e->prev != 0)
		entries[e->prev - 1].next = e->next;
	else
		by_slot[e->sa_slot] = e->next;
	if (e->next != 0)
		entries[e->next - 1].prev = e->prev;
	sel_unlink(i);
	if (i == last)
		return;
	entries[i] = entries[last];
	slot_relink(i, i + 1);
	sel_relink(i, i + 1);
}

/*
 * Bumped after every change (a classifier published, a host policy added or
 * removed): flow cache entries of an older one are stale.  Workers read it
 * before the classifier and the host table, so an answer they cache under
 * it is at least that new.  Never 0: an empty cache entry.
 */
static uint64_t spd_gen = 1;
static struct spd *cur;
static bool batching, dirty, force_acl, force_changed;

static void
changed(void)
{
	__atomic_store_n(&spd_gen, spd_gen + 1, __ATOMIC_RELEASE);
}

int
spd_init(unsigned int max_rules)
{
	max_entries = max_rules;
	n_slots = sa_max_slots();
	entries = rte_zmalloc("dpvpn_spd_rules", max_rules * sizeof(*entries), 0);
	by_slot = rte_zmalloc("dpvpn_spd_by_slot", n_slots * sizeof(*by_slot), 0);
	cur = rte_zmalloc("dpvpn_spd", sizeof(*cur), RTE_CACHE_LINE_SIZE);
	if (entries == NULL || by_slot == NULL || cur == NULL)
		return -ENOMEM;
	cur->wide_top[0] = cur->wide_top[1] = INT32_MIN;
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
acl_rule(const struct spd_entry *e, uint32_t widx, struct spd_acl_rule *r)
{
	memset(r, 0, sizeof(*r));
	r->data.category_mask = 1;
	r->data.priority = acl_priority(&e->cfg);
	r->data.userdata = widx + 1;	/* 0 means "no match" */
	r->field[F_PROTO].value.u8 = 0;
	r->field[F_PROTO].mask_range.u8 = 0;
	r->field[F_SRC].value.u32 = rte_be_to_cpu_32(e->cfg.src.v4);
	r->field[F_SRC].mask_range.u32 = e->cfg.src.len;
	r->field[F_DST].value.u32 = rte_be_to_cpu_32(e->cfg.dst.v4);
	r->field[F_DST].mask_range.u32 = e->cfg.dst.len;
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
acl6_rule(const struct spd_entry *e, uint32_t widx, struct spd_acl6_rule *r)
{
	memset(r, 0, sizeof(*r));
	r->data.category_mask = 1;
	r->data.priority = acl_priority(&e->cfg);
	r->data.userdata = widx + 1;
	acl6_prefix(r, F6_SRC, e->cfg.src.v6, e->cfg.src.len);
	acl6_prefix(r, F6_DST, e->cfg.dst.v6, e->cfg.dst.len);
}

/* The wide rules of one family into rte_acl; their answers from t->wide[*widx] on. */
static struct rte_acl_ctx *
build(struct spd *t, uint32_t *widx, uint8_t family, unsigned int n, char *eb, size_t len)
{
	bool v6 = family == DPVPN_AF_INET6;
	struct rte_acl_config bc = { .num_categories = 1, .num_fields = v6 ? F6_NUM : F_NUM };
	char name[RTE_ACL_NAMESIZE];
	struct rte_acl_param prm = {
		.name = name, .socket_id = (int)rte_socket_id(),
		.rule_size = v6 ? RTE_ACL_RULE_SZ(F6_NUM) : RTE_ACL_RULE_SZ(F_NUM),
		.max_rule_num = n,
	};
	struct rte_acl_ctx *ctx;
	int rc = 0;

	/* rte_acl contexts are named: a fresh name per generation. */
	snprintf(name, sizeof(name), "dpvpn_spd%u", generation++);
	ctx = rte_acl_create(&prm);
	if (ctx == NULL) {
		snprintf(eb, len, "policy: cannot create a classifier for %u rules", n);
		return NULL;
	}
	if (v6)
		memcpy(bc.defs, fields6, sizeof(fields6));
	else
		memcpy(bc.defs, fields, sizeof(fields));
	for (unsigned int i = 0; i < n_entries && rc == 0; i++) {
		struct spd_acl_rule r;
		struct spd_acl6_rule r6;

		if (entries[i].cfg.src.family != family || entries[i].host)
			continue;
		t->wide[*widx] = (struct spd_wide){ entries[i].sa_slot,
						    acl_priority(&entries[i].cfg) };
		if (v6) {
			acl6_rule(&entries[i], *widx, &r6);
			rc = rte_acl_add_rules(ctx, (const struct rte_acl_rule *)&r6, 1);
		} else {
			acl_rule(&entries[i], *widx, &r);
			rc = rte_acl_add_rules(ctx, (const struct rte_acl_rule *)&r, 1);
		}
		(*widx)++;
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

static int
by_precedence(const void *a, const void *b)
{
	int32_t x = acl_priority(&((const struct spd_entry *)a)->cfg);
	int32_t y = acl_priority(&((const struct spd_entry *)b)->cfg);

	return x > y ? -1 : x < y;	/* highest first, as rte_acl picks */
}

/* The rules of one family, highest precedence first, into the scan list. */
static void
build_scan(struct spd *t, uint8_t family)
{
	struct spd_entry sorted[SPD_SCAN_MAX];
	unsigned int n = 0;

	for (unsigned int i = 0; i < n_entries; i++)
		if (entries[i].cfg.src.family == family && !entries[i].host)
			sorted[n++] = entries[i];
	qsort(sorted, n, sizeof(sorted[0]), by_precedence);
	for (unsigned int i = 0; i < n; i++) {
		if (family == DPVPN_AF_INET6) {
			struct spd_scan6_rule *r = &t->scan6[i];

			memcpy(r->src, sorted[i].cfg.src.v6, 16);
			memcpy(r->dst, sorted[i].cfg.dst.v6, 16);
			r->src_len = sorted[i].cfg.src.len;
			r->dst_len = sorted[i].cfg.dst.len;
			r->sa_slot = sorted[i].sa_slot;
			r->prio = acl_priority(&sorted[i].cfg);
			continue;
		}
		struct spd_scan_rule *r = &t->scan[i];

		r->src_mask = dp_mask(sorted[i].cfg.src.len);
		r->src = sorted[i].cfg.src.v4 & r->src_mask;
		r->dst_mask = dp_mask(sorted[i].cfg.dst.len);
		r->dst = sorted[i].cfg.dst.v4 & r->dst_mask;
		r->sa_slot = sorted[i].sa_slot;
		r->prio = acl_priority(&sorted[i].cfg);
	}
	if (family == DPVPN_AF_INET6)
		t->n_scan6 = n;
	else
		t->n_scan = n;
}

/* The wide rules of a family, and the highest precedence among them. */
static unsigned int
count_family(uint8_t family, int32_t *top)
{
	unsigned int n = 0;

	*top = INT32_MIN;
	for (unsigned int i = 0; i < n_entries; i++)
		if (entries[i].cfg.src.family == family && !entries[i].host) {
			n++;
			*top = RTE_MAX(*top, acl_priority(&entries[i].cfg));
		}
	return n;
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

/* Build from the rule list and publish; the old classifier goes after a grace period. */
static int
publish(char *eb, size_t len)
{
	struct spd *t = rte_zmalloc("dpvpn_spd", sizeof(*t), RTE_CACHE_LINE_SIZE);
	struct spd *old = cur;
	unsigned int n4, n6;
	uint32_t widx = 0;

	if (t == NULL) {
		snprintf(eb, len, "policy: out of memory");
		return -ENOMEM;
	}
	if (force_changed && force_acl)		/* out of the host table after the build */
		for (unsigned int i = 0; i < n_entries; i++)
			entries[i].host = false;
	else if (force_changed)
		host_migrate(true);
	n4 = count_family(DPVPN_AF_INET, &t->wide_top[0]);
	n6 = count_family(DPVPN_AF_INET6, &t->wide_top[1]);
	t->wide = rte_malloc("dpvpn_spd_wide", (n4 + n6 + 1) * sizeof(*t->wide), 0);
	if (t->wide == NULL) {
		rte_free(t);
		snprintf(eb, len, "policy: out of memory");
		return -ENOMEM;
	}
	if (n4 == 0 || (n4 <= SPD_SCAN_MAX && !force_acl))
		build_scan(t, DPVPN_AF_INET);
	else if ((t->acl = build(t, &widx, DPVPN_AF_INET, n4, eb, len)) == NULL)
		goto fail;
	if (n6 == 0 || (n6 <= SPD_SCAN_MAX && !force_acl))
		build_scan(t, DPVPN_AF_INET6);
	else if ((t->acl6 = build(t, &widx, DPVPN_AF_INET6, n6, eb, len)) == NULL)
		goto fail;
	__atomic_store_n(&cur, t, __ATOMIC_RELEASE);
	changed();
	if (force_changed && force_acl)
		host_migrate(false);
	force_changed = false;
	rte_rcu_qsbr_synchronize(dp.rcu, RTE_QSBR_THRID_INVALID);
	spd_host_reclaim();
	rte_acl_free(old->acl);
	rte_acl_free(old->acl6);
	rte_free(old->wide);
	rte_free(old);
	dirty = false;
	return 0;
fail:
	rte_acl_free(t->acl);
	rte_free(t->wide);
	rte_free(t);
	return -ENOMEM;
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
 * or (wide) from the next classifier.  True if that needs a build.
 */
static bool
drop_entry(const struct spd_entry *e, bool may_defer)
{
	if (!e->host)
		return true;
	if (!(may_defer && batching && defer_host_del(e)))
		spd_host_del(&e->cfg, acl_priority(&e->cfg), e->sa_slot);
	return false;
}

/* After removals: published, or the host table's change made visible; then a grace period. */
static int
removed(bool wide, bool now, char *eb, size_t len)
{
	dirty |= wide;
	if (wide && (now || !batching))
		return publish(eb, len);	/* a grace period, and the reclaim */
	changed();
	if (now || !batching) {		/* in a batch: at its commit */
		rte_rcu_qsbr_synchronize(dp.rcu, RTE_QSBR_THRID_INVALID);
		spd_host_reclaim();
	}
	return 0;
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

static int32_t
scan(const struct spd *t, const uint8_t *hdr, int32_t *prio)
{
	const struct rte_ipv4_hdr *ip = (const struct rte_ipv4_hdr *)hdr;

	for (uint32_t i = 0; i < t->n_scan; i++) {
		const struct spd_scan_rule *r = &t->scan[i];

		if ((ip->src_addr & r->src_mask) == r->src &&
		    (ip->dst_addr & r->dst_mask) == r->dst) {
			*prio = r->prio;
			return (int32_t)r->sa_slot;
		}
	}
	*prio = INT32_MIN;
	return -1;
}

static int32_t
scan6(const struct spd *t, const uint8_t *hdr, int32_t *prio)
{
	const struct rte_ipv6_hdr *ip = (const struct rte_ipv6_hdr *)hdr;

	for (uint32_t i = 0; i < t->n_scan6; i++) {
		const struct spd_scan6_rule *r = &t->scan6[i];

		if (dp_in_prefix6(ip->src_addr, r->src, r->src_len) &&
		    dp_in_prefix6(ip->dst_addr, r->dst, r->dst_len)) {
			*prio = r->prio;
			return (int32_t)r->sa_slot;
		}
	}
	*prio = INT32_MIN;
	return -1;
}

/* n headers of one family through that family's wide rules: slot and precedence. */
static void
wide_family(const struct spd *t, bool v6, const uint8_t **hdrs, int32_t *slots,
	    int32_t *prios, uint32_t n)
{
	const struct rte_acl_ctx *acl = v6 ? t->acl6 : t->acl;
	uint32_t res[DP_BURST];

	if (acl == NULL) {
		for (uint32_t i = 0; i < n; i++)
			slots[i] = v6 ? scan6(t, hdrs[i], &prios[i]) : scan(t, hdrs[i], &prios[i]);
		return;
	}
	rte_acl_classify(acl, hdrs, res, n, 1);
	for (uint32_t i = 0; i < n; i++) {
		slots[i] = res[i] == 0 ? -1 : (int32_t)t->wide[res[i] - 1].sa_slot;
		prios[i] = res[i] == 0 ? INT32_MIN : t->wide[res[i] - 1].prio;
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
	if (c == NULL || (t->acl == NULL && !spd_host_any(false))) {
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
