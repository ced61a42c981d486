// Package reference holds what the reference-model tests of several packages compute the
// same way: the behaviour the docs promise, written from them rather than from the code under
// test, so that a model cannot share a mistake with the wheels it checks.
package reference

import "time"

// SummaryEdge returns the oldest second a window of a summary (quantiles, distinct values,
// top values) holds at second now: the docs let a window's old edge be served by slots up to
// 10 s wide for windows up to 5m, a minute up to 1h and an hour beyond (days beyond 300h),
// aligned to absolute time, so the window reaches back to the start of the slot holding
// its oldest second.
func SummaryEdge(now int64, window time.Duration) int64 {
	sec := int64(window / time.Second)
	var step int64
	switch {
	case sec <= 300:
		step = 10
	case sec <= 3600:
		step = 60
	case sec <= 300*3600:
		step = 3600
	default:
		step = 86400
	}
	edge := now - sec + 1
	return edge - (edge%step+step)%step
}
