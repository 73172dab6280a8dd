#!/bin/bash
# Entrypoint of the real node's MariaDB image (Debian's mariadb-server), keeping
# the part of the official `mariadb` image's contract that the MySQLCluster
# operator relies on:
#   - arguments starting with '-' are options for mariadbd;
#   - started as root, it gives the datadir to mysql (uid 999) and drops to it;
#   - on an empty datadir it initializes the server without binary logging,
#     sets root's password from MARIADB_ROOT_PASSWORD (or MYSQL_ROOT_PASSWORD,
#     or none with MARIADB_ALLOW_EMPTY_ROOT_PASSWORD), adds root@MARIADB_ROOT_HOST
#     (default '%'), the optional MARIADB_DATABASE / MARIADB_USER /
#     MARIADB_PASSWORD, and runs /docker-entrypoint-initdb.d/*.sh|*.sql;
#   - then it execs the server.
set -eo pipefail

note() { printf '%s [Note] [Entrypoint]: %s\n' "$(date --rfc-3339=seconds)" "$*"; }
fail() { printf '%s [ERROR] [Entrypoint]: %s\n' "$(date --rfc-3339=seconds)" "$*" >&2; exit 1; }
# A value inside a single-quoted SQL string.
sql_string() { local v="${1//\\/\\\\}"; printf '%s' "${v//\'/\\\'}"; }

if [ "${1:0:1}" = '-' ]; then set -- mariadbd "$@"; fi
case "$1" in mariadbd | mysqld) ;; *) exec "$@" ;; esac

if [ "$(id -u)" = 0 ]; then
  mkdir -p /var/lib/mysql /run/mysqld
  find /var/lib/mysql /run/mysqld \! -user mysql -exec chown mysql:mysql '{}' +
  exec setpriv --reuid=mysql --regid=mysql --init-groups "$0" "$@"
fi

option() { "$@" --verbose --help 2>/dev/null | awk -v k="$OPTION" '$1 == k { print $2; exit }'; }
DATADIR="$(OPTION=datadir option "$@")"; DATADIR="${DATADIR:-/var/lib/mysql/}"
SOCKET="$(OPTION=socket option "$@")"; SOCKET="${SOCKET:-/run/mysqld/mysqld.sock}"

if [ ! -d "${DATADIR%/}/mysql" ]; then
  password="${MARIADB_ROOT_PASSWORD:-${MYSQL_ROOT_PASSWORD:-}}"
  if [ -z "$password" ] && [ -z "${MARIADB_ALLOW_EMPTY_ROOT_PASSWORD:-${MYSQL_ALLOW_EMPTY_PASSWORD:-}}" ]; then
    fail "Database is uninitialized and password option is not specified. You need to specify one of MARIADB_ROOT_PASSWORD or MARIADB_ALLOW_EMPTY_ROOT_PASSWORD"
  fi
  note "Initializing database files in $DATADIR"
  mariadb-install-db --datadir="$DATADIR" --rpm --auth-root-authentication-method=normal --skip-test-db \
    --default-time-zone=SYSTEM --skip-log-bin --expire-logs-days=0 "${@:2}"
  note "Starting temporary server"
  "$@" --skip-networking --socket="$SOCKET" --skip-log-bin --skip-slave-start --expire-logs-days=0 &
  temporary=$!
  for _ in $(seq 1 60); do
    mariadb-admin --protocol=socket --socket="$SOCKET" -uroot ping >/dev/null 2>&1 && break
    kill -0 "$temporary" 2>/dev/null || fail "the temporary server exited; see the lines above"
    sleep 1
  done
  pw="$(sql_string "$password")"
  root_host="${MARIADB_ROOT_HOST:-%}"
  sql="SET @@SESSION.SQL_LOG_BIN=0;
SET @@SESSION.SQL_MODE=REPLACE(@@SESSION.SQL_MODE, 'NO_BACKSLASH_ESCAPES', '');
DROP USER IF EXISTS root@'127.0.0.1', root@'::1';
EXECUTE IMMEDIATE CONCAT('DROP USER IF EXISTS root@\'', @@hostname, '\'');
ALTER USER 'root'@'localhost' IDENTIFIED BY '$pw';"
  if [ "$root_host" != localhost ]; then
    h="$(sql_string "$root_host")"
    sql+="
CREATE USER 'root'@'$h' IDENTIFIED BY '$pw';
GRANT ALL ON *.* TO 'root'@'$h' WITH GRANT OPTION;
GRANT PROXY ON ''@'%' TO 'root'@'$h' WITH GRANT OPTION;"
  fi
  database="${MARIADB_DATABASE:-${MYSQL_DATABASE:-}}"
  [ -n "$database" ] && sql+="
CREATE DATABASE IF NOT EXISTS \`${database//\`/\`\`}\`;"
  user="${MARIADB_USER:-${MYSQL_USER:-}}"; user_pw="${MARIADB_PASSWORD:-${MYSQL_PASSWORD:-}}"
  if [ -n "$user" ] && [ -n "$user_pw" ]; then
    sql+="
CREATE USER '$(sql_string "$user")'@'%' IDENTIFIED BY '$(sql_string "$user_pw")';"
    [ -n "$database" ] && sql+="
GRANT ALL ON \`${database//\`/\`\`}\`.* TO '$(sql_string "$user")'@'%';"
  fi
  printf '%s\n' "$sql" | mariadb --protocol=socket --socket="$SOCKET" -uroot --binary-mode
  for f in /docker-entrypoint-initdb.d/*; do
    case "$f" in
      *.sh) note "running $f"; . "$f" ;;
      *.sql) note "running $f"; mariadb --protocol=socket --socket="$SOCKET" -uroot --password="$password" <"$f" ;;
    esac
  done
  note "Stopping temporary server"
  kill "$temporary"; wait "$temporary" || true
  note "MariaDB init process done. Ready for start up."
fi
exec "$@"
