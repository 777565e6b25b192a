package resp_test

import (
	"testing"

	"github.com/poolkit/poolkit/internal/testutil/itest"
)

func TestMain(m *testing.M) { itest.Main(m, itest.EnvRedisAddr) }
