/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ikd_keep.c - IKE SAs kept in the dataplane across a restart of dpvpnd
 * (doc/ike.md "Restarts"): each IKE SA's record sent to the dataplane as it
 * changes and taken up again by the next dpvpnd; the SAs of IKE tunnels that
 * no record brought back (orphans) forward until a new CHILD_SA replaces
 * them, or go at a deadline.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "config.h"
#include "ha.h"
#include "ike_sa.h"
#include "ikd_int.h"
#include "install.h"
#include "mono.h"

/* ---- IKE SAs kept across a restart of dpvpnd ([ops] issue 27) ---- */

/*
 * Every change of an IKE SA (a message in or out, a rekey) goes to the
 * dataplane as a record (KEEP_SET: this header, then the engine's record of
 * ike_keep_take), where the CHILD_SAs' keys already are: hugepage memory of
 * the process that forwards, never on disk, gone with it and with them.  A
 * dpvpnd started against that dataplane (after kill -9, a crash, systemd's
 * Restart=, a stop and start) takes each IKE SA up again (ike_sa_import)
 * with its CHILD_SAs as installed: no exchange, no packet lost, DPD and
 * rekeys go on.  One it cannot take up (an exchange was half done, the
 * tunnel's config changed meanwhile) leaves its SAs forwarding until the
 * tunnel's new CHILD_SA replaces them, as a rekey does (make before break),
 * at most IKD_ORPHAN_MS.
 */
#define IKD_KEEP_MAGIC		0x4b707664u	/* "dvpK" */
#define IKD_KEEP_VERSION	1
#define IKD_ORPHAN_MS		120000

struct ikd_keep_hdr {
	uint32_t magic, version;
	char tunnel[DPVPN_NAME_LEN];	/* the IKE SA's connection (a %any one for a client) */
	uint8_t digest[32];		/* its config then (inst_tunnel_digest) */
};

#define IKD_KEEP_BUF	(sizeof(struct dpvpn_keep) + sizeof(struct ikd_keep_hdr) + IKE_KEEP_MAX)
_Static_assert(sizeof(struct ikd_keep_hdr) + IKE_KEEP_MAX <= DPVPN_KEEP_MAX,
	       "a record fits the dataplane's");

/* SA (spi, dir) is held by an IKE SA taken up again (ikd_keep_restore). */
void ikd_claim(uint32_t spi, uint8_t dir)
{
	if (ikd.n_claimed == ikd.cap_claimed) {
		size_t cap = ikd.cap_claimed ? 2 * ikd.cap_claimed : 64;
		struct ikd_sa_ref *r = realloc(ikd.claimed, cap * sizeof(*r));

		if (r == NULL)
			return;		/* unclaimed: replaced as an orphan, not lost */
		ikd.claimed = r;
		ikd.cap_claimed = cap;
	}
	ikd.claimed[ikd.n_claimed++] = (struct ikd_sa_ref){ .spi = spi, .dir = dir };
}

/*
 * On the IKE channel, quiet (answered only if refused: ikd_keep_refused):
 * the dataplane takes the channel's messages in order, so a record goes in
 * before the IKE message sent after it, with no round trip for either.  The
 * send blocks while the channel is full rather than lose the record.
 */
static int keep_quiet(uint16_t type, const void *m, uint32_t len)
{
	struct dpvpn_msg_hdr h = { .type = type, .flags = DPVPN_F_QUIET, .seq = ++ikd.chan.seq,
				   .len = len };
	struct iovec iov[2] = { { .iov_base = &h, .iov_len = sizeof(h) },
				{ .iov_base = (void *)m, .iov_len = len } };
	struct msghdr mh = { .msg_iov = iov, .msg_iovlen = 2 };
	ssize_t n;

	do
		n = sendmsg(ikd.chan.fd, &mh, MSG_NOSIGNAL);
	while (n < 0 && errno == EINTR);
	if (n == (ssize_t)(sizeof(h) + len))
		return 0;
	snprintf(ikd.chan.err, sizeof(ikd.chan.err), "IKE channel: %s",
		 n < 0 ? strerror(errno) : "short send");
	return -1;
}

static void keep_failed(const char *err)
{
	if (ikd.keep_failed++ % 1000 == 0)	/* (said once per 1000) */
		fprintf(stderr, "dpvpnd: IKE SA state not kept in the dataplane (%s): a restart "
			"of dpvpnd would negotiate such a tunnel again\n", err);
}

/* A quiet KEEP_SET or KEEP_DEL refused (its reply on the IKE channel). */
void ikd_keep_refused(uint16_t type, int status, const char *err)
{
	if (type == DPVPN_MSG_KEEP_DEL && status == -ENOENT)
		return;		/* none there: as wanted */
	keep_failed(err);
}

/* ike_keep_take's callback: the record to the dataplane, or its removal. */
static void keep_one(void *arg, const char *conn, const uint8_t *spi_i, const uint8_t *spi_r,
		     const uint8_t *rec, size_t len)
{
	static uint8_t buf[IKD_KEEP_BUF];
	struct dpvpn_keep *m = (struct dpvpn_keep *)buf;
	struct ikd_keep_hdr *h = (struct ikd_keep_hdr *)(m + 1);
	const struct ikd_conn *c = conn ? ikd_find_conn(conn) : NULL;
	bool quiet = ikd.chan.fd >= 0;	/* without a channel (no IKE tunnel): a call */
	uint16_t type = rec == NULL || c == NULL ? DPVPN_MSG_KEEP_DEL : DPVPN_MSG_KEEP_SET;
	int rc;

	(void)arg;
	if (ikd.dp == NULL || ikd.dp->lost || ikd.closing)
		return;
	memset(m, 0, sizeof(*m));
	memcpy(m->key, spi_i, 8);
	memcpy(m->key + 8, spi_r, 8);
	if (type == DPVPN_MSG_KEEP_SET) {
		*h = (struct ikd_keep_hdr){ .magic = IKD_KEEP_MAGIC, .version = IKD_KEEP_VERSION };
		snprintf(h->tunnel, sizeof(h->tunnel), "%s", conn);
		memcpy(h->digest, c->digest, sizeof(h->digest));
		memcpy(h + 1, rec, len);
		m->len = (uint32_t)(sizeof(*h) + len);
	}
	/* an HA backup keeps the same record in its dataplane (ha.h) */
	ha_keep(conn, m->key, type == DPVPN_MSG_KEEP_SET ? (const void *)h : NULL, m->len);
	if (quiet)
		rc = keep_quiet(type, buf, (uint32_t)(sizeof(*m) + m->len));
	else
		rc = dp_call(ikd.dp, type, buf, (uint32_t)(sizeof(*m) + m->len), NULL, 0);
	explicit_bzero(buf, sizeof(*m) + m->len);
	if (!quiet && rc != 0 && type == DPVPN_MSG_KEEP_DEL && ikd.dp->status == -ENOENT)
		rc = 0;
	if (rc != 0)
		keep_failed(quiet ? ikd.chan.err : ikd.dp->err);
}

void ikd_keep_flush(void)
{
	if (ikd.ctx != NULL)
		ike_keep_take(ikd.ctx);
}

const char *ikd_keep_tunnel(const void *rec, uint32_t len, char name[DPVPN_NAME_LEN])
{
	struct ikd_keep_hdr h;

	if (len < sizeof(h))
		return NULL;
	memcpy(&h, rec, sizeof(h));
	if (h.magic != IKD_KEEP_MAGIC || h.version != IKD_KEEP_VERSION)
		return NULL;
	snprintf(name, DPVPN_NAME_LEN, "%.*s", DPVPN_NAME_LEN - 1, h.tunnel);
	return name;
}

/*
 * An HA takeover whose sync state may be stale: the record's message IDs
 * may be behind the peer's (RFC 6311's case), so a new IKE SA is made at
 * once (the tunnel and its ike-sa ones initiated) and replaces the old SAs
 * make before break, as for a tunnel whose config changed.
 */
static void keep_fresh(const char *name, char *err, size_t len)
{
	struct ikd_conn *x = NULL;

	while ((x = ikd_conn_family(name, x)) != NULL)
		x->retry_at = 1;	/* due at once (start_due) */
	snprintf(err, len, "the HA sync state may be stale: its message IDs too; a new IKE "
		 "SA replaces it now, make before break");
}

/*
 * One record of the last dpvpnd: its IKE SA taken up (1), or why not (0);
 * -1: left as it is, an HA group's that this node does not carry (ha.h).
 */
static int keep_restore_one(const struct dpvpn_keep *r)
{
	const struct ikd_keep_hdr *h = (const struct ikd_keep_hdr *)(r + 1);
	const struct ikd_conn *c = NULL;
	char err[160] = "", name[DPVPN_NAME_LEN] = "?";
	int rc = -EINVAL;

	bool ours = r->len >= sizeof(*h) && h->magic == IKD_KEEP_MAGIC &&
		    h->version == IKD_KEEP_VERSION;

	if (ours) {
		snprintf(name, sizeof(name), "%.*s", DPVPN_NAME_LEN - 1, h->tunnel);
		c = ikd.ctx ? ikd_find_conn(name) : NULL;
		if (!ha_owns(name))
			return -1;
	}
	if (!ours)
		snprintf(err, sizeof(err), "not a record of this dpvpnd's version");
	else if (c == NULL)
		snprintf(err, sizeof(err), "the tunnel is no longer in the config");
	else if (memcmp(c->digest, h->digest, sizeof(c->digest)) != 0)
		snprintf(err, sizeof(err), "the tunnel's config changed while dpvpnd was away");
	else if (!c->tpl.ra.any && ha_fresh(name))
		keep_fresh(name, err, sizeof(err));
	else
		rc = ike_sa_import(ikd.ctx, (const uint8_t *)(h + 1), r->len - sizeof(*h),
				   mono_ms(), err, sizeof(err));
	if (rc != 0)
		fprintf(stderr, "dpvpnd: tunnel %s: IKE SA not taken up (%s)%s\n", name, err,
			c ? ": its SAs forward until a new IKE SA's replace them" : "");
	if (rc != 0 && c != NULL)	/* the peer keeps its side of them until then */
		(void)ike_conn_keep_older(ikd.ctx, name, true);
	return rc == 0;
}

/*
 * Every record the dataplane keeps, page by page: its IKE SA taken up, or
 * the record removed once all are read (a removal moves records about).
 */
int ikd_keep_restore(size_t *ok, size_t *seen)
{
	static uint8_t reply[DPVPN_MSG_MAX] __attribute__((aligned(8)));
	static uint8_t one[DPVPN_MSG_MAX] __attribute__((aligned(8)));	/* a record, aligned */
	uint8_t (*gone)[DPVPN_KEEP_KEY_LEN] = NULL;
	uint32_t start = 0, total = 0, n_gone = 0, n_read = 0;
	int rc = 0;

	do {
		struct dpvpn_dump_req req = { .start = start };
		const struct dpvpn_dump_hdr *h = (const struct dpvpn_dump_hdr *)reply;
		size_t at = sizeof(*h);
		uint32_t got, count;

		if (dp_call_var(ikd.dp, DPVPN_MSG_KEEP_LIST, &req, sizeof(req), reply,
				sizeof(reply), &got) != 0 || got < sizeof(*h)) {
			rc = -1;
			break;
		}
		if (gone == NULL)
			gone = calloc(h->total + 1, sizeof(*gone));
		total = h->total;
		for (uint32_t i = 0; i < h->count && gone != NULL && n_read < total; i++) {
			const struct dpvpn_keep *r = (const struct dpvpn_keep *)one;
			struct dpvpn_keep rh;

			if (at + sizeof(rh) > got)
				break;
			memcpy(&rh, reply + at, sizeof(rh));	/* packed: not aligned */
			if (rh.len > got - at - sizeof(rh))
				break;
			memcpy(one, reply + at, sizeof(rh) + rh.len);
			switch (keep_restore_one(r)) {
			case 1:
				(*ok)++;
				(*seen)++;
				break;
			case 0:
				memcpy(gone[n_gone++], r->key, sizeof(r->key));
				(*seen)++;
				break;
			default:	/* the other HA node's: not counted */
				break;
			}
			explicit_bzero(one, sizeof(rh) + rh.len);	/* it holds IKE keys */
			at += sizeof(rh) + rh.len;
			n_read++;
		}
		count = h->count;	/* h is in reply: read before it is wiped */
		explicit_bzero(reply, got);
		start += count;
		if (count == 0 || gone == NULL)
			break;
	} while (start < total);
	for (size_t i = 0; gone != NULL && i < n_gone; i++) {
		struct dpvpn_keep del = { .len = 0 };

		memcpy(del.key, gone[i], sizeof(del.key));
		if (dp_call(ikd.dp, DPVPN_MSG_KEEP_DEL, &del, sizeof(del), NULL, 0) != 0)
			fprintf(stderr, "dpvpnd: IKE record removal: %s\n", ikd.dp->err);
	}
	free(gone);
	return rc;
}

static int ref_order(const void *a, const void *b)
{
	const struct ikd_sa_ref *x = a, *y = b;

	return x->spi != y->spi ? (x->spi < y->spi ? -1 : 1) : (int)x->dir - (int)y->dir;
}

/* The IKE tunnel of ikd.conns that dataplane SA name is of (a hash, but for clients'). */
static const struct ikd_conn *ike_owner(const char *name)
{
	const struct ikd_conn *c = ikd_find_conn(name);

	for (size_t i = 0; c == NULL && strchr(name, '/') && i < ikd.n_conns; i++)
		if (ikd.conns[i].tpl.ra.any && inst_ike_owns(&ikd.conns[i].tpl, name))
			c = &ikd.conns[i];
	return c;
}

/* The IKE tunnels' SAs no IKE SA taken up holds: orphans, replaced or gone by a deadline. */
static int keep_sweep(void)
{
	struct dpvpn_sa_info *sas;
	uint32_t n;

	if (dp_dump(ikd.dp, DPVPN_MSG_SHOW_SA, sizeof(*sas), (void **)&sas, &n) != 0)
		return -1;
	if (ikd.n_claimed)
		qsort(ikd.claimed, ikd.n_claimed, sizeof(*ikd.claimed), ref_order);
	free(ikd.orphans);
	ikd.orphans = calloc(n ? n : 1, sizeof(*ikd.orphans));
	ikd.n_orphans = 0;
	for (uint32_t i = 0; ikd.orphans != NULL && i < n; i++) {
		struct ikd_sa_ref ref = { .spi = ntohl(sas[i].spi), .dir = sas[i].dir };
		struct ikd_orphan *o = &ikd.orphans[ikd.n_orphans];

		snprintf(o->name, sizeof(o->name), "%.*s", DPVPN_NAME_LEN - 1, sas[i].name);
		if (ike_owner(o->name) == NULL || !ha_owns(o->name) ||
		    (ikd.n_claimed &&
		     bsearch(&ref, ikd.claimed, ikd.n_claimed, sizeof(ref), ref_order)))
			continue;
		o->sa = ref;
		ikd.n_orphans++;
	}
	free(sas);
	ikd.orphans_until = mono_ms() + IKD_ORPHAN_MS;
	return ikd.orphans == NULL ? -1 : 0;
}

/* Orphan SA i goes now. */
static void orphan_del(size_t i)
{
	struct cfg_tunnel t = { .ike.on = 1 };

	snprintf(t.name, sizeof(t.name), "%s", ikd.orphans[i].name);
	inst_sa_del(ikd.dp, &t, ikd.orphans[i].sa.spi, ikd.orphans[i].sa.dir, ikd.verbose);
	ikd.orphans[i] = ikd.orphans[--ikd.n_orphans];
}

/*
 * c's first CHILD_SA since the restart, and the last dpvpnd left SAs of it
 * that no IKE SA holds: the new ones in, the policy moved to them in one
 * change, the old outbound SAs out.  The old inbound ones stay until the
 * orphans' deadline: the peer sends on them until its old IKE SA ends
 * (its liveness check finds no one there, as no IKE SA here has those SPIs;
 * strongSwan at once, for the same identity).  false: none of c's.
 */
bool ikd_orphans_replaced(struct ikd_conn *c, struct cfg_tunnel *t)
{
	size_t n = 0;

	for (size_t i = 0; i < ikd.n_orphans; i++)
		n += !strcmp(ikd.orphans[i].name, c->tpl.name);
	if (n == 0)
		return false;
	ikd_batch_close();
	if (inst_tunnel_sas(ikd.dp, t, ikd.verbose, ikd.seq) != 0 ||
	    inst_policy_switch(ikd.dp, t, ikd.verbose) != 0)
		fprintf(stderr, "dpvpnd: tunnel %s: the new CHILD_SA did not replace the old "
			"SAs: %s\n", c->tpl.name, ikd.dp->err);
	for (size_t i = ikd.n_orphans; i-- > 0;)
		if (!strcmp(ikd.orphans[i].name, c->tpl.name) &&
		    ikd.orphans[i].sa.dir == DPVPN_DIR_OUT)
			orphan_del(i);
	(void)ike_conn_keep_older(ikd.ctx, c->tpl.name, false);
	fprintf(stderr, "dpvpnd: tunnel %s: IKE CHILD_SA up, SPIs 0x%08x in, 0x%08x out: it "
		"replaces the %zu SAs the last dpvpnd left (make before break)\n", c->tpl.name,
		t->in.spi, t->out.spi, n);
	return true;
}

/* Orphans no new CHILD_SA replaced by their deadline go. */
void ikd_orphans_expire(uint64_t now)
{
	if (ikd.n_orphans == 0 || now < ikd.orphans_until)
		return;
	fprintf(stderr, "dpvpnd: IKE: %zu SAs the last dpvpnd left were not replaced in %d s: "
		"removed\n", ikd.n_orphans, IKD_ORPHAN_MS / 1000);
	for (int pass = 0; pass < 2; pass++)	/* outbound first: their policies go with them */
		for (size_t i = ikd.n_orphans; i-- > 0;)
			if ((ikd.orphans[i].sa.dir == DPVPN_DIR_OUT) == (pass == 0))
				orphan_del(i);
}

/* At ikd_open: the last dpvpnd's IKE SAs taken up, what none holds an orphan. */
void ikd_keep_take_up(void)
{
	size_t ok = 0, seen = 0;

	ike_keep_start(ikd.ctx, keep_one, NULL);
	ikd.n_claimed = 0;
	if (ikd_keep_restore(&ok, &seen) != 0 || keep_sweep() != 0) {
		fprintf(stderr, "dpvpnd: IKE: the dataplane's records: %s\n", ikd.dp->err);
		return;
	}
	if (seen || ikd.n_orphans)
		fprintf(stderr, "dpvpnd: IKE: %zu of %zu IKE SAs taken up again; %zu SAs of IKE "
			"tunnels left to be replaced (at most %d s)\n", ok, seen, ikd.n_orphans,
			IKD_ORPHAN_MS / 1000);
	free(ikd.claimed);
	ikd.claimed = NULL;
	ikd.n_claimed = ikd.cap_claimed = 0;
}
