/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * telem.c - DPDK telemetry commands under /dpvpn (dpdk-telemetry.py, or any
 * client of the telemetry socket), read-only and lock-free: they read the
 * per-lcore counters that workers write (relaxed, summed here).
 *
 *   /dpvpn/counters      totals of every lcore, drops by reason (drop_no_policy, ...)
 *   /dpvpn/lcores        the lcore ids (main first, then workers)
 *   /dpvpn/lcore,ID      one lcore: packets, drops, busy/idle cycles, busy %
 *   /dpvpn/stages,ID     one worker's TSC cycles per fast-path stage (dp.h
 *                        DP_STAGES; counted only by a -Dstage_cycles=true build,
 *                        "counted":0 otherwise), with its packets and busy cycles
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_cycles.h>
#include <rte_lcore.h>
#include <rte_telemetry.h>

#include "dp.h"
#include "telem.h"

static const char *const drop_names[] = {
#define DPVPN_X_NAME(e, name, desc) name,
	DPVPN_DROP_REASONS(DPVPN_X_NAME)
#undef DPVPN_X_NAME
};

static int
counters(const char *cmd, const char *params, struct rte_tel_data *d)
{
	struct dp_lstats sum = { 0 };
	char key[64];

	(void)cmd;
	(void)params;
	for (unsigned int l = 0; l < RTE_MAX_LCORE; l++) {
		const struct dp_lstats *s = &dp_lstats[l];

		sum.rx += s->rx;
		sum.tx += s->tx;
		sum.encrypted += s->encrypted;
		sum.decrypted += s->decrypted;
		sum.handoff += s->handoff;
		for (unsigned int r = 0; r < DPVPN_DROP_MAX; r++)
			sum.drops[r] += s->drops[r];
	}
	rte_tel_data_start_dict(d);
	rte_tel_data_add_dict_u64(d, "rx_packets", sum.rx);
	rte_tel_data_add_dict_u64(d, "tx_packets", sum.tx);
	rte_tel_data_add_dict_u64(d, "encrypted", sum.encrypted);
	rte_tel_data_add_dict_u64(d, "decrypted", sum.decrypted);
	rte_tel_data_add_dict_u64(d, "handoff", sum.handoff);
	for (unsigned int r = 0; r < DPVPN_DROP_MAX; r++) {
		/* telemetry names take letters, digits and _ only */
		snprintf(key, sizeof(key), "drop_%s", drop_names[r]);
		for (char *c = key; *c; c++)
			if (*c == '-')
				*c = '_';
		rte_tel_data_add_dict_u64(d, key, sum.drops[r]);
	}
	return 0;
}

static int
lcores(const char *cmd, const char *params, struct rte_tel_data *d)
{
	(void)cmd;
	(void)params;
	rte_tel_data_start_array(d, RTE_TEL_INT_VAL);
	rte_tel_data_add_array_int(d, (int)rte_get_main_lcore());
	for (unsigned int i = 0; i < dp.n_workers; i++)
		rte_tel_data_add_array_int(d, (int)dp.workers[i].lcore);
	return 0;
}

/* A telemetry parameter that names an lcore: 0 and *id, or -1. */
static int
lcore_param(const char *params, unsigned long *id)
{
	char *end;

	if (params == NULL || *params == '\0')
		return -1;
	*id = strtoul(params, &end, 10);
	return *end != '\0' || *id >= RTE_MAX_LCORE ? -1 : 0;
}

static int
lcore(const char *cmd, const char *params, struct rte_tel_data *d)
{
	const struct dp_lstats *s;
	unsigned long id;
	uint64_t drops = 0, all;
	bool worker = false;

	(void)cmd;
	if (lcore_param(params, &id) < 0)
		return -1;
	for (unsigned int i = 0; i < dp.n_workers; i++)
		worker |= dp.workers[i].lcore == id;
	if (!worker && id != rte_get_main_lcore())
		return -1;
	s = &dp_lstats[id];
	for (unsigned int r = 0; r < DPVPN_DROP_MAX; r++)
		drops += s->drops[r];
	all = s->busy_cycles + s->idle_cycles;
	rte_tel_data_start_dict(d);
	rte_tel_data_add_dict_string(d, "role", worker ? "worker" : "main");
	rte_tel_data_add_dict_u64(d, "rx_packets", s->rx);
	rte_tel_data_add_dict_u64(d, "tx_packets", s->tx);
	rte_tel_data_add_dict_u64(d, "encrypted", s->encrypted);
	rte_tel_data_add_dict_u64(d, "decrypted", s->decrypted);
	rte_tel_data_add_dict_u64(d, "drops", drops);
	rte_tel_data_add_dict_u64(d, "busy_cycles", s->busy_cycles);
	rte_tel_data_add_dict_u64(d, "idle_cycles", s->idle_cycles);
	rte_tel_data_add_dict_u64(d, "busy_percent", all ? s->busy_cycles * 100 / all : 0);
	return 0;
}

static const char *const stage_names[] = {
#define DP_STAGE_NAME(e, name) name,
	DP_STAGES(DP_STAGE_NAME)
#undef DP_STAGE_NAME
};

static int
stages(const char *cmd, const char *params, struct rte_tel_data *d)
{
	const struct dp_lstats *s;
	char key[32];
	unsigned long id;

	(void)cmd;
	if (lcore_param(params, &id) < 0)
		return -1;
	s = &dp_lstats[id];
	rte_tel_data_start_dict(d);
#ifdef DPVPN_STAGE_CYCLES
	rte_tel_data_add_dict_u64(d, "counted", 1);
#else
	rte_tel_data_add_dict_u64(d, "counted", 0);
#endif
	rte_tel_data_add_dict_u64(d, "rx_packets", s->rx);
	rte_tel_data_add_dict_u64(d, "encrypted", s->encrypted);
	rte_tel_data_add_dict_u64(d, "decrypted", s->decrypted);
	rte_tel_data_add_dict_u64(d, "busy_cycles", s->busy_cycles);
	for (unsigned int i = 0; i < DP_STAGE_NUM; i++) {
		snprintf(key, sizeof(key), "%s", stage_names[i]);
		for (char *c = key; *c; c++)	/* telemetry names: letters, digits, _ */
			if (*c == '-')
				*c = '_';
		rte_tel_data_add_dict_u64(d, key, s->stage_cycles[i]);
	}
	return 0;
}

void
telem_init(void)
{
	rte_telemetry_register_cmd("/dpvpn/counters", counters,
				   "dpvpn totals of all lcores, drops by reason. No parameters");
	rte_telemetry_register_cmd("/dpvpn/lcores", lcores,
				   "dpvpn lcore ids, the main one first. No parameters");
	rte_telemetry_register_cmd("/dpvpn/lcore", lcore,
				   "dpvpn counters of one lcore and its busy share. "
				   "Parameter: lcore id");
	rte_telemetry_register_cmd("/dpvpn/stages", stages,
				   "dpvpn TSC cycles per fast-path stage of one lcore "
				   "(-Dstage_cycles=true builds). Parameter: lcore id");
}
