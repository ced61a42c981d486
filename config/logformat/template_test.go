package logformat

import (
	"slices"
	"strings"
	"testing"
)

// TestTemplateMembers: only a member whose text is one variable is a field; a member of
// literal text, even empty, is read but not captured.
func TestTemplateMembers(t *testing.T) {
	f, err := ParseNginx(`{"k":"abc","e":"","s":"$status","m":"$a $b"}`, EscapeJSON)
	if err != nil {
		t.Fatal(err)
	}
	if got := f.Names(); !slices.Equal(got, []string{"status", "status_class"}) {
		t.Errorf("captures %v, want status and its class", got)
	}
}

// TestTemplateAsJSON: a member's key is found in the lines by its JSON value, escapes
// decoded, as every JSON reader finds it; a key an object has twice, which readers keep
// only the last member of, and a string or literal no JSON reader reads are errors, as
// no line nginx writes with them would be JSON.
func TestTemplateAsJSON(t *testing.T) {
	for _, c := range []struct {
		name, text string
		path       []string // of $status; nil: an error
		err        string
	}{
		{"escaped letter", `{"st\u0061tus":"$status"}`, []string{"status"}, ""},
		{"escaped slash and quote", `{"a\/b\"c":{"d":"$status"}}`, []string{`a/b"c`, "d"}, ""},
		{"a dot is part of a key", `{"http.status":"$status"}`, []string{"http.status"}, ""},
		{"one key in two objects", `{"a":{"a":"$status"}}`, []string{"a", "a"}, ""},
		{"a key twice", `{"a":"$status","b":1,"a":"$request_time"}`, nil, `the key "a" is in the object twice`},
		{"a key twice once escaped", `{"a":"$status","\u0061":"x"}`, nil, `the key "a" is in the object twice`},
		{"a nested key twice", `{"h":{"s":"$status"},"h":{"t":"$request_time"}}`, nil, `the key "h" is in the object twice`},
		{"a bad escape in a key", `{"\q":"$status"}`, nil, "not a JSON string"},
		{"a bad escape in a value", `{"s":"$status","t":"\q"}`, nil, "not a JSON string"},
		{"a raw tab in a value", "{\"s\":\"$status\",\"t\":\"a\tb\"}", nil, "not a JSON string"},
		{"literals", `{"s":"$status","n":-1.5e3,"t":[true,false,null]}`, []string{"s"}, ""},
		{"a bad literal", `{"s":"$status","b":tru}`, nil, `"tru" is not a JSON value`},
		{"a number with a leading zero", `{"s":$status,"b":01}`, nil, `"01" is not a JSON value`},
		{"a literal with a variable", `{"s":"$status","b":1$uri}`, nil, `"1$uri" is not a JSON value`},
	} {
		t.Run(c.name, func(t *testing.T) {
			f, err := ParseNginx(c.text, EscapeJSON)
			if c.path == nil {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("error %v, want one saying %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			i := slices.IndexFunc(f.Fields, func(fl Field) bool { return fl.Name == "status" })
			if i < 0 || !slices.Equal(f.Fields[i].Path, c.path) {
				t.Errorf("fields %+v, want status at %q", f.Fields, c.path)
			}
		})
	}
}
