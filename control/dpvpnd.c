/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dpvpnd.c - the dpvpn control daemon: read the config, install it into the
 * dataplane, then answer operators on the control socket until told to stop.
 *
 * Restarts: a dataplane that is already forwarding when dpvpnd starts is
 * reconciled with the config (what matches is not touched; IKE tunnels' SAs
 * are left to ikd_open, which takes their IKE SAs up again from the records
 * the last dpvpnd kept in the dataplane: doc/ike.md "Restarts"); a dataplane
 * that goes away is waited for and, once back, given the config again (read
 * anew: keys are not kept in memory).  Outbound sequence numbers are reserved a
 * block at a time in a state file (seqstate.h), so neither restart reuses one.
 *
 * One thread, one poll() loop over: a signalfd (SIGTERM, SIGINT), the
 * dataplane connection (only to notice it closing: requests to it are
 * synchronous), the listening control socket and its clients.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <sys/signalfd.h>
#include <time.h>
#include <unistd.h>

#include "config.h"
#include "dpvpn_git.h"
#include "ctl_base.h"
#include "ctl_server.h"
#include "dp_client.h"
#include "ha.h"
#include "ikd.h"
#include "icvwatch.h"
#include "install.h"
#include "logstamp.h"
#include "lock.h"
#include "metrics.h"
#include "mirror.h"
#include "seqstate.h"
#include "mono.h"

#define DEFAULT_WAIT_S	30
#define MAX_CLIENTS	16
#define MAX_WAIT_S	3600

enum { PFD_SIGNAL, PFD_DATAPLANE, PFD_LISTEN, PFD_METRICS, PFD_IKE, PFD_NETLINK,
       PFD_HA, PFD_HA2, PFD_CLIENTS };
#define IKE_TICK_MS	100	/* IKE timers: retransmissions, liveness, restarts */

struct opts {
	const char *config;
	const char *dp_socket;
	const char *ctl_socket;
	unsigned wait_s;
	bool check_only;
	bool verbose;
};

static void usage(FILE *out)
{
	fprintf(out, "usage: dpvpnd -c FILE [-n] [-D dataplane-socket] [-s control-socket]\n"
		"              [-w wait-seconds] [-v]\n"
		"       dpvpnd --version | --help\n"
		"  -c FILE  configuration file\n"
		"  -n       check the configuration and exit\n"
		"  -D PATH  dataplane socket (overrides [dataplane] socket)\n"
		"  -s PATH  control socket (overrides [control] socket)\n"
		"  -w SECS  how long to wait for the dataplane socket (default %d)\n"
		"  -v       verbose: log every change sent to the dataplane and every\n"
		"           operator request (never a key)\n", DEFAULT_WAIT_S);
}

static int parse_wait(const char *s, unsigned *out)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || end == s || *end || s[0] == '-' || v > MAX_WAIT_S)
		return -1;
	*out = (unsigned)v;
	return 0;
}

static int parse_args(int argc, char **argv, struct opts *o)
{
	static const struct option longopts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	*o = (struct opts){ .wait_s = DEFAULT_WAIT_S };
	while ((c = getopt_long(argc, argv, "c:nD:s:w:vh", longopts, NULL)) != -1) {
		switch (c) {
		case 'c': o->config = optarg; break;
		case 'n': o->check_only = true; break;
		case 'D': o->dp_socket = optarg; break;
		case 's': o->ctl_socket = optarg; break;
		case 'v': o->verbose = true; break;
		case 'w':
			if (parse_wait(optarg, &o->wait_s)) {
				fprintf(stderr, "dpvpnd: -w: expected 0..%d seconds, got '%s'\n",
					MAX_WAIT_S, optarg);
				return -1;
			}
			break;
		case 'h': usage(stdout); exit(0);
		case 'V': printf("dpvpnd %s\n", DPVPN_VERSION_LONG); exit(0);
		default: return -1;
		}
	}
	if (!o->config || optind != argc) {
		fprintf(stderr, "dpvpnd: %s\n",
			o->config ? "unexpected argument" : "-c FILE is required");
		return -1;
	}
	return 0;
}

/* Command-line sockets override the file's; checked like the file's. */
static int apply_overrides(struct cfg *cfg, const struct opts *o)
{
	if (o->dp_socket && snprintf(cfg->dp_socket, sizeof(cfg->dp_socket), "%s",
				     o->dp_socket) >= (int)sizeof(cfg->dp_socket)) {
		fprintf(stderr, "dpvpnd: -D: path longer than %d bytes\n", CFG_PATH_MAX - 1);
		return -1;
	}
	if (o->ctl_socket && snprintf(cfg->ctl_socket, sizeof(cfg->ctl_socket), "%s",
				      o->ctl_socket) >= (int)sizeof(cfg->ctl_socket)) {
		fprintf(stderr, "dpvpnd: -s: path longer than %d bytes\n", CFG_PATH_MAX - 1);
		return -1;
	}
	return 0;
}

/* 0: a fresh dataplane, 1: one that is already forwarding, -1: error. */
static int hello(struct dp_client *dp)
{
	struct dpvpn_status st;

	if (dp_call(dp, DPVPN_MSG_HELLO, NULL, 0, &st, sizeof(st))) {
		fprintf(stderr, "dpvpnd: hello: %s\n", dp->err);
		return -1;
	}
	if (st.proto_version != DPVPN_PROTO_VERSION) {
		fprintf(stderr, "dpvpnd: hello: dataplane speaks protocol %u, dpvpnd %d\n",
			st.proto_version, DPVPN_PROTO_VERSION);
		return -1;
	}
	return st.started ? 1 : 0;
}

static struct seqstate *seq;	/* outbound sequence reservations */
static const struct opts *opts;

/*
 * A fresh dataplane gets the whole config; one already forwarding is left
 * as it is: what it has is what a previous dpvpnd installed.
 */
static int install_connected(struct dp_client *dp, struct cfg *cfg)
{
	int started = hello(dp);

	if (started < 0)
		return -1;
	if (started) {
		char msg[256];
		int rc = inst_reconcile(dp, cfg, seq, opts->verbose, msg, sizeof(msg));

		fprintf(stderr, "dpvpnd: %s\n", msg);
		return rc;
	}
	if (inst_all(dp, cfg, opts->verbose, seq))
		return -1;
	fprintf(stderr, "dpvpnd: ready (%zu ports, %zu tunnels)\n", cfg->n_ports,
		cfg->n_tunnels);
	return 0;
}

static int dp_lock = -1;	/* DATAPLANE-SOCKET.lock, held from the first connection on */

/*
 * No other dpvpnd manages this dataplane (lock.h): made sure of before the
 * first message to it, so that a second dpvpnd, started by mistake with
 * another config, removes nothing of the first one's (a reconcile would).
 */
static int lock_dataplane(const char *dp_socket)
{
	char path[CFG_PATH_MAX + 8], why[CFG_PATH_MAX + 64];

	snprintf(path, sizeof(path), "%s.lock", dp_socket);
	dp_lock = lock_take(path, why, sizeof(why));
	if (dp_lock >= 0)
		return 0;
	if (errno == EWOULDBLOCK)
		fprintf(stderr, "dpvpnd: %s: another dpvpnd manages the dataplane on %s: "
			"stopping without sending it anything\n", why, dp_socket);
	else
		fprintf(stderr, "dpvpnd: dataplane lock %s: stopping without sending the "
			"dataplane anything\n", why);
	return -1;
}

/* The dataplane not there yet (started together, or after us): say so at once. */
static int setup_dataplane(struct dp_client *dp, struct cfg *cfg, unsigned wait_s)
{
	int rc = dp_connect(dp, cfg->dp_socket, 0);

	if (rc != 0 && wait_s > 0 && (errno == ENOENT || errno == ECONNREFUSED)) {
		fprintf(stderr, "dpvpnd: waiting up to %u s for the dataplane at %s (%s)\n",
			wait_s, cfg->dp_socket, strerror(errno));
		rc = dp_connect(dp, cfg->dp_socket, wait_s);
	}
	if (rc != 0) {
		fprintf(stderr, "dpvpnd: dataplane: %s\n", dp->err);
		return -1;
	}
	if (lock_dataplane(cfg->dp_socket))
		return -1;
	return install_connected(dp, cfg);
}

static int signal_fd(void)
{
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGHUP);
	if (sigprocmask(SIG_BLOCK, &set, NULL))
		return -1;
	return signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
}

struct loop {
	struct pollfd pfd[PFD_CLIENTS + MAX_CLIENTS];
	nfds_t n;
	struct ctl_ctx *ctx;
	struct metrics *metrics;	/* NULL: no [control] metrics */
};

static void add_client(struct loop *l)
{
	int cfd = ctl_accept(l->ctx, l->pfd[PFD_LISTEN].fd);

	if (cfd < 0)
		return;
	if (l->n == PFD_CLIENTS + MAX_CLIENTS) {
		fprintf(stderr, "dpvpnd: more than %d clients: closing the new one\n",
			MAX_CLIENTS);
		close(cfd);
		return;
	}
	l->pfd[l->n++] = (struct pollfd){ .fd = cfd, .events = POLLIN };
}

static void serve_clients(struct loop *l)
{
	for (nfds_t i = PFD_CLIENTS; i < l->n; i++) {
		if (!l->pfd[i].revents)
			continue;
		if ((l->pfd[i].revents & POLLIN) && ctl_serve(l->ctx, l->pfd[i].fd) == 0)
			continue;
		close(l->pfd[i].fd);
		l->pfd[i--] = l->pfd[--l->n];
	}
}

#define EVENTS_EVERY_MS	200	/* how often dpvpnd asks the dataplane for events */

/* SA lifetime events: logged (a later issue rekeys on them). */
/* More sequence numbers for an outbound SA: on disk first, then granted. */
static void grant(struct dp_client *dp, const struct dpvpn_event *ev)
{
	char name[DPVPN_NAME_LEN];
	uint32_t spi = ntohl(ev->spi);
	uint64_t have, limit;
	struct dpvpn_seq_grant g = { .spi = ev->spi };

	snprintf(name, sizeof(name), "%.*s", DPVPN_NAME_LEN - 1, ev->name);
	have = seq_get(seq, name, spi);
	limit = (have > ev->value ? have : ev->value) + seq_block(seq);
	if (seq_put(seq, name, spi, limit)) {
		fprintf(stderr, "dpvpnd: tunnel %s: cannot save the sequence reservation (%s): "
			"SA 0x%08x gets no more numbers\n", name, strerror(errno), spi);
		return;
	}
	g.limit = limit;
	if (ha_seq_hold(name, spi, limit))
		return;		/* granted once the HA backup has it (ha.c) */
	if (dp_call(dp, DPVPN_MSG_SEQ_GRANT, &g, sizeof(g), NULL, 0))
		fprintf(stderr, "dpvpnd: seq grant 0x%08x: %s\n", spi, dp->err);
}

static void poll_events(struct dp_client *dp)
{
	struct dpvpn_event *ev;
	uint32_t n;

	if (dp_dump(dp, DPVPN_MSG_EVENTS, sizeof(*ev), (void **)&ev, &n)) {
		fprintf(stderr, "dpvpnd: events: %s\n", dp->err);
		return;
	}
	for (uint32_t i = 0; i < n; i++) {
		if (ev[i].kind == DPVPN_EV_SEQ_LOW) {
			grant(dp, &ev[i]);
			continue;
		}
		if (ev[i].life == DPVPN_LIFE_SOFT) {	/* keying = ike: a rekey */
			char name[DPVPN_NAME_LEN];

			snprintf(name, sizeof(name), "%.*s", DPVPN_NAME_LEN - 1, ev[i].name);
			if (ikd_soft_lifetime(name, ntohl(ev[i].spi)))
				continue;
		}
		fprintf(stderr, "dpvpnd: tunnel %.*s %s SA 0x%08x: %s lifetime reached%s\n",
			DPVPN_NAME_LEN, ev[i].name, ev[i].dir == DPVPN_DIR_IN ? "inbound" : "outbound",
			ntohl(ev[i].spi), ev[i].life == DPVPN_LIFE_HARD ? "hard" : "soft",
			ev[i].life == DPVPN_LIFE_HARD ? " (SA stopped)" : " (rekey due)");
	}
	free(ev);
}

static const char *config_path;
static struct icvw icv;		/* bad-icv drops, said in the log */
static struct cfg *current;	/* what the dataplane was given (keys wiped) */
static struct dp_client *the_dp;

#define MAX_DOWN	64
static char down[MAX_DOWN][DPVPN_NAME_LEN];	/* tunnels an operator took down */

static int is_down(const char *name)
{
	for (int i = 0; i < MAX_DOWN; i++)
		if (down[i][0] && !strcmp(down[i], name))
			return i;
	return -1;
}

/* show tunnels: a tunnel taken down, as the config had it (keys wiped) */
static struct cfg_tunnel *down_cfg[MAX_DOWN];

static void keep_down_cfg(int slot, const struct cfg_tunnel *t)
{
	if (down_cfg[slot] == NULL)
		down_cfg[slot] = malloc(sizeof(*down_cfg[slot]));
	if (down_cfg[slot] != NULL)
		ctl_tunnel_copy(down_cfg[slot], t);
}

/* Tunnels taken down stay out of what is installed (their keys wiped). */
static void drop_down_tunnels(struct cfg *c)
{
	size_t k = 0;

	for (size_t i = 0; i < c->n_tunnels; i++) {
		if (is_down(c->tunnels[i]->name) >= 0) {
			keep_down_cfg(is_down(c->tunnels[i]->name), c->tunnels[i]);
			explicit_bzero(c->tunnels[i], sizeof(*c->tunnels[i]));
			free(c->tunnels[i]);
			continue;
		}
		c->tunnels[k++] = c->tunnels[i];
	}
	c->n_tunnels = k;
}

/*
 * The config file has errors (bad text, loose permissions): each on a line of
 * its own, "FILE:LINE: message" as dpvpnd -n prints them.  The log gets them
 * all; msg (the operator's reply) as many whole lines as fit, and how many
 * more there are.
 */
static int refused(struct cfg *bad, const char *what, char *msg, size_t len)
{
	const char *s = bad->n_errors == 1 ? "" : "s";
	size_t i, n;

	for (i = 0; i < bad->n_errors; i++)
		fprintf(stderr, "dpvpnd: %s refused: %s\n", what, bad->errors[i]);
	fprintf(stderr, "dpvpnd: %s refused, running config kept (%zu error%s)\n", what,
		bad->n_errors, s);
	n = (size_t)snprintf(msg, len, "refused, running config kept (%zu error%s):",
			     bad->n_errors, s);
	/* 80: room left for the last line */
	for (i = 0; i < bad->n_errors && n + strlen(bad->errors[i]) + 81 < len; i++)
		n += (size_t)snprintf(msg + n, len - n, "\n%s", bad->errors[i]);
	if (i < bad->n_errors && n < len)
		snprintf(msg + n, len - n, "\n... and %zu more (dpvpnd -n -c FILE lists them all)",
			 bad->n_errors - i);
	ctl_tunnels_refused(bad, NULL);		/* show tunnels names what it held */
	cfg_free(bad);
	return -1;
}

static struct inst_report changes;	/* what the last reload did, tunnel by tunnel */

/* reload, tunnel up|down answer with every tunnel's name under its fate. */
static json_t *changes_json(void)
{
	json_t *o = json_object();

	for (int f = 0; o != NULL && f < INST_FATES; f++)
		json_object_set_new(o, inst_fate_names[f], json_array());
	for (size_t i = 0; o != NULL && i < changes.n; i++)
		json_array_append_new(json_object_get(o, inst_fate_names[changes.fate[i]]),
				      json_string(changes.name[i]));
	return o;
}

/*
 * Live reload (SIGHUP, dpvpnctl reload): the file read anew; refused whole,
 * running state kept, if it has an error; else only what differs is applied,
 * and what the dataplane lost of unchanged tunnels is installed again.
 */
static int reload(char *msg, size_t len)
{
	struct cfg next;
	int rc, irc = 0;

	inst_report_clear(&changes);
	if (cfg_load(&next, config_path))
		return refused(&next, "reload", msg, len);
	ctl_tunnels_refused(NULL, NULL);
	if (apply_overrides(&next, opts) != 0) {
		snprintf(msg, len, "refused: bad socket override");
		cfg_free(&next);
		return -1;
	}
	drop_down_tunnels(&next);
	/* keying = ike tunnels: checked first (refused whole), changed ones ended
	 * before the install, new ones added after it */
	bool ike = ha_master();		/* an HA backup runs no IKE: its master's SAs stay */

	if (inst_reload_check(current, &next, msg, len) != 0 ||
	    (ike && ikd_reload_check(&next, msg, len) != 0)) {
		fprintf(stderr, "dpvpnd: reload %s\n", msg);
		ctl_tunnels_refused(&next, msg);
		cfg_free(&next);
		return -1;
	}
	if (ike)
		ikd_reload_drop(&next);
	rc = inst_reload(the_dp, current, &next, seq, opts->verbose, msg, len, &changes);
	ha_tunnels(rc == 0 ? &next : current);	/* (each tunnel's HA group, before IKE's) */
	if (rc == 0 && ike) {
		size_t used = strlen(msg);

		irc = ikd_reload_add(&next, msg + used, len - used);
	} else if (ike) {
		ikd_reload_cancel();
	}
	fprintf(stderr, "dpvpnd: %s\n", msg);
	if (rc == 0) {
		cfg_free(current);
		*current = next;
		mirror_open(the_dp, current, opts->verbose);	/* twins may be new */
	} else {
		cfg_free(&next);
	}
	return rc != 0 ? rc : irc;
}

/* What the reload of tunnel NAME up|down did to it, in words. */
static const char *fate_of(const char *name, int up)
{
	for (size_t i = 0; i < changes.n; i++) {
		if (strcmp(changes.name[i], name))
			continue;
		switch (changes.fate[i]) {
		case INST_ADDED: return "installed";
		case INST_REMOVED: return "removed";
		case INST_CHANGED: return "changed in the config: installed anew";
		case INST_REPAIRED: return "repaired (the dataplane had lost part of it)";
		default: return up ? "already up" : "unchanged";
		}
	}
	return "not installed";
}

/*
 * dpvpnctl tunnel NAME up|down: the file as it is now, with or without it.
 * up also repairs (the reload does): an operator's first try for a tunnel
 * that carries nothing.  A tunnel already down stays so: nothing is read.
 */
static int tunnel_state(const char *name, int up, char *msg, size_t len)
{
	struct cfg probe;
	int known = 0, slot = is_down(name);

	if (cfg_load(&probe, config_path))	/* not "no such tunnel": the file is bad */
		return refused(&probe, up ? "tunnel up" : "tunnel down", msg, len);
	for (size_t i = 0; i < probe.n_tunnels; i++)
		known |= !strcmp(probe.tunnels[i]->name, name);
	cfg_free(&probe);
	if (!known) {
		snprintf(msg, len, "no tunnel '%.31s' in %s", name, config_path);
		return -1;
	}
	if (!up && slot >= 0) {
		inst_report_clear(&changes);
		snprintf(msg, len, "tunnel %s down: already down; nothing changed", name);
		return 0;
	}
	char was[DPVPN_NAME_LEN] = "", done[1024];
	int rc;

	if (up && slot >= 0) {
		strcpy(was, down[slot]);
		down[slot][0] = '\0';
	}
	if (!up && slot < 0) {
		for (slot = 0; slot < MAX_DOWN && down[slot][0]; slot++)
			;
		if (slot == MAX_DOWN) {
			snprintf(msg, len, "more than %d tunnels down", MAX_DOWN);
			return -1;
		}
		snprintf(down[slot], sizeof(down[slot]), "%s", name);
	}
	rc = reload(done, sizeof(done));
	if (rc != 0 && slot >= 0 && slot < MAX_DOWN)	/* nothing changed: nor does the mark */
		strcpy(down[slot], up ? was : "");
	if (rc != 0)
		snprintf(msg, len, "%s", done);
	else
		snprintf(msg, len, "tunnel %s %s: %s; %s", name, up ? "up" : "down",
			 fate_of(name, up), done);
	return rc;
}

/* The signalfd said something: SIGHUP reloads; 1 for SIGTERM/SIGINT. */
static int on_signal(int sfd)
{
	struct signalfd_siginfo si;
	char msg[1024];

	if (read(sfd, &si, sizeof(si)) != (ssize_t)sizeof(si))
		return 0;
	if (si.ssi_signo != SIGHUP)
		return 1;
	if (opts->verbose)
		fprintf(stderr, "dpvpnd: SIGHUP from pid %u uid %u: reload\n", si.ssi_pid,
			si.ssi_uid);
	reload(msg, sizeof(msg));
	return 0;
}

/* The dataplane is back: IKE starts again (its CHILD_SAs went with the old one). */
static void ike_restart(struct loop *l, struct dp_client *dp)
{
	ikd_close();
	if (!ha_master()) {	/* an HA backup runs no IKE */
		l->pfd[PFD_IKE].fd = -1;
		return;
	}
	if (ikd_open(config_path, current->dp_socket, dp, seq, opts->verbose) != 0)
		fprintf(stderr, "dpvpnd: IKE not restarted: keying = ike tunnels stay down\n");
	l->pfd[PFD_IKE].fd = ikd_fd();
}

/*
 * A config read anew while the dataplane is away gets the command line's
 * sockets, and the dataplane socket and state file this dpvpnd locked at
 * start (lock.h): one changed in the file since needs a restart (as for a
 * reload).  0, or -1 for a bad override.
 */
static int locked_paths(struct cfg *fresh)
{
	if (apply_overrides(fresh, opts) != 0)
		return -1;
	memcpy(fresh->dp_socket, current->dp_socket, sizeof(fresh->dp_socket));
	memcpy(fresh->state, current->state, sizeof(fresh->state));
	return 0;
}

/*
 * The dataplane went away: wait for one to answer again (or for a signal),
 * then give it the config, read anew.  0: back, 1: a signal came.
 */
static int reconnect(struct loop *l)
{
	struct dp_client *dp = l->ctx->dp;

	fprintf(stderr, "dpvpnd: dataplane connection lost: waiting for it to come back "
		"(forwarding stops until then)\n");
	dp_close(dp);
	ha_dataplane_lost();
	for (;;) {
		struct pollfd sig = l->pfd[PFD_SIGNAL];
		struct cfg fresh;
		int rc = -1;

		if (poll(&sig, 1, 500) > 0 && on_signal(sig.fd))
			return 1;
		if (cfg_load(&fresh, config_path)) {
			cfg_print_errors(&fresh, stderr);
		} else if (locked_paths(&fresh) == 0 &&
			   dp_connect(dp, fresh.dp_socket, 0) == 0) {	/* quiet while away */
			drop_down_tunnels(&fresh);
			rc = install_connected(dp, &fresh);
			if (rc != 0)
				dp_close(dp);
		}
		if (rc == 0) {	/* what the new dataplane has: what a reload compares to */
			cfg_free(current);
			*current = fresh;
		} else {
			cfg_free(&fresh);
		}
		if (rc == 0) {
			l->pfd[PFD_DATAPLANE].fd = dp->fd;
			base_forget();		/* it counts from 0: clear's baselines go */
			fprintf(stderr, "dpvpnd: dataplane back\n");
			/* new twins (net_tun dies with the dataplane), no mirrored routes,
			 * none of dpvpnctl's either */
			mirror_forget_ctl();
			mirror_open(dp, current, opts->verbose);
			icvw_reset(&icv);	/* its counters start from 0 */
			ha_dataplane_back();
			ike_restart(l, dp);
			return 0;
		}
	}
}

/* The HA sync channel's descriptors in their two slots (-1: none). */
static void ha_poll_slots(struct loop *l)
{
	struct pollfd p[2];
	int n = ha_pollfds(p, 2);

	for (int i = 0; i < 2; i++)
		l->pfd[PFD_HA + i] = i < n ? p[i] : (struct pollfd){ .fd = -1 };
}

/* HA: this node became master (ha.c): IKE opens and takes the records up. */
static int ha_take_over(void)
{
	ikd_close();
	return ikd_open(config_path, current->dp_socket, the_dp, seq, opts->verbose);
}

/* HA: backup again: IKE closes; the SAs and records stay. */
static void ha_release(void)
{
	ikd_close();
}

/* 0: SIGTERM/SIGINT, 1: a fatal error. */
static int run_loop(struct loop *l)
{
	struct dp_client *dp = l->ctx->dp;
	uint64_t next_events = mono_ms() + EVENTS_EVERY_MS, next_icv = mono_ms();

	for (;;) {
		if (mono_ms() >= next_events && !dp->lost) {
			poll_events(dp);
			next_events = mono_ms() + EVENTS_EVERY_MS;
		}
		if (mono_ms() >= next_icv && !dp->lost) {
			icvw_poll(&icv, dp, mono_ms());
			next_icv = mono_ms() + ICVW_POLL_MS;
		}
		int wait = l->pfd[PFD_IKE].fd >= 0 ? IKE_TICK_MS : EVENTS_EVERY_MS, hw;

		l->pfd[PFD_IKE].fd = ikd_fd();	/* a reload may have opened it; -1 if closed */
		l->pfd[PFD_NETLINK].fd = mirror_fd();	/* a reload or reconnect reopens it */
		ha_poll_slots(l);
		hw = ha_timeout_ms();
		if (hw >= 0 && hw < wait)
			wait = hw;
		if (poll(l->pfd, l->n, wait) < 0) {
			if (errno == EINTR)
				continue;
			fprintf(stderr, "dpvpnd: poll: %s\n", strerror(errno));
			return 1;
		}
		if (l->pfd[PFD_SIGNAL].revents && on_signal(l->pfd[PFD_SIGNAL].fd))
			return 0;
		if (l->pfd[PFD_DATAPLANE].revents)
			dp_drain(dp);
		if (l->pfd[PFD_IKE].revents)
			ikd_input();
		if (l->pfd[PFD_NETLINK].revents && !dp->lost)
			mirror_read();	/* while lost: read after the reconnect's reopen */	/* closed: the dataplane went; restarted with it */
		if (!dp->lost)
			ha_run();	/* the sync channel; a backup applies what came */
		if (!dp->lost)
			ikd_tick();
		if (!dp->lost) {
			serve_clients(l);
			if (l->pfd[PFD_LISTEN].revents)
				add_client(l);
			metrics_poll(l->metrics, dp);	/* also expires the idle */
		}
		if (dp->lost && reconnect(l) != 0)
			return 0;
	}
}

/* show ports: the [port NAME] of the config now applied with this id. */
static const char *port_name(uint16_t id)
{
	for (size_t i = 0; current != NULL && i < current->n_ports; i++)
		if (current->ports[i].id == id)
			return current->ports[i].name;
	return NULL;
}

/* show tunnels: the running config's, then those taken down (ctl_tunnels.c adds
 * those a refused config named). */
static void walk_tunnels(ctl_tunnel_fn fn, void *arg)
{
	for (size_t i = 0; current != NULL && i < current->n_tunnels; i++) {
		fn(arg, &(struct ctl_tunnel){ .name = current->tunnels[i]->name,
					      .cfg = current->tunnels[i] });
		if (current->tunnels[i]->ra.any)	/* remote access: each client's */
			ikd_client_tunnels(current->tunnels[i]->name, fn, arg);
	}
	for (int i = 0; i < MAX_DOWN; i++) {
		const struct cfg_tunnel *c = down_cfg[i];

		if (down[i][0] == '\0')
			continue;
		fn(arg, &(struct ctl_tunnel){ .name = down[i], .operator_down = 1,
			.cfg = c != NULL && !strcmp(c->name, down[i]) ? c : NULL });
	}
}

static int serve(struct dp_client *dp, struct cfg *cfg)
{
	struct ctl_ctx ctx = {
		.dp = dp, .config_path = cfg->path, .euid = geteuid(),
		.gid = cfg->gid, .has_group = cfg->group[0] != '\0', .reload = reload,
		.tunnel_state = tunnel_state, .verbose = opts->verbose,
		.show_ike = ikd_show, .ike_command = ikd_command, .port_name = port_name,
		.tunnels = walk_tunnels, .ike_tunnel = ikd_tunnel,
		.ike_tunnel_json = ikd_tunnel_json,
		.changes = changes_json, .route_changed = mirror_ctl_route,
		.ha_command = ha_role_command, .show_ha = ha_show,
	};
	struct loop l = { .n = PFD_CLIENTS, .ctx = &ctx };
	int sfd = signal_fd(), lfd, rc;

	if (sfd < 0) {
		fprintf(stderr, "dpvpnd: signalfd: %s\n", strerror(errno));
		return 1;
	}
	lfd = ctl_listen(cfg->ctl_socket, ctx.has_group, ctx.gid);
	if (lfd < 0) {
		close(sfd);
		return 1;
	}
	l.pfd[PFD_SIGNAL] = (struct pollfd){ .fd = sfd, .events = POLLIN };
	l.pfd[PFD_DATAPLANE] = (struct pollfd){ .fd = dp->fd, .events = POLLIN };
	l.pfd[PFD_LISTEN] = (struct pollfd){ .fd = lfd, .events = POLLIN };
	l.pfd[PFD_METRICS] = (struct pollfd){ .fd = -1, .events = POLLIN };
	l.pfd[PFD_IKE] = (struct pollfd){ .fd = -1, .events = POLLIN };
	mirror_open(dp, current, opts->verbose);	/* logged; forwarding goes on without */
	l.pfd[PFD_NETLINK] = (struct pollfd){ .fd = mirror_fd(), .events = POLLIN };
	static const struct ha_ops ha_ops = { .take_over = ha_take_over, .release = ha_release };

	if (ha_open(cfg, dp, seq, &ha_ops, opts->verbose) != 0 ||
	    (ha_master() && ikd_open(config_path, cfg->dp_socket, dp, seq, opts->verbose) != 0)) {
		ha_close();
		close(lfd);
		close(sfd);
		return 1;
	}
	l.pfd[PFD_IKE].fd = ikd_fd();
	if (cfg->metrics[0] != '\0') {
		l.metrics = metrics_open(cfg->metrics);
		l.pfd[PFD_METRICS].fd = metrics_fd(l.metrics);
		metrics_set_ctl(l.metrics, &ctx);	/* the per-tunnel series */
		if (l.metrics == NULL) {
			close(lfd);
			close(sfd);
			return 1;
		}
	}
	rc = run_loop(&l);
	mirror_close();
	icvw_free(&icv);
	ikd_close();
	ha_close();
	metrics_close(l.metrics);
	for (nfds_t i = PFD_CLIENTS; i < l.n; i++)
		close(l.pfd[i].fd);
	close(lfd);
	ctl_unlink(cfg->ctl_socket);
	close(sfd);
	if (rc == 0)
		fprintf(stderr, "dpvpnd: exiting on signal\n");
	return rc;
}

int main(int argc, char **argv)
{
	struct dp_client dp = { .fd = -1 };
	struct opts o;
	struct cfg cfg;
	char err[4200];
	int rc = 1;

	if (parse_args(argc, argv, &o)) {
		usage(stderr);
		return 2;
	}
	if (!o.check_only)	/* a daemon's log; -n answers as it always did */
		logstamp_stderr();
	signal(SIGPIPE, SIG_IGN);
	if (cfg_load(&cfg, o.config)) {
		cfg_print_errors(&cfg, stderr);
		goto out;
	}
	if (o.check_only) {
		printf("%s: OK\n", o.config);
		rc = 0;
		goto out;
	}
	opts = &o;
	config_path = o.config;
	current = &cfg;
	the_dp = &dp;
	seq = seq_open(cfg.state, err, sizeof(err));
	if (seq == NULL) {
		fprintf(stderr, "dpvpnd: sequence state: %s\n", err);
		goto out;
	}
	seq_set_block(seq, cfg.seq_block);
	if (apply_overrides(&cfg, &o) == 0 && setup_dataplane(&dp, &cfg, o.wait_s) == 0)
		rc = serve(&dp, &cfg);
out:
	inst_report_clear(&changes);
	dp_close(&dp);
	cfg_free(&cfg);
	seq_close(seq);
	if (dp_lock >= 0)
		close(dp_lock);
	return rc;
}
