package config

import (
	"reflect"
	"testing"

	"github.com/logwindow/logwindow_exporter/config/quantity"
)

// TestTop checks what `top:` makes of a rule: the ranked label leaves Labels for Items,
// and capacity defaults to 100·k.
func TestTop(t *testing.T) {
	for _, tc := range []struct {
		name, top string
		want      quantity.Top
	}{
		{"defaults", "{label: path, k: 10}", quantity.Top{Label: "path", Item: 1, K: 10, Capacity: 1000}},
		{"everything", "{label: path, k: 3, min: 50, capacity: 7}", quantity.Top{Label: "path", Item: 1, K: 3, Min: 50, Capacity: 7}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Parse([]byte(`
rules:
  - name: hot
    match: '(?P<host>\S+) (?P<path>\S+)'
    labels: {vhost: '${host}', path: 'p:${path}'}
    top: `+tc.top+`
`), "top.yaml")
			if err != nil {
				t.Fatal(err)
			}
			r := c.Rules[0]
			if r.Top == nil || *r.Top != tc.want {
				t.Fatalf("Top = %+v, want %+v", r.Top, tc.want)
			}
			if len(r.Labels) != 1 || r.Labels[0].Name != "vhost" {
				t.Errorf("Labels = %+v, want vhost alone", r.Labels)
			}
			want := []Item{{Label: true, Template: Template{{Literal: "p:", Capture: -1}, {Capture: 2}}}}
			if !reflect.DeepEqual(r.Items, want) {
				t.Errorf("Items = %+v, want %+v", r.Items, want)
			}
			if got := len(r.Options().Summaries); got != 1 {
				t.Errorf("%d summary kinds, want the top values'", got)
			}
		})
	}
}
