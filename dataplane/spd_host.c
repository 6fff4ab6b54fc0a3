/* SPDX-License-Identifier: BSD-3-Clause */
#include <errno.h>
#include <string.h>

#include <rte_hash.h>
#include <rte_hash_crc.h>
#include <rte_ip.h>
#include <rte_malloc.h>
#include <rte_prefetch.h>
#include <rte_rcu_qsbr.h>

#include "dp.h"
#include "spd_host.h"

/*
 * 8-byte aligned and sized: rte_hash_crc reads keys 8 bytes at a time, and a
 * bulk lookup takes an array of them (UBSan: a misaligned load otherwise).
 */
struct host_key {
	uint8_t family;		/* DPVPN_AF_INET, DPVPN_AF_INET6 */
	uint8_t side;		/* 0: the address is the destination, 1: the source */
	uint8_t pad[2];
	uint8_t addr[16];	/* IPv4 in the first 4 bytes, the rest zero */
	uint8_t pad2[4];
} __attribute__((aligned(8)));

struct host_cand {
	int32_t prio;		/* rte_acl precedence: higher wins */
	uint32_t sa_slot;
	uint8_t other[16];	/* the other selector, host bits zero */
	uint8_t other_len;
};

struct host_bucket {
	uint32_t n;
	struct host_cand c[SPD_HOST_CANDS];	/* highest precedence first */
};

static struct rte_hash *hosts;
static uint32_t n_rules[2][2];		/* [v6][side]: policies in the table */

/* Buckets replaced or removed, and key positions deleted: freed after a grace period. */
#define PENDING_MAX 64
static struct host_bucket *pending[PENDING_MAX];
static int32_t pending_pos[PENDING_MAX];
static unsigned int n_pending, n_pending_pos;

int
spd_host_init(unsigned int max_rules)
{
	struct rte_hash_parameters p = {
		.name = "dpvpn_spd_hosts",
		.entries = max_rules < 8 ? 8 : max_rules,
		.key_len = sizeof(struct host_key),
		.hash_func = rte_hash_crc,
		.socket_id = (int)rte_socket_id(),
		/* workers read while the main lcore writes, without locks */
		.extra_flag = RTE_HASH_EXTRA_FLAGS_RW_CONCURRENCY_LF,
	};

	hosts = rte_hash_create(&p);
	return hosts == NULL ? -ENOMEM : 0;
}

int
spd_host_side(const struct dpvpn_policy *p)
{
	uint8_t full = p->dst.family == DPVPN_AF_INET6 ? 128 : 32;

	if (p->dst.len == full)
		return 0;
	return p->src.len == full ? 1 : -1;
}

static void
key_of(const struct dpvpn_policy *p, int side, struct host_key *k, uint8_t *other,
       uint8_t *other_len)
{
	const struct dpvpn_prefix *h = side == 0 ? &p->dst : &p->src;
	const struct dpvpn_prefix *o = side == 0 ? &p->src : &p->dst;

	memset(k, 0, sizeof(*k));
	k->family = h->family;
	k->side = (uint8_t)side;
	memset(other, 0, 16);
	if (h->family == DPVPN_AF_INET6) {
		memcpy(k->addr, h->v6, 16);
		memcpy(other, o->v6, 16);
	} else {
		memcpy(k->addr, &h->v4, 4);
		memcpy(other, &o->v4, 4);
	}
	*other_len = o->len;
}

static void
retire(struct host_bucket *b)
{
	if (b == NULL)
		return;
	if (n_pending == PENDING_MAX)
		spd_host_reclaim();
	pending[n_pending++] = b;
}

void
spd_host_reclaim(void)
{
	if (n_pending == 0 && n_pending_pos == 0)
		return;
	rte_rcu_qsbr_synchronize(dp.rcu, RTE_QSBR_THRID_INVALID);
	for (unsigned int i = 0; i < n_pending; i++)
		rte_free(pending[i]);
	for (unsigned int i = 0; i < n_pending_pos; i++)
		rte_hash_free_key_with_position(hosts, pending_pos[i]);
	n_pending = n_pending_pos = 0;
}

static struct host_bucket *
find(const struct host_key *k)
{
	void *data;

	return rte_hash_lookup_data(hosts, k, &data) < 0 ? NULL : data;
}

int
spd_host_add(const struct dpvpn_policy *p, int32_t prio, uint32_t slot)
{
	int side = spd_host_side(p);
	struct host_bucket *old, *b;
	struct host_cand c = { .prio = prio, .sa_slot = slot };
	struct host_key k;
	bool placed = false;

	key_of(p, side, &k, c.other, &c.other_len);
	old = find(&k);
	if (old != NULL && old->n == SPD_HOST_CANDS)
		return -ENOSPC;
	b = rte_malloc("dpvpn_spd_host", sizeof(*b), 0);
	if (b == NULL)
		return -ENOMEM;
	b->n = 0;
	/* after those of higher or equal precedence: the first added wins a tie */
	for (uint32_t i = 0; old != NULL && i < old->n; i++) {
		if (!placed && old->c[i].prio < prio) {
			b->c[b->n++] = c;
			placed = true;
		}
		b->c[b->n++] = old->c[i];
	}
	if (!placed)
		b->c[b->n++] = c;
	if (rte_hash_add_key_data(hosts, &k, b) < 0) {
		rte_free(b);
		return -ENOMEM;
	}
	retire(old);
	__atomic_fetch_add(&n_rules[k.family == DPVPN_AF_INET6][side], 1, __ATOMIC_RELAXED);
	return 0;
}

void
spd_host_del(const struct dpvpn_policy *p, int32_t prio, uint32_t slot)
{
	int side = spd_host_side(p);
	struct host_bucket *old, *b;
	struct host_key k;
	uint8_t other[16], other_len;
	uint32_t gone = UINT32_MAX;
	int32_t pos;

	key_of(p, side, &k, other, &other_len);
	old = find(&k);
	for (uint32_t i = 0; old != NULL && i < old->n && gone == UINT32_MAX; i++)
		if (old->c[i].prio == prio && old->c[i].sa_slot == slot &&
		    old->c[i].other_len == other_len && memcmp(old->c[i].other, other, 16) == 0)
			gone = i;
	if (gone == UINT32_MAX)
		return;
	__atomic_fetch_sub(&n_rules[k.family == DPVPN_AF_INET6][side], 1, __ATOMIC_RELAXED);
	if (old->n == 1) {
		pos = rte_hash_del_key(hosts, &k);
		if (pos >= 0) {		/* its position is reused after the grace period */
			if (n_pending_pos == PENDING_MAX)
				spd_host_reclaim();
			pending_pos[n_pending_pos++] = pos;
		}
		retire(old);
		return;
	}
	b = rte_malloc("dpvpn_spd_host", sizeof(*b), 0);
	if (b == NULL) {	/* no copy: marked dead in place (a rule never matched again) */
		old->c[gone].other_len = 255;
		return;
	}
	b->n = 0;
	for (uint32_t i = 0; i < old->n; i++)
		if (i != gone)
			b->c[b->n++] = old->c[i];
	if (rte_hash_add_key_data(hosts, &k, b) < 0) {
		rte_free(b);
		old->c[gone].other_len = 255;
		return;
	}
	retire(old);
}

bool
spd_host_any(bool v6)
{
	return (__atomic_load_n(&n_rules[v6][0], __ATOMIC_RELAXED) |
		__atomic_load_n(&n_rules[v6][1], __ATOMIC_RELAXED)) != 0;
}

static inline bool
cand_match(const struct host_cand *c, const uint8_t *a, bool v6)
{
	uint32_t a4;

	if (unlikely(c->other_len == 255))	/* dead (spd_host_del without memory) */
		return false;
	if (v6)
		return dp_in_prefix6(a, c->other, c->other_len);
	memcpy(&a4, a, 4);
	return (a4 & dp_mask(c->other_len)) == *(const uint32_t *)(const void *)c->other;
}

/* The best candidate of bucket b whose other selector holds o, if above *prio. */
static inline void
best_in(const struct host_bucket *b, const uint8_t *o, bool v6, int32_t *slot, int32_t *prio)
{
	for (uint32_t i = 0; i < b->n && b->c[i].prio > *prio; i++)
		if (cand_match(&b->c[i], o, v6)) {
			*slot = (int32_t)b->c[i].sa_slot;
			*prio = b->c[i].prio;
			return;
		}
}

/*
 * One side for a burst: every packet's key, one bulk lookup (rte_hash
 * pipelines the buckets' and keys' cache misses over the burst), the hits'
 * buckets prefetched, then each looked at.
 */
static void
bulk_side(uint8_t side, const uint8_t **hdrs, uint32_t n, bool v6, int32_t *slots,
	  int32_t *prio)
{
	struct host_key k[DP_BURST];
	const void *kp[DP_BURST];
	void *data[DP_BURST];
	uint32_t off = v6 ? (side ? 8 : 24) : (side ? 12 : 16), len = v6 ? 16 : 4;
	uint32_t ooff = v6 ? (side ? 24 : 8) : (side ? 16 : 12);
	uint64_t hits = 0;

	for (uint32_t i = 0; i < n; i++) {
		k[i] = (struct host_key){ .family = v6 ? DPVPN_AF_INET6 : DPVPN_AF_INET,
					  .side = side };
		memcpy(k[i].addr, hdrs[i] + off, len);
		kp[i] = &k[i];
	}
	if (rte_hash_lookup_bulk_data(hosts, kp, n, &hits, data) <= 0)
		return;
	for (uint32_t i = 0; i < n; i++)
		if (hits >> i & 1)
			rte_prefetch0(data[i]);
	for (uint32_t i = 0; i < n; i++)
		if (hits >> i & 1)
			best_in(data[i], hdrs[i] + ooff, v6, &slots[i], &prio[i]);
}

void
spd_host_lookup_burst(const uint8_t **hdrs, uint32_t n, bool v6, int32_t *slots,
		      int32_t *prio)
{
	for (uint32_t i = 0; i < n; i++) {
		slots[i] = -1;
		prio[i] = INT32_MIN;
	}
	if (__atomic_load_n(&n_rules[v6][0], __ATOMIC_RELAXED) != 0)
		bulk_side(0, hdrs, n, v6, slots, prio);
	if (__atomic_load_n(&n_rules[v6][1], __ATOMIC_RELAXED) != 0)
		bulk_side(1, hdrs, n, v6, slots, prio);
}
