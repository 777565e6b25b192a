package configerr_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/poolkit/poolkit/internal/configerr"
)

func TestErrorMatchesItsKindAndKeepsItsMessage(t *testing.T) {
	errBad := errors.New("p: invalid config")
	err := configerr.New(errBad, "p: Config.%s must be >= %d, got %d", "Size", 1, 0)
	require.ErrorIs(t, err, errBad)
	require.NotErrorIs(t, err, errors.New("p: invalid config"), "it matches its own sentinel only")
	require.EqualError(t, err, "p: Config.Size must be >= 1, got 0")
	var ce *configerr.Error
	require.ErrorAs(t, err, &ce)
}
