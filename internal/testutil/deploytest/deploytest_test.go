package deploytest

import (
	"os"
	"slices"
	"strings"
	"testing"
)

func TestNginxAccessLogs(t *testing.T) {
	cases := []struct {
		name, conf, format, wantErr string
		targets                     []string
	}{
		{"joined", "log_format main '$a '\n   '$b';\naccess_log /l/a.log main;\n", "$a $b", "", []string{"/l/a.log"}},
		{"socket and stdout", "log_format main '$a';\naccess_log syslog:server=unix:/s.sock,tag=nginx main;\naccess_log /dev/stdout main;\n", "$a", "", []string{"syslog:server=unix:/s.sock,tag=nginx", "/dev/stdout"}},
		{"two formats", "log_format main '$a';\naccess_log /a main;\naccess_log /b combined;\n", "", "want one format", nil},
		{"undefined format", "log_format main '$a';\naccess_log /l/a.log combined;\n", "", "no log_format", nil},
		{"no access log", "log_format main '$a';\n", "", "no access_log", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			targets, format, err := NginxAccessLogs(c.conf)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("error %v, want %q", err, c.wantErr)
				}
				return
			}
			if err != nil || !slices.Equal(targets, c.targets) || format != c.format {
				t.Fatalf("got %q %q %v, want %q %q", targets, format, err, c.targets, c.format)
			}
		})
	}
}

func TestServeRulesFrom(t *testing.T) {
	data, err := os.ReadFile("../../../example-rules.yaml")
	if err != nil {
		t.Fatal(err)
	}
	example := string(data)
	cases := []struct {
		name, rules, wantErr string
	}{
		{"example", example, ""},
		{"no input path", strings.Replace(example, "/var/log/nginx/access.log", "/logs/*.log", 1), `"path: /var/log/nginx/access.log" 0 times`},
		{"start_at twice", example + "# start_at: end\n", `"start_at: end" 2 times`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := ServeRulesFrom([]byte(c.rules), "/tmp/x/access.log")
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("error %v, want one holding %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			// Only the two lines of the input change, in place.
			was, is := strings.Split(c.rules, "\n"), strings.Split(string(got), "\n")
			if len(was) != len(is) {
				t.Fatalf("%d lines became %d", len(was), len(is))
			}
			var changed []string
			for i := range was {
				if was[i] != is[i] {
					changed = append(changed, strings.TrimSpace(is[i]))
				}
			}
			if want := []string{"path: /tmp/x/access.log", "start_at: beginning"}; !slices.Equal(changed, want) {
				t.Errorf("changed lines %q, want %q", changed, want)
			}
		})
	}
}
