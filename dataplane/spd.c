/* SPDX-License-Identifier: BSD-3-Clause */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <rte_acl.h>
#include <rte_byteorder.h>
#include <rte_hash_crc.h>
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
};

struct spd_scan6_rule {
	uint8_t src[16], dst[16];	/* host bits zero */
	uint8_t src_len, dst_len;
	uint32_t sa_slot;
};

/* One classifier per family: rte_acl for many rules, else a scan. */
struct spd {
	uint64_t gen;			/* never 0: the flow caches' entries say which */
	struct rte_acl_ctx *acl;	/* many IPv4 rules; NULL otherwise */
	struct rte_acl_ctx *acl6;	/* many IPv6 rules; NULL otherwise */
	uint32_t n_scan, n_scan6;	/* few rules: scanned in order */
	struct spd_scan_rule scan[SPD_SCAN_MAX];
	struct spd_scan6_rule scan6[SPD_SCAN_MAX];
};

/* The rules as installed, in order: the source of every build and dump. */
struct spd_entry {
	struct dpvpn_policy cfg;
	uint32_t sa_slot;
};

static struct spd_entry *entries;
static unsigned int n_entries, max_entries, generation;
static uint64_t published;	/* struct spd gen of the last one published */
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
	if (p->src.family == DPVPN_AF_INET6)
		return (int32_t)(RTE_ACL_MAX_PRIORITY - p->priority * 257 -
				 (256 - p->src.len - p->dst.len));
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
acl6_rule(const struct spd_entry *e, struct spd_acl6_rule *r)
{
	memset(r, 0, sizeof(*r));
	r->data.category_mask = 1;
	r->data.priority = acl_priority(&e->cfg);
	r->data.userdata = e->sa_slot + 1;
	acl6_prefix(r, F6_SRC, e->cfg.src.v6, e->cfg.src.len);
	acl6_prefix(r, F6_DST, e->cfg.dst.v6, e->cfg.dst.len);
}

static struct rte_acl_ctx *
build(uint8_t family, unsigned int n, char *eb, size_t len)
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

		if (entries[i].cfg.src.family != family)
			continue;
		if (v6) {
			acl6_rule(&entries[i], &r6);
			rc = rte_acl_add_rules(ctx, (const struct rte_acl_rule *)&r6, 1);
		} else {
			acl_rule(&entries[i], &r);
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
		if (entries[i].cfg.src.family == family)
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
			continue;
		}
		struct spd_scan_rule *r = &t->scan[i];

		r->src_mask = dp_mask(sorted[i].cfg.src.len);
		r->src = sorted[i].cfg.src.v4 & r->src_mask;
		r->dst_mask = dp_mask(sorted[i].cfg.dst.len);
		r->dst = sorted[i].cfg.dst.v4 & r->dst_mask;
		r->sa_slot = sorted[i].sa_slot;
	}
	if (family == DPVPN_AF_INET6)
		t->n_scan6 = n;
	else
		t->n_scan = n;
}

static unsigned int
count_family(uint8_t family)
{
	unsigned int n = 0;

	for (unsigned int i = 0; i < n_entries; i++)
		n += entries[i].cfg.src.family == family;
	return n;
}

/* Build from the rule list and publish; the old classifier goes after a grace period. */
static int
publish(char *eb, size_t len)
{
	struct spd *t = rte_zmalloc("dpvpn_spd", sizeof(*t), RTE_CACHE_LINE_SIZE);
	struct spd *old = cur;
	unsigned int n4 = count_family(DPVPN_AF_INET), n6 = count_family(DPVPN_AF_INET6);

	if (t == NULL) {
		snprintf(eb, len, "policy: out of memory");
		return -ENOMEM;
	}
	t->gen = ++published;	/* from 1: 0 is an empty cache entry */
	if (n4 == 0 || (n4 <= SPD_SCAN_MAX && !force_acl))
		build_scan(t, DPVPN_AF_INET);
	else if ((t->acl = build(DPVPN_AF_INET, n4, eb, len)) == NULL)
		goto fail;
	if (n6 == 0 || (n6 <= SPD_SCAN_MAX && !force_acl))
		build_scan(t, DPVPN_AF_INET6);
	else if ((t->acl6 = build(DPVPN_AF_INET6, n6, eb, len)) == NULL)
		goto fail;
	__atomic_store_n(&cur, t, __ATOMIC_RELEASE);
	rte_rcu_qsbr_synchronize(dp.rcu, RTE_QSBR_THRID_INVALID);
	rte_acl_free(old->acl);
	rte_acl_free(old->acl6);
	rte_free(old);
	dirty = false;
	return 0;
fail:
	rte_acl_free(t->acl);
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
	dirty = true;
	if (batching)
		return 0;
	rc = publish(eb, len);
	if (rc != 0)
		n_entries--;	/* the running classifier is unchanged */
	return rc;
}

int
spd_del_slot(uint32_t slot, char *eb, size_t len)
{
	unsigned int k = 0;

	for (unsigned int i = 0; i < n_entries; i++)
		if (entries[i].sa_slot != slot)
			entries[k++] = entries[i];
	if (k == n_entries)
		return 0;
	n_entries = k;
	dirty = true;
	/* published now even in a batch: the slot must not be reused before */
	return publish(eb, len);
}

static bool
same_prefix(const struct dpvpn_prefix *a, const struct dpvpn_prefix *b)
{
	struct dpvpn_prefix x = *b;

	if (a->family != x.family || a->len != x.len)
		return false;
	if (x.family == DPVPN_AF_INET6) {
		dp_mask6(x.v6, x.len);
		return memcmp(a->v6, x.v6, 16) == 0;
	}
	return a->v4 == (x.v4 & dp_mask(x.len));
}

int
spd_del(const struct dpvpn_policy *p, char *eb, size_t len)
{
	unsigned int k = 0;

	for (unsigned int i = 0; i < n_entries; i++)
		if (!same_prefix(&entries[i].cfg.src, &p->src) ||
		    !same_prefix(&entries[i].cfg.dst, &p->dst))
			entries[k++] = entries[i];
	if (k == n_entries) {
		snprintf(eb, len, "policy.src/dst: no such policy");
		return -ENOENT;
	}
	n_entries = k;
	dirty = true;
	return batching ? 0 : publish(eb, len);
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

static int32_t
scan6(const struct spd *t, const uint8_t *hdr)
{
	const struct rte_ipv6_hdr *ip = (const struct rte_ipv6_hdr *)hdr;

	for (uint32_t i = 0; i < t->n_scan6; i++) {
		const struct spd_scan6_rule *r = &t->scan6[i];

		if (dp_in_prefix6(ip->src_addr, r->src, r->src_len) &&
		    dp_in_prefix6(ip->dst_addr, r->dst, r->dst_len))
			return (int32_t)r->sa_slot;
	}
	return -1;
}

/* n headers of one family through that family's classifier. */
static void
classify_family(const struct spd *t, bool v6, const uint8_t **hdrs, int32_t *slots,
		uint32_t n)
{
	const struct rte_acl_ctx *acl = v6 ? t->acl6 : t->acl;
	uint32_t res[DP_BURST];

	if (acl == NULL) {
		for (uint32_t i = 0; i < n; i++)
			slots[i] = v6 ? scan6(t, hdrs[i]) : scan(t, hdrs[i]);
		return;
	}
	rte_acl_classify(acl, hdrs, res, n, 1);
	for (uint32_t i = 0; i < n; i++)
		slots[i] = (int32_t)res[i] - 1;
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
 * misses go to rte_acl together and fill their entries.  An entry holds the
 * generation of the classifier that answered, so any change of policies
 * (or an SA's removal, which takes its policies) empties the cache at once.
 */
static void
classify_cached(const struct spd *t, struct spd_cache *c, const uint8_t **hdrs,
		int32_t *slots, uint32_t n)
{
	const uint8_t *miss[DP_BURST];
	uint32_t at[DP_BURST], m = 0, res[DP_BURST];
	struct spd_cache_entry *e;

	for (uint32_t i = 0; i < n; i++) {
		const struct rte_ipv4_hdr *ip = (const struct rte_ipv4_hdr *)hdrs[i];
		uint64_t key = (uint64_t)ip->src_addr << 32 | ip->dst_addr;

		e = &c->e[rte_hash_crc_8byte(key, 0) & (SPD_CACHE_SIZE - 1)];
		if (e->gen == t->gen && e->key == key) {
			slots[i] = e->slot;
			continue;
		}
		at[m] = i;
		miss[m++] = hdrs[i];
	}
	if (m == 0)
		return;
	rte_acl_classify(t->acl, miss, res, m, 1);
	for (uint32_t j = 0; j < m; j++) {
		const struct rte_ipv4_hdr *ip = (const struct rte_ipv4_hdr *)miss[j];
		uint64_t key = (uint64_t)ip->src_addr << 32 | ip->dst_addr;

		slots[at[j]] = (int32_t)res[j] - 1;
		e = &c->e[rte_hash_crc_8byte(key, 0) & (SPD_CACHE_SIZE - 1)];
		e->key = key;
		e->slot = slots[at[j]];
		e->gen = t->gen;
	}
}

void
spd_classify_flows(const struct spd *t, struct spd_cache *c, const uint8_t **ip_hdrs,
		   int32_t *slots, uint32_t n)
{
	uint32_t i = 0;

	if (c == NULL || t->acl == NULL) {	/* a few rules are scanned faster */
		spd_classify(t, ip_hdrs, slots, n);
		return;
	}
	while (i < n && ip_hdrs[i][0] >> 4 == 4)
		i++;
	if (i < n) {	/* IPv6 in the burst: as it comes */
		spd_classify(t, ip_hdrs, slots, n);
		return;
	}
	classify_cached(t, c, ip_hdrs, slots, n);
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
