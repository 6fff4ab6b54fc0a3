/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ike_frag.c - IKE fragmentation (RFC 7383), so that an IKE_AUTH carrying a
 * certificate chain crosses a path whose MTU IP fragments would not (many
 * NATs and firewalls drop those).
 *
 * Offered: N(FRAGMENTATION_SUPPORTED) in IKE_SA_INIT, both roles (the
 * responder only when the initiator sent it), unless the connection says
 * no_fragmentation.  Used: when both offered it, an encrypted message
 * (IKE_AUTH and later, never IKE_SA_INIT: 2.5) whose IP datagram would pass
 * the connection's fragment_size goes as Encrypted Fragment (SKF) payloads,
 * each with its own IV and ICV under the SA's SK keys; fragment 1's Next
 * Payload is the inner chain's first, the others' 0.  The fragments are
 * stored as sent, and a retransmission sends them all again.
 *
 * Received: every fragment is authenticated before it is kept; one request
 * and one response per SA are in reassembly (strongSwan's task manager keeps
 * one per direction too: a big request of the peer's crossing the answer to
 * a big one of ours must not let each other go), each of at most
 * IKE_FRAG_MAX fragments and IKE_FRAG_BYTES_MAX bytes, let go when a newer
 * message's fragment comes or after IKE_FRAG_TIMEOUT_MS.  Every fragment dropped is counted under its
 * reason (ike_stats.frag_drop), never a crash.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ike_int.h"

#define FRAG_SIZE_DEFAULT	1280	/* strongSwan's charon.fragment_size */
#define UDP_HDR_LEN		8
#define NON_ESP_MARKER_LEN	4	/* IKE on port 4500 (RFC 3948 2.2) */

static const char *const drop_names[] = {
#define IKE_FRAG_NAME(e, s) s,
	IKE_FRAG_DROP_LIST(IKE_FRAG_NAME)
#undef IKE_FRAG_NAME
};

const char *
ike_frag_drop_name(enum ike_frag_drop d)
{
	return (unsigned)d < IKE_FRAG_DROP_N ? drop_names[d] : "?";
}

static int
frag_drop(struct ike_ctx *ctx, const struct ike_sa *sa, enum ike_frag_drop d, uint64_t n,
	  const char *why)
{
	ctx->stats.frag_drop[d] += n;
	ike_log(ctx, sa, "IKE fragment dropped (%s): %s", drop_names[d], why);
	return -EBADMSG;
}

/* ---- IKE_SA_INIT -------------------------------------------------------- */

void
ike_frag_init_put(const struct ike_sa *sa, struct ike_buf *b)
{
	if (sa->conn->cfg.no_fragmentation || (!sa->initiator && !sa->frag_peer))
		return;
	ike_put_notify(b, IKE_N_FRAGMENTATION_SUPPORTED, NULL, 0);
}

void
ike_frag_init_get(struct ike_sa *sa, const struct view *v)
{
	struct ike_notify nt;
	unsigned from = 0;

	sa->frag_peer = ike_find_notify(v, IKE_N_FRAGMENTATION_SUPPORTED, &from, &nt);
}

static bool
frag_on(const struct ike_sa *sa)
{
	return sa->frag_peer && !sa->conn->cfg.no_fragmentation;
}

/* ---- sending ------------------------------------------------------------ */

static size_t
frag_size(const struct ike_sa *sa)
{
	return sa->conn->cfg.fragment_size ? sa->conn->cfg.fragment_size : FRAG_SIZE_DEFAULT;
}

/* What the IP datagram adds to an IKE message on this SA's path. */
static size_t
ip_overhead(const struct ike_sa *sa)
{
	return (sa->remote.family == AF_INET ? 20 : 40) + UDP_HDR_LEN +
	       (sa->encap ? NON_ESP_MARKER_LEN : 0);
}

bool
ike_frag_wanted(const struct ike_sa *sa, const struct ike_hdr *h, size_t len)
{
	return frag_on(sa) && h->exchange != IKE_SA_INIT && len + ip_overhead(sa) > frag_size(sa);
}

/* The inner bytes one fragment carries (its padded ciphertext fills the rest); 0: none fit. */
static size_t
frag_room(const struct ike_sa *sa)
{
	const size_t block = sa->prop.integ == 0 ? 1 : IKE_CBC_IV_LEN;
	const size_t fixed = ip_overhead(sa) + IKE_HDR_LEN + IKE_GEN_HDR_LEN + IKE_SKF_HDR_LEN +
			     ike_sk_iv_len(sa) + ike_sk_icv_len(sa);
	size_t ct;

	if (frag_size(sa) <= fixed + block)
		return 0;
	ct = (frag_size(sa) - fixed) / block * block;
	return ct - 1;		/* the Pad Length byte */
}

/* Fragment n of total, data its share of the inner chain, into out. */
static int
seal_one(struct ike_sa *sa, const struct ike_hdr *h, uint8_t first, uint16_t n, uint16_t total,
	 const uint8_t *data, size_t dlen, uint8_t *out, size_t cap, size_t *len)
{
	const size_t block = sa->prop.integ == 0 ? 1 : IKE_CBC_IV_LEN;
	const size_t pad = (block - (dlen + 1) % block) % block;
	const size_t plen = dlen + pad + 1;
	uint8_t iv[IKE_CBC_IV_LEN];
	struct ike_buf b;
	uint8_t *ct;
	size_t skf;
	int rc;

	rc = ike_sk_iv(sa, iv);
	if (rc != 0)
		return rc;
	ike_buf_init(&b, out, cap);
	ike_build_hdr(&b, h);
	skf = ike_sk_begin(&b, IKE_PL_SKF, n == 1 ? first : IKE_PL_NONE);
	ike_put16(&b, n);
	ike_put16(&b, total);
	ike_put_bytes(&b, iv, ike_sk_iv_len(sa));
	ct = ike_reserve(&b, plen + ike_sk_icv_len(sa));
	ike_pl_end(&b, skf);
	rc = ike_finish(&b);
	if (rc != 0)
		return rc;
	memcpy(ct, data, dlen);
	memset(ct + dlen, 0, pad);
	ct[dlen + pad] = (uint8_t)pad;
	/* Associated data: all up to the IV, Fragment Number and Total included (2.5). */
	rc = ike_sk_seal(sa, iv, out, skf + IKE_GEN_HDR_LEN + IKE_SKF_HDR_LEN, ct, plen);
	*len = b.len;
	return rc;
}

/* The chain in as fragments into out, each after its length: -EMSGSIZE if too many. */
int
ike_frag_seal(struct ike_sa *sa, const struct ike_hdr *h, const struct ike_buf *in,
	      uint8_t *out, size_t cap, size_t *len)
{
	const size_t room = frag_room(sa);
	size_t off = 0, total;

	if (room == 0)
		return -EMSGSIZE;
	total = (in->len + room - 1) / room;
	if (total == 0 || total > IKE_FRAG_MAX)
		return -EMSGSIZE;
	for (size_t n = 1, done = 0; n <= total; n++) {
		size_t dlen = in->len - done < room ? in->len - done : room, flen;
		int rc;

		if (cap - off < 2)
			return -ENOSPC;
		rc = seal_one(sa, h, in->first, (uint16_t)n, (uint16_t)total, in->p + done, dlen,
			      out + off + 2, cap - off - 2, &flen);
		if (rc != 0)
			return rc;
		out[off] = (uint8_t)(flen >> 8);
		out[off + 1] = (uint8_t)flen;
		off += 2 + flen;
		done += dlen;
	}
	*len = off;
	return 0;
}

void
ike_frag_send(struct ike_ctx *ctx, struct ike_sa *sa, const struct ike_addr *local,
	      const struct ike_addr *remote, const uint8_t *m, size_t len)
{
	size_t off = 0;

	while (len - off >= 2) {
		size_t flen = (size_t)m[off] << 8 | m[off + 1];

		if (flen > len - off - 2)
			break;		/* ours: cannot happen */
		ctx->stats.tx++;
		ctx->stats.frag_tx++;
		sa->tx++;
		ctx->ops.send(ctx->opaque, local, remote, m + off + 2, flen);
		off += 2 + flen;
	}
}

/* ---- receiving ---------------------------------------------------------- */

static void
frx_reset(struct frag_rx *f)
{
	for (unsigned i = 0; i < IKE_FRAG_MAX; i++) {
		if (f->part[i] == NULL)
			continue;
		explicit_bzero(f->part[i], f->part_len[i]);
		free(f->part[i]);
	}
	memset(f, 0, sizeof(*f));
}

void
ike_frag_reset(struct ike_sa *sa)
{
	frx_reset(&sa->frx[0]);
	frx_reset(&sa->frx[1]);
}

void
ike_frag_expire(struct ike_ctx *ctx, struct ike_sa *sa, uint64_t now)
{
	for (unsigned i = 0; i < 2; i++) {
		struct frag_rx *f = &sa->frx[i];

		if (!f->active || now < f->start_ms + IKE_FRAG_TIMEOUT_MS)
			continue;
		frag_drop(ctx, sa, IKE_FRAG_TIMEOUT, f->have, "message incomplete in time");
		frx_reset(f);
	}
}

/*
 * The SKF payload skf of msg checked and decrypted into *part (malloc'd,
 * *dlen bytes): 0, or a counted drop.  Nothing of a fragment is believed,
 * nor kept, before its ICV verifies.
 */
static int
frag_open(struct ike_ctx *ctx, struct ike_sa *sa, const uint8_t *msg, const struct ike_pl *skf,
	  struct ike_skf *s, uint8_t **part, size_t *dlen)
{
	char err[ERR_LEN];
	int rc;

	if (!frag_on(sa))
		return frag_drop(ctx, sa, IKE_FRAG_NOT_NEGOTIATED, 1, "skf: not negotiated");
	if (ike_skf_parse(skf, UINT16_MAX, s, err, sizeof(err)) != 0)
		return frag_drop(ctx, sa, IKE_FRAG_MALFORMED, 1, err);
	*part = malloc(s->len ? s->len : 1);
	if (*part == NULL)
		return -ENOMEM;
	rc = ike_sk_open(sa, msg, (size_t)(s->data - msg), s->data, s->len, *part, dlen);
	if (rc != 0) {
		free(*part);
		*part = NULL;
		return frag_drop(ctx, sa, rc == -EBADMSG ? IKE_FRAG_ICV_FAIL : IKE_FRAG_MALFORMED,
				 1, rc == -EBADMSG ? "skf: ICV does not verify" :
				 "skf: shorter than IV and ICV, or bad padding");
	}
	ctx->stats.frag_rx++;
	if (s->total > IKE_FRAG_MAX) {
		explicit_bzero(*part, *dlen);
		free(*part);
		*part = NULL;
		snprintf(err, sizeof(err), "skf.total_fragments: %u, we take %d", s->total,
			 IKE_FRAG_MAX);
		return frag_drop(ctx, sa, IKE_FRAG_TOO_BIG, 1, err);
	}
	return 0;
}

/* Whether part (fragment s) may join the message in reassembly: else counted. */
static int
frag_admit(struct ike_ctx *ctx, struct ike_sa *sa, struct frag_rx *f, const struct ike_hdr *h,
	   const struct ike_skf *s, size_t dlen, uint64_t now)
{
	/* The caller passes only the message ID it waits for: another one is newer. */
	if (f->active && f->msg_id != h->msg_id) {
		frag_drop(ctx, sa, IKE_FRAG_SUPERSEDED, f->have, "a newer message's fragment");
		frx_reset(f);
	}
	if (!f->active) {
		f->active = true;
		f->msg_id = h->msg_id;
		f->total = s->total;
		f->start_ms = now;
	}
	if (s->total != f->total)
		return frag_drop(ctx, sa, IKE_FRAG_TOTAL_CHANGED, 1, "skf.total_fragments: "
				 "not that of the message's other fragments");
	if (f->part[s->number - 1] != NULL)
		return frag_drop(ctx, sa, IKE_FRAG_DUPLICATE, 1, "skf.fragment_number: in already");
	if (f->bytes + dlen > IKE_FRAG_BYTES_MAX) {
		frag_drop(ctx, sa, IKE_FRAG_TOO_BIG, f->have + 1, "message over 64 KiB: let go");
		frx_reset(f);
		return -EMSGSIZE;
	}
	return 0;
}

/* The fragments in order, as one inner chain. */
static int
frag_join(struct ike_ctx *ctx, struct frag_rx *f, uint8_t **plain, size_t *plen, uint8_t *first)
{
	size_t off = 0;

	*plain = malloc(f->bytes ? f->bytes : 1);
	if (*plain == NULL) {
		frx_reset(f);
		return -ENOMEM;
	}
	for (unsigned i = 0; i < f->total; i++) {
		memcpy(*plain + off, f->part[i], f->part_len[i]);
		off += f->part_len[i];
	}
	*plen = off;
	*first = f->first;
	ctx->stats.frag_reassembled++;
	frx_reset(f);
	return 0;
}

/*
 * A fragment of the message the SA waits for (the peer's next request or
 * the answer to ours): 0 with the whole inner chain in *plain (malloc'd,
 * *plen bytes) once every fragment is in, 1 while some are missing, or a
 * negative errno (dropped, counted).
 */
int
ike_frag_input(struct ike_ctx *ctx, struct ike_sa *sa, const struct ike_hdr *h,
	       const uint8_t *msg, const struct ike_pl *skf, uint64_t now, uint8_t **plain,
	       size_t *plen, uint8_t *first)
{
	struct frag_rx *f = &sa->frx[(h->flags & IKE_F_RESPONSE) ? 1 : 0];
	struct ike_skf s;
	uint8_t *part;
	size_t dlen;
	int rc;

	rc = frag_open(ctx, sa, msg, skf, &s, &part, &dlen);
	if (rc != 0)
		return rc;
	rc = frag_admit(ctx, sa, f, h, &s, dlen, now);
	if (rc != 0) {
		explicit_bzero(part, dlen);
		free(part);
		return rc;
	}
	f->part[s.number - 1] = part;
	f->part_len[s.number - 1] = (uint16_t)dlen;
	f->bytes += dlen;
	f->have++;
	if (s.number == 1)
		f->first = skf->inner_first;
	if (f->have < f->total)
		return 1;
	return frag_join(ctx, f, plain, plen, first);
}

/*
 * A fragment of the peer's request that we answered already: authenticated,
 * then *number says which (1: the response goes again, 2.6.1), the others
 * counted late.  0, or a negative errno (dropped, counted).
 */
int
ike_frag_resent(struct ike_ctx *ctx, struct ike_sa *sa, const struct ike_hdr *h,
		const uint8_t *msg, size_t len, uint16_t *number)
{
	const struct ike_pl *skf;
	char err[ERR_LEN];
	struct view outer;
	struct ike_skf s;
	uint8_t *part;
	size_t dlen;
	int rc;

	rc = ike_view_parse(h->next, msg + IKE_HDR_LEN, len - IKE_HDR_LEN, &outer, err,
			    sizeof(err));
	if (rc != 0)
		return frag_drop(ctx, sa, IKE_FRAG_MALFORMED, 1, err);
	skf = &outer.pl[outer.n - 1];	/* n >= 1: the first is SKF */
	if (skf->type != IKE_PL_SKF)
		return frag_drop(ctx, sa, IKE_FRAG_MALFORMED, 1, "skf: not the last payload");
	rc = frag_open(ctx, sa, msg, skf, &s, &part, &dlen);
	if (rc != 0)
		return rc;
	explicit_bzero(part, dlen);
	free(part);
	*number = s.number;
	if (s.number != 1)
		frag_drop(ctx, sa, IKE_FRAG_LATE, 1, "of a request answered already");
	return 0;
}
