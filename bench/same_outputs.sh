#!/bin/bash
# The outputs of two pdwatch builds, side by side: md5 of `pdwatch parse --format jsonl` and of
# `pdwatch report --format json` (its "generated_at" wall clock left out) on the samples, the real
# logs and captures in tests/data/real, the example lines and bench_shapes.py's logs. Every pair
# must be equal after a change that keeps the events and findings (issue 19's proof).
#
#   bench/same_outputs.sh REFERENCE_PDWATCH [THIS_PDWATCH]
#   e.g. python3 -m venv /tmp/ref && /tmp/ref/bin/pip install "$(git worktree ...)" ...
#        bench/same_outputs.sh /tmp/ref/bin/pdwatch .venv/bin/pdwatch
#
# Run it from outside the repository (cd /tmp): from inside it, the source tree shadows the
# reference's installed package. Exit status 1 when any pair differs.
set -u
REF=$1
HERE=$(cd "$(dirname "$0")/.." && pwd)
NEW=${2:-$HERE/.venv/bin/pdwatch}
inputs=( "$HERE"/samples/*/ "$HERE"/tests/data/real/vllm-* "$HERE"/tests/data/real/captures/*/
         "$HERE"/tests/data/formats/example-lines.txt "$HERE"/bench/out/shapes/*.log "$HERE"/bench/out/shapes/run-*/ )
same=0; different=0
for f in "${inputs[@]}"; do
  [ -e "$f" ] || continue
  for cmd in parse report; do
    fmt=json; [ "$cmd" = parse ] && fmt=jsonl
    a=$("$REF" "$cmd" "$f" --format $fmt --year 2026 2>/dev/null | sed -E 's/"generated_at": "[^"]*"//' | md5sum | cut -c1-12)
    b=$("$NEW" "$cmd" "$f" --format $fmt --year 2026 2>/dev/null | sed -E 's/"generated_at": "[^"]*"//' | md5sum | cut -c1-12)
    if [ "$a" = "$b" ]; then same=$((same + 1)); s=same; else different=$((different + 1)); s=DIFFERENT; fi
    printf "%-9s %-6s %s %s %s\n" "$s" "$cmd" "$a" "$b" "${f#"$HERE"/}"
  done
done
echo "same $same, different $different"
[ "$different" -eq 0 ]
