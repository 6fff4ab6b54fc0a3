/* SPDX-License-Identifier: BSD-3-Clause */
/* tunif.c - tunnel interfaces: the table, routing into them, reverse path checks. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <rte_ip.h>

#include "host.h"
#include "ip.h"
#include "route.h"
#include "sa.h"
#include "tunif.h"

static struct tunif tunifs[DPVPN_TUNIF_MAX];

__attribute__((format(printf, 4, 5)))
static int
fail(char *eb, size_t elen, int rc, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(eb, elen, fmt, ap);
	va_end(ap);
	return rc;
}

bool
tunif_exists(uint16_t id)
{
	return id < DPVPN_TUNIF_MAX && tunifs[id].used;
}

int
tunif_check(const struct dpvpn_tunif *c, char *eb, size_t elen)
{
	if (c->id >= DPVPN_TUNIF_MAX)
		return fail(eb, elen, -EINVAL, "tunif.id: %u is not below DPVPN_TUNIF_MAX",
			    c->id);
	if (c->rpf > DPVPN_RPF_STRICT)
		return fail(eb, elen, -EINVAL, "tunif.rpf: %u is not 0, 1 or 2", c->rpf);
	if (c->up > 1 || (!c->up && c->out_spi != 0))
		return fail(eb, elen, -EINVAL, "tunif.up: %u: 1 with an out_spi, or 0 with "
			    "none", c->up);
	if (c->name[0] == '\0' || memchr(c->name, '\0', sizeof(c->name)) == NULL)
		return fail(eb, elen, -EINVAL, "tunif.name: empty or not NUL-terminated (%u "
			    "bytes)", DPVPN_NAME_LEN);
	if (memchr(c->host_iface, '\0', sizeof(c->host_iface)) == NULL ||
	    (c->host_iface[0] != '\0' && !host_name_ok(c->host_iface, sizeof(c->host_iface))))
		return fail(eb, elen, -EINVAL, "tunif.host_iface: not a Linux interface name "
			    "(1..15 bytes, none of / : , = or blanks)");
	return 0;
}

void
tunif_set(const struct dpvpn_tunif *c, uint32_t slot)
{
	struct tunif *t = &tunifs[c->id];

	t->inside4 = c->inside4;
	memcpy(t->inside6, c->inside6, sizeof(t->inside6));
	t->has6 = 0;
	for (unsigned int i = 0; i < sizeof(c->inside6); i++)
		t->has6 |= c->inside6[i];
	t->has6 = t->has6 != 0;
	__atomic_store_n(&t->twin, c->host_iface[0] != '\0', __ATOMIC_RELEASE);
	memcpy(t->name, c->name, sizeof(t->name));
	t->rpf = c->rpf;
	t->out_spi = c->out_spi;
	/* the one store workers see: the old SA or the new one, never a mix */
	__atomic_store_n(&t->out_slot, slot, __ATOMIC_RELEASE);
	if (!t->used) {
		t->used = 1;
		__atomic_fetch_add(&dp.n_tunifs, 1, __ATOMIC_RELEASE);
	}
}

int
tunif_del(uint16_t id, char *eb, size_t elen)
{
	if (!tunif_exists(id))
		return fail(eb, elen, -ENOENT, "tunif.id: %u: no such tunnel interface", id);
	__atomic_store_n(&tunifs[id].out_slot, TUNIF_DOWN_SLOT, __ATOMIC_RELEASE);
	__atomic_store_n(&tunifs[id].twin, 0, __ATOMIC_RELEASE);
	tunifs[id].used = 0;
	tunifs[id].out_spi = 0;
	memset(tunifs[id].stats, 0, sizeof(tunifs[id].stats));
	__atomic_fetch_sub(&dp.n_tunifs, 1, __ATOMIC_RELEASE);
	return 0;
}

void
tunif_sa_gone(uint32_t slot)
{
	for (unsigned int id = 0; id < DPVPN_TUNIF_MAX; id++)
		if (tunifs[id].used && tunifs[id].out_slot == slot) {
			__atomic_store_n(&tunifs[id].out_slot, TUNIF_DOWN_SLOT, __ATOMIC_RELEASE);
			tunifs[id].out_spi = 0;
		}
}

bool
tunif_info(unsigned int idx, struct dpvpn_tunif_info *o)
{
	const struct tunif *t = NULL;

	for (unsigned int id = 0; id < DPVPN_TUNIF_MAX; id++)
		if (tunifs[id].used && idx-- == 0) {
			t = &tunifs[id];
			break;
		}
	if (t == NULL)
		return false;
	memset(o, 0, sizeof(*o));
	o->id = (uint16_t)(t - tunifs);
	o->rpf = t->rpf;
	o->up = __atomic_load_n(&t->out_slot, __ATOMIC_ACQUIRE) != TUNIF_DOWN_SLOT;
	o->out_spi = t->out_spi;
	memcpy(o->name, t->name, sizeof(o->name));
	for (unsigned int w = 0; w < DP_MAX_WORKERS; w++) {
		o->tx += t->stats[w].tx;
		o->rx += t->stats[w].rx;
		o->down_drops += t->stats[w].down;
	}
	return true;
}

/* ---- fast path ---- */

static inline int32_t
take(unsigned int w, uint16_t id)
{
	uint32_t slot = __atomic_load_n(&tunifs[id].out_slot, __ATOMIC_ACQUIRE);

	if (slot == TUNIF_DOWN_SLOT) {
		tunifs[id].stats[w].down++;
		return TUNIF_DOWN;
	}
	tunifs[id].stats[w].tx++;
	return (int32_t)slot;
}

/*
 * ECMP: the flow's member, or the next one up after it (failover within the
 * dataplane, before any routing protocol notices); the flows of members that
 * are up stay where they are.
 */
static int32_t
group(unsigned int w, const struct route_grp *g, const uint8_t *ip)
{
	uint32_t first = ip_flow_hash(ip) % g->n;

	for (uint32_t k = 0; k < g->n; k++) {
		uint8_t id = g->tunif[(first + k) % g->n];

		if (__atomic_load_n(&tunifs[id].out_slot, __ATOMIC_ACQUIRE) != TUNIF_DOWN_SLOT)
			return take(w, id);
	}
	return take(w, g->tunif[first]);	/* all down: counted on the flow's own */
}

static int32_t
resolve(unsigned int w, const uint8_t *ip)
{
	uint32_t idx;
	uint16_t at;
	uint8_t kind;

	if (ip[0] >> 4 == 6) {
		if (!route6_lookup_nh(((const struct rte_ipv6_hdr *)ip)->dst_addr, &idx))
			return TUNIF_NO_ROUTE;
		kind = route6_nhs[idx].kind;
		at = route6_nhs[idx].port;
	} else {
		if (!route_lookup_nh(((const struct rte_ipv4_hdr *)ip)->dst_addr, &idx))
			return TUNIF_NO_ROUTE;
		kind = route_nhs[idx].kind;
		at = route_nhs[idx].port;
	}
	if (kind == ROUTE_NH_TUNIF)
		return take(w, at);
	if (kind == ROUTE_NH_GROUP)
		return group(w, &route_grps[at], ip);
	return TUNIF_NO_POLICY;
}

void
tunif_route(unsigned int w, const uint8_t *const *hdrs, int32_t *slots, uint16_t n)
{
	for (uint16_t i = 0; i < n; i++)
		if (slots[i] < 0)
			slots[i] = resolve(w, hdrs[i]);
}

bool
tunif_rx(unsigned int w, const struct sa *sa, const uint8_t *ip)
{
	struct tunif *t = &tunifs[sa->tunif];
	bool found;
	uint32_t idx;
	uint8_t kind;
	uint16_t at;

	if (t->rpf != DPVPN_RPF_OFF) {
		if (ip[0] >> 4 == 6) {
			found = route6_lookup_nh(((const struct rte_ipv6_hdr *)ip)->src_addr, &idx);
			kind = found ? route6_nhs[idx].kind : 0;
			at = found ? route6_nhs[idx].port : 0;
		} else {
			found = route_lookup_nh(((const struct rte_ipv4_hdr *)ip)->src_addr, &idx);
			kind = found ? route_nhs[idx].kind : 0;
			at = found ? route_nhs[idx].port : 0;
		}
		if (!found || (t->rpf == DPVPN_RPF_STRICT && !route_nh_holds(kind, at, sa->tunif)))
			return false;
	}
	t->stats[w].rx++;
	return true;
}

bool
tunif_to_host(unsigned int w, const struct sa *sa, const uint8_t *ip)
{
	struct tunif *t = &tunifs[sa->tunif];
	bool mine;

	if (!__atomic_load_n(&t->twin, __ATOMIC_RELAXED))
		return false;
	if (ip[0] >> 4 == 6) {
		const uint8_t *d = ((const struct rte_ipv6_hdr *)ip)->dst_addr;

		mine = (d[0] == 0xff && (d[1] & 0x0f) <= 2) ||	/* node / link scope */
		       (d[0] == 0xfe && (d[1] & 0xc0) == 0x80) ||
		       (t->has6 && memcmp(d, t->inside6, 16) == 0);
	} else {
		uint32_t a = ((const struct rte_ipv4_hdr *)ip)->dst_addr;

		mine = (rte_be_to_cpu_32(a) & 0xffffff00u) == 0xe0000000u ||
		       (t->inside4 != 0 && a == t->inside4);
	}
	if (mine)
		t->stats[w].rx++;
	return mine;
}

struct sa *
tunif_out_sa(uint16_t id, enum dpvpn_drop_reason *why)
{
	uint32_t slot = __atomic_load_n(&tunifs[id].out_slot, __ATOMIC_ACQUIRE);
	struct sa *sa;

	if (slot == TUNIF_DOWN_SLOT) {
		tunifs[id].stats[0].down++;
		*why = DPVPN_DROP_TUNNEL_DOWN;
		return NULL;
	}
	sa = sa_slot(slot);
	*why = DPVPN_DROP_SA_GONE;
	if (sa != NULL)
		tunifs[id].stats[0].tx++;
	return sa;
}
