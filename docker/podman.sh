# Shared by docker/test-image.sh and docker/test-scale-out.sh (sourced):
# podman set up on a host without a registry, the base images made locally
# (debootstrap), and the project image built with the host's Swift toolchain
# and package mirror mounted read-only. Expects WORK, BASE, BUILDER and the
# scripts' `say` and `fail`.

# Installs podman and the tools the checks use (plus any named), and
# configures podman for these hosts.
podman_tools() {
    local missing=()
    for package in podman buildah runc debootstrap curl python3 "$@"; do
        dpkg -s "$package" >/dev/null 2>&1 || missing+=("$package")
    done
    if [ ${#missing[@]} -gt 0 ]; then
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
    fi
    # runc and fixed ulimits: crun cannot set rlimits on these hosts.
    cat > "$WORK/containers.conf" <<'CONF'
[containers]
default_ulimits = ["nofile=20000:20000", "nproc=4096:4096"]
[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
events_logger = "file"
CONF
    export CONTAINERS_CONF="$WORK/containers.conf"
}

# The runtime base ($BASE, Debian bookworm by debootstrap) and the builder
# ($BUILDER: the base with what the Swift toolchain needs), unless present.
base_images() {
    if ! podman image exists "$BASE"; then
        local mirror
        mirror=$(grep -hoE 'https?://[^ ]+/debian/?$' /etc/apt/sources.list.d/*.sources /etc/apt/sources.list 2>/dev/null | head -n1 || true)
        mirror=${mirror:-http://deb.debian.org/debian}
        debootstrap --variant=minbase bookworm "$WORK/rootfs" "$mirror" >/dev/null
        rm -rf "$WORK"/rootfs/var/cache/apt/archives/*.deb "$WORK"/rootfs/var/lib/apt/lists/*
        tar -C "$WORK/rootfs" -c . | podman import --change 'CMD ["/bin/bash"]' - "$BASE" >/dev/null
        rm -rf "$WORK/rootfs"
    fi
    if ! podman image exists "$BUILDER"; then
        cat > "$WORK/Builder.Dockerfile" <<DOCKERFILE
FROM $BASE
RUN apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
    binutils libc6-dev libgcc-12-dev libstdc++-12-dev libcurl4-openssl-dev libxml2-dev libncurses-dev \
    libz3-dev libedit2 libpython3.11 zlib1g-dev pkg-config tzdata git ca-certificates \
    libsqlite3-dev libmicrohttpd-dev && rm -rf /var/lib/apt/lists/*
DOCKERFILE
        podman build --network host -t "$BUILDER" -f "$WORK/Builder.Dockerfile" "$WORK" >/dev/null
    fi
}

# docker/Dockerfile built as image $1, on the local base images.
project_image() {
    local toolchain mirror_dir
    toolchain=$(dirname "$(dirname "$(dirname "$(readlink -f "$(command -v swift)")")")")
    mirror_dir=$(git config --system --get-regexp 'url\..*\.insteadof' | head -n1 | sed -E 's/^url\.(.*)\.insteadof .*/\1/' || true)
    local mounts=(-v "$toolchain:/opt/swift:ro")
    [ -n "$mirror_dir" ] && mounts+=(-v "$mirror_dir:$mirror_dir:ro" -v /etc/gitconfig:/etc/gitconfig:ro)
    podman build --format docker --network host "${mounts[@]}" \
        --build-arg BUILDER_IMAGE="$BUILDER" --build-arg RUNTIME_IMAGE="$BASE" \
        -f docker/Dockerfile -t "$1" . > "$WORK/build.log" 2>&1 || { tail -n 50 "$WORK/build.log"; fail "image build"; }
}
