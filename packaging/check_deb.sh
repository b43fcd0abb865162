#!/usr/bin/env bash
# CTest tst_packaging: builds the .deb(s) from an already built tree with CPack into a
# temporary folder, then checks the main package's files (binaries, desktop entry,
# metainfo, icons, lessons, docs), its control data (name, Depends on the Qt 6 runtime,
# OpenBLAS, zlib; nothing from CUDA), that no CUDA library is needed by what it installs,
# the optional CUDA component, validates the desktop entry, the metainfo and the MIME type,
# renders the man pages (every option of plab's subcommands in plab.1), tries the bash
# completion, and runs lintian on every package built: no error and no warning.
# Usage: check_deb.sh BUILD_DIR SOURCE_DIR with-gui|no-gui with-cuda|no-cuda
set -uo pipefail
build="$1" source="$2" gui="$3" cuda="$4"
cpack="${CPACK:-cpack}"
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
pass() { echo "PASS: $*"; }
skip() { echo "SKIP: $*"; }

for tool in dpkg-deb desktop-file-validate appstreamcli lintian man update-mime-database; do
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
  has ' \./usr/share/man/man1/precision-lab\.1\.gz$' "precision-lab's man page"
else skip "precision-lab is not built in this tree"; fi
has ' \./usr/share/applications/io\.github\.precisionlab\.PrecisionLab\.desktop$' "the desktop entry, named by the AppStream id"
has ' \./usr/share/mime/packages/precision-lab\.xml$' "the run record's MIME type"
has ' \./usr/share/man/man1/plab\.1\.gz$' "plab's man page"
has ' \./usr/share/bash-completion/completions/plab$' "plab's bash completion"
has ' \./usr/share/doc/precision-lab/copyright$' "the Debian copyright file"
has ' \./usr/share/doc/precision-lab/changelog\.gz$' "the Debian changelog"
has ' \./usr/share/doc/precision-lab/RUN_RECORD\.md$' "the run record's schema"
has ' \./usr/share/precision-lab/python/plab_torch\.py$' "the PyTorch bridge"
has ' \./usr/share/precision-lab/python/precision_lab/probe\.py$' "the PyTorch probe"
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
    grep -qE ' \./usr/lib/precision-lab/libplab_cuda\.so$' <<<"$(dpkg-deb -c "$plugin")" &&
      pass "the CUDA package holds the plugin in usr/lib/precision-lab" || fail "the CUDA package lacks usr/lib/precision-lab/libplab_cuda.so"
    dpkg-deb -f "$plugin" Depends | grep -q '^precision-lab' && pass "the CUDA package depends on precision-lab" ||
      fail "the CUDA package does not depend on precision-lab"
  else
    fail "no precision-lab-cuda_*.deb although plab_cuda is built"
  fi
else
  skip "the CUDA plugin is not built in this tree (no toolkit): no precision-lab-cuda package"
fi

# Metadata validation.
desktop="$work/root/usr/share/applications/io.github.precisionlab.PrecisionLab.desktop"
desktop-file-validate "$desktop" && pass "desktop entry validates" || fail "desktop-file-validate"
grep -qx 'Exec=precision-lab %F' "$desktop" && pass "Exec passes the opened files (%F: several run records are compared)" || fail "Exec lacks %F"
grep -qE '^MimeType=(.*;)?application/x-precision-lab-run\+json;' "$desktop" && pass "the entry opens run records" ||
  fail "the desktop entry lists no run record MIME type"
grep -q '<launchable type="desktop-id">io.github.precisionlab.PrecisionLab.desktop</launchable>' \
  "$work/root/usr/share/metainfo/io.github.precisionlab.PrecisionLab.metainfo.xml" &&
  pass "the metainfo launches the desktop entry by its id" || fail "metainfo launchable is not the desktop file's name"
mkdir -p "$work/mime/packages" && cp "$work/root/usr/share/mime/packages/precision-lab.xml" "$work/mime/packages/"
# (XDG_DATA_DIRS names the folder, so update-mime-database has nothing to note but errors.)
if XDG_DATA_DIRS="$work" update-mime-database "$work/mime" 2>"$work/mime.log" && ! [ -s "$work/mime.log" ] &&
   grep -q 'application/x-precision-lab-run+json' "$work/mime/globs2" 2>/dev/null; then
  pass "the MIME type compiles (update-mime-database) with its *.plab.json glob"
else
  cat "$work/mime.log"; fail "update-mime-database on the MIME type"
fi
appstreamcli validate --no-net "$work/root/usr/share/metainfo/io.github.precisionlab.PrecisionLab.metainfo.xml" &&
  pass "metainfo validates" || fail "appstreamcli validate"

# The man pages render without a warning, and plab's lists every option of every
# subcommand (they are made from --help, so a missing one means the page is stale).
for page in "$work"/root/usr/share/man/man1/*.1.gz; do
  [ -e "$page" ] || continue
  warnings="$(LC_ALL=C.UTF-8 MANWIDTH=80 man --warnings -l "$page" 2>&1 >"$work/page.txt")"
  [ -z "$warnings" ] && [ -s "$work/page.txt" ] && pass "$(basename "$page") renders" || fail "$(basename "$page"): $warnings"
done
plab_bin="$work/root/usr/bin/plab"
if [ -e "$work/root/usr/share/man/man1/plab.1.gz" ]; then
  zcat "$work/root/usr/share/man/man1/plab.1.gz" | sed 's/\\-/-/g' >"$work/plab.1"
  missing=""
  for sub in $("$plab_bin" --help | awk '/^Subcommands:/ { s = 1; next } s && /^  [a-z]/ { print $1 }'); do
    grep -q "^\.SS \"plab $sub\"" "$work/plab.1" || missing+=" (section plab $sub)"
    for opt in $("$plab_bin" "$sub" --help | grep -oE '^  (-[a-z],)?--[a-z0-9-]+' | sed 's/.*--/--/' | grep -vx -- --help); do
      grep -qF -- "$opt" "$work/plab.1" || missing+=" $sub $opt"
    done
  done
  [ -z "$missing" ] && pass "plab.1 documents every subcommand and option" || fail "plab.1 lacks:$missing"
fi

# The bash completion, from the package, completing against the packaged plab.
completion="$work/root/usr/share/bash-completion/completions/plab"
if [ -e "$completion" ]; then
  got="$(PATH="$work/root/usr/bin:$PATH" bash -c '
    source "$1"
    t() { COMP_WORDS=("$@"); COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); COMPREPLY=(); _plab; echo "${COMPREPLY[*]}"; }
    t plab tr; t plab train --optimizer-s; t plab convert --format e4; t plab data i' _ "$completion")"
  expected=$'train
--optimizer-state
e4m3
import-mnist-json install-fashion-mnist'
  [ "$got" = "$expected" ] && pass "bash completion completes subcommands, options and choices" ||
    fail "bash completion gave: $(tr '\n' '|' <<<"$got") (expected $(tr '\n' '|' <<<"$expected"))"
fi

# The changelog's newest entry is this package's version.
changelog_version="$(zcat "$work/root/usr/share/doc/precision-lab/changelog.gz" 2>/dev/null | sed -n '1s/^precision-lab (\([^)]*\)).*/\1/p')"
version="$(dpkg-deb -f "$main" Version)"
[ "$changelog_version" = "$version" ] && pass "changelog's newest entry is $version" ||
  fail "changelog's newest entry is '$changelog_version', the package is $version"

# lintian: no error and no warning on any package built (as root it only warns that it
# runs as root; that line is not about the package).
if lintian --tag-display-limit 0 "$work"/*.deb >"$work/lintian.log" 2>&1; then :; fi
if grep -qE '^[EW]: ' "$work/lintian.log"; then
  grep -E '^[EW]: ' "$work/lintian.log"
  fail "lintian reports errors or warnings"
else
  pass "lintian: no error or warning on $(ls "$work"/*.deb | xargs -n1 basename | tr '\n' ' ')"
fi

echo "$failures failure(s)"
[ "$failures" -eq 0 ]
