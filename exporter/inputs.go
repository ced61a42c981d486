package exporter

import (
	"github.com/logwindow/logwindow_exporter/internal/input"
	"github.com/prometheus/client_golang/prometheus"
)

// inputDescs are the self-metrics of inputs beyond following files: syslog sockets, and
// lines of structured inputs that are not of their format.
type inputDescs struct {
	received, malformed, dropped, malformedLines *prometheus.Desc
}

func newInputDescs() inputDescs {
	input := []string{"input"}
	return inputDescs{
		malformedLines: prometheus.NewDesc("logwindow_input_malformed_lines_total", "Lines that the input's fields rules could not read: not JSON, or not logfmt, as the input's format says (always 0 for inputs no fields rule reads). Rules with a match regex still saw them.", input, nil),
		received:       prometheus.NewDesc("logwindow_input_datagrams_total", "Datagrams received on the input's syslog socket.", input, nil),
		malformed:      prometheus.NewDesc("logwindow_input_malformed_datagrams_total", "Datagrams without a syslog header; each was taken whole as the line.", input, nil),
		dropped: prometheus.NewDesc("logwindow_input_dropped_datagrams_total", "Datagrams lost before parsing, by reason: receive_buffer (the kernel dropped them, a full socket buffer; UDP reports it with the next datagram, a unix socket never drops but makes its sender fail) or queue (the exporter's queue to the parser was full).",
			[]string{"input", "reason"}, nil),
	}
}

// collectMoreInputs exports the socket counters and malformed lines, summed by input label
// like collectInputs.
func (c *Collector) collectMoreInputs(e emitter, inputs []InputStats) {
	byInput := map[string]*input.DatagramStats{}
	malformed := map[string]uint64{}
	for _, in := range inputs {
		malformed[validUTF8(in.Input)] += in.MalformedLines
		if in.Datagrams == nil {
			continue
		}
		name := validUTF8(in.Input)
		sum := byInput[name]
		if sum == nil {
			sum = &input.DatagramStats{}
			byInput[name] = sum
		}
		sum.Received += in.Datagrams.Received
		sum.Malformed += in.Datagrams.Malformed
		sum.DroppedKernel += in.Datagrams.DroppedKernel
		sum.DroppedQueue += in.Datagrams.DroppedQueue
	}
	d := c.more
	for name, n := range malformed {
		e.emit(d.malformedLines, prometheus.CounterValue, float64(n), name)
	}
	for name, s := range byInput {
		e.emit(d.received, prometheus.CounterValue, float64(s.Received), name)
		e.emit(d.malformed, prometheus.CounterValue, float64(s.Malformed), name)
		e.emit(d.dropped, prometheus.CounterValue, float64(s.DroppedKernel), name, "receive_buffer")
		e.emit(d.dropped, prometheus.CounterValue, float64(s.DroppedQueue), name, "queue")
	}
}
