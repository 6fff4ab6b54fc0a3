/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * config_dp.c - the [dataplane] and [control] sections: dpvpnd's sockets,
 * its sequence number state, the metrics endpoint and the operator group.
 * Each may be given once; every key has a default (config.h).
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <grp.h>
#include <stdio.h>
#include <string.h>

#include "config_parse.h"
#include "seqstate.h"

static int set_path(struct parser *p, char *dst, const char *val)
{
	if (!*val)
		return cfg_kerr(p, "empty path");
	if (strlen(val) >= CFG_PATH_MAX)
		return cfg_kerr(p, "path longer than %d bytes", CFG_PATH_MAX - 1);
	strcpy(dst, val);
	return 0;
}

static int key_dp_socket(struct parser *p, const char *val)
{
	return set_path(p, p->cfg->dp_socket, val);
}

static int key_ctl_socket(struct parser *p, const char *val)
{
	return set_path(p, p->cfg->ctl_socket, val);
}

static int key_ctl_state(struct parser *p, const char *val)
{
	if (!*val)
		return cfg_kerr(p, "empty path");
	if (val[0] == '/')
		snprintf(p->cfg->state, sizeof(p->cfg->state), "%s", val);
	else if (snprintf(p->cfg->state, sizeof(p->cfg->state), "%s/%s", p->dir, val) >=
		 (int)sizeof(p->cfg->state))
		return cfg_kerr(p, "path too long");
	return 0;
}

static int key_ctl_seq_block(struct parser *p, const char *val)
{
	uint64_t v;

	if (cfg_parse_uint(val, false, 1ull << 40, &v) || v < SEQ_BLOCK_MIN)
		return cfg_kerr(p, "expected a count of %d or more, got '%s'", SEQ_BLOCK_MIN, val);
	p->cfg->seq_block = v;
	return 0;
}

static int key_ctl_metrics(struct parser *p, const char *val)
{
	const char *colon = strrchr(val, ':');

	if (colon == NULL || colon == val || strlen(val) >= sizeof(p->cfg->metrics) ||
	    !isdigit((unsigned char)colon[1]))
		return cfg_kerr(p, "expected a loopback ADDRESS:PORT (127.0.0.1:9477, "
				"[::1]:9477), got '%s'", val);
	strcpy(p->cfg->metrics, val);
	return 0;
}

static int key_ctl_group(struct parser *p, const char *val)
{
	struct group *gr;

	if (!*val || strlen(val) >= sizeof(p->cfg->group))
		return cfg_kerr(p, "expected a group name");
	gr = getgrnam(val);
	if (!gr)
		return cfg_kerr(p, "no such group '%s'", val);
	strcpy(p->cfg->group, val);
	p->cfg->gid = gr->gr_gid;
	return 0;
}

static int open_dataplane(struct parser *p)
{
	return p->seen_dataplane++ ? -1 : 0;
}

static int open_control(struct parser *p)
{
	return p->seen_control++ ? -1 : 0;
}

static const struct key_def dataplane_keys[] = {
	{ "socket", key_dp_socket, false },
};

static const struct key_def control_keys[] = {
	{ "socket", key_ctl_socket, false },
	{ "state", key_ctl_state, false },
	{ "seq-block", key_ctl_seq_block, false },
	{ "metrics", key_ctl_metrics, false },
	{ "group", key_ctl_group, false },
};

const struct sect_def cfg_sect_dataplane = {
	"dataplane", SECT_DATAPLANE, false, KEYS(dataplane_keys), open_dataplane, NULL
};

const struct sect_def cfg_sect_control = {
	"control", SECT_CONTROL, false, KEYS(control_keys), open_control, NULL
};
