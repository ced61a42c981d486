package exporter

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/logwindow/logwindow_exporter/internal/input"
	"github.com/logwindow/logwindow_exporter/internal/selfmetric"
)

// inputDescs are the self-metrics of inputs beyond following files: syslog sockets, and
// lines of structured inputs that are not of their format.
type inputDescs struct {
	received, malformed, dropped, malformedLines *prometheus.Desc
}

func newInputDescs() inputDescs {
	return inputDescs{
		malformedLines: selfmetric.InputMalformedLines.Desc(),
		received:       selfmetric.InputDatagrams.Desc(),
		malformed:      selfmetric.InputMalformedDatagrams.Desc(),
		dropped:        selfmetric.InputDroppedDatagrams.Desc(),
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
