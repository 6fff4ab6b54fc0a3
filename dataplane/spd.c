/* SPDX-License-Identifier: BSD-3-Clause */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_byteorder.h>
#include <rte_malloc.h>
#include <rte_rcu_qsbr.h>

#include "dp.h"
#include "sa.h"
#include "spd.h"

static struct spd *cur;

static struct spd *
spd_alloc(uint32_t n)
{
	struct spd *t = rte_zmalloc("dpvpn_spd", sizeof(*t) + n * sizeof(t->rules[0]),
				    RTE_CACHE_LINE_SIZE);

	if (t != NULL)
		t->n = n;
	return t;
}

int
spd_init(void)
{
	cur = spd_alloc(0);
	return cur == NULL ? -ENOMEM : 0;
}

/* Lower priority first; among equals, the more specific rule first. */
static int
rule_cmp(const void *a, const void *b)
{
	const struct spd_rule *x = a, *y = b;
	int lx = x->cfg.src.len + x->cfg.dst.len, ly = y->cfg.src.len + y->cfg.dst.len;

	if (x->cfg.priority != y->cfg.priority)
		return x->cfg.priority < y->cfg.priority ? -1 : 1;
	return ly - lx;
}

static void
publish(struct spd *t)
{
	struct spd *old = cur;

	__atomic_store_n(&cur, t, __ATOMIC_RELEASE);
	rte_rcu_qsbr_synchronize(dp.rcu, RTE_QSBR_THRID_INVALID);
	rte_free(old);
}

int
spd_add(const struct dpvpn_policy *p, char *eb, size_t len)
{
	struct spd_rule r = { .cfg = *p };
	struct spd *t;
	int slot;

	if (p->src.len > 32 || p->dst.len > 32) {
		snprintf(eb, len, "policy.src/dst: prefix length > 32");
		return -EINVAL;
	}
	slot = sa_find(p->spi, DPVPN_DIR_OUT);
	if (slot < 0) {
		snprintf(eb, len, "policy.spi: no outbound SA 0x%08x",
			 rte_be_to_cpu_32(p->spi));
		return -ENOENT;
	}
	if (cur->n >= SPD_MAX) {
		snprintf(eb, len, "policy: table full (%u)", SPD_MAX);
		return -ENOSPC;
	}
	r.src_mask = dp_mask(p->src.len);
	r.src = p->src.addr & r.src_mask;
	r.dst_mask = dp_mask(p->dst.len);
	r.dst = p->dst.addr & r.dst_mask;
	r.sa_slot = (uint16_t)slot;
	t = spd_alloc(cur->n + 1);
	if (t == NULL) {
		snprintf(eb, len, "policy: out of memory");
		return -ENOMEM;
	}
	memcpy(t->rules, cur->rules, cur->n * sizeof(r));
	t->rules[cur->n] = r;
	qsort(t->rules, t->n, sizeof(r), rule_cmp);
	publish(t);
	return 0;
}

const struct spd *
spd_get(void)
{
	return __atomic_load_n(&cur, __ATOMIC_ACQUIRE);
}

unsigned int
spd_count(void)
{
	return cur->n;
}

bool
spd_info(unsigned int idx, struct dpvpn_policy *out)
{
	if (idx >= cur->n)
		return false;
	*out = cur->rules[idx].cfg;
	return true;
}
