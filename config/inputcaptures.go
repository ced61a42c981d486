package config

import "slices"

// The captures an input gives every line of its own, beside those its path_captures
// names: rules read them as they read path captures, and a capture of the line itself (a
// group of the match regex, a field) of the same name takes precedence.
const (
	// StreamCapture is the stream of a wrapper: cri input's line (stdout or stderr).
	StreamCapture = "stream"
	// WorkloadCapture is the workload a pod belongs to, worked out from the pod path
	// capture's value (PodCapture) as Kubernetes names pods; given by an input whose
	// path_captures has a pod and no workload group.
	WorkloadCapture = "workload"
	PodCapture      = "pod"
	// SyslogHostnameCapture and SyslogTagCapture are the hostname and the tag (RFC 5424:
	// APP-NAME) of the syslog header of a syslog input's datagram; empty when the header
	// has none.
	SyslogHostnameCapture = "syslog_hostname"
	SyslogTagCapture      = "syslog_tag"
)

// InputCaptureNames are the captures the input gives each line besides the groups of its
// path_captures.
func (in Input) InputCaptureNames() []string {
	var out []string
	if in.Wrapper == WrapperCRI {
		out = append(out, StreamCapture)
	}
	if paths := in.pathRegexNames(); slices.Contains(paths, PodCapture) && !slices.Contains(paths, WorkloadCapture) {
		out = append(out, WorkloadCapture)
	}
	if in.Syslog != nil {
		out = append(out, SyslogHostnameCapture, SyslogTagCapture)
	}
	return out
}
