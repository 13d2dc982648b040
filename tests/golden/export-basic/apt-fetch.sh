#!/bin/sh
# apt-fetch.sh for task demo: fetch the exact .debs apt.lock names, by URL, then
# check each against its sha256 in apt.lock (a mismatch fails naming the file).
# Regenerate: synth export demo/20261129-101500-a1b2c3 --author 'Ada Lovelace <ada@example.org>' --license mit --repository-url https://example.org/demo
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
: > want
grep -v '^#' "$lock" | while read -r pin arch sha size mirror file; do
  [ -n "$file" ] && [ "$file" != "-" ] || continue
  rm -f "${file##*/}"  # what an earlier fetch into this folder left is not this one's
  printf '%s  %s\n' "$sha" "${file##*/}" >> SHA256SUMS
  printf '%s %s %s %s %s\n' "$pin" "$arch" "$size" "$mirror" "$file" >> want
done
# Where the .deb of one lock line comes from in source $1 (empty for the bundle's copy).
url_of() {
  case $1 in
    mirror) printf '%s/%s' "$2" "$3" ;;
    snapshot)
      case ${2##*/} in debian-security|debian-ports|debian-debug) archive=${2##*/} ;; *) archive=debian ;; esac
      printf '%s%s' "$(printf '%s' "$snapshot" | sed "s|{archive}|$archive|")" "$3" ;;
  esac
}
# Each source in turn fetches every file the ones before it did not, what it does not have
# going on to the next. apt fetches one host's files one after the other on one connection:
# the files are dealt, largest first, to a few apt-helper calls that run side by side (8 for
# a mirror, 2 for snapshot.debian.org: one service that every reader shares).
for src in $sources; do
  [ -s want ] || break
  case $src in snapshot) conns=2 ;; *) conns=8 ;; esac
  rm -f part.*
  n=0
  sort -k3,3nr want > by-size
  while read -r pin arch size mirror file; do
    printf '%s %s\n' "$(url_of "$src" "$mirror" "$file")" "${file##*/}" >> "part.$((n % conns))"
    n=$((n + 1))
  done < by-size
  for part in part.*; do
    [ -f "$part" ] || continue
    (
      set --
      while read -r url name; do set -- "$@" "$url" "$name"; done < "$part"
      # shellcheck disable=SC2086
      /usr/lib/apt/apt-helper $opts download-file "$@" >/dev/null 2>&1 || true
    ) &
  done
  wait
  rm -f part.* by-size
  : > next
  while read -r pin arch size mirror file; do
    [ -f "${file##*/}" ] && continue
    echo "synth: $pin ($arch, $size bytes): not fetched from $(url_of "$src" "$mirror" "$file")" >&2
    printf '%s %s %s %s %s\n' "$pin" "$arch" "$size" "$mirror" "$file" >> next
  done < want
  mv next want
done
if [ -s want ]; then
  while read -r pin arch size mirror file; do
    echo "synth: $pin: no source has $file" >&2
  done < want
  exit 1
fi
rm -f want
sha256sum -c --quiet SHA256SUMS || {
  echo "synth: the .deb files marked FAILED above differ from the sha256 apt.lock records" >&2
  exit 1
}
