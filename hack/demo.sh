#!/usr/bin/env bash
# `make demo`, after `make dev-up`: installs the CRDs, runs the manager with
# every operator in the background (its pid in .stateward/dev/manager.pid, its
# log in .stateward/dev/manager.log; `make dev-down` stops it), applies
# examples/ into the namespace stateward-demo, waits until everything is
# Ready, and shows what happened.
set -euo pipefail
cd "$(dirname "$0")/.."
DEV="${STATEWARD_DEV_DIR:-.stateward/dev}"
NS=stateward-demo
# shellcheck disable=SC1091
. "$DEV/env"

step() { printf '\n\033[1m==> %s\033[0m\n' "$*"; }

step "Installing the CRDs"
kubectl apply --server-side -f crds/ >/dev/null
kubectl get crd -o name | grep stateward.io

step "Starting the manager (all operators, namespace $NS)"
if [[ -f "$DEV/manager.pid" ]] && kill -0 "$(cat "$DEV/manager.pid")" 2>/dev/null; then
  echo "already running (pid $(cat "$DEV/manager.pid"))"
else
  node cli/src/main.ts run --kubeconfig "$KUBECONFIG" --namespaces "$NS" --health-addr 127.0.0.1:0 --metrics-addr 127.0.0.1:0 \
    >"$DEV/manager.log" 2>&1 &
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

step "Applying examples/ to namespace $NS"
kubectl create namespace "$NS" --dry-run=client -o yaml | kubectl apply -f - >/dev/null
kubectl -n "$NS" create secret generic demo-s3 --from-literal=AWS_ACCESS_KEY_ID="$S3_ACCESS_KEY_ID" \
  --from-literal=AWS_SECRET_ACCESS_KEY="$S3_SECRET_ACCESS_KEY" --dry-run=client -o yaml | kubectl apply -f - >/dev/null
# The examples name the usual local addresses; point them at this environment's.
for f in examples/database-user/*.yaml examples/mysql-backup/*.yaml; do
  sed -e "s|http://127.0.0.1:9000|$S3_ENDPOINT|" -e "s|^  port: 3306$|  port: $MYSQL_PORT|" "$f"
  echo "---"
done | kubectl -n "$NS" apply -f -

step "Waiting until every example is Ready"
kubectl -n "$NS" wait --for=condition=Ready --timeout=180s mysqlinstance/demo-db databaseuser/shop
kubectl -n "$NS" wait --for=jsonpath='{.status.phase}'=Completed --timeout=300s mysqlbackup/shop-manual mysqlrestore/shop-manual-restore

step "kubectl get stateward -n $NS"
kubectl -n "$NS" get stateward

step "Where the backup landed"
echo "status.location: $(kubectl -n "$NS" get mysqlbackup shop-manual -o jsonpath='{.status.location}')"
node e2e/harness/list-objects.ts "$(kubectl -n "$NS" get mysqlbackup shop-manual -o jsonpath='{.status.location}')"

step "Try it"
cat <<EOT
  . $DEV/env
  kubectl -n $NS describe databaseuser shop       # conditions and events
  mariadb -h $MYSQL_HOST -P $MYSQL_PORT -u shop -pchange-me-4f8a2c shop -e 'SELECT * FROM orders'
  kubectl -n $NS get mysqlbackup -o wide
  make dev-down                                    # stops the manager and the environment
EOT
