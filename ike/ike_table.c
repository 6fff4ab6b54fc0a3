/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ike_table.c - the IKE SA table (ike_types.h's ctx->sas, by_spi and
 * by_peer) and an SA's life in it: made (ike_sa_new), found by the SPIs of a
 * message (ike_sa_lookup) or by its peer's identity, its state set, its
 * CHILD_SAs taken down, and its end (ike_sa_end: the owner told, child
 * first, then the SA unlinked and wiped).  The last SAs that ended are
 * remembered by SPIs, so that what the peer still sends them is late, not
 * unknown (ike_sa_ended_lately).
 *
 * Below the exchanges and the dispatcher, above the transport: it calls
 * ike_transport.c (log lines, fragments let go), ike_cp.c (a lease let go)
 * and ike_keep.c (records), and nothing that calls it.
 */
#define _GNU_SOURCE		/* explicit_bzero */
#include <stdlib.h>
#include <string.h>

#include "ike_int.h"

/* ---- the table ---------------------------------------------------------- */

const char *
ike_state_name(enum ike_state s)
{
	static const char *const names[] = {
		[IKE_ST_INIT_SENT] = "init-sent", [IKE_ST_HALF_OPEN] = "half-open",
		[IKE_ST_AUTH_SENT] = "auth-sent", [IKE_ST_ESTABLISHED] = "established",
		[IKE_ST_DELETING] = "deleting", [IKE_ST_REKEYED] = "rekeyed",
	};

	return (unsigned)s < sizeof(names) / sizeof(names[0]) ? names[s] : "?";
}

struct ike_sa *
ike_sa_new(struct ike_ctx *ctx, struct conn *c, bool initiator, uint64_t now)
{
	struct ike_sa *sa = calloc(1, sizeof(*sa));

	if (sa == NULL)
		return NULL;
	ike_sa_set_conn(sa, c);
	sa->n_kids = 1;			/* kid0: IKE_AUTH's CHILD_SA */
	sa->initiator = initiator;
	sa->created_ms = now;
	sa->last_rx_ms = now;
	sa->next = ctx->sas;
	if (ctx->sas != NULL)
		ctx->sas->prev = sa;
	ctx->sas = sa;
	return sa;
}

void
ike_sa_set_conn(struct ike_sa *sa, struct conn *c)
{
	if (sa->conn != NULL) {
		if (sa->conn_prev != NULL)
			sa->conn_prev->conn_next = sa->conn_next;
		else
			sa->conn->sas = sa->conn_next;
		if (sa->conn_next != NULL)
			sa->conn_next->conn_prev = sa->conn_prev;
	}
	sa->conn = c;
	sa->conn_prev = NULL;
	sa->conn_next = c != NULL ? c->sas : NULL;
	if (c == NULL)
		return;
	if (c->sas != NULL)
		c->sas->conn_prev = sa;
	c->sas = sa;
}

/* The chain of SAs whose SPIi may be spi_i (ike_int.h's ctx->by_spi). */
struct ike_sa *
ike_sa_bucket(const struct ike_ctx *ctx, const uint8_t *spi_i)
{
	return ctx->by_spi[ike_hash(ctx->hash_key, spi_i, IKE_SPI_LEN) % IKE_SA_BUCKETS];
}

static size_t
peer_bucket(const struct ike_ctx *ctx, const struct ike_ident *id)
{
	uint8_t k[1 + IKE_IDENT_MAX];

	k[0] = id->type;
	memcpy(k + 1, id->data, id->len);
	return ike_hash(ctx->hash_key, k, 1u + id->len) % IKE_SA_BUCKETS;
}

struct ike_sa *
ike_sa_peer_bucket(const struct ike_ctx *ctx, const struct ike_ident *id)
{
	return ctx->by_peer[peer_bucket(ctx, id)];
}

void
ike_sa_peer_hash(struct ike_ctx *ctx, struct ike_sa *sa)
{
	struct ike_sa **b;

	if (sa->peer_hashed || sa->peer_id.len == 0)
		return;
	b = &ctx->by_peer[peer_bucket(ctx, &sa->peer_id)];
	sa->by_peer = *b;
	*b = sa;
	sa->peer_hashed = true;
}

/* sa's spi_i is set (once: ours drawn, or the peer's taken): messages find it by that. */
void
ike_sa_hash(struct ike_ctx *ctx, struct ike_sa *sa)
{
	struct ike_sa **b = &ctx->by_spi[ike_hash(ctx->hash_key, sa->spi_i, IKE_SPI_LEN) %
					 IKE_SA_BUCKETS];

	sa->by_spi = *b;
	*b = sa;
	sa->hashed = true;
}

/* The SA a message is for, or NULL with the reason: unknown SPIs, or our own role. */
struct ike_sa *
ike_sa_lookup(struct ike_ctx *ctx, const struct ike_hdr *h, enum ike_reject *why)
{
	bool from_initiator = h->flags & IKE_F_INITIATOR;

	*why = IKE_REJ_BAD_SPI;
	for (struct ike_sa *sa = ike_sa_bucket(ctx, h->spi_i); sa != NULL; sa = sa->by_spi) {
		ctx->probes++;
		if (memcmp(sa->spi_i, h->spi_i, IKE_SPI_LEN) != 0)
			continue;
		/* Our IKE_SA_INIT's answer brings the responder's SPI, or none (errors). */
		if (memcmp(sa->spi_r, h->spi_r, IKE_SPI_LEN) != 0 &&
		    !(sa->state == IKE_ST_INIT_SENT && h->exchange == IKE_SA_INIT))
			continue;
		if (sa->initiator == from_initiator) {
			*why = IKE_REJ_BAD_FLAGS;
			continue;
		}
		return sa;
	}
	return NULL;
}

/* Whether h is for one of the last IKE SAs that ended here. */
bool
ike_sa_ended_lately(const struct ike_ctx *ctx, const struct ike_hdr *h)
{
	static const uint8_t none[IKE_SPI_LEN];

	if (!memcmp(h->spi_i, none, IKE_SPI_LEN))
		return false;		/* (the ring's empty slots) */
	for (unsigned i = 0; i < IKE_ENDED_MAX; i++)
		if (!memcmp(ctx->ended[i].spi_i, h->spi_i, IKE_SPI_LEN) &&
		    !memcmp(ctx->ended[i].spi_r, h->spi_r, IKE_SPI_LEN))
			return true;
	return false;
}

/* ---- an SA's life -------------------------------------------------------- */

/* When a refused lifetime rekey is tried again. */
uint64_t
ike_rekey_retry_at(uint64_t now)
{
	uint16_t r = 0;

	(void)ike_random((uint8_t *)&r, sizeof(r));	/* failed: no jitter */
	return now + REKEY_RETRY_MS + r % (REKEY_JITTER_MS + 1);
}

void
ike_set_state(struct ike_ctx *ctx, struct ike_sa *sa, enum ike_state st)
{
	if (sa->state == IKE_ST_HALF_OPEN && st != IKE_ST_HALF_OPEN)
		ctx->half_open--;
	sa->state = st;
	ike_keep_mark(ctx, sa);
}

void
ike_child_down(struct ike_ctx *ctx, struct ike_sa *sa, struct child *c)
{
	if (!c->up)
		return;
	c->up = false;
	ctx->ops.child_down(ctx->opaque, KCFG(sa)->name, c->spi_in, c->spi_out,
			    c->tr.n > 0 ? &c->tr.p[0] : NULL);
}

void
ike_child_gone(struct ike_ctx *ctx, struct ike_sa *sa)
{
	ike_child_down(ctx, sa, &KID(sa)->child);
}

static void
sa_unlink(struct ike_ctx *ctx, struct ike_sa *sa)
{
	struct ike_ended *e = &ctx->ended[ctx->ended_next++ % IKE_ENDED_MAX];

	memcpy(e->spi_i, sa->spi_i, IKE_SPI_LEN);
	memcpy(e->spi_r, sa->spi_r, IKE_SPI_LEN);
	if (sa->hashed) {
		struct ike_sa **pp = &ctx->by_spi[ike_hash(ctx->hash_key, sa->spi_i,
							  IKE_SPI_LEN) % IKE_SA_BUCKETS];

		while (*pp != sa)
			pp = &(*pp)->by_spi;
		*pp = sa->by_spi;
	}
	if (sa->peer_hashed) {
		struct ike_sa **pp = &ctx->by_peer[peer_bucket(ctx, &sa->peer_id)];

		while (*pp != sa)
			pp = &(*pp)->by_peer;
		*pp = sa->by_peer;
	}
	if (sa->prev != NULL)
		sa->prev->next = sa->next;
	else
		ctx->sas = sa->next;
	if (sa->next != NULL)
		sa->next->prev = sa->prev;
	ike_sa_set_conn(sa, NULL);
}

static void
sa_free(struct ike_sa *sa)
{
	free(sa->why);
	sa->why = NULL;
	ike_keys_wipe(&sa->keys);
	ike_dh_free(sa->dh);
	ike_dh_free(sa->irk_dh);
	for (unsigned i = 0; i < sa->n_kids; i++) {
		struct child_sa *k = ike_kid(sa, i);

		ike_dh_free(k->rk_dh);
		explicit_bzero(k, sizeof(*k));
		if (i > 0)
			free(k);
	}
	free(sa->init_req);
	free(sa->init_resp);
	free(sa->req);
	free(sa->last_req);
	free(sa->last_resp);
	ike_frag_reset(sa);
	explicit_bzero(sa, sizeof(*sa));	/* nonces, SPIs: nothing of it outlives it */
	free(sa);
}

/* Tell the owner (child first), unlink and free. */
void
ike_sa_end(struct ike_ctx *ctx, struct ike_sa *sa, const char *why)
{
	for (sa->ck = 0; sa->ck < sa->n_kids; sa->ck++) {
		ike_child_gone(ctx, sa);
		ike_child_down(ctx, sa, &KID(sa)->old);
		ike_child_down(ctx, sa, &KID(sa)->dup);
	}
	sa->ck = 0;
	for (struct ike_sa *o = sa->cross_target ? ctx->sas : NULL; o != NULL; o = o->next)
		if (o->ike_cross == sa)
			o->ike_cross = NULL;	/* a crossing rekey's successor went first */
	if (sa->owner_knows)
		ctx->ops.ike_down(ctx->opaque, sa->conn->cfg.name, why);
	ike_log(ctx, sa, "IKE SA ends: %s", why);
	ike_set_state(ctx, sa, IKE_ST_ESTABLISHED);	/* leaves the half-open count */
	ike_cp_release(sa);		/* remote access: the lease goes offline */
	ike_keep_forget(ctx, sa);
	sa_unlink(ctx, sa);
	sa_free(sa);
}
