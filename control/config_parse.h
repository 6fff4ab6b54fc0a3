/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * config_parse.h - what the files of dpvpnd's config parser share (config.h is
 * the API): the parser's state, the section and key tables' types, and the
 * functions one file of the parser calls in another.  Not for use outside
 * control/config*.c.
 *
 * The parser is split by what it reads:
 *   config.c         the reader: inih driving, section headers, key dispatch,
 *                    errors with file:line, the entry points (cfg_load, ...)
 */
#ifndef DPVPN_CONFIG_PARSE_H
#define DPVPN_CONFIG_PARSE_H

#include <search.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "config.h"

enum sect_type {
	SECT_NONE,	/* before the first section */
	SECT_BAD,	/* header had an error: its keys are ignored */
	SECT_DATAPLANE,
	SECT_CONTROL,
	SECT_PORT,
	SECT_NEIGH,
	SECT_ROUTE,
	SECT_TUNNEL,
};

/* The parser's state while it reads one file. */
struct parser {
	struct cfg *cfg;
	const char *file;	/* as given, for messages */
	char dir[4096];		/* the file's directory, for key files */
	char *text;		/* the whole file: wiped at the end */
	mode_t mode;		/* the file's permission bits (fstat of what was read) */
	bool key_mode_reported;	/* an inline key in a file others may read: said once */
	size_t text_len, pos;
	int line;
	enum sect_type type;
	const struct sect_def *def;
	char sect_name[DPVPN_NAME_LEN];
	int sect_line;
	size_t idx;		/* entry of the current section */
	uint64_t seen;		/* bit per key index of the current section */
	int key_line[64];	/* line of each key seen (valid where its bit is set) */
	int keying_line;	/* the tunnel's keying, 0 if not given (yet) */
	bool keying_bad;	/* the tunnel's keying value was refused */
	const char *key;	/* key being handled, for messages */
	int seen_dataplane, seen_control;
	struct perror_ent *errs;
	size_t n_errs;
	/* Section names seen, "TYPE:NAME": a hash so that 100k tunnels parse
	 * in linear time (glibc's hsearch_r; the keys are ours to free). */
	struct hsearch_data names;
	bool names_ok;
	char **name_keys;
	size_t n_name_keys;
};

typedef int (*key_fn)(struct parser *p, const char *val);

#define KEY_BIT(i)	(UINT64_C(1) << (i))

/* Which tunnels a key belongs to: keying = static, keying = ike, or both. */
enum keying {
	KEYING_ANY,
	KEYING_STATIC,
	KEYING_IKE,
};

struct key_def {
	const char *name;
	key_fn fn;
	bool required;		/* by the tunnels of its keying (KEYING_ANY: all) */
	enum keying keying;
};

struct sect_def {
	const char *type;
	enum sect_type id;
	bool named;
	const struct key_def *keys;
	size_t n_keys;
	int (*open)(struct parser *p);
	void (*finish)(struct parser *p);
};

/* The entry of the current section: in array ARR of struct cfg, or the tunnel. */
#define CUR(p, arr)	(&(p)->cfg->arr[(p)->idx])
#define CUR_TUN(p)	((p)->cfg->tunnels[(p)->idx])

#endif
