/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ike_pool.c - virtual IP address pools (ike_pool.h): a slot per address,
 * leased / offline / never used; never-used addresses are handed out by a
 * counter, offline ones sit on a FIFO list (the oldest is taken first when
 * the counter has run out) and on their identity's hash chain (found again
 * when that identity comes back).
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "ike_pool.h"

#define NONE		UINT32_MAX

enum slot_state { S_UNUSED, S_LEASED, S_OFFLINE };

struct slot {
	uint8_t state;		/* enum slot_state */
	uint16_t id_len;
	uint32_t hash;
	uint32_t hnext;		/* the identity's hash chain */
	uint32_t oprev, onext;	/* the offline FIFO */
	uint8_t *id;		/* a copy, NULL while S_UNUSED */
};

struct ike_pool {
	int family;
	unsigned alen, plen;
	uint8_t prefix[16], base[16];	/* base: the first address leased */
	uint32_t size, next_unused;
	uint32_t ohead, otail;
	uint32_t hmask;
	uint32_t *buckets;
	struct slot *slots;
	struct ike_pool_stats st;
};

static uint32_t
get32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static void
put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

/* FNV-1a: identities are not chosen to collide by anyone who gains by it
 * (they come from authenticated peers' certificates). */
static uint32_t
id_hash(const uint8_t *id, size_t len)
{
	uint32_t h = 2166136261u;

	for (size_t i = 0; i < len; i++)
		h = (h ^ id[i]) * 16777619u;
	return h;
}

static bool
prefix_ok(const uint8_t *prefix, unsigned alen, unsigned plen)
{
	for (unsigned bit = plen; bit < alen * 8; bit++)
		if (prefix[bit / 8] & (0x80 >> (bit % 8)))
			return false;
	return true;
}

/* The address count of the prefix, capped, and the first one leased. */
static void
pool_range(struct ike_pool *p)
{
	unsigned host = p->alen * 8 - p->plen;
	uint64_t n = host >= 32 ? UINT64_MAX : (uint64_t)1 << host;
	unsigned skip = host >= 2 ? 1 : 0;	/* network and broadcast */

	if (n != UINT64_MAX)
		n -= 2 * skip;
	p->size = n > IKE_POOL_MAX ? IKE_POOL_MAX : (uint32_t)n;
	memcpy(p->base, p->prefix, p->alen);
	/* host bits are zero, so this carries into nothing beyond them */
	put32(p->base + p->alen - 4, get32(p->prefix + p->alen - 4) + skip);
}

struct ike_pool *
ike_pool_new(int family, const uint8_t *prefix, unsigned plen, char *err, size_t elen)
{
	unsigned alen = family == AF_INET ? 4 : family == AF_INET6 ? 16 : 0;
	uint32_t nb = 16;
	struct ike_pool *p;

	if (alen == 0 || plen > alen * 8) {
		snprintf(err, elen, "pool: prefix length %u, at most %u", plen, alen * 8);
		return NULL;
	}
	if (!prefix_ok(prefix, alen, plen)) {
		snprintf(err, elen, "pool: host bits set beyond /%u", plen);
		return NULL;
	}
	p = calloc(1, sizeof(*p));
	if (p == NULL)
		goto nomem;
	p->family = family;
	p->alen = alen;
	p->plen = plen;
	memcpy(p->prefix, prefix, alen);
	pool_range(p);
	while (nb < p->size)
		nb <<= 1;
	p->hmask = nb - 1;
	p->ohead = p->otail = NONE;
	p->buckets = malloc(nb * sizeof(*p->buckets));
	p->slots = calloc(p->size, sizeof(*p->slots));
	if (p->buckets == NULL || p->slots == NULL)
		goto nomem;
	memset(p->buckets, 0xff, nb * sizeof(*p->buckets));	/* NONE */
	p->st.size = p->size;
	return p;
nomem:
	ike_pool_free(p);
	snprintf(err, elen, "pool: out of memory");
	return NULL;
}

void
ike_pool_free(struct ike_pool *p)
{
	if (p == NULL)
		return;
	if (p->slots != NULL)
		for (uint32_t i = 0; i < p->size; i++)
			free(p->slots[i].id);
	free(p->slots);
	free(p->buckets);
	free(p);
}

static void
addr_of(const struct ike_pool *p, uint32_t i, uint8_t *addr)
{
	memcpy(addr, p->base, p->alen);
	put32(addr + p->alen - 4, get32(p->base + p->alen - 4) + i);
}

static uint32_t
index_of(const struct ike_pool *p, const uint8_t *addr)
{
	uint32_t off;

	if (memcmp(addr, p->base, p->alen - 4) != 0)
		return NONE;
	off = get32(addr + p->alen - 4) - get32(p->base + p->alen - 4);
	return off < p->size ? off : NONE;
}

static void
offline_unlink(struct ike_pool *p, uint32_t i)
{
	struct slot *s = &p->slots[i];

	if (s->oprev != NONE)
		p->slots[s->oprev].onext = s->onext;
	else
		p->ohead = s->onext;
	if (s->onext != NONE)
		p->slots[s->onext].oprev = s->oprev;
	else
		p->otail = s->oprev;
	p->st.offline--;
}

static void
offline_append(struct ike_pool *p, uint32_t i)
{
	struct slot *s = &p->slots[i];

	s->onext = NONE;
	s->oprev = p->otail;
	if (p->otail != NONE)
		p->slots[p->otail].onext = i;
	else
		p->ohead = i;
	p->otail = i;
	p->st.offline++;
}

static void
hash_unlink(struct ike_pool *p, uint32_t i)
{
	uint32_t *link = &p->buckets[p->slots[i].hash & p->hmask];

	while (*link != i)
		link = &p->slots[*link].hnext;
	*link = p->slots[i].hnext;
}

/* An offline slot of this identity, or NONE. */
static uint32_t
find_offline(const struct ike_pool *p, const uint8_t *id, size_t len, uint32_t h)
{
	for (uint32_t i = p->buckets[h & p->hmask]; i != NONE; i = p->slots[i].hnext) {
		const struct slot *s = &p->slots[i];

		if (s->state == S_OFFLINE && s->hash == h && s->id_len == len &&
		    memcmp(s->id, id, len) == 0)
			return i;
	}
	return NONE;
}

/* A slot for a new lease: never used first, then the oldest offline one. */
static uint32_t
take_slot(struct ike_pool *p)
{
	uint32_t i;

	while (p->next_unused < p->size && p->slots[p->next_unused].state != S_UNUSED)
		p->next_unused++;	/* (taken by ike_pool_lease_at) */
	if (p->next_unused < p->size)
		return p->next_unused++;
	i = p->ohead;
	if (i == NONE)
		return NONE;
	offline_unlink(p, i);
	hash_unlink(p, i);
	free(p->slots[i].id);
	p->slots[i].id = NULL;
	return i;
}

/* Slot i becomes the identity's (copy: id_len bytes for it, id's copied in). */
static void
slot_take(struct ike_pool *p, uint32_t i, uint8_t *copy, const void *id, size_t id_len,
	  uint32_t h)
{
	memcpy(copy, id, id_len);
	p->slots[i].id = copy;
	p->slots[i].id_len = (uint16_t)id_len;
	p->slots[i].hash = h;
	p->slots[i].hnext = p->buckets[h & p->hmask];
	p->buckets[h & p->hmask] = i;
}

int
ike_pool_lease(struct ike_pool *p, const void *id, size_t id_len, uint8_t *addr)
{
	uint32_t h = id_hash(id, id_len), i;
	uint8_t *copy;

	if (id_len > IKE_POOL_ID_MAX)
		return -EINVAL;
	i = find_offline(p, id, id_len, h);
	if (i != NONE) {
		offline_unlink(p, i);
		goto leased;
	}
	copy = malloc(id_len ? id_len : 1);
	if (copy == NULL)
		return -ENOMEM;
	i = take_slot(p);
	if (i == NONE) {
		free(copy);
		p->st.exhausted++;
		return -ENOSPC;
	}
	slot_take(p, i, copy, id, id_len, h);
leased:
	p->slots[i].state = S_LEASED;
	p->st.leased++;
	addr_of(p, i, addr);
	return 0;
}

int
ike_pool_lease_at(struct ike_pool *p, const void *id, size_t id_len, const uint8_t *addr)
{
	uint32_t i = index_of(p, addr), h = id_hash(id, id_len);
	uint8_t *copy;

	if (i == NONE || id_len > IKE_POOL_ID_MAX)
		return -EINVAL;
	if (p->slots[i].state == S_LEASED)
		return -EBUSY;
	copy = malloc(id_len ? id_len : 1);
	if (copy == NULL)
		return -ENOMEM;
	if (p->slots[i].state == S_OFFLINE) {	/* another identity's, or its own */
		offline_unlink(p, i);
		hash_unlink(p, i);
		free(p->slots[i].id);
	}
	slot_take(p, i, copy, id, id_len, h);
	p->slots[i].state = S_LEASED;
	p->st.leased++;
	return 0;
}

int
ike_pool_release(struct ike_pool *p, const uint8_t *addr)
{
	uint32_t i = index_of(p, addr);

	if (i == NONE || p->slots[i].state != S_LEASED)
		return -ENOENT;
	p->slots[i].state = S_OFFLINE;
	p->st.leased--;
	offline_append(p, i);
	return 0;
}

void
ike_pool_stats(const struct ike_pool *p, struct ike_pool_stats *st)
{
	*st = p->st;
}

int
ike_pool_family(const struct ike_pool *p)
{
	return p->family;
}

int
ike_pool_contains(const struct ike_pool *p, const uint8_t *addr)
{
	for (unsigned bit = 0; bit < p->plen; bit++) {
		uint8_t m = (uint8_t)(0x80 >> (bit % 8));

		if ((addr[bit / 8] & m) != (p->prefix[bit / 8] & m))
			return 0;
	}
	return 1;
}
