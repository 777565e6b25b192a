package bytepool

// std is the default pool: a zero Pool, made in place on first use, so that
// the package-level Get and Put are calls of its methods that the compiler
// inlines at the caller, with no pointer to load and no test of their own.
var std Pool

// Default returns the package default pool, used by the package-level Get
// and Put and by a zero [Buffer]. It is made on first use with the zero [Config]
// (all defaults). Like every [Pool] it starts no goroutine: its idle trimming
// rides on GC cycles.
func Default() *Pool {
	std.ensure()
	return &std
}

// Get is Default().Get(n).
func Get(n int) []byte { return std.Get(n) }

// Put is Default().Put(b).
func Put(b []byte) { std.Put(b) }
