/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * nl_watch.c - nl.c's RIB on its own, for tests and by hand: register the
 * twins named on the command line, dump, then follow the kernel's events and
 * print what dpvpnd would install in or remove from the dataplane.
 *
 *   nl_watch [-t TABLE] IFNAME=TUNNEL...
 *   ready
 *   install 198.18.2.0/24 t1,t2
 *   remove 198.18.2.0/24
 *
 * One line each, flushed; "ready" once the first dump is applied.  Runs until
 * SIGTERM or SIGINT.  Not installed (tests/test_frr_harness.py runs it in a
 * namespace).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <net/if.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "nl.h"

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static int print_install(void *arg, const struct nl_prefix *p, const char *const names[],
			 unsigned n)
{
	char ps[64];

	(void)arg;
	printf("install %s ", nl_prefix_str(p, ps, sizeof(ps)));
	for (unsigned i = 0; i < n; i++)
		printf("%s%s", i ? "," : "", names[i]);
	printf("\n");
	return 0;
}

static int print_remove(void *arg, const struct nl_prefix *p)
{
	char ps[64];

	(void)arg;
	printf("remove %s\n", nl_prefix_str(p, ps, sizeof(ps)));
	return 0;
}

/* IFNAME=TUNNEL */
static int add_twin(struct nl *nl, const char *arg)
{
	char ifname[IFNAMSIZ];
	const char *eq = strchr(arg, '=');
	unsigned idx;

	if (!eq || eq == arg || (size_t)(eq - arg) >= sizeof(ifname)) {
		fprintf(stderr, "nl_watch: %s: expected IFNAME=TUNNEL\n", arg);
		return -1;
	}
	memcpy(ifname, arg, (size_t)(eq - arg));
	ifname[eq - arg] = '\0';
	idx = if_nametoindex(ifname);
	if (idx == 0) {
		fprintf(stderr, "nl_watch: %s: %s\n", ifname, strerror(errno));
		return -1;
	}
	return nl_twin_add(nl, idx, eq + 1);
}

int main(int argc, char **argv)
{
	struct nl_ops ops = { .install = print_install, .remove = print_remove };
	struct sigaction sa = { .sa_handler = on_signal };
	unsigned long table = NL_TABLE_MAIN;
	struct nl *nl;
	int opt;

	while ((opt = getopt(argc, argv, "t:")) != -1) {
		if (opt != 't')
			goto usage;
		table = strtoul(optarg, NULL, 10);
	}
	if (optind == argc)
		goto usage;
	setvbuf(stdout, NULL, _IOLBF, 0);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	nl = nl_open((uint32_t)table, &ops);
	if (!nl)
		return 1;
	for (int i = optind; i < argc; i++)
		if (add_twin(nl, argv[i]) < 0)
			return 1;
	if (nl_resync(nl) < 0)
		return 1;
	printf("ready\n");
	while (!stop) {
		struct pollfd p = { .fd = nl_fd(nl), .events = POLLIN };

		if (poll(&p, 1, 200) < 0 && errno != EINTR)
			break;
		if (nl_read(nl) < 0)
			break;
	}
	nl_close(nl);
	return 0;
usage:
	fprintf(stderr, "usage: nl_watch [-t TABLE] IFNAME=TUNNEL...\n");
	return 2;
}
