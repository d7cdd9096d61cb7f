#!/usr/bin/env bash
# The Debian package: built by CPack from this build, checked with dpkg-deb, desktop-file-validate
# and lintian (where installed), unpacked into a temporary root, and its tools run from there alone:
# --version, `check` of the installed quick-start spec, and the quick-start run itself.
#   package_test.sh BUILD_DIR
set -euo pipefail
build=$(cd "$1" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "package test: $*" >&2; exit 1; }

echo "== cpack"
(cd "$build" && cpack -G DEB -B "$work/out" > "$work/cpack.log" 2>&1) || { tail -30 "$work/cpack.log"; fail "cpack failed"; }
deb=$(ls "$work"/out/parallax_*.deb 2>/dev/null | head -1)
[ -n "$deb" ] || fail "cpack made no parallax_*.deb in $work/out"
echo "built $(basename "$deb") ($(du -h "$deb" | cut -f1))"

echo "== dpkg-deb"
dpkg-deb --info "$deb" > "$work/info"
cat "$work/info"
for field in Package Version Architecture Maintainer Depends Description; do
  grep -q "^ $field: " "$work/info" || fail "the control file has no $field field"
done
depends=$(sed -n 's/^ Depends: //p' "$work/info")
# Computed from the executables' libraries (dpkg-shlibdeps), and the programs a run starts.
for dep in libc6 libqt6widgets6 libopenmpi3 openmpi-bin openssh-client; do
  grep -q "$dep" <<< "$depends" || fail "Depends lacks $dep: $depends"
done
grep -Eq "libtorch" <<< "$depends" || fail "Depends lacks LibTorch: $depends"
dpkg-deb --contents "$deb" | awk '{print $NF}' > "$work/contents"
for path in ./usr/bin/parallax ./usr/bin/parallax-cli ./usr/bin/parallax-worker \
            ./usr/lib/parallax/libparallax-loopback.so ./usr/share/applications/parallax.desktop \
            ./usr/share/icons/hicolor/scalable/apps/parallax.svg ./usr/share/parallax/runs/quickstart.toml \
            ./usr/share/parallax/clusters/example.toml ./usr/share/doc/parallax/copyright \
            ./usr/share/doc/parallax/guide.md ./usr/share/doc/parallax/spec.md; do
  grep -qx "$path" "$work/contents" || fail "the package lacks $path"
done
if grep -E '^\./(usr/local|home|root|tmp|work)/' "$work/contents"; then fail "files outside /usr"; fi

echo "== unpack into $work/root"
dpkg -x "$deb" "$work/root"
root=$work/root

echo "== desktop-file-validate"
command -v desktop-file-validate >/dev/null || fail "desktop-file-validate is missing (apt-get install desktop-file-utils)"
desktop-file-validate "$root/usr/share/applications/parallax.desktop"

if command -v lintian >/dev/null; then
  echo "== lintian"
  lintian --fail-on error --allow-root "$deb"
else
  echo "== lintian is not installed here; skipped"
fi

echo "== the installed tools, from $root alone"
export HOME=$work/home
mkdir -p "$HOME"
cd "$work" # no source tree, no build tree in reach
unset PARALLAX_WORKER PARALLAX_BUILD_DIR PARALLAX_SOURCE_DIR
version=$("$root/usr/bin/parallax-cli" --version)
echo "$version"
grep -q "build [0-9a-f]" <<< "$version" || fail "parallax-cli --version names no build: $version"
QT_QPA_PLATFORM=offscreen "$root/usr/bin/parallax" --version | grep -q "^parallax " || fail "parallax --version"
"$root/usr/bin/parallax-worker" --version | grep -q "build [0-9a-f]" || fail "parallax-worker --version"
store=$work/store/parallax.db
"$root/usr/bin/parallax-cli" --store "$store" check "$root/usr/share/parallax/runs/quickstart.toml" | tee "$work/check.log"
grep -q "$root/usr/bin/parallax-worker" "$work/check.log" || fail "check does not find the installed worker"

echo "== the quick-start run"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
"$root/usr/bin/parallax-cli" --store "$store" run "$root/usr/share/parallax/runs/quickstart.toml" > "$work/run.log" 2>&1 ||
  { tail -30 "$work/run.log"; fail "the quick-start run failed"; }
tail -3 "$work/run.log"
"$root/usr/bin/parallax-cli" --store "$store" show quickstart > "$work/show.log"
grep -q "succeeded" "$work/show.log" || { cat "$work/show.log"; fail "the run did not succeed"; }
"$root/usr/bin/parallax-cli" --store "$store" metrics quickstart --csv > "$work/metrics.csv"
[ "$(($(wc -l < "$work/metrics.csv") - 1))" -eq 1000 ] || fail "the run stored $(($(wc -l < "$work/metrics.csv") - 1)) steps, not 1000"
# mpirun ran with the installed library preloaded (its listeners bound to loopback).
grep -q "LD_PRELOAD=$root/usr/bin/../lib/parallax/libparallax-loopback.so" "$work/run.log" ||
  { grep -n loopback "$work/run.log"; fail "mpirun did not preload the installed libparallax-loopback.so"; }
echo "package test: passed"
