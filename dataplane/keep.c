/* SPDX-License-Identifier: BSD-3-Clause */
/* keep.c - dpvpnd's records, kept for its restarts (keep.h). */
#include <errno.h>
#include <string.h>

#include <rte_hash.h>
#include <rte_hash_crc.h>
#include <rte_lcore.h>
#include <rte_malloc.h>

#include "keep.h"

struct keep_ent {
	uint8_t key[DPVPN_KEEP_KEY_LEN];
	uint32_t len;
	uint8_t *data;		/* rte_malloc'd: hugepage memory */
};

static struct keep_ent *ents;	/* dense: a delete moves the last one into its place */
static unsigned int n_ents, cap;
static struct rte_hash *idx;	/* key -> place in ents */

int
keep_init(unsigned int max)
{
	struct rte_hash_parameters hp = {
		.name = "dpvpn_keep_idx",
		.entries = max < 8 ? 8 : max,
		.key_len = DPVPN_KEEP_KEY_LEN,
		.hash_func = rte_hash_crc,
		.socket_id = (int)rte_socket_id(),
	};

	cap = max;
	ents = rte_zmalloc("dpvpn_keep", (cap ? cap : 1) * sizeof(*ents), 0);
	idx = rte_hash_create(&hp);
	return ents == NULL || idx == NULL ? -ENOMEM : 0;
}

static void
wipe(struct keep_ent *e)
{
	if (e->data != NULL) {
		explicit_bzero(e->data, e->len);
		rte_free(e->data);
	}
	e->data = NULL;
	e->len = 0;
}

int
keep_set(const uint8_t *key, const uint8_t *data, uint32_t len)
{
	uint8_t *copy;
	void *at;
	struct keep_ent *e;

	if (idx == NULL)
		return -ENOSPC;		/* (keep_init not called: a test program) */
	copy = rte_malloc("dpvpn_keep_rec", len ? len : 1, 0);
	if (copy == NULL)
		return -ENOMEM;
	memcpy(copy, data, len);
	if (rte_hash_lookup_data(idx, key, &at) >= 0) {
		e = &ents[(uintptr_t)at];
		wipe(e);
	} else {
		if (n_ents == cap || rte_hash_add_key_data(idx, key,
							   (void *)(uintptr_t)n_ents) != 0) {
			explicit_bzero(copy, len);
			rte_free(copy);
			return -ENOSPC;
		}
		e = &ents[n_ents++];
		memcpy(e->key, key, DPVPN_KEEP_KEY_LEN);
	}
	e->data = copy;
	e->len = len;
	return 0;
}

int
keep_del(const uint8_t *key)
{
	void *at;
	unsigned int i, last = n_ents - 1;

	if (idx == NULL || rte_hash_lookup_data(idx, key, &at) < 0)
		return -ENOENT;
	i = (unsigned int)(uintptr_t)at;
	wipe(&ents[i]);
	rte_hash_del_key(idx, key);
	if (i != last) {
		ents[i] = ents[last];
		rte_hash_add_key_data(idx, ents[i].key, (void *)(uintptr_t)i);	/* moved */
	}
	memset(&ents[last], 0, sizeof(ents[last]));
	n_ents--;
	return 0;
}

unsigned int
keep_count(void)
{
	return n_ents;
}

void
keep_get(unsigned int i, const uint8_t **key, const uint8_t **data, uint32_t *len)
{
	*key = ents[i].key;
	*data = ents[i].data;
	*len = ents[i].len;
}

void
keep_flush(void)
{
	for (unsigned int i = 0; i < n_ents; i++)
		wipe(&ents[i]);
	n_ents = 0;
	if (idx != NULL)
		rte_hash_reset(idx);
}
