#!/bin/sh
# Runs every fuzz target in the module (func FuzzX in a _test.go file) for FUZZTIME each, one
# at a time: go test runs one fuzz target per invocation. A failure keeps its input under the
# package's testdata/fuzz, where plain go test replays it from then on.
#
# FUZZTIME is a number of inputs (default 2000x, a few seconds per target here) rather than a
# duration: Go 1.26's fuzzing coordinator can fail a timed run at its deadline with "context
# deadline exceeded" when a worker is still inside an input, with no failing input found
# (golang/go#75804); a count has no deadline. FUZZTIME=1m still fuzzes for a minute.
set -eu
GO=${GO:-go}
FUZZTIME=${FUZZTIME:-2000x}
grep -rl --include='*_test.go' '^func Fuzz' . | sort | while read -r file; do
	dir=$(dirname "$file")
	for target in $(sed -n 's/^func \(Fuzz[A-Za-z0-9_]*\)(.*/\1/p' "$file"); do
		echo "fuzz $dir $target ($FUZZTIME)"
		$GO test -run '^$' -fuzz "^$target\$" -fuzztime "$FUZZTIME" "$dir"
	done
done
