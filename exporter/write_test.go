package exporter

import (
	"bytes"
	"errors"
	"math"
	"strconv"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"google.golang.org/protobuf/encoding/protodelim"
	"google.golang.org/protobuf/proto"
)

// testSnapshot is a rule of two labels, the window label sorting between them, two
// windows, a _total, a gauge with a sample missing, a classic histogram and top values,
// with two series added out of order.
func testSnapshot(t *testing.T) *RuleSnapshot {
	t.Helper()
	shape, err := NewShape(RuleSpec{
		LabelNames: []string{"zone", "method"},
		Windows:    []string{"5m", "1h"},
		Buckets:    []float64{0.5, 1},
		TopLabel:   "path",
		Families: []Family{
			{Name: "req_total", Help: "Requests.", Kind: Counter},
			{Name: "req_window", Help: "Requests \\ in the window.", Kind: Gauge},
			{Name: "req_window_distribution", Help: "Distribution.", Kind: Histogram},
			{Name: "req_window_top", Help: "Top paths.", Kind: Gauge, Top: true},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	var r RuleSnapshot
	r.Reset(shape, 2, false)
	series := [][]string{{"b", "GET"}, {"a\n\"x\"", "POST"}}
	for i, labels := range series {
		r.SetSeries(i, labels, float64(10*(i+1)), true)
		for wi := range 2 {
			if i == 1 && wi == 1 {
				continue // no sample
			}
			r.Gauges(i, wi)[0] = float64(i + wi + 1)
			copy(r.Buckets(i, wi), []float64{1, 2, 3, 1.5})
			r.AddTop(i, wi, "/p", 2)
		}
	}
	return &r
}

func writeAll(t *testing.T, r *RuleSnapshot, format expfmt.Format, gathered []*dto.MetricFamily) []byte {
	t.Helper()
	var b bytes.Buffer
	x := NewWriter(&b, format, gathered)
	for f := range r.shape.Families() {
		if err := x.Write(r, f); err != nil {
			t.Fatal(err)
		}
	}
	if err := x.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestWritersAgree holds the writers to one another and to expfmt: the text a snapshot
// makes parses back into families that expfmt writes as the same text; the protobuf
// decodes into them (the gauge histogram's type aside); a gathered family goes in by name
// order in each; OpenMetrics names the counter without _total and ends with # EOF.
func TestWritersAgree(t *testing.T) {
	r := testSnapshot(t)
	gathered := []*dto.MetricFamily{{Name: proto.String("req_v"), Help: proto.String("Gathered."), Type: dto.MetricType_GAUGE.Enum(),
		Metric: []*dto.Metric{{Gauge: &dto.Gauge{Value: proto.Float64(1)}}}}}
	text := writeAll(t, r, expfmt.FmtText, gathered)
	parser := expfmt.NewTextParser(model.UTF8Validation)
	parsed, err := parser.TextToMetricFamilies(bytes.NewReader(text))
	if err != nil {
		t.Fatalf("%v\n%s", err, text)
	}
	var again bytes.Buffer
	enc := expfmt.NewEncoder(&again, expfmt.FmtText)
	for _, name := range []string{"req_total", "req_v", "req_window", "req_window_distribution", "req_window_top"} {
		if parsed[name] == nil {
			t.Fatalf("no %s in\n%s", name, text)
		}
		if err := enc.Encode(parsed[name]); err != nil {
			t.Fatal(err)
		}
	}
	if again.String() != string(text) {
		t.Errorf("text differs from expfmt's:\n%s\nwant\n%s", text, again.String())
	}
	pb := writeAll(t, r, expfmt.FmtProtoDelim, gathered)
	in := bytes.NewReader(pb)
	var names []string
	for in.Len() > 0 {
		mf := &dto.MetricFamily{}
		if err := protodelim.UnmarshalFrom(in, mf); err != nil {
			t.Fatal(err)
		}
		names = append(names, mf.GetName())
		if mf.GetType() == dto.MetricType_GAUGE_HISTOGRAM {
			mf.Type = dto.MetricType_HISTOGRAM.Enum()
			for _, m := range mf.Metric { // the text's +Inf bucket
				m.Histogram.Bucket = append(m.Histogram.Bucket, &dto.Bucket{CumulativeCount: m.Histogram.SampleCount, UpperBound: proto.Float64(posInf)})
			}
		}
		if want := parsed[mf.GetName()]; !proto.Equal(mf, want) {
			t.Errorf("protobuf %s:\n%v\nwant\n%v", mf.GetName(), mf, want)
		}
	}
	if strings.Join(names, " ") != "req_total req_v req_window req_window_distribution req_window_top" {
		t.Errorf("protobuf families %v", names)
	}
	om := string(writeAll(t, r, expfmt.FmtOpenMetrics_1_0_0, gathered))
	if !strings.Contains(om, "# TYPE req counter\n") || !strings.Contains(om, "# TYPE req_window_distribution gaugehistogram\n") || !strings.HasSuffix(om, "# EOF\n") {
		t.Errorf("OpenMetrics:\n%s", om)
	}
}

var posInf = math.Inf(1)

// failingWriter fails every write.
type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("gone") }

// TestWriterStopsOnError checks that a flush that fails (a client gone) is returned by the
// next Write that flushes, so that the rules left are not read for nothing.
func TestWriterStopsOnError(t *testing.T) {
	r := testSnapshot(t)
	for _, format := range []expfmt.Format{expfmt.FmtText, expfmt.FmtProtoDelim} {
		t.Run(string(format), func(t *testing.T) {
			x := NewWriter(failingWriter{}, format, []*dto.MetricFamily{{Name: proto.String("a"), Type: dto.MetricType_GAUGE.Enum(),
				Metric: []*dto.Metric{{Gauge: &dto.Gauge{Value: proto.Float64(1)}}}}})
			err := x.Write(r, 0)
			if err == nil {
				err = x.Close()
			}
			if err == nil || err.Error() != "gone" {
				t.Errorf("err = %v, want gone", err)
			}
		})
	}
}

// TestOpenMetricsNegativeSum: OpenMetrics allows a gauge histogram a negative _gsum only
// beside a negative bucket bound, so without one the writer leaves _gsum and _gcount out
// (the +Inf bucket is the count). The exporter's rules give histograms no negative values,
// but a RuleSnapshot is anyone's to fill, and a snapshot restored from an older version may
// hold some.
func TestOpenMetricsNegativeSum(t *testing.T) {
	for _, tc := range []struct {
		name    string
		buckets []float64
		sum     float64
		want    bool
	}{
		{"positive sum", []float64{0.5, 1}, 1.5, true},
		{"negative sum, bounds from 0 up", []float64{0.5, 1}, -1.5, false},
		{"negative sum, a negative bound", []float64{-1, 1}, -1.5, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			shape, err := NewShape(RuleSpec{Windows: []string{"5m"}, Buckets: tc.buckets, Families: []Family{
				{Name: "req_total", Help: "Requests.", Kind: Counter},
				{Name: "req_window_distribution", Help: "Distribution.", Kind: Histogram},
			}})
			if err != nil {
				t.Fatal(err)
			}
			var r RuleSnapshot
			r.Reset(shape, 1, false)
			r.SetSeries(0, nil, 3, true)
			copy(r.Buckets(0, 0), []float64{1, 2, 3, tc.sum})
			om := string(writeAll(t, &r, expfmt.FmtOpenMetrics_1_0_0, nil))
			gsum := strings.Contains(om, "req_window_distribution_gsum{")
			if gsum != tc.want || strings.Contains(om, "req_window_distribution_gcount{") != tc.want {
				t.Errorf("_gsum and _gcount written: %v, want %v:\n%s", gsum, tc.want, om)
			}
			if !strings.Contains(om, `req_window_distribution_bucket{window="5m",le="+Inf"} 3`) {
				t.Errorf("no +Inf bucket of the count:\n%s", om)
			}
		})
	}
}

// countingWriter is a sampleWriter whose client went away after its first sample: it
// counts the samples it is still asked for.
type countingWriter struct {
	samples int
}

func (c *countingWriter) begin(*RuleSnapshot, int)                  {}
func (c *countingWriter) value(int, int, float64)                   { c.samples++ }
func (c *countingWriter) top(*topSample)                            { c.samples++ }
func (c *countingWriter) registerRun([][2]int32)                    {}
func (c *countingWriter) register(int, int, uint8)                  { c.samples++ }
func (c *countingWriter) histogram(int, int, []float64, *nativeRef) { c.samples++ }
func (c *countingWriter) failed() error {
	if c.samples > 0 {
		return errors.New("gone")
	}
	return nil
}

// TestWalkStopsOnError: once a flush failed (a client gone, or a stalled one ended to
// make room) the family being written is not walked on to its end for nothing: a family
// of registers is m samples per series and window, millions in a large rule, each formatted
// into a buffer no one reads while the scrape holds the rule's read.
func TestWalkStopsOnError(t *testing.T) {
	const series, m = 300, 16
	shape, err := NewShape(RuleSpec{
		LabelNames: []string{"a", "z"}, Windows: []string{"5m", "1h"}, TopLabel: "path",
		Registers: m, RegisterLabel: "register",
		Families: []Family{
			{Name: "r_total", Kind: Counter},
			{Name: "r_window", Kind: Gauge},
			{Name: "r_window_top", Kind: Gauge, Top: true},
			{Name: "r_window_distinct_register", Kind: Gauge, Registers: true},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	var r RuleSnapshot
	r.Reset(shape, series, false)
	for i := range series {
		r.SetSeries(i, []string{strconv.Itoa(i), "z"}, 1, true)
		for wi := range 2 {
			r.Gauges(i, wi)[0] = 1
			r.AddTop(i, wi, "/p", 1)
			r.SetRegisters(i, wi, make([]uint8, m))
		}
	}
	r.sort()
	for f, fam := range shape.Families() {
		t.Run(fam.Name, func(t *testing.T) {
			var c countingWriter
			walk(&c, &r, f)
			if c.samples != 1 {
				t.Errorf("%d samples walked, want 1: the walk goes on after the writer failed", c.samples)
			}
		})
	}
}

// TestProtoTextWrittenAsItGoes: a scrape in a protobuf text format (held as delimited
// protobuf, then decoded and written as expfmt writes the format) writes each family as
// soon as it is written, not the whole scrape at Close: held whole, a scrape of every
// rule held the exposition many times over while it ran alone, past any
// --web.max-scrape-bytes, and while its client did not read.
func TestProtoTextWrittenAsItGoes(t *testing.T) {
	r := testSnapshot(t)
	for _, format := range []expfmt.Format{expfmt.NewFormat(expfmt.TypeProtoText), expfmt.NewFormat(expfmt.TypeProtoCompact)} {
		t.Run(string(format), func(t *testing.T) {
			var b bytes.Buffer
			x := NewWriter(&b, format, nil)
			for f, fam := range r.shape.Families() {
				if err := x.Write(r, f); err != nil {
					t.Fatal(err)
				}
				if !strings.Contains(b.String(), strconv.Quote(fam.Name)) {
					t.Errorf("family %s was written, and is not in what the client got: %q", fam.Name, b.String())
				}
			}
			if err := x.Close(); err != nil {
				t.Fatal(err)
			}
			if whole := writeAll(t, r, format, nil); !bytes.Equal(b.Bytes(), whole) {
				t.Errorf("written as it goes:\n%s\nwritten whole:\n%s", b.Bytes(), whole)
			}
		})
	}
}

// TestProtoTextLargeFamily: a family of more than 4 MiB of protobuf (ten thousand series
// of long paths) is written whole in the protobuf text formats, as in the others. The
// delimited protobuf it is decoded from is the exporter's own, already held whole: the
// decoder's default cap on a message, 4 MiB, failed the scrape amid the rules.
func TestProtoTextLargeFamily(t *testing.T) {
	shape, err := NewShape(RuleSpec{
		LabelNames: []string{"path"},
		Windows:    []string{"5m"},
		Families:   []Family{{Name: "req_window", Help: "Requests in the window.", Kind: Gauge}},
	})
	if err != nil {
		t.Fatal(err)
	}
	const series = 10_000
	var r RuleSnapshot
	r.Reset(shape, series, false)
	long := strings.Repeat("p", 500)
	for i := range series {
		r.SetSeries(i, []string{long + strconv.Itoa(100_000+i)}, 1, true)
		r.Gauges(i, 0)[0] = 1
	}
	if n := len(writeAll(t, &r, expfmt.FmtProtoDelim, nil)); n <= 4<<20 {
		t.Fatalf("the family takes %d bytes of protobuf, not past 4 MiB", n)
	}
	for _, format := range []expfmt.Format{expfmt.NewFormat(expfmt.TypeProtoText), expfmt.NewFormat(expfmt.TypeProtoCompact)} {
		t.Run(string(format), func(t *testing.T) {
			out := string(writeAll(t, &r, format, nil))
			if n := strings.Count(out, long); n != series {
				t.Errorf("%d series written, want %d", n, series)
			}
		})
	}
}
