package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"
)

// timeLayout is nginx's $time_local, as the generator writes it and example-rules.yaml
// reads it.
const timeLayout = "02/Jan/2006:15:04:05 -0700"

// generate runs gen-nginx-log.py once per output path (seeds seed, seed+1, ...), in
// parallel, and then re-dates every file so that its newest line is at now (see redate).
// It returns what each file holds, counted without the exporter's code.
func generate(python, script string, lines, seed int, paths []string, now time.Time) ([]*tally, error) {
	errs := make([]error, len(paths))
	var wg sync.WaitGroup
	for i, p := range paths {
		wg.Go(func() {
			raw := p + ".gen"
			cmd := exec.Command(python, script, strconv.Itoa(lines), strconv.Itoa(seed+i), raw)
			if out, err := cmd.CombinedOutput(); err != nil {
				errs[i] = fmt.Errorf("%s %d %d: %v\n%s", script, lines, seed+i, err, out)
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	counts := make([]*tally, len(paths))
	for i, p := range paths {
		t, err := redateFile(p+".gen", p, now)
		if err != nil {
			return nil, err
		}
		if err := os.Remove(p + ".gen"); err != nil {
			return nil, err
		}
		counts[i] = t
	}
	return counts, nil
}

// redateFile copies src to dst with every $time_local moved by the same whole number of
// seconds, so that the newest line is at now, and counts the copy.
//
// The generator starts every log on 2024-03-01. Read live from the beginning, such a log
// would be older than the longest window (24h): every event-time line would be dropped as
// late, skipping the wheels, and the benchmark would measure less than real work. Shifted to
// end now, the log looks like the last hour of a busy server read after a restart.
func redateFile(src, dst string, now time.Time) (*tally, error) {
	newest, err := newestTime(src)
	if err != nil {
		return nil, err
	}
	in, err := os.Open(src)
	if err != nil {
		return nil, err
	}
	defer in.Close()
	out, err := os.Create(dst)
	if err != nil {
		return nil, err
	}
	t, err := redate(in, out, now.Truncate(time.Second).Sub(newest))
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", src, err)
	}
	return t, nil
}

// newestTime reads the time of the last line of a generated log (its lines are in time
// order).
func newestTime(path string) (time.Time, error) {
	f, err := os.Open(path)
	if err != nil {
		return time.Time{}, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return time.Time{}, err
	}
	buf := make([]byte, min(fi.Size(), 64<<10))
	if _, err := f.ReadAt(buf, fi.Size()-int64(len(buf))); err != nil && !errors.Is(err, io.EOF) {
		return time.Time{}, err
	}
	buf = bytes.TrimRight(buf, "\n")
	last := string(buf[bytes.LastIndexByte(buf, '\n')+1:])
	lo, hi, ok := timeSpan(last)
	if !ok {
		return time.Time{}, fmt.Errorf("%s: no [time] in the last line %q", path, last)
	}
	return time.Parse(timeLayout, last[lo:hi])
}

// timeSpan finds $time_local in a line: the text between the first '[' and the next ']'.
func timeSpan(line string) (lo, hi int, ok bool) {
	lo = strings.IndexByte(line, '[') + 1
	if lo == 0 {
		return 0, 0, false
	}
	n := strings.IndexByte(line[lo:], ']')
	if n < 0 {
		return 0, 0, false
	}
	return lo, lo + n, true
}

// redate copies lines from r to w with their time moved by shift, and counts them.
func redate(r io.Reader, w io.Writer, shift time.Duration) (*tally, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	bw := bufio.NewWriterSize(w, 1<<20)
	t := newTally()
	// Consecutive lines mostly share their second: parse and format each second once.
	var lastIn, lastOut string
	for sc.Scan() {
		line := sc.Text()
		if lo, hi, ok := timeSpan(line); ok {
			if stamp := line[lo:hi]; stamp != lastIn {
				at, err := time.Parse(timeLayout, stamp)
				if err != nil {
					return nil, fmt.Errorf("line %d: %w", t.lines+1, err)
				}
				lastIn, lastOut = stamp, at.Add(shift).Format(timeLayout)
			}
			line = line[:lo] + lastOut + line[hi:]
		}
		t.add(line)
		bw.WriteString(line)
		bw.WriteByte('\n')
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return t, bw.Flush()
}
