package pgxmanager

// Internals the keyed pool's tests reach.
var (
	KeyedDefaults = keyedDefaults
	ForKeyed      = forKeyed
)
