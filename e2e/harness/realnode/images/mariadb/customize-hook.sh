#!/bin/sh
# mmdebstrap customize hook ($1 = the image's root): Debian's mariadb-server
# made to behave like the official image where the operator relies on it.
set -eu
root="$1"
# Listen on every address (Debian binds to 127.0.0.1).
sed -i 's/^bind-address/#bind-address/' "$root/etc/mysql/mariadb.conf.d/50-server.cnf"
# conf.d is read LAST, as in the official image: the operator's settings must win.
# (Debian's mariadb.cnf includes conf.d before mariadb.conf.d.)
sed -i -e '\#^!includedir /etc/mysql/conf.d/#d' -e '$a !includedir /etc/mysql/conf.d/' "$root/etc/mysql/mariadb.cnf"
# An empty datadir (initialized by the entrypoint), the socket folder, the init folder.
rm -rf "$root/var/lib/mysql"
mkdir -p "$root/var/lib/mysql" "$root/run/mysqld" "$root/etc/mysql/conf.d" "$root/docker-entrypoint-initdb.d"
chown 999:999 "$root/var/lib/mysql" "$root/run/mysqld"
chmod 1777 "$root/run/mysqld"
# mmdebstrap's cleanup of /run is skipped (it would remove /run/mysqld): clean the rest here.
find "$root/run" -mindepth 1 -maxdepth 1 ! -name lock ! -name mysqld -exec rm -rf {} +
rm -rf "$root/run/mysqld/"* "$root/var/cache/apt/"* "$root/var/lib/apt/lists/"*
install -m 0755 "$(dirname "$0")/docker-entrypoint.sh" "$root/usr/local/bin/docker-entrypoint.sh"
