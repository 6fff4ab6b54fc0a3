/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ike_transport.c - the IKE engine's transport, below the exchanges (as
 * OpenBSD iked's ikev2_msg.c is): what every exchange uses to read and write
 * messages, and nothing that decides which exchange comes.
 *
 * - the small helpers: log lines, refused messages counted (ike_drop), copies;
 * - payload chains: parsed with every Notify checked, payloads and Notifies
 *   found, Notifies built;
 * - sending: a datagram to the owner (ike_xmit), IKE's move to port 4500;
 * - the SK payload: a message sealed (ike_seal_msg) and opened (ike_open_msg);
 * - the two message-ID streams (RFC 7296 2.3), each with a window of one:
 *   our request stored and sent (ike_request_start), sent again with backoff,
 *   and let go once answered; our response to the peer's request stored and
 *   sent again when the request comes again (ike_respond_again);
 * - fragments (RFC 7383): a message too big for the path sealed as
 *   fragments, and fragments put together again.
 *
 * It calls no exchange, no SA table function and no dispatcher: those call it.
 */
#define _GNU_SOURCE		/* explicit_bzero, vasprintf */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ike_int.h"

#define FRAG_SIZE_DEFAULT	1280	/* strongSwan's charon.fragment_size */
#define UDP_HDR_LEN		8
#define NON_ESP_MARKER_LEN	4	/* IKE on port 4500 (RFC 3948 2.2) */

/* ---- small helpers ------------------------------------------------------ */

static const char *const reject_names[] = {
#define IKE_REJ_NAME(e, s) s,
	IKE_REJECT_LIST(IKE_REJ_NAME)
#undef IKE_REJ_NAME
};

const char *
ike_reject_name(enum ike_reject r)
{
	return (unsigned)r < IKE_REJ_COUNT ? reject_names[r] : "?";
}

void __attribute__((format(printf, 3, 4)))
ike_log(struct ike_ctx *ctx, const struct ike_sa *sa, const char *fmt, ...)
{
	char buf[256];
	va_list ap;

	if (ctx->ops.log == NULL)
		return;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	ctx->ops.log(ctx->opaque, sa && sa->conn ? sa->conn->cfg.name : "-", buf);
}

/* Count a refused message and pass rc on. */
int
ike_drop(struct ike_ctx *ctx, const struct ike_sa *sa, enum ike_reject r, int rc, const char *err)
{
	ctx->stats.reject[r]++;
	ike_log(ctx, sa, "dropped (%s): %s", reject_names[r], err ? err : "");
	return rc;
}

void
ike_why(struct ike_sa *sa, const char *fmt, ...)
{
	char *why;
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vasprintf(&why, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	free(sa->why);
	sa->why = why;
}

/* Replace *dst with a copy of src: 0 or -ENOMEM (and *dst left empty). */
int
ike_store(uint8_t **dst, size_t *dlen, const uint8_t *src, size_t len)
{
	free(*dst);
	*dlen = 0;
	*dst = malloc(len);
	if (*dst == NULL)
		return -ENOMEM;
	memcpy(*dst, src, len);
	*dlen = len;
	return 0;
}

/* A random value that is not zero: SPIs, where zero means "none". */
int
ike_random_nonzero(uint8_t *p, size_t n)
{
	int rc;

	do {
		rc = ike_random(p, n);
	} while (rc == 0 && is_zero(p, n));
	return rc;
}

const char *
ike_notify_name(uint16_t type)
{
	switch (type) {
	case IKE_N_INVALID_SYNTAX: return "INVALID_SYNTAX";
	case IKE_N_NO_PROPOSAL_CHOSEN: return "NO_PROPOSAL_CHOSEN";
	case IKE_N_INVALID_KE_PAYLOAD: return "INVALID_KE_PAYLOAD";
	case IKE_N_AUTHENTICATION_FAILED: return "AUTHENTICATION_FAILED";
	case IKE_N_TS_UNACCEPTABLE: return "TS_UNACCEPTABLE";
	case IKE_N_NO_ADDITIONAL_SAS: return "NO_ADDITIONAL_SAS";
	case IKE_N_TEMPORARY_FAILURE: return "TEMPORARY_FAILURE";
	default: return "error";
	}
}

/* ---- payload chains ----------------------------------------------------- */

/* Parse a chain and every Notify in it, so that later lookups need no checks. */
int
ike_view_parse(uint8_t first, const uint8_t *p, size_t len, struct view *v, char *err, size_t elen)
{
	int rc = ike_chain_parse(first, p, len, v->pl, MAX_PL, &v->n, err, elen);

	for (unsigned i = 0; rc == 0 && i < v->n; i++) {
		struct ike_notify nt;

		if (v->pl[i].type == IKE_PL_NOTIFY)
			rc = ike_notify_parse(v->pl[i].body, v->pl[i].len, &nt, err, elen);
	}
	return rc;
}

const struct ike_pl *
ike_find_pl(const struct view *v, uint8_t type)
{
	for (unsigned i = 0; i < v->n; i++)
		if (v->pl[i].type == type)
			return &v->pl[i];
	return NULL;
}

/* The first Notify of type after index *from (start with 0); false if none. */
bool
ike_find_notify(const struct view *v, uint16_t type, unsigned *from, struct ike_notify *nt)
{
	char err[8];

	for (unsigned i = *from; i < v->n; i++) {
		if (v->pl[i].type != IKE_PL_NOTIFY)
			continue;
		ike_notify_parse(v->pl[i].body, v->pl[i].len, nt, err, sizeof(err));
		if (nt->type == type) {
			*from = i + 1;
			return true;
		}
	}
	return false;
}

/* The type of the first error Notify, 0 if none. */
uint16_t
ike_error_notify(const struct view *v)
{
	struct ike_notify nt;
	char err[8];

	for (unsigned i = 0; i < v->n; i++) {
		if (v->pl[i].type != IKE_PL_NOTIFY)
			continue;
		ike_notify_parse(v->pl[i].body, v->pl[i].len, &nt, err, sizeof(err));
		if (nt.type != 0 && nt.type <= IKE_N_ERROR_MAX)
			return nt.type;
	}
	return 0;
}

void
ike_put_notify(struct ike_buf *b, uint16_t type, const void *data, size_t len)
{
	struct ike_notify nt = { .type = type, .data = data, .data_len = len };

	ike_build_notify(b, &nt);
}

/* ---- sending ------------------------------------------------------------ */

void
ike_xmit(struct ike_ctx *ctx, struct ike_sa *sa, const uint8_t *m, size_t len)
{
	ike_keep_now(ctx, sa);
	ctx->stats.tx++;
	sa->tx++;
	ctx->ops.send(ctx->opaque, &sa->local, &sa->remote, m, len);
}

/* A stored message (our request, our response) to local, remote: frag says it is fragments. */
void
ike_xmit_stored(struct ike_ctx *ctx, struct ike_sa *sa, const struct ike_addr *local,
	    const struct ike_addr *remote, const uint8_t *m, size_t len, bool frag)
{
	ike_keep_now(ctx, sa);
	if (frag) {
		ike_frag_send(ctx, sa, local, remote, m, len);
		return;
	}
	ctx->stats.tx++;
	sa->tx++;
	ctx->ops.send(ctx->opaque, local, remote, m, len);
}

/*
 * From now on IKE on port 4500 both ends (2.23), and the CHILD_SA ESP in UDP;
 * ours is the conn's natt_port if it names one (the peer answers where a
 * request came from, as it would through a NAT).
 */
void
ike_encap_start(struct ike_ctx *ctx, struct ike_sa *sa)
{
	uint16_t mine = sa->conn->cfg.natt_port ? sa->conn->cfg.natt_port : NATT_PORT;

	if (!sa->encap)
		ike_log(ctx, sa, "NAT %s: IKE moves to port %u (ours %u), ESP in UDP",
		      sa->nat_local || sa->nat_remote ? "detected" : "forced", NATT_PORT, mine);
	sa->encap = true;
	sa->local.port = mine;
	sa->remote.port = NATT_PORT;
}

/*
 * An authenticated request that came to our port 4500: answer where it came
 * from and go on from there (2.23: the peer's NAT mapping is what reaches
 * it; the peer may have moved to 4500 first).  On port 500 nothing moves, and
 * once on 4500 an SA does not go back.
 */
void
ike_request_from(struct ike_ctx *ctx, struct ike_sa *sa, const struct ike_addr *local,
		 const struct ike_addr *remote)
{
	if (local->port != NATT_PORT)
		return;
	if (!sa->encap)
		ike_log(ctx, sa, "request on port %u: IKE moves there, ESP in UDP", NATT_PORT);
	sa->encap = true;
	sa->local = *local;
	sa->remote = *remote;
}

void
ike_hdr_for(const struct ike_sa *sa, struct ike_hdr *h, uint8_t exchange, bool response,
	uint32_t id)
{
	memset(h, 0, sizeof(*h));
	memcpy(h->spi_i, sa->spi_i, IKE_SPI_LEN);
	memcpy(h->spi_r, sa->spi_r, IKE_SPI_LEN);
	h->exchange = exchange;
	h->flags = (uint8_t)((sa->initiator ? IKE_F_INITIATOR : 0) |
			     (response ? IKE_F_RESPONSE : 0));
	h->msg_id = id;
}

/* ---- the SK payload ----------------------------------------------------- */

/* The SK payload's IV and ICV lengths under the negotiated cipher. */
size_t
ike_sk_iv_len(const struct ike_sa *sa)
{
	return sa->prop.integ == 0 ? IKE_GCM_IV_LEN : IKE_CBC_IV_LEN;
}

size_t
ike_sk_icv_len(const struct ike_sa *sa)
{
	return sa->prop.integ == 0 ? IKE_GCM_ICV_LEN : ike_integ_icv_len(sa->prop.integ);
}

/*
 * The IV: with GCM a counter (each direction has its own key, SK_ei or
 * SK_er, and only this side encrypts under this one); with CBC it must be
 * unpredictable (RFC 7296 3.14), so random.
 */
int
ike_sk_iv(struct ike_sa *sa, uint8_t *iv)
{
	if (sa->prop.integ != 0)
		return ike_random(iv, IKE_CBC_IV_LEN);
	for (unsigned i = 0; i < IKE_GCM_IV_LEN; i++)
		iv[i] = (uint8_t)(sa->iv_ctr >> (56 - 8 * i));
	sa->iv_ctr++;
	return 0;
}

/* Encrypts pt (plen bytes, padded) in place and appends the ICV. */
int
ike_sk_seal(const struct ike_sa *sa, const uint8_t *iv, const uint8_t *aad, size_t aad_len,
	uint8_t *pt, size_t plen)
{
	const uint8_t *ek = sa->initiator ? sa->keys.sk_ei : sa->keys.sk_er;
	const uint8_t *ak = sa->initiator ? sa->keys.sk_ai : sa->keys.sk_ar;

	if (sa->prop.integ == 0)
		return ike_aead_seal(ek, sa->keys.enc_len, iv, aad, aad_len, pt, plen, pt);
	return ike_cbc_seal(ek, sa->keys.enc_len, sa->prop.integ, ak, sa->keys.integ_len, iv,
			    aad, aad_len, pt, plen, pt);
}

/*
 * Decrypt data (an SK or SKF payload's IV, ciphertext and ICV; aad what
 * precedes it) into plain, unpadded: plen bytes.  -EMSGSIZE too short for
 * IV and ICV, -EBADMSG the ICV does not verify, -ERANGE the pad length
 * runs beyond the data.
 */
int
ike_sk_open(const struct ike_sa *sa, const uint8_t *aad, size_t aad_len, const uint8_t *data,
	    size_t len, uint8_t *plain, size_t *plen)
{
	const uint8_t *key = sa->initiator ? sa->keys.sk_er : sa->keys.sk_ei;
	const uint8_t *ak = sa->initiator ? sa->keys.sk_ar : sa->keys.sk_ai;
	const size_t ivl = ike_sk_iv_len(sa), icvl = ike_sk_icv_len(sa);
	int rc;

	if (len < ivl + icvl + 1)
		return -EMSGSIZE;
	if (sa->prop.integ == 0)
		rc = ike_aead_open(key, sa->keys.enc_len, data, aad, aad_len, data + ivl,
				   len - ivl, plain);
	else
		rc = ike_cbc_open(key, sa->keys.enc_len, sa->prop.integ, ak, sa->keys.integ_len,
				  data, aad, aad_len, data + ivl, len - ivl, plain);
	if (rc != 0)
		return -EBADMSG;
	return ike_sk_unpad(plain, len - ivl - icvl, plen) == 0 ? 0 : -ERANGE;
}

/*
 * A message of header h whose only payload is SK around the chain in, into
 * out.  GCM needs no padding; CBC pads to its block with zeros (3.14 lets
 * the sender choose the padding's bytes).  When it is too big for the path
 * and both ends do RFC 7383, out gets its fragments instead, and
 * sa->sealed_frag says so (the fragments, below).
 */
int
ike_seal_msg(struct ike_sa *sa, const struct ike_hdr *h, const struct ike_buf *in, uint8_t *out,
	 size_t cap, size_t *len)
{
	const size_t block = sa->prop.integ == 0 ? 1 : IKE_CBC_IV_LEN;
	const size_t pad = (block - (in->len + 1) % block) % block;
	size_t plen = in->len + pad + 1, sk;
	uint8_t iv[IKE_CBC_IV_LEN];
	struct ike_buf b;
	uint8_t *ct;
	int rc;

	if (in->overflow)
		return -ENOSPC;
	rc = ike_sk_iv(sa, iv);
	if (rc != 0)
		return rc;
	ike_buf_init(&b, out, cap);
	ike_build_hdr(&b, h);
	sk = ike_sk_begin(&b, IKE_PL_SK, in->first);
	ike_put_bytes(&b, iv, ike_sk_iv_len(sa));
	ct = ike_reserve(&b, plen + ike_sk_icv_len(sa));
	ike_pl_end(&b, sk);
	rc = ike_finish(&b);
	if (rc != 0)
		return rc;
	memcpy(ct, in->p, in->len);
	memset(ct + in->len, 0, pad);
	ct[in->len + pad] = (uint8_t)pad;
	rc = ike_sk_seal(sa, iv, out, sk + IKE_GEN_HDR_LEN, ct, plen);
	*len = b.len;
	sa->sealed_frag = false;
	if (rc == 0 && ike_frag_wanted(sa, h, b.len)) {
		rc = ike_frag_seal(sa, h, in, out, cap, len);
		sa->sealed_frag = rc == 0;
	}
	return rc;
}

/* The SK payload (the last of the chain) decrypted into plain (cap bytes, malloc'd). */
static int
open_sk(struct ike_ctx *ctx, struct ike_sa *sa, const uint8_t *msg, size_t len,
	const struct ike_pl *sk, uint8_t **plain, size_t *cap, size_t *plen)
{
	char err[ERR_LEN];
	int rc;

	*plain = malloc(len);
	if (*plain == NULL)
		return -ENOMEM;
	*cap = len;
	rc = ike_sk_open(sa, msg, (size_t)(sk->body - msg), sk->body, sk->len, *plain, plen);
	if (rc == -EMSGSIZE) {
		snprintf(err, sizeof(err), "sk.length: %u, at least %zu", sk->len,
			 ike_sk_iv_len(sa) + ike_sk_icv_len(sa) + 1);
		return ike_drop(ctx, sa, IKE_REJ_MALFORMED, -EBADMSG, err);
	}
	if (rc == -EBADMSG)
		return ike_drop(ctx, sa, IKE_REJ_ICV_FAIL, rc, "sk: ICV does not verify");
	if (rc != 0)
		return ike_drop(ctx, sa, IKE_REJ_MALFORMED, rc, "sk.pad_length: beyond the data");
	return 0;
}

/*
 * Decrypt the SK payload, or put the message together from its SKF
 * fragments (below), into *plain (*cap bytes, malloc'd: the caller
 * wipes and frees it) and parse what it holds.  0, or 1 for a fragment kept
 * while others are missing, or a negative errno (dropped, counted).
 */
int
ike_open_msg(struct ike_ctx *ctx, struct ike_sa *sa, const struct ike_hdr *h, const uint8_t *msg,
	     size_t len, uint64_t now, uint8_t **plain, size_t *cap, struct view *v)
{
	const struct ike_pl *sk;
	char err[ERR_LEN];
	struct view outer;
	uint8_t first;
	size_t plen;
	int rc;

	*plain = NULL;
	*cap = 0;
	rc = ike_view_parse(h->next, msg + IKE_HDR_LEN, len - IKE_HDR_LEN, &outer, err,
			    sizeof(err));
	if (rc != 0)
		return ike_drop(ctx, sa, rc == -ENOTSUP ? IKE_REJ_UNSUPPORTED : IKE_REJ_MALFORMED,
			      rc, err);
	sk = outer.n ? &outer.pl[outer.n - 1] : NULL;
	if (sk != NULL && sk->type == IKE_PL_SKF) {
		rc = ike_frag_input(ctx, sa, h, msg, sk, now, plain, &plen, &first);
		if (rc != 0)
			return rc;
		*cap = plen;
	} else {
		if (sk == NULL || sk->type != IKE_PL_SK)
			return ike_drop(ctx, sa, IKE_REJ_MALFORMED, -EBADMSG,
				      "sk: no Encrypted payload");
		first = sk->inner_first;
		rc = open_sk(ctx, sa, msg, len, sk, plain, cap, &plen);
		if (rc != 0)
			return rc;
	}
	rc = ike_view_parse(first, *plain, plen, v, err, sizeof(err));
	if (rc != 0)
		return ike_drop(ctx, sa, rc == -ENOTSUP ? IKE_REJ_UNSUPPORTED : IKE_REJ_MALFORMED,
			      rc, err);
	return 0;
}

void
ike_plain_free(uint8_t *plain, size_t cap)
{
	if (plain == NULL)
		return;
	explicit_bzero(plain, cap);
	free(plain);
}

/* ---- requests and responses --------------------------------------------- */

/* Send a new request and keep it for retransmission. */
int
ike_request_start(struct ike_ctx *ctx, struct ike_sa *sa, enum req_kind kind, uint32_t id,
	      const uint8_t *m, size_t len, uint64_t now)
{
	int rc = ike_store(&sa->req, &sa->req_len, m, len);

	if (rc != 0)
		return rc;
	sa->req_kind = kind;
	sa->req_kid = sa->ck;		/* the CHILD_SA its answer is about */
	sa->req_id = id;
	sa->next_req_id = id + 1;
	sa->tries = 1;
	sa->timeout_ms = sa->conn->cfg.retrans_ms;
	sa->next_tx_ms = now + sa->timeout_ms;
	sa->req_frag = kind != REQ_INIT && sa->sealed_frag;
	ike_xmit_stored(ctx, sa, &sa->local, &sa->remote, m, len, sa->req_frag);
	return 0;
}

/* Our request again, the same bytes, its timeout doubled (2.1): the timer's. */
void
ike_request_resend(struct ike_ctx *ctx, struct ike_sa *sa, uint64_t now)
{
	sa->tries++;
	sa->timeout_ms *= 2;
	sa->next_tx_ms = now + sa->timeout_ms;
	sa->retransmits++;
	ctx->stats.retransmits++;
	/* All its fragments again, the same bytes (RFC 7383 2.6.1). */
	ike_xmit_stored(ctx, sa, &sa->local, &sa->remote, sa->req, sa->req_len, sa->req_frag);
}

void
ike_request_done(struct ike_sa *sa)
{
	free(sa->req);
	sa->req = NULL;
	sa->req_len = 0;
	sa->req_kind = REQ_NONE;
}

/* Send the response to the peer's current request, kept for its retransmissions. */
int
ike_respond(struct ike_ctx *ctx, struct ike_sa *sa, const struct ike_hdr *req,
	const struct ike_buf *in)
{
	uint8_t out[MSG_MAX];
	struct ike_hdr h;
	size_t len;
	int rc;

	ike_hdr_for(sa, &h, req->exchange, true, req->msg_id);
	rc = ike_seal_msg(sa, &h, in, out, sizeof(out), &len);
	if (rc == 0)
		rc = ike_store(&sa->last_resp, &sa->last_resp_len, out, len);
	if (rc == 0) {
		sa->resp_frag = sa->sealed_frag;
		ike_xmit_stored(ctx, sa, &sa->local, &sa->remote, out, len, sa->resp_frag);
	}
	return rc;
}

/*
 * A fragment of the request we answered already (RFC 7383 2.6.1): fragment 1,
 * once authenticated, has the whole response sent again; the others nothing.
 */
static int
resent_fragment(struct ike_ctx *ctx, struct ike_sa *sa, const struct ike_addr *local,
		const struct ike_addr *remote, const struct ike_hdr *h, const uint8_t *msg,
		size_t len)
{
	uint16_t number;
	int rc = ike_frag_resent(ctx, sa, h, msg, len, &number);

	if (rc != 0 || number != 1)
		return rc;
	ctx->stats.resent_responses++;
	ike_xmit_stored(ctx, sa, local, remote, sa->last_resp, sa->last_resp_len, sa->resp_frag);
	return 0;
}

/*
 * The peer's last request again (its message ID one below the next we
 * expect): our answer again, to where the copy came from, which moves
 * nothing (2.11, 2.23); the same message ID with other bytes is refused.
 */
int
ike_respond_again(struct ike_ctx *ctx, struct ike_sa *sa, const struct ike_addr *local,
		  const struct ike_addr *remote, const struct ike_hdr *h, const uint8_t *msg,
		  size_t len)
{
	if (h->next == IKE_PL_SKF)
		return resent_fragment(ctx, sa, local, remote, h, msg, len);
	if (len != sa->last_req_len || memcmp(msg, sa->last_req, len) != 0)
		return ike_drop(ctx, sa, IKE_REJ_BAD_MSGID, -EBADMSG, "ike.message_id: "
			      "that of the last request, but the message differs");
	ctx->stats.resent_responses++;
	ike_xmit_stored(ctx, sa, local, remote, sa->last_resp, sa->last_resp_len, sa->resp_frag);
	return 0;
}

/* ---- fragments (RFC 7383) ----------------------------------------------- */

/*
 * IKE fragmentation (RFC 7383), so that an IKE_AUTH carrying a certificate
 * chain crosses a path whose MTU IP fragments would not (many NATs and
 * firewalls drop those).
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
 * message's fragment comes or after IKE_FRAG_TIMEOUT_MS.  Every fragment
 * dropped is counted under its reason (ike_stats.frag_drop), never a crash.
 */

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

/* ---- fragments: IKE_SA_INIT ---------------------------------------------- */

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

/* ---- fragments: sending -------------------------------------------------- */

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

/* ---- fragments: receiving ------------------------------------------------ */

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
