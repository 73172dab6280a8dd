#!/usr/bin/env bash
# `make demo`, after `make dev-up`: installs the CRDs, runs the manager with
# every operator in the background (e2e/demo/manager.ts: its pid in
# .stateward/dev/manager.pid, its log in .stateward/dev/manager.log;
# `make dev-down` stops it all), applies examples/ into the namespace
# stateward-demo, waits until everything is Ready, and shows what happened.
# Two modes, as `make dev-up` started the environment:
#   REAL NODE  the MySQLCluster's pods are real containers on the real node
#              (the example's image is replaced by the node's local MariaDB image:
#              nothing is pulled from a registry);
#   STAND-INS  KWOK runs no containers, so the manager gives each MySQLCluster
#              pod a local mariadbd.
set -euo pipefail
cd "$(dirname "$0")/.."
DEV="${STATEWARD_DEV_DIR:-.stateward/dev}"
NS=stateward-demo
# shellcheck disable=SC1091
. "$DEV/env"

step() { printf '\n\033[1m==> %s\033[0m\n' "$*"; }

# What went wrong, when a wait gives up: the resources' conditions and events, the pods' servers, the manager's log.
diagnose() {
  step "Something did not become Ready; what the cluster says"
  kubectl -n "$NS" get stateward,statefulsets,pods,pvc 2>&1 || true
  kubectl -n "$NS" describe mysqlcluster,databaseuser,mysqlbackup,mysqlrestore 2>&1 | tail -n 80 || true
  echo "--- $DEV/pods/servers.json"; cat "$DEV/pods/servers.json" 2>/dev/null || echo "(none yet)"
  echo "--- last lines of $DEV/manager.log"; tail -n 30 "$DEV/manager.log" || true
}
trap 'diagnose' ERR

# REAL NODE or STAND-INS: does the environment run the real node?
REAL_NODE=$(node -e 'const s = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8")); console.log(s.realNode ? s.realNode.images.mariadb : "")' "$DEV/state.json")
if [[ -n "$REAL_NODE" ]]; then
  step "Mode: REAL NODE — the MySQLCluster runs as real containers (image $REAL_NODE, no registry)"
else
  step "Mode: STAND-INS — KWOK runs no containers; each MySQLCluster pod gets a local mariadbd (no real node on this machine)"
fi

# Where a cluster pod's server answers: its IP on the real node, or its local stand-in (see e2e/demo/manager.ts).
pod_addr() {
  if [[ -n "$REAL_NODE" ]]; then
    echo "-h $(kubectl -n "$NS" get pod "$1" -o jsonpath='{.status.podIP}') -P 3306"
  else
    echo "-h 127.0.0.1 -P $(node -e 'const s = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8")).servers[process.argv[2]]; if (!s) process.exit(1); console.log(s.port)' "$DEV/pods/servers.json" "$1")"
  fi
}

step "Installing the CRDs"
kubectl apply --server-side -f crds/ >/dev/null
kubectl get crd -o name | grep stateward.io

step "Starting the manager (all operators, namespace $NS)"
if [[ -f "$DEV/manager.pid" ]] && kill -0 "$(cat "$DEV/manager.pid")" 2>/dev/null; then
  echo "already running (pid $(cat "$DEV/manager.pid"))"
else
  node e2e/demo/manager.ts --kubeconfig "$KUBECONFIG" --namespace "$NS" --dir "$DEV/pods" ${REAL_NODE:+--real-node} >"$DEV/manager.log" 2>&1 &
  echo $! >"$DEV/manager.pid"
  echo "pid $(cat "$DEV/manager.pid"), log $DEV/manager.log"
fi

step "Preparing a database to back up (shop on $MYSQL_HOST:$MYSQL_PORT)"
mariadb -h "$MYSQL_HOST" -P "$MYSQL_PORT" -u root ${MYSQL_ROOT_PASSWORD:+-p"$MYSQL_ROOT_PASSWORD"} <<'SQL'
CREATE DATABASE IF NOT EXISTS shop;
CREATE TABLE IF NOT EXISTS shop.orders (id INT PRIMARY KEY, customer VARCHAR(64), total DECIMAL(10,2), placed_at DATETIME);
INSERT IGNORE INTO shop.orders VALUES (1, 'Ada', 42.00, '2026-11-01 10:00:00'), (2, 'Grace', 17.50, '2026-11-02 11:30:00'), (3, 'Ken', 99.90, '2026-11-03 09:15:00');
SQL
echo "shop.orders: $(mariadb -h "$MYSQL_HOST" -P "$MYSQL_PORT" -u root ${MYSQL_ROOT_PASSWORD:+-p"$MYSQL_ROOT_PASSWORD"} -N -e 'SELECT COUNT(*) FROM shop.orders') rows"
# The operator never takes over an account that already exists unless the DatabaseUser says
# so (spec.adoptExisting). An earlier demo against this same server leaves `shop`@`%` behind
# (its control plane is gone, the server is not): then this demo opts in, and says so.
SHOP_EXISTS=$(mariadb -h "$MYSQL_HOST" -P "$MYSQL_PORT" -u root ${MYSQL_ROOT_PASSWORD:+-p"$MYSQL_ROOT_PASSWORD"} -N -e "SELECT COUNT(*) FROM mysql.user WHERE User = 'shop' AND Host = '%'")

step "Applying examples/ to namespace $NS"
kubectl create namespace "$NS" --dry-run=client -o yaml | kubectl apply -f - >/dev/null
kubectl -n "$NS" create secret generic demo-s3 --from-literal=AWS_ACCESS_KEY_ID="$S3_ACCESS_KEY_ID" \
  --from-literal=AWS_SECRET_ACCESS_KEY="$S3_SECRET_ACCESS_KEY" --dry-run=client -o yaml | kubectl apply -f - >/dev/null
# The examples name the usual local addresses; point them at this environment's.
for f in examples/database-user/*.yaml examples/mysql-backup/*.yaml; do
  sed -e "s|http://127.0.0.1:9000|$S3_ENDPOINT|" -e "s|^  port: 3306$|  port: $MYSQL_PORT|" "$f"
  echo "---"
done | kubectl -n "$NS" apply -f -

if [[ "$SHOP_EXISTS" != 0 ]]; then
  echo "The account shop@% already exists on $MYSQL_HOST:$MYSQL_PORT (an earlier demo?): adopting it with spec.adoptExisting"
  kubectl -n "$NS" patch databaseuser shop --type merge -p '{"spec":{"adoptExisting":true}}' >/dev/null
fi

step "Applying examples/mysql-cluster (a primary and two replicas) to namespace $NS"
if [[ -n "$REAL_NODE" ]]; then
  sed -e "s|^  image: .*|  image: $REAL_NODE|" examples/mysql-cluster/01-cluster.yaml | kubectl -n "$NS" apply -f -
else
  kubectl -n "$NS" apply -f examples/mysql-cluster/01-cluster.yaml
fi
kubectl -n "$NS" apply -f examples/mysql-cluster/02-app-user.yaml

step "Waiting until the database-user and mysql-backup examples are Ready"
kubectl -n "$NS" wait --for=condition=Ready --timeout=180s mysqlinstance/demo-db databaseuser/shop
kubectl -n "$NS" wait --for=jsonpath='{.status.phase}'=Completed --timeout=300s mysqlbackup/shop-manual mysqlrestore/shop-manual-restore

step "Waiting until the MySQLCluster orders-db is Ready (three servers, seeded and replicating)"
kubectl -n "$NS" wait --for=condition=Ready --timeout=600s mysqlcluster/orders-db
PRIMARY=$(kubectl -n "$NS" get mysqlcluster orders-db -o jsonpath='{.status.currentPrimary}')
echo "primary: $PRIMARY"

step "Writing orders on the primary ($PRIMARY), reading them on a replica"
# The generated root password goes through the environment, never onto a command line or the screen.
MYSQL_PWD=$(kubectl -n "$NS" get secret orders-db-root -o jsonpath='{.data.password}' | base64 -d)
export MYSQL_PWD
# shellcheck disable=SC2046
mariadb $(pod_addr "$PRIMARY") -u root <<'SQL'
CREATE DATABASE IF NOT EXISTS orders;
CREATE TABLE IF NOT EXISTS orders.orders (id INT PRIMARY KEY, item VARCHAR(64), quantity INT);
INSERT IGNORE INTO orders.orders VALUES (1, 'keyboard', 2), (2, 'monitor', 1), (3, 'cable', 5);
SQL
REPLICA=orders-db-1
[[ "$PRIMARY" == "$REPLICA" ]] && REPLICA=orders-db-0
for _ in $(seq 1 30); do
  # shellcheck disable=SC2046
  ROWS=$(mariadb $(pod_addr "$REPLICA") -u root -N -e 'SELECT COUNT(*) FROM orders.orders' 2>/dev/null || echo 0)
  [[ "$ROWS" == 3 ]] && break
  sleep 1
done
echo "orders.orders on $REPLICA: $ROWS rows"
unset MYSQL_PWD

step "Applying examples/mysql-cluster/03-backup.yaml (a backup of the cluster's orders database)"
sed -e "s|http://127.0.0.1:9000|$S3_ENDPOINT|" examples/mysql-cluster/03-backup.yaml | kubectl -n "$NS" apply -f -
kubectl -n "$NS" wait --for=condition=Ready --timeout=180s mysqlinstance/orders-db databaseuser/orders-app
kubectl -n "$NS" wait --for=jsonpath='{.status.phase}'=Completed --timeout=300s mysqlbackup/orders-db-manual

step "kubectl get stateward -n $NS"
kubectl -n "$NS" get stateward

step "Where the backups landed"
for b in shop-manual orders-db-manual; do
  location=$(kubectl -n "$NS" get mysqlbackup "$b" -o jsonpath='{.status.location}')
  echo "$b: $location"
  node e2e/harness/list-objects.ts "$location"
done

if [[ -n "$REAL_NODE" ]]; then
  step "The cluster's pods on the real node"
  kubectl -n "$NS" get pods -o wide -l app.kubernetes.io/instance=orders-db
fi

step "Try it"
if [[ -n "$REAL_NODE" ]]; then
  cat <<EOT
  . $DEV/env
  kubectl -n $NS get pods -o wide                  # real containers on realnode-0
  kubectl -n $NS logs orders-db-0 -c mysql
  kubectl -n $NS exec -it orders-db-1 -c mysql -- bash
  kubectl -n $NS get mysqlcluster orders-db -o yaml      # status.members: each server's role and replication
  kubectl -n $NS scale mysqlcluster orders-db --replicas=4
  kubectl -n $NS patch mysqlcluster orders-db --type=merge -p '{"spec":{"image":"localhost/mariadb:10.11-rev2"}}'   # a rolling image change
  # Your own MySQLCluster, in any namespace, gets real pods too (image localhost/mariadb:10.11; nothing is pulled).
  make dev-down                                    # stops the manager, the node (host put back) and the environment
EOT
  exit 0
fi
cat <<EOT
  . $DEV/env
  kubectl -n $NS describe databaseuser shop       # conditions and events
  mariadb -h $MYSQL_HOST -P $MYSQL_PORT -u shop -pchange-me-4f8a2c shop -e 'SELECT * FROM orders'
  kubectl -n $NS get mysqlbackup -o wide
  kubectl -n $NS get mysqlcluster orders-db -o yaml      # status.members: each server's role and replication
  kubectl -n $NS scale mysqlcluster orders-db --replicas=4
  kubectl -n $NS patch mysqlcluster orders-db --type=merge -p '{"spec":{"config":{"max_connections":"800"}}}'   # applied at runtime, no restart
  kubectl -n $NS patch mysqlcluster orders-db --type=merge -p '{"spec":{"image":"mariadb:11.8"}}'   # a rolling upgrade
  cat $DEV/pods/servers.json                       # each pod's local server (KWOK runs no containers)
  make dev-down                                    # stops the manager, the pods' servers and the environment
EOT
