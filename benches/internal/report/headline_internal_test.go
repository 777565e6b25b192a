package report

import (
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/poolkit/poolkit/benches/internal/results"
)

func TestTheTallyLeavesPoolkitsOwnVariantsOut(t *testing.T) {
	// The published results have rounds enough for the rank test.
	c := readFixture(t, "../../../docs/benchmarks/results.json").Cases[0]
	c.Contenders = slices.DeleteFunc(slices.Clone(c.Contenders), func(k results.Contender) bool {
		return k.Name != c.Contenders[0].Name && poolkitFamily(k.Name)
	})
	without := tallySentence([]results.Case{c})
	i := slices.IndexFunc(c.Contenders, func(k results.Contender) bool { return k.Name == "puddle" })
	require.GreaterOrEqual(t, i, 0, "a competitor to copy")

	withOwn := c
	variant := c.Contenders[i] // puddle's rounds, which the test tells from poolkit's
	variant.Name = "poolkit-keyed"
	withOwn.Contenders = append(slices.Clone(c.Contenders), variant)
	got := tallySentence([]results.Case{withOwn})

	assert.True(t, strings.HasPrefix(got, strings.TrimSuffix(without, ".")), "the same counts: %q against %q", got, without)
	assert.True(t, strings.HasSuffix(got, " poolkit's own poolkit-keyed is not counted."), got)
}
