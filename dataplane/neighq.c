/* SPDX-License-Identifier: BSD-3-Clause */
/* neighq.c - packets held while their next hop is resolved (see neighq.h). */
#include <string.h>

#include <rte_cycles.h>

#include "dp.h"
#include "neighq.h"
#include "route.h"

static inline void
set_held(struct neighq *q, uint32_t held)
{
	__atomic_store_n(&q->held, held, __ATOMIC_RELAXED);
}

static inline size_t
addr_len(uint8_t family)
{
	return family == DPVPN_AF_INET6 ? 16 : 4;
}

static struct neighq_hop *
find(struct neighq *q, uint16_t port, uint8_t family, const void *addr)
{
	for (unsigned int i = 0; i < NEIGHQ_HOPS; i++) {
		struct neighq_hop *h = &q->hops[i];

		/* a free slot has family 0, which no next hop has */
		if (h->family == family && h->port == port &&
		    memcmp(h->addr, addr, addr_len(family)) == 0)
			return h;
	}
	return NULL;
}

static struct neighq_hop *
claim(struct neighq *q, uint16_t port, uint8_t family, const void *addr, uint64_t now)
{
	struct neighq_hop *h = NULL;

	for (unsigned int i = 0; h == NULL && i < NEIGHQ_HOPS; i++)
		if (q->hops[i].family == 0)
			h = &q->hops[i];
	if (h == NULL)
		return NULL;
	memset(h->addr, 0, sizeof(h->addr));
	memcpy(h->addr, addr, addr_len(family));
	h->port = port;
	h->family = family;
	h->n = 0;
	h->since = h->asked = now;
	return h;
}

bool
neighq_hold(struct neighq *q, struct dp_lstats *st, struct rte_mbuf *m, uint16_t port,
	    uint8_t family, const void *addr, uint64_t now)
{
	struct neighq_hop *h = find(q, port, family, addr);
	bool first = h == NULL;

	if (first)
		h = claim(q, port, family, addr, now);
	if (h == NULL || h->n == NEIGHQ_PER_HOP) {
		dp_drop(st, m, DPVPN_DROP_NO_NEIGH);
		return first;	/* no slot: asked for anyway, as before there was a queue */
	}
	if (q->held == 0)
		q->gen = __atomic_load_n(&dp.neigh_gen, __ATOMIC_ACQUIRE);
	m->port = port;
	h->pkts[h->n++] = m;
	set_held(q, q->held + 1);
	st->neigh_queued++;
	return first;
}

/* Everything held for h, oldest first, to mac, into out[]; h is free again. */
static uint16_t
release(struct neighq *q, struct neighq_hop *h, const struct rte_ether_addr *mac,
	struct rte_mbuf **out)
{
	uint16_t n = h->n;

	for (uint16_t i = 0; i < n; i++) {
		struct rte_ether_hdr *eth = rte_pktmbuf_mtod(h->pkts[i], struct rte_ether_hdr *);

		eth->dst_addr = *mac;
		out[i] = h->pkts[i];
	}
	h->family = 0;
	h->n = 0;
	set_held(q, q->held - n);
	return n;
}

static void
drop_hop(struct neighq *q, struct dp_lstats *st, struct neighq_hop *h,
	 enum dpvpn_drop_reason why)
{
	for (uint8_t i = 0; i < h->n; i++)
		dp_drop(st, h->pkts[i], why);
	set_held(q, q->held - h->n);
	h->family = 0;
	h->n = 0;
}

uint16_t
neighq_take(struct neighq *q, uint16_t port, uint8_t family, const void *addr,
	    const struct rte_ether_addr *mac, struct rte_mbuf **out)
{
	struct neighq_hop *h = find(q, port, family, addr);

	return h == NULL ? 0 : release(q, h, mac, out);
}

static void
ask(struct neighq_hop *h, struct dp_resolve_req *req)
{
	memset(req, 0, sizeof(*req));
	req->port = h->port;
	req->family = h->family;
	memcpy(req->addr, h->addr, sizeof(req->addr));
}

uint16_t
neighq_poll(struct neighq *q, struct dp_lstats *st, uint64_t now, struct rte_mbuf **out,
	    struct dp_resolve_req *asks, uint16_t *nasks)
{
	uint64_t hz = rte_get_timer_hz();
	uint16_t n = 0;

	*nasks = 0;
	if (q->held != 0 && q->gen != __atomic_load_n(&dp.neigh_gen, __ATOMIC_ACQUIRE)) {
		neighq_flush(q, st, DPVPN_DROP_NO_NEIGH);
		return 0;
	}
	for (unsigned int i = 0; i < NEIGHQ_HOPS; i++) {
		struct neighq_hop *h = &q->hops[i];
		struct rte_ether_addr mac;

		if (h->family == 0)
			continue;
		if (neigh_lookup(h->port, h->family, h->addr, &mac))
			n += release(q, h, &mac, out + n);
		else if (now - h->since >= NEIGHQ_TRIES * hz)
			drop_hop(q, st, h, DPVPN_DROP_NEIGH_TIMEOUT);
		else if (now - h->asked >= hz / NEIGHQ_ASK_DIV) {
			h->asked = now;
			ask(h, &asks[(*nasks)++]);
		}
	}
	return n;
}

void
neighq_flush(struct neighq *q, struct dp_lstats *st, enum dpvpn_drop_reason why)
{
	for (unsigned int i = 0; i < NEIGHQ_HOPS; i++)
		if (q->hops[i].family != 0)
			drop_hop(q, st, &q->hops[i], why);
}
