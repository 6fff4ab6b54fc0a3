/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * keep.h - records dpvpnd keeps here (KEEP_SET, KEEP_DEL, KEEP_LIST): the
 * state of its IKE SAs, so that a dpvpnd that restarts while this process
 * forwards takes them up where they were ([ops] issue 27).  The records are
 * opaque here; they hold IKE keys, so they live where the ESP keys do: in
 * DPDK's hugepage memory (never swapped, gone with this process), wiped when
 * replaced, deleted and at exit.  Keyed by 16 bytes (dpvpnd: an IKE SA's
 * SPIs), at most as many as there is room for SAs (--max-sa).  Main lcore
 * only: no worker reads them.
 */
#ifndef KEEP_H
#define KEEP_H

#include <stddef.h>
#include <stdint.h>

#include "dpvpn_proto.h"

int keep_init(unsigned int max);
/* A record under key: 0, -ENOSPC (full), -ENOMEM. */
int keep_set(const uint8_t *key, const uint8_t *data, uint32_t len);
/* 0 or -ENOENT. */
int keep_del(const uint8_t *key);
unsigned int keep_count(void);
/* Record i (0 .. keep_count() - 1): its key, bytes and length. */
void keep_get(unsigned int i, const uint8_t **key, const uint8_t **data, uint32_t *len);
/* Every record wiped and freed (exit). */
void keep_flush(void);

#endif /* KEEP_H */
