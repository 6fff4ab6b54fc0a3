/* SPDX-License-Identifier: BSD-3-Clause */
/* lock.c - lock files that keep a second dpvpnd off a dataplane (lock.h). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "lock.h"

/* The pid holding a lock on fd (F_GETLK), 0 if none now or unknown. */
static pid_t holder(int fd)
{
	struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET };

	if (fcntl(fd, F_GETLK, &fl) != 0 || fl.l_type == F_UNLCK)
		return 0;
	return fl.l_pid;
}

/* Our pid in the file, for whoever reads it (the lock is what counts). */
static void write_pid(int fd)
{
	char text[32];
	int n = snprintf(text, sizeof(text), "%ld\n", (long)getpid());

	if (ftruncate(fd, 0) != 0 || pwrite(fd, text, (size_t)n, 0) != n)
		fprintf(stderr, "dpvpnd: lock file: cannot write the pid: %s\n", strerror(errno));
}

int lock_take(const char *path, char *err, size_t len)
{
	struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET };
	int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	pid_t pid;

	if (fd < 0) {
		snprintf(err, len, "%s: %s", path, strerror(errno));
		return -1;
	}
	if (fcntl(fd, F_SETLK, &fl) == 0) {
		write_pid(fd);
		return fd;
	}
	if (errno != EAGAIN && errno != EACCES) {
		snprintf(err, len, "%s: lock: %s", path, strerror(errno));
		close(fd);
		return -1;
	}
	pid = holder(fd);
	if (pid > 0)
		snprintf(err, len, "%s: held by pid %ld", path, (long)pid);
	else
		snprintf(err, len, "%s: held by another process", path);
	close(fd);
	errno = EWOULDBLOCK;
	return -1;
}
