package main

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestSummarize(t *testing.T) {
	ms := func(ns ...int) []time.Duration {
		out := make([]time.Duration, len(ns))
		for i, n := range ns {
			out[i] = time.Duration(n) * time.Millisecond
		}
		return out
	}
	oneToHundred := make([]int, 100)
	for i := range oneToHundred {
		oneToHundred[i] = 100 - i // unsorted on purpose
	}
	tests := []struct {
		name string
		in   []time.Duration
		want summary
	}{
		{"empty", nil, summary{}},
		{"one", ms(4), summary{opsPerSec: 250, p50: 4, p99: 4}},
		{"nearest rank", ms(oneToHundred...), summary{opsPerSec: 100 / 5.05, p50: 50, p99: 99}},
		{"outlier only moves p99 and the rate", ms(1, 1, 1, 1, 1, 1, 1, 1, 1, 991), summary{opsPerSec: 10, p50: 1, p99: 991}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := summarize(tt.in)
			require.InDelta(t, tt.want.opsPerSec, got.opsPerSec, 1e-9)
			require.InDelta(t, tt.want.p50, got.p50, 1e-9)
			require.InDelta(t, tt.want.p99, got.p99, 1e-9)
		})
	}
}
