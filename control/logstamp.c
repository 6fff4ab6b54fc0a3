/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * logstamp.c - timestamps on dpvpnd's stderr (logstamp.h).
 *
 * One fopencookie() stream in place of stderr, so that every fprintf(stderr)
 * in dpvpnd gets its stamp without being touched.  The stream is line
 * buffered: a line is written (one writev: stamp and text) when its newline
 * is, as soon as stderr's would have been.  A line longer than the buffer
 * reaches the cookie in pieces; only the first piece is stamped.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "logstamp.h"

#define STAMP_MAX	40	/* "2026-11-25T06:30:30.123+01:00 " and room */

static bool at_line_start = true;
static char linebuf[4096];

/* systemd's JOURNAL_STREAM="DEV:INODE" names the stream on our fd 2. */
static bool stderr_is_journal(void)
{
	const char *js = getenv("JOURNAL_STREAM");
	unsigned long long dev, ino;
	struct stat st;

	return js != NULL && sscanf(js, "%llu:%llu", &dev, &ino) == 2 && fstat(2, &st) == 0 &&
	       (unsigned long long)st.st_dev == dev && (unsigned long long)st.st_ino == ino;
}

/* Local time with milliseconds and the UTC offset as +hh:mm (RFC 3339). */
static size_t stamp(char *out)
{
	struct timespec ts;
	struct tm tm;
	char zone[8];
	size_t n;

	clock_gettime(CLOCK_REALTIME, &ts);
	localtime_r(&ts.tv_sec, &tm);
	n = strftime(out, STAMP_MAX, "%Y-%m-%dT%H:%M:%S", &tm);
	if (strftime(zone, sizeof(zone), "%z", &tm) != 5)	/* "+0100" */
		snprintf(zone, sizeof(zone), "+0000");
	n += (size_t)snprintf(out + n, STAMP_MAX - n, ".%03ld%.3s:%s ", ts.tv_nsec / 1000000,
			      zone, zone + 3);
	return n;
}

/* All of iov[0..n) to fd 2 (a pipe may take less at once); -1 on an error. */
static int write_all(struct iovec *iov, int n)
{
	while (n > 0) {
		ssize_t w = writev(2, iov, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		for (; n > 0 && (size_t)w >= iov->iov_len; iov++, n--)
			w -= (ssize_t)iov->iov_len;
		if (n > 0) {
			iov->iov_base = (char *)iov->iov_base + w;
			iov->iov_len -= (size_t)w;
		}
	}
	return 0;
}

static ssize_t stamped_write(void *cookie, const char *buf, size_t size)
{
	size_t done = 0;

	(void)cookie;
	while (done < size) {
		const char *nl = memchr(buf + done, '\n', size - done);
		size_t len = nl ? (size_t)(nl - (buf + done)) + 1 : size - done;
		char ts[STAMP_MAX];
		struct iovec iov[2];
		int n = 0;

		if (at_line_start)
			iov[n++] = (struct iovec){ ts, stamp(ts) };
		iov[n++] = (struct iovec){ (void *)(buf + done), len };
		if (write_all(iov, n) != 0)
			return done ? (ssize_t)done : -1;
		at_line_start = nl != NULL;
		done += len;
	}
	return (ssize_t)size;
}

int logstamp_stderr(void)
{
	cookie_io_functions_t io = { .write = stamped_write };
	FILE *f;

	if (stderr_is_journal())
		return 0;
	f = fopencookie(NULL, "w", io);
	if (f == NULL || setvbuf(f, linebuf, _IOLBF, sizeof(linebuf)) != 0) {
		if (f != NULL)
			fclose(f);
		return -1;
	}
	fflush(stderr);
	stderr = f;
	return 1;
}
