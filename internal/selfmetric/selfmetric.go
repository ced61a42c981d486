// Package selfmetric names the exporter's own metric families, with their HELP and label
// names, once: the exposition builds its descriptors from them, and the status page and
// the dashboard read the same names back, so none of them spells a name of its own.
package selfmetric

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/logwindow/logwindow_exporter/internal/input"
)

// Namespace starts every self-metric's name; config keeps rule names out of it.
const Namespace = "logwindow"

// Metric is one self-metric family.
type Metric struct {
	Name   string
	Help   string
	Labels []string
}

// Desc is the descriptor the exposition sends samples of m with.
func (m Metric) Desc() *prometheus.Desc { return prometheus.NewDesc(m.Name, m.Help, m.Labels, nil) }

// Count is a sample of m, an input's counter as its kind reports it (input.Stats.Counters):
// m's labels are the input's and at most one more, whose value labelValue gives.
func (m Metric) Count(v uint64, labelValue ...string) input.Counter {
	c := input.Counter{Name: m.Name, Help: m.Help, Value: v}
	if len(m.Labels) > 1 && len(labelValue) > 0 {
		c.Label, c.LabelValue = m.Labels[1], labelValue[0]
	}
	return c
}

// The self-metrics, by what they count.
var (
	RuleMatchedLines = Metric{"logwindow_rule_matched_lines_total",
		"Lines matched by the rule, including lines too old for any window (those of a label set with no live series are in no _total).",
		[]string{"rule"}}
	RuleDroppedLines = Metric{"logwindow_rule_dropped_lines_total",
		"Matched lines not counted as is, by reason: no_value, bad_number, bad_timestamp and negative lines are not counted, nor too_large ones (a value that would make a sum of its series too large for a float); late lines (older than the longest window) are in no window, and in a _total only if their label set has a live series; future lines were placed at the current second.",
		[]string{"rule", "reason"}}
	RuleSeries = Metric{"logwindow_rule_series",
		"Label sets the rule holds, with windows or as kept counters (only _total, after idling past the longest window), the overflow series included.",
		[]string{"rule"}}
	RuleSeriesLimit = Metric{"logwindow_rule_series_limit",
		"The rule's max_series_per_rule; past it, new label sets are folded into the __overflow__ series.",
		[]string{"rule"}}
	SeriesOverflow = Metric{"logwindow_series_overflow_total",
		"Matched lines whose label set was folded into the rule's __overflow__ series because the rule held max_series_per_rule series or the series of all rules held --series.max-bytes.",
		[]string{"rule"}}
	SeriesMemoryOverflow = Metric{"logwindow_series_memory_overflow_total",
		"Matched lines whose new label set was folded into the rule's __overflow__ series because the series of all rules held --series.max-bytes (also counted in logwindow_series_overflow_total).",
		[]string{"rule"}}
	SeriesBytes = Metric{"logwindow_series_bytes",
		"Heap held by the series of all rules (label sets, counters, float wheels, and every quantile, distinct, top and histogram summary as it grows, each slot counted at least at its floor) and by the partial messages of cri inputs: what --series.max-bytes bounds.",
		nil}
	ScrapesRefused = Metric{"logwindow_scrapes_refused_total",
		"Scrapes of the metrics path answered 503 before anything was written, by reason: max_requests (--web.max-requests scrapes ran and none gave way within 5s), max_scrape_bytes (the scrapes running held --web.max-scrape-bytes and none gave way within 5s), displaced (--web.max-requests scrapes waited, and it had waited longest).",
		[]string{"reason"}}
	ScrapesEnded = Metric{"logwindow_scrapes_ended_total",
		"Scrapes ended because their client had not read for a second while another scrape waited for their place or their memory.",
		nil}
	ScrapesAlone = Metric{"logwindow_scrapes_alone_total",
		"Scrapes charged the whole of --web.max-scrape-bytes, so run alone: the first after a start or a reload (whose memory no earlier read tells), those in the protobuf text formats (held whole), and those whose rules held more than the budget at their last read.",
		nil}
	ScrapeBytes = Metric{"logwindow_scrape_bytes",
		"Memory the scrapes running are charged: what their rules held at their last read, or the whole of --web.max-scrape-bytes for one that runs alone.",
		nil}
	ScrapeMaxBytes = Metric{"logwindow_scrape_max_bytes",
		"The --web.max-scrape-bytes budget of the scrapes in flight.",
		nil}
	WebConfigErrors = Metric{"logwindow_web_config_errors_total",
		"Requests answered 500 and TLS handshakes refused because the --web.config.file, changed while the exporter ran, did not load, and requests of a user whose password it holds as no bcrypt hash.",
		nil}
	TLSHandshakeErrors = Metric{"logwindow_tls_handshake_errors_total",
		"TLS handshakes that failed for their client, by cause: closed (before the end: a port scan, a TCP check), plain_http (plain HTTP to the TLS port), not_tls, client_alert (the client refused, mostly the exporter's certificate), client_certificate (missing or not accepted), no_shared_parameters (TLS version, cipher suite, curve), other; and tls_to_plain_port, TLS sent to a plain HTTP listener.",
		[]string{"cause"}}
	SeriesMaxBytesSource = Metric{"logwindow_series_max_bytes_source",
		"1 for where the --series.max-bytes bound came from: flag, cgroup_v2 or cgroup_v1 (half the container's memory limit), or default (512MiB: no limit found).",
		[]string{"source"}}
	SeriesMaxBytes = Metric{"logwindow_series_max_bytes",
		"The --series.max-bytes bound; 0 is none.",
		nil}
	InputLines = Metric{"logwindow_input_lines_total",
		"Complete lines read from the input.",
		[]string{"input"}}
	InputTooLongLines = Metric{"logwindow_input_too_long_lines_total",
		"Lines skipped because they exceed the line length cap.",
		[]string{"input"}}
	InputRotations = Metric{"logwindow_input_rotations_total",
		"Rotations (rename and create, delete and recreate, symlink retarget) seen on the input's files.",
		[]string{"input"}}
	InputTruncations = Metric{"logwindow_input_truncations_total",
		"Truncations (copytruncate) seen on the input's files.",
		[]string{"input"}}
	InputLostBytes = Metric{"logwindow_input_lost_bytes_total",
		"Bytes of the input's files lost before they were read, by reason: truncation (a file truncated, by copytruncate or a shell's >, while it held bytes the exporter had seen and not read yet, which no copy of it read either). Bytes written after the exporter's last look at the file are not counted.",
		[]string{"input", "reason"}}
	InputErrors = Metric{"logwindow_input_errors_total",
		"Errors of the input, each logged and retried, by reason: for files watch, list, stat, open, not_regular (a FIFO, a device, a directory), read, symlink (refused: out of the glob's root); for sockets receive, and socket (a unix socket file found removed or replaced, bound again).",
		[]string{"input", "reason"}}
	InputFileFormats = Metric{"logwindow_input_file_format",
		"Files of the input by the log format chosen for them (log_format: auto or a list of candidates); format=\"(none)\": files whose last lines fit no candidate, or whose fewer lines fit none and were followed by none for a minute, or, for a glob of one log_format, whose first lines fit it not.",
		[]string{"input", "format"}}
	InputPolling = Metric{"logwindow_input_polling",
		"1 while the input has no inotify instance (e.g. the per-user instance limit is reached) and sees changes only by polling, up to --input.poll-interval later; a directory whose watch cannot be added is polled too and counted in errors.",
		[]string{"input"}}
	InputWarmStartFiles = Metric{"logwindow_input_warm_start_files",
		"Files of the input whose warm start (windows of event-time rules filled from the file's end at start) is still to run; /-/ready waits for 0 until 30 seconds after the start at most (a wait for the storage directory included).",
		[]string{"input"}}
	InputBehindBytes = Metric{"logwindow_input_behind_bytes",
		"Bytes of the file not read yet.",
		[]string{"input", "path"}}
	InputFiles = Metric{"logwindow_input_files",
		"Files the input follows now (paths with an open file); 0 when its path matches no file, which is logged as a warning at start and on reload.",
		[]string{"input"}}
	InputUnmatchedLines = Metric{"logwindow_input_unmatched_lines_total",
		"Lines of the input that no rule matched (a line not of the input's format is counted as malformed instead).",
		[]string{"input"}}
	InputUnreadLines = Metric{"logwindow_input_unread_lines_total",
		"Lines of the input's files read by the json candidate format (log_format: auto or a list) whose objects have none of the members the rules read (another application's log under a glob of nginx containers): not counted as unmatched; the files are logged at warning.",
		[]string{"input"}}
	ConfigLastReloadSuccessful = Metric{"logwindow_config_last_reload_successful",
		"Whether the last configuration load succeeded (1), or was refused or put in force but for inputs that could not start (0).",
		nil}
	InputRunning = Metric{"logwindow_input_running",
		"Whether the input of the configuration in force runs (1) or did not start (0): a reload put the configuration in force, but the input's socket could not be bound. It stays 0, whatever reloads are refused after, until it starts: it is tried again, less and less often, and at once by a reload.",
		[]string{"input"}}
	ConfigLastReloadSuccessTimestamp = Metric{"logwindow_config_last_reload_success_timestamp_seconds",
		"Unix time of the last successful configuration load.",
		nil}
	CollectErrors = Metric{"logwindow_collect_errors_total",
		"Series (once per scrape) and self-metrics left out of scrapes because they could not be exported.",
		nil}
	InputMalformedLines = Metric{"logwindow_input_malformed_lines_total",
		"Lines that the input's fields rules could not read: not JSON, or not logfmt, as the input's format says (always 0 for inputs no fields rule reads). Rules with a match regex still saw them.",
		[]string{"input"}}
	InputDatagrams = Metric{"logwindow_input_datagrams_total",
		"Datagrams received on the input's syslog socket.",
		[]string{"input"}}
	InputMalformedDatagrams = Metric{"logwindow_input_malformed_datagrams_total",
		"Datagrams without a syslog priority, or that say RFC 5424 and are not; each was taken whole as the line.",
		[]string{"input"}}
	InputDroppedDatagrams = Metric{"logwindow_input_dropped_datagrams_total",
		"Datagrams lost before parsing, by reason: receive_buffer (the kernel dropped them, a full UDP socket buffer, as the kernel counts them at the scrape; a unix socket never drops but makes its sender fail) or queue (the exporter's queue to the parser was full).",
		[]string{"input", "reason"}}
)
