/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dpvpn_be.h - big-endian (network order) integers read from and written to
 * byte buffers at any alignment: the wire formats dpvpnd reads and writes
 * field by field (control/ha_wire.c, control/ha_chan.c).  No DPDK: the
 * control side includes it too.
 */
#ifndef DPVPN_BE_H
#define DPVPN_BE_H

#include <stdint.h>

static inline uint16_t
be_get16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static inline uint32_t
be_get32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static inline uint64_t
be_get64(const uint8_t *p)
{
	return (uint64_t)be_get32(p) << 32 | be_get32(p + 4);
}

static inline void
be_put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static inline void
be_put32(uint8_t *p, uint32_t v)
{
	be_put16(p, (uint16_t)(v >> 16));
	be_put16(p + 2, (uint16_t)v);
}

static inline void
be_put64(uint8_t *p, uint64_t v)
{
	be_put32(p, (uint32_t)(v >> 32));
	be_put32(p + 4, (uint32_t)v);
}

#endif /* DPVPN_BE_H */
