#!/usr/bin/env bash
# Installs the Debian 12 packages Parallax needs that are missing. Safe to run again.
set -euo pipefail

packages=(
  build-essential cmake ninja-build ccache pkg-config git
  libtorch-dev libopenmpi-dev openmpi-bin
  # LibTorch's matrix products on the CPU: Debian's LibTorch links libblas.so.3, which without this
  # is the reference BLAS (unblocked loops). OpenBLAS's OpenMP build takes the threads LibTorch sets.
  libopenblas0-openmp
  qt6-base-dev qt6-svg-dev libqcustomplot-dev libgl-dev
  libsqlite3-dev libgtest-dev libgmock-dev libbenchmark-dev
  nlohmann-json3-dev libtomlplusplus-dev libcli11-dev
  zlib1g-dev dataset-fashion-mnist xvfb xauth procps python3 desktop-file-utils
  openssh-server openssh-client iproute2
  slurmctld slurmd slurm-client
  libpcre2-dev libicu-dev nodejs
  libjpeg62-turbo-dev libpng-dev libwebp-dev
  # The image tests' references: ImageMagick makes and decodes the test images, Pillow is the
  # oracle of decoding and resizing, exiftool writes EXIF orientations.
  imagemagick python3-pil libimage-exiftool-perl
  # The reference Qwen models (tests/reference) run on Debian's PyTorch under /usr/bin/python3.
  python3-torch python3-numpy
)
# The tokenizer test installs its reference (tokenizers.js) with npm. Debian's npm package; a
# Node.js from NodeSource ships npm itself and conflicts with it.
command -v npm >/dev/null || packages+=(npm)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "deps: all ${#packages[@]} packages present"
  exit 0
fi

echo "deps: installing ${missing[*]}"
sudo=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "deps: need root (or sudo) to install: ${missing[*]}" >&2; exit 1; }
  sudo="sudo"
fi
export DEBIAN_FRONTEND=noninteractive
# openssh-server's install scripts start sshd on the machine's own port 22, and those of slurmctld,
# slurmd and munge start their daemons on Slurm's default ports; the tests' hosts start sshd of
# their own, and the tests' Slurm runs from a slurm.conf of its own (auth/none, other ports). A
# policy-rc.d that exits 101 keeps package scripts from starting services (where the machine has
# none of its own, one is put there for the install and removed after).
policy=/usr/sbin/policy-rc.d
if [ ! -e "$policy" ]; then
  printf '#!/bin/sh\nexit 101\n' | $sudo tee "$policy" >/dev/null
  $sudo chmod 755 "$policy"
  trap '$sudo rm -f "$policy"' EXIT
fi
$sudo apt-get update
$sudo apt-get install -y --no-install-recommends "${missing[@]}"
