#!/bin/sh
# apt-fetch.sh for task demo: fetch the exact .debs apt.lock names, by URL, then
# check each against its sha256 in apt.lock (a mismatch fails naming the file).
# Regenerate: synth export demo/20261129-101500-a1b2c3
# Usage: sh apt-fetch.sh APT_LOCK DIR     (run in the image; apt's own apt-helper fetches)
# Sources, in order: mirror, then snapshot (https://snapshot.debian.org/archive/{archive}/20261129T101640Z/).
set -eu
lock=$1
dir=$2
sources='mirror snapshot'
snapshot='https://snapshot.debian.org/archive/{archive}/20261129T101640Z/'
opts="-o Acquire::Retries=1"
if [ -f /run/secrets/cacert ]; then opts="$opts -o Acquire::https::CaInfo=/run/secrets/cacert"; fi
mkdir -p "$dir"
chown _apt "$dir" 2>/dev/null || true
cd "$dir"
: > SHA256SUMS
grep -v '^#' "$lock" | while read -r pin arch sha size mirror file; do
  [ -n "$file" ] && [ "$file" != "-" ] || continue
  deb=${file##*/}
  printf '%s  %s\n' "$sha" "$deb" >> SHA256SUMS
  case ${mirror##*/} in debian-security|debian-ports|debian-debug) archive=${mirror##*/} ;; *) archive=debian ;; esac
  got=
  for src in $sources; do
    case $src in
      mirror) url=$mirror/$file ;;
      *) url=$(printf '%s' "$snapshot" | sed "s|{archive}|$archive|")$file ;;
    esac
    # shellcheck disable=SC2086
    if /usr/lib/apt/apt-helper $opts download-file "$url" "$deb" >/dev/null 2>&1; then
      got=1
      break
    fi
    echo "synth: $pin ($arch, $size bytes): not fetched from $url" >&2
  done
  [ -n "$got" ] || { echo "synth: $pin: no source has $file" >&2; exit 1; }
done
sha256sum -c --quiet SHA256SUMS || {
  echo "synth: the .deb files marked FAILED above differ from the sha256 apt.lock records" >&2
  exit 1
}
