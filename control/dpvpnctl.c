/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dpvpnctl.c - ask dpvpnd for its state (protocol: ctl_proto.h).
 *
 * The grammar is a token table: each command maps to one request and one
 * printer.  Tables are printed with columns sized to their contents; --json
 * prints the result object as dpvpnd sent it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "ctl_proto.h"
#include "dpvpn_proto.h"

#define RECV_TIMEOUT_S	5
#define MAX_COLS	32

struct column {
	const char *title;
	const char *path;	/* member, or "outer.inner" */
};

typedef void (*print_fn)(json_t *result);

struct command {
	const char *words[2];	/* second NULL for one-word commands */
	const char *request;
	print_fn print;
};

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

static void die(const char *fmt, ...)
{
	va_list ap;

	fputs("dpvpnctl: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

/* ---- table printing ---- */

static json_t *get_path(json_t *obj, const char *path)
{
	const char *dot = strchr(path, '.');
	char outer[64];

	if (!dot)
		return json_object_get(obj, path);
	snprintf(outer, sizeof(outer), "%.*s", (int)(dot - path), path);
	return json_object_get(json_object_get(obj, outer), dot + 1);
}

/* Text of a cell into buf; *num set for right-aligned numbers. */
static const char *cell(json_t *v, char *buf, size_t len, int *num)
{
	*num = json_is_integer(v);
	if (json_is_string(v))
		return json_string_value(v);
	if (*num)
		snprintf(buf, len, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
	else if (json_is_boolean(v))
		snprintf(buf, len, "%s", json_is_true(v) ? "yes" : "no");
	else
		snprintf(buf, len, "-");
	return buf;
}

static void col_widths(json_t *rows, const struct column *cols, size_t ncols, int *w)
{
	char buf[32];
	size_t i, c;
	json_t *row;
	int num;

	for (c = 0; c < ncols; c++)
		w[c] = (int)strlen(cols[c].title);
	json_array_foreach(rows, i, row) {
		for (c = 0; c < ncols; c++) {
			int n = (int)strlen(cell(get_path(row, cols[c].path), buf, sizeof(buf),
						 &num));
			if (n > w[c])
				w[c] = n;
		}
	}
}

static void print_table(json_t *rows, const struct column *cols, size_t ncols)
{
	int w[MAX_COLS], num;
	char buf[32];
	size_t i, c;
	json_t *row;

	if (ncols > MAX_COLS)	/* tables are ours: never, but never past w[] either */
		ncols = MAX_COLS;
	col_widths(rows, cols, ncols, w);
	for (c = 0; c < ncols; c++)
		printf("%-*s%s", c + 1 < ncols ? w[c] : 0, cols[c].title,
		       c + 1 < ncols ? "  " : "\n");
	json_array_foreach(rows, i, row) {
		for (c = 0; c < ncols; c++) {
			const char *s = cell(get_path(row, cols[c].path), buf, sizeof(buf), &num);
			int width = c + 1 < ncols || num ? w[c] : 0;

			printf(num ? "%*s%s" : "%-*s%s", width, s, c + 1 < ncols ? "  " : "\n");
		}
	}
	if (json_array_size(rows) == 0)
		printf("(none)\n");
}

#define COLS(c)	c, sizeof(c) / sizeof(c[0])

/* ---- printers ---- */

static json_int_t int_of(json_t *obj, const char *path)
{
	return json_integer_value(get_path(obj, path));
}

static const char *str_of(json_t *obj, const char *path)
{
	const char *s = json_string_value(get_path(obj, path));

	return s ? s : "-";
}

static void print_status(json_t *r)
{
	json_int_t up = int_of(r, "dataplane.uptime_s");

	printf("dpvpnd     %s, pid %" JSON_INTEGER_FORMAT ", config %s\n",
	       str_of(r, "dpvpnd.version"), int_of(r, "dpvpnd.pid"), str_of(r, "dpvpnd.config"));
	printf("dataplane  protocol %" JSON_INTEGER_FORMAT ", %s, up %lldd %02lld:%02lld:%02lld\n",
	       int_of(r, "dataplane.proto_version"),
	       json_is_true(get_path(r, "dataplane.started")) ? "started" : "not started",
	       (long long)up / 86400, (long long)up / 3600 % 24, (long long)up / 60 % 60,
	       (long long)up % 60);
	printf("tables     %" JSON_INTEGER_FORMAT " ports, %" JSON_INTEGER_FORMAT " workers, %"
	       JSON_INTEGER_FORMAT " SAs, %" JSON_INTEGER_FORMAT " policies\n",
	       int_of(r, "dataplane.ports"), int_of(r, "dataplane.workers"),
	       int_of(r, "dataplane.sas"), int_of(r, "dataplane.policies"));
	printf("crypto     %s\n", str_of(r, "dataplane.crypto"));
}

static void print_sa(json_t *r)
{
	static const struct column cols[] = {
		{ "NAME", "name" }, { "DIR", "dir" }, { "SPI", "spi" }, { "CIPHER", "cipher" },
		{ "LOCAL", "local" }, { "REMOTE", "remote" }, { "ENCAP", "encap" },
		{ "ESN", "esn" }, { "LIFE", "life.state" },
		{ "MTU", "mtu" }, { "LOCAL-TS", "local_ts" },
		{ "REMOTE-TS", "remote_ts" }, { "WINDOW", "replay_window" }, { "DF", "df" },
		{ "SEQ", "seq" },
		{ "PACKETS", "packets" }, { "BYTES", "bytes" }, { "REPLAY", "drops.replay" },
		{ "BAD-ICV", "drops.bad-icv" }, { "POLICY", "drops.policy-mismatch" },
		{ "OTHER", "drops.other" },
	};

	json_t *sas = json_object_get(r, "sas"), *sa;
	size_t i;

	print_table(sas, COLS(cols));
	/* NULL encryption is for baselines and debugging: say so loudly. */
	json_array_foreach(sas, i, sa)
		if (json_is_false(json_object_get(sa, "encrypted")))
			printf("WARNING: SA %s (%s, spi %s) uses %s: NOT ENCRYPTED, "
			       "integrity only\n", str_of(sa, "name"), str_of(sa, "dir"),
			       str_of(sa, "spi"), str_of(sa, "cipher"));
}

static void print_ports(json_t *r)
{
	static const struct column cols[] = {
		{ "ID", "id" }, { "NAME", "name" }, { "CONFIG", "config" }, { "IFACE", "iface" },
		{ "ROLE", "role" }, { "ADDRESS", "address" },
		{ "ADDRESS6", "address6" }, { "MAC", "mac" }, { "LINK", "link" },
		{ "RX-PKTS", "rx_packets" }, { "RX-BYTES", "rx_bytes" }, { "TX-PKTS", "tx_packets" },
		{ "TX-BYTES", "tx_bytes" }, { "RX-MISSED", "rx_missed" },
		{ "RX-ERR", "rx_errors" }, { "TX-ERR", "tx_errors" },
	};

	print_table(json_object_get(r, "ports"), COLS(cols));
}

static void print_policies(json_t *r)
{
	static const struct column cols[] = {
		{ "SRC", "src" }, { "DST", "dst" }, { "SPI", "spi" }, { "PRIORITY", "priority" },
	};

	print_table(json_object_get(r, "policies"), COLS(cols));
}

static const char *drop_desc(const char *name)
{
#define DPVPN_X_DESC(e, n, d) if (!strcmp(name, n)) return d;
	DPVPN_DROP_REASONS(DPVPN_X_DESC)
#undef DPVPN_X_DESC
	return "";
}

/* Turn {"name":N,...} into rows [{"name":..,"count":N,"desc":..}]. */
static json_t *drop_rows(json_t *drops)
{
	json_t *rows = json_array(), *v;
	const char *k;

	json_object_foreach(drops, k, v)
		json_array_append_new(rows, json_pack("{s:s,s:O,s:s}", "name", k, "count", v,
						       "desc", drop_desc(k)));
	return rows;
}

static void print_counters(json_t *r)
{
	static const char *const totals[] = {
		"rx_packets", "tx_packets", "encrypted", "decrypted", "arp_in", "arp_out",
	};
	static const struct column cols[] = {
		{ "DROP REASON", "name" }, { "COUNT", "count" }, { "DESCRIPTION", "desc" },
	};
	json_t *rows;

	for (size_t i = 0; i < sizeof(totals) / sizeof(totals[0]); i++)
		printf("%-12s %20" JSON_INTEGER_FORMAT "\n", totals[i], int_of(r, totals[i]));
	printf("\n");
	rows = drop_rows(json_object_get(r, "drops"));
	print_table(rows, COLS(cols));
	json_decref(rows);
}

static void print_routes(json_t *r)
{
	static const struct column cols[] = {
		{ "DST", "dst" }, { "PORT", "port" }, { "VIA", "via" },
	};

	print_table(json_object_get(r, "routes"), COLS(cols));
}

static void print_neighs(json_t *r)
{
	static const struct column cols[] = {
		{ "PORT", "port" }, { "ADDRESS", "address" }, { "MAC", "mac" },
		{ "STATIC", "static" },
	};

	print_table(json_object_get(r, "neighbours"), COLS(cols));
}

static void print_trace(json_t *r)
{
	printf("%s at %s: %" JSON_INTEGER_FORMAT " of %" JSON_INTEGER_FORMAT " written, %"
	       JSON_INTEGER_FORMAT " lost\n",
	       json_is_true(json_object_get(r, "active")) ? "tracing" : "no trace running",
	       str_of(r, "point"), int_of(r, "written"), int_of(r, "wanted"), int_of(r, "lost"));
}

static void print_lcores(json_t *r)
{
	static const struct column cols[] = {
		{ "LCORE", "lcore" }, { "ROLE", "role" }, { "RX-PKTS", "rx_packets" },
		{ "TX-PKTS", "tx_packets" }, { "ENCRYPTED", "encrypted" },
		{ "DECRYPTED", "decrypted" }, { "DROPS", "drops" }, { "BUSY", "busy" },
	};

	print_table(json_object_get(r, "lcores"), COLS(cols));
}

/* show ike: one line per IKE SA, then what was refused, by reason. */
static void print_ike(json_t *r)
{
	json_t *sa, *rej = json_object_get(json_object_get(r, "stats"), "rejected");
	const char *key;
	size_t i;

	printf("%-16s %-12s %-9s %-24s %-10s %-10s %6s %6s %7s\n", "TUNNEL", "STATE", "ROLE",
	       "REMOTE", "CHILD-IN", "CHILD-OUT", "RX", "TX", "RETRANS");
	json_array_foreach(json_object_get(r, "sas"), i, sa) {
		json_t *ch = json_object_get(sa, "child");

		printf("%-16s %-12s %-9s %-24s %-10s %-10s %6" JSON_INTEGER_FORMAT " %6"
		       JSON_INTEGER_FORMAT " %7" JSON_INTEGER_FORMAT "\n", str_of(sa, "name"),
		       str_of(sa, "state"), str_of(sa, "role"), str_of(sa, "remote"),
		       json_is_object(ch) ? str_of(ch, "spi_in") : "-",
		       json_is_object(ch) ? str_of(ch, "spi_out") : "-", int_of(sa, "rx"),
		       int_of(sa, "tx"), int_of(sa, "retransmits"));
	}
	printf("refused:");
	json_object_foreach(rej, key, sa)
		if (json_integer_value(sa) != 0)
			printf(" %s %" JSON_INTEGER_FORMAT, key, json_integer_value(sa));
	printf("\n");
}

/* dpvpnd's message; then, for reload and tunnel up|down, the tunnels by fate. */
static void print_reload(json_t *r)
{
	static const char *const fates[] = { "added", "removed", "changed", "repaired",
					     "unchanged" };

	printf("%s\n", str_of(r, "message"));
	for (size_t f = 0; f < sizeof(fates) / sizeof(fates[0]); f++) {
		json_t *names = json_object_get(r, fates[f]), *n;
		size_t i;

		if (json_array_size(names) == 0)
			continue;
		printf("  %-10s", fates[f]);
		json_array_foreach(names, i, n)
			printf("%s%s", i ? ", " : " ",
			       json_is_string(n) ? json_string_value(n) : "?");
		printf("\n");
	}
}

static const struct command commands[] = {
	{ { "reload", NULL }, "{\"cmd\":\"reload\"}", print_reload },
	{ { "clear", NULL }, "{\"cmd\":\"clear\"}", print_reload },
	{ { "show", "routes" }, "{\"cmd\":\"show\",\"what\":\"routes\"}", print_routes },
	{ { "show", "neighbours" }, "{\"cmd\":\"show\",\"what\":\"neighbours\"}",
	  print_neighs },
	{ { "show", "trace" }, "{\"cmd\":\"show\",\"what\":\"trace\"}", print_trace },
	{ { "show", "lcores" }, "{\"cmd\":\"show\",\"what\":\"lcores\"}", print_lcores },
	{ { "status", NULL }, "{\"cmd\":\"status\"}", print_status },
	{ { "show", "sa" }, "{\"cmd\":\"show\",\"what\":\"sa\"}", print_sa },
	{ { "show", "ports" }, "{\"cmd\":\"show\",\"what\":\"ports\"}", print_ports },
	{ { "show", "counters" }, "{\"cmd\":\"show\",\"what\":\"counters\"}", print_counters },
	{ { "show", "policies" }, "{\"cmd\":\"show\",\"what\":\"policies\"}", print_policies },
	{ { "show", "ike" }, "{\"cmd\":\"show\",\"what\":\"ike\"}", print_ike },
};

/* ---- talking to dpvpnd ---- */

static int connect_to(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct timeval tv = { .tv_sec = RECV_TIMEOUT_S };
	int fd;

	if (strlen(path) >= sizeof(sa.sun_path))
		die("%s: path too long for a UNIX socket", path);
	strcpy(sa.sun_path, path);
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0)
		die("socket: %s", strerror(errno));
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)))
		die("%s: %s (is dpvpnd running?)", path, strerror(errno));
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	return fd;
}

static json_t *request(const char *path, const char *req)
{
	static char buf[CTL_REPLY_MAX + 1];
	json_error_t je;
	json_t *reply;
	ssize_t n;
	int fd = connect_to(path);

	int send_err = 0;

	/* A refused client gets its error reply before it can send: read it. */
	if (send(fd, req, strlen(req), MSG_NOSIGNAL) < 0)
		send_err = errno;
	n = recv(fd, buf, sizeof(buf), MSG_TRUNC);
	if (n <= 0 && send_err)
		die("%s: send: %s", path, strerror(send_err));
	if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
		die("no reply from dpvpnd within %d s", RECV_TIMEOUT_S);
	if (n < 0)
		die("%s: receive: %s", path, strerror(errno));
	if (n == 0)
		die("dpvpnd closed the connection without a reply");
	if (n > CTL_REPLY_MAX)
		die("reply of %zd bytes is larger than %d", n, CTL_REPLY_MAX);
	close(fd);
	reply = json_loadb(buf, (size_t)n, 0, &je);
	if (!reply)
		die("bad reply from dpvpnd: %s", je.text);
	return reply;
}

static json_t *result_of(json_t *reply)
{
	json_t *ok = json_object_get(reply, "ok"), *res;
	const char *err;

	if (!json_is_true(ok)) {
		err = json_string_value(json_object_get(reply, "error"));
		die("%s", err ? err : "dpvpnd replied with an error and no message");
	}
	res = json_object_get(reply, "result");
	if (!json_is_object(res))
		die("bad reply from dpvpnd: no result object");
	return res;
}

/* ---- command line ---- */

static void usage(FILE *out)
{
	fprintf(out, "usage: dpvpnctl [-s SOCKET] [--json] COMMAND\n"
		"commands:\n"
		"  status\n"
		"  show sa | ports | counters | policies | routes | neighbours | lcores | trace\n"
		"       | ike\n"
		"  initiate NAME | terminate NAME | rekey NAME | rekey-ike NAME   a keying = ike\n"
		"              tunnel's IKE SA: start it, end it, rekey its CHILD_SA or itself (root)\n"
		"  route add DST PORT [VIA] | route del DST          (root)\n"
		"  neighbour add PORT ADDRESS MAC | neighbour del PORT ADDRESS   (root)\n"
		"  policy add SRC DST SPI [PRIORITY] | policy del SRC DST      (root)\n"
		"  sa del SPI in|out   (root; SAs are added from the config: tunnel up, reload)\n"
		"  reload      re-read the config, apply what changed (root)\n"
		"  clear       counters shown from now on start at 0 (root)\n"
		"  tunnel NAME up|down   install or remove one tunnel of the config (root)\n"
		"  monitor [N] rates per SA and port and drops, refreshed each second\n"
		"              (N times; default until interrupted)\n"
		"  trace POINT N FILE [SECONDS]   capture N packets at inside-rx, pre-encrypt,\n"
		"              decrypted or outside-tx into a new pcapng FILE (root; default\n"
		"              10 s at most)\n"
		"options:\n"
		"  -s, --socket SOCKET  dpvpnd's control socket (default %s)\n"
		"  --json               print the result as JSON\n", CTL_DEFAULT_SOCKET);
}

static const struct command *find_command(int argc, char **argv)
{
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++) {
		const struct command *c = &commands[i];
		int words = c->words[1] ? 2 : 1;

		if (argc == words && !strcmp(argv[0], c->words[0]) &&
		    (words == 1 || !strcmp(argv[1], c->words[1])))
			return c;
	}
	return NULL;
}

/* ---- trace: start a capture, wait for it, report ---- */

/* req (a JSON object, taken over) sent to dpvpnd; its reply. */
static json_t *request_obj(const char *path, json_t *req)
{
	char *text = req ? json_dumps(req, JSON_COMPACT) : NULL;
	json_t *reply;

	if (text == NULL)
		die("out of memory");
	reply = request(path, text);
	free(text);
	json_decref(req);
	return reply;
}

/*
 * A show request's reply, whole: the tables (sa, ports, policies) come
 * CTL_PAGE entries at a time, with "first" and "total"; ask for the next page
 * until the table is all there (or, if it shrank meanwhile, a page is empty).
 */
static json_t *request_show(const char *path, const char *req_text)
{
	json_t *reply = request(path, req_text);
	json_t *res = json_object_get(reply, "result"), *all = NULL, *total, *v;
	const char *key = NULL, *k;

	total = json_object_get(res, "total");
	json_object_foreach(res, k, v)
		if (json_is_array(v)) {
			key = k;
			all = v;
		}
	if (!json_is_integer(total) || !all)
		return reply;
	while (json_array_size(all) < (size_t)json_integer_value(total)) {
		json_t *req = json_loads(req_text, 0, NULL), *next, *page;

		if (!req || json_object_set_new(req, "first",
						json_integer((json_int_t)json_array_size(all))))
			die("out of memory");
		next = request_obj(path, req);
		page = json_object_get(result_of(next), key);
		if (!json_is_array(page) || json_array_size(page) == 0) {
			json_decref(next);
			break;
		}
		json_array_extend(all, page);
		json_decref(next);
	}
	json_object_set_new(res, "total", json_integer((json_int_t)json_array_size(all)));
	return reply;
}

/* A change request: dpvpnd's message printed (or its error, and exit). */
static int send_change(const char *path, json_t *req)
{
	json_t *reply = request_obj(path, req);

	print_reload(result_of(reply));
	json_decref(reply);
	return 0;
}

static int trace(const char *path, const char *point, int count, const char *file, int seconds)
{
	char abs[4096];
	json_t *reply, *st;
	struct timespec pause = { 0, 100000000 };

	if (file[0] != '/' && getcwd(abs, sizeof(abs) - strlen(file) - 2) != NULL) {
		strcat(abs, "/");
		strcat(abs, file);
		file = abs;
	}
	st = request_obj(path, json_pack("{s:s,s:s,s:i,s:s}", "cmd", "trace", "point", point,
					 "count", count, "file", file));
	result_of(st);		/* dies with dpvpnd's message on an error */
	json_decref(st);
	st = NULL;
	for (int i = 0; i < seconds * 10; i++) {
		json_decref(st);
		st = request(path, "{\"cmd\":\"show\",\"what\":\"trace\"}");
		if (!json_is_true(json_object_get(result_of(st), "active")))
			break;
		nanosleep(&pause, NULL);
	}
	if (json_is_true(json_object_get(result_of(st), "active")))	/* time is up */
		json_decref(request(path, "{\"cmd\":\"trace\",\"point\":\"off\"}"));
	json_decref(st);
	st = request(path, "{\"cmd\":\"show\",\"what\":\"trace\"}");
	reply = result_of(st);
	printf("%" JSON_INTEGER_FORMAT " of %d packets at %s written to %s (%" JSON_INTEGER_FORMAT
	       " lost)\n", json_integer_value(json_object_get(reply, "written")), count, point,
	       file, json_integer_value(json_object_get(reply, "lost")));
	json_decref(st);
	return 0;
}

/* ---- monitor: rates from one-second snapshots, like top ---- */

static json_int_t num(json_t *o, const char *k)
{
	return json_integer_value(json_object_get(o, k));
}

static json_t *snapshot(const char *path, const char *what)
{
	char req[64];

	snprintf(req, sizeof(req), "{\"cmd\":\"show\",\"what\":\"%s\"}", what);
	return request_show(path, req);
}

static void monitor_frame(json_t *sa0, json_t *sa1, json_t *p0, json_t *p1, json_t *c0,
			  json_t *c1, double dt, int tty)
{
	json_t *a0 = json_object_get(result_of(sa0), "sas"), *a1 = json_object_get(result_of(sa1), "sas");
	json_t *q0 = json_object_get(result_of(p0), "ports"), *q1 = json_object_get(result_of(p1), "ports");
	json_t *d0 = json_object_get(result_of(c0), "drops"), *d1 = json_object_get(result_of(c1), "drops");
	json_t *s, *v;
	const char *k;
	size_t i;

	if (tty)
		printf("\033[H\033[2J");
	printf("%-20s %-4s %-10s %12s %12s %10s\n", "TUNNEL", "DIR", "SPI", "PKT/S", "MBIT/S",
	       "DROPS/S");
	json_array_foreach(a1, i, s) {
		json_t *o = json_array_get(a0, i);
		json_t *dr1 = json_object_get(s, "drops"), *dr0 = o ? json_object_get(o, "drops") : NULL;
		double drops = 0;

		json_object_foreach(dr1, k, v)
			drops += (double)(json_integer_value(v) - (dr0 ? num(dr0, k) : 0));
		printf("%-20s %-4s %-10s %12.0f %12.2f %10.0f\n", str_of(s, "name"), str_of(s, "dir"),
		       str_of(s, "spi"), (num(s, "packets") - (o ? num(o, "packets") : 0)) / dt,
		       (num(s, "bytes") - (o ? num(o, "bytes") : 0)) * 8 / dt / 1e6, drops / dt);
	}
	printf("\n%-6s %-24s %12s %12s\n", "PORT", "DEVICE", "RX PKT/S", "TX PKT/S");
	json_array_foreach(q1, i, s) {
		json_t *o = json_array_get(q0, i);

		printf("%-6" JSON_INTEGER_FORMAT " %-24s %12.0f %12.0f\n", num(s, "id"),
		       str_of(s, "name"), (num(s, "rx_packets") - (o ? num(o, "rx_packets") : 0)) / dt,
		       (num(s, "tx_packets") - (o ? num(o, "tx_packets") : 0)) / dt);
	}
	printf("\nDROPS/S");
	json_object_foreach(d1, k, v) {
		double r = (double)(json_integer_value(v) - num(d0, k)) / dt;

		if (r > 0)
			printf("  %s %.0f", k, r);
	}
	printf("\n");
	fflush(stdout);
}

static int monitor(const char *path, int frames)
{
	json_t *sa0 = snapshot(path, "sa"), *p0 = snapshot(path, "ports");
	json_t *c0 = snapshot(path, "counters");
	struct timespec t0, t1;
	int tty = isatty(STDOUT_FILENO);

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (int n = 0; frames < 0 || n < frames; n++) {
		json_t *sa1, *p1, *c1;

		sleep(1);
		sa1 = snapshot(path, "sa");
		p1 = snapshot(path, "ports");
		c1 = snapshot(path, "counters");
		clock_gettime(CLOCK_MONOTONIC, &t1);
		monitor_frame(sa0, sa1, p0, p1, c0, c1, (double)(t1.tv_sec - t0.tv_sec) +
			      (t1.tv_nsec - t0.tv_nsec) / 1e9, tty);
		json_decref(sa0);
		json_decref(p0);
		json_decref(c0);
		sa0 = sa1;
		p0 = p1;
		c0 = c1;
		t0 = t1;
	}
	json_decref(sa0);
	json_decref(p0);
	json_decref(c0);
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "socket", required_argument, NULL, 's' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *path = CTL_DEFAULT_SOCKET;
	const struct command *cmd;
	int c, json = 0;
	json_t *reply;

	while ((c = getopt_long(argc, argv, "s:h", longopts, NULL)) != -1) {
		switch (c) {
		case 's': path = optarg; break;
		case 'j': json = 1; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (argc - optind == 2 && (!strcmp(argv[optind], "initiate") ||
				   !strcmp(argv[optind], "terminate") ||
				   !strcmp(argv[optind], "rekey") ||
				   !strcmp(argv[optind], "rekey-ike")))
		return send_change(path, json_pack("{s:s,s:s,s:s}", "cmd", "ike", "op",
						   argv[optind], "name", argv[optind + 1]));
	if (argc - optind == 3 && !strcmp(argv[optind], "tunnel") &&
	    (!strcmp(argv[optind + 2], "up") || !strcmp(argv[optind + 2], "down"))) {
		return send_change(path, json_pack("{s:s,s:s,s:s}", "cmd", "tunnel", "name",
						   argv[optind + 1], "state", argv[optind + 2]));
	}
	if (argc - optind >= 3 && (!strcmp(argv[optind], "route") ||
				   !strcmp(argv[optind], "neighbour"))) {
		int route = !strcmp(argv[optind], "route"), add = !strcmp(argv[optind + 1], "add");
		int n = argc - optind;
		json_t *req;

		if ((!add && strcmp(argv[optind + 1], "del")) ||
		    (route && (add ? n < 4 || n > 5 : n != 3)) ||
		    (!route && (add ? n != 5 : n != 4))) {
			usage(stderr);
			return 2;
		}
		req = route ? json_pack("{s:s,s:s,s:s,s:i,s:s?}", "cmd", "route", "op",
					argv[optind + 1], "dst", argv[optind + 2], "port",
					add ? atoi(argv[optind + 3]) : 0,
					"via", add && n == 5 ? argv[optind + 4] : NULL) :
			      json_pack("{s:s,s:s,s:i,s:s,s:s?}", "cmd", "neighbour", "op",
					argv[optind + 1], "port", atoi(argv[optind + 2]),
					"address", argv[optind + 3],
					"mac", add ? argv[optind + 4] : NULL);
		return send_change(path, req);
	}
	if (argc - optind >= 3 && (!strcmp(argv[optind], "policy") || !strcmp(argv[optind], "sa"))) {
		int n = argc - optind, policy = !strcmp(argv[optind], "policy");
		int add = !strcmp(argv[optind + 1], "add");
		json_t *req = NULL;

		if (policy && add && (n == 5 || n == 6))
			req = json_pack("{s:s,s:s,s:s,s:s,s:s,s:i}", "cmd", "policy", "op", "add",
					"src", argv[optind + 2], "dst", argv[optind + 3],
					"spi", argv[optind + 4], "priority",
					n == 6 ? atoi(argv[optind + 5]) : 100);
		else if (policy && !strcmp(argv[optind + 1], "del") && n == 4)
			req = json_pack("{s:s,s:s,s:s,s:s}", "cmd", "policy", "op", "del",
					"src", argv[optind + 2], "dst", argv[optind + 3]);
		else if (!policy && !strcmp(argv[optind + 1], "del") && n == 4)
			req = json_pack("{s:s,s:s,s:s,s:s}", "cmd", "sa", "op", "del",
					"spi", argv[optind + 2], "dir", argv[optind + 3]);
		if (req == NULL) {
			usage(stderr);
			return 2;
		}
		return send_change(path, req);
	}
	if (argc - optind >= 4 && argc - optind <= 5 && !strcmp(argv[optind], "trace"))
		return trace(path, argv[optind + 1], atoi(argv[optind + 2]), argv[optind + 3],
			     argc - optind == 5 ? atoi(argv[optind + 4]) : 10);
	if (argc - optind >= 1 && argc - optind <= 2 && !strcmp(argv[optind], "monitor"))
		return monitor(path, argc - optind == 2 ? atoi(argv[optind + 1]) : -1);
	cmd = find_command(argc - optind, argv + optind);
	if (!cmd) {
		const char *second = optind + 1 < argc ? argv[optind + 1] : NULL;

		if (optind < argc)
			fprintf(stderr, "dpvpnctl: unknown command '%s%s%s'\n", argv[optind],
				second ? " " : "", second ? second : "");
		usage(stderr);
		return 2;
	}
	reply = request_show(path, cmd->request);
	if (json)
		json_dumpf(result_of(reply), stdout, JSON_INDENT(2));
	if (json)
		putchar('\n');
	else
		cmd->print(result_of(reply));
	json_decref(reply);
	return 0;
}
