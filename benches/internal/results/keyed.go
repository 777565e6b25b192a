package results

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"text/tabwriter"
)

// Keyed is the keyed mode of a run (poolbench -mode=keyed). Its crowded
// case: many tenant databases on one server whose max_connections is
// smaller than the tenants, clients picking a tenant per query, and pools
// of connections kept per tenant: one keyed pool bounded across the
// tenants, or a pool per tenant. Its split cases (Splits): a few tenants on
// a server with room for all, a keyed pool against a static split of the
// same connections.
type Keyed struct {
	// Settings shaped the crowded case; zero where it did not run (see
	// Crowded). Server, SetupNs, ConnectNs, Results and Skipped are its.
	Settings KeyedSettings `json:"settings"`
	// Server describes the private server the case started: "PostgreSQL
	// 15.20, a private cluster on 127.0.0.1".
	Server string `json:"server,omitempty"`
	// SetupNs is how long the server and the tenant databases took to make.
	SetupNs int64 `json:"setup_ns,omitempty"`
	// ConnectNs is what a new connection costs on the server: the median
	// of a few connects as the clients' role, made one after the other
	// before the load, each with its first query.
	ConnectNs int64 `json:"connect_ns,omitempty"`
	// Results holds one entry per contender, in the order of the first
	// round.
	Results []KeyedResult `json:"results"`
	// Skipped says why the case did not run (a server that could not be
	// started), if it did not.
	Skipped []Skip `json:"skipped,omitempty"`
	// Splits are the split cases that ran, in the order they ran.
	Splits []KeyedSplit `json:"splits,omitempty"`
}

// Crowded reports whether the run had the crowded case.
func (k Keyed) Crowded() bool { return k.Settings.Tenants > 0 }

// Split returns the split case called name.
func (k Keyed) Split(name string) (KeyedSplit, bool) {
	i := slices.IndexFunc(k.Splits, func(c KeyedSplit) bool { return c.Name == name })
	if i < 0 {
		return KeyedSplit{}, false
	}
	return k.Splits[i], true
}

// KeyedSettings shaped the keyed case.
type KeyedSettings struct {
	Tenants int `json:"tenants"` // databases, tenant_000 …
	Workers int `json:"workers"` // goroutines, each running queries back to back
	// ZipfS is the exponent of the tenants' popularity: the tenant of rank
	// k (from 1) is picked with a probability proportional to k^-ZipfS.
	ZipfS float64 `json:"zipf_s"`
	// MaxConnections and SuperuserReserved are the server's settings. The
	// clients, which are not superusers, get MaxConnections -
	// SuperuserReserved - 1 (ClientSlots): the reserved connections are a
	// count of free ones that only a superuser may take, not slots of their
	// own, so the superuser's connection that counts the server's takes one
	// of the rest.
	MaxConnections    int `json:"max_connections"`
	SuperuserReserved int `json:"superuser_reserved_connections"`
	// MaxSize and MaxSizePerKey are the keyed pool's: across the tenants,
	// and for one (0: MaxSize).
	MaxSize       int `json:"max_size"`
	MaxSizePerKey int `json:"max_size_per_key"`
	// DurationNs is how long each contender runs per round.
	DurationNs int64 `json:"duration_ns"`
	// SleepNs is what each query sleeps on the server (pg_sleep), so that
	// it holds its connection for about that long.
	SleepNs int64 `json:"sleep_ns"`
	// DeadlineNs bounds every query, acquire included (a context deadline).
	DeadlineNs int64 `json:"deadline_ns"`
	// PollNs is the interval at which the server's connections are counted.
	PollNs int64 `json:"poll_ns"`
	// MinSamples is the successful queries a tenant needs for its p99 to
	// count among the tenants' (below 100, a tenant's p99 is its maximum).
	MinSamples int `json:"min_samples"`
	Rounds     int `json:"rounds"`
}

// ClientSlots is the connections the server allows the clients, which are
// not superusers, beside the one that counts the server's.
func (s KeyedSettings) ClientSlots() int { return s.MaxConnections - s.SuperuserReserved - 1 }

// Share is the part of the queries that goes to tenant k (from 0) under
// the Zipf law of the settings.
func (s KeyedSettings) Share(k int) float64 {
	var sum float64
	for i := 1; i <= s.Tenants; i++ {
		sum += math.Pow(float64(i), -s.ZipfS)
	}
	return math.Pow(float64(k+1), -s.ZipfS) / sum
}

// KeyedResult is one contender of the keyed case.
type KeyedResult struct {
	Contender string `json:"contender"` // "poolkit keyed", "pgxpool per tenant, MaxConns 4"
	Setup     string `json:"setup"`     // how it is configured, for the page
	// Evicts says that the contender closes one tenant's idle connection
	// to make room for another's (Round.Evictions counts them).
	Evicts bool         `json:"evicts,omitempty"`
	Rounds []KeyedRound `json:"rounds"`
}

// KeyedRound is one run of a contender.
type KeyedRound struct {
	Round    int `json:"round"`    // 0-based round number
	Position int `json:"position"` // 0-based place in the round's order
	// WallNs is from the start of the load to the last worker's return.
	WallNs int64 `json:"wall_ns"`
	Ops    int64 `json:"ops"` // queries started
	// Failed is the queries that returned an error; TooMany those of them
	// that the server refused a connection for (SQLSTATE 53300, "sorry,
	// too many clients already"); Timeouts those that ran out of their
	// deadline; WrongDatabase those answered from another database than
	// their tenant's, which a correct pool never does.
	Failed        int64 `json:"failed"`
	TooMany       int64 `json:"too_many_clients"`
	Timeouts      int64 `json:"timeouts,omitempty"`
	WrongDatabase int64 `json:"wrong_database,omitempty"`
	// Connects is the connections the contender tried to open, those the
	// server refused included (pgxpool's Stat().NewConnsCount, poolkit's
	// Stats().Connects).
	Connects int64 `json:"connects"`
	// Evictions is the idle connections the contender closed to make room
	// for another tenant's (Stats.ClosedBy[pool.CloseEvict]); 0 for a
	// contender that does not evict (KeyedResult.Evicts).
	Evictions int64 `json:"evictions,omitempty"`
	// MaxServerConns is the most client connections the server had at
	// once, over Polls counts of pg_stat_activity, the counting connection
	// left out.
	MaxServerConns int `json:"max_server_conns"`
	Polls          int `json:"polls"`
	// TenantsServed is the tenants with a successful query; TenantsStarved
	// those with queries of which none succeeded; TenantsMeasured those
	// with at least MinSamples successful queries, whose p99s Acquire and
	// Query summarise.
	TenantsServed   int `json:"tenants_served"`
	TenantsStarved  int `json:"tenants_starved"`
	TenantsMeasured int `json:"tenants_measured"`
	// Acquire is the p99 of the time to get a connection; Query that of
	// the whole call as the caller sees it (acquire, query, release), over
	// each measured tenant's successful queries.
	Acquire TenantP99 `json:"acquire_p99"`
	Query   TenantP99 `json:"query_p99"`
	// FirstError is the text of the first error, if any; FirstOther that
	// of the first error other than a refused connection.
	FirstError string `json:"first_error,omitempty"`
	FirstOther string `json:"first_other_error,omitempty"`
}

// TenantP99 summarises the tenants' p99s of one latency: the worst
// tenant's, and the median over the tenants; NaN where no tenant was
// measured (written as null, which JSON has for it).
type TenantP99 struct {
	WorstNs     float64 `json:"worst_ns"`
	WorstTenant string  `json:"worst_tenant,omitempty"`
	MedianNs    float64 `json:"median_ns"`
}

// tenantP99JSON is TenantP99 as written: nil for NaN.
type tenantP99JSON struct {
	WorstNs     *float64 `json:"worst_ns"`
	WorstTenant string   `json:"worst_tenant,omitempty"`
	MedianNs    *float64 `json:"median_ns"`
}

// MarshalJSON writes NaN as null.
func (p TenantP99) MarshalJSON() ([]byte, error) {
	return json.Marshal(tenantP99JSON{WorstNs: nanNil(p.WorstNs), WorstTenant: p.WorstTenant, MedianNs: nanNil(p.MedianNs)})
}

// UnmarshalJSON reads null as NaN; like ReadJSON, it refuses unknown
// fields.
func (p *TenantP99) UnmarshalJSON(b []byte) error {
	var j tenantP99JSON
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&j); err != nil {
		return err
	}
	*p = TenantP99{WorstNs: nilNaN(j.WorstNs), WorstTenant: j.WorstTenant, MedianNs: nilNaN(j.MedianNs)}
	return nil
}

// nanNil is &x, or nil for NaN.
func nanNil(x float64) *float64 {
	if math.IsNaN(x) {
		return nil
	}
	return &x
}

// nilNaN is *p, or NaN for nil.
func nilNaN(p *float64) float64 {
	if p == nil {
		return math.NaN()
	}
	return *p
}

// QueriesPerSec is the round's successful queries per second.
func (r KeyedRound) QueriesPerSec() float64 {
	if r.WallNs <= 0 {
		return math.NaN()
	}
	return float64(r.Ops-r.Failed) / (float64(r.WallNs) / 1e9)
}

// KeyedSummary is what the tables show of a KeyedResult: medians over the
// rounds, and the range where there are several.
type KeyedSummary struct {
	Rounds                               int
	QueriesPerSec                        Spread
	Failed, TooMany, Timeouts            Spread
	WrongDatabase                        Spread
	Connects, Evictions                  Spread // Evictions NaN where the contender does not evict
	MaxServerConns                       Spread
	TenantsStarved, TenantsMeasured      Spread
	AcquireWorst, AcquireMedian          Spread // ns
	QueryWorst, QueryMedian              Spread // ns
	WorstAcquireTenant, WorstQueryTenant string // the worst tenants of the round with the median worst p99
	FirstError, FirstOther               string
}

// Summarize summarises r over its rounds.
func (r KeyedResult) Summarize() KeyedSummary {
	s := KeyedSummary{Rounds: len(r.Rounds)}
	var qps, failed, tooMany, timeouts, wrong, connects, evict, conns, starved, measured []float64
	var aw, am, qw, qm []float64
	for _, k := range r.Rounds {
		qps = append(qps, k.QueriesPerSec())
		failed = append(failed, float64(k.Failed))
		tooMany = append(tooMany, float64(k.TooMany))
		timeouts = append(timeouts, float64(k.Timeouts))
		wrong = append(wrong, float64(k.WrongDatabase))
		connects = append(connects, float64(k.Connects))
		if r.Evicts {
			evict = append(evict, float64(k.Evictions))
		}
		conns = append(conns, float64(k.MaxServerConns))
		starved = append(starved, float64(k.TenantsStarved))
		measured = append(measured, float64(k.TenantsMeasured))
		aw, am = append(aw, k.Acquire.WorstNs), append(am, k.Acquire.MedianNs)
		qw, qm = append(qw, k.Query.WorstNs), append(qm, k.Query.MedianNs)
		if s.FirstError == "" {
			s.FirstError = k.FirstError
		}
		if s.FirstOther == "" {
			s.FirstOther = k.FirstOther
		}
	}
	s.QueriesPerSec, s.Failed, s.TooMany, s.Timeouts = spreadOf(qps), spreadOf(failed), spreadOf(tooMany), spreadOf(timeouts)
	s.WrongDatabase = spreadOf(wrong)
	s.Connects, s.Evictions, s.MaxServerConns = spreadOf(connects), spreadOf(evict), spreadOf(conns)
	s.TenantsStarved, s.TenantsMeasured = spreadOf(starved), spreadOf(measured)
	s.AcquireWorst, s.AcquireMedian = spreadOf(nanOmitted(aw)), spreadOf(nanOmitted(am))
	s.QueryWorst, s.QueryMedian = spreadOf(nanOmitted(qw)), spreadOf(nanOmitted(qm))
	s.WorstAcquireTenant = worstOfMedianRound(r.Rounds, func(k KeyedRound) TenantP99 { return k.Acquire })
	s.WorstQueryTenant = worstOfMedianRound(r.Rounds, func(k KeyedRound) TenantP99 { return k.Query })
	return s
}

// nanOmitted is xs without its NaNs (rounds with no measured tenant).
func nanOmitted(xs []float64) []float64 {
	var out []float64
	for _, x := range xs {
		if !math.IsNaN(x) {
			out = append(out, x)
		}
	}
	return out
}

// worstOfMedianRound is the worst tenant of the round whose worst p99 is
// the lower median of the rounds': a tenant a round named, not a guess.
func worstOfMedianRound(rs []KeyedRound, of func(KeyedRound) TenantP99) string {
	var named []TenantP99
	for _, k := range rs {
		if p := of(k); !math.IsNaN(p.WorstNs) && p.WorstTenant != "" {
			named = append(named, p)
		}
	}
	if len(named) == 0 {
		return ""
	}
	for i := 1; i < len(named); i++ { // insertion sort: a few rounds
		for j := i; j > 0 && named[j].WorstNs < named[j-1].WorstNs; j-- {
			named[j], named[j-1] = named[j-1], named[j]
		}
	}
	return named[(len(named)-1)/2].WorstTenant
}

// KeyedHeader names the columns of KeyedRow.
var KeyedHeader = []string{"contender", "queries/s", "failed", "of them 53300", "of them timed out", "tenants starved",
	"acquire p99, worst tenant", "acquire p99, median tenant", "query p99, worst tenant", "query p99, median tenant",
	"connects", "evictions", "most server connections"}

// KeyedRow is the cells of one contender: medians over the rounds, with
// the range where they differ.
func KeyedRow(r KeyedResult) []string {
	s := r.Summarize()
	worst := func(sp Spread, tenant string) string {
		cell := SpreadCell(sp, Nanos)
		if tenant != "" && cell != "—" {
			cell += " (" + tenant + ")"
		}
		return cell
	}
	evictions := "n/a"
	if r.Evicts {
		evictions = SpreadCell(s.Evictions, Count)
	}
	return []string{r.Contender, SpreadCell(s.QueriesPerSec, Rate), SpreadCell(s.Failed, Count), SpreadCell(s.TooMany, Count),
		SpreadCell(s.Timeouts, Count), SpreadCell(s.TenantsStarved, Count),
		worst(s.AcquireWorst, s.WorstAcquireTenant), SpreadCell(s.AcquireMedian, Nanos),
		worst(s.QueryWorst, s.WorstQueryTenant), SpreadCell(s.QueryMedian, Nanos),
		SpreadCell(s.Connects, Count), evictions, SpreadCell(s.MaxServerConns, Count)}
}

// KeyedLine says in one line how the keyed case ran.
func KeyedLine(k Keyed) string {
	st := k.Settings
	return fmt.Sprintf("%d tenant databases, Zipf s=%.2g; %d goroutines, queries back to back for %v each (a %v sleep on the server), "+
		"%v deadline; server max_connections %d, %d for the clients; %d round(s)",
		st.Tenants, st.ZipfS, st.Workers, dur(st.DurationNs), dur(st.SleepNs), dur(st.DeadlineNs),
		st.MaxConnections, st.ClientSlots(), st.Rounds)
}

// WriteKeyedText writes the keyed mode's cases as plain-text tables.
func WriteKeyedText(w io.Writer, k Keyed) error {
	if k.Crowded() {
		if err := writeCrowdedText(w, k); err != nil {
			return err
		}
	}
	for _, c := range k.Splits {
		if err := WriteKeyedSplitText(w, c); err != nil {
			return err
		}
	}
	return nil
}

// writeCrowdedText writes the crowded case as a plain-text table.
func writeCrowdedText(w io.Writer, k Keyed) error {
	fmt.Fprintf(w, "\nKeyed/Tenants=%d\n  %s\n", k.Settings.Tenants, KeyedLine(k))
	if k.Server != "" {
		fmt.Fprintf(w, "  against %s\n", k.Server)
	}
	for _, s := range k.Skipped {
		fmt.Fprintf(w, "skipped: %s\n", SkipLine(s))
	}
	if len(k.Results) == 0 {
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "  %s\n", strings.Join(KeyedHeader, "\t"))
	for _, r := range k.Results {
		fmt.Fprintf(tw, "  %s\n", strings.Join(KeyedRow(r), "\t"))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, r := range k.Results {
		s := r.Summarize()
		if s.FirstError != "" {
			fmt.Fprintf(w, "  %s, first error: %s\n", r.Contender, ScrubPaths(s.FirstError))
		}
		if s.FirstOther != "" && s.FirstOther != s.FirstError {
			fmt.Fprintf(w, "  %s, first other error: %s\n", r.Contender, ScrubPaths(s.FirstOther))
		}
	}
	return nil
}
