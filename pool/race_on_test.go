//go:build race

package pool_test

// Under the race detector every access costs tens of times more: the
// key-churn test sees fewer distinct keys (the bound it checks is the
// same at any count) and the keyed stress test runs fewer operations.
const (
	churnKeys   = 20_000
	keyedStress = 600
)
