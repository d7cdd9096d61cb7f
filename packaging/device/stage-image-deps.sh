#!/usr/bin/env bash
# Stages PCRE2, ICU (uc + data), libjpeg, libpng, libwebp(+demux), and pkgconf from this Debian 12 machine
# into DIR (headers, shared libraries with their SONAME links, minimal relocatable .pc files): what the
# worker's tokenizer and image decoders need on a GPU host whose image lacks them (conversation data).
#
#   packaging/device/stage-image-deps.sh .deps-vl && tar -cJf .deps-vl.tar.xz .deps-vl
#
# On the host: tar -xJf .deps-vl.tar.xz, then PKG_CONFIG_PATH=$PWD/.deps-vl/lib/pkgconfig
# ICU_ROOT=$PWD/.deps-vl LD_LIBRARY_PATH=$PWD/.deps-vl/lib before packaging/device/run.sh build
# (docs/benchmarks.md, "Qwen2.5-VL-7B LoRA on one H100").
set -euo pipefail
out=$1
L=/usr/lib/x86_64-linux-gnu
rm -rf "$out"; mkdir -p "$out/include" "$out/lib/pkgconfig" "$out/bin"
cp -a /usr/include/unicode "$out/include/"
cp /usr/include/pcre2.h "$out/include/"
cp /usr/include/jpeglib.h /usr/include/jmorecfg.h /usr/include/jerror.h /usr/include/x86_64-linux-gnu/jconfig.h "$out/include/"
cp /usr/include/libpng16/png.h /usr/include/libpng16/pngconf.h /usr/include/libpng16/pnglibconf.h "$out/include/"
cp -a /usr/include/webp "$out/include/"
lib() { # real-file soname devname
  cp -L "$L/$1" "$out/lib/$2"
  ln -sf "$2" "$out/lib/$3"
}
lib libicuuc.so.72 libicuuc.so.72 libicuuc.so
lib libicudata.so.72 libicudata.so.72 libicudata.so
lib libpcre2-8.so.0 libpcre2-8.so.0 libpcre2-8.so
lib libjpeg.so.62 libjpeg.so.62 libjpeg.so
lib libpng16.so.16 libpng16.so.16 libpng16.so
lib libwebp.so.7 libwebp.so.7 libwebp.so
lib libwebpdemux.so.2 libwebpdemux.so.2 libwebpdemux.so
cp -L "$L/libpkgconf.so.3" "$out/lib/libpkgconf.so.3"
cp /usr/bin/pkgconf "$out/bin/pkg-config"
pc() { # name version libs [requires]
  cat > "$out/lib/pkgconfig/$1.pc" <<PC
prefix=\${pcfiledir}/../..
libdir=\${prefix}/lib
includedir=\${prefix}/include

Name: $1
Description: $1 staged from Debian 12
Version: $2
${4:+Requires: $4}
Libs: -L\${libdir} $3
Cflags: -I\${includedir}
PC
}
pc libjpeg "$(pkg-config --modversion libjpeg)" -ljpeg
pc libpng "$(pkg-config --modversion libpng)" -lpng16
pc libwebp "$(pkg-config --modversion libwebp)" -lwebp
pc libwebpdemux "$(pkg-config --modversion libwebpdemux)" -lwebpdemux libwebp
pc libpcre2-8 "$(pkg-config --modversion libpcre2-8)" -lpcre2-8
pc icu-uc "$(pkg-config --modversion icu-uc)" "-licuuc -licudata"
{ echo "Staged from Debian 12 on $(date -u +%FT%TZ):"; dpkg-query -W -f='  ${Package} ${Version}\n' libicu-dev libpcre2-dev libjpeg62-turbo-dev libpng-dev libwebp-dev pkgconf libpkgconf3 2>/dev/null; } > "$out/STAGED.txt"
du -sh "$out"
