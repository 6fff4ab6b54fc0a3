/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lock.h - one dpvpnd per dataplane and per sequence state file.
 *
 * A second dpvpnd started by mistake must refuse before it does anything:
 * reconciling the dataplane with its own config would remove the first
 * one's tunnels, and reserving sequence numbers from the same state file
 * would hand out numbers the first one uses (nonce reuse under one key).
 * So dpvpnd holds a lock file beside each: "STATE.lock" (taken by seq_open)
 * and "DATAPLANE-SOCKET.lock" (taken once connected, before the first
 * message).  The lock is a POSIX record lock (fcntl F_SETLK): the kernel
 * drops it when the holder dies, even by SIGKILL, so a stale file never
 * blocks a restart, and F_GETLK names the holder's pid.  The file holds
 * that pid as text for operators; it is left in place at exit (removing
 * it would race with the next dpvpnd locking it).
 */
#ifndef DPVPN_CONTROL_LOCK_H
#define DPVPN_CONTROL_LOCK_H

#include <stddef.h>

/*
 * Lock path (created 0600 if missing) for the life of this process: the
 * fd, to keep open.  -1 with why in err: held by another process (errno
 * EWOULDBLOCK, "PATH: held by pid N") or not possible (the file's error).
 */
int lock_take(const char *path, char *err, size_t len);

#endif /* DPVPN_CONTROL_LOCK_H */
