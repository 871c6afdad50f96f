// Package bench runs iggy-bench workloads against an Iggy-compatible server: it plans actors
// (producers and consumers), creates the streams they use, drives them concurrently over one
// connection each, records per-batch latencies and reports throughput and percentiles.
package bench

import (
	"math"
	"math/bits"
	"time"
)

// Histogram is a log-linear latency histogram in the spirit of HdrHistogram: values below
// histogramSubBuckets are counted exactly; above that every power of two is split into
// histogramSubBuckets equal buckets, so any reported value is within 1/histogramSubBuckets
// (< 0.8 %) of a recorded one. It covers the whole uint64 range with a fixed 7424-slot array and
// never allocates while recording. Not safe for concurrent use: each actor owns one.
type Histogram struct {
	counts   [histogramBucketsCount]uint64
	total    uint64
	sumNanos float64
	minNanos uint64
	maxNanos uint64
}

const (
	histogramSubBucketBits = 7
	histogramSubBuckets    = 1 << histogramSubBucketBits // 128
	// Values up to 2^64-1 have a most significant bit of at most 63: shifts 0..56 above the exact range.
	histogramBucketsCount = (64 - histogramSubBucketBits + 1) * histogramSubBuckets
)

// bucketIndex maps a value to its bucket.
func bucketIndex(v uint64) int {
	if v < histogramSubBuckets {
		return int(v)
	}
	msb := bits.Len64(v) - 1
	shift := msb - histogramSubBucketBits
	sub := v >> uint(shift) // in [histogramSubBuckets, 2*histogramSubBuckets)
	return (shift+1)*histogramSubBuckets + int(sub-histogramSubBuckets)
}

// bucketHighest returns the largest value that maps to bucket i.
func bucketHighest(i int) uint64 {
	if i < histogramSubBuckets {
		return uint64(i)
	}
	shift := i/histogramSubBuckets - 1
	sub := uint64(i%histogramSubBuckets + histogramSubBuckets)
	low := sub << uint(shift)
	return low + (uint64(1) << uint(shift)) - 1
}

// Record adds one latency.
func (h *Histogram) Record(d time.Duration) {
	if d < 0 {
		d = 0
	}
	h.RecordNanos(uint64(d))
}

// RecordNanos adds one value in nanoseconds.
func (h *Histogram) RecordNanos(v uint64) {
	h.counts[bucketIndex(v)]++
	if h.total == 0 || v < h.minNanos {
		h.minNanos = v
	}
	if v > h.maxNanos {
		h.maxNanos = v
	}
	h.total++
	h.sumNanos += float64(v)
}

// Merge adds every value recorded in other.
func (h *Histogram) Merge(other *Histogram) {
	if other.total == 0 {
		return
	}
	for i, c := range other.counts {
		h.counts[i] += c
	}
	if h.total == 0 || other.minNanos < h.minNanos {
		h.minNanos = other.minNanos
	}
	h.maxNanos = max(h.maxNanos, other.maxNanos)
	h.total += other.total
	h.sumNanos += other.sumNanos
}

// Count is the number of recorded values.
func (h *Histogram) Count() uint64 { return h.total }

// Max is the largest recorded value (exact), 0 when empty.
func (h *Histogram) Max() time.Duration { return time.Duration(h.maxNanos) }

// Min is the smallest recorded value (exact), 0 when empty.
func (h *Histogram) Min() time.Duration { return time.Duration(h.minNanos) }

// Mean is the exact mean of the recorded values, 0 when empty.
func (h *Histogram) Mean() time.Duration {
	if h.total == 0 {
		return 0
	}
	return time.Duration(h.sumNanos / float64(h.total))
}

// Percentile returns the value at quantile q in [0, 1]: the highest value equivalent to the
// ceil(q*count)-th smallest recording, clamped to the recorded min and max. 0 when empty.
func (h *Histogram) Percentile(q float64) time.Duration {
	if h.total == 0 {
		return 0
	}
	q = math.Max(0, math.Min(1, q))
	rank := uint64(math.Ceil(q * float64(h.total)))
	rank = max(rank, 1)
	var seen uint64
	for i, c := range h.counts {
		seen += c
		if seen >= rank {
			v := min(bucketHighest(i), h.maxNanos)
			return time.Duration(max(v, h.minNanos))
		}
	}
	return time.Duration(h.maxNanos)
}
