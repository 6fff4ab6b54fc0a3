/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * config.c - parse dpvpnd's INI configuration: the reader and the entry points
 * (config.h).  The sections' keys are read by one file per section kind,
 * the checks across sections are config_check.c's (config_parse.h lists them).
 *
 * libinih splits "key = value" lines; our reader feeds it one line at a time
 * so that we always know the line number, and handles the lines inih cannot
 * tell us about itself:
 *  - section headers (inih does not call back on a new section, and an empty
 *    section must still be checked for missing keys at its header's line);
 *  - syntax errors (inih would only return the first one);
 *  - out-key / in-key lines, so that key text never sits in inih's buffers;
 *    our own copy of the file is wiped when parsing ends.
 * Leading whitespace is stripped before inih sees a line, which disables its
 * multi-line continuation: an indented line is just another "key = value".
 *
 * Checks that need the whole file (port references, duplicate ids and SPIs,
 * tunnel addresses) run at the end (cfg_check_all); errors are sorted by line.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <ini.h>
#include <search.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config.h"
#include "config_parse.h"
#include "seqstate.h"
#include "dpvpn_alg.h"

#define CFG_FILE_MAX	(256 << 20)	/* 100k tunnels take ~30 MB; bigger is no config */

struct perror_ent {
	int line;
	size_t seq;
	char *text;
};

/* ---- errors ---- */

static void add_error(struct parser *p, int line, const char *fmt, va_list ap)
{
	char msg[512];
	struct perror_ent *e;
	char *text;

	vsnprintf(msg, sizeof(msg), fmt, ap);
	if ((line ? asprintf(&text, "%s:%d: %s", p->file, line, msg) :
		    asprintf(&text, "%s: %s", p->file, msg)) < 0)
		return;
	e = realloc(p->errs, (p->n_errs + 1) * sizeof(*e));
	if (!e) {
		free(text);
		return;
	}
	p->errs = e;
	e[p->n_errs] = (struct perror_ent){ line, p->n_errs, text };
	p->n_errs++;
}

__attribute__((format(printf, 3, 4)))
void cfg_err_at(struct parser *p, int line, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	add_error(p, line, fmt, ap);
	va_end(ap);
}

/* An error about the key being handled: "[port x] id: message". */
__attribute__((format(printf, 2, 3)))
int cfg_kerr(struct parser *p, const char *fmt, ...)
{
	char msg[400];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (p->sect_name[0])
		cfg_err_at(p, p->line, "[%s %s] %s: %s", p->def->type, p->sect_name, p->key, msg);
	else
		cfg_err_at(p, p->line, "[%s] %s: %s", p->def->type, p->key, msg);
	return -1;
}

static int cmp_err(const void *a, const void *b)
{
	const struct perror_ent *x = a, *y = b;

	if (x->line != y->line)
		return x->line < y->line ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static void move_errors(struct parser *p)
{
	struct cfg *cfg = p->cfg;
	size_t i;

	if (p->n_errs)
		qsort(p->errs, p->n_errs, sizeof(*p->errs), cmp_err);
	cfg->errors = calloc(p->n_errs ? p->n_errs : 1, sizeof(char *));
	for (i = 0; i < p->n_errs; i++) {
		if (cfg->errors)
			cfg->errors[cfg->n_errors++] = p->errs[i].text;
		else
			free(p->errs[i].text);
	}
	free(p->errs);
	p->errs = NULL;
}

/* ---- section table ---- */

static const struct sect_def *const sections[] = {
	&cfg_sect_dataplane, &cfg_sect_control, &cfg_sect_port, &cfg_sect_neighbor,
	&cfg_sect_neighbour, &cfg_sect_route, &cfg_sect_tunnel, &cfg_sect_routes, &cfg_sect_ha,
};

#define N_SECTIONS	(sizeof(sections) / sizeof(sections[0]))
_Static_assert(sizeof(((struct parser *)0)->key_line) / sizeof(int) == 64, "one line a bit");

static const struct sect_def *find_section(const char *type)
{
	for (size_t i = 0; i < N_SECTIONS; i++)
		if (!strcmp(sections[i]->type, type))
			return sections[i];
	return NULL;
}

/* Name of entry i of the section type, or NULL past the end. */
/* True if [TYPE NAME] was seen before; records it otherwise. */
static bool name_taken(struct parser *p, enum sect_type t, const char *name)
{
	char buf[16 + DPVPN_NAME_LEN], *key;
	ENTRY e, *found;
	char **keys;

	snprintf(buf, sizeof(buf), "%d:%s", (int)t, name);
	e.key = buf;
	e.data = NULL;
	if (!p->names_ok || hsearch_r(e, FIND, &found, &p->names))
		return p->names_ok && found != NULL;
	key = strdup(buf);
	keys = realloc(p->name_keys, (p->n_name_keys + 1) * sizeof(*keys));
	if (key == NULL || keys == NULL) {
		free(key);
		if (keys)
			p->name_keys = keys;
		return false;
	}
	p->name_keys = keys;
	p->name_keys[p->n_name_keys++] = key;
	e.key = key;
	hsearch_r(e, ENTER, &found, &p->names);
	return false;
}

static void finish_section(struct parser *p)
{
	const struct sect_def *d = p->def;
	const char *sep = p->sect_name[0] ? " " : "";

	if (p->type == SECT_NONE || p->type == SECT_BAD)
		return;
	for (size_t i = 0; i < d->n_keys; i++)
		if (d->keys[i].required && !(p->seen & KEY_BIT(i)) &&
		    cfg_key_required(p, &d->keys[i]))
			cfg_err_at(p, p->sect_line, "[%s%s%s] missing required key '%s'", d->type,
				   sep, p->sect_name, d->keys[i].name);
	if (d->finish)
		d->finish(p);
	p->type = SECT_NONE;
}

/* Check "TYPE [NAME]" of a header and open the section; -1 if refused. */
static int open_section(struct parser *p, char *type, char *name)
{
	const struct sect_def *d = find_section(type);

	if (!d) {
		cfg_err_at(p, p->line, "unknown section type '%s' (expected dataplane, control, "
			   "port, neighbor (or neighbour), route, routes, tunnel or ha)", type);
		return -1;
	}
	if (d->named && !*name) {
		cfg_err_at(p, p->line, "[%s] needs a name: [%s NAME]", type, type);
		return -1;
	}
	if (!d->named && *name) {
		cfg_err_at(p, p->line, "[%s] takes no name, got '%s'", type, name);
		return -1;
	}
	if (strlen(name) > CFG_NAME_MAX || !cfg_valid_name(name)) {
		cfg_err_at(p, p->line, "[%s %s] name must be 1..%d characters of "
			   "A-Z a-z 0-9 - _ .", type, name, CFG_NAME_MAX);
		return -1;
	}
	if (name_taken(p, d->id, name)) {
		cfg_err_at(p, p->line, "duplicate section [%s%s%s]", type, *name ? " " : "", name);
		return -1;
	}
	strcpy(p->sect_name, name);
	p->def = d;	/* open_neigh keeps the spelling (a refused section is SECT_BAD) */
	if (d->open(p)) {
		cfg_err_at(p, p->line, "duplicate section [%s]", type);
		return -1;
	}
	p->type = d->id;
	return 0;
}

char *cfg_trim(char *s)
{
	char *e;

	while (isspace((unsigned char)*s))
		s++;
	e = s + strlen(s);
	while (e > s && isspace((unsigned char)e[-1]))
		*--e = '\0';
	return s;
}

static bool is_comment(const char *s)
{
	return *s == '\0' || *s == ';' || *s == '#';
}

/* A "[type name]" line (s starts at '['). */
static void section_header(struct parser *p, char *s)
{
	char *end = strchr(s, ']'), *body, *name;

	finish_section(p);
	p->type = SECT_BAD;
	p->sect_line = p->line;
	p->sect_name[0] = '\0';
	p->seen = 0;
	p->keying_line = 0;
	p->keying_bad = false;
	if (!end || !is_comment(cfg_trim(end + 1))) {
		cfg_err_at(p, p->line, "expected '[type name]' on a line of its own");
		return;
	}
	*end = '\0';
	body = cfg_trim(s + 1);
	name = body + strcspn(body, " \t");
	if (*name)
		*name++ = '\0';
	if (open_section(p, body, cfg_trim(name)) == 0)
		return;
	p->type = SECT_BAD;
	p->sect_name[0] = '\0';
}

/* ---- key dispatch (from inih, or from the reader for key lines) ---- */

/* strongSwan's (swanctl.conf, ipsec.conf) names of what dpvpn calls otherwise. */
static const struct {
	const char *theirs, *ours;
} aliases[] = {
	{ "rekey-time", "soft-seconds (the CHILD_SA's rekey) or ike-lifetime (the IKE SA's)" },
	{ "rekey_time", "soft-seconds (the CHILD_SA's rekey) or ike-lifetime (the IKE SA's)" },
	{ "rekey-bytes", "soft-bytes" }, { "rekey_bytes", "soft-bytes" },
	{ "rekey-packets", "soft-packets" }, { "rekey_packets", "soft-packets" },
	{ "life-time", "hard-seconds" }, { "life_time", "hard-seconds" },
	{ "lifetime", "hard-seconds (CHILD_SA) or ike-lifetime (IKE SA)" },
	{ "ikelifetime", "ike-lifetime" }, { "reauth_time", "ike-lifetime" },
	{ "proposals", "ike-proposals" }, { "ike", "ike-proposals" },
	{ "esp_proposals", "esp-proposals" }, { "esp", "esp-proposals" },
	{ "local_ts", "local-ts" }, { "remote_ts", "remote-ts" },
	{ "leftsubnet", "local-ts" }, { "rightsubnet", "remote-ts" },
	{ "local_addrs", "local" }, { "remote_addrs", "remote" },
	{ "left", "local" }, { "right", "remote" }, { "leftid", "local-id" },
	{ "rightid", "remote-id" }, { "pools", "pool" }, { "vips", "virtual-ip" },
	{ "dpd_delay", "dpd" }, { "start_action", "start" }, { "auto", "start" },
};

/* Levenshtein distance of a and b (both short: key names), capped at 9. */
static unsigned edit_distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	unsigned row[40], prev, tmp;

	if (la >= 40 || lb >= 40)
		return 9;
	for (size_t j = 0; j <= lb; j++)
		row[j] = (unsigned)j;
	for (size_t i = 1; i <= la; i++) {
		prev = row[0];
		row[0] = (unsigned)i;
		for (size_t j = 1; j <= lb; j++) {
			unsigned best = prev + (a[i - 1] != b[j - 1]);

			best = row[j] + 1 < best ? row[j] + 1 : best;
			best = row[j - 1] + 1 < best ? row[j - 1] + 1 : best;
			tmp = row[j];
			row[j] = best;
			prev = tmp;
		}
	}
	return row[lb] < 9 ? row[lb] : 9;
}

/* "unknown key", with the key meant: strongSwan's name for it, or the closest of d's. */
static void unknown_key(struct parser *p, const struct sect_def *d, const char *name)
{
	const char *best = NULL;
	unsigned best_d = 3;		/* more edits than 2: no guess */

	for (size_t i = 0; i < sizeof(aliases) / sizeof(aliases[0]); i++)
		if (!strcasecmp(aliases[i].theirs, name)) {
			cfg_kerr(p, "unknown key; did you mean %s?", aliases[i].ours);
			return;
		}
	for (size_t i = 0; i < d->n_keys; i++) {
		unsigned e = edit_distance(name, d->keys[i].name);

		if (e < best_d) {
			best_d = e;
			best = d->keys[i].name;
		}
	}
	if (best != NULL)
		cfg_kerr(p, "unknown key; did you mean %s?", best);
	else
		cfg_kerr(p, "unknown key (doc/dpvpn.conf.5 lists the keys of [%s])", d->type);
}

static int handle_kv(struct parser *p, const char *name, const char *value)
{
	const struct sect_def *d = p->def;
	size_t i;

	if (p->type == SECT_NONE) {
		cfg_err_at(p, p->line, "'%s' outside of any section", name);
		return 1;
	}
	if (p->type == SECT_BAD)
		return 1;	/* the header's error was reported */
	p->key = name;
	for (i = 0; i < d->n_keys; i++)
		if (!strcmp(d->keys[i].name, name))
			break;
	if (i == d->n_keys) {
		unknown_key(p, d, name);
	} else if ((p->seen & KEY_BIT(i)) && !d->keys[i].repeat) {
		cfg_kerr(p, "duplicate key");
	} else {
		p->seen |= KEY_BIT(i);
		p->key_line[i] = p->line;
		/* a key of the other keying is refused at the end (finish_tunnel);
		 * not even its file is read once the keying is known */
		if (!p->keying_line || cfg_key_belongs(p, &d->keys[i]))
			d->keys[i].fn(p, value);
	}
	p->key = NULL;
	return 1;	/* errors are collected; let inih go on */
}

static int on_ini_kv(void *user, const char *section, const char *name, const char *value)
{
	(void)section;
	return handle_kv(user, name, value);
}

/* Split "name = value ; comment" as inih does (inline ';' after whitespace). */
static void secret_line(struct parser *p, char *s)
{
	char *sep = s + strcspn(s, "=:"), *v, *c;

	*sep = '\0';
	v = sep + 1;
	for (c = v; *c; c++) {
		if (*c == ';' && c > v && isspace((unsigned char)c[-1])) {
			*c = '\0';
			break;
		}
	}
	handle_kv(p, cfg_trim(s), cfg_trim(v));
}

static bool is_secret_key(const char *s)
{
	size_t n = strcspn(s, "=:");

	while (n && isspace((unsigned char)s[n - 1]))
		n--;
	return (n == 6 && !strncmp(s, "in-key", 6)) || (n == 7 && !strncmp(s, "out-key", 7)) ||
	       (n == 11 && !strncmp(s, "in-auth-key", 11)) ||
	       (n == 12 && !strncmp(s, "out-auth-key", 12));
}

/* Next line of the file, NUL-terminated in place; NULL at the end. */
static char *next_line(struct parser *p)
{
	char *s, *nl;

	if (p->pos >= p->text_len)
		return NULL;
	s = p->text + p->pos;
	nl = memchr(s, '\n', p->text_len - p->pos);
	if (nl) {
		*nl = '\0';
		p->pos = nl + 1 - p->text;
	} else {
		p->pos = p->text_len;	/* text is NUL-terminated past the end */
	}
	p->line++;
	if (p->line == 1 && !strncmp(s, "\xEF\xBB\xBF", 3))
		s += 3;
	return s;
}

/*
 * inih's reader: hands inih only plain "key = value" lines; everything else is
 * handled here and replaced by an empty line.
 */
static char *read_ini_line(char *buf, int num, void *stream)
{
	struct parser *p = stream;
	char *s = next_line(p);

	if (!s)
		return NULL;
	buf[0] = '\0';
	s = cfg_trim(s);
	if (is_comment(s))
		return buf;
	if (*s == '[') {
		section_header(p, s);
	} else if (strlen(s) + 2 > (size_t)num) {
		cfg_err_at(p, p->line, "line longer than %d characters", num - 2);
	} else if (!s[strcspn(s, "=:")] || s[0] == '=' || s[0] == ':') {
		cfg_err_at(p, p->line, "expected 'key = value' or '[type name]'");
	} else if (is_secret_key(s)) {
		secret_line(p, s);
	} else {
		snprintf(buf, num, "%s\n", s);
	}
	return buf;
}

/* ---- entry points ---- */

/*
 * Who may have written the file decides what it installs: it must belong to
 * root or to us and be writable by nobody else.  (Whether others may read
 * it matters only if it holds a key: inline_key_private.)  Checked on the
 * descriptor that is read, like key files.
 */
static void check_config_file(struct parser *p, const struct stat *st)
{
	p->mode = st->st_mode & 07777;
	if (st->st_uid != 0 && st->st_uid != geteuid())
		cfg_err_at(p, 0, "owned by uid %u, not by root or uid %u: refused",
			   (unsigned)st->st_uid, (unsigned)geteuid());
	if (st->st_mode & 022)
		cfg_err_at(p, 0, "mode %04o lets group or others change the configuration: "
			   "refused (chmod go-w it)", (unsigned)p->mode);
}

ssize_t cfg_read_small(int fd, char *buf, size_t cap)
{
	size_t got = 0;
	ssize_t n;

	while (got < cap && (n = read(fd, buf + got, cap - got)) != 0) {
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		got += n;
	}
	return (ssize_t)got;
}

static int read_file(struct parser *p, const char *path)
{
	struct stat st;
	ssize_t n;
	/* O_NONBLOCK: a FIFO put in its place cannot hang us (it is refused below) */
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);

	if (fd < 0 || fstat(fd, &st)) {
		cfg_err_at(p, 0, "%s", strerror(errno));
		goto fail;
	}
	if (!S_ISREG(st.st_mode) || st.st_size > CFG_FILE_MAX) {
		cfg_err_at(p, 0, "not a regular file of at most %d bytes", CFG_FILE_MAX);
		goto fail;
	}
	check_config_file(p, &st);
	p->text = calloc(1, (size_t)st.st_size + 1);
	n = p->text ? cfg_read_small(fd, p->text, (size_t)st.st_size) : -1;
	if (n < 0) {
		cfg_err_at(p, 0, "%s", strerror(errno));
		goto fail;
	}
	p->text_len = (size_t)n;
	p->text[n] = '\0';
	close(fd);
	return 0;
fail:
	if (fd >= 0)
		close(fd);
	return -1;
}

static void set_dir(struct parser *p, const char *path)
{
	const char *slash = strrchr(path, '/');

	if (!slash)
		strcpy(p->dir, ".");
	else if (slash == path)
		strcpy(p->dir, "/");
	else
		snprintf(p->dir, sizeof(p->dir), "%.*s", (int)(slash - path), path);
}

/* Room for every section the file can hold: one per '[' at most. */
static void names_init(struct parser *p)
{
	size_t n = 64;

	for (size_t i = 0; i < p->text_len; i++)
		n += p->text[i] == '[';
	p->names_ok = hcreate_r(2 * n, &p->names) != 0;
}

static void names_free(struct parser *p)
{
	if (p->names_ok)
		hdestroy_r(&p->names);
	for (size_t i = 0; i < p->n_name_keys; i++)
		free(p->name_keys[i]);
	free(p->name_keys);
}

int cfg_load(struct cfg *cfg, const char *path)
{
	struct parser p = { .cfg = cfg, .file = path };

	memset(cfg, 0, sizeof(*cfg));
	snprintf(cfg->path, sizeof(cfg->path), "%s", path);
	strcpy(cfg->dp_socket, CFG_DEFAULT_DP_SOCKET);
	strcpy(cfg->ctl_socket, CFG_DEFAULT_CTL_SOCKET);
	snprintf(cfg->state, sizeof(cfg->state), "%.4089s.state", path);
	cfg->seq_block = SEQ_BLOCK;
	set_dir(&p, path);
	if (read_file(&p, path) == 0) {
		names_init(&p);
		ini_parse_stream(read_ini_line, &p, on_ini_kv, &p);
		finish_section(&p);
		cfg_check_all(&p);
		names_free(&p);
	}
	if (p.text) {
		explicit_bzero(p.text, p.text_len);
		free(p.text);
	}
	move_errors(&p);
	return cfg->n_errors ? -1 : 0;
}

void cfg_print_errors(const struct cfg *cfg, FILE *out)
{
	for (size_t i = 0; i < cfg->n_errors; i++)
		fprintf(out, "%s\n", cfg->errors[i]);
}

size_t cfg_alg_key_len(uint8_t alg)
{
	const struct dpvpn_alg_info *a = dpvpn_alg_get(alg);

	return a != NULL ? a->key_len : 0;
}

const char *cfg_alg_name(uint8_t alg)
{
	const struct dpvpn_alg_info *a = dpvpn_alg_get(alg);

	return a != NULL ? a->name : "unknown";
}

void cfg_wipe_keys(struct cfg *cfg)
{
	for (size_t i = 0; i < cfg->n_tunnels; i++) {
		explicit_bzero(cfg->tunnels[i]->out.keymat, sizeof(cfg->tunnels[i]->out.keymat));
		explicit_bzero(cfg->tunnels[i]->in.keymat, sizeof(cfg->tunnels[i]->in.keymat));
		explicit_bzero(cfg->tunnels[i]->out.authmat, sizeof(cfg->tunnels[i]->out.authmat));
		explicit_bzero(cfg->tunnels[i]->in.authmat, sizeof(cfg->tunnels[i]->in.authmat));
		explicit_bzero(cfg->tunnels[i]->ike.psk, sizeof(cfg->tunnels[i]->ike.psk));
	}
	explicit_bzero(cfg->ha.key, sizeof(cfg->ha.key));
}

void cfg_free(struct cfg *cfg)
{
	cfg_wipe_keys(cfg);
	for (size_t i = 0; i < cfg->n_tunnels; i++)
		free(cfg->tunnels[i]);
	for (size_t i = 0; i < cfg->n_errors; i++)
		free(cfg->errors[i]);
	free(cfg->tunnels);
	free(cfg->ports);
	free(cfg->neighs);
	free(cfg->routes);
	free(cfg->errors);
	memset(cfg, 0, sizeof(*cfg));
}

/* The line of key name in the current section, 0 if it was not given. */
int cfg_key_line(const struct parser *p, const char *name)
{
	for (size_t i = 0; i < p->def->n_keys; i++)
		if (!strcmp(p->def->keys[i].name, name))
			return p->seen & KEY_BIT(i) ? p->key_line[i] : 0;
	return 0;
}
