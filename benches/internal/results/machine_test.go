package results

import (
	"runtime/debug"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestComparedModulesAreTakenInOrderWithTheirReplacements(t *testing.T) {
	deps := []*debug.Module{
		{Path: "github.com/redis/go-redis/v9", Version: "v9.23.0"},
		{Path: "golang.org/x/sys", Version: "v0.48.0"},
		{Path: "github.com/jackc/puddle/v2", Version: "v2.2.3"},
		{Path: "github.com/jackc/pgx/v5", Version: "v5.12.0", Replace: &debug.Module{Path: "example.com/pgx", Version: "v5.12.1"}},
	}
	assert.Equal(t, []Module{
		{Path: "github.com/jackc/puddle/v2", Version: "v2.2.3"},
		{Path: "github.com/jackc/pgx/v5", Version: "v5.12.1"},
		{Path: "github.com/redis/go-redis/v9", Version: "v9.23.0"},
	}, compared(deps), "the order of ComparedModules, nothing else, the version built in")
}
