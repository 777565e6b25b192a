package keyed

import (
	"context"
	"errors"
	"math"
	"slices"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/poolkit/poolkit/benches/internal/results"
)

// outcome is how a query ended.
type outcome uint8

const (
	ok       outcome = iota
	failed           // any error but those below
	tooMany          // the server refused a connection: SQLSTATE 53300
	timedOut         // the query's deadline passed
	wrongDB          // answered from another tenant's database
	nOutcome         // the number of outcomes
)

// errWrongDatabase is a query answered from another database than its
// tenant's.
var errWrongDatabase = errors.New("keyed: the query ran in another tenant's database")

// sqlTooManyConnections is SQLSTATE too_many_connections: "sorry, too many
// clients already", and "remaining connection slots are reserved" for a
// role that is not a superuser.
const sqlTooManyConnections = "53300"

// classify is the outcome of a query that returned err.
func classify(err error) outcome {
	var pe *pgconn.PgError
	switch {
	case err == nil:
		return ok
	case errors.Is(err, errWrongDatabase):
		return wrongDB
	case errors.As(err, &pe) && pe.Code == sqlTooManyConnections:
		return tooMany
	case errors.Is(err, context.DeadlineExceeded):
		return timedOut
	}
	return failed
}

// sample is one query: its tenant, how it ended, the time to get a
// connection and the whole call's (acquire, query, release).
type sample struct {
	tenant           int32
	outcome          outcome
	acquire, elapsed time.Duration
}

// figures computes a round's figures from its samples but those the run
// counts itself (the wall time, connects, evictions, the server's
// connections, the first errors): the queries and failures, the tenants
// served, starved and measured, and the worst and median p99 of acquire
// and of the whole call over the tenants with at least minSamples
// successful queries. Latency counts successful queries only: a refused
// connection fails fast, and would flatter its contender's tail.
func figures(samples []sample, tenants []string, minSamples int) results.KeyedRound {
	var r results.KeyedRound
	acquire := make([][]float64, len(tenants))
	elapsed := make([][]float64, len(tenants))
	tried := make([]bool, len(tenants))
	for _, s := range samples {
		r.Ops++
		tried[s.tenant] = true
		switch s.outcome {
		case ok:
			acquire[s.tenant] = append(acquire[s.tenant], float64(s.acquire))
			elapsed[s.tenant] = append(elapsed[s.tenant], float64(s.elapsed))
			continue
		case tooMany:
			r.TooMany++
		case timedOut:
			r.Timeouts++
		case wrongDB:
			r.WrongDatabase++
		}
		r.Failed++
	}
	var measured []int
	for t := range tenants {
		n := len(elapsed[t])
		switch {
		case n > 0:
			r.TenantsServed++
		case tried[t]:
			r.TenantsStarved++
		}
		if n > 0 && n >= minSamples {
			measured = append(measured, t)
		}
	}
	r.TenantsMeasured = len(measured)
	r.Acquire = tenantP99(acquire, measured, tenants)
	r.Query = tenantP99(elapsed, measured, tenants)
	return r
}

// tenantP99 is the worst and the median of the p99s of the measured
// tenants' latencies; NaN for none.
func tenantP99(lat [][]float64, measured []int, tenants []string) results.TenantP99 {
	if len(measured) == 0 {
		return results.TenantP99{WorstNs: math.NaN(), MedianNs: math.NaN()}
	}
	p99s := make([]float64, len(measured))
	worst := 0
	for i, t := range measured {
		p99s[i] = quantile(lat[t], 0.99)
		if p99s[i] > p99s[worst] {
			worst = i
		}
	}
	return results.TenantP99{WorstNs: p99s[worst], WorstTenant: tenants[measured[worst]], MedianNs: results.Median(p99s)}
}

// quantile is the q-quantile of xs (the smallest x with at least a q share
// of xs at or below it); NaN for none.
func quantile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	i := int(math.Ceil(q*float64(len(s)))) - 1
	return s[min(max(i, 0), len(s)-1)]
}
