#!/bin/bash
# The outputs of two pdwatch builds, side by side: md5 of `pdwatch parse --format jsonl`, of
# `pdwatch report --format json` (its "generated_at" wall clock left out) and of `pdwatch report
# --format md` on the samples, the real logs and captures in tests/data/real (vLLM and Dynamo),
# the example lines and bench_shapes.py's logs. Every pair must be equal after a change that keeps
# the events, findings and wording (issues 19 and 30).
#
#   bench/same_outputs.sh REFERENCE_PDWATCH [THIS_PDWATCH]
#   e.g. git worktree add /tmp/ref_src main && python3 -m venv /tmp/ref && /tmp/ref/bin/pip install /tmp/ref_src
#        bench/same_outputs.sh /tmp/ref/bin/pdwatch .venv/bin/pdwatch
#
# With SAME_OUTPUTS_KEEP=DIR, each differing pair's two outputs are kept in DIR (ref.* and new.*)
# for a diff. Run it from outside the repository (cd /tmp): from inside it, the source tree
# shadows the reference's installed package. Exit status 1 when any pair differs.
set -u
REF=$1
HERE=$(cd "$(dirname "$0")/.." && pwd)
NEW=${2:-$HERE/.venv/bin/pdwatch}
KEEP=${SAME_OUTPUTS_KEEP:-}
inputs=( "$HERE"/samples/*/ "$HERE"/tests/data/real/vllm-* "$HERE"/tests/data/real/captures/*/
         "$HERE"/tests/data/real/dynamo/*/ "$HERE"/tests/data/formats/example-lines.txt
         "$HERE"/bench/out/shapes/*.log "$HERE"/bench/out/shapes/run-*/ )
same=0; different=0
[ -n "$KEEP" ] && mkdir -p "$KEEP"
for f in "${inputs[@]}"; do
  [ -e "$f" ] || continue
  for what in parse:jsonl report:json report:md; do
    cmd=${what%%:*}; fmt=${what#*:}
    a=$("$REF" "$cmd" "$f" --format "$fmt" --year 2026 2>/dev/null | sed -E 's/"generated_at": "[^"]*"//')
    b=$("$NEW" "$cmd" "$f" --format "$fmt" --year 2026 2>/dev/null | sed -E 's/"generated_at": "[^"]*"//')
    ma=$(printf '%s' "$a" | md5sum | cut -c1-12); mb=$(printf '%s' "$b" | md5sum | cut -c1-12)
    if [ "$ma" = "$mb" ]; then same=$((same + 1)); s=same; else
      different=$((different + 1)); s=DIFFERENT
      if [ -n "$KEEP" ]; then
        tag=$(printf '%s' "${f#"$HERE"/}" | tr '/' '_').$cmd.$fmt
        printf '%s\n' "$a" > "$KEEP/ref.$tag"; printf '%s\n' "$b" > "$KEEP/new.$tag"
      fi
    fi
    printf "%-9s %-6s %-5s %s %s %s\n" "$s" "$cmd" "$fmt" "$ma" "$mb" "${f#"$HERE"/}"
  done
done
echo "same $same, different $different"
[ "$different" -eq 0 ]
