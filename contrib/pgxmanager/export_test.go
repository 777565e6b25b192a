package pgxmanager

import (
	"github.com/jackc/pgx/v5"

	"github.com/poolkit/poolkit/pool"
)

// Internals the tests reach.
var (
	WithDefaults   = withDefaults
	ForPool        = forPool
	ErrNotReusable = errNotReusable
)

// Defaults the tests check against pgxpool's and the docs'.
var (
	DefaultMaxSize           = defaultMaxSize
	DefaultMaxLifetime       = defaultMaxLifetime
	DefaultMaxIdleTime       = defaultMaxIdleTime
	DefaultHealthCheckPeriod = defaultHealthCheckPeriod
	DefaultPingAfter         = defaultPingAfter
	DefaultPingTimeout       = defaultPingTimeout
	DefaultCloseTimeout      = defaultCloseTimeout
)

// PoolFor returns the pool.Config that OpenConfig gives pool.New for cfg.
func PoolFor(cfg *PoolConfig) pool.Config {
	pc, _ := cfg.opened()
	return forPool(pc)
}

// ParkedPing returns the channel closed when the ping that a Recycle parked
// on c, in the pool's Manager, has ended; nil if none is parked on c.
func ParkedPing(p *Pool, c *pgx.Conn) <-chan struct{} {
	p.m.mu.Lock()
	defer p.m.mu.Unlock()
	if pg, ok := p.m.pings[c]; ok {
		return pg.done
	}
	return nil
}
