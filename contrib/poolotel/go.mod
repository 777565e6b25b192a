module github.com/poolkit/poolkit/contrib/poolotel

go 1.26

require (
	github.com/poolkit/poolkit v0.1.0
	github.com/stretchr/testify v1.12.1
	go.opentelemetry.io/otel v1.40.0
	go.opentelemetry.io/otel/metric v1.40.0
	go.opentelemetry.io/otel/sdk/metric v1.40.0
	go.uber.org/goleak v1.3.0
)

require (
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/go-logr/logr v1.4.4 // indirect
	github.com/go-logr/stdr v1.2.2 // indirect
	github.com/google/uuid v1.6.0 // indirect
	go.opentelemetry.io/auto/sdk v1.2.1 // indirect
	go.opentelemetry.io/otel/sdk v1.40.0 // indirect
	go.opentelemetry.io/otel/trace v1.40.0 // indirect
	go.yaml.in/yaml/v3 v3.0.5 // indirect
	golang.org/x/sys v0.40.0 // indirect
)

// Inside the repository, go.work ties the modules together, and this replace
// keeps the module buildable from a checkout with GOWORK=off. A consumer's
// build ignores it and fetches the version required above.
replace github.com/poolkit/poolkit => ../..
