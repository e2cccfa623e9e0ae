# HAProxy from Debian's package, in front of the scale-out profile's instances.
# The base image is a build argument, as in docker/Dockerfile.
ARG BASE_IMAGE=debian:bookworm-slim
FROM ${BASE_IMAGE}
RUN apt-get update \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends haproxy \
    && rm -rf /var/lib/apt/lists/*
COPY docker/haproxy.cfg /etc/haproxy/haproxy.cfg
USER haproxy
EXPOSE 8080 8404
STOPSIGNAL SIGUSR1
ENTRYPOINT ["haproxy", "-db", "-f", "/etc/haproxy/haproxy.cfg"]
