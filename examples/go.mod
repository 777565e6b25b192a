module github.com/poolkit/poolkit/examples

go 1.26

require (
	github.com/poolkit/poolkit v0.1.0
	github.com/poolkit/poolkit/contrib/pgxmanager v0.1.0
	github.com/stretchr/testify v1.11.1
	go.uber.org/goleak v1.3.0
)

require (
	github.com/davecgh/go-spew v1.1.1 // indirect
	github.com/jackc/pgpassfile v1.0.0 // indirect
	github.com/jackc/pgservicefile v0.0.0-20240606120523-5a60cdf6a761 // indirect
	github.com/jackc/pgx/v5 v5.12.0 // indirect
	github.com/pmezard/go-difflib v1.0.0 // indirect
	golang.org/x/text v0.41.0 // indirect
	gopkg.in/yaml.v3 v3.0.1 // indirect
)

// Inside the repository, go.work ties the modules together, and these
// replaces keep the module buildable from a checkout with GOWORK=off. A
// consumer's build ignores them and fetches the versions required above.
replace (
	github.com/poolkit/poolkit => ../
	github.com/poolkit/poolkit/contrib/pgxmanager => ../contrib/pgxmanager
)
