#!/bin/sh
# mmdebstrap essential hook ($1 = the image's root): the mysql user and group
# get the official image's ids (999) before mariadb-server's package creates them.
set -eu
echo "mysql:x:999:999:MariaDB Server:/nonexistent:/bin/false" >>"$1/etc/passwd"
echo "mysql:x:999:" >>"$1/etc/group"
