// Package reference holds what the reference-model tests of several packages compute the
// same way: the behaviour the docs promise, written from them rather than from the code under
// test, so that a model cannot share a mistake with the wheels it checks.
package reference

import "time"

// SummaryStep returns the width of the slots the docs say serve a window of a summary:
// 10 s for windows up to 5m, a minute up to 1h, an hour up to 300h and a day beyond.
func SummaryStep(window time.Duration) int64 {
	switch sec := int64(window / time.Second); {
	case sec <= 300:
		return 10
	case sec <= 3600:
		return 60
	case sec <= 300*3600:
		return 3600
	}
	return 86400
}

// SummaryEdge returns the oldest second a window of a summary (quantiles, distinct values,
// top values) holds at second now: the window reaches back to the start of the slot
// (SummaryStep wide, aligned to absolute time) holding its oldest second.
func SummaryEdge(now int64, window time.Duration) int64 {
	step := SummaryStep(window)
	edge := now - int64(window/time.Second) + 1
	return edge - (edge%step+step)%step
}
