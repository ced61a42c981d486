package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"strings"
)

// formatNames are the log formats -formats accepts; text is the generator's own.
var formatNames = []string{"text", "json", "logfmt"}

// jsonFields are the fields of a line as example-rules-json.yaml's log_format writes them
// (escape=json), in that order.
var jsonFields = []string{"time_local", "remote_addr", "request_method", "request_uri", "request_path", "status", "status_class",
	"body_bytes_sent", "request_time", "upstream_response_time", "http_referer", "http_user_agent"}

// structuredFields splits a generated line into jsonFields' values, taking every number as
// the text it has in the line, so the structured logs hold exactly the text log's records.
func structuredFields(line string) ([]string, bool) {
	a, ok := splitAccess(line)
	if !ok {
		return nil, false
	}
	addr, _, _ := strings.Cut(line, " ")
	open, end := strings.IndexByte(line, '['), strings.IndexByte(line, ']')
	_, rest, _ := strings.Cut(line, `] "`)
	request, rest, _ := strings.Cut(rest, `" `)
	req := strings.Fields(request)
	nums := strings.SplitN(rest, " ", 3)
	quoted := strings.Split(nums[2], `"`) // "", referer, " ", agent, " rt upstream"
	if open < 0 || end < open || len(quoted) != 5 {
		return nil, false
	}
	timings := strings.Fields(quoted[4])
	path, _, _ := strings.Cut(req[1], "?")
	return []string{line[open+1 : end], addr, a.method, req[1], path, a.status, a.status[:1],
		nums[1], timings[0], a.upstream, quoted[1], quoted[3]}, true
}

// convert writes the text log src as format to dst, one record per line.
func convert(src, dst, format string) error {
	return rewriteLines(src, dst, func(line, b []byte) ([]byte, error) {
		vals, ok := structuredFields(string(line))
		if !ok {
			return nil, fmt.Errorf("%s: a line the converter cannot split: %q", src, line)
		}
		switch format {
		case "json":
			b = append(b, '{')
			for i, k := range jsonFields {
				if i > 0 {
					b = append(b, ',')
				}
				b = appendQuoted(append(appendQuoted(b, k), ':'), vals[i])
			}
			b = append(b, '}')
		case "logfmt":
			for i, k := range jsonFields {
				if i > 0 {
					b = append(b, ' ')
				}
				b = append(b, k...)
				b = append(b, '=')
				if strings.ContainsAny(vals[i], " \"=\\") || vals[i] == "" {
					b = appendQuoted(b, vals[i])
				} else {
					b = append(b, vals[i]...)
				}
			}
		}
		return b, nil
	})
}

// rewriteLines writes each line of src to dst as rewrite makes it (appended to b, without
// its newline), through buffers of a MiB.
func rewriteLines(src, dst string, rewrite func(line, b []byte) ([]byte, error)) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(dst)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(out, 1<<20)
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	var b []byte
	for sc.Scan() {
		if b, err = rewrite(sc.Bytes(), b[:0]); err != nil {
			out.Close()
			return err
		}
		if _, err := w.Write(append(b, '\n')); err != nil {
			out.Close()
			return err
		}
	}
	if err := sc.Err(); err != nil {
		out.Close()
		return err
	}
	if err := w.Flush(); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// appendQuoted appends s as a JSON string, which logfmt's quoted values read alike.
func appendQuoted(b []byte, s string) []byte {
	q, _ := json.Marshal(s)
	return append(b, q...)
}
