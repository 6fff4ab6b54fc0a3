/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dpvpnctl.c - ask dpvpnd for its state (protocol: ctl_proto.h).
 *
 * The grammar is a token table: each command maps to one request and one
 * printer.  Tables are printed with columns sized to their contents and, by
 * default, fit in WIDTH columns: the columns marked wide only come with -w,
 * and names are cut (ending in '~', a character no name may hold) where the
 * rest would not fit.  Numbers are in human units (1.4 GiB, 12.3 Mpps) unless
 * -n; --json prints the result object as dpvpnd sent it, raw.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "ctl_proto.h"
#include "dpvpn_git.h"
#include "dpvpn_proto.h"
#include "genkey.h"

#define RECV_TIMEOUT_S	5
#define MAX_COLS	32
#define WIDTH		100	/* columns of a default table or line */
#define CUT_MIN		8	/* a name is cut to no fewer characters than this */
#define CELL_MAX	64	/* a formatted number, or a name (31) */

/* How a cell's value is shown: human units unless -n. */
enum unit {
	U_TEXT,		/* as it is */
	U_INT,		/* an id, a size: plain */
	U_COUNT,	/* packets: plain below a million, then 1.2M */
	U_BYTES,	/* IEC: 1.4 GiB */
	U_SHARE,	/* 0..1 as 37.5 %; -n: 0.375 */
	U_AGE,		/* milliseconds ago: 0.4 s, 12 min; null: never */
	U_SECONDS,	/* seconds: as U_AGE */
};

#define COL_WIDE	1	/* only with -w */
#define COL_CUT		2	/* text that may be cut to fit WIDTH */

struct column {
	const char *title;
	const char *path;	/* member, or "outer.inner" */
	uint8_t unit;		/* enum unit */
	uint8_t flags;		/* COL_* */
};

typedef void (*print_fn)(json_t *result);

struct command {
	const char *words[2];	/* second NULL for one-word commands */
	const char *request;
	print_fn print;
};

static struct {
	int wide;	/* -w: every column, nothing cut */
	int numeric;	/* -n: raw numbers */
	int all;	/* --all: show counters lists reasons at 0 too */
	int json;	/* --json: the result object as dpvpnd sent it */
} opt;

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

/* ---- human units ---- */

/* v with one decimal below 100 and none above, after dividing by step while it
 * is that big: "1.4 GiB", "12.3 Mpps", "950 bit/s". */
static const char *scaled(double v, double step, const char *const *prefix, const char *unit,
			  char *buf, size_t len)
{
	int p = 0;

	while (v >= step && prefix[p + 1] != NULL) {
		v /= step;
		p++;
	}
	snprintf(buf, len, p == 0 || v >= 99.95 ? "%.0f %s%s" : "%.1f %s%s", v, prefix[p], unit);
	return buf;
}

static const char *bytes_text(uint64_t v, char *buf, size_t len)
{
	static const char *const iec[] = { "", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei", NULL };

	if (opt.numeric) {
		snprintf(buf, len, "%llu", (unsigned long long)v);
		return buf;
	}
	return scaled((double)v, 1024, iec, "B", buf, len);
}

/* Packets a second, bits a second: "12.3 Mpps", "1.4 Gbit/s"; -n: "12345678". */
static const char *rate_text(double v, const char *unit, char *buf, size_t len)
{
	static const char *const si[] = { "", "k", "M", "G", "T", NULL };

	if (opt.numeric) {
		snprintf(buf, len, "%.0f", v);
		return buf;
	}
	return scaled(v < 0 ? 0 : v, 1000, si, unit, buf, len);
}

static const char *count_text(uint64_t v, char *buf, size_t len)
{
	static const char *const si[] = { "", "k", "M", "G", "T", "P", "E", NULL };

	if (opt.numeric || v < 1000000) {
		snprintf(buf, len, "%llu", (unsigned long long)v);
		return buf;
	}
	scaled((double)v, 1000, si, "", buf, len);
	memmove(strchr(buf, ' '), strchr(buf, ' ') + 1, strlen(strchr(buf, ' ')));	/* 1.2M */
	return buf;
}

/* Milliseconds ago; NULL for "none yet" (the caller says how). */
static const char *age_text(json_t *ms, char *buf, size_t len)
{
	unsigned long long v = (unsigned long long)json_integer_value(ms);

	if (!json_is_integer(ms))
		return NULL;
	if (opt.numeric)
		snprintf(buf, len, "%llu ms", v);
	else if (v < 10000)
		snprintf(buf, len, "%.1f s", (double)v / 1000);
	else if (v < 120000)
		snprintf(buf, len, "%llu s", v / 1000);
	else if (v < 2 * 3600000ULL)
		snprintf(buf, len, "%llu min", v / 60000);
	else if (v < 2 * 86400000ULL)
		snprintf(buf, len, "%llu h", v / 3600000);
	else
		snprintf(buf, len, "%llu d", v / 86400000);
	return buf;
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

/* Text of a cell into buf, in its column's unit; *num set for right-aligned numbers. */
static const char *cell(json_t *v, enum unit unit, char *buf, size_t len, int *num)
{
	uint64_t u = json_is_integer(v) ? (uint64_t)json_integer_value(v) : 0;

	*num = json_is_number(v);
	if (json_is_string(v))
		return json_string_value(v);
	if (json_is_boolean(v))
		return json_is_true(v) ? "yes" : "no";
	if (json_is_integer(v) && unit == U_BYTES)
		return bytes_text(u, buf, len);
	if (json_is_integer(v) && unit == U_COUNT)
		return count_text(u, buf, len);
	if (json_is_integer(v) && unit == U_SECONDS) {
		json_t *ms = json_integer((json_int_t)(u * 1000));

		age_text(ms, buf, len);
		json_decref(ms);
		return buf;
	}
	if (unit == U_AGE) {
		*num = 1;
		return json_is_integer(v) ? age_text(v, buf, len) : "never";
	}
	if (json_is_real(v) && unit == U_SHARE && !opt.numeric)
		snprintf(buf, len, "%.1f%%", json_real_value(v) * 100);
	else if (json_is_real(v))
		snprintf(buf, len, "%.3f", json_real_value(v));
	else if (json_is_integer(v))
		snprintf(buf, len, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
	else
		return "-";
	return buf;
}

/* The columns shown: all with -w, else those not marked wide. */
static size_t shown_columns(const struct column *all, size_t n, const struct column **cols)
{
	size_t k = 0;

	for (size_t c = 0; c < n && k < MAX_COLS; c++)
		if (opt.wide || !(all[c].flags & COL_WIDE))
			cols[k++] = &all[c];
	return k;
}

static void col_widths(json_t *rows, const struct column **cols, size_t ncols, int *w)
{
	char buf[CELL_MAX];
	size_t i, c;
	json_t *row;
	int num;

	for (c = 0; c < ncols; c++)
		w[c] = (int)strlen(cols[c]->title);
	json_array_foreach(rows, i, row) {
		for (c = 0; c < ncols; c++) {
			int n = (int)strlen(cell(get_path(row, cols[c]->path), cols[c]->unit, buf,
						 sizeof(buf), &num));
			if (n > w[c])
				w[c] = n;
		}
	}
}

/* Over WIDTH: the columns that may be cut give up what is too much, in order. */
static void fit(const struct column **cols, size_t ncols, int *w)
{
	int total = 2 * ((int)ncols - 1);

	for (size_t c = 0; c < ncols; c++)
		total += w[c];
	for (size_t c = 0; c < ncols && total > WIDTH; c++) {
		int least = (int)strlen(cols[c]->title) > CUT_MIN ? (int)strlen(cols[c]->title) :
			    CUT_MIN;
		int give = w[c] - least < total - WIDTH ? w[c] - least : total - WIDTH;

		if ((cols[c]->flags & COL_CUT) && give > 0) {
			w[c] -= give;
			total -= give;
		}
	}
}

/* s in a column of width w: cut to w with a final '~' if it is longer. */
static const char *cut(const char *s, int w, char *buf, size_t len)
{
	if ((int)strlen(s) <= w || w < 2)
		return s;
	snprintf(buf, len, "%.*s~", w - 1, s);
	return buf;
}

static void print_row(json_t *row, const struct column **cols, size_t ncols, const int *w)
{
	char buf[CELL_MAX], short_[CELL_MAX];
	int num;

	for (size_t c = 0; c < ncols; c++) {
		const char *s = cell(get_path(row, cols[c]->path), cols[c]->unit, buf, sizeof(buf),
				     &num);
		int width = c + 1 < ncols || num ? w[c] : 0;

		s = cut(s, w[c], short_, sizeof(short_));
		printf(num ? "%*s%s" : "%-*s%s", width, s, c + 1 < ncols ? "  " : "\n");
	}
}

static void print_table(json_t *rows, const struct column *all, size_t nall)
{
	const struct column *cols[MAX_COLS];
	size_t ncols = shown_columns(all, nall, cols), i;
	int w[MAX_COLS];
	json_t *row;

	col_widths(rows, cols, ncols, w);
	if (!opt.wide)
		fit(cols, ncols, w);
	for (size_t c = 0; c < ncols; c++)
		printf("%-*s%s", c + 1 < ncols ? w[c] : 0, cols[c]->title,
		       c + 1 < ncols ? "  " : "\n");
	json_array_foreach(rows, i, row)
		print_row(row, cols, ncols, w);
	if (json_array_size(rows) == 0)
		printf("(none)\n");
}

#define COLS(c)	c, sizeof(c) / sizeof(c[0])

/*
 * "  label: text", folded at spaces to WIDTH (unless -w), continued lines
 * indented under the text.
 */
static void field(const char *label, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void field(const char *label, const char *fmt, ...)
{
	char *text = NULL;
	int col = printf("  %s: ", label), indent = 4;
	const char *s;
	va_list ap;

	va_start(ap, fmt);
	if (vasprintf(&text, fmt, ap) < 0)	/* whole, however long: never cut */
		text = NULL;
	va_end(ap);
	if (text == NULL)
		die("out of memory");
	s = text;
	while (*s) {
		size_t word = strcspn(s, " ");

		if (col > indent && !opt.wide && col + 1 + (int)word > WIDTH) {
			col = printf("\n%*s", indent, "") - 1;
		} else if (s != text) {
			col += printf(" ");
		}
		col += printf("%.*s", (int)word, s);
		s += word;
		s += strspn(s, " ");
	}
	printf("\n");
	free(text);
}

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

/* The sum of an object's integer members, as "KEY" of each element of rows. */
static void add_sum(json_t *rows, const char *obj, const char *key)
{
	json_t *row, *v;
	const char *k;
	size_t i;

	json_array_foreach(rows, i, row) {
		json_int_t sum = 0;

		json_object_foreach(json_object_get(row, obj), k, v)
			sum += json_integer_value(v);
		json_object_set_new(row, key, json_integer(sum));
	}
}

static void print_sa(json_t *r)
{
	static const struct column cols[] = {
		{ "NAME", "name", U_TEXT, COL_CUT }, { "DIR", "dir", U_TEXT, 0 },
		{ "SPI", "spi", U_TEXT, 0 }, { "CIPHER", "cipher", U_TEXT, 0 },
		{ "LOCAL", "local", U_TEXT, COL_WIDE }, { "REMOTE", "remote", U_TEXT, COL_WIDE },
		{ "ENCAP", "encap", U_TEXT, COL_WIDE }, { "ESN", "esn", U_TEXT, COL_WIDE },
		{ "LIFE", "life.state", U_TEXT, 0 }, { "MTU", "mtu", U_INT, COL_WIDE },
		{ "LOCAL-TS", "local_ts", U_TEXT, COL_WIDE },
		{ "REMOTE-TS", "remote_ts", U_TEXT, COL_WIDE },
		{ "WINDOW", "replay_window", U_INT, COL_WIDE }, { "DF", "df", U_TEXT, COL_WIDE },
		{ "SEQ", "seq", U_INT, COL_WIDE },
		{ "PACKETS", "packets", U_COUNT, 0 }, { "BYTES", "bytes", U_BYTES, 0 },
		{ "LAST-PKT", "last_packet_ms", U_AGE, 0 },
		{ "DROPS", "drops_total", U_COUNT, 0 },
		{ "REPLAY", "drops.replay", U_COUNT, COL_WIDE },
		{ "BAD-ICV", "drops.bad-icv", U_COUNT, COL_WIDE },
		{ "POLICY", "drops.policy-mismatch", U_COUNT, COL_WIDE },
		{ "OTHER", "drops.other", U_COUNT, COL_WIDE },
	};

	json_t *sas = json_object_get(r, "sas"), *sa;
	size_t i;

	add_sum(sas, "drops", "drops_total");
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
		{ "ID", "id", U_INT, 0 }, { "NAME", "name", U_TEXT, COL_CUT },
		{ "CONFIG", "config", U_TEXT, COL_CUT }, { "IFACE", "iface", U_TEXT, COL_CUT },
		{ "ROLE", "role", U_TEXT, 0 }, { "ADDRESS", "address", U_TEXT, COL_WIDE },
		{ "ADDRESS6", "address6", U_TEXT, COL_WIDE },
		{ "EXTRA", "extra_addresses", U_TEXT, COL_WIDE },
		{ "MAC", "mac", U_TEXT, COL_WIDE },
		{ "LINK", "link", U_TEXT, 0 },
		{ "RX-PKTS", "rx_packets", U_COUNT, 0 }, { "RX-BYTES", "rx_bytes", U_BYTES, 0 },
		{ "TX-PKTS", "tx_packets", U_COUNT, 0 }, { "TX-BYTES", "tx_bytes", U_BYTES, 0 },
		{ "RX-MISSED", "rx_missed", U_COUNT, 0 },
		{ "RX-ERR", "rx_errors", U_COUNT, COL_WIDE },
		{ "TX-ERR", "tx_errors", U_COUNT, COL_WIDE },
		{ "CSUM-DONE", "csum_completed", U_COUNT, COL_WIDE },
		{ "HOST", "host_interface", U_TEXT, COL_WIDE },
		{ "HOST-LINK", "host_link", U_TEXT, COL_WIDE },
		{ "HOST-IN", "host_in", U_COUNT, COL_WIDE },
		{ "HOST-OUT", "host_out", U_COUNT, COL_WIDE },
	};

	print_table(json_object_get(r, "ports"), COLS(cols));
}

static void print_policies(json_t *r)
{
	static const struct column cols[] = {
		{ "SRC", "src", U_TEXT, 0 }, { "DST", "dst", U_TEXT, 0 },
		{ "SPI", "spi", U_TEXT, 0 }, { "PRIORITY", "priority", U_INT, 0 },
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

/* Turn {"name":N,...} into rows [{"name":..,"count":N,"desc":..}]: those not
 * at 0, or (--all) every one; how many were left out in *hidden. */
static json_t *drop_rows(json_t *drops, size_t *hidden)
{
	json_t *rows = json_array(), *v;
	const char *k;

	*hidden = 0;
	json_object_foreach(drops, k, v) {
		if (json_integer_value(v) == 0 && !opt.all) {
			(*hidden)++;
			continue;
		}
		json_array_append_new(rows, json_pack("{s:s,s:O,s:s}", "name", k, "count", v,
						       "desc", drop_desc(k)));
	}
	return rows;
}

static void print_counters(json_t *r)
{
	static const char *const totals[] = {
		"rx_packets", "tx_packets", "encrypted", "decrypted", "arp_in", "arp_out",
	};
	static const struct column cols[] = {
		{ "REASON", "name", U_TEXT, 0 }, { "COUNT", "count", U_COUNT, 0 },
		{ "DESCRIPTION", "desc", U_TEXT, COL_CUT },
	};
	char buf[CELL_MAX];
	size_t hidden;
	json_t *rows;

	for (size_t i = 0; i < sizeof(totals) / sizeof(totals[0]); i++)
		printf("%-12s %10s\n", totals[i],
		       count_text((uint64_t)int_of(r, totals[i]), buf, sizeof(buf)));
	printf("\n");
	rows = drop_rows(json_object_get(r, "drops"), &hidden);
	if (json_array_size(rows) == 0)
		printf("no drops\n");
	else
		print_table(rows, COLS(cols));
	if (hidden > 0)
		printf("\n%zu reasons at 0 not shown (--all lists them)\n", hidden);
	json_decref(rows);
}

static void print_routes(json_t *r)
{
	static const struct column cols[] = {
		{ "DST", "dst", U_TEXT, 0 }, { "PORT", "port", U_INT, 0 },
		{ "VIA", "via", U_TEXT, 0 }, { "TUNNELS", "tunnels_text", U_TEXT, 0 },
	};
	json_t *rt, *t, *routes = json_object_get(r, "routes");
	size_t i, k;

	/* a route into tunnels: their names, "t1,t2" (ECMP) */
	json_array_foreach(routes, i, rt) {
		char list[8 * 40] = "";
		size_t n = 0;

		json_array_foreach(json_object_get(rt, "tunnels"), k, t)
			if (n + 40 < sizeof(list))
				n += (size_t)snprintf(list + n, sizeof(list) - n, "%s%.32s",
						      k ? "," : "", json_string_value(t) ?
						      json_string_value(t) : "?");
		if (n > 0)
			json_object_set_new(rt, "tunnels_text", json_string(list));
	}
	print_table(routes, COLS(cols));
}

static void print_neighs(json_t *r)
{
	static const struct column cols[] = {
		{ "PORT", "port", U_INT, 0 }, { "ADDRESS", "address", U_TEXT, 0 },
		{ "MAC", "mac", U_TEXT, 0 }, { "STATIC", "static", U_TEXT, 0 },
	};

	print_table(json_object_get(r, "neighbours"), COLS(cols));
}

/* The running trace, or the last one (its point and counts), or none since the start. */
static void print_trace(json_t *r)
{
	bool active = json_is_true(json_object_get(r, "active"));

	if (!active && !json_is_string(json_object_get(r, "last_point"))) {
		printf("no trace running (none since the dataplane started)\n");
		return;
	}
	printf("%s at %s: %" JSON_INTEGER_FORMAT " of %" JSON_INTEGER_FORMAT " packets written, %"
	       JSON_INTEGER_FORMAT " lost\n", active ? "tracing" : "no trace running; the last",
	       str_of(r, "last_point"), int_of(r, "written"), int_of(r, "wanted"),
	       int_of(r, "lost"));
}

static void print_lcores(json_t *r)
{
	static const struct column cols[] = {
		{ "LCORE", "lcore", U_INT, 0 }, { "ROLE", "role", U_TEXT, 0 },
		{ "RX-PKTS", "rx_packets", U_COUNT, 0 }, { "TX-PKTS", "tx_packets", U_COUNT, 0 },
		{ "ENCRYPTED", "encrypted", U_COUNT, 0 }, { "DECRYPTED", "decrypted", U_COUNT, 0 },
		{ "DROPS", "drops", U_COUNT, 0 }, { "BUSY", "busy", U_SHARE, 0 },
	};

	print_table(json_object_get(r, "lcores"), COLS(cols));
}

/* IKE fragments (RFC 7383): sent, received, reassembled, then drops by reason. */
static void print_ike_frags(json_t *f)
{
	json_t *v;
	const char *key;

	if (f == NULL)
		return;
	printf("fragments: tx %" JSON_INTEGER_FORMAT " rx %" JSON_INTEGER_FORMAT
	       " reassembled %" JSON_INTEGER_FORMAT "; dropped:", int_of(f, "tx"),
	       int_of(f, "rx"), int_of(f, "reassembled"));
	json_object_foreach(json_object_get(f, "dropped"), key, v)
		if (json_integer_value(v) != 0)
			printf(" %s %" JSON_INTEGER_FORMAT, key, json_integer_value(v));
	printf("\n");
}

/* remote access: one line per client (show ike; show tunnels under its connection). */
static void print_clients(json_t *clients)
{
	static const struct column cols[] = {
		{ "CLIENT", "name", U_TEXT, COL_CUT }, { "IDENTITY", "identity", U_TEXT, COL_CUT },
		{ "OUTER", "outer", U_TEXT, 0 }, { "VIP", "vip", U_TEXT, 0 },
		{ "CHILD-IN", "spi_in", U_TEXT, COL_WIDE },
		{ "CHILD-OUT", "spi_out", U_TEXT, COL_WIDE },
		{ "BYTES-IN", "bytes_in", U_BYTES, 0 }, { "BYTES-OUT", "bytes_out", U_BYTES, 0 },
		{ "SINCE", "since_s", U_SECONDS, 0 },
		{ "PROPOSAL", "proposal", U_TEXT, COL_WIDE },
		{ "REKEYS", "rekeys", U_COUNT, COL_WIDE },
	};

	printf("\nremote-access clients:\n");
	print_table(clients, COLS(cols));
	printf("\n");
}

/* show ike: one line per IKE SA, then what was refused, by reason, and IKE fragments. */
static void print_ike(json_t *r)
{
	static const struct column cols[] = {
		{ "TUNNEL", "name", U_TEXT, COL_CUT }, { "STATE", "state", U_TEXT, 0 },
		{ "ROLE", "role", U_TEXT, 0 }, { "REMOTE", "remote", U_TEXT, 0 },
		{ "CHILD-IN", "child.spi_in", U_TEXT, 0 },
		{ "CHILD-OUT", "child.spi_out", U_TEXT, 0 },
		{ "RX", "rx", U_COUNT, 0 }, { "TX", "tx", U_COUNT, 0 },
		{ "RETRANS", "retransmits", U_COUNT, 0 },
		{ "PROPOSAL", "proposal", U_TEXT, COL_CUT },
		{ "REKEYS", "child_rekeys", U_COUNT, COL_WIDE },
		{ "NAT-LOCAL", "nat_local", U_TEXT, COL_WIDE },
		{ "NAT-REMOTE", "nat_remote", U_TEXT, COL_WIDE },
	};
	json_t *v, *rej = json_object_get(json_object_get(r, "stats"), "rejected");
	const char *key;

	print_table(json_object_get(r, "sas"), COLS(cols));
	if (json_array_size(json_object_get(r, "clients")) > 0)
		print_clients(json_object_get(r, "clients"));
	printf("refused:");
	json_object_foreach(rej, key, v)
		if (json_integer_value(v) != 0)
			printf(" %s %" JSON_INTEGER_FORMAT, key, json_integer_value(v));
	printf("\n");
	print_ike_frags(json_object_get(json_object_get(r, "stats"), "fragments"));
}

/* "1.4 GiB, 12 packets, last packet 0.3 s ago" of a tunnel's direction. */
static void print_way(const char *label, json_t *w)
{
	char b[CELL_MAX], p[CELL_MAX], a[CELL_MAX];
	const char *age = age_text(json_object_get(w, "last_packet_ms"), a, sizeof(a));

	json_int_t packets = int_of(w, "packets");

	field(label, "%s%s, %s packet%s, %s%s%s",
	      bytes_text((uint64_t)int_of(w, "bytes"), b, sizeof(b)), opt.numeric ? " bytes" : "",
	      count_text((uint64_t)packets, p, sizeof(p)), packets == 1 ? "" : "s",
	      age ? "last packet " : "no packet yet", age ? age : "", age ? " ago" : "");
}

/* A remote-access client's tunnel: who holds the lease, from where, since when. */
static void print_client_of(json_t *c)
{
	char since[CELL_MAX];
	json_t *ms;

	if (!json_is_object(c))
		return;
	ms = json_integer(int_of(c, "since_s") * 1000);
	field("client", "%s at %s, lease %s, up %s", json_is_string(json_object_get(c, "identity"))
	      ? str_of(c, "identity") : "(identity not known)", str_of(c, "outer"),
	      str_of(c, "vip"), age_text(ms, since, sizeof(since)));
	json_decref(ms);
}

/* One client of a remote-access tunnel, a line as wg show has a peer. */
static void print_client_line(json_t *c)
{
	char since[CELL_MAX], bi[CELL_MAX], bo[CELL_MAX];
	json_t *ms = json_integer(int_of(c, "since_s") * 1000);

	field("client", "%s at %s, lease %s, SAs %s in, %s out, %s%s in, %s%s out, up %s (%s)",
	      json_is_string(json_object_get(c, "identity")) ? str_of(c, "identity") :
	      "(identity not known)", str_of(c, "outer"), str_of(c, "vip"), str_of(c, "spi_in"),
	      str_of(c, "spi_out"), bytes_text((uint64_t)int_of(c, "bytes_in"), bi, sizeof(bi)),
	      opt.numeric ? " bytes" : "", bytes_text((uint64_t)int_of(c, "bytes_out"), bo,
	      sizeof(bo)), opt.numeric ? " bytes" : "", age_text(ms, since, sizeof(since)),
	      str_of(c, "name"));
	json_decref(ms);
}

/* "aes128-gcm (ESP aes128gcm16, IKE aes128gcm16-prfsha256-x25519), keyed by IKE ..." */
static void print_ike_cipher(json_t *t)
{
	json_t *esp = json_object_get(json_object_get(t, "esp"), "proposal");
	json_t *ike = json_object_get(json_object_get(t, "ike"), "proposal");

	if (json_is_string(esp) || json_is_string(ike))
		field("cipher", "%s (ESP %s, IKE %s), keyed by IKE (IKE SA: %s)",
		      str_of(t, "cipher"), json_is_string(esp) ? json_string_value(esp) : "-",
		      json_is_string(ike) ? json_string_value(ike) : "-", str_of(t, "ike_state"));
	else
		field("cipher", "%s, keyed by IKE (IKE SA: %s)", str_of(t, "cipher"),
		      str_of(t, "ike_state"));
}

/* show tunnels: a block per tunnel, as wg show and swanctl --list-conns. */
static void print_tunnel(json_t *t)
{
	json_t *sa, *sas = json_object_get(t, "sas");
	char list[1024] = "";
	size_t i, n = 0;

	printf("tunnel: %s\n", str_of(t, "name"));
	if (json_is_string(json_object_get(t, "reason")))
		field("state", "%s (%s): %s", str_of(t, "state"), str_of(t, "reason"),
		      str_of(t, "detail"));
	else if (json_is_array(json_object_get(t, "clients")))
		field("state", "%s, %zu client%s", str_of(t, "state"),
		      json_array_size(json_object_get(t, "clients")),
		      json_array_size(json_object_get(t, "clients")) == 1 ? "" : "s");
	else
		field("state", "%s", str_of(t, "state"));
	print_client_of(json_object_get(t, "client"));
	if (json_is_string(json_object_get(t, "remote")))
		field("peer", "%s (local %s)", str_of(t, "remote"), str_of(t, "local"));
	if (json_is_string(json_object_get(t, "ike_state")))
		print_ike_cipher(t);
	else if (json_is_string(json_object_get(t, "keying")))
		field("cipher", "%s, %s keys", str_of(t, "cipher"), str_of(t, "keying"));
	if (json_is_string(json_object_get(t, "local_ts")))
		field("traffic", "%s <-> %s", str_of(t, "local_ts"), str_of(t, "remote_ts"));
	else if (json_is_string(json_object_get(t, "mode")) &&
		 !strcmp(str_of(t, "mode"), "route"))
		field("traffic", "routed (mode = route, rpf %s): show routes", str_of(t, "rpf"));
	if (json_is_object(json_object_get(t, "interface"))) {
		json_t *f = json_object_get(t, "interface");

		field("interface", "%s, %" JSON_INTEGER_FORMAT " packets routed into it, %"
		      JSON_INTEGER_FORMAT " decrypted from it, %" JSON_INTEGER_FORMAT
		      " dropped while down; twin %s", json_is_true(json_object_get(f, "up")) ? "up" : "down",
		      json_integer_value(json_object_get(f, "packets_out")),
		      json_integer_value(json_object_get(f, "packets_in")),
		      json_integer_value(json_object_get(f, "down_drops")),
		      json_is_string(json_object_get(f, "host_interface")) ?
		      str_of(f, "host_interface") : "none");
	}
	if (json_is_true(json_object_get(t, "host_access")))
		field("host", "host-access: what it decrypts for the gateway goes to the host");
	if (json_is_string(json_object_get(t, "config_error")))
		field("config", "refused at the last reload, the running one is kept: %s",
		      str_of(t, "config_error"));
	json_array_foreach(sas, i, sa)
		if (n + 32 < sizeof(list))
			n += (size_t)snprintf(list + n, sizeof(list) - n, "%s%s %s", i ? ", " : "",
					      str_of(sa, "spi"), str_of(sa, "dir"));
	if (json_array_size(sas) > 0) {
		field("SAs", "%s", list);
		print_way("in", json_object_get(t, "in"));
		print_way("out", json_object_get(t, "out"));
	}
	json_array_foreach(json_object_get(t, "clients"), i, sa)
		print_client_line(sa);
	if (json_is_array(json_object_get(t, "clients")) &&
	    json_is_string(json_object_get(t, "last_ike_end")))
		field("last IKE SA end", "%s", str_of(t, "last_ike_end"));
}

static void print_tunnels(json_t *r)
{
	json_t *t, *refused = json_object_get(r, "config_refused");
	size_t i;

	json_array_foreach(json_object_get(r, "tunnels"), i, t) {
		if (i > 0)
			printf("\n");
		print_tunnel(t);
	}
	if (json_array_size(json_object_get(r, "tunnels")) == 0)
		printf("no tunnels\n");
	if (json_is_object(refused)) {
		printf("\n");
		field("config", "refused at the last reload (%" JSON_INTEGER_FORMAT " errors, the "
		      "first: %s): the running config is kept", int_of(refused, "errors"),
		      str_of(refused, "first"));
	}
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

/* A member's text, "" if it has none. */
static const char *ha_str(json_t *o, const char *k)
{
	const char *v = json_string_value(json_object_get(o, k));

	return v ? v : "";
}

static long long ha_num(json_t *o, const char *k)
{
	return (long long)json_integer_value(json_object_get(o, k));
}

/* show ha: this node's role, its peer, the sync channel, the last takeover. */
static void print_ha(json_t *r)
{
	json_t *p = json_object_get(r, "peer"), *t = json_object_get(r, "last_takeover");

	printf("node %s: %s, priority %lld, epoch %lld\n", ha_str(r, "node"), ha_str(r, "role"),
	       ha_num(r, "priority"), ha_num(r, "epoch"));
	printf("peer %s (%s): %s; sync channel %s%s%s\n", ha_str(p, "address"),
	       *ha_str(p, "node") ? ha_str(p, "node") : "not heard from", ha_str(p, "role"),
	       json_is_true(json_object_get(p, "channel")) ? "up" : "down",
	       *ha_str(p, "why") ? ": " : "", ha_str(p, "why"));
	printf("sync: %s; %lld SAs, %lld policies of IKE tunnels; %lld blocks waiting for the "
	       "peer\n", ha_str(r, "sync"), ha_num(r, "sas"), ha_num(r, "policies"),
	       ha_num(r, "pending_grants"));
	if (json_is_object(t))
		printf("last takeover: %.1f s ago, gap %lld ms\n", ha_num(t, "ago_ms") / 1000.0,
		       ha_num(t, "gap_ms"));
	else
		printf("last takeover: none\n");
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
	{ { "show", "tunnels" }, "{\"cmd\":\"show\",\"what\":\"tunnels\"}", print_tunnels },
	{ { "show", "ha" }, "{\"cmd\":\"show\",\"what\":\"ha\"}", print_ha },
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
	/* dpvpnd refused us and closed while our request was unread: Linux
	 * reports that reset before the reply it queued first, and once. */
	if (n < 0 && errno == ECONNRESET) {
		n = recv(fd, buf, sizeof(buf), MSG_TRUNC | MSG_DONTWAIT);
		if (n < 0)
			errno = ECONNRESET;
	}
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
	fprintf(out, "usage: dpvpnctl [-s SOCKET] [--json] [-n] [-w] COMMAND\n"
		"commands:\n"
		"  status\n"
		"  show sa | tunnels | ports | counters [--all] | policies | routes | neighbours\n"
		"       | lcores | trace | ike | ha\n"
		"  initiate NAME | terminate NAME | rekey NAME | rekey-ike NAME   a keying = ike\n"
		"              tunnel's IKE SA: start it, end it, rekey its CHILD_SA or itself (root)\n"
		"  route add DST PORT [VIA] | route add DST tunnel NAME [NAME...]\n"
		"              | route del DST   (root; several tunnels: ECMP, at most 8)\n"
		"  neighbour add PORT ADDRESS MAC | neighbour del PORT ADDRESS   (root)\n"
		"  policy add SRC DST SPI [PRIORITY] | policy del SRC DST      (root)\n"
		"  sa del SPI in|out   (root; SAs are added from the config: tunnel up, reload)\n"
		"  reload      re-read the config, apply what changed (root)\n"
		"  clear       show counters, sa, ports, lcores and tunnels count from 0 from now\n"
		"              on (root; dpvpnd keeps baselines, metrics stay raw)\n"
		"  tunnel NAME up|down   install or remove one tunnel of the config (root)\n"
		"  ha master|backup|fault [GROUP]   this node's role in an HA pair, in one\n"
		"              group (a VRRP instance) or all: keepalived's notify scripts\n"
		"              (root; doc/ha.md)\n"
		"  monitor [N] rates per SA and port and drops, refreshed each second\n"
		"              (N times; default until interrupted)\n"
		"  trace POINT N FILE [SECONDS]   capture N packets at inside-rx, pre-encrypt,\n"
		"              decrypted or outside-tx into a new pcapng FILE (root; default\n"
		"              10 s at most)\n"
		"  genkey [-f] [--auth] CIPHER FILE | genkey [-f] psk FILE   a new random key\n"
		"              file for a tunnel of CIPHER (--auth: its HMAC key; psk: a\n"
		"              psk-file), mode 0600 (FILE -: stdout; -f: replace FILE)\n"
		"  help        this text\n"
		"options:\n"
		"  -s, --socket SOCKET  dpvpnd's control socket (default %s)\n"
		"  --json               print the result as JSON (raw numbers, every member)\n"
		"  -n, --numeric        raw numbers, not human units (1.4 GiB, 12.3 Mpps)\n"
		"  -w, --wide           every column, names never cut (tables fit %d columns\n"
		"                       without it)\n"
		"  -a, --all            show counters: every drop reason, those at 0 too\n"
		"  --version            print dpvpnctl's version\n",
		CTL_DEFAULT_SOCKET, WIDTH);
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
/* Print a result: as JSON with --json, else through print. */
static void print_result(json_t *result, print_fn print)
{
	if (!opt.json) {
		print(result);
		return;
	}
	json_dumpf(result, stdout, JSON_INDENT(2));
	putchar('\n');
}

static int send_change(const char *path, json_t *req)
{
	json_t *reply = request_obj(path, req);

	print_result(result_of(reply), print_reload);
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

/* The longest "name" of rows, at least min. */
static int name_width(json_t *rows, int min)
{
	json_t *row;
	size_t i;
	int w = min;

	json_array_foreach(rows, i, row)
		if ((int)strlen(str_of(row, "name")) > w)
			w = (int)strlen(str_of(row, "name"));
	return w;
}

static double per_s(json_t *now, json_t *then, const char *key, double dt)
{
	return (double)(num(now, key) - (then ? num(then, key) : 0)) / dt;
}

static void monitor_sas(json_t *a0, json_t *a1, double dt)
{
	char p[CELL_MAX], b[CELL_MAX], d[CELL_MAX];
	int w = name_width(a1, 6);
	json_t *s, *v;
	const char *k;
	size_t i;

	printf("%-*s %-4s %-10s %12s %14s %12s\n", w, "TUNNEL", "DIR", "SPI", "PKT/S", "BIT/S",
	       "DROPS/S");
	json_array_foreach(a1, i, s) {
		json_t *o = json_array_get(a0, i);
		json_t *dr1 = json_object_get(s, "drops");
		json_t *dr0 = o ? json_object_get(o, "drops") : NULL;
		double drops = 0;

		json_object_foreach(dr1, k, v)
			drops += (double)(json_integer_value(v) - (dr0 ? num(dr0, k) : 0));
		printf("%-*s %-4s %-10s %12s %14s %12s\n", w, str_of(s, "name"), str_of(s, "dir"),
		       str_of(s, "spi"), rate_text(per_s(s, o, "packets", dt), "pps", p, sizeof(p)),
		       rate_text(per_s(s, o, "bytes", dt) * 8, "bit/s", b, sizeof(b)),
		       rate_text(drops / dt, "pps", d, sizeof(d)));
	}
}

static void monitor_frame(json_t *sa0, json_t *sa1, json_t *p0, json_t *p1, json_t *c0,
			  json_t *c1, double dt, int tty)
{
	json_t *q0 = json_object_get(result_of(p0), "ports");
	json_t *q1 = json_object_get(result_of(p1), "ports");
	json_t *d0 = json_object_get(result_of(c0), "drops");
	json_t *d1 = json_object_get(result_of(c1), "drops");
	char rx[CELL_MAX], tx[CELL_MAX], line[2048] = "";
	size_t i, n = 0;
	json_t *s, *v;
	const char *k;

	if (tty)
		printf("\033[H\033[2J");
	monitor_sas(json_object_get(result_of(sa0), "sas"), json_object_get(result_of(sa1), "sas"),
		    dt);
	printf("\n%-6s %-24s %12s %12s\n", "PORT", "DEVICE", "RX PKT/S", "TX PKT/S");
	json_array_foreach(q1, i, s) {
		json_t *o = json_array_get(q0, i);

		printf("%-6" JSON_INTEGER_FORMAT " %-24s %12s %12s\n", num(s, "id"),
		       str_of(s, "name"), rate_text(per_s(s, o, "rx_packets", dt), "pps", rx, sizeof(rx)),
		       rate_text(per_s(s, o, "tx_packets", dt), "pps", tx, sizeof(tx)));
	}
	json_object_foreach(d1, k, v) {
		double r = (double)(json_integer_value(v) - num(d0, k)) / dt;

		if (r > 0 && n + 64 < sizeof(line))
			n += (size_t)snprintf(line + n, sizeof(line) - n, "%s%s %s", n ? ", " : "",
					      k, rate_text(r, "pps", rx, sizeof(rx)));
	}
	printf("\n");
	field("drops", "%s", n ? line : "none");
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

/* Whether a and b differ by at most one edit (a typo, a plural): "tunnel", "tunnels". */
static bool one_edit(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);

	if (la > lb)
		return one_edit(b, a);
	if (lb - la > 1)
		return false;
	while (*a && *a == *b) {
		a++;
		b++;
	}
	if (la == lb)
		return !strcmp(a + (*a != 0), b + (*b != 0));
	return !strcmp(a, b + 1);
}

/* An unknown command: one line, with the one meant if it is a typo away, not the usage. */
static void unknown_command(int argc, char **argv)
{
	const char *second = argc > 1 ? argv[1] : NULL;

	fprintf(stderr, "dpvpnctl: unknown command '%s%s%s'", argv[0], second ? " " : "",
		second ? second : "");
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++) {
		const char *const *w = commands[i].words;

		if (w[1] != NULL && second != NULL && argc == 2 && !strcmp(argv[0], w[0]) &&
		    one_edit(second, w[1])) {
			fprintf(stderr, "; did you mean '%s %s'?\n", w[0], w[1]);
			return;
		}
		if (w[1] == NULL && argc == 1 && one_edit(argv[0], w[0])) {
			fprintf(stderr, "; did you mean '%s'?\n", w[0]);
			return;
		}
	}
	if (!strcmp(argv[0], "show"))
		fprintf(stderr, "; show what? sa, tunnels, ports, counters, policies, routes, "
			"neighbours, lcores, trace, ike or ha\n");
	else
		fprintf(stderr, " (dpvpnctl help lists them)\n");
}

/* A change command's form not matched: main goes on to the show commands. */
#define NOT_THIS_FORM (-1)

/* initiate|terminate|rekey|rekey-ike NAME */
static int ike_op(const char *path, int n, char **a)
{
	if (n != 2)
		return NOT_THIS_FORM;
	return send_change(path, json_pack("{s:s,s:s,s:s}", "cmd", "ike", "op", a[0],
					   "name", a[1]));
}

/* ha master|backup|fault [GROUP] */
static int ha_role(const char *path, int n, char **a)
{
	if (n == 3)
		return send_change(path, json_pack("{s:s,s:s,s:s}", "cmd", "ha", "role", a[1],
						   "group", a[2]));
	if (n != 2)
		return NOT_THIS_FORM;
	return send_change(path, json_pack("{s:s,s:s}", "cmd", "ha", "role", a[1]));
}

/* tunnel NAME up|down */
static int tunnel_state(const char *path, int n, char **a)
{
	if (n != 3 || (strcmp(a[2], "up") && strcmp(a[2], "down")))
		return NOT_THIS_FORM;
	return send_change(path, json_pack("{s:s,s:s,s:s}", "cmd", "tunnel", "name", a[1],
					   "state", a[2]));
}

/* route add PREFIX tunnel NAME... (at most 8) */
static int route_to_tunnels(const char *path, int n, char **a)
{
	json_t *names;

	if (n == 4 || n > 4 + 8) {	/* not port "tunnel" (atoi: 0) */
		usage(stderr);
		return 2;
	}
	names = json_array();
	for (int k = 4; k < n; k++)
		json_array_append_new(names, json_string(a[k]));
	return send_change(path, json_pack("{s:s,s:s,s:s,s:o}", "cmd", "route", "op", "add",
					   "dst", a[2], "tunnels", names));
}

/* route add|del PREFIX [PORT [VIA]], neighbour add|del PORT ADDR [MAC] */
static int route_neigh(const char *path, int n, char **a)
{
	int route = !strcmp(a[0], "route"), add;
	json_t *req;

	if (n < 3)
		return NOT_THIS_FORM;
	add = !strcmp(a[1], "add");
	if (route && add && n >= 4 && !strcmp(a[3], "tunnel"))
		return route_to_tunnels(path, n, a);
	if ((!add && strcmp(a[1], "del")) || (route && (add ? n < 4 || n > 5 : n != 3)) ||
	    (!route && (add ? n != 5 : n != 4))) {
		usage(stderr);
		return 2;
	}
	req = route ? json_pack("{s:s,s:s,s:s,s:i,s:s?}", "cmd", "route", "op", a[1], "dst", a[2],
				"port", add ? atoi(a[3]) : 0, "via", add && n == 5 ? a[4] : NULL) :
		      json_pack("{s:s,s:s,s:i,s:s,s:s?}", "cmd", "neighbour", "op", a[1],
				"port", atoi(a[2]), "address", a[3], "mac", add ? a[4] : NULL);
	return send_change(path, req);
}

/* policy add SRC DST SPI [PRIORITY], policy del SRC DST, sa del SPI DIR */
static int policy_sa(const char *path, int n, char **a)
{
	int policy = !strcmp(a[0], "policy"), add;
	json_t *req = NULL;

	if (n < 3)
		return NOT_THIS_FORM;
	add = !strcmp(a[1], "add");
	if (policy && add && (n == 5 || n == 6))
		req = json_pack("{s:s,s:s,s:s,s:s,s:s,s:i}", "cmd", "policy", "op", "add",
				"src", a[2], "dst", a[3], "spi", a[4], "priority",
				n == 6 ? atoi(a[5]) : 100);
	else if (policy && !strcmp(a[1], "del") && n == 4)
		req = json_pack("{s:s,s:s,s:s,s:s}", "cmd", "policy", "op", "del",
				"src", a[2], "dst", a[3]);
	else if (!policy && !strcmp(a[1], "del") && n == 4)
		req = json_pack("{s:s,s:s,s:s,s:s}", "cmd", "sa", "op", "del",
				"spi", a[2], "dir", a[3]);
	if (req == NULL) {
		usage(stderr);
		return 2;
	}
	return send_change(path, req);
}

/* trace POINT PORT FILE [SECONDS] */
static int trace_cmd(const char *path, int n, char **a)
{
	if (n < 4 || n > 5)
		return NOT_THIS_FORM;
	return trace(path, a[1], atoi(a[2]), a[3], n == 5 ? atoi(a[4]) : 10);
}

/* monitor [FRAMES] */
static int monitor_cmd(const char *path, int n, char **a)
{
	if (n > 2)
		return NOT_THIS_FORM;
	return monitor(path, n == 2 ? atoi(a[1]) : -1);
}

/* The commands that change something or stream, by their first word. */
static const struct {
	const char *word;
	int (*run)(const char *path, int n, char **a);
} changes[] = {
	{ "initiate", ike_op }, { "terminate", ike_op }, { "rekey", ike_op },
	{ "rekey-ike", ike_op }, { "tunnel", tunnel_state }, { "route", route_neigh },
	{ "neighbour", route_neigh }, { "policy", policy_sa }, { "sa", policy_sa },
	{ "trace", trace_cmd }, { "monitor", monitor_cmd }, { "ha", ha_role },
};

/* The command in a[0..n-1] (after the options): its exit status. */
static int run_command(const char *path, int n, char **a)
{
	const struct command *cmd;
	json_t *reply;

	if (n == 1 && !strcmp(a[0], "help")) {
		usage(stdout);
		return 0;
	}
	for (size_t i = 0; n >= 1 && i < sizeof(changes) / sizeof(changes[0]); i++) {
		int rc;

		if (strcmp(a[0], changes[i].word) == 0 &&
		    (rc = changes[i].run(path, n, a)) != NOT_THIS_FORM)
			return rc;
	}
	cmd = find_command(n, a);
	if (!cmd) {
		if (n == 0) {
			usage(stderr);
			return 2;
		}
		unknown_command(n, a);
		return 2;
	}
	reply = request_show(path, cmd->request);
	print_result(result_of(reply), cmd->print);
	json_decref(reply);
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "socket", required_argument, NULL, 's' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ "wide", no_argument, NULL, 'w' },
		{ "numeric", no_argument, NULL, 'n' },
		{ "all", no_argument, NULL, 'a' },
		{ NULL, 0, NULL, 0 },
	};
	const char *path = CTL_DEFAULT_SOCKET;
	int c;

	if (argc > 1 && !strcmp(argv[1], "genkey"))	/* no dpvpnd needed: control/genkey.c */
		return genkey_main(argc - 1, argv + 1);
	while ((c = getopt_long(argc, argv, "s:hwna", longopts, NULL)) != -1) {
		switch (c) {
		case 's': path = optarg; break;
		case 'j': opt.json = 1; break;
		case 'h': usage(stdout); return 0;
		case 'V': printf("dpvpnctl %s\n", DPVPN_VERSION_LONG); return 0;
		case 'w': opt.wide = 1; break;
		case 'n': opt.numeric = 1; break;
		case 'a': opt.all = 1; break;
		default: usage(stderr); return 2;
		}
	}
	return run_command(path, argc - optind, argv + optind);
}
