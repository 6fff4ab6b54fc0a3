/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ike_prop.c - proposals (RFC 7296 3.3) and traffic selectors (2.9): ours
 * built, the peer's checked against our configuration, one chosen,
 * selectors narrowed.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "ike_int.h"

/* ---- proposals ---------------------------------------------------------- */

static void
add_tr(struct ike_proposal *p, uint8_t type, uint16_t id, int16_t key_len)
{
	if (p->n_tr < IKE_MAX_TRANSFORMS)
		p->tr[p->n_tr++] = (struct ike_transform){ .type = type, .id = id,
							   .key_len = key_len };
}

_Static_assert(4 * IKE_PROP_ALGS_MAX + 1 <= IKE_MAX_TRANSFORMS,
	       "a configured proposal's transforms must fit struct ike_proposal");

/* Every algorithm of e, encryption first (the order strongSwan sends them in). */
static void
cfg_transforms(const struct ike_prop_cfg *e, bool prf, bool dh, struct ike_proposal *p)
{
	for (unsigned i = 0; i < e->n_encr; i++)
		add_tr(p, IKE_TR_ENCR, e->encr[i].id, (int16_t)e->encr[i].bits);
	for (unsigned i = 0; i < e->n_integ; i++)
		add_tr(p, IKE_TR_INTEG, e->integ[i], IKE_KEY_LEN_NONE);
	for (unsigned i = 0; prf && i < e->n_prf; i++)
		add_tr(p, IKE_TR_PRF, e->prf[i], IKE_KEY_LEN_NONE);
	for (unsigned i = 0; dh && i < e->n_dh; i++)
		add_tr(p, IKE_TR_DH, e->dh[i], IKE_KEY_LEN_NONE);
}

void
ike_prop_build(const struct ike_prop_cfg *e, uint8_t num, struct ike_proposal *p)
{
	memset(p, 0, sizeof(*p));
	p->num = num;
	p->proto = IKE_PROTO_IKE;
	cfg_transforms(e, true, true, p);
}

void
ike_prop_chosen_build(const struct ike_prop_ike *c, uint8_t num, struct ike_proposal *p)
{
	memset(p, 0, sizeof(*p));
	p->num = num;
	p->proto = IKE_PROTO_IKE;
	add_tr(p, IKE_TR_ENCR, c->encr, (int16_t)c->encr_bits);
	if (c->integ != 0)
		add_tr(p, IKE_TR_INTEG, c->integ, IKE_KEY_LEN_NONE);
	add_tr(p, IKE_TR_PRF, c->prf, IKE_KEY_LEN_NONE);
	add_tr(p, IKE_TR_DH, c->dh, IKE_KEY_LEN_NONE);
}

static void
esp_head(struct ike_proposal *p, uint8_t num, uint32_t spi)
{
	memset(p, 0, sizeof(*p));
	p->num = num;
	p->proto = IKE_PROTO_ESP;
	p->spi_len = 4;
	put32(p->spi, spi);
}

void
ike_esp_prop_build(const struct ike_prop_cfg *e, uint8_t num, uint32_t spi, bool pfs,
		   struct ike_proposal *p)
{
	esp_head(p, num, spi);
	cfg_transforms(e, false, pfs, p);
	if (e->esn & IKE_PROP_ESN_YES)
		add_tr(p, IKE_TR_ESN, IKE_ESN_YES, IKE_KEY_LEN_NONE);
	if (!(e->esn & IKE_PROP_ESN_YES) || e->esn & IKE_PROP_ESN_NO)
		add_tr(p, IKE_TR_ESN, IKE_ESN_NO, IKE_KEY_LEN_NONE);
}

void
ike_esp_chosen_build(const struct ike_prop_esp *c, uint8_t num, uint32_t spi,
		     struct ike_proposal *p)
{
	esp_head(p, num, spi);
	add_tr(p, IKE_TR_ENCR, c->encr, (int16_t)c->encr_bits);
	if (c->integ != 0)
		add_tr(p, IKE_TR_INTEG, c->integ, IKE_KEY_LEN_NONE);
	if (c->dh != 0)
		add_tr(p, IKE_TR_DH, c->dh, IKE_KEY_LEN_NONE);
	add_tr(p, IKE_TR_ESN, c->esn ? IKE_ESN_YES : IKE_ESN_NO, IKE_KEY_LEN_NONE);
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
 * The first of ours (in our order) that p offers too, but prefer if it is
 * one of both (the group of a KE payload: saves an INVALID_KE_PAYLOAD
 * round); 0 if none.  Transform ID 0 is NONE and never chosen.
 */
static uint16_t
pick_id(const struct ike_proposal *p, uint8_t type, const uint16_t *ours, unsigned n,
	uint16_t prefer)
{
	uint16_t found = 0;

	for (unsigned i = 0; i < n; i++) {
		if (ours[i] == 0 || !tr_has(p, type, ours[i], IKE_KEY_LEN_NONE))
			continue;
		if (found == 0)
			found = ours[i];
		if (ours[i] == prefer)
			return prefer;
	}
	return found;
}

static bool
pick_encr(const struct ike_proposal *p, const struct ike_prop_cfg *e, struct ike_encr *out)
{
	for (unsigned i = 0; i < e->n_encr; i++) {
		if (tr_has(p, IKE_TR_ENCR, e->encr[i].id, (int16_t)e->encr[i].bits)) {
			*out = e->encr[i];
			return true;
		}
	}
	return false;
}

/*
 * Integrity for e's choice: with an AEAD (e has no integ) p must offer none
 * but NONE (RFC 7296 3.3.3); else one of ours.  *integ 0 with an AEAD.
 */
static bool
pick_integ(const struct ike_proposal *p, const struct ike_prop_cfg *e, uint16_t *integ)
{
	if (e->n_integ == 0) {
		*integ = 0;
		return tr_absent_or(p, IKE_TR_INTEG, 0);
	}
	*integ = pick_id(p, IKE_TR_INTEG, e->integ, e->n_integ, 0);
	return *integ != 0;
}

/* One of our proposal e in p; false if p lacks one kind of ours. */
static bool
ike_match(const struct ike_proposal *p, const struct ike_prop_cfg *e, uint16_t ke_group,
	  struct ike_prop_ike *out)
{
	struct ike_encr enc;

	if (!pick_encr(p, e, &enc) || !pick_integ(p, e, &out->integ))
		return false;
	out->encr = enc.id;
	out->encr_bits = enc.bits;
	out->prf = pick_id(p, IKE_TR_PRF, e->prf, e->n_prf, 0);
	out->dh = pick_id(p, IKE_TR_DH, e->dh, e->n_dh, ke_group);
	return out->prf != 0 && out->dh != 0;
}

/*
 * The responder's choice (2.7): the first of the initiator's proposals that
 * one of ours matches; within it, ours in order, but one whose group is
 * that of the KE payload first.  *num is the initiator's proposal number.
 */
int
ike_pick_ike(const struct ike_conn_cfg *cfg, const struct ike_proposal *p, unsigned n,
	     uint16_t ke_group, struct ike_prop_ike *out, uint8_t *num)
{
	const unsigned mask = 1u << IKE_TR_ENCR | 1u << IKE_TR_PRF | 1u << IKE_TR_INTEG |
			      1u << IKE_TR_DH;

	for (unsigned i = 0; i < n; i++) {
		struct ike_prop_ike c;
		int found = -1;

		if (p[i].proto != IKE_PROTO_IKE || !tr_types_within(&p[i], mask))
			continue;
		for (unsigned j = 0; j < cfg->n_ike; j++) {
			if (!ike_match(&p[i], &cfg->ike[j], ke_group, &c))
				continue;
			if (found < 0 || c.dh == ke_group) {
				found = (int)j;
				*out = c;
			}
			if (c.dh == ke_group)
				break;
		}
		if (found >= 0) {
			*num = p[i].num;
			return 0;
		}
	}
	return -ENOENT;
}

/*
 * Initiator: the responder's answer got must be our proposal e with one
 * transform of each kind, each one we offered, nothing else; into *out.
 */
bool
ike_prop_check_ike(const struct ike_prop_cfg *e, const struct ike_proposal *got,
		   struct ike_prop_ike *out)
{
	struct ike_proposal want;

	if (got->proto != IKE_PROTO_IKE || !ike_match(got, e, 0, out))
		return false;
	ike_prop_chosen_build(out, got->num, &want);
	return ike_prop_same(got, &want);
}

/*
 * The ESN transform of p that e accepts, in p's order (absent: no ESN, RFC
 * 7296 3.3.3 wants it, charon always sends one); false if none.
 */
static bool
pick_esn(const struct ike_proposal *p, uint8_t mask, uint8_t *esn)
{
	mask = mask ? mask : IKE_PROP_ESN_NO;
	*esn = 0;
	if (!tr_present(p, IKE_TR_ESN))
		return mask & IKE_PROP_ESN_NO;
	for (unsigned i = 0; i < p->n_tr; i++) {
		const struct ike_transform *t = &p->tr[i];

		if (t->type != IKE_TR_ESN || t->key_len != IKE_KEY_LEN_NONE)
			continue;
		if (t->id == IKE_ESN_NO && mask & IKE_PROP_ESN_NO)
			return true;
		if (t->id == IKE_ESN_YES && mask & IKE_PROP_ESN_YES)
			return *esn = 1, true;
	}
	return false;
}

/*
 * One of our ESP proposal e in p.  pfs: a CREATE_CHILD_SA, where e's groups
 * (if any) must be offered, the KE payload's (ke_group) preferred; in
 * IKE_AUTH, and where e has none, p may offer no group but NONE.
 */
static bool
esp_match(const struct ike_proposal *p, const struct ike_prop_cfg *e, bool pfs,
	  uint16_t ke_group, struct ike_prop_esp *out)
{
	struct ike_encr enc;

	if (!pick_encr(p, e, &enc) || !pick_integ(p, e, &out->integ) ||
	    !pick_esn(p, e->esn, &out->esn))
		return false;
	out->encr = enc.id;
	out->encr_bits = enc.bits;
	out->dh = 0;
	if (!pfs || e->n_dh == 0)
		return tr_absent_or(p, IKE_TR_DH, 0);
	out->dh = pick_id(p, IKE_TR_DH, e->dh, e->n_dh, ke_group);
	return out->dh != 0;
}

int
ike_pick_esp(const struct ike_conn_cfg *cfg, const struct ike_proposal *p, unsigned n,
	     bool pfs, uint16_t ke_group, struct ike_prop_esp *out, uint32_t *spi_out,
	     uint8_t *num)
{
	const unsigned mask = 1u << IKE_TR_ENCR | 1u << IKE_TR_INTEG | 1u << IKE_TR_ESN |
			      1u << IKE_TR_DH;

	for (unsigned i = 0; i < n; i++) {
		if (p[i].proto != IKE_PROTO_ESP || p[i].spi_len != 4 ||
		    !tr_types_within(&p[i], mask))
			continue;
		for (unsigned j = 0; j < cfg->n_esp; j++) {
			if (!esp_match(&p[i], &cfg->esp[j], pfs, ke_group, out))
				continue;
			*spi_out = get32(p[i].spi);
			*num = p[i].num;
			return 0;
		}
	}
	return -ENOENT;
}

/* Initiator: as ike_prop_check_ike(), for an ESP answer (SPI not checked). */
bool
ike_prop_check_esp(const struct ike_prop_cfg *e, const struct ike_proposal *got, bool pfs,
		   struct ike_prop_esp *out)
{
	struct ike_proposal want;

	if (got->proto != IKE_PROTO_ESP || got->spi_len != 4 ||
	    !esp_match(got, e, pfs, 0, out))
		return false;
	ike_esp_chosen_build(out, got->num, get32(got->spi), &want);
	return ike_prop_same(got, &want);
}

/* Whether one of the n proposals e has group. */
bool
ike_cfg_has_group(const struct ike_prop_cfg *e, unsigned n, uint16_t group)
{
	for (unsigned i = 0; i < n; i++)
		for (unsigned j = 0; j < e[i].n_dh; j++)
			if (e[i].dh[j] == group && group != 0)
				return true;
	return false;
}

/* Whether one of the n proposals e has every algorithm of c. */
bool
ike_prop_offered(const struct ike_prop_cfg *e, unsigned n, const struct ike_prop_ike *c)
{
	struct ike_proposal p;
	struct ike_prop_ike got;

	ike_prop_chosen_build(c, 1, &p);
	for (unsigned i = 0; i < n; i++)
		if (ike_match(&p, &e[i], c->dh, &got) && memcmp(&got, c, sizeof(got)) == 0)
			return true;
	return false;
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

/* ---- selector sets (several prefixes per side) --------------------------- */

void
ike_cfg_ts(const struct ike_conn_cfg *c, bool local, struct ts_set *out)
{
	unsigned more = local ? c->n_ts_local_more : c->n_ts_remote_more;

	out->n = 0;
	out->p[out->n++] = local ? c->ts_local : c->ts_remote;
	for (unsigned i = 0; i < more && out->n < IKE_TS_MAX; i++)
		out->p[out->n++] = local ? c->ts_local_more[i] : c->ts_remote_more[i];
}

bool
ike_ts_narrow_set(const struct ike_ts *ts, unsigned n, const struct ts_set *ours,
		  struct ts_set *out)
{
	out->n = 0;
	for (unsigned i = 0; i < n; i++) {
		for (unsigned j = 0; j < ours->n && out->n < IKE_TS_MAX; j++) {
			struct ike_prefix x;
			bool dup = false;

			if (!ike_ts_narrow(&ts[i], 1, &ours->p[j], &x))
				continue;
			for (unsigned k = 0; k < out->n; k++)
				dup |= memcmp(&out->p[k], &x, sizeof(x)) == 0;
			if (!dup)
				out->p[out->n++] = x;
		}
	}
	return out->n != 0;
}

unsigned
ike_ts_from_set(const struct ts_set *set, struct ike_ts *ts)
{
	for (unsigned i = 0; i < set->n; i++)
		ike_ts_from_prefix(&set->p[i], &ts[i]);
	return set->n;
}

bool
ike_set_within(const struct ts_set *a, const struct ts_set *b)
{
	for (unsigned i = 0; i < a->n; i++) {
		bool in = false;

		for (unsigned j = 0; j < b->n && !in; j++)
			in = ike_prefix_within(&a->p[i], &b->p[j]);
		if (!in)
			return false;
	}
	return a->n != 0;
}

/* ---- names: strongSwan's proposal keywords, for show ike and show tunnels ---- */

/* The keyword of an encryption algorithm with its key length; NULL if not ours. */
static const char *
encr_word(uint16_t id, uint16_t bits)
{
	if (id == IKE_ENCR_CHACHA20_POLY1305)
		return "chacha20poly1305";
	if (id == IKE_ENCR_AES_GCM_16)
		return bits == 256 ? "aes256gcm16" : bits == 128 ? "aes128gcm16" : NULL;
	if (id == IKE_ENCR_AES_CBC)
		return bits == 256 ? "aes256" : bits == 128 ? "aes128" : NULL;
	return NULL;
}

static const char *
integ_word(uint16_t id)
{
	switch (id) {
	case IKE_INTEG_HMAC_SHA1_96: return "sha1";
	case IKE_INTEG_HMAC_SHA2_256_128: return "sha256";
	case IKE_INTEG_HMAC_SHA2_384_192: return "sha384";
	case IKE_INTEG_HMAC_SHA2_512_256: return "sha512";
	default: return NULL;
	}
}

static const char *
prf_word(uint16_t id)
{
	switch (id) {
	case IKE_PRF_HMAC_SHA2_256: return "prfsha256";
	case IKE_PRF_HMAC_SHA2_384: return "prfsha384";
	case IKE_PRF_HMAC_SHA2_512: return "prfsha512";
	default: return NULL;
	}
}

static const char *
dh_word(uint16_t id)
{
	switch (id) {
	case IKE_DH_MODP2048: return "modp2048";
	case IKE_DH_ECP256: return "ecp256";
	case IKE_DH_ECP384: return "ecp384";
	case IKE_DH_CURVE25519: return "x25519";
	default: return NULL;
	}
}

const char *
ike_alg_word(enum ike_alg_kind kind, uint16_t id, uint16_t bits)
{
	switch (kind) {
	case IKE_ALG_ENCR: return encr_word(id, bits);
	case IKE_ALG_INTEG: return integ_word(id);
	case IKE_ALG_PRF: return prf_word(id);
	case IKE_ALG_DH: return dh_word(id);
	}
	return NULL;
}

/* Appends "-WORD" (or "-KINDID" for an algorithm without one) to buf at *n. */
static void
append_word(char *buf, size_t len, size_t *n, const char *word, const char *kind, uint16_t id)
{
	int w;

	if (*n >= len)
		return;
	w = word ? snprintf(buf + *n, len - *n, "%s%s", *n ? "-" : "", word) :
		   snprintf(buf + *n, len - *n, "%s%s%u", *n ? "-" : "", kind, id);
	*n += w > 0 ? (size_t)w : 0;
}

size_t
ike_proposal_text(char *buf, size_t len, const struct ike_alg_set *a)
{
	size_t n = 0;

	if (len > 0)
		buf[0] = '\0';
	if (a->encr != 0)
		append_word(buf, len, &n, encr_word(a->encr, a->encr_bits), "encr", a->encr);
	if (a->integ != 0)
		append_word(buf, len, &n, integ_word(a->integ), "integ", a->integ);
	if (a->prf != 0)
		append_word(buf, len, &n, prf_word(a->prf), "prf", a->prf);
	if (a->dh != 0)
		append_word(buf, len, &n, dh_word(a->dh), "dh", a->dh);
	if (a->esn)
		append_word(buf, len, &n, "esn", "", 0);
	return n;
}
