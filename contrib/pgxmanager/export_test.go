package pgxmanager

import "github.com/jackc/pgx/v5"

// Internals the tests reach.
var (
	WithDefaults = withDefaults
	ForPool      = forPool
)

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
