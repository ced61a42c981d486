package configcheck

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/logwindow/logwindow_exporter/config"
	"github.com/logwindow/logwindow_exporter/internal/pipeline"
	"github.com/prometheus/exporter-toolkit/web"
)

// TestRunSaysCounts: the check's OK line names its counts as a reader says them, in the
// singular for one.
func TestRunSaysCounts(t *testing.T) {
	for _, tc := range []struct {
		rules, inputs int
		want          string
	}{
		{1, 1, "r.yaml: 1 rule, 1 input: OK\n"},
		{9, 1, "r.yaml: 9 rules, 1 input: OK\n"},
		{1, 3, "r.yaml: 1 rule, 3 inputs: OK\n"},
	} {
		t.Run(tc.want, func(t *testing.T) {
			var text strings.Builder
			text.WriteString("inputs:\n")
			for i := range tc.inputs {
				fmt.Fprintf(&text, "  - {name: in%d, syslog: 'udp://127.0.0.1:%d', log_format: combined}\n", i, 15140+i)
			}
			text.WriteString("rules:\n")
			for i := range tc.rules {
				fmt.Fprintf(&text, "  - {name: r%d, help: lines.}\n", i)
			}
			cfg, err := config.Parse([]byte(text.String()), "r.yaml")
			if err != nil {
				t.Fatal(err)
			}
			webFlags := &web.FlagConfig{WebListenAddresses: &[]string{"127.0.0.1:0"}, WebConfigFile: new(string)}
			var stdout, stderr bytes.Buffer
			if code := Run(cfg, nil, nil, "r.yaml", webFlags, nil, pipeline.Options{}, &stdout, &stderr); code != 0 || stdout.String() != tc.want {
				t.Errorf("exit %d, stdout %q, stderr %q; want exit 0 and %q", code, stdout.String(), stderr.String(), tc.want)
			}
		})
	}
}

// TestRunBuildsAsTheStart: a rule file the load takes but the start's build of its parser
// refuses is an error of the check, not an OK before a start that exits.
func TestRunBuildsAsTheStart(t *testing.T) {
	cfg, err := config.Parse([]byte("inputs:\n  - {name: in, syslog: 'udp://127.0.0.1:15140', log_format: combined}\n"+
		"rules:\n  - {name: bytes_sent, help: bytes., value: body_bytes_sent}\n"), "r.yaml")
	if err != nil {
		t.Fatal(err)
	}
	// A value capture past the rule's captures: what a load and a parser that disagree
	// would hand the start.
	cfg.Rules[0].ValueCapture = 99
	webFlags := &web.FlagConfig{WebListenAddresses: &[]string{"127.0.0.1:0"}, WebConfigFile: new(string)}
	var stdout, stderr bytes.Buffer
	code := Run(cfg, nil, nil, "r.yaml", webFlags, nil, pipeline.Options{}, &stdout, &stderr)
	if code != 1 || stdout.Len() != 0 || !strings.Contains(stderr.String(), "value capture 99 out of range") {
		t.Errorf("exit %d, stdout %q, stderr %q; want exit 1 naming the value capture", code, stdout.String(), stderr.String())
	}
}
