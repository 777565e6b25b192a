package itest_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/poolkit/poolkit/internal/testutil/itest"
)

func TestUniqueNameIsShortSafeAndUnique(t *testing.T) {
	t.Run("A very long subtest name/with slashes, spaces and ünïcode "+strings.Repeat("x", 80), func(t *testing.T) {
		a, b := itest.UniqueName(t), itest.UniqueName(t)
		require.NotEqual(t, a, b)
		require.LessOrEqual(t, len(a), 56)
		require.Regexp(t, `^poolkit-[a-z0-9_.-]+$`, a)
	})
}
