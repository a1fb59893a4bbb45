#!/bin/sh
# Counts the tests that skipped loudly in a `make test` run, by reason, from
# the log internal/testreq writes to $GPULAB_SKIP_LOG: one visible line per
# reason at the end of the run ("3 tests skipped: kube test control plane
# (...)"), or that none skipped. Under CI a skip fails its test instead.
log="$1"
if [ ! -s "$log" ]; then
	echo "no test skipped"
	exit 0
fi
n=$(wc -l < "$log" | tr -d ' ')
noun=tests; [ "$n" = 1 ] && noun=test
echo "$n $noun skipped (they need what this machine lacks; CI=true makes each a failure):"
cut -f2,3 "$log" | sort | awk -F '\t' '
	{ count[$1]++; if (!($1 in example)) example[$1] = $2 }
	END { for (r in count) printf "  %d %s skipped: %s\n", count[r], (count[r] == 1 ? "test" : "tests"), example[r] }' | sort -rn
