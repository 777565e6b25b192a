package benches

import (
	"context"
	"io"
	"os"
	"testing"
	"time"

	"github.com/poolkit/poolkit/benches/internal/e2e"
	"github.com/poolkit/poolkit/benches/internal/keyed"
	"github.com/poolkit/poolkit/benches/internal/results"
)

// envKeyedDuration overrides BenchmarkKeyedTenants' time per contender and
// round (a Go duration: "10s").
const envKeyedDuration = "POOLKIT_KEYED_DURATION"

// keyedBenchDuration is BenchmarkKeyedTenants' time per contender and
// round unless $POOLKIT_KEYED_DURATION says otherwise.
const keyedBenchDuration = 6 * time.Second

// BenchmarkKeyedTenants runs poolbench's split cases (internal/keyed) on
// $POOLKIT_POSTGRES_DSN's server, one sub-benchmark per case (Case=steady,
// Case=shifting): 20 tenant databases made for the run, 48 goroutines, a
// Zipf law over the tenants, poolkit's keyed pool of MaxSize 20 and of 12
// against the static split, 20 pgxpools of MaxConns 1. Each iteration is a
// round, every contender running in turn for 6 s ($POOLKIT_KEYED_DURATION)
// with the published settings otherwise; -benchtime 3x runs three. It
// reports, per contender (keyed20, static, keyed12), the medians over the
// rounds of the successful operations per second (KEY-qps), the keyed
// pools' ratio to the static split within each round (KEY/static), the
// connects per acquire over the run and after the warm-up, the p99 of an
// operation and the errors, and the most connections the server had
// (KEY-max-backends, the highest of the rounds); ns/op means nothing here
// and is left out. -v prints a line per contender and round.
func BenchmarkKeyedTenants(b *testing.B) {
	dsn := os.Getenv(e2e.EnvPostgresDSN)
	if dsn == "" {
		b.Skip(e2e.EnvPostgresDSN + " is not set: BenchmarkKeyedTenants needs a PostgreSQL server whose user is a superuser")
	}
	st := keyed.SplitSettings()
	d := keyedBenchDuration
	if v := os.Getenv(envKeyedDuration); v != "" {
		var err error
		if d, err = time.ParseDuration(v); err != nil || d <= 0 {
			b.Fatalf("%s=%q: want a positive duration", envKeyedDuration, v)
		}
	}
	st.DurationNs = d.Nanoseconds()
	st.WarmupNs = min(st.WarmupNs, st.DurationNs/4)
	var progress io.Writer
	if testing.Verbose() {
		progress = os.Stderr
	}
	for _, name := range []string{keyed.CaseSteady, keyed.CaseShifting} {
		b.Run("Case="+name, func(b *testing.B) {
			ctx := context.Background()
			s, err := keyed.OpenSplit(ctx, dsn, name, st, progress)
			if err != nil {
				b.Fatal(err)
			}
			defer func() {
				if err := s.Close(); err != nil {
					b.Error(err)
				}
			}()
			for b.Loop() {
				if err := s.Round(ctx); err != nil {
					b.Fatal(err)
				}
			}
			reportSplit(b, s.Result())
		})
	}
}

// reportSplit reports c's figures as b's metrics.
func reportSplit(b *testing.B, c results.KeyedSplit) {
	b.ReportMetric(0, "ns/op")
	for _, r := range c.Results {
		s := c.Summarize(r)
		b.ReportMetric(s.QueriesPerSec.Median, r.Key+"-qps")
		if r.Contender != c.Baseline {
			b.ReportMetric(s.Ratio.Median, r.Key+"/static")
		}
		b.ReportMetric(s.ConnectsPerAcquire.Median, r.Key+"-connects/acquire")
		b.ReportMetric(s.SteadyPerAcq.Median, r.Key+"-steady-connects/acquire")
		b.ReportMetric(s.P99.Median, r.Key+"-p99-ns")
		b.ReportMetric(s.Failed.Median, r.Key+"-errors")
		b.ReportMetric(s.MaxBackends.Max, r.Key+"-max-backends")
	}
}
