package config

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"slices"
	"strconv"
)

// fingerprint hashes every field that shapes a rule's series and windows, so that a reload
// keeps window state exactly when the state would mean the same thing under the new rule.
// Left out on purpose: help (text only), the window label text (the same windows under
// other names) and the series budget (a store can apply a new budget to the series it has);
// the test TestFingerprintCoversRule lists every field of Rule either way.
func fingerprint(r *Rule) string {
	h := sha256.New()
	field := func(s string) {
		// Length-prefixed, so that ("ab","c") and ("a","bc") hash differently.
		var n [binary.MaxVarintLen64]byte
		h.Write(n[:binary.PutUvarint(n[:], uint64(len(s)))])
		h.Write([]byte(s))
	}
	field(r.Name)
	field(r.Expanded)
	template := func(t Template) {
		field(strconv.Itoa(len(t)))
		for _, p := range t {
			field(p.Literal)
			field(strconv.Itoa(p.Capture))
		}
	}
	field(strconv.Itoa(len(r.Labels)))
	for _, l := range r.Labels {
		field(l.Name)
		template(l.Template)
	}
	// What a summary counts or ranks is its state's meaning, as a label's template is.
	field(strconv.Itoa(len(r.Items)))
	for _, it := range r.Items {
		field(strconv.FormatBool(it.Label))
		template(it.Template)
	}
	// Which label is ranked and in how many counters; k and min only choose what is shown.
	if r.Top != nil {
		field(r.Top.Label)
		field(strconv.Itoa(r.Top.Capacity))
	} else {
		field("")
		field("")
	}
	field(strconv.Itoa(len(r.Where)))
	for _, w := range r.Where {
		field(w.CaptureName)
		field(w.Regexp.String())
	}
	field(r.ValueName)
	if r.Timestamp != nil {
		field(r.Timestamp.CaptureName)
		field(r.Timestamp.Layout)
		if r.Timestamp.Location != nil {
			// Only when given, so that the rules written before the key keep the
			// fingerprints their snapshots were saved under.
			field("location " + r.Timestamp.Location.String())
		}
		field(strconv.FormatBool(r.Timestamp.Unix))
	} else {
		field("")
		field("")
		field("")
	}
	field(strconv.Itoa(len(r.Windows)))
	for _, w := range r.Windows {
		field(w.String())
	}
	field(string(r.WindowEnd))
	for _, on := range r.Aggregations.Flags() {
		field(strconv.FormatBool(on))
	}
	field(strconv.FormatBool(r.KeepsNativeSketch()))
	for _, fs := range [][]float64{r.Quantiles, r.Buckets} {
		field(strconv.Itoa(len(fs)))
		for _, f := range fs {
			field(strconv.FormatFloat(f, 'g', -1, 64))
		}
	}
	inputs := slices.Sorted(slices.Values(r.Inputs))
	field(strconv.Itoa(len(inputs)))
	for _, in := range inputs {
		field(in)
	}
	// The initial label sets are series the store pins at its creation.
	field(strconv.Itoa(len(r.Initial)))
	for _, set := range r.Initial {
		for _, v := range set {
			field(v)
		}
	}
	field(r.Format.String())
	field(strconv.Itoa(len(r.Fields)))
	for _, f := range r.Fields {
		field(f.Capture)
		field(f.Path)
	}
	field(strconv.Itoa(len(r.WhereNot)))
	for _, w := range r.WhereNot {
		field(w.CaptureName)
		field(w.Regexp.String())
	}
	// Which names the capture indexes past the line's stand for.
	field(strconv.Itoa(len(r.PathCaptures)))
	for _, name := range r.PathCaptures {
		field(name)
	}
	// The format decides how values are unescaped and what is derived from them (its
	// regex is Expanded, its JSON fields are Fields).
	if f := r.LogFormat; f != nil {
		field(strconv.Itoa(int(f.Server)))
		field(f.Escape.String())
		field(f.Text)
	} else {
		field("")
		field("")
		field("")
	}
	// Which formats a rule reading candidates reads lines of.
	field(strconv.Itoa(len(r.Candidates)))
	for _, f := range r.Candidates {
		field(f.ID())
	}
	// A rewrite changes which series (or ranked value) a line counts in.
	field(strconv.Itoa(len(r.Rewrites)))
	for _, rw := range r.Rewrites {
		field(rw.Label)
		field(rw.Regexp.String())
		field(rw.Replacement)
	}
	return hex.EncodeToString(h.Sum(nil)[:16])
}
