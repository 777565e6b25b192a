package manager_test

import (
	"testing"

	"go.uber.org/goleak"
)

// The tests start servers and their accept loops; none may outlive its test.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
