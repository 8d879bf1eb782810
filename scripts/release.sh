#!/usr/bin/env bash
# Build ctalk's release archives: static binaries for Linux, macOS and Windows
# (amd64 and arm64), one archive each, and SHA256SUMS, into dist/.
#
#   scripts/release.sh                     # all six targets
#   scripts/release.sh linux/amd64         # only the targets named
#
# Environment:
#   VERSION            the version `ctalk version` prints (default: git describe)
#   SOURCE_DATE_EPOCH  the time stamped on every archived file (default: the
#                      commit time of HEAD), so the archives do not depend on
#                      when they were built
#   DIST               output directory (default: dist/ in the checkout); emptied first
#
# The same commit built twice with the same Go toolchain gives byte-identical
# archives: CGO is off, paths are trimmed, the binary carries the module's VCS
# stamp (revision, commit time), and the archives fix file order, owners,
# modes and times. Needs go, git, GNU tar, gzip, sha256sum; zip for Windows.
set -euo pipefail

cd "$(dirname "$0")/.."
export PATH="$PATH:/usr/local/go/bin"

TARGETS=("$@")
if [ ${#TARGETS[@]} -eq 0 ]; then
  TARGETS=(linux/amd64 linux/arm64 darwin/amd64 darwin/arm64 windows/amd64 windows/arm64)
fi
VERSION=${VERSION:-$(git describe --tags --always --dirty)}
SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct)}
DIST=${DIST:-dist}

die() {
  echo "release: $*" >&2
  exit 1
}

case $VERSION in
  *[!A-Za-z0-9._+-]*|'') die "VERSION '$VERSION' may hold only letters, digits and . _ + -" ;;
esac

# Only what is set here shapes the binary: GOFLAGS replaces any ambient value
# (an empty one would not: `go env -w GOFLAGS=…` would still apply), baseline
# instruction sets, no cgo. VCS stamping needs a plain clone: go does not see
# the repository from a `git worktree` checkout and then stamps nothing.
export CGO_ENABLED=0 GOFLAGS=-buildvcs=true GOAMD64=v1 GOARM64=v8.0 TZ=UTC
LDFLAGS="-s -w -X main.version=$VERSION"

rm -rf "$DIST"
mkdir -p "$DIST"
DIST=$(cd "$DIST" && pwd)
STAGE=$(mktemp -d)
trap 'rm -rf "$STAGE"' EXIT

echo "ctalk $VERSION, files dated $(date -u -d "@$SOURCE_DATE_EPOCH" +%Y-%m-%dT%H:%M:%SZ), $(go version)"
for target in "${TARGETS[@]}"; do
  goos=${target%/*}
  goarch=${target#*/}
  case $target in
    linux/amd64|linux/arm64|darwin/amd64|darwin/arm64|windows/amd64|windows/arm64) ;;
    *) die "unknown target '$target' (want linux|darwin|windows / amd64|arm64)" ;;
  esac
  name="ctalk_${VERSION}_${goos}_${goarch}"
  bin=ctalk
  [ "$goos" = windows ] && bin=ctalk.exe
  dir="$STAGE/$name"
  mkdir -p "$dir"

  GOOS=$goos GOARCH=$goarch go build -trimpath -buildvcs=true -ldflags "$LDFLAGS" -o "$dir/$bin" ./cmd/ctalk
  cp README.md "$dir/README.md"
  chmod 0755 "$dir/$bin"
  chmod 0644 "$dir/README.md"
  touch -d "@$SOURCE_DATE_EPOCH" "$dir/$bin" "$dir/README.md"

  if [ "$goos" = windows ]; then
    command -v zip >/dev/null || die "zip is needed for the Windows archives (apt-get install zip)"
    # -X: no extra fields (uid/gid, extended times); DOS times are local, so TZ=UTC above.
    (cd "$dir" && zip -q -X -D "$DIST/$name.zip" "$bin" README.md)
  else
    tar --sort=name --mtime="@$SOURCE_DATE_EPOCH" --owner=0 --group=0 --numeric-owner \
      --format=gnu -C "$dir" -cf - "$bin" README.md | gzip -n -9 >"$DIST/$name.tar.gz"
  fi
  echo "built $name"
done

(cd "$DIST" && sha256sum ctalk_* >SHA256SUMS)
echo "== $DIST/SHA256SUMS"
cat "$DIST/SHA256SUMS"
