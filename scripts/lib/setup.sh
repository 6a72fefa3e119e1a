# What scripts/test and scripts/bench/compare-python share: the local services and the Python
# Agno 3.1 venv. Sourced; the caller defines `say` (its own prefix on messages).

port_open() { (exec 3<>/dev/tcp/127.0.0.1/"$1") 2>/dev/null; }

# Waits (bounded) until a local port accepts connections.
wait_port() {
  for _ in $(seq 1 60); do
    if port_open "$1"; then return 0; fi
    sleep 0.5
  done
  say "$2 on port $1 is still closed after 30 s" >&2
  return 1
}

# Starts each service that is down (Debian packages postgresql, redis-server, mariadb-server;
# run as a user allowed to start them) and waits until all accept connections.
start_services() {
  if ! port_open 5432; then
    say "starting PostgreSQL"
    pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | head -n1)" main start || say "PostgreSQL did not start"
  fi
  if ! port_open 6379; then
    say "starting Redis"
    redis-server --daemonize yes --bind 127.0.0.1 -::1 --port 6379 --save "" --appendonly no \
      --dir /var/lib/redis --logfile /var/log/redis/agno-tests.log || say "Redis did not start"
  fi
  if ! port_open 3306; then
    say "starting MariaDB"
    start-stop-daemon --start --oknodo --background --exec /usr/sbin/mariadbd || say "MariaDB did not start"
  fi
  wait_port 5432 PostgreSQL
  wait_port 6379 Redis
  wait_port 3306 MariaDB
}

# Python Agno 3.1 for the interop tests (read what we write, write what we read, agno.client,
# and a Python AgentOS for shape parity).
ensure_python() {
  local venv="$HOME/.cache/agno-py-3.1"
  if ! "$venv/bin/python" -c 'import agno, sqlalchemy.ext.asyncio, psycopg, pymysql, redis, fastapi, uvicorn, multipart, openai, lancedb, tantivy, pgvector, croniter, pytz, mcp, toolbox_core, fastmcp, anthropic, google.genai, ollama, boto3, opentelemetry.sdk, openinference.instrumentation.agno, a2a.client, ag_ui.core' 2>/dev/null; then
    say "creating the Python Agno 3.1 venv in $venv"
    python3 -m venv "$venv"
    "$venv/bin/pip" install -q 'agno==3.1.10' 'sqlalchemy[asyncio]' 'psycopg[binary]' pymysql redis fastapi uvicorn python-multipart openai \
      'lancedb==0.40.0' 'pylance==14.0.2' 'tantivy==0.27.0' 'pgvector==0.5.1' 'croniter==7.0.0' 'pytz==2026.6' 'mcp==2.3.0' 'toolbox-core==1.4.0' 'fastmcp==4.2.3' \
      'anthropic==2.15.0' 'google-genai==3.6.1' 'ollama==0.6.3' 'boto3==1.44.8' \
      'opentelemetry-sdk==1.45.2' 'openinference-instrumentation-agno==1.0.15' 'a2a-sdk==0.3.26' 'ag-ui-protocol==1.0.0'
  fi
  export AGNO_PYTHON="$venv/bin/python"
}

# Arize Phoenix, the OpenTelemetry collector the tracing tests export spans to (a venv of its own:
# its dependencies are not Agno's).
ensure_phoenix() {
  local venv="$HOME/.cache/agno-phoenix"
  if ! "$venv/bin/python" -c 'import phoenix' 2>/dev/null; then
    say "creating the Arize Phoenix venv in $venv"
    python3 -m venv "$venv"
    "$venv/bin/pip" install -q 'arize-phoenix==20.26.1'
  fi
  export AGNO_PHOENIX="$venv/bin/phoenix"
}

# moto, an S3-protocol server on loopback, for the remote knowledge source tests (a venv of its
# own), with boto3 to put the objects the tests read.
ensure_moto() {
  local venv="$HOME/.cache/agno-moto"
  if ! "$venv/bin/python" -c 'import moto.server, boto3' 2>/dev/null; then
    say "creating the moto venv in $venv"
    python3 -m venv "$venv"
    "$venv/bin/pip" install -q 'moto[server]==5.2.6' 'boto3==1.44.8'
  fi
  export AGNO_MOTO_PYTHON="$venv/bin/python"
}

# The official A2A Python SDK at 1.x (a venv of its own: Agno 3.1.10's venv pins 0.3.x), whose
# client the A2A v1.0 tests drive the server with.
A2A_SDK_V1=1.3.0
ensure_a2a_v1() {
  local venv="$HOME/.cache/agno-a2a-sdk-1"
  if ! "$venv/bin/python" -c "import a2a.client, httpx, importlib.metadata as m; assert m.version('a2a-sdk') == '$A2A_SDK_V1'" 2>/dev/null; then
    say "creating the a2a-sdk $A2A_SDK_V1 venv in $venv"
    python3 -m venv "$venv"
    "$venv/bin/pip" install -q "a2a-sdk==$A2A_SDK_V1" httpx
  fi
  export AGNO_A2A_V1_PYTHON="$venv/bin/python"
}

# The npm packages the tests run, pinned: the tests assert their exact strings.
PLAYWRIGHT_CORE=1.65.1
MCP_SERVERS=2026.8.31
AGUI_CLIENT=1.0.0
A2A_JS=0.3.14

# True when the npm package in directory $1 is at version $2.
installed() {
  [ -f "$1/package.json" ] && grep -q "\"version\": \"$2\"" "$1/package.json"
}

# Installs the npm packages $3... at version $2 in directory $1 (a cache of their own) unless they
# are there at that version already.
npm_packages() {
  local dir="$1" version="$2" missing=false
  shift 2
  for package in "$@"; do
    installed "$dir/node_modules/$package" "$version" || missing=true
  done
  if $missing; then
    say "installing $* $version in $dir"
    mkdir -p "$dir"
    (cd "$dir" && npm init -y >/dev/null && npm install --silent "${@/%/@$version}") || say "$* did not install"
  fi
}

# A real browser for the CORS test: Debian's Chromium driven by playwright-core (no download of
# a browser).
ensure_browser() {
  if [ ! -x /usr/bin/chromium ]; then
    say "installing chromium"
    apt-get install -y -q chromium >/dev/null || say "chromium did not install"
  fi
  npm_packages "$HOME/.cache/agno-browser" "$PLAYWRIGHT_CORE" playwright-core
  export AGNO_PLAYWRIGHT_CORE="$HOME/.cache/agno-browser/node_modules/playwright-core"
}

# The MCP reference servers from the npm registry (the MCP tests run tools of servers we did not
# write).
ensure_mcp_servers() {
  npm_packages "$HOME/.cache/agno-mcp-servers" "$MCP_SERVERS" \
    @modelcontextprotocol/server-everything @modelcontextprotocol/server-filesystem
  export AGNO_MCP_SERVERS="$HOME/.cache/agno-mcp-servers"
}

# AG-UI's own TypeScript client (`@ag-ui/client`'s HttpAgent), which the AG-UI tests drive the
# server with.
ensure_agui_client() {
  npm_packages "$HOME/.cache/agno-agui-client" "$AGUI_CLIENT" @ag-ui/client
  export AGNO_AGUI_CLIENT="$HOME/.cache/agno-agui-client"
}

# The official JavaScript A2A SDK (`@a2a-js/sdk`), whose client the A2A tests drive the server with.
ensure_a2a_js() {
  npm_packages "$HOME/.cache/agno-a2a-js" "$A2A_JS" @a2a-js/sdk
  export AGNO_A2A_JS="$HOME/.cache/agno-a2a-js"
}
