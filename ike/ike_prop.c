/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ike_prop.c - proposals (RFC 7296 3.3) and traffic selectors (2.9): ours
 * built, the peer's checked against our configuration, one chosen,
 * selectors narrowed.
 */
#include <errno.h>
#include <string.h>
#include <sys/socket.h>

#include "ike_int.h"

/* ---- proposals ---------------------------------------------------------- */

static void
add_tr(struct ike_proposal *p, uint8_t type, uint16_t id, int16_t key_len)
{
	p->tr[p->n_tr++] = (struct ike_transform){ .type = type, .id = id, .key_len = key_len };
}

void
ike_prop_build(const struct ike_prop_ike *e, uint8_t num, struct ike_proposal *p)
{
	memset(p, 0, sizeof(*p));
	p->num = num;
	p->proto = IKE_PROTO_IKE;
	add_tr(p, IKE_TR_ENCR, IKE_ENCR_AES_GCM_16, (int16_t)e->encr_bits);
	add_tr(p, IKE_TR_PRF, PRF_ID, IKE_KEY_LEN_NONE);
	add_tr(p, IKE_TR_DH, e->dh, IKE_KEY_LEN_NONE);
}

void
ike_esp_prop_build(const struct ike_prop_esp *e, uint8_t num, uint32_t spi, struct ike_proposal *p)
{
	memset(p, 0, sizeof(*p));
	p->num = num;
	p->proto = IKE_PROTO_ESP;
	p->spi_len = 4;
	put32(p->spi, spi);
	add_tr(p, IKE_TR_ENCR, e->encr, (int16_t)e->encr_bits);
	if (e->integ != 0)
		add_tr(p, IKE_TR_INTEG, e->integ, IKE_KEY_LEN_NONE);
	add_tr(p, IKE_TR_ESN, IKE_ESN_NO, IKE_KEY_LEN_NONE);
}

static bool
tr_has(const struct ike_proposal *p, uint8_t type, uint16_t id, int16_t key_len)
{
	for (unsigned i = 0; i < p->n_tr; i++)
		if (p->tr[i].type == type && p->tr[i].id == id && p->tr[i].key_len == key_len)
			return true;
	return false;
}

static bool
tr_present(const struct ike_proposal *p, uint8_t type)
{
	for (unsigned i = 0; i < p->n_tr; i++)
		if (p->tr[i].type == type)
			return true;
	return false;
}

/* Absent, or offered with id (NONE: 0); for the transform types we do not use. */
static bool
tr_absent_or(const struct ike_proposal *p, uint8_t type, uint16_t id)
{
	return !tr_present(p, type) || tr_has(p, type, id, IKE_KEY_LEN_NONE);
}

/* Every transform type in p is one of mask's (bit = 1 << type). */
static bool
tr_types_within(const struct ike_proposal *p, unsigned mask)
{
	for (unsigned i = 0; i < p->n_tr; i++)
		if (p->tr[i].type >= 32 || !(mask & 1u << p->tr[i].type))
			return false;
	return true;
}

/* The same transforms, in any order (what a responder must send back). */
bool
ike_prop_same(const struct ike_proposal *got, const struct ike_proposal *want)
{
	if (got->n_tr != want->n_tr || got->proto != want->proto)
		return false;
	for (unsigned i = 0; i < got->n_tr; i++)
		if (!tr_has(want, got->tr[i].type, got->tr[i].id, got->tr[i].key_len))
			return false;
	return true;
}

/*
 * The responder's choice (2.7): the first of the initiator's proposals that
 * one of ours matches; within it, ours in order, but one whose group is
 * that of the KE payload first, which saves an INVALID_KE_PAYLOAD round.
 */
int
ike_pick_ike(const struct ike_conn_cfg *cfg, const struct ike_proposal *p, unsigned n,
	 uint16_t ke_group, struct ike_prop_ike *out, uint8_t *num)
{
	const unsigned mask = 1u << IKE_TR_ENCR | 1u << IKE_TR_PRF | 1u << IKE_TR_INTEG |
			      1u << IKE_TR_DH;

	for (unsigned i = 0; i < n; i++) {
		int found = -1;

		if (p[i].proto != IKE_PROTO_IKE || !tr_types_within(&p[i], mask) ||
		    !tr_absent_or(&p[i], IKE_TR_INTEG, 0))
			continue;
		for (unsigned j = 0; j < cfg->n_ike; j++) {
			const struct ike_prop_ike *e = &cfg->ike[j];

			if (!tr_has(&p[i], IKE_TR_ENCR, IKE_ENCR_AES_GCM_16,
				    (int16_t)e->encr_bits) ||
			    !tr_has(&p[i], IKE_TR_PRF, PRF_ID, IKE_KEY_LEN_NONE) ||
			    !tr_has(&p[i], IKE_TR_DH, e->dh, IKE_KEY_LEN_NONE))
				continue;
			if (found < 0 || e->dh == ke_group)
				found = (int)j;
			if (e->dh == ke_group)
				break;
		}
		if (found >= 0) {
			*out = cfg->ike[found];
			*num = p[i].num;
			return 0;
		}
	}
	return -ENOENT;
}

static bool
esp_matches(const struct ike_proposal *p, const struct ike_prop_esp *e)
{
	if (!tr_has(p, IKE_TR_ENCR, e->encr, (int16_t)e->encr_bits))
		return false;
	if (e->integ != 0 ? !tr_has(p, IKE_TR_INTEG, e->integ, IKE_KEY_LEN_NONE) :
	    !tr_absent_or(p, IKE_TR_INTEG, 0))
		return false;
	/* No extended sequence numbers, no PFS group in IKE_AUTH (1.2). */
	return tr_absent_or(p, IKE_TR_ESN, IKE_ESN_NO) && tr_absent_or(p, IKE_TR_DH, 0);
}

int
ike_pick_esp(const struct ike_conn_cfg *cfg, const struct ike_proposal *p, unsigned n,
	 struct ike_prop_esp *out, uint32_t *spi_out, uint8_t *num)
{
	const unsigned mask = 1u << IKE_TR_ENCR | 1u << IKE_TR_INTEG | 1u << IKE_TR_ESN |
			      1u << IKE_TR_DH;

	for (unsigned i = 0; i < n; i++) {
		if (p[i].proto != IKE_PROTO_ESP || p[i].spi_len != 4 ||
		    !tr_types_within(&p[i], mask))
			continue;
		for (unsigned j = 0; j < cfg->n_esp; j++) {
			if (!esp_matches(&p[i], &cfg->esp[j]))
				continue;
			*out = cfg->esp[j];
			*spi_out = get32(p[i].spi);
			*num = p[i].num;
			return 0;
		}
	}
	return -ENOENT;
}

/* ---- traffic selectors -------------------------------------------------- */

static void
prefix_range(const struct ike_prefix *p, uint8_t lo[16], uint8_t hi[16])
{
	size_t alen = addr_len(p->family);

	memset(lo, 0, 16);
	memset(hi, 0, 16);
	for (size_t i = 0; i < alen; i++) {
		unsigned bits = p->plen > i * 8 ? p->plen - (unsigned)i * 8 : 0;
		uint8_t mask = bits >= 8 ? 0xff : (uint8_t)(0xff00 >> bits);

		lo[i] = p->addr[i] & mask;
		hi[i] = (uint8_t)(lo[i] | (uint8_t)~mask);
	}
}

void
ike_ts_from_prefix(const struct ike_prefix *p, struct ike_ts *ts)
{
	memset(ts, 0, sizeof(*ts));
	ts->type = p->family == AF_INET ? IKE_TS_IPV4_ADDR_RANGE : IKE_TS_IPV6_ADDR_RANGE;
	ts->end_port = 65535;
	prefix_range(p, ts->start, ts->end);
}

/* The selector as a prefix, if it covers every protocol and port of exactly one. */
bool
ike_ts_to_prefix(const struct ike_ts *ts, struct ike_prefix *out)
{
	struct ike_prefix p = { 0 };
	uint8_t lo[16], hi[16];

	if (ts->ip_proto != 0 || ts->start_port != 0 || ts->end_port != 65535)
		return false;
	if (ts->type == IKE_TS_IPV4_ADDR_RANGE)
		p.family = AF_INET;
	else if (ts->type == IKE_TS_IPV6_ADDR_RANGE)
		p.family = AF_INET6;
	else
		return false;
	memcpy(p.addr, ts->start, 16);
	for (unsigned plen = 0; plen <= addr_len(p.family) * 8; plen++) {
		p.plen = (uint8_t)plen;
		prefix_range(&p, lo, hi);
		if (memcmp(lo, ts->start, 16) == 0 && memcmp(hi, ts->end, 16) == 0) {
			*out = p;
			return true;
		}
	}
	return false;
}

/* inner lies within outer. */
bool
ike_prefix_within(const struct ike_prefix *inner, const struct ike_prefix *outer)
{
	uint8_t ilo[16], ihi[16], olo[16], ohi[16];

	if (inner->family != outer->family)
		return false;
	prefix_range(inner, ilo, ihi);
	prefix_range(outer, olo, ohi);
	return memcmp(ilo, olo, 16) >= 0 && memcmp(ihi, ohi, 16) <= 0;
}

/*
 * The responder's narrowing (2.9) against its one prefix: ours if a proposed
 * selector covers it, else a proposed prefix that lies inside ours.
 */
bool
ike_ts_narrow(const struct ike_ts *ts, unsigned n, const struct ike_prefix *ours,
	  struct ike_prefix *out)
{
	uint8_t lo[16], hi[16];

	prefix_range(ours, lo, hi);
	for (unsigned i = 0; i < n; i++) {
		struct ike_ts t = ts[i];
		struct ike_prefix theirs;
		uint8_t type = ours->family == AF_INET ? IKE_TS_IPV4_ADDR_RANGE :
			       IKE_TS_IPV6_ADDR_RANGE;

		if (t.type != type || t.ip_proto != 0 || t.start_port != 0 ||
		    t.end_port != 65535)
			continue;
		if (memcmp(t.start, lo, 16) <= 0 && memcmp(t.end, hi, 16) >= 0) {
			*out = *ours;
			return true;
		}
		if (ike_ts_to_prefix(&t, &theirs) && ike_prefix_within(&theirs, ours)) {
			*out = theirs;
			return true;
		}
	}
	return false;
}
