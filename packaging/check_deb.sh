#!/usr/bin/env bash
# CTest tst_packaging: builds the .deb(s) from an already built tree with CPack into a
# temporary folder, then checks the main package's files (binaries, desktop entry,
# metainfo, icons, lessons, docs), its control data (name, Depends on the Qt 6 runtime,
# OpenBLAS, zlib; nothing from CUDA), that no CUDA library is needed by what it installs,
# the optional CUDA component, and validates the desktop entry and the metainfo.
# Usage: check_deb.sh BUILD_DIR SOURCE_DIR with-gui|no-gui with-cuda|no-cuda
set -uo pipefail
build="$1" source="$2" gui="$3" cuda="$4"
cpack="${CPACK:-cpack}"
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
pass() { echo "PASS: $*"; }
skip() { echo "SKIP: $*"; }

for tool in dpkg-deb desktop-file-validate appstreamcli; do
  command -v "$tool" >/dev/null || { echo "FAIL: $tool is missing (scripts/setup.sh --tests installs it)"; exit 1; }
done

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
if ! "$cpack" --config "$build/CPackConfig.cmake" -G DEB -B "$work" >"$work/cpack.log" 2>&1; then
  cat "$work/cpack.log"
  echo "FAIL: cpack -G DEB failed"
  exit 1
fi
main="$(ls "$work"/precision-lab_*.deb 2>/dev/null | head -n1)"
[ -n "$main" ] || { cat "$work/cpack.log"; echo "FAIL: no precision-lab_*.deb written"; exit 1; }
pass "built $(basename "$main")"

contents="$(dpkg-deb -c "$main")"
has() { grep -qE "$1" <<<"$contents" && pass "contains $2" || fail "missing $2"; }
has ' \./usr/bin/plab$' "usr/bin/plab"
if [ "$gui" = with-gui ]; then has ' \./usr/bin/precision-lab$' "usr/bin/precision-lab"
else skip "precision-lab is not built in this tree"; fi
has ' \./usr/share/applications/precision-lab\.desktop$' "the desktop entry"
has ' \./usr/share/metainfo/io\.github\.precisionlab\.PrecisionLab\.metainfo\.xml$' "the AppStream metainfo"
has ' \./usr/share/icons/hicolor/scalable/apps/precision-lab\.svg$' "the scalable icon"
for size in 16 24 32 48 64 128 256; do
  has " \./usr/share/icons/hicolor/${size}x${size}/apps/precision-lab\.png$" "the ${size}px icon"
done
has ' \./usr/share/doc/precision-lab/README\.md$' "the README"
if [ -d "$source/resources/lessons" ]; then
  has ' \./usr/share/precision-lab/lessons/$' "the lessons folder"
  for lesson in "$source"/resources/lessons/*.json; do
    [ -e "$lesson" ] || continue
    has " \./usr/share/precision-lab/lessons/$(basename "$lesson")$" "lesson $(basename "$lesson")"
  done
else
  skip "resources/lessons does not exist yet"
fi
grep -qE 'libplab_cuda|libcudart|libcublas|libcudnn' <<<"$contents" && fail "the main package holds CUDA files" ||
  pass "no CUDA files in the main package"

# Control data.
name="$(dpkg-deb -f "$main" Package)"
[ "$name" = precision-lab ] && pass "Package: $name" || fail "Package is '$name'"
depends="$(dpkg-deb -f "$main" Depends)"
echo "Depends: $depends"
for dep in libqt6core6 libqt6gui6 libqt6svg6 libopenblas0 libdnnl2 zlib1g qt6-qpa-plugins; do
  grep -qE "(^|, )$dep([ ,(]|$)" <<<"$depends" && pass "Depends names $dep" || fail "Depends lacks $dep"
done
if [ "$gui" = with-gui ]; then
  for dep in libqt6widgets6 libqt6charts6; do
    grep -qE "(^|, )$dep([ ,(]|$)" <<<"$depends" && pass "Depends names $dep" || fail "Depends lacks $dep"
  done
fi
grep -qiE 'cuda|cudnn|cublas|nvidia' <<<"$depends" && fail "Depends names a CUDA package" || pass "Depends needs no CUDA"

# What the binaries need, from the unpacked package: every library resolves here, and no
# CUDA library is among them.
dpkg-deb -x "$main" "$work/root"
for bin in "$work"/root/usr/bin/*; do
  needed="$(objdump -p "$bin" 2>/dev/null | awk '/NEEDED/ {print $2}')"
  grep -qiE 'cuda|cublas|cudnn' <<<"$needed" && fail "$(basename "$bin") links a CUDA library" ||
    pass "$(basename "$bin") links no CUDA library"
  missing="$(ldd "$bin" 2>/dev/null | grep 'not found')"
  [ -z "$missing" ] && pass "$(basename "$bin"): every library resolves" || fail "$(basename "$bin"): $missing"
done
QT_QPA_PLATFORM=offscreen "$work/root/usr/bin/plab" --version >/dev/null 2>&1 && pass "packaged plab runs" ||
  fail "packaged plab does not run"

# The CUDA component.
if [ "$cuda" = with-cuda ]; then
  plugin="$(ls "$work"/precision-lab-cuda_*.deb 2>/dev/null | head -n1)"
  if [ -n "$plugin" ]; then
    pass "built $(basename "$plugin")"
    dpkg-deb -c "$plugin" | grep -q 'libplab_cuda' && pass "the CUDA package holds the plugin" || fail "the CUDA package lacks libplab_cuda"
    dpkg-deb -f "$plugin" Depends | grep -q '^precision-lab' && pass "the CUDA package depends on precision-lab" ||
      fail "the CUDA package does not depend on precision-lab"
  else
    fail "no precision-lab-cuda_*.deb although plab_cuda is built"
  fi
else
  skip "the CUDA plugin is not built in this tree (no toolkit): no precision-lab-cuda package"
fi

# Metadata validation.
desktop-file-validate "$work/root/usr/share/applications/precision-lab.desktop" && pass "desktop entry validates" ||
  fail "desktop-file-validate"
appstreamcli validate --no-net "$work/root/usr/share/metainfo/io.github.precisionlab.PrecisionLab.metainfo.xml" &&
  pass "metainfo validates" || fail "appstreamcli validate"

echo "$failures failure(s)"
[ "$failures" -eq 0 ]
