package scrape

import (
	"math"

	"github.com/logwindow/logwindow_exporter/exporter"
	"github.com/logwindow/logwindow_exporter/windows/sketch"
)

// nativeSchema is the schema of the native histograms: 2^7 = 128 buckets per power of two,
// bucket j holding (2^((j−1)/128), 2^(j/128)], 0.54% wide. The quantile sketch's bins are
// 35 per power of two, so they cannot be exported as they are: each goes whole to the
// bucket holding the value it reports, which is within 1.0% of every value the bin holds.
// histogram_quantile interpolates within a bucket, so it answers within that bucket: at
// most (1.0100·2^(1/128) − 1) = 1.55% from the exact quantile, whatever the distribution.
// Schema 6 (1.09% wide buckets) would allow 2.10%, over the 2% promised; schema 8 only
// narrows the bound to 1.27% for twice the empty buckets. TestNativeQuantileError
// measures it.
const nativeSchema = 7

// nativeZeroThreshold is the zero bucket's width: the smallest float64, below
// sketch.MinMagnitude, so only exact zeros fall in it (the sketch clamps smaller
// magnitudes into its outermost bins). A positive width marks even an empty window's
// histogram as native to a Prometheus (2.4x) that tells native from classic by the zero
// bucket and the deltas, not by spans.
const nativeZeroThreshold = math.SmallestNonzeroFloat64

// maxFilledGap is the most empty buckets written as zero counts between two buckets of one
// span, rather than starting a new span: as client_golang does.
const maxFilledGap = 2

// nativeMapping says which native bucket of a schema each sketch bin goes to: bin
// q·BinsPerOctave + r to q·2^schema + offsets[r], since both have a whole number of
// buckets per power of two; offsets[r] is the bucket holding the value bin r reports.
type nativeMapping struct {
	schema  int32
	offsets [sketch.BinsPerOctave]int32
}

func newNativeMapping(schema int32) *nativeMapping {
	m := &nativeMapping{schema: schema}
	for r := range m.offsets {
		m.offsets[r] = int32(math.Ceil(math.Log2(sketch.BinValue(int32(r))) * math.Exp2(float64(schema))))
	}
	return m
}

// index is the native bucket sketch bin i goes to.
func (m *nativeMapping) index(i int32) int32 {
	q, r := i/sketch.BinsPerOctave, i%sketch.BinsPerOctave
	if r < 0 {
		q, r = q-1, r+sketch.BinsPerOctave
	}
	return q<<m.schema + m.offsets[r]
}

// nativeBuckets is the mapping of nativeSchema.
var nativeBuckets = newNativeMapping(nativeSchema)

// nativeBuilder makes native histograms of quantile sketches, keeping its spans and
// deltas from one to the next (the snapshot copies them).
type nativeBuilder struct {
	h exporter.NativeHistogram
}

// native makes the native histogram of a window's quantile sketch.
func (nb *nativeBuilder) native(q *sketch.Quantiles) *exporter.NativeHistogram {
	h := &nb.h
	h.Schema, h.ZeroThreshold = nativeSchema, nativeZeroThreshold
	// Only 0 is in the zero bucket: the sketch counts zeros apart and keeps every other
	// magnitude it can tell apart (down to sketch.MinMagnitude) in its bins.
	h.Count, h.ZeroCount = q.Count(), q.Zeros()
	var neg, pos float64
	h.NegSpans, h.NegDeltas, neg = appendBuckets(h.NegSpans[:0], h.NegDeltas[:0], q, true)
	h.PosSpans, h.PosDeltas, pos = appendBuckets(h.PosSpans[:0], h.PosDeltas[:0], q, false)
	// The sum of the values the bins report: within 1% of the values' for values of one
	// sign.
	h.Sum = pos - neg
	return h
}

// appendBuckets appends the spans and deltas (counts as deltas from the bucket before) of
// one sign of q's bins, and returns them with the sum of the values they report.
func appendBuckets(spans []exporter.BucketSpan, deltas []int64, q *sketch.Quantiles, neg bool) ([]exporter.BucketSpan, []int64, float64) {
	var next int32  // the bucket after the last one written
	var prev int64  // the last bucket's count
	var sum float64 // of the values the bins report
	q.Bins(neg, func(i int32, c uint64) {
		j := nativeBuckets.index(i)
		if gap := j - next; len(spans) == 0 || gap > maxFilledGap {
			if len(spans) == 0 {
				gap = j
			}
			spans = append(spans, exporter.BucketSpan{Offset: gap})
		} else {
			for range gap {
				deltas = append(deltas, -prev)
				prev = 0
			}
			spans[len(spans)-1].Length += uint32(gap)
		}
		deltas = append(deltas, int64(c)-prev)
		spans[len(spans)-1].Length++
		prev, next = int64(c), j+1
		sum += float64(c) * sketch.BinValue(i)
	})
	return spans, deltas, sum
}
