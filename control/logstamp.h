/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * logstamp.h - an ISO 8601 local timestamp at the start of every line dpvpnd
 * writes to stderr, unless stderr is systemd's journal (which stamps lines
 * itself): the log of a dpvpnd run by hand, by a script or under a
 * supervisor that does not stamp says when each thing happened.
 */
#ifndef DPVPN_CONTROL_LOGSTAMP_H
#define DPVPN_CONTROL_LOGSTAMP_H

/*
 * Replace stderr by a line-buffered stream that writes each line to file
 * descriptor 2 behind "2026-11-25T06:30:30.123+01:00 ".  Nothing is done when
 * JOURNAL_STREAM names descriptor 2 (systemd's "DEV:INODE" of the stream it
 * connected, see systemd.exec(5)).  Returns 1 if stamped, 0 if not, -1 if
 * the stream could not be made (stderr left as it was).  Call once, early.
 */
int logstamp_stderr(void);

#endif /* DPVPN_CONTROL_LOGSTAMP_H */
