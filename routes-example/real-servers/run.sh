#!/bin/bash
# The scraper against real third-party servers on loopback, by hand (the test suite never needs them):
# nginx's limit_req as the hidden limit (RATE r/s, burst BURST, per client address, on HOSTS ports, i.e. hosts) and
# three tinyproxy forward proxies, each bound to an address of its own (127.0.0.11-13) for its outgoing
# connections. Needs nginx, tinyproxy and python3 on the PATH (Debian: apt-get install nginx tinyproxy), and the
# project built (mvn -B -DskipTests install from the repository root).
#
#   routes-example/real-servers/run.sh PROXY_LIMIT PAIR_LIMIT [-Dexample.setting=value ...]
#   routes-example/real-servers/run.sh 100/1s 40/1s:2 -Dexample.hostLimit=120/1s:6
#
# Environment: RATE (20), BURST (10), HOSTS (2), URLS (1800); VIA=off makes the proxies strip Via (tinyproxy's
# DisableViaHeader), as anonymising proxies do; SERVE=1 starts the servers, writes proxies.txt and urls.txt and waits
# (Ctrl-C stops them), for scrapers run by hand, e.g. the example README's fleet:
#   RATE=3 BURST=3 HOSTS=1 URLS=400 SERVE=1 routes-example/real-servers/run.sh 6/1s -
# then, once the scrapers are done: python3 routes-example/real-servers/analyse.py WORK/hits.log 3
# Prints the scraper's summary and what nginx saw: requests, 429s, the share of the hidden limit used after 10 s.
set -euo pipefail
proxy_limit=$1; pair_limit=$2; shift 2
rate=${RATE:-20}; burst=${BURST:-10}; hosts=${HOSTS:-2}; urls=${URLS:-1800}
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
chmod 755 "$work" # nginx's workers run as another user and read the page from here
trap 'kill $(cat "$work"/*.pid 2>/dev/null) 2>/dev/null || true' EXIT
mkdir -p "$work/www" && echo '<html><body>a page</body></html>' > "$work/www/page.html"
server() { # a server block per port: limit_req runs before the file is served (a `return` would skip it)
  echo "server { listen 127.0.0.1:$1; access_log $work/hits.log hits;
    location / { limit_req zone=h$1 burst=$burst nodelay; root $work/www; try_files /page.html =404; } }"
}
cat > "$work/nginx.conf" <<CONF
worker_processes 1; pid $work/nginx.pid; error_log $work/error.log warn;
events { worker_connections 1024; }
http {
  access_log off; client_body_temp_path $work/body; proxy_temp_path $work/proxy; fastcgi_temp_path $work/fcgi;
  uwsgi_temp_path $work/uwsgi; scgi_temp_path $work/scgi;
  log_format hits '\$msec \$remote_addr \$server_port \$status \$request_uri';
  limit_req_status 429;
$(for ((h = 0; h < hosts; h++)); do
  echo "limit_req_zone \$binary_remote_addr zone=h1808$((h + 1)):10m rate=${rate}r/s;"; server 1808$((h + 1))
done)
}
CONF
nginx -p "$work" -e "$work/error.log" -c "$work/nginx.conf"
: > "$work/proxies.txt"
for i in 1 2 3; do
  printf 'Port 1889%s\nListen 127.0.0.1\nBind 127.0.0.1%s\nTimeout 30\nMaxClients 100\nLogLevel Warning\nLogFile "%s"\nPidFile "%s"\n' \
    "$i" "$i" "$work/tp$i.log" "$work/tp$i.pid" > "$work/tp$i.conf"
  if [ "${VIA:-on}" = off ]; then echo "DisableViaHeader Yes" >> "$work/tp$i.conf"; fi
  tinyproxy -c "$work/tp$i.conf"
  echo "http://127.0.0.1:1889$i id=p$i limit=$proxy_limit" >> "$work/proxies.txt"
done
python3 -c "
for i in range($urls):
    print(f'http://127.0.0.1:{18081 + i % $hosts}/item/{i}?page={i}&sort=price%2Basc')" > "$work/urls.txt"
sleep 1
if [ "${SERVE:-}" = 1 ]; then
  echo "serving: $work/proxies.txt, $work/urls.txt; nginx's log $work/hits.log; Ctrl-C stops the servers"
  while true; do sleep 3600; done
fi
cd "$here/.."
mvn -B -q exec:java -Dexample.demo=false -Dexample.proxyFile="$work/proxies.txt" -Dexample.urlFile="$work/urls.txt" \
  -Dexample.outputDir="$work/out" -Dexample.pairLimit="$pair_limit" -Dexample.adaptive=true "$@" | sed -n '/== summary/,$p'
sleep 1
python3 "$here/analyse.py" "$work/hits.log" "$rate"
echo "nginx's log, the proxy file, the URLs and the results: $work"
