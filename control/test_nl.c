/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_nl.c - nl.c against a real kernel: its own network namespace
 * (unshare, so root), veth interfaces as twins (the kernel may have no dummy
 * module), routes made with ip(8), and the install/remove calls the RIB makes.
 *
 *   d1 (twin of tunnel tA)   d2 (twin of tB)   d3 (not a twin)
 *
 * The tests run in order and share the namespace and the nl handle.  A route
 * that must NOT be mirrored is checked after a sentinel route added behind it
 * has arrived (the kernel sends the events in order).  Every wait is bounded
 * (WAIT_MS).  Without root or CAP_SYS_ADMIN: skipped (exit 77).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <net/if.h>
#include <poll.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "nl.h"

#define WAIT_MS		3000
#define MAX_ROUTES	256

/* What the callbacks left installed, as "tA,tB" per prefix. */
static struct {
	char prefix[MAX_ROUTES][64];
	char names[MAX_ROUTES][NL_MAX_NH * NL_NAME_LEN];
	unsigned n, installs, removes;
} rec;

static struct nl *nl;
static uint32_t if_d1, if_d2, if_d3;

static int rec_find(const char *prefix)
{
	for (unsigned i = 0; i < rec.n; i++)
		if (strcmp(rec.prefix[i], prefix) == 0)
			return (int)i;
	return -1;
}

static int cb_install(void *arg, const struct nl_prefix *p, const char *const names[],
		      unsigned n)
{
	char ps[64];
	int i = rec_find(nl_prefix_str(p, ps, sizeof(ps)));

	(void)arg;
	if (i < 0) {
		assert_true(rec.n < MAX_ROUTES);
		i = (int)rec.n++;
		snprintf(rec.prefix[i], sizeof(rec.prefix[i]), "%s", ps);
	}
	rec.names[i][0] = '\0';
	for (unsigned j = 0; j < n; j++) {
		if (j)
			strcat(rec.names[i], ",");
		strcat(rec.names[i], names[j]);
	}
	rec.installs++;
	return 0;
}

static int cb_remove(void *arg, const struct nl_prefix *p)
{
	char ps[64];
	int i = rec_find(nl_prefix_str(p, ps, sizeof(ps)));

	(void)arg;
	assert_true(i >= 0);	/* never a remove for what was not installed */
	rec.n--;
	memcpy(rec.prefix[i], rec.prefix[rec.n], sizeof(rec.prefix[i]));
	memcpy(rec.names[i], rec.names[rec.n], sizeof(rec.names[i]));
	rec.removes++;
	return 0;
}

static const char *rec_get(const char *prefix)
{
	int i = rec_find(prefix);

	return i < 0 ? NULL : rec.names[i];
}

static void sh(const char *fmt, ...)
{
	char cmd[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	if (system(cmd) != 0)
		fail_msg("command failed: %s", cmd);
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static bool same(const char *a, const char *b)
{
	return a == b || (a && b && strcmp(a, b) == 0);
}

/* Read events until prefix shows names (NULL: not installed), WAIT_MS at most. */
static void expect(const char *prefix, const char *names)
{
	uint64_t end = now_ms() + WAIT_MS;

	for (;;) {
		assert_int_equal(nl_read(nl), 0);
		if (same(rec_get(prefix), names))
			return;
		if (now_ms() > end)
			fail_msg("%s: installed %s, expected %s", prefix,
				 rec_get(prefix) ? rec_get(prefix) : "(none)",
				 names ? names : "(none)");
		struct pollfd p = { .fd = nl_fd(nl), .events = POLLIN };

		poll(&p, 1, 50);
	}
}

/* A route after the ones just made: once it is in, they were all read. */
static void sentinel(void)
{
	sh("ip route replace 10.250.0.0/24 dev d1");
	expect("10.250.0.0/24", "tA");
	sh("ip route del 10.250.0.0/24 dev d1");
	expect("10.250.0.0/24", NULL);
}

static int link_ioctl(const char *ifname, unsigned long req, struct ifreq *ifr)
{
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	int ret;

	memset(ifr, 0, sizeof(*ifr));
	snprintf(ifr->ifr_name, sizeof(ifr->ifr_name), "%s", ifname);
	ret = ioctl(fd, req, ifr);
	close(fd);
	return ret;
}

/* ---- the tests, in order ---- */

static void test_dump_at_start(void **state)
{
	struct nl_ops ops = { .install = cb_install, .remove = cb_remove };

	(void)state;
	/* made before the RIB listens: only the dump can find them */
	sh("ip route add 10.1.0.0/24 dev d1");
	sh("ip route add 10.9.0.0/24 dev d3");
	sh("ip route add 10.8.0.0/24 dev d1 table 100");
	nl = nl_open(NL_TABLE_MAIN, &ops);
	assert_non_null(nl);
	assert_int_equal(nl_twin_add(nl, if_d1, "tA"), 0);
	assert_int_equal(nl_twin_add(nl, if_d2, "tB"), 0);
	assert_int_equal(nl_resync(nl), 0);
	assert_string_equal(rec_get("10.1.0.0/24"), "tA");
	assert_null(rec_get("10.9.0.0/24"));	/* not a twin */
	assert_null(rec_get("10.8.0.0/24"));	/* not the main table */
}

static void test_single_path(void **state)
{
	unsigned installs = rec.installs;

	(void)state;
	sh("ip route add 10.2.0.0/24 dev d1");
	expect("10.2.0.0/24", "tA");
	sh("ip route replace 10.2.0.0/24 dev d2");
	expect("10.2.0.0/24", "tB");
	sh("ip route replace 10.2.0.0/24 dev d3");	/* away from the twins */
	expect("10.2.0.0/24", NULL);
	sh("ip route replace 10.2.0.0/24 dev d1");
	expect("10.2.0.0/24", "tA");
	sh("ip route del 10.2.0.0/24");
	expect("10.2.0.0/24", NULL);
	assert_int_equal(rec.installs - installs, 3);
}

static void test_multipath(void **state)
{
	(void)state;
	sh("ip route add 10.3.0.0/24 nexthop dev d1 nexthop dev d2");
	expect("10.3.0.0/24", "tA,tB");
	sh("ip route replace 10.3.0.0/24 dev d2");
	expect("10.3.0.0/24", "tB");
	sh("ip route replace 10.3.0.0/24 nexthop dev d2 nexthop dev d1");
	expect("10.3.0.0/24", "tA,tB");
}

static void test_mixed_not_mirrored(void **state)
{
	(void)state;
	sh("ip route add 10.4.0.0/24 nexthop dev d1 nexthop dev d3");
	sentinel();
	assert_null(rec_get("10.4.0.0/24"));
	/* a mirrored route turned mixed goes */
	sh("ip route replace 10.3.0.0/24 nexthop dev d2 nexthop dev d3");
	expect("10.3.0.0/24", NULL);
	sh("ip route replace 10.3.0.0/24 nexthop dev d2 nexthop dev d1");
	expect("10.3.0.0/24", "tA,tB");
}

static void test_other_table(void **state)
{
	(void)state;
	sh("ip route add 10.5.0.0/24 dev d2 table 100");
	sentinel();
	assert_null(rec_get("10.5.0.0/24"));
}

static void test_ipv6(void **state)
{
	struct nl_prefix a;

	(void)state;
	/* nl_addr_add: IFA_F_NODAD, usable at once as a gateway's subnet */
	assert_int_equal(nl_prefix_parse("2001:db8:a::1/64", &a), 0);
	assert_int_equal(nl_addr_add(nl, if_d1, &a), 0);
	assert_int_equal(nl_prefix_parse("2001:db8:b::1/64", &a), 0);
	assert_int_equal(nl_addr_add(nl, if_d2, &a), 0);
	expect("2001:db8:a::/64", "tA");	/* connected routes of twins too */
	expect("2001:db8:b::/64", "tB");
	sh("ip -6 route add 2001:db8:1::/48 via 2001:db8:a::2 dev d1");
	expect("2001:db8:1::/48", "tA");
	sh("ip -6 route add 2001:db8:2::/48 nexthop via 2001:db8:a::2 dev d1 "
	   "nexthop via 2001:db8:b::2 dev d2");
	expect("2001:db8:2::/48", "tA,tB");
	/* IPv6 deletes one next hop of a multipath route alone */
	sh("ip -6 route del 2001:db8:2::/48 via 2001:db8:b::2 dev d2");
	expect("2001:db8:2::/48", "tA");
	sh("ip -6 route append 2001:db8:2::/48 via 2001:db8:b::2 dev d2");
	expect("2001:db8:2::/48", "tA,tB");
	sh("ip -6 route del 2001:db8:2::/48");
	expect("2001:db8:2::/48", NULL);
	sh("ip -6 route del 2001:db8:1::/48");
	expect("2001:db8:1::/48", NULL);
	assert_null(rec_get("fe80::/64"));	/* link-local: per link */
}

static void test_nexthop_objects(void **state)
{
	(void)state;
	/* FRR's zebra installs routes this way (RTA_NH_ID) */
	sh("ip nexthop add id 1 dev d1");
	sh("ip nexthop add id 2 dev d2");
	sh("ip nexthop add id 3 group 1/2");
	sh("ip route add 10.10.0.0/24 nhid 1");
	expect("10.10.0.0/24", "tA");
	sh("ip route add 10.11.0.0/24 nhid 3");
	expect("10.11.0.0/24", "tA,tB");
	sh("ip route replace 10.11.0.0/24 nhid 2");
	expect("10.11.0.0/24", "tB");
	sh("ip route del 10.10.0.0/24");
	sh("ip route del 10.11.0.0/24");
	expect("10.10.0.0/24", NULL);
	expect("10.11.0.0/24", NULL);
}

static void set_compat(const char *v)
{
	FILE *f = fopen("/proc/sys/net/ipv4/nexthop_compat_mode", "w");

	assert_non_null(f);
	fputs(v, f);
	assert_int_equal(fclose(f), 0);
}

static void test_compat_mode_off(void **state)
{
	struct nl_ops ops = { .install = cb_install, .remove = cb_remove };
	char path[] = "/tmp/test_nl.XXXXXX", text[512] = "";
	int fd = mkstemp(path), saved = dup(2);
	struct nl *other;
	FILE *f;

	(void)state;
	assert_true(fd >= 0 && saved >= 0);
	set_compat("0");
	dup2(fd, 2);		/* what nl_open says on stderr */
	other = nl_open(NL_TABLE_MAIN, &ops);
	dup2(saved, 2);
	close(saved);
	assert_non_null(other);
	nl_close(other);
	f = fdopen(fd, "r");
	rewind(f);
	assert_true(fread(text, 1, sizeof(text) - 1, f) > 0);
	fclose(f);
	unlink(path);
	assert_non_null(strstr(text, "nexthop_compat_mode is 0"));
	/* what it warns about: a nexthop object's route carries no next hop */
	sh("ip route add 10.14.0.0/24 nhid 1");
	sentinel();
	assert_null(rec_get("10.14.0.0/24"));
	sh("ip route del 10.14.0.0/24");
	set_compat("1");
}

static void test_admin_distance(void **state)
{
	struct nl_prefix p;
	const char *cfg[] = { "cfg" }, *ctl[] = { "ctl2", "ctl1" };
	unsigned installs;

	(void)state;
	assert_int_equal(nl_prefix_parse("10.6.0.0/24", &p), 0);
	assert_int_equal(nl_rib_set(nl, &p, NL_SRC_CONFIG, cfg, 1), 0);
	assert_string_equal(rec_get("10.6.0.0/24"), "cfg");
	installs = rec.installs;
	sh("ip route add 10.6.0.0/24 dev d1");	/* BGP's route: shadowed */
	sentinel();
	assert_string_equal(rec_get("10.6.0.0/24"), "cfg");
	assert_int_equal(rec.installs - installs, 1);	/* the sentinel's only */
	assert_int_equal(nl_rib_set(nl, &p, NL_SRC_CTL, ctl, 2), 0);
	assert_string_equal(rec_get("10.6.0.0/24"), "cfg");
	assert_int_equal(nl_rib_clear(nl, &p, NL_SRC_CONFIG), 0);
	assert_string_equal(rec_get("10.6.0.0/24"), "ctl1,ctl2");
	assert_int_equal(nl_rib_clear(nl, &p, NL_SRC_CTL), 0);
	assert_string_equal(rec_get("10.6.0.0/24"), "tA");
	assert_int_equal(nl_rib_installed(nl, &p, NULL), 1);
	sh("ip route del 10.6.0.0/24");
	expect("10.6.0.0/24", NULL);
	assert_int_equal(nl_rib_installed(nl, &p, NULL), 0);
}

static void test_resync_after_change(void **state)
{
	unsigned installs = rec.installs, removes = rec.removes;

	(void)state;
	expect("10.1.0.0/24", "tA");
	/* while nobody reads: one gone, one new, one changed, the rest as they were */
	sh("ip route del 10.1.0.0/24");
	sh("ip route add 10.7.0.0/24 dev d2");
	sh("ip route replace 10.3.0.0/24 dev d1");
	assert_int_equal(nl_resync(nl), 0);
	assert_null(rec_get("10.1.0.0/24"));
	assert_string_equal(rec_get("10.7.0.0/24"), "tB");
	assert_string_equal(rec_get("10.3.0.0/24"), "tA");
	assert_int_equal(rec.installs - installs, 2);	/* no churn for the others */
	assert_int_equal(rec.removes - removes, 1);
	/* a resync with nothing changed calls nothing */
	assert_int_equal(nl_resync(nl), 0);
	assert_int_equal(rec.installs - installs, 2);
	assert_int_equal(rec.removes - removes, 1);
}

static void test_link_down(void **state)
{
	(void)state;
	/* IPv4 flushes d2's routes with no route message: the link event it is */
	sh("ip route replace 10.3.0.0/24 nexthop dev d1 nexthop dev d2");
	expect("10.3.0.0/24", "tA,tB");
	sh("ip link set d2 down");
	expect("10.7.0.0/24", NULL);
	expect("10.3.0.0/24", "tA");	/* d2's next hop dead */
	sh("ip link set d2 up");
	sh("ip route replace 10.3.0.0/24 nexthop dev d1 nexthop dev d2");
	expect("10.3.0.0/24", "tA,tB");
}

static void test_twin_del(void **state)
{
	(void)state;
	sh("ip route add 10.12.0.0/24 dev d2");
	expect("10.12.0.0/24", "tB");
	/* no longer a twin: its routes go, a multipath one with it turns mixed */
	assert_int_equal(nl_twin_del(nl, if_d2), 0);
	expect("10.3.0.0/24", NULL);
	expect("10.12.0.0/24", NULL);
	assert_string_equal(rec_get("2001:db8:a::/64"), "tA");
	assert_int_equal(nl_twin_add(nl, if_d2, "tB"), 0);
	expect("10.3.0.0/24", "tA,tB");
	expect("10.12.0.0/24", "tB");
	assert_int_equal(nl_twin_del(nl, 12345), -1);
}

static void test_ecmp_limit(void **state)
{
	char hops[256] = "", name[8];
	size_t len;

	(void)state;
	for (int i = 1; i <= NL_MAX_NH + 1; i++) {
		sh("ip link add e%d type veth peer name f%d && ip link set f%d up && "
		   "ip link set e%d up", i, i, i, i);
		snprintf(name, sizeof(name), "e%d", i);
		assert_int_equal(nl_twin_add(nl, if_nametoindex(name), name), 0);
		if (i <= NL_MAX_NH) {
			len = strlen(hops);
			snprintf(hops + len, sizeof(hops) - len, " nexthop dev e%d", i);
		}
	}
	sh("ip route add 10.13.0.0/24%s", hops);	/* the dataplane's widest ECMP */
	expect("10.13.0.0/24", "e1,e2,e3,e4,e5,e6,e7,e8");
	sh("ip route replace 10.13.0.0/24%s nexthop dev e9", hops);
	expect("10.13.0.0/24", NULL);			/* 9: logged, not mirrored */
	/* two next hops on one twin are one tunnel */
	sh("ip route replace 10.13.0.0/24 nexthop via 10.0.9.1 dev e9 onlink "
	   "nexthop via 10.0.9.2 dev e9 onlink");
	expect("10.13.0.0/24", "e9");
	sh("ip route del 10.13.0.0/24");
	expect("10.13.0.0/24", NULL);
	for (int i = 1; i <= NL_MAX_NH + 1; i++) {
		snprintf(name, sizeof(name), "e%d", i);
		assert_int_equal(nl_twin_del(nl, if_nametoindex(name)), 0);
		sh("ip link del e%d", i);
	}
	assert_int_equal(nl_read(nl), 0);
}

static void test_enobufs_resync(void **state)
{
	char path[] = "/tmp/test_nl.XXXXXX";
	int small = 1, fd = mkstemp(path);
	FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;

	(void)state;
	/* a tiny buffer overflows on 200 routes: ENOBUFS, then a resync finds them */
	assert_int_equal(setsockopt(nl_fd(nl), SOL_SOCKET, SO_RCVBUFFORCE, &small,
				    sizeof(small)), 0);
	assert_non_null(f);
	for (int i = 0; i < 200; i++)
		fprintf(f, "route add 10.20.%d.0/24 dev d2\n", i);
	fclose(f);
	sh("ip -batch %s", path);
	unlink(path);
	expect("10.20.199.0/24", "tB");
	expect("10.20.0.0/24", "tB");
	sh("ip route flush dev d2 table main proto boot");
	expect("10.20.100.0/24", NULL);
}

static void test_twin_setup(void **state)
{
	struct nl_prefix a;
	struct ifreq ifr;

	(void)state;
	assert_int_equal(nl_link_set(nl, if_d3, -1, 1400), 0);
	assert_int_equal(link_ioctl("d3", SIOCGIFMTU, &ifr), 0);
	assert_int_equal(ifr.ifr_mtu, 1400);
	assert_int_equal(nl_link_set_name(nl, "d3", 0, 0), 0);
	assert_int_equal(link_ioctl("d3", SIOCGIFFLAGS, &ifr), 0);
	assert_false(ifr.ifr_flags & IFF_UP);
	assert_int_equal(nl_link_set_name(nl, "d3", 1, 1300), 0);
	assert_int_equal(link_ioctl("d3", SIOCGIFFLAGS, &ifr), 0);
	assert_true(ifr.ifr_flags & IFF_UP);
	assert_int_equal(nl_prefix_parse("10.99.0.1/30", &a), 0);
	assert_int_equal(nl_addr_add(nl, if_d3, &a), 0);
	assert_int_equal(nl_addr_add(nl, if_d3, &a), 0);	/* again: replaced */
	sh("ip -o addr show dev d3 | grep -q 'inet 10.99.0.1/30'");
	assert_int_equal(nl_addr_del(nl, if_d3, &a), 0);
	sh("! ip -o addr show dev d3 | grep -q 'inet 10.99.0.1/30'");
	assert_int_equal(nl_link_set_name(nl, "no-such-link", 1, 0), -1);
	assert_int_equal(errno, ENODEV);
}

static void test_prefix_parse(void **state)
{
	struct nl_prefix p;
	char buf[64];

	(void)state;
	assert_int_equal(nl_prefix_parse("10.1.2.3/33", &p), -1);
	assert_int_equal(nl_prefix_parse("10.1.2/24", &p), -1);
	assert_int_equal(nl_prefix_parse("10.1.2.3/", &p), -1);
	assert_int_equal(nl_prefix_parse("2001:db8::1/129", &p), -1);
	assert_int_equal(nl_prefix_parse("10.1.2.3", &p), 0);
	assert_string_equal(nl_prefix_str(&p, buf, sizeof(buf)), "10.1.2.3/32");
	assert_int_equal(nl_prefix_parse("2001:db8::1/64", &p), 0);
	assert_string_equal(nl_prefix_str(&p, buf, sizeof(buf)), "2001:db8::1/64");
}

static int setup_ns(void **state)
{
	(void)state;
	sh("ip link set lo up");
	for (int i = 1; i <= 3; i++)	/* veth: this kernel may have no dummy module */
		sh("ip link add d%d type veth peer name p%d && ip link set p%d up && "
		   "ip link set d%d up", i, i, i, i);
	if_d1 = if_nametoindex("d1");
	if_d2 = if_nametoindex("d2");
	if_d3 = if_nametoindex("d3");
	return if_d1 && if_d2 && if_d3 ? 0 : -1;
}

static int teardown_ns(void **state)
{
	(void)state;
	nl_close(nl);	/* the namespace goes with the process */
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_prefix_parse),
		cmocka_unit_test(test_dump_at_start),
		cmocka_unit_test(test_single_path),
		cmocka_unit_test(test_multipath),
		cmocka_unit_test(test_mixed_not_mirrored),
		cmocka_unit_test(test_other_table),
		cmocka_unit_test(test_ipv6),
		cmocka_unit_test(test_nexthop_objects),
		cmocka_unit_test(test_compat_mode_off),
		cmocka_unit_test(test_admin_distance),
		cmocka_unit_test(test_resync_after_change),
		cmocka_unit_test(test_link_down),
		cmocka_unit_test(test_twin_del),
		cmocka_unit_test(test_ecmp_limit),
		cmocka_unit_test(test_enobufs_resync),
		cmocka_unit_test(test_twin_setup),
	};

	if (geteuid() != 0) {
		fprintf(stderr, "test_nl: skipped: needs root (a network namespace of its own)\n");
		return 77;
	}
	if (unshare(CLONE_NEWNET) < 0) {
		fprintf(stderr, "test_nl: skipped: unshare(CLONE_NEWNET): %s\n", strerror(errno));
		return 77;
	}
	return cmocka_run_group_tests(tests, setup_ns, teardown_ns);
}
