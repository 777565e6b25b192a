package poolotel

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/poolkit/poolkit/pool"
)

// NewObserver returns a [pool.Observer] (for Config.Observer) that records, on
// meter, every Acquire's wait in db.client.connection.wait_time and every
// connect's time in db.client.connection.create_time (histograms in seconds,
// with the semantic conventions' attributes: [PoolNameKey] = opt.Name, plus
// opt.Attributes). Failed acquires and connects are recorded too, with
// error.type set to "_OTHER", as the conventions ask. To add tracing or logs
// as well, call it from an Observer of your own. It returns an error if
// opt.Name is empty or an instrument cannot be made.
func NewObserver(meter metric.Meter, opt Options) (pool.Observer, error) {
	o, err := newObserver[pool.Stats](PoolNameKey, opt)
	if err != nil {
		return nil, err
	}
	wait, err := meter.Float64Histogram("db.client.connection.wait_time", metric.WithUnit("s"),
		metric.WithDescription("The time it took to obtain an open connection from the pool."))
	if err != nil {
		return nil, err
	}
	create, err := meter.Float64Histogram("db.client.connection.create_time", metric.WithUnit("s"),
		metric.WithDescription("The time it took to create a new connection."))
	if err != nil {
		return nil, err
	}
	return &histograms{wait: wait, create: create,
		ok: o.withAttrs(), failed: o.withAttrs(errorType.String("_OTHER"))}, nil
}

// errorType is the semantic conventions' error attribute.
const errorType = attribute.Key("error.type")

type histograms struct {
	pool.NopObserver
	wait, create metric.Float64Histogram
	ok, failed   metric.MeasurementOption
}

func (h *histograms) AcquireEnd(ctx context.Context, ev pool.AcquireEvent) {
	h.wait.Record(ctx, ev.Wait.Seconds(), h.opt(ev.Err))
}

func (h *histograms) ConnectEnd(ctx context.Context, ev pool.ConnectEvent) {
	h.create.Record(ctx, ev.Duration.Seconds(), h.opt(ev.Err))
}

func (h *histograms) opt(err error) metric.MeasurementOption {
	if err != nil {
		return h.failed
	}
	return h.ok
}
