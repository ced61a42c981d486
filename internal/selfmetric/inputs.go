package selfmetric

import (
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/logwindow/logwindow_exporter/internal/input"
)

// InputStats is one input's snapshot at scrape time, under the name it is exported by.
type InputStats struct {
	// Input is the input's name, or its path or address when it has none.
	Input string
	input.Stats
}

// Inputs collects the inputs' self-metrics: those every kind shares, and the counters
// each kind describes.
type Inputs struct {
	read                                                  func() []InputStats
	failed                                                *atomic.Uint64
	lines, tooLong, rotations, truncations, errs, polling *prometheus.Desc
	behind, files, unmatched, unread, malformed, formats  *prometheus.Desc
	warm                                                  *prometheus.Desc
}

// NewInputs returns the collector of what read returns.
func NewInputs(read func() []InputStats, failed *atomic.Uint64) *Inputs {
	return &Inputs{read: read, failed: failed,
		lines: InputLines.Desc(), tooLong: InputTooLongLines.Desc(), rotations: InputRotations.Desc(),
		truncations: InputTruncations.Desc(), errs: InputErrors.Desc(), polling: InputPolling.Desc(),
		behind: InputBehindBytes.Desc(), files: InputFiles.Desc(), unmatched: InputUnmatchedLines.Desc(),
		unread: InputUnreadLines.Desc(), malformed: InputMalformedLines.Desc(), formats: InputFileFormats.Desc(), warm: InputWarmStartFiles.Desc()}
}

// Describe sends nothing (see Rules.Describe).
func (c *Inputs) Describe(chan<- *prometheus.Desc) {}

// Collect sends the inputs' samples. Stats that share label values are summed, since two
// samples with one label set in a family would fail the scrape.
func (c *Inputs) Collect(ch chan<- prometheus.Metric) {
	type fileKey struct{ input, path string }
	type counterKey struct{ name, input, label string }
	type labelKey struct{ input, value string }
	inputs := c.read()
	byInput := map[string]*input.Stats{}
	behind := map[fileKey]int64{}
	counters := map[counterKey]uint64{}
	descs := map[string]*prometheus.Desc{}
	errs := map[labelKey]uint64{}
	formats := map[labelKey]int{}
	for i := range inputs {
		in := &inputs[i]
		name := validUTF8(in.Input)
		sum := byInput[name]
		if sum == nil {
			sum = &input.Stats{}
			byInput[name] = sum
		}
		sum.LinesRead += in.LinesRead
		sum.TooLong += in.TooLong
		sum.Rotations += in.Rotations
		sum.Truncations += in.Truncations
		sum.Errors += in.Errors
		for reason, n := range in.ErrorsByReason {
			errs[labelKey{name, reason}] += n
		}
		if in.ErrorsByReason == nil && in.Errors > 0 {
			errs[labelKey{name, "other"}] += in.Errors
		}
		for format, n := range in.Formats {
			formats[labelKey{name, validUTF8(format)}] += n
		}
		sum.Polling = sum.Polling || in.Polling
		sum.Backfilling += in.Backfilling
		sum.Unmatched += in.Unmatched
		sum.Unread += in.Unread
		sum.MalformedLines += in.MalformedLines
		for _, f := range in.Files {
			behind[fileKey{name, validUTF8(f.Path)}] += f.BytesBehind
		}
		for _, k := range in.Counters {
			counters[counterKey{k.Name, name, validUTF8(k.LabelValue)}] += k.Value
			if descs[k.Name] == nil {
				labels := []string{"input"}
				if k.Label != "" {
					labels = append(labels, k.Label)
				}
				descs[k.Name] = prometheus.NewDesc(k.Name, k.Help, labels, nil)
			}
		}
	}
	files := map[string]int{}
	for k := range behind {
		files[k.input]++
	}
	e := emitter{ch, c.failed}
	for name, in := range byInput {
		e.emit(c.lines, prometheus.CounterValue, float64(in.LinesRead), name)
		e.emit(c.tooLong, prometheus.CounterValue, float64(in.TooLong), name)
		e.emit(c.rotations, prometheus.CounterValue, float64(in.Rotations), name)
		e.emit(c.truncations, prometheus.CounterValue, float64(in.Truncations), name)
		e.emit(c.polling, prometheus.GaugeValue, boolValue(in.Polling), name)
		e.emit(c.files, prometheus.GaugeValue, float64(files[name]), name)
		e.emit(c.warm, prometheus.GaugeValue, float64(in.Backfilling), name)
		e.emit(c.unmatched, prometheus.CounterValue, float64(in.Unmatched), name)
		e.emit(c.unread, prometheus.CounterValue, float64(in.Unread), name)
		e.emit(c.malformed, prometheus.CounterValue, float64(in.MalformedLines), name)
	}
	for k, n := range errs {
		e.emit(c.errs, prometheus.CounterValue, float64(n), k.input, k.value)
	}
	for k, n := range formats {
		e.emit(c.formats, prometheus.GaugeValue, float64(n), k.input, k.value)
	}
	for k, b := range behind {
		e.emit(c.behind, prometheus.GaugeValue, float64(b), k.input, k.path)
	}
	for k, v := range counters {
		labels := []string{k.input}
		if k.label != "" {
			labels = append(labels, k.label)
		}
		e.emit(descs[k.name], prometheus.CounterValue, float64(v), labels...)
	}
}
