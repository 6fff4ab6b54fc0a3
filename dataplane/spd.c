/* SPDX-License-Identifier: BSD-3-Clause */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <rte_acl.h>
#include <rte_byteorder.h>
#include <rte_ip.h>
#include <rte_malloc.h>
#include <rte_rcu_qsbr.h>

#include "dp.h"
#include "sa.h"
#include "spd.h"

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

/*
 * A few rules are matched faster by a scan than by rte_acl (whose per-burst
 * cost measured ~11 % of a worker at 64 B with one rule): up to
 * SPD_SCAN_MAX rules are kept sorted by precedence and scanned.
 */
#define SPD_SCAN_MAX	8

struct spd_scan_rule {
	uint32_t src, src_mask, dst, dst_mask;	/* network order */
	uint32_t sa_slot;
};

struct spd {
	struct rte_acl_ctx *acl;	/* many rules; NULL otherwise */
	uint32_t n_scan;		/* few rules: scanned in order */
	struct spd_scan_rule scan[SPD_SCAN_MAX];
};

/* The rules as installed, in order: the source of every build and dump. */
struct spd_entry {
	struct dpvpn_policy cfg;
	uint32_t sa_slot;
};

static struct spd_entry *entries;
static unsigned int n_entries, max_entries, generation;
static struct spd *cur;
static bool batching, dirty, force_acl;

int
spd_init(unsigned int max_rules)
{
	max_entries = max_rules;
	entries = rte_zmalloc("dpvpn_spd_rules", max_rules * sizeof(*entries), 0);
	cur = rte_zmalloc("dpvpn_spd", sizeof(*cur), RTE_CACHE_LINE_SIZE);
	return entries == NULL || cur == NULL ? -ENOMEM : 0;
}

/* rte_acl: the highest priority wins.  Ours: lowest value, then most specific. */
static int32_t
acl_priority(const struct dpvpn_policy *p)
{
	return (int32_t)(RTE_ACL_MAX_PRIORITY - p->priority * 64 - (64 - p->src.len - p->dst.len));
}

static void
acl_rule(const struct spd_entry *e, struct spd_acl_rule *r)
{
	memset(r, 0, sizeof(*r));
	r->data.category_mask = 1;
	r->data.priority = acl_priority(&e->cfg);
	r->data.userdata = e->sa_slot + 1;	/* 0 means "no match" */
	r->field[F_PROTO].value.u8 = 0;
	r->field[F_PROTO].mask_range.u8 = 0;
	r->field[F_SRC].value.u32 = rte_be_to_cpu_32(e->cfg.src.addr);
	r->field[F_SRC].mask_range.u32 = e->cfg.src.len;
	r->field[F_DST].value.u32 = rte_be_to_cpu_32(e->cfg.dst.addr);
	r->field[F_DST].mask_range.u32 = e->cfg.dst.len;
}

static struct rte_acl_ctx *
build(char *eb, size_t len)
{
	struct rte_acl_config bc = { .num_categories = 1, .num_fields = F_NUM };
	char name[RTE_ACL_NAMESIZE];
	struct rte_acl_param prm = {
		.name = name, .socket_id = (int)rte_socket_id(),
		.rule_size = RTE_ACL_RULE_SZ(F_NUM), .max_rule_num = n_entries,
	};
	struct rte_acl_ctx *ctx;
	int rc = 0;

	/* rte_acl contexts are named: a fresh name per generation. */
	snprintf(name, sizeof(name), "dpvpn_spd%u", generation++);
	ctx = rte_acl_create(&prm);
	if (ctx == NULL) {
		snprintf(eb, len, "policy: cannot create a classifier for %u rules", n_entries);
		return NULL;
	}
	memcpy(bc.defs, fields, sizeof(fields));
	for (unsigned int i = 0; i < n_entries && rc == 0; i++) {
		struct spd_acl_rule r;

		acl_rule(&entries[i], &r);
		rc = rte_acl_add_rules(ctx, (const struct rte_acl_rule *)&r, 1);
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

static void
build_scan(struct spd *t)
{
	struct spd_entry sorted[SPD_SCAN_MAX];

	memcpy(sorted, entries, n_entries * sizeof(sorted[0]));
	qsort(sorted, n_entries, sizeof(sorted[0]), by_precedence);
	for (unsigned int i = 0; i < n_entries; i++) {
		struct spd_scan_rule *r = &t->scan[i];

		r->src_mask = dp_mask(sorted[i].cfg.src.len);
		r->src = sorted[i].cfg.src.addr & r->src_mask;
		r->dst_mask = dp_mask(sorted[i].cfg.dst.len);
		r->dst = sorted[i].cfg.dst.addr & r->dst_mask;
		r->sa_slot = sorted[i].sa_slot;
	}
	t->n_scan = n_entries;
}

/* Build from the rule list and publish; the old classifier goes after a grace period. */
static int
publish(char *eb, size_t len)
{
	struct spd *t = rte_zmalloc("dpvpn_spd", sizeof(*t), RTE_CACHE_LINE_SIZE);
	struct spd *old = cur;

	if (t == NULL) {
		snprintf(eb, len, "policy: out of memory");
		return -ENOMEM;
	}
	if (n_entries <= SPD_SCAN_MAX && !force_acl) {
		build_scan(t);
	} else {
		t->acl = build(eb, len);
		if (t->acl == NULL) {
			rte_free(t);
			return -ENOMEM;
		}
	}
	__atomic_store_n(&cur, t, __ATOMIC_RELEASE);
	rte_rcu_qsbr_synchronize(dp.rcu, RTE_QSBR_THRID_INVALID);
	rte_acl_free(old->acl);
	rte_free(old);
	dirty = false;
	return 0;
}

static int
check(const struct dpvpn_policy *p, int slot, char *eb, size_t len)
{
	if (p->src.len > 32 || p->dst.len > 32) {
		snprintf(eb, len, "policy.src/dst: prefix length > 32");
		return -EINVAL;
	}
	if (p->priority > SPD_MAX_PRIORITY) {
		snprintf(eb, len, "policy.priority: %u > %u", p->priority, SPD_MAX_PRIORITY);
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
	e->cfg.src.addr &= dp_mask(p->src.len);
	e->cfg.dst.addr &= dp_mask(p->dst.len);
	e->sa_slot = (uint32_t)slot;
	dirty = true;
	if (batching)
		return 0;
	rc = publish(eb, len);
	if (rc != 0)
		n_entries--;	/* the running classifier is unchanged */
	return rc;
}

void
spd_begin(void)
{
	batching = true;
}

int
spd_commit(char *eb, size_t len)
{
	batching = false;
	return dirty ? publish(eb, len) : 0;
}

void
spd_force_acl(bool on)
{
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
scan(const struct spd *t, const uint8_t *hdr)
{
	const struct rte_ipv4_hdr *ip = (const struct rte_ipv4_hdr *)hdr;

	for (uint32_t i = 0; i < t->n_scan; i++) {
		const struct spd_scan_rule *r = &t->scan[i];

		if ((ip->src_addr & r->src_mask) == r->src && (ip->dst_addr & r->dst_mask) == r->dst)
			return (int32_t)r->sa_slot;
	}
	return -1;
}

void
spd_classify(const struct spd *t, const uint8_t **ip_hdrs, int32_t *slots, uint32_t n)
{
	uint32_t res[DP_BURST];

	if (t->acl == NULL) {
		for (uint32_t i = 0; i < n; i++)
			slots[i] = scan(t, ip_hdrs[i]);
		return;
	}
	rte_acl_classify(t->acl, ip_hdrs, res, n, 1);
	for (uint32_t i = 0; i < n; i++)
		slots[i] = (int32_t)res[i] - 1;
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
