#!/bin/sh
# What metrics and traces cost a loaded server: `codemode bench --http --load tool` (64
# keep-alive clients, each eval one call to a local `mcp-server-time`) in three arms, run
# interleaved (A B C A B C ...) so that a drifting machine weighs on every arm alike:
#
#   off      server.admin.metrics false, no traces
#   metrics  metrics on (the default), no traces
#   traces   metrics on, telemetry.otlpEndpoint to a local OTLP/HTTP sink answering 200
#            without decoding (so the figure is codemode's cost, not a collector's)
#
# Prints each run's evals/s, then per arm the median, and the ratios metrics/off, traces/metrics
# and traces/off of the medians.
#
#   bench/scripts/telemetry_cost.sh CODEMODE MCP_SERVER_TIME [ROUNDS] [SECONDS] [CLIENTS]
#
# CODEMODE: a release build of codemode; MCP_SERVER_TIME: the `mcp-server-time` executable
# (PyPI; the test peers install it in target/test-peers/venv/bin). Defaults: 5 rounds of 10 s
# measured (after 2 s of warm-up) at 64 clients.
set -eu
CODEMODE=$1
TIME_SERVER=$2
ROUNDS=${3:-5}
SECONDS_MEASURED=${4:-10}
CLIENTS=${5:-64}

work=$(mktemp -d)
trap 'kill "$sink_pid" 2>/dev/null; rm -rf "$work"' EXIT

# The OTLP sink: reads each body whole, answers 200 with an empty export response.
cat >"$work/sink.py" <<'PY'
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

class Sink(BaseHTTPRequestHandler):
    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass

server = ThreadingHTTPServer(("127.0.0.1", 0), Sink)
print(server.server_address[1], flush=True)
server.serve_forever()
PY
python3 "$work/sink.py" >"$work/sink.port" &
sink_pid=$!
while [ ! -s "$work/sink.port" ]; do sleep 0.1; done
sink_port=$(cat "$work/sink.port")

config() { # NAME METRICS TELEMETRY
    cat >"$work/$1.json" <<JSON
{
  "mcpServers": {"time": {"command": "$TIME_SERVER", "args": ["--local-timezone", "UTC"]}},
  "limits": {"perClient": {"maxConcurrentEvals": $CLIENTS}},
  "server": {"http": {"maxSessions": 1000, "maxSessionsPerClient": $CLIENTS,
                      "maxConnectionsPerIp": $((CLIENTS * 4))},
             "admin": {"metrics": $2}},
  "telemetry": $3
}
JSON
}
config off false '{}'
config metrics true '{}'
config traces true "{\"otlpEndpoint\": \"http://127.0.0.1:$sink_port/v1/traces\"}"

: >"$work/rates"
round=1
while [ "$round" -le "$ROUNDS" ]; do
    for arm in off metrics traces; do
        rate=$("$CODEMODE" bench --http --json --load tool --config "$work/$arm.json" \
            --clients "$CLIENTS" --duration "$SECONDS_MEASURED" --warmup 2 2>/dev/null |
            python3 -c '
import json, sys
figures = json.load(sys.stdin)["figures"]
errors = [f["value"] for f in figures if f["name"].startswith("codemode: errors")]
rate = [f["value"] for f in figures if f["name"].startswith("codemode: evals/s")]
print(f"{rate[0]:.1f} {int(errors[0])}")')
        echo "round $round $arm: ${rate% *} evals/s, ${rate#* } errors"
        echo "$arm ${rate% *}" >>"$work/rates"
    done
    round=$((round + 1))
done

python3 - "$work/rates" <<'PY'
import statistics, sys
rates = {}
for line in open(sys.argv[1]):
    arm, rate = line.split()
    rates.setdefault(arm, []).append(float(rate))
median = {arm: statistics.median(r) for arm, r in rates.items()}
for arm, r in rates.items():
    print(f"{arm:8} median {median[arm]:8.1f} evals/s  (min {min(r):.1f}, max {max(r):.1f}, n={len(r)})")
print(f"metrics/off    {median['metrics'] / median['off']:.3f}")
print(f"traces/metrics {median['traces'] / median['metrics']:.3f}")
print(f"traces/off     {median['traces'] / median['off']:.3f}")
PY
