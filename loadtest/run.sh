#!/usr/bin/env bash
# run.sh: a bounded load run against each example app, on loopback only.
#
# It builds medianload and every examples/<name> that has a main.go, starts
# each app on its own port with a fixed MEDIAN_KEY, runs medianload against
# http://127.0.0.1:<port>/api/median for DURATION, stops the app and prints
# a side-by-side table. It exits 1 when any run had an error or a 5xx.
# "cpu/req" is the app's own CPU time (user + system, from /proc) divided by
# the requests it answered: unlike req/s, it does not depend on how the
# cores were shared with the load generator or anything else.
#
#   loadtest/run.sh                      # every example, 15 s each, 64 clients
#   DURATION=5s CONCURRENCY=16 loadtest/run.sh gin chi
#
# Settings (environment): DURATION (15s), CONCURRENCY (64), REQUESTS
# (1000000, an upper bound), BASE_PORT (18080), MEDIAN_KEY (a fixed test key).
set -euo pipefail
cd "$(dirname "$0")/.."

DURATION=${DURATION:-15s}
CONCURRENCY=${CONCURRENCY:-64}
REQUESTS=${REQUESTS:-1000000}
BASE_PORT=${BASE_PORT:-18080}
export MEDIAN_KEY=${MEDIAN_KEY:-loadtest-fixed-key-0123456789abcdefghijklmnop}
unset MEDIAN_REDIS_URL # the memory replay store: nothing leaves the machine

work=$(mktemp -d)
server_pid=""
cleanup() {
	if [[ -n "$server_pid" ]]; then
		kill "$server_pid" 2>/dev/null || true
		wait "$server_pid" 2>/dev/null || true
	fi
	rm -rf "$work"
}
trap cleanup EXIT

if [[ $# -gt 0 ]]; then
	names=("$@")
else
	names=()
	for main in examples/*/main.go; do
		[[ -f "$main" ]] && names+=("$(basename "$(dirname "$main")")")
	done
fi
if [[ ${#names[@]} -eq 0 ]]; then
	echo "run.sh: no examples/<name>/main.go to run" >&2
	exit 1
fi

echo "building medianload and ${names[*]}" >&2
go build -o "$work/medianload" ./loadtest/cmd/medianload
for name in "${names[@]}"; do
	go build -o "$work/$name" "./examples/$name"
done

failed=0
port=$BASE_PORT
printf 'framework\treq/s\tp50\tp99\trequests\terrors\t5xx\tcpu/req\n' >"$work/summary.tsv"
ticks=$(getconf CLK_TCK)
for name in "${names[@]}"; do
	echo >&2
	echo "== $name on 127.0.0.1:$port, $CONCURRENCY clients, $DURATION" >&2
	PORT=$port "$work/$name" >"$work/$name.log" 2>&1 &
	server_pid=$!
	if ! line=$("$work/medianload" -url "http://127.0.0.1:$port/api/median" -c "$CONCURRENCY" -d "$DURATION" \
		-n "$REQUESTS" -wait 30s -label "$name"); then
		failed=1
		echo "-- $name server log (last lines):" >&2
		tail -n 20 "$work/$name.log" >&2
	fi
	# utime and stime are fields 14 and 15 of /proc/PID/stat (after the
	# command name in parentheses), in clock ticks.
	cpu="?"
	if [[ -n "$line" && -r /proc/$server_pid/stat ]]; then
		read -r -a stat <<<"$(sed 's/^.*) //' "/proc/$server_pid/stat")"
		requests=$(cut -f5 <<<"$line" | tr -d ,)
		if [[ "$requests" =~ ^[0-9]+$ && "$requests" -gt 0 ]]; then
			cpu=$(awk -v t="$((stat[11] + stat[12]))" -v hz="$ticks" -v n="$requests" 'BEGIN { printf "%.1f µs", t / hz * 1e6 / n }')
		fi
	fi
	[[ -n "$line" ]] && printf '%s\t%s\n' "$line" "$cpu" >>"$work/summary.tsv"
	kill "$server_pid" 2>/dev/null || true
	wait "$server_pid" 2>/dev/null || true
	server_pid=""
	port=$((port + 1))
done

echo >&2
if command -v column >/dev/null; then
	column -t -s $'\t' "$work/summary.tsv"
else
	cat "$work/summary.tsv"
fi
exit $failed
