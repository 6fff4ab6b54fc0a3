#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# dpvpnd -n: "FILE: OK" and 0 for a good config, "FILE:LINE: ..." and 1 for a
# bad one, 2 for a usage error.  Usage: test_dpvpnd_check.sh DPVPND CONFIGDIR
set -u
dpvpnd=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")	# absolute: used after a cd
configs=$(cd "$2" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

# Every example config says at its top how to install it, and that line,
# run from the source tree with $tmp/etc for /etc/dpvpn, installs what
# dpvpnd -n takes (the lab configs hold keys: git keeps them 0644, dpvpnd
# takes them only private).
n=0
for f in "$configs"/*.conf; do
	c=$(basename "$f")
	# the package's annotated example needs its group (dpvpn) and new keys:
	# tests/test_debian_files.py and tests/test_package.py check it
	[ "$c" = example.conf ] && continue
	# not a dpvpn.conf: keepalived's, beside ha-a.conf (keepalived -t checks it)
	case $c in keepalived-*.conf) continue ;; esac
	cmd=$(sed -n 's/^;   \(install .*\)$/\1/p' "$f")
	[ "$(printf '%s\n' "$cmd" | grep -c .)" -eq 1 ] ||
		fail "$c: no (or more than one) ';   install ...' line"
	case $cmd in
	"install -D -m 600 "*" && dpvpnd -n -c /etc/dpvpn/$c") ;;
	*) fail "$c: expected 'install -D -m 600 ... && dpvpnd -n -c /etc/dpvpn/$c': $cmd" ;;
	esac
	cmd=$(printf '%s\n' "$cmd" | sed "s#/etc/dpvpn#$tmp/etc#g; s#&& dpvpnd #\&\& $dpvpnd #")
	out=$(cd "$configs/.." && eval "$cmd" 2>&1) || fail "$c: exit $?: $cmd: $out"
	[ "$out" = "$tmp/etc/$c: OK" ] || fail "$c: printed '$out'"
	n=$((n + 1))
done
[ $n -ge 6 ] || fail "only $n configs in $configs"
install -m 600 "$configs/lab-a.conf" "$tmp/lab-a.conf"
chmod 644 "$tmp/lab-a.conf"
"$dpvpnd" -n -c "$tmp/lab-a.conf" >"$tmp/out" 2>&1
rc=$?
[ $rc -eq 1 ] || fail "lab-a.conf 0644: exit $rc, expected 1"
grep -q "^$tmp/lab-a.conf:[0-9]*: \[tunnel to-b\] out-key: $tmp/lab-a.conf is mode 0644: " \
	"$tmp/out" || fail "lab-a.conf 0644: no mode error in: $(cat "$tmp/out")"

# keying = ike: the PSK file sits next to the configs and must be private too.
install -m 600 "$configs/ike.psk" "$tmp/ike.psk"
for c in ike-a ike-b; do
	install -m 644 "$configs/$c.conf" "$tmp/$c.conf"	# no key inline: 0644 is fine
	out=$("$dpvpnd" -n -c "$tmp/$c.conf" 2>&1) || fail "$c.conf: exit $?: $out"
	[ "$out" = "$tmp/$c.conf: OK" ] || fail "$c.conf: printed '$out'"
done
chmod 644 "$tmp/ike.psk"
"$dpvpnd" -n -c "$tmp/ike-a.conf" >"$tmp/out" 2>&1
rc=$?
[ $rc -eq 1 ] || fail "ike.psk 0644: exit $rc, expected 1"
grep -q "^$tmp/ike-a.conf:[0-9]*: \[tunnel to-b\] psk-file: $tmp/ike.psk: mode 0644 " \
	"$tmp/out" || fail "ike.psk 0644: no mode error in: $(cat "$tmp/out")"
grep -q "dpvpn lab" "$tmp/out" && fail "ike.psk 0644: the key was printed"

# [ha]: the sync key is a key file like the others.
install -m 600 "$configs/ike.psk" "$tmp/ike.psk"
install -m 644 "$configs/ha-sync.key" "$tmp/ha-sync.key"
install -m 644 "$configs/ha-a.conf" "$tmp/ha-a.conf"
"$dpvpnd" -n -c "$tmp/ha-a.conf" >"$tmp/out" 2>&1
rc=$?
[ $rc -eq 1 ] || fail "ha-sync.key 0644: exit $rc, expected 1"
grep -q "^$tmp/ha-a.conf:[0-9]*: \[ha\] sync-key: $tmp/ha-sync.key: mode 0644 " \
	"$tmp/out" || fail "ha-sync.key 0644: no mode error in: $(cat "$tmp/out")"
grep -q "$(cat "$configs/ha-sync.key")" "$tmp/out" && fail "ha-sync.key 0644: the key was printed"

cat > "$tmp/bad.conf" <<'CONF'
[port inside]
id = 0
role = sideways
address = 198.18.1.1/24
colour = blue
CONF
"$dpvpnd" -n -c "$tmp/bad.conf" >"$tmp/out" 2>&1
rc=$?
[ $rc -eq 1 ] || fail "bad.conf: exit $rc, expected 1"
grep -qx "$tmp/bad.conf:3: \[port inside\] role: expected 'inside' or 'outside', got 'sideways'" \
	"$tmp/out" || fail "bad.conf: no line-3 error in: $(cat "$tmp/out")"
grep -qx "$tmp/bad.conf:5: \[port inside\] colour: unknown key (doc/dpvpn.conf.5 lists the keys of \\[port\\])" "$tmp/out" ||
	fail "bad.conf: no line-5 error in: $(cat "$tmp/out")"

"$dpvpnd" -n >/dev/null 2>&1
rc=$?
[ $rc -eq 2 ] || fail "no -c: exit $rc, expected 2"
echo "ok"
