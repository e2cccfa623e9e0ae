#!/bin/sh
# Makes the cluster on first start (user, password and database from
# POSTGRES_USER, POSTGRES_PASSWORD and POSTGRES_DB, as the official image
# does), then runs the server in the foreground on every interface.
set -eu
: "${POSTGRES_USER:=postgres}"
: "${POSTGRES_DB:=$POSTGRES_USER}"
if [ -z "${POSTGRES_PASSWORD:-}" ]; then
    echo "postgres-entrypoint: POSTGRES_PASSWORD is required" >&2
    exit 1
fi
if [ ! -s "$PGDATA/PG_VERSION" ]; then
    pwfile=$(mktemp)
    printf '%s\n' "$POSTGRES_PASSWORD" > "$pwfile"
    initdb --username="$POSTGRES_USER" --pwfile="$pwfile" --auth-local=trust --auth-host=scram-sha-256 \
        --encoding=UTF8 --locale=C.UTF-8 >/dev/null
    rm -f "$pwfile"
    echo "host all all all scram-sha-256" >> "$PGDATA/pg_hba.conf"
    if [ "$POSTGRES_DB" != "postgres" ]; then
        postgres --single -D "$PGDATA" -c listen_addresses='' postgres >/dev/null <<SQL
CREATE DATABASE "$POSTGRES_DB" OWNER "$POSTGRES_USER";
SQL
    fi
fi
exec postgres -D "$PGDATA" -c listen_addresses='*' "$@"
