/* SPDX-License-Identifier: BSD-3-Clause */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <rte_byteorder.h>
#include <rte_cycles.h>
#include <rte_hash.h>
#include <rte_ip.h>
#include <rte_hash_crc.h>
#include <rte_malloc.h>
#include <rte_rcu_qsbr.h>

#include "dpvpn_alg.h"
#include "sa.h"

struct sa_key {
	uint32_t spi;
	uint32_t dir;
};

/*
 * slots[]: what policies point at (workers read it).  free_slots: a stack of
 * unused slot numbers, so an add is O(1).  installed[]: the SAs densely, for
 * O(1) paged dumps (a delete moves the last one into the hole).  Only the
 * main lcore touches free_slots and installed.
 */
static struct rte_hash *by_spi;
/* UDP ports inbound SAs listen on: a bit per port, only ever set. */
static uint64_t natt_ports[65536 / 64];
static struct sa **slots;
static uint32_t *free_slots;
static struct sa **installed;
static unsigned int n_sa, n_free, max_sa, n_workers;
static uint64_t n_added;	/* SA_ADDs so far: each SA's serial */

int
sa_init(unsigned int workers, unsigned int max)
{
	struct rte_hash_parameters p = {
		.name = "dpvpn_sa",
		.entries = max,
		.key_len = sizeof(struct sa_key),
		.hash_func = rte_hash_crc,	/* one crc32 instruction */
		.socket_id = (int)rte_socket_id(),
		/* workers read while the main lcore writes, without locks */
		.extra_flag = RTE_HASH_EXTRA_FLAGS_RW_CONCURRENCY_LF,
	};

	n_workers = workers;
	max_sa = max;
	slots = rte_zmalloc("dpvpn_sa_slots", max * sizeof(*slots), RTE_CACHE_LINE_SIZE);
	installed = rte_zmalloc("dpvpn_sa_list", max * sizeof(*installed), 0);
	free_slots = rte_zmalloc("dpvpn_sa_free", max * sizeof(*free_slots), 0);
	by_spi = rte_hash_create(&p);
	if (slots == NULL || installed == NULL || free_slots == NULL || by_spi == NULL)
		return -ENOMEM;
	for (unsigned int i = 0; i < max; i++)	/* slot 0 on top */
		free_slots[n_free++] = max - 1 - i;
	return 0;
}

static int __rte_format_printf(4, 5)
fail(char *errbuf, size_t len, int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(errbuf, len, fmt, ap);
	va_end(ap);
	return err;
}

static bool
addr6_zero(const uint8_t *a)
{
	static const uint8_t zero[16];

	return memcmp(a, zero, 16) == 0;
}

static int
check_cfg(const struct dpvpn_sa_cfg *c, char *eb, size_t len)
{
	const struct dpvpn_alg_info *a;

	if (c->spi == 0 || rte_be_to_cpu_32(c->spi) < 256)
		return fail(eb, len, -EINVAL, "sa.spi: %u is reserved", rte_be_to_cpu_32(c->spi));
	if (c->dir != DPVPN_DIR_IN && c->dir != DPVPN_DIR_OUT)
		return fail(eb, len, -EINVAL, "sa.dir: %u is not in (1) or out (2)", c->dir);
	if (c->df > DPVPN_DF_CLEAR)
		return fail(eb, len, -EINVAL, "sa.df: %u is not copy (0), set (1) or clear (2)",
			    c->df);
	if ((c->flags & ~(DPVPN_SA_F_ROUTE | DPVPN_SA_F_HOST)) != 0 ||
	    (!(c->flags & DPVPN_SA_F_ROUTE) && c->tunif))
		return fail(eb, len, -EINVAL, "sa.flags/tunif: 0x%x/%u: unknown flags, or a "
			    "tunif without DPVPN_SA_F_ROUTE", c->flags, c->tunif);
	if ((c->flags & DPVPN_SA_F_HOST) &&
	    ((c->flags & DPVPN_SA_F_ROUTE) || c->dir != DPVPN_DIR_IN))
		return fail(eb, len, -EINVAL, "sa.flags: 0x%x: DPVPN_SA_F_HOST is for an inbound "
			    "SA of a policy tunnel", c->flags);
	a = dpvpn_alg_get(c->alg);
	if (a == NULL)
		return fail(eb, len, -EINVAL, "sa.alg: %u is not supported", c->alg);
	if (c->key_len != a->key_len)
		return fail(eb, len, -EINVAL, "sa.key_len: %u is not %u, as %s needs",
			    c->key_len, a->key_len, a->name);
	if (c->auth_key_len != a->auth_key_len)
		return fail(eb, len, -EINVAL, "sa.auth_key_len: %u is not %u, as %s needs",
			    c->auth_key_len, a->auth_key_len, a->name);
	if (c->dir == DPVPN_DIR_IN && c->replay_window != 0 && !replay_window_ok(c->replay_window))
		return fail(eb, len, -EINVAL,
			    "sa.replay_window: %u is not 0 or a power of 2 in 64..4096",
			    c->replay_window);
	if ((c->life_bytes[1] && c->life_bytes[0] > c->life_bytes[1]) ||
	    (c->life_packets[1] && c->life_packets[0] > c->life_packets[1]) ||
	    (c->life_seconds[1] && c->life_seconds[0] > c->life_seconds[1]))
		return fail(eb, len, -EINVAL, "sa.life_*: a soft limit above its hard one");
	if (c->esn > 1)
		return fail(eb, len, -EINVAL, "sa.esn: %u is not 0 or 1", c->esn);
	if (c->udp_spread_log2 > 8 || (c->udp_spread_log2 && (c->udp_local == 0 ||
	    c->udp_local + (1u << c->udp_spread_log2) - 1 > 65535)))
		return fail(eb, len, -EINVAL, "sa.udp_spread_log2: %u: needs UDP encapsulation "
			    "and 2^%u ports from udp_local within 65535", c->udp_spread_log2,
			    c->udp_spread_log2);
	if ((c->mtu != 0 && (c->mtu < DPVPN_MTU_MIN || c->mtu > 9000)) || c->frag_outer > 1 ||
	    (c->frag_outer && c->local.family != DPVPN_AF_INET))
		return fail(eb, len, -EINVAL, "sa.mtu/frag_outer: MTU %u not 0 or %u..9000, or "
			    "outer fragmentation without an IPv4 outer header", c->mtu,
			    DPVPN_MTU_MIN);
	/* limit = start: silent until a grant (an HA standby's copy, doc/ha.md) */
	if (c->seq_limit != 0 && (c->dir != DPVPN_DIR_OUT || c->seq_limit < c->seq_start))
		return fail(eb, len, -EINVAL, "sa.seq_limit: %" PRIu64 " must not be below "
			    "sa.seq_start on an outbound SA", c->seq_limit);
	if (c->seq_start != 0 && (c->dir != DPVPN_DIR_OUT ||
				  c->seq_start > (c->esn ? UINT64_MAX - 1 : UINT32_MAX)))
		return fail(eb, len, -EINVAL, "sa.seq_start: %" PRIu64 " is out of range for "
			    "this SA", c->seq_start);
	if ((c->udp_local == 0) != (c->udp_remote == 0))
		return fail(eb, len, -EINVAL, "sa.udp_local/udp_remote: both set or both 0");
	if ((c->local.family != DPVPN_AF_INET && c->local.family != DPVPN_AF_INET6) ||
	    c->remote.family != c->local.family)
		return fail(eb, len, -EINVAL, "sa.local/remote: families %u and %u are not both "
			    "4 or both 6", c->local.family, c->remote.family);
	if ((c->local_ts.family != DPVPN_AF_INET && c->local_ts.family != DPVPN_AF_INET6) ||
	    c->remote_ts.family != c->local_ts.family)
		return fail(eb, len, -EINVAL, "sa.local_ts/remote_ts: families %u and %u are not "
			    "both 4 or both 6", c->local_ts.family, c->remote_ts.family);
	if (RTE_MAX(c->local_ts.len, c->remote_ts.len) >
	    (c->local_ts.family == DPVPN_AF_INET ? 32 : 128))
		return fail(eb, len, -EINVAL, "sa.local_ts/remote_ts: prefix length %u is too "
			    "long for IPv%u", RTE_MAX(c->local_ts.len, c->remote_ts.len),
			    c->local_ts.family);
	if (c->n_more_lts >= DPVPN_SEL_MAX || c->n_more_rts >= DPVPN_SEL_MAX)
		return fail(eb, len, -EINVAL, "sa.n_more_lts/n_more_rts: %u and %u, at most %u",
			    c->n_more_lts, c->n_more_rts, DPVPN_SEL_MAX - 1);
	for (unsigned i = 0; i < c->n_more_lts + c->n_more_rts; i++) {
		const struct dpvpn_prefix *x = i < c->n_more_lts ? &c->more_lts[i] :
					       &c->more_rts[i - c->n_more_lts];

		if (x->family != c->local_ts.family ||
		    x->len > (x->family == DPVPN_AF_INET ? 32 : 128))
			return fail(eb, len, -EINVAL, "sa.more_lts/more_rts: entry %u is not of "
				    "local_ts's family (%u) or its length %u is too long", i,
				    c->local_ts.family, x->len);
	}
	if (c->local.family == DPVPN_AF_INET ? (c->local.v4 == 0 || c->remote.v4 == 0) :
	    (addr6_zero(c->local.v6) || addr6_zero(c->remote.v6)))
		return fail(eb, len, -EINVAL, "sa.local/remote: address is unset");
	if (memchr(c->name, '\0', sizeof(c->name)) == NULL)
		return fail(eb, len, -EINVAL, "sa.name: not NUL-terminated within %u bytes",
			    DPVPN_NAME_LEN);
	return 0;
}

/* The outside port with the SA's local address: its MTU, 1500 if none has it. */
static uint16_t
outer_port_mtu(const struct dpvpn_sa_cfg *c)
{
	for (uint16_t i = 0; i < dp.n_ports; i++) {
		const struct dp_port *p = &dp.ports[i];

		if (c->local.family == DPVPN_AF_INET ?
		    dp_port_owns4(p, c->local.v4) || dp_port_vip4(p, c->local.v4, false) :
		    dp_port_owns6(p, c->local.v6) || dp_port_vip6(p, c->local.v6, false))
			return p->mtu ? p->mtu : RTE_ETHER_MTU;
	}
	return RTE_ETHER_MTU;
}

/*
 * The tunnel MTU: the largest inner packet whose ESP packet fits the
 * outside port (outer header, UDP, ESP header, IV, padding to the block,
 * trailer, ICV), or the configured one if smaller (or, fragmenting the outer
 * packet, larger).  The MSS clamp follows from it unless configured.
 */
static void
sa_mtu(struct sa *sa, const struct dpvpn_sa_cfg *c, const struct dpvpn_alg_info *a)
{
	uint32_t over = (c->local.family == DPVPN_AF_INET6 ? 40 : 20) +
			(c->udp_local ? NATT_HDR_LEN : 0) + ESP_HDR_LEN + a->iv_len + a->icv_len;
	uint32_t fit;

	sa->port_mtu = outer_port_mtu(c);
	fit = ((sa->port_mtu - over) & ~(uint32_t)(a->block - 1)) - ESP_TRAILER_LEN;
	sa->frag_outer = c->frag_outer;
	sa->mtu = (uint16_t)fit;
	if (c->mtu != 0 && (c->mtu < fit || c->frag_outer))
		sa->mtu = c->mtu;
	if (c->mss == DPVPN_MSS_OFF)
		sa->mss = 0;
	else if (c->mss != 0)
		sa->mss = c->mss;
	else
		/* a route-based tunnel carries both families: IPv6's headers */
		sa->mss = (uint16_t)(sa->mtu - (c->local_ts.family == DPVPN_AF_INET6 ||
						(c->flags & DPVPN_SA_F_ROUTE) ? 60 : 40));
}

static struct sa *
sa_alloc(const struct dpvpn_sa_cfg *c, struct crypto_mgr *mgr, uint32_t slot)
{
	struct sa *sa = rte_zmalloc("dpvpn_sa", sizeof(*sa), RTE_CACHE_LINE_SIZE);
	const struct dpvpn_alg_info *a;

	if (sa == NULL)
		return NULL;
	sa->stats = rte_zmalloc("dpvpn_sa_stats", n_workers * sizeof(struct sa_stats),
				RTE_CACHE_LINE_SIZE);
	if (sa->stats == NULL) {
		rte_free(sa);
		return NULL;
	}
	sa->spi = c->spi;
	sa->dir = c->dir;
	sa->alg = c->alg;
	sa->slot = slot;
	memcpy(&sa->salt, c->salt, sizeof(sa->salt));
	sa->outer6 = c->local.family == DPVPN_AF_INET6;
	if (sa->outer6) {
		memcpy(sa->local6, c->local.v6, 16);
		memcpy(sa->remote6, c->remote.v6, 16);
	} else {
		sa->local = c->local.v4;
		sa->remote = c->remote.v4;
	}
	sa->inner6 = c->local_ts.family == DPVPN_AF_INET6;
	if (sa->inner6) {
		memcpy(sa->lts6, c->local_ts.v6, 16);
		dp_mask6(sa->lts6, c->local_ts.len);
		sa->lts6_len = c->local_ts.len;
		memcpy(sa->rts6, c->remote_ts.v6, 16);
		dp_mask6(sa->rts6, c->remote_ts.len);
		sa->rts6_len = c->remote_ts.len;
	} else {
		sa->local_mask = dp_mask(c->local_ts.len);
		sa->local_net = c->local_ts.v4 & sa->local_mask;
		sa->remote_mask = dp_mask(c->remote_ts.len);
		sa->remote_net = c->remote_ts.v4 & sa->remote_mask;
	}
	sa->more_sel = c->n_more_lts || c->n_more_rts;
	/* the other family's selectors stay 0/0 (zeroed): anything */
	sa->route = (c->flags & DPVPN_SA_F_ROUTE) != 0;
	sa->tunif = c->tunif;
	if (c->dir == DPVPN_DIR_IN)
		replay_init(&sa->replay, c->replay_window, n_workers > 1);
	sa->limited = c->life_bytes[0] || c->life_bytes[1] || c->life_packets[0] ||
		      c->life_packets[1];
	sa->installed_tsc = rte_get_timer_cycles();
	sa->serial = ++n_added;
	sa->udp = c->udp_local != 0;
	sa->esn = c->esn;
	sa->udp_local = rte_cpu_to_be_16(c->udp_local);
	sa->udp_spread_mask = (uint16_t)((1u << c->udp_spread_log2) - 1);
	sa->udp_remote = rte_cpu_to_be_16(c->udp_remote);
	sa->outer_sum = sa_outer_sum(sa->local, sa->remote, sa->udp ? IPPROTO_UDP : IPPROTO_ESP);
	sa->df = c->df;
	sa->seq = c->seq_start;
	sa->seq_limit = c->dir == DPVPN_DIR_OUT ? c->seq_limit : 0;
	sa->seq_span = sa->seq_limit ? sa->seq_limit - c->seq_start : 0;
	a = dpvpn_alg_get(c->alg);	/* check_cfg made sure it exists */
	sa_mtu(sa, c, a);
	sa->iv_len = a->iv_len;
	sa->icv_len = a->icv_len;
	sa->outer_len = sa->outer6 ? sizeof(struct rte_ipv6_hdr) : sizeof(struct rte_ipv4_hdr);
	sa->hdr_len = (uint8_t)(sa->outer_len + (sa->udp ? NATT_HDR_LEN : 0) + ESP_HDR_LEN +
				sa->iv_len);
	sa->block = a->block;
	sa->aead = a->aead;
	crypto_key_init(mgr, &sa->key, c->alg, c->key, c->key_len, c->auth_key, c->auth_key_len);
	sa->cfg = *c;
	explicit_bzero(sa->cfg.key, sizeof(sa->cfg.key));
	explicit_bzero(sa->cfg.salt, sizeof(sa->cfg.salt));
	explicit_bzero(sa->cfg.auth_key, sizeof(sa->cfg.auth_key));
	return sa;
}

static void
sa_free(struct sa *sa)
{
	rte_free(sa->stats);
	explicit_bzero(sa, sizeof(*sa));	/* expanded keys and salt */
	rte_free(sa);
}

int
sa_add(const struct dpvpn_sa_cfg *c, struct crypto_mgr *mgr, char *eb, size_t len)
{
	struct sa_key k = { .spi = c->spi, .dir = c->dir };
	struct sa *sa;
	uint32_t slot;
	int rc;

	rc = check_cfg(c, eb, len);
	if (rc != 0)
		return rc;
	if (rte_hash_lookup(by_spi, &k) >= 0)
		return fail(eb, len, -EEXIST, "sa.spi: 0x%08x is already installed",
			    rte_be_to_cpu_32(c->spi));
	if (n_free == 0)
		return fail(eb, len, -ENOSPC, "sa: table full (%u SAs, see --max-sa)", max_sa);
	slot = free_slots[n_free - 1];
	sa = sa_alloc(c, mgr, slot);
	if (sa == NULL)
		return fail(eb, len, -ENOMEM, "sa: out of memory");
	/* Publish: the SA is complete before any worker can find it. */
	__atomic_store_n(&slots[slot], sa, __ATOMIC_RELEASE);
	rc = rte_hash_add_key_data(by_spi, &k, sa);
	if (rc < 0) {
		__atomic_store_n(&slots[slot], NULL, __ATOMIC_RELEASE);
		sa_free(sa);
		return fail(eb, len, rc, "sa: hash insert failed (%d)", rc);
	}
	n_free--;
	if (sa->dir == DPVPN_DIR_IN && sa->udp)
		sa_natt_listen(c->udp_local);
	sa->pos = n_sa;
	installed[n_sa++] = sa;
	return 0;
}

unsigned int
sa_max_slots(void)
{
	return max_sa;
}

int
sa_del(uint32_t spi, uint8_t dir, char *eb, size_t len)
{
	struct sa_key k = { .spi = spi, .dir = dir };
	struct sa *sa;
	int32_t pos;

	if (rte_hash_lookup_data(by_spi, &k, (void **)&sa) < 0)
		return fail(eb, len, -ENOENT, "sa.spi: 0x%08x is not installed",
			    rte_be_to_cpu_32(spi));
	pos = rte_hash_del_key(by_spi, &k);
	__atomic_store_n(&slots[sa->slot], NULL, __ATOMIC_RELEASE);
	/* No worker may still hold the SA (or the hash slot) after this. */
	rte_rcu_qsbr_synchronize(dp.rcu, RTE_QSBR_THRID_INVALID);
	rte_hash_free_key_with_position(by_spi, pos);
	installed[sa->pos] = installed[--n_sa];
	installed[sa->pos]->pos = sa->pos;
	free_slots[n_free++] = sa->slot;
	sa_free(sa);
	return 0;
}

void
sa_natt_listen(uint16_t port)
{
	__atomic_fetch_or(&natt_ports[port / 64], 1ull << (port % 64), __ATOMIC_RELEASE);
}

bool
sa_natt_port(uint16_t port)
{
	return __atomic_load_n(&natt_ports[port / 64], __ATOMIC_ACQUIRE) & (1ull << (port % 64));
}

struct sa *
sa_lookup_in(uint32_t spi)
{
	struct sa_key k = { .spi = spi, .dir = DPVPN_DIR_IN };
	void *sa;

	return rte_hash_lookup_data(by_spi, &k, &sa) < 0 ? NULL : sa;
}

void
sa_lookup_in_bulk(const uint32_t *spis, uint32_t n, struct sa **sas)
{
	struct sa_key keys[DP_BURST];
	const void *kp[DP_BURST];
	void *data[DP_BURST];
	uint64_t hits = 0;

	for (uint32_t i = 0; i < n; i++) {
		keys[i] = (struct sa_key){ .spi = spis[i], .dir = DPVPN_DIR_IN };
		kp[i] = &keys[i];
	}
	if (n == 0 || rte_hash_lookup_bulk_data(by_spi, kp, n, &hits, data) < 0)
		hits = 0;
	for (uint32_t i = 0; i < n; i++)
		sas[i] = hits & (1ull << i) ? data[i] : NULL;
}

int
sa_find(uint32_t spi, uint8_t dir)
{
	struct sa_key k = { .spi = spi, .dir = dir };
	void *sa;

	if (rte_hash_lookup_data(by_spi, &k, &sa) < 0)
		return -1;
	return ((struct sa *)sa)->slot;
}

struct sa *
sa_slot(uint32_t slot)
{
	return __atomic_load_n(&slots[slot], __ATOMIC_ACQUIRE);
}

unsigned int
sa_count(void)
{
	return n_sa;
}

/* Workers stamp their bursts with rte_rdtsc() (worker.c): the age of the newest. */
static uint64_t
idle_ms(uint64_t last_tsc)
{
	uint64_t now = rte_rdtsc();

	if (last_tsc == 0)
		return UINT64_MAX;
	return now > last_tsc ? (now - last_tsc) / (rte_get_tsc_hz() / 1000) : 0;
}

static void
sum_stats(const struct sa *sa, struct dpvpn_sa_info *info)
{
	uint64_t last = 0;

	for (unsigned int w = 0; w < n_workers; w++) {
		const struct sa_stats *s = &sa->stats[w];
		uint64_t t = __atomic_load_n(&s->last_tsc, __ATOMIC_RELAXED);

		last = RTE_MAX(last, t);

		info->packets += s->packets;
		info->bytes += s->bytes;
		info->drop_replay += s->drop_replay;
		info->drop_icv += s->drop_icv;
		info->drop_policy += s->drop_policy;
		info->drop_other += s->drop_other;
		info->drop_seq += s->drop_seq;
	}
	info->idle_ms = idle_ms(last);
}

/*
 * The last sequence number an outbound SA used.  Workers reserve numbers
 * before they check them (esp_encap.c), so the counter runs on past what a
 * non-ESN SA may send (2^32 - 1) and past a dpvpnd grant: those were dropped
 * (seq-exhausted, seq-unreserved), never sent.
 */
static uint64_t
out_seq_used(const struct sa *sa)
{
	uint64_t seq = __atomic_load_n(&sa->seq, __ATOMIC_RELAXED);
	uint64_t limit = __atomic_load_n(&sa->seq_limit, __ATOMIC_RELAXED);

	if (!sa->esn)
		seq = RTE_MIN(seq, (uint64_t)UINT32_MAX);
	return limit != 0 ? RTE_MIN(seq, limit) : seq;
}

bool
sa_info(unsigned int idx, struct dpvpn_sa_info *info)
{
	const struct sa *sa;

	if (idx >= n_sa)
		return false;
	sa = installed[idx];
	memset(info, 0, sizeof(*info));
	info->spi = sa->spi;
	info->dir = sa->dir;
	info->alg = sa->alg;
	info->df = sa->df;
	info->replay_window = sa->cfg.replay_window;
	info->local = sa->cfg.local;
	info->remote = sa->cfg.remote;
	info->udp_local = rte_be_to_cpu_16(sa->udp_local);
	info->udp_remote = rte_be_to_cpu_16(sa->udp_remote);
	info->esn = sa->esn;
	info->life_state = sa->life_state;
	memcpy(info->life_bytes, sa->cfg.life_bytes, sizeof(info->life_bytes));
	memcpy(info->life_packets, sa->cfg.life_packets, sizeof(info->life_packets));
	memcpy(info->life_seconds, sa->cfg.life_seconds, sizeof(info->life_seconds));
	info->age_s = (rte_get_timer_cycles() - sa->installed_tsc) / rte_get_timer_hz();
	info->mtu = sa->mtu;
	info->mss = sa->mss ? sa->mss : DPVPN_MSS_OFF;
	info->frag_outer = sa->frag_outer;
	info->flags = sa->cfg.flags;
	info->tunif = sa->cfg.tunif;
	info->local_ts = sa->cfg.local_ts;
	info->remote_ts = sa->cfg.remote_ts;
	memcpy(info->name, sa->cfg.name, sizeof(info->name));
	info->seq = sa->dir == DPVPN_DIR_OUT ? out_seq_used(sa) : sa->replay.top;
	info->serial = sa->serial;
	sum_stats(sa, info);
	return true;
}


/* ---- lifetimes ---- */

#define EVENTS_MAX	1024	/* queued for dpvpnd; the oldest go first when full */

static struct dpvpn_event events[EVENTS_MAX];
static unsigned int ev_head, ev_count;

static struct dpvpn_event *
new_event(struct sa *sa, uint8_t kind)
{
	struct dpvpn_event *e = &events[(ev_head + ev_count) % EVENTS_MAX];

	if (ev_count == EVENTS_MAX) {	/* drop the oldest */
		ev_head = (ev_head + 1) % EVENTS_MAX;
		ev_count--;
	}
	memset(e, 0, sizeof(*e));
	e->spi = sa->spi;
	e->dir = sa->dir;
	e->kind = kind;
	memcpy(e->name, sa->cfg.name, sizeof(e->name));
	ev_count++;
	return e;
}

/*
 * An outbound SA with a sequence limit asks for more once half of what the
 * last grant gave is used (again every second until it gets it).
 */
static void
seq_check(struct sa *sa, uint64_t now_tsc)
{
	uint64_t limit = __atomic_load_n(&sa->seq_limit, __ATOMIC_RELAXED);
	uint64_t seq = __atomic_load_n(&sa->seq, __ATOMIC_RELAXED);

	if (limit == 0 || sa->seq_span == 0 ||	/* silent: asks for nothing (doc/ha.md) */
	    (seq < limit && limit - seq > sa->seq_span / 2))
		return;
	if (sa->seq_asked_tsc != 0 && now_tsc - sa->seq_asked_tsc < rte_get_timer_hz())
		return;
	sa->seq_asked_tsc = now_tsc;
	new_event(sa, DPVPN_EV_SEQ_LOW)->value = RTE_MIN(seq, limit);
}

int
sa_seq_grant(uint32_t spi, uint64_t limit, char *eb, size_t len)
{
	int slot = sa_find(spi, DPVPN_DIR_OUT);
	struct sa *sa;
	uint64_t old, seq;

	if (slot < 0)
		return fail(eb, len, -ENOENT, "seq_grant.spi: no outbound SA 0x%08x",
			    rte_be_to_cpu_32(spi));
	sa = slots[slot];
	old = __atomic_load_n(&sa->seq_limit, __ATOMIC_RELAXED);
	if (old == 0)
		return fail(eb, len, -EINVAL, "seq_grant.spi: SA 0x%08x has no limit",
			    rte_be_to_cpu_32(spi));
	if (limit <= old)
		return 0;	/* a stale grant: nothing to do */
	if (!sa->esn && limit > UINT32_MAX)
		limit = UINT32_MAX;
	seq = __atomic_load_n(&sa->seq, __ATOMIC_RELAXED);
	sa->seq_span = limit - RTE_MIN(seq, old);
	sa->seq_asked_tsc = 0;
	__atomic_store_n(&sa->seq_limit, limit, __ATOMIC_RELEASE);
	return 0;
}

/*
 * SEQ_SET: an HA standby taking over (doc/ha.md): the SA counts numbers up
 * to used as used (the old active may have sent them), then may use up to
 * limit.  Only ever raised; a worker's fetch_add between the load and the
 * exchange makes the exchange fail and look again.
 */
int
sa_replay_floor(uint32_t spi, uint64_t high, char *eb, size_t len)
{
	int slot = sa_find(spi, DPVPN_DIR_IN);

	if (slot < 0)
		return fail(eb, len, -ENOENT, "replay_floor.spi: no inbound SA 0x%08x",
			    rte_be_to_cpu_32(spi));
	if (!slots[slot]->esn && high > UINT32_MAX)
		return fail(eb, len, -EINVAL, "replay_floor.high: %" PRIu64 " past the SA's "
			    "32-bit numbers", high);
	replay_floor(&slots[slot]->replay, high);
	return 0;
}

int
sa_seq_set(uint32_t spi, uint64_t used, uint64_t limit, char *eb, size_t len)
{
	int slot = sa_find(spi, DPVPN_DIR_OUT);
	struct sa *sa;
	uint64_t cur;

	if (slot < 0)
		return fail(eb, len, -ENOENT, "seq_set.spi: no outbound SA 0x%08x",
			    rte_be_to_cpu_32(spi));
	sa = slots[slot];
	if (limit < used || (!sa->esn && used > UINT32_MAX))
		return fail(eb, len, -EINVAL, "seq_set.used: %" PRIu64 " above limit %" PRIu64
			    " or the SA's sequence space", used, limit);
	cur = __atomic_load_n(&sa->seq, __ATOMIC_RELAXED);
	while (cur < used && !__atomic_compare_exchange_n(&sa->seq, &cur, used, false,
							  __ATOMIC_RELEASE, __ATOMIC_RELAXED))
		;
	if (__atomic_load_n(&sa->seq_limit, __ATOMIC_RELAXED) == 0)
		return 0;	/* no limit: nothing to raise */
	return sa_seq_grant(spi, limit, eb, len);
}

static void
raise_event(struct sa *sa, uint8_t life)
{
	new_event(sa, DPVPN_EV_LIFETIME)->life = life;
	sa->life_reported = life;
	fprintf(stderr, "dpvpn-dataplane: SA 0x%08x %s (%s): %s lifetime reached\n",
		rte_be_to_cpu_32(sa->spi), sa->dir == DPVPN_DIR_IN ? "in" : "out", sa->cfg.name,
		life == DPVPN_LIFE_HARD ? "hard" : "soft");
}

static bool
over(uint64_t used, uint64_t limit)
{
	return limit != 0 && used >= limit;
}

static uint8_t
life_now(const struct sa *sa, uint64_t now_tsc)
{
	const struct dpvpn_sa_cfg *c = &sa->cfg;
	uint64_t age = (now_tsc - sa->installed_tsc) / rte_get_timer_hz();
	uint64_t p = __atomic_load_n(&sa->used_packets, __ATOMIC_RELAXED);
	uint64_t b = __atomic_load_n(&sa->used_bytes, __ATOMIC_RELAXED);

	if (sa->life_state == DPVPN_LIFE_HARD || over(age, c->life_seconds[1]))
		return DPVPN_LIFE_HARD;
	if (over(age, c->life_seconds[0]) || over(p, c->life_packets[0]) ||
	    over(b, c->life_bytes[0]))
		return DPVPN_LIFE_SOFT;
	return DPVPN_LIFE_OK;
}

void
sa_lifetimes_tick(uint64_t now_tsc)
{
	for (unsigned int i = 0; i < n_sa; i++) {
		struct sa *sa = installed[i];
		uint8_t life = life_now(sa, now_tsc);

		if (life == DPVPN_LIFE_HARD)
			sa->life_state = DPVPN_LIFE_HARD;	/* by time: stop it */
		else if (life > sa->life_state)
			sa->life_state = life;
		/* One event per state reached; a hard one may skip the soft one. */
		if (life > sa->life_reported)
			raise_event(sa, life);
		if (sa->dir == DPVPN_DIR_OUT)
			seq_check(sa, now_tsc);
	}
}

unsigned int
sa_events_take(struct dpvpn_event *out, unsigned int max)
{
	unsigned int n = 0;

	while (n < max && ev_count > 0) {
		out[n++] = events[ev_head];
		ev_head = (ev_head + 1) % EVENTS_MAX;
		ev_count--;
	}
	return n;
}

void
sa_flush(void)
{
	while (n_sa > 0)
		sa_del(installed[n_sa - 1]->spi, installed[n_sa - 1]->dir, NULL, 0);
}

/* ---- selector lists (cold: SAs with lists, packets outside the first pair) ---- */

static bool
in_list4(uint32_t a, const struct dpvpn_prefix *first, const struct dpvpn_prefix *more,
	 unsigned n_more)
{
	uint32_t m = dp_mask(first->len);

	if (dp_in_prefix(a, first->v4 & m, m))
		return true;
	for (unsigned i = 0; i < n_more; i++) {
		m = dp_mask(more[i].len);
		if (dp_in_prefix(a, more[i].v4 & m, m))
			return true;
	}
	return false;
}

static bool
in_list6(const uint8_t *a, const struct dpvpn_prefix *first, const struct dpvpn_prefix *more,
	 unsigned n_more)
{
	if (dp_in_prefix6(a, first->v6, first->len))
		return true;
	for (unsigned i = 0; i < n_more; i++)
		if (dp_in_prefix6(a, more[i].v6, more[i].len))
			return true;
	return false;
}

bool
sa_sel_more4(const struct sa *sa, uint32_t src, uint32_t dst)
{
	const struct dpvpn_sa_cfg *c = &sa->cfg;

	return in_list4(src, &c->remote_ts, c->more_rts, c->n_more_rts) &&
	       in_list4(dst, &c->local_ts, c->more_lts, c->n_more_lts);
}

bool
sa_sel_more6(const struct sa *sa, const uint8_t *src, const uint8_t *dst)
{
	const struct dpvpn_sa_cfg *c = &sa->cfg;

	return in_list6(src, &c->remote_ts, c->more_rts, c->n_more_rts) &&
	       in_list6(dst, &c->local_ts, c->more_lts, c->n_more_lts);
}
