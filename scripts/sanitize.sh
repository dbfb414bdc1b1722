#!/usr/bin/env bash
# compute-sanitizer (memcheck and racecheck) over every example's kernels at three sizes each.
# Run on a GPU machine from the repository root, after scripts/gpu-bundle.sh:
#   scripts/sanitize.sh [bundle dir]        (default gpu-bundle)
# Exits non-zero if any run reports an error; the full reports go to sanitize-logs/.
set -uo pipefail
bundle="${1:-gpu-bundle}"
logs="${SANITIZE_LOGS:-sanitize-logs}"
mkdir -p "$logs"
status=0
# example, then its two size arguments (bits and instances; limbs and instances; log2 N and
# vectors; coefficients and bits), small, middle and large
runs=(
  "quickstart 256 64" "quickstart 4096 32" "quickstart 65536 4"
  "six_add 256 64" "six_add 4096 32" "six_add 131072 4"
  "poly 512 32" "poly 4096 8" "poly 65536 2"
  "user_add 8 64" "user_add 128 16" "user_add 4096 2"
  "dot_mod_p 10 8" "dot_mod_p 14 2" "dot_mod_p 20 1"
  "poly_mul 16 128" "poly_mul 256 64" "poly_mul 4097 64"
  "chain 256 64" "chain 4096 32" "chain 65536 4"
)
for tool in memcheck racecheck; do
  for run in "${runs[@]}"; do
    set -- $run
    log="$logs/$tool-$1-$2.log"
    compute-sanitizer --tool "$tool" --error-exitcode 3 "$bundle/examples/$1" "$2" "$3" > "$log" 2>&1
    rc=$?
    summary=$(grep -E "ERROR SUMMARY|RACECHECK SUMMARY" "$log" | tail -1)
    echo "$tool $1 $2 bits: rc=$rc ${summary:-no summary}"
    if [ $rc -ne 0 ]; then status=1; fi
  done
done
exit $status
