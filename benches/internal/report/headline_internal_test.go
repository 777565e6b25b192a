package report

import (
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/poolkit/poolkit/benches/internal/results"
)

func TestTheTallyLeavesPoolkitsOwnVariantsOut(t *testing.T) {
	c := readFixture(t, "testdata/results.json").Cases[0] // poolkit, puddle, chan, mutex, syncpool
	without := tallySentence([]results.Case{c})

	withOwn := c
	withOwn.Contenders = slices.Clone(c.Contenders)
	variant := c.Contenders[1] // puddle's rounds, which the test tells from poolkit's
	variant.Name = "poolkit-keyed"
	withOwn.Contenders = append(withOwn.Contenders, variant)
	got := tallySentence([]results.Case{withOwn})

	assert.True(t, strings.HasPrefix(got, strings.TrimSuffix(without, ".")), "the same counts: %q against %q", got, without)
	assert.True(t, strings.HasSuffix(got, " poolkit's own poolkit-keyed is not counted."), got)
}
