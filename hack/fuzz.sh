#!/bin/sh
# Runs every fuzz target in the module (func FuzzX in a _test.go file) for FUZZTIME each
# (default 5s), one at a time: go test runs one fuzz target per invocation. A failure keeps
# its input under the package's testdata/fuzz, where plain go test replays it from then on.
set -eu
GO=${GO:-go}
FUZZTIME=${FUZZTIME:-5s}
grep -rl --include='*_test.go' '^func Fuzz' . | sort | while read -r file; do
	dir=$(dirname "$file")
	for target in $(sed -n 's/^func \(Fuzz[A-Za-z0-9_]*\)(.*/\1/p' "$file"); do
		echo "fuzz $dir $target ($FUZZTIME)"
		$GO test -run '^$' -fuzz "^$target\$" -fuzztime "$FUZZTIME" "$dir"
	done
done
