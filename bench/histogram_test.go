package bench

import (
	"math"
	"math/rand/v2"
	"sort"
	"testing"
	"time"
)

// within reports whether got is within rel (relative) of want.
func within(got, want time.Duration, rel float64) bool {
	if want == 0 {
		return got == 0
	}
	return math.Abs(float64(got-want))/float64(want) <= rel
}

func TestHistogramBucketsRoundTrip(t *testing.T) {
	values := []uint64{0, 1, 127, 128, 129, 255, 256, 1000, 12345, 1 << 20, 999_999_999, math.MaxUint64 >> 1, math.MaxUint64}
	for _, v := range values {
		i := bucketIndex(v)
		if i < 0 || i >= histogramBucketsCount {
			t.Fatalf("value %d: bucket %d outside 0..%d", v, i, histogramBucketsCount-1)
		}
		high := bucketHighest(i)
		if high < v {
			t.Errorf("value %d: bucket %d highest %d is below the value", v, i, high)
		}
		if v >= histogramSubBuckets && float64(high-v)/float64(v) > 1.0/histogramSubBuckets {
			t.Errorf("value %d: bucket %d highest %d is more than 1/%d above", v, i, high, histogramSubBuckets)
		}
		if bucketIndex(high) != i {
			t.Errorf("value %d: highest %d of bucket %d maps to bucket %d", v, high, i, bucketIndex(high))
		}
	}
	if v := bucketHighest(histogramBucketsCount - 1); v != math.MaxUint64 {
		t.Errorf("last bucket's highest value %d, want MaxUint64", v)
	}
}

func TestHistogramExactBelowSubBuckets(t *testing.T) {
	var h Histogram
	for v := uint64(1); v <= 100; v++ {
		h.RecordNanos(v)
	}
	for _, tc := range []struct {
		q    float64
		want time.Duration
	}{{0.5, 50}, {0.9, 90}, {0.99, 99}, {0.999, 100}, {1, 100}, {0, 1}} {
		if got := h.Percentile(tc.q); got != tc.want {
			t.Errorf("p%v = %d, want %d", tc.q*100, got, tc.want)
		}
	}
	if h.Count() != 100 || h.Min() != 1 || h.Max() != 100 {
		t.Errorf("count/min/max = %d/%d/%d, want 100/1/100", h.Count(), h.Min(), h.Max())
	}
	if got := h.Mean(); got != 50 { // 50.5 truncated
		t.Errorf("mean = %d, want 50", got)
	}
}

func TestHistogramUniformMilliseconds(t *testing.T) {
	var h Histogram
	// 1 µs .. 10 ms in 1 µs steps: the q-quantile is q*10 ms.
	for us := 1; us <= 10_000; us++ {
		h.Record(time.Duration(us) * time.Microsecond)
	}
	for _, q := range []float64{0.5, 0.9, 0.99, 0.999} {
		want := time.Duration(q*10_000) * time.Microsecond
		if got := h.Percentile(q); !within(got, want, 1.0/histogramSubBuckets) {
			t.Errorf("p%v = %s, want %s ±0.8%%", q*100, got, want)
		}
	}
	if h.Percentile(1) != 10*time.Millisecond {
		t.Errorf("p100 = %s, want the exact max 10ms", h.Percentile(1))
	}
}

func TestHistogramExponentialMatchesSortedSample(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	var h Histogram
	sample := make([]float64, 50_000)
	for i := range sample {
		// Exponential with mean 2 ms plus a 100 µs floor, like a loaded server.
		sample[i] = float64(100*time.Microsecond) + rng.ExpFloat64()*float64(2*time.Millisecond)
		h.RecordNanos(uint64(sample[i]))
	}
	sort.Float64s(sample)
	for _, q := range []float64{0.5, 0.9, 0.99, 0.999} {
		rank := int(math.Ceil(q*float64(len(sample)))) - 1
		want := time.Duration(uint64(sample[rank]))
		if got := h.Percentile(q); !within(got, want, 1.0/histogramSubBuckets) {
			t.Errorf("p%v = %s, sorted sample says %s", q*100, got, want)
		}
	}
	// The theoretical median of the exponential part is ln 2 × mean.
	expMedian := math.Ln2 * float64(2*time.Millisecond)
	median := 100*time.Microsecond + time.Duration(expMedian)
	if got := h.Percentile(0.5); !within(got, median, 0.03) {
		t.Errorf("p50 = %s, theory says %s ±3%%", got, median)
	}
}

func TestHistogramMergeEqualsCombinedRecording(t *testing.T) {
	var a, b, both Histogram
	for i := 1; i <= 1000; i++ {
		v := uint64(i * i * 37)
		if i%3 == 0 {
			a.RecordNanos(v)
		} else {
			b.RecordNanos(v)
		}
		both.RecordNanos(v)
	}
	var merged Histogram
	merged.Merge(&a)
	merged.Merge(&b)
	merged.Merge(&Histogram{}) // empty merge changes nothing
	if merged.Count() != both.Count() || merged.Min() != both.Min() || merged.Max() != both.Max() || merged.Mean() != both.Mean() {
		t.Fatalf("merged count/min/max/mean %d/%s/%s/%s, combined %d/%s/%s/%s", merged.Count(), merged.Min(),
			merged.Max(), merged.Mean(), both.Count(), both.Min(), both.Max(), both.Mean())
	}
	for _, q := range []float64{0.1, 0.5, 0.9, 0.99, 0.999} {
		if merged.Percentile(q) != both.Percentile(q) {
			t.Errorf("p%v merged %s, combined %s", q*100, merged.Percentile(q), both.Percentile(q))
		}
	}
}

func TestHistogramEmptyAndNegative(t *testing.T) {
	var h Histogram
	if h.Percentile(0.99) != 0 || h.Mean() != 0 || h.Max() != 0 {
		t.Fatal("an empty histogram reports non-zero values")
	}
	h.Record(-time.Second) // a clock step backwards counts as zero, never panics
	if h.Count() != 1 || h.Max() != 0 {
		t.Fatalf("negative duration: count %d max %s, want 1 and 0", h.Count(), h.Max())
	}
}
