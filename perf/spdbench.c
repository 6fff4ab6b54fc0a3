/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * spdbench - what installing and removing one tunnel costs the dataplane's
 * tables (an outbound SA and its policy, as SA_ADD + POLICY_ADD and SA_DEL
 * do) with N tunnels installed already (issue 28 requirement 1: the same at
 * 100 000 as at 10).  Policies are wide (a /24 each: rte_acl) or host (a
 * /32: spd_host.c).  Between operations the main lcore's loop runs
 * (spd_poll), as in the dataplane.  Prints one line per (kind, N): install
 * and removal p50/p99/max in microseconds, and how long the background
 * builds took to catch up afterwards.
 *
 *   dpvpn-spdbench [--tunnels 10,1000,10000,100000] [--ops 200] [--kind wide,host]
 *                  [--max-seconds 20]
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_malloc.h>
#include <rte_rcu_qsbr.h>

#include "crypto.h"
#include "ctl_steps.h"
#include "dp.h"
#include "sa.h"
#include "spd.h"

struct dp_state dp;
struct dp_lstats dp_lstats[RTE_MAX_LCORE];

/* absent before the background builds (a bench built at an older commit) */
__attribute__((weak)) void spd_poll(void);
__attribute__((weak)) void spd_settle(void);

static struct crypto_mgr *mb;

static int
tunnel_add(uint32_t i, bool wide)
{
	struct dpvpn_sa_cfg c = { .dir = DPVPN_DIR_OUT, .alg = DPVPN_ALG_AES128_GCM,
				  .key_len = 16, .replay_window = 64 };
	struct dpvpn_policy p = { .priority = 100 };
	char err[256];

	c.spi = rte_cpu_to_be_32(0x100000 + i);
	c.local.family = c.remote.family = c.local_ts.family = c.remote_ts.family = DPVPN_AF_INET;
	c.local.v4 = RTE_BE32(0xc6130001);
	c.remote.v4 = RTE_BE32(0xc6130002);
	snprintf(c.name, sizeof(c.name), "t%u", i);
	p.src.family = p.dst.family = DPVPN_AF_INET;
	p.src.v4 = RTE_BE32(0xc6120000);	/* 198.18.0.0/16 */
	p.src.len = 16;
	/* 16.0.0.0/4: a /24 or a /32 each */
	p.dst.v4 = rte_cpu_to_be_32(0x10000000u + (wide ? i << 8 : i));
	p.dst.len = wide ? 24 : 32;
	p.spi = c.spi;
	if (sa_add(&c, mb, err, sizeof(err)) != 0 || spd_add(&p, err, sizeof(err)) != 0) {
		fprintf(stderr, "spdbench: tunnel %u: %s\n", i, err);
		return -1;
	}
	return 0;
}

static int
tunnel_del(uint32_t i)
{
	char err[256];

	if (step_sa_del(rte_cpu_to_be_32(0x100000 + i), DPVPN_DIR_OUT, err, sizeof(err)) != 0) {
		fprintf(stderr, "spdbench: tunnel %u: %s\n", i, err);
		return -1;
	}
	return 0;
}

static void
main_loop_turn(void)
{
	if (spd_poll != NULL)
		spd_poll();
}

static int
cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static double
us(uint64_t cycles)
{
	return (double)cycles * 1e6 / (double)rte_get_timer_hz();
}

static void
report(const char *what, uint64_t *t, unsigned int n)
{
	qsort(t, n, sizeof(*t), cmp_u64);
	printf(" %s p50 %.1f p99 %.1f max %.1f us (%u);", what, us(t[n / 2]),
	       us(t[n * 99 / 100]), us(t[n - 1]), n);
}

/* N tunnels in one batch, then ops more one at a time and removed again. */
static int
run(uint32_t n, bool wide, unsigned int ops, double max_s)
{
	uint64_t *tin = calloc(ops, sizeof(*tin)), *tout = calloc(ops, sizeof(*tout));
	uint64_t limit = (uint64_t)(max_s * (double)rte_get_timer_hz()), t0, start;
	unsigned int done_in = 0, done_out = 0;
	char err[256];

	spd_begin();
	for (uint32_t i = 0; i < n; i++)
		if (tunnel_add(i, wide) != 0)
			return -1;
	if (spd_commit(err, sizeof(err)) != 0)
		return -1;
	if (spd_settle != NULL)
		spd_settle();
	start = rte_get_timer_cycles();
	for (; done_in < ops && rte_get_timer_cycles() - start < limit; done_in++) {
		t0 = rte_get_timer_cycles();
		if (tunnel_add(n + done_in, wide) != 0)
			return -1;
		tin[done_in] = rte_get_timer_cycles() - t0;
		main_loop_turn();
	}
	start = rte_get_timer_cycles();
	for (; done_out < done_in && rte_get_timer_cycles() - start < limit; done_out++) {
		t0 = rte_get_timer_cycles();
		if (tunnel_del(n + done_out) != 0)
			return -1;
		tout[done_out] = rte_get_timer_cycles() - t0;
		main_loop_turn();
	}
	t0 = rte_get_timer_cycles();
	if (spd_settle != NULL)
		spd_settle();
	printf("%s tunnels %u:", wide ? "wide" : "host", n);
	report("install", tin, done_in);
	report("removal", tout, done_out);
	printf(" background caught up in %.1f ms\n", us(rte_get_timer_cycles() - t0) / 1000);
	fflush(stdout);
	for (uint32_t i = 0; i < n + done_in; i++)
		if (i < n || i >= n + done_out)
			tunnel_del(i);
	free(tin);
	free(tout);
	return 0;
}

int
main(int argc, char **argv)
{
	char prefix[64], tunnels[256] = "10,1000,10000,100000", kinds[32] = "wide,host";
	char *eal[] = { "spdbench", "--no-huge", "-m", "8192", "--no-pci", "-l", "0",
			"--log-level", "lib.*:error", "--file-prefix", prefix };
	unsigned int ops = 200, max_n = 0, n_list = 0;
	uint32_t list[16];
	double max_s = 20;
	int c;

	static const struct option lo[] = {
		{ "tunnels", required_argument, NULL, 't' }, { "ops", required_argument, NULL, 'o' },
		{ "kind", required_argument, NULL, 'k' },
		{ "max-seconds", required_argument, NULL, 's' }, { NULL, 0, NULL, 0 } };
	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		if (c == 't')
			snprintf(tunnels, sizeof(tunnels), "%s", optarg);
		else if (c == 'o')
			ops = (unsigned int)strtoul(optarg, NULL, 10);
		else if (c == 'k')
			snprintf(kinds, sizeof(kinds), "%s", optarg);
		else if (c == 's')
			max_s = strtod(optarg, NULL);
		else
			return 2;
	}
	if (ops == 0)
		return 2;
	for (char *s = tunnels; n_list < RTE_DIM(list) && *s != '\0'; s += *s == ',') {
		list[n_list] = (uint32_t)strtoul(s, &s, 10);
		max_n = RTE_MAX(max_n, list[n_list++]);
	}
	snprintf(prefix, sizeof(prefix), "spdbench_%d", getpid());
	if (rte_eal_init((int)RTE_DIM(eal), eal) < 0)
		return 1;
	dp.rcu = rte_zmalloc(NULL, rte_rcu_qsbr_get_memsize(4), 64);
	rte_rcu_qsbr_init(dp.rcu, 4);
	mb = crypto_mgr_create();
	if (mb == NULL || sa_init(1, max_n + ops + 16) || spd_init(max_n + ops + 16))
		return 1;
	printf("spdbench: one install = SA_ADD + POLICY_ADD, one removal = SA_DEL "
	       "(its policy with it), one at a time after N in one batch\n");
	for (char *k = strtok(kinds, ","); k != NULL; k = strtok(NULL, ",")) {
		for (unsigned int i = 0; i < n_list; i++)
			if (run(list[i], strcmp(k, "wide") == 0, ops, max_s) != 0)
				return 1;
	}
	return 0;
}
