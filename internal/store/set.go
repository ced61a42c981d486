package store

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/logwindow/logwindow_exporter/config"
)

// Set is the series state of one config: what the sinks write to and the exposition reads.
// It is immutable after NewSetWith; the stores it points to are shared with the Set it was
// built from, which is what keeps writers of the previous Set safe during a reload.
type Set struct {
	rules []Rule
	// oldest is the second of the oldest line an event-time rule placed in a wheel since
	// the exporter started (math.MaxInt64 before the first); every Set built by reloads
	// shares it.
	oldest *atomic.Int64
	// mem is the process-wide bound on series memory, shared likewise.
	mem *memory
	// shards is the number of shards of writers of every store (see Series), and sinks
	// counts the sinks made, to deal them to shards in turn; both shared likewise, so that
	// a store taken over has the shards of the Set it was made by, and the sinks inputs
	// take after a reload stay on shards of their own.
	shards int
	sinks  *atomic.Uint32
}

// nextShard is the shard of a new sink.
func (s *Set) nextShard() uint8 {
	return uint8((s.sinks.Add(1) - 1) % uint32(s.shards))
}

// SetOptions are what a Set takes besides the config.
type SetOptions struct {
	// MaxBytes bounds the memory of the series of all rules (--series.max-bytes): past it,
	// a new label set is folded into its rule's overflow series, as past the rule's budget.
	// 0 is no bound.
	MaxBytes int64
	// Shards is the number of shards of writers of a Set built without a previous one;
	// 0 is one per processor (GOMAXPROCS), at most MaxShards. Tests and benchmarks set it,
	// so that their sinks have shards of their own whatever the machine.
	Shards int
	// Logger receives what the stores log: a rule that starts folding new label sets into
	// its overflow series (see FoldLogEvery). nil discards it. A store taken over from the
	// previous Set keeps the Logger it was made with.
	Logger *slog.Logger
}

// Rule is one rule of a Set: the rule as this config defines it and its store
// (possibly inherited). What the rule's families are called is the exposition's.
type Rule struct {
	rule   *config.Rule
	budget budget
	store  *store
}

// NewSetWith builds the state for cfg. Rules whose Fingerprint equals a rule's of prev take
// over its store, keeping their series, totals and drop counters; the others start empty.
// The fingerprint covers the windows and aggregations, so a kept store's layout is the
// one the rule asks for; help text and the series budget may change.
//
// prev may be nil. prev stays usable and unchanged: writers still holding its sinks keep
// writing to the stores both Sets share, and only rules that changed or were removed lose
// those in-flight lines. A Set that fails to build changes nothing.
func NewSetWith(cfg *config.Config, prev *Set, opts SetOptions) (*Set, error) {
	inherit := map[string]*store{}
	oldest := new(atomic.Int64)
	oldest.Store(math.MaxInt64)
	mem := new(memory)
	sinks := new(atomic.Uint32)
	shards := opts.Shards
	if shards <= 0 {
		shards = min(runtime.GOMAXPROCS(0), MaxShards)
	}
	if prev != nil {
		oldest, mem, sinks, shards = prev.oldest, prev.mem, prev.sinks, prev.shards
		for _, r := range prev.rules {
			inherit[r.store.fingerprint] = r.store
		}
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Set{rules: make([]Rule, 0, len(cfg.Rules)), oldest: oldest, mem: mem, shards: shards, sinks: sinks}
	// The stores built here charge built until s is whole, then mem, which prev's writers
	// share: a Set that fails, or panics (a bug, which the pipeline makes a failed reload),
	// has charged nothing of it.
	built := new(memory)
	var errs []error
	for _, r := range cfg.Rules {
		st := inherit[r.Fingerprint]
		if st != nil {
			// One store serves one rule, even if two rules had equal fingerprints.
			delete(inherit, r.Fingerprint)
		} else {
			var err error
			if st, err = newStore(r, oldest, built, shards, log); err != nil {
				errs = append(errs, fmt.Errorf("rule %q: %w", r.Name, err))
				continue
			}
		}
		b := budget{limit: cfg.Global.MaxSeriesPerRule, ttl: int64(cfg.Global.CounterTTL / time.Second)}
		s.rules = append(s.rules, Rule{rule: r, budget: b, store: st})
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	for _, r := range s.rules {
		if r.store.mem == built {
			r.store.mem = mem
		}
	}
	mem.used.Add(built.used.Load())
	// The stores of prev that s does not take over are gone once s is in use (a Set that
	// fails or is never used is the caller's to drop). The pipeline puts in use every Set
	// it builds but one whose reload a Stop overtook (it builds outside the lock Stop
	// takes), after which nothing is written or charged but the final snapshot's reading.
	for _, st := range inherit {
		st.drop()
	}
	mem.max.Store(opts.MaxBytes)
	return s, nil
}
