package exporter

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/logwindow/logwindow_exporter/syslog"
)

// socketDescs are the self-metrics of inputs that receive on a syslog socket.
type socketDescs struct {
	received, malformed, dropped *prometheus.Desc
}

func newSocketDescs() socketDescs {
	input := []string{"input"}
	return socketDescs{
		received:  prometheus.NewDesc("logwindow_input_datagrams_total", "Datagrams received on the input's syslog socket.", input, nil),
		malformed: prometheus.NewDesc("logwindow_input_malformed_datagrams_total", "Datagrams without a syslog header; each was taken whole as the line.", input, nil),
		dropped: prometheus.NewDesc("logwindow_input_dropped_datagrams_total", "Datagrams lost before parsing, by reason: receive_buffer (the kernel dropped them, a full socket buffer; UDP reports it with the next datagram, a unix socket never drops but makes its sender fail) or queue (the exporter's queue to the parser was full).",
			[]string{"input", "reason"}, nil),
	}
}

// collectSockets exports the socket counters, summed by input label like collectInputs.
func (c *Collector) collectSockets(e emitter, inputs []InputStats) {
	byInput := map[string]*syslog.Stats{}
	for _, in := range inputs {
		if in.Syslog == nil {
			continue
		}
		name := validUTF8(in.Input)
		sum := byInput[name]
		if sum == nil {
			sum = &syslog.Stats{}
			byInput[name] = sum
		}
		sum.Received += in.Syslog.Received
		sum.Malformed += in.Syslog.Malformed
		sum.DroppedKernel += in.Syslog.DroppedKernel
		sum.DroppedQueue += in.Syslog.DroppedQueue
	}
	d := c.sock
	for name, s := range byInput {
		e.emit(d.received, prometheus.CounterValue, float64(s.Received), name)
		e.emit(d.malformed, prometheus.CounterValue, float64(s.Malformed), name)
		e.emit(d.dropped, prometheus.CounterValue, float64(s.DroppedKernel), name, "receive_buffer")
		e.emit(d.dropped, prometheus.CounterValue, float64(s.DroppedQueue), name, "queue")
	}
}
