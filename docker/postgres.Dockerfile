# PostgreSQL 15 from Debian's package, for machines that cannot pull the
# official postgres image (docker/test-scale-out.sh builds it). It takes the
# same settings as the official image: POSTGRES_USER, POSTGRES_PASSWORD and
# POSTGRES_DB, port 5432, data in /var/lib/postgresql/data.
ARG BASE_IMAGE=debian:bookworm-slim
FROM ${BASE_IMAGE}
# The package's own cluster is not made: the entrypoint makes one in PGDATA.
RUN apt-get update \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends postgresql-common \
    && sed -ri 's/#(create_main_cluster) .*$/\1 = false/' /etc/postgresql-common/createcluster.conf \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends postgresql-15 \
    && rm -rf /var/lib/apt/lists/* \
    && mkdir -p /var/lib/postgresql/data /var/run/postgresql \
    && chown -R postgres:postgres /var/lib/postgresql /var/run/postgresql
COPY docker/postgres-entrypoint.sh /usr/local/bin/postgres-entrypoint
ENV PATH=/usr/lib/postgresql/15/bin:${PATH} \
    PGDATA=/var/lib/postgresql/data
VOLUME ["/var/lib/postgresql/data"]
USER postgres
EXPOSE 5432
STOPSIGNAL SIGINT
ENTRYPOINT ["postgres-entrypoint"]
