/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ikd.c - dpvpnd's IKE (ikd.h): the engine's context and the IKE channel to
 * the dataplane (IKE_OPEN; IKE_RX pushed in, IKE_TX out), its timers,
 * ikd_open and ikd_close.  What the other ikd_*.c hold: ikd_int.h.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "config.h"
#include "ike_sa.h"
#include "ikd.h"
#include "ikd_int.h"
#include "install.h"
#include "mono.h"

#define IKD_TICK_MS		100	/* timers walked at most this often: dpvpnd's IKE_TICK_MS */
/*
 * The start window: tunnels (start = yes, or a retry) initiated by ikd_tick
 * and not yet up, at most this many at a time.  A gateway that starts with
 * 10 000 tunnels would otherwise send 10 000 IKE_SA_INITs in one tick: more
 * than the IKE channel's queue and its peer's IKE rate limit take, all lost
 * and retransmitted together.  While tunnels wait for room, the window is
 * looked at every IKD_TICK_START_MS (not the whole tick: at 10 000 SAs a
 * walk of them costs), so it refills as exchanges end.
 * DPVPND_IKE_START_WINDOW sets it (0: no limit).
 */
#define IKD_START_WINDOW	64
#define IKD_TICK_START_MS	10
#define IKD_COOKIE_THRESHOLD	32	/* half-open SAs before cookies are asked for */
#define IKD_BUF			(sizeof(struct dpvpn_msg_hdr) + sizeof(struct dpvpn_ike_pkt) + \
				 DPVPN_IKE_MAX)

struct ikd_state ikd = { .chan = { .fd = -1 } };

/* ---- the channel ---- */

/* Is a (IPv4) within p's extra-addresses? */
static bool in_extra(const struct cfg_port *p, const struct ike_addr *a)
{
	uint32_t v4, mask = p->extra4.len ? ~0u << (32 - p->extra4.len) : 0;

	if (a->family != AF_INET || p->extra4.addr.family != DPVPN_AF_INET)
		return false;
	memcpy(&v4, a->ip, 4);
	return (ntohl(v4) & mask) == p->extra4.addr.v4;
}

/* Is a one of p's [ha] virtual addresses (held or not: the dataplane says)? */
static bool is_vip(const struct cfg_port *p, const struct ike_addr *a)
{
	for (size_t i = 0; i < ikd.n_vips; i++) {
		struct ike_addr va;

		if (strcmp(ikd.vips[i].port, p->name) != 0)
			continue;
		ikd_to_ike_addr(&va, &ikd.vips[i].addr.addr, 0);
		if (va.family == a->family && !memcmp(va.ip, a->ip, a->family == AF_INET6 ? 16 : 4))
			return true;
	}
	return false;
}

/* The outside port whose address a is, or holds a among its extra-addresses
 * (IKE_TX's source), or -1. */
static int port_of(const struct ike_addr *a)
{
	for (size_t i = 0; i < ikd.n_ports; i++) {
		const struct cfg_port *p = &ikd.ports[i];
		struct ike_addr pa;

		if (p->role != DPVPN_ROLE_OUTSIDE)
			continue;
		ikd_to_ike_addr(&pa, a->family == AF_INET6 ? &p->addr6.addr : &p->addr4.addr, 0);
		if ((a->family == AF_INET6 ? p->addr6.addr.family : p->addr4.addr.family) != 0 &&
		    (!memcmp(pa.ip, a->ip, a->family == AF_INET6 ? 16 : 4) || in_extra(p, a) ||
		     is_vip(p, a)))
			return (int)p->id;
	}
	return -1;
}

static void to_dp_addr(struct dpvpn_addr *d, const struct ike_addr *a)
{
	memset(d, 0, sizeof(*d));
	d->family = a->family == AF_INET6 ? DPVPN_AF_INET6 : DPVPN_AF_INET;
	memcpy(a->family == AF_INET6 ? (void *)d->v6 : (void *)&d->v4, a->ip,
	       a->family == AF_INET6 ? 16 : 4);
}

static void from_dp_addr(struct ike_addr *a, const struct dpvpn_addr *d, uint16_t port)
{
	bool v6 = d->family == DPVPN_AF_INET6;

	memset(a, 0, sizeof(*a));
	a->family = v6 ? AF_INET6 : AF_INET;
	memcpy(a->ip, v6 ? (const void *)d->v6 : (const void *)&d->v4, v6 ? 16 : 4);
	a->port = port;
}

static void on_send(void *opaque, const struct ike_addr *local, const struct ike_addr *remote,
		    const uint8_t *msg, size_t len)
{
	static uint8_t buf[IKD_BUF];
	struct dpvpn_msg_hdr *h = (struct dpvpn_msg_hdr *)buf;
	struct dpvpn_ike_pkt *p = (struct dpvpn_ike_pkt *)(h + 1);
	int port = port_of(local);

	(void)opaque;
	if (ikd.chan.fd < 0 || port < 0 || len == 0 || len > DPVPN_IKE_MAX) {
		ikd.tx_failed++;
		return;
	}
	memset(p, 0, sizeof(*p));
	p->port = (uint16_t)port;
	p->local_port = local->port;
	p->remote_port = remote->port;
	to_dp_addr(&p->local, local);
	to_dp_addr(&p->remote, remote);
	p->len = (uint32_t)len;
	memcpy(p + 1, msg, len);
	/* quiet: only a refusal is answered (the channel's queue is IKE_RX's) */
	*h = (struct dpvpn_msg_hdr){ .type = DPVPN_MSG_IKE_TX, .seq = ++ikd.chan.seq,
				     .flags = DPVPN_F_QUIET,
				     .len = (uint32_t)(sizeof(*p) + len) };
	if (send(ikd.chan.fd, buf, sizeof(*h) + h->len, MSG_DONTWAIT | MSG_NOSIGNAL) < 0)
		ikd.tx_failed++;
}

static void on_log(void *opaque, const char *conn, const char *msg)
{
	(void)opaque;
	if (ikd.verbose)
		fprintf(stderr, "dpvpnd: ike %s: %s\n", conn ? conn : "-", msg);
}

static const struct ike_ops ops = {
	.send = on_send, .child_up = ikd_on_child_up, .child_down = ikd_on_child_down,
	.ike_down = ikd_on_ike_down, .log = on_log, .child_kept = ikd_on_child_kept,
};

static int open_channel(const char *dp_socket)
{
	if (dp_connect(&ikd.chan, dp_socket, 5) != 0)
		return -1;
	if (dp_call(&ikd.chan, DPVPN_MSG_IKE_OPEN, NULL, 0, NULL, 0) != 0) {
		fprintf(stderr, "dpvpnd: IKE channel: %s\n", ikd.chan.err);
		dp_close(&ikd.chan);
		return -1;
	}
	return 0;
}

/* The context and the channel; cfg's ports (their addresses) copied. */
int ikd_start(const char *dp_socket, const struct cfg *cfg)
{
	ikd.ports = calloc(cfg->n_ports ? cfg->n_ports : 1, sizeof(*ikd.ports));
	ikd.ctx = ike_new(&ops, NULL);
	if (ikd.ports == NULL || ikd.ctx == NULL) {
		fprintf(stderr, "dpvpnd: IKE: out of memory\n");
		return -1;
	}
	memcpy(ikd.ports, cfg->ports, cfg->n_ports * sizeof(*ikd.ports));
	ikd.n_ports = cfg->n_ports;
	memcpy(ikd.vips, cfg->ha.vips, sizeof(ikd.vips));
	ikd.n_vips = cfg->ha.n_vips;
	ikd.start_window = getenv("DPVPND_IKE_START_WINDOW") ?
		(size_t)strtoul(getenv("DPVPND_IKE_START_WINDOW"), NULL, 10) : IKD_START_WINDOW;
	/* above this many half-open responder SAs, IKE_SA_INIT needs a cookie (2.6) */
	ike_set_cookie_threshold(ikd.ctx, getenv("DPVPND_IKE_COOKIE_THRESHOLD") ?
			(unsigned)strtoul(getenv("DPVPND_IKE_COOKIE_THRESHOLD"), NULL, 10) :
			IKD_COOKIE_THRESHOLD);
	return open_channel(dp_socket);
}

int ikd_open(const char *config_path, const char *dp_socket, struct dp_client *dp,
	     struct seqstate *seq, bool verbose)
{
	struct cfg cfg;
	size_t n = 0;
	int rc = -1;

	ikd.dp = dp;		/* also for a reload that brings the first IKE tunnel */
	ikd.seq = seq;
	ikd.verbose = verbose;
	if (cfg_load(&cfg, config_path)) {	/* the PSKs: the installed copy has none */
		cfg_print_errors(&cfg, stderr);
		return -1;
	}
	for (size_t i = 0; i < cfg.n_tunnels; i++)
		n += cfg.tunnels[i]->ike.on;
	if (n == 0) {
		size_t ok = 0, seen = 0;

		cfg_free(&cfg);
		(void)ikd_keep_restore(&ok, &seen);	/* a last dpvpnd's records: removed */
		return 0;
	}
	inst_fingerprint(&cfg);		/* what a reload compares to */
	if (ikd_start(dp_socket, &cfg) || ikd_add_conns(&cfg))
		goto out;
	ikd_keep_take_up();
	fprintf(stderr, "dpvpnd: IKE: %zu tunnel(s), channel open\n", ikd.n_conns);
	rc = 0;
out:
	cfg_free(&cfg);
	if (rc != 0)
		ikd_close();
	return rc;
}

int ikd_fd(void)
{
	return ikd.chan.fd;
}

static void take(const uint8_t *buf, ssize_t n)
{
	const struct dpvpn_msg_hdr *h = (const struct dpvpn_msg_hdr *)buf;
	const struct dpvpn_ike_pkt *p = (const struct dpvpn_ike_pkt *)(h + 1);
	struct ike_addr local, remote;

	if (n < (ssize_t)sizeof(*h) || h->len != (size_t)n - sizeof(*h)) {
		ikd.rx_bad++;
		return;
	}
	if (h->flags == DPVPN_F_REPLY && h->type != DPVPN_MSG_IKE_TX) {	/* a quiet KEEP_* */
		char err[160];

		snprintf(err, sizeof(err), "%.*s", (int)(h->len < 150 ? h->len : 150),
			 (const char *)(h + 1));
		if (h->status < 0)
			ikd_keep_refused(h->type, h->status, err);
		return;
	}
	if (h->flags == DPVPN_F_REPLY) {	/* to an IKE_TX */
		if (h->status < 0) {
			ikd.tx_refused++;
			snprintf(ikd.last_tx_error, sizeof(ikd.last_tx_error), "%.*s",
				 (int)(h->len < 150 ? h->len : 150), (const char *)(h + 1));
			if (ikd.verbose)
				fprintf(stderr, "dpvpnd: IKE_TX: %s\n", ikd.last_tx_error);
		}
		return;
	}
	if (h->flags != DPVPN_F_PUSH || h->type != DPVPN_MSG_IKE_RX || h->len < sizeof(*p) ||
	    p->len != h->len - sizeof(*p) ||
	    (p->local.family != DPVPN_AF_INET && p->local.family != DPVPN_AF_INET6)) {
		ikd.rx_bad++;
		return;
	}
	from_dp_addr(&local, &p->local, p->local_port);
	from_dp_addr(&remote, &p->remote, p->remote_port);
	ike_input(ikd.ctx, &local, &remote, (const uint8_t *)(p + 1), p->len, mono_ms());
}

int ikd_input(void)
{
	static uint8_t buf[IKD_BUF + 64];

	for (int i = 0; i < 256 && ikd.chan.fd >= 0; i++) {
		ssize_t n = recv(ikd.chan.fd, buf, sizeof(buf), MSG_DONTWAIT | MSG_TRUNC);

		if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
			fprintf(stderr, "dpvpnd: IKE channel closed\n");
			dp_close(&ikd.chan);
			ikd.chan.fd = -1;
			return -1;
		}
		if (n < 0)
			break;
		take(buf, n > (ssize_t)sizeof(buf) ? -1 : n);
	}
	ikd_batch_close();
	return 0;
}

/* The inbound SAs a rekey replaced whose grace period is over go. */
static void later_due(struct ikd_conn *c, uint64_t now)
{
	for (int l = 0; l < IKD_LATER_MAX; l++) {
		if (c->later[l].spi != 0 && now >= c->later[l].at) {
			inst_sa_del(ikd.dp, &c->tpl, c->later[l].spi, DPVPN_DIR_IN, ikd.verbose);
			c->later[l].spi = 0;
		}
	}
}

/*
 * Initiate the tunnels due (start = yes, retries), at most IKD_START_WINDOW
 * in flight: those started here whose CHILD_SA is not up and whose IKE SA
 * has not ended (its ike_down clears starting, or sets a retry).  An ike-sa
 * tunnel's CHILD_SA rides an IKE SA: it takes no room.
 */
static void start_due(uint64_t now)
{
	size_t busy = 0, window = ikd.start_window ? ikd.start_window : SIZE_MAX;
	bool waiting = false;

	for (size_t i = 0; i < ikd.n_conns; i++) {
		struct ikd_conn *c = &ikd.conns[i];

		c->starting = c->starting && !c->up && c->retry_at == 0 && !c->held;
		busy += c->starting;
	}
	for (size_t i = 0; i < ikd.n_conns; i++) {
		struct ikd_conn *c = &ikd.conns[i];
		int rc;

		if (c->retry_at == 0 || now < c->retry_at)
			continue;
		if (busy >= window) {
			waiting = true;
			break;
		}
		c->retry_at = 0;
		rc = ike_initiate(ikd.ctx, c->tpl.name, now);
		if (rc == 0 && c->tpl.ike.parent[0] == '\0') {
			c->starting = true;
			busy++;
		} else if (rc != 0 && ikd.verbose) {
			fprintf(stderr, "dpvpnd: tunnel %s: IKE already negotiating\n", c->tpl.name);
		}
	}
	ikd.start_waiting = waiting;
	ikd.next_start = now + IKD_TICK_START_MS;
}

void ikd_tick(void)
{
	uint64_t now = mono_ms();

	/*
	 * dpvpnd's loop calls this after every wake (each pass over IKE
	 * messages, each operator request); a tick walks every SA, client and
	 * connection: with 10 000 of them, at most every IKD_TICK_MS, or each
	 * message would cost a walk of them all.
	 */
	ikd_keep_flush();		/* what the messages just read changed */
	if (ikd.ctx != NULL && ikd.start_waiting && now >= ikd.next_start && now < ikd.next_tick)
		start_due(now);		/* tunnels wait for room in the start window */
	if (ikd.ctx == NULL || now < ikd.next_tick)
		return;
	ikd.next_tick = now + IKD_TICK_MS;
	ike_tick(ikd.ctx, now);
	start_due(now);
	ikd_orphans_expire(now);
	for (size_t i = 0; i < ikd.n_clients; i++)
		later_due(&ikd.clients[i].c, now);
	for (size_t i = 0; i < ikd.n_conns; i++)
		later_due(&ikd.conns[i], now);
	ikd_keep_flush();		/* what the timers changed */
}

static void count_sa(void *arg, const struct ike_sa_status *st)
{
	*(size_t *)arg += st->state == IKE_ST_ESTABLISHED;
}

void ikd_close(void)
{
	size_t n = 0;

	if (ikd.ctx != NULL) {
		ikd_keep_flush();
		ike_sa_walk(ikd.ctx, count_sa, &n);
		if (n > 0)
			fprintf(stderr, "dpvpnd: IKE: %zu IKE SAs and their CHILD_SAs stay in the "
				"dataplane: the next dpvpnd takes them up\n", n);
		ikd.closing = true;	/* nothing removed, no record dropped */
		ike_free(ikd.ctx);
		ikd.closing = false;
	}
	for (size_t i = 0; i < ikd.n_conns; i++)	/* and the replaced ones still kept */
		for (int l = 0; l < IKD_LATER_MAX; l++)
			if (ikd.conns[i].later[l].spi != 0)
				inst_sa_del(ikd.dp, &ikd.conns[i].tpl, ikd.conns[i].later[l].spi,
					    DPVPN_DIR_IN, ikd.verbose);
	ikd.ctx = NULL;
	for (size_t i = 0; i < ikd.n_conns; i++) {	/* the context is gone: theirs too */
		free(ikd.conns[i].last_end);
		ike_pki_cred_free(ikd.conns[i].cred);
		ike_pki_trust_free(ikd.conns[i].trust);
	}
	dp_close(&ikd.chan);
	ikd.chan.fd = -1;
	while (ikd.n_clients > 0)		/* (ike_free's child_down removed them) */
		ikd_client_gone(&ikd.clients[ikd.n_clients - 1].c);
	free(ikd.clients);
	ikd.clients = NULL;
	ikd.cap_clients = 0;
	free(ikd.conns);
	free(ikd.ports);
	ikd.conns = NULL;
	ikd.ports = NULL;
	ikd.n_conns = ikd.cap_conns = ikd.n_ports = ikd.n_vips = 0;
	ikd.next_tick = 0;
	memset(&ikd.conn_idx, 0, sizeof(ikd.conn_idx));
	memset(&ikd.client_idx, 0, sizeof(ikd.client_idx));
	memset(&ikd.parent_idx, 0, sizeof(ikd.parent_idx));
	free(ikd.orphans);
	ikd.orphans = NULL;
	ikd.n_orphans = 0;
	ikd_reload_cancel();
}
