package main

import (
	"strconv"
	"strings"
)

// tally is what a generated log holds, counted by plain string splitting: it shares no
// code with the exporter (nor its regex), so it is an independent check of the `_total`s.
type tally struct {
	lines int
	// unparsed counts lines this splitter cannot read; the generator writes none.
	unparsed int

	requests     map[requestKey]float64 // by method and status
	serverErrors map[string]float64     // 5xx lines by status
	bytes        map[string]float64     // $body_bytes_sent by status class ("2xx")
	duration     map[string]float64     // $request_time by status class
	// upstream is the sum of the first $upstream_response_time of the lines that have one.
	upstream float64

	// paths counts lines by path (the request target up to '?'), in order of first sight.
	paths     map[string]float64
	pathOrder []string
}

type requestKey struct{ method, status string }

func newTally() *tally {
	return &tally{
		requests:     map[requestKey]float64{},
		serverErrors: map[string]float64{},
		bytes:        map[string]float64{},
		duration:     map[string]float64{},
		paths:        map[string]float64{},
	}
}

// access is the fields of one access-log line the benchmark's rules read.
type access struct {
	method, path, status string
	bytes, requestTime   float64
	upstream             string // the first upstream time, "-" when none
}

// splitAccess reads a line of nginx's main format,
//
//	addr - user [time] "METHOD target proto" status bytes "referer" "agent" rt upstream[, upstream]
//
// by its separators alone. It relies on what the generator guarantees (no '"' inside the
// quoted fields), which is why it can be this simple.
func splitAccess(line string) (access, bool) {
	var a access
	_, rest, ok := strings.Cut(line, `] "`)
	if !ok {
		return a, false
	}
	request, rest, ok := strings.Cut(rest, `" `)
	if !ok {
		return a, false
	}
	req := strings.Fields(request)
	if len(req) != 3 {
		return a, false
	}
	a.method = req[0]
	a.path, _, _ = strings.Cut(req[1], "?")
	nums := strings.SplitN(rest, " ", 3)
	if len(nums) != 3 || len(nums[0]) != 3 {
		return a, false
	}
	a.status = nums[0]
	var err error
	if a.bytes, err = strconv.ParseFloat(nums[1], 64); err != nil {
		return a, false
	}
	i := strings.LastIndexByte(line, '"')
	timings := strings.Fields(line[i+1:])
	if len(timings) < 2 {
		return a, false
	}
	if a.requestTime, err = strconv.ParseFloat(timings[0], 64); err != nil {
		return a, false
	}
	a.upstream = strings.TrimSuffix(timings[1], ",")
	return a, true
}

// add counts one line.
func (t *tally) add(line string) {
	t.lines++
	a, ok := splitAccess(line)
	if !ok {
		t.unparsed++
		return
	}
	class := a.status[:1] + "xx"
	t.requests[requestKey{a.method, a.status}]++
	if a.status[0] == '5' {
		t.serverErrors[a.status]++
	}
	t.bytes[class] += a.bytes
	t.duration[class] += a.requestTime
	if a.upstream[0] >= '0' && a.upstream[0] <= '9' {
		if v, err := strconv.ParseFloat(a.upstream, 64); err == nil {
			t.upstream += v
		}
	}
	if _, seen := t.paths[a.path]; !seen {
		t.pathOrder = append(t.pathOrder, a.path)
	}
	t.paths[a.path]++
}

// merge adds the counts of another file. Paths keep u's order after t's, which is the
// order a reader of t then u sees; concurrent readers interleave them unpredictably.
func (t *tally) merge(u *tally) {
	t.lines += u.lines
	t.unparsed += u.unparsed
	for k, v := range u.requests {
		t.requests[k] += v
	}
	for k, v := range u.serverErrors {
		t.serverErrors[k] += v
	}
	for k, v := range u.bytes {
		t.bytes[k] += v
	}
	for k, v := range u.duration {
		t.duration[k] += v
	}
	t.upstream += u.upstream
	for _, p := range u.pathOrder {
		if _, seen := t.paths[p]; !seen {
			t.pathOrder = append(t.pathOrder, p)
		}
		t.paths[p] += u.paths[p]
	}
}

// exampleTotals is the `_total` of every series example-rules.yaml makes of the lines (and
// the mtail program in nginx.mtail, which exports the same series), with extra copies of
// the request count (see copyRule).
func (t *tally) exampleTotals(extra int) expected {
	e := newExpected(
		"nginx_http_server_errors_total",
		"nginx_http_response_body_bytes_total",
		"nginx_http_request_duration_seconds_total",
		"nginx_http_upstream_response_time_seconds_total",
		// The path rules rank their one label (top:), so each has one series.
		"nginx_http_path_requests_total",
		"nginx_http_path_server_errors_total",
	)
	requests := []string{"nginx_http_requests_total"}
	for i := 1; i <= extra; i++ {
		requests = append(requests, copyName(i)+"_total")
	}
	e.families = append(e.families, requests...)
	for k, v := range t.requests {
		for _, name := range requests {
			e.set(v, name, "method", k.method, "status", k.status, "status_class", k.status[:1]+"xx")
		}
	}
	var requestSum, errorSum float64
	for _, v := range t.requests {
		requestSum += v
	}
	for status, v := range t.serverErrors {
		e.set(v, "nginx_http_server_errors_total", "status", status)
		errorSum += v
	}
	e.set(requestSum, "nginx_http_path_requests_total")
	e.set(errorSum, "nginx_http_path_server_errors_total")
	for class, v := range t.bytes {
		e.set(v, "nginx_http_response_body_bytes_total", "status_class", class)
	}
	for class, v := range t.duration {
		e.set(v, "nginx_http_request_duration_seconds_total", "status_class", class)
	}
	e.set(t.upstream, "nginx_http_upstream_response_time_seconds_total")
	return e
}

// pathTotals is the `_total` of every series of pathRule with a budget of limit series: the
// first limit paths in order of first sight have their own series, the others are folded
// into the overflow series. The order is known only when one goroutine read the lines in
// the order merge saw them, that is for a single file.
func (t *tally) pathTotals(limit int) expected {
	e := newExpected(pathRuleName + "_total")
	var overflow float64
	for i, p := range t.pathOrder {
		if i < limit {
			e.set(t.paths[p], pathRuleName+"_total", "path", p)
		} else {
			overflow += t.paths[p]
		}
	}
	if overflow > 0 {
		e.set(overflow, pathRuleName+"_total", "path", "__overflow__")
	}
	return e
}

// pathSeries is how many series pathRule holds with a budget of limit: the overflow series
// counts too.
func (t *tally) pathSeries(limit int) int {
	if len(t.pathOrder) > limit {
		return limit + 1
	}
	return len(t.pathOrder)
}
