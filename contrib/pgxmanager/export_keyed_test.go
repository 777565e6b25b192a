package pgxmanager

// Internals the keyed pool's tests reach.
var (
	KeyedDefaults = keyedDefaults
	ForKeyed      = forKeyed
)

// PoolOf returns the Pool a DB runs its queries on (whose source is the
// DB's key), so that a test written for a Pool's query methods runs on a
// DB's.
func PoolOf(db *DB) *Pool { return &db.p }
