package results

import (
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
)

// KeyedSplit is one of the keyed mode's split cases (poolbench
// -mode=keyed, -keyed-cases=steady,shifting): a few tenant databases on a
// server with room for every contender's connections, many workers
// picking a tenant per operation by a Zipf law, and the same connections
// shared by a keyed pool against the same number split statically, one
// pool of one connection per tenant. In the shifting case the tenants'
// ranks in the law are dealt again every few seconds.
type KeyedSplit struct {
	Name     string             `json:"name"` // "steady", "shifting"
	Settings KeyedSplitSettings `json:"settings"`
	// Server describes the server the case ran on: "PostgreSQL 15.20, a
	// private cluster on 127.0.0.1".
	Server string `json:"server,omitempty"`
	// ConnectNs is what a new connection costs on that server: the median
	// of a few connects made one after the other before the load, each
	// with its first query.
	ConnectNs int64 `json:"connect_ns,omitempty"`
	// Baseline is the contender the others are compared with, round by
	// round: the static split.
	Baseline string `json:"baseline"`
	// Results holds one entry per contender, in the order of the first
	// round.
	Results []KeyedSplitResult `json:"results"`
	// Skipped says why the case did not run, if it did not.
	Skipped []Skip `json:"skipped,omitempty"`
}

// KeyedSplitSettings shaped a split case.
type KeyedSplitSettings struct {
	Tenants int `json:"tenants"` // databases
	Workers int `json:"workers"` // goroutines, each running operations back to back
	// ZipfS is the exponent of the tenants' popularity: the tenant of rank
	// k (from 1) is picked with a probability proportional to k^-ZipfS.
	ZipfS float64 `json:"zipf_s"`
	// TxEvery says that one operation in TxEvery, drawn at random, is a
	// short transaction (BEGIN, two SELECTs, COMMIT); the others are one
	// SELECT.
	TxEvery int `json:"tx_every"`
	// ShiftNs is how often the tenants' ranks are dealt again (a random
	// permutation, the same for every contender of a round); 0: never.
	ShiftNs int64 `json:"shift_ns,omitempty"`
	// DurationNs is how long each contender runs per round; WarmupNs the
	// start of it that the steady-state figures leave out.
	DurationNs int64 `json:"duration_ns"`
	WarmupNs   int64 `json:"warmup_ns"`
	// DeadlineNs bounds every operation, acquire included (a context
	// deadline).
	DeadlineNs int64 `json:"deadline_ns"`
	// PollNs is the interval at which the contender's connections on the
	// server are counted.
	PollNs int64 `json:"poll_ns"`
	Rounds int   `json:"rounds"`
}

// Share is the part of the operations that goes to the tenant of rank k
// (from 0) under the Zipf law of the settings.
func (s KeyedSplitSettings) Share(k int) float64 {
	return KeyedSettings{Tenants: s.Tenants, ZipfS: s.ZipfS}.Share(k)
}

// KeyedSplitResult is one contender of a split case.
type KeyedSplitResult struct {
	Contender string `json:"contender"` // "poolkit keyed, MaxSize 20"
	// Key is the contender's short name, in Go benchmark metrics:
	// "keyed20", "static".
	Key   string `json:"key"`
	Setup string `json:"setup"` // how it is configured, for the page
	// Evicts says that the contender closes idle connections of one
	// tenant to make room for another's (Round.Evictions counts them).
	Evicts bool              `json:"evicts,omitempty"`
	Rounds []KeyedSplitRound `json:"rounds"`
}

// KeyedSplitRound is one run of a contender in a split case.
type KeyedSplitRound struct {
	Round    int `json:"round"`    // 0-based round number
	Position int `json:"position"` // 0-based place in the round's order
	// WallNs is from the start of the load to the last worker's return.
	WallNs int64 `json:"wall_ns"`
	// Ops is the operations started, Transactions those of them that were
	// transactions. Failed is those that returned an error; TooMany those
	// of them that the server refused a connection for (SQLSTATE 53300);
	// Timeouts those that ran out of their deadline; WrongDatabase those
	// answered from another database than their tenant's, which a correct
	// pool never does.
	Ops           int64 `json:"ops"`
	Transactions  int64 `json:"transactions"`
	Failed        int64 `json:"failed"`
	TooMany       int64 `json:"too_many_clients"`
	Timeouts      int64 `json:"timeouts,omitempty"`
	WrongDatabase int64 `json:"wrong_database,omitempty"`
	// P50Ns and P99Ns are the median and the 99th percentile of a
	// successful operation as the caller sees it (acquire, queries,
	// release), over every tenant; 0 where none succeeded.
	P50Ns int64 `json:"p50_ns"`
	P99Ns int64 `json:"p99_ns"`
	// Acquires is the connections the contender handed out and Connects
	// the connections it tried to open, those refused included (poolkit's
	// Stats().Acquires and Connects; the sums of pgxpool's
	// Stat().AcquireCount() and NewConnsCount()); SteadyAcquires and
	// SteadyConnects the same after the warm-up (KeyedSplitSettings.WarmupNs).
	Acquires       int64 `json:"acquires"`
	Connects       int64 `json:"connects"`
	SteadyAcquires int64 `json:"steady_acquires"`
	SteadyConnects int64 `json:"steady_connects"`
	// Evictions counts the idle connections the contender closed to make
	// room for another tenant's, by reason: the name of the pool's
	// constant ("CloseEvict") and Stats().ClosedBy of it. Empty for a
	// contender that does not evict (KeyedSplitResult.Evicts).
	Evictions map[string]int64 `json:"evictions,omitempty"`
	// MaxBackends is the most connections of the contender the server had
	// at once (by their application_name), over Polls counts of
	// pg_stat_activity.
	MaxBackends int `json:"max_backends"`
	Polls       int `json:"polls"`
	// FirstError is the text of the first error, if any; FirstOther that
	// of the first error other than a refused connection.
	FirstError string `json:"first_error,omitempty"`
	FirstOther string `json:"first_other_error,omitempty"`
}

// QueriesPerSec is the round's successful operations per second.
func (r KeyedSplitRound) QueriesPerSec() float64 {
	if r.WallNs <= 0 {
		return math.NaN()
	}
	return float64(r.Ops-r.Failed) / (float64(r.WallNs) / 1e9)
}

// ConnectsPerAcquire is Connects / Acquires; NaN for no acquire.
func (r KeyedSplitRound) ConnectsPerAcquire() float64 { return per(r.Connects, r.Acquires) }

// SteadyConnectsPerAcquire is ConnectsPerAcquire after the warm-up.
func (r KeyedSplitRound) SteadyConnectsPerAcquire() float64 {
	return per(r.SteadyConnects, r.SteadyAcquires)
}

// EvictionsTotal is the evictions of every reason.
func (r KeyedSplitRound) EvictionsTotal() int64 {
	var n int64
	for _, v := range r.Evictions {
		n += v
	}
	return n
}

func per(n, d int64) float64 {
	if d <= 0 {
		return math.NaN()
	}
	return float64(n) / float64(d)
}

// nanosOrNaN is ns, or NaN for 0 (no successful operation).
func nanosOrNaN(ns int64) float64 {
	if ns <= 0 {
		return math.NaN()
	}
	return float64(ns)
}

// Ratio is r's successful operations per second over the baseline's, each
// round's ratio taken within the round: the median and range over the
// rounds both ran in. NaN where there are none.
func (c KeyedSplit) Ratio(r KeyedSplitResult) Spread {
	i := slices.IndexFunc(c.Results, func(x KeyedSplitResult) bool { return x.Contender == c.Baseline })
	if i < 0 {
		return spreadOf(nil)
	}
	base := map[int]float64{}
	for _, k := range c.Results[i].Rounds {
		base[k.Round] = k.QueriesPerSec()
	}
	var ratios []float64
	for _, k := range r.Rounds {
		if b, ok := base[k.Round]; ok && b > 0 {
			ratios = append(ratios, k.QueriesPerSec()/b)
		}
	}
	return spreadOf(nanOmitted(ratios))
}

// KeyedSplitSummary is what the tables show of a KeyedSplitResult: medians
// over the rounds, and the range where there are several.
type KeyedSplitSummary struct {
	Rounds                           int
	Ratio, QueriesPerSec             Spread
	P50, P99                         Spread // ns
	Failed, TooMany, Timeouts        Spread
	WrongDatabase                    Spread
	ConnectsPerAcquire, SteadyPerAcq Spread
	Evictions                        Spread            // NaN where the contender does not evict
	EvictionsBy                      map[string]Spread // by reason, where the contender evicts
	MaxBackends                      Spread
	FirstError, FirstOther           string
}

// Summarize summarises r, one of c's results, over its rounds.
func (c KeyedSplit) Summarize(r KeyedSplitResult) KeyedSplitSummary {
	s := KeyedSplitSummary{Rounds: len(r.Rounds), Ratio: c.Ratio(r)}
	var qps, p50, p99, failed, tooMany, timeouts, wrong, cpa, steady, evict, backends []float64
	reasons := map[string][]float64{}
	for _, k := range r.Rounds {
		for name := range k.Evictions {
			reasons[name] = nil
		}
	}
	for _, k := range r.Rounds {
		qps = append(qps, k.QueriesPerSec())
		p50, p99 = append(p50, nanosOrNaN(k.P50Ns)), append(p99, nanosOrNaN(k.P99Ns))
		failed = append(failed, float64(k.Failed))
		tooMany = append(tooMany, float64(k.TooMany))
		timeouts = append(timeouts, float64(k.Timeouts))
		wrong = append(wrong, float64(k.WrongDatabase))
		cpa, steady = append(cpa, k.ConnectsPerAcquire()), append(steady, k.SteadyConnectsPerAcquire())
		if r.Evicts {
			evict = append(evict, float64(k.EvictionsTotal()))
			for name := range reasons {
				reasons[name] = append(reasons[name], float64(k.Evictions[name]))
			}
		}
		backends = append(backends, float64(k.MaxBackends))
		if s.FirstError == "" {
			s.FirstError = k.FirstError
		}
		if s.FirstOther == "" {
			s.FirstOther = k.FirstOther
		}
	}
	s.QueriesPerSec, s.P50, s.P99 = spreadOf(nanOmitted(qps)), spreadOf(nanOmitted(p50)), spreadOf(nanOmitted(p99))
	s.Failed, s.TooMany, s.Timeouts, s.WrongDatabase = spreadOf(failed), spreadOf(tooMany), spreadOf(timeouts), spreadOf(wrong)
	s.ConnectsPerAcquire, s.SteadyPerAcq = spreadOf(nanOmitted(cpa)), spreadOf(nanOmitted(steady))
	s.Evictions, s.MaxBackends = spreadOf(evict), spreadOf(backends)
	if r.Evicts {
		s.EvictionsBy = map[string]Spread{}
		for name, xs := range reasons {
			s.EvictionsBy[name] = spreadOf(xs)
		}
	}
	return s
}

// KeyedSplitHeader names the columns of KeyedSplitRow.
var KeyedSplitHeader = []string{"contender", "queries/s ÷ static split", "queries/s", "p50", "p99",
	"errors", "of them 53300", "connects per acquire", "after the warm-up", "evictions", "most backends"}

// KeyedSplitRow is the cells of r, one of c's results: medians over the
// rounds, with the range where they differ.
func KeyedSplitRow(c KeyedSplit, r KeyedSplitResult) []string {
	s := c.Summarize(r)
	ratio := SpreadCell(s.Ratio, SplitRatio)
	if r.Contender == c.Baseline {
		ratio = "1 (baseline)"
	}
	return []string{r.Contender, ratio, SpreadCell(s.QueriesPerSec, Rate), SpreadCell(s.P50, Nanos), SpreadCell(s.P99, Nanos),
		SpreadCell(s.Failed, Count), SpreadCell(s.TooMany, Count),
		SpreadCell(s.ConnectsPerAcquire, PerAcquire), SpreadCell(s.SteadyPerAcq, PerAcquire),
		EvictionsCell(r, s), SpreadCell(s.MaxBackends, Count)}
}

// EvictionsCell is the evictions of a contender: "n/a" where it does not
// evict, else the total, followed by each reason's where there are
// several.
func EvictionsCell(r KeyedSplitResult, s KeyedSplitSummary) string {
	if !r.Evicts {
		return "n/a"
	}
	cell := SpreadCell(s.Evictions, Count)
	if len(s.EvictionsBy) > 1 {
		var parts []string
		for _, name := range slices.Sorted(maps.Keys(s.EvictionsBy)) {
			parts = append(parts, name+" "+SpreadCell(s.EvictionsBy[name], Count))
		}
		cell += " (" + strings.Join(parts, ", ") + ")"
	}
	return cell
}

// SplitRatio formats a ratio of throughputs: two significant figures
// below 1 ("0.0083×", "0.56×"), three above ("1.23×", "10.5×").
func SplitRatio(x float64) string {
	switch {
	case math.IsNaN(x):
		return "—"
	case x < 0.995:
		return fixed(x, 2) + "×"
	}
	return Ratio3(x) + "×"
}

// PerAcquire formats connects per acquire: three significant figures,
// two below a thousandth ("0.362", "0.00049"), "0" for none.
func PerAcquire(x float64) string {
	switch {
	case math.IsNaN(x):
		return "—"
	case x < 0.001:
		return fixed(x, 2)
	}
	return fixed(x, 3)
}

// fixed formats x >= 0 with sig significant figures, without an exponent.
func fixed(x float64, sig int) string {
	if x == 0 {
		return "0"
	}
	d := max(0, sig-1-int(math.Floor(math.Log10(x))))
	return strconv.FormatFloat(x, 'f', d, 64)
}

// KeyedSplitLine says in one line how a split case ran.
func KeyedSplitLine(c KeyedSplit) string {
	st := c.Settings
	shift := "the same hottest tenants throughout"
	if st.ShiftNs > 0 {
		shift = fmt.Sprintf("the tenants' ranks dealt again every %v", dur(st.ShiftNs))
	}
	return fmt.Sprintf("%d tenant databases, Zipf s=%.2g, %s; %d goroutines, operations back to back for %v each "+
		"(1 in %d a transaction), %v deadline, steady state after %v; %d round(s)",
		st.Tenants, st.ZipfS, shift, st.Workers, dur(st.DurationNs), st.TxEvery, dur(st.DeadlineNs), dur(st.WarmupNs), st.Rounds)
}

// WriteKeyedSplitText writes a split case as a plain-text table.
func WriteKeyedSplitText(w io.Writer, c KeyedSplit) error {
	fmt.Fprintf(w, "\nKeyed/Tenants=%d/Case=%s\n  %s\n", c.Settings.Tenants, c.Name, KeyedSplitLine(c))
	if c.Server != "" {
		fmt.Fprintf(w, "  against %s", c.Server)
		if c.ConnectNs > 0 {
			fmt.Fprintf(w, ", where a connect costs %s", Nanos(float64(c.ConnectNs)))
		}
		fmt.Fprintln(w)
	}
	for _, s := range c.Skipped {
		fmt.Fprintf(w, "skipped: %s\n", SkipLine(s))
	}
	if len(c.Results) == 0 {
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "  %s\n", strings.Join(KeyedSplitHeader, "\t"))
	for _, r := range c.Results {
		fmt.Fprintf(tw, "  %s\n", strings.Join(KeyedSplitRow(c, r), "\t"))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, r := range c.Results {
		s := c.Summarize(r)
		if s.FirstError != "" {
			fmt.Fprintf(w, "  %s, first error: %s\n", r.Contender, ScrubPaths(s.FirstError))
		}
		if s.FirstOther != "" && s.FirstOther != s.FirstError {
			fmt.Fprintf(w, "  %s, first other error: %s\n", r.Contender, ScrubPaths(s.FirstOther))
		}
	}
	return nil
}
