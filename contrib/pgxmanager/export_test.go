package pgxmanager

// Internals the tests reach.
var (
	WithDefaults = withDefaults
	ForPool      = forPool
)
