/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * main.c - dpvpn-pktgen: a DPDK traffic generator and sink for throughput
 * rigs.  EAL and port set-up, one TX and one RX worker lcore (or one lcore
 * doing both), and the main lcore, which only prints progress.
 *
 *   dpvpn-pktgen [EAL args] -- [--tx-port N] [--rx-port M] [options]
 *
 * Exit status: 0 after a run (whatever the loss), 2 for bad options or a
 * set-up failure.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_launch.h>
#include <rte_lcore.h>

#include "pktgen.h"

#define EXIT_SETUP	2
#define MONITOR_US	50000	/* main lcore's nap between looks at the workers */

int pg_quit = PG_RUN;

/* What one worker lcore runs: the generator, the sink, or both. */
struct role {
	struct pg_tx *tx;
	struct pg_rx *rx;
};

struct app {
	struct pg_config cfg;
	struct rte_mempool *tx_pool, *rx_pool;
	struct pg_tx *tx;
	struct pg_rx *rx;
	struct role roles[RTE_MAX_LCORE];
	int running;		/* workers not yet returned */
};

static struct app app;

/* First signal: stop TX and drain.  Second: stop now.  Lock-free atomics
 * are async-signal-safe. */
static void
on_signal(int sig)
{
	int q = __atomic_load_n(&pg_quit, __ATOMIC_RELAXED);

	(void)sig;
	__atomic_store_n(&pg_quit, q == PG_RUN ? PG_STOP_TX : PG_STOP_ALL, __ATOMIC_RELAXED);
}

static void
signals(void)
{
	struct sigaction sa = { .sa_handler = on_signal };

	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
}

static int
worker_main(void *arg)
{
	const struct role *ro = arg;
	bool tx_on = ro->tx != NULL, rx_on = ro->rx != NULL;

	/* Both ends stop on their own: TX at --duration/--count, RX after drain. */
	while (tx_on || rx_on) {
		if (tx_on)
			tx_on = tx_step(ro->tx);
		if (rx_on)
			rx_on = rx_step(ro->rx);
	}
	__atomic_sub_fetch(&app.running, 1, __ATOMIC_RELEASE);
	return 0;
}

/* Separate TX and RX lcores when there are two workers, else one does both. */
static int
assign_lcores(struct app *a)
{
	unsigned int w[2], n = 0, lc;

	RTE_LCORE_FOREACH_WORKER(lc) {
		if (n < RTE_DIM(w))
			w[n++] = lc;
	}
	if (n == 0) {
		fprintf(stderr, "lcores: need a worker lcore besides the main one "
			"(e.g. -l 0,1)\n");
		return -1;
	}
	if (a->tx && a->rx && n == 2) {
		a->roles[w[0]].tx = a->tx;
		a->roles[w[1]].rx = a->rx;
	} else {
		a->roles[w[0]] = (struct role){ .tx = a->tx, .rx = a->rx };
	}
	for (unsigned int i = 0; i < n; i++) {
		if (a->roles[w[i]].tx)
			fprintf(stderr, "lcore %u: tx on port %u\n", w[i], a->cfg.tx_port);
		if (a->roles[w[i]].rx)
			fprintf(stderr, "lcore %u: rx on port %u\n", w[i], a->cfg.rx_port);
	}
	return 0;
}

static int
setup(struct app *a)
{
	const struct pg_config *cfg = &a->cfg;

	/* Every port's RX queue fills from the RX pool, the TX port's too. */
	a->rx_pool = port_pool(cfg, false);
	if (a->rx_pool == NULL)
		return -1;
	if (cfg->tx_port != PG_NO_PORT && ((a->tx_pool = port_pool(cfg, true)) == NULL ||
					   port_setup(cfg->tx_port, a->rx_pool, cfg) != 0))
		return -1;
	if (cfg->rx_port != PG_NO_PORT && cfg->rx_port != cfg->tx_port &&
	    port_setup(cfg->rx_port, a->rx_pool, cfg) != 0)
		return -1;
	if (cfg->tx_port != PG_NO_PORT && (a->tx = tx_create(cfg, a->tx_pool)) == NULL)
		return -1;
	if (cfg->rx_port != PG_NO_PORT && (a->rx = rx_create(cfg, a->tx)) == NULL)
		return -1;
	if (cfg->link_wait_ms != 0 &&
	    ((cfg->tx_port != PG_NO_PORT && port_wait_link(cfg->tx_port, cfg->link_wait_ms) != 0) ||
	     (cfg->rx_port != PG_NO_PORT && port_wait_link(cfg->rx_port, cfg->link_wait_ms) != 0)))
		return -1;
	return assign_lcores(a);
}

static void
launch(struct app *a)
{
	unsigned int lc;

	RTE_LCORE_FOREACH_WORKER(lc) {
		if (a->roles[lc].tx || a->roles[lc].rx)
			a->running++;
	}
	RTE_LCORE_FOREACH_WORKER(lc) {
		if (a->roles[lc].tx || a->roles[lc].rx)
			rte_eal_remote_launch(worker_main, &a->roles[lc], lc);
	}
}

/* The main lcore naps, and prints progress once a second. */
static void
monitor(const struct app *a)
{
	bool show = a->cfg.progress || isatty(STDERR_FILENO);
	uint64_t hz = rte_get_tsc_hz(), start = rte_rdtsc(), next = start + hz, now;

	while (__atomic_load_n(&a->running, __ATOMIC_ACQUIRE) > 0) {
		rte_delay_us_sleep(MONITOR_US);
		now = rte_rdtsc();
		if (show && now >= next) {
			report_progress(a->tx, a->rx, (double)(now - start) / (double)hz);
			next += hz;
		}
	}
	rte_eal_mp_wait_lcore();
}

static void
teardown(struct app *a)
{
	tx_free(a->tx);
	rx_free(a->rx);
	port_close(a->cfg.tx_port);
	if (a->cfg.rx_port != a->cfg.tx_port)
		port_close(a->cfg.rx_port);
	rte_mempool_free(a->tx_pool);
	rte_mempool_free(a->rx_pool);
	rte_eal_cleanup();
}

int
main(int argc, char **argv)
{
	int rc = rte_eal_init(argc, argv);

	if (rc < 0) {
		fprintf(stderr, "EAL: initialisation failed: %s\n", rte_strerror(rte_errno));
		return EXIT_SETUP;
	}
	argc -= rc;
	argv += rc;
	rc = opt_parse(&app.cfg, argc, argv);
	if (rc != 0) {
		if (rc > 0)
			opt_usage(argv[0]);
		else
			fprintf(stderr, "(see -- --help)\n");
		rte_eal_cleanup();
		return rc > 0 ? EXIT_SUCCESS : EXIT_SETUP;
	}
	if (setup(&app) != 0) {
		teardown(&app);
		return EXIT_SETUP;
	}
	signals();
	launch(&app);
	monitor(&app);
	report_final(&app.cfg, app.tx, app.rx);
	teardown(&app);
	return EXIT_SUCCESS;
}
