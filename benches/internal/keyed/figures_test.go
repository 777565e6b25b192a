package keyed

import (
	"context"
	"errors"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// served makes n successful queries of tenant t, the i-th acquiring in
// (i+1) × acq and lasting (i+1) × el.
func served(t int32, n int, acq, el time.Duration) []sample {
	out := make([]sample, n)
	for i := range out {
		out[i] = sample{tenant: t, outcome: ok, acquire: time.Duration(i+1) * acq, elapsed: time.Duration(i+1) * el}
	}
	return out
}

func TestFiguresCountFailuresAndTenants(t *testing.T) {
	tenants := []string{"tenant_000", "tenant_001", "tenant_002", "tenant_003", "tenant_004"}
	var ss []sample
	ss = append(ss, served(0, 200, time.Microsecond, time.Millisecond)...)
	ss = append(ss, served(1, 100, 2*time.Microsecond, 2*time.Millisecond)...)
	ss = append(ss, served(2, 10, time.Second, time.Second)...) // too few to be measured
	ss = append(ss, sample{tenant: 2, outcome: failed})
	for range 30 {
		ss = append(ss, sample{tenant: 3, outcome: tooMany})
	}
	ss = append(ss, sample{tenant: 0, outcome: wrongDB}, sample{tenant: 1, outcome: timedOut})
	// Tenant 4 is never picked.

	r := figures(ss, tenants, 100)
	assert.EqualValues(t, 200+100+10+1+30+1+1, r.Ops)
	assert.EqualValues(t, 33, r.Failed)
	assert.EqualValues(t, 30, r.TooMany)
	assert.EqualValues(t, 1, r.Timeouts)
	assert.EqualValues(t, 1, r.WrongDatabase)
	assert.Equal(t, 3, r.TenantsServed, "tenants 0, 1 and 2")
	assert.Equal(t, 1, r.TenantsStarved, "tenant 3 tried and got nothing; tenant 4 never tried")
	assert.Equal(t, 2, r.TenantsMeasured, "tenants 0 and 1 have 100 successful queries or more")

	// Tenant 0's p99 of 200 is its 198th: 198 µs and 198 ms; tenant 1's
	// of 100 is its 99th: 198 µs and 198 ms too, so the worst is the first
	// found with the highest; tenant 2's seconds do not count.
	assert.InDelta(t, float64(198*time.Microsecond), r.Acquire.WorstNs, 0)
	assert.InDelta(t, float64(198*time.Millisecond), r.Query.WorstNs, 0)
	assert.InDelta(t, float64(198*time.Microsecond), r.Acquire.MedianNs, 0)
	assert.Equal(t, "tenant_000", r.Acquire.WorstTenant)
}

func TestFiguresNameTheWorstTenantAndTheMedianOfTheTenants(t *testing.T) {
	var tenants []string
	var ss []sample
	for i := range 5 {
		tenants = append(tenants, fmt.Sprintf("tenant_%03d", i))
		// Tenant i's queries all take i+1 ms.
		for range 100 {
			ss = append(ss, sample{tenant: int32(i), acquire: time.Duration(i+1) * time.Microsecond, elapsed: time.Duration(i+1) * time.Millisecond})
		}
	}
	r := figures(ss, tenants, 100)
	assert.Equal(t, "tenant_004", r.Query.WorstTenant)
	assert.InDelta(t, float64(5*time.Millisecond), r.Query.WorstNs, 0)
	assert.InDelta(t, float64(3*time.Millisecond), r.Query.MedianNs, 0, "the middle of five tenants")
	assert.InDelta(t, float64(3*time.Microsecond), r.Acquire.MedianNs, 0)
}

func TestFiguresWithoutAMeasuredTenantAreNaN(t *testing.T) {
	r := figures([]sample{{tenant: 0, outcome: tooMany}}, []string{"tenant_000"}, 100)
	assert.True(t, math.IsNaN(r.Acquire.WorstNs))
	assert.True(t, math.IsNaN(r.Query.MedianNs))
	assert.Empty(t, r.Query.WorstTenant)
	assert.Equal(t, 1, r.TenantsStarved)
}

func TestClassifyFindsTooManyClientsInsideAConnectError(t *testing.T) {
	pe := &pgconn.PgError{Severity: "FATAL", Code: "53300", Message: "sorry, too many clients already"}
	wrapped := fmt.Errorf("failed to connect to `user=x database=y`: %w", pe)
	assert.Equal(t, tooMany, classify(wrapped))
	assert.Equal(t, failed, classify(&pgconn.PgError{Code: "57P01"}))
	assert.Equal(t, failed, classify(errors.New("dial tcp: connection refused")))
	assert.Equal(t, wrongDB, classify(fmt.Errorf("tenant_001: %w", errWrongDatabase)))
	assert.Equal(t, timedOut, classify(fmt.Errorf("timeout: %w", context.DeadlineExceeded)))
	assert.Equal(t, ok, classify(nil))
}

func TestQuantileIsTheNearestRank(t *testing.T) {
	xs := make([]float64, 1000)
	for i := range xs {
		xs[i] = float64(1000 - i)
	}
	require.Equal(t, 990.0, quantile(xs, 0.99))
	assert.Equal(t, 1000.0, quantile(xs, 1))
	assert.True(t, math.IsNaN(quantile(nil, 0.5)))
}
