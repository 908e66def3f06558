// A benchmark of the helper's request loop, for profiling (`go test -bench . -cpuprofile`):
// the requests of $FIEF_HELPER_BENCH_REQUESTS (one JSON line each, as fief sends them) served
// again and again; skipped without it.
package main

import (
	"bytes"
	"io"
	"os"
	"testing"
)

func BenchmarkServe(b *testing.B) {
	path := os.Getenv("FIEF_HELPER_BENCH_REQUESTS")
	if path == "" {
		b.Skip("FIEF_HELPER_BENCH_REQUESTS names no request file")
	}
	input, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := serve(bytes.NewReader(input), io.Discard); err != nil {
			b.Fatal(err)
		}
	}
}
